"""Deterministic generator of sb3_realm's own 128 x 128 maps for Gorge Chase (``sb3_realm/games/gorge/data/``).
A build tool beside the package, not part of it: it needs numpy and the package's atomic writer only.

The maps are original: each is generated from a seed by the procedure below and never reads or copies the
competition's maps. They only aim for the same *statistics*: every figure :func:`map_statistics` measures must lie
inside the range measured on the 10 open maps (docs/gorge/rules.md, the maps, constants ``*_RANGE`` below).

Procedure (all randomness from ``np.random.default_rng([seed, attempt])``):

1. Waypoints: a 6 x 6 lattice over [16, 112]^2, each point jittered by up to 30 % of the lattice step.
2. Graph: a random growing tree over lattice neighbours (4 directions, rarely a diagonal) that stops after ``K``
   waypoints, plus 2..5 loop edges between waypoints that are lattice neighbours but far apart in the tree.
3. Corridors: each edge is a cubic Bezier curve bent sideways by a random amount, painted with a round brush of
   radius 2.3..3.0 cells (corridors about 5..6 cells wide); some waypoints get a round open area of radius 3.5..6.
   Painting is clipped to [10, 117]^2.
4. Clean-up, repeated until nothing changes: fill one orthogonal cell of every "pinch" diagonal (two diagonal road
   cells whose two shared orthogonal cells are both obstacles), then remove every road cell with at most one
   4-neighbour on the road (1-wide dead-end spurs); finally keep the largest 4-connected component.
5. Checks: a map whose statistics leave any range is discarded and the next attempt is drawn, so the output depends
   only on ``seed``.

The painted cells are exact comparisons of numbers on a 1/64-cell lattice computed with + - * / only, so a seed gives
the same map on every platform.

Command line::

    python tools/gorge_mapgen.py --out sb3_realm/games/gorge/data [--seeds 1 2 3 4 5 6 7 8 9 10]
    python tools/gorge_mapgen.py --check sb3_realm/games/gorge/data [--seeds 1 2 3 4 5 6 7 8 9 10]

A map is written as ``gorge_own_<seed>.json.gz``: the open maps' JSON text, gzip-compressed with no time stamp
(about 40 KB instead of 680 KB; the same seed writes the same bytes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sb3_realm.atomic import atomic_write

__all__ = [
    "DEFAULT_SEEDS",
    "MapGenerationError",
    "diameter_4",
    "generate_grid",
    "generate_map",
    "grid_from_map",
    "main",
    "map_file",
    "map_name",
    "map_statistics",
    "map_to_json",
    "statistics_problems",
]

DEFAULT_SEEDS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
GRID = 128
MAX_ATTEMPTS = 200
RING = 10  # Chebyshev radius of the ring around a road cell (monster-1 spawn ring)

# Acceptance ranges: the extremes measured on the 10 open maps (docs/gorge/rules.md, the maps).
ROAD_RANGE = (3906, 4947)  # road cells (23.8 .. 30.2 % of the map)
BBOX_RANGE = (9, 118)  # every road cell's x and z lie inside this (the open maps: x 9..117, z 13..118)
DEAD_END_RANGE = (0, 2)  # road cells with exactly one 4-neighbour on the road
FULL8_RANGE = (0.44, 0.61)  # share of road cells whose 8 neighbours are all road
PINCH_RANGE = (0, 0)  # pinch diagonals
MIN_RING_RANGE = (4, 80)  # fewest road cells on the Chebyshev-10 ring of a road cell
DIAMETER_RANGE = (198, 489)  # exact 4-connected diameter in steps

# Layout parameters.
LATTICE = 6
LATTICE_LO, LATTICE_HI = 16.0, 112.0
JITTER = 0.3
TREE_NODES = (30, 36)  # waypoints used by the tree (inclusive range)
LOOPS = (3, 6)  # extra edges closing loops (inclusive range)
DIAGONAL = 0.1  # chance that a lattice step of the tree is diagonal
RADIUS = (2.3, 3.0)  # corridor brush radius in cells
ROOM_RADIUS = (3.5, 6.0)  # open area radius in cells
ROOM_SHARE = 0.3  # share of waypoints that get an open area
BEND = 0.3  # max sideways bend of a corridor's control points, fraction of its length
PAINT_LO, PAINT_HI = 10, 117  # painted cells lie inside [PAINT_LO, PAINT_HI]^2


class MapGenerationError(RuntimeError):
    """No attempt produced a map whose statistics lie inside the open maps' ranges."""


# ----------------------------------------------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------------------------------------------


def _shift(w: np.ndarray, dx: int, dz: int) -> np.ndarray:
    """``out[z, x] = w[z + dz, x + dx]``, False outside the grid."""
    h, wd = w.shape
    out = np.zeros_like(w)
    out[max(0, -dz) : min(h, h - dz), max(0, -dx) : min(wd, wd - dx)] = w[
        max(0, dz) : min(h, h + dz), max(0, dx) : min(wd, wd + dx)
    ]
    return out


def _degree4(w: np.ndarray) -> np.ndarray:
    return sum(_shift(w, dx, dz).astype(np.int8) for dx, dz in ((1, 0), (-1, 0), (0, 1), (0, -1)))


def _pinches(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-left corners ``[z, x]`` of 2 x 2 windows holding a pinch: on the main diagonal, on the anti-diagonal."""
    a, b, c, d = w[:-1, :-1], w[:-1, 1:], w[1:, :-1], w[1:, 1:]  # (z, x), (z, x+1), (z+1, x), (z+1, x+1)
    return a & d & ~b & ~c, b & c & ~a & ~d


def _neighbour_table(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Road cells as flat indices, and their 4-neighbours as positions in that list (``n`` where not road)."""
    flat = np.flatnonzero(w.ravel())
    n = len(flat)
    pos = np.full(w.size + 1, n, dtype=np.int64)
    pos[flat] = np.arange(n)
    x = flat % w.shape[1]
    table = np.stack(
        [
            np.where(x < w.shape[1] - 1, pos[np.minimum(flat + 1, w.size)], n),
            np.where(x > 0, pos[flat - 1], n),
            pos[np.minimum(flat + w.shape[1], w.size)],
            pos[np.where(flat >= w.shape[1], flat - w.shape[1], w.size)],
        ],
        axis=1,
    )
    return flat, table


def _bfs(table: np.ndarray, source: int) -> np.ndarray:
    """4-neighbour BFS distances from road cell ``source`` (a position in the road list); -1 where unreachable."""
    n = len(table)
    dist = np.full(n + 1, -1, dtype=np.int64)
    dist[n] = 0  # the "not road" sentinel counts as visited
    dist[source] = 0
    frontier = np.array([source])
    level = 0
    while frontier.size:
        level += 1
        cand = table[frontier].ravel()
        cand = np.unique(cand[dist[cand] < 0])
        dist[cand] = level
        frontier = cand
    return dist[:n]


def diameter_4(w: np.ndarray) -> tuple[int, int]:
    """Exact 4-connected diameter of the road cells (one component assumed) and the number of BFS runs it took.

    Bounding-diameters (Takes and Kosters 2011): every BFS from a cell ``v`` with eccentricity ``e`` bounds every
    cell's eccentricity to ``[max(d, e - d), e + d]`` (``d`` its distance to ``v``); BFS runs alternate between the
    open cell with the largest upper bound and the one with the smallest lower bound until no open cell's upper bound
    exceeds the largest eccentricity found. The first two runs are a double sweep. Each BFS is a numpy frontier BFS.
    """
    _, table = _neighbour_table(w)
    n = len(table)
    if n == 0:
        return 0, 0
    lo = np.zeros(n, dtype=np.int64)
    hi = np.full(n, np.iinfo(np.int64).max // 4, dtype=np.int64)
    best = 0
    runs = 0
    source = int(np.argmax(_bfs(table, 0)))  # double sweep: start at a far cell
    runs += 1
    open_ = np.ones(n, dtype=bool)
    pick_high = True
    while True:
        dist = _bfs(table, source)
        runs += 1
        if (dist < 0).any():
            raise ValueError("the road cells are not one 4-connected component")
        ecc = int(dist.max())
        best = max(best, ecc)
        lo = np.maximum(lo, np.maximum(dist, ecc - dist))
        hi = np.minimum(hi, ecc + dist)
        open_[source] = False
        open_ &= hi > best
        if not open_.any():
            return best, runs
        idx = np.flatnonzero(open_)
        if runs == 2:
            source = int(np.argmax(dist))  # second sweep from the farthest cell
        elif pick_high:
            source = int(idx[np.argmax(hi[idx])])
        else:
            source = int(idx[np.argmin(lo[idx])])
        pick_high = not pick_high


def _components4(w: np.ndarray) -> np.ndarray:
    """Component label (0..k-1) of every road cell in flat road order, by BFS over the neighbour table."""
    _, table = _neighbour_table(w)
    n = len(table)
    label = np.full(n, -1, dtype=np.int64)
    k = 0
    while (label < 0).any():
        seed = int(np.flatnonzero(label < 0)[0])
        label[_bfs(table, seed) >= 0] = k
        k += 1
    return label


def _ring_counts(w: np.ndarray) -> np.ndarray:
    """Road cells on the Chebyshev-``RING`` ring around every cell (cells outside the grid are not road)."""
    count = np.zeros(w.shape, dtype=np.int32)
    for dz in range(-RING, RING + 1):
        for dx in range(-RING, RING + 1):
            if max(abs(dx), abs(dz)) == RING:
                count += _shift(w, dx, dz)
    return count


def map_statistics(walkable: np.ndarray) -> dict:
    """Every statistic of docs/gorge/rules.md, the maps, measured on a (128, 128) bool grid ``[z, x]``.

    :return: ``road`` (road cells), ``road_share``, ``components`` (4-connected), ``x_range`` / ``z_range`` (of road
        cells), ``border_road`` (road cells outside [5, 123]^2), ``dead_ends`` (road cells with exactly one
        4-neighbour on the road), ``full8_share`` (share of road cells whose 8 neighbours are all road),
        ``pinches`` (diagonal road pairs whose two shared orthogonal cells are both obstacles), ``min_ring`` /
        ``median_ring`` (road cells on the Chebyshev-10 ring around a road cell) and ``diameter`` (exact
        4-connected diameter by :func:`diameter_4`, None unless there is exactly one component).
    """
    w = np.asarray(walkable, dtype=bool)
    road = int(w.sum())
    zs, xs = np.nonzero(w)
    full8 = w.copy()
    for dz in (-1, 0, 1):
        for dx in (-1, 0, 1):
            full8 &= _shift(w, dx, dz)
    main, anti = _pinches(w)
    rings = _ring_counts(w)[w]
    components = int(_components4(w).max()) + 1 if road else 0
    inner = np.zeros_like(w)
    inner[5:124, 5:124] = True
    return {
        "road": road,
        "road_share": road / w.size,
        "components": components,
        "x_range": (int(xs.min()), int(xs.max())) if road else None,
        "z_range": (int(zs.min()), int(zs.max())) if road else None,
        "border_road": int((w & ~inner).sum()),
        "dead_ends": int((w & (_degree4(w) == 1)).sum()),
        "full8_share": float(full8.sum()) / road if road else 0.0,
        "pinches": int(main.sum() + anti.sum()),
        "min_ring": int(rings.min()) if road else 0,
        "median_ring": float(np.median(rings)) if road else 0.0,
        "diameter": diameter_4(w)[0] if components == 1 else None,
    }


def statistics_problems(stats: dict) -> list[str]:
    """The statistics of ``stats`` (from :func:`map_statistics`) that lie outside the open maps' ranges."""
    bad: list[str] = []

    def within(name: str, value: float | None, bounds: tuple[float, float]) -> None:
        if value is None or not bounds[0] <= value <= bounds[1]:
            bad.append(f"{name} {value} outside {bounds}")

    within("road cells", stats["road"], ROAD_RANGE)
    within("components", stats["components"], (1, 1))
    within("border road cells", stats["border_road"], (0, 0))
    if stats["x_range"] is None or min(stats["x_range"] + stats["z_range"]) < BBOX_RANGE[0] or max(
        stats["x_range"] + stats["z_range"]
    ) > BBOX_RANGE[1]:
        bad.append(f"road x {stats['x_range']} / z {stats['z_range']} not inside {BBOX_RANGE}")
    within("dead ends", stats["dead_ends"], DEAD_END_RANGE)
    within("8-neighbour share", stats["full8_share"], FULL8_RANGE)
    within("pinch diagonals", stats["pinches"], PINCH_RANGE)
    within("min ring-10 road cells", stats["min_ring"], MIN_RING_RANGE)
    within("4-connected diameter", stats["diameter"], DIAMETER_RANGE)
    return bad


# ----------------------------------------------------------------------------------------------------------------
# Layout
# ----------------------------------------------------------------------------------------------------------------


def _snap(values: np.ndarray) -> np.ndarray:
    """Round to multiples of 1/64 (exact in binary floating point)."""
    return np.round(np.asarray(values, dtype=float) * 64.0) / 64.0


def _waypoints(rng: np.random.Generator) -> np.ndarray:
    """(LATTICE * LATTICE, 2) jittered lattice points ``(x, z)`` in cells, node id = row * LATTICE + col."""
    step = (LATTICE_HI - LATTICE_LO) / (LATTICE - 1)
    cols, rows = np.meshgrid(np.arange(LATTICE), np.arange(LATTICE))
    base = np.stack([LATTICE_LO + cols.ravel() * step, LATTICE_LO + rows.ravel() * step], axis=1)
    return base + rng.uniform(-JITTER, JITTER, size=base.shape) * step


def _lattice_neighbours(node: int, diagonal: bool) -> list[int]:
    r, c = divmod(node, LATTICE)
    steps = ((1, 1), (1, -1), (-1, 1), (-1, -1)) if diagonal else ((1, 0), (-1, 0), (0, 1), (0, -1))
    return [(r + dr) * LATTICE + c + dc for dr, dc in steps if 0 <= r + dr < LATTICE and 0 <= c + dc < LATTICE]


def _tree_hops(edges: Sequence[tuple[int, int]], a: int) -> dict[int, int]:
    adj: dict[int, list[int]] = {}
    for u, v in edges:
        adj.setdefault(u, []).append(v)
        adj.setdefault(v, []).append(u)
    seen = {a: 0}
    queue = [a]
    for u in queue:
        for v in adj.get(u, []):
            if v not in seen:
                seen[v] = seen[u] + 1
                queue.append(v)
    return seen


def _graph(rng: np.random.Generator) -> tuple[list[int], list[tuple[int, int]]]:
    """Nodes and edges: a random growing tree over lattice neighbours stopped at K nodes, plus loop edges."""
    k = int(rng.integers(TREE_NODES[0], TREE_NODES[1] + 1))
    root = int(rng.integers(LATTICE * LATTICE))
    visited = [root]
    stack = [root]
    edges: list[tuple[int, int]] = []
    while stack and len(visited) < k:
        pos = len(stack) - 1 if rng.random() >= 0.3 else int(rng.integers(len(stack)))
        top = stack[pos]
        options = [n for n in _lattice_neighbours(top, rng.random() < DIAGONAL) if n not in visited]
        if not options:
            options = [n for n in _lattice_neighbours(top, False) if n not in visited]
        if not options:
            stack.pop(pos)
            continue
        nxt = options[int(rng.integers(len(options)))]
        visited.append(nxt)
        edges.append((top, nxt))
        stack.append(nxt)
    in_tree = set(visited)
    used = {frozenset(e) for e in edges}
    candidates = sorted(
        (a, b)
        for a in sorted(in_tree)
        for b in _lattice_neighbours(a, False)
        if a < b and b in in_tree and frozenset((a, b)) not in used and _tree_hops(edges, a).get(b, 0) >= 4
    )
    n_loops = min(len(candidates), int(rng.integers(LOOPS[0], LOOPS[1] + 1)))
    if n_loops:
        picks = rng.choice(len(candidates), size=n_loops, replace=False)
        edges.extend(candidates[int(i)] for i in sorted(picks))
    return visited, edges


def _paint(road: np.ndarray, pts: np.ndarray, radii: np.ndarray) -> None:
    """Mark cells whose centre lies within ``radii[i]`` cells of ``pts[i]`` (cell coordinates) for some ``i``."""
    centres = np.arange(GRID, dtype=float)
    for p, r in zip(pts, radii, strict=True):
        x0, x1 = max(PAINT_LO, int(p[0] - r) - 1), min(PAINT_HI, int(p[0] + r) + 1)
        z0, z1 = max(PAINT_LO, int(p[1] - r) - 1), min(PAINT_HI, int(p[1] + r) + 1)
        dx = centres[x0 : x1 + 1][None, :] - p[0]
        dz = centres[z0 : z1 + 1][:, None] - p[1]
        road[z0 : z1 + 1, x0 : x1 + 1] |= dx * dx + dz * dz <= r * r


def _layout(rng: np.random.Generator) -> np.ndarray:
    """Paint the corridors and open areas of one attempt; returns the raw (128, 128) road grid ``[z, x]``."""
    pts = _waypoints(rng)
    nodes, edges = _graph(rng)
    road = np.zeros((GRID, GRID), dtype=bool)
    for a, b in edges:
        p0, p3 = pts[a], pts[b]
        seg = p3 - p0
        length = math.sqrt(float(seg[0] * seg[0] + seg[1] * seg[1]))
        perp = np.array([-seg[1], seg[0]]) / max(length, 1e-9)
        p1 = p0 + seg / 3.0 + perp * rng.uniform(-BEND, BEND) * length
        p2 = p0 + 2.0 * seg / 3.0 + perp * rng.uniform(-BEND, BEND) * length
        t = np.linspace(0.0, 1.0, math.ceil(length * 3.0) + 2)[:, None]
        u = 1.0 - t
        curve = _snap(u * u * u * p0 + 3.0 * u * u * t * p1 + 3.0 * u * t * t * p2 + t * t * t * p3)
        r = float(_snap(rng.uniform(*RADIUS)))
        _paint(road, curve, np.full(len(curve), r))
    for n in nodes:
        if rng.random() < ROOM_SHARE:
            _paint(road, _snap(pts[n])[None, :], _snap(np.array([rng.uniform(*ROOM_RADIUS)])))
    return road


def _clean(road: np.ndarray) -> np.ndarray:
    """Fill pinch diagonals and remove dead-end cells until neither is left; keep the largest 4-component."""
    road = road.copy()
    for _ in range(100):
        main, anti = _pinches(road)
        changed = bool(main.any() or anti.any())
        zz, xx = np.nonzero(main)
        road[zz, xx + 1] = True  # fill (z, x + 1) of a pinch (z, x) / (z + 1, x + 1)
        zz, xx = np.nonzero(anti)
        road[zz, xx] = True  # fill (z, x) of a pinch (z, x + 1) / (z + 1, x)
        spur = road & (_degree4(road) <= 1)
        while spur.any():
            changed = True
            road &= ~spur
            spur = road & (_degree4(road) <= 1)
        if not changed:
            break
    label = _components4(road)
    if len(label):
        biggest = int(np.argmax(np.bincount(label)))
        keep = np.zeros(road.size, dtype=bool)
        keep[np.flatnonzero(road.ravel())[label == biggest]] = True
        road = keep.reshape(road.shape)
    return road


def generate_grid(seed: int) -> tuple[np.ndarray, int, dict]:
    """The road grid ``[z, x]`` of seed ``seed``, the attempt that succeeded and its statistics.

    Attempt ``a`` draws everything from ``np.random.default_rng([seed, a])``; the first attempt whose statistics lie
    inside every range (:func:`statistics_problems`) wins, so the result depends only on ``seed``.
    """
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    last: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng([seed, attempt])
        road = _clean(_layout(rng))
        n = int(road.sum())
        if not ROAD_RANGE[0] <= n <= ROAD_RANGE[1]:  # cheap test first
            last = [f"road cells {n} outside {ROAD_RANGE}"]
            continue
        stats = map_statistics(road)
        last = statistics_problems(stats)
        if not last:
            return road, attempt, stats
    raise MapGenerationError(f"seed {seed}: no valid map in {MAX_ATTEMPTS} attempts; last problems: {last}")


# ----------------------------------------------------------------------------------------------------------------
# JSON and command line
# ----------------------------------------------------------------------------------------------------------------


def map_name(seed: int) -> str:
    """``gorge_own_<seed>``, the map's name and file stem."""
    return f"gorge_own_{seed}"


def generate_map(seed: int) -> dict:
    """The map of seed ``seed`` in the open maps' JSON format (docs/gorge/rules.md, the maps).

    :return: ``{"name", "width", "height", "cells", "objects", "metadata"}``; ``cells`` is row-major
        (index ``z * 128 + x``), ``type_id`` 3 road and 1 obstacle, ``height`` 0.0; ``objects`` is empty.
    """
    road, attempt, _ = generate_grid(seed)
    description = (
        f"sb3_realm's own Gorge Chase map, generated by tools/gorge_mapgen.py from seed {seed} (attempt {attempt}): "
        "jittered 6x6 lattice waypoints joined by a random spanning tree plus loop edges, drawn as curved corridors "
        "5-6 cells wide with some round open areas. It is not derived from the competition's maps."
    )
    cells = [
        {"x": x, "z": z, "type_id": 3 if road[z, x] else 1, "height": 0.0} for z in range(GRID) for x in range(GRID)
    ]
    metadata = {
        "version": "1.0",
        "author": "sb3_realm mapgen",
        "created_at": "",
        "modified_at": "",
        "description": description,
    }
    return {"name": map_name(seed), "width": GRID, "height": GRID, "cells": cells, "objects": [], "metadata": metadata}


def grid_from_map(data: dict) -> np.ndarray:
    """The (height, width) bool road grid ``[z, x]`` of a map in the open maps' JSON format."""
    road = np.zeros((int(data["height"]), int(data["width"])), dtype=bool)
    for cell in data["cells"]:
        road[cell["z"], cell["x"]] = cell["type_id"] == 3
    return road


def map_to_json(data: dict) -> str:
    """Compact one-line JSON text of a map (with a trailing newline), as written by ``--out``."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def map_file(seed: int) -> str:
    """``gorge_own_<seed>.json.gz``, the file a map is written to."""
    return f"{map_name(seed)}.json.gz"


def _write_atomic(path: Path, text: str) -> None:
    data = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)  # mtime 0: the same seed, the same bytes
    atomic_write(path, lambda f: f.write(data), mode=0o666)  # the usual permissions, less the umask


def _check(folder: Path, seed: int) -> str | None:
    """None when ``folder/gorge_own_<seed>.json.gz`` is the generated map, else what is wrong."""
    path = folder / map_file(seed)
    try:
        on_disk = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"{path}: cannot read it as JSON ({exc})"
    data = generate_map(seed)
    if on_disk != data:
        if not isinstance(on_disk, dict):
            return f"{path} is not a JSON object"
        keys = sorted(k for k in set(on_disk) | set(data) if on_disk.get(k) != data.get(k))
        return f"{path} differs from the map generated with seed {seed} (keys: {', '.join(keys)})"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python tools/gorge_mapgen.py --out DIR | --check DIR [--seeds N ...]``."""
    parser = argparse.ArgumentParser(prog="python tools/gorge_mapgen.py", description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, help="write gorge_own_<seed>.json.gz for every seed into this folder")
    target.add_argument("--check", type=Path,
                        help="exit 1 if a gorge_own_<seed>.json.gz here differs from its seed's map")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS),
                        help=f"generator seeds (default {' '.join(map(str, DEFAULT_SEEDS))})")
    args = parser.parse_args(argv)
    if any(seed < 0 for seed in args.seeds):
        parser.error(f"--seeds must be non-negative integers, got {args.seeds}")
    if args.out is not None:
        for seed in args.seeds:
            data = generate_map(seed)
            path = args.out / map_file(seed)
            _write_atomic(path, map_to_json(data))
            n_road = sum(cell["type_id"] == 3 for cell in data["cells"])
            print(f"wrote {path} (seed {seed}, {n_road} road cells)")
        return 0
    problems = [p for p in (_check(args.check, seed) for seed in args.seeds) if p is not None]
    for problem in problems:
        print(f"{problem}; regenerate with python tools/gorge_mapgen.py --out {args.check} --seeds "
              f"{' '.join(map(str, args.seeds))}", file=sys.stderr)
    if problems:
        return 1
    print(f"{args.check}: the maps of seeds {' '.join(map(str, args.seeds))} match the generator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
