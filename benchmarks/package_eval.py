"""Evaluation speed of a built package (``sb3-realm eval DIR``) against the same model's checkpoint
(``sb3-realm eval MODEL.zip``): the same games, one process, no oracle; milliseconds per game step, and the per-step
cost of each stage of the package path (the platform objects, ``observation_process``, ``exploit``,
``action_process``). Prints JSON.

    python benchmarks/package_eval.py MODEL.zip [--games 10] [--map PATH]

The package is built into a temporary folder; peak RSS of this process is reported beside the times.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.agents import SubmissionPolicy
from sb3_realm.agents.submission import platform_obs
from sb3_realm.evaluation import evaluate
from sb3_realm.export import build_submission
from sb3_realm.games.realm.env import RealmEnv


def _timed_eval(policy, games: int, map_path) -> tuple[float, int, list[float]]:
    t0 = time.perf_counter()
    report = evaluate(policy, "leaderboard", games=games, map_path=map_path, yardstick=False, workers=1)
    seconds = time.perf_counter() - t0
    return seconds, sum(g.steps for g in report.games), [g.score for g in report.games]


def _stages(folder: Path, map_path, steps: int = 2000) -> dict[str, float]:
    """Milliseconds per step of each stage of the package path, on one game's states."""
    policy = SubmissionPolicy(folder)
    env = RealmEnv(map_path=map_path)
    env.reset(seed=0)
    spent = {"platform_obs": 0.0, "observation_process": 0.0, "exploit": 0.0, "action_process": 0.0}
    n = 0
    while n < steps:
        t0 = time.perf_counter()
        raw = platform_obs(env)
        t1 = time.perf_counter()
        data = policy.definition.observation_process(*raw)
        t2 = time.perf_counter()
        act = policy.agent.exploit([data])[0]
        t3 = time.perf_counter()
        action = int(policy.definition.action_process(act))
        t4 = time.perf_counter()
        for key, dt in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            spent[key] += dt
        n += 1
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset(seed=n)
    return {k: round(v / n * 1000, 4) for k, v in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="an SB3 checkpoint (.zip) that build-submission accepts")
    parser.add_argument("--games", type=int, default=10, help="leaderboard games of each timed evaluation")
    parser.add_argument("--map", dest="map_path", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="sb3-realm-bench-") as tmp:
        folder = Path(tmp) / "package"
        build_submission(args.model, folder)
        evaluate(args.model, "leaderboard", games=1, map_path=args.map_path, yardstick=False)  # warm-up
        model_s, model_steps, model_scores = _timed_eval(args.model, args.games, args.map_path)
        package_s, package_steps, package_scores = _timed_eval(str(folder), args.games, args.map_path)
        stages = _stages(folder, args.map_path)
    model_ms = model_s / model_steps * 1000
    package_ms = package_s / package_steps * 1000
    result = {
        "benchmark": "package_eval", "model": args.model, "games": args.games, "torch_threads": 1,
        "checkpoint_ms_per_step": round(model_ms, 3), "package_ms_per_step": round(package_ms, 3),
        "package_over_checkpoint": round(package_ms / model_ms, 2), "same_scores": model_scores == package_scores,
        "steps": model_steps, "package_stages_ms_per_step": stages,
        "mean_score": float(np.mean(model_scores)),
    }
    result["peak_rss"] = peak_rss_mib()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
