"""The platform's observation of Gorge Chase built from the game's state (docs/gorge/rules.md), a facade with the
platform's env interface, and the rebuild of a game from a logged platform frame.

- :func:`env_obs` returns the ``env_obs`` dict of docs/gorge/rules.md; its parts come from :func:`frame_state`,
  :func:`env_info`, :func:`map_info` and :func:`legal_action`. Key names and codes are those of :mod:`.protocol`.
- :class:`GorgeCompetitionEnv`: ``reset(usr_conf) -> env_obs`` and ``step(action) -> (env_reward, env_obs)``.
- :func:`rebuild_from_frame`: a :class:`~sb3_realm.games.gorge.core.Game` in the state a frame logs, to play on.

Scores (``step_score``, ``treasure_score``, ``total_score``, ``reward``) are Python floats; the platform's JSON writes
an integral score as an int (``477``), which compares equal.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .core import COMPLETED, FAILED, RUNNING, Buff, Game, Monster, StepEvents, Treasure
from .maps import GorgeMap, load_map
from .protocol import (
    IN_VIEW,
    MAP_INFO_BLOCKED,
    MAP_INFO_ROAD,
    ORGAN_PRESENT,
    ORGAN_WAITING,
    OUT_OF_VIEW,
    OUT_OF_VIEW_POS,
    OUT_OF_VIEW_SPEED,
    RESET_MESSAGE,
    RESULT_OK,
    STEP_MESSAGE,
    SUB_TYPE_BUFF,
    SUB_TYPE_TREASURE,
    VIEW_RANGE,
    distance_bucket,
    in_view,
    legal_action_mask,
    relative_direction,
)
from .rules import GorgeConfig, Rules, choose_map_id

__all__ = [
    "GorgeCompetitionEnv",
    "env_info",
    "env_obs",
    "env_reward",
    "frame_state",
    "legal_action",
    "map_info",
    "rebuild_from_frame",
]

Cell = tuple[int, int]


def _pos(cell: Cell) -> dict:
    return {"x": int(cell[0]), "z": int(cell[1])}


def _relative(hero: Cell, cell: Cell) -> tuple[int, int]:
    dx, dz = int(cell[0]) - int(hero[0]), int(cell[1]) - int(hero[1])
    return distance_bucket(dx, dz), relative_direction(dx, dz)


def _seen(hero: Cell, cell: Cell) -> bool:
    return in_view(int(cell[0]) - int(hero[0]), int(cell[1]) - int(hero[1]))


def _organ_items(game: Game, view: bool) -> list[tuple]:
    """``(entity_id, sub_type, status, cell, dx, dz)`` of the organs in ``config_id`` order (in view only with
    ``view``), their offsets from the hero computed once for both frame states."""
    hx, hz = int(game.hero[0]), int(game.hero[1])
    items = [(t.entity_id, SUB_TYPE_TREASURE, ORGAN_PRESENT, t.cell) for t in game.treasures]
    items += [(b.entity_id, SUB_TYPE_BUFF, ORGAN_PRESENT if b.visible else ORGAN_WAITING, b.cell) for b in game.buffs]
    out = []
    for entity_id, sub_type, status, cell in sorted(items):
        dx, dz = int(cell[0]) - hx, int(cell[1]) - hz
        if not view or max(abs(dx), abs(dz)) <= VIEW_RANGE:
            out.append((entity_id, sub_type, status, cell, dx, dz))
    return out


def _hero(game: Game) -> dict:
    return {
        "buff_remaining_time": int(game.buff_remaining),
        "flash_cooldown": int(game.flash_cooldown),
        "hero_id": int(game.hero_id),
        "pos": _pos(game.hero),
        "step_score": float(game.step_score),
        "treasure_collected_count": int(game.treasures_collected),
        "treasure_score": float(game.treasure_score),
    }


def _monster(game: Game, monster: Monster, view: bool) -> dict:
    bucket, direction = _relative(game.hero, monster.cell)
    out = {"hero_l2_distance": bucket, "hero_relative_direction": direction, "monster_id": int(monster.entity_id),
           "monster_interval": int(game.monster_interval), "pos": _pos(monster.cell), "speed": int(monster.speed)}
    if not view:
        out["start_pos"] = _pos(monster.start)
    elif _seen(game.hero, monster.cell):
        out["is_in_view"] = IN_VIEW
    else:  # out of view: position and speed hidden, bucket and direction kept (docs/gorge/rules.md)
        out.update(pos=dict(OUT_OF_VIEW_POS), speed=OUT_OF_VIEW_SPEED, is_in_view=OUT_OF_VIEW)
    return out


def _organs(game: Game, view: bool) -> list[dict]:
    return [{"config_id": int(entity_id), "hero_l2_distance": distance_bucket(dx, dz),
             "hero_relative_direction": relative_direction(dx, dz), "pos": {"x": int(cell[0]), "z": int(cell[1])},
             "status": status, "sub_type": sub_type}
            for entity_id, sub_type, status, cell, dx, dz in _organ_items(game, view)]


def frame_state(game: Game, view: bool = True) -> dict:
    """``observation.frame_state`` (``view=True``: monsters out of view masked, organs out of view left out) or
    ``extra_info.frame_state`` (``view=False``: every monster and organ with true values, monsters with their spawn
    cell ``start_pos``, and ``frame_no``).

    Monsters are in spawn order; organs (remaining treasures, then every buff, status 0 while waiting to respawn) are
    sorted by ``config_id``. "In view" is Chebyshev distance <= 10 from the hero, inclusive.
    """
    state = {"heroes": _hero(game), "monsters": [_monster(game, m, view) for m in game.monsters],
             "organs": _organs(game, view)}
    return state if view else {"frame_no": int(game.step_no), **state}


def env_info(game: Game) -> dict:
    """``observation.env_info``: exactly the 17 keys of docs/gorge/rules.md, in the platform's order."""
    cfg = game.config
    info = {
        "buff_refresh_time": int(cfg.buff_cooldown),
        "flash_cooldown_max": int(cfg.talent_cooldown),
        "flash_count": int(game.flash_count),
        "max_step": int(cfg.max_step),
        "monster_init_speed": int(game.rules.monster_speed),
        "monster_interval": int(game.monster_interval),
        "monster_speed_boost_step": int(game.monster_speedup),
        "pos": _pos(game.hero),
        "step_no": int(game.step_no),
        "step_score": float(game.step_score),
        "total_buff": int(cfg.buff_count),
        "total_score": float(game.total_score),
        "total_treasure": int(cfg.treasure_count),
        "treasure_id": sorted(int(t.entity_id) for t in game.treasures),
        "treasure_score": float(game.treasure_score),
        "treasures_collected": int(game.treasures_collected),
        "collected_buff": int(game.buff_pickups),
    }
    return info


def map_info(game: Game) -> list[list[int]]:
    """``observation.map_info``: the 21 x 21 terrain around the hero, indexed ``[row][column]`` = ``[z][x]``:
    ``map_info[r][c]`` is 1 where cell ``(hero.x + c - 10, hero.z + r - 10)`` is road, 0 for an obstacle or a cell
    outside the map. The centre ``[10][10]`` is the hero's cell; ``[10][11]`` is its east neighbour and ``[9][10]``
    its north neighbour. Items and monsters are not shown."""
    walkable = game.game_map.walkable
    h, w = walkable.shape
    hx, hz = game.hero
    size = 2 * VIEW_RANGE + 1
    out = np.full((size, size), MAP_INFO_BLOCKED, dtype=np.int64)
    z0, x0 = hz - VIEW_RANGE, hx - VIEW_RANGE
    zs, ze = max(z0, 0), min(z0 + size, h)
    xs, xe = max(x0, 0), min(x0 + size, w)
    if zs < ze and xs < xe:
        out[zs - z0:ze - z0, xs - x0:xe - x0] = np.where(walkable[zs:ze, xs:xe], MAP_INFO_ROAD, MAP_INFO_BLOCKED)
    return out.tolist()


def legal_action(game: Game) -> list[bool]:
    """``observation.legal_action``: 16 bools, the 8 moves always, the 8 flashes while the cooldown is 0."""
    return legal_action_mask(int(game.flash_cooldown))


def env_obs(game: Game, env_id: str, map_id: int, *, result_message: str | None = None) -> dict:
    """The ``env_obs`` dict of docs/gorge/rules.md for the game's current state.

    :param game: the game.
    :param env_id: the env instance's id (a string, e.g. ``"33926133"``).
    :param map_id: the id of the map played (1..10 for the open maps).
    :param result_message: ``extra_info.result_message``; default ``"success"`` at step 0 (a reset), ``""`` after.
    """
    if not isinstance(env_id, str):
        raise ValueError(f"env_id = {env_id!r} must be a string, as on the platform (e.g. str(instance_number))")
    if isinstance(map_id, bool) or not isinstance(map_id, (int, np.integer)):
        raise ValueError(f"map_id = {map_id!r} must be an integer map id (1..10 for the open maps)")
    if result_message is None:
        result_message = RESET_MESSAGE if game.step_no == 0 else STEP_MESSAGE
    step = int(game.step_no)
    return {
        "env_id": env_id,
        "frame_no": step,
        "observation": {"step_no": step, "frame_state": frame_state(game, view=True), "env_info": env_info(game),
                        "map_info": map_info(game), "legal_action": legal_action(game)},
        "extra_info": {"frame_state": frame_state(game, view=False), "map_id": int(map_id), "result_code": RESULT_OK,
                       "result_message": result_message},
        "terminated": bool(game.terminated),
        "truncated": bool(game.truncated),
    }


def env_reward(game: Game, env_id: str) -> dict:
    """The ``env_reward`` dict of ``env.step``: ``reward`` = total score after the last step minus before it
    (1.5 per step plus 100 per treasure collected in it; no penalty for being caught)."""
    return {"env_id": env_id, "frame_no": int(game.step_no), "reward": float(game.events.reward)}


# ------------------------------------------------------------------------------------------------------ rebuild
def _cell(d: object, where: str) -> Cell:
    if not isinstance(d, Mapping) or any(isinstance(d.get(k), bool) or not isinstance(d.get(k), int)
                                         for k in ("x", "z")):
        raise ValueError(f"{where} = {d!r} is not a cell; expected {{'x': int, 'z': int}}")
    return int(d["x"]), int(d["z"])


def _part(d: object, key: str, where: str) -> Any:
    if not isinstance(d, Mapping) or key not in d:
        raise ValueError(f"{where} has no key {key!r}; pass a whole logged env_obs (keys env_id, frame_no, "
                         "observation, extra_info, terminated, truncated)")
    return d[key]


def rebuild_from_frame(frame: Mapping, game_map: GorgeMap, rules: Rules | None = None,
                       rng: np.random.Generator | None = None) -> Game:
    """A :class:`Game` in the state that a logged platform frame (an ``env_obs`` dict) records, ready to step on.

    Read from the frame: the hero (cell, id, flash cooldown, buff time left), the scores' counts, every remaining
    treasure and every buff with its status, every monster with its cell, speed and spawn cell (all from
    ``extra_info.frame_state``), and the configuration from ``observation.env_info`` (``map`` = ``[extra_info.map_id]``,
    ``map_random`` false, the other keys from ``total_treasure``, ``total_buff``, ``buff_refresh_time``,
    ``flash_cooldown_max``, ``monster_interval``, ``monster_speed_boost_step`` and ``max_step``: the values in force,
    so a ``-1`` that was drawn at reset comes back as the drawn value).

    What the frame does not hold is set by these rules:

    - position history: one entry, ``(step_no, hero cell)``; monster 2, if still to come, spawns where the hero stood
      at the frame until newer entries exist.
    - each monster's previous cell and last axis: None (no back-step or same-axis penalty on its next sub-step).
    - the respawn counter of a buff with status 0: ``buff_refresh_time - buff_duration + buff_remaining_time``
      (``buff_duration`` is 50) while the hero is buffed, exact for the buff picked up last; else
      ``buff_refresh_time - buff_duration``; at least 1 either way. A buff with status 1 has counter 0.
    - ``second_spawned``: true once two monsters exist or ``step_no >= monster_interval`` (the spawn was decided);
      ``boosted``: ``step_no >= monster_speed_boost_step``.
    - the next entity id: one more than the largest id in the frame.
    - status: ``failed`` if the frame is terminated, ``completed`` if truncated, else ``running``.
    - the last step's events: empty (reward 0).
    - the generator: ``rng``, default a fresh unseeded ``numpy.random.default_rng()``.

    :param frame: the logged ``env_obs`` (a parsed JSON dict).
    :param game_map: the map named by the frame's ``extra_info.map_id``.
    :param rules: the engine values (default: those in force on the platform).
    :param rng: the generator of the draws of the game from here on.
    """
    if not isinstance(game_map, GorgeMap):
        raise ValueError(f"game_map = {game_map!r} is not a GorgeMap; load the frame's map with "
                         "load_map('gorge_chase_map_<extra_info.map_id>.json')")
    try:
        return _rebuild(frame, game_map, rules, rng)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"the frame lacks a field or has one of the wrong type ({type(exc).__name__}: {exc}); pass a "
                         "whole logged env_obs dict of docs/gorge/rules.md as parsed from JSON") from exc


def _rebuild(frame: Mapping, game_map: GorgeMap, rules: Rules | None, rng: np.random.Generator | None) -> Game:
    extra = _part(frame, "extra_info", "frame")
    truth = _part(extra, "frame_state", "frame['extra_info']")
    info = _part(_part(frame, "observation", "frame"), "env_info", "frame['observation']")
    hero = _part(truth, "heroes", "frame['extra_info']['frame_state']")
    map_id = _part(extra, "map_id", "frame['extra_info']")
    config = GorgeConfig(map=(map_id,), map_random=False, treasure_count=info["total_treasure"],
                         buff_count=info["total_buff"], buff_cooldown=info["buff_refresh_time"],
                         talent_cooldown=info["flash_cooldown_max"], monster_interval=info["monster_interval"],
                         monster_speedup=info["monster_speed_boost_step"], max_step=info["max_step"])
    game = Game(game_map, rules if rules is not None else Rules())
    game.config = config
    game.rng = rng if rng is not None else np.random.default_rng()
    step = int(truth["frame_no"])
    game.step_no = step
    game.hero = _cell(hero["pos"], "extra_info.frame_state.heroes.pos")
    game.hero_id = int(hero["hero_id"])
    game.flash_cooldown = int(hero["flash_cooldown"])
    game.buff_remaining = int(hero["buff_remaining_time"])
    game.treasures_collected = int(hero["treasure_collected_count"])
    game.flash_count = int(info["flash_count"])
    game.buff_pickups = int(info["collected_buff"])
    game.monster_interval = config.monster_interval
    game.monster_speedup = config.monster_speedup
    waiting = max(1, config.buff_cooldown - game.rules.buff_duration + game.buff_remaining)
    game.treasures, game.buffs = [], []
    for i, organ in enumerate(truth["organs"]):
        where = f"extra_info.frame_state.organs[{i}]"
        cell = _cell(organ.get("pos"), f"{where}.pos")
        if organ.get("sub_type") == SUB_TYPE_TREASURE:
            game.treasures.append(Treasure(int(organ["config_id"]), cell))
        elif organ.get("sub_type") == SUB_TYPE_BUFF:
            visible = organ.get("status") == ORGAN_PRESENT
            game.buffs.append(Buff(int(organ["config_id"]), cell, visible, 0 if visible else waiting))
        else:
            raise ValueError(f"{where} has sub_type {organ.get('sub_type')!r}; only {SUB_TYPE_TREASURE} (treasure) "
                             f"and {SUB_TYPE_BUFF} (buff) exist")
    game.monsters = [Monster(int(m["monster_id"]), _cell(m["pos"], f"extra_info.frame_state.monsters[{i}].pos"),
                             int(m["speed"]), _cell(m["start_pos"], f"extra_info.frame_state.monsters[{i}].start_pos"))
                     for i, m in enumerate(truth["monsters"])]
    game.second_spawned = len(game.monsters) >= 2 or step >= game.monster_interval >= 0
    game.boosted = step >= game.monster_speedup
    game.history = deque([(step, game.hero)], maxlen=game.rules.history_length)
    game.terminated, game.truncated = bool(frame["terminated"]), bool(frame["truncated"])
    game.status = FAILED if game.terminated else COMPLETED if game.truncated else RUNNING
    game.events = StepEvents()
    ids = [game.hero_id] + [t.entity_id for t in game.treasures] + [b.entity_id for b in game.buffs]
    game._next_id = max(ids + [m.entity_id for m in game.monsters]) + 1  # the core has no public setter
    return game


# ---------------------------------------------------------------------------------------------------- the env
def _check_platform_conf(usr_conf: object) -> Mapping | None:
    if usr_conf is None:
        return None
    if isinstance(usr_conf, Mapping) and set(usr_conf) == {"env_conf"} and isinstance(usr_conf["env_conf"], Mapping):
        return usr_conf["env_conf"]
    raise ValueError(f"usr_conf = {usr_conf!r} is not in the platform's form: reset takes the episode configuration "
                     "wrapped under 'env_conf', as read_usr_conf returns it, e.g. {'env_conf': {'map': [1, 2], "
                     "'max_step': 1000}}; reset() alone plays the shipped defaults")


class GorgeCompetitionEnv:
    """The game behind the platform's env interface (docs/gorge/rules.md), for playing the official workflow locally.

    ``reset(usr_conf) -> env_obs`` takes ``{"env_conf": {...}}`` (None: the shipped defaults) and chooses the map from
    ``env_conf["map"]``: uniformly with the env's generator when ``map_random`` is true, else the next one in list
    order (the env counts its episodes). ``step(action) -> (env_reward, env_obs)`` with
    ``env_reward = {"env_id", "frame_no", "reward"}`` and ``reward`` the total score's difference. A step after the end
    of the episode raises ``ValueError`` (the platform answers with result code -201).

    :param maps: the folder holding ``gorge_chase_map_<k>.json``, or a mapping of map id to a loaded map.
    :param seed: seeds the env's generator, which makes every draw (the map, the spawns, the monsters' ties).
    :param env_id: the env instance's id reported in ``env_obs`` and ``env_reward``.
    :param rules: the engine values (default: those in force on the platform).
    """

    def __init__(self, maps: str | os.PathLike | Mapping[int, GorgeMap], seed: int | None = None, env_id: str = "0",
                 rules: Rules | None = None) -> None:
        if isinstance(maps, Mapping):
            bad = [k for k, v in maps.items() if not isinstance(v, GorgeMap)]
            if bad:
                raise ValueError(f"maps[{bad[0]!r}] is not a GorgeMap; pass loaded maps ({{1: load_map(path)}}) or "
                                 "the folder of gorge_chase_map_<k>.json")
            self._maps: dict[int, GorgeMap] = dict(maps)
            self._folder: Path | None = None
        elif isinstance(maps, (str, os.PathLike)):
            self._maps, self._folder = {}, Path(maps)
            if not self._folder.is_dir():
                raise ValueError(f"maps = {str(maps)!r} is not a folder; pass the folder of gorge_chase_map_<k>.json "
                                 "(or a mapping of map id to a loaded map)")
        else:
            raise ValueError(f"maps = {maps!r}; pass the folder of gorge_chase_map_<k>.json or a mapping of map id "
                             "to a loaded map")
        if not isinstance(env_id, str):
            raise ValueError(f"env_id = {env_id!r} must be a string, as on the platform (e.g. '33926133')")
        self.rng = np.random.default_rng(seed)
        self.env_id = env_id
        self.rules = rules if rules is not None else Rules()
        self.game: Game | None = None
        self.map_id = 0
        self.episodes = 0

    def _map(self, map_id: int) -> GorgeMap:
        if map_id not in self._maps:
            if self._folder is None:
                raise ValueError(f"env_conf['map'] names map {map_id}, which this env was not given; add it to the "
                                 f"maps mapping or pick among {sorted(self._maps)}")
            self._maps[map_id] = load_map(self._folder / f"gorge_chase_map_{map_id}.json")
        return self._maps[map_id]

    def reset(self, usr_conf: Mapping | None = None) -> dict:
        config = GorgeConfig.from_usr_conf(_check_platform_conf(usr_conf))
        self.map_id = choose_map_id(config, self.episodes, self.rng)
        self.episodes += 1
        self.game = Game(self._map(self.map_id), self.rules)
        self.game.reset(config, self.rng)
        return env_obs(self.game, self.env_id, self.map_id)

    def step(self, action: int) -> tuple[dict, dict]:
        if self.game is None:
            raise ValueError("step() was called before reset(); call env.reset(usr_conf) first")
        self.game.step(action)
        return env_reward(self.game, self.env_id), env_obs(self.game, self.env_id, self.map_id)
