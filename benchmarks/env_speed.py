"""Env speed: steps/s of the package's Gym envs by id (one process, random legal actions) against MiniGrid DoorKey-8x8
with its image observation, in the same run: sb3_realm/Realm-v0 (full observation), sb3_realm/GorgeChase-v0 with its
two observations (the default, the features with their planner; ``observation="raw"``, the platform's own view) and
Gorge Chase's simulator alone (``model_input=False``: zero observations). Prints JSON.

    python benchmarks/env_speed.py [--steps 200000] [--gorge-steps 20000] [--features-steps 2000] [--repeats 3]
        [--map PATH] [--gorge-map own_1]

The repeats interleave the envs, so that a disturbance from other processes hits all of them alike; the best repeat
of each is reported. An untimed run of the Gorge Chase simulator first fills its map's cache of distance rows.
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
    gorge_steps: int = 20_000
    """env steps per timed repeat of Gorge Chase's raw observation and of its simulator alone"""
    features_steps: int = 2_000
    """env steps per timed repeat of Gorge Chase's default observation (its planner runs each step)"""
    map_path: str | None = None
    """map JSON for Realm-v0 (default: the shipped map)"""
    gorge_map: str = "own_1"
    """shipped map played by the Gorge Chase envs"""
    seed: int = 0
    """seed of the envs and of the random actions"""


GORGE_ID = "sb3_realm/GorgeChase-v0"


def gorge_envs(args: Args) -> dict[str, tuple[str, dict]]:
    """name -> (label, keyword arguments of gym.make(GORGE_ID, ...)) of the Gorge Chase envs timed."""
    return {
        "features": (f"{GORGE_ID} via gym.make, map={args.gorge_map} (default observation: the features and their "
                     "planner)", {"map_name": args.gorge_map}),
        "raw": (f"{GORGE_ID} via gym.make, map={args.gorge_map}, observation='raw' (the platform's own view)",
                {"map_name": args.gorge_map, "observation": "raw"}),
        "simulator": (f"{GORGE_ID} via gym.make, map={args.gorge_map}, model_input=False (zero observations)",
                      {"map_name": args.gorge_map, "model_input": False}),
    }


def time_realm(args: Args) -> tuple[float, int]:
    return time_env(gym.make("sb3_realm/Realm-v0", map_path=args.map_path), args.steps, args.seed)


def time_env(env: gym.Env, steps: int, seed: int) -> tuple[float, int]:
    """Steps/s and episodes of ``steps`` random legal actions (the moves, and the flashes when the mask allows them)."""
    masks = env.unwrapped.action_masks
    rng = np.random.default_rng(seed)
    u = rng.random(steps)  # one uniform per step, mapped onto the legal actions below
    env.reset(seed=seed)
    episodes = 0
    start = time.perf_counter()
    for i in range(steps):
        legal = 16 if masks()[8] else 8  # moves are always legal, flashes only when the talent is ready
        _, _, terminated, truncated, _ = env.step(int(u[i] * legal))
        if terminated or truncated:
            env.reset()
            episodes += 1
    return steps / (time.perf_counter() - start), episodes


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
    gorge = gorge_envs(args)
    gorge_steps = {"features": args.features_steps, "raw": args.gorge_steps, "simulator": args.gorge_steps}
    # untimed: fills the map's cache of distance rows (each hero cell's row is computed at its first use and kept),
    # which the first env timed would otherwise pay alone
    time_env(gym.make(GORGE_ID, **gorge["simulator"][1]), args.gorge_steps, args.seed)
    realm, mini = [], []
    gorge_runs: dict[str, list[tuple[float, int]]] = {name: [] for name in gorge}
    for _ in range(args.repeats):  # interleaved: a disturbance hits every env alike
        realm.append(time_realm(args))
        for name, (_label, kwargs) in gorge.items():
            gorge_runs[name].append(time_env(gym.make(GORGE_ID, **kwargs), gorge_steps[name], args.seed))
        mini.append(time_minigrid(args))
    best_realm, best_mini = max(r for r, _ in realm), max(mini)
    best_gorge = {name: max(r for r, _ in runs) for name, runs in gorge_runs.items()}
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
        "gorge": {name: {
            "env": gorge[name][0],
            "steps_per_s": round(best_gorge[name]),
            "steps_per_s_all": [round(r) for r, _ in runs],
            "episodes_per_repeat": runs[0][1],
            "steps_per_repeat": gorge_steps[name],
            "ratio_over_minigrid": round(best_gorge[name] / best_mini, 3),
        } for name, runs in gorge_runs.items()},
        "ratio_gorge_raw_over_simulator": round(best_gorge["raw"] / best_gorge["simulator"], 2),
        "ratio_gorge_raw_over_features": round(best_gorge["raw"] / best_gorge["features"], 1),
        "steps_per_repeat": args.steps,
        "peak_rss": peak_rss_mib(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
