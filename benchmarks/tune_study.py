"""A small reward-weight study, then a check on data the study never saw. Prints JSON (also written to
``OUT/benchmark.json``).

    python benchmarks/tune_study.py [--trials 12] [--steps 50000] [--map-name small] [--treasures 1] [--max-step 300]
                                    [--eval-games 10] [--check-seeds 1,2,3] [--check-eval-seed 777] [--check-games 30]
    python benchmarks/tune_study.py --config configs/gorge/finetune.yaml --set finetune.init_from=RUN/final_model.zip
                                    [--steps 100000] [--eval-games 20] [--workers 2] [--check-games 50] [--resume]
    python benchmarks/tune_study.py --workers 4 --executor ray [--ray-address HOST:6379]

1. ``tuning/tune_rewards.py``'s study (SQLite, median pruner, TPE seeded 0, trial 0 = the default weights) on
   ``--config`` with a fixed small configuration: ``--treasures`` random treasures (start 2, end 1), ``--max-step``,
   ``--steps`` env steps per trial (training seed 0), held-out evaluation: ``--eval-games`` leaderboard games drawn
   from eval_seed 12345, intermediate evaluation at half the steps.
2. The best weights and the default weights are retrained with the same budget on training seeds the study never
   used (``--check-seeds``), and each final model plays ``--check-games`` leaderboard games drawn from an evaluation
   seed the study never used (``--check-eval-seed``). ``best_beats_default`` compares the means over those seeds.

A Gorge Chase config (``game: gorge``) keeps its own maps and game settings (``--set`` changes them): the study trains
on the config's maps and is judged on its held-out map (``eval_maps``, eval_seed of the config), and the check plays
``--check-games`` games on each test map of ``benchmarks/gorge_recipe.py`` (open_9 and open_10 with ``--maps-dir``,
own_6 .. own_10), drawn from its fixed ``TEST_SEED``. The default weights are the config's own. With ``--workers 2``
the study runs two worker processes on a journal file and the check trains two runs at a time. With ``--executor ray``
the study's workers are Ray tasks (on a Ray instance started here, or the cluster at ``--ray-address`` /
``$RAY_ADDRESS``) sharing OUT/study.log by its absolute path, so a cluster's machines need OUT on a filesystem they all
mount at that path; the check's runs stay worker processes of this machine (their job function lives in this
script, whose folder is not on the path of Ray's workers). ``--resume`` keeps OUT: the study continues from its
storage (trials already finished count) and the check runs again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import optuna
from gorge_recipe import TEST_SEED, evaluate_model, refuse_test_maps, test_maps  # benchmarks/, beside this script
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.evaluation import evaluate, write_json_atomic
from sb3_realm.executors import EXECUTORS, RAY_ADDRESS_ENV, check_executor
from sb3_realm.games.realm.rewards import RewardWeights
from sb3_realm.processes import mp_context
from sb3_realm.training.config import load_config
from sb3_realm.training.run import train
from sb3_realm.tuning import StudyConfig, baseline_params, convert_rewards, run_study
from sb3_realm.tuning.outputs import STORAGE_COMPANIONS
from sb3_realm.tuning.script import check_output_folder, remove_outputs, run_script, study_problems

#: what this script writes in OUT (the storage's companions beside it), and what it writes there first
STORAGES = ("study.db", "study.log")
OWN = (*STORAGES, *(name + end for name in STORAGES for end in STORAGE_COMPANIONS), "study", "check", "benchmark.json")
MARKERS = (*STORAGES, "benchmark.json")


def _check_run(label: str, params: dict, base, seed: int, args, out: Path) -> dict:
    """Retrain ``params`` on ``seed`` and score the final model on the check's games (a worker's entry point: its
    arguments pickle)."""
    config = replace(convert_rewards(params, base), seed=seed, eval_freq=0, out=str(out / f"{label}_seed{seed}"))
    train(config)
    final = Path(config.out) / "final_model.zip"
    if config.game == "gorge":
        figures = evaluate_model(final, test_maps(args.maps_dir), args.check_games, args.maps_dir)
        row = {"mean_score": figures["mean_score"], "win_rate": figures["survival_share"],
               "mean_treasures": figures["mean_treasures"], "per_map": figures["per_map"]}
    else:
        env_kwargs = {k: v for k, v in config.env.env_kwargs(usr_conf=False).items() if k != "map_path"}
        report = evaluate(str(final), "leaderboard", map_path=config.env.map_path, seed=args.check_eval_seed,
                          treasures=args.treasures, games=args.check_games, max_step=args.max_step, yardstick=False,
                          env_kwargs=env_kwargs)
        summary = report.summary()
        row = {"mean_score": summary["mean_score"], "win_rate": summary["win_rate"],
               "mean_treasures": summary["mean_treasures"]}
    row["peak_rss"] = peak_rss_mib()  # the process that trained and evaluated this run (a worker with --workers)
    print(json.dumps({"check": label, "seed": seed, **row}), file=sys.stderr, flush=True)
    return row


def _check(runs: dict[str, dict], base, seeds: list[int], args, out: Path) -> dict:
    """Retrain each labelled parameter set on each seed (``--workers`` runs at a time) and sum up per label."""
    jobs = [(label, params, base, seed, args, out) for label, params in runs.items() for seed in seeds]
    if args.workers > 1:
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=mp_context()) as pool:
            rows = list(pool.map(_check_run, *zip(*jobs, strict=True)))
    else:
        rows = [_check_run(*job) for job in jobs]
    result = {}
    for label in runs:
        mine = [row for (lab, *_), row in zip(jobs, rows, strict=True) if lab == label]
        result[label] = {f"per_seed_{key}": [row[key] for row in mine]
                         for key in ("mean_score", "win_rate", "mean_treasures")}
        result[label].update({key: float(np.mean([row[key] for row in mine]))
                              for key in ("mean_score", "win_rate", "mean_treasures")})
        result[label]["per_seed_peak_rss"] = [row["peak_rss"] for row in mine]
        if "per_map" in mine[0]:
            result[label]["per_map_mean_score"] = {name: float(np.mean([row["per_map"][name]["mean_score"]
                                                                        for row in mine]))
                                                   for name in mine[0]["per_map"]}
    return result


def _span_s(trials) -> float | None:
    """Seconds from the first trial's start to the last trial's end (a resumed study's whole wall time)."""
    starts = [t.datetime_start for t in trials if t.datetime_start]
    ends = [t.datetime_complete for t in trials if t.datetime_complete]
    return round((max(ends) - min(starts)).total_seconds(), 1) if starts and ends else None


def _base(args):
    """The study's base config: the Realm's fixed small setup, or a Gorge config with ``--set``."""
    flags = [f"total_timesteps={args.steps}", f"eval_freq={args.steps // 2}", f"eval_games={args.eval_games}"]
    probe = load_config(args.config, list(args.overrides))
    if probe.game == "gorge":
        base = load_config(args.config, [*args.overrides, *flags])
        refuse_test_maps(base, test_maps(args.maps_dir), "--config")
        return base, {"maps": base.env.map_names or [base.env.map_name], "eval_maps": base.eval_maps,
                      "eval_seed": base.eval_seed, "usr_conf": base.env.usr_conf, "test_maps": test_maps(args.maps_dir)}
    usr = {"treasure_num": args.treasures, "max_step": args.max_step}
    base = load_config(args.config, [
        *flags, "eval_seed=12345", "seed=0", "checkpoint_freq=1000000000", "keep_checkpoints=1", "progress_bar=false",
        f"env.map_name={args.map_name}", f"env.usr_conf={json.dumps(usr)}", f"env.n_envs={args.n_envs}",
        *args.overrides])
    return base, {"map": args.map_name, "usr_conf": usr, "eval_seed": 12345}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/realm/tiny.yaml", help="base training config")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a base config value, as in `sb3-realm train` (repeatable)")
    p.add_argument("--map-name", default="small", help="Realm: built-in map, small (32 x 32) or default (128 x 128)")
    p.add_argument("--trials", type=int, default=12, help="finished trials of the study")
    p.add_argument("--steps", type=int, default=50_000, help="env steps per training run")
    p.add_argument("--n-envs", type=int, default=8, help="Realm: envs per run (a Gorge config keeps its own)")
    p.add_argument("--treasures", type=int, default=1, help="Realm: random treasures per game (start 2, end 1)")
    p.add_argument("--max-step", type=int, default=300, help="Realm: max_step of the games")
    p.add_argument("--eval-games", type=int, default=10, help="held-out games of the study's objective")
    p.add_argument("--pruner", default="median")
    p.add_argument("--workers", type=int, default=1,
                   help="study workers and check runs at a time (> 1: the study's storage is a journal file)")
    p.add_argument("--executor", choices=EXECUTORS, default="processes",
                   help="the study's workers: processes of this machine, or Ray tasks (the study's storage is then "
                        "the journal file OUT/study.log; the check runs in processes of this machine either way)")
    p.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help=f"the Ray cluster of --executor ray (host:6379 or auto; default ${RAY_ADDRESS_ENV}, else Ray "
                        "starts on this machine for the study)")
    p.add_argument("--check-seeds", default="1,2,3", help="training seeds of the check (the study trains seed 0)")
    p.add_argument("--check-eval-seed", type=int, default=777, help="Realm: leaderboard draw of the check "
                                                                   "(study: 12345)")
    p.add_argument("--check-games", type=int, default=30, help="games of the check (Gorge: per test map)")
    p.add_argument("--maps-dir", default=os.environ.get("SB3_REALM_GORGE_MAPS") or None,
                   help="Gorge: folder of the open maps (adds open_9 and open_10 to the test maps)")
    p.add_argument("--out", default="runs/bench-tune-study", help="output folder (replaced unless --resume)")
    p.add_argument("--resume", action="store_true", help="keep OUT and continue its study")
    args = p.parse_args()
    out = Path(args.out)
    earlier = check_output_folder(args.out, OWN, markers=MARKERS, script="benchmarks/tune_study.py")
    check_executor(args.executor, args.ray_address)
    base, setup = _base(args)
    where = out.resolve() if args.executor == "ray" else out  # a Ray worker's folder need not be this one
    storage = str(where / "study.log") if args.workers > 1 or args.executor == "ray" else \
        f"sqlite:///{out / 'study.db'}"
    study = StudyConfig(kind="rewards", base=base, name="rewards", storage=storage, out=str(where / "study"),
                        n_trials=args.trials, pruner=args.pruner, sampler_seed=0).validate()
    if not args.resume:  # everything is checked: the earlier output goes, and only what this script wrote
        remove_outputs(out, earlier)
    start = time.perf_counter()
    summary = run_study(study, workers=args.workers, progress=False, executor=args.executor,
                        ray_address=args.ray_address)
    study_wall = time.perf_counter() - start
    problems = study_problems(summary)
    if problems:
        sys.exit(f"tune_study.py: error: {problems}")
    best = summary["best"]
    trials = optuna.load_study(study_name="rewards", storage=study.make_storage()).trials
    result = {
        "benchmark": "tune_study", "command": " ".join(["python", *sys.argv]), "cpus": os.cpu_count(),
        "setup": {"config": args.config, "game": base.game, "overrides": args.overrides, **setup,
                  "steps_per_trial": args.steps, "n_envs": base.env.n_envs, "eval_games": args.eval_games,
                  "pruner": args.pruner, "workers": args.workers, "executor": args.executor},
        "study": {"wall_s": round(study_wall, 1), "span_s": _span_s(trials), "trials": summary["trials"],
                  "default_weights_value": summary["baseline_value"], "best_number": best and best["number"],
                  "best_value": best and best["value"], "best_params": best and best["params"],
                  "values": [t.value for t in trials], "states": [t.state.name for t in trials],
                  "trial_wall_s": [round(t.duration.total_seconds(), 1) if t.duration else None for t in trials]},
        "peak_rss_after_study": peak_rss_mib(),
    }
    seeds = [int(s) for s in args.check_seeds.split(",") if s.strip()]
    if best is None:
        result["check"] = {"skipped": "no complete trial"}
    elif best["number"] == 0:
        result["check"] = {"skipped": "the best trial is trial 0, the default weights"}
    else:
        start = time.perf_counter()
        default = baseline_params("rewards", base, False)
        if base.game != "gorge":
            default = RewardWeights().to_dict()
        checked = _check({"default": default, "best": best["params"]}, base, seeds, args, out / "check")
        result["check"] = {"train_seeds": seeds, "games": args.check_games, **checked,
                           "best_beats_default": checked["best"]["mean_score"] > checked["default"]["mean_score"],
                           "best_over_default": checked["best"]["mean_score"] / checked["default"]["mean_score"] - 1,
                           "wall_s": round(time.perf_counter() - start, 1)}
        if base.game == "gorge":
            result["check"]["test_seed"] = TEST_SEED
        else:
            result["check"]["eval_seed"] = args.check_eval_seed
    result["total_wall_s"] = round(study_wall + result["check"].get("wall_s", 0.0), 1)
    result["peak_rss"] = peak_rss_mib()
    write_json_atomic(result, out / "benchmark.json")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_script(main, "tune_study.py")
