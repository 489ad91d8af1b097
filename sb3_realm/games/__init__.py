"""The games of the toolkit, by name: each a folder (``realm/``, ``gorge/``) whose ``spec.py`` holds its
:class:`~sb3_realm.games.spec.GameSpec`, the one thing the shared layers see of it (as
:mod:`sb3_realm.models.algorithms` maps a name to an algorithm)."""

from __future__ import annotations

from .gorge.spec import SPEC as GORGE
from .realm.spec import SPEC as REALM
from .spec import ExpertOptions, GameEnv, GameSpec, Success

__all__ = ["DEFAULT_GAME", "GAMES", "ExpertOptions", "GameEnv", "GameSpec", "Success", "get", "register_envs"]

GAMES: dict[str, GameSpec] = {spec.name: spec for spec in (REALM, GORGE)}
#: the game of a config, checkpoint or package that names none (everything made before the toolkit had two games)
DEFAULT_GAME = REALM.name


def get(name: str | None = None) -> GameSpec:
    """The spec of game ``name`` (None: :data:`DEFAULT_GAME`); a ``ValueError`` lists the games there are."""
    if name is None:
        return GAMES[DEFAULT_GAME]
    if name not in GAMES:
        raise ValueError(f"game = {name!r} is not a game of this package; choose one of {list(GAMES)}")
    return GAMES[name]


def register_envs() -> None:
    """Register every game's env ids with Gymnasium (``gymnasium.make("sb3_realm/Realm-v0")``)."""
    from gymnasium.envs.registration import register, registry

    for spec in GAMES.values():
        for env_id, kwargs in spec.env_ids.items():
            if env_id not in registry:
                register(id=env_id, entry_point=spec.env_entry_point, kwargs=dict(kwargs))
