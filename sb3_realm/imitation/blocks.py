"""Expert states in compact form, in memory and in a dataset's shards: a game's storage :class:`Layout`, a
:class:`Block` of states, several blocks read as one (:class:`Blocks`).

Compact storage (``Block``): the obstacle, treasure and end windows only hold 0 or 255 and are stored as bits
(3 x 326 bytes a state), the memory window as its uint8 values (2601 bytes), the vector as float32 (864 bytes):
4.5 KB a state with the action and the mask, against 11.3 KB for the observation itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import games

__all__ = ["LAYOUT", "Block", "Blocks", "DatasetError", "Layout", "decode_maps", "encode_maps"]

_ARRAYS = ("bits", "memory", "vector", "actions", "masks", "starts")


class DatasetError(ValueError):
    """A dataset that cannot be used; the message names it and says what to do."""


@dataclass(frozen=True)
class Layout:
    """How a game's states are stored: its features' map shape, vector size and actions, and the map channels that
    hold only 0 or 255 (``BINARY_LAYERS``, stored as bits; the other channels as their uint8 values).

    :param maps_shape: ``(channels, height, width)``.
    :param vector_size: the vector's length.
    :param n_actions: the actions.
    :param binary_layers: the channels stored as bits.
    """

    maps_shape: tuple[int, int, int]
    vector_size: int
    n_actions: int
    binary_layers: tuple[int, ...]

    @classmethod
    def of(cls, game: str | None) -> Layout:
        """The layout of ``game``'s features (None: a ``ValueError`` asking for the game)."""
        features = games.get(game).submission.features
        return cls(tuple(features.MAP_SHAPE), int(features.VECTOR_SIZE), int(features.N_ACTIONS),
                   tuple(features.BINARY_LAYERS))

    @classmethod
    def from_meta(cls, meta: dict) -> Layout:
        """The layout a dataset's ``meta.json`` records (:meth:`to_meta`)."""
        return cls(tuple(meta["maps_shape"]), int(meta["vector_size"]), int(meta["n_actions"]),
                   tuple(meta["binary_layers"]))

    def to_meta(self) -> dict:
        return {"maps_shape": list(self.maps_shape), "vector_size": self.vector_size, "n_actions": self.n_actions,
                "binary_layers": list(self.binary_layers)}

    @property
    def window(self) -> int:
        """Cells of one channel."""
        return int(self.maps_shape[1] * self.maps_shape[2])

    @property
    def value_layers(self) -> tuple[int, ...]:
        """The channels stored as their values."""
        return tuple(i for i in range(self.maps_shape[0]) if i not in self.binary_layers)

    def arrays(self, n: int) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """The shape and type of each stored array of ``n`` states (:class:`Block`)."""
        return {"bits": ((n, len(self.binary_layers), (self.window + 7) // 8), np.dtype(np.uint8)),
                "memory": ((n, len(self.value_layers) * self.window), np.dtype(np.uint8)),
                "vector": ((n, self.vector_size), np.dtype(np.float32)), "actions": ((n,), np.dtype(np.uint8)),
                "masks": ((n, self.n_actions), np.dtype(bool)), "starts": ((n,), np.dtype(bool))}


#: the layout of a dataset that records none (one written when the package played only the Realm): the Realm's,
#: obstacle, treasure and end windows as bits, the memory window as values
LAYOUT = Layout.of(games.LEGACY_GAME)


def encode_maps(maps: np.ndarray, layout: Layout = LAYOUT) -> tuple[np.ndarray, np.ndarray]:
    """(N, C, H, W) uint8 maps -> (bits (N, binary channels, ceil(H * W / 8)) uint8, the other channels' values
    (N, channels * H * W) uint8); the Realm's: bits (N, 3, 326), memory (N, 2601)."""
    flat = maps.reshape(len(maps), layout.maps_shape[0], layout.window)
    binary = flat[:, list(layout.binary_layers)]
    if np.any((binary != 0) & (binary != 255)):
        raise DatasetError(f"map channels {list(layout.binary_layers)} must hold only 0 and 255 (the features "
                           "module's BINARY_LAYERS); these observations do not")
    return np.packbits(binary != 0, axis=-1), np.ascontiguousarray(
        flat[:, list(layout.value_layers)].reshape(len(maps), -1))


def decode_maps(bits: np.ndarray, memory: np.ndarray, layout: Layout = LAYOUT) -> np.ndarray:
    """The inverse of :func:`encode_maps`: (N, C, H, W) uint8."""
    n = len(bits)
    maps = np.empty((n, layout.maps_shape[0], layout.window), dtype=np.uint8)
    maps[:, list(layout.binary_layers)] = np.unpackbits(bits, axis=-1, count=layout.window) * np.uint8(255)
    maps[:, list(layout.value_layers)] = memory.reshape(n, len(layout.value_layers), layout.window)
    return maps.reshape(n, *layout.maps_shape)


@dataclass
class Block:
    """States in compact form (see the module docstring).

    :param bits: (N, binary channels, ceil(cells / 8)) uint8, the channels that hold only 0 or 255, as bits (the
        Realm's obstacle, treasure and end windows: (N, 3, 326)).
    :param memory: (N, other channels * cells) uint8, the other channels (the Realm's memory window: (N, 2601)).
    :param vector: (N, vector size) float32.
    :param actions: (N,) uint8, the expert's action.
    :param masks: (N, actions) bool, the legal actions.
    :param starts: (N,) bool, True at the first state of an episode.
    :param layout: the game's :class:`Layout`.
    """

    bits: np.ndarray
    memory: np.ndarray
    vector: np.ndarray
    actions: np.ndarray
    masks: np.ndarray
    starts: np.ndarray
    layout: Layout = LAYOUT

    @classmethod
    def from_observations(cls, maps: np.ndarray, vector: np.ndarray, actions, masks, starts,
                          layout: Layout = LAYOUT) -> Block:
        bits, memory = encode_maps(np.asarray(maps, dtype=np.uint8), layout)
        return cls(bits, memory, np.asarray(vector, dtype=np.float32), np.asarray(actions, dtype=np.uint8),
                   np.asarray(masks, dtype=bool), np.asarray(starts, dtype=bool), layout)

    @classmethod
    def of(cls, arrays: dict[str, np.ndarray], layout: Layout) -> Block:
        """A block of ``arrays`` (one per name of the stored arrays: bits, memory, vector, actions, masks, starts)."""
        return cls(arrays["bits"], arrays["memory"], arrays["vector"], arrays["actions"], arrays["masks"],
                   arrays["starts"], layout)

    @classmethod
    def concatenate(cls, blocks: list[Block]) -> Block:
        if not blocks:
            return cls.empty()
        return cls.of({name: np.concatenate([getattr(b, name) for b in blocks]) for name in _ARRAYS},
                      blocks[0].layout)

    @classmethod
    def empty(cls, layout: Layout = LAYOUT) -> Block:
        return cls(np.zeros((0, len(layout.binary_layers), (layout.window + 7) // 8), np.uint8),
                   np.zeros((0, len(layout.value_layers) * layout.window), np.uint8),
                   np.zeros((0, layout.vector_size), np.float32), np.zeros(0, np.uint8),
                   np.zeros((0, layout.n_actions), bool), np.zeros(0, bool), layout)

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def episodes(self) -> int:
        return int(self.starts.sum())

    def observations(self, index=slice(None)) -> dict[str, np.ndarray]:
        """The env observations of the states at ``index``: ``{"maps": (B, C, H, W) uint8, "vector": (B, size)}``."""
        return {"maps": decode_maps(self.bits[index], self.memory[index], self.layout), "vector": self.vector[index]}

    def take(self, index) -> Block:
        """The states at ``index`` (a copy)."""
        return Block.of({name: getattr(self, name)[index] for name in _ARRAYS}, self.layout)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in _ARRAYS)


class Blocks:
    """Several blocks read as one, without concatenating them (a dataset keeps one copy of its states in memory).

    :param blocks: the blocks, in order.
    """

    def __init__(self, blocks: list[Block]) -> None:
        self.blocks = [b for b in blocks if len(b)]
        self.bounds = np.cumsum([0] + [len(b) for b in self.blocks])  # (K + 1,) first index of each block

    def __len__(self) -> int:
        return int(self.bounds[-1])

    def gather(self, index: np.ndarray) -> Block:
        """The states at the global ``index`` (sorted ascending: states come block by block, in that order)."""
        index = np.asarray(index)
        which = np.searchsorted(self.bounds, index, side="right") - 1  # (B,) block of each state
        parts = [self.blocks[k].take(index[which == k] - self.bounds[k]) for k in np.unique(which)]
        return parts[0] if len(parts) == 1 else Block.concatenate(parts)
