"""robot_vacuum's env speed: steps/s of sb3_realm/RobotVacuum-v0 by id (one process, random legal moves) with its
observations (the features with their planner; ``observation="raw"``, the platform's own view; ``model_input=False``,
the simulator alone with zero observations) against MiniGrid DoorKey-8x8 with its image observation, in the same run.
Prints JSON.

    python benchmarks/vacuum_env_speed.py [--steps 100000] [--features-steps 5000] [--repeats 3] [--map own_1]

The repeats interleave the envs, so that a disturbance from other processes hits all of them alike; the best repeat
of each is reported.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from env_speed import time_minigrid  # benchmarks/env_speed.py, beside this script
from rss import peak_rss_mib
from sb3_realm_vacuum.spec import ENV_ID

from sb3_realm.games import registry


@dataclass
class Args:
    steps: int = 100_000
    """env steps per timed repeat of MiniGrid, the raw observation and the simulator alone"""
    features_steps: int = 5_000
    """env steps per timed repeat of the default observation (its planner runs each step)"""
    repeats: int = 3
    """timed repeats per env; the best is reported"""
    map: str = "own_1"
    """shipped map played"""
    seed: int = 0
    """seed of the envs and of the random actions"""


def time_env(env: gym.Env, steps: int, seed: int) -> tuple[float, int]:
    """Steps/s and episodes of ``steps`` random legal moves."""
    masks = env.unwrapped.action_masks
    u = np.random.default_rng(seed).random(steps)
    env.reset(seed=seed)
    episodes = 0
    start = time.perf_counter()
    for i in range(steps):
        legal = np.flatnonzero(masks())
        _, _, terminated, truncated, _ = env.step(int(legal[int(u[i] * len(legal))]))
        if terminated or truncated:
            env.reset()
            episodes += 1
    return steps / (time.perf_counter() - start), episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default, type=type(default))
    args = Args(**vars(parser.parse_args()))
    registry.get("sb3_realm_vacuum.spec:SPEC")  # registers the id where the package is not installed
    envs = {"features": ({"map_name": args.map}, args.features_steps),
            "raw": ({"map_name": args.map, "observation": "raw"}, args.steps),
            "simulator": ({"map_name": args.map, "model_input": False}, args.steps)}
    runs: dict[str, list[tuple[float, int]]] = {name: [] for name in envs}
    mini = []
    for _ in range(args.repeats):
        for name, (kwargs, steps) in envs.items():
            runs[name].append(time_env(gym.make(ENV_ID, **kwargs), steps, args.seed))
        mini.append(time_minigrid(argparse.Namespace(steps=args.steps, seed=args.seed)))
    best_mini = max(mini)
    print(json.dumps({
        "benchmark": "vacuum_env_speed",
        "minigrid_env": "MiniGrid-DoorKey-8x8-v0 (image observation)",
        "minigrid_steps_per_s": round(best_mini),
        "minigrid_steps_per_s_all": [round(m) for m in mini],
        "vacuum": {name: {"env": f"{ENV_ID} via gym.make, {kwargs}",
                          "steps_per_s": round(max(r for r, _ in runs[name])),
                          "steps_per_s_all": [round(r) for r, _ in runs[name]],
                          "episodes_per_repeat": runs[name][0][1], "steps_per_repeat": steps,
                          "ratio_over_minigrid": round(max(r for r, _ in runs[name]) / best_mini, 2)}
                   for name, (kwargs, steps) in envs.items()},
        "peak_rss": peak_rss_mib(), "python": platform.python_version(), "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
