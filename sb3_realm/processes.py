"""The one place that chooses how the package starts worker processes.

``forkserver`` where the system has it (Linux, macOS), ``spawn`` otherwise (Windows), as Stable-Baselines3's
``SubprocVecEnv`` does; ``SB3_REALM_START_METHOD=forkserver|spawn`` overrides the choice. Whatever the method, worker
functions live at module level and take picklable arguments, so everything also runs under ``spawn``.

It also says how torch's OpenMP threads wait (:func:`passive_thread_waits`, called when the package is imported):
asleep, not spinning, so that a machine with other work on it costs the package's commands in proportion.
"""

from __future__ import annotations

import multiprocessing
import os

__all__ = ["START_METHODS", "START_METHOD_ENV", "WAIT_POLICY_ENV", "mp_context", "passive_thread_waits",
           "start_method"]

START_METHOD_ENV = "SB3_REALM_START_METHOD"
START_METHODS = ("forkserver", "spawn")
#: OpenMP's standard variable for how a thread waits for the next parallel region (GNU, LLVM and Intel runtimes)
WAIT_POLICY_ENV = "OMP_WAIT_POLICY"


def passive_thread_waits() -> str:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` where the user has not set it, and return the policy in force.

    Torch runs its operations on ``torch.set_num_threads`` OpenMP threads; by default a thread that finished its part
    spins for a while (GNU OpenMP: 300,000 rounds) before it sleeps. On an idle machine that saves a wake-up; on a
    machine with other work on it the spinning thread holds a core that the thread it waits for needs, and each of the
    many small operations of a behaviour-cloning step waits for a time slice: on a 2-core machine with other work on it,
    a 2-thread fit took many times as long as with threads that sleep (docs/benchmarks.md). Asleep, threads cost
    nothing while they wait, and the numbers are the same: the policy changes when a thread runs, never how the work is
    split.

    The runtime reads the variable once, when torch loads it: the package sets it when it is imported, before any of its
    modules loads torch, and its worker processes inherit it. ``OMP_WAIT_POLICY=ACTIVE`` set by the user is kept
    (spinning threads, for a machine that runs nothing else)."""
    return os.environ.setdefault(WAIT_POLICY_ENV, "PASSIVE")


def start_method() -> str:
    """The start method to use: ``$SB3_REALM_START_METHOD`` if set, else ``forkserver`` where available, else
    ``spawn``. Raises ``ValueError`` for a value other than the allowed ones or one this system lacks."""
    available = multiprocessing.get_all_start_methods()
    wanted = os.environ.get(START_METHOD_ENV, "").strip()
    if wanted:
        if wanted not in START_METHODS:
            raise ValueError(f"{START_METHOD_ENV}={wanted!r} is not a start method sb3_realm uses; set it to one of "
                             f"{list(START_METHODS)} or unset it")
        if wanted not in available:
            raise ValueError(f"{START_METHOD_ENV}={wanted!r}: this system has only {available}; use 'spawn' or "
                             "unset it")
        return wanted
    return "forkserver" if "forkserver" in available else "spawn"


def mp_context(preload: list[str] | None = None):
    """The ``multiprocessing`` context of :func:`start_method`; ``preload``: modules the fork server imports once
    for all its children (only under ``forkserver``; ``spawn`` imports them in each child anyway)."""
    ctx = multiprocessing.get_context(start_method())
    if preload and ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(list(preload))
    return ctx
