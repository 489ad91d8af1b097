"""The games of the toolkit, by name: each a folder (``realm/``, ``gorge/``) whose ``spec.py`` holds its
:class:`~sb3_realm.games.spec.GameSpec`, the one thing the shared layers see of it (as
:mod:`sb3_realm.models.algorithms` maps a name to an algorithm)."""

from __future__ import annotations

import warnings

from .gorge.spec import SPEC as GORGE
from .realm.spec import SPEC as REALM
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
    "GAMES",
    "LEGACY_GAME",
    "Env",
    "Episodes",
    "Evaluation",
    "ExpertOptions",
    "Experts",
    "GameEnv",
    "GameSpec",
    "LegacyGameNote",
    "Maps",
    "Results",
    "Submission",
    "Success",
    "get",
    "maps_folder_from_environment",
    "maps_folder_variables",
    "names",
    "recorded",
    "register",
    "register_envs",
    "unregister",
]

GAMES: dict[str, GameSpec] = {spec.name: spec for spec in (REALM, GORGE)}
#: the game of a config, checkpoint or package that names none: everything made before the toolkit had a second game
#: was Back to the Realm's. Only files read back use it (with a :class:`LegacyGameNote`); nothing else has a default.
LEGACY_GAME = REALM.name


class LegacyGameNote(UserWarning):
    """A config, checkpoint or package that names no game was read as :data:`LEGACY_GAME`'s."""


def get(name: str | None) -> GameSpec:
    """The spec of game ``name``; a ``ValueError`` lists the games there are, and says how to name one when
    ``name`` is None (there is no default game)."""
    if name is None:
        raise ValueError(f"no game given: name the game to play, one of {list(GAMES)} (game: in a config, --game on "
                         "the command line, game= in Python)")
    if name not in GAMES:
        raise ValueError(f"game = {name!r} is not a game of this package; choose one of {list(GAMES)}")
    return GAMES[name]


def recorded(name: str | None, what: str, stacklevel: int = 2) -> GameSpec:
    """The game a file records (a config's ``game``, a checkpoint's run config, a package's manifest): ``name``,
    else, for a file made before the toolkit had a second game, :data:`LEGACY_GAME`'s with a one-line
    :class:`LegacyGameNote` naming ``what`` (e.g. ``"config 'runs/a/config.yaml'"``)."""
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


def register(spec: GameSpec) -> GameSpec:
    """Add a game (a :class:`GameSpec` built in its own folder, anywhere) to the registry, so that configs,
    checkpoints and ``--game`` may name it; a ``ValueError`` for a name already taken by another game."""
    if not isinstance(spec, GameSpec):
        raise TypeError(f"register() takes a GameSpec, got {type(spec).__name__}")
    if spec.name in GAMES and GAMES[spec.name] is not spec:
        raise ValueError(f"game = {spec.name!r} is already registered ({GAMES[spec.name].title}); give the new game "
                         "another name")
    GAMES[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove game ``name`` from the registry (a game registered by a test or a script); the shipped games stay."""
    if name in (REALM.name, GORGE.name):
        raise ValueError(f"game = {name!r} ships with the package and cannot be unregistered")
    GAMES.pop(name, None)


def register_envs() -> None:
    """Register every game's env ids with Gymnasium (``gymnasium.make("sb3_realm/Realm-v0")``)."""
    from gymnasium.envs.registration import register, registry

    for spec in GAMES.values():
        for env_id, kwargs in spec.env.ids.items():
            if env_id not in registry:
                register(id=env_id, entry_point=spec.env.entry_point, kwargs=dict(kwargs))
