"""Throughput of the two executors (sb3_realm.executors) against the number of workers, on this machine: the Realm's
all-sets evaluation (``sb3-realm eval MODEL --protocol exhaustive``: every 9-treasure set of the 13 slots, 715 games,
with the oracle beside each) and the labelling of Gorge Chase's observation-only search (the expert ``search`` of
``configs/gorge/expert_iteration.yaml`` playing and labelling its own games, as ``Collector.run``).

For each executor and worker count: wall time, games (states) a second, the speed-up over one worker of the same
executor, the peak RSS of each worker process (sampled every 0.2 s; for Ray, its worker processes that ran a job) and
of Ray's own daemons, and whether the results equal the first configuration's (they must). A Ray instance is started
here for each Ray configuration (its start is timed apart, ``start_s``), unless ``--ray-address`` joins a cluster.
Prints JSON.

    python benchmarks/executors.py --task eval-realm --model runs/quick/final_model.zip --workers 1 2
    python benchmarks/executors.py --task label-gorge --games 8 --max-step 150 --workers 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm import games
from sb3_realm.evaluation import evaluate, write_json_atomic
from sb3_realm.executors import EXECUTORS, check_executor, connect_ray, disconnect_ray
from sb3_realm.imitation import Collector
from sb3_realm.imitation.expert import ExpertSpec

#: Ray's own processes, by the start of their command line
_RAY_DAEMONS = ("gcs_server", "raylet", "plasma_store", "log_monitor", "dashboard", "monitor.py", "runtime_env_agent")


def _proc(pid: str, name: str) -> str:
    with open(f"/proc/{pid}/{name}", encoding="utf-8", errors="replace") as f:
        return f.read()


class Sampler:
    """Peak RSS (the kernel's ``VmHWM``, MiB) and CPU seconds of the worker processes, read from ``/proc`` every
    ``interval`` s in a thread (Linux; elsewhere nothing is read): this process's children (its worker processes and
    the fork server's), and every Ray worker and daemon of this machine."""

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.workers: dict[str, dict] = {}
        self.daemons: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def _sample(self) -> None:
        if not os.path.isdir("/proc"):
            return
        me = str(os.getpid())
        for pid in (p for p in os.listdir("/proc") if p.isdigit() and p != me):
            try:
                cmd = _proc(pid, "cmdline").replace("\0", " ")
                status = dict(line.split(":", 1) for line in _proc(pid, "status").splitlines() if ":" in line)
                stat = _proc(pid, "stat").rsplit(")", 1)[1].split()
            except OSError:
                continue
            ray_worker = "default_worker.py" in cmd or cmd.startswith("ray::")
            daemon = any(name in cmd for name in _RAY_DAEMONS) and not ray_worker
            child = status.get("PPid", "").strip() == me or "multiprocessing" in cmd
            if not (ray_worker or daemon or child) or "VmHWM" not in status:
                continue
            peak = int(status["VmHWM"].split()[0]) / 1024
            if daemon:
                self.daemons[pid] = max(self.daemons.get(pid, 0.0), peak)
                continue
            cpu = (int(stat[11]) + int(stat[12])) / self._tick
            row = self.workers.setdefault(pid, {"peak_rss_mib": 0.0, "cpu_s": 0.0, "cpu_start": cpu})
            row["peak_rss_mib"] = max(row["peak_rss_mib"], peak)
            row["cpu_s"] = cpu - row["cpu_start"]

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        """The workers that ran (more than 1 s of CPU while sampled), and the daemons' total."""
        busy = sorted((round(r["peak_rss_mib"], 1) for r in self.workers.values() if r["cpu_s"] > 1.0), reverse=True)
        return {"worker_peak_rss_mib": busy, "ray_daemons_rss_mib": round(sum(self.daemons.values()), 1)}


def _eval_realm(args, executor: str, workers: int) -> tuple[list, int]:
    report = evaluate(args.model, "exhaustive", map_path=args.map_path, workers=workers, executor=executor,
                      ray_address=args.ray_address, yardstick=not args.no_yardstick)
    return [g.to_dict() for g in report.games], len(report.games)


def _label_gorge(args, executor: str, workers: int) -> tuple[list, int]:
    spec = games.get("gorge")
    conf = spec.episodes.config.from_usr_conf({"max_step": args.max_step}).training_usr_conf(4)
    played = [(100 + i, conf) for i in range(args.games)]
    with Collector(workers, executor=executor, ray_address=args.ray_address) as collector:
        rollouts = collector.run({"map_names": args.maps}, played, expert=ExpertSpec(args.expert, game="gorge"))
    block = rollouts.block
    fingerprint = [g.to_dict() for g in rollouts.games] + [block.actions.tolist()]
    return fingerprint, len(block)


TASKS = {"eval-realm": (_eval_realm, "games"), "label-gorge": (_label_gorge, "states")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--model", default=None, help="eval-realm: the checkpoint to evaluate")
    parser.add_argument("--map", dest="map_path", default=None, help="eval-realm: map JSON (default: the default map)")
    parser.add_argument("--no-yardstick", action="store_true", help="eval-realm: without the oracle beside each game")
    parser.add_argument("--games", type=int, default=8, help="label-gorge: games the expert plays and labels")
    parser.add_argument("--max-step", type=int, default=150, help="label-gorge: steps of each game")
    parser.add_argument("--maps", nargs="+", default=["own_1", "own_2", "own_3", "own_4"], help="label-gorge: maps")
    parser.add_argument("--expert", default="search", help="label-gorge: the labelling expert")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--executors", nargs="+", choices=EXECUTORS, default=list(EXECUTORS))
    parser.add_argument("--ray-address", default=None, help="join this cluster (default: a Ray instance started here)")
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args()
    if args.task == "eval-realm" and not args.model:
        parser.error("--task eval-realm needs --model PATH (a Realm checkpoint, e.g. runs/quick/final_model.zip)")
    if any(w < 1 for w in args.workers):
        parser.error(f"--workers {args.workers}: each must be >= 1")
    try:
        for executor in args.executors:
            check_executor(executor, args.ray_address if executor == "ray" else None)
    except ValueError as exc:
        parser.error(str(exc))
    run, unit = TASKS[args.task]
    rows, first = [], None
    for executor in args.executors:
        for workers in args.workers:
            start_s = 0.0
            if executor == "ray":
                t = time.perf_counter()
                connect_ray(args.ray_address, cpus=max(args.workers))
                start_s = time.perf_counter() - t
            with Sampler() as sampler:
                t = time.perf_counter()
                fingerprint, count = run(args, executor, workers)
                wall = time.perf_counter() - t
            if executor == "ray":
                disconnect_ray()
            first = fingerprint if first is None else first
            rows.append({"executor": executor, "workers": workers, "wall_s": round(wall, 2),
                         "start_s": round(start_s, 2), unit: count, f"{unit}_per_s": round(count / wall, 3),
                         "same_results": fingerprint == first, **sampler.summary()})
            print(json.dumps(rows[-1]), flush=True)
    for row in rows:
        base = next(r for r in rows if r["executor"] == row["executor"] and r["workers"] == min(args.workers))
        row["speedup"] = round(base["wall_s"] / row["wall_s"], 2)
        same = next((r for r in rows if r["executor"] == "processes" and r["workers"] == row["workers"]), None)
        if same is not None:
            row["vs_processes"] = round(row[f"{unit}_per_s"] / same[f"{unit}_per_s"], 3)
    out = {"task": args.task, "cpus": os.cpu_count(), "rows": rows, "driver_peak_rss_mib": peak_rss_mib()}
    if args.json_path:
        write_json_atomic(out, args.json_path)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
