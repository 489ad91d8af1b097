"""Files from elsewhere never run code: a checkpoint whose JSON entries carry pickles that would create a marker file
loads with every entry rebuilt from plain data (or is refused, naming the entry and the opt-in), in every command that
reads one; a run's legacy ``vecnormalize.pkl`` likewise. With ``--trust-pickle`` the payload does run (the test's
payloads are real)."""

from __future__ import annotations

import base64
import contextlib
import json
import pickle
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import strip_feature_version

from sb3_realm.agents import SB3Policy, UntrustedCheckpointError
from sb3_realm.export import ExportError, build_submission

CLI = [sys.executable, "-m", "sb3_realm.cli"]


class Payload:
    """Unpickled, it creates ``marker`` (pickle calls ``open(marker, "w")``)."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def poison(model_zip: Path, out: Path, marker: Path, entries: tuple[str, ...]) -> Path:
    """A copy of ``model_zip`` whose JSON entries ``entries`` (existing or new) hold the payload."""
    with zipfile.ZipFile(model_zip) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    blob = base64.b64encode(pickle.dumps(Payload(marker))).decode()
    for entry in entries:  # an entry's readable fields kept, its pickle swapped
        old = data.get(entry)
        data[entry] = {**(old if isinstance(old, dict) else {":type:": "<class 'builtins.object'>"}),
                       ":serialized:": blob}
    members["data"] = json.dumps(data).encode()
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return out


REBUILT = ("lr_schedule", "policy_kwargs", "observation_space", "clip_range", "policy_class", "_last_obs")


@pytest.fixture()
def lone(models, tmp_path) -> Path:
    """The small PPO model alone in a folder (no config.yaml beside it): its recorded config describes it."""
    target = tmp_path / "mail" / "final_model.zip"
    target.parent.mkdir()
    shutil.copy(models["ppo"], target)
    return target


def test_rebuildable_entries_are_replaced_never_unpickled(lone, tmp_path):
    marker = tmp_path / "marker"
    bad = poison(lone, tmp_path / "in" / "model.zip", marker, REBUILT)
    policy = SB3Policy(bad)
    assert policy.model.observation_space == SB3Policy(lone).model.observation_space
    build_submission(bad, tmp_path / "sub")
    assert not marker.exists()
    with contextlib.suppress(Exception):  # the opt-in runs the file's pickles (what they hold then breaks the load)
        SB3Policy(bad, trust_pickle=True)
    assert marker.exists()  # the payload is real


def test_an_entry_that_cannot_be_rebuilt_is_refused_by_name(lone, tmp_path):
    marker = tmp_path / "marker"
    bad = poison(lone, tmp_path / "in" / "model.zip", marker, ("lr_schedule", "my_hook"))
    with pytest.raises(UntrustedCheckpointError, match=r"pickled entry 'my_hook'.*--trust-pickle"):
        SB3Policy(bad)
    with pytest.raises(ExportError, match="my_hook"):
        build_submission(bad, tmp_path / "sub")
    assert not marker.exists() and not (tmp_path / "sub").exists()


def test_a_checkpoint_with_no_config_anywhere_is_refused(lone, tmp_path):
    marker = tmp_path / "marker"
    bad = poison(strip_feature_version(lone, tmp_path / "old.zip"), tmp_path / "in" / "model.zip", marker,
                 ("lr_schedule",))
    with pytest.raises(UntrustedCheckpointError, match=r"no run config to rebuild them from.*--trust-pickle"):
        SB3Policy(bad)
    assert not marker.exists()


@pytest.mark.parametrize("command", [
    ["eval", "{model}", "--games", "1", "--max-step", "20", "--no-yardstick"],
    ["replay", "{model}", "--out", "{tmp}/episode.gif", "--usr-conf", '{{"max_step": 30}}'],
    ["build-submission", "{model}", "--out", "{tmp}/upload"],
])
def test_commands_never_unpickle_a_checkpoints_entries(lone, tmp_path, command):
    marker = tmp_path / "marker"
    rebuilt = poison(lone, tmp_path / "a" / "model.zip", marker, REBUILT)
    unknown = poison(lone, tmp_path / "b" / "model.zip", marker, ("lr_schedule", "my_hook"))
    for model, code in ((rebuilt, 0), (unknown, 2)):
        args = [a.format(model=model, tmp=tmp_path / model.parent.name) for a in command]
        out = subprocess.run([*CLI, *args], capture_output=True, text=True)
        assert out.returncode == code, out.stderr[-2000:]
        assert not marker.exists(), f"{args} ran the file's pickle"
        if code:
            assert "my_hook" in out.stderr and "--trust-pickle" in out.stderr and "Traceback" not in out.stderr
    args = [a.format(model=unknown, tmp=tmp_path / "trusted") for a in command]
    subprocess.run([*CLI, *args, "--trust-pickle"], capture_output=True, text=True)
    assert marker.exists()  # the opt-in is what lets it run


def test_resume_never_unpickles_a_checkpoint_or_its_statistics(tmp_path):
    """``train --resume``: a checkpoint's poisoned entries are rebuilt; an older run's ``vecnormalize.pkl`` (a pickle)
    is refused without the opt-in, before anything is written; the run's own statistics are plain JSON."""
    from stable_baselines3.common.vec_env import VecNormalize

    from sb3_realm.training import load_config, train
    from sb3_realm.training.run import make_vec_env

    run = tmp_path / "run"
    overrides = ["env.map_name=small", "env.n_envs=2", "algo.hyperparams.n_steps=32", "algo.hyperparams.batch_size=64",
                 "eval_freq=0", "progress_bar=false", "checkpoint_freq=64", "env.normalize_reward=true",
                 f"out={json.dumps(str(run))}", "total_timesteps=64"]
    train(load_config("configs/realm/tiny.yaml", overrides))
    (ckpt,) = sorted((run / "checkpoints").iterdir())
    assert (ckpt / "vecnormalize.json").is_file() and not (ckpt / "vecnormalize.pkl").exists()
    marker = tmp_path / "marker"
    poison(ckpt / "model.zip", ckpt / "model.zip", marker, REBUILT)
    resumed = subprocess.run([*CLI, "train", "--resume", str(run), "--total-steps", "128", "--no-progress"],
                             capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert not marker.exists()
    (ckpt,) = sorted((run / "checkpoints").iterdir())[-1:]
    (ckpt / "vecnormalize.json").unlink()  # as a run from before the statistics were plain numbers
    venv = VecNormalize(make_vec_env(load_config(run / "config.yaml").env, 0, game="realm"), norm_obs=False)
    venv.__dict__["payload"] = Payload(marker)  # what a crafted file could carry
    venv.save(str(ckpt / "vecnormalize.pkl"))
    before = sorted(p.name for p in run.rglob("*"))
    refused = subprocess.run([*CLI, "train", "--resume", str(run), "--total-steps", "192", "--no-progress"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "vecnormalize.pkl" in refused.stderr and "--trust-pickle" in refused.stderr
    assert "Traceback" not in refused.stderr and not marker.exists()
    assert sorted(p.name for p in run.rglob("*")) == before  # refused before anything was written
    subprocess.run([*CLI, "train", "--resume", str(run), "--total-steps", "192", "--no-progress", "--trust-pickle"],
                   capture_output=True, text=True)
    assert marker.exists()
