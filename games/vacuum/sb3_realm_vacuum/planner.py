"""The robot_vacuum coverage planner: each step, the move toward the nearest dirty cell that still leaves the battery to
reach a charger, on a *belief* of the map (what is known of the road and the dirt), keeping away from the official
robots. numpy and the standard library only (submission-safe: Python 3.8, numpy 1.19).

One decision code, two ways of knowing: the yardstick (``experts.CoveragePolicy``) hands :class:`CoveragePlanner` the
true map, dirt and official robots; the observation-only policy hands it :meth:`.memory.Memory.belief`, where cells
never seen are *unknown* (taken as road that may be dirty: the frontier to explore).

The rules it plans with (docs/vacuum/rules.md): a step moves one cell in 8 directions, a diagonal needs one of its two
side cells walkable (:func:`.rules.can_move`), costs 1 battery and cleans the cell entered; a charger's 3 x 3
footprint refills the battery; an official robot moves at most one cell a step and a robot within Chebyshev 1 after
its move loses the game.

- *Battery*: the charger field (BFS steps to the nearest charger footprint on the believed road; searched again
  when the belief's terrain changes, at most every ``refresh`` steps unless the battery is short) bounds the search:
  a cell ``d`` steps away is entered only if ``d + charger distance + margin <= battery``. Cells where an official
  robot walks count 2 steps each and a charger inside its area :data:`CONTESTED_DELAY` more (the way may have to
  wait for it). On a belief with unknown cells, a cell with a way to a charger over known road counts that way, one
  without counts ``unknown_factor`` times its steps through the unknown; and until the robot's own cell has a known
  way, it first heads for the nearest charger (cleaning on its way). Without a target the robot heads for the
  nearest charger, cleaning the dirty cells of its shortest path; when the official robots make that way longer than
  the battery, it waits, safe, nearest the charger. When the battery outlasts the episode the bound is dropped.
- *Official robots*: cells within Chebyshev :data:`NEAR` of a known robot are not entered while the robot has
  another move, and those within :data:`DANGER` never (after its move it is still at least 2 away). Without a safe
  move it takes the move (or stays, by a blocked move) least likely to end next to one (:func:`collision_risk`).
- *Coverage*: among the dirty neighbours, the one with the fewest dirty neighbours of its own (the robot follows the
  edge of what is cleaned, as a spiral), a lone dirty cell last; on a fully known map, outward from the chargers
  while the battery is above half and inward below; then the last direction; farther targets are
  taken in the richest neighbourhood, the shortest path through dirty cells where there is a choice. Unknown cells
  are explored when no known dirty cell lies within a few steps more. A path to a distant target is kept until its
  target is cleaned or the belief blocks it.

Searches run on bitsets held in Python integers (one bit a cell, rows of 129 bits so that a shift by one cell never
wraps into the next row): one BFS level over the whole map is a handful of shifts and masks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple  # noqa: UP035

import numpy as np

from .rules import CHARGER_HALF, DIRECTIONS, SIZE

__all__ = [
    "DANGER",
    "OBSERVED",
    "UNREACHABLE",
    "YARDSTICK",
    "Belief",
    "CoveragePlanner",
    "bits_of",
    "blend_levels",
    "charger_levels",
    "collision_risk",
]

Cell = Tuple[int, int]  # noqa: UP006

P = SIZE + 1  # bits a row: one padding bit keeps a shift by one cell inside its row
NBITS = SIZE * P
OFFSETS = tuple(dx + dz * P for dx, dz in DIRECTIONS)  # action a moves a cell's bit index by OFFSETS[a]
DANGER = 2  # cells within this Chebyshev distance of an official robot are never entered
NEAR = 3  # ... and cells within this one are not entered while the robot has a move outside it
UNREACHABLE = 1 << 20  # charger distance of a cell no charger reaches within a full battery
CONTESTED_DELAY = 10  # steps added to the way to a charger inside an official robot's area
UNKNOWN_PATIENCE = 6  # levels searched past the first unknown cell for a known dirty one
MAX_CHOICES = 24  # hits of a BFS level scored to pick the target
#: the yardstick's settings (``experts.CoveragePolicy``: the true map; the margin covers waiting for an official
#: robot in the way)
YARDSTICK = {"margin": 12}
#: the observation-only planner's settings (``experts.ObservedPolicy`` and the features: roads never seen on the way
#: may prove longer)
OBSERVED = {"margin": 14, "margin_share": 0.0, "unknown_factor": 2.0}


@dataclass
class Belief:
    """What the planner knows at a step. Grids are (SIZE, SIZE) bool ``[z, x]``.

    :param walkable: road cells known (the true map for the yardstick).
    :param dirty: cells believed dirty.
    :param unknown: cells never seen (None: the whole map is known); planned through as road, explored as frontier.
    :param x: the robot's column.
    :param z: the robot's row.
    :param battery: the robot's battery (steps it can still pay).
    :param battery_max: a charge refills to this.
    :param chargers: the active chargers' centres ``(x, z)`` (footprints centre +- 1).
    :param npcs: the official robots' known cells now ``(x, z)`` (those in view, or all for the yardstick).
    :param step: steps played.
    :param max_step: the episode ends at this step.
    :param terrain_version: changes whenever ``walkable`` or ``unknown`` changes (the charger field is kept until it
        does).
    :param npc_spawns: the official robots' spawn points known (their 21 x 21 squares), informative only.
    :param npc_areas: ``(x0, x1, z0, z1)`` (inclusive) where each official robot known is likely to walk: a charger
        within reach of one counts :data:`CONTESTED_DELAY` steps farther.
    """

    walkable: np.ndarray
    dirty: np.ndarray
    unknown: Optional[np.ndarray]  # noqa: UP045
    x: int
    z: int
    battery: int
    battery_max: int
    chargers: Sequence[Cell]
    npcs: Sequence[Cell]
    step: int
    max_step: int
    terrain_version: int = 0
    npc_spawns: Sequence[Cell] = ()
    npc_areas: Sequence[Tuple[int, int, int, int]] = ()  # noqa: UP006


# ------------------------------------------------------------------------------------------------------ bitsets
def bits_of(mask: np.ndarray) -> int:
    """A (SIZE, SIZE) bool grid as a bitset: cell ``(x, z)`` at bit ``z * 129 + x``."""
    padded = np.zeros((SIZE, P), dtype=bool)
    padded[:, :SIZE] = mask
    return int.from_bytes(np.packbits(padded.ravel(), bitorder="little").tobytes(), "little")


def _shift(value: int, by: int) -> int:
    return value << by if by >= 0 else value >> -by


def _moves(road: int) -> List[Tuple[int, int]]:  # noqa: UP006
    """``(offset, gate)`` of the 8 moves on ``road``: a move starts from the cells of ``gate`` (-1: any), so that a
    diagonal passes only beside a walkable side cell."""
    out = []
    for dx, dz in DIRECTIONS:
        gate = -1 if not (dx and dz) else _shift(road, -dx) | _shift(road, -dz * P)
        out.append((dx + dz * P, gate))
    return out


def _expand(front: int, moves: List[Tuple[int, int]]) -> int:  # noqa: UP006
    new = 0
    for by, gate in moves:
        f = front if gate == -1 else front & gate
        new |= f << by if by >= 0 else f >> -by
    return new


def charger_levels(road: int, sources: int, limit: int = 4 * SIZE, late: int = 0, delay: int = 0,
                   slow: int = 0) -> List[int]:  # noqa: UP006
    """``within[k]``: the bitset of road cells at most ``k`` robot steps (8 moves, corner rule) from a cell of
    ``sources``, for k = 0 .. the farthest level (at most ``limit``). The cells of ``late`` are sources that count
    ``delay`` steps more (chargers an official robot may be standing by); entering a cell of ``slow`` counts 2 steps
    (where an official robot walks: the way may have to wait or go round it)."""
    moves = _moves(road)
    late = late & road & ~sources
    visited = sources & road
    if delay <= 0:
        visited |= late
        late = 0
    within = [visited]
    front, unvisited = visited, road & ~visited
    waiting = 0  # cells of ``slow`` found at the last level: they count from the next one
    while (front or late or waiting) and len(within) <= limit:
        found = _expand(front, moves) & unvisited if front else 0
        unvisited &= ~found
        front = (found & ~slow) | waiting
        waiting = found & slow
        if late and len(within) >= delay:
            front |= late & unvisited
            unvisited &= ~late
            late = 0
        if not front and not late and not waiting:
            break
        visited |= front
        within.append(visited)
    return within


def blend_levels(known: List[int], hopeful: List[int], factor: float,  # noqa: UP006
                 limit: int = 4 * SIZE) -> List[int]:  # noqa: UP006
    """``within[k]`` of a pessimistic charger distance: a cell with a way over known road counts its steps on that
    way (``known``, levels of :func:`charger_levels` on the road seen); a cell without one counts ``factor`` times its
    steps through cells never seen (``hopeful``, on the road seen and unseen). Levels up to ``limit``."""
    if not hopeful:
        return list(known)
    reach = known[-1] if known else 0
    top = min(limit + 1, max(len(known), int(factor * (len(hopeful) - 1)) + 1))
    out = []
    for k in range(top):
        part = hopeful[min(int(k / factor), len(hopeful) - 1)] & ~reach
        out.append((known[min(k, len(known) - 1)] if known else 0) | part)
    return out


def _level_of(within: List[int], idx: int) -> int:  # noqa: UP006
    """The least k with bit ``idx`` in ``within[k]`` (:data:`UNREACHABLE` if none)."""
    if not within or not (within[-1] >> idx) & 1:
        return UNREACHABLE
    lo, hi = 0, len(within) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if (within[mid] >> idx) & 1:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _indices(bits: int, limit: int) -> List[int]:  # noqa: UP006
    """Up to ``limit`` set bit indices of ``bits``, lowest first."""
    out = []
    while bits and len(out) < limit:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def collision_risk(walkable: np.ndarray, npcs: Sequence[Cell], x: int, z: int) -> float:
    """The chance that an official robot ends its next move within Chebyshev 1 of ``(x, z)``: each draws one of
    the 8 directions and stays where the move is blocked (its square's bound not counted)."""
    safe = 1.0
    for nx, nz in npcs:
        if max(abs(nx - x), abs(nz - z)) > 2:
            continue
        hits = 0
        for dx, dz in DIRECTIONS:
            tx, tz = nx + dx, nz + dz
            ok = 0 <= tx < SIZE and 0 <= tz < SIZE and walkable[tz, tx] and (
                dx == 0 or dz == 0 or walkable[nz, tx] or walkable[tz, nx])
            qx, qz = (tx, tz) if ok else (nx, nz)
            if max(abs(qx - x), abs(qz - z)) <= 1:
                hits += 1
        safe *= 1.0 - hits / len(DIRECTIONS)
    return 1.0 - safe


def _footprints(chargers: Sequence[Cell]) -> np.ndarray:
    mask = np.zeros((SIZE, SIZE), dtype=bool)
    for cx, cz in chargers:
        mask[max(0, cz - CHARGER_HALF):cz + CHARGER_HALF + 1, max(0, cx - CHARGER_HALF):cx + CHARGER_HALF + 1] = True
    return mask


# ------------------------------------------------------------------------------------------------------ planner
class CoveragePlanner:
    """Picks the robot's action (0..7) from a :class:`Belief`, once per step in order; deterministic.

    :param margin: battery kept in hand on arrival at a charger (steps).
    :param margin_share: extra margin per charger step (for paths through unknown cells that may prove longer): a
        target ``k`` steps from a charger needs ``k * (1 + margin_share) + margin`` battery on arrival.
    :param unknown_factor: a cell with no way to a charger over known road counts this many times its steps
        through cells never seen (the way may prove longer); with a known way, that way's steps.
    :param refresh: at most this often (steps) the charger field is searched again when the terrain changed; every
        step while the battery is within ``2 * margin + 10`` of the distance to a charger.
    """

    def __init__(self, margin: int = 8, margin_share: float = 0.0, unknown_factor: float = 2.0,
                 refresh: int = 8) -> None:
        if margin < 1 or margin_share < 0 or refresh < 1 or unknown_factor < 1:
            raise ValueError(f"CoveragePlanner(margin={margin!r}, margin_share={margin_share!r}, "
                             f"unknown_factor={unknown_factor!r}, refresh={refresh!r}): margin, unknown_factor and "
                             "refresh must be at least 1 and margin_share at least 0")
        self.margin, self.margin_share, self.refresh = int(margin), float(margin_share), int(refresh)
        self.unknown_factor = float(unknown_factor)
        self.reset()

    def reset(self) -> None:
        """Forget the episode."""
        self._field_key: tuple | None = None
        self._field_step = -(1 << 30)
        self._within: list[int] = []
        self._charger_bits = 0
        self._chargers: tuple = ()
        self._terrain_key: object = None
        self._road = self._known = self._known_reach = 0
        self._road_np = np.zeros(NBITS, dtype=bool)
        self._moves: list[tuple[int, int]] = []
        self._path: list[int] = []  # flat indices still to walk, the target last
        self._goal = ""  # "dirty", "unknown" or "charge"
        self.last_action = -1
        self.mode = ""  # what the last decision did: "clean", "explore", "charge", "wait", "escape", "roam"
        self.searches = 0  # charger-field searches this episode

    # ----------------------------------------------------------------------------------------------- terrain
    def _terrain(self, belief: Belief) -> None:
        """Bitsets of the believed road (known road and unknown cells) and its moves, when the terrain changed."""
        key = (id(belief.walkable), belief.terrain_version)
        if key == self._terrain_key:
            return
        road = belief.walkable if belief.unknown is None else belief.walkable | belief.unknown
        padded = np.zeros((SIZE, P), dtype=bool)
        padded[:, :SIZE] = road
        self._road_np = padded.ravel()
        self._road = int.from_bytes(np.packbits(self._road_np, bitorder="little").tobytes(), "little")
        self._known = self._road if belief.unknown is None else bits_of(belief.walkable)
        self._moves = _moves(self._road)
        self._terrain_key = key

    def _charger_field(self, belief: Belief, idx: int) -> None:
        chargers = tuple((int(x), int(z)) for x, z in belief.chargers)
        if chargers != self._chargers:
            self._chargers = chargers
            self._charger_bits = bits_of(_footprints(chargers))
            self._field_key = None
        contested = self._contested(belief)
        key = (self._terrain_key, chargers, contested, tuple(belief.npc_areas))
        if key == self._field_key:
            return
        if self._field_key is not None and belief.step - self._field_step < self.refresh:
            slack = belief.battery - _level_of(self._within, idx)
            if slack > 2 * self.margin + 10:
                return  # the field is a little old but the battery is far from short
        late = bits_of(_footprints([chargers[i] for i in contested])) if contested else 0
        free = self._charger_bits & ~late
        slow = self._areas_bits(belief.npc_areas)
        # farther than a full battery is as good as unreachable
        top = max(1, int(belief.battery_max))
        self._within = charger_levels(self._road, free, top, late=late, delay=CONTESTED_DELAY, slow=slow)
        self._known_reach = self._within[-1]
        if belief.unknown is not None:
            known = charger_levels(self._known, free, top, late=late, delay=CONTESTED_DELAY, slow=slow)
            self._known_reach = known[-1]
            self._within = blend_levels(known, self._within, self.unknown_factor, top)
        self._field_key, self._field_step = key, belief.step
        self.searches += 1

    def _contested(self, belief: Belief) -> tuple:
        """Indices of the chargers within reach of an official robot's area (it may stand in the way)."""
        reach = DANGER + CHARGER_HALF
        return tuple(i for i, (cx, cz) in enumerate(self._chargers) if any(
            x0 - reach <= cx <= x1 + reach and z0 - reach <= cz <= z1 + reach for x0, x1, z0, z1 in belief.npc_areas))

    @staticmethod
    def _areas_bits(areas) -> int:
        """Bitset of the cells of the official robots' areas ``(x0, x1, z0, z1)``."""
        out = 0
        for x0, x1, z0, z1 in areas:
            x0, x1 = max(0, int(x0)), min(SIZE - 1, int(x1))
            if x1 < x0:
                continue
            row = ((1 << (x1 - x0 + 1)) - 1) << x0
            for z in range(max(0, int(z0)), min(SIZE - 1, int(z1)) + 1):
                out |= row << (z * P)
        return out

    def charger_distance(self, x: int, z: int) -> int:
        """Robot steps from ``(x, z)`` to the nearest charger footprint on the last field (:data:`UNREACHABLE`)."""
        return _level_of(self._within, z * P + x)

    # ----------------------------------------------------------------------------------------------- decision
    def act(self, belief: Belief) -> int:
        """The action 0..7 for this step (a blocked move is how the robot stays)."""
        self._terrain(belief)
        here = belief.z * P + belief.x
        self._charger_field(belief, here)
        # keep NEAR from the official robots where the robot can, else DANGER
        danger = self._danger(belief.npcs, NEAR)
        if danger and not _expand(1 << here, self._moves) & self._road & ~danger:
            danger = self._danger(belief.npcs, DANGER)
        action = self._follow(belief, here, danger)
        if action < 0:
            action = self._plan(belief, here, danger)
        self.last_action = action
        return action

    @staticmethod
    def _danger(npcs: Sequence[Cell], radius: int) -> int:
        """Bitset of the cells within Chebyshev ``radius`` of a known official robot."""
        out = 0
        for nx, nz in npcs:
            if nx < 0 or nz < 0:
                continue
            x0, x1 = max(0, nx - radius), min(SIZE - 1, nx + radius)
            row = ((1 << (x1 - x0 + 1)) - 1) << x0
            for z in range(max(0, nz - radius), min(SIZE - 1, nz + radius) + 1):
                out |= row << (z * P)
        return out

    def _unbounded(self, belief: Belief) -> bool:
        """No charger to plan for: the battery outlasts the episode, or the belief knows no charger."""
        return belief.battery > belief.max_step - belief.step or not self._charger_bits

    def _follow(self, belief: Belief, here: int, danger: int) -> int:
        """The next step of the kept path when it still holds, else -1."""
        path = self._path
        if path and path[0] == here:
            path.pop(0)
        if len(path) < 2 or (path[0] - here) not in OFFSETS:
            self._path = []
            return -1
        goal = path[-1]
        gz, gx = divmod(goal, P)
        if self._goal == "dirty" and not belief.dirty[gz, gx]:
            self._path = []
            return -1
        if self._goal == "unknown" and (belief.unknown is None or not belief.unknown[gz, gx]):
            self._path = []
            return -1
        if self._goal == "charge" and not self._unbounded(belief) and belief.battery >= belief.battery_max:
            self._path = []
            return -1
        road = self._road_np
        for k, c in enumerate(path):
            if not road[c] or (k < 3 and (danger >> c) & 1):
                self._path = []
                return -1
        a = OFFSETS.index(path[0] - here)
        if not self._legal(here, a):
            self._path = []
            return -1
        return a

    def _legal(self, here: int, a: int) -> bool:
        dx, dz = DIRECTIONS[a]
        road = self._road_np
        x = here % P
        if not (0 <= x + dx < SIZE) or not (0 <= here + OFFSETS[a] < NBITS) or not road[here + OFFSETS[a]]:
            return False
        return dx == 0 or dz == 0 or bool(road[here + dx]) or bool(road[here + dz * P])

    def _plan(self, belief: Belief, here: int, danger: int) -> int:
        self._path = []
        unbounded = self._unbounded(belief)
        if not unbounded and not (self._known_reach >> here) & 1:
            # no way to a charger over the road seen yet: find one first (cleaning on the way), before the battery
            # depends on roads never seen
            return self._to_charger(belief, here, danger)
        dirty = bits_of(belief.dirty)
        unknown = bits_of(belief.unknown) if belief.unknown is not None else 0
        start = 1 << here
        passable = self._road & ~danger
        fronts = [start]
        unvisited = passable & ~start
        within = self._within
        top = len(within) - 1
        found: tuple | None = None  # (hits, level, goal)
        explore: tuple | None = None
        d = 0
        moves = self._moves
        limit = NBITS if unbounded else belief.battery
        while d < limit:
            if unbounded:
                ok = -1
            else:
                spare = belief.battery - d - 1
                # the largest k with k + margin(k) <= spare: cells at most k steps from a charger can be entered
                k = int((spare - self.margin) // (1.0 + self.margin_share))
                if k < 0:
                    break
                ok = within[min(k, top)] if within else 0
            # a cell is entered only with the battery to reach a charger from it (every cell of the path, since the
            # charger distance of unseen cells is only an estimate)
            new = _expand(fronts[-1], moves) & unvisited & ok
            if not new:
                break
            d += 1
            unvisited ^= new
            fronts.append(new)
            hits = new & dirty
            if hits:
                found = (hits, d, "dirty")
                break
            if unknown:
                if explore is None:
                    seen = new & unknown
                    if seen:
                        explore = (seen, d, "unknown")
                elif d >= explore[1] + UNKNOWN_PATIENCE:
                    break
        if found is None:
            found = explore
        if found is None:
            return self._to_charger(belief, here, danger)
        hits, level, goal = found
        target = self._choose(belief, here, hits, level)
        self.mode = "clean" if goal == "dirty" else "explore"
        return self._walk(belief, here, fronts, target, level, goal)

    def _choose(self, belief: Belief, here: int, hits: int, level: int) -> int:
        """The target among ``hits`` (bit indices ``level`` steps away): away from the official robots; a neighbour
        with the fewest dirty neighbours but one (the edge of what is cleaned; a lone dirty cell last), then, on a
        fully known map, outward from the chargers while the battery is above half and inward below, then the last
        direction; a farther target in the richest neighbourhood."""
        dirty = belief.dirty
        hz, hx = divmod(here, P)
        npcs = [(nx, nz) for nx, nz in belief.npcs if nx >= 0 and nz >= 0]
        best, best_key = -1, None
        # the charger field is exact only on a fully known map (else unseen cells count a factor more)
        sign = 0 if belief.unknown is not None else (1 if 2 * belief.battery < belief.battery_max else -1)
        for idx in _indices(hits, MAX_CHOICES):
            z, x = divmod(idx, P)
            k = 0
            for dx, dz in DIRECTIONS:
                tx, tz = x + dx, z + dz
                if 0 <= tx < SIZE and 0 <= tz < SIZE and dirty[tz, tx] and not (tx == hx and tz == hz):
                    k += 1
            near = 0
            for nx, nz in npcs:
                if max(abs(nx - x), abs(nz - z)) <= NEAR:
                    near = 1
            if level == 1:
                a = OFFSETS.index(idx - here)
                toward = sign * _level_of(self._within, idx) if sign else 0
                key = (near, k if k else len(DIRECTIONS) + 1, toward, 0 if a == self.last_action else 1, a)
            else:
                toward = sign * _level_of(self._within, idx) if sign else 0
                key = (near, -k, toward, idx)
            if best_key is None or key < best_key:
                best, best_key = idx, key
        return best

    def _walk(self, belief: Belief, here: int, fronts: List[int], target: int, level: int, goal: str) -> int:  # noqa: UP006
        """Keep the shortest path to ``target`` (found at ``level``; predecessors that are dirty preferred) and take its
        first step."""
        dirty = belief.dirty
        path = [target]
        cur = target
        road = self._road_np
        for lvl in range(level - 1, 0, -1):
            front = fronts[lvl]
            pick = -1
            for a, (dx, dz) in enumerate(DIRECTIONS):
                s = cur - OFFSETS[a]
                if s < 0 or not (front >> s) & 1:
                    continue
                if dx and dz and not (road[s + dx] or road[s + dz * P]):
                    continue
                sz, sx = divmod(s, P)
                if dirty[sz, sx]:
                    pick = s
                    break
                if pick < 0:
                    pick = s
            cur = pick
            path.append(cur)
        path.reverse()
        self._path, self._goal = path, goal
        return OFFSETS.index(path[0] - here)

    def _to_charger(self, belief: Belief, here: int, danger: int) -> int:
        """Toward the nearest charger footprint, avoiding the official robots: at the distance kept (``danger``), else
        at :data:`DANGER` if that way is affordable, else waiting nearby for them to leave the way; when waiting
        longer would leave too little battery, passing them closer (not into their 3 x 3). Else the safest move."""
        chargers = self._charger_bits & self._road
        npcs = [(nx, nz) for nx, nz in belief.npcs if nx >= 0 and nz >= 0]
        if chargers and not (chargers >> here) & 1:
            # over the road seen when it leads to a charger (a way through unseen cells may prove longer)
            base = self._known if (self._known_reach >> here) & 1 else self._road
            tiers = [danger]
            if danger:
                tiers += [self._danger(npcs, DANGER), self._danger(npcs, 1)]
            for i, tier in enumerate(tiers):
                if i and tier == tiers[i - 1]:
                    continue
                found = self._charger_way(base & ~tier, here, chargers)
                if found is None:
                    continue
                d, fronts, hits = found
                if i == 2 and not d <= belief.battery <= d + 2:
                    break  # passing closer only when waiting longer would leave too little battery
                if d <= belief.battery or self._unbounded(belief) or not danger:
                    self.mode = "charge"
                    return self._walk(belief, here, fronts, _indices(hits, 1)[0], d, "charge")
            if danger:
                return self._hover(belief, here, danger)
        return self._escape(belief, here, danger)

    def _charger_way(self, passable: int, here: int, chargers: int) -> tuple | None:
        """``(steps, BFS fronts, footprint cells reached)`` of the shortest way over ``passable`` from ``here`` to the
        nearest cells of ``chargers``; None if there is none."""
        fronts = [1 << here]
        unvisited = passable & ~fronts[0]
        d = 0
        while True:
            new = _expand(fronts[-1], self._moves) & unvisited
            if not new:
                return None
            d += 1
            unvisited ^= new
            fronts.append(new)
            hits = new & chargers
            if hits:
                return d, fronts, hits

    def _hover(self, belief: Belief, here: int, danger: int) -> int:
        """The way to a charger is blocked by official robots: the safe move (or a blocked move: staying) nearest a
        charger, farthest from them; else the safest move."""
        npcs = [(nx, nz) for nx, nz in belief.npcs if nx >= 0 and nz >= 0]
        best, best_key = -1, None
        for a in range(len(DIRECTIONS)):
            cell = here + OFFSETS[a] if self._legal(here, a) else here
            if (danger >> cell) & 1:
                continue
            z, x = divmod(cell, P)
            gap = min([max(abs(nx - x), abs(nz - z)) for nx, nz in npcs] or [SIZE])
            key = (_level_of(self._within, cell), -min(gap, NEAR + 2), a)
            if best_key is None or key < best_key:
                best, best_key = a, key
        if best < 0:
            return self._escape(belief, here, danger)
        self.mode = "wait"
        return best

    def _escape(self, belief: Belief, here: int, danger: int) -> int:
        """No target: the move (or a blocked move: staying) least likely to end next to an official robot after its
        random move, then farthest from them, a dirty cell, then a cell nearer a charger."""
        self.mode = "roam" if not (danger >> here) & 1 else "escape"
        npcs = [(nx, nz) for nx, nz in belief.npcs if nx >= 0 and nz >= 0]
        best, best_key = 0, None
        for a in range(len(DIRECTIONS)):
            cell = here + OFFSETS[a] if self._legal(here, a) else here
            z, x = divmod(cell, P)
            gap = min([max(abs(nx - x), abs(nz - z)) for nx, nz in npcs] or [SIZE])
            key = (collision_risk(belief.walkable, npcs, x, z), -min(gap, NEAR + 1),
                   0 if cell != here and belief.dirty[z, x] else 1, _level_of(self._within, cell), a)
            if best_key is None or key < best_key:
                best, best_key = a, key
        return best
