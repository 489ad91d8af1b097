"""A built submission folder as a player: in a guarded subprocess (for the parity proof of
:mod:`sb3_realm.export.check`), or in this process as a policy of the common interface (``sb3-realm eval DIR``).

- :class:`SubmissionProcess`: the submission's agent in a fresh Python process (``sb3_realm.submission``'s
  ``harness.py``) whose import path holds only the folder and the ``kaiwu_agent`` stand-in, and where sb3_realm,
  stable_baselines3, sb3_contrib and gymnasium cannot be imported; it answers competition observations with actions.
- :class:`SubmissionPolicy`: a submission folder as a policy (``reset(env)``, ``act(env, obs)``).
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import importlib.util
import io
import json
import os
import struct
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import numpy as np

from ..atomic import sha256_file
from ..envs import RealmEnv
from ..game import protocol
from ..submission import BLOCKED_MODULES, HARNESS, PLATFORM_STUB

__all__ = ["SubmissionProcess", "SubmissionPolicy", "platform_obs", "read_manifest", "env_kwargs_of", "MAP_KEYS",
           "package_differences", "verify_package"]

MAP_KEYS = ("obstacle_map", "memory_map", "treasure_map", "end_map")


def read_manifest(folder: str | os.PathLike) -> tuple[dict, dict]:
    """``(configure_app [app] table, manifest)`` of a built submission folder, or a ValueError saying what is
    missing."""
    folder = Path(folder)
    conf = folder / "conf" / "configure_app.toml"
    if not conf.is_file():
        raise ValueError(f"{str(folder)!r} is not a built submission: {conf} is missing (build one with "
                         "sb3-realm build-submission MODEL.zip --out DIR)")
    app = tomllib.loads(conf.read_text(encoding="utf-8")).get("app", {})
    manifest_path = folder / str(app.get("algo", "")) / "manifest.json"
    if not manifest_path.is_file():
        raise ValueError(f"{str(folder)!r}: no manifest at {manifest_path}; was it built by sb3-realm?")
    return app, json.loads(manifest_path.read_text(encoding="utf-8"))


def _bytecode(rel: Path) -> bool:
    return "__pycache__" in rel.parts or rel.suffix == ".pyc"


def package_differences(folder: str | os.PathLike, manifest: dict) -> dict[str, list[str]]:
    """How a built package differs from its manifest: ``changed`` (sha256 differs), ``missing`` and ``extra`` files
    (relative POSIX paths; Python's bytecode caches and the manifest itself are not part of a package)."""
    folder = Path(folder)
    listed: dict = manifest.get("files", {}) if isinstance(manifest.get("files"), dict) else {}
    own = f"{manifest.get('algo_dir')}/manifest.json"
    present = {q.relative_to(folder).as_posix() for q in folder.rglob("*")
               if q.is_file() and not _bytecode(q.relative_to(folder))}
    return {"changed": sorted(f for f in listed if f in present and sha256_file(folder / f) != listed[f]),
            "missing": sorted(f for f in listed if f not in present),
            "extra": sorted(present - set(listed) - {own})}


def verify_package(folder: str | os.PathLike, manifest: dict) -> None:
    """Raise ``ValueError`` naming every file of ``folder`` that is not as its manifest records it."""
    diff = package_differences(folder, manifest)
    parts = [f"{what} {', '.join(files[:5])}{', ...' if len(files) > 5 else ''}" for what, files in diff.items()
             if files]
    if parts:
        raise ValueError(f"the package {str(folder)!r} is not as build-submission wrote it ({'; '.join(parts)}): it "
                         "would not play the model it records. Rebuild it with sb3-realm build-submission MODEL.zip "
                         "--out DIR --force, or evaluate the model itself")


def _plain(value):
    """Dataclasses and numpy scalars -> JSON data (the platform's objects, as plain data)."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class SubmissionProcess:
    """A built submission in its own guarded process (see the module docstring); use as a context manager."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        read_manifest(self.folder)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONNOUSERSITE="1")
        self.proc = subprocess.Popen([sys.executable, "-I", str(HARNESS), str(self.folder), str(PLATFORM_STUB),
                                      protocol.__file__],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        # its stderr is drained while it runs (a full pipe would block the harness), the last 64 KB kept for errors
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        try:
            self.hello = self._recv()
        except EOFError as exc:
            self.proc.wait()
            raise RuntimeError(f"the submission in {self.folder} failed to start:\n{self._stderr_tail()}") from exc
        leaked = sorted(set(self.hello["modules"]) & set(BLOCKED_MODULES))
        if leaked:
            raise RuntimeError(f"the submission process imported {leaked}; a submission may use torch + numpy only")

    def _read_stderr(self) -> None:
        for chunk in iter(lambda: self.proc.stderr.read1(1024), b""):
            self._stderr.append(chunk)

    def _stderr_tail(self) -> str:
        """The end of what the process wrote to stderr, once it has ended (the drain has read everything)."""
        self._drain.join(timeout=5)
        return b"".join(self._stderr).decode(errors="replace")[-3000:]

    def _recv(self) -> dict:
        head = self.proc.stdout.read(4)
        if len(head) != 4:
            raise EOFError("the submission process ended")
        (n,) = struct.unpack(">I", head)
        return json.loads(self.proc.stdout.read(n))

    def _send(self, obj: dict, payload: bytes | None = None) -> None:
        data = json.dumps(obj).encode()
        msg = struct.pack(">I", len(data)) + data
        if payload is not None:
            msg += struct.pack(">I", len(payload)) + payload
        self.proc.stdin.write(msg)
        self.proc.stdin.flush()

    def act(self, obs, env_info) -> int:
        """The submission's action for a competition ``(obs, env_info)`` (``env_info`` None right after a reset)."""
        plain = _plain(obs)
        maps = np.stack([np.asarray(plain["feature"].pop(k), dtype=np.float64) for k in MAP_KEYS])  # (4, 2601)
        buf = io.BytesIO()
        np.save(buf, maps, allow_pickle=False)
        self._send({"obs": plain, "env_info": None if env_info is None else _plain(env_info), "maps": True},
                   buf.getvalue())
        try:
            return int(self._recv()["act"])
        except EOFError as exc:
            self.proc.wait()
            raise RuntimeError(f"the submission process crashed:\n{self._stderr_tail()}") from exc

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
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):  # closed before the folder is touched
            stream.close()

    def __enter__(self) -> SubmissionProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def platform_obs(env: RealmEnv):
    """The competition ``(obs, env_info)`` of the env's state as the platform's loop hands them over: ``env_info``
    is None for the observation of ``reset``."""
    comp, env_info = env.competition_obs()
    return comp, None if env.game.step_no == 0 else env_info


def env_kwargs_of(manifest: dict, map_path: str | None) -> dict:
    """RealmEnv arguments as in training (map unless ``map_path`` is given, rules, action-mask option)."""
    env_cfg = (manifest.get("training_config") or {}).get("env") or {}
    if map_path is None:
        map_path = env_cfg.get("map_path")
        map_name = env_cfg.get("map_name") or "default"
    else:
        map_name = "default"
    return {"map_path": map_path, "map_name": map_name, "rules": env_cfg.get("rules") or {},
            "mask_wall_moves": bool(manifest["spec"]["mask_wall_moves"])}


def _import_platform_stand_in() -> None:
    """Make ``kaiwu_agent`` importable for a submission loaded in this process: the platform's own when it is
    installed, else the stand-in, loaded by file location into ``sys.modules`` (its submodules resolve through the
    package's own path), so the caller's ``sys.path`` is never edited."""
    if "kaiwu_agent" in sys.modules or importlib.util.find_spec("kaiwu_agent") is not None:
        return
    init = PLATFORM_STUB / "kaiwu_agent" / "__init__.py"
    spec = importlib.util.spec_from_file_location("kaiwu_agent", init, submodule_search_locations=[str(init.parent)])
    package = importlib.util.module_from_spec(spec)
    sys.modules["kaiwu_agent"] = package
    try:
        spec.loader.exec_module(package)
    except BaseException:
        del sys.modules["kaiwu_agent"]
        raise


class SubmissionPolicy:
    """A built submission folder playing in this process (its ``kaiwu_agent`` is the stand-in unless the platform's
    is importable): observation_process -> exploit -> action_process on the env's competition observation."""

    _count = 0

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        app, self.manifest = read_manifest(self.folder)
        verify_package(self.folder, self.manifest)
        _import_platform_stand_in()
        SubmissionPolicy._count += 1
        name = f"_sb3_realm_submission_{SubmissionPolicy._count}"
        algo_dir = self.folder / app["algo"]
        spec = importlib.util.spec_from_file_location(name, algo_dir / "__init__.py",
                                                      submodule_search_locations=[str(algo_dir)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)
        self.definition = importlib.import_module(f"{name}.feature.definition")
        self.agent = importlib.import_module(f"{name}.algorithm.agent").Agent(agent_type="player", device="cpu")
        model_dir = Path(app["eval_model_dir"])
        self.agent.load_model(path=str(model_dir if model_dir.is_absolute() else self.folder / model_dir),
                              id=str(app["eval_model_id"]))
        self.name = self.folder.name
        self.env_kwargs = env_kwargs_of(self.manifest, None)

    def reset(self, env: RealmEnv) -> None:
        pass  # the agent restarts its state from the observation (episode start)

    def act(self, env: RealmEnv, obs: dict[str, np.ndarray]) -> int:
        obs_data = self.definition.observation_process(*platform_obs(env))
        return int(self.definition.action_process(self.agent.exploit([obs_data])[0]))
