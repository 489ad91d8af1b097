"""The features module: the competition path and the env's fast path agree; layout; mask; self-containment."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import open_map

from sb3_realm.games.realm import EpisodeConfig, Game, features
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.observation import competition_observation

FEATURES_FILE = Path(features.__file__)


def play_and_compare(env: RealmEnv, episodes: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    checked = 0
    for ep in range(episodes):
        env.reset(seed=seed + ep)
        done = False
        while not done:
            raw = env.raw_arrays()
            parsed = features.arrays_from_competition(*env.competition_obs())
            for a, b in zip(raw, parsed, strict=True):
                assert a.dtype == b.dtype and np.array_equal(a, b)
            enc_raw, enc_parsed = features.encode(*raw), features.encode(*parsed)
            assert np.array_equal(enc_raw["vector"], enc_parsed["vector"])
            assert np.array_equal(enc_raw["maps"], enc_parsed["maps"])
            mask = env.action_masks()
            obs, info = env.competition_obs()
            _, comp_mask = features.observation_to_model_input(obs, info, mask_walls=env.mask_wall_moves)
            assert np.array_equal(mask, comp_mask)
            checked += 1
            legal = np.flatnonzero(mask)
            # mostly moves with a bias so episodes go places; flashes whenever ready half of the time
            action = int(rng.choice(legal[legal >= 8])) if mask[8] and rng.random() < 0.02 else int(rng.choice(legal))
            _, _, te, tr, _ = env.step(action)
            done = te or tr
    return checked


def test_competition_path_equals_env_fast_path_default_map():
    env = RealmEnv(treasure_num=13, max_step=700, mask_wall_moves=True)
    assert play_and_compare(env, episodes=4, seed=0) >= 2000


@pytest.mark.realmap
def test_competition_path_equals_env_fast_path_real_map(real_map_path):
    env = RealmEnv(map_path=real_map_path, max_step=900)
    assert play_and_compare(env, episodes=3, seed=100) >= 2000


def test_vector_layout_on_a_known_state():
    game_map = open_map(40, grid_positions=[(20, 20), (30, 10), (10, 10), (10, 20), (20, 30)]
                        + [(4 + 3 * i, 35) for i in range(11)])
    game = Game(game_map)
    config = EpisodeConfig.from_usr_conf({"treasure_random": 0, "treasure_id": [3, 4], "max_step": 2000})
    game.reset(config, config.treasure_id)
    obs, info = competition_observation(game)
    model_input, mask = features.observation_to_model_input(obs, info)
    v = model_input["vector"]
    assert v.shape == (features.VECTOR_SIZE,) and v.dtype == np.float32
    assert v[2] == pytest.approx(10 / 128) and v[3] == pytest.approx(10 / 128)
    assert v[4] == 1.0 and v[5] == 0.0  # talent ready, no cooldown
    assert v[8] == 1.0 and v[11] == pytest.approx(2 / 13)  # buff available, 2 treasures available
    targets = v[12:].reshape(17, 12)  # end, buff, slots 1..15
    end, buff = targets[0], targets[1]
    assert end[0] == 1.0 and end[1:9].argmax() == 0  # present, east (direction 1)
    assert end[9] == pytest.approx(0.2 * obs.feature.end_pos.l2_distance)
    assert buff[0] == 1.0 and buff[1:9].argmax() == 1  # north-east
    slot3, slot4, slot5 = targets[2 + 3 - 1], targets[2 + 4 - 1], targets[2 + 5 - 1]
    assert slot3[0] == 1.0 and slot3[1:9].argmax() == 2  # id 3 at (10, 20): north
    assert slot4[0] == 1.0 and slot4[1:9].argmax() == 1  # id 4 at (20, 30): north-east
    assert slot5[0] == 0.0 and not slot5[1:9].any() and slot5[9] == 1.0 and slot5[11] == 1.0  # absent: null
    assert mask.tolist() == [True] * 16
    assert np.array_equal(model_input["maps"][0].ravel() // 255, obs.feature.obstacle_map)


def test_action_mask_rules():
    window = np.ones((51, 51), dtype=np.uint8)
    assert features.action_mask(False).tolist() == [True] * 8 + [False] * 8
    window[25, 26] = 0  # wall east
    m = features.action_mask(True, window, mask_walls=True)
    assert m.tolist() == [False] + [True] * 15  # NE and SE still slide along it
    window[26, 25] = 0  # and north: NE can only bump
    m = features.action_mask(True, window, mask_walls=True)
    assert not m[0] and not m[1] and not m[2] and m[3] and m[7]
    window[:] = 0  # boxed in: every move stays legal rather than none
    assert features.action_mask(False, window, mask_walls=True)[:8].all()
    with pytest.raises(ValueError, match="obstacle window"):
        features.action_mask(True, None, mask_walls=True)


def test_out_of_range_relative_position_is_rejected():
    env = RealmEnv(map_name="small")
    env.reset(seed=0)
    obs, info = env.competition_obs()
    obs.feature.treasure_pos[4].path_distance = 9
    with pytest.raises(ValueError, match=r"treasure_pos\[4\]"):
        features.arrays_from_competition(obs, info)


def test_accepts_dict_shaped_observations():
    import dataclasses

    env = RealmEnv(map_name="small")
    env.reset(seed=0)
    obs, info = env.competition_obs()
    as_dicts = dataclasses.asdict(obs), dataclasses.asdict(info)
    for a, b in zip(features.arrays_from_competition(obs, info), features.arrays_from_competition(*as_dicts),
                    strict=True):
        assert np.array_equal(a, b)


def test_features_module_imports_only_numpy():
    tree = ast.parse(FEATURES_FILE.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative import in features.py"
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "numpy"}


def test_features_module_runs_standalone(tmp_path):
    copy = tmp_path / "definition_features.py"
    copy.write_bytes(FEATURES_FILE.read_bytes())
    code = (
        "import sys; sys.modules['sb3_realm'] = None; sys.modules['gymnasium'] = None\n"
        "import numpy as np, definition_features as f\n"
        "s = np.zeros(11, np.float32); r = np.tile(np.array([0, 5, 5, 1], np.float32), (18, 1))\n"
        "out = f.encode(s, r, np.zeros((4, 51, 51), np.uint8)); print(out['vector'].shape, f.FEATURE_VERSION)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "(216,)"
