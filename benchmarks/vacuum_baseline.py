"""The official robot_vacuum baseline's recipe (its 69-number observation, its reward, its MLP and PPO settings;
sb3_realm_vacuum.baseline) trained with SB3's PPO for a wall-time budget, then scored on the games every
``sb3-realm eval --game robot_vacuum`` plays: the stand-ins of the hidden maps (``--protocol hidden``), the same env
seeds. Prints JSON (and writes it with ``--out``).

    python benchmarks/vacuum_baseline.py --budget-s 3600 --games 10 --out runs/vacuum-baseline.json

The training maps are the package's own ``own_1`` .. ``own_8`` (those of games/vacuum/configs/imitate.yaml), 8 envs
in one process (DummyVecEnv), one torch thread; the model plays greedily (the baseline's ``exploit``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script
from sb3_realm_vacuum.baseline import NET_ARCH, PPO_SETTINGS, BaselineEnv
from sb3_realm_vacuum.env import VacuumEnv
from sb3_realm_vacuum.protocols import TRAINING_MAPS, protocol_configs
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_realm.atomic import atomic_write
from sb3_realm.evaluation.protocols import game_seed


@dataclass
class Args:
    budget_s: float = 600.0
    """training wall time, seconds"""
    games: int = 10
    """games per stand-in map"""
    seed: int = 0
    """the evaluation's seed (env seeds of its games) and the training seed"""
    n_envs: int = 8
    """training envs"""
    n_steps: int = 512
    """PPO rollout steps per env"""
    batch_size: int = 2048
    """PPO minibatch"""
    out: str = ""
    """JSON file to write (atomically); empty: print only"""


class _Budget(BaseCallback):
    def __init__(self, budget_s: float) -> None:
        super().__init__()
        self.budget_s, self.start = budget_s, time.perf_counter()

    def _on_step(self) -> bool:
        return time.perf_counter() - self.start < self.budget_s


def make_env(rank: int):
    def build():
        env = VacuumEnv(map_names=list(TRAINING_MAPS), observation="raw")
        env.reset(seed=rank)
        return BaselineEnv(env)
    return build


def evaluate(model: PPO, args: Args) -> list[dict]:
    env = BaselineEnv(VacuumEnv(observation="raw"))
    out = []
    for i, conf in enumerate(protocol_configs("hidden", games=args.games)):
        obs, _ = env.reset(seed=game_seed(args.seed, i), options=conf)
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
        out.append({"map": conf["map_name"], "score": info["score"], "steps": info["steps"], "end": info["end"]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default, type=type(default))
    args = Args(**vars(parser.parse_args()))
    torch.set_num_threads(1)
    venv = DummyVecEnv([make_env(i) for i in range(args.n_envs)])
    model = PPO("MlpPolicy", venv, n_steps=args.n_steps, batch_size=args.batch_size, seed=args.seed, device="cpu",
                policy_kwargs={"net_arch": NET_ARCH, "activation_fn": torch.nn.ReLU}, verbose=0, **PPO_SETTINGS)
    start = time.perf_counter()
    model.learn(total_timesteps=10**12, callback=_Budget(args.budget_s))
    train_s = time.perf_counter() - start
    games = evaluate(model, args)
    maps = {}
    for g in games:
        maps.setdefault(g["map"], []).append(g["score"])
    report = {
        "benchmark": "vacuum_baseline",
        "recipe": "the official baseline's observation (69), reward and MLP 128-64 with SB3 PPO",
        "train_s": round(train_s, 1), "env_steps": int(model.num_timesteps),
        "steps_per_s": round(model.num_timesteps / train_s, 1),
        "games": len(games), "mean_score": float(np.mean([g["score"] for g in games])),
        "cells_a_step": float(np.sum([g["score"] for g in games]) / np.sum([g["steps"] for g in games])),
        "per_map": {m: float(np.mean(s)) for m, s in maps.items()},
        "ends": {e: sum(g["end"] == e for g in games) for e in ("completed", "battery", "collision")},
        "game_scores": [g["score"] for g in games],
        "peak_rss": peak_rss_mib(), "python": platform.python_version(), "cpu": platform.processor() or
        platform.machine(), "seed": args.seed,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        atomic_write(Path(args.out), lambda f: f.write((text + "\n").encode("utf-8")))


if __name__ == "__main__":
    main()
