"""The one place that chooses how the package starts worker processes.

``forkserver`` where the system has it (Linux, macOS), ``spawn`` otherwise (Windows), as Stable-Baselines3's
``SubprocVecEnv`` does; ``SB3_REALM_START_METHOD=forkserver|spawn`` overrides the choice. Whatever the method, worker
functions live at module level and take picklable arguments, so everything also runs under ``spawn``.
"""

from __future__ import annotations

import multiprocessing
import os

__all__ = ["START_METHODS", "START_METHOD_ENV", "mp_context", "start_method"]

START_METHOD_ENV = "SB3_REALM_START_METHOD"
START_METHODS = ("forkserver", "spawn")


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
