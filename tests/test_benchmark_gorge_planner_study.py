"""benchmarks/gorge_planner_study.py: the defaults are the first trial, the best trial's weights are checked against
the defaults on maps the study never played, the weights reach the planner, and bad input is refused before any
game."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import load_benchmark

from sb3_realm.games.gorge.planner import Planner
from sb3_realm.tuning.script import run_script

SHORT = 80  # max_step of the games played here


def _short(module, monkeypatch, steps: int = SHORT) -> None:
    real = module.jobs_for

    def jobs_for(*args, **kwargs):
        return [job._replace(confs=tuple({**conf, "max_step": steps} for conf in job.confs))
                for job in real(*args, **kwargs)]

    monkeypatch.setattr(module, "jobs_for", jobs_for)


def test_the_study_starts_from_the_defaults_and_checks_the_best(tmp_path, monkeypatch, capsys):
    module = load_benchmark("gorge_planner_study", monkeypatch)
    _short(module, monkeypatch)
    out = tmp_path / "study"
    monkeypatch.setattr(sys, "argv", ["gorge_planner_study.py", "--trials", "3", "--maps", "own_5", "--games", "1",
                                      "--settings", "default", "--check-games", "1", "--check-maps", "own_6",
                                      "--out", str(out)])
    module.main()
    printed = json.loads(capsys.readouterr().out)
    assert json.loads((out / "gorge_planner_study.json").read_text(encoding="utf-8")) == printed
    assert printed["trials"] == 3 and len(printed["values"]) == 3
    assert printed["defaults"] == {name: getattr(Planner, name) for name in module.SPACE}
    # the first trial plays the defaults: its value is the defaults' score on the validation game
    defaults = module.jobs_for("scripted", ["own_5"], ["default"], 1, module.VALIDATION_SEED, None, {})
    assert printed["values"][0] == printed["default_value"] == round(module.mean_score([module.play(defaults[0])]), 1)
    assert printed["best_value"] == max(printed["values"])
    for name, value in printed["best_weights"].items():
        low, high, _ = module.SPACE[name]
        assert low <= value <= high
    check = printed["check"]
    assert check["maps"] == ["own_6"] and check["policy"] == "planner"
    row = check["settings"]["default"]
    diff = row["tuned"]["mean_score"] - row["default"]["mean_score"]
    assert row["tuned_minus_default"]["mean"] == pytest.approx(diff, abs=0.1)
    assert row["maps"]["own_6"]["tuned_minus_default"]["games"] == 1
    if printed["best_trial"] == 0:
        assert diff == 0


def test_the_weights_reach_the_planner(monkeypatch):
    module = load_benchmark("gorge_planner_study", monkeypatch)
    _short(module, monkeypatch, 250)
    # never calm (no move keeps this margin): the goal never decides, so the planner collects less than by default
    timid = {"safe_margin": 10_000}
    for policy in ("scripted", "planner"):
        plays = [module.play(module.jobs_for(policy, ["own_2"], ["default"], 1, 7, None, weights)[0])
                 for weights in ({}, timid)]
        default, changed = (r["games"][0] for r in plays)
        assert default["treasures"] > changed["treasures"], policy


@pytest.mark.parametrize("argv, message", [
    (["--maps", "own_6"], "--maps own_6: a map of the check cannot be a validation map"),
    (["--trials", "0"], "--trials 0 must be >= 1"),
    (["--check-games", "-1"], "--check-games -1 must be >= 0"),
    (["--maps", "own_5", "--games", "0"], "--games 0 must be >= 1"),
])
def test_bad_input_is_refused_before_any_game(tmp_path, monkeypatch, capsys, argv, message):
    module = load_benchmark("gorge_planner_study", monkeypatch)
    monkeypatch.setattr(module, "play", lambda job: pytest.fail("a game was played"))
    monkeypatch.setattr(sys, "argv", ["gorge_planner_study.py", "--maps", "own_5", *argv])
    with pytest.raises(SystemExit) as exit_info:
        run_script(module.main, "gorge_planner_study.py")
    lines = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(lines) == 1 and message in lines[-1], lines
