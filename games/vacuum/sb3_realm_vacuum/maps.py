"""Robot Vacuum maps: :class:`VacuumMap`, a generator of house-like maps, the shipped maps and the map-file loader.

A map is a 128 x 128 grid of road (walkable) and obstacle cells, indexed ``walkable[z, x]`` (x grows to the east, z to
the south, origin top-left), plus its 4 charger spots: the centres ``(x, z)`` of 3 x 3 footprints (centre +- 1,
spec Q4). The dirty cells at reset are the road cells outside the active chargers' footprints (spec §2.1, §4.3).

Connectivity follows the hero's move rule (spec §5.2): 8 moves, a diagonal one needs at least one of its two side
cells walkable. A diagonal move with an open side can be replaced by the two orthogonal moves through that side, so
the components under this rule are exactly the 4-connected components of the road.

Files read by :func:`load_map`:

* the competition's format, the same as Gorge Chase's (``robot_vacuum_map_<k>.json``, also ``room_grid_map_<k>.json``
  and ``map<k>.json``): ``{name, width: 128, height: 128, cells: [16384 objects {x, z, type_id, height}], objects,
  metadata}`` with ``type_id`` 3 road and 1 obstacle. Charger spots come from ``objects`` when the file lists
  chargers there (organ-like entries ``{sub_type: 1, pos: {x, z}, w: 3, h: 3}`` or any object whose ``type``,
  ``name`` or ``kind`` says charger), else they are chosen by :func:`choose_chargers` from the map itself;
* this package's own format (the shipped maps, ``data/<name>.json.gz``): ``{format: "sb3_realm_vacuum_map",
  version: 1, name, width: 128, height: 128, rows: [128 strings of "." road and "#" obstacle], chargers: [[x, z]
  x 4]}``, plain or gzip-compressed.

The shipped maps (:data:`SHIPPED_MAPS`: ``own_1`` .. ``own_10`` to train and choose on, ``standin_1`` .. ``standin_5``
standing in for the 5 hidden maps) are generated once from the fixed seeds of :data:`SHIPPED_SEEDS` and stored in
``data/``, so they never depend on numpy's random stream; ``python -m sb3_realm_vacuum.maps --write-data`` writes
them again and ``--check-data`` compares the files with a fresh generation.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from sb3_realm.atomic import atomic_write, not_a_file

from .rules import CHARGER_HALF, SIZE

__all__ = [
    "CHARGER_COUNT",
    "CHARGER_SPACING",
    "FILE_PATTERNS",
    "FORMAT",
    "MAP_SIZE",
    "NPC_SPACING",
    "OBSTACLE",
    "ROAD",
    "ROAD_SHARE_RANGE",
    "SHIPPED_MAPS",
    "SHIPPED_SEEDS",
    "MapGenerationError",
    "VacuumMap",
    "check_data",
    "choose_chargers",
    "components",
    "generate_map",
    "load_map",
    "main",
    "map_from_dict",
    "map_to_dict",
    "map_to_gorge_dict",
    "maps_folder_map",
    "save_map",
    "shipped_map",
    "spread_cells",
    "write_data",
]

MAP_SIZE = SIZE  # the maps are 128 x 128 cells
ROAD = 3  # type_id of a walkable cell in the competition's (Gorge Chase's) format
OBSTACLE = 1  # type_id of a blocked cell
CHARGER_COUNT = 4  # charger spots per map (spec §3.2)
CHARGER_SPACING = 20  # smallest Chebyshev distance between two generated charger centres
NPC_SPACING = 21  # NPC spawn points are pairwise at Chebyshev distance >= 21 (spec §4.4)
NPC_COUNT = 4  # the most NPCs a game has (robot_count 1..4)
#: road share (road cells / 128^2) of a generated map; the real maps' dirty counts (5,690..7,873 with 4 chargers)
#: put theirs at about 35..48 %
ROAD_SHARE_RANGE = (0.355, 0.475)
FORMAT = "sb3_realm_vacuum_map"  # the ``format`` key of this package's own files
FORMAT_VERSION = 1
#: the competition's file names of open map ``k`` in a maps folder, in the order they are looked for
FILE_PATTERNS = ("robot_vacuum_map_{k}.json", "room_grid_map_{k}.json", "map{k}.json")
_COMPETITION_NAME = re.compile(r"(?:robot_vacuum_map_|room_grid_map_|map)(\d+)\.json(?:\.gz)?")
#: the shipped maps and the seed each was generated from
SHIPPED_SEEDS: dict[str, int] = {**{f"own_{k}": k for k in range(1, 11)},
                                 **{f"standin_{k}": 1000 + k for k in range(1, 6)}}
SHIPPED_MAPS = tuple(SHIPPED_SEEDS)
_DATA_DIR = Path(__file__).resolve().parent / "data"
_MAX_ATTEMPTS = 64  # generation attempts per seed before giving up


class MapGenerationError(RuntimeError):
    """The generator found no map meeting its checks within its attempts for a seed."""


@dataclass(frozen=True, eq=False)
class VacuumMap:
    """A Robot Vacuum map.

    :param name: the map's name (``own_3``, ``open_7``, a file's name).
    :param walkable: (128, 128) bool, ``walkable[z, x]``; stored as a read-only private copy.
    :param chargers: the map's 4 charger spots, centres ``(x, z)``; each 3 x 3 footprint lies on the grid and holds
        at least one road cell.
    """

    name: str
    walkable: np.ndarray
    chargers: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"map name {self.name!r} is not a non-empty string; name the map (e.g. 'own_1')")
        walkable = np.array(self.walkable, dtype=bool)
        if walkable.shape != (MAP_SIZE, MAP_SIZE):
            raise ValueError(f"map {self.name!r}: walkable has shape {walkable.shape}; a map is a ({MAP_SIZE}, "
                             f"{MAP_SIZE}) bool array indexed [z, x]")
        walkable.setflags(write=False)
        object.__setattr__(self, "walkable", walkable)
        object.__setattr__(self, "chargers", _check_chargers(self.name, walkable, self.chargers))

    def __reduce__(self) -> tuple:
        # rebuilt through the constructor, so an unpickled map's grid is read-only again
        return VacuumMap, (self.name, self.walkable, self.chargers)

    def road_cells(self) -> int:
        """Number of road (walkable) cells."""
        return int(self.walkable.sum())

    def charger_mask(self, active: Iterable[Sequence[int]] | None = None) -> np.ndarray:
        """(128, 128) bool: the cells under the footprints of the ``active`` chargers (centres ``(x, z)``; default:
        all of the map's spots)."""
        mask = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
        for x, z in self._active(active):
            mask[z - CHARGER_HALF:z + CHARGER_HALF + 1, x - CHARGER_HALF:x + CHARGER_HALF + 1] = True
        return mask

    def total_dirt(self, active: Iterable[Sequence[int]] | None = None) -> int:
        """Dirty cells at reset: road cells not under the footprints of the ``active`` chargers (centres ``(x, z)``,
        a subset of :attr:`chargers`; default all 4), spec §2.1 / §4.3."""
        return int((self.walkable & ~self.charger_mask(active)).sum())

    def connected(self) -> bool:
        """Whether the road is one component under the 8-move rule with anti-corner-cutting (spec §5.2)."""
        return len(components(self.walkable)) == 1

    def spawn_room(self, count: int = NPC_COUNT, spacing: int = NPC_SPACING) -> tuple[tuple[int, int], ...] | None:
        """``count`` road cells outside the charger footprints, pairwise at Chebyshev distance >= ``spacing``
        (a witness that the NPCs of spec §4.4 fit), or None when the search finds none. Deterministic."""
        candidates = self.walkable & ~self.charger_mask()
        return spread_cells(candidates, count, spacing, np.random.default_rng(_content_seed(self.walkable)))

    def _active(self, active: Iterable[Sequence[int]] | None) -> list[tuple[int, int]]:
        if active is None:
            return list(self.chargers)
        out = []
        for spot in active:
            cell = _xz(spot)
            if cell not in self.chargers:
                raise ValueError(f"map {self.name!r}: {spot!r} is not one of its charger spots {self.chargers}; pass "
                                 "active chargers as a subset of VacuumMap.chargers (centres (x, z))")
            out.append(cell)
        return out


def _xz(spot: object) -> tuple[int, int]:
    """``spot`` as a pair of Python ints, or ValueError."""
    try:
        x, z = spot  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"charger spot {spot!r} is not a pair (x, z) of integers") from None
    if isinstance(x, bool) or isinstance(z, bool) or not isinstance(x, int | np.integer) \
            or not isinstance(z, int | np.integer):
        raise ValueError(f"charger spot {spot!r} is not a pair (x, z) of integers")
    return int(x), int(z)


def _check_chargers(name: str, walkable: np.ndarray, chargers: object) -> tuple[tuple[int, int], ...]:
    """The charger spots as a tuple of 4 distinct ``(x, z)`` whose footprints are on the grid with a road cell."""
    try:
        spots = tuple(_xz(spot) for spot in chargers)  # type: ignore[union-attr]
    except TypeError:
        raise ValueError(f"map {name!r}: chargers {chargers!r} is not a sequence of (x, z) centres") from None
    except ValueError as exc:
        raise ValueError(f"map {name!r}: {exc}; chargers are the centres of the 3 x 3 charger footprints") from None
    if len(spots) != CHARGER_COUNT or len(set(spots)) != CHARGER_COUNT:
        raise ValueError(f"map {name!r}: chargers {spots} must be {CHARGER_COUNT} distinct centres (x, z), one per "
                         "charger spot of the map")
    lo, hi = CHARGER_HALF, MAP_SIZE - 1 - CHARGER_HALF
    for x, z in spots:
        if not (lo <= x <= hi and lo <= z <= hi):
            raise ValueError(f"map {name!r}: charger centre ({x}, {z}) puts part of its 3 x 3 footprint off the "
                             f"map; centres must lie in {lo}..{hi} on both axes")
        if not walkable[z - 1:z + 2, x - 1:x + 2].any():
            raise ValueError(f"map {name!r}: the 3 x 3 footprint of charger ({x}, {z}) holds no road cell; place "
                             "chargers on the road")
    return spots


# --- connectivity and spread points ----------------------------------------------------------------------------------

def components(walkable: np.ndarray) -> list[np.ndarray]:
    """The road's components under the move rule (= its 4-connected components), largest first, as flat cell
    indices ``z * width + x`` (int arrays)."""
    walk = np.asarray(walkable, dtype=bool)
    h, w = walk.shape
    flat = walk.reshape(-1).tolist()
    label = [0] * (h * w)
    found: list[np.ndarray] = []
    for start in np.flatnonzero(walk).tolist():
        if label[start]:
            continue
        label[start] = len(found) + 1
        stack, cells = [start], [start]
        while stack:
            i = stack.pop()
            x = i % w
            for j, ok in ((i - w, i >= w), (i + w, i < (h - 1) * w), (i - 1, x > 0), (i + 1, x < w - 1)):
                if ok and flat[j] and not label[j]:
                    label[j] = len(found) + 1
                    stack.append(j)
                    cells.append(j)
        found.append(np.array(sorted(cells), dtype=np.int64))
    found.sort(key=len, reverse=True)
    return found


def spread_cells(candidates: np.ndarray, count: int, spacing: int, rng: np.random.Generator,
                 tries: int = 24) -> tuple[tuple[int, int], ...] | None:
    """``count`` cells ``(x, z)`` of the bool mask ``candidates`` ([z, x]) pairwise at Chebyshev distance >=
    ``spacing``: greedy picks in ``tries`` random orders, the set with the largest smallest pairwise distance wins;
    None when no order gives ``count`` cells."""
    zs, xs = np.nonzero(candidates)
    if len(xs) < count:
        return None
    best, best_gap = None, -1
    for _ in range(tries):
        order = rng.permutation(len(xs))
        chosen: list[tuple[int, int]] = []
        px, pz = xs[order], zs[order]
        alive = np.ones(len(order), dtype=bool)
        while len(chosen) < count:
            left = np.flatnonzero(alive)
            if not len(left):
                break
            k = int(left[0])
            cx, cz = int(px[k]), int(pz[k])
            chosen.append((cx, cz))
            alive &= np.maximum(np.abs(px - cx), np.abs(pz - cz)) >= spacing
        if len(chosen) == count:
            gap = min(max(abs(a[0] - b[0]), abs(a[1] - b[1])) for i, a in enumerate(chosen) for b in chosen[i + 1:])
            if gap > best_gap:
                best, best_gap = tuple(sorted(chosen, key=lambda c: (c[1], c[0]))), gap
    return best


def _full_footprints(walkable: np.ndarray) -> np.ndarray:
    """(128, 128) bool: centres whose whole 3 x 3 footprint is road."""
    walk = np.asarray(walkable, dtype=bool)
    out = np.zeros_like(walk)
    inner = np.ones((walk.shape[0] - 2, walk.shape[1] - 2), dtype=bool)
    for dz in range(3):
        for dx in range(3):
            inner &= walk[dz:dz + inner.shape[0], dx:dx + inner.shape[1]]
    out[1:-1, 1:-1] = inner
    return out


def _content_seed(walkable: np.ndarray) -> int:
    """A seed from a map's cells (the same grid always gives the same seed)."""
    bits = np.packbits(np.asarray(walkable, dtype=bool).reshape(-1)).tobytes()
    return int.from_bytes(hashlib.sha256(bits).digest()[:8], "little")


def choose_chargers(walkable: np.ndarray, rng: np.random.Generator | None = None,
                    spacing: int = CHARGER_SPACING) -> tuple[tuple[int, int], ...]:
    """4 charger centres whose 3 x 3 footprints are fully road, on the largest component, spread apart (pairwise
    Chebyshev >= ``spacing``, lowered step by step where the map has no room for it).

    :param rng: the random stream; default one seeded by the map's cells, so a map always gets the same spots.
    """
    walk = np.asarray(walkable, dtype=bool)
    rng = rng if rng is not None else np.random.default_rng(_content_seed(walk))
    parts = components(walk)
    main_part = np.zeros(walk.size, dtype=bool)
    if parts:
        main_part[parts[0]] = True
    candidates = _full_footprints(walk) & main_part.reshape(walk.shape)
    for gap in range(spacing, 2, -1):
        spots = spread_cells(candidates, CHARGER_COUNT, gap, rng)
        if spots is not None:
            return spots
    raise ValueError(f"the map has {int(candidates.sum())} places for a charger (a 3 x 3 block of road on its main "
                     f"component) and no {CHARGER_COUNT} of them lie 3 or more cells apart; the map needs more open "
                     "road for its charger spots")


# --- generator -------------------------------------------------------------------------------------------------------

@dataclass
class _Plan:
    """One generation attempt's parameters and its growing layout."""

    rng: np.random.Generator
    wall: int  # wall thickness between rooms (cells)
    min_room: int  # smallest room side
    max_room: int  # a region longer than this is split
    p_corridor: float  # chance that a split leaves a corridor between its halves
    p_hall: float  # chance that a region of hall size stays one open room
    p_loop: float  # chance of a door on an adjacency outside the spanning tree
    p_open: float  # chance that two adjacent rooms are open to each other along their whole wall
    rooms: list  # (x0, z0, x1, z1, kind) with kind "room" or "corridor"; x1, z1 exclusive


def _split(plan: _Plan, x0: int, z0: int, x1: int, z1: int) -> None:
    """Binary space partition of the region into rooms and corridors (appended to ``plan.rooms``)."""
    rng, w, h = plan.rng, x1 - x0, z1 - z0
    fits = w <= plan.max_room and h <= plan.max_room
    hall = w * h <= 2.2 * plan.max_room ** 2 and rng.random() < plan.p_hall
    axis_x = w > h if abs(w - h) > 4 else rng.random() < 0.5  # split across the longer side
    length = w if axis_x else h
    corridor = rng.random() < plan.p_corridor and length >= 2 * plan.min_room + 2 * plan.wall + 8
    width = int(rng.integers(1, 4)) if corridor else 0
    band = plan.wall * 2 + width if corridor else plan.wall
    if (fits and rng.random() < 0.75) or hall or length < 2 * plan.min_room + band:
        plan.rooms.append((x0, z0, x1, z1, "room"))
        return
    start = (x0 if axis_x else z0) + plan.min_room
    cut = int(rng.integers(start, start + length - 2 * plan.min_room - band + 1))
    if axis_x:
        if corridor:
            plan.rooms.append((cut + plan.wall, z0, cut + plan.wall + width, z1, "corridor"))
        _split(plan, x0, z0, cut, z1)
        _split(plan, cut + band, z0, x1, z1)
    else:
        if corridor:
            plan.rooms.append((x0, cut + plan.wall, x1, cut + plan.wall + width, "corridor"))
        _split(plan, x0, z0, x1, cut)
        _split(plan, x0, cut + band, x1, z1)


def _adjacencies(rooms: list, wall: int) -> list[tuple[int, int, bool, int, int, int, int]]:
    """Pairs of rooms separated only by a wall: ``(i, j, across_x, wall_start, wall_end, lo, hi)``: the wall spans
    ``wall_start..wall_end`` (exclusive) across the pair's axis and ``lo..hi`` (exclusive) along the shared side."""
    out = []
    for i, a in enumerate(rooms):
        for j in range(i + 1, len(rooms)):
            b = rooms[j]
            for across_x, (a0, a1, b0, b1, c0, c1, d0, d1) in (
                    (True, (a[0], a[2], b[0], b[2], a[1], a[3], b[1], b[3])),
                    (False, (a[1], a[3], b[1], b[3], a[0], a[2], b[0], b[2]))):
                lo, hi = max(c0, d0), min(c1, d1)
                if hi - lo < 1:
                    continue
                if 1 <= b0 - a1 <= wall:
                    out.append((i, j, across_x, a1, b0, lo, hi))
                elif 1 <= a0 - b1 <= wall:
                    out.append((i, j, across_x, b1, a0, lo, hi))
    return out


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _carve_doors(plan: _Plan, road: np.ndarray, doors: np.ndarray) -> None:
    """Open doors through the walls: a random spanning tree of the room adjacencies, plus loops; corridors meet
    corridors over their full width; some room pairs are open along their whole shared wall."""
    rng, rooms = plan.rng, plan.rooms
    pairs = _adjacencies(rooms, plan.wall)
    order = rng.permutation(len(pairs))
    parent = list(range(len(rooms)))
    for k in order.tolist():
        i, j, across_x, s0, s1, lo, hi = pairs[k]
        ri, rj = _find(parent, i), _find(parent, j)
        both_corridors = rooms[i][4] == rooms[j][4] == "corridor"
        if ri == rj and not both_corridors and rng.random() >= plan.p_loop:
            continue
        parent[ri] = rj
        span = hi - lo
        if both_corridors or (rooms[i][4] == rooms[j][4] == "room" and rng.random() < plan.p_open):
            d0, d1 = lo, hi
        else:
            width = int(rng.choice((1, 1, 2, 2, 2, 3, 3, 4, 5, 6)))
            width = min(width, span)
            d0 = lo + int(rng.integers(0, span - width + 1))
            d1 = d0 + width
        if across_x:
            road[d0:d1, s0:s1] = True
            doors[d0:d1, s0:s1] = True
        else:
            road[s0:s1, d0:d1] = True
            doors[s0:s1, d0:d1] = True


def _outside(rng: np.random.Generator, share: float) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The outdoor space (True = outdoors, an obstacle) and the house's bounding box ``(x0, z0, x1, z1)``: a
    rectangle with cut-away corners and bays (L, T, U shaped houses) and sometimes an inner courtyard, drawn until
    the house covers about ``share`` of the grid."""
    best, best_gap = None, 2.0
    for _ in range(40):
        out = np.ones((MAP_SIZE, MAP_SIZE), dtype=bool)
        x0, z0 = (int(v) for v in rng.integers(1, 12, size=2))
        x1, z1 = (MAP_SIZE - int(v) for v in rng.integers(1, 12, size=2))
        out[z0:z1, x0:x1] = False
        for _ in range(int(rng.integers(0, 4))):
            w, h = int(rng.integers(16, 56)), int(rng.integers(16, 56))
            corner = int(rng.integers(0, 6))
            if corner < 4:
                cx = x0 if corner % 2 == 0 else x1 - w
                cz = z0 if corner < 2 else z1 - h
            else:  # a bay in the middle of the top or bottom side
                cx = int(rng.integers(x0 + 16, max(x0 + 17, x1 - w - 15)))
                cz = z0 if corner == 4 else z1 - h
            out[cz:cz + h, cx:cx + w] = True
        if rng.random() < 0.3:  # an inner courtyard
            w, h = int(rng.integers(10, 24)), int(rng.integers(10, 24))
            cx = int(rng.integers(x0 + 24, max(x0 + 25, x1 - 24 - w)))
            cz = int(rng.integers(z0 + 24, max(z0 + 25, z1 - 24 - h)))
            out[cz:cz + h, cx:cx + w] = True
        gap = abs(1.0 - out.mean() - share)
        if gap < best_gap:
            best, best_gap = (out, (x0, z0, x1, z1)), gap
        if gap < 0.02:
            break
    assert best is not None
    return best


def _ring_ok(road: np.ndarray, x0: int, z0: int, x1: int, z1: int) -> bool:
    """Whether turning the block ``[z0:z1, x0:x1]`` into an obstacle keeps the road connected: the road cells on
    the ring of cells around the block form one unbroken arc of the ring (or the whole ring)."""
    ring = [(x, z0 - 1) for x in range(x0 - 1, x1 + 1)] + [(x1, z) for z in range(z0, z1 + 1)] \
        + [(x, z1) for x in range(x1 - 1, x0 - 2, -1)] + [(x0 - 1, z) for z in range(z1 - 1, z0 - 1, -1)]
    flags = [0 <= x < MAP_SIZE and 0 <= z < MAP_SIZE and bool(road[z, x]) for x, z in ring]
    if not any(flags):
        return False
    breaks = sum(1 for k in range(len(flags)) if flags[k] and not flags[(k + 1) % len(flags)])
    return breaks <= 1


def _place_piece(rng: np.random.Generator, room: tuple, road: np.ndarray, clear: np.ndarray) -> int:
    """Try to put one piece of furniture (a bed or a cabinet against a wall, a table or a pillar in the open) in
    ``room``; it never cuts the road apart nor blocks a door. Returns the number of road cells it covers (0: not
    placed)."""
    x0, z0, x1, z1, _ = room
    kind = rng.random()
    if kind < 0.55:  # against a wall
        long, short = int(rng.integers(2, 9)), int(rng.integers(1, 5))
        side = int(rng.integers(0, 4))
        w, h = (long, short) if side < 2 else (short, long)
        if w > x1 - x0 - 1 or h > z1 - z0 - 1:
            return 0
        px = int(rng.integers(x0, x1 - w + 1)) if side < 2 else (x0 if side == 2 else x1 - w)
        pz = (z0 if side == 0 else z1 - h) if side < 2 else int(rng.integers(z0, z1 - h + 1))
    else:  # in the open: tables, islands, pillars
        w, h = (int(v) for v in rng.integers(1, 7, size=2)) if kind < 0.9 else (int(rng.integers(1, 3)),) * 2
        if w + 2 > x1 - x0 or h + 2 > z1 - z0:
            return 0
        px, pz = int(rng.integers(x0 + 1, x1 - w)), int(rng.integers(z0 + 1, z1 - h))
    block = (slice(pz, pz + h), slice(px, px + w))
    if not road[block].all() or clear[block].any() or not _ring_ok(road, px, pz, px + w, pz + h):
        return 0
    road[block] = False
    return w * h


def _plan(rng: np.random.Generator) -> _Plan:
    """One attempt's style: from many small rooms off corridors to open halls."""
    return _Plan(rng=rng, wall=int(rng.choice((1, 1, 1, 2))), min_room=int(rng.integers(6, 11)),
                 max_room=int(rng.integers(18, 40)), p_corridor=float(rng.uniform(0.15, 0.6)),
                 p_hall=float(rng.uniform(0.0, 0.35)), p_loop=float(rng.uniform(0.15, 0.6)),
                 p_open=float(rng.uniform(0.0, 0.2)), rooms=[])


def _attempt(rng: np.random.Generator) -> np.ndarray | None:
    """One generation attempt: the walkable grid, or None when it misses the road share range."""
    plan = _plan(rng)
    target = rng.uniform(ROAD_SHARE_RANGE[0] + 0.01, ROAD_SHARE_RANGE[1] - 0.01)
    outside, (x0, z0, x1, z1) = _outside(rng, target / rng.uniform(0.7, 0.82))
    _split(plan, x0, z0, x1, z1)
    road = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    for rx0, rz0, rx1, rz1, _ in plan.rooms:
        road[rz0:rz1, rx0:rx1] = True
    doors = np.zeros_like(road)
    _carve_doors(plan, road, doors)
    road = _prune(road & ~outside)
    parts = components(road)
    if not parts:
        return None
    road = np.zeros(road.size, dtype=bool)
    road[parts[0]] = True
    road = road.reshape(MAP_SIZE, MAP_SIZE)
    clear = _dilate(doors, 2)  # keep the cells around doors free of furniture
    rooms = [r for r in plan.rooms if r[4] == "room" and r[2] - r[0] >= 4 and r[3] - r[1] >= 4]
    if rooms:
        areas = np.array([(r[2] - r[0]) * (r[3] - r[1]) for r in rooms], dtype=float)
        picks = rng.choice(len(rooms), size=4000, p=areas / areas.sum()).tolist()
        count = int(road.sum())
        # every house has furniture (at least 4..10 % of its floor), then more until the road share is reached
        goal = min(int(target * road.size), int(count * (1.0 - rng.uniform(0.04, 0.1))))
        for k in picks:
            if count <= goal:
                break
            count -= _place_piece(rng, rooms[k], road, clear)
    share = road.sum() / road.size
    if not ROAD_SHARE_RANGE[0] <= share <= ROAD_SHARE_RANGE[1]:
        return None
    return road


def _prune(road: np.ndarray) -> np.ndarray:
    """``road`` without its dead-end spurs one cell wide (cells with at most one road 4-neighbour, repeatedly):
    the stubs of doors and corridors that the outdoor space cut off."""
    road = road.copy()
    while True:
        padded = np.pad(road, 1)
        neighbours = (padded[:-2, 1:-1].astype(np.int8) + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:])
        spur = road & (neighbours <= 1)
        if not spur.any():
            return road
        road &= ~spur


def _dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """``mask`` grown by ``radius`` cells (Chebyshev)."""
    out = mask.copy()
    for _ in range(radius):
        grown = out.copy()
        grown[1:, :] |= out[:-1, :]
        grown[:-1, :] |= out[1:, :]
        grown[:, 1:] |= grown[:, :-1].copy()
        grown[:, :-1] |= grown[:, 1:].copy()
        out = grown
    return out


def generate_map(seed: int, name: str) -> VacuumMap:
    """A house-like map from ``seed`` (numpy only, the same map for the same seed and numpy stream): rooms, corridors
    1..3 cells wide, doors 1..6 wide, open halls, furniture blocks, outdoor space; one connected road with
    :data:`ROAD_SHARE_RANGE` of the grid, 4 charger spots fully on road pairwise >= :data:`CHARGER_SPACING` apart
    and room for 4 NPC spawns pairwise >= :data:`NPC_SPACING` apart.

    Attempt ``a`` draws from ``np.random.default_rng([seed, a])``; an attempt that misses a check is dropped.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"map seed {seed!r} is not an integer >= 0; pass a seed such as 1")
    for attempt in range(_MAX_ATTEMPTS):
        rng = np.random.default_rng([int(seed), attempt])
        road = _attempt(rng)
        if road is None:
            continue
        try:
            chargers = choose_chargers(road, rng, CHARGER_SPACING)
        except ValueError:
            continue
        if _spacing(chargers) < CHARGER_SPACING:
            continue
        game_map = VacuumMap(name=name, walkable=road, chargers=chargers)
        if game_map.spawn_room() is not None:
            return game_map
    raise MapGenerationError(f"seed {seed}: no map met the checks in {_MAX_ATTEMPTS} attempts; try another seed")


def _spacing(cells: Sequence[tuple[int, int]]) -> int:
    """Smallest pairwise Chebyshev distance of ``cells``."""
    return min(max(abs(a[0] - b[0]), abs(a[1] - b[1])) for i, a in enumerate(cells) for b in cells[i + 1:])


# --- files -----------------------------------------------------------------------------------------------------------

def map_to_dict(game_map: VacuumMap) -> dict:
    """The map in this package's own format (``rows`` of ``.`` road / ``#`` obstacle, ``chargers``)."""
    rows = ["".join("." if v else "#" for v in row) for row in game_map.walkable.tolist()]
    return {"format": FORMAT, "version": FORMAT_VERSION, "name": game_map.name, "width": MAP_SIZE,
            "height": MAP_SIZE, "rows": rows, "chargers": [list(c) for c in game_map.chargers]}


def map_to_gorge_dict(game_map: VacuumMap) -> dict:
    """The map in the competition's (Gorge Chase's) format, its chargers as ``objects`` organ entries (``pos`` =
    centre)."""
    cells = [{"x": x, "z": z, "type_id": ROAD if game_map.walkable[z, x] else OBSTACLE, "height": 0.0}
             for z in range(MAP_SIZE) for x in range(MAP_SIZE)]
    objects = [{"sub_type": 1, "config_id": i, "pos": {"x": x, "z": z}, "w": 3, "h": 3}
               for i, (x, z) in enumerate(game_map.chargers)]
    return {"name": game_map.name, "width": MAP_SIZE, "height": MAP_SIZE, "cells": cells, "objects": objects,
            "metadata": {}}


def _dumps(data: dict) -> bytes:
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":"), indent=None) + "\n").encode("utf-8")


def save_map(game_map: VacuumMap, path: str | os.PathLike, fmt: str = "own") -> Path:
    """Write ``game_map`` atomically to ``path``: ``fmt`` ``"own"`` (this package's format) or ``"gorge"`` (the
    competition's); gzip-compressed (no time stamp) when ``path`` ends with ``.gz``."""
    if fmt not in ("own", "gorge"):
        raise ValueError(f"map file format {fmt!r} is unknown; use 'own' or 'gorge'")
    raw = _dumps(map_to_dict(game_map) if fmt == "own" else map_to_gorge_dict(game_map))
    if str(path).endswith(".gz"):
        raw = gzip.compress(raw, mtime=0)
    return atomic_write(path, lambda f: f.write(raw), mode=0o644)


def _competition_name(path: str) -> str | None:
    found = _COMPETITION_NAME.fullmatch(Path(path).name)
    return f"open_{int(found.group(1))}" if found else None


def load_map(path: str | os.PathLike) -> VacuumMap:
    """Load a map file: the competition's format (``robot_vacuum_map_<k>.json``, ``room_grid_map_<k>.json``,
    ``map<k>.json``: named ``open_<k>``) or this package's own; ``.gz`` files are decompressed. Cached per (path,
    modification time).

    :raises ValueError: the file is missing or not a map; the message names the file and what is wrong.
    """
    problem = not_a_file(path)
    if problem:
        raise ValueError(f"map file {str(path)!r} {problem}; pass the path of a robot_vacuum_map_<k>.json file")
    p = Path(path).expanduser().resolve()
    return _load_cached(str(p), p.stat().st_mtime_ns)


@lru_cache(maxsize=32)
def _load_cached(path: str, mtime_ns: int) -> VacuumMap:
    try:
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"map file {path!r} is not valid JSON ({exc}); expected a map in the competition's "
                         "format {name, width, height, cells, objects} or this package's own") from None
    try:
        return map_from_dict(data, name=_competition_name(path))
    except ValueError as exc:
        raise ValueError(f"map file {path!r}: {exc}") from None


def map_from_dict(data: object, name: str | None = None) -> VacuumMap:
    """A :class:`VacuumMap` from a parsed map file (either format).

    :param name: the map's name (default: the file's ``name``).
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}; a map file is an object {{name, "
                         "width, height, cells, objects}}")
    label = name or str(data.get("name") or "custom")
    w, h = data.get("width"), data.get("height")
    if (w, h) != (MAP_SIZE, MAP_SIZE) or isinstance(w, bool) or isinstance(h, bool):
        raise ValueError(f"width x height is {w!r} x {h!r}; Robot Vacuum maps are {MAP_SIZE} x {MAP_SIZE}")
    if data.get("format") == FORMAT:
        return _own_from_dict(data, label)
    if "cells" not in data:
        raise ValueError("missing key 'cells'; the competition's format is {name, width: 128, height: 128, cells: "
                         "[16384 objects {x, z, type_id, height}], objects}")
    walkable = _cells_grid(data["cells"])
    chargers = _object_chargers(data.get("objects", []))
    if chargers is None:
        chargers = choose_chargers(walkable)
    return VacuumMap(name=label, walkable=walkable, chargers=chargers)


def _own_from_dict(data: Mapping, name: str) -> VacuumMap:
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"format version {data.get('version')!r} is not {FORMAT_VERSION}; write the file again "
                         "with this package's save_map")
    rows = data.get("rows")
    if not isinstance(rows, list) or len(rows) != MAP_SIZE or any(
            not isinstance(r, str) or len(r) != MAP_SIZE or set(r) - {".", "#"} for r in rows):
        raise ValueError(f"'rows' must be {MAP_SIZE} strings of {MAP_SIZE} characters '.' (road) or '#' "
                         "(obstacle)")
    walkable = np.array([[c == "." for c in r] for r in rows], dtype=bool)
    chargers = data.get("chargers")
    if not isinstance(chargers, list):
        raise ValueError(f"'chargers' is {chargers!r}; it must list the {CHARGER_COUNT} charger centres [x, z]")
    return VacuumMap(name=name, walkable=walkable, chargers=tuple(_xz(c) for c in chargers))


def _cells_grid(cells: object) -> np.ndarray:
    """The walkable grid of a ``cells`` list (each cell exactly once, ``type_id`` 3 road or 1 obstacle)."""
    n = MAP_SIZE * MAP_SIZE
    if not isinstance(cells, list) or len(cells) != n:
        got = f"{len(cells)} cells" if isinstance(cells, list) else type(cells).__name__
        raise ValueError(f"'cells' must be a list of {n} objects {{x, z, type_id, height}}, got {got}")
    try:
        table = np.array([(c["x"], c["z"], c["type_id"]) for c in cells])
    except (TypeError, KeyError) as exc:
        raise ValueError(f"a cell lacks key {exc} or is not an object; each cell is {{x, z, type_id, height}}") \
            from None
    if table.dtype.kind not in "iu" or any(isinstance(c[k], bool) for c in cells for k in ("x", "z", "type_id")):
        bad = next((c for c in cells if any(isinstance(c[k], bool) or not isinstance(c[k], int)
                                            for k in ("x", "z", "type_id"))), None)
        raise ValueError(f"cell {bad!r} has a non-integer or out-of-range x, z or type_id; they are small integers")
    xs, zs, types = table[:, 0], table[:, 1], table[:, 2]
    off = (xs < 0) | (xs >= MAP_SIZE) | (zs < 0) | (zs >= MAP_SIZE)
    if off.any():
        k = int(np.flatnonzero(off)[0])
        raise ValueError(f"cells[{k}] is at ({xs[k]}, {zs[k]}), off the {MAP_SIZE} x {MAP_SIZE} grid")
    unknown = (types != ROAD) & (types != OBSTACLE)
    if unknown.any():
        k = int(np.flatnonzero(unknown)[0])
        raise ValueError(f"cells[{k}] at ({xs[k]}, {zs[k]}) has type_id {types[k]}; only {ROAD} (road) and "
                         f"{OBSTACLE} (obstacle) are known")
    seen = np.zeros((MAP_SIZE, MAP_SIZE), dtype=np.int64)
    np.add.at(seen, (zs, xs), 1)
    if (seen != 1).any():
        z, x = (int(v) for v in np.argwhere(seen != 1)[0])
        raise ValueError(f"cell ({x}, {z}) appears {seen[z, x]} times; each of the {n} cells must appear once")
    walkable = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    walkable[zs, xs] = types == ROAD
    return walkable


def _is_charger(obj: Mapping) -> bool:
    words = " ".join(str(obj.get(k, "")) for k in ("type", "name", "kind", "category")).lower()
    if "charger" in words or "充电" in words:
        return True
    return obj.get("sub_type") == 1 and obj.get("w", 3) == 3 and obj.get("h", 3) == 3


def _object_chargers(objects: object) -> tuple[tuple[int, int], ...] | None:
    """The charger centres listed in ``objects`` (in ``config_id`` order), or None when it lists none."""
    if not isinstance(objects, list):
        raise ValueError(f"'objects' is {type(objects).__name__}; it must be a list (empty when the map defines "
                         "no objects)")
    found = []
    for k, obj in enumerate(objects):
        if not isinstance(obj, Mapping) or not _is_charger(obj):
            continue
        pos = obj.get("pos", obj)
        if not isinstance(pos, Mapping) or "x" not in pos or "z" not in pos:
            raise ValueError(f"objects[{k}] is a charger without a position; give it pos {{x, z}} (its centre)")
        try:
            cell = _xz((pos["x"], pos["z"]))
        except ValueError as exc:
            raise ValueError(f"objects[{k}]: {exc}") from None
        found.append((obj.get("config_id", k), k, cell))
    if not found:
        return None
    if len(found) != CHARGER_COUNT:
        raise ValueError(f"'objects' lists {len(found)} chargers; a map has {CHARGER_COUNT} charger spots (list "
                         "all of them, or none to have them chosen from the map)")
    try:
        found.sort(key=lambda t: (t[0], t[1]))
    except TypeError:
        found.sort(key=lambda t: t[1])
    return tuple(t[2] for t in found)


def maps_folder_map(folder: str | os.PathLike, k: int) -> VacuumMap:
    """Open map ``k`` (named ``open_<k>``) from a folder of the competition's map files (:data:`FILE_PATTERNS`, also
    gzip-compressed as ``.json.gz``)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"map id {k!r} is not an integer >= 1; the open maps are 1..10, the hidden ones 11..15")
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"maps folder {str(folder)!r} is not a folder; pass the folder holding "
                         f"robot_vacuum_map_<k>.json files")
    names = [p.format(k=int(k)) + ext for p in FILE_PATTERNS for ext in ("", ".gz")]
    for file_name in names:
        if (root / file_name).is_file():
            return load_map(root / file_name)
    raise ValueError(f"maps folder {str(folder)!r} holds no map {k}: looked for {', '.join(names)}")


# --- shipped maps ----------------------------------------------------------------------------------------------------

def _data_file(name: str, folder: Path | None = None) -> Path:
    return (folder if folder is not None else _DATA_DIR) / f"{name}.json.gz"


def shipped_map(name: str) -> VacuumMap:
    """A shipped map by name (:data:`SHIPPED_MAPS`: ``own_1`` .. ``own_10``, ``standin_1`` .. ``standin_5``); read
    once per process."""
    if name not in SHIPPED_SEEDS:
        raise ValueError(f"map name {name!r} is not a shipped map; choose one of {list(SHIPPED_MAPS)} or load a map "
                         "file with load_map")
    return _shipped(name)


@lru_cache(maxsize=len(SHIPPED_MAPS))
def _shipped(name: str) -> VacuumMap:
    raw = (resources.files("sb3_realm_vacuum") / "data" / f"{name}.json.gz").read_bytes()
    return map_from_dict(json.loads(gzip.decompress(raw).decode("utf-8")), name=name)


def write_data(folder: str | os.PathLike | None = None) -> list[Path]:
    """Generate every shipped map from its seed and write it to ``folder`` (default: the package's ``data/``)."""
    root = Path(folder) if folder is not None else _DATA_DIR
    return [save_map(generate_map(seed, name), _data_file(name, root)) for name, seed in SHIPPED_SEEDS.items()]


def check_data(folder: str | os.PathLike | None = None) -> list[str]:
    """The shipped maps whose stored file differs from a fresh generation (empty when all agree)."""
    root = Path(folder) if folder is not None else _DATA_DIR
    bad = []
    for name, seed in SHIPPED_SEEDS.items():
        fresh = gzip.compress(_dumps(map_to_dict(generate_map(seed, name))), mtime=0)
        path = _data_file(name, root)
        if not path.is_file() or gzip.decompress(path.read_bytes()) != gzip.decompress(fresh):
            bad.append(name)
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sb3_realm_vacuum.maps --write-data | --check-data [--folder DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m sb3_realm_vacuum.maps", description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write-data", action="store_true", help="generate the shipped maps and write their files")
    action.add_argument("--check-data", action="store_true", help="compare the stored files with a fresh generation")
    parser.add_argument("--folder", default=None, help="the data folder (default: the package's data/)")
    args = parser.parse_args(argv)
    if args.write_data:
        for path in write_data(args.folder):
            game_map = load_map(path)
            print(f"{path.name}: road {game_map.road_cells()} ({game_map.road_cells() / MAP_SIZE ** 2:.1%}), "
                  f"total_dirt {game_map.total_dirt()}, chargers {game_map.chargers}")
        return 0
    bad = check_data(args.folder)
    if bad:
        print(f"stored maps differ from a fresh generation: {', '.join(bad)}", file=sys.stderr)
        return 1
    print("all shipped maps match a fresh generation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
