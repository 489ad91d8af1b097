"""A rollout search for Gorge Chase over what the agent believes: the game rebuilt from the planner's memory, each
action tried on a copy and followed by the planner for ``horizon`` steps, the best by score and survival played.
numpy and the standard library only.

This module is copied into competition submissions with :mod:`.memory` and :mod:`.planner` (one folder), so it
imports nothing from sb3_realm and runs inside the Agent's ``exploit()`` under a time budget.

The believed world (:class:`World`) is the game as the memory knows it: the terrain seen, with each cell never seen
taken as road or, in a pessimistic sample, as an obstacle for the hero; the monsters as tracked (cell, speed, last
move), monster 2's spawn cell and step, the speed-up step, the treasures and buffs seen with their respawn times, the
flash cooldown and the buff. It steps by the game's rules (docs/gorge/rules.md): the hero's move with the corner rule
or its flash, the pickups on the path, each monster's sub-steps to the 4-neighbour nearest the hero (back-step and
same-axis penalties, ties drawn from the world's own generator), monster 2's spawn, the speed-up, the timers, the
catch at Chebyshev 1 and the step limit.

:class:`ObservationSearch` plays the planner's action unless the planner, followed on the believed world, is caught
within ``horizon`` steps. Then every distinct outcome of the legal actions (moves and flashes) is tried on each world
sample and followed by the planner; an action's value is the score its rollouts gain plus ``survival_value`` for each
rollout still running at the horizon, averaged over the samples, and the best is played (the planner's action when
none is better). The planner's own rollout is kept from step to step while the game goes as it predicted, so a step
that goes as predicted costs one rollout step. Deterministic for a given ``seed``.
"""

from __future__ import annotations

import copy
import random
import time
from typing import Tuple  # noqa: UP035

import numpy as np

from .memory import (
    AXIS_PENALTY,
    DIRECTIONS,
    HERO_REACH,
    PREV_PENALTY,
    STEPS_4,
    UNREACHABLE,
    VIEW_RANGE,
    Memory,
    Tracked,
    distance_field,
)
from .planner import BeliefTerrain, ObservationPlanner, Planner, believed_legal

__all__ = ["STEP_SCORE", "TREASURE_SCORE", "HeroFields", "ObservationSearch", "RolloutPolicy", "World",
           "memory_signature"]

# typing's forms: module-level aliases are evaluated at import, also on the platform's older Pythons
Cell = Tuple[int, int]  # noqa: UP006

STEP_SCORE = 1.5  # score per step survived
TREASURE_SCORE = 100.0  # score per treasure
#: a monster with no path to the hero steps to one of these 8 neighbours (the engine's order)
FALLBACK_STEPS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
RUNNING, FAILED, COMPLETED = "running", "failed", "completed"


def ring_order(radius: int) -> list[Cell]:
    """Offsets of the Chebyshev ring of ``radius``, z ascending then x ascending (the spawn search's order)."""
    return [(dx, dz) for dz in range(-radius, radius + 1) for dx in range(-radius, radius + 1)
            if max(abs(dx), abs(dz)) == radius]


class HeroFields:
    """4-connected distance fields from the hero's cells on one fixed grid, kept by cell: a field is searched until
    the cells asked for are reached plus a few levels, and kept with the level up to which it is exact.

    :param walkable: the (H, W) bool grid (not changed while this object is used).
    :param size: fields kept (least recently made dropped first).
    """

    def __init__(self, walkable: np.ndarray, size: int = 512) -> None:
        self.walkable = walkable
        self.size = size
        self._got: dict[Cell, tuple[np.ndarray, memoryview, int]] = {}

    def get(self, hero: Cell, near: list[Cell], extra: int = 4) -> tuple[np.ndarray, memoryview]:
        """``(field, flat view)``: exact up to ``extra`` levels past the farthest cell of ``near`` (at most
        :data:`~.memory.HERO_REACH` levels; farther road cells read a lower bound)."""
        got = self._got.get(hero)
        if got is not None:
            field, flat, exact = got
            w = field.shape[1]
            if all(flat[z * w + x] + extra <= exact for x, z in near
                   if 0 <= x < w and 0 <= z < field.shape[0]):
                return field, flat
        field = distance_field(self.walkable, hero, near, extra, HERO_REACH)
        finite = field[field < UNREACHABLE]
        exact = int(finite.max()) - 1 if finite.size else UNREACHABLE
        if exact >= HERO_REACH - 1 or not near:
            exact = max(exact, HERO_REACH - 1)
        if len(self._got) >= self.size:
            self._got.pop(next(iter(self._got)))
        flat = field.reshape(-1).data
        self._got[hero] = (field, flat, exact)
        return field, flat


class World:
    """The believed game (see the module docstring): a small state stepped by the game's rules.

    Build one with :meth:`from_memory`; :meth:`copy` is cheap (the grid and the field cache are shared).
    """

    def __init__(self) -> None:
        self.step = 0
        self.max_step = 1000
        self.hero: Cell = (0, 0)
        self.flash_cd = 0
        self.talent_cooldown = 100
        self.buff_remaining = 0
        self.buff_cooldown = 100
        self.treasures: dict[int, Cell] = {}
        self.buffs: list[list] = []  # [id, cell, visible, steps until visible]
        self.monsters: list[list] = []  # [cell, speed, prev, axis]
        self.monster_speed = 1
        self.monster_interval = -2
        self.monster_speedup = 10 ** 6
        self.boosted = False
        self.second_spawned = True
        self.spawn_step = -1
        self.spawn_cell: Cell | None = None
        self.collected = 0
        self.status = RUNNING
        self.rules: dict = {}
        self.rng = random.Random(0)
        self.set_grid(np.ones((1, 1), dtype=bool))

    # ------------------------------------------------------------------------------------------------ build
    def set_grid(self, walkable: np.ndarray, fields: HeroFields | None = None) -> None:
        """Play on ``walkable`` ((H, W) bool, road for the hero and the monsters alike) with ``fields`` (a
        :class:`HeroFields` of that grid to share; default: a new one)."""
        self.walkable = walkable
        self._road = walkable.reshape(-1).data
        self._hero_road = self._road  # the cells the hero can enter (a pessimistic world: fewer than the monsters)
        self.fields = fields if fields is not None else HeroFields(walkable)

    @classmethod
    def from_memory(cls, mem: Memory, walkable: np.ndarray | None = None, fields: HeroFields | None = None,
                    seed: int = 0, flash_cooldown: int | None = None) -> World:
        """The world a memory believes in (after its update for this step), on ``walkable`` (default: the memory's
        believed terrain, cells never seen as road) with ``fields`` (a :class:`HeroFields` of that grid to share) and
        the observation's ``flash_cooldown`` (default: none when the flash is ready, else the whole cooldown)."""
        w = cls()
        w.set_grid(mem.walkable if walkable is None else walkable, fields)
        w.step, w.max_step, w.hero = mem.step, mem.max_step, mem.hero
        w.talent_cooldown = mem.talent_cooldown
        left = mem.talent_cooldown if flash_cooldown is None else flash_cooldown
        w.flash_cd = 0 if mem.flash_ready else max(1, int(left))
        w.buff_remaining, w.buff_cooldown = mem.buff_remaining, mem.buff_cooldown
        w.treasures = dict(mem.treasures)
        w.buffs = []
        for oid, cell in mem.buffs.items():
            wait = max(0, mem.buff_ready.get(oid, 0) - mem.step)
            w.buffs.append([oid, cell, wait == 0, wait])
        w.monsters = [[m.cell, m.speed, m.prev, m.axis] for m in mem.monsters]
        w.monster_speed = mem.monster_speed
        w.monster_interval, w.monster_speedup = mem.monster_interval, mem.monster_speedup
        w.boosted = mem.boosted
        w.rules = dict(mem.rules)
        w.second_spawned = mem.second_decided
        w.spawn_step = mem.monster_interval - mem.rules["spawn_delay"]
        w.spawn_cell = mem.history.get(w.spawn_step) if w.spawn_step <= mem.step else None
        if w.spawn_cell is None and w.spawn_step < mem.step and not w.second_spawned:
            w.spawn_cell = mem.spawn_cell or mem.hero
        w.collected = mem.treasures_collected
        w.status = RUNNING
        w.rng = random.Random(seed)
        return w

    def copy(self, seed: int | None = None) -> World:
        """A copy to step on its own (a new tie generator from ``seed``, else a copy of this one's)."""
        w = copy.copy(self)
        w.treasures = dict(self.treasures)
        w.buffs = [list(b) for b in self.buffs]
        w.monsters = [list(m) for m in self.monsters]
        if seed is None:
            w.rng = random.Random()
            w.rng.setstate(self.rng.getstate())
        else:
            w.rng = random.Random(seed)
        return w

    # ------------------------------------------------------------------------------------------------ queries
    def is_road(self, x: int, z: int) -> bool:
        h, w = self.walkable.shape
        return 0 <= x < w and 0 <= z < h and bool(self._road[z * w + x])

    def hero_road(self, x: int, z: int) -> bool:
        """Whether the hero can enter the cell (the monsters' road, less the cells a pessimistic world closes)."""
        h, w = self.walkable.shape
        return 0 <= x < w and 0 <= z < h and bool(self._hero_road[z * w + x])

    def pessimistic(self, closed: np.ndarray) -> World:
        """A copy in which the hero cannot enter the cells of ``closed`` ((H, W) bool; the monsters still can)."""
        w = self.copy()
        w._hero_road = (self.walkable & ~closed).reshape(-1).data
        return w

    @property
    def score(self) -> float:
        """The competition score of the world's step count and treasures (absolute, as the game's)."""
        return STEP_SCORE * self.step + TREASURE_SCORE * self.collected

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    def legal(self) -> np.ndarray:
        """(16,) bool: the 8 moves, the 8 flashes while the cooldown is 0 (the platform's mask)."""
        mask = np.ones(16, dtype=bool)
        mask[8:] = self.flash_cd == 0
        return mask

    def signature(self) -> tuple:
        """What the search compares with the memory after the next observation (:func:`memory_signature`): the
        step, the hero's cell, the monsters' cells and the treasures left (where the game went as the world
        predicted, these agree)."""
        return (self.step, self.hero, tuple(m[0] for m in self.monsters), len(self.treasures))

    # --------------------------------------------------------------------------------------------------- step
    def step_action(self, action: int) -> None:
        """Play one step (0..7 move, 8..15 flash) by the game's rules."""
        a = int(action)
        path = self._move(a) if a < 8 else self._flash(a - 8)
        self.step += 1
        if self.step == self.spawn_step:
            self.spawn_cell = self.hero
        cells = path or [self.hero]
        if self.treasures:
            for oid in [oid for oid, cell in self.treasures.items() if cell in cells]:
                del self.treasures[oid]
                self.collected += 1
        for cell in cells:
            hit = next((b for b in self.buffs if b[2] and b[1] == cell), None)
            if hit is not None:
                hit[2], hit[3] = False, self.buff_cooldown
                self.buff_remaining = self.rules["buff_duration"]
                break
        self._move_monsters()
        self._spawn_second()
        if not self.boosted and self.step >= self.monster_speedup:
            for m in self.monsters:
                m[1] += 1
            self.boosted = True
        if self.buff_remaining > 0:
            self.buff_remaining -= 1
        for b in self.buffs:
            if b[3] > 0:
                b[3] -= 1
                if b[3] == 0:
                    b[2] = True
        if self.flash_cd > 0:
            self.flash_cd -= 1
        hx, hz = self.hero
        if any(abs(m[0][0] - hx) <= 1 and abs(m[0][1] - hz) <= 1 for m in self.monsters):
            self.status = FAILED
        if self.step >= self.max_step:
            self.status = COMPLETED

    def _allowed(self, x: int, z: int, dx: int, dz: int, road=None) -> bool:
        """The corner rule on the monsters' road (``road``: another test of a cell, the hero's)."""
        road = road or self.is_road
        if not road(x + dx, z + dz):
            return False
        return dx == 0 or dz == 0 or road(x + dx, z) or road(x, z + dz)

    def _move(self, direction: int) -> list[Cell]:
        length = 1 + (self.rules["buff_extra_speed"] if self.buff_remaining > 0 else 0)
        dx, dz = DIRECTIONS[direction]
        x, z = self.hero
        path = []
        for _ in range(length):
            if not self._allowed(x, z, dx, dz, self.hero_road):
                break
            x, z = x + dx, z + dz
            path.append((x, z))
        self.hero = (x, z)
        return path

    def _flash(self, direction: int) -> list[Cell]:
        if self.flash_cd > 0:
            return []
        dx, dz = DIRECTIONS[direction]
        reach = self.rules["flash_distance_diagonal"] if dx and dz else self.rules["flash_distance"]
        hx, hz = self.hero
        path: list[Cell] = []
        for k in range(reach, 0, -1):
            if self.hero_road(hx + k * dx, hz + k * dz):
                path = [(hx + j * dx, hz + j * dz) for j in range(1, k + 1)]
                self.hero = path[-1]
                break
        self.flash_cd = self.talent_cooldown
        return path

    def hero_field(self) -> tuple[np.ndarray, memoryview]:
        """The distance field from the hero's cell, exact past the monsters, treasures and buffs."""
        near = [m[0] for m in self.monsters] + list(self.treasures.values()) + [b[1] for b in self.buffs]
        return self.fields.get(self.hero, near, 4)

    def _move_monsters(self) -> None:
        if not self.monsters or all(m[0] == self.hero for m in self.monsters):
            return
        _, row = self.hero_field()
        h, w = self.walkable.shape
        occupied = {m[0]: i for i, m in enumerate(self.monsters)}
        for i, m in enumerate(self.monsters):
            x, z = m[0]
            if m[0] == self.hero:
                continue
            if not (0 <= x < w and 0 <= z < h) or row[z * w + x] >= UNREACHABLE:
                self._greedy(i, m, occupied)
                continue
            for _ in range(m[1]):
                x, z = m[0]
                best: list[tuple[Cell, str]] = []
                best_score = UNREACHABLE
                for dx, dz in STEPS_4:
                    nx, nz = x + dx, z + dz
                    if not (0 <= nx < w and 0 <= nz < h):
                        continue
                    d = row[nz * w + nx]
                    if d >= UNREACHABLE or occupied.get((nx, nz), i) != i:
                        continue
                    axis = "x" if dx else "z"
                    s = 100 * d + (PREV_PENALTY if (nx, nz) == m[2] else 0) + (AXIS_PENALTY if axis == m[3] else 0)
                    if s < best_score:
                        best, best_score = [((nx, nz), axis)], s
                    elif s == best_score:
                        best.append(((nx, nz), axis))
                if not best:
                    break  # every neighbour blocked or taken (the engine's rare path fallback: taken as staying)
                cell, axis = best[self.rng.randrange(len(best))] if len(best) > 1 else best[0]
                if occupied.get(m[0]) == i:  # (two tracked monsters may share a believed cell)
                    del occupied[m[0]]
                m[2], m[3], m[0] = m[0], axis, cell
                occupied[cell] = i

    def _greedy(self, i: int, m: list, occupied: dict) -> None:
        hx, hz = self.hero
        x, z = m[0]
        best: list[Cell] = []
        best_score = UNREACHABLE
        for dx, dz in FALLBACK_STEPS:
            cell = (x + dx, z + dz)
            if occupied.get(cell, i) != i or not self._allowed(x, z, dx, dz):
                continue
            s = 100 * max(abs(cell[0] - hx), abs(cell[1] - hz)) + (PREV_PENALTY if cell == m[2] else 0)
            if s < best_score:
                best, best_score = [cell], s
            elif s == best_score:
                best.append(cell)
        if best:
            cell = best[self.rng.randrange(len(best))] if len(best) > 1 else best[0]
            if occupied.get(m[0]) == i:
                del occupied[m[0]]
            m[2], m[0] = m[0], cell
            occupied[cell] = i

    def _spawn_second(self) -> None:
        if self.second_spawned or self.step < self.monster_interval:
            return
        self.second_spawned = True
        if self.monster_interval < 0 or self.rules.get("monster_count", 2) < 2:
            return
        cell = self.spawn_cell or self.hero
        taken = {m[0] for m in self.monsters}
        if not self.is_road(*cell) or cell in taken:
            x, z = cell
            found = next(((x + dx, z + dz) for r in range(1, 11) for dx, dz in ring_order(r)
                          if self.is_road(x + dx, z + dz) and (x + dx, z + dz) not in taken), None)
            if found is None:
                return
            cell = found
        self.monsters.append([cell, self.monster_speed + (1 if self.boosted else 0), None, None])


def memory_signature(mem: Memory) -> tuple:
    """:meth:`World.signature` of what a memory holds after its update."""
    return (mem.step, mem.hero, tuple(m.cell for m in mem.monsters), len(mem.treasures))


# ------------------------------------------------------------------------------------------------ rollout policy
class _RolloutMemory(Memory):
    """A :class:`~.memory.Memory` that mirrors a :class:`World` for the planner (no observation is read)."""

    def __init__(self, source: Memory, walkable: np.ndarray, fields: HeroFields, shared: bool) -> None:
        self.__dict__.update(source.__dict__)
        self.walkable = walkable
        self.fields = fields
        self.seen = source.seen.copy()
        self.history = {}
        self.treasures = {}
        self.buffs = {}
        self.buff_ready = {}
        if not shared:  # a grid of its own: nothing of the source's change log applies
            self.changed = np.zeros(walkable.shape, dtype=np.int64)
            self.wall_log = []
            self.updates = 0
        self._hero_field = None

    def hero_field(self) -> np.ndarray:
        near = [m.cell for m in self.monsters] + list(self.treasures.values()) + list(self.buffs.values())
        return self.fields.get(self.hero, near, 4)[0]

    def mirror(self, world: World) -> None:
        """Take the world's state (once per rollout step, before the planner decides)."""
        self.step, self.hero = world.step, world.hero
        self.flash_ready = world.flash_cd == 0
        self.buff_remaining = world.buff_remaining
        self.treasures = world.treasures
        self.treasures_collected = world.collected
        self.treasures_left = len(world.treasures) + max(0, self.treasure_total - world.collected - len(
            world.treasures))
        self.buffs = {b[0]: b[1] for b in world.buffs}
        self.buff_ready = {b[0]: world.step + b[3] for b in world.buffs}
        self.monsters = [Tracked(m[0], m[2], m[3], m[1]) for m in world.monsters]
        if world.spawn_cell is not None:
            self.history = {world.spawn_step: world.spawn_cell}
        hx, hz = world.hero
        r = VIEW_RANGE
        self.seen[max(0, hz - r):hz + r + 1, max(0, hx - r):hx + r + 1] = True


class RolloutPolicy:
    """The planner playing a :class:`World`: a copy of a live planner's goals, a memory mirroring the world and the
    searches of the world's grid (shared with the live planner's when the grid is the memory's own).

    :param agent: the live :class:`~.planner.ObservationPlanner` (its planner's goals and memory are copied).
    :param world: the world it will play (its grid and field cache are used).
    """

    def __init__(self, agent: ObservationPlanner, world: World) -> None:
        shared = world.walkable is agent.memory.walkable
        self.memory = _RolloutMemory(agent.memory, world.walkable, world.fields, shared)
        self.terrain = BeliefTerrain(self.memory)
        if shared:  # the live terrain's windows and fields stay valid on the same grid
            self.terrain._fields = agent.terrain._fields
            self.terrain._hero = agent.terrain._hero
            self.terrain._monster = agent.terrain._monster
        self.planner = _copy_planner(agent.planner)

    def clone(self) -> RolloutPolicy:
        """A copy with its own goals and memory (the searches shared)."""
        other = copy.copy(self)
        other.memory = copy.copy(self.memory)
        other.memory.seen = self.memory.seen.copy()
        other.planner = _copy_planner(self.planner)
        return other

    def act(self, world: World) -> int:
        self.memory.mirror(world)
        legal = believed_legal(self.memory, self.terrain, world.legal())
        monsters = [(m.cell, m.speed, m.prev, m.axis) for m in self.memory.monsters]
        return self.planner.decide(self.memory, self.terrain, legal, monsters)


def _copy_planner(planner: Planner) -> Planner:
    other = copy.copy(planner)
    other.banned = dict(planner.banned)
    return other


# --------------------------------------------------------------------------------------------------- the search
class ObservationSearch:
    """The rollout search on what the observation shows (see the module docstring): :meth:`act` takes
    ``env_obs["observation"]`` as the Agent's ``exploit()`` receives it and returns an action; :meth:`decide` searches
    after a planner shared with the features has taken the observation, around another policy's proposal.

    :param horizon: steps each rollout looks ahead.
    :param pessimistic: also roll out on a world where the hero cannot enter the cells never seen (the monsters still
        cross them; the planner, which takes them as road, finds its way blocked there): an action's value is the
        mean over the two worlds.
    :param ties: rollouts per sample with other draws of the monsters' ties.
    :param survival_value: value of a rollout still running at the horizon (score units); default ``1.5 * horizon``.
    :param max_rollout_steps: the work of one call, in world steps played by rollouts: once spent, no further action
        is tried (the deterministic budget; None: no limit).
    :param budget_ms: the time of one call: once spent, no further action is tried (None: no limit; the actions then
        depend on the machine's speed).
    :param seed: seed of the worlds' tie generators.
    :param refresh: steps after which the kept rollout is played again from the new state.
    :param use_flash: let the planner flash (the search tries flashes where this allows them).
    :param use_buff: let the planner go for seen speed buffs.
    :param agent: the :class:`~.planner.ObservationPlanner` to search with, shared with its owner (the features'
        ``FeatureState.planner``), who updates it with each observation and resets it for a new game; default: one of
        the search's own, updated by :meth:`act`.
    """

    name = "search"

    def __init__(self, horizon: int = 80, pessimistic: bool = False, ties: int = 1,
                 survival_value: float | None = None, max_rollout_steps: int | None = None,
                 budget_ms: float | None = None, seed: int = 0, refresh: int = 10, use_flash: bool = True,
                 use_buff: bool = True, agent: ObservationPlanner | None = None) -> None:
        if horizon < 1 or ties < 1 or refresh < 1:
            raise ValueError(f"horizon = {horizon}, ties = {ties}, refresh = {refresh}: each must be >= 1")
        if max_rollout_steps is not None and max_rollout_steps < 0:
            raise ValueError(f"max_rollout_steps = {max_rollout_steps} must be >= 0 (or None: no limit)")
        self.horizon = int(horizon)
        self.pessimistic = bool(pessimistic)
        self.ties = int(ties)
        self.survival_value = STEP_SCORE * horizon if survival_value is None else float(survival_value)
        self.max_rollout_steps = max_rollout_steps
        self.budget_ms = budget_ms
        self.seed = int(seed)
        self.refresh = int(refresh)
        self._own_agent = agent is None
        self.agent = ObservationPlanner(use_flash=use_flash, use_buff=use_buff) if agent is None else agent
        self.reset()

    def reset(self) -> None:
        """Forget the game (and the planner's memory of it, where the planner is the search's own)."""
        if self._own_agent:
            self.agent.reset()
        self._new_game()

    def _new_game(self) -> None:
        self._kept: tuple | None = None  # (signatures by step, end world, end policy, caught step)
        self._since = 0
        self._flash_cd = 0
        self._last_step = -1
        self._spent = 0
        self.searched = 0  # states searched this game
        self.changed = 0  # ... where the search played another action than the proposal
        self.values: dict[int, float] = {}  # the last search's value of each action tried

    @property
    def spent(self) -> int:
        """World steps the rollouts of the last call played (the work :attr:`max_rollout_steps` bounds)."""
        return self._spent

    @property
    def memory(self) -> Memory:
        return self.agent.memory

    def act(self, observation: dict) -> int:
        """The action for this observation (call once per step, in order): the search around the planner's
        choice."""
        self.agent.act(observation)
        return self.decide(observation)

    def decide(self, observation: dict, proposal: int | None = None) -> int:
        """The action for this observation, which the planner has just taken (its ``act()``, or the features'
        ``encode`` with the ``FeatureState`` whose planner this search shares): ``proposal`` (default: the planner's
        choice) unless, where ``proposal`` followed by the planner is caught within the horizon on the believed
        world, another action's rollouts are worth more."""
        start = time.perf_counter()
        mem = self.agent.memory
        if mem.step < self._last_step:
            self._new_game()
        self._last_step = mem.step
        self._spent = 0
        base = self.agent.choice if proposal is None else int(proposal)
        self._flash_cd = int(observation["frame_state"]["heroes"]["flash_cooldown"])
        self.values = {}
        if not mem.monsters:
            self._kept = None
            return base
        caught = self._base_caught(base)
        if caught is None:
            return base
        choice = self._search(base, start)
        if choice != base:
            self._kept = None
            self.changed += 1
        return choice

    # ------------------------------------------------------------------------------------------------ internals
    def _worlds(self) -> list[World]:
        mem = self.agent.memory
        world = self._world()
        if not self.pessimistic:
            return [world]
        return [world, world.pessimistic(~mem.seen)]

    def _world(self) -> World:
        mem = self.agent.memory
        return World.from_memory(mem, seed=self.seed + mem.step, flash_cooldown=self._flash_cd)

    def _base_caught(self, base: int) -> int | None:
        """The step at which the planner's rollout on the believed world is caught within the horizon (None: it is
        not). The rollout is kept and extended while the game goes as it predicted."""
        mem = self.agent.memory
        kept = self._kept
        if kept is not None and self._since < self.refresh and memory_signature(mem) == kept[0].get(mem.step):
            signatures, world, policy, caught = kept
            self._since += 1
        else:
            world = self._world()
            policy = RolloutPolicy(self.agent, world)
            signatures, caught = {}, None
            world.step_action(base)
            signatures[world.step] = world.signature()
            if not world.running:
                caught = world.step if world.status == FAILED else None
            self._since = 0
        while caught is None and world.running and world.step < mem.step + self.horizon:
            world.step_action(policy.act(world))
            self._spent += 1
            signatures[world.step] = world.signature()
            if world.status == FAILED:
                caught = world.step
        self._kept = (signatures, world, policy, caught)
        return caught if caught is not None and caught <= mem.step + self.horizon else None

    def _search(self, base: int, start: float) -> int:
        mem = self.agent.memory
        landings = self.agent.planner.landings
        actions = [base] + [o.action for o in self.agent.planner.outcomes
                            if o.action != base and o.cell != landings[base]]
        worlds = self._worlds()
        policies = [RolloutPolicy(self.agent, w) for w in worlds]
        self.searched += 1
        best, best_value = base, -float("inf")
        for a in actions:
            if a != base and ((self.budget_ms is not None and (time.perf_counter() - start) * 1000 > self.budget_ms)
                              or (self.max_rollout_steps is not None and self._spent >= self.max_rollout_steps)):
                break
            total, count = 0.0, 0
            for k, world in enumerate(worlds):
                policy = policies[k]
                for t in range(self.ties):
                    total += self._rollout(world.copy(seed=self.seed + 7919 * t + mem.step), policy.clone(), a)
                    count += 1
            value = total / count
            self.values[a] = value
            if value > best_value:
                best, best_value = a, value
        return best

    def _rollout(self, world: World, policy: RolloutPolicy, first: int) -> float:
        start_score, end = world.score, world.step + self.horizon
        world.step_action(first)
        while world.running and world.step < end:
            world.step_action(policy.act(world))
            self._spent += 1
        value = world.score - start_score
        if world.status != FAILED:
            value += self.survival_value
        return value
