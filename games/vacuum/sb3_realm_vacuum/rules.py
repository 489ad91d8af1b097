"""Rules of robot_vacuum (清扫大作战): the engine's fixed values, the player's episode configuration (``env_conf``) and
the switches of the assumptions the simulator makes where the public sources are silent (docs/vacuum/rules.md).

Submission-safe: numpy and the standard library only (Python 3.8, numpy 1.19); a package's features import it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = [
    "CHARGER_HALF",
    "DIRECTIONS",
    "MAP_IDS",
    "NPC_RADIUS",
    "N_ACTIONS",
    "SIZE",
    "USR_CONF_KEYS",
    "VIEW_RADIUS",
    "Rules",
    "VacuumConfig",
    "can_move",
    "cheb",
]

SIZE = 128  # the map is SIZE x SIZE cells
VIEW_RADIUS = 10  # the local view is (2 * VIEW_RADIUS + 1) cells a side, centred on the robot
N_ACTIONS = 8  # moves only
NPC_RADIUS = 10  # an official robot walks inside the square of this half-size around its spawn point
CHARGER_HALF = 1  # a charger's footprint: its centre +- 1 (3 x 3 cells)
#: action a moves by DIRECTIONS[a] = (dx, dz); z grows downward: E, NE, N, NW, W, SW, S, SE
DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1))
MAP_IDS = tuple(range(1, 11))  # the platform's open maps

# key -> (lowest, highest) of the integer keys of env_conf
_INT_KEYS = {"robot_count": (1, 4), "charger_count": (1, 4), "max_step": (1, 2000), "battery_max": (100, 999)}
USR_CONF_KEYS = ("map", "map_random", *_INT_KEYS)


def cheb(ax: int, az: int, bx: int, bz: int) -> int:
    """The Chebyshev distance of two cells (the game's distance for collisions and the NPCs' squares)."""
    return max(abs(ax - bx), abs(az - bz))


def can_move(walkable: np.ndarray, x: int, z: int, dx: int, dz: int) -> bool:
    """A move from ``(x, z)`` by ``(dx, dz)`` succeeds: the target is on the map and walkable, and a diagonal move has
    at least one of its two side cells walkable (no cutting through a corner of two obstacles)."""
    tx, tz = x + dx, z + dz
    if not (0 <= tx < SIZE and 0 <= tz < SIZE) or not walkable[tz, tx]:
        return False
    return dx == 0 or dz == 0 or bool(walkable[z, tx]) or bool(walkable[tz, x])


def _checked_int(key: str, value, lo: int, hi: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ValueError(f"env_conf[{key!r}] = {value!r}: it must be a whole number in {lo}..{hi} (the platform "
                         "refuses other values)")
    return int(value)


@dataclass(frozen=True)
class VacuumConfig:
    """A validated ``env_conf`` (the keys of ``train_env_conf.toml``); missing keys take the shipped defaults.

    :param map: the platform's map ids to play (1..10); one is chosen per episode.
    :param map_random: True draws the map uniformly from ``map`` each episode; False takes them in order.
    :param robot_count: official robots (1..4).
    :param charger_count: chargers (1..4); fewer than 4 is a random subset of the map's 4 spots each episode.
    :param max_step: the episode ends, completed, at this step (1..2000).
    :param battery_max: the battery at the start and after a charge (100..999); a step costs 1.
    """

    map: tuple = MAP_IDS
    map_random: bool = False
    robot_count: int = 4
    charger_count: int = 4
    max_step: int = 1000
    battery_max: int = 200

    def __post_init__(self) -> None:
        ids = self.map
        if isinstance(ids, (int, np.integer)) and not isinstance(ids, bool):
            ids = (ids,)
        if not isinstance(ids, (list, tuple)) or not ids or not all(
                isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k <= 10 for k in ids):
            raise ValueError(f"env_conf['map'] = {self.map!r}: it must be a non-empty list of map ids in 1..10, "
                             "e.g. [1, 2, 3]")
        object.__setattr__(self, "map", tuple(int(k) for k in ids))
        if not isinstance(self.map_random, (bool, np.bool_)):
            raise ValueError(f"env_conf['map_random'] = {self.map_random!r}: it must be true or false")
        object.__setattr__(self, "map_random", bool(self.map_random))
        for key, (lo, hi) in _INT_KEYS.items():
            object.__setattr__(self, key, _checked_int(key, getattr(self, key), lo, hi))

    @classmethod
    def from_usr_conf(cls, usr_conf=None, base=None) -> VacuumConfig:
        """Validate an ``env_conf`` dict (also accepted wrapped as ``{"env_conf": {...}}``, as ``read_usr_conf``
        returns it): the keys it gives over ``base`` (None: the defaults). An unknown key or a value out of range
        raises ``ValueError`` naming it and the allowed values."""
        if usr_conf is None:
            return cls() if base is None else base
        if not isinstance(usr_conf, dict):
            raise ValueError(f"env_conf must be a dict with keys {list(USR_CONF_KEYS)}, got "
                             f"{type(usr_conf).__name__}")
        if set(usr_conf) == {"env_conf"} and isinstance(usr_conf["env_conf"], dict):
            usr_conf = usr_conf["env_conf"]
        unknown = sorted(set(usr_conf) - set(USR_CONF_KEYS))
        if unknown:
            raise ValueError(f"unknown env_conf keys {unknown}; valid keys are {list(USR_CONF_KEYS)}")
        merged = dict(base.to_usr_conf()) if base is not None else {}
        merged.update(usr_conf)
        return cls(**merged)

    def to_usr_conf(self) -> dict:
        """The ``env_conf`` dict of this configuration."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["map"] = list(self.map)
        return out


@dataclass(frozen=True)
class Rules:
    """The simulator's switches where the sources leave a choice (docs/vacuum/rules.md, the assumptions).

    :param charge_every_step: ``charge_count`` grows on every step that ends on a charger (True, the default: an
        agent rewarded per charge farmed 383 in one episode) or only on a step that enters one (False).
    :param npcs_in_view_only: the observation gives an official robot's position only while it is within the view
        (Chebyshev <= 10), else ``(-1, -1)`` and ``is_in_view`` 0 (True, the default, as the logs' distances show);
        False gives every robot's true position (the guide's reading).
    :param hero_separation: the robot's spawn cell is more than this many cells (Manhattan) from every official
        robot's spawn point.
    :param npc_separation: official robots' spawn points are at least this far apart (Chebyshev), so that their
        squares do not overlap.
    """

    charge_every_step: bool = True
    npcs_in_view_only: bool = True
    hero_separation: int = 5
    npc_separation: int = 21

    @classmethod
    def from_dict(cls, data=None) -> Rules:
        """Build from a dict; an unknown key raises ``ValueError`` listing the valid ones."""
        data = dict(data or {})
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"unknown rules keys {unknown}; valid keys are {names}")
        return cls(**data)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}
