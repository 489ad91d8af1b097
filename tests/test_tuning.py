"""Optuna studies: search spaces, storages, and subprocess runs of the tuning scripts on SQLite, a journal file with
2 worker processes and a throwaway PostgreSQL server; a diverging (NaN) trial; a worker killed with SIGKILL; replaying
a stored trial with ``sb3-realm train --from-study``. Every study trains the tiny config for 512 steps per trial."""

from __future__ import annotations

import dataclasses
import glob
import importlib
import inspect
import io
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import optuna
import pytest
import yaml
from helpers import realm_result
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure

from sb3_realm import games
from sb3_realm.evaluation import EvalReport, protocol_configs
from sb3_realm.games.realm import features
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.rewards import RewardWeights
from sb3_realm.models.algorithms import algorithm_class
from sb3_realm.training.config import config_to_dict, load_config
from sb3_realm.tuning import (
    baseline_params,
    convert_hparams,
    convert_params,
    convert_rewards,
    make_storage,
    run_study,
    sample_params,
    storage_kind,
    trial_config,
)
from sb3_realm.tuning import script as script_module
from sb3_realm.tuning.objective import TrialEvalCallback, objective
from sb3_realm.tuning.study import StudyConfig, _check_budget, _optimize, _Surplus, open_study, study_counts
from sb3_realm.tuning.trials import SURPLUS_KEY, TrialLines, trial_line

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = ["--config", "configs/realm/tiny.yaml", "--total-steps", "512", "--eval-games", "2", "--eval-freq", "256",
        "--set", "checkpoint_freq=100000", "--no-progress", "--sampler-seed", "0"]
NAN_WEIGHTS = {"progress": 1e300}  # finite, but the shaped returns would overflow float32: refused up front
VALID_WEIGHTS = {"progress": 2.0}


def _script(kind: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, f"tuning/tune_{kind}.py", *args], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    if check:
        assert out.returncode == 0, out.stderr[-3000:]
    return out


def _trials(storage: str, name: str) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name=name, storage=make_storage(storage, create=False)).trials


def _but_out(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "out"}


def _scratch_trial():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study().ask()


# ---------------------------------------------------------------------------------------------- spaces
@pytest.mark.parametrize("config", ["configs/realm/ppo.yaml", "configs/realm/maskable_ppo.yaml",
                                    "configs/realm/recurrent_ppo.yaml"])
def test_hparam_space_converts_to_valid_configs(config):
    base = load_config(config)
    for _ in range(5):
        params = sample_params("hparams", _scratch_trial(), base)
        converted = convert_hparams(params, base)
        hp = converted.algo.hyperparams
        assert (hp["n_steps"] * base.env.n_envs) % hp["batch_size"] == 0
        assert 0.95 <= hp["gamma"] <= 0.999 and 1e-5 <= hp["learning_rate"] <= 3e-3
        assert ("lstm_hidden_size" in converted.algo.policy_kwargs) == (base.algo.name == "recurrent_ppo")
        assert converted.env == base.env  # only the algorithm changes
    # the config's own hyperparameters are a point of the space: converting them gives the config back
    first = baseline_params("hparams", base)
    assert first is not None
    again = convert_hparams(first, base)
    defaults = inspect.signature(algorithm_class(base.algo.name).__init__).parameters
    for key, value in again.algo.hyperparams.items():  # keys the config leaves out come back as SB3's defaults
        assert value == pytest.approx(base.algo.hyperparams.get(key, defaults[key].default)), key
    assert (again.algo.net_arch, again.algo.activation, again.algo.policy_kwargs, again.env) == \
        (base.algo.net_arch, base.algo.activation, base.algo.policy_kwargs, base.env)


def test_reward_space_defaults_and_curriculum():
    base = load_config("configs/realm/tiny.yaml")
    first = baseline_params("rewards", base)
    assert first == RewardWeights().to_dict()
    assert convert_rewards(first, base).env.reward_weights == RewardWeights().to_dict()
    params = sample_params("rewards", _scratch_trial(), base, curriculum=True)
    params.update(curriculum_treasures=1, curriculum_fraction=0.5)
    converted = convert_rewards(params, base)
    assert converted.curriculum == [{"usr_conf": {"treasure_num": 1}, "until_step": 2048},
                                    {"usr_conf": {"treasure_num": 3}}]
    assert convert_rewards({**params, "curriculum_fraction": 0.0}, base).curriculum == []
    with pytest.raises(ValueError, match=r"\['treasures'\] are not reward weights"):
        convert_rewards({"treasures": 1.0}, base)
    with pytest.raises(ValueError, match="n_minibatches = 3 does not divide the rollout of 1024"):
        convert_params("hparams", {"n_steps": 256, "n_minibatches": 3}, base)


def test_storage_errors(tmp_path):
    assert storage_kind("sqlite:///x.db") == "sqlite"
    assert storage_kind("journal:///tmp/x.log") == storage_kind("runs/x.log") == "journal"
    assert storage_kind("postgresql://u@h/db") == "rdb"
    with pytest.raises(ValueError, match=r"not a supported storage; use sqlite:///PATH.db"):
        storage_kind("redis://localhost")
    config = StudyConfig("rewards", load_config("configs/realm/tiny.yaml"), "s", f"sqlite:///{tmp_path}/s.db",
                         str(tmp_path))
    with pytest.raises(ValueError, match="SQLite is for one worker process; use --storage journal:///"):
        run_study(config, workers=2)
    with pytest.raises(ValueError, match="no study file at"):
        trial_config(f"sqlite:///{tmp_path}/missing.db", "s")


class _AlwaysPrune(optuna.pruners.BasePruner):
    def prune(self, study, trial) -> bool:
        return True


@pytest.mark.parametrize("mode", ["median", "wilcoxon"])
def test_pruner_stops_the_trial(tmp_path, mode):
    """The objective reports to the pruner and stops as soon as it says so: during training (one report per
    evaluation) or, for Wilcoxon, after the first held-out game of the final model."""
    base = load_config("configs/realm/tiny.yaml", ["total_timesteps=2048", "eval_freq=512", "eval_games=3",
                                              "checkpoint_freq=100000"])
    config = StudyConfig("rewards", base, "s", f"sqlite:///{tmp_path}/s.db", str(tmp_path), pruner=mode)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", pruner=_AlwaysPrune())
    study.optimize(lambda t: objective(t, config), n_trials=1)
    trial = study.trials[0]
    assert trial.state.name == "PRUNED" and "prune_reason" in trial.user_attrs
    evaluations = json.loads((tmp_path / "trials" / "trial_0000" / "eval.json").read_text())
    if mode == "median":  # stopped at the first evaluation: 512 steps, not 2048
        assert list(trial.intermediate_values) == [512] and len(evaluations) == 1
        assert algorithm_class("ppo").load(tmp_path / "trials" / "trial_0000" / "final_model.zip").num_timesteps == 512
    else:  # trained to the end, then stopped after one of the 3 games
        assert len(trial.intermediate_values) == 1 and set(trial.intermediate_values) <= {0, 1, 2}
        assert trial.user_attrs["partial_mean"] == next(iter(trial.intermediate_values.values()))


def test_a_trial_whose_training_ends_in_nan_is_pruned_with_its_reason(tmp_path, monkeypatch):
    """Training that fails with a NaN error (as SB3's distribution does on NaN logits) prunes the trial and records
    why; the study goes on."""
    objective_module = importlib.import_module("sb3_realm.tuning.objective")  # `tuning.objective` is the function

    def diverging(config, *args, **kwargs):
        raise ValueError("Expected parameter logits (Tensor of shape (64, 16)) of distribution Categorical to satisfy "
                         "the constraint IndependentConstraint(Real(), 1), but found invalid values: tensor([[nan]])")

    monkeypatch.setattr(objective_module, "train", diverging)
    base = load_config("configs/realm/tiny.yaml", ["total_timesteps=512", "checkpoint_freq=100000"])
    config = StudyConfig("rewards", base, "s", f"sqlite:///{tmp_path}/s.db", str(tmp_path))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.optimize(lambda t: objective(t, config), n_trials=1)
    trial = study.trials[0]
    assert trial.state.name == "PRUNED" and "nan" in trial.user_attrs["diverged"].lower()


# ---------------------------------------------------------------------------------------------- trial lines
TRIAL_LINE = re.compile(r"trial (\d+) (complete|pruned|diverged|failed) \((\d+)/(\d+) finished\): (?:(?:last )?score "
                        r"(-?[\d.]+), )?(?:best (-?[\d.]+) \(trial (\d+)\)|no complete trial yet), took \d+(?:\.\d)? "
                        r"(?:s|min), \d+(?:\.\d)? (?:s|min) in all")


def _trial_lines(text: str) -> list[re.Match]:
    found = [TRIAL_LINE.fullmatch(line) for line in text.splitlines() if line.startswith("trial ")]
    assert all(found), text
    return found


def _ended(number: int, state, value=None, minutes: float = 1.0, **kwargs) -> optuna.trial.FrozenTrial:
    start = datetime(2000, 1, 1) + timedelta(hours=number)
    trial = optuna.trial.create_trial(state=state, value=value, **kwargs)
    trial.number, trial.datetime_start, trial.datetime_complete = number, start, start + timedelta(minutes=minutes)
    return trial


def test_trial_lines_report_each_trial_the_budget_counts_once_with_the_best_so_far():
    state = optuna.trial.TrialState
    before = [_ended(0, state.COMPLETE, 50.0)]
    talk = io.StringIO()
    lines = TrialLines(talk, 6, before)
    lines.update(before)
    assert talk.getvalue() == ""  # finished before the command started: counted, not reported again
    later = [*before,
             _ended(1, state.PRUNED, intermediate_values={256: 12.0, 512: 20.04}, minutes=0.5),
             _ended(2, state.COMPLETE, 80.0, minutes=2.5),
             _ended(3, state.FAIL, user_attrs={SURPLUS_KEY: "budget filled"}),  # counts for nothing
             _ended(4, state.FAIL),  # a dead worker's (no fail_reason): retried, counts for nothing
             _ended(5, state.FAIL, user_attrs={"fail_reason": "ValueError: bad"}),
             _ended(6, state.PRUNED, user_attrs={"diverged": "seed 0: NaN"})]
    lines.update(later)
    lines.update(later)  # each trial once
    assert [re.sub(r", [\d.]+ (s|min) in all$", "", line) for line in talk.getvalue().splitlines()] == [
        "trial 1 pruned (2/6 finished): last score 20.0, best 50.0 (trial 0), took 30 s",
        "trial 2 complete (3/6 finished): score 80.0, best 80.0 (trial 2), took 2.5 min",
        "trial 5 failed (4/6 finished): best 80.0 (trial 2), took 1.0 min",
        "trial 6 diverged (5/6 finished): best 80.0 (trial 2), took 1.0 min"]
    first = _ended(7, state.PRUNED, intermediate_values={512: 3.0})
    assert trial_line(first, 1, 20, None, 754.0) == ("trial 7 pruned (1/20 finished): last score 3.0, no complete "
                                                    "trial yet, took 1.0 min, 12.6 min in all")


def test_the_script_prints_a_line_per_finished_trial(tmp_path, capsys):
    out = tmp_path / "study"
    assert script_module.main("rewards", [*TINY, "--n-trials", "2", "--out", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert json.loads(printed)["trials"]["finished"] == 2  # stdout keeps the summary alone
    trials = _trials(f"sqlite:///{out}/study.db", "rewards")
    lines = _trial_lines(err)
    assert [(int(m[1]), m[2], int(m[3]), int(m[4])) for m in lines] == [(0, "complete", 1, 2), (1, "complete", 2, 2)]
    for match, trial in zip(lines, trials, strict=True):
        assert float(match[5]) == round(trial.value, 1)
    best = max(trials, key=lambda t: t.value)
    assert (float(lines[-1][6]), int(lines[-1][7])) == (round(best.value, 1), best.number)


# ---------------------------------------------------------------------------------------------- studies
def test_sqlite_study_with_an_enqueued_trial_and_replay(tmp_path):
    """3 trials on SQLite: the defaults (trial 0), an enqueued reward weight (trial 1) and a sampled one; then the best
    trial replayed with ``sb3-realm train --from-study``. A weight whose rewards would overflow is refused before the
    study starts, naming it, with nothing written."""
    out = tmp_path / "study"
    refused = _script("rewards", *TINY, "--n-trials", "3", "--out", str(out), "--enqueue", json.dumps(NAN_WEIGHTS),
                      check=False)
    assert refused.returncode == 2 and "progress" in refused.stderr and "Traceback" not in refused.stderr
    assert not out.exists()
    storage = f"sqlite:///{out}/study.db"
    res = _script("rewards", *TINY, "--n-trials", "3", "--out", str(out), "--enqueue", json.dumps(VALID_WEIGHTS))
    summary = json.loads(res.stdout)
    assert summary["trials"]["finished"] == 3 and summary["trials"]["running"] == 0
    trials = _trials(storage, "rewards")
    states = [t.state.name for t in trials]
    assert states == ["COMPLETE", "COMPLETE", "COMPLETE"], states
    assert trials[0].params == RewardWeights().to_dict()  # the current defaults come first
    assert trials[1].params["progress"] == 2.0
    assert trials[2].value is not None and (out / "trials" / "trial_0002" / "tb").is_dir()
    # what optuna-dashboard shows: the objective's name, and each trial's win rate, treasures and run folder
    assert optuna.load_study(study_name="rewards", storage=storage).metric_names == [
        "mean competition score (held-out games)"]
    for t in trials:
        assert 0 <= t.user_attrs["win_rate"] <= 1 and 0 <= t.user_attrs["mean_treasures"] <= 3
        assert t.user_attrs["run_dir"] == str(out / "trials" / f"trial_{t.number:04d}")
    for name in ("best.yaml", "trials.csv", "study.json", "optimization_history.html", "param_importances.html",
                 "parallel_coordinate.html"):
        assert (out / name).is_file(), name
        if name.endswith(".html"):  # self-contained: plotly.js inside, no script from a CDN (offline machines)
            html = (out / name).read_text(encoding="utf-8")
            assert "Plotly.newPlot" in html and len(html) > 1_000_000
            assert not re.search(r"<script[^>]+src=[\"']https?://", html), name
    assert len((out / "trials.csv").read_text().strip().splitlines()) == 1 + 3
    # every complete trial's stored params rebuild the config it trained
    for t in trials:
        if t.state.name == "COMPLETE":
            config, number = trial_config(storage, "rewards", t.number)
            assert number == t.number and _but_out(config_to_dict(config)) == _but_out(t.user_attrs["config"])
    # the CLI replays the best trial: the same config as best.yaml (and as the trial's own), apart from `out`
    best = summary["best"]["number"]
    run = tmp_path / "replay"
    res = subprocess.run([*CLI, "train", "--from-study", storage, "rewards", "--out", str(run), "--no-progress"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    replayed = yaml.safe_load((run / "config.yaml").read_text())
    recorded = {"out": str(run), "feature_version": features.FEATURE_VERSION}  # what the run records of itself
    expected = {**yaml.safe_load((out / "best.yaml").read_text()), **recorded}
    assert replayed == expected
    assert replayed == {**trials[best].user_attrs["config"], **recorded}
    res = subprocess.run([*CLI, "train", "--from-study", storage, "rewards", "--trial", "9"], capture_output=True,
                         text=True, cwd=REPO)
    assert res.returncode == 2 and "--trial 9: study 'rewards' has trials 0..2" in res.stderr


@pytest.mark.processes
@pytest.mark.parametrize("method", [None, "spawn"])
def test_journal_study_with_two_worker_processes(tmp_path, monkeypatch, method):
    if method is not None:  # the start method Windows has: the workers import nothing from the script's __main__
        monkeypatch.setenv("SB3_REALM_START_METHOD", method)
    out = tmp_path / "study"
    storage = f"journal://{out}/study.log"
    res = _script("rewards", *TINY, "--n-trials", "4", "--out", str(out), "--storage", storage, "--workers", "2")
    summary = json.loads(res.stdout)
    assert summary["worker_exit_codes"] == [0, 0]
    trials = [t for t in _trials(storage, "rewards") if "surplus" not in t.user_attrs]
    assert summary["trials"]["finished"] == 4 and [t.state.name for t in trials] == ["COMPLETE"] * 4
    assert len({t.user_attrs["worker"] for t in trials}) == 2, "both worker processes ran trials"
    # the command reports every trial as it finishes, whichever worker ran it
    assert sorted(int(m[1]) for m in _trial_lines(res.stderr)) == sorted(t.number for t in trials)
    assert sorted(int(m[3]) for m in _trial_lines(res.stderr)) == [1, 2, 3, 4]
    # joining the finished study without --config uses the stored base config and runs nothing more
    res = _script("rewards", "--storage", storage, "--out", str(out), "--n-trials", "4", "--no-progress")
    assert json.loads(res.stdout)["trials"]["finished"] == 4


def test_hparam_study_with_the_wilcoxon_pruner(tmp_path):
    out = tmp_path / "study"
    res = _script("hparams", *TINY, "--eval-games", "3", "--n-trials", "2", "--out", str(out), "--pruner", "wilcoxon")
    assert json.loads(res.stdout)["trials"]["finished"] == 2
    for t in _trials(f"sqlite:///{out}/study.db", "hparams"):
        if t.state.name == "COMPLETE":  # one report per held-out game (the Wilcoxon pairs), the value is their mean
            assert sorted(t.intermediate_values) == [0, 1, 2]
            assert t.value == pytest.approx(sum(t.intermediate_values.values()) / 3)
        assert t.params["n_steps"] in (64, 128)  # 4 envs: one rollout fits the 512 steps of a trial


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used with Study.optimize")
@pytest.mark.processes
def test_racing_workers_keep_the_exact_budget(tmp_path, caplog):
    """Two workers that both saw one free slot each start a trial: the later-numbered one ends at once, FAILED with
    ``surplus`` (no training, no warning in the log), counts for nothing, and an enqueued one goes back in the
    queue with its parameters."""
    base = load_config("configs/realm/tiny.yaml", ["total_timesteps=512", "checkpoint_freq=100000"])
    extra = {**RewardWeights().to_dict(), "treasure": 7.0}
    config = StudyConfig("rewards", base, "race", f"journal://{tmp_path}/study.log", str(tmp_path / "out"),
                         n_trials=2, enqueue=[extra])
    study = open_study(config)  # trial 0 (the defaults) and trial 1 (extra) wait in the queue
    first, second = study.ask(), study.ask()  # both slots taken by running trials
    assert (first.number, second.number) == (0, 1)
    optuna.logging.enable_propagation()
    try:
        with caplog.at_level("WARNING"):
            _optimize(study, config)  # a racing worker's sampled trial 2
            study.enqueue_trial({**extra, "treasure": 9.0})  # trial 3, enqueued past the budget
            _optimize(study, config)
    finally:
        optuna.logging.disable_propagation()
    assert not [r for r in caplog.records if "failed" in r.getMessage()], caplog.text
    trials = study.get_trials(deepcopy=False)
    assert [(t.number, t.state.name) for t in trials[2:4]] == [(2, "FAIL"), (3, "FAIL")]
    assert all("surplus" in t.user_attrs and "config" not in t.user_attrs for t in trials[2:4])
    assert not (tmp_path / "out" / "trials").exists(), "a surplus trial trained"
    requeued = trials[4]  # trial 3's parameters go back in the queue (trial 2 was sampled: nothing to keep)
    assert len(trials) == 5 and requeued.state.name == "WAITING" and requeued.user_attrs == {"requeued_from": 3}
    assert requeued.system_attrs["fixed_params"]["treasure"] == 9.0
    counts = study_counts(study)
    assert (counts["surplus"], counts["killed"], counts["finished"], counts["running"]) == (2, 0, 0, 2)
    study.tell(first, 1.0)
    study.tell(second, state=optuna.trial.TrialState.FAIL)  # a dead worker's trial frees its slot
    assert study_counts(study)["finished"] == 1
    third = study.ask()  # the requeued trial 4: one trial that counts before it, one slot left
    assert third.number == 4 and third.params == {} and _check_budget(third, 2) is None
    extra_trial = study.ask()  # the slot is now taken
    with pytest.raises(_Surplus):
        _check_budget(extra_trial, 2)


@pytest.mark.processes
def test_killed_worker_leaves_the_study_usable(tmp_path):
    """SIGKILL a worker during its first trial: after the grace period the trial is FAILED, and a restarted worker
    re-runs its parameters and finishes the study."""
    out = tmp_path / "study"
    storage = f"sqlite:///{out}/study.db"
    args = [*TINY, "--total-steps", "2048", "--eval-freq", "1024", "--n-trials", "2", "--out", str(out),
            "--heartbeat", "1", "--grace", "3"]
    proc = subprocess.Popen([sys.executable, "tuning/tune_rewards.py", *args], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / "trials" / "trial_0000" / "tb").is_dir():  # training has started
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the first trial never started"
            time.sleep(0.1)
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert [t.state.name for t in _trials(storage, "rewards")] == ["RUNNING"]
    res = _script("rewards", *args)
    assert json.loads(res.stdout)["trials"]["finished"] == 2
    trials = _trials(storage, "rewards")
    assert trials[0].state.name == "FAIL" and "fail_reason" not in trials[0].user_attrs
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == 0]
    assert len(retries) == 1 and retries[0].state.name == "COMPLETE" and retries[0].params == trials[0].params
    assert sum(t.state.name == "COMPLETE" for t in trials) == 2


# ---------------------------------------------------------------------------------------------- PostgreSQL
def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("initdb")
    return Path(which).resolve().parent if which else None


@pytest.fixture
def postgres_url():
    """A throwaway PostgreSQL server (Debian's binaries, trust auth, fsync off) on a free local port. PostgreSQL
    refuses to run as root: as root the server runs as the ``postgres`` user (runuser). Missing binaries skip the
    test, except where ``SB3_REALM_REQUIRE_POSTGRES=1`` (set by .ci/run, which installs the postgresql package)."""
    bindir = _postgres_bin()
    if bindir is None:
        msg = "PostgreSQL binaries not found (apt-get install postgresql; .ci/run does it)"
        if os.environ.get("SB3_REALM_REQUIRE_POSTGRES", "") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    prefix: list[str] = []
    root = tempfile.mkdtemp(prefix="sb3-realm-pg-")  # in /tmp: reachable by the postgres user, unlike tmp_path
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.fail("running as root and there is no 'postgres' user to run the server as; install the "
                        "postgresql package (it creates the user) or run the tests as a normal user")
        os.chown(root, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = f"{root}/data"
    subprocess.run([*prefix, str(bindir / "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync",
                    "-E", "UTF8"], check=True, capture_output=True)
    subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", data, "-l", f"{root}/server.log", "-w", "-o",
                    f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -F", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_postgresql_study_with_two_workers(tmp_path, postgres_url):
    out = tmp_path / "study"
    res = _script("rewards", *TINY, "--n-trials", "3", "--out", str(out), "--storage", postgres_url, "--workers", "2",
                  "--study-name", "pg")
    summary = json.loads(res.stdout)
    assert summary["worker_exit_codes"] == [0, 0] and summary["trials"]["finished"] == 3
    trials = [t for t in _trials(postgres_url, "pg") if "surplus" not in t.user_attrs]
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3
    config, number = trial_config(postgres_url, "pg")
    assert number == summary["best"]["number"]
    assert _but_out(config_to_dict(config)) == _but_out(yaml.safe_load((out / "best.yaml").read_text()))
    assert _but_out(config_to_dict(config)) == _but_out(trials[number].user_attrs["config"])


def test_enqueued_params_with_unknown_keys_are_refused(tmp_path):
    base = load_config("configs/realm/tiny.yaml")
    kwargs = {"storage": f"sqlite:///{tmp_path}/s.db", "out": str(tmp_path)}
    with pytest.raises(ValueError, match=r"--enqueue \{'treasur': 2.0\}: unknown keys \['treasur'\]; the parameters "
                                         r"of this rewards study are \['treasure', 'end', "):
        StudyConfig("rewards", base, "s", enqueue=[{"treasur": 2.0}], **kwargs).validate()
    with pytest.raises(ValueError, match=r"unknown keys \['gamma'\]; the parameters of this hparams study are "
                                         r"\['learning_rate', .*'one_minus_gamma'"):
        StudyConfig("hparams", base, "s", enqueue=[{"gamma": 0.99}], **kwargs).validate()
    with pytest.raises(ValueError, match=r"--enqueue \[1, 2\]: not a dict"):
        StudyConfig("rewards", base, "s", enqueue=[[1, 2]], **kwargs).validate()
    StudyConfig("rewards", base, "s", enqueue=[{"treasure": 2.0}], **kwargs).validate()  # partial dicts are fine
    StudyConfig("rewards", base, "s", enqueue=[{"curriculum_treasures": 1}], curriculum=True, **kwargs).validate()


def test_a_study_created_by_two_scripts_at_once_is_joined(tmp_path, monkeypatch):
    """The second of two scripts creating one SQLite study at the same moment meets the first's rows (an
    IntegrityError, from the tables or the study's name): it joins the study instead of dying."""
    import sqlalchemy.exc

    from sb3_realm.tuning import storage as storage_module
    from sb3_realm.tuning import study as study_module

    config = study_module.StudyConfig(kind="rewards", base=load_config("configs/realm/tiny.yaml"), name="race",
                                      storage=f"sqlite:///{tmp_path / 'study.db'}", out=str(tmp_path)).validate()
    calls = {"storage": 0, "create": 0}

    def racing(name: str, real, statement: str):
        """``real``, whose first call is beaten by the other script: what it makes exists, then the IntegrityError."""
        def call(*args, **kwargs):
            calls[name] += 1
            if calls[name] == 1:
                real(*args, **kwargs)  # the other script made it just now
                raise sqlalchemy.exc.IntegrityError(statement, {}, Exception("UNIQUE constraint failed"))
            return real(*args, **kwargs)
        return call

    racing_storage = racing("storage", storage_module.RDBStorage, "INSERT INTO version_info")
    racing_create = racing("create", optuna.create_study, "INSERT INTO studies")
    monkeypatch.setattr(storage_module, "RDBStorage", racing_storage)
    monkeypatch.setattr(study_module.optuna, "create_study", racing_create)
    study = study_module.open_study(config)
    assert study.study_name == "race" and calls == {"storage": 2, "create": 2}
    assert study.user_attrs[study_module.META_KEY]["kind"] == "rewards"


# ---------------------------------------------------------------------------------------------- the game's spec
def test_a_study_replays_or_eases_games_only_in_a_game_of_treasure_sets(tmp_path, monkeypatch):
    """``--pruner wilcoxon`` and ``--curriculum`` ask the spec whether its games are treasure sets
    (``treasure_sets``): the Realm without them is refused as Gorge Chase is."""
    base = load_config("configs/realm/tiny.yaml")
    monkeypatch.setitem(games.GAMES, "realm", dataclasses.replace(
        games.get("realm"), episodes=dataclasses.replace(games.get("realm").episodes, treasure_sets=False)))
    where = {"storage": f"sqlite:///{tmp_path}/s.db", "out": str(tmp_path)}
    with pytest.raises(ValueError, match="--pruner wilcoxon replays the held-out games one by one as treasure sets, "
                                         "which Back to the Realm's games are not"):
        StudyConfig("rewards", base, "s", pruner="wilcoxon", **where).validate()
    with pytest.raises(ValueError, match=r"--curriculum samples an easier first phase by its treasure count .* which "
                                         "Back to the Realm does not vary that way"):
        StudyConfig("rewards", base, "s", curriculum=True, **where).validate()


class _Trial:
    """The part of an Optuna trial a :class:`TrialEvalCallback` uses: it never prunes."""

    number = 0

    def __init__(self) -> None:
        self.reports: list[tuple[int, float]] = []

    def report(self, value: float, step: int) -> None:
        self.reports.append((step, value))

    def should_prune(self) -> bool:
        return False


def _report(scores: list[float]) -> EvalReport:
    return EvalReport(policy="fake", protocol="fixed", map="small", seed=0,
                      games=[realm_result(i, ids=(3, 4), score=s, steps=10) for i, s in enumerate(scores)])


@pytest.mark.parametrize("per_game", [False, True])
def test_a_trials_success_rate_and_games_are_the_games_own(tmp_path, monkeypatch, per_game):
    """A trial's ``win_rate`` is the figure the spec's ``success.rate`` names (or, game by game, the share its
    ``success.of_game`` counts), and a game played alone uses the spec's ``evaluate_args``: a game that is the Realm
    in all but these answers gets them followed."""
    realm = games.get("realm")
    toy = dataclasses.replace(realm, name="toy", evaluation=dataclasses.replace(
        realm.evaluation, evaluate_args=lambda confs: {"protocol": "fixed", "max_step": len(confs)},
        success=dataclasses.replace(realm.evaluation.success, rate="mean_steps", of_game=lambda game: game.score > 50)))
    monkeypatch.setitem(games.GAMES, "toy", toy)
    scores = iter([100.0, 0.0, 100.0])
    calls = []

    def fake_evaluate(policy, protocol, **kwargs):
        calls.append((protocol, kwargs))
        return _report([next(scores)] if per_game else [100.0, 0.0, 100.0])

    monkeypatch.setattr(importlib.import_module("sb3_realm.tuning.objective"), "evaluate", fake_evaluate)
    monkeypatch.setattr(importlib.import_module("sb3_realm.training.eval_callback"), "evaluate", fake_evaluate)
    configs = protocol_configs("leaderboard", seed=7, games=3, treasures=2, max_step=24, game="realm")
    model = PPO("MultiInputPolicy", RealmEnv(map_name="small", treasure_num=2, max_step=24), n_steps=32, batch_size=32,
                device="cpu", seed=0)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    callback = TrialEvalCallback(_Trial(), None, configs, tmp_path / "best.zip", env_kwargs={"map_name": "small"},
                                 batched=False, per_game=per_game, game="toy")
    callback.init_callback(model)
    callback.on_training_end()
    assert all(protocol == "fixed" and "custom" not in kwargs and kwargs["game"] == "toy" for protocol, kwargs in calls)
    if per_game:
        assert len(calls) == 3 and all(kwargs["max_step"] == 1 for _, kwargs in calls)  # one game each
        assert callback.final_win_rate == pytest.approx(2 / 3)  # of_game, not the Realm's win (all three won)
    else:
        assert len(calls) == 1 and calls[0][1]["max_step"] == 3
        assert callback.final_win_rate == 10.0  # the summary's mean_steps, as the spec's rate names it
