"""A model file that does not exist: one line that names it and says how to make a model, naming only files the
package has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sb3_realm.cli import main
from sb3_realm.models.saved import check_checkpoint_file

REPO = Path(__file__).resolve().parents[1]


def _named_configs(message: str) -> list[str]:
    return re.findall(r"configs/[\w/]+\.yaml", message)


def test_a_missing_model_file_says_how_to_make_one():
    with pytest.raises(ValueError) as caught:
        check_checkpoint_file("runs/gone/best_model.zip")
    message = str(caught.value)
    assert message.startswith("'runs/gone/best_model.zip' does not exist; check the path")
    assert "sb3-realm imitate --config configs/realm/imitate/quick.yaml --out runs/NAME" in message
    assert "sb3-realm train --config" in message
    configs = _named_configs(message)
    assert configs == ["configs/realm/imitate/quick.yaml", "configs/gorge/imitate.yaml"]
    assert all((REPO / name).is_file() for name in configs)
    assert "\n" not in message


def test_build_submission_of_a_missing_model_says_how_to_make_one(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["build-submission", "runs/gorge-imitate/best_model.zip", "--out", str(tmp_path / "upload")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sb3-realm build-submission: error: model file 'runs/gorge-imitate/best_model.zip' does not "
                          "exist; check the path")
    assert "sb3-realm imitate --config configs/realm/imitate/quick.yaml" in err and "configs/gorge/imitate.yaml" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "upload").exists()
