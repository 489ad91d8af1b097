"""A built submission folder in guarded subprocesses on the platform's stand-in (for the proof of
:mod:`sb3_realm.export.check`).

- :class:`TrainingTaskProcess`: a training task of the folder on the stand-in of the platform's framework
  (``sb3_realm.submission``'s ``platform_stub/framework.py``), run by its ``harness.py`` in a fresh Python process
  whose import path holds only the stand-in, and where sb3_realm, stable_baselines3, sb3_contrib and gymnasium
  cannot be imported; this process serves it the environment.
- :class:`SubmissionProcess`: in such a process, the Agent of a model the task saved (loaded as the platform's
  model loader does) or of the folder itself, answering competition observations with actions.
- :class:`PlatformProcess`: a built code package on its layout's own stand-in of the platform's framework.

Bytecode in the folder is never run: a guarded process compiles the folder's modules from their verified sources
(its bytecode cache is a private, empty folder), so a ``__pycache__`` planted beside them is ignored.
"""

from __future__ import annotations

import collections
import dataclasses
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import numpy as np

from .. import games
from ..submission import BLOCKED_MODULES, HARNESS
from .manifest import folder_game, read_manifest

__all__ = ["MAP_KEYS", "PlatformProcess", "SubmissionProcess", "TrainingTaskProcess"]

MAP_KEYS = ("obstacle_map", "memory_map", "treasure_map", "end_map")


def _plain(value):
    """Dataclasses and numpy scalars -> JSON data (the platform's objects, as plain data)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _obs_message(obs) -> tuple[dict, bytes]:
    """A competition observation as the wire carries it: plain data, and its four maps as ``.npy`` bytes."""
    plain = _plain(obs)
    maps = np.stack([np.asarray(plain["feature"].pop(k), dtype=np.float64) for k in MAP_KEYS])  # (4, 2601)
    buf = io.BytesIO()
    np.save(buf, maps, allow_pickle=False)
    return plain, buf.getvalue()


class _HarnessProcess:
    """``harness.py`` in a fresh guarded process (see the module docstring); use as a context manager. It writes no
    bytecode and reads none of the folder's: its bytecode cache is a private empty folder (``-X pycache_prefix``)."""

    def __init__(self, args: list[str], folder: Path, harness: Path = HARNESS) -> None:
        self.folder = folder
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1")
        self._no_cache = tempfile.mkdtemp(prefix="sb3-realm-no-bytecode-")
        try:
            self.proc = subprocess.Popen([sys.executable, "-I", "-B", "-X", f"pycache_prefix={self._no_cache}",
                                          str(harness), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env)
        except BaseException:
            shutil.rmtree(self._no_cache, ignore_errors=True)
            raise
        # its three pipes: never None with PIPE, and binary buffered streams (the default bufsize=-1)
        self._stdin = cast(io.BufferedWriter, self.proc.stdin)
        self._stdout = cast(io.BufferedReader, self.proc.stdout)
        self._stderr_pipe = cast(io.BufferedReader, self.proc.stderr)
        # its stderr is drained while it runs (a full pipe would block the harness), the last 64 KB kept for errors
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self._stderr_pipe.read1(1024), b""):
            self._stderr.append(chunk)

    def _stderr_tail(self) -> str:
        """The end of what the process wrote to stderr, once it has ended (the drain has read everything)."""
        self._drain.join(timeout=5)
        return b"".join(self._stderr).decode(errors="replace")[-3000:]

    def _recv(self) -> dict:
        head = self._stdout.read(4)
        if len(head) != 4:
            raise EOFError("the submission process ended")
        (n,) = struct.unpack(">I", head)
        return json.loads(self._stdout.read(n))

    def _recv_or_fail(self, what: str) -> dict:
        try:
            return self._recv()
        except EOFError as exc:
            self.proc.wait()
            raise RuntimeError(f"the submission in {self.folder} {what}:\n{self._stderr_tail()}") from exc

    def _send(self, obj: dict, payload: bytes | None = None) -> None:
        data = json.dumps(obj).encode()
        msg = struct.pack(">I", len(data)) + data
        if payload is not None:
            msg += struct.pack(">I", len(payload)) + payload
        self._stdin.write(msg)
        self._stdin.flush()

    def _send_obs(self, message: dict, obs) -> None:
        if obs is None:
            self._send({**message, "obs": None})
            return
        plain, payload = _obs_message(obs)
        self._send({**message, "obs": plain, "maps": True}, payload)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._send({"quit": True})
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._drain.join(timeout=5)
        for stream in (self._stdin, self._stdout, self._stderr_pipe):  # closed before the folder is touched
            stream.close()
        shutil.rmtree(self._no_cache, ignore_errors=True)  # the empty cache folder this process made

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SubmissionProcess(_HarnessProcess):
    """A submission's Agent in its own guarded process, serving the evaluation loop: of ``folder`` itself
    (``model_pool`` None: as the platform evaluates a code package) or of ``folder``, a model a training task
    saved, loaded as the platform's model loader does into the model-pool folder ``model_pool``. ``game``: the game
    it plays (None: the one the folder's manifest records)."""

    def __init__(self, folder: str | os.PathLike, *, layout: str | None = None,
                 model_pool: str | os.PathLike | None = None, game: str | None = None) -> None:
        folder = Path(folder).resolve()
        game_spec = games.get(game) if game is not None else folder_game(folder)
        if model_pool is None:
            layout = read_manifest(folder)["layout"]
            args = ["eval-package", str(games.layout_folder(layout)), str(folder),
                    str(game_spec.submission.protocol_file)]
        else:
            args = ["eval-model", str(games.layout_folder(layout or game_spec.submission.layouts[0])), str(folder),
                    str(Path(model_pool).resolve()), str(game_spec.submission.protocol_file)]
        super().__init__(args, folder)
        self.hello = self._recv_or_fail("failed to start")
        if "error" in self.hello:
            self.close()
            raise RuntimeError(f"the platform stand-in refused {folder}: {self.hello['error']}")
        leaked = sorted(set(self.hello["modules"]) & set(BLOCKED_MODULES))
        if leaked:
            raise RuntimeError(f"the submission process imported {leaked}; a submission may use torch + numpy only")

    def act(self, obs, env_info) -> int:
        """The submission's action for a competition ``(obs, env_info)`` (``env_info`` None right after a reset)."""
        self._send_obs({"env_info": None if env_info is None else _plain(env_info)}, obs)
        return int(self._recv_or_fail("crashed")["act"])


def _clamped(usr_conf, max_step: int | None):
    """The platform's wrapped ``usr_conf`` with its ``max_step`` at most ``max_step`` (a shorter game)."""
    if max_step is None or not isinstance(usr_conf, Mapping) or not isinstance(usr_conf.get("diy"), Mapping):
        return usr_conf
    inner = dict(usr_conf["diy"])
    inner["max_step"] = min(int(inner.get("max_step", max_step)), max_step)
    return {**usr_conf, "diy": inner}


class TrainingTaskProcess(_HarnessProcess):
    """A training task of the upload folder ``folder`` on the platform stand-in, in its own guarded process: its
    workflow plays on ``env`` (a :attr:`~sb3_realm.games.GameSpec.submission.competition_env`) served from this process.

    :param task_dir: the task's own folder (the learner's saves, the saved models).
    :param options: of the task: ``episodes``, ``saves``, ``max_episodes``, ``step_seconds``, ``overrides`` (see
        ``framework.TrainingTask.run``).
    :param max_step: plays each game the workflow asks for with at most this many steps (None: as asked).
    """

    def __init__(self, folder: str | os.PathLike, task_dir: str | os.PathLike, options: dict,
                 max_step: int | None = None) -> None:
        folder = Path(folder).resolve()
        layout = read_manifest(folder)["layout"]
        super().__init__(["train", str(games.layout_folder(layout)), str(folder), str(Path(task_dir).resolve()),
                          str(folder_game(folder).submission.protocol_file), json.dumps(options)], folder)
        self.max_step = max_step
        self.steps = 0

    def run(self, env) -> dict:
        """Serve ``env`` until the task ends; returns its report."""
        while True:
            message = self._recv_or_fail("training task crashed")
            op = message.get("op")
            if op == "done":
                return message["report"]
            if op == "reset":
                self._send_obs({}, env.reset(usr_conf=_clamped(message["usr_conf"], self.max_step)))
            elif op == "step":
                frame_no, obs, score, terminated, truncated, env_info = env.step(int(message["act"]))
                self.steps += 1
                self._send_obs({"frame_no": frame_no, "score": _plain(score), "terminated": int(terminated),
                                "truncated": int(truncated), "env_info": _plain(env_info)}, obs)
            else:
                raise RuntimeError(f"the training task sent an unknown request {message!r}")


def _plain_json(value):
    """numpy scalars in the platform's dicts -> Python numbers (``json.dumps``'s ``default``)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON data")


class PlatformProcess(_HarnessProcess):
    """A built code package on its layout's own stand-in of the platform's framework (:func:`own_stand_in`, run by
    the ``harness.py`` of the layout's folder, a shipped one or one its game brings,
    :func:`sb3_realm.games.layout_folder`) in a guarded process: ``mode`` ``"train"`` runs a training task of the
    package ``folder`` (``args``: the task's folder and options), ``"eval-model"`` the platform's evaluation loop on
    ``folder``, a model the task saved. The environment is this process's: :meth:`serve` answers the process's
    ``reset`` and ``step`` requests until it is done."""

    def __init__(self, layout: str, mode: str, folder: str | os.PathLike, *args: str) -> None:
        folder = Path(folder).resolve()
        layout_dir = games.layout_folder(layout)  # a shipped layout's, or one its game brings
        super().__init__([mode, str(layout_dir), str(folder), *args], folder, harness=layout_dir / "harness.py")

    def _send_json(self, obj: dict) -> None:
        data = json.dumps(obj, default=_plain_json).encode()
        self._stdin.write(struct.pack(">I", len(data)) + data)
        self._stdin.flush()

    def serve(self, reset, step, sent=None) -> dict:
        """Answer the process with ``reset(usr_conf) -> env_obs`` and ``step(act) -> (env_reward, env_obs)`` until
        it is done; returns its last message (``report``, or ``platform_error``, and ``modules``). ``sent()``, when
        given, runs after each answer, while the process works on it."""
        while True:
            message = self._recv_or_fail("crashed")
            op = message.get("op")
            if op == "done":
                return message
            if op == "reset":
                self._send_json({"env_obs": reset(message.get("usr_conf"))})
            elif op == "step":
                env_reward, env_obs = step(int(message["act"]))
                self._send_json({"env_reward": env_reward, "env_obs": env_obs})
            else:
                raise RuntimeError(f"the platform stand-in sent an unknown request {message!r}")
            if sent is not None:
                sent()
