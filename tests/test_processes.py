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
    kw = {"games": 2, "max_step": 40, "yardstick": False, "env_kwargs": {"map_name": "small"}}
    spawned = evaluate("random", workers=2, **kw, game="realm")
    serial = evaluate("random", workers=1, **kw, game="realm")
    assert [g.score for g in spawned.games] == [g.score for g in serial.games]
    assert [g.steps for g in spawned.games] == [g.steps for g in serial.games]


def test_training_subproc_envs_use_the_chosen_method(monkeypatch):
    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import make_vec_env

    monkeypatch.setenv(START_METHOD_ENV, "spawn")
    config = load_config("configs/realm/tiny.yaml", ["env.vec_env=subproc", "env.n_envs=2"])
    venv = make_vec_env(config.env, seed=0, game=config.game)
    try:
        assert type(venv.processes[0]).__name__ == "SpawnProcess"
        obs = venv.reset()
        assert obs["maps"].shape == (2, 4, 51, 51)
    finally:
        venv.close()


def test_without_forkserver_the_choice_is_spawn(monkeypatch):
    monkeypatch.delenv(START_METHOD_ENV, raising=False)
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])  # as on Windows
    assert start_method() == "spawn"
    monkeypatch.setenv(START_METHOD_ENV, "forkserver")
    with pytest.raises(ValueError, match=r"this system has only \['spawn'\]"):
        start_method()


def test_no_module_but_the_chooser_names_a_start_method():
    """``get_context``, ``set_start_method``, ``set_forkserver_preload`` and ``SubprocVecEnv(start_method=...)``
    appear only in sb3_realm/processes.py, or take the chooser's answer."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = []
    for path in [*root.joinpath("sb3_realm").rglob("*.py"), *root.joinpath("tuning").rglob("*.py"),
                 *root.joinpath("benchmarks").rglob("*.py")]:
        if path.name == "processes.py" and path.parent.name == "sb3_realm":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            literal = [a for a in [*node.args, *(k.value for k in node.keywords if k.arg == "start_method")]
                       if isinstance(a, ast.Constant) and a.value in ("fork", "forkserver", "spawn")]
            if name in ("get_context", "set_start_method", "set_forkserver_preload") or literal:
                offenders.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    assert offenders == []
