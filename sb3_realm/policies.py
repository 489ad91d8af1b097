"""Policies that play a :class:`~sb3_realm.envs.RealmEnv` episode through one interface, for evaluation and replays.

``load_policy(spec)`` accepts ``"random"``, ``"oracle"``, the path of an SB3 checkpoint (``.zip`` of PPO,
MaskablePPO or RecurrentPPO) or a submission folder built by ``sb3-realm build-submission``. Every policy has
``reset(env)`` (after ``env.reset``) and ``act(env, obs) -> int``.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from . import features
from .envs import RealmEnv

__all__ = ["play_model", "Policy", "RandomPolicy", "OracleAdapter", "SB3Policy", "PolicySpec", "load_policy",
           "detect_algorithm", "model_feature_version", "feature_version_mismatch", "FeatureVersionWarning"]

LEGACY_FEATURE_VERSION = "1"  # what a model that records no version was trained on


class Policy(Protocol):
    name: str

    def reset(self, env: RealmEnv) -> None: ...

    def act(self, env: RealmEnv, obs: dict[str, np.ndarray]) -> int: ...


@dataclass
class RandomPolicy:
    """Uniformly random legal actions (seeded per episode by the evaluator)."""

    seed: int = 0
    name: str = "random"
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def reset(self, env: RealmEnv) -> None:
        # a fresh stream per episode, derived from the env's own seeded generator: order-independent results
        self.rng = np.random.default_rng(int(env.np_random.integers(2**63)))

    def act(self, env: RealmEnv, obs: dict[str, np.ndarray]) -> int:
        return int(self.rng.choice(np.flatnonzero(env.action_masks())))


class OracleAdapter:
    """The oracle planner's expert policy, acting from the competition-shaped observation."""

    name = "oracle"

    def __init__(self, env: RealmEnv, use_flash: bool = True, use_buff: bool = True) -> None:
        from .game.oracle import OraclePolicy

        self.oracle = OraclePolicy(env.game_map, env.rules, use_flash=use_flash, use_buff=use_buff)

    def reset(self, env: RealmEnv) -> None:
        self.oracle.reset(env.game.config)

    def act(self, env: RealmEnv, obs: dict[str, np.ndarray]) -> int:
        return int(self.oracle.act(*env.competition_obs()))

    @property
    def planned_steps(self) -> int | None:
        return self.oracle.planned_steps


_ALGOS = ("ppo", "maskable_ppo", "recurrent_ppo")


def _read_sb3_data(path: Path) -> dict:
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{str(path)!r} is not a Stable-Baselines3 checkpoint (a .zip saved by model.save): "
                         f"{exc}") from exc


def detect_algorithm(path: str | Path) -> str:
    """``"ppo"``, ``"maskable_ppo"`` or ``"recurrent_ppo"`` from the policy class stored in an SB3 checkpoint."""
    data = _read_sb3_data(Path(path))
    policy = str(data.get("policy_class", {}).get(":type:", "")) + str(data.get("policy_class", {}))
    if "Maskable" in policy:
        return "maskable_ppo"
    if "Recurrent" in policy or "Lstm" in policy:
        return "recurrent_ppo"
    if "ActorCritic" in policy:
        return "ppo"
    raise ValueError(f"{str(path)!r}: cannot tell the algorithm from its policy class {policy[:120]!r}; supported "
                     f"algorithms are {list(_ALGOS)}")


def algorithm_class(name: str):
    if name == "ppo":
        from stable_baselines3 import PPO

        return PPO
    if name == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if name == "recurrent_ppo":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    raise ValueError(f"unknown algorithm {name!r}; choose one of {list(_ALGOS)}")


def run_config(path: Path) -> dict | None:
    """The ``config.yaml`` of the training run a checkpoint belongs to (in the checkpoint's folder, or two levels up
    for ``checkpoints/step_*/model.zip``), as plain data; None when there is none."""
    import yaml

    for folder in (path.parent, path.parent.parent.parent):
        cfg = folder / "config.yaml"
        if cfg.is_file():
            return yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}
    return None


def model_feature_version(path: str | Path) -> str:
    """The features version an SB3 checkpoint was trained on: recorded in the checkpoint itself (``feature_version``
    in its data, set by :func:`sb3_realm.train.build_model`), else in its run's ``config.yaml``, else
    ``LEGACY_FEATURE_VERSION`` (models from before versions were recorded)."""
    path = Path(path)
    version = _read_sb3_data(path).get("feature_version") or (run_config(path) or {}).get("feature_version")
    return str(version) if version else LEGACY_FEATURE_VERSION


def feature_version_mismatch(path: str | Path) -> str | None:
    """None when the checkpoint was trained on the current features, else a sentence saying what differs and to
    retrain."""
    found = model_feature_version(path)
    if found == features.FEATURE_VERSION:
        return None
    return (f"{str(path)!r} was trained on features version {found}, and this sb3_realm computes version "
            f"{features.FEATURE_VERSION} (version 2: buff_pos is null while the buff is taken, as on the platform); "
            "the model sees inputs it was not trained on: retrain it (sb3-realm train) with this version. (A model "
            "that records no version counts as version 1; if you trained it on this version with your own SB3 code, "
            "set model.feature_version = sb3_realm.features.FEATURE_VERSION before model.save)")


class FeatureVersionWarning(UserWarning):
    """A model trained on another features version is being evaluated or resumed."""


def warn_feature_version(path: str | Path) -> None:
    """Warn (:class:`FeatureVersionWarning`) when the checkpoint's features version is not the current one."""
    message = feature_version_mismatch(path)
    if message is not None:
        warnings.warn(message, FeatureVersionWarning, stacklevel=2)


def run_frame_stack(path: Path) -> int:
    """``env.frame_stack`` of the checkpoint's training run (1 when there is no run config)."""
    return int(((run_config(path) or {}).get("env") or {}).get("frame_stack", 1) or 1)


class SB3Policy:
    """A trained SB3 / sb3-contrib model, deterministic, with action masks (MaskablePPO), LSTM state
    (RecurrentPPO) and frame stacking (as ``VecFrameStack``: oldest first, zeros after a reset) handled.

    :param frame_stack: frames the model expects; default: read from the run's ``config.yaml``.
    """

    def __init__(self, path: str | Path, algo: str | None = None, device: str = "cpu",
                 frame_stack: int | None = None) -> None:
        self.path = Path(path)
        self.algo = algo or detect_algorithm(self.path)
        self.model = algorithm_class(self.algo).load(self.path, device=device)
        self.name = self.path.name
        self.frame_stack = frame_stack or run_frame_stack(self.path)
        self._state = None
        self._start = np.ones((1,), dtype=bool)
        self._stack: dict[str, np.ndarray] | None = None

    def reset(self, env: RealmEnv) -> None:
        self._state = None
        self._start = np.ones((1,), dtype=bool)
        self._stack = None

    def _stacked(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.frame_stack == 1:
            return obs
        if self._stack is None:
            self._stack = {k: np.zeros((v.shape[0] * self.frame_stack, *v.shape[1:]), dtype=v.dtype)
                           for k, v in obs.items()}
        for k, v in obs.items():
            buf = self._stack[k]  # (T * n, ...): frames along the first axis, newest last
            n = v.shape[0]
            buf[:-n] = buf[n:].copy()
            buf[-n:] = v
        return {k: v.copy() for k, v in self._stack.items()}

    def act(self, env: RealmEnv, obs: dict[str, np.ndarray]) -> int:
        obs = self._stacked(obs)
        if self.algo == "maskable_ppo":
            action, _ = self.model.predict(obs, deterministic=True, action_masks=env.action_masks())
        elif self.algo == "recurrent_ppo":
            action, self._state = self.model.predict(obs, state=self._state, episode_start=self._start,
                                                     deterministic=True)
            self._start = np.zeros((1,), dtype=bool)
        else:
            action, _ = self.model.predict(obs, deterministic=True)
        return int(action)


def play_model(model, env: RealmEnv, seed: int, deterministic: bool = True) -> dict:
    """One episode of an in-memory SB3 model (no masks, no LSTM state) on ``env``; returns the final ``info``."""
    obs, _ = env.reset(seed=seed)
    done, info = False, {}
    while not done:
        action, _ = model.predict(obs, deterministic=deterministic)
        obs, _, terminated, truncated, info = env.step(int(action))
        done = terminated or truncated
    return info


@dataclass(frozen=True)
class PolicySpec:
    """What to play, in a form that crosses process boundaries: ``"random"``, ``"oracle"`` or a checkpoint path.

    :param kind: the policy string given by the user.
    :param seed: seed of the random policy.
    :param use_flash: the oracle may flash.
    :param use_buff: the oracle may take the buff.
    """

    kind: str
    seed: int = 0
    use_flash: bool = True
    use_buff: bool = True

    def build(self, env: RealmEnv) -> Policy:
        return load_policy(self.kind, env, seed=self.seed, use_flash=self.use_flash, use_buff=self.use_buff)


def load_policy(spec: str, env: RealmEnv, seed: int = 0, use_flash: bool = True, use_buff: bool = True) -> Policy:
    """Build the policy named by ``spec`` for ``env``; a bad spec raises ``ValueError`` saying what is accepted."""
    if spec == "random":
        return RandomPolicy(seed)
    if spec == "oracle":
        return OracleAdapter(env, use_flash=use_flash, use_buff=use_buff)
    path = Path(spec)
    if path.is_dir():
        from .submission_play import SubmissionPolicy

        return SubmissionPolicy(path)  # a folder built by build-submission (ValueError if it is not one)
    if not path.is_file():
        raise ValueError(f"policy {spec!r} is neither 'random', 'oracle', an existing SB3 checkpoint file "
                         "(.zip saved by model.save) nor a submission folder (built by build-submission)")
    return SB3Policy(path)
