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


# ------------------------------------------------------------------------------- two commands on one folder
EVAL = ["eval", "random", "--game", "realm", "--games", "1", "--no-yardstick"]


@pytest.mark.parametrize("where", ["report.json", "sub/report.json"])
def test_eval_refuses_to_write_into_a_held_run_folder(tmp_path, capsys, where):
    """A report written into a run that train holds would be the run's to replace or remove: refused before any
    game, naming the holder; nothing is written."""
    from sb3_realm.cli import main

    folder = tmp_path / "run"
    folder.mkdir()
    with hold_folder(folder):
        before = snapshot(tmp_path)
        assert main([*EVAL, "--json", str(folder / where)]) == 2
        assert snapshot(tmp_path) == before
    printed = capsys.readouterr()
    assert f"is in use by another sb3-realm command (pid {os.getpid()})" in printed.err
    assert "nothing was done" in printed.err and printed.out == ""  # refused before any game


def test_a_folder_an_eval_writes_into_is_refused_to_train_and_shared_with_another_eval(tmp_path):
    from sb3_realm.atomic import share_folder

    folder = tmp_path / "reports"
    folder.mkdir()
    with share_folder(folder, "the folder of --json"):
        with share_folder(folder, "the folder of --json"):  # a second evaluation writing its own report there
            pass
        with pytest.raises(FolderInUse, match=rf"is in use by another sb3-realm command \(pid {os.getpid()}\)"):
            with hold_folder(folder, "run directory"):  # train started while an evaluation writes there
                pass
    with hold_folder(folder):  # released with the evaluation
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


@pytest.mark.skipif(sys.platform == "win32", reason="flock and symbolic links")
def test_a_second_path_to_a_held_folder_is_held_by_its_identity(tmp_path, monkeypatch):
    """A path that resolving links cannot explain (a bind mount: emulated here by a link that the lock is not
    allowed to resolve) names the same folder, so it is held as that folder, not as another path."""
    from sb3_realm import atomic

    folder, alias = tmp_path / "run", tmp_path / "alias"
    folder.mkdir()
    alias.symlink_to(folder, target_is_directory=True)
    with hold_folder(folder):
        monkeypatch.setattr(atomic.os.path, "realpath", os.path.abspath)  # as for a bind mount: no link to follow
        with pytest.raises(FolderInUse, match=f"pid {os.getpid()}"):
            with hold_folder(alias, "run directory"):
                pass
        monkeypatch.undo()


def _can_bind_mount(source: Path, target: Path) -> bool:
    """Whether this process may bind-mount ``source`` on ``target`` in a user and mount namespace of its own."""
    try:
        return subprocess.run(["unshare", "-rm", "mount", "--bind", str(source), str(target)],
                              capture_output=True).returncode == 0
    except OSError:
        return False


@pytest.mark.skipif(sys.platform != "linux", reason="bind mounts in a user namespace are Linux's")
def test_train_resume_through_a_bind_mount_of_a_held_run_is_refused(tmp_path):
    """Two train --resume of one run, one through a bind mount of its folder: the second is refused."""
    from sb3_realm.training import load_config, save_config

    folder, alias = tmp_path / "run", tmp_path / "mounted"
    folder.mkdir()
    alias.mkdir()
    if not _can_bind_mount(folder, alias):
        pytest.skip("no user namespaces with bind mounts here (unshare -rm mount --bind)")
    save_config(load_config(REPO / "configs" / "realm" / "tiny.yaml"), folder / "config.yaml")
    script = ("import subprocess, sys\nfrom sb3_realm.atomic import hold_folder\n"
              "with hold_folder(sys.argv[1]):\n"
              "    out = subprocess.run([sys.executable, '-m', 'sb3_realm.cli', 'train', '--resume', sys.argv[2], "
              "'--total-steps', '1000'], capture_output=True, text=True)\n"
              "print(out.returncode)\nprint(out.stderr)\n")
    run = subprocess.run(["unshare", "-rm", "sh", "-c", 'mount --bind "$1" "$2" && exec "$3" -c "$4" "$1" "$2"', "sh",
                          str(folder), str(alias), sys.executable, script], capture_output=True, text=True,
                         timeout=600)
    code, _, err = run.stdout.partition("\n")
    assert run.returncode == 0, run.stderr[-2000:]
    assert code == "2" and "is in use by another sb3-realm command" in err, run.stdout[-2000:]
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml"]


def test_check_runs_while_the_upload_folder_is_held(models, tmp_path, monkeypatch):
    """build-submission --check: a second --force build started during the check is refused, so the folder being
    checked is the one just built."""
    import sb3_realm.export as export
    from sb3_realm.cli import main
    from sb3_realm.export import ExportError

    out, seen = tmp_path / "sub", []

    def check(folder, model, **kwargs):
        try:
            build_submission(models["ppo"], out, force=True)
            seen.append("replaced during the check")
        except ExportError as exc:
            seen.append(str(exc))
        return {"ok": True}

    monkeypatch.setattr(export, "check_submission", check)
    assert main(["build-submission", str(models["ppo"]), "--out", str(out), "--check"]) == 0
    assert len(seen) == 1 and f"is in use by another sb3-realm command (pid {os.getpid()})" in seen[0]


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")
def test_force_through_a_linked_out_is_refused_and_keeps_link_and_folder(models, tmp_path):
    from sb3_realm.export import ExportError

    target, link = tmp_path / "store" / "sub", tmp_path / "sub"
    build_submission(models["ppo"], target)
    link.symlink_to(target, target_is_directory=True)
    before = snapshot(tmp_path)
    with pytest.raises(ExportError, match=rf"--out '{link}' is a link to '{target}'.*give that folder itself, --out "
                                          rf"'{target}'.*nothing was built"):
        build_submission(models["ppo"], link, force=True)
    assert link.is_symlink() and os.readlink(link) == str(target) and snapshot(tmp_path) == before
