"""Gorge Chase's observation protocol as the platform and a submission share it: the key names of ``env_obs`` and its
parts, the codes of ``map_info`` and the organs, and the distance bucket and relative direction of an entity
(docs/gorge/rules.md).

Self-contained (the standard library only, no package imports): the guarded process of a submission check loads this
file by path, without importing sb3_realm.

Cells are ``(x, z)`` with x growing to the east and z to the south; ``dx`` and ``dz`` are the target's cell minus the
hero's cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = [
    "DIRECTION_SAME_CELL",
    "DISTANCE_BUCKET_MAX",
    "DISTANCE_BUCKET_SIZE",
    "ENV_INFO_KEYS",
    "ENV_OBS_KEYS",
    "ENV_REWARD_KEYS",
    "EXTRA_FRAME_STATE_KEYS",
    "EXTRA_INFO_KEYS",
    "EXTRA_MONSTER_KEYS",
    "HERO_KEYS",
    "IN_VIEW",
    "MAP_INFO_BLOCKED",
    "MAP_INFO_ROAD",
    "N_ACTIONS",
    "OBSERVATION_KEYS",
    "ORGAN_KEYS",
    "ORGAN_PRESENT",
    "ORGAN_WAITING",
    "OUT_OF_VIEW",
    "OUT_OF_VIEW_POS",
    "OUT_OF_VIEW_SPEED",
    "POS_KEYS",
    "RESET_MESSAGE",
    "RESULT_CODES",
    "RESULT_OK",
    "STEP_MESSAGE",
    "SUB_TYPE_BUFF",
    "SUB_TYPE_TREASURE",
    "VIEW_FRAME_STATE_KEYS",
    "VIEW_MONSTER_KEYS",
    "VIEW_RANGE",
    "VIEW_SIZE",
    "chebyshev",
    "distance_bucket",
    "in_view",
    "is_done",
    "legal_action_mask",
    "relative_direction",
]

# ------------------------------------------------------------------------------------------------------ key names
#: ``env_obs``, as ``env.reset`` returns it and as the second item of ``env.step``'s result (docs/gorge/rules.md)
ENV_OBS_KEYS = ("env_id", "frame_no", "observation", "extra_info", "terminated", "truncated")
#: ``env_obs["observation"]``: what the agent sees
OBSERVATION_KEYS = ("step_no", "frame_state", "env_info", "map_info", "legal_action")
#: ``env_obs["extra_info"]``: the global truth, for the workflow (not for the agent)
EXTRA_INFO_KEYS = ("frame_state", "map_id", "result_code", "result_message")
#: ``observation.frame_state``: view-filtered monsters and organs
VIEW_FRAME_STATE_KEYS = ("heroes", "monsters", "organs")
#: ``extra_info.frame_state``: unfiltered
EXTRA_FRAME_STATE_KEYS = ("frame_no", "heroes", "monsters", "organs")
#: ``frame_state.heroes`` (one dict, not a list) (docs/gorge/rules.md)
HERO_KEYS = ("buff_remaining_time", "flash_cooldown", "hero_id", "pos", "step_score", "treasure_collected_count",
             "treasure_score")
#: a monster of ``observation.frame_state.monsters`` (docs/gorge/rules.md)
VIEW_MONSTER_KEYS = ("hero_l2_distance", "hero_relative_direction", "monster_id", "monster_interval", "pos", "speed",
                     "is_in_view")
#: a monster of ``extra_info.frame_state.monsters``: no ``is_in_view``, plus the spawn cell
EXTRA_MONSTER_KEYS = ("hero_l2_distance", "hero_relative_direction", "monster_id", "monster_interval", "pos", "speed",
                      "start_pos")
#: an organ (treasure or buff) of either ``frame_state.organs``
ORGAN_KEYS = ("config_id", "hero_l2_distance", "hero_relative_direction", "pos", "status", "sub_type")
#: ``observation.env_info``: exactly these 17 keys, in the platform's order (docs/gorge/rules.md)
ENV_INFO_KEYS = ("buff_refresh_time", "flash_cooldown_max", "flash_count", "max_step", "monster_init_speed",
                 "monster_interval", "monster_speed_boost_step", "pos", "step_no", "step_score", "total_buff",
                 "total_score", "total_treasure", "treasure_id", "treasure_score", "treasures_collected",
                 "collected_buff")
#: the first item of ``env.step``'s result (docs/gorge/rules.md)
ENV_REWARD_KEYS = ("env_id", "frame_no", "reward")
#: every ``pos`` and ``start_pos``
POS_KEYS = ("x", "z")

# ---------------------------------------------------------------------------------------------------------- codes
N_ACTIONS = 16  # 0..7 move in direction a, 8..15 flash in direction a - 8
VIEW_RANGE = 10  # an entity is in view when its Chebyshev distance to the hero is at most this (inclusive)
VIEW_SIZE = 2 * VIEW_RANGE + 1  # map_info is VIEW_SIZE x VIEW_SIZE
MAP_INFO_ROAD = 1  # map_info code of a walkable cell
MAP_INFO_BLOCKED = 0  # map_info code of an obstacle and of a cell outside the map
SUB_TYPE_TREASURE = 1  # organ sub_type of a treasure
SUB_TYPE_BUFF = 2  # organ sub_type of a speed buff
ORGAN_PRESENT = 1  # organ status: present, collectable
ORGAN_WAITING = 0  # organ status: a buff waiting to respawn (collected treasures are removed instead)
IN_VIEW = 1  # monster is_in_view
OUT_OF_VIEW = 0
OUT_OF_VIEW_POS = {"x": -1, "z": -1}  # pos of an out-of-view monster in observation.frame_state
OUT_OF_VIEW_SPEED = -1  # speed of an out-of-view monster in observation.frame_state
DISTANCE_BUCKET_SIZE = 30  # hero_l2_distance = floor(euclidean distance / 30), capped
DISTANCE_BUCKET_MAX = 5
DIRECTION_SAME_CELL = 0  # hero_relative_direction of an entity on the hero's cell; else 1..8 = E, NE, N, ..., SE
RESULT_OK = 0
#: extra_info.result_code values: the Lua script's and the adapter's (docs/gorge/rules.md)
RESULT_CODES = {
    0: "success",
    -1: "invalid config (Lua) or exception in step (adapter)",
    -2: "hero spawn failed",
    -3: "bad state",
    -100: "config creation failed",
    -101: "config validation failed",
    -103: "adapter error",
    -201: "step after the end of the episode",
}
RESET_MESSAGE = "success"  # extra_info.result_message of a reset
STEP_MESSAGE = ""  # extra_info.result_message of a step

# (sign dx, sign dz) -> hero_relative_direction: the action direction + 1
_DIRECTION_CODES = {(0, 0): 0, (1, 0): 1, (1, -1): 2, (0, -1): 3, (-1, -1): 4, (-1, 0): 5, (-1, 1): 6, (0, 1): 7,
                    (1, 1): 8}


def _int(name: str, value: object) -> int:
    if type(value) is int:  # the usual case, one test
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} = {value!r} is not an integer; pass cell offsets as ints (target minus hero)")
    return value


def chebyshev(dx: int, dz: int) -> int:
    """``max(|dx|, |dz|)``."""
    return max(abs(_int("dx", dx)), abs(_int("dz", dz)))


def in_view(dx: int, dz: int) -> bool:
    """Whether an entity at offset ``(dx, dz)`` from the hero is in view: Chebyshev distance <= 10, inclusive."""
    return chebyshev(dx, dz) <= VIEW_RANGE


def distance_bucket(dx: int, dz: int) -> int:
    """``hero_l2_distance``: ``min(5, floor(sqrt(dx^2 + dz^2) / 30))`` (the script's ``* 6 / 180``), computed exactly
    on integers."""
    d2 = _int("dx", dx) ** 2 + _int("dz", dz) ** 2
    return min(DISTANCE_BUCKET_MAX, math.isqrt(d2) // DISTANCE_BUCKET_SIZE)


def relative_direction(dx: int, dz: int) -> int:
    """``hero_relative_direction`` from the signs of ``(dx, dz)`` only: 0 same cell, 1 E, 2 NE, 3 N, 4 NW, 5 W, 6 SW,
    7 S, 8 SE (z grows to the south, so N is ``dz < 0``)."""
    sx = (_int("dx", dx) > 0) - (dx < 0)
    sz = (_int("dz", dz) > 0) - (dz < 0)
    return _DIRECTION_CODES[(sx, sz)]


def legal_action_mask(flash_cooldown: int) -> list[bool]:
    """``legal_action``: the 8 moves always, the 8 flashes while ``flash_cooldown`` is 0 (16 bools)."""
    ready = _int("flash_cooldown", flash_cooldown) == 0
    return [True] * 8 + [ready] * 8


def is_done(env_obs: Mapping) -> bool:
    """Whether the episode of ``env_obs`` is over: ``terminated or truncated``."""
    if not isinstance(env_obs, Mapping) or "terminated" not in env_obs or "truncated" not in env_obs:
        raise ValueError(f"expected an env_obs dict with keys {list(ENV_OBS_KEYS)}, got {type(env_obs).__name__}; "
                         "pass the dict env.reset returns or the second item of env.step's result")
    return bool(env_obs["terminated"]) or bool(env_obs["truncated"])
