"""One command at a time in a run or upload folder: a second ``train``, ``train --resume``, ``imitate`` or
``build-submission`` on a folder another process holds is refused at once, naming the holder's pid, and leaves the
folder as it was; a killed holder leaves nothing held; an interrupted ``build-submission --force`` leaves a package at
its path (the old or the new one), and one killed mid-swap is restored by the next build, which says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from sb3_realm.atomic import FolderInUse, hold_folder
from sb3_realm.export import build_submission
from sb3_realm.export.build import RecoveredBuildWarning, recover_interrupted_build

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = ["--config", str(REPO / "configs" / "realm" / "tiny.yaml"), "--set", "env.map_name=small", "--set",
        "eval_freq=0", "--no-progress"]


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("command", [
    ["train", *TINY, "--out", "{folder}"],
    ["train", "--resume", "{folder}", "--total-steps", "1000"],
    ["imitate", "--config", str(REPO / "configs" / "realm" / "imitate" / "quick.yaml"), "--out", "{folder}",
     "--no-progress"],
])
def test_a_held_run_folder_is_refused_with_the_holders_pid(tmp_path, command):
    from sb3_realm.training import load_config, save_config

    folder = tmp_path / "run"
    folder.mkdir()
    save_config(load_config(REPO / "configs" / "realm" / "tiny.yaml"), folder / "config.yaml")  # a run's, for --resume
    before, inside = snapshot(tmp_path), snapshot(folder)
    with hold_folder(folder):
        out = subprocess.run([*CLI, *[a.format(folder=folder) for a in command]], capture_output=True, text=True)
        assert snapshot(folder) == inside
    assert out.returncode == 2 and f"is in use by another sb3-realm command (pid {os.getpid()})" in out.stderr
    assert "Traceback" not in out.stderr and snapshot(tmp_path) == before  # the lock's own files are gone too


def test_a_held_upload_folder_is_refused(models, tmp_path):
    out = tmp_path / "upload"
    with hold_folder(out):
        run = subprocess.run([*CLI, "build-submission", str(models["ppo"]), "--out", str(out)], capture_output=True,
                             text=True)
    assert run.returncode == 2 and f"(pid {os.getpid()})" in run.stderr and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_two_trainings_into_one_folder(tmp_path):
    """Started together on the same --out, one trains and the other is refused at once: never both."""
    folder = tmp_path / "run"
    args = [*CLI, "train", *TINY, "--out", str(folder), "--total-steps", "30000"]
    first = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pid_file = tmp_path / ".run.lock.pid"
    deadline = time.monotonic() + 120
    while not pid_file.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.run(args, capture_output=True, text=True)
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=120)
    assert second.returncode == 2 and f"(pid {first.pid})" in second.stderr, second.stderr[-2000:]
    assert "Traceback" not in second.stderr and (folder / "config.yaml").is_file()


def test_a_killed_holder_leaves_nothing_held(tmp_path):
    folder = tmp_path / "run"
    script = f"from sb3_realm.atomic import hold_folder\nimport time\nwith hold_folder({str(folder)!r}):\n" \
             "    print('held', flush=True)\n    time.sleep(120)\n"
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(FolderInUse, match=f"pid {holder.pid}"):
        with hold_folder(folder):
            pass
    holder.kill()
    holder.wait()
    with hold_folder(folder):  # the system released the killed holder's lock
        pass


def test_an_interrupted_force_build_keeps_a_package(models, tmp_path, monkeypatch):
    """Ctrl-C between the two renames of --force: the old package is back at the path."""
    from sb3_realm.export import build as export

    out = tmp_path / "sub"
    build_submission(models["ppo"], out)
    manifest = (out / "diy" / "manifest.json").read_bytes()
    real_replace, calls = os.replace, []

    def interrupted(src, dst):
        calls.append((Path(src).name, Path(dst).name))
        if len(calls) == 2:  # the new package's rename, after the old one was set aside
            raise KeyboardInterrupt
        return real_replace(src, dst)

    monkeypatch.setattr(export.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_submission(models["ppo"], out, force=True)
    monkeypatch.setattr(export.os, "replace", real_replace)
    assert (out / "diy" / "manifest.json").read_bytes() == manifest  # the old package, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]


def test_a_build_killed_mid_swap_is_restored_by_the_next_one(models, tmp_path):
    out = tmp_path / "sub"
    build_submission(models["ppo"], out)
    manifest = (out / "diy" / "manifest.json").read_bytes()
    os.replace(out, tmp_path / ".sub.old-4242")  # as a SIGKILL between the two renames leaves it
    (tmp_path / ".sub.x1y2z3w4.tmp").mkdir()  # as tempfile names an unfinished build
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(Exception, match="already exists; pass --force"):
            build_submission(models["ppo"], out)  # restored first, then the usual rule applies
    assert any(issubclass(w.category, RecoveredBuildWarning) and "restored" in str(w.message) for w in caught)
    assert (out / "diy" / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]
    assert recover_interrupted_build(out) is None
