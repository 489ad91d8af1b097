"""The Gorge planner's fast searches give what plain searches give: the bitset BFS (bit planes filled a run of levels at
a time) equals a cell-by-cell BFS with the same stopping rules, a field resumed past the levels it still holds exactly
equals one searched from scratch, and the planner's kept searches (windows, fields, flash landings) give the same
actions and features as searches made anew every step."""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest

from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.features import FeatureState, encode
from sb3_realm.games.gorge.memory import FAR, UNREACHABLE, distance_field, resume_field, window_distances
from sb3_realm.games.gorge.planner import _ceil_div

STEPS_4 = ((1, 0), (-1, 0), (0, 1), (0, -1))
STEPS_8 = (*STEPS_4, (1, 1), (1, -1), (-1, 1), (-1, -1))


def plain_field(walkable, sources, near=None, extra=0, limit=4095):
    """distance_field's documented rules, one cell at a time."""
    h, w = walkable.shape
    dist = np.full((h, w), UNREACHABLE, dtype=np.int32)
    front = [(x, z) for x, z in sources if 0 <= x < w and 0 <= z < h and walkable[z, x]]
    if not front:
        return dist
    for x, z in front:
        dist[z, x] = 0
    targets = {(x, z) for x, z in near or () if 0 <= x < w and 0 <= z < h and walkable[z, x]}
    left = targets - set(front)
    level, stop, cut = 0, limit, True
    while level < stop:
        new = []
        for x, z in front:
            for dx, dz in STEPS_4:
                nx, nz = x + dx, z + dz
                if 0 <= nx < w and 0 <= nz < h and walkable[nz, nx] and dist[nz, nx] == UNREACHABLE:
                    dist[nz, nx] = level + 1
                    new.append((nx, nz))
        if not new:
            cut = False
            break
        level, front = level + 1, new
        if targets:
            left -= set(new)
            if not left:
                stop, targets = min(stop, level + extra), set()
    if cut:
        dist[(dist == UNREACHABLE) & walkable] = level + 1
    return dist


def plain_windows(walkable, cells, radius, diagonal, levels):
    """window_distances' documented rules, one cell at a time: paths inside each window, the hero's corner rule."""
    h, w = walkable.shape
    size = 2 * radius + 1
    out = np.full((len(cells), size, size), FAR, dtype=np.uint8)
    for k, (cx, cz) in enumerate(cells):
        def road(x, z, cx=cx, cz=cz):
            return abs(x - cx) <= radius and abs(z - cz) <= radius and 0 <= x < w and 0 <= z < h and walkable[z, x]

        if not road(cx, cz):
            continue
        out[k, radius, radius] = 0
        queue = deque([(cx, cz)])
        while queue:
            x, z = queue.popleft()
            d = int(out[k, z - cz + radius, x - cx + radius])
            if d >= levels:
                continue
            for dx, dz in STEPS_8 if diagonal else STEPS_4:
                nx, nz = x + dx, z + dz
                if not road(nx, nz) or (dx and dz and not (road(x + dx, z) or road(x, z + dz))):
                    continue
                if out[k, nz - cz + radius, nx - cx + radius] == FAR:
                    out[k, nz - cz + radius, nx - cx + radius] = d + 1
                    queue.append((nx, nz))
    return out


def _grid(rng, h, w):
    return rng.random((h, w)) > rng.uniform(0.05, 0.45)


def _cell(rng, h, w):
    return int(rng.integers(w)), int(rng.integers(h))


def test_distance_field_equals_a_plain_bfs():
    rng = np.random.default_rng(3)
    for _ in range(60):
        h, w = int(rng.integers(4, 30)), int(rng.integers(4, 30))
        grid = _grid(rng, h, w)
        sources = [_cell(rng, h, w) for _ in range(int(rng.integers(1, 3)))]
        near = [_cell(rng, h, w) for _ in range(int(rng.integers(0, 3)))] or None
        extra = int(rng.integers(0, 8))
        limit = int(rng.choice([4095, int(rng.integers(1, 40))]))
        got = distance_field(grid, sources, near, extra, limit)
        assert got.dtype == np.int32
        assert np.array_equal(got, plain_field(grid, sources, near, extra, limit))


def test_window_distances_equal_a_plain_bfs():
    rng = np.random.default_rng(4)
    for _ in range(25):
        h, w = int(rng.integers(6, 40)), int(rng.integers(6, 40))
        grid = _grid(rng, h, w)
        cells = [_cell(rng, h, w) for _ in range(int(rng.integers(1, 5)))]
        for radius, diagonal, levels in ((5, True, int(rng.integers(1, 25))), (4, False, FAR - 1), (7, True, FAR - 1)):
            got = window_distances(grid, cells, radius, diagonal, levels)
            assert np.array_equal(got, plain_windows(grid, cells, radius, diagonal, levels))


def test_a_resumed_field_equals_one_searched_from_scratch():
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(80):
        h, w = int(rng.integers(6, 36)), int(rng.integers(6, 36))
        grid = _grid(rng, h, w)
        source = _cell(rng, h, w)
        grid[source[1], source[0]] = True
        near = [_cell(rng, h, w)] if rng.random() < 0.7 else None
        extra, limit = int(rng.integers(0, 12)), int(rng.choice([4095, int(rng.integers(2, 60))]))
        kept = distance_field(grid, source, near, extra, limit)
        finite = kept[kept < UNREACHABLE]
        exact = UNREACHABLE if near is None and limit == 4095 else int(finite.max()) - 1
        # obstacles found since: the kept field stays exact up to one level before the nearest of them
        later = grid.copy()
        for _ in range(int(rng.integers(0, 6))):
            x, z = _cell(rng, h, w)
            if (x, z) != source:
                later[z, x] = False
                if kept[z, x] < UNREACHABLE:
                    exact = min(exact, int(kept[z, x]) - 1)
        for again in (near, [_cell(rng, h, w)], None):
            for more, most in ((extra, limit), (int(rng.integers(0, 30)), 4095), (2, int(rng.integers(1, 70)))):
                fresh = distance_field(later, source, again, more, most)
                assert np.array_equal(resume_field(later, kept, exact, source, again, more, most), fresh)
                checked += 1
    assert checked == 80 * 9


@pytest.mark.parametrize("by", [1, 2, 3, 4, 5, 8])
def test_ceil_division_of_the_threat_windows(by):
    values = np.arange(-40, 200, dtype=np.int32)
    assert np.array_equal(_ceil_div(values, by), -(-values // by))


def test_kept_searches_give_the_features_of_searches_made_anew():
    # two feature states see the same observations; one forgets every kept search (windows, fields, flash
    # landings) before each step: the actions, maps and vectors stay equal, step for step
    env = GorgeEnv(map_name="own_7", max_step=260, monster_interval=60, monster_speedup=160)
    steps = 0
    for seed in (0, 1):
        env.reset(seed=seed)
        kept, anew = FeatureState(), FeatureState()
        done = False
        while not done:
            observation = json.loads(json.dumps(env.platform_obs()["observation"]))
            maps, vector = encode(observation, kept)
            anew.planner.terrain.clear()
            maps_anew, vector_anew = encode(observation, anew)
            assert kept.choice == anew.choice
            assert np.array_equal(maps, maps_anew) and np.array_equal(vector, vector_anew)
            _, _, terminated, truncated, _ = env.step(kept.choice)
            done, steps = terminated or truncated, steps + 1
    assert steps >= 200
