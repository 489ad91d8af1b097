"""Robot Vacuum fidelity: the agreement of the simulator (``sb3_realm_vacuum.core.VacuumGame``) with the public
per-step logs of the official game core and the logs of an official evaluation task, where the map is not needed
(battery per step and on charging, cells cleaned per step, blocked moves, the nearest official robot's distance
change, episode ends). Prints the report of :func:`sb3_realm_vacuum.fidelity.fidelity_report` as JSON.

    python benchmarks/vacuum_fidelity.py [--logs DIR] [--eval-logs DIR] [--house-seeds 1 2] [--seed 0]
        [--sim-scale 2] [--out FILE]

``--logs`` defaults to ``../shared/data/vacuum/core_logs`` beside the repository, ``--eval-logs`` to
``../shared/data/vacuum/eval_task_logs`` (left out when that folder is absent and not named). The nearest official
robot's distance change is simulated on the open map and on the generated house maps of ``--house-seeds``
(``sb3_realm_vacuum.maps.generate_map``; none with ``--house-seeds`` given no value).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from sb3_realm_vacuum.fidelity import fidelity_report, open_map
from sb3_realm_vacuum.maps import generate_map

from sb3_realm.atomic import atomic_write

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "vacuum"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--logs", default=str(DATA / "core_logs"), help="core_logs folder, or one run folder of it")
    parser.add_argument("--eval-logs", default=None,
                        help="eval_task_logs folder, or one task folder (default: ../shared/data/vacuum/"
                             "eval_task_logs beside the repository, when present)")
    parser.add_argument("--house-seeds", type=int, nargs="*", default=[1, 2],
                        help="seeds of generated house maps to simulate the official robots on, beside the open map")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulator's random draws")
    parser.add_argument("--sim-scale", type=float, default=2.0,
                        help="simulated in-view transitions per logged one, for the distance-change histogram")
    parser.add_argument("--out", default=None, help="also write the JSON to this file")
    args = parser.parse_args()
    if not Path(args.logs).is_dir():
        parser.error(f"--logs {args.logs}: no such folder; pass the core_logs folder (it is "
                     "../shared/data/vacuum/core_logs beside the checkout)")
    eval_logs = args.eval_logs
    if eval_logs is None and (DATA / "eval_task_logs").is_dir():
        eval_logs = str(DATA / "eval_task_logs")
    if args.sim_scale <= 0:
        parser.error(f"--sim-scale {args.sim_scale}: give a number > 0, e.g. 2")
    game_maps = [open_map()] + [generate_map(seed, f"house_{seed}") for seed in args.house_seeds]
    start = time.perf_counter()
    report = fidelity_report(args.logs, eval_logs=eval_logs, game_maps=game_maps, seed=args.seed,
                             sim_scale=args.sim_scale)
    seconds = time.perf_counter() - start
    text = json.dumps({
        "benchmark": "vacuum_fidelity",
        "summary": {name: check["share"] for name, check in report["checks"].items()},
        "npc_delta_tvd": {name: m["comparison"]["tvd"] for name, m in report["npc_delta"]["maps"].items()},
        "report": report,
        "seconds": round(seconds, 2),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpu": platform.processor() or platform.machine(),
    }, indent=2)
    print(text)
    if args.out:
        atomic_write(args.out, lambda f: f.write((text + "\n").encode("utf-8")))


if __name__ == "__main__":
    main()
