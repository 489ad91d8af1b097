"""Maps: the open maps' JSON format, the road graph and its BFS distances.

A map file (``gorge_chase_map_<k>.json``) is ``{name, width: 128, height: 128, cells: [16384 objects {x, z, type_id,
height}], objects, metadata}``; ``type_id`` 3 is road (walkable), 1 is an obstacle, ``height`` is ignored. Cells are
integer pairs ``(x, z)``: x grows to the east, z to the south, the origin is the top-left corner and arrays are
indexed ``[z, x]``. Anything outside the grid is not walkable.

Distances are 4-connected path lengths over road cells (unit cost). The road cells are numbered in scan order
(z outer, x inner) and kept as a compact graph, so one BFS touches only road cells.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ...atomic import not_a_file

__all__ = [
    "MAP_SIZE",
    "ROAD",
    "OBSTACLE",
    "UNREACHABLE",
    "STEPS_4",
    "MapError",
    "GorgeMap",
    "load_map",
    "map_from_dict",
]

MAP_SIZE = 128  # the open maps are 128 x 128 cells
ROAD = 3  # type_id of a walkable cell
OBSTACLE = 1  # type_id of a blocked cell
UNREACHABLE = 1 << 20  # BFS distance of a cell that cannot be reached (or lies beyond the search's stop level)
# 4-neighbour offsets (dx, dz) in the order the monsters try them: E, W, S, N
STEPS_4 = ((1, 0), (-1, 0), (0, 1), (0, -1))


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
    _road_bits: int = field(init=False, repr=False)  # bit z * (W + 1) + x set for each road cell

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
        padded = np.zeros((h, w + 1), dtype=bool)  # one obstacle column at x = W stops shifts from wrapping rows
        padded[:, :w] = walkable
        object.__setattr__(self, "_road_bits",
                           int.from_bytes(np.packbits(padded.ravel(), bitorder="little").tobytes(), "little"))

    @property
    def height(self) -> int:
        return int(self.walkable.shape[0])

    @property
    def width(self) -> int:
        return int(self.walkable.shape[1])

    @property
    def road_count(self) -> int:
        """Number of road (walkable) cells."""
        return int(self.road_xz.shape[0])

    def is_road(self, x: int, z: int) -> bool:
        """Whether cell ``(x, z)`` is inside the map and walkable."""
        return 0 <= x < self.walkable.shape[1] and 0 <= z < self.walkable.shape[0] and bool(self.walkable[z, x])

    def road_id(self, x: int, z: int) -> int:
        """The compact id of road cell ``(x, z)``, or ``road_count`` for an obstacle or a cell outside the map."""
        if 0 <= x < self.walkable.shape[1] and 0 <= z < self.walkable.shape[0]:
            return int(self.road_index[z, x])
        return self.road_count

    def road_distances(self, x: int, z: int) -> np.ndarray:
        """4-connected BFS distances from road cell ``(x, z)`` to every road cell, by compact id.

        Frontier-based: each level gathers the neighbours of the frontier with one fancy index.

        :return: (N + 1,) int32; entry N (the "no cell" id) and every cell of another component read ``UNREACHABLE``.
        """
        n = self.road_count
        source = self._source_id(x, z)
        dist = np.full(n + 1, UNREACHABLE, dtype=np.int32)
        dist[n] = -1  # the sentinel counts as seen, so it is never expanded
        dist[source] = 0
        stamp = np.empty(n + 1, dtype=np.intp)  # scratch for removing duplicates from a new frontier
        frontier = np.array([source], dtype=np.intp)
        level = 0
        while frontier.size:
            level += 1
            grown = self.neighbours[frontier].ravel()
            grown = grown[dist[grown] == UNREACHABLE]
            order = np.arange(grown.size)
            stamp[grown] = order
            frontier = grown[stamp[grown] == order]  # one entry per cell
            dist[frontier] = level
        dist[n] = UNREACHABLE
        return dist

    def distances_to(self, x: int, z: int, cells: Sequence[tuple[int, int]], anchors: Sequence[tuple[int, int]] = (),
                     margin: int = 0) -> list[int]:
        """4-connected BFS distances from road cell ``(x, z)`` to each of ``cells`` (``UNREACHABLE`` for an obstacle,
        a cell outside the map or one of another component).

        The search stops as soon as every cell is found. With ``anchors``, it also stops ``margin`` levels after the
        last anchor was reached, and the cells not found by then read ``UNREACHABLE``: a walker on an anchor that
        takes up to ``margin`` steps over road never looks farther. The grid is held as one Python integer per BFS
        level (a bit per cell, rows one bit wider than the map so that shifts never wrap), which makes a level a
        handful of big-integer operations.
        """
        self._source_id(x, z)
        stride = self.walkable.shape[1] + 1
        wanted: dict[int, list[int]] = {}
        for i, (cx, cz) in enumerate(cells):
            if self.is_road(cx, cz):
                wanted.setdefault(cz * stride + cx, []).append(i)
        out = [UNREACHABLE] * len(cells)
        pending = {cz * stride + cx for cx, cz in anchors if self.is_road(cx, cz)}
        for p in pending:
            wanted.setdefault(p, [])
        mask = sum(1 << p for p in wanted)
        frontier = 1 << (z * stride + x)
        unseen = self._road_bits ^ frontier
        level, limit = 0, UNREACHABLE
        while True:
            hit = frontier & mask
            if hit:
                mask ^= hit
                while hit:
                    low = hit & -hit
                    p = low.bit_length() - 1
                    hit ^= low
                    for i in wanted[p]:
                        out[i] = level
                    if p in pending:
                        pending.discard(p)
                        if not pending:
                            limit = level + margin
            if not mask or not frontier or level >= limit:
                return out
            level += 1
            frontier = ((frontier << 1) | (frontier >> 1) | (frontier << stride) | (frontier >> stride)) & unseen
            unseen ^= frontier

    def _source_id(self, x: int, z: int) -> int:
        source = self.road_id(x, z)
        if source == self.road_count:
            raise MapError(f"map {self.name!r}: BFS source ({x}, {z}) is not a road cell; start from a walkable cell")
        return source

    def distance_field(self, x: int, z: int) -> np.ndarray:
        """(H, W) int32 4-connected BFS distances from road cell ``(x, z)``; ``UNREACHABLE`` on obstacles and on road
        cells of another component."""
        return self.road_distances(x, z)[self.road_index]

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
    """Load an open map (``gorge_chase_map_<k>.json``) from ``path``.

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
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MapError(f"map file {path!r} is not valid JSON ({exc}); expected the open maps' format "
                       "{name, width, height, cells}") from exc
    try:
        return map_from_dict(data, name=str(data.get("name", path)) if isinstance(data, Mapping) else path)
    except MapError as exc:
        raise MapError(f"map file {path!r}: {exc}") from None
