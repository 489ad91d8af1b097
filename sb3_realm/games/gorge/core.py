"""The game: typed state, reset with the spawn rules, one step as a sequence of plain phases, and the score. numpy only.

A step is: validate the action -> act (move with the corner rule, or flash) -> count the step and record the hero's
cell -> pick up treasures and a buff along the path -> move the monsters -> spawn monster 2 -> speed up the monsters ->
tick the timers -> test the catch -> test the step limit -> score. Cells are ``(x, z)`` with z growing to the south;
direction vectors are those of :data:`~sb3_realm.games.gorge.rules.DIRECTIONS` (action 2 is north, ``(0, -1)``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from .maps import UNREACHABLE, GorgeMap
from .rules import (
    AXIS_PENALTY,
    DIRECTIONS,
    FALLBACK_STEPS,
    MONSTER_INTERVAL_NEVER,
    MONSTER_INTERVAL_RANDOM,
    MONSTER_SPEEDUP_RANDOM,
    MONSTER_STEPS,
    N_ACTIONS,
    PATH_STEPS,
    PREV_PENALTY,
    GorgeConfig,
    Rules,
    check_action,
    diagonal_allowed,
    is_caught,
    spawn_ring_order,
    uniform_choice,
)

__all__ = ["COMPLETED", "FAILED", "RUNNING", "Buff", "Cell", "Game", "Monster", "StepEvents", "Treasure"]

Cell = tuple[int, int]  # (x, z)
RUNNING, FAILED, COMPLETED = "running", "failed", "completed"


class _ScalarIntegers:
    """``int(rng.integers(low, high + 1))`` called once per value, for the many draws of the items' placement: the
    same values, and the generator left in the same state, at a fraction of numpy's per-call cost.

    For a PCG64 generator (``np.random.default_rng``), numpy draws a bounded integer of a 32-bit range with Lemire's
    method on the bit generator's 32-bit outputs, each 64-bit output giving two of them (the spare half is kept in the
    generator's state). Here the 64-bit outputs are fetched in blocks, the method runs in Python, and :meth:`close`
    sets the generator to the state the scalar calls would have left: the start state advanced by the outputs used,
    with the spare half. Other bit generators, or a numpy whose draws differ (checked once at import), get the
    plain calls.
    """

    BLOCK = 64  # 64-bit outputs fetched at a time

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.fast = _EXACT_PCG64 and type(rng.bit_generator) is np.random.PCG64
        if self.fast:
            self.start: dict[str, Any] = dict(rng.bit_generator.state)
            self.spare_ready, self.spare = self.start["has_uint32"], self.start["uinteger"]
            self.outputs: list[int] = []
            self.next = 0
            self.used = 0
        else:
            self.integer = self._plain  # type: ignore[method-assign]

    def _plain(self, low: int, high: int) -> int:
        return int(self.rng.integers(low, high + 1))

    def integer(self, low: int, high: int) -> int:
        """A uniform integer in ``low..high`` (inclusive), as ``rng.integers(low, high + 1)`` draws it."""
        span = high - low
        if span == 0:
            return low
        excl = span + 1
        threshold = -1
        while True:
            if self.spare_ready:  # the bit generator's next 32-bit output, inlined: this is the hot loop
                self.spare_ready = 0
                m = self.spare * excl
            else:
                if self.next == len(self.outputs):
                    self.outputs = self.rng.bit_generator.random_raw(self.BLOCK).tolist()
                    self.next = 0
                value = self.outputs[self.next]
                self.next += 1
                self.used += 1
                self.spare_ready, self.spare = 1, value >> 32
                m = (value & 0xFFFFFFFF) * excl
            leftover = m & 0xFFFFFFFF
            if leftover >= excl:
                return low + (m >> 32)
            if threshold < 0:
                threshold = (0xFFFFFFFF - span) % excl
            if leftover >= threshold:
                return low + (m >> 32)

    def stream(self, low: int, high: int) -> Generator[int, None, None]:
        """The values of successive :meth:`integer` calls with the same ``low`` and ``high``, drawn a block of
        outputs at a time with numpy (the same values, and :meth:`close` leaves the same state). Use either this or
        :meth:`integer` on one instance, not both."""
        span = high - low
        if not self.fast or span == 0:
            while True:
                yield self.integer(low, high)
        excl = span + 1
        threshold = (0xFFFFFFFF - span) % excl  # Lemire: a 32-bit draw is kept when its low product word is >= this
        if self.spare_ready:
            self.spare_ready = 0
            m = self.spare * excl
            if m & 0xFFFFFFFF >= threshold:
                yield low + (m >> 32)
        block = self.BLOCK
        halves = np.empty(2 * block, dtype=np.uint64)
        while True:
            raw = self.rng.bit_generator.random_raw(block)
            high_words = raw >> np.uint64(32)
            halves[0::2] = raw & np.uint64(0xFFFFFFFF)  # each output gives its low half first, then its high half
            halves[1::2] = high_words
            products = halves * np.uint64(excl)
            kept = np.flatnonzero(products & np.uint64(0xFFFFFFFF) >= np.uint64(threshold)).tolist()
            values = (products >> np.uint64(32)).tolist()
            spares = high_words.tolist()
            used = self.used
            for j in kept:
                k = j >> 1
                self.used = used + k + 1
                self.spare_ready, self.spare = 1 - (j & 1), spares[k]  # numpy keeps the high half even once used
                yield low + values[j]
            self.used, self.spare_ready, self.spare = used + block, 0, spares[-1]

    def close(self) -> None:
        """Leave the generator where the scalar calls would have."""
        if not self.fast or (not self.outputs and not self.used and self.spare_ready == self.start["has_uint32"]):
            return
        bits: Any = self.rng.bit_generator  # a PCG64 (checked in __init__)
        bits.state = self.start
        if self.used:
            bits.advance(self.used)
        state = dict(bits.state)
        state["has_uint32"], state["uinteger"] = self.spare_ready, self.spare
        bits.state = state


def _pcg64_draws_match() -> bool:
    """Whether :class:`_ScalarIntegers` reproduces this numpy's ``Generator.integers`` (values and state)."""
    plain, fast = np.random.default_rng(12345), np.random.default_rng(12345)
    spans = [(5, 123), (0, 0), (11, 2000), (0, 1), (3, 7)] * 40
    expected = [int(plain.integers(lo, hi + 1)) for lo, hi in spans]
    draws = _ScalarIntegers.__new__(_ScalarIntegers)
    draws.rng, draws.fast = fast, True
    draws.start = dict(fast.bit_generator.state)
    draws.spare_ready, draws.spare = draws.start["has_uint32"], draws.start["uinteger"]
    draws.outputs, draws.next, draws.used = [], 0, 0
    got = [draws.integer(lo, hi) for lo, hi in spans]
    draws.close()
    return got == expected and fast.bit_generator.state == plain.bit_generator.state and (
        fast.integers(1 << 20) == plain.integers(1 << 20))


_EXACT_PCG64 = False
_EXACT_PCG64 = _pcg64_draws_match()


_DEFAULT_CONFIG = GorgeConfig()
_UNSEEDED = np.random.default_rng()  # a new Game's generator until its reset


@lru_cache(maxsize=64)
def _ring(radius: int) -> tuple[tuple[int, int], ...]:
    """:func:`~sb3_realm.games.gorge.rules.spawn_ring_order`, built once per radius (every reset walks the rings)."""
    return tuple(spawn_ring_order(radius))


@dataclass
class Treasure:
    """A treasure on the map (collected ones are removed from the game)."""

    entity_id: int
    cell: Cell


@dataclass
class Buff:
    """A speed buff: it stays in place; after a pickup it is invisible until its respawn counter runs out."""

    entity_id: int
    cell: Cell
    visible: bool = True
    respawn_counter: int = 0  # steps until visible again; 0 while visible


@dataclass(eq=False)
class Monster:
    """A monster: its cell, speed (cells per step) and the memory that shapes its next move."""

    entity_id: int
    cell: Cell
    speed: int
    start: Cell  # spawn cell
    prev: Cell | None = None  # the cell it left with its last sub-step
    last_axis: str | None = None  # "x" or "z": the axis of its last sub-step


@dataclass
class StepEvents:
    """What happened in the last step (for rewards, metrics and the protocol layer)."""

    action: int = -1
    path: tuple[Cell, ...] = ()  # cells entered by the move or crossed by the flash (obstacles included)
    flash: bool = False  # a flash was executed (the cooldown started), the in-place flash included
    flash_in_place: bool = False  # the flash found no road cell to land on
    flash_on_cooldown: bool = False  # a flash action while cooling down: nothing happened
    treasures: tuple[int, ...] = ()  # entity ids collected this step
    buff: int | None = None  # entity id of the buff picked up this step
    monster_spawned: bool = False  # monster 2 appeared this step
    speed_up: bool = False  # the monsters sped up this step
    caught: bool = False  # a monster stood within Chebyshev 1 of the hero after the step
    reward: float = 0.0  # total_score after the step minus before it


@dataclass(eq=False)
class Game:
    """One episode of Gorge Chase on one map. Call :meth:`reset` with a config and a generator, then :meth:`step`.

    :param game_map: the map.
    :param rules: the engine values (default: those in force on the platform).
    """

    game_map: GorgeMap
    rules: Rules = field(default_factory=Rules)
    config: GorgeConfig = field(default_factory=lambda: _DEFAULT_CONFIG, init=False)  # frozen: one instance serves
    # replaced by reset; a fresh generator would cost tens of microseconds of OS entropy per Game
    rng: np.random.Generator = field(default_factory=lambda: _UNSEEDED, init=False, repr=False)
    step_no: int = field(default=0, init=False)
    status: str = field(default=RUNNING, init=False)
    hero: Cell = field(default=(0, 0), init=False)
    hero_id: int = field(default=0, init=False)
    treasures: list[Treasure] = field(default_factory=list, init=False)
    buffs: list[Buff] = field(default_factory=list, init=False)
    monsters: list[Monster] = field(default_factory=list, init=False)
    flash_cooldown: int = field(default=0, init=False)  # 0 = ready
    buff_remaining: int = field(default=0, init=False)  # steps of buff left; 0 = no buff
    treasures_collected: int = field(default=0, init=False)
    flash_count: int = field(default=0, init=False)  # executed flashes, in-place ones included
    buff_pickups: int = field(default=0, init=False)
    second_spawned: bool = field(default=False, init=False)  # monster 2 spawned, or its spawn was decided against
    boosted: bool = field(default=False, init=False)  # the monsters' speed-up happened
    monster_interval: int = field(default=0, init=False)  # the episode's value (a drawn one when configured as -1)
    monster_speedup: int = field(default=0, init=False)  # the episode's value (a drawn one when configured as -1)
    history: deque[tuple[int, Cell]] = field(default_factory=deque, init=False)  # (step, hero cell), newest last
    terminated: bool = field(default=False, init=False)
    truncated: bool = field(default=False, init=False)
    events: StepEvents = field(default_factory=StepEvents, init=False)
    _next_id: int = field(default=1, init=False, repr=False)

    # -------------------------------------------------------------------------------------------------- reset
    def reset(self, config: GorgeConfig | None = None, rng: np.random.Generator | None = None) -> None:
        """Start an episode: draw the random config values, spawn treasures, buffs, the hero and monster 1.

        Draws from ``rng`` in the spec's order: [monster_interval] -> [speed-up step] -> treasure attempts (x then z)
        -> buff attempts -> hero (twice, the first draw discarded) -> monster 1's ring cell.

        :param config: the episode configuration (default: the shipped ``env_conf``).
        :param rng: the generator of every draw of the episode (default: a fresh unseeded one).
        """
        if config is not None and not isinstance(config, GorgeConfig):
            raise ValueError(f"config must be a GorgeConfig (build one with GorgeConfig.from_usr_conf(dict)), got "
                             f"{type(config).__name__}")
        if rng is not None and not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got "
                             f"{type(rng).__name__}")
        self.config = config or _DEFAULT_CONFIG
        self.rng = rng if rng is not None else np.random.default_rng()
        cfg = self.config
        self.monster_interval = cfg.monster_interval
        if self.monster_interval == MONSTER_INTERVAL_RANDOM:
            self.monster_interval = int(self.rng.integers(11, 2001))
        self.monster_speedup = cfg.monster_speedup
        if self.monster_speedup == MONSTER_SPEEDUP_RANDOM:
            self.monster_speedup = int(self.rng.integers(1, 2001))
        self.step_no, self.status = 0, RUNNING
        self.treasures_collected = self.flash_count = self.buff_pickups = 0
        self.flash_cooldown = self.buff_remaining = 0
        self.second_spawned = self.boosted = False
        self.terminated = self.truncated = False
        self.history = deque(maxlen=self.rules.history_length)
        self.monsters = []
        self.events = StepEvents()
        self._next_id = 1
        r = self.rules
        self.treasures = [Treasure(self._new_id(), cell) for cell in
                          self._place_items(cfg.treasure_count, r.treasure_min_distance, strictly_farther=True)]
        self.buffs = [Buff(self._new_id(), cell) for cell in
                      self._place_items(cfg.buff_count, r.buff_min_distance, strictly_farther=False)]
        self.hero = self._spawn_hero()
        self.hero_id = self._new_id()
        self.history.append((0, self.hero))
        if r.monster_count >= 1 and r.monster_speed > 0:
            self._spawn_first_monster()

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _place_items(self, count: int, min_distance: float, strictly_farther: bool) -> list[Cell]:
        """Cells of ``count`` items: up to ``spawn_attempts`` random cells per item with the distance test against
        the items placed before (treasures: farther than ``min_distance``; buffs: at least ``min_distance``), then
        up to ``fallback_attempts`` without it. An item that finds no road cell is left out."""
        r, game_map = self.rules, self.game_map
        walk, w, h = game_map._walk_flat, game_map._w, game_map._h  # is_road, inlined: this loop draws ~100 times
        limit = min_distance * min_distance
        placed: list[Cell] = []
        draws = _ScalarIntegers(self.rng)  # rng.integers(lo, hi + 1), one value per call, without numpy's call cost
        values = draws.stream(r.spawn_min, r.spawn_max)
        try:
            for _ in range(count):
                cell = None
                for _ in range(r.spawn_attempts):
                    x = next(values)
                    z = next(values)
                    if not (0 <= x < w and 0 <= z < h and walk[z * w + x]):
                        continue
                    if strictly_farther:
                        far = all((x - px) ** 2 + (z - pz) ** 2 > limit for px, pz in placed)
                    else:
                        far = all((x - px) ** 2 + (z - pz) ** 2 >= limit for px, pz in placed)
                    if far:
                        cell = (x, z)
                        break
                if cell is None:
                    for _ in range(r.fallback_attempts):
                        x = next(values)
                        z = next(values)
                        if 0 <= x < w and 0 <= z < h and walk[z * w + x]:
                            cell = (x, z)
                            break
                if cell is not None:
                    placed.append(cell)
        finally:
            values.close()
            draws.close()
        return placed

    def _spawn_hero(self) -> Cell:
        """A uniform road cell without a treasure or a buff (assumption Q15); the script draws twice and keeps the
        second draw."""
        m = self.game_map
        free = np.ones(m.road_count + 1, dtype=bool)
        for x, z in [t.cell for t in self.treasures] + [b.cell for b in self.buffs]:
            free[m.road_id(x, z)] = False
        candidates = np.flatnonzero(free[:-1])
        if candidates.size == 0:
            raise ValueError(f"map {m.name!r}: no road cell is free of treasures and buffs for the hero; use a map "
                             "with more road cells or fewer items")
        uniform_choice(self.rng, candidates.size)  # the discarded first draw
        x, z = m.road_xz[candidates[uniform_choice(self.rng, candidates.size)]]
        return int(x), int(z)

    def _spawn_first_monster(self) -> None:
        """Monster 1 on a uniform road cell of the Chebyshev ring of radius ``monster_ring`` around the hero, or of the
        largest smaller ring with a road cell; none when no road cell lies within that radius."""
        hx, hz = self.hero
        is_road = self.game_map.is_road
        for radius in range(self.rules.monster_ring, 0, -1):
            ring = [(hx + dx, hz + dz) for dx, dz in _ring(radius) if is_road(hx + dx, hz + dz)]
            if ring:
                cell = ring[uniform_choice(self.rng, len(ring))]
                speed = self.rules.monster_speed + self.rules.monster_speed_bonus + (1 if self.boosted else 0)
                self.monsters.append(Monster(self._new_id(), cell, speed, cell))
                return

    # --------------------------------------------------------------------------------------------------- step
    def step(self, action: int) -> StepEvents:
        """Play one step with ``action`` (0..7 move, 8..15 flash); returns (and stores in :attr:`events`) what
        happened."""
        if self.status != RUNNING:
            raise ValueError(f"the episode is over (status {self.status!r} at step {self.step_no}); call reset() "
                             "before step()")
        a = check_action(action)
        events = StepEvents(action=a)
        score_before = self.total_score
        path = self._move_hero(a) if a < 8 else self._flash(a - 8, events)
        events.path = tuple(path)
        self.step_no += 1
        self.history.append((self.step_no, self.hero))
        cells = path or [self.hero]  # an empty path checks the hero's own cell
        self._collect_treasures(cells, events)
        self._collect_buff(cells, events)
        self._move_monsters()
        self._spawn_second_monster(events)
        self._speed_up(events)
        self._tick()
        if any(is_caught(m.cell, self.hero) for m in self.monsters):
            self.status = FAILED
            events.caught = True
        if self.step_no >= self.config.max_step:
            self.status = COMPLETED  # reaching the limit wins over a catch in the same step
        self.truncated = self.step_no >= self.config.max_step
        self.terminated = self.status != RUNNING and not self.truncated
        events.reward = self.total_score - score_before
        self.events = events
        return events

    def _move_hero(self, direction: int) -> list[Cell]:
        """Move up to ``player_speed + player_move_bonus (+ buff_extra_speed while buffed)`` cells in ``direction``,
        cell by cell, stopping before the first cell that fails the corner rule; returns the cells entered."""
        r = self.rules
        length = r.player_speed + r.player_move_bonus + (r.buff_extra_speed if self.has_buff else 0)
        dx, dz = DIRECTIONS[direction]
        path: list[Cell] = []
        x, z = self.hero
        for _ in range(length):
            if not diagonal_allowed(self.game_map, x, z, dx, dz):
                break
            x, z = x + dx, z + dz
            path.append((x, z))
        self.hero = (x, z)
        return path

    def _flash(self, direction: int, events: StepEvents) -> list[Cell]:
        """Flash in ``direction``: land on the farthest road cell of the line (10 cells straight, 8 diagonal), walls
        in between ignored; returns the cells from the hero to the landing cell. No road cell: an in-place flash.

        assumption Q14: a flash while cooling down does nothing (no move, cooldown and flash count unchanged); the step
        goes on and the hero's own cell is checked for pickups.
        """
        if self.flash_cooldown > 0:
            events.flash_on_cooldown = True
            return []
        dx, dz = DIRECTIONS[direction]
        reach = self.rules.flash_distance_diagonal if dx and dz else self.rules.flash_distance
        hx, hz = self.hero
        path: list[Cell] = []
        for k in range(reach, 0, -1):
            if self.game_map.is_road(hx + k * dx, hz + k * dz):
                path = [(hx + j * dx, hz + j * dz) for j in range(1, k + 1)]
                self.hero = path[-1]
                break
        events.flash = True
        events.flash_in_place = not path
        self.flash_cooldown = self.config.talent_cooldown
        self.flash_count += 1
        return path

    def _collect_treasures(self, cells: list[Cell], events: StepEvents) -> None:
        """Collect every remaining treasure on ``cells``, in path order."""
        if not self.treasures or all(t.cell not in cells for t in self.treasures):
            return  # the usual step: nothing to collect
        got: list[int] = []
        for cell in cells:
            for t in [t for t in self.treasures if t.cell == cell]:
                self.treasures.remove(t)
                got.append(t.entity_id)
        self.treasures_collected += len(got)
        events.treasures = tuple(got)

    def _collect_buff(self, cells: list[Cell], events: StepEvents) -> None:
        """Pick up the first visible buff on ``cells`` (path order, then spawn order): at most one per step."""
        for cell in cells:
            for b in self.buffs:
                if b.visible and b.cell == cell:
                    b.visible = False
                    b.respawn_counter = self.config.buff_cooldown
                    self.buff_remaining = self.rules.buff_duration  # a pickup while buffed restarts the duration
                    self.buff_pickups += 1
                    events.buff = b.entity_id
                    return

    # ---------------------------------------------------------------------------------------------- monsters
    def _move_monsters(self) -> None:
        """Each monster in spawn order takes ``speed`` sub-steps to a 4-neighbour that minimises the BFS distance to
        the hero plus the back-step and same-axis penalties; ties are drawn uniformly. Every distance is read from the
        map's cached BFS row of the hero's cell (:meth:`~sb3_realm.games.gorge.maps.GorgeMap.distance_row`)."""
        if not self.monsters:
            return
        m = self.game_map
        hero = self.hero
        source = m.road_id(*hero)
        if source == m.road_count:
            m.distances_to(*hero, ())  # raises the map's error for a hero off the road
        if all(mon.cell == hero for mon in self.monsters):
            return
        row, unreachable = m.distance_view(source), m.row_unreachable
        h, w = m.walkable.shape
        index = m._index_flat
        occupied = {mon.cell: mon for mon in self.monsters}
        for mon in self.monsters:
            x, z = mon.cell
            if mon.cell == hero:
                continue
            if not (0 <= x < w and 0 <= z < h) or row[index[z * w + x]] == unreachable:
                self._greedy_step(mon, occupied)
            else:
                self._chase(mon, row, occupied)

    def _chase(self, mon: Monster, row: memoryview, occupied: dict[Cell, Monster]) -> None:
        """The ``speed`` sub-steps of a monster with a path to the hero; ``row`` holds the BFS distances from the
        hero's cell by road id."""
        m = self.game_map
        h, w = m.walkable.shape
        index, nbr, none, unreachable = m._index_flat, m._nbr_flat, m.road_count, m.row_unreachable
        start, path, step = mon.cell, None, 1
        for _ in range(mon.speed):
            best: list[tuple[Cell, str]] = []
            best_score = UNREACHABLE
            x, z = mon.cell
            base = 4 * (index[z * w + x] if 0 <= x < w and 0 <= z < h else none)
            for k in range(4):  # MONSTER_STEPS = STEPS_4, the order of the neighbour table
                d = row[nbr[base + k]]
                if d == unreachable:
                    continue
                dx, dz = MONSTER_STEPS[k]
                cell = (x + dx, z + dz)
                if occupied.get(cell, mon) is not mon:
                    continue
                axis = "x" if dx else "z"
                score = 100 * d + (PREV_PENALTY if cell == mon.prev else 0) + (
                    AXIS_PENALTY if axis == mon.last_axis else 0)
                if score < best_score:
                    best, best_score = [(cell, axis)], score
                elif score == best_score:
                    best.append((cell, axis))
            if best:
                cell, axis = best[uniform_choice(self.rng, len(best))]
            else:
                # every 4-neighbour is blocked or taken: the script falls back to the A* path's next cell; the index
                # advances with every sub-step, so this cell need not be adjacent
                if path is None:
                    path = self._shortest_path(start)
                if step >= len(path):
                    break
                cell = path[step]
                axis = "x" if cell[0] != x else ("z" if cell[1] != z else "none")
            if occupied.get(cell, mon) is not mon:
                break
            del occupied[mon.cell]
            mon.prev, mon.last_axis, mon.cell = mon.cell, axis, cell
            occupied[cell] = mon
            step += 1

    def _shortest_path(self, start: Cell) -> list[Cell]:
        """A 4-connected shortest path from ``start`` to the hero (both included), down the BFS distances, trying
        neighbours in the order of :data:`~sb3_realm.games.gorge.rules.PATH_STEPS`."""
        m = self.game_map
        dist = m.distance_field(*self.hero)  # (H, W); rare: only when a monster's four neighbours are all taken
        path = [start]
        x, z = start
        d = int(dist[z, x])
        while d > 0:
            for dx, dz in PATH_STEPS:
                if m.is_road(x + dx, z + dz) and int(dist[z + dz, x + dx]) == d - 1:
                    x, z, d = x + dx, z + dz, d - 1
                    path.append((x, z))
                    break
        return path

    def _greedy_step(self, mon: Monster, occupied: dict[Cell, Monster]) -> None:
        """The move of a monster with no path to the hero: one cell (whatever its speed) to the 8-neighbour that
        minimises the Chebyshev distance to the hero plus the back-step penalty; it sets ``prev``, not the axis."""
        hx, hz = self.hero
        x, z = mon.cell
        best: list[Cell] = []
        best_score = UNREACHABLE
        for dx, dz in FALLBACK_STEPS:
            cell = (x + dx, z + dz)
            if occupied.get(cell, mon) is not mon or not diagonal_allowed(self.game_map, x, z, dx, dz):
                continue
            score = 100 * max(abs(cell[0] - hx), abs(cell[1] - hz)) + (PREV_PENALTY if cell == mon.prev else 0)
            if score < best_score:
                best, best_score = [cell], score
            elif score == best_score:
                best.append(cell)
        if best:
            cell = best[uniform_choice(self.rng, len(best))]
            del occupied[mon.cell]
            mon.prev, mon.cell = mon.cell, cell
            occupied[cell] = mon

    def _spawn_second_monster(self, events: StepEvents) -> None:
        """From step ``monster_interval`` on, once: monster 2 appears where the hero stood ``spawn_delay`` steps ago
        (or at the oldest kept position), moved to the nearest free road cell of the rings around it when that cell
        is an obstacle or monster 1's."""
        if self.second_spawned:
            return
        r = self.rules
        if self.monster_interval == MONSTER_INTERVAL_NEVER or r.monster_count < 2:
            self.second_spawned = True
            return
        if self.step_no < self.monster_interval:
            return
        self.second_spawned = True  # decided, even when no cell is found below
        if r.monster_speed <= 0:
            return
        target = self.step_no - r.spawn_delay
        cell: Cell | None = next((c for s, c in self.history if s == target), self.history[0][1])
        if cell is not None and not self.game_map.is_road(*cell):
            cell = self._ring_search(cell, lambda c: True)
        if cell is not None and any(mon.cell == cell for mon in self.monsters):
            taken = {mon.cell for mon in self.monsters}
            cell = self._ring_search(cell, lambda c: c not in taken)
        if cell is None:
            return
        speed = r.monster_speed + r.monster_speed_bonus + (1 if self.boosted else 0)
        self.monsters.append(Monster(self._new_id(), cell, speed, cell))
        events.monster_spawned = True

    def _ring_search(self, center: Cell, accept: Callable[[Cell], bool]) -> Cell | None:
        """The first road cell passing ``accept`` on the rings of radius 1..spawn_search_radius around ``center``."""
        cx, cz = center
        for radius in range(1, self.rules.spawn_search_radius + 1):
            for dx, dz in _ring(radius):
                cell = (cx + dx, cz + dz)
                if self.game_map.is_road(*cell) and accept(cell):
                    return cell
        return None

    def _speed_up(self, events: StepEvents) -> None:
        """From step ``monster_speedup`` on, once: every monster that exists gains one cell of speed."""
        if not self.boosted and self.step_no >= self.monster_speedup:
            for mon in self.monsters:
                mon.speed += 1
            self.boosted = True
            events.speed_up = True

    def _tick(self) -> None:
        """Count down the buff, the buffs' respawn counters and the flash cooldown.

        assumption Q19: this runs in the step of the pickup or flash, so the state after it reads ``duration - 1`` and
        ``cooldown - 1``.
        """
        if self.buff_remaining > 0:
            self.buff_remaining -= 1
        for b in self.buffs:
            if b.respawn_counter > 0:
                b.respawn_counter -= 1
                if b.respawn_counter == 0:
                    b.visible = True
        if self.flash_cooldown > 0:
            self.flash_cooldown -= 1

    # ------------------------------------------------------------------------------------------------ queries
    @property
    def has_buff(self) -> bool:
        """Whether the hero moves ``buff_extra_speed`` cells farther per move."""
        return self.buff_remaining > 0

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def step_score(self) -> float:
        return self.step_no * self.rules.step_score_multiplier

    @property
    def treasure_score(self) -> float:
        return self.treasures_collected * self.rules.treasure_value

    @property
    def total_score(self) -> float:
        """The competition score so far: ``1.5 * step + 100 * treasures collected``."""
        return self.step_score + self.treasure_score

    def legal_actions(self) -> np.ndarray:
        """(16,) bool: the 8 moves always, the 8 flashes while the cooldown is 0."""
        mask = np.ones(N_ACTIONS, dtype=bool)
        mask[8:] = self.flash_cooldown == 0
        return mask
