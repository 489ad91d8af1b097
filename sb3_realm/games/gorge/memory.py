"""What an agent of Gorge Chase can know from its observations alone: the terrain seen (cells never seen are taken as
road), the treasures and buffs seen, the monsters (tracked out of view by their movement rule), monster 2's spawn cell
and the episode's timers; and the searches on that believed terrain. numpy and the standard library only.

This module is copied verbatim into competition submissions (with :mod:`.planner` and :mod:`.features`, in one
folder), so it imports nothing from sb3_realm. :meth:`Memory.update` reads one ``env_obs["observation"]`` dict
(docs/gorge/rules.md), the same input as the Agent's ``exploit()``, once per step in order.

Cells are ``(x, z)`` with x growing to the east and z to the south; grids are indexed ``[z, x]``.

Searches work on bitsets held in Python integers (one bit a cell, rows padded by one bit so that a shift by one cell
never wraps into the next row): one BFS level is a handful of shifts and masks over the whole grid, and distances are
kept in bit planes (bit ``k`` of each cell's level), unpacked once at the end.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Tuple  # noqa: UP035

import numpy as np

__all__ = [
    "FAR",
    "RULES",
    "UNREACHABLE",
    "WORLD_SIZE",
    "Memory",
    "Tracked",
    "distance_field",
    "rule_branches",
    "sliding_windows",
    "window_distances",
]

# typing's forms: module-level aliases are evaluated at import, also on the platform's older Pythons
Cell = Tuple[int, int]  # noqa: UP006

WORLD_SIZE = 128  # the maps are 128 x 128 cells
VIEW_RANGE = 10  # map_info is the 21 x 21 square of Chebyshev radius 10 around the hero
UNREACHABLE = 1 << 20  # distance of a cell that cannot be reached
FAR = 255  # window distance of a cell not reached inside its window
HERO_REACH = 128  # the hero's field is searched to its goals, at most this many steps (farther: a lower bound)
# direction a as (dx, dz): E, NE, N, NW, W, SW, S, SE (z grows to the south)
DIRECTIONS = ((1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1))
STEPS_4 = ((1, 0), (-1, 0), (0, 1), (0, -1))  # a monster's sub-steps, in the engine's order
PREV_PENALTY = 25  # monster move scores in hundredths of a cell: stepping back onto the previous cell
AXIS_PENALTY = 5  # ... moving on the same axis as the previous move
SUB_TYPE_TREASURE = 1
SUB_TYPE_BUFF = 2
ORGAN_PRESENT = 1
IN_VIEW = 1
#: the engine values an observation does not carry (docs/gorge/rules.md): cells per move while buffed, the buff's
#: steps, monster 2's spawn delay (it appears where the hero stood this many steps before ``monster_interval``), the
#: monsters of a game, the flash's reach along an axis and along a diagonal
RULES = {"buff_extra_speed": 1, "buff_duration": 50, "spawn_delay": 10, "monster_count": 2, "flash_distance": 10,
         "flash_distance_diagonal": 8}


def sliding_windows(array: np.ndarray, size: int) -> np.ndarray:
    """Every ``(size, size)`` window of the 2-D ``array``: a read-only view of shape ``(H - size + 1, W - size + 1,
    size, size)``, ``[z, x]`` the window whose top-left cell is ``array[z, x]``. The same view as numpy's
    ``sliding_window_view(array, (size, size))``, which numpy 1.19 lacks: built with ``as_strided``, which it has."""
    h, w = array.shape
    rows, cols = array.strides
    return np.lib.stride_tricks.as_strided(array, shape=(h - size + 1, w - size + 1, size, size),
                                           strides=(rows, cols, rows, cols), writeable=False)


# ------------------------------------------------------------------------------------------------------ bitsets
def _bits(mask: np.ndarray) -> int:
    """A bool array as an integer, element ``i`` of ``mask.ravel()`` at bit ``i``."""
    return int.from_bytes(np.packbits(mask.ravel(), bitorder="little").tobytes(), "little")


def _unbits(value: int, count: int) -> np.ndarray:
    """The first ``count`` bits of ``value`` as a bool array."""
    data = value.to_bytes((count + 7) // 8, "little")
    return np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little", count=count).view(bool)


def _shift(value: int, by: int) -> int:
    return value << by if by >= 0 else value >> -by


# the trailing zero bits of level + 1: after that level, the levels of bit ``k`` < that many (k >= 1) end a run of
# consecutive levels, and a run of bit ``k`` = that many starts
_RUNS = [((level + 1) & -(level + 1)).bit_length() - 1 for level in range(1 << 12)]


def _search(road: int, start: int, shifts: list[tuple[int, int]], levels: int, target: int = 0,
            extra: int = 0, unvisited: int = -1, level: int = 0) -> tuple[int, list[int], bool, int]:
    """BFS over bitset ``road`` from the cells of ``start``: each level moves the front by every ``(shift, gate)``
    (``gate``: the cells a move may start from, -1 for all), up to level ``levels``, or ``extra`` levels past the
    one that has reached every cell of ``target`` (when given). Returns (cells reached, bit planes of their levels,
    whether the search stopped early with cells left to reach, the last level).

    A search resumed at ``level`` (cells of ``start`` at that level, ``unvisited`` the road cells at no level up to
    it; ``target`` only the cells of target not reached yet) continues as the search from
    the first level would; its planes hold the levels above ``level`` (``level`` less)."""
    # the graph is undirected: the cells new at a level are the neighbours of the last front not reached before
    front = start
    if unvisited == -1:
        unvisited = road & ~start
    # plane k holds the cells whose level has bit k: level by level for bit 0; for bit k >= 1, each run of 2 ** k
    # levels at once, the road cells visited during it (the unvisited cells before it, less those after)
    planes = [0] * 13
    runs = [0] * 13  # runs[k]: the unvisited cells before the current run of bit k
    base = level
    stop = min(levels, base + 4095)
    plain = all(gate == -1 for _, gate in shifts)
    ups = [by for by, _ in shifts if by > 0]
    downs = [-by for by, _ in shifts if by < 0]
    left = target & ~start  # cells of target not reached yet (while ``target``)
    tails = _RUNS
    cut = True
    while level < stop:
        new = 0
        if plain:
            for by in ups:
                new |= front << by
            for by in downs:
                new |= front >> by
        else:
            for by, gate in shifts:
                shifted = front & gate if gate != -1 else front
                new |= shifted << by if by >= 0 else shifted >> -by
        new &= unvisited
        if not new:
            cut = False
            break
        unvisited ^= new
        level += 1
        front = new
        tail = tails[level - base]
        if tail:  # an odd level
            planes[0] |= new
            for k in range(1, tail):  # the runs that end with this level
                planes[k] |= runs[k] ^ unvisited
            runs[tail] = unvisited  # the run that starts with the next level
        if target:
            if left:
                left ^= left & new
            if not left:
                stop = min(stop, level + extra)
                target = 0
    reached = road & ~unvisited
    return reached, _close_runs(planes, runs, unvisited, level - base), cut, level


def _close_runs(planes: list[int], runs: list[int], unvisited: int, last: int) -> list[int]:
    """The planes of a search that ended at relative level ``last``, with the runs still open added, less the planes
    of bits no level has."""
    for k in range(_RUNS[last] + 1, 13):
        if last >> k & 1:
            planes[k] |= runs[k] ^ unvisited
    while planes and not planes[-1]:
        planes.pop()
    return planes


def _levels(reached: int, planes: list[int], count: int, missing: int, dtype) -> np.ndarray:
    """The level of every bit from its planes; ``missing`` where not reached."""
    size = (count + 7) // 8
    data = b"".join(plane.to_bytes(size, "little") for plane in planes)
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8).reshape(len(planes), size), axis=1,
                         bitorder="little", count=count)
    out = (_WEIGHTS[:len(planes)] @ bits).astype(dtype)  # exact: levels stay far below 2 ** 24
    np.putmask(out, _unbits(((1 << count) - 1) ^ reached, count), missing)
    return out


_WEIGHTS = (1 << np.arange(13)).astype(np.float32)  # the value of each bit plane


def _road(walkable: np.ndarray) -> int:
    """The bitset of ``walkable``'s cells, rows padded by one bit."""
    h, w = walkable.shape
    padded = np.zeros((h, w + 1), dtype=bool)
    padded[:, :w] = walkable
    return _bits(padded)


def _cells(walkable: np.ndarray, cells, p: int) -> int:
    """The bitset of the road cells among ``cells`` (rows of ``p`` bits)."""
    h, w = walkable.shape
    out = 0
    for x, z in cells:
        if 0 <= x < w and 0 <= z < h and walkable[z, x]:
            out |= 1 << (z * p + x)
    return out


def _finish(walkable: np.ndarray, out: np.ndarray, cut: bool, last: int, left: int = -1) -> np.ndarray:
    """``out`` ((H, W + 1) levels) as a field: the road cells not reached (the bitset ``left``, when known) read
    ``last + 1`` when the search was cut."""
    w = walkable.shape[1]
    if cut and left != -1:
        np.putmask(out, _unbits(left, out.size).reshape(out.shape), last + 1)
    out = out[:, :w]
    if cut and left == -1:
        out[(out == UNREACHABLE) & walkable] = last + 1
    return out


def distance_field(walkable: np.ndarray, source: Cell | list[Cell], near: list[Cell] | None = None, extra: int = 0,
                   limit: int = 4095) -> np.ndarray:
    """(H, W) int32 4-connected BFS distances over ``walkable`` from ``source`` (a cell, or a list of cells: the
    distance to the nearest); :data:`UNREACHABLE` on obstacles and on cells of another component. With ``near``
    (cells), the search stops ``extra`` levels past the one that has reached all of them, and the road cells it did
    not reach read one more than its last level (a lower bound); so does every search at ``limit`` levels."""
    h, w = walkable.shape
    p = w + 1
    start = _cells(walkable, [source] if isinstance(source, tuple) else source, p)
    if not start:
        return np.full((h, w), UNREACHABLE, dtype=np.int32)
    target = _cells(walkable, near or (), p)
    road = _road(walkable)
    reached, planes, cut, last = _search(road, start, [(1, -1), (-1, -1), (p, -1), (-p, -1)], limit, target, extra)
    out = _levels(reached, planes, h * p, UNREACHABLE, np.int32).reshape(h, p)
    return _finish(walkable, out, cut, last, road ^ reached)


def resume_field(walkable: np.ndarray, grid: np.ndarray, exact: int, source: Cell, near: list[Cell] | None = None,
                 extra: int = 0, limit: int = 4095) -> np.ndarray:
    """``distance_field(walkable, source, near, extra, limit)``, the same array, from an earlier field ``grid`` of
    ``source`` whose values up to ``exact`` are the distances on ``walkable`` (obstacles found since then lie farther:
    their cells, and every cell whose distance grew, read more than ``exact``): the search resumes at that level."""
    h, w = walkable.shape
    p = w + 1
    known = grid <= exact
    if not (0 <= source[0] < w and 0 <= source[1] < h) or not walkable[source[1], source[0]] or exact < 1 or int(
            grid[source[1], source[0]]) != 0:
        return distance_field(walkable, source, near, extra, limit)
    top = int(grid[known].max())
    level = min(exact, top, limit)
    stop = limit
    targets = [(x, z) for x, z in near or () if 0 <= x < w and 0 <= z < h and walkable[z, x]]
    left = [(x, z) for x, z in targets if int(grid[z, x]) > level]
    if targets and not left:  # every target reached by then: the fresh search stopped extra levels past the last
        stop = min(limit, max(1, max(int(grid[z, x]) for x, z in targets)) + extra)
    out = np.full((h, p), UNREACHABLE, dtype=np.int32)
    if stop <= level:
        mine = grid <= stop
        out[:, :w][mine] = grid[mine]
        return _finish(walkable, out, bool((grid == stop).any()), stop)
    road = _road(walkable)
    visited = np.zeros((h, p), dtype=bool)
    visited[:, :w] = grid <= level
    front = np.zeros((h, p), dtype=bool)
    front[:, :w] = grid == level
    unvisited = road & ~_bits(visited)
    reached, planes, cut, last = _search(road, _bits(front), [(1, -1), (-1, -1), (p, -1), (-p, -1)], stop,
                                         _cells(walkable, left, p), extra, unvisited=unvisited, level=level)
    out = _levels(reached & unvisited, planes, h * p, UNREACHABLE - level, np.int32).reshape(h, p)
    out += level
    mine = visited[:, :w]
    out[:, :w][mine] = grid[mine]
    return _finish(walkable, out, cut, last, road ^ reached)


def window_distances(walkable: np.ndarray, cells: list[Cell], radius: int, diagonal: bool,
                     levels: int = FAR - 1) -> np.ndarray:
    """Distances from each cell of ``cells`` to the cells of its ``(2r+1, 2r+1)`` window over paths that stay inside
    the window: 4-connected steps, or the hero's 8 moves with the corner rule (``diagonal``: a diagonal step needs one
    of the two orthogonal cells between to be road), up to ``levels`` steps. Cells off the map are obstacles. The
    windows are searched together: stacked in one bitset, a padding row and column apart.

    :return: (K, 2r+1, 2r+1) uint8, ``[k, dz + r, dx + r]``; :data:`FAR` where not reached.
    """
    h, w = walkable.shape
    size = 2 * radius + 1
    q = size + 1  # one padding bit a row ...
    rows = size + 1  # ... and one padding row a window
    k = len(cells)
    if not k:
        return np.full((0, size, size), FAR, dtype=np.uint8)
    pad = np.zeros((h + 2 * radius, w + 2 * radius), dtype=bool)
    pad[radius:radius + h, radius:radius + w] = walkable
    xs = np.array([c[0] for c in cells])
    zs = np.array([c[1] for c in cells])
    stack = np.zeros((k, rows, q), dtype=bool)
    stack[:, :size, :size] = sliding_windows(pad, size)[zs, xs]
    road = _bits(stack)
    start = 0
    for i in range(k):
        if stack[i, radius, radius]:
            start |= 1 << (i * rows * q + radius * q + radius)
    shifts = [(dx + dz * q, -1) for dx, dz in STEPS_4]
    if diagonal:
        # a diagonal step from p needs p + (dx, 0) or p + (0, dz) to be road
        shifts += [(dx + dz * q, _shift(road, -dx) | _shift(road, -dz * q)) for dx, dz in DIRECTIONS if dx and dz]
    reached, planes, _, _ = _search(road, start, shifts, levels)
    out = _levels(reached, planes, k * rows * q, FAR, np.uint8).reshape(k, rows, q)
    return np.ascontiguousarray(out[:, :size, :size])


def distance_bucket(dx: int, dz: int) -> int:
    """The observation's ``hero_l2_distance`` of an offset: ``min(5, floor(sqrt(dx^2 + dz^2) / 30))``."""
    return min(5, math.isqrt(dx * dx + dz * dz) // 30)


def relative_direction(dx: int, dz: int) -> int:
    """The observation's ``hero_relative_direction`` of an offset: 0 same cell, 1 E, 2 NE, 3 N, ..., 8 SE."""
    sx, sz = (dx > 0) - (dx < 0), (dz > 0) - (dz < 0)
    return 0 if not (sx or sz) else DIRECTIONS.index((sx, sz)) + 1


# ------------------------------------------------------------------------------------------------------ monsters
@dataclass
class Tracked:
    """A monster as the memory knows it: its cell (seen, or replayed by its rule since it was last seen), the cell
    it came from and the axis of its last sub-step (its rule's tie penalties), its speed, and the steps since it was
    last seen (0: in view now)."""

    cell: Cell
    prev: Cell | None
    axis: str | None
    speed: int
    age: int = 0


def rule_branches(state: tuple[Cell, Cell | None, str | None], speed: int,
                  distance: Callable[[int, int], int | None],
                  taken: set) -> list[tuple[Cell, Cell | None, str | None]]:
    """Every end state ``(cell, prev, axis)`` of a monster's ``speed`` sub-steps from ``state``, one per tie branch
    of its rule: each sub-step goes to the 4-neighbour of least distance to the hero (``distance(x, z)``; None where
    it cannot step) plus the back-step and same-axis penalties; cells in ``taken`` are not entered. A monster with no
    such neighbour stays."""
    states = [state]
    for _ in range(speed):
        nxt = []
        for cell, prev, axis in states:
            best: list[tuple[Cell, Cell | None, str | None]] = []
            best_score = UNREACHABLE
            for dx, dz in STEPS_4:
                n = (cell[0] + dx, cell[1] + dz)
                d = None if n in taken else distance(*n)
                if d is None:
                    continue
                a = "x" if dx else "z"
                s = 100 * d + (PREV_PENALTY if n == prev else 0) + (AXIS_PENALTY if a == axis else 0)
                if s < best_score:
                    best, best_score = [(n, cell, a)], s
                elif s == best_score:
                    best.append((n, cell, a))
            nxt.extend(best or [(cell, prev, axis)])
        states = list(dict.fromkeys(nxt))
    return states


# -------------------------------------------------------------------------------------------------------- memory
class Memory:
    """Everything an agent remembers of one episode, updated from the observation alone (:meth:`update`, once per
    step, in order; a step number lower than the last starts a new episode).

    Attributes after an update: ``step``, ``hero``, ``flash_ready``, ``buff_remaining``, the timers (``max_step``,
    ``monster_interval``, ``monster_speedup``, ``buff_cooldown``, ``talent_cooldown``, ``monster_speed``),
    ``walkable`` (the believed terrain: seen road, and every cell never seen), ``seen``, ``changed`` (the update
    count at which each cell was last found to be an obstacle), ``treasures`` and ``buffs`` (id -> cell of those seen;
    treasures leave when collected), ``buff_ready`` (buff id -> first step it is collectable, as far as known),
    ``history`` (step -> hero cell), ``monsters`` (:class:`Tracked`, spawn order), ``spawn_cell`` (monster 2's, once
    known), ``treasures_left`` (treasures not yet collected, seen or not) and ``rules`` (the engine values of
    :data:`RULES`; a caller that knows others may replace them).
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget the episode."""
        self.rules = dict(RULES)
        self.walkable = np.ones((WORLD_SIZE, WORLD_SIZE), dtype=bool)
        self.seen = np.zeros((WORLD_SIZE, WORLD_SIZE), dtype=bool)
        self.changed = np.zeros((WORLD_SIZE, WORLD_SIZE), dtype=np.int64)
        self.updates = 0
        self.step = -1
        self.hero: Cell = (0, 0)
        self.flash_ready = False
        self.buff_remaining = 0
        self.max_step = 1000
        self.monster_interval = 0
        self.monster_speedup = 0
        self.buff_cooldown = 0
        self.talent_cooldown = 0
        self.monster_speed = 1
        self.treasure_total = 0
        self.treasures_collected = 0
        self.treasures_left = 0
        self.buff_pickups = 0
        self.treasures: dict[int, Cell] = {}
        self.buffs: dict[int, Cell] = {}
        self.buff_ready: dict[int, int] = {}
        self.history: dict[int, Cell] = {}
        self.monsters: list[Tracked] = []
        self.spawn_cell: Cell | None = None
        self.picked_buff: int | None = None
        self._hero_field: tuple[np.ndarray, int] | None = None
        self.wall_log: list[tuple[int, np.ndarray]] = []  # (update, flat indices of the cells found to be obstacles)

    # ----------------------------------------------------------------------------------------------- queries
    @property
    def has_buff(self) -> bool:
        return self.buff_remaining > 0

    @property
    def boosted(self) -> bool:
        """Whether the monsters have sped up."""
        return self.step >= self.monster_speedup

    @property
    def second_decided(self) -> bool:
        """Whether monster 2 exists or will never come."""
        return (len(self.monsters) >= 2 or self.monster_interval < 0 or self.rules["monster_count"] < 2
                or self.step >= self.monster_interval)

    def is_road(self, x: int, z: int) -> bool:
        return 0 <= x < WORLD_SIZE and 0 <= z < WORLD_SIZE and bool(self.walkable[z, x])

    def hero_field(self) -> np.ndarray:
        """(H, W) 4-connected distances from the hero's cell on the believed terrain, computed once per update:
        exact up to a few steps past the farthest monster, treasure and buff remembered, at most ``HERO_REACH``
        steps (farther cells read a lower bound)."""
        got = self._hero_field
        if got is None or got[1] != self.updates:
            near = [m.cell for m in self.monsters] + list(self.treasures.values()) + list(self.buffs.values())
            got = self._hero_field = (distance_field(self.walkable, self.hero, near, 4, HERO_REACH), self.updates)
        return got[0]

    # ------------------------------------------------------------------------------------------------ update
    def update(self, observation: dict, picked_buff: int | None = None,
               monsters: list[Tracked] | None = None) -> None:
        """Take one step's observation (``env_obs["observation"]``). A caller that knows more (the scripted yardstick)
        may name the buff picked up in the last step (``picked_buff``; else it is inferred from ``collected_buff``)
        and give the monsters' true states (``monsters``; else they are tracked)."""
        info = observation["env_info"]
        frame = observation["frame_state"]
        hero = frame["heroes"]
        step = int(info["step_no"])
        if step == self.step:
            return  # the same step again: nothing new
        if step < self.step:
            self.reset()
        first = self.step < 0
        before = self.hero
        self.step = step
        self.updates += 1
        self.hero = (int(hero["pos"]["x"]), int(hero["pos"]["z"]))
        self.flash_ready = bool(all(observation["legal_action"][8:16]))
        self.buff_remaining = int(hero["buff_remaining_time"])
        self.max_step = int(info["max_step"])
        self.monster_interval = int(info["monster_interval"])
        self.monster_speedup = int(info["monster_speed_boost_step"])
        self.buff_cooldown = int(info["buff_refresh_time"])
        self.talent_cooldown = int(info["flash_cooldown_max"])
        self.monster_speed = int(info["monster_init_speed"])
        self.treasure_total = int(info["total_treasure"])
        self.treasures_collected = int(info["treasures_collected"])
        remaining = {int(t) for t in info["treasure_id"]}
        self.treasures_left = len(remaining)
        self.history[step] = self.hero
        self._see(observation["map_info"])
        self._items(frame["organs"], remaining, int(info["collected_buff"]), before, picked_buff, first)
        if monsters is None:
            self._track(frame["monsters"], first)
        else:
            self.monsters = list(monsters)
        spawn_step = self.monster_interval - self.rules["spawn_delay"]
        if self.spawn_cell is None and spawn_step in self.history:
            self.spawn_cell = self.history[spawn_step]

    def _see(self, map_info) -> None:
        hx, hz = self.hero
        view = np.asarray(map_info, dtype=bool)  # (21, 21) [z][x] around the hero
        z0, x0 = hz - VIEW_RANGE, hx - VIEW_RANGE
        zs, ze = max(z0, 0), min(z0 + view.shape[0], WORLD_SIZE)
        xs, xe = max(x0, 0), min(x0 + view.shape[1], WORLD_SIZE)
        part = view[zs - z0:ze - z0, xs - x0:xe - x0]
        believed = self.walkable[zs:ze, xs:xe]
        new_walls = believed & ~part
        if new_walls.any():
            believed &= part
            self.changed[zs:ze, xs:xe][new_walls] = self.updates
            wz, wx = np.nonzero(new_walls)
            self.wall_log.append((self.updates, (wz + zs) * WORLD_SIZE + wx + xs))
        self.seen[zs:ze, xs:xe] = True

    def _items(self, organs, remaining: set, pickups: int, before: Cell, picked: int | None, first: bool) -> None:
        for organ in organs:
            oid, cell = int(organ["config_id"]), (int(organ["pos"]["x"]), int(organ["pos"]["z"]))
            if organ["sub_type"] == SUB_TYPE_TREASURE:
                self.treasures[oid] = cell
            elif organ["sub_type"] == SUB_TYPE_BUFF:
                self.buffs[oid] = cell
                if organ["status"] == ORGAN_PRESENT:
                    self.buff_ready[oid] = 0
                elif self.buff_ready.get(oid, 0) <= self.step:
                    self.buff_ready[oid] = self.step + 1  # waiting, respawn time unknown: look again later
        for oid in [t for t in self.treasures if t not in remaining]:
            del self.treasures[oid]
        if picked is None and not first and pickups > self.buff_pickups:
            picked = self._picked_buff(before)
        self.buff_pickups = pickups
        self.picked_buff = picked
        if picked is not None and picked in self.buffs:
            self.buff_ready[picked] = self.step + self.buff_cooldown

    def _picked_buff(self, before: Cell) -> int | None:
        """The buff picked up in the last step: the seen buff on the line from the hero's last cell to its cell (a
        move or a flash), else the nearest seen buff."""
        (x0, z0), (x1, z1) = before, self.hero
        k = max(abs(x1 - x0), abs(z1 - z0))
        line = {(x0 + round(j * (x1 - x0) / k), z0 + round(j * (z1 - z0) / k)) for j in range(1, k + 1)} if k else {
            self.hero}
        on = [oid for oid, cell in self.buffs.items() if cell in line]
        if on:
            return on[0]
        if not self.buffs:
            return None
        return min(self.buffs, key=lambda oid: max(abs(self.buffs[oid][0] - x1), abs(self.buffs[oid][1] - z1)))

    def _track(self, monsters, first: bool) -> None:
        """Each monster: its cell when in view; out of view, its last known state moved by its rule toward the hero
        (the tie branch that agrees with the observation's distance bucket and direction, else the first)."""
        boosted_before = self.step - 1 >= self.monster_speedup
        hx, hz = self.hero
        out: list[Tracked] = []
        taken = {m.cell for m in self.monsters}
        for i, seen in enumerate(monsters):
            in_view = int(seen.get("is_in_view", IN_VIEW)) == IN_VIEW
            cell = (int(seen["pos"]["x"]), int(seen["pos"]["z"]))
            speed = int(seen["speed"]) if in_view else self.monster_speed + (1 if self.boosted else 0)
            if i >= len(self.monsters) or first:  # new this step: it has not moved yet
                start = cell if in_view else self.spawn_cell
                if start is None:  # out of view, spawn cell unknown: take the hero's cell spawn_delay steps ago
                    start = self.history.get(self.step - self.rules["spawn_delay"], self.hero)
                out.append(Tracked(start, None, None, speed, 0 if in_view else 1))
                taken.add(start)
                continue
            old = self.monsters[i]
            moved_speed = self.monster_speed + (1 if boosted_before else 0)
            taken.discard(old.cell)
            field = self.hero_field()

            def distance(x: int, z: int, field: np.ndarray = field) -> int | None:
                inside = 0 <= x < WORLD_SIZE and 0 <= z < WORLD_SIZE and field[z, x] < UNREACHABLE
                return int(field[z, x]) if inside else None

            branches = rule_branches((old.cell, old.prev, old.axis), moved_speed, distance, taken)
            if in_view:
                match = [b for b in branches if b[0] == cell]
                prev, axis = (match[0][1], match[0][2]) if match else (None, None)
                new = Tracked(cell, prev, axis, speed, 0)
            else:
                bucket, direction = int(seen["hero_l2_distance"]), int(seen["hero_relative_direction"])
                agree = [b for b in branches if distance_bucket(b[0][0] - hx, b[0][1] - hz) == bucket
                         and relative_direction(b[0][0] - hx, b[0][1] - hz) == direction]
                c, prev, axis = (agree or branches)[0]
                new = Tracked(c, prev, axis, speed, old.age + 1)
            taken.add(new.cell)
            out.append(new)
        self.monsters = out
