"""benchmarks/busy_laptop.py: its busy loops run at the lowest priority, and a bad argument is refused
before any run (its memory sampler is benchmarks/peak_memory.py's, tested there)."""

from __future__ import annotations

import os
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
