"""The one algorithm registry: name -> SB3 / sb3-contrib class, with the flags the rest of the package branches on
(``maskable``: ``predict`` takes ``action_masks``; ``recurrent``: ``predict`` carries an LSTM state). The training
config, the tuning spaces, the agents and the exporter all read it."""

from __future__ import annotations

import importlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Algorithm", "ALGORITHMS", "algorithm", "algorithm_class", "detect_algorithm", "read_sb3_data"]


@dataclass(frozen=True)
class Algorithm:
    """One supported algorithm.

    :param name: the config's ``algo.name``.
    :param module: the module holding the class.
    :param class_name: the class in ``module``.
    :param policy: the SB3 policy name for the Dict observation.
    :param maskable: ``predict`` takes ``action_masks``.
    :param recurrent: ``predict`` carries an LSTM state and episode starts.
    """

    name: str
    module: str
    class_name: str
    policy: str
    maskable: bool = False
    recurrent: bool = False

    @property
    def cls(self):
        """The algorithm class (imported on first use: SB3 / sb3-contrib load torch, which the config must not)."""
        return getattr(importlib.import_module(self.module), self.class_name)


ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("ppo", "stable_baselines3", "PPO", "MultiInputPolicy"),
    Algorithm("maskable_ppo", "sb3_contrib", "MaskablePPO", "MultiInputPolicy", maskable=True),
    Algorithm("recurrent_ppo", "sb3_contrib", "RecurrentPPO", "MultiInputLstmPolicy", recurrent=True),
)}


def algorithm(name: str) -> Algorithm:
    """The registry entry of ``name``; a ``ValueError`` lists the choices for an unknown one."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown algorithm {name!r}; choose one of {list(ALGORITHMS)}") from None


def algorithm_class(name: str):
    """The SB3 / sb3-contrib class of ``name`` (``PPO``, ``MaskablePPO``, ``RecurrentPPO``)."""
    return algorithm(name).cls


def read_sb3_data(path: Path) -> dict:
    """The JSON ``data`` of an SB3 checkpoint, or a ``ValueError`` saying the file is not one."""
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a Stable-Baselines3 checkpoint (a .zip saved by model.save): "
                         f"{exc}") from exc


def detect_algorithm(path: str | Path) -> str:
    """``"ppo"``, ``"maskable_ppo"`` or ``"recurrent_ppo"`` from the policy class stored in an SB3 checkpoint."""
    data = read_sb3_data(Path(path))
    policy = str(data.get("policy_class", {}).get(":type:", "")) + str(data.get("policy_class", {}))
    if "Maskable" in policy:
        return "maskable_ppo"
    if "Recurrent" in policy or "Lstm" in policy:
        return "recurrent_ppo"
    if "ActorCritic" in policy:
        return "ppo"
    raise ValueError(f"{str(path)!r}: cannot tell the algorithm from its policy class {policy[:120]!r}; supported "
                     f"algorithms are {list(ALGORITHMS)}")
