"""A built submission folder as a player and on the platform's stand-in: in guarded subprocesses (for the proof of
:mod:`sb3_realm.export.check`), or in this process as a policy of the common interface (``sb3-realm eval DIR``).

- :class:`TrainingTaskProcess`: a training task of the folder on the stand-in of the platform's framework
  (``sb3_realm.submission``'s ``platform_stub/framework.py``), run by its ``harness.py`` in a fresh Python process
  whose import path holds only the stand-in, and where sb3_realm, stable_baselines3, sb3_contrib and gymnasium
  cannot be imported; this process serves it the environment.
- :class:`SubmissionProcess`: in such a process, the Agent of a model the task saved (loaded as the platform's
  model loader does) or of the folder itself, answering competition observations with actions.
- :class:`SubmissionPolicy`: a submission folder as a policy (``reset(env)``, ``act(env, obs)``).

A built folder runs its own code by design (its Agent is the policy). What is checked first: every file against the
manifest's sha256 (:func:`verify_package`: changed, missing and extra files, a sourceless ``.pyc``, symbolic links
and special files are refused), and every path the manifest or the conf names stays inside the folder. Bytecode in
the folder is never run: its modules are compiled from their verified sources (a private, empty bytecode cache
folder in this process and in the guarded ones), so a ``__pycache__`` planted beside them is ignored.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import importlib
import importlib.util
import io
import json
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from .. import games
from ..atomic import inside, sha256_file
from ..games import GameEnv
from ..submission import BLOCKED_MODULES, HARNESS, LAYOUTS, PLATFORM_STUB, layout_spec

__all__ = [
    "MAP_KEYS",
    "PlatformProcess",
    "SubmissionPolicy",
    "SubmissionProcess",
    "TrainingTaskProcess",
    "env_kwargs_of",
    "folder_code_note",
    "folder_game",
    "manifest_game",
    "own_stand_in",
    "package_differences",
    "platform_framework",
    "platform_obs",
    "read_manifest",
    "verify_package",
]

MAP_KEYS = ("obstacle_map", "memory_map", "treasure_map", "end_map")
_FORMAT = "sb3-realm submission"


def _manifest_at(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a readable manifest ({exc}); rebuild the folder with sb3-realm "
                         "build-submission MODEL.zip --out DIR --force") from None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == _FORMAT else None


def read_manifest(folder: str | os.PathLike) -> dict:
    """The manifest of a folder built by build-submission (in its algorithm folder: the one its
    ``conf/configure_app.toml`` selects, or the only one with a manifest), or a ValueError saying what is
    missing. What it names is checked (:func:`_check_manifest`): a known layout and one of its algorithm folders, and
    a weights file inside the folder."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{str(folder)!r} is not a built submission: it is not a folder (build one with sb3-realm "
                         "build-submission MODEL.zip --out DIR)")
    candidates = sorted(path for path in folder.glob("*/manifest.json")
                        if not path.parent.is_symlink() and not path.is_symlink())  # never read through a link
    selected = _selected_folders(folder)
    if selected is not None:
        candidates = [inside(folder, f"{name}/manifest.json", f"{str(conf)!r} (its algo)") for name, conf in selected]
    found = [(m, path) for m, path in ((_manifest_at(path), path) for path in candidates) if m is not None]
    if len(found) != 1:
        where = f"in {', '.join(str(c) for c in candidates)}" if candidates else "in any of its folders"
        raise ValueError(f"{str(folder)!r} is not a built submission: no manifest of sb3-realm build-submission "
                         f"{where} (build one with sb3-realm build-submission MODEL.zip --out DIR)")
    manifest, path = found[0]
    _check_manifest(folder, manifest, path)
    return manifest


def _check_manifest(folder: Path, manifest: dict, path: Path) -> None:
    """A ValueError unless what the manifest ``path`` names can be used: its layout is one of
    :data:`~sb3_realm.submission.LAYOUTS`, its ``algo_dir`` one of that layout's algorithm folders (the folder the
    manifest is in) and its weights file a path inside ``folder``."""
    fix = "the folder is damaged or was not written by sb3-realm build-submission; rebuild it with sb3-realm " \
          "build-submission MODEL.zip --out DIR --force"
    layout, algo = manifest.get("layout"), manifest.get("algo_dir")
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"{str(path)!r} names the layout {layout!r}, which is none of {sorted(LAYOUTS)}; {fix}")
    if algo not in layout_spec(layout)["algo_dirs"] or path.parent.name != algo:
        raise ValueError(f"{str(path)!r} names the algorithm folder {algo!r}, which is not the folder it is in or "
                         f"not one of {layout_spec(layout)['algo_dirs']}; {fix}")
    weights = manifest.get("weights")
    if not isinstance(weights, dict) or not isinstance(weights.get("file"), str):
        raise ValueError(f"{str(path)!r} names no weights file; {fix}")
    inside(folder, weights["file"], f"the manifest {str(path)!r}")


def _selected_folders(folder: Path) -> list[tuple[str, Path]] | None:
    """The algorithm folders a code package's conf selects for training, each with the conf that names it (one per
    layout whose conf is there: ``algo`` of the layout's ``policy_table``, else of its ``app_table``, with the
    layout's ``folder_prefix`` before it); None when no conf selects one. A ValueError when a conf does not parse."""
    selected = []
    for name in LAYOUTS:
        layout = layout_spec(name)
        conf_file = folder / layout.get("policy_conf", layout["app_conf"])
        table = layout.get("policy_table", layout["app_table"])
        if not conf_file.is_file() or conf_file.is_symlink():
            continue
        try:
            data = tomllib.loads(conf_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ValueError(f"{str(folder)!r}: {conf_file} does not parse ({exc}); rebuild the folder with "
                             "sb3-realm build-submission") from None
        for part in table.split("."):
            data = data.get(part, {}) if isinstance(data, dict) else {}
        algo = str(data.get("algo", "")) if isinstance(data, dict) else ""
        if algo:
            selected.append((layout.get("folder_prefix", "") + algo, conf_file))
    return selected or None


def _walk(folder: Path) -> Iterator[tuple[str, int]]:
    """Every entry below ``folder`` but its folders, as (relative POSIX path, ``lstat`` mode), never through a
    symbolic link (a link is an entry of its own)."""
    pending = [""]
    while pending:
        rel = pending.pop()
        with os.scandir(folder / rel if rel else folder) as listing:
            names = sorted(entry.name for entry in listing)
        for name in names:
            sub = f"{rel}/{name}" if rel else name
            mode = os.lstat(folder / sub).st_mode
            if stat.S_ISDIR(mode):
                pending.append(sub)
            else:
                yield sub, mode


def _cache(rel: str) -> bool:
    """A file of a ``__pycache__`` folder: Python's bytecode cache of a module, never part of a package (and never
    run: :func:`_sources_only`)."""
    return "__pycache__" in rel.split("/")


def package_differences(folder: str | os.PathLike, manifest: dict) -> dict[str, list[str]]:
    """How a built package differs from its manifest (relative POSIX paths): ``changed`` (sha256 differs),
    ``missing`` and ``extra`` files (a ``.pyc`` outside ``__pycache__``, which Python imports without a source, and a
    named pipe or other special file among them), ``links`` (symbolic links: a package has none, and none is
    followed here) and ``bytecode`` (the caches in ``__pycache__`` folders, which are not part of a package and are
    never run). The manifest itself is not listed in it."""
    folder = Path(folder)
    listed: dict = manifest.get("files", {}) if isinstance(manifest.get("files"), dict) else {}
    own = f"{manifest.get('algo_dir')}/manifest.json"
    present, links, caches, special = set(), [], [], []
    for rel, mode in _walk(folder):
        if stat.S_ISLNK(mode):
            links.append(rel)
        elif not stat.S_ISREG(mode):
            special.append(rel)
        elif _cache(rel):
            caches.append(rel)
        else:
            present.add(rel)
    return {"changed": sorted(f for f in listed if f in present and sha256_file(folder / f) != listed[f]),
            "missing": sorted(f for f in listed if f not in present and f not in links),
            "extra": sorted((present - set(listed) - {own}) | set(special)), "links": sorted(links),
            "bytecode": sorted(caches)}


def verify_package(folder: str | os.PathLike, manifest: dict) -> None:
    """Raise ``ValueError`` naming every file of ``folder`` that is not as its manifest records it (bytecode caches
    aside: they are never run)."""
    diff = package_differences(folder, manifest)
    names = {"links": "symbolic links"}
    parts = [f"{names.get(what, what)} {', '.join(files[:5])}{', ...' if len(files) > 5 else ''}"
             for what, files in diff.items() if files and what != "bytecode"]
    if parts:
        raise ValueError(f"the package {str(folder)!r} is not as build-submission wrote it ({'; '.join(parts)}): it "
                         "would not play the model it records. Rebuild it with sb3-realm build-submission MODEL.zip "
                         "--out DIR --force, or evaluate the model itself")


def folder_code_note(policy: str | os.PathLike) -> str | None:
    """The line ``eval`` and ``replay`` print (on stderr) before they play a submission folder: the folder's own
    Python code runs in this process, and its manifest, which the folder carries itself, says only that its files
    are those it lists, not who wrote them. None for any other policy, and for a folder that is refused anyway
    (no manifest, or files that differ from it: its refusal says so)."""
    path = Path(policy)
    if not path.is_dir():
        return None
    try:
        verify_package(path, read_manifest(path))
    except (ValueError, OSError):
        return None
    return (f"this runs the Python code in the submission folder {str(path)!r} (its Agent and the modules beside "
            "it, as the platform will); its manifest checks that the files are those it lists, not who wrote them: "
            "play only folders you built or trust")


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


@contextlib.contextmanager
def _sources_only() -> Iterator[None]:
    """Imports in the block compile every module from its source and write no bytecode: the bytecode cache is a
    fresh, empty private folder (``sys.pycache_prefix``), so a ``.pyc`` in a package's ``__pycache__`` is never
    read, whatever its header says."""
    saved = sys.pycache_prefix, sys.dont_write_bytecode
    with tempfile.TemporaryDirectory(prefix="sb3-realm-no-bytecode-") as empty:
        sys.pycache_prefix, sys.dont_write_bytecode = empty, True
        importlib.invalidate_caches()
        try:
            yield
        finally:
            sys.pycache_prefix, sys.dont_write_bytecode = saved


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
            args = ["eval-package", str(LAYOUTS[layout]), str(folder), str(game_spec.submission.protocol_file)]
        else:
            args = ["eval-model", str(LAYOUTS[layout or game_spec.submission.layouts[0]]), str(folder),
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
        super().__init__(["train", str(LAYOUTS[layout]), str(folder), str(Path(task_dir).resolve()),
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
    the ``harness.py`` of the layout's folder) in a guarded process: ``mode`` ``"train"`` runs a training task of the
    package ``folder`` (``args``: the task's folder and options), ``"eval-model"`` the platform's evaluation loop on
    ``folder``, a model the task saved. The environment is this process's: :meth:`serve` answers the process's
    ``reset`` and ``step`` requests until it is done."""

    def __init__(self, layout: str, mode: str, folder: str | os.PathLike, *args: str) -> None:
        folder = Path(folder).resolve()
        layout_dir = LAYOUTS[layout]
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


def manifest_game(manifest: dict) -> games.GameSpec:
    """The game a built submission plays: the ``game`` its manifest records, else that of the training config it
    records (:data:`~sb3_realm.games.LEGACY_GAME`'s, with a one-line note, when neither names one: a package built
    before the toolkit had two games)."""
    return games.recorded(manifest.get("game") or (manifest.get("training_config") or {}).get("game"),
                          "the package's manifest")


def folder_game(folder: str | os.PathLike) -> games.GameSpec:
    """The game of a built submission folder (:func:`manifest_game`); for a folder without a manifest of the package,
    which the platform stand-in then refuses with its own message, :data:`~sb3_realm.games.LEGACY_GAME`'s."""
    try:
        return manifest_game(read_manifest(folder))
    except ValueError:
        return games.GAMES[games.LEGACY_GAME]


def platform_obs(env: GameEnv):
    """The competition ``(obs, env_info)`` of the env's state as the platform's loop hands them over: ``env_info``
    is None for the observation of ``reset``."""
    comp, env_info = env.competition_obs()
    return comp, None if env.game.step_no == 0 else env_info


def env_kwargs_of(manifest: dict, map_path: str | None) -> dict:
    """The game's env arguments as in training (map unless ``map_path`` is given, rules, action-mask option)."""
    env_cfg = (manifest.get("training_config") or {}).get("env") or {}
    if map_path is None:
        map_path = env_cfg.get("map_path")
        map_name = env_cfg.get("map_name") or "default"
    else:
        map_name = "default"
    kwargs = {"map_path": map_path, "map_name": map_name, "rules": env_cfg.get("rules") or {}}
    if "mask_wall_moves" in manifest_game(manifest).env.options:
        kwargs["mask_wall_moves"] = bool(manifest["spec"]["mask_wall_moves"])
    return kwargs


def _load_by_path(name: str, init: Path, package: bool) -> object:
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)]
                                                  if package else None)
    if spec is None or spec.loader is None:  # never for a .py file
        raise ImportError(f"cannot load {init} as module {name!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def platform_framework():
    """The platform stand-in's ``framework`` module in this process, with the stand-in ``kaiwu_agent`` (loaded by
    file location into ``sys.modules``, so the caller's ``sys.path`` is never edited)."""
    loaded = sys.modules.get("kaiwu_agent")
    if loaded is None:
        _load_by_path("kaiwu_agent", PLATFORM_STUB / "kaiwu_agent" / "__init__.py", package=True)
    elif not Path(getattr(loaded, "__file__", "") or "").resolve().is_relative_to(PLATFORM_STUB.resolve()):
        raise RuntimeError(f"another kaiwu_agent ({loaded.__file__}) is imported in this process; a submission runs "
                           "here on sb3-realm's stand-in of the platform only")
    name = "_sb3_realm_platform_framework"
    return sys.modules.get(name) or _load_by_path(name, PLATFORM_STUB / "framework.py", package=False)


def own_stand_in(layout: str) -> Path | None:
    """The folder of the layout ``layout``'s own stand-in of its platform's framework (``stand_in`` of its
    ``layout.toml``; the layout's folder holds its ``harness.py``), where the platform hands the Agent ``env_obs``;
    None for a layout whose packages run on the shared stand-in of the ``kaiwu_agent`` framework
    (``platform_stub/``), where the Agent answers ``observation_process`` and ``action_process``."""
    name = layout_spec(layout).get("stand_in")
    return None if name is None else LAYOUTS[layout] / name


def _stand_in_modules(root: Path) -> None:
    """The top-level packages of the stand-in folder ``root`` (the platform's modules it stands in for) in
    ``sys.modules``, loaded by file location, so the caller's ``sys.path`` is never edited."""
    for name in sorted(path.parent.name for path in root.glob("*/__init__.py")):
        loaded = sys.modules.get(name)
        if loaded is None:
            _load_by_path(name, root / name / "__init__.py", package=True)
        elif not Path(getattr(loaded, "__file__", "") or "").resolve().is_relative_to(root.resolve()):
            raise RuntimeError(f"another {name} ({loaded.__file__}) is imported in this process; a submission runs "
                               "here on sb3-realm's stand-in of the platform only")


class SubmissionPolicy:
    """A built submission folder playing in this process, on the stand-in of the platform's modules: its Agent, with
    the exported weights. On the shared ``kaiwu_agent`` stand-in, a package plays observation_process -> exploit ->
    action_process on the env's competition observation; on its layout's own stand-in (:func:`own_stand_in`), where
    the platform hands the Agent ``env_obs``, it plays ``exploit(env_obs)`` once per step, ``reset(env_obs)`` at each
    game's start. The folder is first verified against its manifest."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder).resolve()
        self.manifest = read_manifest(self.folder)
        verify_package(self.folder, self.manifest)
        algo = self.manifest["algo_dir"]
        stand_in = own_stand_in(self.manifest["layout"])
        self.env_obs = stand_in is not None  # the Agent takes the platform's env_obs
        if stand_in is not None:
            _stand_in_modules(stand_in)
            saved_path = list(sys.path)
            sys.path.insert(0, str(self.folder))
            try:
                with _sources_only():
                    agent_cls = importlib.import_module(f"{algo}.agent").Agent
            finally:
                sys.path[:] = saved_path
                for key in [k for k in sys.modules if k.split(".")[0] == algo]:
                    del sys.modules[key]  # another package's folder of the same name can be imported later
            self.agent = agent_cls(agent_type="player", device="cpu")
            self.agent.load_model(path=str(inside(self.folder, self.manifest["weights"]["file"]).parent),
                                  id=self.manifest["weights"]["ckpt_id"])
        else:
            framework = platform_framework()
            with _sources_only(), framework.imported_package(self.folder, {algo, "conf"}):
                self.definition = importlib.import_module(f"{algo}.feature.definition")
                agent_cls = importlib.import_module(f"{algo}.algorithm.agent").Agent
            self.agent = agent_cls(agent_type="player", device="cpu")
            weights = inside(self.folder, self.manifest["weights"]["file"])
            self.agent.load_model(path=str(weights.parent), id=self.manifest["weights"]["ckpt_id"])
        self.name = self.folder.name
        self.env_kwargs = env_kwargs_of(self.manifest, None)

    def reset(self, env: GameEnv) -> None:
        if self.env_obs:
            self.agent.reset(cast(Any, env).platform_obs())
        # an Agent on the kaiwu_agent stand-in restarts its state from the observation (episode start)

    def act(self, env: GameEnv, obs: dict[str, np.ndarray]) -> int:
        if self.env_obs:
            return int(self.agent.exploit(cast(Any, env).platform_obs()))
        obs_data = self.definition.observation_process(*platform_obs(env))
        return int(self.definition.action_process(self.agent.exploit([obs_data])[0]))
