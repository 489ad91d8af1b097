"""Checkpoints that survive SIGKILL: each is a folder built under a temporary name and renamed into place.

``<run>/checkpoints/step_<timesteps>/`` holds ``model.zip`` (weights, optimizer, timesteps), ``vecnormalize.json``
(the normalisation statistics as plain numbers, never a pickle) when the run normalises, and ``state.json``
(timesteps, curriculum phase, algorithm). A folder is renamed into place only once complete, so a kill at any moment
leaves either the previous checkpoints or a new complete one; leftover temporary folders (``.tmp-`` and the eight
letters of ``tempfile``) are ignored and cleaned on resume. Only this package's own names are ever removed: a
checkpoint is ``step_`` and exactly 12 digits, a real folder, never a symbolic link; anything else in the folder (a
user's ``step_best`` or ``.tmp-notes``, a link to a folder elsewhere) is left alone and never read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from ..agents.checkpoint import TRUST_HINT, trusted
from ..atomic import atomic_write, own_leftovers, remove_made, temp_names, writing

__all__ = [
    "CHECKPOINT_NAME",
    "TEMP_NAME",
    "VECNORMALIZE_FILE",
    "CheckpointError",
    "ResumeWarning",
    "RunCheckpointCallback",
    "check_checkpoint",
    "checkpoint_state",
    "free_name",
    "keep_final_aside",
    "latest_checkpoint",
    "list_checkpoints",
    "load_vecnormalize",
    "save_checkpoint",
    "save_vecnormalize",
]

VECNORMALIZE_FILE = "vecnormalize.json"
_SETTINGS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "gamma", "epsilon", "norm_obs_keys")

PREFIX = "step_"
#: the name of a checkpoint folder (:func:`save_checkpoint`), matched whole: the only folders listed and rotated away
CHECKPOINT_NAME = re.compile(re.escape(PREFIX) + "[0-9]{12}")
#: the name of a checkpoint being written (``tempfile.mkdtemp(prefix=".tmp-")``), matched whole: the only leftovers
#: cleaned
TEMP_NAME = temp_names("", prefix=".tmp-", suffix="")


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be used; the message names it and says what to do."""


class ResumeWarning(UserWarning):
    """A resumed run passed over something (a damaged checkpoint, results of steps it plays again) or kept a file
    aside; the message names it."""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(model, folder: str | os.PathLike, curriculum_state: dict | None = None,
                    algo: str | None = None, extra: dict | None = None) -> Path:
    """Write a complete checkpoint of ``model`` into ``folder/step_<timesteps>`` atomically; ``extra`` (JSON data,
    e.g. an imitation run's round) goes into ``state.json`` beside the standard keys."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{PREFIX}{model.num_timesteps:012d}"
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder))
    try:
        with writing(final / "model.zip"):
            model.save(tmp / "model.zip")
        venv = model.get_vec_normalize_env()
        if venv is not None:
            save_vecnormalize(venv, tmp / VECNORMALIZE_FILE)
        state = {"num_timesteps": int(model.num_timesteps), "curriculum": curriculum_state, "algo": algo,
                 "feature_version": getattr(model, "feature_version", None), **(extra or {})}
        (tmp / "state.json").write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
        for f in tmp.iterdir():
            with open(f, "rb") as handle:
                os.fsync(handle.fileno())
        if final.exists() or final.is_symlink():  # the same timestep saved twice (e.g. the final save): replace it
            remove_made(final, folder)  # a link there is unlinked, its target left alone
        os.rename(tmp, final)
        _fsync_dir(folder)
    except BaseException:
        with contextlib.suppress(OSError):
            remove_made(tmp, folder)
        raise
    return final


def list_checkpoints(folder: str | os.PathLike) -> list[Path]:
    """Complete checkpoint folders, oldest first: the real folders named :data:`CHECKPOINT_NAME` (a link, or a
    folder of another name, is not one of this package's checkpoints)."""
    return [p for p in own_leftovers(folder, CHECKPOINT_NAME) if p.is_dir()]


def checkpoint_state(state, where: str | os.PathLike) -> dict:
    """``state`` (the content of a checkpoint's ``state.json``) once it has the shape :func:`save_checkpoint` writes:
    a mapping with ``num_timesteps`` a whole number >= 0, ``curriculum`` null or a mapping, ``algo`` and
    ``feature_version`` null or of their types; else a :class:`CheckpointError` naming the file and the key."""
    def bad(what: str) -> CheckpointError:
        return CheckpointError(f"{str(where)!r} {what}: it is damaged or not this package's; delete the checkpoint "
                               "folder to resume from the one before")

    if not isinstance(state, dict):
        raise bad(f"holds a {type(state).__name__}, not the mapping of a checkpoint's state")
    steps = state.get("num_timesteps")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise bad(f"has num_timesteps = {steps!r}, not a whole number >= 0")
    for key, types_ in (("curriculum", dict), ("algo", str), ("feature_version", (int, str))):
        value = state.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types_)):
            raise bad(f"has {key} = {value!r}, of the wrong type")
    return state


def check_checkpoint(ckpt: Path) -> dict:
    """The state of the checkpoint folder ``ckpt`` once its files are intact, else a :class:`CheckpointError` saying
    what is wrong and what to do."""
    state_file, model_file = ckpt / "state.json", ckpt / "model.zip"
    if not state_file.is_file() or not model_file.is_file():
        raise CheckpointError(f"checkpoint {str(ckpt)!r} lacks state.json or model.zip")
    try:
        state = checkpoint_state(json.loads(state_file.read_text(encoding="utf-8")), state_file)
        with zipfile.ZipFile(model_file) as archive:
            bad = archive.testzip()
    except (json.JSONDecodeError, UnicodeDecodeError, zipfile.BadZipFile, OSError) as exc:
        raise CheckpointError(f"checkpoint {str(ckpt)!r} is corrupt ({exc}); delete it to resume from the one "
                              "before") from exc
    if bad is not None:
        raise CheckpointError(f"checkpoint {str(ckpt)!r}: {bad} in model.zip is corrupt; delete the folder")
    return state


def latest_checkpoint(folder: str | os.PathLike, warn: bool = True) -> tuple[Path, dict] | None:
    """The newest checkpoint that passes the integrity checks (``None`` if there is none); cleans temp folders. Each
    newer, damaged one passed over is named in a :class:`ResumeWarning` (with ``warn``), with the one used."""
    folder = Path(folder)
    for leftover in own_leftovers(folder, TEMP_NAME):
        with contextlib.suppress(OSError):
            remove_made(leftover, folder)
    damaged = []
    for ckpt in reversed(list_checkpoints(folder)):
        try:
            state = check_checkpoint(ckpt)
        except CheckpointError as exc:
            damaged.append(str(exc))
            continue
        if damaged and warn:
            warnings.warn(f"{'; '.join(damaged)}: resuming from {ckpt.name} (step {state.get('num_timesteps')}) "
                          "instead", ResumeWarning, stacklevel=2)
        return ckpt, state
    return None


def free_name(path: Path) -> Path:
    """``path``, or when a file of that name is there already (one kept aside before), the first of
    ``<stem>.2<suffix>``, ``<stem>.3<suffix>``, ... that is free: a file set aside never replaces another."""
    candidate, n = path, 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{path.stem}.{n}{path.suffix}")
    return candidate


def keep_final_aside(run_dir: Path, resumed_from: int) -> Path | None:
    """Before a resumed run writes its final model: when ``final_model.zip`` holds training beyond the checkpoint the
    run resumed from (that training is lost), move it aside as ``final_model.step-<its steps>.zip``, say so
    (:class:`ResumeWarning`) and return its new path."""
    final = run_dir / "final_model.zip"
    if not final.is_file():
        return None
    try:
        with zipfile.ZipFile(final) as archive:
            steps = int(json.loads(archive.read("data")).get("num_timesteps", 0))
    except (OSError, zipfile.BadZipFile, KeyError, ValueError):
        steps = -1  # unreadable: keep it too, it is the user's
    if 0 <= steps <= resumed_from:
        return None
    aside = free_name(run_dir / f"final_model.step-{max(steps, 0)}.zip")
    os.replace(final, aside)
    warnings.warn(f"{final} held {steps} steps of training, beyond step {resumed_from} that this run resumed from; "
                  f"it is kept as {aside.name}", ResumeWarning, stacklevel=2)
    return aside


class RunCheckpointCallback(BaseCallback):
    """Save a resumable checkpoint every ``save_freq`` env steps and keep the last ``keep_last``.

    :param save_freq: env steps (summed over all envs) between checkpoints: one at each multiple of it of the model's
        total timesteps.
    :param folder: where the ``step_*`` folders go.
    :param keep_last: how many checkpoints to keep (older ones are deleted after a new one is in place).
    :param curriculum: an object with ``state_dict()`` (e.g. ``CurriculumCallback``) saved with each checkpoint.
    :param algo: algorithm name recorded in ``state.json``.
    """

    def __init__(self, save_freq: int, folder: str | os.PathLike, keep_last: int = 3, curriculum=None,
                 algo: str | None = None, verbose: int = 0) -> None:
        super().__init__(verbose)
        if save_freq < 1 or keep_last < 1:
            raise ValueError(f"save_freq ({save_freq}) and keep_last ({keep_last}) must be >= 1")
        self.save_freq = save_freq
        self.folder = Path(folder)
        self.keep_last = keep_last
        self.curriculum = curriculum
        self.algo = algo
        self._last_saved = 0

    def _on_training_start(self) -> None:
        self._last_saved = self.num_timesteps

    def _on_step(self) -> bool:
        # at each multiple of save_freq of the model's total timesteps: a resumed run saves where an uninterrupted one
        # does
        if self.num_timesteps // self.save_freq > self._last_saved // self.save_freq:
            self.save()
        return True

    def save(self) -> Path:
        state = self.curriculum.state_dict() if self.curriculum is not None else None
        path = save_checkpoint(self.model, self.folder, state, self.algo)
        self._last_saved = self.num_timesteps
        for old in list_checkpoints(self.folder)[:-self.keep_last]:
            with contextlib.suppress(OSError):
                remove_made(old, self.folder)
        if self.verbose:
            print(f"checkpoint: {path}")
        return path


def _rms_state(rms):
    if rms is None:
        return None
    if isinstance(rms, dict):
        return {key: _rms_state(value) for key, value in rms.items()}
    return {"mean": np.asarray(rms.mean).tolist(), "var": np.asarray(rms.var).tolist(), "count": float(rms.count)}


def _rms(state):
    if state is None or "count" not in state:
        return None if state is None else {key: _rms(value) for key, value in state.items()}
    rms = RunningMeanStd(shape=np.shape(state["mean"]))
    rms.mean, rms.var, rms.count = np.asarray(state["mean"]), np.asarray(state["var"]), state["count"]
    return rms


def save_vecnormalize(venv: VecNormalize, path: str | os.PathLike) -> None:
    """``venv``'s normalisation settings and statistics as plain JSON at ``path`` (written atomically)."""
    state = {key: getattr(venv, key, None) for key in _SETTINGS}
    state.update(obs_rms=_rms_state(venv.obs_rms if venv.norm_obs else None), ret_rms=_rms_state(venv.ret_rms),
                 returns=np.asarray(venv.returns).tolist())
    text = json.dumps(state) + "\n"
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def load_vecnormalize(ckpt: Path, venv, trust_pickle: bool | None = None):
    """Wrap ``venv`` with the checkpoint's VecNormalize statistics when it has them: its ``vecnormalize.json``, or an
    older run's ``vecnormalize.pkl`` (a pickle: only with ``trust_pickle``, else a :class:`CheckpointError`)."""
    inner = venv.venv if isinstance(venv, VecNormalize) else venv
    stats = Path(ckpt) / VECNORMALIZE_FILE
    if stats.is_file():
        try:
            state = json.loads(stats.read_text(encoding="utf-8"))
            settings = {key: state[key] for key in _SETTINGS if key != "norm_obs_keys"}
            out = VecNormalize(inner, norm_obs_keys=state.get("norm_obs_keys"), **settings)
            if state["obs_rms"] is not None:
                out.obs_rms = _rms(state["obs_rms"])
            out.ret_rms = _rms(state["ret_rms"])
            returns = np.asarray(state["returns"], dtype=np.float64)
            if returns.shape == out.returns.shape:  # another number of envs starts from zero returns, as SB3 does
                out.returns = returns
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise CheckpointError(f"{str(stats)!r} does not hold VecNormalize statistics ({exc}); delete the "
                                  "checkpoint folder to resume from the one before") from None
        return out
    legacy = Path(ckpt) / "vecnormalize.pkl"
    if not legacy.is_file():
        return venv
    if not trusted(trust_pickle):
        raise CheckpointError(f"{str(legacy)!r} holds VecNormalize statistics as a pickle (written before they were "
                              f"saved as plain numbers), which can run code, so it is not loaded; {TRUST_HINT}")
    return VecNormalize.load(str(legacy), inner)
