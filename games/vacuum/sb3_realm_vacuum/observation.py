"""The platform's observation of robot_vacuum built from the game's state (docs/vacuum/rules.md, the observation
protocol), and a facade with the platform's env interface (``reset(usr_conf) -> env_obs``, ``step(act) ->
(env_reward, env_obs)``).

``map_info[r][c]`` is the cell ``(x = hx - 10 + c, z = hz - 10 + r)``: 0 obstacle or off the map, 1 road that is
clean (charger cells too), 2 dirty. An official robot further than 10 cells (Chebyshev) is at ``(-1, -1)`` with
``is_in_view`` 0 (the rules' ``npcs_in_view_only``); chargers are always listed with their centres.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import VacuumGame
from .rules import N_ACTIONS, SIZE, VIEW_RADIUS, Rules, VacuumConfig

__all__ = ["MAP_INFO_DIRTY", "MAP_INFO_OBSTACLE", "MAP_INFO_ROAD", "VacuumCompetitionEnv", "agent_observation",
           "env_info", "env_obs", "map_info", "view_codes"]

MAP_INFO_OBSTACLE, MAP_INFO_ROAD, MAP_INFO_DIRTY = 0, 1, 2
OUT_OF_VIEW_POS = {"x": -1, "z": -1}
HERO_ID = "1"  # entity ids are sequential strings: the robot, then the official robots


def view_codes(game: VacuumGame) -> np.ndarray:
    """(21, 21) int8: the local view's codes around the robot, ``[row = z, column = x]``."""
    r = VIEW_RADIUS
    codes = np.zeros((2 * r + 1, 2 * r + 1), dtype=np.int8)
    z0, z1 = max(0, game.z - r), min(SIZE, game.z + r + 1)
    x0, x1 = max(0, game.x - r), min(SIZE, game.x + r + 1)
    window = game.walkable[z0:z1, x0:x1].astype(np.int8) + game.dirty[z0:z1, x0:x1]
    codes[z0 - (game.z - r):z1 - (game.z - r), x0 - (game.x - r):x1 - (game.x - r)] = window
    return codes


def map_info(game: VacuumGame) -> list[list[int]]:
    """``observation.map_info``: the local view as 21 lists of 21 ints."""
    return view_codes(game).tolist()


def _pos(x: int, z: int) -> dict[str, int]:
    return {"x": int(x), "z": int(z)}


def _npcs(game: VacuumGame, filtered: bool) -> list[dict[str, Any]]:
    out = []
    for j, (x, z) in enumerate(game.npcs):
        seen = max(abs(x - game.x), abs(z - game.z)) <= VIEW_RADIUS
        entry = {"npc_id": str(j + 2), "idx": j + 1, "is_in_view": int(seen),
                 "pos": _pos(x, z) if seen or not filtered else dict(OUT_OF_VIEW_POS)}
        out.append(entry)
    return out


def frame_state(game: VacuumGame, filtered: bool) -> dict[str, Any]:
    """``frame_state``: the robot, the official robots (out of view at ``(-1, -1)`` when ``filtered``) and the
    active chargers."""
    return {
        "frame_no": game.step_no,
        "heroes": {"hero_id": HERO_ID, "pos": _pos(game.x, game.z), "battery": game.battery,
                   "battery_max": game.config.battery_max, "score": game.clean_score,
                   "dirt_cleaned": game.clean_score},
        "npcs": _npcs(game, filtered),
        "organs": [{"sub_type": 1, "config_id": int(i), "pos": _pos(cx, cz), "w": 3, "h": 3}
                   for i, (cx, cz) in zip(game.charger_ids, game.chargers, strict=True)],
    }


def env_info(game: VacuumGame, map_count: int = len(VacuumConfig().map)) -> dict[str, Any]:
    """``observation.env_info``: the 15 keys of the protocol."""
    config = game.config
    return {
        "total_score": game.clean_score, "step_no": game.step_no, "clean_score": game.clean_score,
        "total_dirt": game.total_dirt, "battery_max": config.battery_max, "remaining_charge": game.battery,
        "charge_count": game.charge_count, "total_charger": len(game.chargers), "npc_count": len(game.npcs),
        "pos": _pos(game.x, game.z), "total_map": int(map_count), "map_random": int(config.map_random),
        "max_step": config.max_step, "finished_steps": game.step_no,
        "step_cleaned_cells": [] if game.cleaned_cell is None else [_pos(*game.cleaned_cell)],
    }


def agent_observation(game: VacuumGame, rules: Rules | None = None) -> dict[str, Any]:
    """``env_obs["observation"]``: what the agent sees (the Gym env's features read only this part)."""
    rules = rules if rules is not None else game.rules
    return {
        "step_no": game.step_no,
        "frame_state": frame_state(game, filtered=rules.npcs_in_view_only),
        "env_info": env_info(game, len(game.config.map)),
        "map_info": map_info(game),
        "legal_action": [1] * N_ACTIONS,
    }


def env_obs(game: VacuumGame, map_id: int = 0, env_id: str = "0", rules: Rules | None = None) -> dict[str, Any]:
    """The ``env_obs`` dict of the current state (what ``env.reset`` returns and ``env.step`` returns second)."""
    return {
        "env_id": env_id,
        "frame_no": game.step_no,
        "observation": agent_observation(game, rules),
        "extra_info": {"frame_state": frame_state(game, filtered=False), "map_id": int(map_id),
                       "result_code": 0, "result_message": "", "fail_reason": game.fail_reason},
        "terminated": bool(game.terminated),
        "truncated": bool(game.truncated),
    }


class VacuumCompetitionEnv:
    """The platform's env interface over the simulator: ``reset(usr_conf) -> env_obs`` and ``step(act) ->
    (env_reward, env_obs)``; ``maps`` maps a platform map id to its map (the ids of ``env_conf['map']`` are taken in
    order, or drawn when ``map_random``)."""

    def __init__(self, maps: dict, rules: Rules | None = None, seed: int = 0) -> None:
        if not maps:
            raise ValueError("VacuumCompetitionEnv needs at least one map: {map id: map}")
        self.maps, self.rules = dict(maps), rules if rules is not None else Rules()
        self.rng = np.random.default_rng(seed)
        self.game: VacuumGame | None = None
        self.map_id = 0
        self._next = 0

    def reset(self, usr_conf: dict | None = None) -> dict[str, Any]:
        config = VacuumConfig.from_usr_conf(usr_conf)
        ids = [k for k in config.map if k in self.maps] or sorted(self.maps)
        if config.map_random:
            self.map_id = int(ids[int(self.rng.integers(len(ids)))])
        else:
            self.map_id = int(ids[self._next % len(ids)])
            self._next += 1
        self.game = VacuumGame(self.maps[self.map_id], config, self.rng, self.rules)
        return env_obs(self.game, self.map_id)

    def step(self, act: int) -> tuple[dict[str, Any], dict[str, Any]]:
        if self.game is None:
            raise ValueError("call reset(usr_conf) before step(act)")
        cleaned = self.game.step(act)
        reward = {"frame_no": self.game.step_no, "env_id": "0", "reward": float(cleaned)}
        return reward, env_obs(self.game, self.map_id)
