"""SB3 checkpoints loaded without unpickling anything.

Stable-Baselines3's ``load`` unpickles (cloudpickle) every entry of a checkpoint's JSON data that it could not store as
plain JSON: the policy class and its ``policy_kwargs``, the observation and action spaces, the schedules, the last
observation, the episode buffers. A file from elsewhere can carry code in any of them. :func:`load_model` rebuilds each
such entry from plain data instead (the run config recorded in the checkpoint, or the run's ``config.yaml`` beside
it) and hands it to SB3's ``load`` as a replacement (``custom_objects``), so nothing is deserialized; the weights are
read by torch with ``weights_only=True``, as SB3 always does. An entry that cannot be rebuilt, or a checkpoint with no
run config, is refused with one line naming the file, the entry and the opt-in.

The opt-in, for a file the user made with their own SB3 code: ``trust_pickle=True`` (``--trust-pickle`` on the
command line), which calls SB3's plain ``load``.
"""

from __future__ import annotations

import inspect
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import games
from ..models.algorithms import algorithm, model_kwargs
from ..models.extractors import policy_kwargs_of
from ..models.saved import check_checkpoint_file, checkpoint_algorithm, checkpoint_data, run_config, serialized_entries

if TYPE_CHECKING:
    from gymnasium import spaces

__all__ = ["TRUST_ENV", "TRUST_HINT", "UntrustedCheckpointError", "load_model", "trusted"]

TRUST_ENV = "SB3_REALM_TRUST_PICKLE"  # "1": the process's commands trust the pickles of the files they are given
TRUST_HINT = ("only if you made this file yourself with your own SB3 code, pass --trust-pickle (trust_pickle=True in "
              "Python)")
# entries whose value a loaded model recomputes or does without (SB3 fills them when training starts)
_DROPPED = ("_last_obs", "_last_original_obs", "_last_episode_starts", "_last_lstm_states", "ep_info_buffer",
            "ep_success_buffer", "rollout_buffer_class")


class UntrustedCheckpointError(ValueError):
    """A checkpoint holds pickled entries that cannot be rebuilt from plain data (the message names them)."""


def trusted(trust_pickle: bool | None) -> bool:
    """Whether to trust pickles: the argument, or (None) the process's ``SB3_REALM_TRUST_PICKLE``."""
    return os.environ.get(TRUST_ENV) == "1" if trust_pickle is None else bool(trust_pickle)


def _spaces(config: dict) -> tuple[spaces.Dict | spaces.Box, spaces.Discrete]:
    observation: spaces.Dict | spaces.Box
    observation, action = games.recorded(config.get("game"), "the checkpoint's run config").env.spaces()
    stack = int((config.get("env") or {}).get("frame_stack", 1) or 1)
    if stack > 1:  # as VecFrameStack stacks it
        # lazy: SB3 loads in seconds, and this module is imported by every command, `sb3-realm --help` included
        from stable_baselines3.common.vec_env.stacked_observations import StackedObservations

        observation = StackedObservations(1, stack, observation).stacked_observation_space
    return observation, action


def _hyperparameter(cls, hyperparams: dict, key: str):
    if key in hyperparams:
        return model_kwargs({key: hyperparams[key]})[key]
    return inspect.signature(cls.__init__).parameters[key].default


def _replacements(path: Path, entries: list[str], config: dict, cls, algo: str) -> dict:
    algo_section = config.get("algo") or {}
    hyperparams = dict(algo_section.get("hyperparams") or {})
    frame_stack = int((config.get("env") or {}).get("frame_stack", 1) or 1)
    out: dict[str, Any] = {}
    for key in entries:
        if key in _DROPPED:
            out[key] = None
        elif key == "policy_class":
            out[key] = cls.policy_aliases[algorithm(algo).policy]
        elif key == "policy_kwargs":
            out[key] = policy_kwargs_of(algo_section, frame_stack)
        elif key in ("observation_space", "action_space"):
            out["observation_space"], out["action_space"] = _spaces(config)
        elif key in ("learning_rate", "clip_range", "clip_range_vf"):
            out[key] = _hyperparameter(cls, hyperparams, key)
        elif key == "lr_schedule":  # recomputed from learning_rate when the model is set up
            out[key] = _hyperparameter(cls, hyperparams, "learning_rate")
        else:
            raise UntrustedCheckpointError(
                f"{str(path)!r} holds the pickled entry {key!r}, which sb3_realm cannot rebuild from plain data, so "
                f"it is not loaded (a pickle can run code); {TRUST_HINT}")
    return out


def _check_members(path: Path) -> None:
    """A ``ValueError`` naming what is wrong when a member of the checkpoint is damaged or the weights are missing."""
    try:
        with zipfile.ZipFile(path) as archive:
            names, bad = archive.namelist(), archive.testzip()
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{str(path)!r} is damaged ({exc}); restore it, or use another checkpoint") from None
    if bad is not None:
        raise ValueError(f"{str(path)!r} is damaged: its member {bad} does not read back whole; restore the file, or "
                         "use another checkpoint")
    if "policy.pth" not in names:
        raise ValueError(f"{str(path)!r} has no policy.pth (the network's weights), so it is not a whole SB3 "
                         "checkpoint; use the .zip that model.save wrote")


def load_model(path: str | os.PathLike, *, algo_cls=None, trust_pickle: bool | None = None, env=None,
               device: str = "auto", **kwargs):
    """The SB3 model of the checkpoint ``path``, loaded without unpickling (module docstring).

    :param algo_cls: the class to load with (default: the registry's for the checkpoint's algorithm).
    :param trust_pickle: True: SB3's plain ``load`` (the file's pickles run); None: as ``SB3_REALM_TRUST_PICKLE``.
    :param env: as SB3's ``load``.
    :param device: as SB3's ``load``.
    :param kwargs: as SB3's ``load``.
    """
    path = check_checkpoint_file(path)  # a missing, empty, truncated or non-zip file is named as such
    data = checkpoint_data(path)
    algo = checkpoint_algorithm(path, data)
    _check_members(path)
    cls = algo_cls or algorithm(algo).cls
    if trusted(trust_pickle):
        return cls.load(path, env=env, device=device, **kwargs)
    entries = serialized_entries(data)
    replacements = {}
    if entries:
        config = run_config(path, data)
        if config is None:
            raise UntrustedCheckpointError(
                f"{str(path)!r} holds pickled entries ({', '.join(entries)}) and no run config to rebuild them from "
                "(checkpoints that sb3-realm writes record it; older ones have config.yaml beside them), so it is not "
                f"loaded (a pickle can run code); {TRUST_HINT}")
        try:
            replacements = _replacements(path, entries, config, cls, algo)
        except UntrustedCheckpointError:
            raise
        except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a section of the wrong kind, a bad value
            raise UntrustedCheckpointError(
                f"{str(path)!r}: its run config cannot rebuild its pickled entries ({str(exc)[:200]}), so it is not "
                f"loaded; use the .zip a training run saved, or {TRUST_HINT}") from None
    try:
        return cls.load(path, env=env, device=device, custom_objects=replacements, **kwargs)
    except RuntimeError as exc:  # the rebuilt network does not fit the weights
        raise UntrustedCheckpointError(
            f"{str(path)!r}: the network its run config describes does not fit its weights ({str(exc)[:200]}); "
            f"{TRUST_HINT}") from None
