"""``sb3-realm build-submission``: a trained SB3 checkpoint -> an upload folder for the competition platform.

The layout (:mod:`.layouts`, read once per build: the model's game's first unless ``--layout`` names another) decides
what is the platform's; everything else is built here the same way for all of them. The algorithm folder holds the
layout's templates (agent, feature processing, model, config, training workflow; their imports of the template
package renamed after the folder), the model's game's features module (the Realm's
:mod:`sb3_realm.games.realm.features`) and :mod:`sb3_realm.models.nets` copied verbatim, ``model/spec.json`` and a
manifest (source model, training config, feature version, sha256 of every file). The weights go to
``model.ckpt-<id>.pkl`` in the layout's weights folder as a plain CPU ``state_dict``, with a copy in the algorithm
folder's ``ckpt/`` for the preload. With ``code_package`` the folder is a copy of the user's own official code package
with only the needed lines of its ``conf/`` edited (:mod:`.code_package`, by the layout); without one, the layout
writes the lines to merge beside the algorithm folder instead of a ``conf/`` that would replace the user's. The folder
is built aside and renamed into place, so a crash never leaves half of one; the original code package is only read.

Supported: PPO, MaskablePPO and RecurrentPPO (its actor LSTM) with the extractors whose class says ``exportable``
(``realm`` and ``fovea``: their network is the torch-only :mod:`sb3_realm.models.nets` module). Not supported (a
clear error): the frame-stacking extractors (``conv3d``, ``transformer``) and SB3's default ``CombinedExtractor``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import os
import platform
import re
import shutil
import tempfile
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import games
from ..agents.checkpoint import UntrustedCheckpointError, load_model
from ..agents.submission import package_differences, read_manifest
from ..atomic import (
    FolderInUse,
    check_writable_folder,
    hold_folder,
    not_a_file,
    own_leftovers,
    remove_made,
    sha256_file,
    temp_names,
    writing,
)
from ..models import nets
from ..models.algorithms import algorithm, detect_algorithm
from ..models.saved import check_checkpoint_file, feature_version_mismatch, run_config, run_game
from ..submission import COMMON
from ..version import __version__
from . import layouts
from .code_package import CodePackageError, copy_package, read_code_package

__all__ = [
    "WORKFLOWS",
    "ExportError",
    "ExportedPolicy",
    "build_submission",
    "check_submission",
    "next_steps",
    "read_model",
    "state_dict_bytes",
]

WORKFLOWS = ("keep", "finetune")


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
    game: str | None = None  # the game named by the build (None: the run config's)


def _pi_layers(policy) -> list[int]:
    sizes = []
    for layer in policy.mlp_extractor.policy_net:
        if isinstance(layer, torch.nn.Linear):
            sizes.append(int(layer.out_features))
        elif not isinstance(layer, policy.activation_fn):
            raise ExportError(f"the policy MLP has a {type(layer).__name__} layer; the exporter rebuilds Linear + "
                              f"{policy.activation_fn.__name__} layers only")
    return sizes


def read_model(model_path: str | os.PathLike, trust_pickle: bool | None = None,
               game: games.GameSpec | None = None) -> ExportedPolicy:
    """Load an SB3 checkpoint (nothing unpickled unless ``trust_pickle``: :mod:`sb3_realm.agents.checkpoint`) and
    translate it into the submission's model spec and state dict.

    Raises :class:`ExportError` for a missing or corrupt file and for an algorithm or extractor the exporter does
    not support.
    """
    path = Path(model_path)
    problem = not_a_file(model_path)
    if problem:
        raise ExportError(f"model file {str(model_path)!r} {problem}; pass the .zip a training run saved "
                          "(e.g. runs/ppo/best_model.zip or runs/ppo/final_model.zip)")
    try:
        algo = detect_algorithm(path)
        mismatch = feature_version_mismatch(path, None if game is None else game.name)
        features = (game or run_game(path)).submission.features
    except ValueError as exc:
        raise ExportError(str(exc)) from exc
    if mismatch is not None:
        raise ExportError(f"{mismatch}; build-submission refuses it, because a submission must act on what the "
                          "platform shows as the model did in training")
    try:
        model = load_model(path, algo_cls=algorithm(algo).cls, device="cpu", trust_pickle=trust_pickle)
    except UntrustedCheckpointError as exc:
        raise ExportError(str(exc)) from None
    except Exception as exc:  # any failure to load means a corrupt or foreign file
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
    # in the submission model's own order (net, lstm, policy_net, action_net), so that its save_model of the same
    # weights writes the same bytes
    order = ("net.", "lstm.", "policy_net.", "action_net.")
    state = dict(sorted(state.items(), key=lambda item: order.index(item[0].split(".")[0] + ".")))
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
    return ExportedPolicy(algo, spec, state, int(model.num_timesteps), config, None if game is None else game.name)


def state_dict_bytes(state: dict[str, torch.Tensor]) -> bytes:
    """``torch.save`` of a state dict into memory: the bytes depend on the tensors only (a file's own name never
    lands inside the archive), as the package's ``save_model`` writes them."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def _rename_imports(path: Path, package: str, algo_dir: str) -> None:
    """The absolute imports of ``package`` in the file ``path`` renamed to the algorithm folder ``algo_dir``."""
    if package == algo_dir:
        return
    pattern = re.compile(rf"^(\s*)(from|import)(\s+){re.escape(package)}\.", re.MULTILINE)
    text = path.read_text(encoding="utf-8")
    path.write_text(pattern.sub(rf"\1\2\3{algo_dir}.", text), encoding="utf-8")


def _copy_template(layout: layouts.Layout, algo_root: Path, algo_dir: str) -> None:
    """The layout's templates into ``algo_root``, then the files all layouts share (``common`` of its
    ``layout.toml``, from ``submission/common/``, written for the package ``diy``), their absolute imports of the
    template package renamed."""
    shutil.copytree(layout.folder / layout.spec["template"], algo_root,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in algo_root.rglob("*.py"):
        _rename_imports(path, layout.spec["template_package"], algo_dir)
    for rel in layout.spec.get("common", []):
        target = algo_root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(COMMON / rel, target)
        _rename_imports(target, "diy", algo_dir)


def _game_of(exported: ExportedPolicy) -> games.GameSpec:
    """The game the exported model plays: ``game`` of the build, else its run config's (when it names none, a model
    trained before the package had two games: :data:`~sb3_realm.games.LEGACY_GAME`'s, with a one-line note)."""
    return games.recorded(exported.game or (exported.run_config or {}).get("game"), "the model's run config")


def _write_tree(root: Path, exported: ExportedPolicy, layout: layouts.Layout, algo_dir: str, ckpt_id: int,
                model_path: Path, workflow: str, package, search: dict | None = None) -> dict:
    kept: dict[str, bytes] = {}
    if package is not None:
        copy_package(package, root)  # never through a link out of the package (checked when it was read)
        for rel in layout.spec.get("keep_user_files", []):  # the user's own settings in the folder we replace
            if (root / algo_dir / rel).is_file():
                kept[rel] = (root / algo_dir / rel).read_bytes()
        remove_made(root / algo_dir, root)  # the user's folder of that name, in the copy: ours replaces it
    algo_root = root / algo_dir
    _copy_template(layout, algo_root, algo_dir)
    for rel, data in kept.items():
        (algo_root / rel).parent.mkdir(parents=True, exist_ok=True)
        (algo_root / rel).write_bytes(data)
    features = _game_of(exported).submission.features
    features_file = algo_root / layout.spec.get("features_file", "feature/features.py")
    source = Path(str(features.__file__))
    shutil.copyfile(source, features_file)
    for name in getattr(features, "COMPANION_FILES", ()):  # the modules it imports, beside it
        shutil.copyfile(source.parent / name, features_file.parent / name)
    search_module = _game_of(exported).submission.search
    if search is not None and search_module is not None:  # the search the Agent runs around the network's action
        shutil.copyfile(str(search_module.__file__), features_file.parent / Path(str(search_module.__file__)).name)
    shutil.copyfile(nets.__file__, algo_root / layout.spec.get("nets_file", "model/nets.py"))
    spec_path = algo_root / layout.spec.get("spec_file", "model/spec.json")
    spec = {**exported.spec, "ckpt_id": ckpt_id, "platform_training": workflow,
            **({"search": search} if search is not None else {})}
    with writing(spec_path):
        spec_path.write_text(json.dumps(spec, indent=2) + "\n", encoding="utf-8")
    weights = layout.weights_folder(root, algo_root) / f"model.ckpt-{ckpt_id}.pkl"
    weights.parent.mkdir(parents=True, exist_ok=True)
    with writing(weights):
        weights.write_bytes(state_dict_bytes(exported.state_dict))
    preload = algo_root / "ckpt" / weights.name  # the preload's copy: inside the algorithm folder, so that it
    if preload != weights:  # travels in every saved model (copy_dir) and an evaluation's preload finds it there
        preload.parent.mkdir(exist_ok=True)
        with writing(preload):
            shutil.copyfile(weights, preload)
    sample_dim = sample_size(exported.spec)
    edits = layout.conf_edits(root, algo_dir, ckpt_id, sample_dim, package)
    files = {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}
    manifest = {
        "format": "sb3-realm submission", "layout": layout.name, "algo_dir": algo_dir,
        "game": _game_of(exported).name,
        # the game's import path: a process where no game of that name is registered reads the package back by it
        "game_path": games.path_of(_game_of(exported).name),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "sb3_realm_version": __version__, "python": platform.python_version(), "torch": torch.__version__,
        "source_model": {"file": model_path.name, "sha256": sha256_file(model_path),
                         "algorithm": exported.algo, "num_timesteps": exported.num_timesteps},
        "training_config": _portable_config(exported.run_config), "feature_version": features.FEATURE_VERSION,
        "spec": spec,
        "weights": {"file": weights.relative_to(root).as_posix(), "sha256": files[weights.relative_to(root).as_posix()],
                    "ckpt_id": ckpt_id, "preload_file": preload.relative_to(root).as_posix()},
        "platform_training": workflow, "sample_dim": sample_dim,
        "code_package": None if package is None else {"folder": package.root.resolve().name,
                                                      "kaiwu": package.kaiwu, "edits": edits},
        "files": files,
    }
    with writing(algo_root / "manifest.json"):
        (algo_root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _portable_config(config: dict | None) -> dict | None:
    """The run config for the manifest, without this machine's paths: ``out`` (the run's folder) as its name only
    when it is absolute."""
    if not isinstance(config, dict) or not isinstance(config.get("out"), str) or not os.path.isabs(config["out"]):
        return config
    return {**config, "out": Path(config["out"]).name}


def sample_size(spec: dict) -> int:
    """The length of one sample as the package's ``SampleData2NumpyData`` flattens it (its ``SAMPLE_DIM``)."""
    maps = 1
    for side in spec["maps_shape"]:
        maps *= int(side)
    return maps + int(spec["vector_size"]) + int(spec["n_actions"]) + 4


#: never part of an upload: editors' folders and Python's bytecode caches
ZIP_LEFT_OUT_DIRS = (".idea", ".vscode", "__pycache__")


def _zip_folder(folder: Path, target: Path, names: list[str], keep: set[str] | frozenset = frozenset()) -> list[str]:
    """The top-level entries ``names`` of ``folder`` into the archive ``target`` (written aside, then renamed; the
    archive and its files readable by all, 0644), without editors' folders, bytecode caches and documents (PDFs),
    nor files under a ``ckpt/`` folder other than those in ``keep`` (other models' weights, ``kaiwu.json`` and
    ``id_list``); returns what was left out."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    left_out: list[str] = []
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for p in sorted(folder.rglob("*")):
                rel = p.relative_to(folder)
                if not p.is_file() or p.is_symlink() or rel.parts[0] not in names:
                    continue
                other_model = "ckpt" in rel.parts[:-1] and rel.as_posix() not in keep
                if set(rel.parts) & set(ZIP_LEFT_OUT_DIRS) or p.suffix in (".pyc", ".pdf", ".PDF") or other_model:
                    left_out.append(rel.as_posix())
                    continue
                info = zipfile.ZipInfo.from_file(p, rel.as_posix())
                info.external_attr = (0o100644 << 16) | (info.external_attr & 0xFFFF)  # rw-r--r--, a file
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, p.read_bytes())
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return left_out


def _check_replaceable(out: Path, model_path: Path, code_package: Path | None) -> None:
    """``--force`` replaces only a package this command wrote: never a folder holding the source model, the code
    package or any file that is not in the package's manifest (Python's bytecode caches aside)."""
    for path, what in ((model_path, f"the model being packaged ({str(model_path)!r})"),
                       (code_package, f"the code package ({str(code_package)!r})")):
        if path is not None and path.exists() and path.resolve().is_relative_to(out.resolve()):
            raise ExportError(f"--out {str(out)!r} holds {what}; --force would delete it: choose another --out, e.g. "
                              "runs/NAME/upload")
    if not out.is_dir():
        raise ExportError(f"--out {str(out)!r} exists and is not a folder; --force replaces only a package folder "
                          "that build-submission wrote: choose another --out")
    try:
        manifest = read_manifest(out)
    except (OSError, ValueError):  # ValueError: no manifest, or one that does not parse
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != "sb3-realm submission":
        raise ExportError(f"--force would replace {str(out)!r}, which is not a package built by sb3-realm "
                          "build-submission (no manifest): it is left alone; choose another --out")
    differences = package_differences(out, manifest)
    extra = differences["extra"] + differences["links"]
    if extra:
        raise ExportError(f"--force would replace {str(out)!r}, which holds files build-submission did not write "
                          f"({', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''}): move them away or choose "
                          "another --out")


def _check_zip_replaceable(zip_path: Path, force: bool) -> None:
    """``--zip`` replaces ``<out>.zip`` only with ``--force`` and only when it is a package archive."""
    if not force:
        raise ExportError(f"{str(zip_path)!r} already exists; pass --force to replace it (with --zip)")
    ours = False
    if zip_path.is_file() and not zip_path.is_symlink():  # never opened through a link, nor a pipe that would block
        try:
            with zipfile.ZipFile(zip_path) as archive:
                ours = any(name.endswith("/manifest.json") and name.count("/") == 1 for name in archive.namelist())
        except (OSError, zipfile.BadZipFile):
            ours = False
    if not ours:
        raise ExportError(f"--zip would replace {str(zip_path)!r}, which is not a package archive written by "
                          "build-submission: it is left alone; move it away or choose another --out")


def _check_model_file(model_path: str | os.PathLike) -> None:
    """An :class:`ExportError` naming what is wrong with the model file itself (:func:`check_checkpoint_file`, each
    member's checksum included), before the code package is read. Its contents as a checkpoint are read later
    (:func:`read_model`)."""
    try:
        check_checkpoint_file(model_path, members=True)
    except ValueError as exc:
        raise ExportError(f"model file {exc}") from None


def _model_game(model_path: str | os.PathLike) -> games.GameSpec:
    """The game a model file records (:data:`~sb3_realm.games.LEGACY_GAME`'s for a file that records none, or is no
    model: reading it says what is wrong)."""
    try:
        return run_game(Path(model_path))
    except (ValueError, OSError):
        return games.GAMES[games.LEGACY_GAME]


def _records_game(model_path: str | os.PathLike) -> bool:
    """Whether the model's run config names its game."""
    try:
        return bool((run_config(Path(model_path)) or {}).get("game"))
    except (ValueError, OSError):
        return False


#: the largest id a conf can hold: TOML integers are 64-bit signed
CKPT_ID_MAX = 2**63 - 1


def _ckpt_id(ckpt_id, num_timesteps: int) -> int:
    if ckpt_id is None:
        return max(1, min(int(num_timesteps), CKPT_ID_MAX))
    text = str(ckpt_id).strip()
    digits = text.isascii() and text.isdigit()  # not '²' or '٣', which str.isdigit() takes and the platform not
    if not digits or not 1 <= int(text) <= CKPT_ID_MAX:
        raise ExportError(f"--ckpt-id {ckpt_id!r} must be an integer >= 1 and at most {CKPT_ID_MAX} (the conf's "
                          "TOML integers are 64-bit), written with the digits 0-9: the platform reads the id with "
                          "int() and never saves a model of step 0; e.g. --ckpt-id 1000 (default: the model's "
                          "timesteps); nothing was built")
    return int(text)


def _target(model_path, game: str | None, layout: str | None, algo_dir: str | None,
            code_package) -> tuple[games.GameSpec, layouts.Layout, str]:
    """The game, layout and algorithm folder of a build (the defaults filled in), or an :class:`ExportError` saying
    which of them cannot be."""
    recorded = _model_game(model_path)
    try:
        spec_game = recorded if game is None else games.get(game)
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if game is not None and recorded.name != spec_game.name and _records_game(model_path):
        raise ExportError(f"--game {game!r}: {str(model_path)!r} was trained on {recorded.title} (its run config); "
                          "leave out --game")
    game_spec = spec_game
    if not game_spec.submission.layouts:
        buildable = ", ".join(g.title for g in games.GAMES.values() if g.submission.layouts)
        raise ExportError(f"{str(model_path)!r} is a {game_spec.title} model, and build-submission cannot write a "
                          f"{game_spec.title} code package yet: it builds {buildable} models")
    if layout is None:
        layout = game_spec.submission.layouts[0]
    known = sorted({*layouts.names(), *(name for g in games.GAMES.values() for name in g.submission.layouts)})
    if layout not in known:
        raise ExportError(f"--layout {layout!r} is unknown; choose one of {known}")
    if layout not in game_spec.submission.layouts:
        raise ExportError(f"--layout {layout!r} is a layout of another game; a {game_spec.title} model goes into "
                          f"{', '.join(game_spec.submission.layouts)}: leave out --layout, or give one of them (or "
                          "--game if the "
                          "model is of another game than its run config says)")
    try:
        chosen = layouts.get(layout)  # a layout the game brings is made here, from its folder
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    if algo_dir is None:
        algo_dir = chosen.default_algo_dir
    if algo_dir not in chosen.algo_dirs:
        raise ExportError(f"--algo-dir {algo_dir!r}: the platform registers the algorithm folders "
                          f"{', '.join(chosen.algo_dirs)} only (its evaluation workflows exist for those); use "
                          f"{chosen.default_algo_dir}")
    if chosen.code_package_required and code_package is None:
        raise ExportError(f"--layout {layout} needs --code-package: {chosen.code_package_required}")
    return game_spec, chosen, algo_dir


def build_submission(model_path: str | os.PathLike, out: str | os.PathLike, *, layout: str | None = None,
                     algo_dir: str | None = None, ckpt_id: str | int | None = None,
                     code_package: str | os.PathLike | None = None, workflow: str = "keep", make_zip: bool = False,
                     force: bool = False, trust_pickle: bool | None = None, game: str | None = None,
                     search: int | None = None, then: Callable[[dict], object] | None = None) -> dict:
    """Build the upload folder ``out`` from an SB3 checkpoint; returns the manifest.

    :param layout: the platform layout, one of :func:`sb3_realm.export.layouts.names`; None: the first of the model's
        game's :attr:`~sb3_realm.games.GameSpec.submission.layouts`.
    :param algo_dir: the algorithm folder, one the layout's platform registers (its ``algo_dirs``); None: the
        layout's default.
    :param ckpt_id: the integer id in ``model.ckpt-<id>.pkl`` (the preload and eval id); default: the model's
        timestep count (at least 1).
    :param code_package: the user's official code package; ``out`` becomes a complete copy of it, ready to upload.
        Without it, ``out`` holds the algorithm folder, ``ckpt/`` and the lines to merge into the user's conf.
    :param workflow: ``keep`` (a platform training task keeps the exported weights) or ``finetune`` (it takes
        REINFORCE steps on them; not for recurrent policies).
    :param make_zip: also write ``<out>.zip`` holding what the layout uploads (its
        :meth:`~sb3_realm.export.layouts.Layout.zip_names`: ``ckpt/``, ``conf/`` and the algorithm folder, or the
        whole code package); needs ``code_package``.
    :param force: replace an existing ``out`` that build-submission wrote.
    :param trust_pickle: let the checkpoint's pickles run (only for a file you made yourself; default: its entries
        are rebuilt from plain data).
    :param game: the game the model plays (``realm``, ``gorge``); None: the one its run config records. Needed for
        a model saved outside a training run of the package (no ``config.yaml`` beside it).
    :param search: the Agent runs the game's search around the network's action in ``exploit()``, each call playing
        at most this many world steps of rollouts (recorded in the package's ``model/spec.json``); None: the network
        alone. Only for a game with a search (:attr:`~sb3_realm.games.Submission.search`).
    :param then: called with the manifest once the folder is built, while ``out`` is still held (the command's
        ``--check`` runs there, so that no other build replaces the folder while it is checked).

    ``out`` must not be a symbolic link: the folder is built aside and renamed into place, which would replace the
    link and leave the folder it names as it was; give that folder itself.
    """
    if not str(out).strip():
        raise ExportError(f"--out {str(out)!r} names no folder (it would write into the current one); give one, e.g. "
                          "runs/NAME/upload")
    out = Path(out)
    _check_not_linked(out)
    _check_model_file(model_path)  # a damaged model is named as such, before the code package is read
    game_spec, chosen, algo_dir = _target(model_path, game, layout, algo_dir, code_package)  # passed on from here
    if workflow not in WORKFLOWS:
        raise ExportError(f"--workflow {workflow!r} is unknown; choose keep (the platform's training keeps the "
                          "exported weights) or finetune")
    if ckpt_id is not None:
        _ckpt_id(ckpt_id, 1)
    settings = _search_settings(search, game_spec)
    if make_zip and code_package is None:
        raise ExportError("--zip needs --code-package: the zip holds ckpt/, conf/ and the algorithm folder, and conf/ "
                          "must be your code package's own (with the needed lines edited), never one written from "
                          "nothing")
    try:
        check_writable_folder(out.parent, f"the folder of --out {str(out)!r},")
    except ValueError as exc:
        raise ExportError(str(exc)) from None
    package_path = None if code_package is None else Path(code_package)
    package = None
    if package_path is not None:
        try:
            package = read_code_package(package_path, chosen.spec, chosen.name)
        except CodePackageError as exc:
            raise ExportError(str(exc)) from None
        if out.resolve().is_relative_to(package_path.resolve()):
            raise ExportError(f"--out {str(out)!r} is inside --code-package {str(package_path)!r}; the code package "
                              "is never changed: choose an --out outside it")
    try:
        with hold_folder(out, "--out"):  # one command at a time on an upload folder (its lock is beside it)
            manifest = _build_held(out, model_path, chosen, algo_dir, ckpt_id, package, package_path, workflow,
                                   make_zip, force, trust_pickle, None if game is None else game_spec, settings)
            if then is not None:
                then(manifest)
            return manifest
    except FolderInUse as exc:
        raise ExportError(str(exc)) from None


#: the look-ahead of the search a package built with ``--search`` runs (steps each rollout plays)
SEARCH_HORIZON = 80


def _search_settings(search: object, game_spec) -> dict | None:
    """The search settings a package records for ``--search STEPS`` (None: no search), or an error naming the value
    and the fix."""
    if search is None:
        return None
    if game_spec.submission.search is None:
        raise ExportError(f"--search {search}: {game_spec.title} has no search to run around the network; build "
                          "without --search")
    if isinstance(search, bool) or not isinstance(search, int) or search < 1:
        raise ExportError(f"--search {search!r} must be a whole number of rollout steps >= 1 (the work of one "
                          "exploit() call, e.g. --search 400); leave it out for the network alone")
    return {"horizon": SEARCH_HORIZON, "max_rollout_steps": int(search)}


def _check_not_linked(out: Path) -> None:
    """Refuse an ``--out`` that is a symbolic link (or a junction): the build would replace the link, not the folder
    it names, and leave that folder stale. Nothing is lost: the user gives the folder itself."""
    named = Path(os.path.realpath(out.parent)) / out.name
    if out.is_symlink() or (out.exists() and Path(os.path.realpath(out)) != named):
        target = os.path.realpath(out)
        raise ExportError(f"--out {str(out)!r} is a link to {target!r}; build-submission builds the folder aside and "
                          "renames it into place, which would replace the link and leave the folder it names as it "
                          f"was: give that folder itself, --out {target!r} (or remove the link); nothing was built")


def _set_aside(out: Path) -> re.Pattern:
    """The names of the old packages a build of ``out`` sets aside (``.<name>.old-<pid>``), exactly."""
    return re.compile(re.escape(f".{out.name}.old-") + "[0-9]+")


def _leftovers(out: Path) -> tuple[list[Path], list[Path]]:
    """The folders an interrupted build of ``out`` left beside it: old packages set aside, unfinished new ones (and
    the temporary file of an unfinished ``<out>.zip``). Only its own, matched exactly: another output's leftovers
    (``.<out>.v2.*.tmp``, a name with glob characters) are never among them."""
    old = [p for p in own_leftovers(out.parent, _set_aside(out)) if p.is_dir()]
    unfinished = [p for p in own_leftovers(out.parent, temp_names(out.name)) if p.is_dir()]
    unfinished += [p for p in own_leftovers(out.parent, temp_names(out.name + ".zip")) if p.is_file()]
    return old, unfinished


def recover_interrupted_build(out: str | os.PathLike) -> str | None:
    """After a build killed while it swapped ``out`` (no directory swap is atomic everywhere): put the old package
    back when nothing is at ``out``, or finish the swap (drop the old one) when the new one is in place; unfinished
    new folders are removed. Returns what was done, or None when nothing was left."""
    out = Path(out)
    old, unfinished = _leftovers(out)
    done = []
    if old and not out.exists():
        os.replace(old[-1], out)
        done.append(f"restored the package that an interrupted build-submission had set aside ({old[-1].name})")
        old = old[:-1]
    for path in old:
        remove_made(path, out.parent)
        done.append(f"removed the old package an interrupted build-submission left ({path.name})")
    for path in unfinished:
        remove_made(path, out.parent)
        done.append(f"removed an unfinished build ({path.name})")
    return "; ".join(done) or None


def _build_held(out, model_path, layout: layouts.Layout, algo_dir, ckpt_id, package, package_path, workflow,
                make_zip, force, trust_pickle, game=None, search: dict | None = None) -> dict:
    recovered = recover_interrupted_build(out)
    if recovered:
        warnings.warn(f"--out {str(out)!r}: {recovered}", RecoveredBuildWarning, stacklevel=3)
    if out.exists() and not force:
        raise ExportError(f"output folder {str(out)!r} already exists; pass --force to replace it")
    if out.exists():
        _check_replaceable(out, Path(model_path), package_path)
    zip_path = out.with_name(out.name + ".zip")
    if make_zip and zip_path.exists():
        _check_zip_replaceable(zip_path, force)
    exported = read_model(model_path, trust_pickle, game)
    if workflow == "finetune" and exported.spec["lstm"]:
        raise ExportError(f"--workflow finetune: {str(model_path)!r} is a recurrent policy, and the platform's learner "
                          "draws steps from its replay buffer out of order, which an LSTM cannot learn from; build it "
                          "with --workflow keep")
    ckpt = _ckpt_id(ckpt_id, exported.num_timesteps)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # a folder's ordinary mode (mkdtemp makes it 0700)
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    try:
        try:
            manifest = _write_tree(tmp, exported, layout, algo_dir, ckpt, Path(model_path), workflow, package,
                                   search)
        except CodePackageError as exc:
            named = str(exc).startswith("--code-package")
            raise ExportError(str(exc) if named else f"--code-package {str(package_path)!r}: {exc}") from None
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:  # whatever ends the swap (an error, Ctrl-C, SIGTERM), a package is at ``out``: the new or the old one
        if not out.exists() and old.exists():
            os.replace(old, out)
        for made in (tmp, old):  # what this build made beside out, and nothing else
            with contextlib.suppress(OSError):
                remove_made(made, out.parent)
    if make_zip:  # what the layout uploads: some of the folder's top-level entries, or all of them
        names = layout.zip_names(out, algo_dir)
        weights = manifest["weights"]
        keep = {weights[key] + end for key in ("file", "preload_file") if weights.get(key) for end in ("", ".sha256")}
        left_out = _zip_folder(out, zip_path, names, keep)
        manifest = {**manifest, "zip": {"file": zip_path.as_posix(), "left_out": left_out}}
    return manifest


class RecoveredBuildWarning(UserWarning):
    """build-submission found what an interrupted build left and restored or finished it."""


def next_steps(manifest: dict, out: str | os.PathLike) -> str:
    """What to do with the folder ``out`` that build-submission wrote, in the platform's own terms (its layout's
    :meth:`~sb3_realm.export.layouts.Layout.next_steps`)."""
    return layouts.get(manifest["layout"]).next_steps(manifest, Path(out))


def check_submission(folder: str | os.PathLike, model_path: str | os.PathLike, *, map_path: str | None = None,
                     games: int | None = None, seed: int = 0, treasures: int = 9, max_step: int | None = None,
                     min_states: int = 10_000, task_episodes: int = 3, task_max_step: int = 300,
                     progress: bool = False, trust_pickle: bool | None = None, maps_dir: str | None = None) -> dict:
    """Prove that the upload ``folder`` survives a platform training task with the exported weights and that the
    model it saves acts exactly like the SB3 model ``model_path`` (:mod:`.check`), as its layout runs the proof
    (:meth:`~sb3_realm.export.layouts.Layout.check`: the stand-in it runs on, the options it reads, its defaults for
    ``games`` and ``max_step``; ``map_path`` plays the games on one map, ``maps_dir`` gives a task the competition's
    open maps, for the layouts that use them).

    :return: a report; ``ok`` is True when the task passed, kept the weights, and every action and every
        score is identical.
    """
    return layouts.get(read_manifest(folder)["layout"]).check(
        folder, model_path, map_path=map_path, maps_dir=maps_dir, games=games, seed=seed, treasures=treasures,
        max_step=max_step, min_states=min_states, task_episodes=task_episodes, task_max_step=task_max_step,
        progress=progress, trust_pickle=trust_pickle)
