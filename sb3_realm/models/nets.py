"""Torch-only feature networks of the Realm observation (maps ``(C, H, W)`` + vector ``(N,)`` -> features).

This module imports torch and the standard library only: ``sb3-realm build-submission`` copies it verbatim into
a submission, next to the features module, so the competition image (torch + numpy) runs the very code that was
trained; it is written for Python 3.8 and torch 1.8 and later, which such an image may run. The SB3 extractors in
:mod:`sb3_realm.models.extractors` wrap these modules (as their ``net``).

- :class:`RealmNet`: a strided CNN over the whole maps fused with an MLP over the vector.
- :class:`FoveaNet`: full resolution near the hero, coarse far away: the centre crop of the maps at full resolution
  and the ``pool x pool`` average of the whole maps (the periphery) share one small CNN. Cheapest on a CPU: no conv
  layer runs over the 51 x 51 maps (a learned conv there costs more in its backward pass than the rest together).

``maps_scale`` multiplies the maps; with SB3's ``normalize_images=False`` the maps arrive as 0..255 floats and a
scale of 1/255 is folded into the first layer's weights (:class:`ScaledConv2d`), so no pass over the full maps is
spent on scaling (:class:`FoveaNet` scales after pooling).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch as th
from torch import nn
from torch.nn import functional as F

__all__ = [
    "ACTIVATIONS",
    "NETS",
    "FoveaNet",
    "RealmNet",
    "ScaledConv2d",
    "activation_class",
    "activation_name",
    "cell_offsets",
    "conv2d_stack",
    "n_flatten",
    "per_layer",
]

ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU,
                                           "leaky_relu": nn.LeakyReLU, "gelu": nn.GELU, "silu": nn.SiLU}


def activation_class(activation: str | type[nn.Module]) -> type[nn.Module]:
    """An activation class by name (``relu``, ``tanh``, ...) or the class itself."""
    if isinstance(activation, str):
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation = {activation!r}; choose one of {sorted(ACTIVATIONS)}")
        return ACTIVATIONS[activation]
    return activation


def activation_name(activation: str | type[nn.Module]) -> str:
    """The registry name of an activation class (the inverse of :func:`activation_class`)."""
    if isinstance(activation, str):
        activation_class(activation)
        return activation
    for name, cls in ACTIVATIONS.items():
        if activation is cls:
            return name
    raise ValueError(f"activation {activation!r} is not one of {sorted(ACTIVATIONS)}; only those can be exported")


def per_layer(value: int | Sequence[int] | None, n: int, name: str, default: Sequence[int]) -> list[int]:
    """One value per conv layer; None: ``default`` (extended with its last value)."""
    if value is None:
        value = (list(default) + [default[-1]] * n)[:n]
    values = [int(value)] * n if isinstance(value, int) else [int(v) for v in value]
    if len(values) != n or min(values, default=1) < 1:
        raise ValueError(f"{name} = {value!r} must be an int >= 1 or one such int per conv layer ({n} layers)")
    return values


class ScaledConv2d(nn.Conv2d):
    """``Conv2d(x * scale)`` computed as a conv with ``weight * scale`` (same state dict as ``Conv2d``)."""

    def __init__(self, *args, scale: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.scale = float(scale)

    def forward(self, x: th.Tensor) -> th.Tensor:
        weight = self.weight if self.scale == 1.0 else self.weight * self.scale
        return self._conv_forward(x, weight, self.bias)


def conv2d_stack(in_channels: int, channels: Sequence[int], kernel_sizes: Sequence[int], strides: Sequence[int],
                 activation: type[nn.Module], first_scale: float = 1.0) -> nn.Sequential:
    """Conv2d layers without padding, each followed by the activation, then Flatten; the first scales its input."""
    if not channels:
        raise ValueError("cnn_channels must name at least one conv layer, e.g. (16, 32, 32)")
    if not len(channels) == len(kernel_sizes) == len(strides):  # no zip(strict=): Python 3.8 (module docstring)
        raise ValueError(f"cnn_channels {list(channels)}, kernel_sizes {list(kernel_sizes)} and strides "
                         f"{list(strides)} must have one entry per conv layer each")
    layers: list[nn.Module] = []
    for i, (out, k, s) in enumerate(zip(channels, kernel_sizes, strides)):  # noqa: B905 (lengths checked above)
        conv = ScaledConv2d(in_channels, out, k, stride=s, scale=first_scale) if i == 0 else \
            nn.Conv2d(in_channels, out, k, stride=s)
        layers += [conv, activation()]
        in_channels = out
    return nn.Sequential(*layers, nn.Flatten())


def n_flatten(net: nn.Module, shape: tuple[int, ...], who: str) -> int:
    """Output size of ``net`` for one input of ``shape``: one no-grad dummy forward pass (like SB3's NatureCNN)."""
    try:
        with th.no_grad():
            return int(net(th.zeros(1, *shape)).shape[1])
    except RuntimeError as exc:
        raise ValueError(f"{who}: the conv layers do not fit maps of shape {tuple(shape)} ({exc}); use fewer "
                         "layers, smaller kernel_sizes or strides") from exc


class RealmNet(nn.Module):
    """A strided CNN over the maps fused with an MLP over the vector.

    The convs have no padding; by default kernels (5, 3, 3) with strides (3, 2, 1) shrink 51 x 51 maps
    51 -> 16 -> 7 -> 5; then ``features = act(Linear([cnn_flat, act(Linear(vector))]))``.

    :param maps_shape: (C, H, W) of the maps (C = 4 T for T stacked frames).
    :param vector_size: N, size of the vector.
    :param features_dim: size of the output features.
    :param cnn_channels: output channels of each conv layer.
    :param mlp_hidden: width of the layer over the vector.
    :param kernel_sizes: kernel size of every conv layer, or one per layer; None: 5, 3, 3, ...
    :param strides: stride of every conv layer, or one per layer; None: 3, 2, 1, ...
    :param activation: activation after each layer (name or class).
    :param maps_scale: multiplies the maps (folded into the first conv).
    """

    def __init__(self, maps_shape: Sequence[int], vector_size: int, features_dim: int = 256,
                 cnn_channels: Sequence[int] = (16, 32, 32), mlp_hidden: int = 128,
                 kernel_sizes: int | Sequence[int] | None = None, strides: int | Sequence[int] | None = None,
                 activation: str | type[nn.Module] = "relu", maps_scale: float = 1.0) -> None:
        super().__init__()
        act = activation_class(activation)
        n = len(cnn_channels)
        kernels = per_layer(kernel_sizes, n, "kernel_sizes", (5, 3))
        stride = per_layer(strides, n, "strides", (3, 2, 1))
        self.maps_scale = float(maps_scale)
        self.cnn = conv2d_stack(int(maps_shape[0]), cnn_channels, kernels, stride, act, first_scale=self.maps_scale)
        self.n_flatten = n_flatten(self.cnn, tuple(maps_shape), type(self).__name__)
        self.mlp = nn.Sequential(nn.Linear(int(vector_size), mlp_hidden), act())
        self.fuse = nn.Sequential(nn.Linear(self.n_flatten + mlp_hidden, features_dim), act())
        self.features_dim = int(features_dim)

    def forward(self, maps: th.Tensor, vector: th.Tensor) -> th.Tensor:
        """(B, C, H, W) maps and (B, N) vector -> (B, features_dim)."""
        return self.fuse(th.cat([self.cnn(maps), self.mlp(vector)], dim=1))


class FoveaNet(nn.Module):
    """Full resolution near the hero, coarse far away, one small CNN over both.

    The maps are centred on the hero. The periphery is the ``pool x pool`` average of the whole maps (51 -> 17 for
    ``pool=3``: the fraction of free cells, of visits, of treasure cells per block); the fovea is the centre crop of
    the same size at full resolution (the 17 x 17 cells around the hero). Stacked on the channel axis (2 C channels)
    they go through the CNN (by default kernels 3 and strides 2, 1: 17 -> 8 -> 6), fused with an MLP over the vector
    as in :class:`RealmNet`.

    :param maps_shape: (C, H, W) of the maps, H = W.
    :param vector_size: N, size of the vector.
    :param features_dim: size of the output features.
    :param pool: block size of the periphery average; the fovea is ``(H - pool) // pool + 1`` cells wide.
    :param cnn_channels: output channels of each conv layer.
    :param mlp_hidden: width of the layer over the vector.
    :param kernel_sizes: kernel size of every conv layer, or one per layer; None: 3.
    :param strides: stride of every conv layer, or one per layer; None: 2, 1, 1, ...
    :param activation: activation after each layer (name or class).
    :param maps_scale: multiplies the maps (applied to the small crop and the pooled maps).
    :param cell_offset: also feed the MLP the hero's position inside its grid cell (x and z, each in [-1, 1)),
        computed from the vector's ``norm_pos`` (elements 0 and 1, world / 64000): where in its cell the hero stands
        decides which step reaches a pickup disc or clears a corner, and an MLP cannot cut it out of ``norm_pos``.
    """

    def __init__(self, maps_shape: Sequence[int], vector_size: int, features_dim: int = 128, pool: int = 3,
                 cnn_channels: Sequence[int] = (16, 16), mlp_hidden: int = 128,
                 kernel_sizes: int | Sequence[int] | None = None, strides: int | Sequence[int] | None = None,
                 activation: str | type[nn.Module] = "relu", maps_scale: float = 1.0,
                 cell_offset: bool = False) -> None:
        super().__init__()
        c, h, w = (int(v) for v in maps_shape)
        if h != w or not 1 <= pool <= h:
            raise ValueError(f"FoveaNet needs square maps and 1 <= pool <= {h}; got maps {tuple(maps_shape)}, "
                             f"pool = {pool!r}")
        act = activation_class(activation)
        n = len(cnn_channels)
        kernels = per_layer(kernel_sizes, n, "kernel_sizes", (3,))
        stride = per_layer(strides, n, "strides", (2, 1))
        self.maps_scale, self.pool = float(maps_scale), int(pool)
        self.crop = (h - pool) // pool + 1
        self.offset = (h - self.crop) // 2
        self.cnn = conv2d_stack(2 * c, cnn_channels, kernels, stride, act)
        self.n_flatten = n_flatten(self.cnn, (2 * c, self.crop, self.crop), type(self).__name__)
        self.cell_offset = bool(cell_offset)
        self.mlp = nn.Sequential(nn.Linear(int(vector_size) + 2 * self.cell_offset, mlp_hidden), act())
        self.fuse = nn.Sequential(nn.Linear(self.n_flatten + mlp_hidden, features_dim), act())
        self.features_dim = int(features_dim)

    def forward(self, maps: th.Tensor, vector: th.Tensor) -> th.Tensor:
        """(B, C, H, W) maps and (B, N) vector -> (B, features_dim)."""
        if self.cell_offset:
            vector = th.cat([vector, cell_offsets(vector)], dim=1)  # (B, N + 2)
        a, b = self.offset, self.offset + self.crop
        fovea = maps[:, :, a:b, a:b]  # (B, C, crop, crop): the cells around the hero
        periphery = F.avg_pool2d(maps, self.pool)  # (B, C, crop, crop): block averages of the whole maps
        x = th.cat([fovea, periphery], dim=1)  # (B, 2 C, crop, crop)
        if self.maps_scale != 1.0:
            x = x * self.maps_scale
        return self.fuse(th.cat([self.cnn(x), self.mlp(vector)], dim=1))


WORLD_SIZE = 64000.0  # norm_pos = world / WORLD_SIZE (the features module's layout)
CELL_WIDTH = 500.0
GRID_ORIGIN = (-2250.0, -5250.0)  # world (x, z) of the grid's corner


def cell_offsets(vector: th.Tensor) -> th.Tensor:
    """(B, N) vectors whose elements 0, 1 are ``norm_pos`` -> (B, 2): the hero's position inside its grid cell,
    x then z, scaled from [0, 1) to [-1, 1)."""
    cells = (vector[:, :2] * WORLD_SIZE - vector.new_tensor(GRID_ORIGIN)) / CELL_WIDTH  # (B, 2) in cell units
    return 2.0 * (cells - th.floor(cells)) - 1.0


NETS: dict[str, type[RealmNet] | type[FoveaNet]] = {"realm": RealmNet, "fovea": FoveaNet}

