"""Training runs end to end: the CLI, checkpoints, and resume after a real SIGKILL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from helpers import make_legacy_run

from sb3_realm.games.realm import features
from sb3_realm.models.algorithms import algorithm_class
from sb3_realm.models.saved import FeatureVersionWarning, model_feature_version
from sb3_realm.training.checkpoints import latest_checkpoint, list_checkpoints
from sb3_realm.training.config import load_config
from sb3_realm.training.run import resume_config, train

CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = ["--config", "configs/realm/tiny.yaml", "--no-progress"]


def test_the_progress_bar_of_train_has_its_dependencies():
    # `sb3-realm train` shows SB3's progress bar by default; it needs tqdm and rich, which the package must install
    from stable_baselines3.common.callbacks import ProgressBarCallback

    ProgressBarCallback()  # ImportError when either is missing


def test_train_python_api_writes_a_complete_run(tmp_path):
    config = load_config("configs/realm/tiny.yaml", [f"out={tmp_path / 'run'}", "total_timesteps=1024",
                                               "checkpoint_freq=512", "eval_freq=512", "eval_games=2"])
    model, run_dir = train(config)
    assert model.num_timesteps == 1024
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.yaml", "checkpoints", "tb", "final_model.zip", "best_model.zip", "eval.json"} <= names
    assert load_config(run_dir / "config.yaml") == config
    ckpts = list_checkpoints(run_dir / "checkpoints")
    assert [p.name for p in ckpts] == ["step_000000000512", "step_000000001024"]  # keep_checkpoints: 2
    assert not list((run_dir / "checkpoints").glob(".tmp-*"))
    with pytest.raises(ValueError, match=r"already holds a run \(config.yaml, .*checkpoints/\); .*use --resume"):
        train(config)


def _wait_for_checkpoint(folder: Path, proc: subprocess.Popen, timeout: float = 240.0) -> None:
    """Until a checkpoint after the first update (the first one, at 512 steps, precedes any update)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(list_checkpoints(folder)) >= 2 or any(p.name >= "step_000000001024" for p in list_checkpoints(folder)):
            return
        if proc.poll() is not None:
            raise AssertionError(f"training exited early: {proc.stderr.read()}")
        time.sleep(0.05)
    raise AssertionError("no checkpoint appeared")


@pytest.mark.parametrize("extra_delay", [0.0, 0.7])
def test_resume_after_sigkill(tmp_path, extra_delay):
    run = tmp_path / "run"
    total = 6144
    args = [*CLI, "train", *TINY, "--out", str(run), "--total-steps", str(total), "--set", "checkpoint_freq=512",
            "--set", "eval_freq=0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_checkpoint(run / "checkpoints", proc)
        time.sleep(extra_delay)  # kill at another moment, possibly in the middle of writing a checkpoint
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    found = latest_checkpoint(run / "checkpoints")
    assert found is not None
    ckpt, state = found
    model = algorithm_class("ppo").load(ckpt / "model.zip")
    assert model.num_timesteps == state["num_timesteps"] > 0
    assert model.policy.optimizer.state_dict()["state"], "the optimizer state was not saved"
    out = subprocess.run([*CLI, "train", "--resume", str(run), "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["num_timesteps"] == total
    final = algorithm_class("ppo").load(run / "final_model.zip")
    assert final.num_timesteps == total
    for ckpt in list_checkpoints(run / "checkpoints"):
        assert (ckpt / "state.json").is_file() and (ckpt / "model.zip").is_file()


def test_resume_errors(tmp_path):
    out = subprocess.run([*CLI, "train", "--resume", str(tmp_path)], capture_output=True, text=True)
    assert out.returncode == 2 and "no config.yaml there" in out.stderr
    out = subprocess.run([*CLI, "train", "--config", "configs/realm/tiny.yaml", "--set", "algo.name=dqn"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "algo.name = 'dqn'" in out.stderr and "Traceback" not in out.stderr


def test_feature_version_is_recorded_and_an_old_run_warns_on_resume(tmp_path):
    config = load_config("configs/realm/tiny.yaml", [f"out={tmp_path / 'run'}", "total_timesteps=512",
                                               "checkpoint_freq=512", "eval_freq=0", "progress_bar=false"])
    _, run_dir = train(config)
    assert yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))["feature_version"] == \
        features.FEATURE_VERSION
    ckpt, state = latest_checkpoint(run_dir / "checkpoints")
    assert state["feature_version"] == features.FEATURE_VERSION
    assert model_feature_version(run_dir / "final_model.zip") == model_feature_version(ckpt / "model.zip") == \
        features.FEATURE_VERSION
    # the same run as one from before versions were recorded: nothing in the models, null in config.yaml
    make_legacy_run(run_dir)
    assert model_feature_version(ckpt / "model.zip") == "1"
    with pytest.warns(FeatureVersionWarning, match=r"trained on features version 1.*retrain"):
        model, _ = train(resume_config(run_dir, ["total_timesteps=1024"]), resume=run_dir)
    assert model.num_timesteps == 1024
    assert model_feature_version(run_dir / "final_model.zip") == "1"  # still what it was trained on


def test_a_new_run_refuses_another_feature_version(tmp_path):
    config = load_config("configs/realm/tiny.yaml", [f"out={tmp_path / 'run'}", "feature_version='1'"])
    with pytest.raises(ValueError, match=r"feature_version = '1' in the config.*remove feature_version"):
        train(config)
    assert not (tmp_path / "run").exists()


def test_resume_warning_is_one_line_from_the_cli(tmp_path):
    run = tmp_path / "run"
    subprocess.run([*CLI, "train", *TINY, "--out", str(run), "--total-steps", "512", "--set", "eval_freq=0",
                    "--set", "checkpoint_freq=512"], check=True, capture_output=True)
    make_legacy_run(run)
    out = subprocess.run([*CLI, "train", "--resume", str(run), "--total-steps", "1024", "--no-progress"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "sb3-realm train: warning: " in out.stderr and "features version 1" in out.stderr
    assert "FeatureVersionWarning" not in out.stderr


def test_a_new_run_never_writes_over_a_run_or_into_the_current_folder(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="out = '' names no folder"):
        load_config("configs/realm/tiny.yaml", ["out=''"])
    tiny = Path("configs/realm/tiny.yaml").resolve()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "final_model.zip").write_bytes(b"my model")
    (tmp_path / "config.yaml").write_text("mine: 1\n", encoding="utf-8")
    config = load_config(tiny, ["out=.", "total_timesteps=512", "eval_freq=0"])
    with pytest.raises(ValueError, match=r"'\.' already holds a run \(config.yaml, final_model.zip\)"):
        train(config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "final_model.zip"]
    assert (tmp_path / "final_model.zip").read_bytes() == b"my model"
    assert (tmp_path / "config.yaml").read_text(encoding="utf-8") == "mine: 1\n"


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_resume_applies_new_hyperparameters_and_refuses_a_new_network_leaving_the_run_as_it_was(tmp_path):
    config = load_config("configs/realm/tiny.yaml", [f"out={tmp_path / 'run'}", "total_timesteps=512",
                                               "checkpoint_freq=512", "eval_freq=0", "progress_bar=false"])
    _, run_dir = train(config)
    before = _snapshot(run_dir)
    for override in ("algo.net_arch={pi: [8], vf: [8]}", "algo.extractor=default", "algo.activation=relu",
                     "algo.extractor_kwargs={features_dim: 32}", "env.frame_stack=2", "algo.name=maskable_ppo"):
        key = override.split("=")[0]
        with pytest.raises(ValueError, match=f"cannot change {key} .*the run was left as it was"):
            train(resume_config(run_dir, ["total_timesteps=1024", override]), resume=run_dir)
        assert _snapshot(run_dir) == before, override
    out = subprocess.run([*CLI, "train", "--resume", str(run_dir), "--set", "env.frame_stack=2", "--no-progress"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "cannot change env.frame_stack" in out.stderr and "Traceback" not in out.stderr
    assert _snapshot(run_dir) == before
    model, _ = train(resume_config(run_dir, ["total_timesteps=1024", "algo.hyperparams.learning_rate=0.000123",
                                             "algo.hyperparams.n_epochs=1"]), resume=run_dir)
    assert model.num_timesteps == 1024 and model.n_epochs == 1
    assert model.lr_schedule(0.5) == pytest.approx(0.000123)
    assert model.policy.optimizer.param_groups[0]["lr"] == pytest.approx(0.000123)  # what the updates used
    recorded = load_config(run_dir / "config.yaml").algo.hyperparams
    assert recorded["learning_rate"] == 0.000123 and recorded["n_epochs"] == 1
    saved = algorithm_class("ppo").load(run_dir / "final_model.zip")
    assert saved.n_epochs == 1 and saved.learning_rate == pytest.approx(0.000123)


def test_a_cli_run_logs_route_images_and_its_config_to_tensorboard(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run = tmp_path / "run"
    out = subprocess.run([*CLI, "train", *TINY, "--out", str(run), "--total-steps", "1024", "--set", "eval_freq=512",
                          "--set", "eval_games=1", "--set", "checkpoint_freq=1024"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    images, hparams = [], {}
    for events in run.glob("tb/**/events.out.tfevents.*"):
        acc = EventAccumulator(str(events), size_guidance={"images": 0})
        acc.Reload()
        images += [e for tag in acc.Tags()["images"] if tag == "eval/route" for e in acc.Images(tag)]
        hparams.update(acc.PluginTagToContent("hparams"))
    assert len(images) == 1 and images[0].step == 1024  # the 2nd evaluation's (eval_route_every: 2)
    assert images[0].width > 100 and images[0].height > 100
    # the run's config as HParams (the HPARAMS tab compares runs by what they were trained with)
    assert any(b"algo.hyperparams.n_steps" in content for content in hparams.values()), list(hparams)
    none = load_config("configs/realm/tiny.yaml", ["eval_route_every=0"])
    assert none.eval_route_every == 0


def test_a_resumed_run_evaluates_and_saves_at_the_steps_of_an_uninterrupted_one(tmp_path):
    """Evaluations and checkpoints fall on the model's total timesteps: a run stopped after an evaluation that its last
    checkpoint predates, then resumed, lists each evaluation step once, the same steps as a run that never stopped."""
    common = ["eval_freq=256", "checkpoint_freq=384", "eval_games=2", "keep_checkpoints=10", "progress_bar=false",
              "env.map_name=small"]
    _whole, _ = train(load_config("configs/realm/tiny.yaml",
                                 [f"out={tmp_path / 'whole'}", "total_timesteps=1536", *common]))
    cut = tmp_path / "cut"
    train(load_config("configs/realm/tiny.yaml", [f"out={cut}", "total_timesteps=1024", *common]))
    for ckpt in list_checkpoints(cut / "checkpoints"):  # as killed after step 1024's evaluation, before its checkpoint
        if int(ckpt.name.split("_")[1]) > 768:
            shutil.rmtree(ckpt)
    (cut / "final_model.zip").unlink()
    train(resume_config(cut, ["total_timesteps=1536"]), resume=cut)
    steps = [[h["timesteps"] for h in json.loads((run / "eval.json").read_text(encoding="utf-8"))]
             for run in (tmp_path / "whole", cut)]
    assert steps[0] == steps[1] == [256, 512, 768, 1024, 1280, 1536]
    saved = [sorted(int(c.name.split("_")[1]) for c in list_checkpoints(run / "checkpoints"))
             for run in (tmp_path / "whole", cut)]
    assert saved[0] == saved[1]


def test_a_damaged_newest_checkpoint_is_named_and_the_final_model_kept_aside(tmp_path):
    """Resuming a finished run whose newest checkpoint is damaged: the warning names it and the one the run resumes
    from; the final model it had (trained beyond that one) is kept aside under a name that says so."""
    run = tmp_path / "run"
    done = subprocess.run([*CLI, "train", *TINY, "--out", str(run), "--total-steps", "1024", "--set",
                           "checkpoint_freq=512", "--set", "eval_freq=0"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    final = (run / "final_model.zip").read_bytes()
    newest = list_checkpoints(run / "checkpoints")[-1]
    (newest / "model.zip").write_bytes((newest / "model.zip").read_bytes()[:2000])
    out = subprocess.run([*CLI, "train", "--resume", str(run), "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert newest.name in out.stderr and "resuming from step_000000000512" in out.stderr
    assert "kept as final_model.step-1024.zip" in out.stderr and "Traceback" not in out.stderr
    assert (run / "final_model.step-1024.zip").read_bytes() == final and (run / "final_model.zip").is_file()
    again = subprocess.run([*CLI, "train", "--resume", str(run), "--no-progress"], capture_output=True, text=True)
    assert again.returncode == 0 and "kept as" not in again.stderr  # nothing lost this time: nothing set aside
