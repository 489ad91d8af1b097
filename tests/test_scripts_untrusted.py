"""The scripts under benchmarks/ and tuning/ against hostile input: an empty or foreign output folder is refused in one
line (exit code 2) before anything is touched, an earlier output is replaced by removing only what the script wrote,
a storage file that is not Optuna's is never written to, non-finite ``--enqueue`` values are refused up front, and a
failed trial ends the study script with exit code 1."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from helpers import load_benchmark

from sb3_realm.training.config import load_config
from sb3_realm.tuning import script as script_module
from sb3_realm.tuning import study as study_module
from sb3_realm.tuning.outputs import check_output_folder, remove_outputs
from sb3_realm.tuning.storage import check_storage_file, make_storage
from sb3_realm.tuning.study import StudyConfig, load_study

REPO = Path(__file__).resolve().parents[1]
TINY = str(REPO / "configs" / "realm" / "tiny.yaml")


class _Stop(Exception):
    """Raised by the first heavy step of a script: reaching it means the script went on to work."""


def _stop(*args, **kwargs):
    raise _Stop


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root`` with its bytes (None for a folder)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def _user_folder(root: Path) -> Path:
    folder = root / "mine"
    (folder / "notes").mkdir(parents=True)
    (folder / "thesis.txt").write_text("years of work\n", encoding="utf-8")
    (folder / "notes" / "a.txt").write_text("a\n", encoding="utf-8")
    return folder


def _run_benchmark(name: str, argv: list[str], monkeypatch, capsys) -> tuple[int, list[str]]:
    """Run ``benchmarks/NAME.py`` in this process with its first heavy step stopped; returns (exit code, stderr
    lines)."""
    module = load_benchmark(name, monkeypatch)
    heavy = {"tune_study": "run_study", "imitation": "imitate", "learning": "make_vec_env",
             "gorge_recipe": "evaluate_yardstick"}[name]
    monkeypatch.setattr(module, heavy, _stop)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", *argv])
    with pytest.raises(SystemExit) as exit_info:
        script_module.run_script(module.main, f"{name}.py")
    return exit_info.value.code, capsys.readouterr().err.strip().splitlines()


BENCHMARKS = {
    "tune_study": ["--config", TINY, "--trials", "1", "--steps", "64"],
    "imitation": ["--overwrite", "--set", "imitation.rounds=0"],
    "learning": ["--steps", "64", "--chunk", "64", "--episodes", "1"],
    "gorge_recipe": ["--budget-s", "1", "--games", "1"],
}


@pytest.mark.parametrize("name", list(BENCHMARKS))
@pytest.mark.parametrize("case", ["empty", "user folder", "a file"])
def test_benchmarks_refuse_an_output_they_did_not_write(tmp_path, monkeypatch, capsys, name, case):
    """``--out ''``, a folder of the user's files or a file: one line, exit code 2, nothing touched, no work done."""
    folder = _user_folder(tmp_path)
    out = {"empty": "", "user folder": str(folder), "a file": str(folder / "thesis.txt")}[case]
    monkeypatch.chdir(folder)  # an empty --out would write here
    before = _tree(tmp_path)
    code, lines = _run_benchmark(name, [*BENCHMARKS[name], "--out", out], monkeypatch, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{name}.py: error: --out {out!r}"), lines
    assert {"empty": "names no folder", "user folder": "'notes', 'thesis.txt'",
            "a file": "is a file, not a folder"}[case] in lines[0]
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("kind", ["rewards", "hparams"])
@pytest.mark.parametrize("case", ["empty", "user folder"])
def test_tuning_scripts_refuse_an_output_they_did_not_write(tmp_path, monkeypatch, capsys, kind, case):
    folder = _user_folder(tmp_path)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(study_module, "open_study", _stop)  # the study's first write
    before = _tree(tmp_path)
    out = "" if case == "empty" else str(folder)
    code = script_module.main(kind, ["--config", TINY, "--out", out, "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"tune_{kind}.py: error: --out {out!r}"), lines
    assert _tree(tmp_path) == before


def test_tune_study_with_an_empty_out_leaves_the_current_folder_alone(tmp_path):
    """As the user ran it: the script itself, from a folder of their files."""
    folder = _user_folder(tmp_path)
    before = _tree(folder)
    res = subprocess.run([sys.executable, str(REPO / "benchmarks" / "tune_study.py"), "--out", ""], cwd=folder,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "tune_study.py: error: --out '' names no folder (it would write into the current one); give one, e.g. "
        "runs/NAME"], res.stderr
    assert _tree(folder) == before


def test_tune_study_replaces_only_what_it_wrote(tmp_path, monkeypatch, capsys):
    """An earlier output is removed entry by entry (a link inside it is unlinked, never followed) once everything is
    checked; with --resume it is kept."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    out = tmp_path / "bench"
    (out / "study" / "trials").mkdir(parents=True)
    (out / "study.db").write_bytes(b"")
    (out / "benchmark.json").write_text("{}\n", encoding="utf-8")
    (out / ".benchmark.json.abcd1234.tmp").write_bytes(b"{")  # a killed atomic write's leftover
    os.symlink(victim, out / "study" / "link.txt")
    os.symlink(tmp_path, out / "check")
    args = [*BENCHMARKS["tune_study"], "--out", str(out)]
    module = load_benchmark("tune_study", monkeypatch)
    monkeypatch.setattr(module, "run_study", _stop)
    monkeypatch.setattr(sys, "argv", ["tune_study.py", *args, "--resume"])
    with pytest.raises(_Stop):
        module.main()
    assert sorted(p.name for p in out.iterdir()) == [".benchmark.json.abcd1234.tmp", "benchmark.json", "check",
                                                     "study", "study.db"]
    monkeypatch.setattr(sys, "argv", ["tune_study.py", *args])
    with pytest.raises(_Stop):
        module.main()
    assert list(out.iterdir()) == [] and victim.read_text(encoding="utf-8") == "keep me\n"
    assert (tmp_path / "bench").is_dir() and victim.is_file()


def test_an_earlier_output_needs_its_marker(tmp_path):
    """A folder of the script's names alone, without the file the script writes first, is not taken for its own;
    nothing outside the folder can be named for removal."""
    folder = tmp_path / "out"
    (folder / "study").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"holds 'study' but not 'study.db' or 'benchmark.json', which S writes "
                                         r"first. Nothing was touched"):
        check_output_folder(folder, ("study.db", "study", "benchmark.json"), markers=("study.db", "benchmark.json"),
                            script="S")
    assert check_output_folder(tmp_path / "new", ("x",), markers=("x",)) == []
    (folder / "study.db").write_bytes(b"")
    found = check_output_folder(folder, ("study.db", "study"), markers=("study.db",))
    assert [p.name for p in found] == ["study", "study.db"]
    with pytest.raises(ValueError, match="not inside"):
        remove_outputs(folder, [tmp_path / "out"])
    remove_outputs(folder, found)
    assert list(folder.iterdir()) == []


def test_a_study_folder_may_hold_its_storage_file(tmp_path):
    base = load_config(TINY)
    config = StudyConfig("rewards", base, "s", f"journal://{tmp_path}/my.log", str(tmp_path))
    assert {"my.log", "my.log.lock", "study.db", "trials", "best.yaml"} <= set(config.folder_names())
    elsewhere = StudyConfig("rewards", base, "s", f"journal://{tmp_path}/other/my.log", str(tmp_path))
    assert "my.log" not in elsewhere.folder_names()


# ---------------------------------------------------------------------------------------------- storages
@pytest.mark.parametrize("content", [b"my notes, no newline", b"my notes\nline 2\n", b'{"a": 1}\n', b"[1, 2]\n",
                                     b'{"op_code": 4}\n', b"\x00\x01binary", b'{"op_code": 0}\n{"op_code"'])
def test_a_journal_storage_that_is_not_a_journal_is_never_written(tmp_path, content):
    path = tmp_path / "notes.log"
    path.write_bytes(content)
    for create in (True, False):
        with pytest.raises(ValueError, match=rf"^--storage '{path}': '{path}' is not an Optuna journal file(, or one "
                                             r"whose last write was stopped midway)?: line \d .*; it was left as it "
                                             r"was: give another file"):
            make_storage(str(path), create=create)
    assert path.read_bytes() == content


def test_a_sqlite_storage_that_is_not_optunas_is_never_written(tmp_path):
    text = tmp_path / "notes.db"
    text.write_bytes(b"not a database")
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE contacts (name TEXT)")
    before = other.read_bytes()
    with pytest.raises(ValueError, match=rf"'{text}' is not a SQLite database; it was left as it was"):
        make_storage(f"sqlite:///{text}")
    with pytest.raises(ValueError, match=rf"'{other}' is a SQLite database of something else, not an Optuna study "
                                         r"\(its tables: \['contacts'\]\)"):
        make_storage(f"sqlite:///{other}")
    with pytest.raises(ValueError, match="of something else"):  # reading a study: no tables made either
        load_study(f"sqlite:///{other}", "s")
    assert text.read_bytes() == b"not a database" and other.read_bytes() == before


def test_optunas_own_storages_pass_the_check(tmp_path):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for url in (str(tmp_path / "s.log"), f"sqlite:///{tmp_path / 's.db'}"):
        check_storage_file(url)  # missing: created
        study = optuna.create_study(study_name="s", storage=make_storage(url))
        study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
        check_storage_file(url)
        assert len(optuna.load_study(study_name="s", storage=make_storage(url, create=False)).trials) == 2


def test_a_storage_path_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "d.log").mkdir()
    with pytest.raises(ValueError, match=r"--storage file '.*d.log' is an existing folder, not a file"):
        make_storage(str(tmp_path / "d.log"))


# ---------------------------------------------------------------------------------------------- --enqueue
@pytest.mark.parametrize(("kind", "text", "message"), [
    ("rewards", '{"treasure": NaN}', "treasure = nan is not a finite number; give a number (the study samples it "
                                     "from 0.1 to 10.0)"),
    ("rewards", '{"treasure": -Infinity}', "treasure = -inf is not a finite number"),
    ("rewards", '{"treasure": "2"}', "treasure = '2' is not a finite number"),
    ("rewards", '{"treasure": true}', "treasure = True is not a finite number"),
    ("hparams", '{"n_epochs": 2.5}', "n_epochs = 2.5 is not a whole number"),
    ("hparams", '{"net_arch": "huge"}', "net_arch = 'huge' is not one of its choices ['tiny', 'small', 'medium']"),
    ("hparams", '{"learning_rate": Infinity}', "learning_rate = inf is not a finite number"),
    ("rewards", '{"progress": 1e300}', "env.reward_weights.progress = 1e+300 is out of range"),  # what convert refuses
])
def test_enqueued_values_that_no_trial_can_take_are_refused_up_front(tmp_path, monkeypatch, capsys, kind, text,
                                                                    message):
    monkeypatch.setattr(script_module, "run_study", _stop)  # refused before the study starts
    out = tmp_path / "study"
    code = script_module.main(kind, ["--config", TINY, "--out", str(out), "--enqueue", text, "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], lines
    assert lines[0].startswith(f"tune_{kind}.py: error: --enqueue ")
    assert not out.exists()


def test_enqueued_numbers_outside_the_range_are_still_tried():
    base = load_config(TINY)
    StudyConfig("rewards", base, "s", "sqlite:///s.db", "out", enqueue=[{"progress": 500.0, "treasure": 3}]).validate()
    StudyConfig("hparams", base, "s", "sqlite:///s.db", "out", enqueue=[{"n_steps": 256.0, "n_epochs": 30}]).validate()


# ---------------------------------------------------------------------------------------------- failed trials
def test_a_failed_trial_ends_the_script_with_exit_code_1(tmp_path, monkeypatch, capfd):
    """The study goes on past a failed trial, then the script says which failed and why, in one line and without a
    traceback, and exits 1 (the summary is printed first)."""
    def broken(trial, config):
        raise RuntimeError("the objective broke")

    monkeypatch.setattr(study_module, "objective", broken)
    out = tmp_path / "study"
    code = script_module.main("rewards", ["--config", TINY, "--out", str(out), "--n-trials", "2", "--no-progress"])
    captured = capfd.readouterr()
    assert code == 1
    summary = json.loads(captured.out)
    assert summary["failed"] == [{"number": 0, "reason": "RuntimeError: the objective broke"},
                                 {"number": 1, "reason": "RuntimeError: the objective broke"}]
    errors = [line for line in captured.err.splitlines() if "error:" in line]
    assert errors == [f"tune_rewards.py: error: 2 trial(s) failed (trial 0: RuntimeError: the objective broke; trial "
                      f"1: RuntimeError: the objective broke); their reasons are in {out}/trials.csv (fail_reason): "
                      "fix the cause, then run the same command again to go on with the study (failed trials count as "
                      "finished: raise --n-trials for new ones)"]
    assert "Traceback" not in captured.err
    assert script_module.study_problems({"failed": [], "worker_exit_codes": [0, 0]}) is None
    assert "exit codes [-9]" in script_module.study_problems({"failed": [], "worker_exit_codes": [0, -9], "out": "x"})


def test_a_study_whose_writer_was_killed_mid_write_passes_the_check(tmp_path):
    """A process killed inside a write transaction (a tuning worker killed mid-trial) leaves a hot journal beside the
    database, which a read-only connection cannot roll back: the check takes the study as Optuna's, and the study
    loads with its trial."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    path = tmp_path / "study.db"
    url = f"sqlite:///{path}"
    optuna.create_study(storage=url, study_name="s").optimize(lambda trial: trial.suggest_float("x", 0, 1), 1)
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "db.execute('PRAGMA cache_size = 1')\n"  # pages spill into the database: the journal is synced, hot
        "db.execute('BEGIN IMMEDIATE')\n"
        "db.execute(\"UPDATE studies SET study_name = 'halfway'\")\n"
        "db.execute('CREATE TABLE scratch (x)')\n"
        "db.executemany('INSERT INTO scratch VALUES (?)', [(bytes(1000),)] * 2000)\n"
        "print('in the write', flush=True)\n"
        "time.sleep(600)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "in the write"
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert (tmp_path / "study.db-journal").is_file()
    check_storage_file(url)  # no ValueError: the interrupted write is SQLite's to roll back
    study = optuna.load_study(storage=url, study_name="s")  # the half-done rename rolled back
    assert [t.state.name for t in study.trials] == ["COMPLETE"]
