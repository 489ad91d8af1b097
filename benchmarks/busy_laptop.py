"""The main job's first rounds alone and beside busy processes: wall time, each round's parts (collect, fit,
evaluate) and the peak memory of the command with its workers, as JSON.

    python benchmarks/busy_laptop.py
    python benchmarks/busy_laptop.py --repeat 2 --set imitation.expert_games=40 --set eval_games=40

runs ``sb3-realm imitate --config configs/realm/imitate/quick.yaml --no-progress --set imitation.rounds=1`` (rounds 0
and 1 of the main job) into a temporary folder, alone and then beside ``--busy`` busy loops (``python -c 'while True:
pass'``) at the lowest priority (nice 19; on Windows the idle priority class), ``--repeat`` times in turn, and prints
each run and the ratio of the medians (beside / alone). A machine with other work on it should cost the job in
proportion to the cores the other work takes, not many times that; on a machine that already runs other work, "alone"
means beside that work only. Peak memory sums the resident memory of the command and every process under it (its
worker processes), sampled every ``--interval`` seconds (Linux's /proc, else psutil).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from peak_memory import psutil, tree_rss  # benchmarks/peak_memory.py, beside this script

REPO = Path(__file__).resolve().parents[1]
GIB = 1024 ** 3


def start_busy(count: int) -> list[subprocess.Popen]:
    """``count`` busy loops at the lowest priority."""
    if os.name == "nt":
        kwargs: dict = {"creationflags": subprocess.IDLE_PRIORITY_CLASS}
    else:
        kwargs = {"preexec_fn": lambda: os.nice(19)}
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], **kwargs) for _ in range(count)]


def wait_policy() -> str | None:
    """``OMP_WAIT_POLICY`` as the command sees it once the package is imported (None: OpenMP's own default)."""
    probe = "import os, sb3_realm; print(os.environ.get('OMP_WAIT_POLICY', ''))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, encoding="utf-8")
    return out.stdout.strip() or None


def run_job(command: list[str], out: Path, interval: float) -> dict:
    """Run the imitation ``command`` (its run folder ``out``): wall time, peak memory and each round's parts."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_tree = peak_own = 0
    while proc.poll() is None:
        total, own, _ = tree_rss(proc.pid)
        peak_tree, peak_own = max(peak_tree, total), max(peak_own, own)
        time.sleep(interval)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    result = {"returncode": proc.returncode, "wall_s": round(wall, 1),
              "peak_rss_with_workers_gib": round(peak_tree / GIB, 2), "peak_rss_command_gib": round(peak_own / GIB, 2)}
    report = out / "eval.json"
    if proc.returncode == 0 and report.is_file():
        history = json.loads(report.read_text(encoding="utf-8"))["history"]
        result["rounds"] = [{k: r[k] for k in ("round", "collect_s", "fit_s", "eval_s")} for r in history]
    else:
        result["error"] = stderr.strip().splitlines()[-1:] or ["no eval.json"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/realm/imitate/quick.yaml", help="imitation config (the main job)")
    parser.add_argument("--rounds", type=int, default=1, help="last DAgger round (default 1: rounds 0 and 1)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="more config overrides, as imitate's --set (repeatable)")
    parser.add_argument("--busy", type=int, default=1, help="busy loops beside the job (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each setting, in turn (default 1)")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between memory samples (default 0.5)")
    args = parser.parse_args()
    if args.rounds < 0 or args.busy < 1 or args.repeat < 1 or args.interval <= 0:
        parser.error("--rounds must be >= 0, --busy and --repeat >= 1, --interval > 0")
    if psutil is None and not os.path.isdir("/proc"):
        parser.error("this system has neither psutil nor /proc; pip install psutil and run it again")
    runs: list[dict] = []
    base = Path(tempfile.mkdtemp(prefix="sb3-realm-busy-"))
    try:
        for repeat in range(args.repeat):
            for setting in ("alone", "busy"):
                out = base / f"{setting}-{repeat}"
                command = [sys.executable, "-m", "sb3_realm.cli", "imitate", "--config", args.config, "--out",
                           str(out), "--no-progress", "--set", f"imitation.rounds={args.rounds}"]
                for item in args.set:
                    command += ["--set", item]
                busy = start_busy(args.busy) if setting == "busy" else []
                try:
                    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
                    runs.append({"setting": setting, "busy_loops": len(busy), "load_at_start": load,
                                 **run_job(command, out, args.interval)})
                finally:
                    for proc in busy:
                        proc.kill()
                        proc.wait()
                shutil.rmtree(out, ignore_errors=True)
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    walls = {s: [r["wall_s"] for r in runs if r["setting"] == s and r["returncode"] == 0] for s in ("alone", "busy")}
    medians = {s: statistics.median(w) if w else None for s, w in walls.items()}
    print(json.dumps({
        "command": "sb3-realm imitate --config " + args.config + " --no-progress --set imitation.rounds="
                   + str(args.rounds) + "".join(f" --set {item}" for item in args.set),
        "cpus": os.cpu_count(), "omp_wait_policy": wait_policy(),
        "median_wall_s": medians,
        "busy_over_alone": round(medians["busy"] / medians["alone"], 2) if all(medians.values()) else None,
        "runs": runs}, indent=2))
    return 0 if all(r["returncode"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
