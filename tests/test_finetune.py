"""RL from a trained model (``train --init-from``): exact weights, refusals of other models, the critic's warm start
and the anchor toward the initial policy (a plain SB3 checkpoint that packages)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import strip_feature_version

from sb3_realm.models.algorithms import algorithm_class
from sb3_realm.training.config import load_config
from sb3_realm.training.finetune import AnchoredPPO, load_initial_weights, warm_start_value
from sb3_realm.training.run import INIT_MODEL, build_model, make_vec_env, train

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = ["total_timesteps=512", "checkpoint_freq=512", "eval_freq=0", "progress_bar=false"]


def tiny(tmp_path: Path, name: str, extra: tuple = ()):
    return load_config(REPO / "configs/realm/tiny.yaml", [*TINY, f"out={json.dumps(str(tmp_path / name))}", *extra])


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:
    """A PPO and a MaskablePPO model of the tiny config, each trained for 512 steps."""
    folder = tmp_path_factory.mktemp("trained")
    out = {}
    for algo in ("ppo", "maskable_ppo"):
        _, run_dir = train(tiny(folder, algo, (f"algo.name={algo}",)))
        out[algo] = run_dir / "final_model.zip"
    return out


def observations(config, n: int = 64) -> dict:
    venv = make_vec_env(config.env, seed=3, n_envs=1, game=config.game)
    obs, batch = venv.reset(), []
    for step in range(n):
        batch.append({k: v[0] for k, v in obs.items()})
        obs, *_ = venv.step(np.array([step % 8]))
    venv.close()
    return {k: np.stack([o[k] for o in batch]) for k in batch[0]}


def test_init_from_loads_the_weights_exactly(trained, tmp_path):
    source = algorithm_class("ppo").load(trained["ppo"])
    config = tiny(tmp_path, "new", ("seed=7",))
    model = build_model(config, make_vec_env(config.env, seed=7, game=config.game))
    obs = observations(config)
    assert not np.array_equal(model.predict(obs, deterministic=True)[0], source.predict(obs, deterministic=True)[0]) \
        or not all(torch.equal(a, b) for a, b in zip(model.policy.state_dict().values(),
                                                     source.policy.state_dict().values(), strict=True))
    load_initial_weights(model, trained["ppo"])
    for key, value in source.policy.state_dict().items():
        assert torch.equal(model.policy.state_dict()[key], value), key
    assert np.array_equal(model.predict(obs, deterministic=True)[0], source.predict(obs, deterministic=True)[0])
    with torch.no_grad():
        batch, _ = model.policy.obs_to_tensor(obs)
        assert torch.equal(model.policy.predict_values(batch), source.policy.predict_values(batch))
    assert model.num_timesteps == 0 and not model.policy.optimizer.state_dict()["state"]  # a fresh optimizer


def test_cli_train_init_from_records_where_it_started(trained, tmp_path):
    out = tmp_path / "fine"
    run = subprocess.run([*CLI, "train", "--config", "configs/realm/tiny.yaml", "--init-from", str(trained["ppo"]),
                          "--out", str(out), "--total-steps", "256", "--set", "eval_freq=100000", "--set",
                          "eval_games=2", "--set", "algo.hyperparams.learning_rate=0.00001", "--no-progress"],
                         capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    config = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    assert config["finetune"]["init_from"] == str(trained["ppo"])
    assert (out / INIT_MODEL).read_bytes() == trained["ppo"].read_bytes()
    model = algorithm_class("ppo").load(out / "final_model.zip")
    assert model.num_timesteps == 512  # counted from 0: one rollout of 4 envs x 128 steps
    assert model.init_from == str(trained["ppo"])
    assert model.learning_rate == pytest.approx(1e-5)  # the new config's hyperparameters
    # the starting model is evaluated before any update: it stays the best model until training beats it
    history = json.loads((out / "eval.json").read_text(encoding="utf-8"))
    assert [h["timesteps"] for h in history] == [0] and history[0]["new_best"] and history[0]["wall_s"] >= 0
    best = algorithm_class("ppo").load(out / "best_model.zip")
    source = algorithm_class("ppo").load(trained["ppo"])
    for key, value in source.policy.state_dict().items():
        assert torch.equal(best.policy.state_dict()[key], value), key


@pytest.mark.parametrize("model, extra, match", [
    ("maskable_ppo", (), r"is a maskable_ppo model and the config trains ppo"),
    ("ppo", ("algo.net_arch={pi: [64], vf: [32]}",), r"its network is not the config's \(.*other shapes"),
    ("ppo", ("algo.extractor_kwargs={features_dim: 32}",), r"its network is not the config's"),
    ("ppo", ("env.frame_stack=2", "algo.extractor=default"), r"reads the observation .* this config's env gives"),
    ("legacy", (), r"trained on features version 1"),
    ("missing", (), r"is not a file"),
    ("not_a_model", (), r"is not a Stable-Baselines3 checkpoint"),
])
def test_init_from_refuses_other_models_before_writing(trained, tmp_path, model, extra, match):
    if model == "legacy":
        path = strip_feature_version(trained["ppo"], tmp_path / "legacy.zip")
    elif model == "missing":
        path = tmp_path / "nowhere.zip"
    elif model == "not_a_model":
        path = tmp_path / "junk.zip"
        path.write_bytes(b"not a zip")
    else:
        path = trained[model]
    config = tiny(tmp_path, "run", (f"finetune.init_from={json.dumps(str(path))}", *extra))
    with pytest.raises(ValueError, match=match):
        train(config)
    assert not (tmp_path / "run").exists()


def test_warm_start_and_anchor_need_a_model(tmp_path):
    with pytest.raises(ValueError, match=r"act on a trained model: set finetune.init_from"):
        tiny(tmp_path, "run", ("finetune.warm_start_games=4",))
    with pytest.raises(ValueError, match=r"finetune.anchor_coef = -1.0 must be >= 0"):
        tiny(tmp_path, "run", ("finetune.init_from=x.zip", "finetune.anchor_coef=-1"))


def test_warm_start_fits_the_critic_and_leaves_the_actor(trained, tmp_path):
    # a time cost alone: a state's return is set by the steps left until max_step, which the critic can learn
    time_cost = "{treasure: 0, end: 0, step: -0.01, bump: 0, flash_fail: 0, buff: 0, progress: 0, revisit: 0, " \
                "missed_treasure: 0, timeout: 0}"
    config = tiny(tmp_path, "ws", ("env.usr_conf={treasure_num: 2, max_step: 120}", f"env.reward_weights={time_cost}"))
    venv = make_vec_env(config.env, seed=0, game=config.game)
    model = build_model(config, venv)
    load_initial_weights(model, trained["ppo"])
    model.policy.value_net.reset_parameters()  # an untrained critic, as after behaviour cloning
    obs = observations(config)
    actor = {k: v.clone() for k, v in model.policy.state_dict().items() if "value" not in k}
    probs = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0]).distribution.probs.detach()
    stats = warm_start_value(model, venv, 10, epochs=30, learning_rate=3e-3)
    assert stats["games"] == 10 and stats["held_out_states"] > 0
    assert stats["value_loss_after"] < 0.5 * stats["value_loss_before"]
    for key, value in actor.items():
        assert torch.equal(model.policy.state_dict()[key], value), key
    after = model.policy.get_distribution(model.policy.obs_to_tensor(obs)[0]).distribution.probs.detach()
    assert torch.equal(probs, after)
    venv.close()


def _kl_to(model, reference, obs) -> float:
    with torch.no_grad():
        batch, _ = model.policy.obs_to_tensor(obs)
        ref = reference.policy.get_distribution(batch).distribution
        cur = model.policy.get_distribution(batch).distribution
        return float(torch.distributions.kl_divergence(ref, cur).mean())


def test_the_anchor_keeps_the_policy_near_its_start_and_saves_a_plain_model(trained, tmp_path):
    fast = ("algo.hyperparams={n_steps: 128, batch_size: 256, n_epochs: 4, learning_rate: 0.003}",
            "total_timesteps=1024", f"finetune.init_from={json.dumps(str(trained['ppo']))}")
    free, _free_dir = train(tiny(tmp_path, "free", fast))
    anchored, run_dir = train(tiny(tmp_path, "anchored", (*fast, "finetune.anchor_coef=1.0",
                                                          "finetune.anchor_epochs=4")))
    assert isinstance(anchored, AnchoredPPO)
    source = algorithm_class("ppo").load(trained["ppo"])
    obs = observations(tiny(tmp_path, "obs"))
    assert _kl_to(anchored, source, obs) < 0.5 * _kl_to(free, source, obs)
    plain = algorithm_class("ppo").load(run_dir / "final_model.zip")  # the plain SB3 class reads it
    assert type(plain) is algorithm_class("ppo") and getattr(plain, "reference", None) is None
    assert np.array_equal(plain.predict(obs, deterministic=True)[0], anchored.predict(obs, deterministic=True)[0])
    out = tmp_path / "sub"
    run = subprocess.run([*CLI, "build-submission", str(run_dir / "final_model.zip"), "--out", str(out), "--check",
                          "--check-games", "2", "--check-states", "300", "--check-max-step", "80"],
                         capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["check"]["ok"]


def test_an_anchored_maskable_run_resumes_with_its_reference(trained, tmp_path):
    extra = ("algo.name=maskable_ppo", f"finetune.init_from={json.dumps(str(trained['maskable_ppo']))}",
             "finetune.anchor_coef=0.5", "finetune.warm_start_games=2")
    _model, run_dir = train(tiny(tmp_path, "m", extra))
    assert json.loads((run_dir / "warm_start.json").read_text(encoding="utf-8"))["games"] == 2
    (run_dir / INIT_MODEL).rename(run_dir / "moved.zip")
    config = load_config(run_dir / "config.yaml", ["total_timesteps=1024"])
    with pytest.raises(ValueError, match="needs the model the run started from"):
        train(config, resume=run_dir)
    (run_dir / "moved.zip").rename(run_dir / INIT_MODEL)
    resumed, _ = train(config, resume=run_dir)
    assert resumed.num_timesteps == 1024 and resumed.reference is not None
    source = algorithm_class("maskable_ppo").load(trained["maskable_ppo"])
    for key, value in source.policy.state_dict().items():
        assert torch.equal(resumed.reference.state_dict()[key], value), key


def test_init_from_a_recurrent_model(tmp_path):
    extra = ("algo.name=recurrent_ppo", "algo.policy_kwargs={lstm_hidden_size: 32}")
    source_config = tiny(tmp_path, "src", (*extra, "seed=1"))
    source = build_model(source_config, make_vec_env(source_config.env, seed=1, game=source_config.game))
    source.save(tmp_path / "lstm.zip")
    config = tiny(tmp_path, "run", (*extra, f"finetune.init_from={json.dumps(str(tmp_path / 'lstm.zip'))}"))
    model, run_dir = train(config)  # one rollout of PPO from the loaded weights
    assert (run_dir / INIT_MODEL).is_file() and model.num_timesteps == 512
    fresh = build_model(config, make_vec_env(config.env, seed=0, game=config.game))
    load_initial_weights(fresh, tmp_path / "lstm.zip")
    for key, value in source.policy.state_dict().items():
        assert torch.equal(fresh.policy.state_dict()[key], value), key
    with pytest.raises(ValueError, match="is a recurrent_ppo model and the config trains ppo"):
        train(tiny(tmp_path, "other", (f"finetune.init_from={json.dumps(str(tmp_path / 'lstm.zip'))}",)))


def test_the_shipped_finetune_config_needs_a_model(trained):
    with pytest.raises(ValueError, match=r"set finetune.init_from \(or --init-from MODEL.zip\)"):
        load_config(REPO / "configs/realm/finetune.yaml")
    config = load_config(REPO / "configs/realm/finetune.yaml",
                         [f"finetune.init_from={json.dumps(str(trained['ppo']))}"])
    assert config.finetune.anchor_coef > 0 and config.finetune.warm_start_games > 0 and config.eval_games == 1000
