"""Gorge Chase yardstick: the scripted policy (:class:`sb3_realm.games.gorge.experts.ScriptedPolicy`) and random legal
play on the open maps under the game's named settings, fixed seeds (env seeds 0..games-1 per map). Prints JSON, the
figures keyed by settings, then by map.

    python benchmarks/gorge_yardstick.py [--maps open_9 open_10] [--maps-dir DIR] [--games 20] [--random-games 50]
        [--settings default final]

``--maps`` takes open map ids (``open_<k>``, read from ``--maps-dir``) and shipped maps (``own_1`` .. ``own_5``).
``--maps-dir`` defaults to ``$SB3_REALM_GORGE_MAPS``, else ``../shared/data/gorge`` beside the repository.
``--settings`` names one or more of :data:`sb3_realm.games.gorge.rules.SETTINGS`: ``default`` (the game as shipped)
and ``final`` (the final round's: talent_cooldown 200, monster_interval 200, monster_speedup 300, buff_cooldown 200,
max_step 1000).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.experts import ScriptedPolicy, local_tables
from sb3_realm.games.gorge.rules import SETTINGS, GorgeConfig

REPO = Path(__file__).resolve().parents[1]


def default_maps_dir() -> str:
    return os.environ.get("SB3_REALM_GORGE_MAPS") or str(REPO.parent / "shared" / "data" / "gorge")


def summarise(rows: list[dict], seconds: float) -> dict:
    """Per-map figures of a list of episode summaries (``GorgeEnv`` end-of-episode ``info``)."""
    steps = np.array([r["steps"] for r in rows], dtype=float)
    caught = [r for r in rows if r["caught"]]
    late = [r for r in caught if r["caught_after_speedup"]]
    return {
        "games": len(rows),
        "mean_score": round(float(np.mean([r["score"] for r in rows])), 1),
        "score_std": round(float(np.std([r["score"] for r in rows])), 1),
        "survival_share": round(float(np.mean([not r["caught"] for r in rows])), 3),
        "mean_steps": round(float(steps.mean()), 1),
        "mean_treasures": round(float(np.mean([r["treasures"] for r in rows])), 2),
        "mean_flashes": round(float(np.mean([r["flash_used"] for r in rows])), 2),
        "mean_buffs": round(float(np.mean([r["buff_used"] for r in rows])), 2),
        "caught_before_speedup": len(caught) - len(late),
        "caught_after_speedup": len(late),
        "mean_death_step_after_speedup": round(float(np.mean([r["steps"] for r in late])), 1) if late else None,
        "ms_per_step": round(1000 * seconds / max(float(steps.sum()), 1.0), 3),
    }


def play(env: GorgeEnv, games: int, policy: ScriptedPolicy | None) -> dict:
    """``games`` episodes with env seeds 0..games-1: the policy's, or random legal actions (seeded per game)."""
    rows, seconds = [], 0.0
    for seed in range(games):
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        if policy is not None:
            policy.reset(env)
        done, info = False, {}
        while not done:
            start = time.perf_counter()
            if policy is not None:
                action = policy.act(env, obs)
            else:
                action = int(rng.choice(np.flatnonzero(env.action_masks())))
            seconds += time.perf_counter() - start
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        rows.append(info)
    return summarise(rows, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=["open_9", "open_10"],
                        help="open map ids (open_<k>) and shipped maps (own_1 .. own_5)")
    parser.add_argument("--maps-dir", default=default_maps_dir(), help="folder of gorge_chase_map_<k>.json")
    parser.add_argument("--games", type=int, default=20, help="scripted games per map (seeds 0..games-1)")
    parser.add_argument("--random-games", type=int, default=50, help="random games per map (seeds 0..n-1)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["default"],
                        help="the named settings to play, each on every map (default: default)")
    args = parser.parse_args()
    if len(set(args.settings)) < len(args.settings):
        parser.error(f"--settings {' '.join(args.settings)} names a setting twice; name each once")
    maps_dir = args.maps_dir if any(name.startswith("open_") for name in args.maps) else None
    by_settings = {}
    for settings in args.settings:
        results = {}
        for name in args.maps:
            env = GorgeEnv(map_names=[name], maps_dir=maps_dir, settings=settings)
            env.reset(seed=0)
            start = time.perf_counter()
            local_tables(env.game.game_map)
            tables_s = time.perf_counter() - start
            results[name] = {
                "scripted": play(env, args.games, ScriptedPolicy(env)),
                "random": play(env, args.random_games, None),
                "tables_s": round(tables_s, 2),
            }
        played = {k: v for k, v in GorgeConfig.from_usr_conf(SETTINGS[settings]).to_usr_conf().items()
                  if k not in ("map", "map_random")}  # the maps are --maps
        by_settings[settings] = {"env_conf": played, "maps": results}
    print(json.dumps({
        "benchmark": "gorge_yardstick",
        "settings": by_settings,
        "peak_rss": peak_rss_mib(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
