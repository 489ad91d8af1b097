"""The simulator's fast paths against the plain ones: the map's cached BFS rows against a plain queue BFS, their
bounded cache and the maps' pickling."""

from __future__ import annotations

import pickle
from collections import deque

import numpy as np
import pytest
from helpers import gorge_maps_dir

from sb3_realm.games.gorge.core import Game
from sb3_realm.games.gorge.maps import UNREACHABLE, GorgeMap
from sb3_realm.games.gorge.observation import env_obs
from sb3_realm.games.gorge.rules import GorgeConfig


def _plain_bfs(m: GorgeMap, x: int, z: int) -> np.ndarray:
    ref = np.full(m.walkable.shape, UNREACHABLE, dtype=np.int64)
    ref[z, x] = 0
    queue = deque([(x, z)])
    while queue:
        cx, cz = queue.popleft()
        for dx, dz in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if m.is_road(cx + dx, cz + dz) and ref[cz + dz, cx + dx] == UNREACHABLE:
                ref[cz + dz, cx + dx] = ref[cz, cx] + 1
                queue.append((cx + dx, cz + dz))
    return ref


def _two_rooms() -> GorgeMap:
    walk = np.zeros((40, 60), dtype=bool)  # not square, two components
    walk[2:30, 2:25] = True
    walk[2:30, 30:58] = True
    walk[10:20, 8] = False
    return GorgeMap(walkable=walk, name="two rooms")


def test_cached_rows_match_a_plain_bfs_and_stay_within_their_budget():
    m = _two_rooms()
    rng = np.random.default_rng(0)
    sources = [tuple(int(v) for v in m.road_xz[i]) for i in rng.integers(m.road_count, size=6)]
    for x, z in sources:
        ref = _plain_bfs(m, x, z)
        assert np.array_equal(m.distance_field(x, z), ref)
        row = m.distance_row(m.road_id(x, z))
        assert not row.flags.writeable and row[m.road_count] == m.row_unreachable
        cells = [(int(a), int(b)) for a, b in rng.integers(-2, 62, size=(40, 2))]
        expected = [int(ref[b, a]) if 0 <= a < 60 and 0 <= b < 40 else UNREACHABLE for a, b in cells]
        assert m.distances_to(x, z, cells) == expected
    info = m.row_cache_info()
    assert info["rows"] == len(set(sources)) and info["bytes"] == info["rows"] * info["row_bytes"]
    m.set_row_cache_bytes(2 * info["row_bytes"])
    assert m.row_cache_info()["rows"] == 2
    x, z = sources[0]
    assert np.array_equal(m.distance_field(x, z), _plain_bfs(m, x, z))
    assert m.row_cache_info()["rows"] <= 2


def test_distances_to_keeps_its_anchor_limit():
    m = _two_rooms()
    # a margin after the anchor: farther cells read UNREACHABLE
    assert m.distances_to(3, 3, [(5, 3), (20, 3)], anchors=[(5, 3)], margin=3) == [2, UNREACHABLE]
    # an anchor in the other component: no limit
    assert m.distances_to(3, 3, [(20, 3), (40, 3)], anchors=[(40, 3)], margin=0) == [17, UNREACHABLE]
    # an anchor off the road is ignored
    assert m.distances_to(3, 3, [(20, 3)], anchors=[(0, 0)], margin=0) == [17]


def test_maps_pickle_without_their_row_cache():
    m = _two_rooms()
    m.distance_row(0)
    copy = pickle.loads(pickle.dumps(m))
    assert copy.row_cache_info()["rows"] == 0 and np.array_equal(copy.walkable, m.walkable)
    assert copy.distances_to(3, 3, [(20, 3)]) == [17]


@pytest.mark.parametrize("k", [1, 7])
def test_monster_moves_read_the_hero_row(k):
    """A game on an open map fills the row of the hero's cell, and env_obs stays what features.encode reads."""
    from sb3_realm.games.gorge.maps import load_map

    m = load_map(gorge_maps_dir() / f"gorge_chase_map_{k}.json")
    game = Game(m)
    game.reset(GorgeConfig.from_usr_conf({"monster_interval": 11}), np.random.default_rng(k))
    for _ in range(30):
        game.step(0)
        if game.done:
            break
    assert m.row_cache_info()["misses"] >= 1
    assert env_obs(game, "0", k)["frame_no"] == game.step_no
