"""Deterministic generator of sb3_realm's own default 128 x 128 map (``sb3_realm/games/realm/data/default_map.json``).
A build tool beside the package, not part of it: it uses the package's BFS, cell width and atomic writer.

The map is original: it is generated from a seed by the procedure below and never reads or copies the competition's
map. It only aims for the same *character*: about a quarter of the grid walkable, walls in aligned 2 x 2-cell
blocks, a network of thick winding corridors with a loop or two on a wall background, and 16 positions (id 0 speed
buff, 1 end, 2 start, 3..15 treasure slots) spread over the whole map.

Procedure (all randomness from ``np.random.default_rng``):

1. Waypoints: a 5 x 5 lattice over the grid, each point jittered by up to 30 % of the lattice step.
2. Graph: a random growing tree over lattice neighbours (mostly extending the newest waypoint, sometimes an older
   one) that stops after ``K`` waypoints, the others stay solid wall, plus one or two extra lattice edges between
   waypoints that are not neighbours in the tree, which close loops. Layouts that leave a corner of the map empty
   are redrawn.
3. Corridors: each edge is a cubic Bezier curve bent sideways by a random amount; its radius (3..5.5 cells, so
   corridors are about 6..11 cells wide) varies smoothly along it and every waypoint gets a round junction. The
   corridors are painted on a 64 x 64 grid of 2 x 2-cell blocks, so walls always come in aligned 2 x 2 blocks and no
   passage is narrower than 2 cells; the outer 2-cell border stays wall.
4. Positions: among cells with at least 3 walkable cells on every side (a 7 x 7 window), the start sits at a far end
   of the network, the end at a BFS distance of about 170..210 cells from it, the speed buff on a shortest start-end
   path near its middle, and the 13 treasure slots by randomised farthest-point sampling in BFS distance.
5. Checks: every constraint in :func:`check_map` is verified; a failing attempt is discarded and the generator tries
   again with the derived seed ``[seed, attempt]``, so the output depends only on ``seed``.

Command line::

    python tools/mapgen.py --out sb3_realm/games/realm/data/default_map.json [--seed 2026]
    python tools/mapgen.py --check sb3_realm/games/realm/data/default_map.json [--seed 2026]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sb3_realm.atomic import atomic_write
from sb3_realm.games.realm.maps import CELL_WIDTH, GRID_ORIGIN_X, GRID_ORIGIN_Z, UNREACHABLE, bfs_distances

__all__ = [
    "DEFAULT_SEED",
    "MapGenerationError",
    "bfs_grid",
    "check_map",
    "generate_default_map",
    "generate_grid",
    "main",
    "map_to_json",
]

DEFAULT_SEED = 2026
GRID = 128  # cells per side
BLOCK = 2  # walls come in aligned BLOCK x BLOCK cell blocks
NB = GRID // BLOCK  # blocks per side
CENTRE_X0 = GRID_ORIGIN_X + CELL_WIDTH // 2  # world x of the centre of cell gx = 0 (-2000)
CENTRE_Z0 = GRID_ORIGIN_Z + CELL_WIDTH // 2  # world z of the centre of cell gz = 0 (-5000)
N_POSITIONS = 16  # 0 speed buff, 1 end, 2 start, 3..15 treasure slots
BUFF, END, START = 0, 1, 2
MAX_ATTEMPTS = 400

# Acceptance ranges checked on every generated map.
WALKABLE_RANGE = (3500, 5000)  # walkable cells (the competition map has 4196)
START_END_BFS_RANGE = (150, 230)  # 4-neighbour BFS cells start -> end (the competition map: 186)
START_END_TARGET = (170, 210)  # what the position picker aims for inside that range
# The competition's map_1 has a mean pairwise 4-neighbour BFS distance of 108.3 cells among treasure slots 3..15
# (measured once by hand, for calibration only: this module never reads that map). Accept within +-30 %.
TREASURE_MEAN_BFS_RANGE = (0.7 * 108.3, 1.3 * 108.3)
MIN_CLEARANCE = 3  # walkable cells on every side of a position: its (2c+1) x (2c+1) window is all walkable
MIN_SEPARATION = 12.0  # Euclidean distance in cells between any two positions
BORDER = 2  # outermost cells that must be wall
FLASH_CELLS = 16  # the hero's flash range in cells
MIN_FLASH_SAVING = 40  # some 16-cell flash towards the end must save at least this many BFS cells of walking
MIN_QUADRANT_SHARE = 0.12  # each 64 x 64 quadrant holds at least this share of the walkable cells ...
MIN_QUADRANT_POSITIONS = 2  # ... and at least this many of the 16 positions (the map is used all over)

# Layout parameters.
LATTICE = 5  # waypoints lattice is LATTICE x LATTICE
LATTICE_LO, LATTICE_HI = 14.0, 114.0  # cell coordinates of the outermost lattice lines
JITTER = 0.3  # waypoint jitter, fraction of the lattice step
TREE_NODES = (15, 18)  # waypoints used by the tree (inclusive range)
RADIUS = (3.0, 5.5)  # corridor radius in cells
BRANCHING = 0.25  # chance that the tree grows from an older waypoint instead of the newest one
BEND = 0.35  # max sideways bend of a corridor's control points, fraction of its length


class MapGenerationError(RuntimeError):
    """No attempt produced a map that passes :func:`check_map`."""


# ----------------------------------------------------------------------------------------------------------------
# Geometry helpers
# ----------------------------------------------------------------------------------------------------------------


def bfs_grid(walk: np.ndarray, source: tuple[int, int]) -> np.ndarray:
    """4-neighbour BFS distances in cells from ``source = (gx, gz)`` over ``walk[gz, gx]``; -1 where unreachable
    (the package's :func:`~sb3_realm.games.realm.maps.bfs_distances` with one source)."""
    dist = bfs_distances(np.asarray(walk, dtype=bool), [(int(source[0]), int(source[1]))])[0]
    return np.where(dist == UNREACHABLE, -1, dist).astype(np.int32)


def _clear_cells(walk: np.ndarray, clearance: int) -> np.ndarray:
    """Cells whose (2c+1) x (2c+1) window lies inside the grid and is all walkable."""
    padded = np.pad(walk, clearance, constant_values=False)
    k = 2 * clearance + 1
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k))
    return windows.all(axis=(2, 3))


def _max_flash_saving(walk: np.ndarray, dist: np.ndarray) -> int:
    """Largest drop in ``dist`` (BFS to a target) from one 16-cell straight flash, over all cells and 8 directions."""
    h, w = walk.shape
    d = FLASH_CELLS
    diag = round(FLASH_CELLS / math.sqrt(2.0))
    best = 0
    big = np.where(dist >= 0, dist, -1)
    for dx, dz in ((d, 0), (-d, 0), (0, d), (0, -d), (diag, diag), (diag, -diag), (-diag, diag), (-diag, -diag)):
        # origin cells o and landing cells o + (dx, dz), both walkable and reachable
        oz0, oz1 = max(0, -dz), min(h, h - dz)
        ox0, ox1 = max(0, -dx), min(w, w - dx)
        origin = big[oz0:oz1, ox0:ox1]
        land = big[oz0 + dz : oz1 + dz, ox0 + dx : ox1 + dx]
        ok = (origin >= 0) & (land >= 0)
        if ok.any():
            best = max(best, int((origin - land)[ok].max()))
    return best


def _treasure_mean_bfs(walk: np.ndarray, cells: np.ndarray) -> float:
    total, count = 0, 0
    for a in range(3, N_POSITIONS):
        dist = bfs_grid(walk, (int(cells[a, 0]), int(cells[a, 1])))
        for b in range(a + 1, N_POSITIONS):
            total += int(dist[cells[b, 1], cells[b, 0]])
            count += 1
    return total / count


# C901 exempt: the generator's checklist, one independent check per map rule
def check_map(walk: np.ndarray, cells: np.ndarray) -> list[str]:  # noqa: C901
    """Every constraint the default map must satisfy; returns the list of violations (empty when the map is valid).

    :param walk: (128, 128) bool, indexed ``[gz, gx]``.
    :param cells: (16, 2) int grid cells ``(gx, gz)`` of positions 0..15.
    """
    problems: list[str] = []
    if walk.shape != (GRID, GRID):
        return [f"grid shape {walk.shape} != {(GRID, GRID)}"]
    blocks = walk.reshape(NB, BLOCK, NB, BLOCK)
    if not (blocks.all(axis=(1, 3)) == blocks.any(axis=(1, 3))).all():
        problems.append("walls are not in aligned 2x2 blocks")
    if walk[:BORDER].any() or walk[-BORDER:].any() or walk[:, :BORDER].any() or walk[:, -BORDER:].any():
        problems.append("the outer 2-cell border is not all wall")
    n_walk = int(walk.sum())
    if not WALKABLE_RANGE[0] <= n_walk <= WALKABLE_RANGE[1]:
        problems.append(f"{n_walk} walkable cells, outside {WALKABLE_RANGE}")
    if n_walk == 0:
        return problems
    half = GRID // 2
    quadrants = [walk[z : z + half, x : x + half] for z in (0, half) for x in (0, half)]
    if min(int(q.sum()) for q in quadrants) < MIN_QUADRANT_SHARE * n_walk:
        problems.append(f"some 64x64 quadrant holds less than {MIN_QUADRANT_SHARE:.0%} of the walkable cells")
    win = walk[:-1, :-1] & walk[1:, :-1] & walk[:-1, 1:] & walk[1:, 1:]  # all-walkable 2x2 windows
    covered = np.zeros_like(walk)
    covered[:-1, :-1] |= win
    covered[1:, :-1] |= win
    covered[:-1, 1:] |= win
    covered[1:, 1:] |= win
    if (walk & ~covered).any():
        problems.append("some walkable cell is in no all-walkable 2x2 window (a 1-cell passage)")
    gz0, gx0 = np.argwhere(walk)[0]
    if int((bfs_grid(walk, (int(gx0), int(gz0))) >= 0).sum()) != n_walk:
        problems.append("the walkable cells are not one 4-connected component")
    if cells.shape != (N_POSITIONS, 2):
        return [*problems, f"positions shape {cells.shape} != {(N_POSITIONS, 2)}"]
    if len({(int(x), int(z)) for x, z in cells}) != N_POSITIONS:
        problems.append("positions are not distinct")
    inside = ((cells >= 0) & (cells < GRID)).all(axis=1)
    if not inside.all():
        return [*problems, f"positions outside the grid: {np.flatnonzero(~inside).tolist()}"]
    if not walk[cells[:, 1], cells[:, 0]].all():
        problems.append("some position is not walkable")
        return problems
    clear = _clear_cells(walk, MIN_CLEARANCE)
    if not clear[cells[:, 1], cells[:, 0]].all():
        bad = np.flatnonzero(~clear[cells[:, 1], cells[:, 0]]).tolist()
        problems.append(f"positions {bad} are closer than {MIN_CLEARANCE} cells to a wall")
    quadrant = (cells[:, 1] // (GRID // 2)) * 2 + cells[:, 0] // (GRID // 2)
    if np.bincount(quadrant, minlength=4).min() < MIN_QUADRANT_POSITIONS:
        problems.append(f"some 64x64 quadrant holds fewer than {MIN_QUADRANT_POSITIONS} positions")
    diff = cells[:, None, :].astype(float) - cells[None, :, :].astype(float)
    sep = np.sqrt((diff**2).sum(-1)) + np.eye(N_POSITIONS) * 1e9
    if sep.min() < MIN_SEPARATION:
        problems.append(f"two positions are {sep.min():.1f} cells apart (< {MIN_SEPARATION})")
    d_end = bfs_grid(walk, (int(cells[END, 0]), int(cells[END, 1])))
    d_se = int(d_end[cells[START, 1], cells[START, 0]])
    if not START_END_BFS_RANGE[0] <= d_se <= START_END_BFS_RANGE[1]:
        problems.append(f"start -> end BFS distance {d_se} outside {START_END_BFS_RANGE}")
    mean = _treasure_mean_bfs(walk, cells)
    if not TREASURE_MEAN_BFS_RANGE[0] <= mean <= TREASURE_MEAN_BFS_RANGE[1]:
        problems.append(f"mean pairwise treasure BFS distance {mean:.1f} outside {TREASURE_MEAN_BFS_RANGE}")
    saving = _max_flash_saving(walk, d_end)
    if saving < MIN_FLASH_SAVING:
        problems.append(f"the best 16-cell flash towards the end saves only {saving} cells (< {MIN_FLASH_SAVING})")
    return problems


# ----------------------------------------------------------------------------------------------------------------
# Layout
# ----------------------------------------------------------------------------------------------------------------


def _waypoints(rng: np.random.Generator) -> np.ndarray:
    """(LATTICE * LATTICE, 2) jittered lattice points in cell coordinates, node id = row * LATTICE + col."""
    step = (LATTICE_HI - LATTICE_LO) / (LATTICE - 1)
    cols, rows = np.meshgrid(np.arange(LATTICE), np.arange(LATTICE))
    base = np.stack([LATTICE_LO + cols.ravel() * step, LATTICE_LO + rows.ravel() * step], axis=1)
    pts = base + rng.uniform(-JITTER, JITTER, size=base.shape) * step
    return np.clip(pts, LATTICE_LO - 2.0, LATTICE_HI + 2.0)


def _lattice_neighbours(node: int) -> list[int]:
    r, c = divmod(node, LATTICE)
    out = []
    for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        if 0 <= r + dr < LATTICE and 0 <= c + dc < LATTICE:
            out.append((r + dr) * LATTICE + c + dc)
    return out


def _tree_distance(edges: Sequence[tuple[int, int]], a: int, b: int) -> int:
    adj: dict[int, list[int]] = {}
    for u, v in edges:
        adj.setdefault(u, []).append(v)
        adj.setdefault(v, []).append(u)
    seen = {a: 0}
    queue = deque([a])
    while queue:
        u = queue.popleft()
        for v in adj.get(u, []):
            if v not in seen:
                seen[v] = seen[u] + 1
                queue.append(v)
    return seen.get(b, -1)


def _graph(rng: np.random.Generator) -> tuple[list[int], list[tuple[int, int]]] | None:
    """Nodes and edges: a random growing tree over lattice neighbours stopped at K nodes, plus 1 or 2 loop edges.

    None when the tree leaves a corner 2 x 2 group of waypoints almost empty or has no lattice edge that would
    close a loop.
    """
    k = int(rng.integers(TREE_NODES[0], TREE_NODES[1] + 1))
    root = int(rng.integers(LATTICE * LATTICE))
    visited = [root]
    stack = [root]
    edges: list[tuple[int, int]] = []
    while stack and len(visited) < k:
        # mostly extend the newest waypoint (long winding corridors), sometimes an older one (side branches)
        pos = len(stack) - 1 if rng.random() >= BRANCHING else int(rng.integers(len(stack)))
        top = stack[pos]
        options = [n for n in _lattice_neighbours(top) if n not in visited]
        if not options:
            stack.pop(pos)
            continue
        nxt = options[int(rng.integers(len(options)))]
        visited.append(nxt)
        edges.append((top, nxt))
        stack.append(nxt)
    in_tree = set(visited)
    half = LATTICE // 2
    for rows in (range(half), range(LATTICE - half, LATTICE)):
        for cols in (range(half), range(LATTICE - half, LATTICE)):
            if sum(r * LATTICE + c in in_tree for r in rows for c in cols) < 2:
                return None  # every corner of the map gets some corridors
    used = {frozenset(e) for e in edges}
    candidates = sorted(
        (a, b)
        for a in in_tree
        for b in _lattice_neighbours(a)
        if a < b and b in in_tree and frozenset((a, b)) not in used and _tree_distance(edges, a, b) >= 3
    )
    if not candidates:
        return None
    n_loops = min(len(candidates), int(rng.integers(1, 3)))
    picks = rng.choice(len(candidates), size=n_loops, replace=False)
    edges.extend(candidates[int(i)] for i in sorted(picks))
    return visited, edges


def _snap(values: np.ndarray) -> np.ndarray:
    """Round to multiples of 1/64 (exact in binary floating point)."""
    return np.round(values * 64.0) / 64.0


def _paint(walk_blocks: np.ndarray, pts: np.ndarray, radii: np.ndarray) -> None:
    """Mark blocks whose centre lies within ``radii[i]`` cells of ``pts[i]`` (cell coordinates) for some ``i``."""
    centres = np.arange(NB) * BLOCK + BLOCK / 2.0
    bx = centres[None, None, :]
    bz = centres[None, :, None]
    for lo in range(0, len(pts), 64):
        p = pts[lo : lo + 64]
        r = radii[lo : lo + 64]
        d2 = (bx - p[:, 0, None, None]) ** 2 + (bz - p[:, 1, None, None]) ** 2
        walk_blocks |= (d2 <= (r**2)[:, None, None]).any(axis=0)


def _corridors(rng: np.random.Generator, pts: np.ndarray, nodes: list[int], edges: list[tuple[int, int]]) -> np.ndarray:
    """Paint curved corridors of varying width along ``edges``; returns the (128, 128) walkable grid."""
    walk_blocks = np.zeros((NB, NB), dtype=bool)
    node_r = {n: float(rng.uniform(3.6, RADIUS[1])) for n in nodes}
    lo_edge = BORDER + 0.5
    for a, b in edges:
        p0, p3 = pts[a], pts[b]
        seg = p3 - p0
        length = math.sqrt(float(seg[0] * seg[0] + seg[1] * seg[1]))
        perp = np.array([-seg[1], seg[0]]) / max(length, 1e-9)
        p1 = p0 + seg / 3.0 + perp * rng.uniform(-BEND, BEND) * length
        p2 = p0 + 2.0 * seg / 3.0 + perp * rng.uniform(-BEND, BEND) * length
        # Only + - * / and sqrt from here on (no libm pow/sin), then snap to a 1/64-cell lattice: the painted
        # blocks are then exact comparisons of exactly representable numbers, the same on every platform.
        t = np.linspace(0.0, 1.0, math.ceil(length * 2.0) + 2)[:, None]
        u = 1.0 - t
        curve = u * u * u * p0 + 3.0 * u * u * t * p1 + 3.0 * u * t * t * p2 + t * t * t * p3
        bump = rng.uniform(-1.0, 1.0)
        tt = t[:, 0]
        radii = (1.0 - tt) * node_r[a] + tt * node_r[b] + bump * 4.0 * tt * (1.0 - tt)
        radii = _snap(np.clip(radii, RADIUS[0], RADIUS[1]))
        curve = _snap(np.clip(curve, lo_edge + radii[:, None], GRID - lo_edge - radii[:, None]))
        _paint(walk_blocks, curve, radii)
    for n in nodes:  # round junctions
        r = float(_snap(np.array(node_r[n] + 0.5)))
        centre = _snap(np.clip(pts[n], lo_edge + r, GRID - lo_edge - r))
        _paint(walk_blocks, centre[None, :], np.array([r]))
    walk_blocks[0, :] = walk_blocks[-1, :] = walk_blocks[:, 0] = walk_blocks[:, -1] = False
    return np.kron(walk_blocks, np.ones((BLOCK, BLOCK), dtype=bool)).astype(bool)


# ----------------------------------------------------------------------------------------------------------------
# Positions
# ----------------------------------------------------------------------------------------------------------------


def _far_enough(cands: np.ndarray, chosen: list[tuple[int, int]]) -> np.ndarray:
    ok = np.ones(len(cands), dtype=bool)
    for x, z in chosen:
        ok &= (cands[:, 0] - x) ** 2 + (cands[:, 1] - z) ** 2 >= MIN_SEPARATION**2
    return ok


def _positions(rng: np.random.Generator, walk: np.ndarray) -> np.ndarray | None:
    """Pick the 16 positions ``(gx, gz)``; None when this layout cannot host them."""
    clear = _clear_cells(walk, MIN_CLEARANCE)
    zz, xx = np.nonzero(clear)
    cands = np.stack([xx, zz], axis=1)
    if len(cands) < N_POSITIONS:
        return None

    def field(cell: Sequence[int]) -> np.ndarray:
        return bfs_grid(walk, (int(cell[0]), int(cell[1])))

    def at(dist: np.ndarray) -> np.ndarray:
        return dist[cands[:, 1], cands[:, 0]]

    # Start: a far end of the network (farthest clear cell from a random clear cell, then a near-farthest one).
    probe = cands[int(rng.integers(len(cands)))]
    d_probe = at(field(probe))
    start = cands[int(np.argmax(d_probe))]
    d_start = at(field(start))
    far = np.flatnonzero(d_start >= 0.8 * d_start.max())
    start = cands[int(far[int(rng.integers(len(far)))])]
    d_start_grid = field(start)
    d_start = at(d_start_grid)
    # End: BFS distance in the target band, preferring cells far from the start in a straight line.
    band = np.flatnonzero((d_start >= START_END_TARGET[0]) & (d_start <= START_END_TARGET[1]))
    band = band[_far_enough(cands[band], [tuple(start)])]
    if len(band) == 0:
        return None
    offset_xz = cands[band] - start
    euclid = np.sqrt((offset_xz * offset_xz).sum(axis=1).astype(float))
    score = euclid + rng.uniform(0.0, 15.0, size=len(band))
    end = cands[int(band[int(np.argmax(score))])]
    d_end_grid = field(end)
    d_end = at(d_end_grid)
    total = int(d_start_grid[end[1], end[0]])
    chosen = [tuple(int(v) for v in end), tuple(int(v) for v in start)]
    # Buff: on a shortest start-end path, near its middle.
    on_path = np.flatnonzero((d_start + d_end <= total + 2) & _far_enough(cands, chosen))
    if len(on_path) == 0:
        return None
    offset = np.abs(d_start[on_path] - d_end[on_path]) + rng.uniform(0.0, 0.15 * total, size=len(on_path))
    buff = cands[int(on_path[int(np.argmin(offset))])]
    chosen = [tuple(int(v) for v in buff), *chosen]
    # Treasures: randomised farthest-point sampling in BFS distance.
    nearest = np.minimum(np.minimum(d_start, d_end), at(field(buff))).astype(float)
    half = GRID // 2
    cand_quadrant = (cands[:, 1] // half) * 2 + cands[:, 0] // half
    for left in range(N_POSITIONS - 3, 0, -1):
        ok = _far_enough(cands, chosen) & (nearest >= 0)
        counts = np.bincount([(z // half) * 2 + x // half for x, z in chosen], minlength=4)
        short = np.flatnonzero(counts < MIN_QUADRANT_POSITIONS)
        if (MIN_QUADRANT_POSITIONS - counts[short]).sum() >= left:  # the remaining picks must fill the quadrants
            ok &= np.isin(cand_quadrant, short)
        if not ok.any():
            return None
        score = np.where(ok, nearest * rng.uniform(0.75, 1.0, size=len(cands)), -1.0)
        pick = cands[int(np.argmax(score))]
        chosen.append((int(pick[0]), int(pick[1])))
        nearest = np.minimum(nearest, at(field(pick)))
    return np.array(chosen, dtype=np.int64)


# ----------------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------------


def generate_grid(seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray, int]:
    """The walkable grid ``[gz, gx]``, the 16 positions as cells ``(gx, gz)`` and the attempt that succeeded.

    Attempt ``a`` draws everything from ``np.random.default_rng([seed, a])``; the first attempt that passes
    :func:`check_map` wins, so the result depends only on ``seed``.
    """
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    last: list[str] = []
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng([seed, attempt])
        pts = _waypoints(rng)
        graph = _graph(rng)
        if graph is None:
            last = ["tree misses a corner or has no loop edge"]
            continue
        nodes, edges = graph
        walk = _corridors(rng, pts, nodes, edges)
        n_walk = int(walk.sum())
        if not WALKABLE_RANGE[0] <= n_walk <= WALKABLE_RANGE[1]:
            last = [f"{n_walk} walkable cells, outside {WALKABLE_RANGE}"]
            continue
        cells = _positions(rng, walk)
        if cells is None:
            last = ["no room for the 16 positions"]
            continue
        last = check_map(walk, cells)
        if not last:
            return walk, cells, attempt
    raise MapGenerationError(f"seed {seed}: no valid map in {MAX_ATTEMPTS} attempts; last problems: {last}")


def generate_default_map(seed: int = DEFAULT_SEED) -> dict:
    """sb3_realm's original default map in the official JSON format plus ``positions_world_xz``.

    :param seed: generator seed; the shipped ``default_map.json`` is ``generate_default_map(2026)``.
    :return: ``{"description", "CellWidth", "Width", "Height", "Flags", "positions_world_xz"}``; ``Flags`` is
        row-major ``Flags[gz * 128 + gx]`` (1 walkable, 0 wall), positions are world ``[x, z]`` of cell centres.
    """
    walk, cells, attempt = generate_grid(seed)
    description = (
        "sb3_realm's original default map (not derived from the competition's maps), generated by "
        f"sb3_realm.game.mapgen.generate_default_map(seed={seed}) (attempt {attempt}): jittered 5x5 lattice "
        "waypoints joined by a random growing spanning tree plus loop edges, drawn as curved corridors "
        "6-11 cells wide with a brush of 2x2-cell blocks; positions 0 speed buff, 1 end, 2 start, 3..15 treasure "
        "slots picked far apart along the corridors."
    )
    return {
        "description": description,
        "CellWidth": CELL_WIDTH,
        "Width": GRID,
        "Height": GRID,
        "Flags": walk.astype(np.int64).ravel().tolist(),
        "positions_world_xz": {
            str(i): [int(gx) * CELL_WIDTH + CENTRE_X0, int(gz) * CELL_WIDTH + CENTRE_Z0]
            for i, (gx, gz) in enumerate(cells)
        },
    }


def map_to_json(data: dict) -> str:
    """Compact one-line JSON text of a map (with a trailing newline), as written by ``--out``."""
    return json.dumps(data, separators=(",", ":")) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode("utf-8")), mode=0o666)  # the usual permissions, less the umask


def main(argv: Sequence[str] | None = None) -> int:
    """``python tools/mapgen.py --out PATH | --check PATH [--seed N]``."""
    parser = argparse.ArgumentParser(prog="python tools/mapgen.py", description=__doc__.splitlines()[0])
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, help="write the generated map JSON here (atomically)")
    target.add_argument("--check", type=Path, help="exit 1 if this file differs from the generated map")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"generator seed (default {DEFAULT_SEED})")
    args = parser.parse_args(argv)
    if args.seed < 0:
        parser.error(f"--seed must be a non-negative integer, got {args.seed}")
    data = generate_default_map(args.seed)
    if args.out is not None:
        _write_atomic(args.out, map_to_json(data))
        print(f"wrote {args.out} (seed {args.seed}, {sum(data['Flags'])} walkable cells)")
        return 0
    try:
        on_disk = json.loads(args.check.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(
            f"{args.check}: cannot read it as JSON ({exc}); regenerate it with "
            f"python tools/mapgen.py --out {args.check} --seed {args.seed}",
            file=sys.stderr,
        )
        return 1
    if on_disk != data:
        keys = sorted(k for k in set(on_disk) | set(data) if on_disk.get(k) != data.get(k))
        print(
            f"{args.check} differs from the map generated with seed {args.seed} (keys: {', '.join(keys)}); "
            f"regenerate it with python tools/mapgen.py --out {args.check} --seed {args.seed}",
            file=sys.stderr,
        )
        return 1
    print(f"{args.check} matches the map generated with seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
