"""benchmarks/peak_memory.py counts a command and the processes it starts together (the main job's memory figure
counts its workers, as the Gorge Chase recipe's does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from helpers import REPO, load_benchmark

CHILD = ("import subprocess, sys, time; data = bytearray(64 * 2**20); "
         "p = subprocess.Popen([sys.executable, '-c', 'import time; data = bytearray(64 * 2**20); time.sleep(3)']); "
         "p.wait()")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="the /proc reader; elsewhere the script reads psutil")
def test_the_tree_counts_a_process_and_its_children(monkeypatch):
    bench = load_benchmark("peak_memory", monkeypatch)
    proc = subprocess.Popen([sys.executable, "-c", CHILD])
    try:
        samples = []
        while proc.poll() is None:  # the parent waits for its child: sample until both have ended
            samples.append(bench.tree_rss(proc.pid))
            time.sleep(0.05)
        # at some sample the child ran beside its parent, and its 64 MiB counted in the sum, not in the parent's own
        assert any(count >= 2 and total > own + 32 * 2**20 for total, own, count in samples), samples
    finally:
        proc.wait(timeout=60)


def test_the_script_reports_the_peak_of_the_sum(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "peak_memory.py"), "--interval", "0.05", "--",
                          sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(out.stdout)
    assert report["returncode"] == 0 and report["most_processes"] >= 2, report
    assert report["peak_rss_with_workers_gib"] >= report["peak_rss_command_gib"] + 0.05, report
