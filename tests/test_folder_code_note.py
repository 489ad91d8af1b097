"""``eval DIR`` and ``replay DIR`` run the submission folder's own code: they say so, in one line on stderr before
it plays, naming the folder, also when its agent.py was edited and its manifest hashed again."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from sb3_realm.cli import main
from sb3_realm.export import build_submission
from sb3_realm.training.config import load_config
from sb3_realm.training.run import train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "configs" / "realm" / "tiny.yaml"


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> tuple[Path, Path]:
    """``(a model, a folder built from it whose agent.py was edited and whose manifest was hashed again)``."""
    root = tmp_path_factory.mktemp("note")
    _model, run = train(load_config(TINY, ["total_timesteps=512", "checkpoint_freq=512", "eval_freq=0",
                                           "progress_bar=false", f"out={json.dumps(str(root / 'run'))}"]))
    folder = root / "upload"
    build_submission(run / "final_model.zip", folder)
    manifest_path = next(folder.glob("*/manifest.json"))
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    (agent,) = [rel for rel in manifest["files"] if rel.endswith("agent.py")]
    path = folder / agent
    path.write_text(path.read_text(encoding="utf-8") + "\nEDITED = True  # not the package's own code\n",
                    encoding="utf-8")
    manifest["files"][agent] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    return run / "final_model.zip", folder


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if "runs the Python code in the submission folder" in line]


def test_eval_and_replay_of_a_folder_say_that_its_code_runs(package, tmp_path, capsys):
    model, folder = package
    assert main(["eval", str(folder), "--games", "1", "--no-yardstick", "--max-step", "20"]) == 0
    captured = capsys.readouterr()
    (note,) = _notes(captured.err)
    assert note.startswith("sb3-realm eval: note: ") and repr(str(folder)) in note
    assert not _notes(captured.out)
    assert main(["replay", str(folder), "--out", str(tmp_path / "ep.gif"),
                 "--usr-conf", '{"treasure_num": 2, "max_step": 20}']) == 0
    (note,) = _notes(capsys.readouterr().err)
    assert note.startswith("sb3-realm replay: note: ") and repr(str(folder)) in note
    assert main(["eval", str(model), "--games", "1", "--no-yardstick", "--max-step", "20"]) == 0
    assert not _notes(capsys.readouterr().err)  # a checkpoint runs no code of a folder


def test_a_folder_that_is_refused_gets_no_note_only_its_refusal(package, tmp_path, capsys):
    import shutil

    _model, folder = package
    changed = Path(shutil.copytree(folder, tmp_path / "changed"))
    (changed / "extra.py").write_text("print('hello')\n", encoding="utf-8")
    assert main(["eval", str(changed), "--games", "1", "--no-yardstick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not as build-submission wrote it" in err and not _notes(err)
