"""Gorge Chase: the time per step of what runs inside the submission's ``exploit()`` before the network: the
observation-only planner (:class:`sb3_realm.games.gorge.planner.ObservationPlanner`: its memory, its searches and its
decision) and the features built on it (:func:`sb3_realm.games.gorge.features.encode`, which runs the planner). Prints
JSON.

    python benchmarks/gorge_agent_speed.py [--maps open_9 open_10 own_6 own_7 own_8 own_9 own_10] [--maps-dir DIR]
        [--games 3] [--settings default final] [--max-steps N] [--package DIR]

Each game is played by the planner's own choices on the test games of ``benchmarks/gorge_planner.py`` (the first
``--games`` of each map); every step, the platform observation (a JSON round trip of it, as the platform hands it
over) goes once through a fresh-per-game planner and once through a fresh-per-game feature state, each timed alone
with ``time.perf_counter`` in this one process (one core: numpy only, no threads). Reported per settings: the mean,
p50, p99 and max in ms over all steps, and per map the mean and p99; ``planner_cpu`` and ``features_cpu`` give the
same for the processor time of the step (``time.process_time``: what the step costs its core, without the time the
process waited while other processes had the cores); with the machine's 1-minute load average at the start and at
the end (other processes slow the wall-clock figures most). ``--max-steps N`` ends each game after N steps (a
quick look; the figures on docs/benchmarks.md play whole games).

``--package DIR`` (a folder that ``sb3-realm build-submission --layout gorge15`` wrote) also times the built package's
``Agent.exploit(env_obs)`` per step, the whole of what the platform calls (planner, features and the network), on the
same games played by the package's own choices, with torch on one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np
from gorge_planner import TEST_MAPS, check_args, default_maps_dir, jobs_of  # benchmarks/, beside this script
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.features import FeatureState, encode
from sb3_realm.games.gorge.planner import ObservationPlanner
from sb3_realm.games.gorge.rules import SETTINGS


def _load() -> float | None:
    """The machine's 1-minute load average (None where the system has none): other processes slow the timings."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _times(values: list[float]) -> dict:
    ms = np.asarray(values) * 1000.0
    return {"mean_ms": round(float(ms.mean()), 3), "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p99_ms": round(float(np.percentile(ms, 99)), 3), "max_ms": round(float(ms.max()), 3)}


def play(map_name: str, maps_dir: str | None, games: list[tuple[int, dict]],
         max_steps: int | None = None) -> tuple[list[float], list[float], int, list[float], list[float]]:
    """Play ``games`` (env seed, usr_conf) on one map, each for at most ``max_steps`` steps (None: the whole game);
    returns the planner's and the features' times per step, the steps played, and the planner's and the features'
    processor times per step."""
    env = GorgeEnv(map_names=[map_name], maps_dir=maps_dir, model_input=False)
    planner_times: list[float] = []
    feature_times: list[float] = []
    planner_cpu: list[float] = []
    feature_cpu: list[float] = []
    for seed, conf in games:
        env.reset(seed=int(seed), options=conf)
        planner, state = ObservationPlanner(), FeatureState()
        done, steps = False, 0
        while not done and steps != max_steps:
            observation = json.loads(json.dumps(env.platform_obs()["observation"]))
            start, cpu = time.perf_counter(), time.process_time()
            action = planner.act(observation)
            planner_times.append(time.perf_counter() - start)
            planner_cpu.append(time.process_time() - cpu)
            start, cpu = time.perf_counter(), time.process_time()
            encode(observation, state)
            feature_times.append(time.perf_counter() - start)
            feature_cpu.append(time.process_time() - cpu)
            assert state.choice == action  # the features run the same planner
            _, _, terminated, truncated, _ = env.step(action)
            done, steps = terminated or truncated, steps + 1
    return planner_times, feature_times, len(planner_times), planner_cpu, feature_cpu


def play_package(map_name: str, maps_dir: str | None, games: list[tuple[int, dict]], agent,
                 max_steps: int | None = None) -> tuple[list[float], list[float]]:
    """Play ``games`` on one map with a built package's Agent, each for at most ``max_steps`` steps (None: the whole
    game); returns the time of each ``exploit()`` call, wall clock and processor time."""
    env = GorgeEnv(map_names=[map_name], maps_dir=maps_dir, model_input=False)
    times: list[float] = []
    cpu: list[float] = []
    for seed, conf in games:
        env.reset(seed=int(seed), options=conf)
        agent.reset(json.loads(json.dumps(env.platform_obs())))
        done, steps = False, 0
        while not done and steps != max_steps:
            env_obs = json.loads(json.dumps(env.platform_obs()))
            start, start_cpu = time.perf_counter(), time.process_time()
            action = agent.exploit(env_obs)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            _, _, terminated, truncated, _ = env.step(int(action))
            done, steps = terminated or truncated, steps + 1
    return times, cpu


def _package_agent(folder: str, parser: argparse.ArgumentParser):
    """The Agent of a built 15.0.1 folder (after its manifest check), or a parser error that says what to pass."""
    from sb3_realm.agents import SubmissionPolicy  # torch: only with --package

    try:
        policy = SubmissionPolicy(folder)
    except (OSError, ValueError) as exc:
        parser.error(f"--package {folder!r}: {exc}")
    if policy.manifest.get("layout") != "gorge15":
        parser.error(f"--package {folder!r} is a package of the layout {policy.manifest.get('layout')!r}, not a Gorge "
                     "Chase one; pass a folder built with --layout gorge15")
    return policy.agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=list(TEST_MAPS), help="map names (open_<k>, own_<k>)")
    parser.add_argument("--maps-dir", default=default_maps_dir(), help="folder of gorge_chase_map_<k>.json")
    parser.add_argument("--games", type=int, default=3, help="games per map (the first of the test games)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["default", "final"])
    parser.add_argument("--max-steps", type=int, default=None,
                        help="end each game after this many steps (default: play whole games)")
    parser.add_argument("--package", help="a folder built by build-submission --layout gorge15: time its exploit()")
    args = parser.parse_args()
    args.jobs, args.policies = 1, ["planner"]
    if args.max_steps is not None and args.max_steps < 1:
        parser.error(f"--max-steps {args.max_steps} must be >= 1 (steps per game; leave it out to play whole games)")
    try:
        maps_dir = check_args(args)  # the planner benchmark's checks, before any game
    except ValueError as exc:
        parser.error(str(exc))
    agent = None
    if args.package is not None:
        import torch

        torch.set_num_threads(1)
        agent = _package_agent(args.package, parser)
    started = time.perf_counter()
    out: dict = {"benchmark": "gorge_agent_speed", "command": " ".join(sys.argv), "games_per_map": args.games,
                 "max_steps": args.max_steps,
                 "machine": {"cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                             "python": platform.python_version(), "numpy": np.__version__,
                             "load_average_start": _load()},
                 "settings": {}}
    jobs = jobs_of(args, maps_dir)
    for name in args.settings:
        per_map, all_planner, all_features, steps = {}, [], [], 0
        cpu_planner: list[float] = []
        cpu_features: list[float] = []
        for job in [j for j in jobs if j.settings == name]:
            map_name = job.map_name
            games = list(zip(job.seeds, job.confs, strict=True))
            planner_times, feature_times, n, planner_cpu, feature_cpu = play(map_name, maps_dir, games,
                                                                             args.max_steps)
            per_map[map_name] = {"steps": n, "planner": _times(planner_times), "features": _times(feature_times),
                                 "planner_cpu": _times(planner_cpu), "features_cpu": _times(feature_cpu)}
            all_planner += planner_times
            all_features += feature_times
            cpu_planner += planner_cpu
            cpu_features += feature_cpu
            steps += n
        out["settings"][name] = {"steps": steps, "planner": _times(all_planner), "features": _times(all_features),
                                 "planner_cpu": _times(cpu_planner), "features_cpu": _times(cpu_features),
                                 "per_map": per_map}
        if agent is not None:
            exploit: list[float] = []
            exploit_cpu: list[float] = []
            for job in [j for j in jobs if j.settings == name]:
                times, cpu = play_package(job.map_name, maps_dir, list(zip(job.seeds, job.confs, strict=True)), agent,
                                          args.max_steps)
                per_map[job.map_name]["exploit"] = _times(times)
                per_map[job.map_name]["exploit_cpu"] = _times(cpu)
                exploit += times
                exploit_cpu += cpu
            out["settings"][name]["exploit"] = {"steps": len(exploit), **_times(exploit)}
            out["settings"][name]["exploit_cpu"] = {"steps": len(exploit_cpu), **_times(exploit_cpu)}
    if agent is not None:
        out["package"] = os.path.basename(os.path.abspath(args.package))
    out["machine"]["load_average_end"] = _load()
    out["wall_s"] = round(time.perf_counter() - started, 1)
    out["peak_rss_mib"] = peak_rss_mib()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
