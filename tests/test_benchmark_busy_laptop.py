"""benchmarks/busy_laptop.py: its busy loops run at the lowest priority, its memory counts the command's workers, and
a bad argument is refused before any run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import load_benchmark


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="POSIX priorities")
def test_busy_loops_run_at_the_lowest_priority(monkeypatch):
    bench = load_benchmark("busy_laptop", monkeypatch)
    busy = bench.start_busy(2)
    try:
        assert len(busy) == 2
        assert all(p.poll() is None for p in busy)  # still busy
        assert [os.getpriority(os.PRIO_PROCESS, p.pid) for p in busy] == [19, 19]
    finally:
        for p in busy:
            p.kill()
            p.wait()


def test_peak_memory_counts_the_processes_under_the_command(monkeypatch):
    bench = load_benchmark("busy_laptop", monkeypatch)
    alone, own = bench.tree_rss(os.getpid())
    assert alone >= own > 0
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for _ in range(100):  # the child's interpreter is up once it has a resident size
            total, own_now = bench.tree_rss(os.getpid())
            if total - own_now > alone - own:
                break
        assert total - own_now > alone - own  # the child's memory is in the sum, not in the command's own
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("args", [["--busy", "0"], ["--repeat", "0"], ["--rounds", "-1"], ["--interval", "0"]])
def test_bad_arguments_are_refused_before_any_run(monkeypatch, capsys, args):
    bench = load_benchmark("busy_laptop", monkeypatch)
    started = []
    monkeypatch.setattr(bench, "run_job", lambda *a: started.append(a))
    monkeypatch.setattr(sys, "argv", ["busy_laptop.py", *args])
    with pytest.raises(SystemExit) as exit_:
        bench.main()
    assert exit_.value.code == 2 and not started
    assert "must be" in capsys.readouterr().err
