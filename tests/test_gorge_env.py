"""GorgeEnv: determinism over several maps, pickling with monsters, the features module's independence, the mask, the
reward terms, the episode-end score and a short MaskablePPO run (the env checkers are ``check_game``'s, run by
tests/test_check_game.py; throughput is benchmarks/gorge_speed.py's)."""

from __future__ import annotations

import ast
import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest

from sb3_realm.games.gorge import features
from sb3_realm.games.gorge.env import SHIPPED_MAPS, GorgeEnv
from sb3_realm.games.gorge.rewards import REWARD_RANGES, TERMS, RewardWeights


def _rollout(env: GorgeEnv, seed: int, steps: int, action_seed: int = 0) -> list[tuple]:
    """(vector, maps, reward, terminated, truncated) of ``steps`` random legal actions, resetting after an end."""
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    out = [(obs["vector"].copy(), obs["maps"].copy(), 0.0, False, False)]
    for _ in range(steps):
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        obs, reward, terminated, truncated, _ = env.step(action)
        out.append((obs["vector"].copy(), obs["maps"].copy(), reward, terminated, truncated))
        if terminated or truncated:
            obs, _ = env.reset()
    return out


def _same(a: list[tuple], b: list[tuple]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) and x[2:] == y[2:]
                                    for x, y in zip(a, b, strict=True))


def test_same_seed_same_rollout_and_different_seed_differs():
    first = _rollout(GorgeEnv(map_names=list(SHIPPED_MAPS)), seed=3, steps=150)
    again = _rollout(GorgeEnv(map_names=list(SHIPPED_MAPS)), seed=3, steps=150)
    other = _rollout(GorgeEnv(map_names=list(SHIPPED_MAPS)), seed=4, steps=150)
    assert _same(first, again)
    assert not _same(first, other)


def test_pickle_round_trip_mid_episode():
    env = GorgeEnv(max_step=200, monster_interval=-2)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for _ in range(5):
        env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    copy = pickle.loads(pickle.dumps(env))
    for _ in range(30):
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        a, b = env.step(action), copy.step(action)
        assert np.array_equal(a[0]["vector"], b[0]["vector"]) and np.array_equal(a[0]["maps"], b[0]["maps"])
        assert a[1:4] == b[1:4]
        if a[2] or a[3]:
            break


def test_observation_in_space_and_mask_drops_only_moves_into_seen_walls():
    # the mask: the platform's legal actions less the moves into obstacles seen and the flashes that land in place
    env = GorgeEnv(map_names=["own_2", "own_4"], max_step=150)
    obs, info = env.reset(seed=7)
    assert info["map"] in ("own_2", "own_4")
    rng = np.random.default_rng(7)
    dropped = 0
    for _ in range(150):
        assert env.observation_space.contains(obs)
        legal = np.array(env.platform_obs()["observation"]["legal_action"])
        mask = env.action_masks()
        assert mask.dtype == bool and mask.any() and not (mask & ~legal).any()
        assert np.array_equal(legal, env.game.legal_actions())
        for a in np.flatnonzero(legal & ~mask):
            before = env.game.hero
            probe = pickle.loads(pickle.dumps(env.game))
            probe.step(int(a))
            assert probe.hero == before  # a masked action leaves the hero where it is
            dropped += 1
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
        if terminated or truncated:
            obs, _ = env.reset()
    assert dropped > 0


def test_features_module_imports_nothing_from_the_package():
    # only its companions, copied beside it into the submission
    tree = ast.parse(Path(features.__file__).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 or f"{node.module}.py" in features.COMPANION_FILES
            assert not (node.module or "").startswith("sb3_realm")
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("sb3_realm") for alias in node.names)
    assert all((Path(features.__file__).parent / name).is_file() for name in features.COMPANION_FILES)
    assert features.FEATURE_VERSION == "2" and features.N_ACTIONS == 16
    assert features.MAP_SHAPE == (9, 33, 33) and features.VECTOR_SIZE == 202


def test_feature_state_remembers_and_resets():
    env = GorgeEnv(monster_interval=-2, max_step=100)
    env.reset(seed=0)
    steps = 0
    for _ in range(3):
        _, _, terminated, truncated, _ = env.step(0)
        steps += 1
        if terminated or truncated:
            break
    memory = env.features.planner.memory
    assert len(memory.history) == steps + 1 and memory.seen.any() and memory.step == steps
    state = pickle.loads(pickle.dumps(env.features))
    assert np.array_equal(state.planner.memory.seen, memory.seen) and state.choice == env.features.choice
    env.reset(seed=0)
    assert len(env.features.planner.memory.history) == 1 and env.features.planner.memory.step == 0


def test_reward_terms_add_up_and_end_info_has_the_core_score():
    weights = {"survive": 0.02, "treasure": 2.0, "monster_distance": 0.5, "buff": 0.3, "flash": 0.1,
               "flash_waste": -0.2, "caught": -3.0}
    env = GorgeEnv(reward_weights=weights, max_step=300)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    ends = 0
    for _ in range(1500):
        _, reward, terminated, truncated, info = env.step(int(rng.integers(16)))
        terms = info["reward_terms"]
        assert list(terms) == list(TERMS)
        assert reward == pytest.approx(sum(weights[k] * v for k, v in terms.items()))
        if terminated or truncated:
            game = env.game
            assert info["score"] == game.total_score == 1.5 * info["steps"] + 100 * info["treasures"]
            assert info["steps"] == game.step_no and info["flash_used"] == game.flash_count
            assert info["caught"] == terminated and info["map"] == "default"
            assert not info["caught_after_speedup"] or info["caught"]
            ends += 1
            env.reset()
    assert ends > 0


def test_reward_weights_round_trip_and_ranges():
    weights = RewardWeights.from_dict({"treasure": 3.0})
    assert RewardWeights.from_dict(weights.to_dict()) == weights
    assert set(REWARD_RANGES) == set(TERMS) == set(weights.to_dict())
    for name, (low, high, _) in REWARD_RANGES.items():
        assert low <= getattr(RewardWeights(), name) <= high
    with pytest.raises(ValueError, match="unknown reward weight keys"):
        RewardWeights.from_dict({"gold": 1.0})


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="neither a shipped map"):
        GorgeEnv(map_name="own_11")
    with pytest.raises(ValueError, match="maps_dir"):
        GorgeEnv(map_names=["open_3"])
    with pytest.raises(ValueError, match="max_step"):
        GorgeEnv(max_step=0)
    with pytest.raises(ValueError, match="render_mode"):
        GorgeEnv(render_mode="human")
    with pytest.raises(ValueError, match="reset"):
        GorgeEnv().action_masks()


def test_open_map_by_path_and_set_config(tmp_path):
    source = Path(__file__).resolve().parents[1] / "sb3_realm" / "games" / "gorge" / "data" / "gorge_own_3.json.gz"
    path = tmp_path / "gorge_chase_map_3.json"
    path.write_bytes(gzip.decompress(source.read_bytes()))
    assert GorgeEnv(map_path=source).reset(seed=0)[1]["map"] == str(source)  # the gzip file itself loads too
    env = GorgeEnv(map_path=path)
    env.reset(seed=0)
    assert env.map_id == 3
    env = GorgeEnv(maps_dir=tmp_path, map=[3])
    env.set_config(max_step=5)
    env.reset(seed=0)
    assert env.map == "open_3" and env.game.config.max_step == 5


def test_render_rgb_array():
    env = GorgeEnv(render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (512, 512, 3) and frame.dtype == np.uint8


def test_maskable_ppo_learns_256_steps():
    from sb3_contrib import MaskablePPO

    from sb3_realm.models.extractors import EXTRACTORS, GorgeExtractor

    # SB3's default CombinedExtractor runs NatureCNN (8 x 8 / 4, 4 x 4 / 2, 3 x 3), too deep for 21 x 21 maps
    assert EXTRACTORS["gorge"] is GorgeExtractor
    kwargs = {"features_extractor_class": GorgeExtractor, "features_extractor_kwargs": {"features_dim": 64}}
    model = MaskablePPO("MultiInputPolicy", GorgeEnv(), n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs=kwargs)
    model.learn(256)
    assert model.num_timesteps >= 256
