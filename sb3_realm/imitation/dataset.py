"""Expert datasets: every state as the Gym env's observation (exactly what the model is trained on), the expert's
action and the action mask, stored compactly in shards on disk.

A dataset is a folder: ``meta.json`` (format, features version, observation layout, expert, and one entry per shard
with its state count, sha256 and, when another labelled it, its expert) and ``shard-NNNNN.npz`` files (plain arrays,
never pickles). Shards are written atomically (temporary file, then rename) before ``meta.json`` names them, so a
dataset grows by appending shards and a kill at any moment leaves the previous complete dataset.

Compact storage (``Block``): the obstacle, treasure and end windows only hold 0 or 255 and are stored as bits
(3 x 326 bytes a state), the memory window as its uint8 values (2601 bytes), the vector as float32 (864 bytes):
4.5 KB a state with the action and the mask, against 11.3 KB for the observation itself.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import games
from ..atomic import atomic_write, sha256_file

__all__ = ["Block", "Blocks", "ExpertDataset", "DatasetError", "LAYOUT", "FORMAT", "encode_maps", "decode_maps"]

FORMAT = "sb3-realm expert dataset"
FORMAT_VERSION = 1
# the states' layout: the default game's features (the Realm's: obstacle, memory, treasure, end maps)
features = games.get().features
BINARY_LAYERS = (0, 2, 3)  # obstacle, treasure, end: 0 or 255
MEMORY_LAYER = 1
WINDOW = int(np.prod(features.MAP_SHAPE[1:]))  # 2601 cells
LAYOUT = {"maps_shape": list(features.MAP_SHAPE), "vector_size": features.VECTOR_SIZE,
          "n_actions": features.N_ACTIONS, "binary_layers": list(BINARY_LAYERS)}
_ARRAYS = ("bits", "memory", "vector", "actions", "masks", "starts")


class DatasetError(ValueError):
    """A dataset that cannot be used; the message names it and says what to do."""


def encode_maps(maps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 4, 51, 51) uint8 maps -> (bits (N, 3, 326) uint8, memory (N, 2601) uint8)."""
    flat = maps.reshape(len(maps), features.MAP_SHAPE[0], WINDOW)  # (N, 4, 2601)
    binary = flat[:, BINARY_LAYERS]  # (N, 3, 2601)
    if np.any((binary != 0) & (binary != 255)):
        raise DatasetError("the obstacle, treasure and end maps must hold only 0 and 255 (the features module's "
                           "layout); these observations do not")
    return np.packbits(binary != 0, axis=-1), np.ascontiguousarray(flat[:, MEMORY_LAYER])


def decode_maps(bits: np.ndarray, memory: np.ndarray) -> np.ndarray:
    """The inverse of :func:`encode_maps`: (N, 4, 51, 51) uint8."""
    n = len(bits)
    maps = np.empty((n, features.MAP_SHAPE[0], WINDOW), dtype=np.uint8)  # (N, 4, 2601)
    maps[:, BINARY_LAYERS] = np.unpackbits(bits, axis=-1, count=WINDOW) * np.uint8(255)
    maps[:, MEMORY_LAYER] = memory
    return maps.reshape(n, *features.MAP_SHAPE)


@dataclass
class Block:
    """States in compact form (see the module docstring).

    :param bits: (N, 3, 326) uint8, the obstacle, treasure and end windows as bits.
    :param memory: (N, 2601) uint8, the memory window.
    :param vector: (N, 216) float32.
    :param actions: (N,) uint8, the expert's action.
    :param masks: (N, 16) bool, the legal actions.
    :param starts: (N,) bool, True at the first state of an episode.
    """

    bits: np.ndarray
    memory: np.ndarray
    vector: np.ndarray
    actions: np.ndarray
    masks: np.ndarray
    starts: np.ndarray

    @classmethod
    def from_observations(cls, maps: np.ndarray, vector: np.ndarray, actions, masks, starts) -> Block:
        bits, memory = encode_maps(np.asarray(maps, dtype=np.uint8))
        return cls(bits, memory, np.asarray(vector, dtype=np.float32), np.asarray(actions, dtype=np.uint8),
                   np.asarray(masks, dtype=bool), np.asarray(starts, dtype=bool))

    @classmethod
    def concatenate(cls, blocks: list[Block]) -> Block:
        if not blocks:
            return cls.empty()
        return cls(*(np.concatenate([getattr(b, name) for b in blocks]) for name in _ARRAYS))

    @classmethod
    def empty(cls) -> Block:
        return cls(np.zeros((0, len(BINARY_LAYERS), (WINDOW + 7) // 8), np.uint8), np.zeros((0, WINDOW), np.uint8),
                   np.zeros((0, features.VECTOR_SIZE), np.float32), np.zeros(0, np.uint8),
                   np.zeros((0, features.N_ACTIONS), bool), np.zeros(0, bool))

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def episodes(self) -> int:
        return int(self.starts.sum())

    def observations(self, index=slice(None)) -> dict[str, np.ndarray]:
        """The env observations of the states at ``index``: ``{"maps": (B, 4, 51, 51) uint8, "vector": (B, 216)}``."""
        return {"maps": decode_maps(self.bits[index], self.memory[index]), "vector": self.vector[index]}

    def take(self, index) -> Block:
        """The states at ``index`` (a copy)."""
        return Block(*(getattr(self, name)[index] for name in _ARRAYS))

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


class ExpertDataset:
    """A dataset folder (module docstring). Open with :meth:`open` or :meth:`create`; grow with :meth:`append`.

    :param folder: the dataset folder.
    :param meta: the contents of its ``meta.json``.
    """

    def __init__(self, folder: Path, meta: dict) -> None:
        self.folder = folder
        self.meta = meta
        self._blocks: list[Block] | None = None  # every shard's states, once loaded

    # ------------------------------------------------------------------------------------------ creating, opening
    @classmethod
    def create(cls, folder: str | os.PathLike, *, expert: str, map_name: str,
               feature_version: str = features.FEATURE_VERSION) -> ExpertDataset:
        """A new empty dataset in ``folder`` (which must not hold one yet)."""
        folder = Path(folder)
        if (folder / "meta.json").exists():
            raise DatasetError(f"{str(folder)!r} already holds a dataset; open it to append, or choose another folder")
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "feature_version": str(feature_version),
                "layout": LAYOUT, "expert": expert, "map": map_name, "shards": []}
        dataset = cls(folder, meta)
        dataset._write_meta()
        dataset._blocks = []
        return dataset

    @classmethod
    def open(cls, folder: str | os.PathLike) -> ExpertDataset:
        """An existing dataset; raises :class:`DatasetError` when ``meta.json`` is missing or not a dataset's."""
        folder = Path(folder)
        path = folder / "meta.json"
        if not path.is_file():
            raise DatasetError(f"{str(folder)!r} is not an expert dataset: no meta.json there (sb3-realm imitate "
                               "writes one under RUN/dataset)")
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DatasetError(f"{str(path)!r} is not valid JSON ({exc}); the dataset's index is damaged") from exc
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise DatasetError(f"{str(path)!r} is not the index of an sb3-realm expert dataset")
        if meta.get("format_version") != FORMAT_VERSION:
            raise DatasetError(f"{str(folder)!r} has dataset format {meta.get('format_version')!r}; this sb3_realm "
                               f"reads format {FORMAT_VERSION}: collect the data again")
        return cls(folder, meta)

    # ------------------------------------------------------------------------------------------ checks
    @property
    def feature_version(self) -> str:
        return str(self.meta["feature_version"])

    @property
    def states(self) -> int:
        return sum(s["states"] for s in self.meta["shards"])

    def check_compatible(self, observation_space, n_actions: int, feature_version: str) -> None:
        """Refuse (:class:`DatasetError`) a model whose observation layout or features version differs."""
        if self.feature_version != str(feature_version):
            raise DatasetError(f"dataset {str(self.folder)!r} was collected with features version "
                               f"{self.feature_version}, the model uses version {feature_version}: collect the data "
                               "again with this sb3_realm (delete the dataset folder or choose another)")
        layout = self.meta.get("layout")
        try:
            found = {"maps_shape": list(observation_space["maps"].shape),
                     "vector_size": int(observation_space["vector"].shape[0]), "n_actions": int(n_actions),
                     "binary_layers": list(BINARY_LAYERS)}
        except (KeyError, TypeError, IndexError) as exc:
            raise DatasetError(f"the model's observation space {observation_space} is not the env's Dict(maps, "
                               "vector); datasets hold single frames of the env (env.frame_stack: 1)") from exc
        if layout != found:
            raise DatasetError(f"dataset {str(self.folder)!r} has the observation layout {layout}, the model expects "
                               f"{found}: collect the data again for this model (single frames, env.frame_stack: 1)")

    # ------------------------------------------------------------------------------------------ shards
    def _write_meta(self) -> None:
        text = json.dumps(self.meta, indent=2) + "\n"
        atomic_write(self.folder / "meta.json", lambda f: f.write(text.encode("utf-8")))

    def append(self, block: Block, source: str, expert: str | None = None) -> dict:
        """Write ``block`` as a new shard (atomically), then record it in ``meta.json``; returns its entry. ``expert``:
        the policy that labelled it; the entry names it when it is not the dataset's ``expert`` (a resumed run that
        switched expert)."""
        if len(block) == 0:
            raise DatasetError("refusing to append an empty shard")
        name = f"shard-{len(self.meta['shards']):05d}.npz"
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **{k: getattr(block, k) for k in _ARRAYS})
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.folder / name)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        entry = {"file": name, "states": len(block), "episodes": block.episodes, "source": source,
                 "sha256": sha256_file(self.folder / name)}
        if expert is not None and expert != self.meta["expert"]:
            entry["expert"] = expert
        self.meta["shards"].append(entry)
        self._write_meta()
        if self._blocks is not None:
            self._blocks.append(block)
        return entry

    def truncate(self, n_shards: int) -> None:
        """Keep only the first ``n_shards`` shards (a resumed run drops what a killed round appended after its last
        checkpoint)."""
        extra = self.meta["shards"][n_shards:]
        if not extra:
            return
        self.meta["shards"] = self.meta["shards"][:n_shards]
        self._write_meta()
        for entry in extra:
            (self.folder / entry["file"]).unlink(missing_ok=True)
        if self._blocks is not None:
            self._blocks = self._blocks[:n_shards]

    def verify(self, n_shards: int | None = None) -> None:
        """Check the first ``n_shards`` shards (all by default) against ``meta.json`` without loading them: each is
        there with its sha256; a ``DatasetError`` names the first that is not."""
        for entry in self.meta["shards"][:n_shards]:
            self._check_shard(entry)

    def _check_shard(self, entry: dict) -> Path:
        path = self.folder / entry["file"]
        if not path.is_file():
            raise DatasetError(f"dataset {str(self.folder)!r}: shard {entry['file']} is missing; restore it or remove "
                               "its entry from meta.json (or collect the data again)")
        if sha256_file(path) != entry["sha256"]:
            raise DatasetError(f"dataset {str(self.folder)!r}: shard {entry['file']} is damaged or truncated (its "
                               "sha256 differs from meta.json); delete it and its entry, or collect the data again")
        return path

    def _load_shard(self, entry: dict) -> Block:
        path = self._check_shard(entry)
        with np.load(path, allow_pickle=False) as data:
            block = Block(*(data[k] for k in _ARRAYS))
        if len(block) != entry["states"]:
            raise DatasetError(f"dataset {str(self.folder)!r}: shard {entry['file']} holds {len(block)} states, "
                               f"meta.json says {entry['states']}")
        return block

    def shard(self, index: int) -> Block:
        """One shard's states, read (and checked) from disk."""
        return self._load_shard(self.meta["shards"][index])

    def all(self) -> Blocks:
        """All states, shard after shard, loaded (and checked) once and kept: one copy in memory, never concatenated
        (``Block.concatenate(dataset.all().blocks)`` makes a single block when one is needed)."""
        if self._blocks is None:
            self._blocks = [self._load_shard(entry) for entry in self.meta["shards"]]
        return Blocks(self._blocks)
