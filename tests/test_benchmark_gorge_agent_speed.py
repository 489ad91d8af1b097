"""benchmarks/gorge_agent_speed.py on a real package: a small model built into the 15.0.1 layout by
``build-submission``, its ``Agent.exploit()`` timed on a few steps of one game, beside the planner and the
features."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_gorge_code_package, small_gorge_model

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gorge_agent_speed.py"


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    from sb3_realm.cli import main

    root = tmp_path_factory.mktemp("agent_speed")
    small_gorge_model(root / "model.zip")
    out = root / "upload"
    assert main(["build-submission", str(root / "model.zip"), "--out", str(out), "--layout", "gorge15",
                 "--code-package", str(make_gorge_code_package(root / "code_package")), "--game", "gorge",
                 "--trust-pickle"]) == 0
    return out


def test_the_speed_benchmark_times_a_built_packages_exploit(package):
    done = _run("--maps", "own_6", "--games", "1", "--settings", "default", "--max-steps", "6",
                "--package", str(package))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    default = report["settings"]["default"]
    assert report["package"] == package.name and report["max_steps"] == 6
    assert default["steps"] == 6 and default["exploit"]["steps"] == 6
    assert 0 < default["exploit"]["mean_ms"] <= default["exploit"]["max_ms"]
    assert default["per_map"]["own_6"]["exploit"]["mean_ms"] == default["exploit"]["mean_ms"]


def test_the_speed_benchmark_refuses_a_bad_step_count_before_any_game(package):
    done = _run("--maps", "own_6", "--games", "1", "--max-steps", "0", "--package", str(package))
    assert done.returncode == 2 and "--max-steps 0 must be >= 1" in done.stderr and done.stdout == ""
