"""Expert datasets: every state as the Gym env's observation (exactly what the model is trained on), the expert's
action and the action mask, stored compactly in shards on disk.

A dataset is a folder: ``meta.json`` (format, features version, observation layout, expert, and one entry per shard
with its state count, sha256 and, when another labelled it, its expert) and ``shard-NNNNN.npz`` files (plain arrays,
never pickles). Shards are written atomically (temporary file, then rename) before ``meta.json`` names them, so a
dataset grows by appending shards and a kill at any moment leaves the previous complete dataset.

A dataset's files may come from elsewhere (a copied run folder), so nothing in them is trusted:
:meth:`ExpertDataset.open` checks the whole index (every key and type; every shard named once, by a shard's name,
inside the folder) before anything is read through it, and a shard is used only once its sha256 matches and it loads
without pickles with the arrays, shapes and types of the index's layout.

The states are stored compactly: see :mod:`sb3_realm.imitation.blocks` (:class:`~sb3_realm.imitation.blocks.Block`).
"""

from __future__ import annotations

import json
import os
import re
import reprlib
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .. import games
from ..atomic import OutsideFolder, atomic_write, inside, remove_made, sha256_file
from .blocks import _ARRAYS, LAYOUT, Block, Blocks, DatasetError, Layout, decode_maps, encode_maps

__all__ = [
    "FORMAT",
    "LAYOUT",
    "Block",
    "Blocks",
    "DatasetError",
    "ExpertDataset",
    "Layout",
    "decode_maps",
    "encode_maps",
]

FORMAT = "sb3-realm expert dataset"
FORMAT_VERSION = 1
#: the names this package gives shards (``append``): the only files an index may name, and the only ones removed
SHARD_NAME = re.compile(r"shard-[0-9]{5,}\.npz")
_SHA256 = re.compile(r"[0-9a-f]{64}")


_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict, _REPR.maxlevel = 80, 80, 8, 6, 3


def shown(value) -> str:
    """``repr(value)`` cut short: a value read from a file, shown in a one-line message."""
    return _REPR.repr(value)


def _is_int(value, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_layout(layout, where: str) -> str | None:
    """What is wrong with the ``layout`` an index records (None: nothing)."""
    if not isinstance(layout, dict):
        return f"{where} = {shown(layout)} must be a mapping (maps_shape, vector_size, n_actions, binary_layers)"
    for key in ("maps_shape", "vector_size", "n_actions", "binary_layers"):
        if key not in layout:
            return f"{where} lacks {key!r}"
    shape, layers = layout["maps_shape"], layout["binary_layers"]
    if not (isinstance(shape, list) and len(shape) == 3 and all(_is_int(v, 1) for v in shape)):
        return f"{where}.maps_shape = {shown(shape)} must be three integers >= 1 (channels, height, width)"
    if not _is_int(layout["vector_size"], 1):
        return f"{where}.vector_size = {shown(layout['vector_size'])} must be an integer >= 1"
    if not (_is_int(layout["n_actions"], 1) and layout["n_actions"] <= 256):
        return f"{where}.n_actions = {shown(layout['n_actions'])} must be an integer in 1..256"
    if not (isinstance(layers, list) and all(_is_int(v) and v < shape[0] for v in layers)
            and len(set(layers)) == len(layers)):
        return f"{where}.binary_layers = {shown(layers)} must list distinct channels of 0..{shape[0] - 1}"
    return None


def _index_problem(meta: dict, folder: Path, index: str) -> str | None:
    """What is wrong with a dataset's index ``meta`` (read from ``index``, of the dataset in ``folder``), or None:
    every key and type, and every shard named once, by a shard's name, inside ``folder`` (a path leading out raises
    :class:`DatasetError` at once)."""
    for key, kind, types in (("feature_version", "text or a number", (str, int)), ("layout", "a mapping", dict),
                             ("expert", "text", str), ("map", "text", str),
                             ("shards", "a list of the shards' entries", list)):
        if key not in meta:
            return f"it lacks {key!r}"
        if not isinstance(meta[key], types):
            return f"{key} = {shown(meta[key])} must be {kind}"
    problem = _check_layout(meta["layout"], "layout")
    if problem:
        return problem
    seen: set[str] = set()
    for i, entry in enumerate(meta["shards"]):
        where = f"shards[{i}]"
        if not isinstance(entry, dict):
            return f"{where} = {shown(entry)} must be a mapping (file, states, episodes, source, sha256)"
        for key in ("file", "states", "episodes", "source", "sha256"):
            if key not in entry:
                return f"{where} lacks {key!r}"
        checks = (("file", "text", isinstance(entry["file"], str)),
                  ("states", "an integer >= 1", _is_int(entry["states"], 1)),
                  ("episodes", "an integer >= 0", _is_int(entry["episodes"])),
                  ("source", "text", isinstance(entry["source"], str)),
                  ("sha256", "64 hex digits",
                   isinstance(entry["sha256"], str) and _SHA256.fullmatch(entry["sha256"]) is not None),
                  ("expert", "text", isinstance(entry.get("expert", ""), str)))
        for key, kind, valid in checks:
            if not valid:
                return f"{where}.{key} = {shown(entry[key])} must be {kind}"
        name = entry["file"]
        try:
            inside(folder, name, f"dataset index {index!r}")
        except OutsideFolder as exc:  # its message names the index and the fix
            raise DatasetError(str(exc)) from None
        if not SHARD_NAME.fullmatch(name):
            return f"{where}.file = {shown(name)} is not a shard's name (shard-NNNNN.npz, in the dataset's own folder)"
        if name in seen:
            return f"it names {name} twice"
        seen.add(name)
    return None


class ExpertDataset:
    """A dataset folder (module docstring). Open with :meth:`open` or :meth:`create`; grow with :meth:`append`.

    :param folder: the dataset folder.
    :param meta: the contents of its ``meta.json``.
    """

    def __init__(self, folder: Path, meta: dict) -> None:
        self.folder = folder
        self.meta = meta
        self._blocks: list[Block] | None = None  # the first shards' states, as far as they are loaded

    # ------------------------------------------------------------------------------------------ creating, opening
    @classmethod
    def create(cls, folder: str | os.PathLike, *, expert: str, map_name: str, feature_version: str | None = None,
               layout: Layout = LAYOUT) -> ExpertDataset:
        """A new empty dataset in ``folder`` (which must not hold one yet) of states in ``layout`` from features
        version ``feature_version`` (None: the current one of :data:`~sb3_realm.games.LEGACY_GAME`, whose layout
        :data:`LAYOUT` is)."""
        if feature_version is None:
            feature_version = games.GAMES[games.LEGACY_GAME].submission.features.FEATURE_VERSION
        folder = Path(folder)
        if (folder / "meta.json").exists():
            raise DatasetError(f"{str(folder)!r} already holds a dataset; open it to append, or choose another folder")
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "feature_version": str(feature_version),
                "layout": layout.to_meta(), "expert": expert, "map": map_name, "shards": []}
        dataset = cls(folder, meta)
        dataset._write_meta()
        dataset._blocks = []
        return dataset

    @property
    def layout(self) -> Layout:
        """How the dataset's states are stored (its ``meta.json``'s)."""
        return Layout.from_meta(self.meta["layout"])

    @classmethod
    def open(cls, folder: str | os.PathLike) -> ExpertDataset:
        """An existing dataset, its whole index checked (module docstring) before anything is read through it;
        raises :class:`DatasetError` when ``meta.json`` is missing, damaged or not a dataset's."""
        folder = Path(folder)
        path = folder / "meta.json"
        if not path.is_file():
            raise DatasetError(f"{str(folder)!r} is not an expert dataset: no meta.json there (sb3-realm imitate "
                               "writes one under RUN/dataset)")
        try:
            inside(folder, "meta.json", f"dataset {str(folder)!r}")
            meta = json.loads(path.read_text(encoding="utf-8"))
        except OutsideFolder as exc:
            raise DatasetError(str(exc)) from None
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise DatasetError(f"{str(path)!r} is not valid JSON ({exc}); the dataset's index is damaged: restore "
                               "it, or collect the data again (a new run with --out)") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise DatasetError(f"{str(path)!r} is not the index of an sb3-realm expert dataset")
        if meta.get("format_version") != FORMAT_VERSION:
            raise DatasetError(f"{str(folder)!r} has dataset format {meta.get('format_version')!r}; this sb3_realm "
                               f"reads format {FORMAT_VERSION}: collect the data again")
        problem = _index_problem(meta, folder, str(path))
        if problem is not None:
            raise DatasetError(f"dataset index {str(path)!r}: {problem}; the index is damaged or not this package's: "
                               "restore the dataset as it was, or collect the data again (a new run with --out)")
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
                     "binary_layers": list(self.layout.binary_layers)}
        except (KeyError, TypeError, IndexError) as exc:
            raise DatasetError(f"the model's observation space {observation_space} is not the env's Dict(maps, "
                               "vector); datasets hold single frames of the env (env.frame_stack: 1)") from exc
        if layout != found:
            raise DatasetError(f"dataset {str(self.folder)!r} has the observation layout {layout}, the model expects "
                               f"{found}: collect the data again for this model (single frames, env.frame_stack: 1)")

    def check_checkpoint(self, shards: int, sha256: list[str] | None, states: int, checkpoint: str) -> None:
        """Refuse (:class:`DatasetError`) a dataset that is not the one ``checkpoint`` was trained on: fewer shards
        than its ``shards``, other shards in their place (``sha256``, where the checkpoint records them), or another
        number of ``states`` in them. More shards are a killed round's (:meth:`truncate` drops them)."""
        listed, index = self.meta["shards"], str(self.folder / "meta.json")
        fix = ("restore the run's dataset as it was (its meta.json and shards), delete that checkpoint to resume from "
               "the one before, or start the run again with --out")
        if len(listed) < shards:
            raise DatasetError(f"dataset index {index!r} lists {len(listed)} shards, but the checkpoint "
                               f"{checkpoint!r} was trained on {shards}: resuming would train on fewer states and "
                               f"write its next shard where one was lost; {fix}")
        for entry, digest in zip(listed[:shards], sha256 or [], strict=False):
            if entry["sha256"] != digest:
                raise DatasetError(f"dataset index {index!r}: {entry['file']} is not the shard the checkpoint "
                                   f"{checkpoint!r} was trained on (its sha256 differs); {fix}")
        held = sum(entry["states"] for entry in listed[:shards])
        if held != states:
            raise DatasetError(f"dataset index {index!r}: its first {shards} shards hold {held} states, the "
                               f"checkpoint {checkpoint!r} trained on {states}; {fix}")

    # ------------------------------------------------------------------------------------------ shards
    def _write_meta(self) -> None:
        text = json.dumps(self.meta, indent=2) + "\n"
        atomic_write(self.folder / "meta.json", lambda f: f.write(text.encode("utf-8")))

    def _path(self, entry: dict) -> Path:
        """The file of shard ``entry``, inside the dataset's folder (checked again on every use: a link may have
        appeared since the index was read)."""
        try:
            return inside(self.folder, entry["file"], f"dataset index {str(self.folder / 'meta.json')!r}")
        except OutsideFolder as exc:
            raise DatasetError(str(exc)) from None

    def append(self, block: Block, source: str, expert: str | None = None) -> dict:
        """Write ``block`` as a new shard (atomically), then record it in ``meta.json``; returns its entry. ``expert``:
        the policy that labelled it; the entry names it when it is not the dataset's ``expert`` (a resumed run that
        switched expert). A file the index does not name is never written over (a round killed between writing its
        shard and recording it leaves one): the shard takes the next free name."""
        if len(block) == 0:
            raise DatasetError("refusing to append an empty shard")
        recorded = {entry["file"] for entry in self.meta["shards"]}
        number = len(self.meta["shards"])
        while (name := f"shard-{number:05d}.npz") in recorded or os.path.lexists(self.folder / name):
            number += 1
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
        complete = self._blocks is not None and len(self._blocks) == len(self.meta["shards"])
        self.meta["shards"].append(entry)
        self._write_meta()
        if complete and self._blocks is not None:
            self._blocks.append(block)
        return entry

    def truncate(self, n_shards: int) -> None:
        """Keep only the first ``n_shards`` shards (a resumed run drops what a killed round appended after its last
        checkpoint): their entries leave the index, then their files (shards of the dataset's own folder, as
        :meth:`open` checked) are removed."""
        extra = self.meta["shards"][n_shards:]
        if not extra:
            return
        paths = [self._path(entry) for entry in extra]  # all checked before anything changes
        self.meta["shards"] = self.meta["shards"][:n_shards]
        self._write_meta()
        for path in paths:
            if path.is_symlink() or path.is_file():  # a folder of a shard's name is none of this package's
                remove_made(path, self.folder)
        if self._blocks is not None:
            self._blocks = self._blocks[:n_shards]

    def verify(self, n_shards: int | None = None) -> None:
        """Check the first ``n_shards`` shards (all by default) before any work: each is there with its sha256 and
        loads without pickles with the arrays, shapes and types of the layout (:meth:`shard`); a
        :class:`DatasetError` names the first that does not. They stay loaded for :meth:`all`."""
        self._loaded(len(self.meta["shards"][:n_shards]))

    def _check_shard(self, entry: dict) -> Path:
        path = self._path(entry)
        if not path.is_file():
            raise DatasetError(f"dataset {str(self.folder)!r}: shard {entry['file']} is missing; restore it or remove "
                               "its entry from meta.json (or collect the data again)")
        if sha256_file(path) != entry["sha256"]:
            raise DatasetError(f"dataset {str(self.folder)!r}: shard {entry['file']} is damaged or truncated (its "
                               "sha256 differs from meta.json); delete it and its entry, or collect the data again")
        return path

    def _load_shard(self, entry: dict) -> Block:
        path = self._check_shard(entry)
        where = f"dataset {str(self.folder)!r}: shard {entry['file']}"
        fix = ("delete it and its entry from meta.json, or collect the data again (a new run with --out); this "
               "package writes shards of plain arrays only")
        if not zipfile.is_zipfile(path):
            raise DatasetError(f"{where} is not a readable .npz (not a zip archive); {fix}")
        try:
            with np.load(path, allow_pickle=False) as data:
                missing = [name for name in _ARRAYS if name not in data.files]
                if missing:
                    raise DatasetError(f"{where} lacks the array {missing[0]!r}; {fix}")
                arrays = {name: data[name] for name in _ARRAYS}
        except DatasetError:
            raise
        except ValueError as exc:
            if "pickle" in str(exc) or "Object arrays" in str(exc):
                raise DatasetError(f"{where} holds a pickle (an object array), which is never loaded: a pickle can "
                                   f"run code; {fix}") from None
            raise DatasetError(f"{where} is not a readable .npz of plain arrays ({exc}); {fix}") from None
        except (OSError, EOFError, KeyError, MemoryError, zipfile.BadZipFile, zlib.error) as exc:
            raise DatasetError(f"{where} is not a readable .npz of plain arrays ({exc}); {fix}") from None
        layout = self.layout
        for name, (shape, dtype) in layout.arrays(entry["states"]).items():
            if arrays[name].dtype != dtype:
                raise DatasetError(f"{where}: {name} is {arrays[name].dtype}, expected {dtype}; {fix}")
            if arrays[name].shape != shape:
                raise DatasetError(f"{where}: {name} has the shape {arrays[name].shape}, expected {shape} (meta.json "
                                   f"counts {entry['states']} states); {fix}")
        if len(arrays["actions"]) and int(arrays["actions"].max()) >= layout.n_actions:
            raise DatasetError(f"{where} holds actions outside 0..{layout.n_actions - 1}; {fix}")
        if not np.isfinite(arrays["vector"]).all():
            raise DatasetError(f"{where}: vector holds values that are not finite (NaN or infinite); {fix}")
        return Block.of(arrays, layout)

    def shard(self, index: int) -> Block:
        """One shard's states, read (and checked) from disk."""
        return self._load_shard(self.meta["shards"][index])

    def _loaded(self, n: int) -> list[Block]:
        """The first ``n`` shards' states, each loaded (and checked) once and kept."""
        if self._blocks is None:
            self._blocks = []
        while len(self._blocks) < n:
            self._blocks.append(self._load_shard(self.meta["shards"][len(self._blocks)]))
        return self._blocks[:n]

    def all(self) -> Blocks:
        """All states, shard after shard, loaded (and checked) once and kept: one copy in memory, never concatenated
        (``Block.concatenate(dataset.all().blocks)`` makes a single block when one is needed)."""
        return Blocks(self._loaded(len(self.meta["shards"])))
