"""How the package's threads and worker processes share a machine with other work: OpenMP threads that sleep while
they wait (``OMP_WAIT_POLICY=PASSIVE``, set when the package is imported, before torch loads its OpenMP runtime) and
one torch thread in each worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sb3_realm.imitation.collect import Collector
from sb3_realm.processes import WAIT_POLICY_ENV, passive_thread_waits

REPORT = ("import json, os, sys; import sb3_realm; "
          "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules]))")


def _fresh(policy: str | None) -> list:
    """[the wait policy, whether torch is loaded] just after ``import sb3_realm`` in a fresh interpreter whose
    environment sets ``OMP_WAIT_POLICY`` to ``policy`` (None: not at all)."""
    env = {k: v for k, v in os.environ.items() if k != WAIT_POLICY_ENV}
    if policy is not None:
        env[WAIT_POLICY_ENV] = policy
    out = subprocess.run([sys.executable, "-c", REPORT], env=env, capture_output=True, text=True, encoding="utf-8",
                         check=True)
    return json.loads(out.stdout)


def test_importing_the_package_makes_openmp_threads_sleep_before_torch_is_loaded():
    assert _fresh(None) == ["PASSIVE", False]  # set, and torch (which reads it once, when loaded) not loaded yet


def test_a_policy_the_user_set_is_kept(monkeypatch):
    assert _fresh("ACTIVE") == ["ACTIVE", False]
    monkeypatch.setenv(WAIT_POLICY_ENV, "active")
    assert passive_thread_waits() == "active" and os.environ[WAIT_POLICY_ENV] == "active"
    monkeypatch.delenv(WAIT_POLICY_ENV)
    assert passive_thread_waits() == "PASSIVE" and os.environ[WAIT_POLICY_ENV] == "PASSIVE"


def _worker_threads(_) -> tuple:
    import torch

    return torch.get_num_threads(), os.environ.get(WAIT_POLICY_ENV)


@pytest.mark.processes
def test_collector_workers_run_one_torch_thread_that_sleeps_while_it_waits():
    with Collector(2) as collector:
        assert collector._map(_worker_threads, [0, 1, 2, 3]) == [(1, "PASSIVE")] * 4
