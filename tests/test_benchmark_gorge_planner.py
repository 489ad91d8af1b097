"""benchmarks/gorge_planner.py: the scripted yardstick and the observation-only planner on the same games as
``sb3-realm eval --protocol maps`` (seeds from TEST_SEED), each settings played, the figures per map and overall, the
paired difference, and bad input or a foreign ``--out`` refused in one line before any game."""

from __future__ import annotations

import json
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
from helpers import load_benchmark

from sb3_realm.evaluation import evaluate
from sb3_realm.evaluation import protocols as eval_protocols
from sb3_realm.tuning.script import run_script

SHORT = 60  # max_step of the games the structure test plays (the CLI has no max_step: the jobs are cut here)


class _Stop(Exception):
    """Raised by :func:`play` where no game may be played."""


def _stop(*args, **kwargs):
    raise _Stop


def _run(module, argv: list[str], monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["gorge_planner.py", *argv])
    module.main()


def _short_jobs(module, monkeypatch) -> None:
    """Cut every game of the run to ``SHORT`` steps (over the settings' max_step)."""
    real = module.jobs_of

    def jobs_of(args, maps_dir):
        return [job._replace(confs=tuple({**conf, "max_step": SHORT} for conf in job.confs))
                for job in real(args, maps_dir)]

    monkeypatch.setattr(module, "jobs_of", jobs_of)


def test_the_benchmark_reports_both_policies_under_each_settings(tmp_path, monkeypatch, capsys):
    """Both policies, both settings, two maps: every figure per map and overall, the paired difference from the
    games' own scores, the timing flagged as a step's cost (one process), and the JSON written to an earlier
    output's --out over the old file."""
    module = load_benchmark("gorge_planner", monkeypatch)
    _short_jobs(module, monkeypatch)
    out = tmp_path / "bench"
    out.mkdir()
    (out / "gorge_planner.json").write_text("{}\n", encoding="utf-8")  # an earlier output: replaced
    _run(module, ["--maps", "own_6", "own_7", "--games", "1", "--settings", "default", "final", "--out", str(out)],
         monkeypatch)
    printed = json.loads(capsys.readouterr().out)
    assert json.loads((out / "gorge_planner.json").read_text(encoding="utf-8")) == printed
    assert sorted(p.name for p in out.iterdir()) == ["gorge_planner.json", "jobs"]
    assert printed["benchmark"] == "gorge_planner" and printed["maps"] == ["own_6", "own_7"]
    assert printed["games_per_map"] == 1 and printed["test_seed"] == module.TEST_SEED
    assert printed["policies"] == ["scripted", "planner"] and list(printed["settings"]) == ["default", "final"]
    assert printed["command"][0] == "gorge_planner.py" and printed["command"][-1] == str(out)
    assert printed["timing"]["jobs"] == 1 and printed["timing"]["per_step_times_meaningful"] is True
    assert printed["machine"]["cpu_count"] >= 1 and printed["peak_rss"]["self_mib"] > 0
    assert printed["settings"]["final"]["env_conf"]["monster_interval"] == 200
    assert printed["settings"]["default"]["env_conf"]["talent_cooldown"] == 100
    for settings in ("default", "final"):
        entry = printed["settings"][settings]
        for policy in ("scripted", "planner"):
            maps = entry["policies"][policy]["maps"]
            assert list(maps) == ["own_6", "own_7"]
            for row in maps.values():
                assert row["games"] == 1 and len(row["scores"]) == 1 and row["mean_score"] == row["scores"][0]
                assert 0 < row["mean_steps"] <= SHORT
                assert sum(row["caught"].values()) + row["survival_share"] == 1
                times = row["act_ms"]
                assert times["steps"] == row["mean_steps"]
                assert 0 < times["p50"] <= times["p99"] <= times["max"] and times["mean"] <= times["max"]
                for key in ("score_std", "mean_flashes", "mean_treasures", "mean_buffs"):
                    assert row[key] >= 0
            overall = entry["policies"][policy]["overall"]
            assert overall["games"] == 2 and "scores" not in overall
            assert overall["act_ms"]["steps"] == sum(row["act_ms"]["steps"] for row in maps.values())
            assert overall["mean_score"] == pytest.approx(np.mean([row["mean_score"] for row in maps.values()]),
                                                          abs=0.1)
        diffs = [entry["policies"]["planner"]["maps"][name]["mean_score"]
                 - entry["policies"]["scripted"]["maps"][name]["mean_score"] for name in ("own_6", "own_7")]
        paired = entry["planner_minus_scripted"]
        assert paired["maps"]["own_7"] == {"games": 1, "mean": pytest.approx(diffs[1], abs=0.1),
                                           "standard_error": None}  # one game: no spread
        assert paired["overall"]["games"] == 2
        assert paired["overall"]["mean"] == pytest.approx(np.mean(diffs), abs=0.1)
        assert paired["overall"]["standard_error"] == pytest.approx(np.std(diffs, ddof=1) / np.sqrt(2), abs=0.1)


def test_the_games_are_those_of_eval_protocol_maps(monkeypatch):
    """Game j of the i-th map: the seed and usr_conf (settings over it) that ``evaluate(..., protocol="maps",
    seed=TEST_SEED)`` plays, so that the benchmark's figures pair with the recipe's test games."""
    module = load_benchmark("gorge_planner", monkeypatch)
    played: list[tuple[int, dict]] = []

    def record(env, policy, seed, conf):  # the game set up, not played
        played.append((seed, dict(conf)))
        env.reset(seed=seed, options=conf)
        return env.episode_summary()

    monkeypatch.setattr(eval_protocols, "play_episode", record)
    evaluate("random", "maps", maps=["own_6", "own_7"], games=3, seed=module.TEST_SEED, game="gorge",
             yardstick=False, settings="final")
    args = Namespace(maps=["own_6", "own_7"], games=3, settings=["final"], policies=["planner"])
    jobs = module.jobs_of(args, None)
    assert [job.map_name for job in jobs] == ["own_6", "own_7"]
    assert [(seed, conf) for job in jobs for seed, conf in zip(job.seeds, job.confs, strict=True)] == played
    assert played[0][1]["talent_cooldown"] == 200 and played[3][1]["map_name"] == "own_7"
    assert module.TEST_SEED == load_benchmark("gorge_recipe", monkeypatch).TEST_SEED  # the recipe's test games


def test_the_catch_phases(monkeypatch):
    phase = load_benchmark("gorge_planner", monkeypatch).catch_phase
    end = {"caught": True, "caught_after_speedup": False, "steps": 299}
    assert phase(end, 300) == "before_monster2"
    assert phase({**end, "steps": 300}, 300) == "monster2_to_speedup"  # monster 2 spawns in the catch's step
    assert phase({**end, "steps": 900}, -2) == "before_monster2"  # monster 2 never spawns
    assert phase({**end, "caught_after_speedup": True, "steps": 600}, 300) == "after_speedup"
    assert phase({**end, "caught": False, "steps": 1000}, 300) is None


@pytest.mark.parametrize("case", ["empty", "user folder", "a file", "games 0", "jobs 0", "settings twice",
                                  "no open map", "search steps without the search", "search steps -1"])
def test_bad_input_is_refused_before_any_game(tmp_path, monkeypatch, capsys, case):
    """One line ``gorge_planner.py: error: ...`` with exit code 2; the folder untouched, no game played."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.txt").write_text("years of work\n", encoding="utf-8")
    monkeypatch.chdir(folder)  # an empty --out would write here
    module = load_benchmark("gorge_planner", monkeypatch)
    monkeypatch.setattr(module, "play", _stop)
    base = ["--maps", "own_6", "--games", "1"]
    argv, expected = {
        "empty": ([*base, "--out", ""], "--out '' names no folder"),
        "user folder": ([*base, "--out", str(folder)], f"--out {str(folder)!r} is not an earlier output of "
                                                       "benchmarks/gorge_planner.py: it holds 'thesis.txt'"),
        "a file": ([*base, "--out", str(folder / "thesis.txt")], "is a file, not a folder"),
        "games 0": (["--maps", "own_6", "--games", "0"], "--games 0 must be >= 1"),
        "jobs 0": ([*base, "--jobs", "0"], "--jobs 0 must be >= 1"),
        "settings twice": ([*base, "--settings", "final", "final"], "--settings final final names one twice"),
        "no open map": (["--maps", "open_9", "own_6", "--maps-dir", str(folder)],
                        "--maps open_9: no gorge_chase_map_<k>.json for them in --maps-dir"),
        "search steps without the search": ([*base, "--search-steps", "400"], "--search-steps 400: give a budget"),
        "search steps -1": ([*base, "--policies", "search", "--search-steps", "-1"], "--search-steps -1: give a"),
    }[case]
    before = sorted((p.name, p.read_bytes()) for p in folder.iterdir())
    monkeypatch.setattr(sys, "argv", ["gorge_planner.py", *argv])
    with pytest.raises(SystemExit) as exit_info:
        run_script(module.main, "gorge_planner.py")
    lines = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("gorge_planner.py: error: ") and expected in lines[0], lines
    assert sorted((p.name, p.read_bytes()) for p in folder.iterdir()) == before


def corridor_map(path: Path, width: int) -> Path:
    """A 128 x 128 map whose only road is a corridor of 38 x ``width`` cells: the monster catches the hero within
    about a hundred steps, so whole games are short."""
    cells = [{"x": x, "z": z, "type_id": 3 if 1 <= x <= 38 and 1 <= z <= width else 1, "height": 0.0}
             for z in range(128) for x in range(128)]
    path.write_text(json.dumps({"name": path.stem, "width": 128, "height": 128, "cells": cells}), encoding="utf-8")
    return path


def test_several_jobs_play_the_same_games(tmp_path, monkeypatch, capsys):
    """--jobs 2 (spawned processes, the script run as the user runs it): the same games and scores as one process,
    the timing flagged as not a step's cost."""
    maps = [str(corridor_map(tmp_path / f"corridor_{width}.json", width)) for width in (3, 4)]
    argv = ["--maps", *maps, "--games", "1", "--settings", "final"]
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "gorge_planner.py"
    spawned = json.loads(subprocess.run([sys.executable, str(script), *argv, "--jobs", "2"], capture_output=True,
                                        text=True, check=True, timeout=600).stdout)
    _run(load_benchmark("gorge_planner", monkeypatch), [*argv, "--jobs", "1"], monkeypatch)
    alone = json.loads(capsys.readouterr().out)
    assert spawned["timing"]["jobs"] == 2 and spawned["timing"]["per_step_times_meaningful"] is False
    assert alone["timing"]["per_step_times_meaningful"] is True
    for policy in ("scripted", "planner"):
        played = [{name: {k: v for k, v in row.items() if k != "act_ms"}
                   for name, row in run["settings"]["final"]["policies"][policy]["maps"].items()}
                  for run in (spawned, alone)]
        assert played[0] == played[1] and list(played[0]) == maps
        assert sum(row["caught"]["before_monster2"] for row in played[0].values()) == 2  # caught in the corridor
    assert spawned["settings"]["final"]["planner_minus_scripted"] == alone["settings"]["final"][
        "planner_minus_scripted"]


@pytest.mark.parametrize("argv, message", [
    (["--games", "0"], "--games 0 must be >= 1"),
    (["--maps", "own_6", "own_6"], "names one twice"),
    (["--maps", "open_9", "--maps-dir", "no-such-folder"], "no gorge_chase_map_<k>.json"),
    (["--maps", "own_6", "--package", "no-such-folder"], "--package 'no-such-folder'"),
])
def test_the_speed_benchmark_refuses_bad_input_before_any_game(argv, message):
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "gorge_agent_speed.py"
    done = subprocess.run([sys.executable, str(script), *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and message in done.stderr and done.stdout == ""


def _untimed(data):
    """``data`` without its ``act_ms`` entries (the times of a job played again differ)."""
    if isinstance(data, dict):
        return {k: _untimed(v) for k, v in data.items() if k != "act_ms"}
    return data


def test_a_stopped_run_resumes_with_the_jobs_it_finished(tmp_path, monkeypatch, capsys):
    """Each finished job's games are kept in --out's jobs/; a rerun with the same arguments plays only the others and
    prints the same figures, and a job kept for other games (another --games) is played again."""
    module = load_benchmark("gorge_planner", monkeypatch)
    _short_jobs(module, monkeypatch)
    out = tmp_path / "bench"
    argv = ["--maps", "own_6", "own_7", "--games", "1", "--settings", "default", "--out", str(out)]
    _run(module, argv, monkeypatch)
    first = json.loads(capsys.readouterr().out)
    assert sorted(p.name for p in (out / "jobs").iterdir()) == [
        "planner-default-0.json", "planner-default-1.json", "scripted-default-0.json", "scripted-default-1.json"]
    (out / "jobs" / "planner-default-1.json").unlink()  # as if stopped before its last job
    played = []
    real_play = module.play
    monkeypatch.setattr(module, "play", lambda job: played.append(job) or real_play(job))
    _run(module, argv, monkeypatch)
    again = json.loads(capsys.readouterr().out)
    assert [(job.policy, job.map_name) for job in played] == [("planner", "own_7")]
    assert _untimed(again["settings"]) == _untimed(first["settings"])  # the replayed job's times are new
    played.clear()
    _run(module, [*argv[:4], "2", *argv[5:]], monkeypatch)  # --games 2: other games, all played
    assert len(played) == 4


def test_the_searches_play_beside_the_planners(tmp_path, monkeypatch, capsys):
    """search and ceiling play the same games: their figures, their search counters and their paired
    differences."""
    module = load_benchmark("gorge_planner", monkeypatch)
    _short_jobs(module, monkeypatch)
    _run(module, ["--maps", "own_6", "--games", "1", "--settings", "default", "--policies", "scripted", "planner",
                  "search", "ceiling"], monkeypatch)
    printed = json.loads(capsys.readouterr().out)["settings"]["default"]
    for policy in ("search", "ceiling"):
        row = printed["policies"][policy]["maps"]["own_6"]
        assert row["games"] == 1 and "searched_share" in row and "changed_per_game" in row
    assert "rollout_steps_per_call" in printed["policies"]["search"]["maps"]["own_6"]
    for pair in ("planner_minus_scripted", "search_minus_planner", "search_minus_scripted", "ceiling_minus_scripted"):
        assert printed[pair]["overall"]["games"] == 1


def test_a_search_without_budget_plays_the_planner(tmp_path, monkeypatch, capsys):
    """--search-steps 0 (a package built with --search 0): the search rolls out the planner's own action only and
    so plays the planner's game, action for action; the JSON records the budget and only the search's job has it."""
    module = load_benchmark("gorge_planner", monkeypatch)
    _short_jobs(module, monkeypatch)
    played = []
    real_play = module.play
    monkeypatch.setattr(module, "play", lambda job: played.append(job) or real_play(job))
    _run(module, ["--maps", "own_6", "--games", "1", "--settings", "final", "--policies", "planner", "search",
                  "--search-steps", "0"], monkeypatch)
    printed = json.loads(capsys.readouterr().out)
    assert printed["search_steps"] == 0
    assert {job.policy: job.search_steps for job in played} == {"planner": None, "search": 0}
    rows = printed["settings"]["final"]["policies"]
    assert rows["search"]["maps"]["own_6"]["scores"] == rows["planner"]["maps"]["own_6"]["scores"]
    assert rows["search"]["maps"]["own_6"]["changed_per_game"] == 0
