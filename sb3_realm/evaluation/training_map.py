"""The map a policy was trained on, against the map it is played on: one line of warning when they differ.

A model learns the walls and positions of one map; played on another, its scores say how it does on a map it never
saw. A game with many maps (Gorge Chase) evaluates on named maps, and a checkpoint is refused on the maps its run
trained on (:func:`check_training_maps`) unless asked: every map of the run's history (``env.map_history``: the maps
of each part of a resumed run and of the model it started from), beside the maps its config names now. The training
map is read from the run config the policy records (``env.map_path``, else the shipped map that ``env.map_name``
names): in an SB3 checkpoint or the run's ``config.yaml`` beside it, or in a submission folder's manifest. Maps are
compared by content (walls and positions), never by name where both load: a copy of the same file under another name
or in another folder, an alias (``default``) or a map given by its file path counts as the same map, and another map
saved under a training map's file name does not. A training map file that is no longer where the run read it is
compared by the content the run recorded (``env.map_digests``: :func:`map_digest` of each map file it trained on);
only a training map whose content is known nowhere here is compared by its name (a file by its name without
folder)."""

from __future__ import annotations

import gzip
import hashlib
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import games
from ..agents.load import policy_game
from ..agents.submission import read_manifest
from ..models.saved import run_config

__all__ = [
    "TrainingMapWarning",
    "check_training_maps",
    "env_maps",
    "map_digest",
    "named_map",
    "recorded_digests",
    "recorded_env",
    "same_maps",
    "training_map_mismatch",
    "training_maps",
    "warn_training_map",
]


class TrainingMapWarning(UserWarning):
    """A policy is played on another map than the one it was trained on."""


def recorded_env(policy: str) -> dict | None:
    """The ``env`` section of the run config that ``policy`` records (an SB3 checkpoint: in it or beside it; a
    submission folder: in its manifest); None for ``random``, the oracle, or a policy that records none."""
    path = Path(policy)
    try:
        if path.is_file():
            config = run_config(path)
        elif path.is_dir():
            config = read_manifest(path).get("training_config")
        else:
            return None
    except (ValueError, OSError):  # not a policy of the package: its own loading says so
        return None
    env = (config or {}).get("env") if isinstance(config, dict) else None
    return env if isinstance(env, dict) else None


def _describe(game_map, game: games.GameSpec) -> str:
    return (f"the shipped {game_map.name} map" if game_map.name in game.maps.builtin
            else f"the map file {game_map.name!r}")


def _trained_on(env: dict, game: games.GameSpec) -> tuple[Any, str, str] | None:
    """``(the training map or None when its file is not here, its description, how to play on it)``; None when the
    config names no map this package knows."""
    map_path, map_name = env.get("map_path"), env.get("map_name") or "default"
    if map_path:
        try:
            trained = game.maps.load(map_path)
        except (ValueError, OSError):  # trained on another machine or from another folder
            return None, f"the map file {str(map_path)!r} (not found here)", "pass that map with --map PATH"
        return trained, f"the map file {str(map_path)!r}", f"pass --map {map_path}"
    if map_name not in game.maps.builtin:
        return None
    fix = ("leave out --map" if map_name == "default"
           else f"use Python: evaluate(..., env_kwargs={{'map_name': {map_name!r}}})")
    return game.maps.builtin[map_name](), f"the shipped {map_name} map", fix


def training_map_mismatch(policy: str, played, game: str | None = None) -> str | None:
    """One line saying that ``policy`` was trained on another map than ``played`` (a map of ``game``, None: the game
    the policy's checkpoint records) and how to play it on its own, or None when the maps are the same or the policy
    records no training map."""
    env = recorded_env(policy)
    if env is None:
        return None
    if game is None:
        try:
            spec = policy_game(policy)
        except (ValueError, OSError):
            return None  # a policy of a game unknown here: its own loading says so
    else:
        spec = games.get(game)
    found = _trained_on(env, spec)
    if found is None:
        return None
    trained, trained_text, fix = found
    digests = recorded_digests(env)
    path = str(env.get("map_path") or "")
    recorded = (digests.get(path) or digests.get(_file_key(path))) if path else None
    if recorded is not None and map_digest(path) != recorded:
        # the training file moved, or another map took its place: the content the run recorded decides
        return None if map_digest(played.name) == recorded else (
            f"{policy!r} was trained on the map file {path!r} (moved or changed since) and plays here on "
            f"{_describe(played, spec)}, a map it never learned, so its scores say little about how it plays its own "
            "map; to play it there, pass that map with --map PATH")
    if trained is not None and spec.maps.same(trained, played):
        return None
    if trained is None and played.name not in spec.maps.builtin and Path(played.name).name == Path(path).name:
        return None  # no content to compare anywhere: one of the training file's name is taken for it
    return (f"{policy!r} was trained on {trained_text} and plays here on {_describe(played, spec)}, a map it never "
            f"learned, so its scores say little about how it plays its own map; to play it there, {fix}")


def warn_training_map(policy, played, stacklevel: int = 3, game: str | None = None) -> None:
    """Warn (:class:`TrainingMapWarning`) when ``policy`` (a path; other policies are skipped) was trained on
    another map than ``played`` (a map of ``game``, None: the game the policy records)."""
    if not isinstance(policy, (str, Path)):
        return
    message = training_map_mismatch(str(policy), played, game)
    if message is not None:
        warnings.warn(message, TrainingMapWarning, stacklevel=stacklevel)


def env_maps(env: dict) -> list[str]:
    """The maps an ``env`` section (a run config's, as plain data) trains on now: ``map_names``, else ``map_path``,
    else ``map_name`` (``default`` when it names none). A value of another shape than a config writes (a damaged or
    foreign file's) counts as named by nothing."""
    listed = env.get("map_names")
    names = [str(n) for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
    names = names or [str(env[k]) for k in ("map_path",) if isinstance(env.get(k), str) and env[k]]
    name = env.get("map_name")
    return names or [name if isinstance(name, str) and name else "default"]


def training_maps(policy, game: str | None = None) -> list[str]:
    """The names of the maps the run of ``policy`` (a path) trained on: its recorded ``env`` section's history
    (``map_history``) and the maps it names now (:func:`env_maps`), each once (``default`` is the game's default map,
    by its own name); [] for a policy that records none."""
    if not isinstance(policy, (str, Path)):
        return []
    env = recorded_env(str(policy))
    if env is None:
        return []
    history = env.get("map_history")
    names = [str(n) for n in history if isinstance(n, str)] if isinstance(history, list) else []
    spec = games.get(game)
    return list(dict.fromkeys(spec.maps.builtin["default"]().name if n == "default" and "default" in spec.maps.builtin
                              else n for n in (*names, *env_maps(env))))


def map_digest(name: str | os.PathLike) -> str | None:
    """The sha256 of a map file's content (of its JSON when the file is gzip-compressed, so that ``x.json`` and
    ``x.json.gz`` of the same map are one), or None when ``name`` is no file here (a shipped map's name, an
    ``open_<k>`` name, a file that is gone) or cannot be read."""
    try:
        if not Path(name).is_file():
            return None
        data = Path(name).read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return hashlib.sha256(data).hexdigest()


def recorded_digests(env: dict | None) -> dict[str, str]:
    """The ``map_digests`` an ``env`` section records (map file -> :func:`map_digest`), its entries of another
    shape (a damaged or foreign file's) left out."""
    found = (env or {}).get("map_digests")
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def _file_key(name: str) -> str:
    """A map file's name as ``map_digests`` records it: its full path (so that it is found from any folder)."""
    return str(Path(name).resolve())


def _name_key(name: str) -> str:
    """A map's name as compared when its content is not at hand: a file by its name without folder."""
    return Path(name).name if name.endswith((".json", ".json.gz")) else name


def named_map(spec: games.GameSpec, name: str, maps_dirs: Iterable[str | os.PathLike | None] = ()):
    """The map ``name`` names for ``spec``'s game (a shipped map, a map file, or a name the game's env reads from a
    maps folder of ``maps_dirs``, e.g. Gorge Chase's ``open_<k>``), or None when it cannot be loaded here."""
    if name in spec.maps.builtin:
        return spec.maps.builtin[name]()
    if Path(name).is_file():
        try:
            return spec.maps.load(name)
        except (ValueError, OSError):
            return None
    if not {"map_names", "maps_dir"} <= spec.env.options:  # the env reads no map name from a maps folder
        return None
    for folder in dict.fromkeys(str(d) for d in maps_dirs if d):
        try:
            env = spec.env.make(map_names=[name], maps_dir=folder)
        except (ValueError, OSError):
            continue
        try:
            return env.game_map
        finally:
            env.close()
    return None


def same_maps(spec: games.GameSpec, names: Iterable[str], others: Iterable[str],
              maps_dirs: Iterable[str | os.PathLike | None] = (),
              digests: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """The pairs ``(name, other)`` of ``names`` and ``others`` that are the same map, by content only: where both
    load here (:func:`named_map`), ``spec.maps.same``; where ``other`` does not load but ``digests`` records its
    content (``map_digests``: a map file the run read, moved or gone since), the :func:`map_digest` of ``name``'s file
    against it; only where neither content is at hand, the same name (a file: the same name without folder). Each
    name of ``names`` appears at most once, with the first match."""
    maps_dirs = list(maps_dirs)
    others = list(others)
    digests = digests or {}
    loaded: dict[str, object] = {}

    def load(name: str):
        if name not in loaded:
            loaded[name] = named_map(spec, name, maps_dirs)
        return loaded[name]

    def same(name: str, other: str) -> bool:
        recorded = digests.get(other) or digests.get(_file_key(other))
        a = load(name)
        if recorded is not None and map_digest(other) != recorded:  # the file moved, or another map took its place
            return a is not None and map_digest(name) == recorded
        b = load(other)
        if a is not None and b is not None:
            return bool(spec.maps.same(a, b))
        return _name_key(name) == _name_key(other)

    return [(name, other) for name in names for other in [next((o for o in others if same(name, o)), None)]
            if other is not None]


def check_training_maps(policy, played: list[str], game: str | None = None,
                        maps_dir: str | os.PathLike | None = None) -> None:
    """A ``ValueError`` when ``policy`` (a path; others pass) trained on one of the ``played`` maps: its scores there
    say little about the maps it never saw, which decide the ranking. Every map of the run's history counts
    (:func:`training_maps`); maps are compared by content where both load here, else by name
    (:func:`same_maps`). Names the game reads from a maps folder load from ``maps_dir``, the folder the run
    recorded, or the one the game's environment variable names."""
    trained = training_maps(policy, game)
    if not trained:
        return
    env = recorded_env(str(policy)) or {}
    spec = games.get(game)
    pairs = same_maps(spec, played, trained, (maps_dir, env.get("maps_dir"), games.maps_folder_from_environment(spec)),
                      recorded_digests(env))
    if pairs:
        both = ", ".join(m if _name_key(m) == _name_key(t) else f"{m} (the same map as its training map {t})"
                         for m, t in pairs)
        raise ValueError(f"{str(policy)!r} trained on {both}, which this protocol plays too: scores on its "
                         "training maps say little about maps it never saw; evaluate it on maps it never trained on "
                         "(another --protocol, or --protocol maps --maps ...), or pass --allow-overlap "
                         "(allow_overlap=True) to score it there anyway")
