"""The robot_vacuum simulator: one episode's state and its step, after docs/vacuum/rules.md (reset §4, step §5).

The robot moves one cell a step in 8 directions, pays 1 battery a step (also when the move is blocked), cleans the
dirty cell it enters and refills on a charger's 3 x 3 footprint; the official robots walk at random inside the square
around their spawn points and clean the cells they enter. The episode fails when the battery reaches 0 or an
official robot comes within Chebyshev distance 1, and is completed at ``max_step``.

Random draws, in order (the engine's generator is unknown): the charger subset, the official robots' spawn points,
the robot's spawn cell; then each step one direction per official robot, in their order.
"""

from __future__ import annotations

import numpy as np

from .rules import CHARGER_HALF, DIRECTIONS, N_ACTIONS, NPC_RADIUS, SIZE, Rules, VacuumConfig, can_move

__all__ = ["FAIL_BATTERY", "FAIL_COLLISION", "VacuumGame", "charger_footprints"]

FAIL_BATTERY = "battery"
FAIL_COLLISION = "collision"
_SPAWN_TRIES = 400  # random draws per official robot before its separation is relaxed


def charger_footprints(chargers) -> np.ndarray:
    """(SIZE, SIZE) bool: the cells of the 3 x 3 footprints of chargers given by their centres ``(x, z)``."""
    mask = np.zeros((SIZE, SIZE), dtype=bool)
    for cx, cz in chargers:
        mask[max(0, cz - CHARGER_HALF):cz + CHARGER_HALF + 1, max(0, cx - CHARGER_HALF):cx + CHARGER_HALF + 1] = True
    return mask


class VacuumGame:
    """One episode (reset on construction).

    :param game_map: the map (``walkable`` (SIZE, SIZE) bool ``[z, x]``, ``chargers``: its charger spots' centres).
    :param config: the episode configuration.
    :param rng: the episode's random generator.
    :param rules: the assumptions' switches (None: the defaults).
    :param hero: the robot's spawn cell ``(x, z)`` (None: drawn).
    :param npc_spawns: the official robots' spawn points (None: drawn; else ``robot_count`` cells).
    :param chargers: indices of the map's charger spots that are active (None: drawn when ``charger_count`` is below
        the map's spots, else all).
    """

    def __init__(self, game_map, config: VacuumConfig, rng: np.random.Generator, rules: Rules | None = None,
                 hero=None, npc_spawns=None, chargers=None) -> None:
        self.game_map, self.config, self.rng = game_map, config, rng
        self.rules = rules if rules is not None else Rules()
        self.walkable = np.asarray(game_map.walkable, dtype=bool)
        spots = list(game_map.chargers)
        if chargers is None:
            count = min(config.charger_count, len(spots))
            chosen = range(len(spots)) if count == len(spots) else sorted(
                int(i) for i in rng.choice(len(spots), size=count, replace=False))
        else:
            chosen = [int(i) for i in chargers]
            if not chosen or any(not 0 <= i < len(spots) for i in chosen) or len(set(chosen)) < len(chosen):
                raise ValueError(f"chargers = {chargers!r}: give distinct indices of the map's charger spots "
                                 f"0..{len(spots) - 1}")
        self.charger_ids = tuple(chosen)  # the active spots' indices (the observation's config_id)
        self.chargers = tuple(spots[i] for i in chosen)
        self.charger_mask = charger_footprints(self.chargers)
        self.dirty = self.walkable & ~self.charger_mask
        self.total_dirt = int(self.dirty.sum())
        self.npc_spawns = self._npc_spawns(npc_spawns)
        self.npcs = [list(p) for p in self.npc_spawns]
        self.x, self.z = self._hero_spawn(hero)
        self.battery = config.battery_max
        self.step_no = 0
        self.clean_score = 0
        self.npc_cleaned = 0
        self.charge_count = 0
        self.blocked = 0  # moves that did not move the robot
        self.terminated = self.truncated = False
        self.fail_reason = ""
        self.cleaned_cell: tuple[int, int] | None = None
        self.events: list[str] = []
        self._on_charger = bool(self.charger_mask[self.z, self.x])

    # ------------------------------------------------------------------------------------------------ reset
    def _free_cells(self) -> np.ndarray:
        """(N, 2) int ``(x, z)`` of the road cells outside the chargers' footprints."""
        zs, xs = np.nonzero(self.walkable & ~self.charger_mask)
        return np.stack([xs, zs], axis=1)

    def _npc_spawns(self, given) -> tuple[tuple[int, int], ...]:
        count = self.config.robot_count
        if given is not None:
            cells = [tuple(int(v) for v in p) for p in given]
            if len(cells) != count or any(not self.walkable[z, x] for x, z in cells):
                raise ValueError(f"npc_spawns = {given!r}: give {count} road cells (x, z), one per official robot")
            return tuple(cells)
        free = self._free_cells()
        separation = self.rules.npc_separation
        while True:
            chosen: list[tuple[int, int]] = []
            for _ in range(count):
                for _ in range(_SPAWN_TRIES):
                    x, z = (int(v) for v in free[int(self.rng.integers(len(free)))])
                    if all(max(abs(x - a), abs(z - b)) >= separation for a, b in chosen):
                        chosen.append((x, z))
                        break
                else:
                    break
            if len(chosen) == count:
                return tuple(chosen)
            separation = max(3, separation - 2)  # the map has no room for squares this far apart: relax

    def _hero_spawn(self, given) -> tuple[int, int]:
        if given is not None:
            x, z = (int(v) for v in given)
            if not (0 <= x < SIZE and 0 <= z < SIZE) or not self.walkable[z, x]:
                raise ValueError(f"hero = {given!r}: the robot's spawn must be a road cell (x, z) of the map")
            return x, z
        free = self._free_cells()
        far = np.ones(len(free), dtype=bool)
        for sx, sz in self.npc_spawns:
            far &= np.abs(free[:, 0] - sx) + np.abs(free[:, 1] - sz) > self.rules.hero_separation
        if far.any():
            free = free[far]
        x, z = free[int(self.rng.integers(len(free)))]
        return int(x), int(z)

    # ------------------------------------------------------------------------------------------------ step
    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def step(self, action: int) -> int:
        """Play one step; the number of cells the robot cleaned in it (0 or 1)."""
        if self.terminated or self.truncated:
            raise ValueError("the episode is over; reset the env before stepping again")
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) \
                or not 0 <= action < N_ACTIONS:
            raise ValueError(f"action = {action!r}: it must be a whole number in 0..{N_ACTIONS - 1}")
        events = []
        dx, dz = DIRECTIONS[int(action)]
        moved = can_move(self.walkable, self.x, self.z, dx, dz)
        if moved:
            self.x += dx
            self.z += dz
        else:
            self.blocked += 1
            events.append("blocked")
        self.step_no += 1
        self.battery -= 1
        cleaned = 0
        self.cleaned_cell = None
        if moved and self.dirty[self.z, self.x]:  # a blocked move (a stay) cleans nothing, not even a dirty spawn
            self.dirty[self.z, self.x] = False
            self.clean_score += 1
            cleaned = 1
            self.cleaned_cell = (self.x, self.z)
            events.append("clean")
        on_charger = bool(self.charger_mask[self.z, self.x])
        if on_charger:
            self.battery = self.config.battery_max
            if self.rules.charge_every_step or not self._on_charger:
                self.charge_count += 1
            events.append("charge")
        self._on_charger = on_charger
        self._move_npcs()
        if self.nearest_npc() <= 1:
            self.terminated, self.fail_reason = True, FAIL_COLLISION
            events.append("collision")
        elif self.battery <= 0:
            self.terminated, self.fail_reason = True, FAIL_BATTERY
            events.append("battery")
        elif self.step_no >= self.config.max_step:
            self.truncated = True
        self.events = events
        return cleaned

    def _move_npcs(self) -> None:
        if not self.npcs:
            return
        draws = self.rng.integers(len(DIRECTIONS), size=len(self.npcs))
        walkable, dirty = self.walkable, self.dirty
        for npc, (sx, sz), d in zip(self.npcs, self.npc_spawns, draws):
            dx, dz = DIRECTIONS[int(d)]
            x, z = npc
            if abs(x + dx - sx) <= NPC_RADIUS and abs(z + dz - sz) <= NPC_RADIUS and can_move(walkable, x, z, dx, dz):
                x += dx
                z += dz
                npc[0], npc[1] = x, z
                if dirty[z, x]:
                    dirty[z, x] = False
                    self.npc_cleaned += 1

    def nearest_npc(self) -> int:
        """The Chebyshev distance from the robot to the nearest official robot (SIZE when there is none)."""
        return min((max(abs(x - self.x), abs(z - self.z)) for x, z in self.npcs), default=SIZE)

    @property
    def dirt_left(self) -> int:
        """Dirty cells left (neither the robot nor an official robot has cleaned them)."""
        return self.total_dirt - self.clean_score - self.npc_cleaned

    @property
    def score(self) -> int:
        """The task score: cells the robot cleaned."""
        return self.clean_score
