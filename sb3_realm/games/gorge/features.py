"""Gorge Chase: the platform's observation -> model input, and the action mask. numpy only.

This module is copied verbatim into competition submissions together with :mod:`.planner` and :mod:`.memory` (the
same folder), so it imports nothing from sb3_realm but them. Training and the submission run the same :func:`encode`
on the same input: ``env_obs["observation"]`` (docs/gorge/rules.md). Cells are ``(x, z)`` with x growing to the east
and z to the south; grids are indexed ``[z, x]``.

The caller keeps one :class:`FeatureState` per episode (``FeatureState()`` or ``state.reset()`` at the start of an
episode) and passes it to every :func:`encode` call of that episode, once per observation. The state holds the
observation-only planner (:class:`~.planner.ObservationPlanner`): each call updates its memory and lets it decide,
and the features hand its judgement of every action to the network.

Model input: ``{"maps": uint8 (9, 33, 33), "vector": float32 (VECTOR_SIZE,)}``.

Map channels (the 33 x 33 square around the hero, the hero at ``[16, 16]``; the last two are the whole 128 x 128
map in 4 x 4-cell blocks, in the top-left 32 x 32 of the square):

==  ==========================================================================================
0   road seen (255), else 0; a cell never seen is neither road nor obstacle seen (the planner takes it as road)
1   obstacle seen, or outside the map (255), else 0
2   escape room: 255 where the hero gets first (within 20 steps)
3   hero steps from the hero's cell (8 moves, corner rule): ``255 - 8 * steps`` up to 20 steps, else 0
4   monsters: steps before one can stand next to the cell, ``255 - 8 * steps`` up to 20 steps, else 0
5   monsters: 255 on a monster seen now, ``max(64, 255 - 8 * age)`` on one tracked out of view, 96 on monster 2's
    spawn cell while it is announced
6   items remembered: 255 treasure, 192 buff collectable, 96 buff waiting; the planner's goal cell at least 160
7   whole map, explored: the fraction of each block's cells seen so far, times 255
8   whole map: 255 a block with a remembered treasure, 170 a buff, 120 a monster, 60 the hero's block
==  ==========================================================================================

Vector layout (all values in [-1, 1]):

==========  ==============================================================================================
index       meaning
==========  ==============================================================================================
0..159      per action a (16 x 10, ``10 * a + k``): k = 0 allowed by the mask (:func:`action_mask`), 1 caught
            after it (a monster's predicted move ends next to the hero), 2 steps before a monster can reach its
            cell / 40, 3 escape room / 300, 4 ways out / 400, 5 lasting / 200, 6 progress toward the goal / 4,
            7 pickup value / 400, 8 the planner's value / 500, 9 the planner's choice (1 on one action)
160..165    hero x / 127, z / 127, flash ready, flash cooldown / flash_cooldown_max, buff remaining / 50, buffed
166..172    step / max_step, max_step / 2000, monster 2 spawned, steps until its spawn / max_step (0 once due, 1 if
            never), never spawns, speed-up happened, steps until it / max_step
173..176    treasures collected / total, treasures left / 10, flashes used / 10, buffs picked up / 10
177..190    2 monster slots x 7 (spawn order): exists, in view, steps since seen / 50, dx / 32, dz / 32 of its
            (tracked) cell, speed / 4, path distance from the hero / 64
191..194    monster 2's spawn cell while announced: known, dx / 32, dz / 32, steps until it spawns / 100
195..201    the planner's goal: present, dx / 64, dz / 64, path distance / 64, a treasure, a buff, exploration
==========  ==============================================================================================
"""

from __future__ import annotations

import numpy as np

from .memory import UNREACHABLE
from .planner import RADIUS, ObservationPlanner, Planner

__all__ = [
    "BINARY_LAYERS",
    "COMPANION_FILES",
    "FEATURE_VERSION",
    "MAP_SHAPE",
    "N_ACTIONS",
    "VECTOR_SIZE",
    "FeatureState",
    "action_mask",
    "encode",
]

FEATURE_VERSION = "2"
#: the modules this one imports, copied beside it into a submission's feature folder
COMPANION_FILES = ("memory.py", "planner.py")
N_ACTIONS = 16
SIZE = 2 * RADIUS + 1  # 33: the planner's window around the hero
HORIZON = Planner.horizon  # hero steps the escape room counts (and the step planes show)
WORLD_SIZE = 128
BLOCK = 4  # cells per block side of the whole-map channels
N_CHANNELS = 9
MAP_SHAPE = (N_CHANNELS, SIZE, SIZE)
BINARY_LAYERS = (0, 1, 2)  # map channels that hold only 0 or 255
PER_ACTION = 10
N_MONSTERS = 2
VECTOR_SIZE = 202
SUB_TYPE_TREASURE = 1


class FeatureState:
    """What :func:`encode` remembers across the steps of one episode: the observation-only planner (its memory of
    the terrain, items and monsters, its goals); picklable."""

    def __init__(self) -> None:
        self.planner = ObservationPlanner()

    def reset(self) -> None:
        """Forget everything (call at the start of an episode)."""
        self.planner.reset()

    @property
    def choice(self) -> int:
        """The planner's action for the last observation encoded (-1 before the first)."""
        return self.planner.choice


def _check(observation: object) -> None:
    if not isinstance(observation, dict) or not {"frame_state", "env_info", "map_info", "legal_action"} <= set(
            observation):
        got = sorted(observation) if isinstance(observation, dict) else type(observation).__name__
        raise ValueError(f"expected env_obs['observation'] (keys step_no, frame_state, env_info, map_info, "
                         f"legal_action), got {got}; pass env_obs['observation'], not the whole env_obs")


def action_mask(observation: dict, state: FeatureState | None = None) -> np.ndarray:
    """(16,) bool legal actions. With the state :func:`encode` just updated with this observation: the platform's
    legal actions less the moves into known obstacles and the flashes that land in place (what MaskablePPO and the
    planner choose among); without it, ``observation["legal_action"]`` as an array."""
    _check(observation)
    mask = np.asarray(observation["legal_action"], dtype=bool)
    if mask.shape != (N_ACTIONS,):
        raise ValueError(f"legal_action has shape {mask.shape}; the platform sends {N_ACTIONS} bools")
    if state is None:
        return mask
    if not isinstance(state, FeatureState):
        raise ValueError(f"state = {state!r} is not a FeatureState; pass the one encode() updated")
    return state.planner.legal.copy()


def _window(full: np.ndarray, x: int, z: int, fill: int = 0) -> np.ndarray:
    """The (33, 33) square of ``full`` (indexed ``[z, x]``) centred on ``(x, z)``, ``fill`` outside."""
    r = RADIUS
    out = np.full((SIZE, SIZE), fill, dtype=full.dtype)
    z0, x0 = z - r, x - r
    zs, ze = max(z0, 0), min(z0 + SIZE, full.shape[0])
    xs, xe = max(x0, 0), min(x0 + SIZE, full.shape[1])
    if zs < ze and xs < xe:
        out[zs - z0:ze - z0, xs - x0:xe - x0] = full[zs:ze, xs:xe]
    return out


#: a block's cells seen -> 255 times the share seen
_SEEN_SHARE = np.round(np.arange(BLOCK * BLOCK + 1) / (BLOCK * BLOCK) * 255).astype(np.uint8)


def _block_counts(cells: np.ndarray) -> np.ndarray:
    """The number of True cells of each ``BLOCK`` x ``BLOCK`` block of the (WORLD_SIZE, WORLD_SIZE) bool ``cells``
    (uint8: a block holds at most 16). Row and column sums in uint8, a few times faster than a sum over a 4-D view,
    which converts to int64."""
    blocks = WORLD_SIZE // BLOCK
    rows = np.ascontiguousarray(cells).view(np.uint8).reshape(blocks, BLOCK, WORLD_SIZE)
    per_row = rows[:, 0].copy()
    for i in range(1, BLOCK):
        per_row += rows[:, i]
    cols = per_row.reshape(blocks, blocks, BLOCK)
    out = cols[:, :, 0].copy()
    for i in range(1, BLOCK):
        out += cols[:, :, i]
    return out


def _closeness(steps: np.ndarray) -> np.ndarray:
    return np.where(steps <= HORIZON, 255 - 8 * np.minimum(steps, HORIZON), 0).astype(np.uint8)


def _mark(channel: np.ndarray, dx: int, dz: int, value: int) -> None:
    if abs(dx) <= RADIUS and abs(dz) <= RADIUS:
        channel[dz + RADIUS, dx + RADIUS] = max(int(channel[dz + RADIUS, dx + RADIUS]), value)


def _clip(value: float) -> float:
    return max(-1.0, min(1.0, float(value)))


def encode(observation: dict, state: FeatureState) -> tuple[np.ndarray, np.ndarray]:
    """The model input of one observation: ``(maps uint8 MAP_SHAPE, vector float32 (VECTOR_SIZE,))``.

    Updates ``state`` (the planner's memory and decision): call it once per observation, in order.

    :param observation: ``env_obs["observation"]`` (docs/gorge/rules.md).
    :param state: the episode's :class:`FeatureState`.
    """
    _check(observation)
    if not isinstance(state, FeatureState):
        raise ValueError(f"state = {state!r} is not a FeatureState; create one per episode with FeatureState()")
    view = np.asarray(observation["map_info"])
    if view.shape != (21, 21):
        raise ValueError(f"map_info has shape {view.shape}; the platform sends 21 x 21 rows")
    agent = state.planner
    if int(observation["env_info"]["step_no"]) < agent.memory.step:
        state.reset()
    choice = agent.act(observation)
    return _maps(agent), _vector(agent, observation, choice)


def _maps(agent: ObservationPlanner) -> np.ndarray:
    """The map channels of the module docstring."""
    mem, terrain, planner = agent.memory, agent.terrain, agent.planner
    hx, hz = mem.hero
    maps = np.zeros(MAP_SHAPE, dtype=np.uint8)
    walkable = _window(mem.walkable, hx, hz)  # False outside the map
    maps[0][walkable & _window(mem.seen, hx, hz)] = 255
    maps[1][~walkable] = 255
    hero_steps = terrain.hero_windows([mem.hero], HORIZON)[0].astype(np.int32)  # (33, 33), 255 where not reached
    threat = Planner.threat_windows(mem, planner.fields, np.array([hx]), np.array([hz]))[0]
    maps[2] = np.where((hero_steps <= planner.horizon) & (hero_steps < threat), 255, 0).astype(np.uint8)
    maps[3] = _closeness(hero_steps)
    maps[4] = _closeness(threat)
    for m in mem.monsters:
        _mark(maps[5], m.cell[0] - hx, m.cell[1] - hz, 255 if m.age == 0 else max(64, 255 - 8 * m.age))
    if not mem.second_decided and mem.spawn_cell is not None:
        _mark(maps[5], mem.spawn_cell[0] - hx, mem.spawn_cell[1] - hz, 96)
    for cell in mem.treasures.values():
        _mark(maps[6], cell[0] - hx, cell[1] - hz, 255)
    for oid, cell in mem.buffs.items():
        _mark(maps[6], cell[0] - hx, cell[1] - hz, 192 if mem.buff_ready.get(oid, 0) <= mem.step else 96)
    if planner.target is not None:
        _mark(maps[6], planner.target[0] - hx, planner.target[1] - hz, 160)
    blocks = WORLD_SIZE // BLOCK
    maps[7, :blocks, :blocks] = _SEEN_SHARE[_block_counts(mem.seen)]
    whole = np.zeros((blocks, blocks), dtype=np.uint8)
    marks = [((hx, hz), 60)] + [(m.cell, 120) for m in mem.monsters] + [(c, 170) for c in mem.buffs.values()] + [
        (c, 255) for c in mem.treasures.values()]
    for (x, z), value in marks:
        if 0 <= x < WORLD_SIZE and 0 <= z < WORLD_SIZE:
            whole[z // BLOCK, x // BLOCK] = max(int(whole[z // BLOCK, x // BLOCK]), value)
    maps[8, :blocks, :blocks] = whole
    return maps


def _vector(agent: ObservationPlanner, observation: dict, choice: int) -> np.ndarray:
    """The vector of the module docstring."""
    mem, planner = agent.memory, agent.planner
    hx, hz = mem.hero
    spawn = mem.spawn_cell if not mem.second_decided else None
    goal = planner.goal_field if planner.target is not None else None
    vec = np.zeros(VECTOR_SIZE, dtype=np.float32)
    by_cell = {o.cell: o for o in planner.outcomes}
    legal = agent.legal
    for a in range(N_ACTIONS):
        base = PER_ACTION * a
        vec[base] = float(legal[a])
        land = planner.landings[a]
        o = by_cell.get(land) if land is not None else None
        if o is not None:
            vec[base + 1:base + 9] = (float(o.caught), min(o.margin, 40) / 40, min(o.room, 300) / 300,
                                      min(o.exits, 400) / 400, min(o.lasting, 200) / 200, _clip(o.progress / 4),
                                      _clip(o.pickup / 400), _clip(o.value / 500))
    if 0 <= choice < N_ACTIONS:
        vec[PER_ACTION * choice + 9] = 1.0

    info = observation["env_info"]
    hero = observation["frame_state"]["heroes"]
    vec[160], vec[161] = hx / (WORLD_SIZE - 1), hz / (WORLD_SIZE - 1)
    vec[162] = float(mem.flash_ready)
    vec[163] = int(hero["flash_cooldown"]) / max(mem.talent_cooldown, 1)
    vec[164], vec[165] = mem.buff_remaining / 50.0, float(mem.has_buff)
    step, max_step = mem.step, max(mem.max_step, 1)
    vec[166], vec[167] = step / max_step, max_step / 2000.0
    interval = mem.monster_interval
    vec[168] = float(len(mem.monsters) >= 2)
    vec[169] = 1.0 if interval < 0 else max(interval - step, 0) / max_step
    vec[170] = float(interval < 0)
    vec[171] = float(mem.boosted)
    vec[172] = max(mem.monster_speedup - step, 0) / max_step
    vec[173] = mem.treasures_collected / max(mem.treasure_total, 1)
    vec[174] = mem.treasures_left / 10.0
    vec[175] = int(info["flash_count"]) / 10.0
    vec[176] = mem.buff_pickups / 10.0
    near = mem.hero_field()
    for i, m in enumerate(mem.monsters[:N_MONSTERS]):
        base = 177 + 7 * i
        mx, mz = m.cell
        d = int(near[mz, mx]) if 0 <= mx < WORLD_SIZE and 0 <= mz < WORLD_SIZE else UNREACHABLE
        vec[base:base + 7] = (1.0, float(m.age == 0), min(m.age, 50) / 50, _clip((mx - hx) / 32),
                              _clip((mz - hz) / 32), m.speed / 4, min(d, 64) / 64)
    if spawn is not None:
        vec[191:195] = (1.0, _clip((spawn[0] - hx) / 32), _clip((spawn[1] - hz) / 32),
                        min(max(interval - step, 0), 100) / 100)
    if planner.target is not None and goal is not None:
        tx, tz = planner.target
        d = int(goal[hz, hx])
        vec[195:202] = (1.0, _clip((tx - hx) / 64), _clip((tz - hz) / 64), min(d, 64) / 64,
                        float(planner.target_kind == "treasure"), float(planner.target_kind == "buff"),
                        float(planner.target_kind == "explore"))
    np.clip(vec, -1.0, 1.0, out=vec)
    return vec

