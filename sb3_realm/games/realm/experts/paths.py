"""Distance fields for the oracle planner (numpy + standard library only).

The hero moves in 8 directions, so travel lengths are octile lengths. Paths are computed by Dijkstra on the
8-connected cell graph (500 per orthogonal edge, 500·√2 per diagonal edge; a diagonal edge that passes a wall corner,
one orthogonal neighbour blocked, is allowed, the simulator slides round the corner; with both blocked it is not).

Goal regions: a position is reached when the hero is within ``rules.pickup_radius`` of it. Its *entries* are the
walkable cells of the outer ring of the cells whose centre lies in that disc (every path to a centre inside crosses
the ring). The centre of an entry is a real pickup point, so the value of the rest of the tour measured from it is
consistent with what the walker meets there (cells only touching the disc would promise a continuation from a point
where nothing has been picked up yet). ``entry_offset`` (the centre's distance to the disc) is therefore 0. One
distance field per entry gives the walking distance from any cell to it; fields are evaluated at continuous points
with :func:`field_value` (the in-cell offset to the best of the 3 x 3 neighbouring cell centres).

The end's disc (and the buff's, when the planner must not use the buff) is a no-go zone for every other leg: walking
into it early would end the episode. Everything is cached per ``(map, rules, end, use_buff, corner_penalty)``.

The flash: ``arrive_flash`` values a flash from every cell centre (best of the 8 directions, landing on a walkable
cell, valued at the landing cell) followed by the walk to an entry; ``leg_flash`` = walk + flash + walk between two
entries (a min-plus product over the cells).

The Held–Karp programme over these tables is in :mod:`sb3_realm.games.realm.experts.tour`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..core import DIRECTIONS
from ..maps import BUFF_ID, CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z, RealmMap
from ..rules import Rules

__all__ = [
    "INF",
    "PathTables",
    "cell_links",
    "dijkstra",
    "field_at",
    "field_value",
    "octile",
    "open_cells",
    "path_tables",
    "point_links",
]

INF = math.inf
_R2M1 = math.sqrt(2.0) - 1.0
_HALF = CELL_WIDTH / 2


def octile(dx: float, dz: float) -> float:
    """Length of the shortest 8-direction path covering the displacement ``(dx, dz)`` in free space."""
    ax, az = abs(dx), abs(dz)
    return ax + _R2M1 * az if ax >= az else az + _R2M1 * ax


_CORNER_TO_CENTRE = octile(_HALF, _HALF)  # from a cell corner to the centre of a touching cell


def point_links(walk: list[bool], w: int, h: int, x: float, z: float,
                corner_penalty: float = 0.0) -> list[tuple[float, int]]:
    """``(octile length, flat cell)`` from the continuous point ``(x, z)`` to the centres of the 3 x 3 cells around it
    that it can walk to straight (diagonal neighbours past a wall corner through the corner point, never between two
    walls). A cell field at the point is ``min(d + values[cell])`` over these links (:func:`field_value`)."""
    cx = int((x - GRID_ORIGIN_X) // CELL_WIDTH)
    cz = int((z - GRID_ORIGIN_Z) // CELL_WIDTH)
    fx = x - (cx * CELL_WIDTH + GRID_ORIGIN_X + _HALF)  # offset from the cell centre, in [-250, 250)
    fz = z - (cz * CELL_WIDTH + GRID_ORIGIN_Z + _HALF)
    links = []
    r = _R2M1
    for cell, ox, oz, corner in _links_of_cell(walk, w, h, cx, cz):
        if corner:  # round the wall corner
            ax, az = abs(ox - fx), abs(oz - fz)
            links.append(((ax + r * az if ax >= az else az + r * ax) + _CORNER_TO_CENTRE + corner_penalty, cell))
        else:
            bx, bz = abs(ox - fx), abs(oz - fz)
            links.append((bx + r * bz if bx >= bz else bz + r * bx, cell))
    return links


def _links_of_cell(walk: list[bool], w: int, h: int, cx: int, cz: int) -> tuple[tuple[int, float, float, bool], ...]:
    """The cells of the 3 x 3 around cell ``(cx, cz)`` that a point in it links to (see :func:`point_links`):
    ``(flat cell, x, z, corner)``, the offset of its centre from this cell's (``CELL_WIDTH`` units) for a straight
    link, or of the wall corner passed (half of it) for a ``corner`` one."""
    links = []
    for dz in (-1, 0, 1):
        nz = cz + dz
        if nz < 0 or nz >= h:
            continue
        row = nz * w
        for dx in (-1, 0, 1):
            nx = cx + dx
            if nx < 0 or nx >= w or not walk[row + nx]:
                continue
            if dx and dz:
                ox, oz = walk[cz * w + nx], walk[row + cx]
                if not (ox or oz):
                    continue  # never between two walls
                if not (ox and oz):
                    links.append((row + nx, _HALF * dx, _HALF * dz, True))
                    continue
            links.append((row + nx, float(CELL_WIDTH * dx), float(CELL_WIDTH * dz), False))
    return tuple(links)


def field_value(values, links: list[tuple[float, int]]) -> float:
    """A cell field (distance from each cell centre, ``inf`` where unusable) at a point given by its
    :func:`point_links`."""
    best = INF
    for d, cell in links:
        v = values[cell] + d
        if v < best:
            best = v
    return best


def cell_links(walk: list[bool], w: int, h: int) -> list[tuple[tuple[int, float, float, bool], ...]]:
    """By flat cell, the links :func:`point_links` makes from every point of that cell, before the point's offset
    (``(flat cell, x, z, corner)``, see :func:`_links_of_cell`). :func:`field_at` reads them."""
    return [_links_of_cell(walk, w, h, cx, cz) for cz in range(h) for cx in range(w)]


def open_cells(walkable: np.ndarray, reach: int) -> list[bool]:
    """By flat cell, whether every cell within ``reach`` cells of it (a square of side ``2 reach + 1``, all on the
    map) is walkable: no move shorter than ``reach`` cells from a point of that cell meets a wall or the map's edge."""
    h, w = walkable.shape
    padded = np.zeros((h + 2 * reach, w + 2 * reach), dtype=bool)
    padded[reach:reach + h, reach:reach + w] = walkable
    block = np.lib.stride_tricks.sliding_window_view(padded, (2 * reach + 1, 2 * reach + 1))
    return block.all(axis=(2, 3)).ravel().tolist()


def field_at(values, table: list, w: int, h: int, x: float, z: float, corner_penalty: float = 0.0) -> float:
    """``field_value(values, point_links(walk, w, h, x, z, corner_penalty))`` (the same float, for a point on the
    map) with the :func:`cell_links` ``table`` of the map, in a fraction of the time: no list is built, and a link
    whose cell value alone is not below the best so far is skipped (lengths are never negative)."""
    cx = int((x - GRID_ORIGIN_X) // CELL_WIDTH)
    cz = int((z - GRID_ORIGIN_Z) // CELL_WIDTH)
    if not (0 <= cx < w and 0 <= cz < h):
        return INF  # off the map (no move or flash lands there)
    fx = x - (cx * CELL_WIDTH + GRID_ORIGIN_X + _HALF)
    fz = z - (cz * CELL_WIDTH + GRID_ORIGIN_Z + _HALF)
    r = _R2M1
    best = INF
    for cell, ox, oz, corner in table[cz * w + cx]:
        v = values[cell]
        if not v < best:
            continue
        if corner:
            ax, az = abs(ox - fx), abs(oz - fz)
            d = (ax + r * az if ax >= az else az + r * ax) + _CORNER_TO_CENTRE + corner_penalty
        else:
            bx, bz = abs(ox - fx), abs(oz - fz)
            d = bx + r * bz if bx >= bz else bz + r * bx
        v = v + d
        if v < best:
            best = v
    return best


def dijkstra(nbrs: list[list[tuple[int, float]]], sources: list[tuple[float, int]], n: int) -> list[float]:
    """Multi-source Dijkstra: ``sources`` are ``(initial value, node)``; returns the distance of every node."""
    dist = [INF] * n
    heap = []
    for d, v in sources:
        if d < dist[v]:
            dist[v] = d
            heap.append((d, v))
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        d, u = pop(heap)
        if d > dist[u]:
            continue
        for v, c in nbrs[u]:
            nd = d + c
            if nd < dist[v]:
                dist[v] = nd
                push(heap, (nd, v))
    return dist


def _neighbours(walk: np.ndarray, blocked: np.ndarray, corner_penalty: float) -> list[list[tuple[int, float]]]:
    """Adjacency lists of the 8-connected graph of walkable cells; edges never enter ``blocked`` cells (but leave
    them, so a search may start inside a no-go zone)."""
    h, w = walk.shape
    diag = CELL_WIDTH * math.sqrt(2.0)
    wl = walk.ravel().tolist()
    bl = blocked.ravel().tolist()
    nbrs: list[list[tuple[int, float]]] = [[] for _ in range(h * w)]
    for z in range(h):
        for x in range(w):
            u = z * w + x
            if not wl[u]:
                continue
            out = nbrs[u]
            for dz in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    if not (dx or dz):
                        continue
                    nx, nz = x + dx, z + dz
                    if not (0 <= nx < w and 0 <= nz < h):
                        continue
                    v = nz * w + nx
                    if not wl[v] or bl[v]:
                        continue
                    if dx and dz:
                        ox, oz = wl[z * w + nx], wl[nz * w + x]
                        if not (ox or oz):
                            continue
                        out.append((v, diag if ox and oz else diag + corner_penalty))
                    else:
                        out.append((v, float(CELL_WIDTH)))
    return nbrs


def _disc_cells(game_map: RealmMap, pos_id: int, radius: float) -> tuple[list[tuple[int, int]], list[float]]:
    """Cells (gx, gz) touching the pickup disc of ``pos_id`` and the distance of each centre to the disc."""
    px, pz = (float(v) for v in game_map.positions_world[pos_id])
    gx0, gz0 = (int(v) for v in game_map.positions_grid[pos_id])
    reach = int(radius // CELL_WIDTH) + 2
    cells, offsets = [], []
    for gz in range(gz0 - reach, gz0 + reach + 1):
        for gx in range(gx0 - reach, gx0 + reach + 1):
            if not (0 <= gx < game_map.width and 0 <= gz < game_map.height):
                continue
            x0, z0 = gx * CELL_WIDTH + GRID_ORIGIN_X, gz * CELL_WIDTH + GRID_ORIGIN_Z
            nx = min(max(px, x0), x0 + CELL_WIDTH) - px
            nz = min(max(pz, z0), z0 + CELL_WIDTH) - pz
            if nx * nx + nz * nz <= radius * radius:
                cx, cz = x0 + _HALF, z0 + _HALF
                cells.append((gx, gz))
                offsets.append(max(0.0, math.hypot(cx - px, cz - pz) - radius))
    return cells, offsets


@dataclass(eq=False)
class PathTables:
    """Distance tables of one map for one end id (see the module docstring).

    :param walk: flat walkable flags (row-major ``gz * width + gx``).
    :param nbrs_noend: adjacency of the graph that avoids the end's zone (legs to treasures and the buff).
    :param nbrs_full: adjacency of the graph used by the last leg (to the end).
    :param entry_cell: (N,) flat cell of each entry; ``entry_offset`` (N,) its distance to the disc;
        ``entry_owner`` (N,) its position id; ``entries[pos_id]`` the entry indices of a position.
    :param fields: (N, H*W) float32 walking distance from each cell to each entry cell (``inf``: unreachable).
    :param leg: (N, N) leg[a, b] = walk from entry a to entry b plus b's offset.
    :param arrive_flash: (N, H*W) float32: a flash from the centre of the cell (best of 8 directions) and the walk
        from the landing cell to entry b, plus b's offset (without the flash step).
    :param leg_flash: (N, N) one flash step (``rules.move_speed`` units) + the best walk/flash/walk from a to b.
    :param land: (8, H*W) int64 landing cell of a flash from each cell centre (-1: blocked or off-map).
    """

    game_map: RealmMap
    rules: Rules
    end: int
    use_buff: bool
    corner_penalty: float
    walk: list[bool]
    width: int
    height: int
    nbrs_noend: list[list[tuple[int, float]]] = field(repr=False)
    nbrs_full: list[list[tuple[int, float]]] = field(repr=False)
    entry_cell: np.ndarray = field(repr=False)
    entry_offset: np.ndarray = field(repr=False)
    entry_owner: np.ndarray = field(repr=False)
    entries: dict[int, np.ndarray] = field(repr=False)
    fields: np.ndarray = field(repr=False)
    leg: np.ndarray = field(repr=False)
    arrive_flash: np.ndarray = field(repr=False)
    leg_flash: np.ndarray = field(repr=False)
    land: np.ndarray = field(repr=False)
    _point_cache: dict = field(default_factory=dict, repr=False)

    def nbrs_for(self, pos_id: int) -> list[list[tuple[int, float]]]:
        """The graph the legs towards ``pos_id`` use."""
        return self.nbrs_full if pos_id == self.end else self.nbrs_noend

    def links(self, x: float, z: float) -> list[tuple[float, int]]:
        """:func:`point_links` on this map."""
        return point_links(self.walk, self.width, self.height, x, z, self.corner_penalty)

    def entry_values_at(self, x: float, z: float) -> np.ndarray:
        """(N,) walking distance from the point ``(x, z)`` to every entry plus its offset."""
        best = np.full(len(self.entry_cell), INF)
        for d, cell in self.links(x, z):
            best = np.minimum(best, self.fields[:, cell].astype(np.float64) + d)
        return best + self.entry_offset

    def point_field(self, x: float, z: float) -> np.ndarray:
        """(H*W,) walking distance (graph avoiding the end's zone) from the point ``(x, z)``; cached per point."""
        key = (round(x, 3), round(z, 3))
        hit = self._point_cache.get(key)
        if hit is None:
            hit = np.asarray(dijkstra(self.nbrs_noend, self.links(x, z), self.width * self.height))
            if len(self._point_cache) > 64:
                self._point_cache.clear()
            self._point_cache[key] = hit
        return hit

    def flash_values_from(self, values: np.ndarray) -> np.ndarray:
        """(N,) one flash step (``rules.move_speed`` units) + the best walk (``values``: walking distance from the
        hero to each cell), flash and walk to every entry plus its offset."""
        cols = np.flatnonzero(np.isfinite(values))
        if not len(cols):
            return np.full(len(self.entry_cell), INF)
        tot = self.arrive_flash[:, cols] + values[cols].astype(np.float32)[None, :]
        return tot.min(axis=1).astype(np.float64) + self.rules.move_speed


@lru_cache(maxsize=4)  # ~25 MB each on a 128 x 128 map
def path_tables(game_map: RealmMap, rules: Rules, end: int, use_buff: bool = True,
                corner_penalty: float = 0.0) -> PathTables:
    """Build (or fetch from the cache) the distance tables of ``game_map`` for episodes ending at ``end``."""
    h, w = game_map.height, game_map.width
    walk = game_map.walkable
    radius = rules.pickup_radius
    zone_end = np.zeros((h, w), dtype=bool)
    for gx, gz in _disc_cells(game_map, end, radius)[0]:
        zone_end[gz, gx] = True
    zone_buff = np.zeros((h, w), dtype=bool)
    if not use_buff:
        for gx, gz in _disc_cells(game_map, BUFF_ID, radius)[0]:
            zone_buff[gz, gx] = True
    blocked_full = zone_buff
    blocked_noend = zone_buff | zone_end
    nbrs_full = _neighbours(walk, blocked_full, corner_penalty)
    nbrs_noend = _neighbours(walk, blocked_noend, corner_penalty)

    cells, offsets, owners = [], [], []
    for pid in range(game_map.positions_world.shape[0]):
        if pid == BUFF_ID and not use_buff:
            continue
        blocked = blocked_full if pid == end else blocked_noend
        disc, offs = _disc_cells(game_map, pid, radius)
        inside = {c for c, off in zip(disc, offs, strict=True) if off == 0.0}
        for (gx, gz), off in zip(disc, offs, strict=True):
            if off > 0.0:
                continue
            ring = any((gx + dx, gz + dz) not in inside for dx in (-1, 0, 1) for dz in (-1, 0, 1))
            if ring and walk[gz, gx] and not blocked[gz, gx]:
                cells.append(gz * w + gx)
                offsets.append(off)
                owners.append(pid)
    n_cells = h * w
    entry_cell = np.asarray(cells, dtype=np.int64)
    entry_offset = np.asarray(offsets, dtype=np.float64)
    entry_owner = np.asarray(owners, dtype=np.int64)
    fields = np.empty((len(cells), n_cells), dtype=np.float32)
    for a, (cell, pid) in enumerate(zip(cells, owners, strict=True)):
        nb = nbrs_full if pid == end else nbrs_noend
        fields[a] = dijkstra(nb, [(0.0, cell)], n_cells)
    entries = {int(p): np.flatnonzero(entry_owner == p) for p in np.unique(entry_owner)}
    leg = fields[:, entry_cell].T.astype(np.float64) + entry_offset[None, :]  # [a, b] = field_b(cell_a) + off_b

    # flash landings from each cell centre
    cell_gz, cell_gx = np.divmod(np.arange(n_cells), w)
    cxw = cell_gx * CELL_WIDTH + GRID_ORIGIN_X + _HALF
    czw = cell_gz * CELL_WIDTH + GRID_ORIGIN_Z + _HALF
    land = np.full((8, n_cells), -1, dtype=np.int64)
    for k, (ux, uz) in enumerate(DIRECTIONS):
        lx = np.floor((cxw + ux * rules.flash_distance - GRID_ORIGIN_X) / CELL_WIDTH).astype(np.int64)
        lz = np.floor((czw + uz * rules.flash_distance - GRID_ORIGIN_Z) / CELL_WIDTH).astype(np.int64)
        ok = (lx >= 0) & (lx < w) & (lz >= 0) & (lz < h) & walk.ravel()
        ok[ok] &= walk[lz[ok], lx[ok]]
        land[k, ok] = lz[ok] * w + lx[ok]
    arrive = np.full(fields.shape, np.inf, dtype=np.float32)
    padded = np.concatenate([fields, np.full((len(cells), 1), np.inf, dtype=np.float32)], axis=1)  # -1 -> inf
    for k in range(8):
        np.minimum(arrive, padded[:, land[k]], out=arrive)
    arrive += entry_offset[:, None].astype(np.float32)
    walk_cols = np.flatnonzero(walk.ravel() & ~blocked_noend.ravel())
    arrive_w = arrive[:, walk_cols]
    leg_flash = np.empty_like(leg)
    for a in range(len(cells)):
        leg_flash[a] = (arrive_w + fields[a, walk_cols][None, :]).min(axis=1)
    leg_flash += rules.move_speed
    return PathTables(game_map=game_map, rules=rules, end=end, use_buff=use_buff, corner_penalty=corner_penalty,
                      walk=walk.ravel().tolist(), width=w, height=h, nbrs_noend=nbrs_noend, nbrs_full=nbrs_full,
                      entry_cell=entry_cell, entry_offset=entry_offset, entry_owner=entry_owner, entries=entries,
                      fields=fields, leg=leg, arrive_flash=arrive, leg_flash=leg_flash, land=land)


# ------------------------------------------------------------------------------------------------ Held–Karp
