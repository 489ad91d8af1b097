"""What a saved SB3 checkpoint says about itself: its training run's config, its features version and frame stack."""

from __future__ import annotations

import os
import warnings
import zipfile
import zlib
from pathlib import Path

from .. import games
from .algorithms import detect_algorithm, read_sb3_data

__all__ = [
    "CONFIG_ENTRY",
    "LEGACY_FEATURE_VERSION",
    "FeatureVersionWarning",
    "check_checkpoint_file",
    "checkpoint_algorithm",
    "checkpoint_data",
    "feature_version_mismatch",
    "model_feature_version",
    "run_config",
    "run_config_files",
    "run_frame_stack",
    "run_game",
    "run_mask_wall_moves",
    "serialized_entries",
    "warn_feature_version",
]

LEGACY_FEATURE_VERSION = "1"  # what a model that records no version was trained on
# the resolved run config, as plain JSON inside every checkpoint the package writes (the model's attribute of that
# name, saved with its data): a lone final_model.zip says how it was trained
CONFIG_ENTRY = "sb3_realm_config"


def serialized_entries(data: dict) -> list[str]:
    """The entries of a checkpoint's JSON data that SB3's ``load`` would unpickle (cloudpickle, base64)."""
    return [key for key, value in data.items() if isinstance(value, dict) and ":serialized:" in value]


_ZIP_START = b"PK\x03\x04"  # the first bytes of a zip archive's first member


def check_checkpoint_file(path: str | os.PathLike, members: bool = False) -> Path:
    """``path`` when it is a file that can be read as a zip archive, else a ``ValueError`` naming what is wrong with
    it (it does not exist, is a folder, a training run's folder, or not a regular file, is empty, is truncated, is not
    a zip archive) and what to do. Reads nothing but the archive's first bytes and its end; a named pipe or device is
    never opened. With ``members``, each member's checksum is checked too (a file damaged in its middle)."""
    path = Path(path)
    use = "pass the .zip a training run saved (e.g. runs/NAME/final_model.zip)"
    if not path.exists():
        what = "a link to a file that does not exist" if path.is_symlink() else "does not exist"
        recipes = ", ".join(f"{spec.config_dir}/ for {spec.title}" for spec in games.GAMES.values() if spec.config_dir)
        raise ValueError(f"{str(path)!r} {'is ' if path.is_symlink() else ''}{what}; check the path, or pass the "
                         ".zip a run saved (e.g. runs/NAME/final_model.zip, which sb3-realm imitate --config CONFIG "
                         f"--out runs/NAME makes with an imitation recipe of the game's folder ({recipes}); for RL "
                         "sb3-realm train --config CONFIG)")
    if path.is_dir():
        saved = [str(path / name) for name in ("final_model.zip", "best_model.zip") if (path / name).is_file()]
        if saved:
            use = f"it is a training run: pass one of its models, {' or '.join(saved)}"
        elif (path / "model.zip").is_file():
            use = f"it is a checkpoint's folder: pass {path / 'model.zip'!s}"
        raise ValueError(f"{str(path)!r} is a folder, not an SB3 checkpoint file; {use}")
    if not path.is_file():
        raise ValueError(f"{str(path)!r} is not a regular file (a pipe, a device or a socket); {use}")
    size = path.stat().st_size
    if size == 0:
        raise ValueError(f"{str(path)!r} is empty (0 bytes), so it holds no model: a save or copy that was cut short; "
                         f"copy or save it again, or {use}")
    with open(path, "rb") as fh:
        start = fh.read(len(_ZIP_START))
    if not zipfile.is_zipfile(path):
        if start == _ZIP_START:
            raise ValueError(f"{str(path)!r} is truncated: it starts as a zip archive but its end, which lists the "
                             f"members, is missing ({size} bytes; a save or copy that was cut short); copy or save it "
                             f"again, or {use}")
        raise ValueError(f"{str(path)!r} is not a zip archive (it starts with the bytes {start!r}), so it is not a "
                         f"Stable-Baselines3 checkpoint (a .zip saved by model.save); {use}")
    if members:
        try:
            with zipfile.ZipFile(path) as archive:
                damaged = archive.testzip()
        except (zipfile.BadZipFile, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
            raise ValueError(f"{str(path)!r} is a zip archive that cannot be read ({exc}); copy or save it again, or "
                             f"{use}") from None
        if damaged is not None:
            raise ValueError(f"{str(path)!r}: its member {damaged!r} is damaged (its checksum does not match); copy "
                             f"or save it again, or {use}")
    return path


def _not_as_saved(path: Path, what: str) -> ValueError:
    return ValueError(f"{str(path)!r} is not a Stable-Baselines3 checkpoint as model.save writes it: {what}; pass the "
                      ".zip a training run saved (e.g. runs/NAME/final_model.zip)")


def checkpoint_data(path: str | os.PathLike) -> dict:
    """The JSON ``data`` of the SB3 checkpoint ``path`` (:func:`~.algorithms.read_sb3_data`), or a ``ValueError``
    naming the file when it is not a JSON object."""
    data = read_sb3_data(Path(path))
    if not isinstance(data, dict):
        raise _not_as_saved(Path(path), f"its 'data' member holds a JSON {type(data).__name__}, not an object")
    return data


def checkpoint_algorithm(path: str | os.PathLike, data: dict | None = None) -> str:
    """:func:`~.algorithms.detect_algorithm` of a checkpoint whose data may be laid out in any way: a ``ValueError``
    naming the file for entries of the wrong kind."""
    data = checkpoint_data(path) if data is None else data
    try:
        return detect_algorithm(Path(path), data)
    except (AttributeError, TypeError) as exc:  # an entry of another kind than SB3 writes (a string for a space)
        raise _not_as_saved(Path(path), f"an entry of its 'data' member is of another kind ({exc})") from None


def run_config_files(path: str | os.PathLike) -> list[Path]:
    """Where the run config of the checkpoint ``path`` may be: its folder's ``config.yaml``, and for a checkpoint of
    a run (``<run>/checkpoints/step_*/model.zip``) the run's."""
    path = Path(path)
    files = [path.parent / "config.yaml"]
    if path.parent.parent.name == "checkpoints" and path.parent.name.startswith("step_"):
        files.append(path.parent.parent.parent / "config.yaml")
    return files


def _read_config_file(cfg: Path, path: Path) -> dict:
    """The run config ``cfg`` beside the checkpoint ``path``, as plain data (YAML read safely: a tag that names
    Python code is refused, never run), or a ``ValueError`` naming the file."""
    import yaml  # lazy: only checkpoints read it; at the top it costs `sb3-realm --help` 15 ms

    fix = (f"fix or remove it (a checkpoint saved by sb3-realm train records its run config inside, so "
           f"{str(path)!r} does not need the file if it came from there)")
    try:
        data = yaml.safe_load(cfg.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{str(cfg)!r}, the run config beside the checkpoint {str(path)!r}, is not UTF-8 text; "
                         f"{fix}") from None
    except yaml.YAMLError as exc:  # a ConstructorError for a !!python/... tag: nothing of it was built or run
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())[:200]
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ValueError(f"{str(cfg)!r}, the run config beside the checkpoint {str(path)!r}, is not plain YAML data: "
                         f"{problem}{where}; it was not used, and nothing in it ran; {fix}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{str(cfg)!r}, the run config beside the checkpoint {str(path)!r}, holds a "
                         f"{type(data).__name__}, not a mapping of settings; {fix}")
    return data


def run_config(path: Path, data: dict | None = None) -> dict | None:
    """The config of the training run a checkpoint belongs to, as plain data: the one recorded in the checkpoint
    (:data:`CONFIG_ENTRY`), else the run's ``config.yaml`` (in the checkpoint's folder, or the run's for
    ``checkpoints/step_*/model.zip``); None when there is neither. A ``ValueError`` names a ``config.yaml`` that is
    not plain YAML data (a Python tag in it is refused, never run). ``data``: the checkpoint's JSON when the caller
    has read it already."""
    path = Path(path)
    try:
        recorded = (checkpoint_data(path) if data is None else data).get(CONFIG_ENTRY)
    except (ValueError, AttributeError):  # not a checkpoint: no recorded config
        recorded = None
    if isinstance(recorded, dict):
        return recorded
    for cfg in run_config_files(path):
        if cfg.is_file():
            return _read_config_file(cfg, path)
    return None


def run_game(path: str | Path) -> games.GameSpec:
    """The game a checkpoint was trained on: the ``game`` of its run config (:data:`~sb3_realm.games.LEGACY_GAME`,
    with a one-line note, when it names none, as every run made before the toolkit had two games); a ``ValueError``
    naming the checkpoint
    when its config names a game this package does not have."""
    name = (run_config(Path(path)) or {}).get("game")
    if name is not None and (not isinstance(name, str) or name not in games.GAMES):
        raise ValueError(f"{str(path)!r}: its run config records game = {name!r}, which is not registered here "
                         f"(the games here: {', '.join(games.GAMES)}); install the game's package (its entry point "
                         "registers it) or pass --game with the game it plays, by name or by import path "
                         "(package.module:ATTR)")
    return games.recorded(name, f"checkpoint {str(path)!r}")


def _run_env(path: Path) -> dict:
    """The ``env`` section of the checkpoint's run config ({} when there is none), or a ``ValueError`` naming the
    file when it is not a mapping."""
    env = (run_config(path) or {}).get("env") or {}
    if not isinstance(env, dict):
        raise ValueError(f"{str(path)!r}: its run config records env = {str(env)[:60]!r}, not a mapping of settings; "
                         "pass the .zip a training run saved (e.g. runs/NAME/final_model.zip)")
    return env


def run_frame_stack(path: Path) -> int:
    """``env.frame_stack`` of the checkpoint's training run (1 when there is no run config)."""
    value = _run_env(path).get("frame_stack", 1) or 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{str(path)!r}: its run config records env.frame_stack = {value!r}, not a count >= 1; "
                         "pass the .zip a training run saved (e.g. runs/NAME/final_model.zip)")
    return value


def run_mask_wall_moves(path: Path) -> bool:
    """``env.mask_wall_moves`` of the checkpoint's training run (False when there is no run config): the action
    mask a MaskablePPO model was trained with, so it plays with that mask in any env."""
    return bool(_run_env(path).get("mask_wall_moves", False))


def model_feature_version(path: str | Path) -> str:
    """The features version an SB3 checkpoint was trained on: recorded in the checkpoint itself (``feature_version``
    in its data, set by :func:`sb3_realm.training.run.build_model`), else in its run's ``config.yaml``, else
    ``LEGACY_FEATURE_VERSION`` (models from before versions were recorded). A ``ValueError`` for a checkpoint of
    another game or algorithm (:func:`~sb3_realm.models.algorithms.detect_algorithm`)."""
    path = Path(path)
    data = checkpoint_data(path)
    checkpoint_algorithm(path, data)  # a checkpoint of another game or algorithm is named as such first
    version = data.get("feature_version") or (run_config(path) or {}).get("feature_version")
    return str(version) if version else LEGACY_FEATURE_VERSION


def feature_version_mismatch(path: str | Path, game: str | None = None) -> str | None:
    """None when the checkpoint was trained on the current features of ``game`` (None: the game its run records),
    else a sentence saying what differs and to retrain."""
    found = model_feature_version(path)
    spec = games.get(game) if game is not None else run_game(path)
    features = spec.submission.features
    if found == features.FEATURE_VERSION:
        return None
    return (f"{str(path)!r} was trained on features version {found}, and this sb3_realm computes version "
            f"{features.FEATURE_VERSION} ({spec.submission.feature_version_note}); "
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
