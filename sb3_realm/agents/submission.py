"""A built submission folder as a player: in this process as a policy of the common interface
(``sb3-realm eval DIR``), on the platform's stand-in, or in guarded subprocesses (for the proof of
:mod:`sb3_realm.export.check`).

- :class:`SubmissionPolicy`: a submission folder as a policy (``reset(env)``, ``act(env, obs)``).
- :class:`~sb3_realm.agents.guarded.TrainingTaskProcess` and :class:`~sb3_realm.agents.guarded.SubmissionProcess`
  (in :mod:`sb3_realm.agents.guarded`): a training task of the folder, and the Agent of the folder or of a model
  the task saved, each in a fresh guarded Python process on the stand-in of the platform's framework.
- :mod:`sb3_realm.agents.manifest`: the folder's manifest, and the check of its files against it.

A built folder runs its own code by design (its Agent is the policy). What is checked first: every file against the
manifest's sha256 (:func:`~sb3_realm.agents.manifest.verify_package`: changed, missing and extra files, a sourceless
``.pyc``, symbolic links and special files are refused), and every path the manifest or the conf names stays inside
the folder. Bytecode in the folder is never run: its modules are compiled from their verified sources (a private,
empty bytecode cache folder in this process and in the guarded ones), so a ``__pycache__`` planted beside them is
ignored.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .. import games
from ..atomic import inside
from ..games import GameEnv
from ..submission import LAYOUTS, PLATFORM_STUB, layout_spec
from .guarded import MAP_KEYS, PlatformProcess, SubmissionProcess, TrainingTaskProcess
from .manifest import (
    env_kwargs_of,
    folder_code_note,
    folder_game,
    manifest_game,
    package_differences,
    read_manifest,
    verify_package,
)

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


def platform_obs(env: GameEnv):
    """The competition ``(obs, env_info)`` of the env's state as the platform's loop hands them over: ``env_info``
    is None for the observation of ``reset``."""
    comp, env_info = env.competition_obs()
    return comp, None if env.game.step_no == 0 else env_info


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
    name = (layout_spec(layout) if layout in LAYOUTS else games.layout_data(layout)).get("stand_in")
    return None if name is None else games.layout_folder(layout) / name


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
            self.agent.reset(env.platform_obs())
        # an Agent on the kaiwu_agent stand-in restarts its state from the observation (episode start)

    def act(self, env: GameEnv, obs: dict[str, np.ndarray]) -> int:
        if self.env_obs:
            return int(self.agent.exploit(env.platform_obs()))
        obs_data = self.definition.observation_process(*platform_obs(env))
        return int(self.definition.action_process(self.agent.exploit([obs_data])[0]))
