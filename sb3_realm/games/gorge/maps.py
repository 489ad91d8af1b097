"""Maps: the open maps' JSON format, the road graph and its BFS distances.

A map file (``gorge_chase_map_<k>.json``) is ``{name, width: 128, height: 128, cells: [16384 objects {x, z, type_id,
height}], objects, metadata}``; ``type_id`` 3 is road (walkable), 1 is an obstacle, ``height`` is ignored. Cells are
integer pairs ``(x, z)``: x grows to the east, z to the south, the origin is the top-left corner and arrays are
indexed ``[z, x]``. Anything outside the grid is not walkable.

Distances are 4-connected path lengths over road cells (unit cost). The road cells are numbered in scan order
(z outer, x inner) and kept as a compact graph, so one BFS touches only road cells. Whole BFS rows (from one source to
every road cell) are computed on first use and kept per map in a bounded least-recently-used cache
(:data:`ROW_CACHE_BYTES`): the monsters' move and the distance queries become lookups in the row of the hero's cell.
"""

from __future__ import annotations

import gzip
import json
import os
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...atomic import not_a_file

__all__ = [
    "MAP_SIZE",
    "OBSTACLE",
    "ROAD",
    "ROW_CACHE_BYTES",
    "STEPS_4",
    "UNREACHABLE",
    "GorgeMap",
    "MapError",
    "load_map",
    "map_from_dict",
]

MAP_SIZE = 128  # the open maps are 128 x 128 cells
ROAD = 3  # type_id of a walkable cell
OBSTACLE = 1  # type_id of a blocked cell
UNREACHABLE = 1 << 20  # BFS distance of a cell that cannot be reached (or lies beyond the search's stop level)
# 4-neighbour offsets (dx, dz) in the order the monsters try them: E, W, S, N
STEPS_4 = ((1, 0), (-1, 0), (0, 1), (0, -1))
#: default byte budget of a map's cache of BFS rows: every row of a 128 x 128 open map fits (at most about 49 MB as
#: int16 for the largest, 4947 road cells); lower it with :meth:`GorgeMap.set_row_cache_bytes` where many maps share
#: one process
ROW_CACHE_BYTES = 64 << 20


class MapError(ValueError):
    """A map file or map dictionary that cannot be used; the message names the value and the fix."""


@dataclass(frozen=True, eq=False)
class GorgeMap:
    """A validated map: its road cells and the compact road graph used by the BFS.

    :param walkable: (H, W) bool, ``walkable[z, x]``; stored read-only. The open maps are 128 x 128; any size of at
        least 1 x 1 works for hand-made maps.
    :param name: where the map came from (the file's ``name`` or a path).
    """

    walkable: np.ndarray  # (H, W) bool
    name: str = "custom"
    road_xz: np.ndarray = field(init=False, repr=False)  # (N, 2) int32 (x, z) of each road cell, scan order
    road_index: np.ndarray = field(init=False, repr=False)  # (H, W) int32: road cell -> 0..N-1, other cells -> N
    neighbours: np.ndarray = field(init=False, repr=False)  # (N + 1, 4) int32 road ids in STEPS_4 order, N = none
    # flat memoryviews for scalar reads from Python (an int or bool per index, no numpy scalar): walkable[z * W + x],
    # road_index[z * W + x] and neighbours[4 * id + k]
    _walk_flat: memoryview = field(init=False, repr=False)
    _index_flat: memoryview = field(init=False, repr=False)
    _nbr_flat: memoryview = field(init=False, repr=False)
    _rows: _RowCache = field(init=False, repr=False)
    _h: int = field(init=False, repr=False)
    _w: int = field(init=False, repr=False)
    _n: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        walkable = np.array(self.walkable, dtype=bool)  # a private copy
        if walkable.ndim != 2 or walkable.shape[0] < 1 or walkable.shape[1] < 1:
            raise MapError(f"map {self.name!r}: walkable must be a 2-D (H, W) bool array indexed [z, x], got shape "
                           f"{walkable.shape}")
        walkable.setflags(write=False)
        h, w = walkable.shape
        zs, xs = np.nonzero(walkable)  # row-major: z outer, x inner
        n = len(xs)
        road_xz = np.stack([xs, zs], axis=1).astype(np.int32)  # (N, 2)
        index = np.full((h + 2, w + 2), n, dtype=np.int32)  # padded by one cell so neighbour lookups never wrap
        index[zs + 1, xs + 1] = np.arange(n, dtype=np.int32)
        neighbours = np.full((n + 1, 4), n, dtype=np.int32)  # (N + 1, 4); row N is the "no cell" sentinel
        for k, (dx, dz) in enumerate(STEPS_4):
            neighbours[:n, k] = index[zs + 1 + dz, xs + 1 + dx]
        road_index = np.ascontiguousarray(index[1:-1, 1:-1])
        for arr in (road_xz, road_index, neighbours):
            arr.setflags(write=False)
        object.__setattr__(self, "walkable", walkable)
        object.__setattr__(self, "road_xz", road_xz)
        object.__setattr__(self, "road_index", road_index)
        object.__setattr__(self, "neighbours", neighbours)
        object.__setattr__(self, "_h", int(h))
        object.__setattr__(self, "_w", int(w))
        object.__setattr__(self, "_n", int(n))
        object.__setattr__(self, "_walk_flat", walkable.reshape(-1).data)
        object.__setattr__(self, "_index_flat", road_index.reshape(-1).data)
        object.__setattr__(self, "_nbr_flat", neighbours.reshape(-1).data)
        object.__setattr__(self, "_rows", _RowCache(self, ROW_CACHE_BYTES))

    def __reduce__(self) -> tuple:
        # rebuilt from the grid: the memoryviews cannot be pickled and the row cache is not worth shipping
        return GorgeMap, (self.walkable, self.name)

    @property
    def height(self) -> int:
        return int(self.walkable.shape[0])

    @property
    def width(self) -> int:
        return int(self.walkable.shape[1])

    @property
    def road_count(self) -> int:
        """Number of road (walkable) cells."""
        return self._n

    def is_road(self, x: int, z: int) -> bool:
        """Whether cell ``(x, z)`` is inside the map and walkable."""
        w = self._w
        return 0 <= x < w and 0 <= z < self._h and bool(self._walk_flat[z * w + x])

    def road_id(self, x: int, z: int) -> int:
        """The compact id of road cell ``(x, z)``, or ``road_count`` for an obstacle or a cell outside the map."""
        w = self._w
        if 0 <= x < w and 0 <= z < self._h:
            return self._index_flat[z * w + x]
        return self._n

    def distance_row(self, source: int) -> np.ndarray:
        """BFS distances from the road cell of compact id ``source`` to every road cell, by compact id, from the map's
        row cache (computed on a miss: a few tenths of a millisecond on an open map).

        :return: read-only (N + 1,) int16 (int32 on maps of 32767 road cells or more); entry N (the "no cell" id) and
            every cell of another component hold :attr:`row_unreachable`. Shared: copy it before changing it.
        """
        return self._rows.get(source)

    def distance_view(self, source: int) -> memoryview:
        """:meth:`distance_row` as a memoryview: indexing it gives Python ints (the monsters' move reads it)."""
        return self._rows.view(source)

    @property
    def row_unreachable(self) -> int:
        """The value of an unreachable cell in :meth:`distance_row` (the row dtype's maximum)."""
        return self._rows.unreachable

    def set_row_cache_bytes(self, limit: int) -> None:
        """Bound the memory of this map's BFS row cache (default :data:`ROW_CACHE_BYTES`); the least recently used
        rows are dropped beyond it. At least one row is always kept."""
        self._rows.set_limit(limit)

    def row_cache_info(self) -> dict:
        """The row cache's figures: ``rows``, ``bytes`` held, ``limit`` in bytes, ``row_bytes``, ``hits``,
        ``misses`` and ``full_table_bytes`` (every row held)."""
        return self._rows.info()

    def road_distances(self, x: int, z: int) -> np.ndarray:
        """4-connected BFS distances from road cell ``(x, z)`` to every road cell, by compact id.

        :return: (N + 1,) int32, a fresh array; entry N (the "no cell" id) and every cell of another component read
            ``UNREACHABLE``.
        """
        row = self.distance_row(self._source_id(x, z))
        out = row.astype(np.int32)
        out[row == self._rows.unreachable] = UNREACHABLE
        return out

    def distances_to(self, x: int, z: int, cells: Sequence[tuple[int, int]], anchors: Sequence[tuple[int, int]] = (),
                     margin: int = 0) -> list[int]:
        """4-connected BFS distances from road cell ``(x, z)`` to each of ``cells`` (``UNREACHABLE`` for an obstacle,
        a cell outside the map or one of another component).

        With ``anchors``, the search stops ``margin`` levels after the last anchor was reached, and the cells farther
        than that read ``UNREACHABLE``: a walker on an anchor that takes up to ``margin`` steps over road never looks
        farther (no limit when an anchor on road cannot be reached, or when no anchor is on road). The values are
        read from the source's cached BFS row (:meth:`distance_row`).
        """
        rows = self._rows
        row = rows.view(self._source_id(x, z))
        unreachable = rows.unreachable
        h, w = self.walkable.shape
        index, none = self._index_flat, row[self.road_count]
        limit = UNREACHABLE
        found = [row[index[cz * w + cx]] for cx, cz in anchors if self.is_road(cx, cz)]
        if found and unreachable not in found:
            limit = max(found) + margin
        out = []
        for cx, cz in cells:
            d = row[index[cz * w + cx]] if 0 <= cx < w and 0 <= cz < h else none
            out.append(d if d <= limit and d != unreachable else UNREACHABLE)
        return out

    def _source_id(self, x: int, z: int) -> int:
        source = self.road_id(x, z)
        if source == self.road_count:
            raise MapError(f"map {self.name!r}: BFS source ({x}, {z}) is not a road cell; start from a walkable cell")
        return source

    def distance_field(self, x: int, z: int) -> np.ndarray:
        """(H, W) int32 4-connected BFS distances from road cell ``(x, z)``; ``UNREACHABLE`` on obstacles and on road
        cells of another component."""
        return self.road_distances(x, z)[self.road_index]

    def _bfs_rows(self, sources: Sequence[int]) -> np.ndarray:
        """(len(sources), N + 1) BFS rows in the cache's dtype.

        scipy's compiled breadth-first search gives the visiting order and each cell's parent; in that order the
        parents' positions never decrease, so each level ends where the parents of the next one start (a bisection
        per level). A BFS driven from Python would spend milliseconds per row on the interpreter.
        """
        from scipy.sparse.csgraph import breadth_first_order  # deferred: scipy loads once a distance is asked for

        rows = self._rows
        n = self.road_count
        graph = rows.graph()
        out = np.full((len(sources), n + 1), rows.unreachable, dtype=rows.dtype)
        position = np.empty(n, dtype=np.intp)
        for i, source in enumerate(sources):
            order, parent = breadth_first_order(graph, int(source), directed=True, return_predecessors=True)
            size = len(order)
            position[order] = np.arange(size)
            parents = position[parent[order[1:]]].tolist()  # non-decreasing
            bounds = [0, 1]  # level L occupies order[bounds[L]:bounds[L + 1]]
            while bounds[-1] < size:
                bounds.append(bisect_left(parents, bounds[-1]) + 1)
            out[i, order] = np.repeat(np.arange(len(bounds) - 1, dtype=rows.dtype), np.diff(bounds))
        return out

    def to_dict(self) -> dict:
        """The map in the open maps' JSON format (without ``metadata``)."""
        h, w = self.walkable.shape
        return {
            "name": self.name,
            "width": w,
            "height": h,
            "cells": [{"x": x, "z": z, "type_id": ROAD if self.walkable[z, x] else OBSTACLE, "height": 0.0}
                      for z in range(h) for x in range(w)],
            "objects": [],
        }


class _RowCache:
    """A map's BFS rows by source id, least recently used dropped first beyond a byte budget."""

    def __init__(self, game_map: GorgeMap, limit: int) -> None:
        n = game_map.road_count
        self.map = game_map
        int_type = np.int16 if n < np.iinfo(np.int16).max else np.int32
        self.dtype = np.dtype(int_type)
        self.unreachable = int(np.iinfo(int_type).max)
        self.row_bytes = (n + 1) * self.dtype.itemsize
        self.rows: OrderedDict[int, np.ndarray] = OrderedDict()
        self.views: dict[int, memoryview] = {}
        self.limit = max(int(limit), self.row_bytes)
        self.hits = self.misses = 0
        self._graph = None

    def graph(self):  # a scipy sparse matrix, typed loosely to keep scipy out of the module's imports
        """The road graph as a scipy CSR adjacency matrix (built once)."""
        if self._graph is None:
            from scipy.sparse import csr_matrix

            m = self.map
            n = m.road_count
            src = np.repeat(np.arange(n), 4)
            dst = m.neighbours[:n].ravel()
            keep = dst < n
            self._graph = csr_matrix((np.ones(int(keep.sum()), dtype=np.float64), (src[keep], dst[keep])),
                                     shape=(n, n))
        return self._graph

    def get(self, source: int) -> np.ndarray:
        row = self.rows.get(source)
        if row is None:
            self.misses += 1
            row = self.map._bfs_rows([source])[0]
            row.setflags(write=False)
            self.rows[source] = row
            self.views[source] = memoryview(row)
            while len(self.rows) * self.row_bytes > self.limit:
                old, _ = self.rows.popitem(last=False)
                del self.views[old]
        else:
            self.hits += 1
            self.rows.move_to_end(source)
        return row

    def view(self, source: int) -> memoryview:
        """The row as a memoryview: indexing it gives Python ints."""
        view = self.views.get(source)
        if view is None:
            self.get(source)
            return self.views[source]
        self.hits += 1
        self.rows.move_to_end(source)
        return view

    def set_limit(self, limit: int) -> None:
        self.limit = max(int(limit), self.row_bytes)
        while len(self.rows) * self.row_bytes > self.limit:
            old, _ = self.rows.popitem(last=False)
            del self.views[old]

    def info(self) -> dict:
        n = self.map.road_count
        return {"rows": len(self.rows), "bytes": len(self.rows) * self.row_bytes, "limit": self.limit,
                "row_bytes": self.row_bytes, "hits": self.hits, "misses": self.misses,
                "full_table_bytes": n * self.row_bytes}


def _int_field(cell: object, key: str, where: str) -> int:
    value = cell.get(key) if isinstance(cell, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise MapError(f"{where} has {key} = {value!r}; each cell must be an object {{x, z, type_id, height}} with "
                       "integer x, z and type_id")
    return value


def map_from_dict(data: object, name: str | None = None) -> GorgeMap:
    """Build a :class:`GorgeMap` from the open maps' JSON structure (already parsed).

    :param data: ``{width: 128, height: 128, cells: [{x, z, type_id, height}, ...]}``; other keys are ignored.
    :param name: what to call the map in messages (default: the file's ``name``).
    """
    label = name or (str(data.get("name", "custom")) if isinstance(data, Mapping) else "custom")
    fmt = ("the open maps' format is {name, width: 128, height: 128, cells: [128*128 objects {x, z, type_id, "
           "height}]} with type_id 3 (road) or 1 (obstacle)")
    if not isinstance(data, Mapping):
        raise MapError(f"map {label!r}: expected a JSON object, got {type(data).__name__}; {fmt}")
    for key in ("width", "height", "cells"):
        if key not in data:
            raise MapError(f"map {label!r}: missing key {key!r}; {fmt}")
    w, h = data["width"], data["height"]
    if (w, h) != (MAP_SIZE, MAP_SIZE) or isinstance(w, bool) or isinstance(h, bool):
        raise MapError(f"map {label!r}: width x height is {w!r} x {h!r}; only {MAP_SIZE} x {MAP_SIZE} maps exist")
    cells = data["cells"]
    if not isinstance(cells, list) or len(cells) != w * h:
        got = f"{len(cells)} cells" if isinstance(cells, list) else type(cells).__name__
        raise MapError(f"map {label!r}: cells must be a list of {w * h} objects (one per cell), got {got}; {fmt}")
    type_ids = np.zeros((h, w), dtype=np.int64)  # 0 = no cell seen yet
    for i, cell in enumerate(cells):
        where = f"map {label!r}: cells[{i}]"
        x, z = _int_field(cell, "x", where), _int_field(cell, "z", where)
        type_id = _int_field(cell, "type_id", where)
        if not (0 <= x < w and 0 <= z < h):
            raise MapError(f"{where} is at ({x}, {z}), outside the {w} x {h} grid; x and z must be in 0..{w - 1}")
        if type_id not in (ROAD, OBSTACLE):
            raise MapError(f"{where} at ({x}, {z}) has type_id {type_id}; only {ROAD} (road) and {OBSTACLE} "
                           "(obstacle) are known")
        if type_ids[z, x]:
            raise MapError(f"{where} repeats cell ({x}, {z}); each of the {w * h} cells must appear exactly once")
        type_ids[z, x] = type_id
    return GorgeMap(walkable=type_ids == ROAD, name=label)


def load_map(path: str | os.PathLike) -> GorgeMap:
    """Load an open map (``gorge_chase_map_<k>.json``, or the same JSON gzip-compressed as ``.json.gz``) from
    ``path``.

    Results are cached per (path, modification time), so many envs in one process share one map.
    """
    problem = not_a_file(path)
    if problem:
        raise MapError(f"map file {str(path)!r} {problem}; pass the path of a gorge_chase_map_<k>.json file")
    p = Path(path).expanduser()
    return _load_cached(str(p.resolve()), p.stat().st_mtime_ns)


@lru_cache(maxsize=16)
def _load_cached(path: str, mtime_ns: int) -> GorgeMap:
    try:
        raw = Path(path).read_bytes()
        if path.endswith(".gz"):  # the package's own maps ship gzip-compressed
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (EOFError, gzip.BadGzipFile, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MapError(f"map file {path!r} is not valid JSON ({exc}); expected the open maps' format "
                       "{name, width, height, cells}") from exc
    try:
        return map_from_dict(data, name=str(data.get("name", path)) if isinstance(data, Mapping) else path)
    except MapError as exc:
        raise MapError(f"map file {path!r}: {exc}") from None
