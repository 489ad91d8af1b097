"""What a saved SB3 checkpoint says about itself: its training run's config, its features version and frame stack."""

from __future__ import annotations

import warnings
from pathlib import Path

from .. import games
from .algorithms import detect_algorithm, read_sb3_data

__all__ = ["LEGACY_FEATURE_VERSION", "CONFIG_ENTRY", "run_config", "serialized_entries", "run_frame_stack",
           "run_mask_wall_moves", "run_game", "model_feature_version", "feature_version_mismatch",
           "FeatureVersionWarning", "warn_feature_version"]

LEGACY_FEATURE_VERSION = "1"  # what a model that records no version was trained on
# the resolved run config, as plain JSON inside every checkpoint the package writes (the model's attribute of that
# name, saved with its data): a lone final_model.zip says how it was trained
CONFIG_ENTRY = "sb3_realm_config"


def serialized_entries(data: dict) -> list[str]:
    """The entries of a checkpoint's JSON data that SB3's ``load`` would unpickle (cloudpickle, base64)."""
    return [key for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value]


def run_config(path: Path, data: dict | None = None) -> dict | None:
    """The config of the training run a checkpoint belongs to, as plain data: the one recorded in the checkpoint
    (:data:`CONFIG_ENTRY`), else the run's ``config.yaml`` (in the checkpoint's folder, or two levels up for
    ``checkpoints/step_*/model.zip``); None when there is neither. ``data``: the checkpoint's JSON when the caller has
    read it already."""
    import yaml  # lazy: only checkpoints read it; at the top it costs `sb3-realm --help` 15 ms

    path = Path(path)
    try:
        recorded = (read_sb3_data(path) if data is None else data).get(CONFIG_ENTRY)
    except ValueError:  # not a checkpoint: no recorded config
        recorded = None
    if isinstance(recorded, dict):
        return recorded
    for folder in (path.parent, path.parent.parent.parent):
        cfg = folder / "config.yaml"
        if cfg.is_file():
            return yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}
    return None


def run_game(path: str | Path) -> games.GameSpec:
    """The game a checkpoint was trained on: the ``game`` of its run config (:data:`~sb3_realm.games.DEFAULT_GAME`
    when it names none, as every run made before the toolkit had two games)."""
    return games.get((run_config(Path(path)) or {}).get("game"))


def run_frame_stack(path: Path) -> int:
    """``env.frame_stack`` of the checkpoint's training run (1 when there is no run config)."""
    return int(((run_config(path) or {}).get("env") or {}).get("frame_stack", 1) or 1)


def run_mask_wall_moves(path: Path) -> bool:
    """``env.mask_wall_moves`` of the checkpoint's training run (False when there is no run config): the action
    mask a MaskablePPO model was trained with, so it plays with that mask in any env."""
    return bool(((run_config(path) or {}).get("env") or {}).get("mask_wall_moves", False))


def model_feature_version(path: str | Path) -> str:
    """The features version an SB3 checkpoint was trained on: recorded in the checkpoint itself (``feature_version``
    in its data, set by :func:`sb3_realm.training.run.build_model`), else in its run's ``config.yaml``, else
    ``LEGACY_FEATURE_VERSION`` (models from before versions were recorded). A ``ValueError`` for a checkpoint of
    another game or algorithm (:func:`~sb3_realm.models.algorithms.detect_algorithm`)."""
    path = Path(path)
    data = read_sb3_data(path)
    detect_algorithm(path, data)  # a checkpoint of another game or algorithm is named as such first
    version = data.get("feature_version") or (run_config(path) or {}).get("feature_version")
    return str(version) if version else LEGACY_FEATURE_VERSION


def feature_version_mismatch(path: str | Path, game: str | None = None) -> str | None:
    """None when the checkpoint was trained on the current features of ``game`` (None: the game its run records),
    else a sentence saying what differs and to retrain."""
    found = model_feature_version(path)
    spec = games.get(game) if game is not None else run_game(path)
    features = spec.features
    if found == features.FEATURE_VERSION:
        return None
    return (f"{str(path)!r} was trained on features version {found}, and this sb3_realm computes version "
            f"{features.FEATURE_VERSION} ({spec.feature_version_note}); "
            "the model sees inputs it was not trained on: retrain it (sb3-realm train) with this version. (A model "
            "that records no version counts as version 1; if you trained it on this version with your own SB3 code, "
            f"set model.feature_version = {features.__name__}.FEATURE_VERSION before model.save)")


class FeatureVersionWarning(UserWarning):
    """A model trained on another features version is being evaluated or resumed."""


def warn_feature_version(path: str | Path, game: str | None = None) -> None:
    """Warn (:class:`FeatureVersionWarning`) when the checkpoint's features version is not the current one of
    ``game`` (None: the game its run records)."""
    message = feature_version_mismatch(path, game)
    if message is not None:
        warnings.warn(message, FeatureVersionWarning, stacklevel=2)
