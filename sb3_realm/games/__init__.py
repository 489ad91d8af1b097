"""The games of the toolkit, by name: each a :class:`~sb3_realm.games.spec.GameSpec`, the one thing the shared layers
see of a game (as :mod:`sb3_realm.models.algorithms` maps a name to an algorithm). The shipped games are folders here
(``realm/``, ``gorge/``, each with its ``spec.py``); a game of one's own is a package anywhere, registered by entry
point or import path (:mod:`sb3_realm.games.registry`)."""

from __future__ import annotations

import importlib
import tomllib
import warnings
from pathlib import Path

from ..submission import LAYOUTS
from .check import GameCheckError, GameCheckReport, check_game
from .registry import (
    ENTRY_POINT_GROUP,
    GAMES,
    SHIPPED,
    GamePluginWarning,
    adopt,
    get,
    path_of,
    reference,
    references,
    register,
    register_env_ids,
    unregister,
)
from .spec import (
    Env,
    Episodes,
    Evaluation,
    ExpertOptions,
    Experts,
    GameEnv,
    GameSpec,
    Maps,
    Results,
    Submission,
    Success,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "GAMES",
    "LEGACY_GAME",
    "SHIPPED",
    "Env",
    "Episodes",
    "Evaluation",
    "ExpertOptions",
    "Experts",
    "GameCheckError",
    "GameCheckReport",
    "GameEnv",
    "GamePluginWarning",
    "GameSpec",
    "LegacyGameNote",
    "Maps",
    "Results",
    "Submission",
    "Success",
    "adopt",
    "check_game",
    "get",
    "layout_data",
    "layout_folder",
    "maps_folder_from_environment",
    "maps_folder_variables",
    "names",
    "path_of",
    "recorded",
    "reference",
    "references",
    "register",
    "register_envs",
    "unregister",
]

#: the game of a config, checkpoint or package that names none: everything made before the toolkit had a second game
#: was Back to the Realm's. Only files read back use it (with a :class:`LegacyGameNote`); nothing else has a default.
LEGACY_GAME = "realm"


class LegacyGameNote(UserWarning):
    """A config, checkpoint or package that names no game was read as :data:`LEGACY_GAME`'s."""


def recorded(name: str | None, what: str, stacklevel: int = 2, path: str | None = None) -> GameSpec:
    """The game a file records (a config's ``game``, a checkpoint's run config, a package's manifest): ``name``,
    else, for a file made before the toolkit had a second game, :data:`LEGACY_GAME`'s with a one-line
    :class:`LegacyGameNote` naming ``what`` (e.g. ``"config 'runs/a/config.yaml'"``). ``path``: the game's import
    path the file records beside its name (a package's manifest), imported when no game of that name is registered."""
    if name is not None and path and name not in GAMES:
        spec = get(path)
        if spec.name != name:
            raise ValueError(f"{what} records game {name!r} at {path!r}, which gives the game {spec.name!r}; "
                             f"register the game {name!r} (its package, or --game with its import path)")
        return spec
    if name is None:
        legacy = GAMES[LEGACY_GAME]
        warnings.warn(f"{what} names no game: read as {legacy.title}'s ({LEGACY_GAME}), the game of everything "
                      f"made before there were two; add game: {LEGACY_GAME} to it to say so", LegacyGameNote,
                      stacklevel=stacklevel + 1)
        return legacy
    return get(name)


def __getattr__(name: str):
    if name == "DEFAULT_GAME":  # the old name of LEGACY_GAME, from when a game named by nothing was the Realm
        return LEGACY_GAME
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def maps_folder_from_environment(spec: GameSpec | None = None) -> str | None:
    """The maps folder the environment names for ``spec`` (:meth:`Maps.folder_from_environment`), or, with no spec,
    the first one any registered game's variable names."""
    specs = [spec] if spec is not None else list(GAMES.values())
    return next((folder for s in specs if (folder := s.maps.folder_from_environment()) is not None), None)


def maps_folder_variables() -> list[str]:
    """The environment variables of the registered games' maps folders."""
    return list(dict.fromkeys(s.maps.folder_variable for s in GAMES.values() if s.maps.folder_variable))


def names() -> list[str]:
    """The names of the registered games, in the order they were registered."""
    return list(GAMES)


def register_envs(shipped_only: bool = False) -> None:
    """Register the games' env ids with Gymnasium (``gymnasium.make("sb3_realm/Realm-v0")``): every registered game's,
    the entry points' read first. ``shipped_only``: the shipped games' alone, as ``import sb3_realm`` does, which
    imports no other game's modules; a game of an entry point registers its ids on the registry's first use."""
    if shipped_only:
        for path in SHIPPED.values():
            module, _, attr = path.partition(":")
            register_env_ids(getattr(importlib.import_module(module), attr))
        return
    for spec in GAMES.values():
        register_env_ids(spec)


def layout_folder(name: str) -> Path:
    """The folder of the platform layout ``name``: a shipped one (:data:`sb3_realm.submission.LAYOUTS`) or one a
    registered game brings itself (:attr:`Submission.layout_folders`). A ``ValueError`` names the layouts there
    are."""
    if name in LAYOUTS:
        return Path(LAYOUTS[name])
    brought = {n: Path(folder) for spec in GAMES.values() for n, folder in spec.submission.layout_folders.items()}
    if name not in brought:
        raise ValueError(f"layout {name!r} is unknown; choose one of {sorted({*LAYOUTS, *brought})} (a game's own "
                         "layout is known once its game is registered: install its package, or name the game by "
                         "its import path, --game package.module:ATTR)")
    return brought[name]


def layout_data(name: str) -> dict:
    """The ``layout.toml`` of the layout ``name`` (:func:`layout_folder`), parsed."""
    return tomllib.loads((layout_folder(name) / "layout.toml").read_text(encoding="utf-8"))
