"""Fidelity on the competition's real map (path: --realm-map, $SB3_REALM_REAL_MAP or ../shared/data/)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sb3_realm.games.realm import RealmMap
from sb3_realm.games.realm.env import RealmEnv

pytestmark = pytest.mark.realmap


def test_all_256_reference_bfs_distances(real_map, real_map_path):
    ref = json.loads(real_map_path.read_text())["reference_bfs4_cells_between_positions"]
    got = {(i, j): real_map.bfs_between(i, j) for i in range(16) for j in range(16)}
    want = {(i, j): ref[str(i)][str(j)] for i in range(16) for j in range(16)}
    assert got == want
    assert got[(2, 1)] == 186


def test_geometry_and_positions(real_map, real_map_path):
    data = json.loads(real_map_path.read_text())
    assert real_map.walkable.shape == (128, 128)
    assert int(real_map.walkable.sum()) == 4196
    for i in range(16):
        x, z = data["positions_world_xz"][str(i)]
        gx, gz = data["positions_grid_xz"][str(i)]
        assert RealmMap.world_to_grid(x, z) == (gx, gz)
        assert RealmMap.grid_to_world(gx, gz) == (x, z)
        assert real_map.walkable[gz, gx], f"position {i} is not walkable"
    assert tuple(real_map.positions_grid[0]) == (59, 53)


def test_grid_distance_in_observation_is_bfs_over_256(real_map_path, real_map):
    env = RealmEnv(map_path=real_map_path)
    env.reset(seed=0)
    obs, _ = env.competition_obs()
    assert obs.feature.end_pos.grid_distance == pytest.approx(186 / 256)
    assert obs.feature.buff_pos.grid_distance == pytest.approx(real_map.bfs_between(2, 0) / 256)
    assert obs.feature.grid_pos.x == 15 and obs.feature.grid_pos.z == 13
    assert np.isclose(obs.feature.norm_pos.x, 5500 / 64000)
