"""A small learning check: PPO with the recommended stack learns to win the 32 x 32 map (slow: pytest -m slow)."""

from __future__ import annotations

import pytest
import torch

from sb3_realm.agents import ModelPolicy, play_episode
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.training.config import load_config
from sb3_realm.training.run import build_model, make_vec_env


@pytest.mark.slow
def test_ppo_learns_the_small_map():
    torch.set_num_threads(1)
    config = load_config("configs/realm/tiny.yaml",
                         ["env.usr_conf={treasure_random: 0, treasure_id: [4], max_step: 200}", "env.n_envs=8"])
    venv = make_vec_env(config.env, 0, game=config.game)
    model = build_model(config, venv)
    env = RealmEnv(**config.env.env_kwargs())

    def sampled_wins() -> int:
        return sum(play_episode(env, ModelPolicy(model, deterministic=False), seed)["win"] for seed in range(10))

    before = sampled_wins()
    model.learn(98_304)
    venv.close()
    after = sampled_wins()
    assert before <= 2, "the untrained policy should rarely win"
    assert after >= 8, f"PPO won only {after}/10 games after 98k steps"
