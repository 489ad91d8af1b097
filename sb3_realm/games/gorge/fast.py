"""The model input of the Gym env straight from the game's state: the arrays of
``features.encode(env_obs(game, ...)["observation"], state)``, byte for byte, without building the platform's dict.

:func:`encode_state` updates the same :class:`~sb3_realm.games.gorge.features.FeatureState` as :func:`.features.encode`
(visits, seen cells, remembered treasures), so the two can be mixed within an episode. What depends only on the map
(the road window, each cell's move and flash features) is computed once per map; the whole-map "explored" channel and
the visits window are kept up to date cell by cell in a :class:`FastCache` tied to one game and one feature state.

The submission keeps calling :func:`.features.encode` on the platform's dict; the parity test holds this module to it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from math import isqrt

import numpy as np

from .core import Game
from .features import (
    BLOCK,
    BUCKET_NORM,
    BUFF_NORM,
    DIRECTIONS,
    FLASH_COUNT_NORM,
    FLASH_REACH,
    MAP_SHAPE,
    N_BUFFS_NEAR,
    N_MONSTERS,
    N_TREASURES_NEAR,
    SPEED_NORM,
    STEP_NORM,
    TREASURE_NORM,
    VIEW_RANGE,
    VIEW_SIZE,
    WORLD_SIZE,
    FeatureState,
    _coarse,
)
from .maps import GorgeMap

__all__ = ["FastCache", "encode_state", "supported"]

_R = VIEW_RANGE
_PADDED = WORLD_SIZE + 2 * VIEW_RANGE  # a 128 x 128 grid with a 10-cell margin: every view window is one slice
_BLOCKS = VIEW_SIZE * BLOCK  # 147: the whole-map channels cover 21 x 21 blocks of 7 x 7 cells
# hero_relative_direction code (sign dx, sign dz) -> one-hot slot, as protocol.relative_direction
_DIRECTION_SLOT = {(1, 0): 0, (1, -1): 1, (0, -1): 2, (-1, -1): 3, (-1, 0): 4, (-1, 1): 5, (0, 1): 6, (1, 1): 7}
_BUCKET_MAX, _BUCKET_SIZE = 5, 30  # protocol.distance_bucket
# the explored channel's value of a block with k seen cells, exactly as features._coarse rounds it
_EXPLORED = np.zeros(BLOCK * BLOCK + 1, dtype=np.uint8)
for _k in range(BLOCK * BLOCK + 1):
    _grid = np.zeros((WORLD_SIZE, WORLD_SIZE), dtype=bool)
    _grid[:BLOCK, :BLOCK] = (np.arange(BLOCK * BLOCK) < _k).reshape(BLOCK, BLOCK)
    _EXPLORED[_k] = np.round(_coarse(_grid) * 255).astype(np.uint8)[0, 0]
del _k, _grid
# the block (of the 21 x 21 blocks, row-major) of each cell of the padded seen grid, for counting newly seen cells
_BLOCK_ID = (np.arange(_BLOCKS)[:, None] // BLOCK * VIEW_SIZE + np.arange(_BLOCKS)[None, :] // BLOCK).astype(np.intp)
_N_BLOCKS = VIEW_SIZE * VIEW_SIZE


@dataclass(eq=False)
class _MapTables:
    road: np.ndarray  # (148, 148) uint8: 255 on road, 0 elsewhere and on the margin
    cell_features: list[tuple[float, ...]]  # [z * 128 + x]: vector[64:80] of a hero on cell (x, z) (float32 values)


_TABLES: weakref.WeakKeyDictionary[GorgeMap, _MapTables] = weakref.WeakKeyDictionary()


def supported(game: Game) -> bool:
    """Whether :func:`encode_state` handles this game: a 128 x 128 map (the feature module's world) and the hero
    inside it. Other games take the platform dict path."""
    hx, hz = game.hero
    return game.game_map.walkable.shape == (WORLD_SIZE, WORLD_SIZE) and 0 <= hx < WORLD_SIZE and 0 <= hz < WORLD_SIZE


def _tables(game_map: GorgeMap) -> _MapTables:
    tables = _TABLES.get(game_map)
    if tables is None:
        road = np.zeros((_PADDED, _PADDED), dtype=np.uint8)
        road[_R:_R + WORLD_SIZE, _R:_R + WORLD_SIZE] = game_map.walkable
        n = WORLD_SIZE

        def shifted(dx: int, dz: int) -> np.ndarray:  # road[z + dz, x + dx] for every cell (x, z)
            return road[_R + dz:_R + dz + n, _R + dx:_R + dx + n].astype(bool)

        cells = np.zeros((n, n, 16), dtype=np.float32)
        reach_values = np.array([k / 10.0 for k in range(max(FLASH_REACH) + 1)], dtype=np.float32)
        for a, (dx, dz) in enumerate(DIRECTIONS):  # as features._move_open and features._flash_reach
            open_ = shifted(dx, dz)
            if dx and dz:
                open_ &= shifted(dx, 0) | shifted(0, dz)
            cells[:, :, a] = open_
            landing = np.zeros((n, n), dtype=np.intp)
            for k in range(1, FLASH_REACH[a] + 1):
                landing[shifted(k * dx, k * dz)] = k
            cells[:, :, 8 + a] = reach_values[landing]
        road *= 255
        patterns: dict[tuple[float, ...], tuple[float, ...]] = {}  # one tuple per distinct pattern: a few MB less
        features = [patterns.setdefault(row, row) for row in map(tuple, cells.reshape(n * n, 16).tolist())]
        tables = _TABLES[game_map] = _MapTables(road, features)
    return tables


@dataclass(eq=False)
class FastCache:
    """The running parts of the map channels for one game and one :class:`FeatureState`; rebuilt from the state
    whenever the game, the state or the step count is not the one it followed."""

    game: Game | None = None
    state: FeatureState | None = None
    tables: _MapTables | None = None  # those of the game's map
    step_no: int = -1
    collected: int = -1  # the game's treasures_collected at the last observation
    visits: np.ndarray = field(default_factory=lambda: np.zeros((_PADDED, _PADDED), dtype=np.uint8))  # channel 4
    seen: np.ndarray = field(default_factory=lambda: np.zeros((_BLOCKS, _BLOCKS), dtype=bool))
    explored: np.ndarray = field(default_factory=lambda: np.zeros((VIEW_SIZE, VIEW_SIZE), dtype=np.uint8))  # ch. 5
    counts: np.ndarray = field(default_factory=lambda: np.zeros(_N_BLOCKS, dtype=np.intp))  # seen cells per block

    def __getstate__(self) -> dict:
        return {**self.__dict__, "tables": None}  # the map's tables are rebuilt, not pickled

    def rebuild(self, game: Game, state: FeatureState) -> None:
        """Take every running part from ``state`` (after its update for the current observation)."""
        self.game, self.state, self.step_no = game, state, game.step_no
        hx, hz = game.hero
        if np.count_nonzero(state.visits) == 1 and state.visits.item(hz, hx) == 1:
            # an episode's first observation: the state holds one visit and its view (the usual case, cheap)
            self.visits.fill(0)
            self.visits[hz + _R, hx + _R] = 51
            self.seen.fill(False)
            self.explored.fill(0)
            self.counts.fill(0)
            self.mark_seen(hx, hz)
            return
        self.visits[_R:_R + WORLD_SIZE, _R:_R + WORLD_SIZE] = np.minimum(state.visits, 5) * 51
        self.seen[:WORLD_SIZE, :WORLD_SIZE] = state.seen
        self.counts[:] = self.seen.reshape(VIEW_SIZE, BLOCK, VIEW_SIZE, BLOCK).sum(axis=(1, 3)).reshape(-1)
        self.explored[:] = _EXPLORED[self.counts].reshape(VIEW_SIZE, VIEW_SIZE)

    def mark_seen(self, hx: int, hz: int) -> None:
        """Mark the view around ``(hx, hz)`` seen and recount the blocks it touches."""
        z0, x0 = max(hz - _R, 0), max(hx - _R, 0)
        z1, x1 = min(hz + _R + 1, WORLD_SIZE), min(hx + _R + 1, WORLD_SIZE)
        window = self.seen[z0:z1, x0:x1]
        new = _BLOCK_ID[z0:z1, x0:x1][~window]  # the blocks of the cells seen for the first time
        if new.size:
            window.fill(True)
            counts = self.counts
            counts += np.bincount(new, minlength=_N_BLOCKS)
            self.explored.reshape(-1)[:] = _EXPLORED[counts]


def encode_state(game: Game, state: FeatureState, cache: FastCache) -> tuple[np.ndarray, np.ndarray]:
    """``features.encode(env_obs(game, ...)["observation"], state)`` computed from ``game`` (see :func:`supported`).

    :param game: the game, after its reset or its last step.
    :param state: the episode's :class:`FeatureState`; updated as :func:`.features.encode` updates it.
    :param cache: the env's :class:`FastCache` (one per env).
    :return: ``(maps uint8 (7, 21, 21), vector float32 (80,))``.
    """
    tables = cache.tables if cache.game is game and cache.tables is not None else _tables(game.game_map)
    hx, hz = game.hero
    view_treasures = _remember(game, state, cache)
    if cache.tables is not tables:
        cache.tables = tables

    maps = np.zeros(MAP_SHAPE, dtype=np.uint8)
    maps[0] = tables.road[hz:hz + VIEW_SIZE, hx:hx + VIEW_SIZE]
    maps[4] = cache.visits[hz:hz + VIEW_SIZE, hx:hx + VIEW_SIZE]
    maps[5] = cache.explored
    vec = [0.0] * 64
    vec[0], vec[1] = hx / (WORLD_SIZE - 1), hz / (WORLD_SIZE - 1)
    _monsters(game, maps, vec)
    _organs(game, view_treasures, maps, vec)
    remembered = state.treasures
    if remembered:
        tx, tz = min(remembered.values(), key=lambda c: (max(abs(c[0] - hx), abs(c[1] - hz)), c))
        vec[39:42] = (1.0, (tx - hx) / WORLD_SIZE, (tz - hz) / WORLD_SIZE)
    maps[6, hz // BLOCK, hx // BLOCK] = 127
    for tx, tz in remembered.values():
        if 0 <= tx < WORLD_SIZE and 0 <= tz < WORLD_SIZE:
            maps[6, tz // BLOCK, tx // BLOCK] = 255

    cfg = game.config
    cooldown = game.flash_cooldown
    buff_left = game.buff_remaining
    step = game.step_no
    max_step = max(cfg.max_step, 1)
    interval, speedup = game.monster_interval, game.monster_speedup
    vec[50] = float(cooldown == 0)
    vec[51] = cooldown / max(cfg.talent_cooldown, 1)
    vec[52], vec[53] = buff_left / BUFF_NORM, float(buff_left > 0)
    vec[54], vec[55] = step / max_step, max_step / STEP_NORM
    vec[56] = float(len(game.monsters) >= 2)
    vec[57] = 1.0 if interval < 0 else max(interval - step, 0) / max_step
    vec[58] = float(interval < 0)
    vec[59] = float(step >= speedup)
    vec[60] = max(speedup - step, 0) / max_step
    vec[61] = game.treasures_collected / max(cfg.treasure_count, 1)
    vec[62] = len(game.treasures) / TREASURE_NORM
    vec[63] = game.flash_count / FLASH_COUNT_NORM
    vec += tables.cell_features[hz * WORLD_SIZE + hx]
    vector = np.array(vec, dtype=np.float32)
    np.maximum(vector, -1.0, out=vector)  # np.clip(vector, -1, 1), without its Python wrapper
    np.minimum(vector, 1.0, out=vector)
    return maps, vector


def _remember(game: Game, state: FeatureState, cache: FastCache) -> list[tuple]:
    """Update ``state`` as features._remember does, and ``cache`` with it; returns the treasures in view as
    ``(entity_id, cell, chebyshev, dx, dz)``."""
    hx, hz = game.hero
    visits = state.visits.item(hz, hx)
    first_visit = visits == 0  # a cell visited before had its whole view marked seen then
    visits = min(visits + 1, 65535)
    state.visits[hz, hx] = visits
    z0, x0 = max(hz - _R, 0), max(hx - _R, 0)
    z1, x1 = min(hz + _R + 1, WORLD_SIZE), min(hx + _R + 1, WORLD_SIZE)
    if first_visit:
        state.seen[z0:z1, x0:x1] = True
    view_treasures = []
    for t in game.treasures:
        tx, tz = t.cell
        dx, dz = tx - hx, tz - hz
        if -_R <= dx <= _R and -_R <= dz <= _R:  # in view: Chebyshev distance <= 10
            view_treasures.append((t.entity_id, t.cell, max(abs(dx), abs(dz)), dx, dz))
    remembered = state.treasures
    for entity_id, cell, *_ in (sorted(view_treasures) if len(view_treasures) > 1 else view_treasures):
        remembered[int(entity_id)] = (int(cell[0]), int(cell[1]))  # in the organs' order (by id, ids unique)
    follows = cache.game is game and cache.state is state and cache.step_no == game.step_no - 1
    if remembered and not (follows and cache.collected == game.treasures_collected):  # else none can have gone
        remaining = {t.entity_id for t in game.treasures}
        for key in [k for k in remembered if k not in remaining]:
            del remembered[key]
    cache.collected = game.treasures_collected

    if follows:
        cache.step_no = game.step_no
        cache.visits[hz + _R, hx + _R] = min(visits * 51, 255)
        if first_visit:
            cache.mark_seen(hx, hz)
    else:
        cache.rebuild(game, state)
    return view_treasures


def _monsters(game: Game, maps: np.ndarray, vec: list[float]) -> None:
    """Channel 1 and vector[2:30]: the first two monsters, as features.encode reads them."""
    hx, hz = game.hero
    for i, monster in enumerate(game.monsters[:N_MONSTERS]):
        base = 2 + i * 14
        mx, mz = monster.cell
        dx, dz = mx - hx, mz - hz
        vec[base] = 1.0
        slot = _DIRECTION_SLOT.get(((dx > 0) - (dx < 0), (dz > 0) - (dz < 0)))
        if slot is not None:
            vec[base + 5 + slot] = 1.0
        vec[base + 4] = min(_BUCKET_MAX, isqrt(dx * dx + dz * dz) // _BUCKET_SIZE) / BUCKET_NORM
        if -_R <= dx <= _R and -_R <= dz <= _R and mx >= 0:
            vec[base + 1] = 1.0
            vec[base + 2], vec[base + 3] = dx / VIEW_RANGE, dz / VIEW_RANGE
            vec[base + 13] = monster.speed / SPEED_NORM
            maps[1, dz + _R, dx + _R] = 255


def _organs(game: Game, view_treasures: list[tuple], maps: np.ndarray, vec: list[float]) -> None:
    """Channels 2 and 3 and the nearest treasures and buffs in view (vector[30:39], vector[42:50])."""
    hx, hz = game.hero
    near_treasures = []
    for _, _, cheb, dx, dz in view_treasures:
        maps[2, dz + _R, dx + _R] = 255
        near_treasures.append((cheb, dx, dz))
    near_buffs = []
    for b in game.buffs:
        bx, bz = b.cell
        dx, dz = bx - hx, bz - hz
        if -_R <= dx <= _R and -_R <= dz <= _R:
            value = 255 if b.visible else 127
            if maps[3, dz + _R, dx + _R] < value:
                maps[3, dz + _R, dx + _R] = value
            near_buffs.append((max(abs(dx), abs(dz)), dx, dz, int(b.visible)))
    for k, (_, dx, dz) in enumerate(sorted(near_treasures)[:N_TREASURES_NEAR]):
        vec[30 + 3 * k:33 + 3 * k] = (1.0, dx / VIEW_RANGE, dz / VIEW_RANGE)
    for k, (_, dx, dz, ready) in enumerate(sorted(near_buffs)[:N_BUFFS_NEAR]):
        vec[42 + 4 * k:46 + 4 * k] = (1.0, dx / VIEW_RANGE, dz / VIEW_RANGE, float(ready))
