"""Gorge Chase: the platform's observation -> model input, and the action mask. numpy only, self-contained.

This module is copied verbatim into competition submissions, so it imports nothing from sb3_realm. Training and the
submission run the same :func:`encode` on the same input: ``env_obs["observation"]`` (docs/gorge/rules.md).
Cells are ``(x, z)`` with x growing to the east and z to the south; ``map_info`` is indexed ``[z][x]`` with the hero at
``[10][10]``.

The caller keeps one :class:`FeatureState` per episode (``FeatureState()`` or ``state.reset()`` at the start of an
episode) and passes it to every :func:`encode` call of that episode, once per observation.

Model input: ``{"maps": uint8 (7, 21, 21), "vector": float32 (VECTOR_SIZE,)}``.

Map channels (the view is the 21 x 21 square around the hero; the last two are the whole 128 x 128 map in 7 x 7-cell
blocks, 21 x 21 blocks covering 147 x 147 cells):

==  ==========================================================================================
0   road in view (255 road, 0 obstacle or outside the map)
1   monsters in view (255 on a monster's cell)
2   treasures in view (255)
3   buffs in view (255 collectable, 127 waiting to respawn)
4   visits in view from the memory (``min(255, 51 * visits)``)
5   whole map, explored: the fraction of each block's cells seen so far, times 255
6   whole map: 255 on a block holding a remembered treasure (seen, not yet collected), else 127 on the hero's block
==  ==========================================================================================

Vector layout (all values in [-1, 1]):

==========  ==============================================================================================
index       meaning
==========  ==============================================================================================
0, 1        hero x / 127, z / 127
2..29       2 monster slots x 14 (spawn order): exists, in view, dx / 10, dz / 10 (0 out of view), distance bucket
            / 5, direction one-hot (8: E, NE, N, NW, W, SW, S, SE; all 0 on the hero's cell or when absent),
            speed / 4 (0 out of view)
30..38      3 nearest treasures in view (Chebyshev): present, dx / 10, dz / 10
39..41      nearest remembered treasure: present, dx / 128, dz / 128
42..49      2 nearest buffs in view: present, dx / 10, dz / 10, collectable (1) or waiting (0)
50..53      flash ready (legal flash), flash cooldown / flash_cooldown_max, buff remaining / 50, buffed (0/1)
54, 55      step / max_step, max_step / 2000
56..58      monster 2: spawned (0/1), steps until its spawn / max_step (0 once due, 1 if never), never spawns (0/1)
59, 60      speed-up: happened (0/1), steps until it / max_step (0 once due)
61..63      treasures collected / total, treasures remaining / 10, flashes used / 10
64..71      per direction: a move's first cell is open (corner rule included)
72..79      per direction: a flash's landing distance / 10 (0: no landing cell, an in-place flash)
==========  ==============================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FEATURE_VERSION",
    "MAP_SHAPE",
    "BINARY_LAYERS",
    "VECTOR_SIZE",
    "N_ACTIONS",
    "FeatureState",
    "encode",
    "action_mask",
]

FEATURE_VERSION = "1"
N_ACTIONS = 16
VIEW_RANGE = 10
VIEW_SIZE = 2 * VIEW_RANGE + 1
WORLD_SIZE = 128  # the maps are 128 x 128 cells
BLOCK = 7  # cells per block side of the whole-map channels
N_CHANNELS = 7
MAP_SHAPE = (N_CHANNELS, VIEW_SIZE, VIEW_SIZE)
BINARY_LAYERS = (0, 1, 2)  # map channels that hold only 0 or 255: road, monsters, treasures in view
N_MONSTERS = 2
PER_MONSTER = 14
N_TREASURES_NEAR = 3
N_BUFFS_NEAR = 2
VECTOR_SIZE = 80

SUB_TYPE_TREASURE = 1
SUB_TYPE_BUFF = 2
BUFF_NORM = 50.0
STEP_NORM = 2000.0
TREASURE_NORM = 10.0
FLASH_COUNT_NORM = 10.0
SPEED_NORM = 4.0
BUCKET_NORM = 5.0
# direction a as (dx, dz): E, NE, N, NW, W, SW, S, SE
DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1))
FLASH_REACH = (10, 8, 10, 8, 10, 8, 10, 8)  # straight 10 cells, diagonal 8
_DIR_ONEHOT = np.eye(9, dtype=np.float32)[:, 1:]  # (9, 8): code 0 (same cell) is all zeros


@dataclass
class FeatureState:
    """What :func:`encode` remembers across the steps of one episode; picklable.

    :param visits: (128, 128) uint16 visits of the hero per cell, indexed ``[z, x]``.
    :param seen: (128, 128) bool, cells that were in view at some step.
    :param treasures: config_id -> cell of every treasure seen and not yet collected.
    """

    visits: np.ndarray = field(default_factory=lambda: np.zeros((WORLD_SIZE, WORLD_SIZE), dtype=np.uint16))
    seen: np.ndarray = field(default_factory=lambda: np.zeros((WORLD_SIZE, WORLD_SIZE), dtype=bool))
    treasures: dict[int, tuple[int, int]] = field(default_factory=dict)

    def reset(self) -> None:
        """Forget everything (call at the start of an episode)."""
        self.visits[:] = 0
        self.seen[:] = False
        self.treasures.clear()


def _cell(pos: dict) -> tuple[int, int]:
    return int(pos["x"]), int(pos["z"])


def _check(observation: object) -> None:
    if not isinstance(observation, dict) or not {"frame_state", "env_info", "map_info", "legal_action"} <= set(
            observation):
        got = sorted(observation) if isinstance(observation, dict) else type(observation).__name__
        raise ValueError(f"expected env_obs['observation'] (keys step_no, frame_state, env_info, map_info, "
                         f"legal_action), got {got}; pass env_obs['observation'], not the whole env_obs")


def action_mask(observation: dict) -> np.ndarray:
    """(16,) bool legal actions: ``observation["legal_action"]`` as an array."""
    _check(observation)
    mask = np.asarray(observation["legal_action"], dtype=bool)
    if mask.shape != (N_ACTIONS,):
        raise ValueError(f"legal_action has shape {mask.shape}; the platform sends {N_ACTIONS} bools")
    return mask


def _window(full: np.ndarray, x: int, z: int) -> np.ndarray:
    """The (21, 21) square of ``full`` (indexed ``[z, x]``) centred on ``(x, z)``, zero outside."""
    out = np.zeros((VIEW_SIZE, VIEW_SIZE), dtype=full.dtype)
    z0, x0 = z - VIEW_RANGE, x - VIEW_RANGE
    zs, ze = max(z0, 0), min(z0 + VIEW_SIZE, full.shape[0])
    xs, xe = max(x0, 0), min(x0 + VIEW_SIZE, full.shape[1])
    if zs < ze and xs < xe:
        out[zs - z0:ze - z0, xs - x0:xe - x0] = full[zs:ze, xs:xe]
    return out


def _mark(channel: np.ndarray, dx: int, dz: int, value: int) -> None:
    if abs(dx) <= VIEW_RANGE and abs(dz) <= VIEW_RANGE:
        channel[dz + VIEW_RANGE, dx + VIEW_RANGE] = max(int(channel[dz + VIEW_RANGE, dx + VIEW_RANGE]), value)


def _remember(state: FeatureState, hx: int, hz: int, organs: list, remaining: set[int]) -> None:
    """Count the visit, mark the view as seen, and update the remembered treasures."""
    if 0 <= hx < WORLD_SIZE and 0 <= hz < WORLD_SIZE:
        state.visits[hz, hx] = min(int(state.visits[hz, hx]) + 1, 65535)
    z0, x0 = hz - VIEW_RANGE, hx - VIEW_RANGE
    zs, ze = max(z0, 0), min(z0 + VIEW_SIZE, WORLD_SIZE)
    xs, xe = max(x0, 0), min(x0 + VIEW_SIZE, WORLD_SIZE)
    if zs < ze and xs < xe:
        state.seen[zs:ze, xs:xe] = True
    for organ in organs:
        if int(organ["sub_type"]) == SUB_TYPE_TREASURE:
            state.treasures[int(organ["config_id"])] = _cell(organ["pos"])
    for key in [k for k in state.treasures if k not in remaining]:
        del state.treasures[key]


def _coarse(grid: np.ndarray) -> np.ndarray:
    """(128, 128) -> (21, 21) block means (blocks of 7 x 7 cells, the padding counted as 0)."""
    size = BLOCK * VIEW_SIZE
    padded = np.zeros((size, size), dtype=np.float32)
    padded[:grid.shape[0], :grid.shape[1]] = grid
    return padded.reshape(VIEW_SIZE, BLOCK, VIEW_SIZE, BLOCK).mean(axis=(1, 3))  # (21, 21)


def _move_open(road: np.ndarray) -> np.ndarray:
    """(8,) whether a one-cell move from the centre in each direction passes the corner rule."""
    c = VIEW_RANGE
    out = np.zeros(8, dtype=np.float32)
    for a, (dx, dz) in enumerate(DIRECTIONS):
        if road[c + dz, c + dx] and (dx == 0 or dz == 0 or road[c, c + dx] or road[c + dz, c]):
            out[a] = 1.0
    return out


def _flash_reach(road: np.ndarray) -> np.ndarray:
    """(8,) landing distance / 10 of a flash in each direction: the farthest road cell within reach (0 if none)."""
    c = VIEW_RANGE
    out = np.zeros(8, dtype=np.float32)
    for a, (dx, dz) in enumerate(DIRECTIONS):
        for k in range(FLASH_REACH[a], 0, -1):
            if road[c + k * dz, c + k * dx]:
                out[a] = k / 10.0
                break
    return out


def encode(observation: dict, state: FeatureState) -> tuple[np.ndarray, np.ndarray]:
    """The model input of one observation: ``(maps uint8 MAP_SHAPE, vector float32 (VECTOR_SIZE,))``.

    Updates ``state`` (visits, seen cells, remembered treasures): call it once per observation, in order.

    :param observation: ``env_obs["observation"]`` (docs/gorge/rules.md).
    :param state: the episode's :class:`FeatureState`.
    """
    _check(observation)
    if not isinstance(state, FeatureState):
        raise ValueError(f"state = {state!r} is not a FeatureState; create one per episode with FeatureState()")
    frame = observation["frame_state"]
    info = observation["env_info"]
    hero = frame["heroes"]
    hx, hz = _cell(hero["pos"])
    road = np.asarray(observation["map_info"], dtype=np.uint8)
    if road.shape != (VIEW_SIZE, VIEW_SIZE):
        raise ValueError(f"map_info has shape {road.shape}; the platform sends {VIEW_SIZE} x {VIEW_SIZE} rows")
    organs = list(frame["organs"])
    remaining = {int(i) for i in info["treasure_id"]}
    _remember(state, hx, hz, organs, remaining)

    maps = np.zeros(MAP_SHAPE, dtype=np.uint8)
    maps[0] = road * 255
    vec = np.zeros(VECTOR_SIZE, dtype=np.float32)
    vec[0], vec[1] = hx / (WORLD_SIZE - 1), hz / (WORLD_SIZE - 1)

    for i, monster in enumerate(list(frame["monsters"])[:N_MONSTERS]):
        base = 2 + i * PER_MONSTER
        seen = int(monster.get("is_in_view", 1)) == 1 and int(monster["pos"]["x"]) >= 0
        vec[base] = 1.0
        direction = int(monster["hero_relative_direction"])
        vec[base + 5:base + 13] = _DIR_ONEHOT[direction if 0 <= direction <= 8 else 0]
        vec[base + 4] = min(int(monster["hero_l2_distance"]), 5) / BUCKET_NORM
        if seen:
            mx, mz = _cell(monster["pos"])
            dx, dz = mx - hx, mz - hz
            vec[base + 1] = 1.0
            vec[base + 2], vec[base + 3] = dx / VIEW_RANGE, dz / VIEW_RANGE
            vec[base + 13] = int(monster["speed"]) / SPEED_NORM
            _mark(maps[1], dx, dz, 255)

    near_treasures: list[tuple[int, int, int]] = []
    near_buffs: list[tuple[int, int, int, int]] = []
    for organ in organs:
        ox, oz = _cell(organ["pos"])
        dx, dz = ox - hx, oz - hz
        if max(abs(dx), abs(dz)) > VIEW_RANGE:
            continue
        if int(organ["sub_type"]) == SUB_TYPE_TREASURE:
            _mark(maps[2], dx, dz, 255)
            near_treasures.append((max(abs(dx), abs(dz)), dx, dz))
        elif int(organ["sub_type"]) == SUB_TYPE_BUFF:
            collectable = int(organ["status"]) == 1
            _mark(maps[3], dx, dz, 255 if collectable else 127)
            near_buffs.append((max(abs(dx), abs(dz)), dx, dz, int(collectable)))
    for k, (_, dx, dz) in enumerate(sorted(near_treasures)[:N_TREASURES_NEAR]):
        vec[30 + 3 * k:33 + 3 * k] = (1.0, dx / VIEW_RANGE, dz / VIEW_RANGE)
    for k, (_, dx, dz, ready) in enumerate(sorted(near_buffs)[:N_BUFFS_NEAR]):
        vec[42 + 4 * k:46 + 4 * k] = (1.0, dx / VIEW_RANGE, dz / VIEW_RANGE, float(ready))
    if state.treasures:
        tx, tz = min(state.treasures.values(), key=lambda c: (max(abs(c[0] - hx), abs(c[1] - hz)), c))
        vec[39:42] = (1.0, (tx - hx) / WORLD_SIZE, (tz - hz) / WORLD_SIZE)

    maps[4] = np.minimum(_window(state.visits, hx, hz).astype(np.int32) * 51, 255).astype(np.uint8)
    maps[5] = np.round(_coarse(state.seen) * 255).astype(np.uint8)
    remembered = np.zeros((VIEW_SIZE, VIEW_SIZE), dtype=np.uint8)
    if 0 <= hx < WORLD_SIZE and 0 <= hz < WORLD_SIZE:
        remembered[hz // BLOCK, hx // BLOCK] = 127
    for tx, tz in state.treasures.values():
        if 0 <= tx < WORLD_SIZE and 0 <= tz < WORLD_SIZE:
            remembered[tz // BLOCK, tx // BLOCK] = 255
    maps[6] = remembered

    legal = action_mask(observation)
    cooldown_max = max(int(info["flash_cooldown_max"]), 1)
    buff_left = int(hero["buff_remaining_time"])
    vec[50] = float(legal[8:].any())
    vec[51] = int(hero["flash_cooldown"]) / cooldown_max
    vec[52], vec[53] = buff_left / BUFF_NORM, float(buff_left > 0)
    step = int(observation.get("step_no", info["step_no"]))
    max_step = max(int(info["max_step"]), 1)
    vec[54], vec[55] = step / max_step, max_step / STEP_NORM
    interval = int(info["monster_interval"])
    vec[56] = float(len(frame["monsters"]) >= 2)
    vec[57] = 1.0 if interval < 0 else max(interval - step, 0) / max_step
    vec[58] = float(interval < 0)
    speedup = int(info["monster_speed_boost_step"])
    vec[59] = float(step >= speedup)
    vec[60] = max(speedup - step, 0) / max_step
    total = max(int(info["total_treasure"]), 1)
    vec[61] = int(info["treasures_collected"]) / total
    vec[62] = len(remaining) / TREASURE_NORM
    vec[63] = int(info["flash_count"]) / FLASH_COUNT_NORM
    vec[64:72] = _move_open(road)
    vec[72:80] = _flash_reach(road)
    np.clip(vec, -1.0, 1.0, out=vec)
    return maps, vec
