"""Rules of Gorge Chase: the player's episode configuration (``env_conf``), the engine values the player cannot set,
and the assumptions the core makes where the sources are silent (docs/gorge/rules.md: the configuration and what the
simulator assumes).

Each assumption (Q1 .. Q20 on docs/gorge/rules.md) that the core relies on lives in one named place whose comment
cites it: the constants and functions under "Assumptions" below (Q1-Q7, Q12, Q13), the profile bonuses of
:class:`Rules` (Q8), and three phases of :class:`~sb3_realm.games.gorge.core.Game` (Q14 ``_flash``, Q15
``_spawn_hero``, Q19 ``_tick``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np

from .maps import STEPS_4, GorgeMap

__all__ = [
    "AXIS_PENALTY",
    "DIRECTIONS",
    "FALLBACK_STEPS",
    "MAP_IDS",
    "MONSTER_INTERVAL_NEVER",
    "MONSTER_INTERVAL_RANDOM",
    "MONSTER_SPEEDUP_RANDOM",
    "MONSTER_STEPS",
    "N_ACTIONS",
    "PATH_STEPS",
    "PREV_PENALTY",
    "SETTINGS",
    "USR_CONF_KEYS",
    "GorgeConfig",
    "Rules",
    "check_action",
    "choose_map_id",
    "diagonal_allowed",
    "is_caught",
    "spawn_ring_order",
    "uniform_choice",
]

N_ACTIONS = 16  # 0..7 move in direction a, 8..15 flash in direction a - 8
# Direction a as (dx, dz); z grows downward, so N is (0, -1): E, NE, N, NW, W, SW, S, SE.
DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1))
MAP_IDS = tuple(range(1, 11))  # the open maps
MONSTER_INTERVAL_RANDOM = -1  # monster_interval -1: draw randint(11, 2000) at reset
MONSTER_INTERVAL_NEVER = -2  # monster_interval -2: monster 2 never spawns
MONSTER_SPEEDUP_RANDOM = -1  # monster_speedup -1: draw randint(1, 2000) at reset
#: Named episode settings, played over an ``env_conf`` (its other keys, such as ``map``, are kept): ``default`` is the
#: game as shipped; ``final`` is the final round's, the settings several teams moved their evaluation to before the
#: deadline (not officially confirmed; the platform's evaluation task lets a user set these keys).
SETTINGS: dict[str, dict[str, int]] = {
    "default": {},
    "final": {"talent_cooldown": 200, "monster_interval": 200, "monster_speedup": 300, "buff_cooldown": 200,
              "max_step": 1000},
}


# ------------------------------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class _Key:
    lo: int
    hi: int
    specials: tuple[int, ...] = ()

    def describe(self) -> str:
        extra = "".join(f"{v} or " for v in self.specials)
        return f"{extra}{self.lo}..{self.hi}"


_INT_KEYS: dict[str, _Key] = {
    "treasure_count": _Key(0, 10),
    "buff_count": _Key(0, 2),
    "buff_cooldown": _Key(1, 500),
    "talent_cooldown": _Key(50, 2000),
    # -2 (never spawn monster 2) is listed by the internal doc only; the script honours it, so it is accepted
    "monster_interval": _Key(11, 2000, (MONSTER_INTERVAL_NEVER, MONSTER_INTERVAL_RANDOM)),
    "monster_speedup": _Key(1, 2000, (MONSTER_SPEEDUP_RANDOM,)),
    "max_step": _Key(1, 2000),
}
USR_CONF_KEYS = ("map", "map_random", *_INT_KEYS)


@dataclass(frozen=True)
class GorgeConfig:
    """A validated ``env_conf``: every field is checked on construction. Build one from the platform's dict with
    :meth:`from_usr_conf`; missing keys take the shipped defaults.

    :param map: map ids to play (1..10); one is chosen per episode (:func:`choose_map_id`).
    :param map_random: True draws the map uniformly from ``map`` each episode; False cycles through it in order.
    :param treasure_count: treasures spawned at reset (0..10).
    :param buff_count: speed buffs spawned at reset (0..2).
    :param buff_cooldown: steps from a buff pickup until it is collectable again (1..500).
    :param talent_cooldown: flash cooldown in steps (50..2000).
    :param monster_interval: step at which monster 2 spawns (11..2000; -1 draws one at reset, -2 never).
    :param monster_speedup: step at which every monster speeds up by one (1..2000; -1 draws one at reset).
    :param max_step: step limit of an episode (1..2000).
    """

    map: tuple[int, ...] = MAP_IDS
    map_random: bool = False
    treasure_count: int = 10
    buff_count: int = 2
    buff_cooldown: int = 200
    talent_cooldown: int = 100
    monster_interval: int = 300
    monster_speedup: int = 500
    max_step: int = 1000

    @classmethod
    def from_usr_conf(cls, usr_conf: Mapping | None = None, base: GorgeConfig | None = None) -> GorgeConfig:
        """Validate an ``env_conf`` dict (also accepted wrapped as ``{"env_conf": {...}}``, as ``read_usr_conf``
        returns it): the keys it gives over ``base`` (None: the defaults). Every unknown key or invalid value raises
        ``ValueError`` naming the key, the value and the allowed range."""
        if usr_conf is None:
            return cls() if base is None else base
        if not isinstance(usr_conf, Mapping):
            raise ValueError(f"env_conf must be a dict with keys {list(USR_CONF_KEYS)}, got {type(usr_conf).__name__}")
        if set(usr_conf) == {"env_conf"} and isinstance(usr_conf["env_conf"], Mapping):
            usr_conf = usr_conf["env_conf"]
        unknown = sorted(set(usr_conf) - set(USR_CONF_KEYS))
        if unknown:
            raise ValueError(f"unknown env_conf keys {unknown}; valid keys are {list(USR_CONF_KEYS)}")
        return cls(**{**(base.to_usr_conf() if base is not None else {}), **dict(usr_conf)})

    def __post_init__(self) -> None:
        object.__setattr__(self, "map", _map_ids(self.map))
        if not isinstance(self.map_random, (bool, np.bool_)):
            raise ValueError(f"env_conf['map_random'] must be true or false, got {self.map_random!r}")
        object.__setattr__(self, "map_random", bool(self.map_random))
        for key, allowed in _INT_KEYS.items():
            object.__setattr__(self, key, _checked_int(key, getattr(self, key), allowed))

    def to_usr_conf(self) -> dict:
        """The ``env_conf`` dict of this configuration."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["map"] = list(self.map)
        return out

    @property
    def treasure_num(self) -> int:
        """The treasures of an episode (:attr:`treasure_count`, under the name the shared layers read)."""
        return self.treasure_count

    def training_usr_conf(self, count: int) -> dict:
        """The ``env_conf`` of a fresh training game with ``count`` treasures (placed from the env seed)."""
        return {**self.to_usr_conf(), "treasure_count": int(count)}


def _checked_int(key: str, value: object, allowed: _Key) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"env_conf[{key!r}] must be an integer in {allowed.describe()}, got {value!r}")
    v = int(value)
    if not (allowed.lo <= v <= allowed.hi or v in allowed.specials):
        raise ValueError(f"env_conf[{key!r}] = {v} is out of range; allowed {allowed.describe()}")
    return v


def _map_ids(value: object) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise ValueError(f"env_conf['map'] must be a non-empty list of map ids in 1..10, got {value!r}")
    ids = []
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or int(v) not in MAP_IDS:
            raise ValueError(f"env_conf['map'] = {list(value)!r} contains {v!r}; map ids are integers in 1..10")
        ids.append(int(v))
    return tuple(ids)


# ------------------------------------------------------------------------------------------------- engine values
@dataclass(frozen=True)
class Rules:
    """The engine values the player cannot set (docs/gorge/rules.md), with the values in force.

    :param player_speed: cells per move without the buff (engine clamp 0..4).
    :param player_move_bonus: hero profile bonus added to the move length (clamp 0..3; assumption Q8 assumes 0).
    :param buff_extra_speed: extra cells per move while buffed (1..10).
    :param buff_duration: steps of the buff after a pickup.
    :param flash_distance: flash range along an axis, in cells.
    :param flash_distance_diagonal: flash range along a diagonal, in cells.
    :param monster_count: monsters in an episode (0..2).
    :param monster_speed: cells per monster move (0..4; 0 means no monster ever spawns).
    :param monster_speed_bonus: monster profile bonus added to its speed (clamp 0..3; assumption Q8 assumes 0).
    :param treasure_value: score per collected treasure.
    :param step_score_multiplier: score per survived step.
    :param vision_range: the view is ``2 * vision_range + 1`` cells wide.
    :param treasure_min_distance: treasures are placed farther than this (Euclidean) from each other, if possible.
    :param buff_min_distance: buffs are placed at least this far (Euclidean) from each other, if possible.
    :param spawn_min: smallest x and z of an item spawn attempt.
    :param spawn_max: largest x and z of an item spawn attempt (inclusive).
    :param spawn_attempts: placement attempts per item with the distance test.
    :param fallback_attempts: placement attempts per item without it, after the first round failed.
    :param monster_ring: Chebyshev radius of monster 1's spawn ring around the hero.
    :param spawn_delay: monster 2 spawns where the hero stood this many steps earlier.
    :param history_length: hero positions kept for monster 2's spawn.
    :param spawn_search_radius: largest ring searched when monster 2's spawn cell is blocked or taken.
    """

    player_speed: int = 1
    player_move_bonus: int = 0
    buff_extra_speed: int = 1
    buff_duration: int = 50
    flash_distance: int = 10
    flash_distance_diagonal: int = 8
    monster_count: int = 2
    monster_speed: int = 1
    monster_speed_bonus: int = 0
    treasure_value: float = 100.0
    step_score_multiplier: float = 1.5
    vision_range: int = 10
    treasure_min_distance: float = 15.0
    buff_min_distance: float = 10.0
    spawn_min: int = 5
    spawn_max: int = 123
    spawn_attempts: int = 200
    fallback_attempts: int = 50
    monster_ring: int = 10
    spawn_delay: int = 10
    history_length: int = 32
    spawn_search_radius: int = 10

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Rules:
        """Build from a plain dict (a config's ``env.rules``); unknown keys raise ``ValueError`` listing the valid
        ones."""
        data = dict(data or {})
        valid = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(valid))
        if unknown:
            raise ValueError(f"unknown rules keys {unknown}; valid keys are {valid}")
        return cls(**data)

    def __post_init__(self) -> None:
        ranges = {"player_speed": (0, 4), "player_move_bonus": (0, 3), "buff_extra_speed": (1, 10),
                  "monster_count": (0, 2), "monster_speed": (0, 4), "monster_speed_bonus": (0, 3)}
        for name, (lo, hi) in ranges.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"Rules.{name} = {v!r} is out of range; the engine allows {lo}..{hi}")
        for name in ("buff_duration", "flash_distance", "flash_distance_diagonal", "spawn_attempts",
                     "fallback_attempts", "monster_ring", "spawn_delay", "history_length", "spawn_search_radius"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Rules.{name} = {v!r}; it must be a positive integer")
        if not 0 <= self.spawn_min <= self.spawn_max:
            raise ValueError(f"Rules.spawn_min = {self.spawn_min!r} and spawn_max = {self.spawn_max!r} must satisfy "
                             "0 <= spawn_min <= spawn_max")
        for name in ("treasure_value", "step_score_multiplier", "treasure_min_distance", "buff_min_distance"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"Rules.{name} = {v!r}; it must be a non-negative number")


# ---------------------------------------------------------------------------------------------------- assumptions
# assumption Q1, Q2: monsters step to 4-neighbours only, in this order (E, W, S, N), and their distance to the hero is
# the 4-connected BFS path length over road cells (maps.GorgeMap.road_distances), ignoring monsters, items and the hero.
MONSTER_STEPS = STEPS_4
# assumption Q1: the neighbour order of the engine's A* path (only used when no 4-neighbour is free): z first, then x.
PATH_STEPS = ((0, 1), (0, -1), (1, 0), (-1, 0))
# The greedy fallback of a monster with no path to the hero tries these 8 neighbours in this order (script order).
FALLBACK_STEPS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
# Monster move scores in hundredths of a cell, so that ties are exact: +0.25 for stepping back onto the previous cell,
# +0.05 for moving on the same axis as the previous move.
PREV_PENALTY = 25
AXIS_PENALTY = 5


def diagonal_allowed(game_map: GorgeMap, x: int, z: int, dx: int, dz: int) -> bool:
    """Whether a step from ``(x, z)`` by ``(dx, dz)`` passes the corner rule: the target must be road and, for a
    diagonal step, at least one of the two orthogonal cells between must be road.

    assumption Q3: the engine's ``can_move_diagonally`` is not visible; this is the official text's rule.
    """
    if not game_map.is_road(x + dx, z + dz):
        return False
    return dx == 0 or dz == 0 or game_map.is_road(x + dx, z) or game_map.is_road(x, z + dz)


def is_caught(monster: tuple[int, int], hero: tuple[int, int]) -> bool:
    """Whether a monster on cell ``monster`` catches the hero on cell ``hero``: Chebyshev distance <= 1.

    assumption Q4 (the official 3 x 3 text, range 1) and Q5 (tested once per step at the end cells only, no swept test).
    """
    return abs(monster[0] - hero[0]) <= 1 and abs(monster[1] - hero[1]) <= 1


def uniform_choice(rng: np.random.Generator, n: int) -> int:
    """Index of a uniform choice among ``n`` candidates (``n >= 1``); no draw when ``n == 1``.

    assumption Q7: the engine's ``random_choice`` is taken as uniform; the Lua stream itself cannot be reproduced.
    """
    return 0 if n == 1 else int(rng.integers(n))


def spawn_ring_order(radius: int) -> list[tuple[int, int]]:
    """Offsets ``(dx, dz)`` of the Chebyshev ring of ``radius``, z ascending then x ascending.

    Monster 1's candidate list is built in this order by the script. assumption Q6: the engine's ring iterator, which
    decides which free cell monster 2 takes when its spawn cell is blocked or taken, is assumed to visit a ring in the
    same order, first match winning.
    """
    return [(dx, dz) for dz in range(-radius, radius + 1) for dx in range(-radius, radius + 1)
            if max(abs(dx), abs(dz)) == radius]


def choose_map_id(config: GorgeConfig, episode: int, rng: np.random.Generator) -> int:
    """The map of episode number ``episode`` (0-based) of one env.

    assumption Q12: ``map_random`` true draws uniformly from ``config.map`` with replacement; false cycles through it in
    list order from index 0. Call it before :meth:`Game.reset` with the same generator to keep the spec's draw order.
    """
    if config.map_random:
        return config.map[int(rng.integers(len(config.map)))]
    return config.map[episode % len(config.map)]


def check_action(action: object) -> int:
    """The action as an int in 0..15.

    assumption Q13: any other value raises ``ValueError`` (the script would ignore it without advancing the step).
    """
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise ValueError(f"action must be an integer in 0..{N_ACTIONS - 1} (0..7 move, 8..15 flash), got {action!r}")
    if not 0 <= int(action) < N_ACTIONS:
        raise ValueError(f"action = {int(action)} is out of range; allowed 0..{N_ACTIONS - 1} (0..7 move, 8..15 flash)")
    return int(action)
