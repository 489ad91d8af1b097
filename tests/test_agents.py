"""SB3 checkpoints of each algorithm load and play through the evaluator, deterministically.

The fixture's models are saved by plain SB3, with no run config: as a user's own files, they load with
``trust_pickle=True``."""

from __future__ import annotations

import numpy as np
import pytest

from sb3_realm.agents import SB3Policy
from sb3_realm.evaluation import evaluate
from sb3_realm.games.realm import features
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.models.algorithms import algorithm_class, detect_algorithm

ALGOS = {"ppo": "MultiInputPolicy", "maskable_ppo": "MultiInputPolicy", "recurrent_ppo": "MultiInputLstmPolicy"}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    out = {}
    for algo, policy in ALGOS.items():
        kwargs = {"n_steps": 32, "batch_size": 32, "n_epochs": 1, "seed": 0, "verbose": 0}
        model = algorithm_class(algo)(policy, RealmEnv(map_name="small"), **kwargs)
        model.learn(32)
        model.feature_version = features.FEATURE_VERSION  # trained here on the current features
        path = tmp_path_factory.mktemp(algo) / "model.zip"
        model.save(path)
        out[algo] = path
    return out


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_detect_algorithm(checkpoints, algo):
    assert detect_algorithm(checkpoints[algo]) == algo


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_checkpoint_plays_deterministically_through_evaluator(checkpoints, algo):
    kw = {"protocol": "custom", "custom": [[3, 4, 5]], "max_step": 60, "yardstick": False,
          "env_kwargs": {"map_name": "small"}, "trust_pickle": True}
    a = evaluate(str(checkpoints[algo]), **kw)
    b = evaluate(str(checkpoints[algo]), **kw)
    assert a.games[0].steps == b.games[0].steps and a.games[0].score == b.games[0].score
    assert a.policy == "model.zip"


def test_maskable_policy_respects_masks(checkpoints):
    env = RealmEnv(map_name="small")
    policy = SB3Policy(checkpoints["maskable_ppo"], trust_pickle=True)
    obs, _ = env.reset(seed=0)
    policy.reset(env)
    env.step(8)  # spend the flash: flashes are now masked
    obs = env._obs()
    for _ in range(30):
        a = policy.act(env, obs)
        assert a < 8
        obs, *_ = env.step(a)


def test_recurrent_policy_carries_and_resets_state(checkpoints):
    env = RealmEnv(map_name="small")
    policy = SB3Policy(checkpoints["recurrent_ppo"], trust_pickle=True)
    obs, _ = env.reset(seed=0)
    policy.reset(env)
    policy.act(env, obs)
    assert policy._state is not None and not policy._start.any()
    first = [np.copy(s) for s in policy._state]
    policy.act(env, obs)
    assert any(not np.array_equal(x, y) for x, y in zip(first, policy._state, strict=True))
    policy.reset(env)
    assert policy._state is None and policy._start.all()


def test_frame_stacked_checkpoint_matches_vec_frame_stack(tmp_path):
    """A model trained on VecFrameStack observations acts the same through SB3Policy's own stacking."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    venv = VecFrameStack(DummyVecEnv([lambda: RealmEnv(map_name="small", max_step=40)]), n_stack=3)
    model = PPO("MultiInputPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=0)
    model.learn(32)
    (tmp_path / "config.yaml").write_text("env: {frame_stack: 3}\n")
    model.save(tmp_path / "model.zip")
    policy = SB3Policy(tmp_path / "model.zip")
    assert policy.frame_stack == 3
    env = RealmEnv(map_name="small", max_step=40)
    venv.seed(5)
    stacked = venv.reset()
    obs, _ = env.reset(seed=5)
    policy.reset(env)
    for _ in range(25):
        ours = policy.model_input(obs)  # (1, ...) batch, stacked
        for key in ours:
            assert np.array_equal(ours[key][0], stacked[key][0])
        action, _ = model.predict(stacked, deterministic=True)
        stacked, _, done, _ = venv.step(action)
        obs, _, te, tr, _ = env.step(int(action[0]))
        assert not done[0] and not (te or tr)


@pytest.mark.parametrize("algo", ["ppo", "maskable_ppo"])
def test_a_checkpoint_acts_as_its_model_predicts(checkpoints, algo):
    """The policy's own argmax (feed-forward models skip ``predict``'s per-call overhead) is ``predict``'s action,
    masks included, at every state of a game; after a training-mode switch too."""
    env = RealmEnv(map_name="small")
    policy = SB3Policy(checkpoints[algo], trust_pickle=True)
    model = algorithm_class(algo).load(checkpoints[algo])
    env.reset(seed=3)
    policy.reset(env)
    obs, *_ = env.step(8)  # spend the flash: MaskablePPO's masks now forbid the flashes
    for step in range(40):
        if step == 20:
            policy.model.policy.set_training_mode(True)  # as a model in training would be between two calls
        masks = {"action_masks": env.action_masks()} if algo == "maskable_ppo" else {}
        expected, _ = model.predict(obs, deterministic=True, **masks)
        assert policy.act(env, obs) == int(expected)
        assert not policy.model.policy.training
        obs, _, terminated, truncated, _ = env.step(int(expected))
        if terminated or truncated:
            break
