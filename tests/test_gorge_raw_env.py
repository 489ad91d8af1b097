"""Gorge Chase's Gym env with ``observation="raw"``: the platform's own view as fixed-size arrays, without the planner.
Its arrays are those of ``raw.encode`` on the platform's dict and hold what the game shows; SB3 consumes it, masks
work, the default observation is unchanged, and no step runs the features or their planner."""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from test_shown_outputs import GORGE_PAGES, _ids, run_snippet, same_as_shown, shown

import sb3_realm  # noqa: F401  (registers the envs)
from sb3_realm.games.gorge import env as env_module
from sb3_realm.games.gorge import raw
from sb3_realm.games.gorge.env import GorgeEnv, env_spaces
from sb3_realm.games.gorge.observation import env_obs
from sb3_realm.games.gorge.protocol import distance_bucket, relative_direction
from sb3_realm.games.gorge.rules import Rules

GYM_ID = "sb3_realm/GorgeChase-v0"


def random_rollout(env: GorgeEnv, seed: int, steps: int):
    """``(obs, env)`` before every step of a random legal rollout, resets included."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield obs
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if terminated or truncated:
            obs, _ = env.reset()


def check_against_game(obs: dict, env: GorgeEnv) -> None:
    """The raw observation against the game's own state (what the hero sees of it)."""
    game = env.game
    hx, hz = game.hero
    assert obs["hero"].tolist() == [hx, hz, game.flash_cooldown, game.buff_remaining, game.treasures_collected]
    view = [[int(game.game_map.is_road(hx + c - 10, hz + r - 10)) for c in range(21)] for r in range(21)]
    assert obs["map_info"].tolist() == view
    assert obs["legal_action"].astype(bool).tolist() == game.legal_actions().tolist() == env.action_masks().tolist()

    def seen(cell) -> bool:
        return max(abs(cell[0] - hx), abs(cell[1] - hz)) <= 10

    def where(cell) -> tuple[int, int]:
        dx, dz = cell[0] - hx, cell[1] - hz
        return distance_bucket(dx, dz), relative_direction(dx, dz)

    monsters = np.zeros((2, len(raw.MONSTER_FIELDS)), dtype=np.int32)
    for k, m in enumerate(game.monsters):
        shown = (1, 1, *m.cell, m.speed) if seen(m.cell) else (1, 0, -1, -1, -1)
        monsters[k] = (*shown, *where(m.cell))
    assert np.array_equal(obs["monsters"], monsters)
    treasures = np.zeros((10, len(raw.TREASURE_FIELDS)), dtype=np.int32)
    for t in game.treasures:
        if seen(t.cell):
            treasures[t.entity_id - 1] = (1, *t.cell, *where(t.cell))
    assert np.array_equal(obs["treasures"], treasures)
    remaining = {t.entity_id for t in game.treasures}
    assert obs["treasure_remaining"].tolist() == [int(k + 1 in remaining) for k in range(10)]
    buffs = np.zeros((2, len(raw.BUFF_FIELDS)), dtype=np.int32)
    for b in game.buffs:
        if seen(b.cell):
            buffs[b.entity_id - game.config.treasure_count - 1] = (1, int(b.visible), *b.cell, *where(b.cell))
    assert np.array_equal(obs["buffs"], buffs)
    info = dict(zip(raw.ENV_INFO_FIELDS, obs["env_info"].tolist(), strict=True))
    assert info["step_no"] == game.step_no and info["max_step"] == game.config.max_step
    assert info["monster_interval"] == game.monster_interval and info["flash_count"] == game.flash_count
    assert obs["scores"][2] == pytest.approx(game.total_score)


def test_the_raw_observation_is_the_platform_view_the_game_shows():
    """Every step of random games on two maps under both settings and with monster 2 early: the env's arrays are
    ``raw.encode`` of the platform's dict, lie in the observation space and hold the game's state as the hero sees
    it; treasures, buffs (present and waiting), a second monster and monsters out of view all occur."""
    occurred = set()
    for options in ({"settings": "default"}, {"settings": "final"}, {"monster_interval": 15}):
        env = GorgeEnv(observation="raw", map_names=["own_1", "own_5"], **options)
        for obs in random_rollout(env, seed=3, steps=1500):
            reference = raw.encode(env_obs(env.game, "0", env.map_id)["observation"])
            assert set(obs) == set(reference) == set(env.observation_space.spaces)
            for key, value in reference.items():
                assert obs[key].dtype == value.dtype and np.array_equal(obs[key], value), key
            assert env.observation_space.contains(obs)
            check_against_game(obs, env)
            monsters, buffs = obs["monsters"], obs["buffs"]
            occurred |= {"treasure"} if obs["treasures"][:, 0].any() else set()
            occurred |= {f"buff status {s}" for s in buffs[buffs[:, 0] == 1, 1].tolist()}
            occurred |= {"monster 2"} if monsters[1, 0] else set()
            occurred |= {"monster out of view"} if ((monsters[:, 0] == 1) & (monsters[:, 1] == 0)).any() else set()
    assert occurred == {"treasure", "buff status 0", "buff status 1", "monster 2", "monster out of view"}


def test_the_env_id_takes_the_raw_option_and_keeps_its_default():
    default = gym.make(GYM_ID)
    assert default.observation_space == env_spaces()[0] and set(default.observation_space.spaces) == {"maps", "vector"}
    made = gym.make(GYM_ID, observation="raw")
    assert made.unwrapped.observation == "raw"
    space = made.observation_space
    assert isinstance(space, gym.spaces.Dict) and space == env_spaces("raw")[0] == raw.observation_space()
    assert all(isinstance(s, gym.spaces.Box) for s in space.spaces.values())
    assert made.action_space == default.action_space == gym.spaces.Discrete(16)


def test_the_checkers_pass_on_the_raw_env():
    """Both checkers pass; SB3's only remark is its advice on the 2-D arrays (its MultiInputPolicy flattens them)."""
    env = gym.make(GYM_ID, observation="raw")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gym_check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped, warn=True)
    remarks = {str(w.message) for w in caught}
    two_d = {key for key, space in env.observation_space.spaces.items() if len(space.shape) == 2}
    assert two_d == {"map_info", "monsters", "treasures", "buffs"}
    assert remarks == {f"Your observation {key} has an unconventional shape (neither an image, nor a 1D vector). "
                       "We recommend you to flatten the observation to have only a 1D vector or use a custom policy "
                       "to properly process the data." for key in two_d}


def test_no_step_runs_the_features_or_their_planner(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("the raw observation ran the features")

    monkeypatch.setattr(env_module, "encode", refuse)
    monkeypatch.setattr(env_module, "action_mask", refuse)
    env = GorgeEnv(observation="raw")
    for _ in random_rollout(env, seed=0, steps=300):
        pass
    with pytest.raises(AssertionError, match="ran the features"):
        GorgeEnv().reset(seed=0)  # the default observation does run them


def test_maskable_ppo_learns_on_the_raw_env_with_its_masks():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(GYM_ID, n_envs=2, seed=0, env_kwargs={"observation": "raw", "max_step": 60})
    model = MaskablePPO("MultiInputPolicy", vec, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=64)
    obs = vec.reset()
    masks = get_action_masks(vec)
    assert masks.shape == (2, 16) and np.array_equal(masks, obs["legal_action"].astype(bool))
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert all(masks[i, a] for i, a in enumerate(actions))


def test_same_seed_same_rollout_and_pickling_mid_episode():
    def trace(seed: int) -> list:
        return [a.copy() for obs in random_rollout(GorgeEnv(observation="raw"), seed, 200) for a in obs.values()]

    def same(a: list, b: list) -> bool:
        return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))

    assert same(trace(7), trace(7)) and not same(trace(7), trace(8))
    env = GorgeEnv(observation="raw")
    env.reset(seed=3)
    for a in (0, 1, 2):
        env.step(a)
    clone = pickle.loads(pickle.dumps(env))
    for a in (3, 0, 6, 8):
        first, second = env.step(a)[0], clone.step(a)[0]
        assert all(np.array_equal(first[k], second[k]) for k in first)


def test_without_the_model_input_the_raw_observation_is_zeros():
    env = GorgeEnv(observation="raw", model_input=False)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs) and not any(v.any() for v in obs.values())


def test_a_bad_observation_or_rules_beyond_its_bounds_is_refused_in_one_message():
    with pytest.raises(ValueError, match=r"observation = 'pixels' .*pass 'features' .* or 'raw'"):
        GorgeEnv(observation="pixels")
    with pytest.raises(ValueError, match=r"Rules.buff_duration = 5000 is above 2000"):
        GorgeEnv(observation="raw", rules=Rules(buff_duration=5000))
    env = GorgeEnv(observation="raw", rules=Rules(treasure_value=1000))  # the scores' bound follows the rules
    assert env.observation_space["scores"].high[2] == pytest.approx(1.5 * 2000 + 1000 * 10)


def test_the_encoder_needs_numpy_and_the_standard_library_only():
    """An Agent may copy raw.py to encode the platform's dict the same way at play time."""
    tree = ast.parse(open(raw.__file__, encoding="utf-8").read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported <= {"__future__", "collections", "typing", "numpy", "gymnasium"}, imported
    top = {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
    top |= {alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    assert "gymnasium" not in top  # imported by observation_space() alone: encode runs without it


@pytest.mark.parametrize("page", GORGE_PAGES, ids=_ids)
def test_the_raw_env_snippet_prints_what_the_page_shows(page, tmp_path):
    code, output = shown(page, 'observation="raw", map_name=')
    assert len(code.strip().splitlines()) <= 8
    same_as_shown(run_snippet(code, tmp_path), output)


def test_the_benchmark_times_the_raw_observation_beside_the_others():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "env_speed.py"
    short = ["--steps", "200", "--gorge-steps", "200", "--features-steps", "10", "--repeats", "1"]
    out = subprocess.run([sys.executable, str(script), *short], capture_output=True, text=True, check=True,
                         cwd=script.parent)
    result = json.loads(out.stdout)
    assert set(result["gorge"]) == {"features", "raw", "simulator"}
    assert "observation='raw'" in result["gorge"]["raw"]["env"] and result["gorge"]["raw"]["steps_per_repeat"] == 200
    assert all(entry["steps_per_s"] > 0 for entry in result["gorge"].values())
    assert result["realm_steps_per_s"] > 0 and result["minigrid_steps_per_s"] > 0
