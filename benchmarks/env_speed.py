"""Env speed: steps/s of sb3_realm/Realm-v0 (one process, random legal actions, full observation) against
MiniGrid DoorKey-8x8 with its image observation, in the same run. Prints JSON.

    python benchmarks/env_speed.py [--steps 200000] [--repeats 3] [--map PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

import sb3_realm  # noqa: F401  (registers the envs)


@dataclass
class Args:
    steps: int = 200_000
    """env steps per timed repeat"""
    repeats: int = 3
    """timed repeats per env; the best is reported (the least disturbed by other processes)"""
    map_path: str | None = None
    """map JSON for Realm-v0 (default: the shipped map)"""
    seed: int = 0
    """seed of the envs and of the random actions"""


def time_realm(args: Args) -> tuple[float, int]:
    env = gym.make("sb3_realm/Realm-v0", map_path=args.map_path)
    masks = env.unwrapped.action_masks
    rng = np.random.default_rng(args.seed)
    u = rng.random(args.steps)  # one uniform per step, mapped onto the legal actions below
    env.reset(seed=args.seed)
    episodes = 0
    start = time.perf_counter()
    for i in range(args.steps):
        legal = 16 if masks()[8] else 8  # moves are always legal, flashes only when the talent is ready
        _, _, terminated, truncated, _ = env.step(int(u[i] * legal))
        if terminated or truncated:
            env.reset()
            episodes += 1
    return args.steps / (time.perf_counter() - start), episodes


def time_minigrid(args: Args) -> float:
    import minigrid  # noqa: F401  (registers MiniGrid envs)

    env = gym.make("MiniGrid-DoorKey-8x8-v0")
    actions = np.random.default_rng(args.seed).integers(env.action_space.n, size=args.steps)
    env.reset(seed=args.seed)
    start = time.perf_counter()
    for i in range(args.steps):
        _obs, _, terminated, truncated, _ = env.step(int(actions[i]))  # obs["image"]: (7, 7, 3) uint8
        if terminated or truncated:
            env.reset()
    return args.steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default,
                            type=type(default) if default is not None else str)
    args = Args(**vars(parser.parse_args()))
    realm = [time_realm(args) for _ in range(args.repeats)]
    mini = [time_minigrid(args) for _ in range(args.repeats)]
    best_realm, best_mini = max(r for r, _ in realm), max(mini)
    print(json.dumps({
        "benchmark": "env_speed",
        "realm_env": "sb3_realm/Realm-v0 via gym.make, map=" + (args.map_path or "default"),
        "realm_steps_per_s": round(best_realm),
        "realm_steps_per_s_all": [round(r) for r, _ in realm],
        "realm_episodes_per_repeat": realm[0][1],
        "minigrid_env": "MiniGrid-DoorKey-8x8-v0 (image observation)",
        "minigrid_steps_per_s": round(best_mini),
        "minigrid_steps_per_s_all": [round(m) for m in mini],
        "ratio_realm_over_minigrid": round(best_realm / best_mini, 2),
        "steps_per_repeat": args.steps,
        "peak_rss": peak_rss_mib(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
