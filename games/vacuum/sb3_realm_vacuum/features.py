"""robot_vacuum: the platform's observation -> model input, and the action mask. numpy only.

This module is copied verbatim into code packages together with :data:`COMPANION_FILES` (the same folder), so it
imports nothing but them. Training and the package run the same :func:`encode` on the same input:
``env_obs["observation"]`` (docs/vacuum/rules.md, the observation protocol). Cells are ``(x, z)``, x to the east and z
to the south; grids are indexed ``[z, x]``.

The caller keeps one :class:`FeatureState` per episode (``FeatureState()`` or ``state.reset()`` at its start) and
passes it to every :func:`encode` call of that episode, once per observation. The state holds the observation-only
planner (a :class:`~.memory.Memory` and a :class:`~.planner.CoveragePlanner`, as the ``planner`` expert plays): each
call updates the memory and lets the planner choose, and the features hand its choice to the network.

Model input: ``{"maps": uint8 (8, 33, 33), "vector": float32 (VECTOR_SIZE,)}``.

Map channels (0..4: the 33 x 33 square around the robot, the robot at ``[16, 16]``; 5..7: the whole 128 x 128 map in
4 x 4-cell blocks, in the top-left 32 x 32 of the square):

==  ==========================================================================================
0   road seen (255), else 0
1   obstacle seen, or off the map (255), else 0
2   dirt believed (255): seen dirty and not seen cleaned since
3   official robots: 255 on one seen now, 160 within 2 cells of it (entering loses), ``max(40, 120 - 2 * age)`` on
    one's last cell seen ``age`` steps ago
4   chargers' footprints (255)
5   whole map: the share of each block's cells believed dirty, times 255
6   whole map: the share of each block's cells never seen, times 255
7   whole map: 255 the robot's block, 170 a charger's, 85 the blocks where an official robot was last seen
==  ==========================================================================================

Vector layout (values in [-1, 1]):

==========  ==============================================================================================
index       meaning
==========  ==============================================================================================
0..39       per action a (8 x 5, ``5 * a + k``): k = 0 the move succeeds (:func:`action_mask`), 1 its cell is dirty,
            2 its cell is within 2 of an official robot seen, 3 the charger distance there / battery_max, 4 the
            planner's choice (1 on one action)
40..43      battery / battery_max, charger distance here / battery_max, (battery - charger distance) /
            battery_max, on a charger
44..47      step / max_step, max_step / 2000, battery_max / 999, cells cleaned / 1000
48..50      the nearest official robot seen now: present, dx / 10, dz / 10
51          share of the map's cells seen
==========  ==============================================================================================
"""

from __future__ import annotations

import numpy as np

from .memory import Memory
from .planner import OBSERVED, UNREACHABLE, CoveragePlanner
from .rules import DIRECTIONS, N_ACTIONS, SIZE, VIEW_RADIUS

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

FEATURE_VERSION = "1"
#: the modules a code package carries beside this one (the same folder)
COMPANION_FILES = ("memory.py", "planner.py", "rules.py")
WINDOW = 33
HALF = WINDOW // 2
BLOCK = 4
BLOCKS = SIZE // BLOCK  # 32
MAP_SHAPE = (8, WINDOW, WINDOW)
#: the map channels that hold only 0 and 255 (imitation's datasets store them as bits)
BINARY_LAYERS = (0, 1, 2, 4)
PER_ACTION = 5
VECTOR_SIZE = PER_ACTION * N_ACTIONS + 12
DANGER = 2
_PAD = HALF


def observed_planner() -> CoveragePlanner:
    """The planner the features run: the ``planner`` expert's (its settings :data:`~.planner.OBSERVED`)."""
    return CoveragePlanner(**OBSERVED)


class FeatureState:
    """What :func:`encode` keeps across the steps of one episode: the memory of the observations, the planner and
    its last choice."""

    def __init__(self, planner: CoveragePlanner | None = None) -> None:
        self.memory = Memory()
        self.planner = planner if planner is not None else observed_planner()
        self.choice = -1
        self._padded = np.zeros((3, SIZE + 2 * _PAD, SIZE + 2 * _PAD), dtype=np.uint8)

    def reset(self) -> None:
        """Forget the episode."""
        self.memory.reset()
        self.planner.reset()
        self.choice = -1


def action_mask(observation: dict, state: FeatureState | None = None) -> np.ndarray:
    """(8,) bool: the moves that move the robot, read from the view (it shows every neighbour): the target is road
    and a diagonal move has an open side."""
    del state
    view = observation["map_info"]
    c = VIEW_RADIUS
    out = np.zeros(N_ACTIONS, dtype=bool)
    for a, (dx, dz) in enumerate(DIRECTIONS):
        if view[c + dz][c + dx] > 0 and (dx == 0 or dz == 0 or view[c][c + dx] > 0 or view[c + dz][c] > 0):
            out[a] = True
    return out


def _blocks(mask: np.ndarray) -> np.ndarray:
    """(32, 32) uint8: the share of each 4 x 4 block's cells in ``mask``, times 255."""
    counts = mask.reshape(BLOCKS, BLOCK, BLOCKS, BLOCK).sum(axis=(1, 3), dtype=np.int32)
    return (counts * 255 // (BLOCK * BLOCK)).astype(np.uint8)


def encode(observation: dict, state: FeatureState) -> tuple[np.ndarray, np.ndarray]:
    """The model input ``(maps, vector)`` of ``observation`` (``env_obs["observation"]``), after ``state`` has taken
    it in (call once per observation, in order)."""
    memory, planner = state.memory, state.planner
    memory.update(observation)
    state.choice = choice = planner.act(memory.belief())
    x, z = memory.x, memory.z
    legal = action_mask(observation)
    seen_now = list(memory.npcs.values())

    maps = np.zeros(MAP_SHAPE, dtype=np.uint8)
    padded = state._padded
    inner = (slice(_PAD, _PAD + SIZE), slice(_PAD, _PAD + SIZE))
    padded[0][inner] = memory.walkable
    padded[1][...] = 1  # off the map
    padded[1][inner] = memory.seen & ~memory.walkable
    padded[2][inner] = memory.dirty
    zs, xs = slice(z, z + WINDOW), slice(x, x + WINDOW)  # the window around (x, z) in padded coordinates
    np.multiply(padded[:3, zs, xs], 255, out=maps[:3])
    npc_layer = maps[3]
    for idx, ((lx, lz), when) in memory.npc_last.items():
        if idx in memory.npcs:
            continue
        dx, dz = lx - x, lz - z
        if abs(dx) <= HALF and abs(dz) <= HALF:
            npc_layer[dz + HALF, dx + HALF] = max(npc_layer[dz + HALF, dx + HALF],
                                                   max(40, 120 - 2 * (memory.step - when)))
    for nx, nz in seen_now:
        dx, dz = nx - x, nz - z
        lo_z, hi_z = max(0, dz + HALF - DANGER), min(WINDOW, dz + HALF + DANGER + 1)
        lo_x, hi_x = max(0, dx + HALF - DANGER), min(WINDOW, dx + HALF + DANGER + 1)
        if lo_z < hi_z and lo_x < hi_x:
            area = npc_layer[lo_z:hi_z, lo_x:hi_x]
            np.maximum(area, 160, out=area)
        npc_layer[dz + HALF, dx + HALF] = 255
    for cx, cz in memory.chargers:
        dx, dz = cx - x, cz - z
        lo_z, hi_z = max(0, dz + HALF - 1), min(WINDOW, dz + HALF + 2)
        lo_x, hi_x = max(0, dx + HALF - 1), min(WINDOW, dx + HALF + 2)
        if lo_z < hi_z and lo_x < hi_x:
            maps[4, lo_z:hi_z, lo_x:hi_x] = 255
    maps[5, :BLOCKS, :BLOCKS] = _blocks(memory.dirty)
    maps[6, :BLOCKS, :BLOCKS] = _blocks(memory.unknown)
    marks = maps[7]
    for (lx, lz), _when in memory.npc_last.values():
        marks[lz // BLOCK, lx // BLOCK] = 85
    for cx, cz in memory.chargers:
        marks[cz // BLOCK, cx // BLOCK] = 170
    marks[z // BLOCK, x // BLOCK] = 255

    vector = np.zeros(VECTOR_SIZE, dtype=np.float32)
    full = float(max(1, memory.battery_max))
    here = planner.charger_distance(x, z)
    for a, (dx, dz) in enumerate(DIRECTIONS):
        tx, tz = x + dx, z + dz
        k = PER_ACTION * a
        vector[k] = float(legal[a])
        if 0 <= tx < SIZE and 0 <= tz < SIZE:
            vector[k + 1] = float(memory.dirty[tz, tx])
            vector[k + 2] = float(any(max(abs(tx - nx), abs(tz - nz)) <= DANGER for nx, nz in seen_now))
            there = planner.charger_distance(tx, tz)
            vector[k + 3] = 1.0 if there >= UNREACHABLE else min(1.0, there / full)
    if 0 <= choice < N_ACTIONS:
        vector[PER_ACTION * choice + 4] = 1.0
    g = PER_ACTION * N_ACTIONS
    near = 1.0 if here >= UNREACHABLE else min(1.0, here / full)
    vector[g] = min(1.0, memory.battery / full)
    vector[g + 1] = near
    vector[g + 2] = float(np.clip((memory.battery - (here if here < UNREACHABLE else memory.battery_max)) / full,
                                  -1.0, 1.0))
    vector[g + 3] = float(any(abs(x - cx) <= 1 and abs(z - cz) <= 1 for cx, cz in memory.chargers))
    vector[g + 4] = min(1.0, memory.step / float(max(1, memory.max_step)))
    vector[g + 5] = min(1.0, memory.max_step / 2000.0)
    vector[g + 6] = min(1.0, memory.battery_max / 999.0)
    vector[g + 7] = min(1.0, memory.clean_score / 1000.0)
    if seen_now:
        nx, nz = min(seen_now, key=lambda c: max(abs(c[0] - x), abs(c[1] - z)))
        vector[g + 8] = 1.0
        vector[g + 9] = float(np.clip((nx - x) / 10.0, -1.0, 1.0))
        vector[g + 10] = float(np.clip((nz - z) / 10.0, -1.0, 1.0))
    vector[g + 11] = float(memory.seen.mean())
    return maps, vector
