"""Peak memory of a command together with its workers: runs the command, samples the resident memory (RSS) of its
process and of every process under it a few times a second, and prints the peak of their sum, the peak of the command's
own process, the most processes seen at once and the wall time, as JSON.

    python benchmarks/peak_memory.py -- sb3-realm imitate --config configs/realm/imitate/quick.yaml --out /tmp/quick \
        --no-progress

``rss.py`` beside it reads the kernel's own peaks (``getrusage``), which see a process and its largest finished child
but never the sum of processes that run at the same time; this script sums them. It reads Linux's ``/proc``
(where it also sums the proportional set sizes, PSS, which count the pages that processes share once), else
``psutil`` (macOS, Windows)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

try:
    import psutil
except ImportError:
    psutil = None

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _children_proc() -> dict[int, list[int]]:
    """Every process's children, from /proc/<pid>/stat (field 4 is the parent's id)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                stat = f.read()
        except OSError:  # ended since the listing
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(parent, []).append(int(entry))
    return children


def _rss_proc(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm", encoding="utf-8") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0


def _pss_proc(pid: int) -> int:
    """Proportional set size (shared pages split among the processes that share them), Linux only; 0 elsewhere."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def tree_pids(pid: int) -> list[int]:
    """``pid`` and every process under it (Linux's /proc)."""
    children = _children_proc()
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo.extend(children.get(current, []))
    return pids


def tree_rss(pid: int) -> tuple[int, int, int]:
    """(sum of the RSS of ``pid`` and all its descendants, RSS of ``pid`` alone, processes counted), in bytes."""
    if psutil is not None and not os.path.isdir("/proc"):
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0, 0, 0
        sizes = []
        for proc in procs:
            try:
                sizes.append(proc.memory_info().rss)
            except psutil.NoSuchProcess:
                sizes.append(0)
        return sum(sizes), sizes[0], len(procs)
    pids = tree_pids(pid)
    sizes = [_rss_proc(p) for p in pids]
    return sum(sizes), sizes[0], len(pids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples (default 0.2)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to measure, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --, e.g. -- sb3-realm demo --game realm --no-gif")
    if psutil is None and not os.path.isdir("/proc"):
        parser.error("this system has neither psutil nor /proc; pip install psutil and run it again")
    start = time.perf_counter()
    proc = subprocess.Popen(command)
    peak_tree = peak_main = most = peak_pss = 0
    while proc.poll() is None:
        total, own, count = tree_rss(proc.pid)
        peak_tree, peak_main, most = max(peak_tree, total), max(peak_main, own), max(most, count)
        if os.path.isdir("/proc"):  # the sum without pages counted twice (workers share the parent's forked pages)
            peak_pss = max(peak_pss, sum(_pss_proc(p) for p in tree_pids(proc.pid)))
        time.sleep(args.interval)
    wall = time.perf_counter() - start
    gib = 1024 ** 3
    print(json.dumps({"command": " ".join(command), "returncode": proc.returncode, "wall_s": round(wall, 1),
                      "peak_rss_with_workers_gib": round(peak_tree / gib, 2),
                      "peak_pss_with_workers_gib": round(peak_pss / gib, 2) if peak_pss else None,
                      "peak_rss_command_gib": round(peak_main / gib, 2), "most_processes": most,
                      "interval_s": args.interval}, indent=2))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
