"""``sb3-realm build-submission``: a trained SB3 checkpoint -> the competition's 2024 agent package.

The package holds the templates of :mod:`sb3_realm.submission` (agent, feature processing, model, config, a minimal
training workflow), the package's :mod:`sb3_realm.features` and :mod:`sb3_realm.models.nets` copied verbatim, the
policy's
weights as a plain CPU ``state_dict`` (``ckpt/model.ckpt-<id>.pkl``), ``conf/configure_app.toml`` and a manifest
(source model, training config, feature version, sha256 of every file). It is built in a temporary folder and
renamed into place, so a crash never leaves a half-written package.

Supported: PPO, MaskablePPO and RecurrentPPO (its actor LSTM) with the extractors whose class says ``exportable``
(``realm`` and ``fovea``: their network is the torch-only :mod:`sb3_realm.models.nets` module). Not supported (a
clear error): the frame-stacking extractors (``conv3d``, ``transformer``) and SB3's default ``CombinedExtractor``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import features
from ..agents.submission import package_differences, read_manifest
from ..atomic import check_writable_folder, sha256_file
from ..models import nets
from ..models.algorithms import algorithm, detect_algorithm
from ..models.saved import feature_version_mismatch, run_config
from ..submission import TEMPLATES
from ..version import __version__

__all__ = ["LAYOUTS", "ExportError", "ExportedPolicy", "build_submission", "read_model"]

LAYOUTS = tuple(TEMPLATES)
_ALGO_DIR_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class ExportError(ValueError):
    """The model cannot be exported as asked (the message says why and what to do)."""


@dataclass
class ExportedPolicy:
    """What the exporter read from a checkpoint: the algorithm, the model spec and the remapped weights."""

    algo: str
    spec: dict
    state_dict: dict[str, torch.Tensor]
    num_timesteps: int
    run_config: dict | None


def _pi_layers(policy) -> list[int]:
    sizes = []
    for layer in policy.mlp_extractor.policy_net:
        if isinstance(layer, torch.nn.Linear):
            sizes.append(int(layer.out_features))
        elif not isinstance(layer, policy.activation_fn):
            raise ExportError(f"the policy MLP has a {type(layer).__name__} layer; the exporter rebuilds Linear + "
                              f"{policy.activation_fn.__name__} layers only")
    return sizes


def read_model(model_path: str | os.PathLike) -> ExportedPolicy:
    """Load an SB3 checkpoint and translate it into the submission's model spec and state dict.

    Raises :class:`ExportError` for a missing or corrupt file and for an algorithm or extractor the exporter does
    not support.
    """
    path = Path(model_path)
    if not path.is_file():
        raise ExportError(f"model file {str(path)!r} does not exist; pass the .zip a training run saved "
                          "(e.g. runs/ppo/best_model.zip or runs/ppo/final_model.zip)")
    try:
        algo = detect_algorithm(path)
        mismatch = feature_version_mismatch(path)
    except ValueError as exc:
        raise ExportError(str(exc)) from exc
    if mismatch is not None:
        raise ExportError(f"{mismatch}; build-submission refuses it, because a submission must act on what the "
                          "platform shows as the model did in training")
    try:
        model = algorithm(algo).cls.load(path, device="cpu")
    except Exception as exc:  # noqa: BLE001 - any failure to load means a corrupt or foreign file
        raise ExportError(f"cannot load {str(path)!r} as a {algo} checkpoint ({type(exc).__name__}: {exc}); is "
                          "the file complete and saved by this version of sb3-realm / SB3?") from exc
    policy = model.policy
    extractor = policy.pi_features_extractor
    if not getattr(type(extractor), "exportable", False):
        raise ExportError(f"{str(path)!r} uses the features extractor {type(extractor).__name__}; build-submission "
                          f"exports {sorted(nets.NETS)} (algo.extractor in the config). The frame-stacking "
                          "extractors (conv3d, transformer) and SB3's default CombinedExtractor are not supported")
    maps_shape = tuple(policy.observation_space["maps"].shape)
    if maps_shape != features.MAP_SHAPE or policy.observation_space["vector"].shape != (features.VECTOR_SIZE,):
        raise ExportError(f"{str(path)!r} was trained on observations of shape maps {maps_shape}; the submission "
                          f"feeds single frames {features.MAP_SHAPE} (train with env.frame_stack: 1)")
    if getattr(model.action_space, "n", None) != features.N_ACTIONS:
        raise ExportError(f"{str(path)!r} has the action space {model.action_space}; expected Discrete(16)")
    config = run_config(path)
    env_cfg = (config or {}).get("env") or {}
    prefix = "pi_features_extractor.net." if not policy.share_features_extractor else "features_extractor.net."
    mapping = {prefix: "net.", "mlp_extractor.policy_net.": "policy_net.", "action_net.": "action_net."}
    lstm = None
    if algorithm(algo).recurrent:
        lstm_actor = policy.lstm_actor
        lstm = {"hidden_size": int(lstm_actor.hidden_size), "num_layers": int(lstm_actor.num_layers)}
        mapping["lstm_actor."] = "lstm."
    state = {}
    for key, value in policy.state_dict().items():
        for src, dst in mapping.items():
            if key.startswith(src):
                state[dst + key[len(src):]] = value.detach().cpu().clone()
    lr = model.learning_rate if isinstance(model.learning_rate, (int, float)) else 3e-4
    spec = {
        "algo": algo, "net": extractor.net_name, "net_kwargs": extractor.net_kwargs,
        "maps_shape": list(maps_shape), "vector_size": features.VECTOR_SIZE, "n_actions": features.N_ACTIONS,
        "normalize_images": bool(policy.normalize_images), "masked": algorithm(algo).maskable,
        "activation": nets.activation_name(policy.activation_fn), "pi_layers": _pi_layers(policy), "lstm": lstm,
        "mask_wall_moves": bool(env_cfg.get("mask_wall_moves", False)), "gamma": float(model.gamma),
        "learning_rate": float(lr), "feature_version": features.FEATURE_VERSION,
    }
    if int(env_cfg.get("frame_stack", 1) or 1) != 1:
        raise ExportError(f"the run of {str(path)!r} stacks {env_cfg['frame_stack']} frames; the exporter supports "
                          "single-frame policies (env.frame_stack: 1)")
    return ExportedPolicy(algo, spec, state, int(model.num_timesteps), config)


def _configure_app(algo_dir: str, ckpt_id: str) -> str:
    return ("# written by sb3-realm build-submission\n[app]\n"
            f'algo = "{algo_dir}"\neval_model_dir = "ckpt"\neval_model_id = "{ckpt_id}"\n')


def _write_tree(root: Path, exported: ExportedPolicy, layout: str, algo_dir: str, ckpt_id: str,
                model_path: Path) -> dict:
    algo_root = root / algo_dir
    shutil.copytree(TEMPLATES[layout] / "algo", algo_root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copyfile(features.__file__, algo_root / "feature" / "features.py")
    shutil.copyfile(nets.__file__, algo_root / "model" / "nets.py")
    spec = {**exported.spec, "ckpt_id": ckpt_id}
    (algo_root / "model" / "spec.json").write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    weights = root / "ckpt" / f"model.ckpt-{ckpt_id}.pkl"
    weights.parent.mkdir()
    torch.save(exported.state_dict, weights)
    (root / "conf").mkdir()
    (root / "conf" / "configure_app.toml").write_text(_configure_app(algo_dir, ckpt_id), encoding="utf-8")
    files = {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}
    manifest = {
        "format": "sb3-realm submission", "layout": layout, "algo_dir": algo_dir,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "sb3_realm_version": __version__, "python": platform.python_version(), "torch": torch.__version__,
        "source_model": {"path": model_path.resolve().as_posix(), "sha256": sha256_file(model_path),
                         "algorithm": exported.algo, "num_timesteps": exported.num_timesteps},
        "training_config": exported.run_config, "feature_version": features.FEATURE_VERSION, "spec": spec,
        "weights": {"file": weights.relative_to(root).as_posix(), "sha256": files[weights.relative_to(root).as_posix()],
                    "ckpt_id": ckpt_id},
        "files": files,
    }
    (algo_root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _zip_folder(folder: Path, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for p in sorted(folder.rglob("*")):
                if p.is_file():
                    archive.write(p, p.relative_to(folder).as_posix())
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _check_replaceable(out: Path, model_path: Path) -> None:
    """``--force`` replaces only a package this command wrote: never a folder holding the source model or any file
    that is not in the package's manifest (Python's bytecode caches aside)."""
    if model_path.exists() and model_path.resolve().is_relative_to(out.resolve()):
        raise ExportError(f"--out {str(out)!r} holds the model being packaged ({str(model_path)!r}); --force would "
                          "delete it: choose another --out, e.g. runs/NAME/submission")
    if not out.is_dir():
        raise ExportError(f"--out {str(out)!r} exists and is not a folder; --force replaces only a package folder "
                          "that build-submission wrote: choose another --out")
    try:
        manifest = read_manifest(out)[1]
    except (OSError, ValueError):  # ValueError: no conf or manifest, or one that does not parse
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != "sb3-realm submission":
        raise ExportError(f"--force would replace {str(out)!r}, which is not a package built by sb3-realm "
                          "build-submission (no manifest): it is left alone; choose another --out")
    extra = package_differences(out, manifest)["extra"]
    if extra:
        raise ExportError(f"--force would replace {str(out)!r}, which holds files build-submission did not write "
                          f"({', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''}): move them away or choose "
                          "another --out")


def _check_zip_replaceable(zip_path: Path, force: bool) -> None:
    """``--zip`` replaces ``<out>.zip`` only with ``--force`` and only when it is a package archive."""
    if not force:
        raise ExportError(f"{str(zip_path)!r} already exists; pass --force to replace it (with --zip)")
    try:
        with zipfile.ZipFile(zip_path) as archive:
            ours = "conf/configure_app.toml" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        ours = False
    if not ours:
        raise ExportError(f"--zip would replace {str(zip_path)!r}, which is not a package archive written by "
                          "build-submission: it is left alone; move it away or choose another --out")


def build_submission(model_path: str | os.PathLike, out: str | os.PathLike, *, layout: str = "kaiwu2024",
                     algo_dir: str = "diy", ckpt_id: str | int | None = None, make_zip: bool = False,
                     force: bool = False) -> dict:
    """Build the submission folder ``out`` from an SB3 checkpoint; returns the manifest.

    :param layout: the platform layout (``kaiwu2024``).
    :param algo_dir: name of the code folder (the platform's ``algo``), a Python identifier.
    :param ckpt_id: id in ``model.ckpt-<id>.pkl``; default: the model's timestep count.
    :param make_zip: also write ``<out>.zip`` (the three folders at its root).
    :param force: replace an existing ``out``.
    """
    out = Path(out)
    if layout not in TEMPLATES:
        raise ExportError(f"--layout {layout!r} is unknown; choose one of {list(LAYOUTS)}")
    if not algo_dir or not set(algo_dir) <= _ALGO_DIR_CHARS or algo_dir[0].isdigit():
        raise ExportError(f"--algo-dir {algo_dir!r} must be a Python identifier (letters, digits, _), e.g. diy")
    try:
        check_writable_folder(out.parent, f"the folder of --out {str(out)!r},")
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if out.exists() and not force:
        raise ExportError(f"output folder {str(out)!r} already exists; pass --force to replace it")
    if out.exists():
        _check_replaceable(out, Path(model_path))
    zip_path = out.with_name(out.name + ".zip")
    if make_zip and zip_path.exists():
        _check_zip_replaceable(zip_path, force)
    exported = read_model(model_path)
    ckpt = str(exported.num_timesteps if ckpt_id is None else ckpt_id)
    if not ckpt or not set(ckpt) <= _ALGO_DIR_CHARS | set("-."):
        raise ExportError(f"--ckpt-id {ckpt!r} must be letters, digits, '_', '-' or '.' (it is part of a file name)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    old = None
    try:
        manifest = _write_tree(tmp, exported, layout, algo_dir, ckpt, Path(model_path))
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    if make_zip:
        _zip_folder(out, out.with_name(out.name + ".zip"))
    return manifest
