"""The Gorge Chase features that ship inside a package (the features module and the companions build-submission
copies beside it) run on numpy 1.19, the oldest numpy a package supports, with the same results: the copies, imported
as a package the way a built one imports them, play with numpy's newer functions (``helpers.NEWER_NUMPY``) removed and
encode every observation as the project's own features do (model input, action mask and the planner's choice).
tests/test_submission_py38.py scans the same files' source for those functions and for numpy's newer keywords.

With ``SB3_REALM_OLD_NUMPY_PYTHON`` set to an interpreter that has numpy 1.19 (Python 3.8, numpy 1.19.5: numpy only,
no sb3_realm needed), the copies also encode the same observations under that interpreter, and every step must match
bit for bit. Where that interpreter also has torch (1.8.1 with Python 3.8 and numpy 1.19.5 is the floor) and a module
``tomllib`` (Python 3.8 lacks it: a ``tomllib.py`` that re-exports ``tomli`` will do; only the stand-in of the
framework reads TOML, not the package), a package built here passes ``--check`` with the stand-in and the package's
Agent running under that interpreter: its actions are the SB3 model's, played here on this project's numpy and torch."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import NEWER_NUMPY, gorge_maps_dir, make_gorge_code_package, small_gorge_model

from sb3_realm.games.gorge import features
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.rules import SETTINGS

STEPS = 160  # steps of each game: past the first monster's chase and the planner's first goals
OLD_NUMPY_PYTHON = os.environ.get("SB3_REALM_OLD_NUMPY_PYTHON")


def _old_python_imports(*modules: str) -> bool:
    """Whether ``SB3_REALM_OLD_NUMPY_PYTHON`` names an interpreter that imports ``modules``."""
    if not OLD_NUMPY_PYTHON:
        return False
    return subprocess.run([OLD_NUMPY_PYTHON, "-c", f"import {', '.join(modules)}"], capture_output=True,
                          timeout=300).returncode == 0

# run by the old interpreter: argv[1] the folder holding the copies' package, argv[2] the observations (one game a
# list); prints each step's digest, one game a list, as JSON
OLD_NUMPY_SCRIPT = """
import hashlib, importlib, json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
features = importlib.import_module("shipped_feature.features")
with open(sys.argv[2], encoding="utf-8") as f:
    games = json.load(f)
out = []
for game in games:
    state, digests = features.FeatureState(), []
    for observation in game:
        maps, vector = features.encode(observation, state)
        mask = features.action_mask(observation, state)
        digest = hashlib.sha256()
        for part in (maps, vector, mask):
            digest.update(str((part.dtype.str, part.shape)).encode() + np.ascontiguousarray(part).tobytes())
        digests.append([digest.hexdigest(), int(state.choice)])
    out.append(digests)
print(json.dumps({"numpy": np.__version__, "python": sys.version.split()[0], "games": out}))
"""


def _digest(maps: np.ndarray, vector: np.ndarray, mask: np.ndarray) -> str:
    digest = hashlib.sha256()
    for part in (maps, vector, mask):
        digest.update(str((part.dtype.str, part.shape)).encode() + np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def games() -> dict:
    """One game under each named settings, played by the planner's choices for ``STEPS`` steps: each step's
    platform observation (a JSON round trip of it, as the platform hands it over) and the project's own features of
    it (digest of model input and mask, the planner's choice)."""
    env = GorgeEnv(model_input=False)
    observations, expected = [], []
    for i, name in enumerate(SETTINGS):
        env.reset(seed=100 + i, options=dict(SETTINGS[name]))
        state = features.FeatureState()
        seen, digests = [], []
        for _ in range(STEPS):
            observation = json.loads(json.dumps(env.platform_obs()["observation"]))
            maps, vector = features.encode(observation, state)
            digests.append([_digest(maps, vector, features.action_mask(observation, state)), int(state.choice)])
            seen.append(observation)
            _, _, terminated, truncated, _ = env.step(state.choice)
            if terminated or truncated:
                break
        observations.append(seen)
        expected.append(digests)
    return {"observations": observations, "expected": expected}


def _copies(folder: Path) -> Path:
    """The shipped files in ``folder/shipped_feature/`` as build-submission puts them into ``feature/``."""
    package = folder / "shipped_feature"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    source = Path(str(features.__file__))
    for name in (source.name, *features.COMPANION_FILES):
        shutil.copyfile(source.parent / name, package / name)
    return folder


def _encode_all(module, observations: list[list[dict]]) -> list[list[list]]:
    out = []
    for game in observations:
        state, digests = module.FeatureState(), []
        for observation in game:
            maps, vector = module.encode(observation, state)
            digests.append([_digest(maps, vector, module.action_mask(observation, state)), int(state.choice)])
        out.append(digests)
    return out


def _without_newer_numpy(monkeypatch) -> list[str]:
    """Remove numpy's functions newer than 1.19 from numpy's public modules; returns what was removed."""
    removed = []
    for module in (np, np.lib, np.lib.stride_tricks, np.random):
        for name in NEWER_NUMPY:
            if name in vars(module):
                monkeypatch.delattr(module, name)
                removed.append(f"{module.__name__}.{name}")
    return removed


def test_the_shipped_features_play_without_numpys_newer_functions(games, tmp_path, monkeypatch):
    assert len(games["observations"]) == len(SETTINGS) and all(len(g) >= 50 for g in games["observations"])
    removed = _without_newer_numpy(monkeypatch)
    assert "numpy.lib.stride_tricks.sliding_window_view" in removed
    monkeypatch.syspath_prepend(str(_copies(tmp_path)))
    try:
        module = importlib.import_module("shipped_feature.features")
        assert not module.__name__.startswith("sb3_realm")
        assert _encode_all(module, games["observations"]) == games["expected"]
    finally:
        for key in [k for k in sys.modules if k.split(".")[0] == "shipped_feature"]:
            del sys.modules[key]


@pytest.mark.skipif(not OLD_NUMPY_PYTHON, reason="SB3_REALM_OLD_NUMPY_PYTHON names no interpreter with numpy 1.19")
def test_the_shipped_features_give_the_same_results_under_numpy_119(games, tmp_path):
    folder = _copies(tmp_path / "copies")
    observations = tmp_path / "observations.json"
    observations.write_text(json.dumps(games["observations"]), encoding="utf-8")
    done = subprocess.run([str(OLD_NUMPY_PYTHON), "-c", OLD_NUMPY_SCRIPT, str(folder), str(observations)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["numpy"].startswith("1.19.")
    assert result["games"] == games["expected"]


@pytest.mark.skipif(not _old_python_imports("numpy", "torch", "tomllib"),
                    reason="SB3_REALM_OLD_NUMPY_PYTHON names no interpreter with numpy 1.19, torch and tomllib")
def test_a_built_package_passes_its_check_under_the_old_interpreter(tmp_path, monkeypatch):
    from sb3_realm.export import build_submission, check_submission

    maps_dir = gorge_maps_dir()
    small_gorge_model(tmp_path / "model.zip")
    out = tmp_path / "upload"
    build_submission(tmp_path / "model.zip", out, code_package=make_gorge_code_package(tmp_path / "code_package"),
                     game="gorge", trust_pickle=True)
    monkeypatch.setattr(sys, "executable", str(OLD_NUMPY_PYTHON))  # the harness's interpreter
    report = check_submission(out, tmp_path / "model.zip", games=2, min_states=600, task_episodes=1,
                              task_max_step=100, trust_pickle=True, maps_dir=str(maps_dir))
    assert report["ok"] and report["identical_actions"] and report["states"] >= 600
