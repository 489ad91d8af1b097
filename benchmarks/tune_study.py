"""A small reward-weight study, then a check on data the study never saw. Prints JSON (also written to
``OUT/benchmark.json``).

    python benchmarks/tune_study.py [--trials 12] [--steps 50000] [--map-name small] [--treasures 1] [--max-step 300]
                                    [--eval-games 10] [--check-seeds 1,2,3] [--check-eval-seed 777] [--check-games 30]

1. ``tuning/tune_rewards.py``'s study (SQLite, median pruner, TPE seeded 0, trial 0 = the default weights) on
   ``--config`` with a fixed small configuration: ``--treasures`` random treasures (start 2, end 1), ``--max-step``,
   ``--steps`` env steps per trial (training seed 0), held-out evaluation: ``--eval-games`` leaderboard games drawn
   from eval_seed 12345, intermediate evaluation at half the steps.
2. The best weights and the default weights are retrained with the same budget on training seeds the study never
   used (``--check-seeds``), and each final model plays ``--check-games`` leaderboard games drawn from an evaluation
   seed the study never used (``--check-eval-seed``). ``best_beats_default`` compares the means over those seeds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import optuna
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.evaluation import evaluate, write_json_atomic
from sb3_realm.games.realm.rewards import RewardWeights
from sb3_realm.training.config import load_config
from sb3_realm.training.run import train
from sb3_realm.tuning import StudyConfig, convert_rewards, run_study


def _check(label: str, params: dict, base, seeds: list[int], args, out: Path) -> dict:
    """Retrain ``params`` on each seed and score the final model on the unseen leaderboard draw."""
    scores, wins, treasures = [], [], []
    for seed in seeds:
        config = replace(convert_rewards(params, base), seed=seed, eval_freq=0, out=str(out / f"{label}_seed{seed}"))
        train(config)
        env_kwargs = {k: v for k, v in config.env.env_kwargs(usr_conf=False).items() if k != "map_path"}
        report = evaluate(str(Path(config.out) / "final_model.zip"), "leaderboard", map_path=config.env.map_path,
                          seed=args.check_eval_seed, treasures=args.treasures, games=args.check_games,
                          max_step=args.max_step, oracle_gap=False, env_kwargs=env_kwargs)
        summary = report.summary()
        scores.append(summary["mean_score"])
        wins.append(summary["win_rate"])
        treasures.append(summary["mean_treasures"])
        print(json.dumps({"check": label, "seed": seed, "mean_score": summary["mean_score"],
                          "win_rate": summary["win_rate"], "mean_treasures": summary["mean_treasures"]}),
              file=sys.stderr, flush=True)
    return {"per_seed_mean_score": scores, "per_seed_win_rate": wins, "per_seed_mean_treasures": treasures,
            "mean_score": float(np.mean(scores)), "win_rate": float(np.mean(wins)),
            "mean_treasures": float(np.mean(treasures))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default="configs/realm/tiny.yaml", help="base training config")
    p.add_argument("--map-name", default="small", help="built-in map: small (32 x 32) or default (128 x 128)")
    p.add_argument("--trials", type=int, default=12, help="finished trials of the study")
    p.add_argument("--steps", type=int, default=50_000, help="env steps per training run")
    p.add_argument("--n-envs", type=int, default=8)
    p.add_argument("--treasures", type=int, default=1, help="random treasures per game (start 2, end 1)")
    p.add_argument("--max-step", type=int, default=300)
    p.add_argument("--eval-games", type=int, default=10, help="held-out games of the study's objective")
    p.add_argument("--pruner", default="median")
    p.add_argument("--check-seeds", default="1,2,3", help="training seeds of the check (the study trains seed 0)")
    p.add_argument("--check-eval-seed", type=int, default=777, help="leaderboard draw of the check (study: 12345)")
    p.add_argument("--check-games", type=int, default=30)
    p.add_argument("--out", default="runs/bench-tune-study", help="output folder (replaced)")
    args = p.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    usr = {"treasure_num": args.treasures, "max_step": args.max_step}
    base = load_config(args.config, [
        f"total_timesteps={args.steps}", f"eval_freq={args.steps // 2}", f"eval_games={args.eval_games}",
        "eval_seed=12345", "seed=0", "checkpoint_freq=1000000000", "keep_checkpoints=1", "progress_bar=false",
        f"env.map_name={args.map_name}", f"env.usr_conf={json.dumps(usr)}", f"env.n_envs={args.n_envs}"])
    study = StudyConfig(kind="rewards", base=base, name="bench", storage=f"sqlite:///{out / 'study.db'}",
                        out=str(out / "study"), n_trials=args.trials, pruner=args.pruner, sampler_seed=0)
    start = time.perf_counter()
    summary = run_study(study, workers=1, progress=False)
    study_wall = time.perf_counter() - start
    best = summary["best"]
    trials = optuna.load_study(study_name="bench", storage=study.make_storage()).trials
    result = {
        "benchmark": "tune_study", "command": " ".join(["python", *sys.argv]), "cpus": os.cpu_count(),
        "setup": {"config": args.config, "map": args.map_name, "usr_conf": usr, "steps_per_trial": args.steps,
                  "n_envs": args.n_envs, "eval_games": args.eval_games, "eval_seed": 12345, "pruner": args.pruner},
        "study": {"wall_s": round(study_wall, 1), "trials": summary["trials"],
                  "default_weights_value": summary["baseline_value"], "best_number": best and best["number"],
                  "best_value": best and best["value"], "best_params": best and best["params"],
                  "values": [t.value for t in trials], "states": [t.state.name for t in trials]},
        "peak_rss_after_study": peak_rss_mib(),
    }
    seeds = [int(s) for s in args.check_seeds.split(",") if s.strip()]
    if best is None:
        result["check"] = {"skipped": "no complete trial"}
    elif best["number"] == 0:
        result["check"] = {"skipped": "the best trial is trial 0, the default weights"}
    else:
        start = time.perf_counter()
        check_out = out / "check"
        default = _check("default", RewardWeights().to_dict(), base, seeds, args, check_out)
        tuned = _check("best", best["params"], base, seeds, args, check_out)
        result["check"] = {"train_seeds": seeds, "eval_seed": args.check_eval_seed, "games": args.check_games,
                           "default": default, "best": tuned,
                           "best_beats_default": tuned["mean_score"] > default["mean_score"],
                           "wall_s": round(time.perf_counter() - start, 1)}
    result["total_wall_s"] = round(study_wall + result["check"].get("wall_s", 0.0), 1)
    write_json_atomic(result, out / "benchmark.json")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
