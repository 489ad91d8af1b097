"""Shared fixtures (the helpers that tests import are in ``tests/helpers.py``).

The competition map is read from ``--realm-map PATH``, else ``$SB3_REALM_REAL_MAP``, else
``../shared/data/realm_map_1.json`` beside the checkout. Without it the ``realmap`` tests skip, except where
``SB3_REALM_REQUIRE_REAL_MAP=1`` (set by ``.ci/run``, which has the map): there they fail. The map is not in the
repository (realm-rules section 7), so a hosted CI's generic ``CI=true`` does not require it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers import SMALL_MODELS, SMALL_RUN

from sb3_realm.games.realm import RealmMap, load_map

REPO = Path(__file__).resolve().parents[1]
DEFAULT_REAL_MAP = REPO.parent / "shared" / "data" / "realm_map_1.json"


def pytest_addoption(parser):
    parser.addoption("--realm-map", default=None, help="path of the competition map realm_map_1.json")


@pytest.fixture(autouse=True, scope="module")
def _games_a_module_registers_are_forgotten():
    """The games a test module registers (the toy, by its import path or by object) are unregistered after it: with
    a game of the same protocol names registered, a later module's ``evaluate(protocol="fixed")`` without a game
    would be ambiguous (pytest-xdist's ``--dist loadfile`` runs several modules in one process)."""
    from sb3_realm import games

    before = set(games.names())
    yield
    for name in set(games.names()) - before:
        games.unregister(name)


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread for a module whose batches are small: fastest, and never spinning against other processes
    for the cores (use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``)."""
    import torch  # here: collecting the tests needs no torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def local_ray():
    """A Ray instance started on this machine for the module's tests (``RAY_ADDRESS`` unset meanwhile) and stopped
    after them; the module's own functions reach Ray's workers by value (the workers cannot import ``tests/``). Without
    Ray installed the tests skip, except where ``SB3_REALM_REQUIRE_RAY=1`` (set by ``.ci/run``): there they fail."""
    try:
        import ray
    except ImportError:
        message = "Ray is not installed (pip install -e '.[ray]')"
        if os.environ.get("SB3_REALM_REQUIRE_RAY", "") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from sb3_realm.executors import connect_ray, disconnect_ray

    before = os.environ.pop("RAY_ADDRESS", None)
    modules = [m for m in sys.modules.values() if getattr(m, "__file__", None)
               and Path(m.__file__).parent == Path(__file__).parent]
    for module in modules:
        ray.cloudpickle.register_pickle_by_value(module)
    try:
        assert connect_ray(cpus=2) is True
        yield ray
    finally:
        disconnect_ray()
        for module in modules:
            ray.cloudpickle.unregister_pickle_by_value(module)
        if before is not None:
            os.environ["RAY_ADDRESS"] = before


@pytest.fixture(scope="session")
def real_map_path(request) -> Path:
    raw = request.config.getoption("--realm-map") or os.environ.get("SB3_REALM_REAL_MAP") or DEFAULT_REAL_MAP
    path = Path(raw)
    if not path.is_file():
        msg = (f"competition map not found at {path}; pass --realm-map PATH or set SB3_REALM_REAL_MAP "
               "(it is ../shared/data/realm_map_1.json beside the checkout)")
        if os.environ.get("SB3_REALM_REQUIRE_REAL_MAP", "") == "1":  # set by .ci/run, not by hosted CIs' CI=true
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def real_map(real_map_path) -> RealmMap:
    return load_map(real_map_path)


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> dict[str, Path]:
    """One short training run per algorithm of ``helpers.SMALL_MODELS`` (512 steps on the small map); the run's
    config.yaml is beside each model."""
    import torch

    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    out = {}
    try:
        for name, (config, extra) in SMALL_MODELS.items():
            run = tmp_path_factory.mktemp(name) / "run"
            cfg = load_config(REPO / config, [*SMALL_RUN, f"out={json.dumps(str(run))}", "total_timesteps=512", *extra])
            _, run_dir = train(cfg)
            out[name] = run_dir / "final_model.zip"
    finally:
        torch.set_num_threads(threads)
    return out
