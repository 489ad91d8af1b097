"""The Gorge Chase planner: flee along the monsters' distance fields, prefer cells with escape room over pockets, take
the treasures and buffs seen when that is safe, explore to see more of them, and flash when cornered or when a flash
lands far from the monsters. numpy and the standard library only.

One decision code, two ways of knowing:

- :class:`ObservationPlanner` reads only what the platform's ``exploit()`` receives (``env_obs["observation"]``): its
  :class:`~.memory.Memory` holds the terrain seen (cells never seen taken as road), the monsters tracked out of view
  by their rule and monster 2's spawn cell; its :class:`BeliefTerrain` searches that believed terrain, keeping each
  search until a newly seen obstacle inside it changes it. This module is copied verbatim into competition
  submissions with :mod:`.memory`, so it imports nothing from sb3_realm.
- the scripted yardstick (:mod:`.experts.scripted`) hands the same :class:`Planner` the true terrain and the
  monsters' true states.

Each step, every distinct cell the legal actions lead to (the 8 moves and, when the flash is ready, the 8 flashes) is
an outcome, scored in four measures against the monsters' BFS fields, less the distance a moving monster covers this
step:

- *caught*: a predicted monster (every tie branch of its rule) within Chebyshev 1 after the step;
- *margin*: steps before a monster can stand next to the outcome's cell (speeds, the coming speed-up and monster 2's
  announced spawn included);
- *room*: cells within ``horizon`` hero steps (diagonal moves, corner rule, the buff's double step) that the hero
  reaches before any monster can; *exits*: those at least ``exit_steps`` away, each weighted by its lead; *lasting*:
  the latest a monster can reach one of them;
- *progress* toward the goal (the seen treasure or buff with the least distance plus a penalty where a monster gets
  there about as soon, else the nearest unseen road) and the items picked up on the way.

The safety value is a sum of logarithms of the four measures, less a cost for a margin under 3, for standing still
and for spending the flash. Moves that keep a margin of ``safe_margin`` and ``min_room`` cells are *calm*: among
them the goal decides; without any, the safety value (plus pickups) decides, flashes included. Buffs are kept for the
speed-up (taken from ``buff_lead`` steps before it, or early enough to be back by then). No random numbers: the same
observations give the same actions.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional, Tuple  # noqa: UP035

import numpy as np

from .memory import (
    DIRECTIONS,
    FAR,
    UNREACHABLE,
    Memory,
    distance_field,
    resume_field,
    rule_branches,
    sliding_windows,
    window_distances,
)

__all__ = [
    "HERO_LEVELS",
    "NEAR",
    "RADIUS",
    "BeliefTerrain",
    "ObservationPlanner",
    "Outcome",
    "Planner",
    "believed_legal",
]

# typing's forms: module-level aliases are evaluated at import, also on the platform's older Pythons
Cell = Tuple[int, int]  # noqa: UP006
# (cell, speed, previous cell, axis of the last sub-step)
Monster = Tuple[Cell, int, Optional[Cell], Optional[str]]  # noqa: UP006, UP045

RADIUS = 16  # half-size of the hero's windows: cells within Chebyshev 16 of an outcome
HERO_LEVELS = 32  # hero steps searched in those windows (the escape room counts fewer)
NEAR = 6  # half-size of the monsters' windows: enough to predict every monster that can catch in one step
_FIELD_CACHE = 32  # distance fields kept
EXACT_MARGIN = 12  # a goal's field must be exact this far past the hero's distance (twice: a flash's landing)
THREAT_REACH = 48  # a monster's field is searched this many steps past the hero's cell: every cell of the outcomes'
# windows that a monster can reach about as soon as the hero
THREAT_LIMIT = 96  # ... and at most this many steps in all (a monster farther away threatens nothing soon)


# ------------------------------------------------------------------------------------------------------ terrain
def padded_windows(field: np.ndarray, xs: np.ndarray, zs: np.ndarray, radius: int = RADIUS) -> np.ndarray:
    """(K, 2r+1, 2r+1) values of an (H, W) distance field around the cells ``(xs[k], zs[k])``; :data:`UNREACHABLE`
    off the map."""
    h, w = field.shape
    pad = np.full((h + 2 * radius, w + 2 * radius), UNREACHABLE, dtype=field.dtype)
    pad[radius:radius + h, radius:radius + w] = field
    return sliding_windows(pad, 2 * radius + 1)[zs, xs]


class BeliefTerrain:
    """The searches the planner runs, on a memory's believed terrain; each result is kept until an obstacle newly
    seen inside its reach changes it.

    :param memory: the :class:`~.memory.Memory` whose ``walkable`` is searched.
    """

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.clear()

    def clear(self) -> None:
        self._fields: OrderedDict[Cell, tuple[int, np.ndarray, int]] = OrderedDict()
        self._hero: dict[Cell, tuple[int, np.ndarray, int]] = {}  # cell -> (update, window, levels searched)
        self._monster: dict[Cell, tuple[int, np.ndarray, int]] = {}
        self._landings: dict[tuple[Cell, int], Cell | None] = {}  # (cell, direction) -> flash landing ...
        self._landings_of: tuple = ()  # ... on this terrain (grid, obstacles logged, flash reach)

    @property
    def walkable(self) -> np.ndarray:
        return self.memory.walkable

    def is_road(self, x: int, z: int) -> bool:
        return self.memory.is_road(x, z)

    def _fresh(self, stamp: int, x: int, z: int, radius: int) -> bool:
        log = self.memory.wall_log
        if not log or log[-1][0] <= stamp:  # no obstacle seen since: nothing changed anywhere
            return True
        changed = self.memory.changed[max(0, z - radius):z + radius + 1, max(0, x - radius):x + radius + 1]
        return bool(changed.max(initial=0) <= stamp)

    def _windows(self, cache: dict, cells: list[Cell], radius: int, diagonal: bool, levels: int) -> np.ndarray:
        now = self.memory.updates
        if len(cache) > 4096:
            cache.clear()
        missing: list[Cell] = []
        for c in dict.fromkeys(cells):
            got = cache.get(c)
            if got is None or got[2] < levels:
                missing.append(c)
            elif got[0] < now:
                if not self._fresh(got[0], c[0], c[1], radius):
                    missing.append(c)
                else:  # fresh now: later checks need only the obstacles seen from now on
                    cache[c] = (now, got[1], got[2])
        if missing:
            found = window_distances(self.walkable, missing, radius, diagonal, levels)
            for k, c in enumerate(missing):
                cache[c] = (now, found[k], levels)
        return np.stack([cache[c][1] for c in cells])

    def hero_windows(self, cells: list[Cell], levels: int = HERO_LEVELS) -> np.ndarray:
        """(K, 33, 33) hero steps (8 moves, corner rule) from each cell to its window: exact up to ``levels``
        steps (a window kept from a deeper search may hold more), :data:`FAR` where not reached."""
        return self._windows(self._hero, cells, RADIUS, True, levels)

    def monster_windows(self, cells: list[Cell]) -> np.ndarray:
        """(K, 13, 13) 4-connected distances from each cell inside its window."""
        return self._windows(self._monster, cells, NEAR, False, FAR - 1)

    def flash_landing(self, cell: Cell, direction: int) -> Cell | None:
        """Where a flash from ``cell`` lands: the farthest road cell of the line (None: an in-place flash)."""
        mem = self.memory
        rules = mem.rules
        log = mem.wall_log
        kept = self._landings_of
        now = (len(log), rules["flash_distance"], rules["flash_distance_diagonal"])
        if not kept or kept[0] is not mem.walkable or kept[1] is not log or kept[2] != now:
            self._landings, self._landings_of = {}, (mem.walkable, log, now)
        key = (cell, direction)
        if key in self._landings:
            return self._landings[key]
        dx, dz = DIRECTIONS[direction]
        reach = rules["flash_distance_diagonal"] if dx and dz else rules["flash_distance"]
        land = None
        for k in range(reach, 0, -1):
            if self.is_road(cell[0] + k * dx, cell[1] + k * dz):
                land = (cell[0] + k * dx, cell[1] + k * dz)
                break
        if len(self._landings) > 4096:
            self._landings.clear()
        self._landings[key] = land
        return land

    def threat_fields(self, monsters: list[tuple[Cell, int]], hero: Cell) -> list[tuple[np.ndarray, int]]:
        """``(field, speed)`` of the monsters ``(cell, speed)``: one search for the monsters of a speed (the distance
        to the nearest of them), to ``THREAT_REACH`` steps past the hero's cell and ``THREAT_LIMIT`` steps in all
        (farther road cells read a lower bound)."""
        speeds = sorted({speed for _, speed in monsters})
        return [(distance_field(self.memory.walkable, [c for c, v in monsters if v == speed], near=[hero],
                                extra=THREAT_REACH, limit=THREAT_LIMIT), speed) for speed in speeds]

    def field(self, cell: Cell, exact_near: Cell | None = None) -> np.ndarray:
        """(H, W) int32 4-connected distances from ``cell``. From the hero's cell: computed each step, exact to its
        goals (:meth:`~.memory.Memory.hero_field`). From another cell: the last few are kept, and an obstacle newly
        seen is written into a kept field, which stays exact up to the least distance of those obstacles; it is searched
        again when that no longer covers ``exact_near`` (a cell, with a margin of a flash's reach) or when
        ``exact_near`` is not given. With ``exact_near``, a new search stops a little past that margin (farther road
        cells read a lower bound)."""
        mem = self.memory
        if cell == mem.hero:
            return mem.hero_field()
        got: tuple[int, np.ndarray, int] | None = self._fields.get(cell)
        kept = got  # a field to resume from: exact up to its last element
        if got is not None:
            stamp, grid, exact = got
            if stamp < mem.updates:
                flat = grid.reshape(-1)
                for when, cells in mem.wall_log[::-1]:
                    if when <= stamp:
                        break
                    values = flat[cells]
                    values = values[values < UNREACHABLE]
                    if values.size:
                        exact = min(exact, int(values.min()) - 1)
                    flat[cells] = UNREACHABLE
                got = kept = self._fields[cell] = (mem.updates, grid, exact)
            if (exact_near is None and exact < UNREACHABLE) or (exact_near is not None and (
                    int(grid[exact_near[1], exact_near[0]]) + 2 * EXACT_MARGIN > exact)):
                got = None
        if got is None:
            # the same search as from scratch, resumed past the levels a kept field still holds exactly
            if exact_near is None:
                grid = (distance_field(mem.walkable, cell) if kept is None else
                        resume_field(mem.walkable, kept[1], kept[2], cell))
                got = (mem.updates, grid, UNREACHABLE)
            else:  # searched a little past what is needed now, so that it lasts a few steps
                grid = (distance_field(mem.walkable, cell, near=[exact_near], extra=3 * EXACT_MARGIN) if kept is None
                        else resume_field(mem.walkable, kept[1], kept[2], cell, [exact_near], 3 * EXACT_MARGIN))
                finite = grid[grid < UNREACHABLE]
                got = (mem.updates, grid, int(finite.max()) - 1 if finite.size else UNREACHABLE)
            self._fields[cell] = got
            if len(self._fields) > _FIELD_CACHE:
                self._fields.popitem(last=False)
        else:
            self._fields.move_to_end(cell)
        return got[1]


# -------------------------------------------------------------------------------------------------- the planner
_NO_WINDOW = np.full((2 * NEAR + 1, 2 * NEAR + 1), FAR, dtype=np.uint8)  # predict's window where no monster is close
def _ceil_div(values: np.ndarray, by: int) -> np.ndarray:
    """``ceil(values / by)`` of non-negative integers (``by`` >= 1): a shift where ``by`` is a power of two."""
    if by == 1:
        return values
    if by & (by - 1) == 0:
        return (values + (by - 1)) >> (by.bit_length() - 1)
    return (values + (by - 1)) // by


@dataclass
class Outcome:
    """Where one action leads and how it is judged (see the module docstring)."""

    action: int
    cell: Cell
    path: tuple[Cell, ...]
    flash: bool
    caught: bool = False
    room: int = 0
    margin: int = 0
    exits: int = 0
    lasting: int = 0
    progress: int = 0
    pickup: float = 0.0
    value: float = 0.0


@dataclass
class _Field:
    """A monster's distance field, its speed, the hero steps before it exists (monster 2 before its spawn) and
    whether it moves in the coming step."""

    grid: np.ndarray
    speed: int
    delay: int
    moves: bool
    padded: np.ndarray | None = None  # the windows of the grid padded by RADIUS (made on first use)


class Planner:
    """The decision code (see the module docstring): :meth:`decide` takes what is known of the step and returns an
    action. Deterministic. The class attributes are its weights and thresholds (set them on an instance to try
    others).

    :param use_flash: allow flash actions.
    :param use_buff: go for seen speed buffs (buffs on the way are still picked up).
    """

    room_weight = 30.0  # value of log(1 + cells the hero reaches before any monster, within RADIUS)
    margin_weight = 40.0  # value of log(1 + steps before a monster can reach the hero's cell)
    horizon = 20  # hero steps within which the escape room is counted
    exit_steps = 11  # cells owned at least this many hero steps away are the ways out of the neighbourhood
    slack_cap = 8  # ... each counted by the steps it is reached before a monster, up to this many
    exit_weight = 30.0  # value of log(1 + the sum)
    critical_margin = 3  # margins below this ...
    critical_cost = 60.0  # ... cost this much per missing step
    lasting_weight = 40.0  # value of log(1 + the latest step a monster can reach a cell the hero reaches first)
    stay_cost = 10.0  # value given up by standing still (a blocked move) with a monster near
    safe_margin = 6  # a move keeping at least this many steps before a monster can reach the hero ...
    min_room = 60  # ... and this much escape room is safe: the goal decides among such moves
    progress_weight = 4.0  # value of one cell of progress toward the goal (a diagonal move makes 2)
    treasure_bonus = 400.0  # value of a treasure picked up by the move
    buff_bonus = 150.0  # value of a buff picked up by the move
    flash_cost = 60.0  # value given up by spending the flash
    flash_cost_late = 25.0  # ... once the monsters are fast (the flash is the way to gain ground then)
    contest_margin = 4  # a goal a monster reaches less than this many steps after the hero is contested ...
    contest_weight = 3.0  # ... costing this many steps per step of shortfall ...
    contest_base = 20.0  # ... plus this many
    stall_steps = 12  # a goal not approached for this many steps ...
    ban_steps = 40  # ... is ignored for this many
    explore_refresh = 20  # steps between choices of the exploration target
    buff_lead = 20  # buffs are kept for the speed-up: taken from this many steps before it, or early enough to be back
    buff_stage = 60  # from this many steps before the speed-up, buffs are goals at their late weight
    buff_weight_early = 0.35  # a buff is worth this share of a treasure as a goal before the speed-up
    buff_weight_late = 1.5  # ... and this share from the speed-up on

    def __init__(self, use_flash: bool = True, use_buff: bool = True) -> None:
        self.use_flash = bool(use_flash)
        self.use_buff = bool(use_buff)
        self.reset()

    def reset(self) -> None:
        """Forget the goals of the last episode."""
        self.explore_target: Cell | None = None
        self._explore_until = 0
        self.banned: dict[Cell, int] = {}  # goal cell -> last step it is ignored
        self.goal: Cell | None = None
        self._goal_best = 0
        self._goal_since = 0
        self._last_step = -1
        self.outcomes: list[Outcome] = []  # the last decision's outcomes, judged
        self.landings: list[Cell | None] = [None] * 16  # the last decision's cell of each action (None: not played)
        self.goal_field: np.ndarray | None = None  # the last decision's goal field
        self.fields: list[_Field] = []  # the last decision's monster fields
        self.target: Cell | None = None  # the last decision's goal cell ...
        self.target_kind: str | None = None  # ... "treasure", "buff" or "explore"

    def decide(self, mem: Memory, terrain, legal: np.ndarray, monsters: list[Monster]) -> int:
        """The action for the step ``mem`` holds.

        :param mem: the episode's memory, updated with this step's observation.
        :param terrain: the searches (:class:`BeliefTerrain`, or the scripted yardstick's true-terrain tables).
        :param legal: (16,) bool legal actions.
        :param monsters: ``(cell, speed, previous cell, axis)`` of each monster, spawn order.
        """
        if mem.step < self._last_step:
            self.reset()
        self._last_step = mem.step
        outcomes = self._outcomes(mem, terrain, legal)
        fields = self._fields(mem, terrain, monsters)
        goal_field = self._goal_field(mem, terrain, fields)
        self._evaluate(mem, terrain, outcomes, monsters, fields, goal_field)
        self.outcomes, self.goal_field, self.fields = outcomes, goal_field, fields
        free = [o for o in outcomes if not o.caught] or outcomes
        # safe enough: the goal decides among the moves that keep a margin and room; else flee (safety decides)
        calm = [o for o in free if not o.flash and o.margin >= self.safe_margin and o.room >= self.min_room]
        if calm and goal_field is not None:
            best = max(calm, key=lambda o: (o.pickup + self.progress_weight * o.progress, o.value, -o.action))
        else:
            best = max(free, key=lambda o: (o.value + o.pickup, -o.action))
        return int(best.action)

    # -------------------------------------------------------------------------------------------- outcomes
    @staticmethod
    def _step_allowed(terrain, x: int, z: int, dx: int, dz: int) -> bool:
        """The corner rule: the target is road and, for a diagonal step, one of the two orthogonal cells is."""
        if not terrain.is_road(x + dx, z + dz):
            return False
        return dx == 0 or dz == 0 or terrain.is_road(x + dx, z) or terrain.is_road(x, z + dz)

    def _outcomes(self, mem: Memory, terrain, legal: np.ndarray) -> list[Outcome]:
        """One outcome per distinct cell the legal actions lead to (moves first, so a flash is played only where it
        lands somewhere no move reaches)."""
        length = 1 + (mem.rules["buff_extra_speed"] if mem.has_buff else 0)
        hx, hz = mem.hero
        found: dict[Cell, Outcome] = {}
        landings: list[Cell | None] = [None] * 16
        for a in range(8):
            dx, dz = DIRECTIONS[a]
            x, z = hx, hz
            path: list[Cell] = []
            for _ in range(length):
                if not self._step_allowed(terrain, x, z, dx, dz):
                    break
                x, z = x + dx, z + dz
                path.append((x, z))
            cell = (x, z)
            if legal[a]:
                landings[a] = cell
                if cell not in found:
                    found[cell] = Outcome(a, cell, tuple(path) or (cell,), False)
        if self.use_flash:
            for d in range(8):
                if not legal[8 + d]:
                    continue
                cell = terrain.flash_landing(mem.hero, d)
                landings[8 + d] = cell
                if cell is None or cell in found:
                    continue
                dx, dz = DIRECTIONS[d]
                k = max(abs(cell[0] - hx), abs(cell[1] - hz))
                found[cell] = Outcome(8 + d, cell, tuple((hx + j * dx, hz + j * dz) for j in range(1, k + 1)), True)
        self.landings = landings
        return list(found.values())

    # --------------------------------------------------------------------------------------------- threats
    @staticmethod
    def predict(window: np.ndarray, hero: Cell, monsters: list[Monster]) -> list[tuple[list[Cell], int]]:
        """The monsters after the coming step with the hero on ``hero``: each sub-step goes to the 4-neighbour of
        least distance to the hero plus the back-step and same-axis penalties (docs/gorge/rules.md); every tie branch
        is kept. A monster too far to catch the hero this step is left where it is. ``window``: the (13, 13)
        4-connected distances around ``hero``. Returns (cells, speed) each."""
        r = NEAR
        hx, hz = hero
        out: list[tuple[list[Cell], int]] = []
        taken = {m[0] for m in monsters}
        for cell, speed, prev, axis in monsters:
            if cell == hero or max(abs(cell[0] - hx), abs(cell[1] - hz)) > r - speed - 1:
                out.append(([cell], speed))
                continue
            def distance(x: int, z: int) -> int | None:
                d = int(window[z - hz + r, x - hx + r])
                return None if d == FAR else d

            states = rule_branches((cell, prev, axis), speed, distance, taken - {cell})
            cells = list(dict.fromkeys(s[0] for s in states))
            out.append((cells, speed))
            if len(cells) == 1:
                taken = (taken - {cell}) | {cells[0]}
        return out

    # ------------------------------------------------------------------------------------------ evaluation
    def _fields(self, mem: Memory, terrain, monsters: list[Monster]) -> list[_Field]:
        """The monsters' 4-connected distance fields (as the terrain groups them), monster 2 included from the step
        its spawn cell is known."""
        fields = [_Field(grid, speed, 0, True)
                  for grid, speed in terrain.threat_fields([(m[0], m[1]) for m in monsters], mem.hero)]
        if not mem.second_decided and mem.monster_interval > 0 and mem.rules["monster_count"] >= 2:
            spawn_step = mem.monster_interval - mem.rules["spawn_delay"]
            delay = mem.monster_interval - (mem.step + 1)
            if delay >= 0 and spawn_step <= mem.step and spawn_step in mem.history:
                speed = mem.monster_speed + (1 if mem.boosted else 0)
                fields.append(_Field(terrain.field(mem.history[spawn_step]), speed, delay, False))
        return fields

    @staticmethod
    def threat_windows(mem: Memory, fields: list[_Field], xs: np.ndarray, zs: np.ndarray) -> np.ndarray:
        """(K, 33, 33) int32 steps before any monster can stand next to each cell of the windows around the cells
        ``(xs[k], zs[k])`` after the coming step (speeds, the coming speed-up and monster 2's spawn included;
        ``10 ** 6`` where none can)."""
        coming = mem.step + 1
        threat_time: np.ndarray | None = None
        r = RADIUS
        for f in fields:
            view = getattr(f, "padded", None)
            if view is None:  # one padded copy per field and decision (the features read the same fields)
                h, w = f.grid.shape
                pad = np.full((h + 2 * r, w + 2 * r), UNREACHABLE, dtype=f.grid.dtype)
                pad[r:r + h, r:r + w] = f.grid
                view = f.padded = sliding_windows(pad, 2 * r + 1)
            # a monster moving this step may stand up to ``speed`` cells nearer to any cell afterwards
            need = np.maximum(view[zs, xs] - (f.speed if f.moves else 0) - 1, 0)
            slow = max(0, mem.monster_speedup - coming - f.delay) if not mem.boosted else 0
            speed = max(f.speed, 1)
            if slow:
                steps = np.where(need <= speed * slow, _ceil_div(need, speed),
                                 slow + _ceil_div(need - speed * slow, speed + 1))
            else:
                steps = _ceil_div(need, speed)
            if f.delay:
                steps = steps + f.delay
            if threat_time is None:
                threat_time = np.minimum(steps, 10 ** 6).astype(np.int32, copy=False)
            else:
                np.minimum(threat_time, steps, out=threat_time)
        if threat_time is None:
            return np.full((len(xs), 2 * r + 1, 2 * r + 1), 10 ** 6, dtype=np.int32)
        return threat_time

    def _evaluate(self, mem: Memory, terrain, outcomes: list[Outcome], monsters: list[Monster],
                  fields: list[_Field], goal_field: np.ndarray | None) -> None:
        """Score every outcome (all windows at once: one ``(K, 33, 33)`` array per measure)."""
        r = RADIUS
        step = mem.step
        duration = mem.rules["buff_duration"]
        buffs_here = {cell for oid, cell in mem.buffs.items() if mem.buff_ready.get(oid, 0) <= step}
        xs = np.array([o.cell[0] for o in outcomes])
        zs = np.array([o.cell[1] for o in outcomes])
        takes_buff = np.array([any(c in buffs_here for c in o.path) for o in outcomes])
        # only cells within the horizon count, after the buff's double steps where the hero has or takes it
        levels = HERO_LEVELS if mem.has_buff or takes_buff.any() else self.horizon
        cells = [o.cell for o in outcomes]
        # the hero's own window comes with them (the features read it): one search for all
        ask = cells if mem.hero in cells else [*cells, mem.hero]
        # int16 (hero steps are at most FAR, threat times are compared with them, capped at 1000 or summed capped)
        hero_steps = terrain.hero_windows(ask, levels)[:len(cells)].astype(np.int16)  # (K, 33, 33)
        buff = np.full(len(outcomes), mem.buff_remaining - 1 if mem.has_buff else 0)
        buff[takes_buff] = duration - 1
        if buff.any():
            b = buff[:, None, None].astype(np.int16)
            hero_steps = np.where(hero_steps <= 2 * b, (hero_steps + 1) // 2, hero_steps - b)
        threat_full = self.threat_windows(mem, fields, xs, zs)
        threat_time = np.minimum(threat_full, 2 ** 15 - 1).astype(np.int16)
        # cells beyond the horizon are reached only by paths winding through the window's edge: not counted
        owned = (hero_steps <= self.horizon) & (hero_steps < threat_time)
        rooms = owned.sum(axis=(1, 2))
        # ways out: owned cells some distance away, each counted by how early the hero gets there (up to a cap), so
        # a region the monsters are closing in on from two sides counts for little
        slack = np.minimum(threat_time - hero_steps, self.slack_cap)
        exits = np.where(owned & (hero_steps >= self.exit_steps), slack, 0).sum(axis=(1, 2))
        margins = threat_full[:, r, r]
        # the latest a monster can reach a cell the hero gets to first: how long the hero lasts by running there
        lasting = np.where(owned, np.minimum(threat_time, 1000), 0).max(axis=(1, 2)).astype(np.int32)
        # concave in each measure: a step of safety counts for much when little is left, for little when much is
        safety = (self.room_weight * np.log1p(rooms) + self.margin_weight * np.log1p(np.minimum(margins, 1000))
                  + self.exit_weight * np.log1p(exits) + self.lasting_weight * np.log1p(lasting))
        here = int(goal_field[mem.hero[1], mem.hero[0]]) if goal_field is not None else UNREACHABLE
        treasures = set(mem.treasures.values())
        # the monsters' windows around the outcomes that a monster can reach this step (predict reads no other)
        close = [k for k, o in enumerate(outcomes) if any(
            m[0] != o.cell and max(abs(m[0][0] - o.cell[0]), abs(m[0][1] - o.cell[1])) <= NEAR - m[1] - 1
            for m in monsters)]
        found = terrain.monster_windows([outcomes[k].cell for k in close]) if close else None
        windows = {k: found[i] for i, k in enumerate(close)} if found is not None else {}
        for k, o in enumerate(outcomes):
            hx, hz = o.cell
            for cells, _ in self.predict(windows.get(k, _NO_WINDOW), o.cell, monsters) if monsters else ():
                if any(max(abs(c[0] - hx), abs(c[1] - hz)) <= 1 for c in cells):
                    o.caught = True
            o.room, o.exits, o.margin, o.lasting = int(rooms[k]), int(exits[k]), int(margins[k]), int(lasting[k])
            value = float(safety[k])
            if here < UNREACHABLE and goal_field is not None:
                there = int(goal_field[hz, hx])
                if there < UNREACHABLE:
                    o.progress = here - there
            o.pickup = self.treasure_bonus * sum(1 for c in o.path if c in treasures)
            if takes_buff[k] and not mem.has_buff:
                o.pickup += self.buff_bonus if self._buff_welcome(mem, 1) else -self.buff_bonus
            if o.margin < self.critical_margin:  # a monster can be next to the hero after a step or two
                value -= self.critical_cost * (self.critical_margin - o.margin)
            if o.cell == mem.hero and monsters and o.margin < 2 * self.horizon:
                value -= self.stay_cost
            if o.flash:
                value -= self.flash_cost_late if mem.boosted else self.flash_cost
            o.value = value

    # ------------------------------------------------------------------------------------------------ goals
    def _goal_field(self, mem: Memory, terrain, fields: list[_Field]) -> np.ndarray | None:
        """The distance field of the current goal: the best seen treasure or buff (nearness, less a penalty where a
        monster gets there about as soon), else an unseen part of the map; a goal the hero has not come nearer to
        for ``stall_steps`` steps is dropped for ``ban_steps``."""
        step = mem.step
        best = self._item_goal(mem, terrain, fields)
        if best is None:
            unseen_left = mem.treasure_total - mem.treasures_collected - len(mem.treasures)
            if unseen_left > 0:
                target = self.explore_target
                if (target is None or mem.seen[target[1], target[0]] or self.banned.get(target, -1) >= step
                        or step >= self._explore_until):
                    target = self._explore_target(mem, terrain, fields)
                    self.explore_target = target
                    self._explore_until = step + self.explore_refresh
                best = target
        self.target, self.target_kind = best, (
            None if best is None else "treasure" if best in mem.treasures.values() else "buff"
            if best in mem.buffs.values() else "explore")
        if best is None:
            self.goal = None
            return None
        field = terrain.field(best, exact_near=mem.hero)
        d = int(field[mem.hero[1], mem.hero[0]])
        if best != self.goal:
            self.goal, self._goal_best, self._goal_since = best, d, step
        elif d < self._goal_best:
            self._goal_best, self._goal_since = d, step
        elif step - self._goal_since > self.stall_steps:
            self.banned[best] = step + self.ban_steps
            self.goal = None
        return field

    def _item_goal(self, mem: Memory, terrain, fields: list[_Field]) -> Cell | None:
        """The seen treasure or buff with the least cost: its distance plus the contest penalty (a buff's cost
        divided by its weight), or None."""
        step = mem.step
        weight = self.buff_weight_late if step + self.buff_stage >= mem.monster_speedup else self.buff_weight_early
        near = terrain.field(mem.hero)  # 4-connected: a cell's distance to the hero is the hero's to the cell
        items = [(cell, False) for cell in mem.treasures.values()]
        if self.use_buff and not mem.has_buff:
            items += [(cell, True) for oid, cell in mem.buffs.items()
                      if mem.buff_ready.get(oid, 0) <= step + int(near[cell[1], cell[0]])]
        best, best_score = None, float("inf")
        for cell, is_buff in items:
            if self.banned.get(cell, -1) >= step:
                continue
            d = int(near[cell[1], cell[0]])
            if d >= UNREACHABLE or (is_buff and not self._buff_welcome(mem, d)):
                continue
            score = (d + self._contest(fields, cell, d)) / (weight if is_buff else 1.0)
            if score < best_score:
                best, best_score = cell, score
        return best

    def _buff_welcome(self, mem: Memory, steps: int) -> bool:
        """Whether taking a buff ``steps`` from now is worth it: from shortly before the speed-up on (the buff is the
        way to outrun fast monsters), or early enough that it is back by then."""
        when = mem.step + steps
        return (when + self.buff_lead >= mem.monster_speedup
                or when + mem.buff_cooldown + self.buff_lead <= mem.monster_speedup)

    def _contest(self, fields: list[_Field], goal: Cell, d: int) -> float:
        """Extra cost of a goal ``d`` steps away that a monster reaches about as soon as the hero: the hero would
        walk into it."""
        extra = 0.0
        for f in fields:
            reach = f.delay + int(f.grid[goal[1], goal[0]]) / max(f.speed, 1)
            if reach < d + self.contest_margin:
                extra += self.contest_weight * (d + self.contest_margin - reach) + self.contest_base
        return extra

    def _explore_target(self, mem: Memory, terrain, fields: list[_Field]) -> Cell | None:
        """The unseen road cell the hero reaches soonest, less a penalty where a monster gets there about as soon."""
        unseen = terrain.walkable & ~mem.seen
        zs, xs = np.nonzero(unseen)
        if not xs.size:
            return None
        hero = terrain.field(mem.hero)[zs, xs].astype(np.float64)
        score = hero.copy()
        for f in fields:
            reach = f.delay + f.grid[zs, xs] / max(f.speed, 1)
            short = hero + self.contest_margin - reach
            score += np.where(short > 0, self.contest_weight * short + self.contest_base, 0.0)
        score[hero >= UNREACHABLE] = np.inf
        for cell, until in self.banned.items():
            if until >= mem.step:
                score[(xs == cell[0]) & (zs == cell[1])] = np.inf
        k = int(np.argmin(score))
        if not np.isfinite(score[k]):
            return None
        return int(xs[k]), int(zs[k])


# ------------------------------------------------------------------------------------------- observation only
class ObservationPlanner:
    """The planner on what the observation shows: :meth:`act` takes ``env_obs["observation"]`` (the input of the
    Agent's ``exploit()``), updates the :class:`~.memory.Memory` and decides on the believed terrain with the monsters
    as tracked. One instance plays one game at a time; a step number lower than the last starts a new game.

    :param use_flash: allow flash actions.
    :param use_buff: go for seen speed buffs.
    """

    def __init__(self, use_flash: bool = True, use_buff: bool = True) -> None:
        self.memory = Memory()
        self.terrain = BeliefTerrain(self.memory)
        self.planner = Planner(use_flash=use_flash, use_buff=use_buff)
        self.legal = np.zeros(16, dtype=bool)  # the last step's believed legal actions ...
        self.choice = -1  # ... and the action chosen

    def reset(self) -> None:
        """Forget the game."""
        self.memory.reset()
        self.terrain.clear()
        self.planner.reset()

    def observe(self, observation: dict) -> None:
        """Take one step's observation without deciding (the memory keeps up)."""
        if int(observation["env_info"]["step_no"]) < self.memory.step:
            self.terrain.clear()
        self.memory.update(observation)

    def act(self, observation: dict) -> int:
        """The action for this observation (call once per step, in order): chosen among the actions of
        :func:`believed_legal`."""
        self.observe(observation)
        self.legal = believed_legal(self.memory, self.terrain, observation["legal_action"])
        monsters = [(m.cell, m.speed, m.prev, m.axis) for m in self.memory.monsters]
        self.choice = self.planner.decide(self.memory, self.terrain, self.legal, monsters)
        return self.choice


def believed_legal(mem: Memory, terrain, legal_action) -> np.ndarray:
    """(16,) bool: the platform's legal actions less the moves whose first cell is a known obstacle (or fails the
    corner rule on the believed terrain) and the flashes that land in place. The platform marks every move legal;
    such a move leaves the hero where it is. If nothing is left, the platform's mask."""
    legal = np.asarray(legal_action, dtype=bool).copy()
    hx, hz = mem.hero
    for a, (dx, dz) in enumerate(DIRECTIONS):
        if legal[a] and not Planner._step_allowed(terrain, hx, hz, dx, dz):
            legal[a] = False
        if legal[8 + a] and terrain.flash_landing(mem.hero, a) is None:
            legal[8 + a] = False
    return legal if legal.any() else np.asarray(legal_action, dtype=bool)
