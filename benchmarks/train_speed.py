"""Training throughput: env steps/s of each RL config (configs/realm/ppo.yaml, maskable_ppo.yaml, recurrent_ppo.yaml)
against SB3's default ``PPO("MultiInputPolicy", env)`` on the same env, in the same run. Prints JSON.

    python benchmarks/train_speed.py [--steps 16384] [--configs ppo maskable_ppo recurrent_ppo] [--subproc]

Each measurement trains a fresh model for ``--steps`` env steps after a warm-up rollout and reports steps/s of the
whole ``learn`` (rollouts + updates). ``--subproc`` also times the PPO config with SubprocVecEnv.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.training.config import load_config
from sb3_realm.training.run import build_model, make_vec_env


def time_learn(model, steps: int) -> float:
    model.learn(model.n_steps * model.n_envs)  # warm-up: one rollout and one update
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


def recommended(name: str, steps: int, vec_env: str | None = None) -> dict:
    overrides = ["seed=0", "device=cpu"] + ([f"env.vec_env={vec_env}"] if vec_env else [])
    config = load_config(f"configs/realm/{name}.yaml", overrides)
    torch.set_num_threads(config.torch_threads)
    venv = make_vec_env(config.env, config.seed, game=config.game)
    model = build_model(config, venv)
    try:
        sps = time_learn(model, steps)
    finally:
        venv.close()
    return {"config": f"configs/realm/{name}.yaml", "algo": config.algo.name, "n_envs": config.env.n_envs,
            "vec_env": config.env.vec_env, "torch_threads": config.torch_threads, "steps_per_s": round(sps)}


def sb3_default(steps: int, threads: int) -> dict:
    from stable_baselines3 import PPO

    torch.set_num_threads(threads)
    model = PPO("MultiInputPolicy", RealmEnv(), seed=0, device="cpu")
    return {"config": 'PPO("MultiInputPolicy", RealmEnv()) with SB3 defaults', "torch_threads": threads,
            "steps_per_s": round(time_learn(model, steps))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=16384, help="timed env steps per measurement")
    parser.add_argument("--default-steps", type=int, default=4096, help="timed env steps of the SB3 default")
    parser.add_argument("--configs", nargs="+", default=["ppo", "maskable_ppo", "recurrent_ppo"])
    parser.add_argument("--subproc", action="store_true", help="also time configs/realm/ppo.yaml with SubprocVecEnv")
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    baseline = sb3_default(args.default_steps, default_threads)
    results = [recommended(name, args.steps) for name in args.configs]
    if args.subproc:
        results.append(recommended("ppo", args.steps, vec_env="subproc"))
    for r in results:
        r["speedup_vs_sb3_default"] = round(r["steps_per_s"] / baseline["steps_per_s"], 2)
    print(json.dumps({"benchmark": "train_speed", "sb3_default": baseline, "recommended": results,
                      "timed_steps": args.steps, "torch": torch.__version__, "python": platform.python_version(),
                      "cpu_count": os.cpu_count(), "peak_rss": peak_rss_mib()}, indent=2))


if __name__ == "__main__":
    main()
