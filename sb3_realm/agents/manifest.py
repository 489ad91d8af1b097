"""A built submission folder's manifest: reading it (:func:`read_manifest`), checking the package against it
(:func:`verify_package`), and what it records (the game, the env's arguments).

A built folder runs its own code by design (its Agent is the policy). What is checked first: every file against the
manifest's sha256 (:func:`verify_package`: changed, missing and extra files, a sourceless ``.pyc``, symbolic links
and special files are refused), and every path the manifest or the conf names stays inside the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

from .. import games
from ..atomic import inside, sha256_file
from ..submission import LAYOUTS, layout_spec

__all__ = [
    "env_kwargs_of",
    "folder_code_note",
    "folder_game",
    "manifest_game",
    "package_differences",
    "read_manifest",
    "verify_package",
]

_FORMAT = "sb3-realm submission"


def _manifest_at(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a readable manifest ({exc}); rebuild the folder with sb3-realm "
                         "build-submission MODEL.zip --out DIR --force") from None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == _FORMAT else None


def read_manifest(folder: str | os.PathLike) -> dict:
    """The manifest of a folder built by build-submission (in its algorithm folder: the one its
    ``conf/configure_app.toml`` selects, or the only one with a manifest), or a ValueError saying what is
    missing. What it names is checked (:func:`_check_manifest`): a known layout and one of its algorithm folders, and
    a weights file inside the folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is not a built submission: it is not a folder (build one with sb3-realm "
                         "build-submission MODEL.zip --out DIR)")
    candidates = sorted(path for path in folder.glob("*/manifest.json")
                        if not path.parent.is_symlink() and not path.is_symlink())  # never read through a link
    selected = _selected_folders(folder)
    if selected is not None:
        candidates = [inside(folder, f"{name}/manifest.json", f"{str(conf)!r} (its algo)") for name, conf in selected]
    found = [(m, path) for m, path in ((_manifest_at(path), path) for path in candidates) if m is not None]
    if len(found) != 1:
        where = f"in {', '.join(str(c) for c in candidates)}" if candidates else "in any of its folders"
        raise ValueError(f"{str(folder)!r} is not a built submission: no manifest of sb3-realm build-submission "
                         f"{where} (build one with sb3-realm build-submission MODEL.zip --out DIR)")
    manifest, path = found[0]
    _check_manifest(folder, manifest, path)
    return manifest


def _check_manifest(folder: Path, manifest: dict, path: Path) -> None:
    """A ValueError unless what the manifest ``path`` names can be used: its layout is one of
    :data:`~sb3_realm.submission.LAYOUTS` or its game's own (:func:`sb3_realm.games.layout_folder`), its ``algo_dir``
    one of that layout's algorithm folders (the folder the manifest is in) and its weights file a path inside
    ``folder``."""
    fix = "the folder is damaged or was not written by sb3-realm build-submission; rebuild it with sb3-realm " \
          "build-submission MODEL.zip --out DIR --force"
    layout, algo = manifest.get("layout"), manifest.get("algo_dir")
    if isinstance(layout, str) and layout not in LAYOUTS and isinstance(manifest.get("game_path"), str):
        with contextlib.suppress(ValueError, TypeError):  # a layout a game brings is known once its game is
            games.recorded(manifest.get("game"), f"the manifest {str(path)!r}", path=manifest["game_path"])
    data = None
    if isinstance(layout, str):
        with contextlib.suppress(ValueError):
            data = layout_spec(layout) if layout in LAYOUTS else games.layout_data(layout)
    if not isinstance(layout, str) or data is None:
        raise ValueError(f"{str(path)!r} names the layout {layout!r}, which is none of {sorted(LAYOUTS)} nor a "
                         f"registered game's own; {fix}")
    if algo not in data["algo_dirs"] or path.parent.name != algo:
        raise ValueError(f"{str(path)!r} names the algorithm folder {algo!r}, which is not the folder it is in or "
                         f"not one of {data['algo_dirs']}; {fix}")
    weights = manifest.get("weights")
    if not isinstance(weights, dict) or not isinstance(weights.get("file"), str):
        raise ValueError(f"{str(path)!r} names no weights file; {fix}")
    inside(folder, weights["file"], f"the manifest {str(path)!r}")


def _selected_folders(folder: Path) -> list[tuple[str, Path]] | None:
    """The algorithm folders a code package's conf selects for training, each with the conf that names it (one per
    layout whose conf is there: ``algo`` of the layout's ``policy_table``, else of its ``app_table``, with the
    layout's ``folder_prefix`` before it); None when no conf selects one. A ValueError when a conf does not parse."""
    selected = []
    for name in LAYOUTS:
        layout = layout_spec(name)
        conf_file = folder / layout.get("policy_conf", layout["app_conf"])
        table = layout.get("policy_table", layout["app_table"])
        if not conf_file.is_file() or conf_file.is_symlink():
            continue
        try:
            data = tomllib.loads(conf_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"{str(folder)!r}: {conf_file} does not parse ({exc}); rebuild the folder with "
                             "sb3-realm build-submission") from None
        for part in table.split("."):
            data = data.get(part, {}) if isinstance(data, dict) else {}
        algo = str(data.get("algo", "")) if isinstance(data, dict) else ""
        if algo:
            selected.append((layout.get("folder_prefix", "") + algo, conf_file))
    return selected or None


def _walk(folder: Path) -> Iterator[tuple[str, int]]:
    """Every entry below ``folder`` but its folders, as (relative POSIX path, ``lstat`` mode), never through a
    symbolic link (a link is an entry of its own)."""
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(folder / rel if rel else folder) as listing:
            names = sorted(entry.name for entry in listing)
        for name in names:
            sub = f"{rel}/{name}" if rel else name
            mode = os.lstat(folder / sub).st_mode
            if stat.S_ISDIR(mode):
                pending.append(sub)
            else:
                yield sub, mode


def _cache(rel: str) -> bool:
    """A file of a ``__pycache__`` folder: Python's bytecode cache of a module, never part of a package (and never
    run: :func:`~sb3_realm.agents.submission._sources_only`)."""
    return "__pycache__" in rel.split("/")


def package_differences(folder: str | os.PathLike, manifest: dict) -> dict[str, list[str]]:
    """How a built package differs from its manifest (relative POSIX paths): ``changed`` (sha256 differs),
    ``missing`` and ``extra`` files (a ``.pyc`` outside ``__pycache__``, which Python imports without a source, and a
    named pipe or other special file among them), ``links`` (symbolic links: a package has none, and none is
    followed here) and ``bytecode`` (the caches in ``__pycache__`` folders, which are not part of a package and are
    never run). The manifest itself is not listed in it."""
    folder = Path(folder)
    listed: dict = manifest.get("files", {}) if isinstance(manifest.get("files"), dict) else {}
    own = f"{manifest.get('algo_dir')}/manifest.json"
    present, links, caches, special = set(), [], [], []
    for rel, mode in _walk(folder):
        if stat.S_ISLNK(mode):
            links.append(rel)
        elif not stat.S_ISREG(mode):
            special.append(rel)
        elif _cache(rel):
            caches.append(rel)
        else:
            present.add(rel)
    return {"changed": sorted(f for f in listed if f in present and sha256_file(folder / f) != listed[f]),
            "missing": sorted(f for f in listed if f not in present and f not in links),
            "extra": sorted((present - set(listed) - {own}) | set(special)), "links": sorted(links),
            "bytecode": sorted(caches)}


def verify_package(folder: str | os.PathLike, manifest: dict) -> None:
    """Raise ``ValueError`` naming every file of ``folder`` that is not as its manifest records it (bytecode caches
    aside: they are never run)."""
    diff = package_differences(folder, manifest)
    names = {"links": "symbolic links"}
    parts = [f"{names.get(what, what)} {', '.join(files[:5])}{', ...' if len(files) > 5 else ''}"
             for what, files in diff.items() if files and what != "bytecode"]
    if parts:
        raise ValueError(f"the package {str(folder)!r} is not as build-submission wrote it ({'; '.join(parts)}): it "
                         "would not play the model it records. Rebuild it with sb3-realm build-submission MODEL.zip "
                         "--out DIR --force, or evaluate the model itself")


def folder_code_note(policy: str | os.PathLike) -> str | None:
    """The line ``eval`` and ``replay`` print (on stderr) before they play a submission folder: the folder's own
    Python code runs in this process, and its manifest, which the folder carries itself, says only that its files
    are those it lists, not who wrote them. None for any other policy, and for a folder that is refused anyway
    (no manifest, or files that differ from it: its refusal says so)."""
    path = Path(policy)
    if not path.is_dir():
        return None
    try:
        verify_package(path, read_manifest(path))
    except (ValueError, OSError):
        return None
    return (f"this runs the Python code in the submission folder {str(path)!r} (its Agent and the modules beside "
            "it, as the platform will); its manifest checks that the files are those it lists, not who wrote them: "
            "play only folders you built or trust")



def manifest_game(manifest: dict) -> games.GameSpec:
    """The game a built submission plays: the ``game`` its manifest records (imported by its ``game_path`` where no
    game of that name is registered), else that of the training config it records
    (:data:`~sb3_realm.games.LEGACY_GAME`'s, with a one-line note, when neither names one: a package built before the
    toolkit had two games)."""
    return games.recorded(manifest.get("game") or (manifest.get("training_config") or {}).get("game"),
                          "the package's manifest", path=manifest.get("game_path"))


def folder_game(folder: str | os.PathLike) -> games.GameSpec:
    """The game of a built submission folder (:func:`manifest_game`); for a folder without a manifest of the package,
    which the platform stand-in then refuses with its own message, :data:`~sb3_realm.games.LEGACY_GAME`'s."""
    try:
        return manifest_game(read_manifest(folder))
    except ValueError:
        return games.GAMES[games.LEGACY_GAME]


def env_kwargs_of(manifest: dict, map_path: str | None) -> dict:
    """The game's env arguments as in training (map unless ``map_path`` is given, rules, action-mask option)."""
    env_cfg = (manifest.get("training_config") or {}).get("env") or {}
    if map_path is None:
        map_path = env_cfg.get("map_path")
        map_name = env_cfg.get("map_name") or "default"
    else:
        map_name = "default"
    kwargs = {"map_path": map_path, "map_name": map_name, "rules": env_cfg.get("rules") or {}}
    if "mask_wall_moves" in manifest_game(manifest).env.options:
        kwargs["mask_wall_moves"] = bool(manifest["spec"]["mask_wall_moves"])
    return kwargs
