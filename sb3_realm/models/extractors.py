"""SB3 features extractors for the games' ``Dict(maps=(C, H, W) uint8, vector=(N,) float32)`` observations: the
Realm's ``(4, 51, 51)`` and ``(216,)``, Gorge Chase's ``(7, 21, 21)`` and ``(80,)``.

- :class:`RealmExtractor`: a small strided CNN over the maps fused with an MLP over the vector (one frame, or the
  frames stacked Atari-style as extra channels).
- :class:`FoveaExtractor`: the 17 x 17 cells around the hero at full resolution plus the 3 x 3 block averages of
  the whole maps, one small CNN over both: the fastest on a CPU.
- :class:`GorgeExtractor`: the RealmExtractor's CNN with 3 x 3 kernels for Gorge Chase's 21 x 21 view.
- :class:`Conv3dExtractor` (in :mod:`.temporal`): Conv3d over the frames of a ``VecFrameStack`` observation, plus an
  MLP over the vector history.
- :class:`TransformerExtractor` (in :mod:`.temporal`): one token per frame, causal self-attention over the frames, the
  newest token's features; :meth:`TransformerExtractor.step` is the exact cached (keys/values) inference for batch
  size 1.

Inputs are what the policy hands over after ``preprocess_obs``: with the default ``normalize_images=True`` SB3 has
already divided the uint8 maps by 255 (floats in [0, 1]), so the extractors do not divide again. With
``normalize_images=False`` pass ``maps_scale=1 / 255``.

Frame stacking: ``VecFrameStack(venv, n_stack=T)`` stacks the channel-first uint8 maps on the channel axis
(``(4 * T, 51, 51)``) and the 1-D vector on its only axis (``(216 * T,)``), oldest frame first: channels
``4 * k .. 4 * k + 3`` are frame ``k``, frame ``T - 1`` is the newest; at an episode start the missing frames are
zeros (``stacked_observations.py``). :func:`~sb3_realm.models.observation_space.split_frames` undoes that.

Each extractor class says what it needs and allows: ``needs_frame_stack`` (the config must stack frames and passes
``n_frames``) and ``exportable`` (``build-submission`` can rebuild it).

``forward`` uses torch only (no SB3 call). The single-frame extractors (realm, fovea) hold a
:mod:`sb3_realm.models.nets` module as ``net``; ``build-submission`` copies that torch-only module into the submission.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from .nets import ACTIVATIONS, NETS, activation_name
from .observation_space import game_spaces, split_frames
from .temporal import Conv3dExtractor, TransformerCache, TransformerExtractor

__all__ = [
    "EXTRACTORS",
    "Conv3dExtractor",
    "FoveaExtractor",
    "GorgeExtractor",
    "NetExtractor",
    "RealmExtractor",
    "TransformerCache",
    "TransformerExtractor",
    "policy_kwargs_of",
    "split_frames",
]

class NetExtractor(BaseFeaturesExtractor):
    """An SB3 extractor around a torch-only :mod:`sb3_realm.models.nets` module (``net``): what ``build-submission`` can
    export. ``net_name`` is the module's name in :data:`sb3_realm.models.nets.NETS`, ``net_kwargs`` its arguments as
    data.

    :param observation_space: ``Dict(maps=Box (C, H, W), vector=Box (N,))``.
    :param features_dim: size of the output features.
    :param activation_fn: activation after each layer.
    :param net_kwargs: the other arguments of the net.
    """

    net_name: str
    needs_frame_stack = False  # one frame (or frames stacked as channels); the training config reads this
    exportable = True  # build-submission rebuilds ``net`` from sb3_realm.models.nets

    def __init__(self, observation_space: gym.Space, features_dim: int, activation_fn: type[nn.Module],
                 **net_kwargs) -> None:
        who = type(self).__name__
        maps, vector = game_spaces(observation_space, who)
        try:
            net = NETS[self.net_name](maps.shape, vector.shape[0], features_dim=features_dim,
                                      activation=activation_fn, **net_kwargs)
        except ValueError as exc:
            raise ValueError(f"{who}: {exc} (observation space {observation_space})") from exc
        super().__init__(observation_space, features_dim)
        self.net = net
        self.net_kwargs = {"features_dim": features_dim, **net_kwargs, "cnn_channels": list(net_kwargs["cnn_channels"]),
                           "activation": activation_name(activation_fn),
                           "maps_scale": float(net_kwargs["maps_scale"])}

    @property
    def n_flatten(self) -> int:
        return self.net.n_flatten

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        return self.net(observations["maps"], observations["vector"])  # maps (B, C, 51, 51), vector (B, 216)


class RealmExtractor(NetExtractor):
    """A CPU-sized CNN over the maps fused with an MLP over the vector (:class:`~sb3_realm.nets.RealmNet`).

    The convs have no padding; by default kernels (5, 3, 3) with strides (3, 2, 1) shrink the 51 x 51 maps
    51 -> 16 -> 7 -> 5, so the flatten is ``32 * 5 * 5 = 800``; then
    ``features = act(Linear([cnn_flat, act(Linear(vector))]))``. The early stride 3 is what makes it cheap on a CPU:
    cheaper than SB3's NatureCNN on these maps, whose 8 x 8 / stride 4 first layer is sized for 84 x 84 Atari
    frames. Frame-stacked observations also work (the frames become extra channels, as SB3 does for Atari).

    :param observation_space: ``Dict(maps=Box (C, H, W), vector=Box (N,))``.
    :param features_dim: size of the output features.
    :param cnn_channels: output channels of each conv layer.
    :param mlp_hidden: width of the layer over the vector.
    :param kernel_sizes: kernel size of every conv layer, or one per layer; None: 5, 3, 3, ...
    :param strides: stride of every conv layer, or one per layer; None: 3, 2, 1, ...
    :param activation_fn: activation after each layer.
    :param maps_scale: multiplies the maps first; keep 1.0 when the policy normalizes images (SB3's default
        ``normalize_images=True`` already divides the uint8 maps by 255), use ``1 / 255`` with
        ``normalize_images=False`` (the config does it for you), which is cheaper: the scale is folded into the
        first conv's weights.
    """

    net_name = "realm"

    def __init__(self, observation_space: gym.Space, features_dim: int = 256,
                 cnn_channels: Sequence[int] = (16, 32, 32), mlp_hidden: int = 128,
                 kernel_sizes: int | Sequence[int] | None = None,
                 strides: int | Sequence[int] | None = None,
                 activation_fn: type[nn.Module] = nn.ReLU, maps_scale: float = 1.0) -> None:
        super().__init__(observation_space, features_dim, activation_fn, cnn_channels=cnn_channels,
                         mlp_hidden=mlp_hidden, kernel_sizes=kernel_sizes, strides=strides, maps_scale=maps_scale)


class FoveaExtractor(NetExtractor):
    """Full resolution near the hero, coarse far away (:class:`~sb3_realm.nets.FoveaNet`): the fastest extractor on
    a CPU, the one of ``configs/realm/ppo.yaml``.

    The 17 x 17 cells around the hero at full resolution and the 3 x 3 block averages of the whole 51 x 51 maps are
    stacked and go through one small CNN (17 -> 8 -> 6), fused with an MLP over the vector.

    :param observation_space: ``Dict(maps=Box (C, H, W), vector=Box (N,))``.
    :param features_dim: size of the output features.
    :param pool: block size of the periphery average (the fovea is ``(H - pool) // pool + 1`` cells wide).
    :param cnn_channels: output channels of each conv layer.
    :param mlp_hidden: width of the layer over the vector.
    :param kernel_sizes: kernel size of every conv layer, or one per layer; None: 3.
    :param strides: stride of every conv layer, or one per layer; None: 2, 1, 1, ...
    :param activation_fn: activation after each layer.
    :param maps_scale: see :class:`RealmExtractor`.
    :param cell_offset: also give the MLP the hero's position inside its grid cell (see
        :class:`~sb3_realm.nets.FoveaNet`); what imitation of the step-exact oracle needs.
    """

    net_name = "fovea"

    def __init__(self, observation_space: gym.Space, features_dim: int = 128, pool: int = 3,
                 cnn_channels: Sequence[int] = (16, 16), mlp_hidden: int = 128,
                 kernel_sizes: int | Sequence[int] | None = None, strides: int | Sequence[int] | None = None,
                 activation_fn: type[nn.Module] = nn.ReLU, maps_scale: float = 1.0, cell_offset: bool = False) -> None:
        super().__init__(observation_space, features_dim, activation_fn, pool=pool, cnn_channels=cnn_channels,
                         mlp_hidden=mlp_hidden, kernel_sizes=kernel_sizes, strides=strides, maps_scale=maps_scale,
                         cell_offset=cell_offset)


class GorgeExtractor(RealmExtractor):
    """:class:`RealmExtractor` sized for Gorge Chase's ``Dict(maps=(7, 21, 21) uint8, vector=(80,) float32)``: 3 x 3
    kernels with strides (2, 1, 1) shrink the 21 x 21 view 21 -> 10 -> 8 -> 6 (``32 * 6 * 6 = 1152`` flat), about
    one million multiply-adds a state, fused with an MLP over the vector. (SB3's NatureCNN does not fit: its 8 x 8
    stride-4 first layer leaves a 21 x 21 input too small for the rest.)

    :param observation_space: ``Dict(maps=Box (C, H, W), vector=Box (N,))``.
    :param features_dim: size of the output features.
    :param cnn_channels: output channels of each conv layer.
    :param mlp_hidden: width of the layer over the vector.
    :param kernel_sizes: kernel size of every conv layer, or one per layer.
    :param strides: stride of every conv layer, or one per layer.
    :param activation_fn: activation after each layer.
    :param maps_scale: see :class:`RealmExtractor`.
    """

    def __init__(self, observation_space: gym.Space, features_dim: int = 256,
                 cnn_channels: Sequence[int] = (16, 32, 32), mlp_hidden: int = 128,
                 kernel_sizes: int | Sequence[int] | None = 3,
                 strides: int | Sequence[int] | None = (2, 1, 1),
                 activation_fn: type[nn.Module] = nn.ReLU, maps_scale: float = 1.0) -> None:
        super().__init__(observation_space, features_dim, cnn_channels=cnn_channels, mlp_hidden=mlp_hidden,
                         kernel_sizes=kernel_sizes, strides=strides, activation_fn=activation_fn,
                         maps_scale=maps_scale)


EXTRACTORS: dict[str, type[NetExtractor] | type[Conv3dExtractor] | type[TransformerExtractor]] = {
    "realm": RealmExtractor,
    "fovea": FoveaExtractor,
    "gorge": GorgeExtractor,
    "conv3d": Conv3dExtractor,
    "transformer": TransformerExtractor,
}


def policy_kwargs_of(algo: dict, frame_stack: int) -> dict:
    """SB3 ``policy_kwargs`` built from a config's ``algo`` section as plain data (``extractor``,
    ``extractor_kwargs``, ``policy_kwargs``, ``net_arch``, ``activation``: classes by name, never unpickled) and its
    ``env.frame_stack``."""
    kwargs = dict(algo.get("policy_kwargs") or {})
    extractor = algo.get("extractor", "default")
    if extractor != "default":
        if extractor not in EXTRACTORS:
            raise ValueError(f"algo.extractor = {extractor!r}; choose one of {sorted(EXTRACTORS)} or 'default'")
        ex_kwargs = dict(algo.get("extractor_kwargs") or {})
        if EXTRACTORS[extractor].needs_frame_stack:
            if frame_stack < 2:
                raise ValueError(f"algo.extractor = {extractor!r} needs stacked frames: set env.frame_stack >= 2")
            ex_kwargs.setdefault("n_frames", frame_stack)
        if kwargs.get("normalize_images") is False:
            ex_kwargs.setdefault("maps_scale", 1.0 / 255.0)  # SB3 hands over 0..255 maps; scale inside the net
        kwargs["features_extractor_class"] = EXTRACTORS[extractor]
        kwargs["features_extractor_kwargs"] = ex_kwargs
    if algo.get("net_arch") is not None:
        kwargs["net_arch"] = algo["net_arch"]
    activation = algo.get("activation", "tanh")
    if activation not in ACTIVATIONS:
        raise ValueError(f"algo.activation = {activation!r}; choose one of {sorted(ACTIVATIONS)}")
    kwargs["activation_fn"] = ACTIVATIONS[activation]
    return kwargs
