"""Study storages from a URL, all with a heartbeat so that the trials of killed workers end FAILED.

- ``sqlite:///PATH.db``: one worker process (embedded, nothing to start);
- ``journal:///ABS/PATH.log``, ``journal://REL/PATH.log`` or any path ending in ``.log``: an Optuna journal file,
  for several worker processes on one host (``--workers K``);
- ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB`` (or ``mysql://...``): several machines.

A running trial records a heartbeat every ``heartbeat_interval`` seconds; a RUNNING trial whose last heartbeat is
older than ``grace_period`` belongs to a dead worker: the next worker that starts a trial marks it FAILED and (up to
``max_retry`` times) enqueues its parameters again. RDB storages use Optuna's own heartbeat table; the journal file
gets the same behaviour from :class:`HeartbeatJournalStorage` (the heartbeat is a trial system attribute).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import re
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages._heartbeat import BaseHeartbeat  # the documented base of heartbeat-capable storages
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import TrialState

from ..atomic import check_output_file

__all__ = [
    "HEARTBEAT_KEY",
    "HeartbeatJournalStorage",
    "check_storage_file",
    "make_storage",
    "retry_callback",
    "storage_kind",
    "storage_path",
]

HEARTBEAT_KEY = "sb3_realm:heartbeat"
_HELP = ("use sqlite:///PATH.db (one worker), journal:///PATH.log or a PATH ending in .log (several workers on one "
         "host) or postgresql://USER@HOST/DB (several machines)")


def storage_kind(url: str) -> str:
    """``sqlite``, ``journal`` or ``rdb`` (a database server)."""
    if not isinstance(url, str) or not url:
        raise ValueError(f"--storage {url!r}: {_HELP}")
    if url.startswith("sqlite:"):
        return "sqlite"
    if url.startswith("journal://") or (url.endswith(".log") and "://" not in url):
        return "journal"
    if url.split("://", 1)[0].split("+", 1)[0] in ("postgresql", "postgres", "mysql"):
        return "rdb"
    raise ValueError(f"--storage {url!r} is not a supported storage; {_HELP}")


def storage_path(url: str) -> Path | None:
    """The file of a SQLite or journal storage (None for a database server)."""
    kind = storage_kind(url)
    if kind == "sqlite":
        if not url.startswith("sqlite:///"):
            raise ValueError(f"--storage {url!r}: a SQLite URL has three slashes, e.g. sqlite:///runs/study.db")
        return _drive_path(url[len("sqlite:///"):])
    if kind == "journal":
        return _drive_path(url[len("journal://"):] if url.startswith("journal://") else url)
    return None


def _drive_path(text: str) -> Path:
    """The file of a URL's path part: ``/C:/runs/s.log`` (``journal:///C:/...``, ``sqlite:///C:/...``) is the
    Windows drive path ``C:/runs/s.log``; anything else is taken as it is (``runs/s.log``, ``/abs/s.log``)."""
    if re.match(r"^/[A-Za-z]:[/\\]", text):
        text = text[1:]
    return Path(text)


#: the first bytes of every SQLite database file
SQLITE_HEADER = b"SQLite format 3\x00"
#: tables every Optuna database has
OPTUNA_TABLES = {"studies", "trials", "version_info"}


def check_storage_file(url: str) -> None:
    """Raise ``ValueError`` (naming the file and the fix) unless the file of a SQLite or journal ``url`` can be an
    Optuna storage: missing or empty (it is created), or an Optuna journal (every line a JSON entry, the first one
    a study's creation, none cut short), or a SQLite database that is empty or holds Optuna's tables. Reads the
    file, writes nothing: a file of anything else is never appended to, nor given Optuna's tables. A database
    server's URL is left to the server."""
    path = storage_path(url)
    if path is None:
        return
    check_output_file(path, "--storage file")
    if not path.is_file() or path.stat().st_size == 0:
        return
    journal = storage_kind(url) == "journal"
    problem = _journal_problem(path) if journal else _sqlite_problem(path)
    for _ in range(10):  # a last line cut short may be another worker's append, seen half done: look again
        if not (journal and problem and problem.endswith(_CUT_SHORT)):
            break
        time.sleep(0.1)
        problem = _journal_problem(path)
    if problem:
        raise ValueError(f"--storage {url!r}: {str(path)!r} {problem}; it was left as it was: give another file (a "
                         "new one is created), or move that one away")


_CUT_SHORT = "is cut short (no newline at its end)"


def _journal_problem(path: Path) -> str | None:
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                return f"is not an Optuna journal file, or one whose last write was stopped midway: line {number} " \
                       f"{_CUT_SHORT}"
            try:
                entry = json.loads(line)
            except ValueError:
                return f"is not an Optuna journal file: line {number} is not JSON"
            code = entry.get("op_code") if isinstance(entry, dict) else None
            if isinstance(code, bool) or not isinstance(code, int) or (number == 1 and code != 0):
                return f"is not an Optuna journal file: line {number} is not a journal entry"
    return None


def _sqlite_problem(path: Path) -> str | None:
    with open(path, "rb") as f:
        if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            return "is not a SQLite database"
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorname", None) == "SQLITE_READONLY_ROLLBACK":
            # a write stopped midway (a worker killed mid-trial) left a hot journal, which a read-only connection
            # cannot roll back; the study's own connection rolls it back, as SQLite does on every open
            return None
        return f"is not a readable SQLite database ({exc})"
    if tables and not OPTUNA_TABLES <= tables:
        return f"is a SQLite database of something else, not an Optuna study (its tables: {sorted(tables)[:8]})"
    return None


def _with_driver(url: str) -> str:
    """``postgresql://`` with the installed driver made explicit: SQLAlchemy 2.1 defaults to psycopg 3, 2.0 to
    psycopg2; sb3_realm installs psycopg2-binary."""
    scheme, rest = url.split("://", 1)
    if scheme not in ("postgresql", "postgres"):
        return url
    import importlib.util

    for driver in ("psycopg2", "psycopg"):
        if importlib.util.find_spec(driver) is not None:
            return f"postgresql+{driver}://{rest}"
    raise ValueError(f"--storage {url!r}: no PostgreSQL driver installed; pip install psycopg2-binary")


def _hide_password(url: str) -> str:
    """``scheme://user:***@host/db`` for a URL with a password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def _is_connection_error(exc: BaseException) -> bool:
    return type(exc).__name__ in ("OperationalError", "InterfaceError") or "connect" in str(exc).lower()


def retry_callback(max_retry: int):
    """Optuna's callback that enqueues a stale trial's parameters again, at most ``max_retry`` times."""
    cls = getattr(optuna.storages, "RetryHeartbeatStaleTrialCallback", None) or optuna.storages.RetryFailedTrialCallback
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return cls(max_retry=max_retry)


class HeartbeatJournalStorage(JournalStorage, BaseHeartbeat):
    """A :class:`~optuna.storages.JournalStorage` with Optuna's heartbeat protocol, so that ``study.optimize`` and
    :func:`optuna.storages.fail_stale_trials` fail the trials of dead workers as with an RDB storage. The heartbeat
    is the wall-clock time in the trial's system attribute :data:`HEARTBEAT_KEY` (one host: one clock).

    :param backend: the journal backend (a :class:`~optuna.storages.journal.JournalFileBackend`).
    :param heartbeat_interval: seconds between heartbeats of a running trial.
    :param grace_period: seconds without a heartbeat after which a running trial is stale (default 2 intervals).
    :param stale_trial_callback: called with ``(study, frozen_trial)`` for each trial failed as stale.
    """

    def __init__(self, backend, heartbeat_interval: int, grace_period: int | None = None,
                 stale_trial_callback=None) -> None:
        super().__init__(backend)
        if heartbeat_interval <= 0 or (grace_period is not None and grace_period <= 0):
            raise ValueError(f"heartbeat_interval = {heartbeat_interval} and grace_period = {grace_period} must be "
                             "positive (seconds)")
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period
        self.stale_trial_callback = stale_trial_callback

    def record_heartbeat(self, trial_id: int) -> None:
        try:
            self.set_trial_system_attr(trial_id, HEARTBEAT_KEY, time.time())
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # the trial just ended (or another worker failed it as stale)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        grace = self.grace_period if self.grace_period is not None else 2 * self.heartbeat_interval
        now, stale = time.time(), []
        for t in self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,)):
            beat = t.system_attrs.get(HEARTBEAT_KEY)
            if beat is None:
                continue  # a worker without heartbeat, or one that has not beaten yet
            # a retried trial inherits its predecessor's attributes: count from its own start at the earliest
            last = max(float(beat), t.datetime_start.timestamp() if t.datetime_start else 0.0)
            if now - last > grace:
                stale.append(t._trial_id)
        return stale

    def get_heartbeat_interval(self) -> int | None:
        return self.heartbeat_interval

    def get_heartbeat_stale_trial_callback(self):
        return self.stale_trial_callback

    def get_failed_trial_callback(self):  # the name in Optuna < 4.9
        return self.stale_trial_callback


def make_storage(url: str, heartbeat_interval: int = 30, grace_period: int | None = 120, max_retry: int = 1,
                 create: bool = True):
    """The Optuna storage of ``url`` with a heartbeat (see the module docstring). With ``create=False`` a SQLite or
    journal file must exist already (reading a study never creates an empty database)."""
    kind = storage_kind(url)
    path = storage_path(url)
    if path is not None:
        if not create and not path.is_file():
            raise ValueError(f"--storage {url!r}: no study file at {path}")
        check_storage_file(url)
        path.parent.mkdir(parents=True, exist_ok=True)
    callback = retry_callback(max_retry) if max_retry > 0 else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)
        if kind == "journal":
            # the open-file lock: the default symlink lock needs symlink rights on Windows
            backend = JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path)))
            return HeartbeatJournalStorage(backend, heartbeat_interval, grace_period, callback)
        params = inspect.signature(RDBStorage.__init__).parameters
        key = "heartbeat_stale_trial_callback"
        key = key if key in params else "failed_trial_callback"  # its name in Optuna < 4.9
        callback_kwargs: dict[str, Any] = {key: callback}
        engine_kwargs = {"connect_args": {"timeout": 60}} if kind == "sqlite" else {"pool_pre_ping": True}
        try:
            for attempt in range(3):
                try:
                    return RDBStorage(_with_driver(url), engine_kwargs=engine_kwargs,
                                      heartbeat_interval=heartbeat_interval, grace_period=grace_period,
                                      **callback_kwargs)
                except Exception as exc:  # another script made the tables at the same moment: join
                    if type(exc).__name__ != "IntegrityError" or attempt == 2:
                        raise
                    time.sleep(0.2)
        except Exception as exc:  # SQLAlchemy's OperationalError and friends: one line, the password hidden
            if kind == "sqlite" and type(exc).__name__ == "DatabaseError":
                reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:200]
                raise ValueError(f"--storage {url!r}: {path} is not a SQLite database ({reason}); move it away, or "
                                 "give another --out or --storage") from None
            if kind == "sqlite" or not _is_connection_error(exc):
                raise
            reason = " ".join(str(getattr(exc, "orig", None) or exc).split())[:300]
            raise ValueError(f"--storage {_hide_password(url)!r}: the database server refused the connection "
                             f"({reason}); start the server, or check host, port, user, password and database name "
                             "in the URL") from None
