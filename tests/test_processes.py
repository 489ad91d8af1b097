"""The one chooser of the start method of every process the package starts."""

from __future__ import annotations

import multiprocessing

import pytest

from sb3_realm.evaluation import evaluate
from sb3_realm.processes import START_METHOD_ENV, mp_context, start_method

pytestmark = pytest.mark.processes


def test_default_is_forkserver_where_it_exists(monkeypatch):
    monkeypatch.delenv(START_METHOD_ENV, raising=False)
    expected = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    assert start_method() == expected and mp_context().get_start_method() == expected


def test_override_and_bad_values(monkeypatch):
    monkeypatch.setenv(START_METHOD_ENV, "spawn")
    assert mp_context().get_start_method() == "spawn"
    for bad in ("fork", "threads"):
        monkeypatch.setenv(START_METHOD_ENV, bad)
        with pytest.raises(ValueError, match=rf"{START_METHOD_ENV}='{bad}' is not a start method") as err:
            start_method()
        assert "['forkserver', 'spawn']" in str(err.value)


def test_evaluation_workers_run_under_spawn(monkeypatch):
    monkeypatch.setenv(START_METHOD_ENV, "spawn")
    kw = {"games": 2, "max_step": 40, "oracle_gap": False, "env_kwargs": {"map_name": "small"}}
    spawned = evaluate("random", workers=2, **kw)
    serial = evaluate("random", workers=1, **kw)
    assert [g.score for g in spawned.games] == [g.score for g in serial.games]
    assert [g.steps for g in spawned.games] == [g.steps for g in serial.games]


def test_training_subproc_envs_use_the_chosen_method(monkeypatch):
    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import make_vec_env

    monkeypatch.setenv(START_METHOD_ENV, "spawn")
    config = load_config("configs/tiny.yaml", ["env.vec_env=subproc", "env.n_envs=2"])
    venv = make_vec_env(config.env, seed=0)
    try:
        assert type(venv.processes[0]).__name__ == "SpawnProcess"
        obs = venv.reset()
        assert obs["maps"].shape == (2, 4, 51, 51)
    finally:
        venv.close()
