"""robot_vacuum's code that ships inside a package (the features module and the companions build-submission copies
beside it) gives the same model input, mask and planner choice when the copies are imported as a package the way a
built one imports them; and, with ``SB3_REALM_OLD_NUMPY_PYTHON`` set to an interpreter with Python 3.8 and numpy
1.19 (numpy only), under that interpreter too, bit for bit, on every step of recorded games."""

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
from sb3_realm_vacuum import features
from sb3_realm_vacuum.env import VacuumEnv
from sb3_realm_vacuum.experts import ObservedPolicy

OLD_NUMPY_PYTHON = os.environ.get("SB3_REALM_OLD_NUMPY_PYTHON")
STEPS = 250  # past the first trip to a charger (battery 200)
PACKAGE = "vacuum_copies"

ENCODE = """
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from {package} import features
state = features.FeatureState()
out = []
for line in open(sys.argv[2], encoding="utf-8"):
    observation = json.loads(line)
    maps, vector = features.encode(observation, state)
    mask = features.action_mask(observation, state)
    out.append([hashlib.sha256(maps.tobytes()).hexdigest(), hashlib.sha256(vector.tobytes()).hexdigest(),
                [int(m) for m in mask], int(state.choice)])
print(json.dumps(out))
"""


def _copies(folder: Path) -> Path:
    """The features module and its companions copied into ``folder/vacuum_copies`` as a package."""
    package = folder / PACKAGE
    package.mkdir(parents=True)
    source = Path(features.__file__).parent
    for name in ("features.py", *features.COMPANION_FILES):
        shutil.copyfile(source / name, package / name)
    (package / "__init__.py").write_text("", encoding="utf-8")
    return folder


def _recorded(path: Path) -> list[list]:
    """Play a game of the planner expert on a shipped map; write each step's observation (one JSON line a step)
    and return the project's own encoding of each."""
    env = VacuumEnv(map_name="own_4", max_step=STEPS)
    expert = ObservedPolicy(env)
    obs, _ = env.reset(seed=5)
    expert.reset(env)
    state = features.FeatureState()
    expected, done = [], False
    with path.open("w", encoding="utf-8") as f:
        while not done:
            observation = env.platform_obs()["observation"]
            f.write(json.dumps(observation) + "\n")
            maps, vector = features.encode(observation, state)
            mask = features.action_mask(observation, state)
            expected.append([hashlib.sha256(maps.tobytes()).hexdigest(), hashlib.sha256(vector.tobytes()).hexdigest(),
                             [int(m) for m in mask], int(state.choice)])
            assert np.array_equal(maps, obs["maps"]) and np.array_equal(vector, obs["vector"])
            obs, _, terminated, truncated, _ = env.step(expert.act(env, obs))
            done = terminated or truncated
    return expected


def test_the_copies_encode_as_the_package_does(tmp_path):
    expected = _recorded(tmp_path / "observations.jsonl")
    assert len(expected) == STEPS and len({row[3] for row in expected}) > 3
    sys.path.insert(0, str(_copies(tmp_path / "copies")))
    try:
        copies = importlib.import_module(f"{PACKAGE}.features")
        state = copies.FeatureState()
        with (tmp_path / "observations.jsonl").open(encoding="utf-8") as f:
            for row, line in zip(expected, f, strict=True):
                observation = json.loads(line)
                maps, vector = copies.encode(observation, state)
                mask = copies.action_mask(observation, state)
                got = [hashlib.sha256(maps.tobytes()).hexdigest(), hashlib.sha256(vector.tobytes()).hexdigest(),
                       [int(m) for m in mask], int(state.choice)]
                assert got == row
    finally:
        sys.path.remove(str(tmp_path / "copies"))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _old_numpy() -> bool:
    if not OLD_NUMPY_PYTHON:
        return False
    done = subprocess.run([OLD_NUMPY_PYTHON, "-c", "import numpy, sys; print(numpy.__version__)"],
                          capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout.strip().startswith("1.19")


@pytest.mark.skipif(not _old_numpy(), reason="SB3_REALM_OLD_NUMPY_PYTHON names no interpreter with numpy 1.19")
def test_the_copies_encode_the_same_under_python_38_and_numpy_119(tmp_path):
    expected = _recorded(tmp_path / "observations.jsonl")
    folder = _copies(tmp_path / "copies")
    done = subprocess.run([OLD_NUMPY_PYTHON, "-c", ENCODE.format(package=PACKAGE), str(folder),
                           str(tmp_path / "observations.jsonl")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected
