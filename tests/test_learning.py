"""A small learning check: PPO with the recommended stack learns to win the 32 x 32 map (slow: pytest -m slow)."""

from __future__ import annotations

import pytest
import torch

from sb3_realm.config import load_config
from sb3_realm.envs import RealmEnv
from sb3_realm.policies import algorithm_class
from sb3_realm.train import _hyperparams, make_vec_env, policy_kwargs, policy_name


@pytest.mark.slow
def test_ppo_learns_the_small_map():
    torch.set_num_threads(1)
    config = load_config("configs/tiny.yaml", ["env.usr_conf={treasure_random: 0, treasure_id: [4], max_step: 200}",
                                               "env.n_envs=8"])
    venv = make_vec_env(config.env, 0)
    model = algorithm_class("ppo")(policy_name(config), venv, policy_kwargs=policy_kwargs(config), seed=0,
                                   **_hyperparams(config))
    env = RealmEnv(**config.env.env_kwargs())

    def sampled_wins() -> int:
        wins = 0
        for seed in range(10):
            obs, _ = env.reset(seed=seed)
            done, info = False, {}
            while not done:
                action, _ = model.predict(obs, deterministic=False)
                obs, _, terminated, truncated, info = env.step(int(action))
                done = terminated or truncated
            wins += info["win"]
        return wins

    before = sampled_wins()
    model.learn(49_152)
    venv.close()
    after = sampled_wins()
    assert before <= 2, "the untrained policy should rarely win"
    assert after >= 8, f"PPO won only {after}/10 games after 49k steps"
