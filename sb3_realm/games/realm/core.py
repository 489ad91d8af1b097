"""The game: state, one step as a sequence of plain phases, and the score. numpy only.

A step is: validate the action -> act (move with sub-steps and wall sliding, or flash) -> pick up treasures, the buff
and the end within the pickup radius -> count the step, terminate or truncate -> crop the local windows, then mark
the visit. Timers are absolute step numbers (``talent_ready_at`` ...), so nothing needs to tick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .maps import CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z, UNREACHABLE, WORLD_SIZE, RealmMap
from .rules import EpisodeConfig, Rules

__all__ = [
    "DIRECTIONS",
    "NULL_RELATIVE",
    "N_ACTIONS",
    "Game",
    "MapTables",
    "StepEvents",
    "flash_landing",
    "map_tables",
    "simulate_move",
]

N_ACTIONS = 16
_S = math.sqrt(0.5)
# Direction k is 45*k degrees counter-clockwise from +x: E, NE, N, NW, W, SW, S, SE.
DIRECTIONS = ((1.0, 0.0), (_S, _S), (0.0, 1.0), (-_S, _S), (-1.0, 0.0), (-_S, -_S), (0.0, -1.0), (_S, -_S))
NULL_RELATIVE = (0.0, 5.0, 5.0, 1.0)  # direction 0, l2 bucket 5, path bucket 5, grid_distance 1.0
_EDGE_EPS = 1e-3  # how far inside its cell a hero stopped by a wall stands

# role codes of position ids during an episode
_NONE, _TREASURE, _BUFF, _END = 0, 1, 2, 3
_NULL_ROW = 16  # index of the null RelativePosition row in MapTables.relative


def simulate_move(x: float, z: float, k: int, speed: float, walk: list[bool], w: int, h: int,
                  substep: float) -> tuple[float, float]:
    """Where a move in direction ``k`` at ``speed`` from ``(x, z)`` ends: ``ceil(speed / substep)`` sub-steps, each
    along x then along z; an axis whose next cell is blocked (or off the map) stops at the cell edge while the other
    axis goes on, so the hero slides along walls and never cuts a wall corner.

    :param walk: flat row-major walkable flags (``walk[gz * w + gx]``).
    """
    n = math.ceil(speed / substep)
    ux, uz = DIRECTIONS[k]
    dx, dz = ux * speed / n, uz * speed / n
    cx = int((x - GRID_ORIGIN_X) // CELL_WIDTH)
    cz = int((z - GRID_ORIGIN_Z) // CELL_WIDTH)
    for _ in range(n):
        if dx:
            nx = x + dx
            ngx = int((nx - GRID_ORIGIN_X) // CELL_WIDTH)
            if ngx == cx:
                x = nx
            elif 0 <= ngx < w and walk[cz * w + ngx]:
                x, cx = nx, ngx
            else:
                x = (cx + 1) * CELL_WIDTH + GRID_ORIGIN_X - _EDGE_EPS if dx > 0 else cx * CELL_WIDTH + GRID_ORIGIN_X
        if dz:
            nz = z + dz
            ngz = int((nz - GRID_ORIGIN_Z) // CELL_WIDTH)
            if ngz == cz:
                z = nz
            elif 0 <= ngz < h and walk[ngz * w + cx]:
                z, cz = nz, ngz
            else:
                z = (cz + 1) * CELL_WIDTH + GRID_ORIGIN_Z - _EDGE_EPS if dz > 0 else cz * CELL_WIDTH + GRID_ORIGIN_Z
    return x, z


def flash_landing(x: float, z: float, k: int, distance: float, walk: list[bool], w: int,
                  h: int) -> tuple[float, float] | None:
    """Where a flash in direction ``k`` lands, or ``None`` when the destination is blocked (the flash would fail)."""
    ux, uz = DIRECTIONS[k]
    nx, nz = x + ux * distance, z + uz * distance
    gx = int((nx - GRID_ORIGIN_X) // CELL_WIDTH)
    gz = int((nz - GRID_ORIGIN_Z) // CELL_WIDTH)
    if 0 <= gx < w and 0 <= gz < h and walk[gz * w + gx]:
        return nx, nz
    return None


@dataclass
class StepEvents:
    """What happened in the last step (for rewards and metrics)."""

    treasures: tuple[int, ...] = ()  # ids collected this step
    buff: bool = False  # picked up the buff
    flash: bool = False  # a flash was attempted and spent the talent
    flash_failed: bool = False  # the flash destination was blocked
    bump: bool = False  # a move whose displacement was <= rules.bump_threshold
    displacement: float = 0.0  # world units moved this step
    win: bool = False  # reached the end


@dataclass(eq=False)
class MapTables:
    """Per (map, rules) lookup tables shared by every game on that map.

    :param relative: (H, W, 17, 4) float32: for a hero cell ``[gz, gx]`` and position id, the competition's
        (direction, l2 bucket, path bucket, grid_distance), computed between cell centres; row 16 is the null.
    :param obstacle_padded: (H + 2r, W + 2r) uint8: 255 free, 0 blocked or off-map, r = view radius.
    :param distance: (H, W, 16) int32 BFS cells from each cell to each position (``UNREACHABLE`` if cut off).
    :param near: near[gz][gx] = ids whose pickup circle touches the cell (a candidate list for the pickup phase).
    """

    relative: np.ndarray
    distance: np.ndarray
    obstacle_padded: np.ndarray
    near: list[list[tuple[int, ...]]] = field(repr=False)


@lru_cache(maxsize=16)
def map_tables(game_map: RealmMap, rules: Rules) -> MapTables:
    h, w = game_map.height, game_map.width
    gz, gx = np.mgrid[0:h, 0:w]  # (H, W) each
    pgx = game_map.positions_grid[:, 0]  # (16,)
    pgz = game_map.positions_grid[:, 1]
    dx = pgx[None, None, :] - gx[:, :, None]  # (H, W, 16), cells
    dz = pgz[None, None, :] - gz[:, :, None]
    sector = np.rint(np.arctan2(dz, dx) / (np.pi / 4)).astype(np.int64) % 8
    direction = np.where((dx == 0) & (dz == 0), 0, sector + 1)
    l2 = np.hypot(dx, dz) * CELL_WIDTH
    path = np.moveaxis(game_map.distance_fields, 0, -1)  # (H, W, 16)
    reachable = path < UNREACHABLE
    l2_bucket = 1 + np.searchsorted(np.asarray(rules.l2_bucket_edges), l2, side="left")
    path_bucket = np.where(reachable, 1 + np.searchsorted(np.asarray(rules.path_bucket_edges), path, side="left"), 5)
    grid = np.where(reachable, path / rules.grid_distance_scale, 1.0)
    relative = np.empty((h, w, 17, 4), dtype=np.float32)  # (H, W, 16 ids + a null row, 4)
    relative[:, :, :16] = np.stack([direction, l2_bucket, path_bucket, grid], axis=-1)
    relative[:, :, 16] = NULL_RELATIVE

    r = rules.view_radius
    obstacle = np.zeros((h + 2 * r, w + 2 * r), dtype=np.uint8)
    obstacle[r:r + h, r:r + w] = np.where(game_map.walkable, 255, 0)

    # Pickup candidates: distance from each position to the nearest point of each cell rectangle <= radius.
    cx0 = gx * CELL_WIDTH + GRID_ORIGIN_X  # (H, W) cell left edge (world x)
    cz0 = gz * CELL_WIDTH + GRID_ORIGIN_Z
    px = game_map.positions_world[:, 0][None, None, :]
    pz = game_map.positions_world[:, 1][None, None, :]
    nx = np.clip(px, cx0[..., None], cx0[..., None] + CELL_WIDTH) - px
    nz = np.clip(pz, cz0[..., None], cz0[..., None] + CELL_WIDTH) - pz
    touch = nx**2 + nz**2 <= rules.pickup_radius**2  # (H, W, 16)
    near = [[tuple(int(i) for i in np.flatnonzero(touch[z, x])) for x in range(w)] for z in range(h)]
    return MapTables(relative=relative, distance=np.ascontiguousarray(path), obstacle_padded=obstacle, near=near)


class Game:
    """One Back-to-the-Realm game on a map. ``reset`` starts an episode, ``step`` advances it one step.

    Public state after each call (read it, don't write it): ``x, z`` (world, float), ``step_no``, ``frame_no``,
    ``treasure_ids`` (this episode's), ``collected`` (ids in pickup order), ``terminated``, ``truncated``, ``win``,
    ``events`` (:class:`StepEvents` of the last step), counters ``buff_count``, ``talent_count``, ``bump_count``.
    """

    def __init__(self, game_map: RealmMap, rules: Rules | None = None) -> None:
        self.map = game_map
        self.rules = rules or Rules()
        self.tables = map_tables(game_map, self.rules)
        self._w, self._h = game_map.width, game_map.height
        self._walk = game_map.walkable.ravel().tolist()  # flat row-major bools: fast scalar lookups
        self._pos = [(float(x), float(z)) for x, z in game_map.positions_world]
        r = self.rules.view_radius
        self._win_size = 2 * r + 1
        # (4, H + 2r, W + 2r) uint8 layers cropped into the local windows: obstacle, memory, treasure, end
        self.layers = np.zeros((4, self._h + 2 * r, self._w + 2 * r), dtype=np.uint8)
        self.layers[0] = self.tables.obstacle_padded
        self._mem_step = round(self.rules.memory_increment * 255)
        self.config: EpisodeConfig | None = None
        self._started = False

    # ---------------------------------------------------------------------------------------------- reset
    def reset(self, config: EpisodeConfig, treasure_ids: tuple[int, ...]) -> None:
        """Start an episode of ``config`` with the given treasure ids (see ``EpisodeConfig.draw_treasures``)."""
        ids = tuple(int(i) for i in treasure_ids)
        bad = [i for i in ids if not 1 <= i <= 15 or i in (config.start, config.end)]
        if bad or len(set(ids)) != len(ids):
            raise ValueError(f"treasure ids {list(ids)} must be distinct ids in 1..15 other than start "
                             f"{config.start} and end {config.end}")
        self.config = config
        self.treasure_ids = ids
        self.x, self.z = self._pos[config.start]
        self.step_no = 0
        self.frame_no = 0
        self.collected: list[int] = []
        self._available = list(ids)
        self.buff_available_at = 0  # the buff can be picked up in steps >= this
        self.speed_until = 0  # moves in steps <= this use the buff speed
        self.talent_ready_at = 0  # the talent can be used in steps >= this
        self.buff_count = 0
        self.talent_count = 0
        self.flash_fail_count = 0
        self.bump_count = 0
        self.terminated = False
        self.truncated = False
        self.win = False
        self.events = StepEvents()
        self._role = [_NONE] * 16
        for i in ids:
            self._role[i] = _TREASURE
        self._role[0] = _BUFF
        self._role[config.end] = _END
        # relative rows: start, end, buff, treasure slots ids 1..15 (16 = the null row for absent slots)
        self._rel_index = np.array([config.start, config.end, 0, *(i if i in ids else _NULL_ROW for i in range(1, 16))],
                                   dtype=np.intp)
        r = self.rules.view_radius
        self.layers[1:] = 0
        for i in ids:
            gx, gz = self.map.positions_grid[i]
            self.layers[2, gz + r, gx + r] = 255
        gx, gz = self.map.positions_grid[config.end]
        self.layers[3, gz + r, gx + r] = 255
        self._cx, self._cz = self.map.world_to_grid(self.x, self.z)
        self._observe()
        self._started = True

    # ---------------------------------------------------------------------------------------------- step
    def step(self, action: int) -> StepEvents:
        """Advance one step. Raises ``ValueError`` for an action outside 0..15 (the state is left unchanged)."""
        if not self._started or self.config is None:  # (reset() sets config before it sets _started)
            raise RuntimeError("Game.step() called before reset()")
        if self.terminated or self.truncated:
            raise RuntimeError("the episode is over (terminated or truncated); call reset() to start a new one")
        if type(action) is not int:  # the common case (a plain int) skips the slower checks
            if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
                raise ValueError(f"action must be an int in 0..15 (move_dir = a % 8, flash = a // 8), got {action!r}")
            action = int(action)
        if not 0 <= action < 16:
            raise ValueError(f"action must be an int in 0..15 (move_dir = a % 8, flash = a // 8), got {action!r}")
        s = self.step_no + 1  # the number of the step being played
        ev = StepEvents()
        direction, use_talent = action % 8, action >= 8
        if use_talent and s < self.talent_ready_at:
            if self.rules.unready_flash == "error":
                raise ValueError(f"action {action} is a flash but the talent is cooling down for "
                                 f"{self.talent_ready_at - s} more steps; mask it (legal_act[1] == 0)")
            use_talent = False
        if use_talent:
            self._flash(direction, s, ev)
        else:
            self._move(direction, s, ev)
        self._pickup(s, ev)
        self.step_no = s
        self.frame_no += self.rules.frames_per_step
        if ev.win:
            self.terminated = True
            self.win = True
        elif s >= self.config.max_step:
            self.truncated = True
        self.events = ev
        self._observe()
        return ev

    def _move(self, k: int, s: int, ev: StepEvents) -> None:
        speed = self.rules.buff_speed if s <= self.speed_until else self.rules.move_speed
        x0, z0 = self.x, self.z
        x, z = simulate_move(x0, z0, k, speed, self._walk, self._w, self._h, self.rules.substep)
        self.x, self.z = x, z
        self._cx, self._cz = int((x - GRID_ORIGIN_X) // CELL_WIDTH), int((z - GRID_ORIGIN_Z) // CELL_WIDTH)
        ev.displacement = math.hypot(x - x0, z - z0)
        if ev.displacement <= self.rules.bump_threshold:
            ev.bump = True
            self.bump_count += 1

    def _flash(self, k: int, s: int, ev: StepEvents) -> None:
        landing = flash_landing(self.x, self.z, k, self.rules.flash_distance, self._walk, self._w, self._h)
        if landing is not None or self.rules.failed_flash_spends_cooldown:
            self.talent_ready_at = s + self.rules.flash_cooldown
            self.talent_count += 1
            ev.flash = True
        if landing is not None:
            ev.displacement = math.hypot(landing[0] - self.x, landing[1] - self.z)
            self.x, self.z = landing
            self._cx, self._cz = self.map.world_to_grid(*landing)
        else:
            ev.flash_failed = True
            self.flash_fail_count += 1

    def _pickup(self, s: int, ev: StepEvents) -> None:
        cand = self.tables.near[self._cz][self._cx]
        if not cand:
            return
        r2 = self.rules.pickup_radius ** 2
        got = []
        for p in cand:
            role = self._role[p]
            if role == _NONE:
                continue
            px, pz = self._pos[p]
            if (px - self.x) ** 2 + (pz - self.z) ** 2 > r2:
                continue
            if role == _TREASURE:
                got.append(p)
            elif role == _BUFF:
                if s >= self.buff_available_at:
                    self.buff_available_at = s + self.rules.buff_respawn
                    self.speed_until = s + self.rules.buff_duration
                    self.buff_count += 1
                    ev.buff = True
            else:
                ev.win = True
        if got:
            r = self.rules.view_radius
            for p in got:
                self._role[p] = _NONE
                self._available.remove(p)
                self.collected.append(p)
                self._rel_index[2 + p] = _NULL_ROW
                gx, gz = self.map.positions_grid[p]
                self.layers[2, gz + r, gx + r] = 0
            ev.treasures = tuple(got)

    def _observe(self) -> None:
        """Crop the local windows (before the visit), then add the visit of the current cell."""
        cx, cz, n = self._cx, self._cz, self._win_size
        self.window = self.layers[:, cz:cz + n, cx:cx + n].copy()  # (4, 51, 51) uint8
        r = self.rules.view_radius
        v = self.layers[1, cz + r, cx + r]
        self.layers[1, cz + r, cx + r] = min(255, int(v) + self._mem_step)

    # ---------------------------------------------------------------------------------------------- queries
    @property
    def cell(self) -> tuple[int, int]:
        """The hero's grid cell ``(gx, gz)``."""
        return self._cx, self._cz

    @property
    def treasure_count(self) -> int:
        return len(self.collected)

    @property
    def available_treasures(self) -> list[int]:
        """Ids of this episode's treasures not collected yet (a copy)."""
        return list(self._available)

    @property
    def n_available(self) -> int:
        return len(self._available)

    def relative(self) -> np.ndarray:
        """(18, 4) float32 RelativePosition rows: start, end, buff, then treasure slots of ids 1..15 (null where the
        slot is the start, the end, not in this episode or collected; the buff's while it is taken, as the platform
        builds ``buff_pos`` only while the buff organ's status is 1)."""
        self._rel_index[2] = 0 if self.step_no + 1 >= self.buff_available_at else _NULL_ROW
        return self.tables.relative[self._cz, self._cx].take(self._rel_index, axis=0)  # (18, 4)

    def status(self) -> tuple:
        """The competition's scalar fields in one call: ``(norm_x, norm_z, grid_x, grid_z, talent_ready,
        talent_cooldown, speed_up, buff_remain_time, buff_available, step_no, treasure_count)``."""
        nxt = self.step_no + 1
        cooldown = self.talent_ready_at - nxt
        remain = self.speed_until - self.step_no
        return (self.x / WORLD_SIZE, self.z / WORLD_SIZE, self._cx, self._cz, cooldown <= 0, max(cooldown, 0),
                remain > 0, max(remain, 0), nxt >= self.buff_available_at, self.step_no, len(self.collected))

    def talent_ready(self) -> bool:
        return self.step_no + 1 >= self.talent_ready_at

    def talent_cooldown(self) -> int:
        return max(0, self.talent_ready_at - (self.step_no + 1))

    def buff_available(self) -> bool:
        return self.step_no + 1 >= self.buff_available_at

    def buff_cooldown(self) -> int:
        return max(0, self.buff_available_at - (self.step_no + 1))

    def buff_remain(self) -> int:
        """Steps of boosted speed left."""
        return max(0, self.speed_until - self.step_no)

    def norm_pos(self) -> tuple[float, float]:
        return self.x / WORLD_SIZE, self.z / WORLD_SIZE

    def score(self) -> float:
        """The competition score of the episode so far (0 until the end is reached)."""
        assert self.config is not None, "Game.score() called before reset()"
        return self.rules.score(self.win, self.treasure_count, self.step_no, self.config.max_step)

    def next_target_distance(self) -> int:
        """4-neighbour BFS cells from the hero's cell to the nearest available treasure, or to the end when none is
        left (``UNREACHABLE`` if cut off)."""
        assert self.config is not None, "Game.next_target_distance() called before reset()"
        dist = self.tables.distance[self._cz, self._cx].tolist()  # (16,) BFS cells to each position id
        return min(map(dist.__getitem__, self._available or (self.config.end,)))

    def path_to(self, pos_id: int) -> int:
        """4-neighbour BFS cells from the hero's cell to position ``pos_id`` (``UNREACHABLE`` if cut off)."""
        return int(self.map.distance_fields[pos_id, self._cz, self._cx])
