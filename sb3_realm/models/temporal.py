"""The frame-stacking extractors: :class:`Conv3dExtractor` (Conv3d over the frames of a ``VecFrameStack``
observation, plus an MLP over the vector history) and :class:`TransformerExtractor` (one token per frame, causal
self-attention over the frames, the newest token's features; :meth:`TransformerExtractor.step` is the exact cached
inference for batch size 1). Both need stacked frames (``needs_frame_stack``) and cannot be exported (no torch-only
network in :mod:`sb3_realm.models.nets`). See :mod:`sb3_realm.models.extractors` for the inputs and frame order."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

import gymnasium as gym
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from .nets import conv2d_stack, n_flatten, per_layer
from .observation_space import check_stacked, split_frames

__all__ = ["Conv3dExtractor", "TransformerCache", "TransformerExtractor"]


def _per_layer(value: int | Sequence[int] | None, n: int, name: str) -> list[int]:
    """One value per conv layer; None: the CPU-sized defaults, kernels 5, 3, 3, ... and strides 3, 2, 1, 1, ..."""
    return per_layer(value, n, name, (5, 3) if name == "kernel_sizes" else (3, 2, 1))


def _conv2d_stack(in_channels: int, channels: Sequence[int], kernel_sizes: int | Sequence[int] | None,
                  strides: int | Sequence[int] | None, activation_fn: type[nn.Module]) -> nn.Sequential:
    """Strided Conv2d layers (no padding), each followed by the activation, then Flatten."""
    if not channels:
        raise ValueError("cnn_channels must name at least one conv layer, e.g. (16, 32, 32)")
    return conv2d_stack(in_channels, channels, _per_layer(kernel_sizes, len(channels), "kernel_sizes"),
                        _per_layer(strides, len(channels), "strides"), activation_fn)


def _n_flatten(net: nn.Module, shape: tuple[int, ...], who: str, space: gym.Space) -> int:
    """Output size of ``net`` for one input of ``shape`` (one no-grad dummy pass); the error shows the space."""
    try:
        return n_flatten(net, shape, who)
    except ValueError as exc:
        raise ValueError(f"{exc} in {space}") from exc


class Conv3dExtractor(BaseFeaturesExtractor):
    """Conv3d over ``n_frames`` stacked frames, fused with an MLP over the vector history.

    The maps ``(4 * T, H, W)`` become ``(4, T, H, W)``. The first layer is spatial only (kernel ``(1, k, k)``, stride
    ``(1, s, s)``), so the costly full-resolution layer does not mix frames; each later layer mixes
    ``min(temporal_kernel, frames left)`` frames (no temporal padding); the spatial sizes follow
    :class:`RealmExtractor` (51 -> 16 -> 7 -> 5 by default).

    :param observation_space: the ``VecFrameStack`` space: ``Dict(maps=Box (4 T, H, W), vector=Box (216 T,))``.
    :param n_frames: T, the ``n_stack`` of ``VecFrameStack``.
    :param features_dim: size of the output features.
    :param cnn_channels: output channels of each Conv3d layer.
    :param temporal_kernel: frames mixed by each layer after the first.
    :param mlp_hidden: width of the layer over the (216 T,) vector history.
    :param kernel_sizes: spatial kernel size of every layer, or one per layer; None: 5, 3, 3, ...
    :param strides: spatial stride of every layer, or one per layer; None: 3, 2, 1, ...
    :param activation_fn: activation after each layer.
    :param maps_scale: see :class:`RealmExtractor`.
    """

    needs_frame_stack = True  # n_frames defaults to env.frame_stack, which must be >= 2
    exportable = False  # no torch-only net in sb3_realm.models.nets: build-submission refuses it

    def __init__(self, observation_space: gym.Space, n_frames: int = 4, features_dim: int = 256,
                 cnn_channels: Sequence[int] = (16, 32, 32), temporal_kernel: int = 2, mlp_hidden: int = 128,
                 kernel_sizes: int | Sequence[int] | None = None,
                 strides: int | Sequence[int] | None = None,
                 activation_fn: type[nn.Module] = nn.ReLU, maps_scale: float = 1.0) -> None:
        who = type(self).__name__
        maps, vector = check_stacked(observation_space, n_frames, who)
        super().__init__(observation_space, features_dim)
        if not cnn_channels or temporal_kernel < 1:
            raise ValueError(f"{who}: cnn_channels = {cnn_channels!r} needs >= 1 layer, temporal_kernel = "
                             f"{temporal_kernel!r} must be >= 1")
        self.n_frames, self.maps_scale = n_frames, float(maps_scale)
        kernels = _per_layer(kernel_sizes, len(cnn_channels), "kernel_sizes")
        stride = _per_layer(strides, len(cnn_channels), "strides")
        layers: list[nn.Module] = []
        in_channels, frames_left = maps.shape[0] // n_frames, n_frames
        for i, (out, k, s) in enumerate(zip(cnn_channels, kernels, stride, strict=True)):
            kt = 1 if i == 0 else min(temporal_kernel, frames_left)
            layers += [nn.Conv3d(in_channels, out, kernel_size=(kt, k, k), stride=(1, s, s)), activation_fn()]
            in_channels, frames_left = out, frames_left - kt + 1
        self.cnn = nn.Sequential(*layers, nn.Flatten())
        frame_shape = (maps.shape[0] // n_frames, n_frames, *maps.shape[1:])  # (4, T, H, W)
        self.n_flatten = _n_flatten(self.cnn, frame_shape, who, observation_space)
        self.mlp = nn.Sequential(nn.Linear(vector.shape[0], mlp_hidden), activation_fn())
        self.fuse = nn.Sequential(nn.Linear(self.n_flatten + mlp_hidden, features_dim), activation_fn())

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        maps, _ = split_frames(observations["maps"], observations["vector"], self.n_frames)  # (B, T, 4, H, W)
        maps = maps.transpose(1, 2)  # (B, 4, T, H, W)
        if self.maps_scale != 1.0:
            maps = maps * self.maps_scale
        return self.fuse(th.cat([self.cnn(maps), self.mlp(observations["vector"])], dim=1))  # vector (B, 216 T)


@dataclass
class TransformerCache:
    """Keys and values of past frames for :meth:`TransformerExtractor.step`.

    ``keys[l]`` and ``values[l]`` are (B, n_heads, window_l - 1, head_dim), oldest first: layer ``l`` keeps only the
    ``window_l - 1`` frames before the current one, and ``sum(window_l - 1) = n_frames - 1``, so the cache never
    grows. ``n_seen`` counts the frames fed since the cache was made (the zero frames of a fresh cache included).
    """

    keys: list[th.Tensor]
    values: list[th.Tensor]
    n_seen: int = 0


class _CausalBlock(nn.Module):
    """Pre-LN transformer block: causal self-attention over the last ``window`` tokens (learned relative position
    embeddings on the keys, per distance 0..window-1), then a feed-forward layer.

    :param d_model: token size.
    :param n_heads: attention heads.
    :param window: tokens each query sees, itself included.
    :param ff_mult: feed-forward width / d_model.
    """

    def __init__(self, d_model: int, n_heads: int, window: int, ff_mult: int) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.window = n_heads, d_model // n_heads, window
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.rel_key = nn.Parameter(th.randn(window, n_heads, self.head_dim) * 0.02)  # (window, H, dh)
        self.ff = nn.Sequential(nn.Linear(d_model, ff_mult * d_model), nn.GELU(), nn.Linear(ff_mult * d_model, d_model))

    def _qkv(self, x: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        b, t, _d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return q, k, v  # each (B, H, t, dh)

    def _attend(self, x: th.Tensor, q: th.Tensor, k: th.Tensor, v: th.Tensor, dist: th.Tensor) -> th.Tensor:
        """``dist`` (tq, tk): how many frames each key is older than each query; keys outside the window (or in the
        future) get no weight."""
        b, h, tq, dh = q.shape
        logits = q @ k.transpose(-1, -2)  # (B, H, tq, tk)
        rel = th.einsum("bhqd,whd->bhqw", q, self.rel_key)  # (B, H, tq, window): q . r_distance
        logits = logits + rel.gather(-1, dist.clamp(0, self.window - 1).expand(b, h, tq, dist.shape[1]))
        logits = logits.masked_fill((dist < 0) | (dist >= self.window), float("-inf")) / math.sqrt(dh)
        att = th.softmax(logits, dim=-1) @ v  # (B, H, tq, dh)
        x = x + self.out(att.transpose(1, 2).reshape(b, tq, h * dh))
        return x + self.ff(self.norm2(x))

    def forward(self, x: th.Tensor) -> th.Tensor:
        """:param x: (B, T, d_model) tokens, oldest first. :return: (B, T, d_model)."""
        pos = th.arange(x.shape[1], device=x.device)
        return self._attend(x, *self._qkv(x), pos[:, None] - pos[None, :])

    def step(self, x: th.Tensor, keys: th.Tensor, values: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """One new token ``x`` (B, 1, d_model) after the cached ``keys``/``values`` (B, H, n, dh), n < window.

        :return: the token's output (B, 1, d_model) and the keys/values of the last ``window - 1`` frames.
        """
        q, k, v = self._qkv(x)
        keys, values = th.cat([keys, k], dim=2), th.cat([values, v], dim=2)  # (B, H, n + 1, dh)
        n = keys.shape[2]
        dist = th.arange(n - 1, -1, -1, device=x.device)[None, :]  # (1, n + 1): ages n .. 0
        keep = max(0, n - (self.window - 1))
        return self._attend(x, q, keys, values, dist), keys[:, :, keep:], values[:, :, keep:]


def _windows(n_frames: int, n_layers: int) -> list[int]:
    """Attention windows whose receptive fields add up to exactly ``n_frames``: ``sum(w - 1) = n_frames - 1``; the
    later layers get the wider windows."""
    base, extra = divmod(n_frames - 1, n_layers)
    return [1 + base + (i >= n_layers - extra) for i in range(n_layers)]


class TransformerExtractor(BaseFeaturesExtractor):
    """Causal self-attention over ``n_frames`` stacked frames; the features are the newest token's.

    Each frame becomes a token ``Linear(CNN(maps)) + Linear(vector)``; ``n_layers`` pre-LN blocks attend causally;
    positions are learned embeddings of the distance between query and key frames (added to the keys), not of the
    absolute index in the window, so a frame's keys and values do not change as the window slides.

    Layer ``l`` attends to the last ``window_l`` tokens (itself included) with ``sum(window_l - 1) = n_frames - 1``
    (see :func:`_windows`; one layer = full causal attention). The newest token thus sees exactly the window's
    ``n_frames`` frames, and every token it depends on has its whole own context inside the window, which is what
    makes the cached :meth:`step` exact. (With full causal attention in several layers, the deep keys of the
    window's oldest frame would depend on frames that have already left the window, and no cache could match.)

    :param observation_space: the ``VecFrameStack`` space: ``Dict(maps=Box (4 T, H, W), vector=Box (216 T,))``.
    :param n_frames: T, the ``n_stack`` of ``VecFrameStack``.
    :param d_model: token size.
    :param n_heads: attention heads (must divide ``d_model``).
    :param n_layers: transformer blocks.
    :param features_dim: None: the output is the normalised newest token (``d_model``); else a ReLU layer to this
        size follows.
    :param cnn_channels: output channels of each conv layer of the per-frame CNN.
    :param ff_mult: feed-forward width / d_model.
    :param kernel_sizes: kernel size of every conv layer, or one per layer; None: 5, 3, 3, ...
    :param strides: stride of every conv layer, or one per layer; None: 3, 2, 1, ...
    :param maps_scale: see :class:`RealmExtractor`.
    """

    needs_frame_stack = True  # n_frames defaults to env.frame_stack, which must be >= 2
    exportable = False  # no torch-only net in sb3_realm.models.nets: build-submission refuses it

    def __init__(self, observation_space: gym.Space, n_frames: int = 4, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, features_dim: int | None = None, cnn_channels: Sequence[int] = (16, 32, 32),
                 ff_mult: int = 2, kernel_sizes: int | Sequence[int] | None = None,
                 strides: int | Sequence[int] | None = None,
                 maps_scale: float = 1.0) -> None:
        who = type(self).__name__
        maps, vector = check_stacked(observation_space, n_frames, who)
        if d_model < 1 or n_heads < 1 or d_model % n_heads or n_layers < 1 or ff_mult < 1:
            raise ValueError(f"{who}: d_model = {d_model}, n_heads = {n_heads}, n_layers = {n_layers}, ff_mult = "
                             f"{ff_mult}: all must be >= 1 and n_heads must divide d_model (e.g. 64 and 4)")
        super().__init__(observation_space, features_dim or d_model)
        self.n_frames, self.maps_scale = n_frames, float(maps_scale)
        self.frame_maps_shape = (maps.shape[0] // n_frames, *maps.shape[1:])  # (4, H, W)
        self.frame_vector_size = vector.shape[0] // n_frames  # 216
        self.cnn = _conv2d_stack(self.frame_maps_shape[0], cnn_channels, kernel_sizes, strides, nn.ReLU)
        self.n_flatten = _n_flatten(self.cnn, self.frame_maps_shape, who, observation_space)
        self.maps_embed = nn.Linear(self.n_flatten, d_model)
        self.vector_embed = nn.Linear(self.frame_vector_size, d_model)
        self.windows = _windows(n_frames, n_layers)
        self.blocks = nn.ModuleList(_CausalBlock(d_model, n_heads, w, ff_mult) for w in self.windows)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Identity() if features_dim is None else nn.Sequential(nn.Linear(d_model, features_dim),
                                                                               nn.ReLU())

    def _causal_blocks(self) -> Iterable[_CausalBlock]:
        """``blocks`` as what they hold (``nn.ModuleList`` is not generic)."""
        return cast("Iterable[_CausalBlock]", self.blocks)

    def embed(self, maps: th.Tensor, vector: th.Tensor) -> th.Tensor:
        """Tokens of single frames: maps (N, 4, H, W) in [0, 1], vector (N, 216) -> (N, d_model)."""
        if self.maps_scale != 1.0:
            maps = maps * self.maps_scale
        return self.maps_embed(self.cnn(maps)) + self.vector_embed(vector)

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        maps, vector = split_frames(observations["maps"], observations["vector"], self.n_frames)
        b, t = vector.shape[:2]
        x = self.embed(maps.flatten(0, 1), vector.flatten(0, 1)).view(b, t, -1)  # (B, T, d_model), oldest first
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, -1]))

    def empty_cache(self, batch_size: int = 1) -> TransformerCache:
        """A cache with no frames at all (what :meth:`initial_cache` fills with zero frames)."""
        p = self.norm.weight
        empty = [p.new_zeros(batch_size, blk.n_heads, 0, blk.head_dim) for blk in self._causal_blocks()]
        return TransformerCache(keys=list(empty), values=list(empty))

    def initial_cache(self, batch_size: int = 1) -> TransformerCache:
        """The cache at an episode start: ``n_frames - 1`` all-zero frames, as ``VecFrameStack`` pads after a reset,
        so that the first :meth:`step` of an episode equals :meth:`forward` on the padded training window."""
        p = self.norm.weight
        maps = p.new_zeros(batch_size, *self.frame_maps_shape)
        vector = p.new_zeros(batch_size, self.frame_vector_size)
        cache = self.empty_cache(batch_size)
        with th.no_grad():
            token = self.embed(maps, vector)[:, None]  # (B, 1, d_model): the same for every zero frame
            for _ in range(self.n_frames - 1):
                cache = self._step_token(token, cache)[1]
        return cache

    def _step_token(self, x: th.Tensor, cache: TransformerCache) -> tuple[th.Tensor, TransformerCache]:
        keys, values = [], []
        for block, k, v in zip(self._causal_blocks(), cache.keys, cache.values, strict=True):
            x, k, v = block.step(x, k, v)
            keys.append(k)
            values.append(v)
        return self.head(self.norm(x[:, 0])), TransformerCache(keys, values, cache.n_seen + 1)

    def step(self, frame_maps: th.Tensor, frame_vector: th.Tensor,
             cache: TransformerCache | None = None) -> tuple[th.Tensor, TransformerCache]:
        """Features of the newest frame from the cached keys/values of the previous ones (one CNN pass per frame).

        Feeding an episode's frames one by one from ``initial_cache()`` gives, at every step, the same features as
        :meth:`forward` on the ``VecFrameStack`` observation of that step (up to float rounding). Start every
        episode with a fresh cache (``cache=None``). The cache stays bounded: see :class:`TransformerCache`.

        :param frame_maps: (B, 4, H, W) maps of the newest frame, scaled like the policy's input (uint8 / 255).
        :param frame_vector: (B, 216) vector of the newest frame.
        :param cache: the cache returned by the previous call, or None at an episode start.
        :return: features (B, features_dim) and the cache for the next call.
        """
        if cache is None:
            cache = self.initial_cache(frame_maps.shape[0])
        return self._step_token(self.embed(frame_maps, frame_vector)[:, None], cache)
