"""The executor seam (sb3_realm.executors): worker processes and a real local Ray instance give the same evaluation
reports and the same labels; a worker that dies in the middle of a job has the job run again, once counted."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from sb3_realm import games
from sb3_realm.evaluation import evaluate
from sb3_realm.executors import (
    EXECUTORS,
    RETRIES,
    ProcessExecutor,
    RayNotInstalledError,
    check_executor,
    make_executor,
    ray_address,
)
from sb3_realm.imitation import Collector
from sb3_realm.imitation.expert import ExpertSpec

SMALL_ENV = {"map_name": "small", "map_path": None, "rules": {}, "reward_weights": {}, "mask_wall_moves": False}


def _square(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _die_once(job: tuple[int, str]) -> int:
    """Job ``n`` of ``(n, marker folder)``: job 3's first run ends its worker process mid-job (as a kill would)."""
    n, folder = job
    if n == 3:
        try:
            fd = os.open(Path(folder) / "died", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.close(fd)
            os._exit(9)
    with open(Path(folder) / f"ran-{n}-{os.getpid()}", "w", encoding="utf-8"):
        pass
    return n * 10


def _die_always(n: int) -> int:
    if n == 1:
        os._exit(9)
    return n


def _died_jobs(folder: Path) -> dict[int, int]:
    counts: dict[int, int] = {}
    for p in folder.glob("ran-*"):
        n = int(p.name.split("-")[1])
        counts[n] = counts.get(n, 0) + 1
    return counts


# -------------------------------------------------------------------------------------------- without Ray
def test_check_executor_names_the_value_and_the_fix():
    assert EXECUTORS[0] == "processes"
    with pytest.raises(ValueError, match=r"--executor 'dask' is not an executor; choose one of \['processes', 'ray'\]"):
        check_executor("dask")
    with pytest.raises(ValueError, match=r"--ray-address 'head:6379' is for --executor ray"):
        check_executor("processes", "head:6379")
    with pytest.raises(ValueError, match=r"imitation\.executor 'threads'"):
        check_executor("threads", option="imitation.executor")


def test_the_address_comes_from_the_option_else_the_environment(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert ray_address(None) is None
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    assert ray_address(None) == "head:6379"
    assert ray_address("other:1") == "other:1"


def test_ray_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails as if it were not installed
    with pytest.raises(RayNotInstalledError, match=r"pip install -e '\.\[ray\]'"):
        check_executor("ray")
    with pytest.raises(ValueError, match="needs Ray"):  # the commands report it as bad input, in one paragraph
        evaluate("random", "leaderboard", games=1, workers=2, executor="ray")


@pytest.mark.processes
def test_processes_keep_the_order_of_the_jobs():
    with make_executor("processes", 2) as pool:
        assert [r for r, _ in pool.map(_square, range(23), chunksize=4)] == [x * x for x in range(23)]


@pytest.mark.processes
def test_a_dead_worker_process_has_its_jobs_run_again_once(tmp_path):
    jobs = [(n, str(tmp_path)) for n in range(8)]
    with ProcessExecutor(2) as pool:
        assert list(pool.map(_die_once, jobs, chunksize=1)) == [n * 10 for n in range(8)]
    assert (tmp_path / "died").exists()
    assert sorted(_died_jobs(tmp_path)) == list(range(8))  # job 3 ran to its end once, after its first run died


@pytest.mark.processes
def test_a_job_that_always_kills_its_worker_stops_the_run():
    with ProcessExecutor(2) as pool, pytest.raises(RuntimeError, match=f"died {RETRIES + 1} times"):
        list(pool.map(_die_always, range(3)))


# ---------------------------------------------------------------------------------------- with a real Ray
@pytest.mark.processes
def test_ray_keeps_the_order_of_the_jobs(local_ray):
    with make_executor("ray", 2) as pool:
        assert [r for r, _ in pool.map(_square, range(23), chunksize=4)] == [x * x for x in range(23)]
    assert local_ray.is_initialized()  # an executor that joined a running Ray leaves it running


@pytest.mark.processes
def test_a_killed_ray_worker_has_its_jobs_run_elsewhere_once(local_ray, tmp_path):
    jobs = [(n, str(tmp_path)) for n in range(8)]
    with make_executor("ray", 2) as pool:
        assert list(pool.map(_die_once, jobs, chunksize=2)) == [n * 10 for n in range(8)]
    assert (tmp_path / "died").exists()
    # nothing lost, nothing counted twice: each job's result once, job 3's from its second run (its chunk's other job
    # ran again beside it)
    ran = _died_jobs(tmp_path)
    assert sorted(ran) == list(range(8)) and ran[3] == 1


@pytest.mark.processes
@pytest.mark.parametrize(("policy", "kwargs"), [
    ("oracle", {"protocol": "leaderboard", "games": 6}),
    ("scripted", {"protocol": "maps", "maps": ["own_1", "own_2"], "games": 2, "max_step": 150}),
], ids=["realm", "gorge"])
def test_an_evaluation_report_is_the_same_under_processes_and_ray(local_ray, policy, kwargs):
    by_processes = evaluate(policy, workers=2, executor="processes", **kwargs).to_dict()
    by_ray = evaluate(policy, workers=2, executor="ray", **kwargs).to_dict()
    assert by_ray == by_processes
    assert len(by_ray["games"]) == (6 if policy == "oracle" else 4)


@pytest.mark.processes
def test_labels_and_learner_games_are_the_same_under_processes_and_ray(local_ray):
    conf = games.get("gorge").episodes.config.from_usr_conf({"max_step": 60}).training_usr_conf(4)
    labelled = [(11 + i, conf) for i in range(4)]
    expert = ExpertSpec("planner", game="gorge")
    parts = {}
    for executor in ("processes", "ray"):
        with Collector(2, executor=executor) as collector:
            parts[executor] = collector.run({"map_names": ["own_1", "own_2"]}, labelled, expert=expert)
    a, b = parts["processes"], parts["ray"]
    assert a.games == b.games and len(a.block) == len(b.block) == sum(g.steps for g in a.games)
    for name in ("actions", "masks"):
        assert np.array_equal(getattr(a.block, name), getattr(b.block, name))
    for key, value in a.block.observations().items():
        assert np.array_equal(value, b.block.observations()[key])


@pytest.mark.processes
def test_the_learner_s_games_are_the_same_under_processes_and_ray(local_ray, tmp_path):
    """``Collector.play`` hands a Ray worker the model's bytes (its temporary file is on this machine only)."""
    from sb3_realm.evaluation.batched import play_games
    from sb3_realm.training import build_model, load_config, make_vec_env

    config = load_config(None, ["env.map_name=small", "env.n_envs=1", "algo.net_arch={pi: [16], vf: [16]}"])
    model = build_model(config, make_vec_env(config.env, seed=0, game=config.game))  # it records its run config
    conf = {"treasure_random": 0, "treasure_id": [3, 4], "max_step": 60}
    played = [(5 + i, conf) for i in range(5)]
    serial = play_games(model.policy, SMALL_ENV, played, max_steps=40, game="realm")
    with Collector(2, executor="ray") as collector:
        assert collector.play(model, "ppo", SMALL_ENV, played, max_steps=40, game="realm") == serial


@pytest.mark.processes
def test_an_imitation_run_trains_the_same_model_under_processes_and_ray(local_ray, tmp_path):
    """Expert games, DAgger labels and held-out games on Ray workers: the same dataset, model and report."""
    import json

    import torch

    from sb3_realm.imitation import imitate
    from sb3_realm.imitation.config import load_imitate_config

    quick = ["env.map_name=small", "env.usr_conf={treasure_num: 2, max_step: 120}", "eval_games=3", "torch_threads=1",
             "imitation.expert_games=6", "imitation.rounds=1", "imitation.dagger_games=3", "imitation.epochs=1",
             "imitation.dagger_epochs=1", "imitation.workers=2", "algo.net_arch={pi: [16], vf: [16]}"]
    models, reports = {}, {}
    for executor in ("processes", "ray"):
        out = tmp_path / executor
        model, run_dir = imitate(load_imitate_config(None, [*quick, f"imitation.executor={executor}",
                                                            f"out={json.dumps(str(out))}"]))
        models[executor] = model.policy.state_dict()
        report = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
        reports[executor] = [{k: v for k, v in h.items() if not k.endswith("_s")}  # not the timings
                             for h in report["history"]]
    assert reports["ray"] == reports["processes"]
    assert all(torch.equal(models["ray"][k], models["processes"][k]) for k in models["processes"])
