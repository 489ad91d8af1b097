"""Where the package's work fans out: the worker processes of this machine (the default) or a Ray cluster.

Every place that plays many games at once (evaluation, the experts' games and their labels, the learner's games of an
imitation run, the all-sets benchmark) and the tuning study's workers take an executor from :func:`make_executor`;
they hand it module-level functions and picklable jobs and get the results back in the order of the jobs, whichever
executor runs them:

- ``processes``: a ``concurrent.futures.ProcessPoolExecutor`` of ``workers`` processes started by
  :func:`~sb3_realm.processes.mp_context` (``forkserver`` or ``spawn``);
- ``ray``: Ray tasks, one CPU each, at most ``workers`` at a time, on the cluster at ``address`` (``--ray-address``,
  else ``$RAY_ADDRESS``; ``auto`` joins the cluster started on this machine by ``ray start``) or, without one, on a
  Ray instance started here for the run and stopped after it. Ray is the optional extra ``pip install
  'sb3-realm[ray]'``.

Each worker runs the caller's ``initializer(*initargs)`` once before its first job (a Ray worker process runs it again
when it has run another executor's jobs since), with one torch thread and one OpenMP thread unless the user set
``OMP_NUM_THREADS``. The ``SB3_REALM_*`` variables of this process (the trusted-pickle switch, the maps folders) and
``OMP_WAIT_POLICY`` reach Ray's workers too, on every machine.

Faults: a worker that dies in the middle of a job (killed, out of memory, its machine gone) has that job run again by
another worker, up to :data:`RETRIES` times; a job's result is taken once, from the run that finished, so nothing is
lost or counted twice. An exception raised by the job itself is the caller's error and is raised at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from .processes import mp_context

__all__ = ["EXECUTORS", "RAY_ADDRESS_ENV", "RETRIES", "Executor", "ProcessExecutor", "RayExecutor",
           "RayNotInstalledError", "check_executor", "connect_ray", "make_executor", "ray_address"]

#: the executors by name, the default first
EXECUTORS = ("processes", "ray")
#: Ray's own variable for the address of the cluster to join
RAY_ADDRESS_ENV = "RAY_ADDRESS"
#: how many times a job whose worker died is run again before the run fails
RETRIES = 3
#: the variables of this process that workers on other machines need as well
_CARRIED_PREFIXES = ("SB3_REALM_",)
_CARRIED_NAMES = ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


class RayNotInstalledError(ValueError, ImportError):
    """``--executor ray`` (or ``vec_env: ray``) without Ray installed: bad input, reported before any work starts."""


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise RayNotInstalledError(
            "the Ray executor needs Ray, which is not installed: install the optional extra with pip install -e "
            "'.[ray]' in a checkout (pip install 'sb3-realm[ray]' otherwise), on every machine of the cluster, or "
            "use --executor processes") from exc
    return ray


def check_executor(executor: str, address: str | None = None, option: str = "--executor") -> str:
    """``executor`` if it is one of :data:`EXECUTORS` (and Ray is installed for ``ray``; ``address``, a cluster's
    address, only with ``ray``), else a ``ValueError`` (a :class:`RayNotInstalledError`) that names the value and the
    fix; called before any work starts."""
    if executor not in EXECUTORS:
        raise ValueError(f"{option} {executor!r} is not an executor; choose one of {list(EXECUTORS)} (processes: "
                         "worker processes on this machine; ray: a Ray cluster)")
    if executor == "ray":
        _import_ray()
    elif address:
        raise ValueError(f"--ray-address {address!r} is for {option} ray; add {option} ray or leave the address out")
    return executor


def ray_address(address: str | None = None) -> str | None:
    """The cluster to join: ``address``, else ``$RAY_ADDRESS``, else None (a Ray instance of this run)."""
    address = (address or "").strip() or os.environ.get(RAY_ADDRESS_ENV, "").strip()
    return address or None


def _carried_variables() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.startswith(_CARRIED_PREFIXES) or k in _CARRIED_NAMES}
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _check_reachable(address: str, seconds: float = 5.0) -> None:
    """A ``ConnectionError`` naming ``address`` (``host:port``, or ``ray://host:port``) when nothing answers on its
    port within ``seconds``: Ray itself would retry for minutes. ``auto`` and other forms are left to Ray."""
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=seconds).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at the Ray address {address!r} (--ray-address or {RAY_ADDRESS_ENV}): "
                              f"{exc}; start the cluster with `ray start --head --port {port}` on {host} (and "
                              f"`ray start --address {host}:{port}` on the other machines), check the address and the "
                              f"firewall, or leave the address and {RAY_ADDRESS_ENV} unset to start Ray on this "
                              "machine") from None


def connect_ray(address: str | None = None, cpus: int | None = None) -> bool:
    """Join the Ray cluster at :func:`ray_address` ``(address)``, or start a Ray instance on this machine with
    ``max(cpus, os.cpu_count())`` CPUs when there is none. Returns True when this call started Ray (then the caller
    shuts it down when done: :func:`disconnect_ray`), False when Ray was already running in this process.

    Workers get this process's ``SB3_REALM_*`` variables and ``OMP_WAIT_POLICY``, and one OpenMP thread unless
    ``OMP_NUM_THREADS`` is set. A ``ConnectionError`` names an address where no cluster answers."""
    ray = _import_ray()
    if ray.is_initialized():
        return False
    where = ray_address(address)
    kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
    if where is not None:
        _check_reachable(where)
    threads_before = os.environ.get("OMP_NUM_THREADS")
    if where is None:  # Ray's processes start from this one and inherit its variables (and its workers start early)
        os.environ["OMP_NUM_THREADS"] = _carried_variables()["OMP_NUM_THREADS"]
        kwargs["num_cpus"] = max(int(cpus or 1), os.cpu_count() or 1)
        kwargs["object_store_memory"] = 512 * 1024 * 1024
    else:  # a cluster's workers get them with the job
        kwargs["runtime_env"] = {"env_vars": _carried_variables()}
    try:
        ray.init(address=where, **kwargs)
    except ConnectionError as exc:
        raise ConnectionError(f"no Ray cluster answers at --ray-address / {RAY_ADDRESS_ENV} {where!r} ({exc}); start "
                              "one with `ray start --head` on the head machine and give its address (host:6379), "
                              f"or leave the address and {RAY_ADDRESS_ENV} unset to start Ray on this machine") from exc
    finally:  # this process's own torch threads stay as they were
        if threads_before is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = threads_before
    return True


def disconnect_ray() -> None:
    """Stop this process's Ray connection (and the Ray instance :func:`connect_ray` started here)."""
    ray = _import_ray()
    if ray.is_initialized():
        ray.shutdown()


class Executor:
    """Runs ``fn(job)`` for many jobs in ``workers`` workers, each set up once by ``initializer(*initargs)``; a
    context manager. :meth:`map` yields the results in the order of the jobs."""

    kind = ""

    def __init__(self, workers: int, initializer: Callable | None = None, initargs: tuple = ()) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers = {workers!r} must be an integer >= 1")
        self.workers = workers
        self.initializer = initializer
        self.initargs = tuple(initargs)

    def map(self, fn: Callable, jobs: Iterable, chunksize: int = 1) -> Iterator:
        """``fn`` of each job, in order; ``chunksize`` jobs go to a worker at a time."""
        raise NotImplementedError

    def close(self, cancel: bool = False) -> None:
        """Stop the workers; ``cancel``: without waiting for the jobs they run (an interrupted run)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(cancel=exc_type is not None)


def _run_chunk(fn: Callable, chunk: list) -> list:
    return [fn(job) for job in chunk]


def _chunks(jobs: list, size: int) -> list[list]:
    size = max(1, int(size))
    return [jobs[i:i + size] for i in range(0, len(jobs), size)]


class ProcessExecutor(Executor):
    """The worker processes of this machine: a ``ProcessPoolExecutor``; a pool broken by a worker's death is started
    again and the jobs without a result are run again (see the module docstring)."""

    kind = "processes"

    def __init__(self, workers: int, initializer: Callable | None = None, initargs: tuple = ()) -> None:
        super().__init__(workers, initializer, initargs)
        self._pool: ProcessPoolExecutor | None = None

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=mp_context(), initializer=self.initializer,
                                             initargs=self.initargs)
        return self._pool

    def map(self, fn: Callable, jobs: Iterable, chunksize: int = 1) -> Iterator:
        chunks = _chunks(list(jobs), chunksize)
        results: dict[int, list] = {}
        tries = [0] * len(chunks)
        pending: dict[Future, int] = {}
        todo = list(range(len(chunks)))
        next_out = 0
        while next_out < len(chunks):
            pool = self._start()
            broken: list[int] = []
            try:
                while todo and len(pending) < 2 * self.workers:
                    i = todo.pop(0)
                    pending[pool.submit(_run_chunk, fn, chunks[i])] = i
            except BrokenProcessPool:
                broken.append(i)
            if not broken:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for future in done:
                    i = pending.pop(future)
                    try:
                        results[i] = future.result()
                    except BrokenProcessPool:
                        broken.append(i)
            if broken:  # a worker died: every job not yet done goes again to a new pool
                broken = sorted(set(broken) | set(pending.values()))
                pending.clear()
                for i in broken:
                    tries[i] += 1
                    if tries[i] > RETRIES:
                        raise RuntimeError(f"a worker process died {tries[i]} times running the same jobs; the "
                                           "run stops (out of memory? try fewer --workers)")
                todo = broken + todo
                self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
                continue
            while next_out in results:
                yield from results.pop(next_out)
                next_out += 1

    def close(self, cancel: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if cancel:  # the running jobs (an expert's labelling may run for minutes) are not waited for
            terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
            if terminate is not None:
                terminate()
            else:
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    if process.is_alive():
                        process.terminate()
        pool.shutdown(cancel_futures=True)


#: in a Ray worker process: the executor whose initializer ran there last
_RAY_SETUP: dict[str, Any] = {"token": None}


def _ray_chunk(token: str, setup: tuple, fn: Callable, chunk: list) -> list:
    """One Ray task: the executor's initializer if this worker process has not run it (or has since run another
    executor's), then ``fn`` of each job of ``chunk``."""
    if _RAY_SETUP["token"] != token:
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1") or 1))
        initializer, initargs = setup
        if initializer is not None:
            initializer(*initargs)
        _RAY_SETUP["token"] = token
    return _run_chunk(fn, chunk)


class RayExecutor(Executor):
    """Ray tasks of one CPU each, at most ``workers`` at a time; joins the cluster at ``address`` (see
    :func:`connect_ray`) or starts Ray on this machine for as long as the executor lives."""

    kind = "ray"

    def __init__(self, workers: int, initializer: Callable | None = None, initargs: tuple = (),
                 address: str | None = None) -> None:
        super().__init__(workers, initializer, initargs)
        self._ray = _import_ray()
        self._started = connect_ray(address, cpus=workers)
        self._token = uuid.uuid4().hex
        self._setup = self._ray.put((initializer, self.initargs))
        self._task = self._ray.remote(num_cpus=1, max_retries=RETRIES, retry_exceptions=False)(_ray_chunk)
        self._running: list = []

    def map(self, fn: Callable, jobs: Iterable, chunksize: int = 1) -> Iterator:
        ray = self._ray
        chunks = _chunks(list(jobs), chunksize)
        fn_ref = ray.put(fn)
        index: dict = {}
        results: dict[int, list] = {}
        next_submit = next_out = 0
        try:
            while next_out < len(chunks):
                while next_submit < len(chunks) and len(index) < 2 * self.workers:
                    ref = self._task.remote(self._token, self._setup, fn_ref, chunks[next_submit])
                    index[ref] = next_submit
                    next_submit += 1
                self._running = list(index)
                done, _ = ray.wait(list(index), num_returns=1)
                for ref in done:
                    results[index.pop(ref)] = ray.get(ref)
                while next_out in results:
                    yield from results.pop(next_out)
                    next_out += 1
        finally:
            self._running = list(index)

    def close(self, cancel: bool = False) -> None:
        ray = self._ray
        if cancel:
            for ref in self._running:
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
        self._running = []
        if self._started:
            self._started = False
            disconnect_ray()


def make_executor(executor: str = "processes", workers: int = 1, initializer: Callable | None = None,
                  initargs: tuple = (), address: str | None = None) -> Executor:
    """The executor named ``executor`` (:data:`EXECUTORS`) with ``workers`` workers; ``address`` (``ray`` only): the
    cluster to join (:func:`ray_address`)."""
    check_executor(executor, address)
    if executor == "ray":
        return RayExecutor(workers, initializer, initargs, address=address)
    return ProcessExecutor(workers, initializer, initargs)
