"""robot_vacuum yardstick: the coverage planner knowing the whole game (``coverage``,
:class:`sb3_realm_vacuum.experts.CoveragePolicy`) and the observation-only planner (``planner``,
:class:`sb3_realm_vacuum.experts.ObservedPolicy`) on the same games: the maps by name, ``--games`` games a map with
game seeds ``--seed`` .. ``--seed + games - 1`` (the same spawns and official robots' draws for both experts), under
the default settings (battery_max 200, 4 chargers, 4 official robots, max_step 1000) unless told otherwise. Prints
JSON (and writes it to ``--out``): per map and overall, each expert's mean score, cells a step, battery deaths,
collisions, charges, completed share and decision time a step (mean, p99; the planner's includes its memory's
update, not the building of the observation), per map the scores and the failed games (seed, reason, step), and the
peak RSS.

    python benchmarks/vacuum_yardstick.py [--maps standin_1 ... standin_5] [--games 4] [--seed 0] [--out FILE]
        [--max-step 1000] [--battery-max 200] [--robot-count 4] [--charger-count 4]

``--maps`` takes shipped map names (``own_1`` .. ``own_10``, ``standin_1`` .. ``standin_5``) and map files (the
competition's ``robot_vacuum_map_<k>.json`` or this package's own).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "games" / "vacuum") not in sys.path:  # the package uninstalled: import it from the checkout
    sys.path.append(str(REPO / "games" / "vacuum"))

from sb3_realm_vacuum.core import VacuumGame  # noqa: E402
from sb3_realm_vacuum.experts import CoveragePolicy, ObservedPolicy  # noqa: E402
from sb3_realm_vacuum.maps import SHIPPED_MAPS, load_map, shipped_map  # noqa: E402
from sb3_realm_vacuum.observation import env_obs  # noqa: E402
from sb3_realm_vacuum.rules import VacuumConfig  # noqa: E402

DEFAULT_MAPS = tuple(f"standin_{k}" for k in range(1, 6))
EXPERTS = {"coverage": CoveragePolicy, "planner": ObservedPolicy}


class GameView:
    """What the experts read of an env: ``unwrapped.game`` and ``unwrapped.platform_obs()``."""

    def __init__(self, game: VacuumGame) -> None:
        self.game = game
        self.unwrapped = self

    def platform_obs(self) -> dict:
        return env_obs(self.game)


def load(name: str):
    """A shipped map by name, else a map file."""
    if name in SHIPPED_MAPS:
        return shipped_map(name)
    if Path(name).is_file():
        return load_map(name)
    raise ValueError(f"--maps {name!r} is neither a shipped map ({', '.join(SHIPPED_MAPS)}) nor a map file; name "
                     "one of those or give a file's path")


def play(expert: str, game_map, config: VacuumConfig, seed: int) -> tuple[dict, list[float]]:
    """One game of ``expert`` with game seed ``seed``: its figures and each step's decision time (s)."""
    game = VacuumGame(game_map, config, np.random.default_rng(seed))
    view = GameView(game)
    policy = EXPERTS[expert](view)
    policy.reset(view)
    times = []
    observed = isinstance(policy, ObservedPolicy)
    while not game.done:
        obs = view.platform_obs() if observed else None
        start = time.perf_counter()
        action = policy.act_obs(obs) if observed else policy.act(view)
        times.append(time.perf_counter() - start)
        game.step(action)
    row = {"seed": seed, "score": game.clean_score, "steps": game.step_no, "fail_reason": game.fail_reason,
           "charges": game.charge_count, "completed": bool(game.truncated and not game.terminated)}
    return row, times


def summarise(rows: list[dict], times: list[float], max_step: int) -> dict:
    """The figures of a list of games (``rows`` from :func:`play`) and their decision times."""
    scores = np.array([r["score"] for r in rows], dtype=float)
    ms = 1000.0 * np.asarray(times, dtype=float)
    return {
        "games": len(rows),
        "mean_score": round(float(scores.mean()), 1),
        "score_std": round(float(scores.std()), 1),
        "cells_per_step": round(float(scores.mean() / max_step), 3),  # per step of the episode's length
        "battery_deaths": sum(r["fail_reason"] == "battery" for r in rows),
        "collisions": sum(r["fail_reason"] == "collision" for r in rows),
        "mean_charges": round(float(np.mean([r["charges"] for r in rows])), 2),
        "completed_share": round(float(np.mean([r["completed"] for r in rows])), 3),
        "ms_per_step_mean": round(float(ms.mean()), 3) if ms.size else None,
        "ms_per_step_p99": round(float(np.percentile(ms, 99)), 3) if ms.size else None,
    }


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=list(DEFAULT_MAPS), help="shipped map names or map files")
    parser.add_argument("--games", type=int, default=4, help="games a map (game seeds seed .. seed + games - 1)")
    parser.add_argument("--seed", type=int, default=0, help="first game seed")
    parser.add_argument("--experts", nargs="+", choices=list(EXPERTS), default=list(EXPERTS))
    parser.add_argument("--max-step", type=int, default=1000)
    parser.add_argument("--battery-max", type=int, default=200)
    parser.add_argument("--robot-count", type=int, default=4)
    parser.add_argument("--charger-count", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON report here")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error(f"--games {args.games}: play at least 1 game a map")
    try:
        config = VacuumConfig(max_step=args.max_step, battery_max=args.battery_max, robot_count=args.robot_count,
                              charger_count=args.charger_count)
        maps = {name: load(name) for name in args.maps}
    except ValueError as exc:
        parser.error(str(exc))
    seeds = list(range(args.seed, args.seed + args.games))
    per_map: dict = {}
    overall: dict = {e: ([], []) for e in args.experts}
    for name, game_map in maps.items():
        per_map[name] = {}
        for expert in args.experts:
            rows, times = [], []
            for seed in seeds:
                row, t = play(expert, game_map, config, seed)
                rows.append(row)
                times.extend(t)
            per_map[name][expert] = summarise(rows, times, config.max_step)
            per_map[name][expert]["scores"] = [r["score"] for r in rows]
            per_map[name][expert]["failures"] = [{"seed": r["seed"], "reason": r["fail_reason"], "step": r["steps"]}
                                                 for r in rows if r["fail_reason"]]
            overall[expert][0].extend(rows)
            overall[expert][1].extend(times)
    report = {
        "benchmark": "vacuum_yardstick",
        "env_conf": {k: v for k, v in config.to_usr_conf().items() if k not in ("map", "map_random")},
        "seeds": seeds,
        "overall": {e: summarise(rows, times, config.max_step) for e, (rows, times) in overall.items()},
        "maps": per_map,
        "peak_rss": peak_rss_mib(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        write_atomic(args.out, text + "\n")
    return report


if __name__ == "__main__":
    main()
