"""The Realm's env: creation by id, spaces, usr_conf options, the episode's end, reward terms, rendering and masks
through VecEnvs. The env contract of every game (the env checkers, same-seed determinism, pickling) is
``check_game``'s, run on each game by tests/test_check_game.py."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import sb3_realm
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.rewards import TERMS, RewardWeights


def test_make_by_id_from_package_name_in_fresh_process():
    code = ("import gymnasium as gym; env = gym.make('sb3_realm:sb3_realm/RealmSmall-v0'); "
            "obs, _ = env.reset(seed=0); print(obs['vector'].shape)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(216,)"


def test_spaces_and_obs_in_space():
    env = gym.make("sb3_realm/RealmSmall-v0")
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.action_space == gym.spaces.Discrete(16)
    assert len(info["treasure_ids"]) == 3
    assert obs["maps"].dtype == np.uint8 and obs["maps"].shape == (4, 51, 51)


def test_reset_options_are_usr_conf_for_one_episode():
    env = RealmEnv(map_name="small", treasure_num=2, max_step=100)
    _, info = env.reset(seed=0, options={"treasure_random": 0, "treasure_id": [3, 4, 5, 6], "max_step": 50})
    assert info["treasure_ids"] == [3, 4, 5, 6] and info["usr_conf"]["max_step"] == 50
    _, info = env.reset(seed=0)
    assert len(info["treasure_ids"]) == 2 and info["usr_conf"]["max_step"] == 100
    env.set_config(treasure_num=5)
    _, info = env.reset()
    assert len(info["treasure_ids"]) == 5


def test_episode_end_info_and_reward_terms():
    env = RealmEnv(map_name="small", treasure_num=3, max_step=40, reward_weights={"step": -1.0, "bump": 0.0,
                                                                                    "revisit": 0.0, "progress": 0.0})
    env.reset(seed=1)
    done, info, rewards = False, {}, []
    while not done:
        _, r, te, tr, info = env.step(4)  # west into the wall: nothing happens but steps
        rewards.append(r)
        assert set(info["reward_terms"]) == set(TERMS)
        done = te or tr
    assert info["steps"] == 40 and not info["win"] and info["score"] == 0.0
    assert info["treasures"] == 0 and len(info["treasures_missed"]) == 3
    # -1 per step, plus the timeout and the missed treasures on the last step
    assert rewards[:-1] == [-1.0] * 39
    assert rewards[-1] == pytest.approx(-1.0 + RewardWeights().timeout + 3 * RewardWeights().missed_treasure)


def test_score_does_not_depend_on_weights():
    scores = []
    for weights in ({}, {"treasure": 5.0, "end": -3.0, "step": 0.3}):
        env = RealmEnv(map_name="small", reward_weights=weights)
        env.reset(seed=11)
        rng = np.random.default_rng(0)
        info, done = {}, False
        while not done:
            _, _, te, tr, info = env.step(int(rng.integers(8)))
            done = te or tr
        scores.append((info["score"], info["steps"], info["treasures"]))
    assert scores[0] == scores[1]


def test_progress_term_is_potential_difference():
    env = RealmEnv(map_name="small", treasure_num=1)
    env.reset(seed=0)
    from sb3_realm.games.realm.rewards import potential

    total = 0.0
    spacing = env._spacing
    phi0 = potential(env.game, spacing)
    for a in (0, 0, 1, 2, 2):
        _, _, te, _, info = env.step(a)
        total += info["reward_terms"]["progress"]
        if te:
            break
    assert total == pytest.approx(potential(env.game, spacing) - phi0)


def test_progress_rewards_a_pickup_and_the_end():
    """Taking a treasure never lowers the potential (the next treasure is farther, but one fewer is left), and the
    oracle's whole episode earns ``d0 + D * n0`` cells of progress."""
    from sb3_realm.games.realm.experts.adapter import OracleAdapter
    from sb3_realm.games.realm.rewards import potential

    env = RealmEnv(map_name="small", treasure_num=3, max_step=300)
    oracle = OracleAdapter(env)
    obs, _ = env.reset(seed=1)
    oracle.reset(env)
    phi0, done, total = potential(env.game, env._spacing), False, 0.0
    assert env._spacing == 50  # the small map's largest BFS distance
    while not done:
        _, _, te, tr, info = env.step(oracle.act(env, obs))
        total += info["reward_terms"]["progress"]
        if info["reward_terms"]["treasure"] > 0:
            assert info["reward_terms"]["progress"] > 0
        done = te or tr
    assert info["win"] and total == pytest.approx(-phi0)


def test_render_rgb_array():
    env = gym.make("sb3_realm/RealmSmall-v0", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (32 * 4, 32 * 4, 3)
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) >= 5  # walls, floor, treasures, buff, end, hero...


def test_action_masks_through_subproc_vec_env():
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.vec_env import SubprocVecEnv

    vec = SubprocVecEnv([lambda: RealmEnv(map_name="small") for _ in range(2)])
    try:
        vec.reset()
        masks = get_action_masks(vec)
        assert masks.shape == (2, 16) and masks.all()  # talent ready at the start
        vec.step(np.array([8, 0]))  # env 0 flashes
        masks = get_action_masks(vec)
        assert not masks[0, 8:].any() and masks[1].all()
    finally:
        vec.close()


def test_maskable_ppo_learns_a_few_steps():
    from sb3_contrib import MaskablePPO

    model = MaskablePPO("MultiInputPolicy", RealmEnv(map_name="small"), n_steps=64, batch_size=32, n_epochs=1,
                        verbose=0, seed=0)
    model.learn(128)
    assert model.num_timesteps >= 128


def test_package_exports():
    assert "RealmEnv" in sb3_realm.__all__ and sb3_realm.__version__


def test_reward_by_term_adds_up_to_the_return():
    """``episode_reward_by_term``: each term's weight x value summed over the episode; their sum is the return."""
    env = RealmEnv(map_name="small", reward_weights={"treasure": 3.0, "step": -0.5})
    env.reset(seed=4, options={"max_step": 120})
    rng = np.random.default_rng(0)
    total, done, info = 0.0, False, {}
    while not done:
        _, reward, terminated, truncated, info = env.step(int(rng.integers(8)))
        total += reward
        done = terminated or truncated
    by_term, raw = info["episode_reward_by_term"], info["episode_reward_terms"]
    assert sum(by_term.values()) == pytest.approx(total, abs=1e-6)
    weights = env.reward_weights.to_dict()
    assert all(by_term[k] == pytest.approx(weights[k] * raw[k], abs=1e-6) for k in raw)
    assert by_term["step"] == pytest.approx(-0.5 * raw["step"]) and raw["step"] != 0
