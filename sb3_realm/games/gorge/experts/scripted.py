"""The scripted yardstick of Gorge Chase: the planner of :mod:`..planner` (flee along the monsters' distance fields,
keep escape room, take the treasures and buffs seen when that is safe, explore, flash when cornered) handed what the
game knows rather than what the hero sees.

Knowledge: the whole terrain (the open maps are public), the monsters' cells, speeds and last moves (their rule, spec
4.7, predicts their next move), the timers and configured steps of the episode (monster 2 appears where the hero
stood ``spawn_delay`` steps before ``monster_interval``), and only the treasures and buffs the hero has seen in its
21 x 21 view, remembered across steps. The observation-only planner (:class:`~..planner.ObservationPlanner`) makes the
same decisions on the terrain it has seen and the monsters it tracks.

The hero's step distances within Chebyshev ``RADIUS`` of every road cell are precomputed per map (``(road cells, 33,
33)`` bytes, with a small table of monster distances and the flash landings; 1-2 s per open map, cached per map
object), so a step costs one batch of ``(outcomes, 33, 33)`` array operations and the monsters' BFS rows.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass, fields

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..maps import STEPS_4, GorgeMap
from ..memory import FAR, Memory, Tracked
from ..planner import HERO_LEVELS, NEAR, RADIUS, Planner
from ..rules import DIRECTIONS

__all__ = ["RADIUS", "LocalTables", "ScriptedPolicy", "TrueTerrain", "local_tables"]

Cell = tuple[int, int]

_FIELD_CACHE = 32  # goal distance fields kept per map


# ----------------------------------------------------------------------------------------------- per-map tables
def _window_bfs(walkable: np.ndarray, road_xz: np.ndarray, radius: int, diagonal: bool, levels: int = FAR - 1,
                chunk: int = 512) -> np.ndarray:
    """Distances from every road cell to the cells of its ``(2r+1, 2r+1)`` window, over paths that stay inside the
    window: 4-connected steps, or the hero's 8 moves with the corner rule (``diagonal``). Many sources are searched
    at once, one array level per BFS level, up to ``levels`` levels.

    :return: (N, 2r+1, 2r+1) uint8, ``[id, dz + r, dx + r]``; :data:`FAR` where not reached (or >= 255).
    """
    h, w = walkable.shape
    size = 2 * radius + 1
    pad = np.zeros((h + 2 * radius, w + 2 * radius), dtype=bool)
    pad[radius:radius + h, radius:radius + w] = walkable
    views = sliding_window_view(pad, (size, size))
    steps = list(STEPS_4) + ([d for d in DIRECTIONS if d[0] and d[1]] if diagonal else [])

    def shifted(a: np.ndarray, dx: int, dz: int) -> np.ndarray:
        """``out[p] = a[p + (dx, dz)]`` (False beyond the window)."""
        out = np.zeros_like(a)
        out[:, max(0, -dz):size - max(0, dz), max(0, -dx):size - max(0, dx)] = \
            a[:, max(0, dz):size - max(0, -dz), max(0, dx):size - max(0, -dx)]
        return out

    n = len(road_xz)
    table = np.empty((n, size, size), dtype=np.uint8)
    for lo in range(0, n, chunk):
        xs, zs = road_xz[lo:lo + chunk, 0], road_xz[lo:lo + chunk, 1]
        win = views[zs, xs]  # (K, size, size): the terrain around each source
        # a diagonal step from p needs one of the two orthogonal cells between p and the target to be road
        corner = {(dx, dz): shifted(win, dx, 0) | shifted(win, 0, dz) for dx, dz in steps if dx and dz}
        dist = np.full(win.shape, FAR, dtype=np.uint8)
        dist[:, radius, radius] = 0
        reached = np.zeros(win.shape, dtype=bool)
        reached[:, radius, radius] = True
        front = reached.copy()
        for level in range(1, levels + 1):
            new = np.zeros_like(front)
            for dx, dz in steps:
                f = front & corner[(dx, dz)] if dx and dz else front
                new[:, max(0, dz):size - max(0, -dz), max(0, dx):size - max(0, -dx)] |= \
                    f[:, max(0, -dz):size - max(0, dz), max(0, -dx):size - max(0, dx)]
            new &= win
            new &= ~reached
            if not new.any():
                break
            reached |= new
            dist[new] = level
            front = new
        table[lo:lo + len(xs)] = dist
    table.setflags(write=False)
    return table


@dataclass(eq=False)
class LocalTables:
    """What the scripted policy precomputes for one map.

    :param monster: (N, 13, 13) uint8 4-connected distances (a monster's walk) around every road cell.
    :param hero: (N, 33, 33) uint8 hero moves (8 directions, corner rule) around every road cell, up to
        ``HERO_LEVELS``.
    :param flash: (N, 8) int32 road id where a flash from each road cell lands per direction (N: in place).
    """

    game_map: GorgeMap
    monster: np.ndarray
    hero: np.ndarray
    flash: np.ndarray

    def __post_init__(self) -> None:
        self._fields: OrderedDict[Cell, np.ndarray] = OrderedDict()
        m = self.game_map
        n, r = m.road_count, RADIUS
        h, w = m.walkable.shape
        pad = np.full((h + 2 * r, w + 2 * r), n, dtype=np.intp)
        pad[r:r + h, r:r + w] = m.road_index
        self._id_views = sliding_window_view(pad, (2 * r + 1, 2 * r + 1))

    def window_ids(self, xs: np.ndarray, zs: np.ndarray) -> np.ndarray:
        """(K, 33, 33) road ids of the windows centred on the cells ``(xs[k], zs[k])`` (``road_count`` off the
        road)."""
        return self._id_views[zs, xs]

    def field(self, cell: Cell) -> np.ndarray:
        """(H, W) int32 4-connected distances from ``cell`` (kept for the last few goals)."""
        got = self._fields.get(cell)
        if got is None:
            got = self.game_map.distance_field(*cell)
            self._fields[cell] = got
            if len(self._fields) > _FIELD_CACHE:
                self._fields.popitem(last=False)
        else:
            self._fields.move_to_end(cell)
        return got


_TABLES: weakref.WeakKeyDictionary[GorgeMap, LocalTables] = weakref.WeakKeyDictionary()


def local_tables(game_map: GorgeMap) -> LocalTables:
    """The tables of ``game_map``, computed on first use and cached while the map object lives."""
    got = _TABLES.get(game_map)
    if got is None:
        walkable, road_xz = game_map.walkable, game_map.road_xz
        n = game_map.road_count
        flash = np.full((n, 8), n, dtype=np.int32)
        h, w = walkable.shape
        for d, (dx, dz) in enumerate(DIRECTIONS):
            reach = 8 if dx and dz else 10
            for k in range(1, reach + 1):  # the farthest road cell on the line wins: later k overwrite
                x, z = road_xz[:, 0] + k * dx, road_xz[:, 1] + k * dz
                inside = (x >= 0) & (x < w) & (z >= 0) & (z < h)
                ok = np.zeros(n, dtype=bool)
                ok[inside] = walkable[z[inside], x[inside]]
                flash[ok, d] = game_map.road_index[z[ok], x[ok]]
        flash.setflags(write=False)
        got = LocalTables(game_map, _window_bfs(walkable, road_xz, NEAR, False),
                          _window_bfs(walkable, road_xz, RADIUS, True, HERO_LEVELS), flash)
        _TABLES[game_map] = got
    return got


# ----------------------------------------------------------------------------------------------------- policy
class TrueTerrain:
    """The planner's searches answered from a map's precomputed :class:`LocalTables` (the true terrain)."""

    def __init__(self, tables: LocalTables) -> None:
        self.tables = tables
        self.game_map = tables.game_map
        self.walkable = tables.game_map.walkable

    def is_road(self, x: int, z: int) -> bool:
        return self.game_map.is_road(x, z)

    def hero_windows(self, cells: list[Cell], levels: int = HERO_LEVELS) -> np.ndarray:
        m = self.game_map
        return self.tables.hero[m.road_index[[c[1] for c in cells], [c[0] for c in cells]]]

    def monster_windows(self, cells: list[Cell]) -> np.ndarray:
        m = self.game_map
        return self.tables.monster[m.road_index[[c[1] for c in cells], [c[0] for c in cells]]]

    def flash_landing(self, cell: Cell, direction: int) -> Cell | None:
        m = self.game_map
        land = int(self.tables.flash[m.road_id(*cell), direction])
        if land == m.road_count:
            return None
        return int(m.road_xz[land, 0]), int(m.road_xz[land, 1])

    def field(self, cell: Cell, exact_near: Cell | None = None) -> np.ndarray:
        return self.tables.field(cell)

    def threat_fields(self, monsters: list[tuple[Cell, int]], hero: Cell) -> list[tuple[np.ndarray, int]]:
        return [(self.game_map.distance_field(*cell), speed) for cell, speed in monsters]


class ScriptedPolicy(Planner):
    """The scripted yardstick (see the module docstring): the :class:`~..planner.Planner` with the true terrain and
    the monsters' true states. Deterministic: it draws no random numbers. The planner's class attributes are its
    weights and thresholds (set them on an instance to try others).

    :param env: a :class:`~sb3_realm.games.gorge.env.GorgeEnv` (its map's tables are built on first use).
    :param use_flash: allow flash actions.
    :param use_buff: go for seen speed buffs (buffs on the way are still picked up).
    """

    name = "scripted"

    def __init__(self, env, use_flash: bool = True, use_buff: bool = True) -> None:
        super().__init__(use_flash=use_flash, use_buff=use_buff)
        self.memory = Memory()
        self.terrain: TrueTerrain | None = None

    def reset(self, env=None) -> None:
        """Forget the last episode (call at the start of each episode)."""
        super().reset()
        if getattr(self, "memory", None) is not None:
            self.memory.reset()
        game = getattr(env, "game", None)
        if game is not None:
            self.terrain = TrueTerrain(local_tables(game.game_map))

    def act(self, env, obs=None) -> int:
        """The action for the env's current state (``obs`` is not used: the state is read from ``env``)."""
        game = env.game
        if self.terrain is None or self.terrain.game_map is not game.game_map:
            self.terrain = TrueTerrain(local_tables(game.game_map))
        mem = self.memory
        mem.rules = {f.name: getattr(game.rules, f.name) for f in fields(game.rules) if f.name in mem.rules}
        monsters = [Tracked(m.cell, m.prev, m.last_axis, m.speed) for m in game.monsters]
        picked = game.events.buff if game.step_no > 0 else None
        mem.update(env.platform_obs()["observation"], picked_buff=picked, monsters=monsters)
        legal = game.legal_actions()  # the platform's mask: a move into a wall is the way to stand still
        return self.decide(mem, self.terrain, legal, [(m.cell, m.speed, m.prev, m.axis) for m in monsters])
