"""Names and failed starts: a run folder, a model or a code-package file whose name holds a byte that is not UTF-8 is
refused in one line naming it before anything is written (never a codec's message without a path); a named pipe
where a file is expected is called one; an imitation that fails before its first round removes what it made, so
that the same command runs again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_code_package
from test_imitation import QUICK

import sb3_realm.imitation.dagger as dagger
from sb3_realm.imitation import imitate, load_imitate_config
from sb3_realm.training.config import load_config
from sb3_realm.training.run import start_new_run, train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = REPO / "configs" / "realm" / "tiny.yaml"
TINY_RUN = ["total_timesteps=512", "checkpoint_freq=512", "eval_freq=0", "progress_bar=false"]
#: the smallest imitation: round 0 only
TINY_IMITATION = ["game=realm", *QUICK, "imitation.rounds=0", "imitation.expert_games=2", "eval_games=1",
                  "imitation.epochs=1"]
# a name with the byte 0xff, as Python reads it from the system (os.fsdecode); POSIX systems other than macOS keep
# such names (APFS refuses them), Windows names are UTF-16
linux_names = pytest.mark.skipif(sys.platform != "linux", reason="a file name that is not UTF-8 needs Linux")


def _bad(folder: Path, name: bytes) -> str:
    return os.fsdecode(os.fsencode(folder) + b"/" + name)


def _one_line(out: subprocess.CompletedProcess, command: str) -> str:
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith(f"sb3-realm {command}: error: ") and "codec can't" not in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("names") / "run"
    train(load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(run))}"]))
    return run / "final_model.zip"


# ------------------------------------------------------------------------------------------ names not UTF-8
@linux_names
@pytest.mark.parametrize("command", ["train", "imitate"])
def test_a_run_folder_whose_name_is_not_utf8_is_refused_before_anything_is_written(tmp_path, command):
    out = _bad(tmp_path, b"run\xff")
    config = ["--config", str(TINY)] if command == "train" else []
    sets = TINY_RUN if command == "train" else TINY_IMITATION
    result = subprocess.run([*CLI, command, *config, "--out", out, "--no-progress",
                             *(arg for s in sets for arg in ("--set", s))], capture_output=True, text=True, cwd=REPO)
    line = _one_line(result, command)
    assert "0xff, which is not UTF-8" in line and repr(out) in line and "nothing was written" in line
    assert os.listdir(tmp_path) == []
    # and --resume of such a folder: named, not a codec's message
    os.mkdir(out)
    result = subprocess.run([*CLI, command, "--resume", out], capture_output=True, text=True, cwd=REPO)
    assert repr(out) in _one_line(result, command)


@linux_names
def test_a_model_to_start_from_whose_name_is_not_utf8_is_refused_before_the_run(model, tmp_path):
    start = _bad(tmp_path, b"model\xff.zip")
    Path(start).write_bytes(model.read_bytes())
    result = subprocess.run([*CLI, "train", "--config", str(TINY), "--init-from", start, "--out",
                             str(tmp_path / "run"), "--no-progress", *(a for s in TINY_RUN for a in ("--set", s))],
                            capture_output=True, text=True, cwd=REPO)
    line = _one_line(result, "train")
    assert "finetune.init_from" in line and repr(start) in line and "0xff" in line
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(start)]


@linux_names
def test_a_code_package_file_whose_name_is_not_utf8_is_named_and_nothing_is_built(model, tmp_path):
    package = make_code_package(tmp_path / "package")
    Path(_bad(package / "conf", b"notes\xff.txt")).write_text("mine", encoding="utf-8")
    result = subprocess.run([*CLI, "build-submission", str(model), "--out", str(tmp_path / "upload"),
                             "--code-package", str(package), "--zip"], capture_output=True, text=True, cwd=REPO)
    line = _one_line(result, "build-submission")
    assert "conf/notes\\udcff.txt" in line and "0xff, which is not UTF-8" in line
    assert sorted(os.listdir(tmp_path)) == ["package"]  # no upload, no zip


def test_a_codec_error_anywhere_names_the_line_that_holds_the_name():
    from sb3_realm.cli import unicode_error_text

    text = "game: realm\nout: runs/caf\udce9\nseed: 0\n"
    with pytest.raises(UnicodeEncodeError) as caught:
        text.encode("utf-8")
    message = unicode_error_text(caught.value)
    assert message.startswith("'out: runs/caf\\udce9' holds the byte 0xe9, which is not UTF-8")
    assert "rename the file or folder in UTF-8" in message


# ------------------------------------------------------------------------------------------ named pipes
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("flag", ["--config", "--map"])
def test_a_named_pipe_where_a_file_is_expected_is_called_one(tmp_path, flag):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    args = [flag, str(pipe)] if flag == "--config" else ["--config", str(TINY), flag, str(pipe)]
    result = subprocess.run([*CLI, "train", *args, "--out", str(tmp_path / "run")], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{str(pipe)!r} is a named pipe, not a file" in result.stderr and "does not exist" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


# ------------------------------------------------------------------------------------------ a failed imitation
def test_an_imitation_that_fails_before_its_first_round_removes_what_it_made(tmp_path, monkeypatch):
    def fails(self, model, dataset, round_no):
        raise FloatingPointError("the fit diverged")

    monkeypatch.setattr(dagger.Imitation, "play_round", fails)
    run = tmp_path / "runs" / "new"
    with pytest.raises(FloatingPointError):
        imitate(load_imitate_config(None, [*TINY_IMITATION, f"out={json.dumps(str(run))}"]))
    assert not run.exists()
    start_new_run(load_imitate_config(None, [*TINY_IMITATION, f"out={json.dumps(str(run))}"]), run)  # may rerun

    mine = tmp_path / "mine"
    (mine / "tb" / "run_1").mkdir(parents=True)
    (mine / "keep.txt").write_text("the user's", encoding="utf-8")
    with pytest.raises(FloatingPointError):
        imitate(load_imitate_config(None, [*TINY_IMITATION, f"out={json.dumps(str(mine))}"]))
    made = sorted(p.relative_to(mine).as_posix() for p in mine.rglob("*"))
    assert made == ["keep.txt", "tb", "tb/run_1"]  # what the user had, and only that
    monkeypatch.undo()
    _model, out = imitate(load_imitate_config(None, [*TINY_IMITATION, f"out={json.dumps(str(mine))}"]))
    assert (out / "final_model.zip").is_file() and (mine / "keep.txt").is_file()


@pytest.mark.parametrize("command", ["train", "imitate"])
def test_a_start_killed_before_its_first_checkpoint_is_not_sent_between_resume_and_out(tmp_path, command):
    """A start killed (SIGKILL: nothing cleans up) before its first checkpoint left config.yaml and tb/: neither
    --out nor --resume sends the user to the other; both say that there is nothing to resume and what to do."""
    from sb3_realm.imitation.config import read_run_config
    from sb3_realm.training.config import save_config
    from sb3_realm.training.run import resume_config

    run = tmp_path / "run"
    if command == "train":
        config = load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(run))}"])
    else:
        config = load_imitate_config(None, [*TINY_IMITATION, f"out={json.dumps(str(run))}"])
    (run / "tb" / "run_1").mkdir(parents=True)
    save_config(config, run / "config.yaml")
    go = train if command == "train" else imitate
    with pytest.raises(ValueError, match=r"saved no model \(config.yaml; .*nothing to resume: delete the") as new:
        go(config)
    reread = resume_config(run) if command == "train" else read_run_config(run)
    with pytest.raises(ValueError, match=r"nothing to resume: delete the folder .* another folder with --out") as old:
        go(reread, resume=run)
    assert "--resume" not in str(new.value).split(":", 1)[1] and "use --out" not in str(old.value)
