"""The one algorithm registry: name -> SB3 / sb3-contrib class, with the flags the rest of the package branches on
(``maskable``: ``predict`` takes ``action_masks``; ``recurrent``: ``predict`` carries an LSTM state). The training
config, the tuning spaces, the agents and the exporter all read it."""

from __future__ import annotations

import importlib
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .. import games

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "action_distribution",
    "algorithm",
    "algorithm_class",
    "algorithm_of",
    "detect_algorithm",
    "model_kwargs",
    "read_sb3_data",
    "schedule",
]


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


def algorithm_of(model) -> Algorithm:
    """The registry entry of a live SB3 model (its class, or a subclass such as finetune's anchored PPO; the most
    specific entry wins: MaskablePPO is no PPO subclass, but a subclass of it is matched to it)."""
    for entry in ALGORITHMS.values():
        if type(model) is entry.cls:
            return entry
    for entry in ALGORITHMS.values():
        if isinstance(model, entry.cls):
            return entry
    raise ValueError(f"{type(model).__name__} is none of the registered algorithms {list(ALGORITHMS)}")


def algorithm_class(name: str):
    """The SB3 / sb3-contrib class of ``name`` (``PPO``, ``MaskablePPO``, ``RecurrentPPO``)."""
    return algorithm(name).cls


def schedule(value: str, key: str):
    """``lin_<x>``: linear decay from x to 0 (rl-zoo convention), as a function of SB3's progress remaining."""
    if value.startswith("lin_"):
        try:
            start = float(value[4:])
        except ValueError:
            pass
        else:
            return lambda progress_remaining: progress_remaining * start
    raise ValueError(f"algo.hyperparams.{key} = {value!r}: a number or 'lin_<number>' (linear decay to 0)")


def model_kwargs(hyperparams: dict) -> dict:
    """Config hyperparameters as the algorithm's keyword arguments (``lin_<x>`` strings as SB3 schedules)."""
    return {k: (schedule(v, k) if isinstance(v, str) else v) for k, v in hyperparams.items()}


def action_distribution(policy, obs, masks=None):
    """The SB3 action distribution of a feed-forward ``policy`` at ``obs``; ``masks`` (MaskablePPO's action masks, or
    None) are applied as in training."""
    if masks is None:
        return policy.get_distribution(obs)
    return policy.get_distribution(obs, action_masks=masks)


def read_sb3_data(path: Path) -> dict:
    """The JSON ``data`` of an SB3 checkpoint, or a ``ValueError`` saying the file is not one (and what it is, for a
    zip without ``data``)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if "data" not in names:
                raise ValueError(_other_zip(path, names))
            return json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a Stable-Baselines3 checkpoint (a .zip saved by model.save): "
                         f"{exc}") from exc


def _other_zip(path: Path, names: list[str]) -> str:
    """What a zip archive without the ``data`` member of an SB3 checkpoint is, and what to pass instead."""
    if any(name.count("/") == 1 and name.endswith("/manifest.json") for name in names):
        return (f"{str(path)!r} is a package archive written by sb3-realm build-submission --zip (the upload for the "
                "platform), not an SB3 checkpoint; pass the unzipped upload folder (build-submission's --out) or the "
                "model .zip it was built from (e.g. runs/NAME/final_model.zip)")
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "") if names else "nothing"
    return (f"{str(path)!r} is a zip archive but not an SB3 checkpoint: it has no 'data' member, which model.save "
            f"writes (it holds {shown}); pass the .zip a training run saved (e.g. runs/NAME/final_model.zip) or a "
            "submission folder")


def _policy_name(data: dict) -> str:
    """The policy class's name as the checkpoint's JSON shows it (``DQNPolicy``, ``ActorCriticPolicy``, ...)."""
    policy = data.get("policy_class", {})
    if not isinstance(policy, dict):
        return str(policy)[:60]
    match = re.search(r"<function (\w+)\.__init__", str(policy.get("__init__", "")))
    return match.group(1) if match else str(policy.get("__module__", "an unknown class"))


def _spaces(data: dict) -> tuple[str, str]:
    """``(observation space, action space)`` as the checkpoint's JSON shows them, in short."""
    obs, act = data.get("observation_space", {}), data.get("action_space", {})
    shape = obs.get("_shape")
    kind = str(obs.get(":type:", "?")).split(".")[-1].rstrip("'>")
    obs_text = obs.get("spaces") or f"{kind}{tuple(shape) if isinstance(shape, list) else ''}"
    act_text = f"Discrete({act['n']})" if "n" in act else str(act.get(":type:", "?")).split(".")[-1].rstrip("'>")
    return str(obs_text), act_text


def detect_algorithm(path: str | Path, data: dict | None = None) -> str:
    """``"ppo"``, ``"maskable_ppo"`` or ``"recurrent_ppo"`` from an SB3 checkpoint's JSON (nothing unpickled); a
    ``ValueError`` naming what was found and what is expected for a checkpoint of another algorithm (A2C, DQN, ...)
    or of another environment (a ``Dict`` of ``maps`` and ``vector`` in, the actions of a registered game out).
    ``data``: the checkpoint's JSON when the caller has read it already."""
    data = read_sb3_data(Path(path)) if data is None else data
    name = _policy_name(data)
    observation, action = _spaces(data)
    allowed = list(dict.fromkeys(f"Discrete({spec.submission.features.N_ACTIONS})" for spec in games.GAMES.values()))
    if "'maps'" not in observation or "'vector'" not in observation or action not in allowed:
        raise ValueError(f"{str(path)!r} is not a model of this game: its observation space is {observation} and its "
                         f"action space {action}, where sb3_realm's env has a Dict of 'maps' and 'vector' and "
                         f"{' or '.join(allowed)}; train one with sb3-realm train or sb3-realm imitate")
    policy = str(data.get("policy_class", {}).get(":type:", "")) + str(data.get("policy_class", {}))
    ppo_family = "clip_range" in data  # PPO and its sb3-contrib variants; A2C shares ActorCriticPolicy
    if ppo_family and "Maskable" in policy:
        return "maskable_ppo"
    if ppo_family and ("Recurrent" in policy or "Lstm" in policy):
        return "recurrent_ppo"
    if ppo_family and "ActorCritic" in policy:
        return "ppo"
    raise ValueError(f"{str(path)!r} is a model of another algorithm (policy class {name}"
                     f"{'' if ppo_family else ', no PPO clip_range'}); supported algorithms are {list(ALGORITHMS)}: "
                     "train one with sb3-realm train or sb3-realm imitate")
