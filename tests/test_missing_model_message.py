"""A model file that does not exist: one line that names it and says how to make a model, naming only recipe
folders the package has (each game's config_dir)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sb3_realm import games
from sb3_realm.cli import main
from sb3_realm.models.saved import check_checkpoint_file

REPO = Path(__file__).resolve().parents[1]


def _named_folders(message: str) -> list[str]:
    return re.findall(r"[\w/]*configs/[\w/]*", message)


def test_a_missing_model_file_says_how_to_make_one():
    with pytest.raises(ValueError) as caught:
        check_checkpoint_file("runs/gone/best_model.zip")
    message = str(caught.value)
    assert message.startswith("'runs/gone/best_model.zip' does not exist; check the path")
    assert ("sb3-realm imitate --config CONFIG --out runs/NAME makes with an imitation recipe of the game's folder"
            in message)
    assert "sb3-realm train --config" in message
    folders = _named_folders(message)  # each game's config_dir, from its spec
    assert folders == [f"{spec.config_dir}/" for spec in games.GAMES.values() if spec.config_dir]
    assert folders[:2] == ["configs/realm/", "configs/gorge/"]  # then those of games installed from packages
    assert all((REPO / name).is_dir() for name in folders)
    assert "\n" not in message


def test_build_submission_of_a_missing_model_says_how_to_make_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["build-submission", "runs/gorge-imitate/best_model.zip", "--out", str(tmp_path / "upload")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sb3-realm build-submission: error: model file 'runs/gorge-imitate/best_model.zip' does not "
                          "exist; check the path")
    assert "sb3-realm imitate --config CONFIG" in err
    assert _named_folders(err) == [f"{spec.config_dir}/" for spec in games.GAMES.values() if spec.config_dir]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "upload").exists()
