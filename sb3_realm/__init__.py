"""sb3_realm: train, evaluate, tune and package Stable-Baselines3 agents for Tencent Kaiwu's game-AI competitions.

The first game's most used names are kept here (``from sb3_realm import RealmEnv``); every game is in
:mod:`sb3_realm.games`."""

import importlib
import importlib.abc
import importlib.machinery
import sys

from .games import register_envs
from .games.realm import EpisodeConfig, Rules, default_map, load_map
from .games.realm.env import ENV_IDS, RealmEnv
from .games.realm.rewards import RewardWeights
from .processes import passive_thread_waits
from .version import __version__

__all__ = [
    "ENV_IDS",
    "EpisodeConfig",
    "RealmEnv",
    "RewardWeights",
    "Rules",
    "__version__",
    "default_map",
    "load_map",
    "register_envs",
]

# Checkpoints saved before the package was reshaped into layers name their features extractor by its old module
# (SB3 cloudpickles ``policy_kwargs``: ``sb3_realm.extractors.FoveaExtractor``). Those names resolve to the modules
# that hold the same classes now, imported only when such a checkpoint is loaded (they load torch).
MOVED_MODULES = {"sb3_realm.extractors": "sb3_realm.models.extractors", "sb3_realm.nets": "sb3_realm.models.nets"}


class _MovedModuleLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)  # the module itself: its classes stay the same objects
        self._own = (module.__spec__, module.__loader__)
        return module

    def exec_module(self, module) -> None:
        module.__spec__, module.__loader__ = self._own  # executed under its own name; keep its own spec


class _MovedModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedModuleLoader(MOVED_MODULES[fullname]))


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())

passive_thread_waits()  # OpenMP threads that sleep while they wait: set before torch is loaded
register_envs(shipped_only=True)  # the other games' ids come as the registry reads their entry points
