"""Subprocess smoke runs of the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

from PIL import Image


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sb3_realm.cli", *args], capture_output=True, text=True, check=check)


def test_demo_writes_gif_and_summary(tmp_path):
    out = run_cli("demo", "--out", str(tmp_path), "--seed", "3", "--usr-conf", '{"max_step": 120}')
    summary = json.loads(out.stdout)
    assert summary["steps"] <= 120 and summary["usr_conf"]["max_step"] == 120
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    with Image.open(tmp_path / "episode.gif") as gif:
        assert gif.format == "GIF" and gif.n_frames >= 120 // 4
        assert gif.size == (512, 512)


def test_demo_bad_input_is_one_clear_line(tmp_path):
    out = run_cli("demo", "--out", str(tmp_path), "--usr-conf", '{"treasure_num": 20}', check=False)
    assert out.returncode == 2
    assert "treasure_num" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("demo", "--map", str(tmp_path / "missing.json"), check=False)
    assert out.returncode == 2 and "does not exist" in out.stderr
    assert not (tmp_path / "episode.gif").exists()


def test_console_script_is_installed():
    out = subprocess.run(["sb3-realm", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("sb3-realm ")
