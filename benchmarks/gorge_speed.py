"""Gorge Chase simulator speed: steps/s of the Gym env (sb3_realm/GorgeChase-v0, one process, random legal actions,
full observation) and of the protocol env (GorgeCompetitionEnv: reset -> env_obs, step -> (env_reward, env_obs)),
against MiniGrid DoorKey-8x8 with its image observation, in the same run; plus the memory of the distance rows the
monsters' move reads. Prints JSON.

    python benchmarks/gorge_speed.py [--steps 50000] [--repeats 3] [--map own_1]

The repeats interleave the three envs, so that a disturbance from other processes hits all of them alike; the best
repeat of each is reported. The first repeat starts with an empty distance-row cache (each hero cell's BFS row is
computed at its first use and kept), so it includes the cache's filling; ``gym_first_repeat_steps_per_s`` shows it.
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
from sb3_realm.games.gorge.env import GorgeEnv, shipped_map
from sb3_realm.games.gorge.maps import GorgeMap
from sb3_realm.games.gorge.observation import GorgeCompetitionEnv

GYM_ID = "sb3_realm/GorgeChase-v0"


@dataclass
class Args:
    steps: int = 50_000
    """env steps per timed repeat"""
    repeats: int = 3
    """timed repeats per env; the best is reported (the least disturbed by other processes)"""
    map: str = "own_1"
    """shipped map played by both Gorge envs (own_1 .. own_5)"""
    seed: int = 0
    """seed of the envs and of the random actions"""


def make_gym(args: Args) -> tuple[gym.Env, str]:
    if GYM_ID in gym.registry:
        return gym.make(GYM_ID, map_name=args.map), f"{GYM_ID} via gym.make, map={args.map}"
    return GorgeEnv(map_name=args.map), f"GorgeEnv(map_name={args.map!r}) ({GYM_ID} not registered)"


def time_gym(env: gym.Env, args: Args) -> tuple[float, int]:
    masks = env.unwrapped.action_masks
    u = np.random.default_rng(args.seed).random(args.steps)  # one uniform per step, mapped onto the legal actions
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


def time_protocol(game_map: GorgeMap, args: Args) -> tuple[float, int]:
    env = GorgeCompetitionEnv({1: game_map}, seed=args.seed)
    conf = {"env_conf": {"map": [1]}}
    u = np.random.default_rng(args.seed).random(args.steps)
    obs = env.reset(conf)
    episodes = 0
    start = time.perf_counter()
    for i in range(args.steps):
        legal = 16 if obs["observation"]["legal_action"][8] else 8
        _, obs = env.step(int(u[i] * legal))
        if obs["terminated"] or obs["truncated"]:
            obs = env.reset(conf)
            episodes += 1
    return args.steps / (time.perf_counter() - start), episodes


def time_minigrid(args: Args) -> float:
    import minigrid  # noqa: F401  (registers MiniGrid envs)

    env = gym.make("MiniGrid-DoorKey-8x8-v0")
    actions = np.random.default_rng(args.seed).integers(env.action_space.n, size=args.steps)
    env.reset(seed=args.seed)
    start = time.perf_counter()
    for i in range(args.steps):
        _, _, terminated, truncated, _ = env.step(int(actions[i]))  # obs["image"]: (7, 7, 3) uint8
        if terminated or truncated:
            env.reset()
    return args.steps / (time.perf_counter() - start)


def full_table(game_map: GorgeMap) -> dict:
    """Every BFS row of the map built at once on a private copy (the cost a table computed up front would have)."""
    fresh = GorgeMap(game_map.walkable, game_map.name)
    n = fresh.road_count
    start = time.perf_counter()
    for first in range(0, n, 512):
        fresh._bfs_rows(list(range(first, min(n, first + 512))))  # the batched builder
    seconds = time.perf_counter() - start
    return {"road_cells": n, "bytes": fresh.row_cache_info()["full_table_bytes"], "build_s": round(seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, default=default,
                            type=type(default) if default is not None else str)
    args = Args(**vars(parser.parse_args()))
    env, label = make_gym(args)
    game_map = shipped_map(args.map)
    gym_runs, proto_runs, mini_runs = [], [], []
    for _ in range(args.repeats):
        gym_runs.append(time_gym(env, args))
        proto_runs.append(time_protocol(game_map, args))
        mini_runs.append(time_minigrid(args))
    best_gym, best_proto, best_mini = (max(r for r, *_ in gym_runs), max(r for r, *_ in proto_runs),
                                       max(mini_runs))
    cache = game_map.row_cache_info()
    print(json.dumps({
        "benchmark": "gorge_speed",
        "gym_env": label,
        "gym_steps_per_s": round(best_gym),
        "gym_steps_per_s_all": [round(r) for r, _ in gym_runs],
        "gym_first_repeat_steps_per_s": round(gym_runs[0][0]),
        "gym_episodes_per_repeat": gym_runs[0][1],
        "protocol_env": f"GorgeCompetitionEnv, map={args.map}, env_obs dicts",
        "protocol_steps_per_s": round(best_proto),
        "protocol_steps_per_s_all": [round(r) for r, _ in proto_runs],
        "minigrid_env": "MiniGrid-DoorKey-8x8-v0 via gym.make (image observation)",
        "minigrid_steps_per_s": round(best_mini),
        "minigrid_steps_per_s_all": [round(m) for m in mini_runs],
        "ratio_gym_over_minigrid": round(best_gym / best_mini, 2),
        "ratio_gym_over_protocol": round(best_gym / best_proto, 2),
        "distance_rows": {"cached_rows": cache["rows"], "cached_bytes": cache["bytes"],
                          "row_bytes": cache["row_bytes"], "hits": cache["hits"], "misses": cache["misses"],
                          "limit_bytes_per_map": cache["limit"]},
        "distance_full_table": full_table(game_map),
        "steps_per_repeat": args.steps,
        "peak_rss": peak_rss_mib(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
