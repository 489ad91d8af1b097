"""The platform's own view of Gorge Chase as fixed-size numpy arrays, without the planner: the observation of
``GorgeEnv(observation="raw")`` (docs/gorge/getting-started.md), for players who build their own features.

:func:`encode` turns the platform's ``env_obs["observation"]`` dict (docs/gorge/rules.md) into the dict of arrays
that :func:`observation_space` describes. It reads the dict only and imports numpy and the standard library only, so
an Agent can run the same function on the platform's dict at play time.

Keys (every list slot that holds nothing is all zeros, its ``present`` column 0):

- ``map_info``: (21, 21) uint8, ``map_info[r][c]`` = 1 for road at ``(hero.x + c - 10, hero.z + r - 10)``, 0 for an
  obstacle or a cell off the map.
- ``legal_action``: (16,) uint8, 1 for a legal action (the moves always, the flashes while the cooldown is 0).
- ``hero``: (5,) int32, the columns of :data:`HERO_FIELDS`.
- ``monsters``: (2, 7) int32, one row per monster in the platform's order (monster 1, then monster 2 once it has
  appeared), the columns of :data:`MONSTER_FIELDS`; ``x``, ``z`` and ``speed`` are -1 while it is out of view.
- ``treasures``: (10, 5) int32, row ``k`` the treasure whose ``config_id`` is ``k + 1`` while it is in view, the
  columns of :data:`TREASURE_FIELDS`.
- ``buffs``: (2, 6) int32, row ``k`` the buff whose ``config_id`` is ``total_treasure + k + 1`` while it is in
  view, the columns of :data:`BUFF_FIELDS` (``status`` 0 while it waits to come back).
- ``treasure_remaining``: (10,) uint8, 1 at ``k`` while treasure ``k + 1`` is still to be collected, in view or not
  (``env_info.treasure_id``).
- ``env_info``: (12,) int32, the columns of :data:`ENV_INFO_FIELDS`: the step, the configuration in force and the
  counts.
- ``scores``: (3,) float32, the columns of :data:`SCORE_FIELDS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "BUFF_FIELDS",
    "ENV_INFO_FIELDS",
    "HERO_FIELDS",
    "MAX_BUFFS",
    "MAX_MONSTERS",
    "MAX_TREASURES",
    "MONSTER_FIELDS",
    "SCORE_FIELDS",
    "TREASURE_FIELDS",
    "encode",
    "observation_space",
    "score_max",
    "zeros",
]

VIEW_SIZE = 21  # map_info is the 21 x 21 square around the hero
N_ACTIONS = 16
MAX_TREASURES = 10  # treasure_count is at most 10
MAX_BUFFS = 2  # buff_count is at most 2
MAX_MONSTERS = 2
POS_MAX = 127  # the maps are 128 x 128
TIMER_MAX = 2000  # the largest step count of the configuration (max_step, talent_cooldown, monster_interval, ...)
SPEED_MAX = 8  # the engine's largest monster speed (4 + bonus 3 + the speed-up's 1)
BUCKET_MAX = 5  # hero_l2_distance = min(5, floor(euclidean distance / 30))
DIRECTION_MAX = 8  # hero_relative_direction: 0 on the hero's cell, 1..8 = E, NE, N, NW, W, SW, S, SE

HERO_FIELDS = ("x", "z", "flash_cooldown", "buff_remaining_time", "treasure_collected_count")
MONSTER_FIELDS = ("present", "is_in_view", "x", "z", "speed", "hero_l2_distance", "hero_relative_direction")
TREASURE_FIELDS = ("present", "x", "z", "hero_l2_distance", "hero_relative_direction")
BUFF_FIELDS = ("present", "status", "x", "z", "hero_l2_distance", "hero_relative_direction")
ENV_INFO_FIELDS = ("step_no", "max_step", "flash_cooldown_max", "flash_count", "buff_refresh_time",
                   "monster_init_speed", "monster_interval", "monster_speed_boost_step", "total_treasure",
                   "total_buff", "treasures_collected", "collected_buff")
SCORE_FIELDS = ("step_score", "treasure_score", "total_score")

_HERO_HIGH = (POS_MAX, POS_MAX, TIMER_MAX, TIMER_MAX, MAX_TREASURES)
_MONSTER_LOW = (0, 0, -1, -1, -1, 0, 0)
_MONSTER_HIGH = (1, 1, POS_MAX, POS_MAX, SPEED_MAX, BUCKET_MAX, DIRECTION_MAX)
_TREASURE_HIGH = (1, POS_MAX, POS_MAX, BUCKET_MAX, DIRECTION_MAX)
_BUFF_HIGH = (1, 1, POS_MAX, POS_MAX, BUCKET_MAX, DIRECTION_MAX)
# monster_interval -2: monster 2 never comes; every other value is drawn or set in its range
_ENV_INFO_LOW = (0, 0, 0, 0, 0, 0, -2, 0, 0, 0, 0, 0)
_ENV_INFO_HIGH = (TIMER_MAX, TIMER_MAX, TIMER_MAX, TIMER_MAX, TIMER_MAX, SPEED_MAX, TIMER_MAX, TIMER_MAX,
                  MAX_TREASURES, MAX_BUFFS, MAX_TREASURES, TIMER_MAX)
_SHAPES: dict[str, tuple[tuple[int, ...], Any]] = {
    "map_info": ((VIEW_SIZE, VIEW_SIZE), np.uint8),
    "legal_action": ((N_ACTIONS,), np.uint8),
    "hero": ((len(HERO_FIELDS),), np.int32),
    "monsters": ((MAX_MONSTERS, len(MONSTER_FIELDS)), np.int32),
    "treasures": ((MAX_TREASURES, len(TREASURE_FIELDS)), np.int32),
    "buffs": ((MAX_BUFFS, len(BUFF_FIELDS)), np.int32),
    "treasure_remaining": ((MAX_TREASURES,), np.uint8),
    "env_info": ((len(ENV_INFO_FIELDS),), np.int32),
    "scores": ((len(SCORE_FIELDS),), np.float32),
}


def score_max(step_score_multiplier: float = 1.5, treasure_value: float = 100.0) -> float:
    """The highest score the configuration allows: ``max_step`` 2000 steps and 10 treasures (4,000 with the engine's
    values)."""
    return float(step_score_multiplier * TIMER_MAX + treasure_value * MAX_TREASURES)


def observation_space(scores_high: float | None = None) -> Any:
    """The ``gymnasium.spaces.Dict`` of :func:`encode`'s arrays, with the bounds the platform's configuration
    allows; ``scores_high`` bounds the scores (default :func:`score_max` of the engine's values)."""
    from gymnasium import spaces  # only the env needs it; encode runs without gymnasium

    def box(key: str, low: Any, high: Any) -> spaces.Box:
        shape, dtype = _SHAPES[key]
        return spaces.Box(np.broadcast_to(np.asarray(low, dtype=dtype), shape),
                          np.broadcast_to(np.asarray(high, dtype=dtype), shape), shape, dtype=dtype)

    return spaces.Dict({
        "map_info": box("map_info", 0, 1),
        "legal_action": box("legal_action", 0, 1),
        "hero": box("hero", 0, _HERO_HIGH),
        "monsters": box("monsters", _MONSTER_LOW, _MONSTER_HIGH),
        "treasures": box("treasures", 0, _TREASURE_HIGH),
        "buffs": box("buffs", 0, _BUFF_HIGH),
        "treasure_remaining": box("treasure_remaining", 0, 1),
        "env_info": box("env_info", _ENV_INFO_LOW, _ENV_INFO_HIGH),
        "scores": box("scores", 0.0, score_max() if scores_high is None else scores_high),
    })


def zeros() -> dict[str, np.ndarray]:
    """A dict of :func:`encode`'s arrays, all zeros."""
    return {key: np.zeros(shape, dtype=dtype) for key, (shape, dtype) in _SHAPES.items()}


_NO_MONSTER = [0] * len(MONSTER_FIELDS)
_NO_TREASURE = [0] * len(TREASURE_FIELDS)
_NO_BUFF = [0] * len(BUFF_FIELDS)


def encode(observation: Mapping) -> dict[str, np.ndarray]:
    """The arrays of the platform's ``env_obs["observation"]`` (the keys of the module's docstring): a fresh dict of
    fresh arrays on every call."""
    state, info = observation["frame_state"], observation["env_info"]
    hero = state["heroes"]
    monsters = [[1, monster.get("is_in_view", 1), monster["pos"]["x"], monster["pos"]["z"], monster["speed"],
                 monster["hero_l2_distance"], monster["hero_relative_direction"]]
                for monster in state["monsters"][:MAX_MONSTERS]]
    monsters += [_NO_MONSTER] * (MAX_MONSTERS - len(monsters))
    treasures = [_NO_TREASURE] * MAX_TREASURES
    buffs = [_NO_BUFF] * MAX_BUFFS
    first_buff = int(info["total_treasure"]) + 1
    for organ in state["organs"]:
        pos = organ["pos"]
        if int(organ["sub_type"]) == 1:  # a treasure, in the row of its config_id
            slot = int(organ["config_id"]) - 1
            if 0 <= slot < MAX_TREASURES:
                treasures[slot] = [1, pos["x"], pos["z"], organ["hero_l2_distance"], organ["hero_relative_direction"]]
        else:  # a buff: config_ids follow the treasures'
            slot = int(organ["config_id"]) - first_buff
            if 0 <= slot < MAX_BUFFS:
                buffs[slot] = [1, organ["status"], pos["x"], pos["z"], organ["hero_l2_distance"],
                               organ["hero_relative_direction"]]
    remaining = np.zeros(MAX_TREASURES, dtype=np.uint8)
    remaining[[int(t) - 1 for t in info["treasure_id"] if 1 <= int(t) <= MAX_TREASURES]] = 1
    return {
        "map_info": np.array(observation["map_info"], dtype=np.uint8),
        "legal_action": np.array(observation["legal_action"], dtype=np.uint8),
        "hero": np.array([hero["pos"]["x"], hero["pos"]["z"], hero["flash_cooldown"], hero["buff_remaining_time"],
                          hero["treasure_collected_count"]], dtype=np.int32),
        "monsters": np.array(monsters, dtype=np.int32),
        "treasures": np.array(treasures, dtype=np.int32),
        "buffs": np.array(buffs, dtype=np.int32),
        "treasure_remaining": remaining,
        "env_info": np.array([info[key] for key in ENV_INFO_FIELDS], dtype=np.int32),
        "scores": np.array([info[key] for key in SCORE_FIELDS], dtype=np.float32),
    }
