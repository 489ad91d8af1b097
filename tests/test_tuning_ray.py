"""Tuning studies whose workers are Ray tasks (``run_study(..., executor="ray")``, ``--executor ray``) on a local Ray
instance: the study finishes its budget exactly; a Ray worker killed with SIGKILL in the middle of its trial leaves
that trial FAILED through the heartbeat, uncounted, and the study still finishes; bad combinations are refused
before any work starts. Every study trains the tiny config for a few hundred steps per trial."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import optuna
import pytest

from sb3_realm.executors import RayNotInstalledError, connect_ray, disconnect_ray
from sb3_realm.training.config import load_config
from sb3_realm.tuning import make_storage, run_study
from sb3_realm.tuning import script as script_module
from sb3_realm.tuning.study import StudyConfig
from sb3_realm.tuning.trials import is_killed

REPO = Path(__file__).resolve().parents[1]
TINY = ["--config", "configs/realm/tiny.yaml", "--total-steps", "512", "--eval-games", "2", "--eval-freq", "256",
        "--set", "checkpoint_freq=100000", "--no-progress", "--sampler-seed", "0"]
#: the process title of a Ray worker process while it runs a study's worker
TASK_TITLE = "ray::_ray_study_worker"


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """No ``RAY_ADDRESS`` (each study starts a Ray instance on this machine), and no Ray left running after the
    module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("RAY_ADDRESS", raising=False)
        yield
    if "ray" in sys.modules:
        disconnect_ray()


def _config(tmp_path: Path, steps: int = 512, storage: str | None = None, **kwargs) -> StudyConfig:
    base = load_config(REPO / "configs/realm/tiny.yaml", [f"total_timesteps={steps}", f"eval_freq={steps // 2}",
                                                         "eval_games=2", "checkpoint_freq=100000"])
    storage = storage or f"journal://{tmp_path}/study.log"
    return StudyConfig("rewards", base, "ray", storage, str(tmp_path / "out"), sampler_seed=0, poll_interval=0.5,
                       **kwargs)


def _trials(config: StudyConfig) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=config.name, storage=make_storage(config.storage, create=False)).trials


# ---------------------------------------------------------------------------------------------- refusals


def test_ray_workers_with_sqlite_are_refused_before_anything_is_written(tmp_path):
    pytest.importorskip("ray")
    config = _config(tmp_path, storage=f"sqlite:///{tmp_path}/study.db")
    with pytest.raises(ValueError, match="--executor ray with SQLite") as info:
        run_study(config, workers=1, progress=False, executor="ray")
    assert "postgresql://" in str(info.value) and "journal" in str(info.value) and "every machine" in str(info.value)
    assert not (tmp_path / "study.db").exists() and not (tmp_path / "out").exists()


def test_a_ray_address_without_the_ray_executor_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"--ray-address '10\.0\.0\.1:6379' is for --executor ray"):
        run_study(_config(tmp_path), workers=2, progress=False, ray_address="10.0.0.1:6379")
    out = tmp_path / "script"
    code = script_module.main("rewards", [*TINY, "--out", str(out), "--storage", f"{out}/study.log",
                                          "--ray-address", "10.0.0.1:6379"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("tune_rewards.py: error: --ray-address '10.0.0.1:6379' is for --executor ray")
    assert err.count("\n") == 1 and not out.exists()


def test_the_ray_executor_without_ray_installed_names_the_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(RayNotInstalledError):
        run_study(_config(tmp_path), workers=2, progress=False, executor="ray")
    out = tmp_path / "script"
    code = script_module.main("rewards", [*TINY, "--out", str(out), "--storage", f"{out}/study.log",
                                          "--executor", "ray"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "pip install" in err and "--executor processes" in err
    assert not out.exists()


def test_the_script_passes_the_executor_and_the_address_to_the_study(tmp_path, monkeypatch, capsys):
    seen = {}

    def fake_run_study(config, **kwargs):
        seen.update(kwargs)
        return {"trials": {}, "failed": []}

    monkeypatch.setattr(script_module, "run_study", fake_run_study)
    out = tmp_path / "script"
    assert script_module.main("rewards", [*TINY, "--out", str(out), "--storage", f"{out}/study.log", "--workers",
                                          "3", "--executor", "ray", "--ray-address", "head:6379"]) == 0
    assert (seen["executor"], seen["ray_address"], seen["workers"]) == ("ray", "head:6379", 3)
    assert script_module.main("rewards", [*TINY, "--out", str(out), "--storage", f"{out}/study.log"]) == 0
    assert (seen["executor"], seen["ray_address"]) == ("processes", None)
    capsys.readouterr()


# ---------------------------------------------------------------------------------------------- studies on Ray


def test_a_study_with_two_ray_workers_finishes_its_budget_exactly(tmp_path):
    ray = pytest.importorskip("ray")
    config = _config(tmp_path, n_trials=3)
    talk = io.StringIO()
    summary = run_study(config, workers=2, progress=True, talk=talk, executor="ray")
    assert not ray.is_initialized(), "the Ray instance the study started is stopped"
    assert summary["worker_exit_codes"] == [0, 0] and summary["worker_restarts"] == 0
    assert summary["trials"]["finished"] == 3
    counted = [t for t in _trials(config) if "surplus" not in t.user_attrs]
    assert [t.state.name for t in counted] == ["COMPLETE"] * 3
    lines = [line for line in talk.getvalue().splitlines() if line.startswith("trial ")]
    assert sorted(line.split()[1] for line in lines) == sorted(str(t.number) for t in counted)
    assert {line.split("(")[1].split()[0] for line in lines} == {"1/3", "2/3", "3/3"}


def _ray_worker_pids() -> set[int]:
    import psutil  # a dependency of Ray

    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if any(TASK_TITLE in part for part in proc.info["cmdline"] or []):
            pids.add(proc.info["pid"])
    return pids


def test_a_killed_ray_worker_fails_its_trial_and_the_study_still_finishes(tmp_path):
    """SIGKILL the Ray worker process of a running trial: the trial ends FAILED through the heartbeat (not counted,
    its parameters run again), a new worker takes the dead one's place, and the study finishes its budget."""
    ray = pytest.importorskip("ray")
    config = _config(tmp_path, steps=2048, n_trials=3, heartbeat_interval=1, grace_period=3)
    assert connect_ray(cpus=2)  # this test's instance: the study joins it and leaves it running
    result: dict = {}
    talk = io.StringIO()

    def study() -> None:
        try:
            result["summary"] = run_study(config, workers=2, progress=False, talk=talk, executor="ray")
        except BaseException as exc:  # raised again in the test's thread
            result["error"] = exc

    thread = threading.Thread(target=study, daemon=True)
    try:
        thread.start()
        victim = None
        deadline = time.monotonic() + 120
        while victim is None:
            assert thread.is_alive(), result
            assert time.monotonic() < deadline, "no trial started in a Ray worker"
            time.sleep(0.2)
            if not Path(config.storage[len("journal://"):]).is_file():
                continue
            running = [t for t in _trials(config) if t.state.name == "RUNNING" and "worker" in t.user_attrs]
            pids = _ray_worker_pids()
            for t in running:
                pid = int(t.user_attrs["worker"].rsplit(":", 1)[1])
                if pid in pids:
                    victim = (t.number, pid)
                    break
        number, pid = victim
        os.kill(pid, signal.SIGKILL)
        thread.join(timeout=300)
        assert not thread.is_alive(), "the study did not finish"
    finally:
        disconnect_ray()
        thread.join(timeout=60)
    if "error" in result:
        raise result["error"]
    summary = result["summary"]
    assert summary["trials"]["finished"] == 3 and summary["trials"]["killed"] == 1
    assert summary["worker_restarts"] == 1 and summary["worker_exit_codes"] == [0, 0]
    assert not ray.is_initialized()
    trials = _trials(config)
    killed = next(t for t in trials if t.number == number)
    assert killed.state.name == "FAIL" and is_killed(killed), "a dead worker's trial is failed, and not counted"
    assert sum(t.state.name == "COMPLETE" for t in trials) == 3
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == number]
    assert len(retries) == 1 and retries[0].params == killed.params
    assert "died" in talk.getvalue() and "takes its place" in talk.getvalue()
    assert json.loads((Path(config.out) / "study.json").read_text(encoding="utf-8"))["trials"]["finished"] == 3
