"""robot_vacuum as a game of sb3_realm: its entry point, check_game, the Gymnasium env and its observations, the
features' planner against the planner expert, and the official baseline's observation."""

from __future__ import annotations

import tomllib
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from sb3_realm_vacuum import features
from sb3_realm_vacuum.baseline import OBSERVATION_SIZE, BaselineEnv, BaselineFeatures
from sb3_realm_vacuum.env import VacuumEnv
from sb3_realm_vacuum.experts import ObservedPolicy
from sb3_realm_vacuum.spec import ENV_ID, SPEC, planner_choices

from sb3_realm.games import check_game, registry

PACKAGE = Path(__file__).resolve().parents[1]


def test_the_entry_point_names_the_spec():
    declared = tomllib.loads((PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))
    target = declared["project"]["entry-points"]["sb3_realm.games"]["robot_vacuum"]
    assert registry.get(target) is SPEC and SPEC.name == "robot_vacuum"


def test_check_game_passes():
    report = check_game(SPEC, steps=60)
    assert report.game == "robot_vacuum"


def test_gym_make_by_id_and_the_raw_observation():
    registry.get("sb3_realm_vacuum.spec:SPEC")
    env = gym.make(ENV_ID, map_name="own_2", observation="raw")
    obs, info = env.reset(seed=1)
    assert info["map"] == "own_2" and env.observation_space.contains(obs)
    game = env.unwrapped.game
    assert obs["hero"].tolist()[:3] == [game.x, game.z, 200]
    assert obs["map_info"][10, 10] == 2  # the spawn cell is dirty
    obs, *_ = env.step(0)
    assert env.observation_space.contains(obs)


def test_an_open_map_needs_its_folder():
    with pytest.raises(ValueError, match="maps_dir"):
        VacuumEnv(map_name="open_3")
    with pytest.raises(ValueError, match=r"neither a shipped map"):
        VacuumEnv(map_name="nowhere")


def test_the_features_carry_the_planner_experts_choice_and_the_mask():
    env = VacuumEnv(map_name="own_3", max_step=300)
    expert = ObservedPolicy(env)
    obs, _ = env.reset(seed=7)
    expert.reset(env)
    done, steps = False, 0
    while not done:
        action = expert.act(env, obs)
        assert planner_choices(obs["vector"][None])[0] == action
        assert np.array_equal(env.action_masks(), features.action_mask(env.platform_obs()["observation"]))
        assert env.observation_space.contains(obs)
        obs, _, terminated, truncated, info = env.step(action)
        done, steps = terminated or truncated, steps + 1
    assert steps == 300 and info["end"] == "completed" and info["score"] > 200


def test_episode_summary_and_reward_terms():
    env = VacuumEnv(map_name="own_1", max_step=5, reward_weights={"clean": 1.0, "step": 0.0, "complete": 0.0,
                                                                  "coverage": 0.0, "fail": 0.0})
    env.reset(seed=0)
    total = 0.0
    for _ in range(5):
        legal = np.flatnonzero(env.action_masks())
        _, reward, _, truncated, info = env.step(int(legal[0]))
        total += reward
    assert truncated and info["score"] == total and info["end"] == "completed"
    assert info["steps"] == 5 and info["episode_reward_terms"]["clean"] == info["score"]


def test_baseline_observation_keeps_the_transposed_rays():
    view = [[1] * 21 for _ in range(21)]
    view[10][13] = 2  # three cells east of the robot (row z, column x)
    observation = {"map_info": view, "step_no": 4,
                   "env_info": {"step_no": 4, "clean_score": 10, "total_dirt": 100, "battery_max": 200},
                   "frame_state": {"heroes": {"battery": 150, "battery_max": 200, "pos": {"x": 64, "z": 32}}},
                   "legal_action": [1] * 8}
    encoded = BaselineFeatures().encode(observation)
    assert encoded.shape == (OBSERVATION_SIZE,) and OBSERVATION_SIZE == 69
    assert encoded[49:55].tolist() == pytest.approx([0.002, 0.75, 0.1, 0.9, 0.5, 0.25])
    rays = encoded[55:59]
    # the baseline reads view[x][z]: the dirt east of the robot shows on its south ray
    assert rays.tolist() == pytest.approx([1.0, 1.0, 0.1, 1.0])
    assert encoded[59] == pytest.approx(3 / 180)
    assert encoded[24] == 0.5  # the robot's own cell in the 7 x 7 crop: clean road / 2


def test_baseline_env_steps_with_the_envs_reward():
    env = BaselineEnv(VacuumEnv(map_name="own_1", observation="raw", max_step=20))
    plain = VacuumEnv(map_name="own_1", observation="raw", max_step=20)
    obs, _ = env.reset(seed=0)
    plain.reset(seed=0)
    assert env.observation_space.contains(obs)
    for step in range(20):
        obs, reward, _, truncated, _ = env.step(step % 8)
        assert reward == plain.step(step % 8)[1]
    assert truncated and obs[60] in (0.0, 1.0)
