"""Training runs: envs, model, callbacks, checkpoints and resume, from a
:class:`~sb3_realm.training.config.TrainConfig`."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import gymnasium as gym
import torch
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecFrameStack, VecNormalize

from .. import games
from ..agents.checkpoint import load_model
from ..arguments import not_utf8
from ..atomic import atomic_write, check_writable_folder, hold_folder, remove_made
from ..evaluation.training_map import env_maps, map_digest, recorded_digests, recorded_env, training_maps
from ..models.algorithms import algorithm, model_kwargs
from ..models.extractors import policy_kwargs_of
from ..models.saved import CONFIG_ENTRY, warn_feature_version
from ..processes import start_method
from .callbacks import (
    CompetitionEvalCallback,
    ConfigLogCallback,
    CurriculumCallback,
    MetricsCallback,
    StopAtTimesteps,
    read_eval_history,
)
from .checkpoints import (
    CHECKPOINT_NAME,
    CheckpointError,
    RunCheckpointCallback,
    keep_final_aside,
    latest_checkpoint,
    list_checkpoints,
    load_vecnormalize,
)
from .config import EnvConfig, TrainConfig, config_to_dict, load_config, save_config
from .finetune import (
    StartScalarsCallback,
    anchored_class,
    check_init_model,
    load_initial_weights,
    reference_policy,
    warm_start_value,
)

__all__ = [
    "FIXED_ON_RESUME",
    "INIT_MODEL",
    "MADE_BY_A_RUN",
    "RUN_FILES",
    "build_model",
    "check_run_parts",
    "make_vec_env",
    "map_digests",
    "map_history",
    "policy_kwargs",
    "policy_name",
    "record_config",
    "removed_if_unfinished",
    "resume_changes",
    "resume_config",
    "run_folder",
    "start_new_run",
    "train",
]


def _make_env(env_kwargs: dict, game: str | None = None) -> Monitor:
    return Monitor(games.get(game).env.make(**env_kwargs))


def make_vec_env(env: EnvConfig, seed: int, n_envs: int | None = None, game: str | None = None) -> VecEnv:
    """The training VecEnv of ``game`` (required; Dummy or Subproc, picklable factories),
    frame-stacked and reward-normalised as configured."""
    n = n_envs or env.n_envs
    spec = games.get(game)  # each env its own arguments, as each worker process gets its own
    fns: list[Callable[[], gym.Env]] = [functools.partial(_make_env, env.env_kwargs(game=spec), game) for _ in range(n)]
    venv: VecEnv = SubprocVecEnv(fns, start_method=start_method()) if env.vec_env == "subproc" else DummyVecEnv(fns)
    venv.seed(seed)
    if env.frame_stack > 1:
        venv = VecFrameStack(venv, n_stack=env.frame_stack)
    if env.normalize_reward:
        venv = VecNormalize(venv, norm_obs=False, norm_reward=True)
    return venv


def policy_name(config: TrainConfig) -> str:
    return algorithm(config.algo.name).policy


def policy_kwargs(config: TrainConfig) -> dict:
    """SB3 ``policy_kwargs`` built from data: extractor and activation by name."""
    return policy_kwargs_of(config_to_dict(config)["algo"], config.env.frame_stack)


def _algo_class(config: TrainConfig):
    """The configured algorithm's class; with ``finetune.anchor_coef``, its anchored subclass (which saves plain
    checkpoints of the same algorithm)."""
    return anchored_class(config.algo.name) if config.finetune.anchor_coef else algorithm(config.algo.name).cls


def build_model(config: TrainConfig, venv: VecEnv, tensorboard_log: str | None = None):
    """A new model of the configured algorithm, policy, network and hyperparameters on ``venv``."""
    hyperparams = model_kwargs(config.algo.hyperparams)
    model = _algo_class(config)(policy_name(config), venv, policy_kwargs=policy_kwargs(config), seed=config.seed,
                                device=config.device, tensorboard_log=tensorboard_log, verbose=0, **hyperparams)
    # saved with the model's data in every .zip it writes
    model.feature_version = config.spec.submission.features.FEATURE_VERSION
    record_config(model, config)
    return model


def record_config(model, config: TrainConfig) -> None:
    """Keep the resolved config on the model, saved with its data as plain JSON in every .zip it writes
    (:data:`~sb3_realm.models.saved.CONFIG_ENTRY`): a lone checkpoint says how it was trained, and loads without
    unpickling anything."""
    setattr(model, CONFIG_ENTRY, config_to_dict(config))


def resume_config(run_dir: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """The config a run was started with (``<run>/config.yaml``), with overrides such as a new total."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ValueError(f"--resume {str(run_dir)!r}: no config.yaml there; is it a run directory made by train?")
    return load_config(path, overrides)


def _callbacks(config: TrainConfig, run_dir: Path, n_envs: int, talk: TextIO | None = None):
    curriculum = CurriculumCallback(config.curriculum, game=config.game) if config.curriculum else None
    callbacks = [MetricsCallback(window=config.log_window, game=config.game),
                 ConfigLogCallback(config_to_dict(config))]
    if curriculum is not None:
        callbacks.append(curriculum)
    if config.eval_freq > 0:
        configs = config.held_out_configs()
        env_kwargs = {k: v for k, v in config.env.env_kwargs(usr_conf=False).items()
                      if k not in ("map_path", "map_names")}  # a held-out game names its map (Gorge Chase)
        callbacks.append(CompetitionEvalCallback(
            max(1, config.eval_freq // n_envs), configs, best_model_path=run_dir / "best_model.zip",
            map_path=config.env.map_path, env_kwargs=env_kwargs, json_path=run_dir / "eval.json",
            replay_every=config.eval_route_every, seed=config.eval_seed,
            evaluate_at_start=bool(config.finetune.init_from), game=config.game, talk=talk))
    checkpoint = RunCheckpointCallback(max(1, config.checkpoint_freq), run_dir / "checkpoints",
                                    keep_last=config.keep_checkpoints, curriculum=curriculum, algo=config.algo.name)
    callbacks.append(checkpoint)
    return callbacks, curriculum, checkpoint


#: files a run writes at its top level: a new run never starts in a folder that holds one
RUN_FILES = ("config.yaml", "final_model.zip", "best_model.zip", "eval.json")
#: config keys a resumed run cannot change: they define the game, the saved network and the observation it reads
FIXED_ON_RESUME = ("game", "algo.name", "algo.extractor", "algo.extractor_kwargs", "algo.net_arch", "algo.activation",
                   "algo.policy_kwargs", "env.frame_stack", "env.normalize_reward", "feature_version",
                   "finetune.init_from")
#: where a run started from another model (``--init-from``) keeps a copy of it
INIT_MODEL = "init_model.zip"
#: everything a run may write at its top level; a new run that fails before it saved a model removes those it made
MADE_BY_A_RUN = ("config.yaml", "checkpoints", "tb", INIT_MODEL, "warm_start.json", "eval.json", "vecnormalize.json",
                 "best_model.zip", "final_model.zip")


def _history_entry(name: str) -> str:
    """A map as the history keeps it: a file by its full path (so that it is found from any folder), a name as it
    is."""
    return str(Path(name).resolve()) if Path(name).is_file() else name


def map_history(config: TrainConfig, stored: TrainConfig | None = None) -> list[str]:
    """The maps the run of ``config`` trained on before and no longer names (its ``env.map_history``), the earlier
    ones first, each once: ``stored``'s history and maps (the run's config.yaml, on resume), the history ``config``
    brings, and the maps the model of ``finetune.init_from`` was trained on (a new run from a model); less the maps
    ``config`` names now, which count as training maps anyway. A map trained on is never dropped: it is either in
    the history or among the maps the config names."""
    names: list[str] = []
    if stored is not None:
        names += [*stored.env.map_history, *env_maps(config_to_dict(stored)["env"])]
    names += config.env.map_history
    if stored is None and config.finetune.init_from:
        names += training_maps(config.finetune.init_from, config.game)
    now = {_history_entry(n) for n in env_maps(config_to_dict(config)["env"])}
    return [n for n in dict.fromkeys(_history_entry(n) for n in names) if n not in now]


def check_run_parts(run_dir: Path, extra: tuple[str, ...] = ()) -> None:
    """Refuse a part of the run (each of :data:`MADE_BY_A_RUN` and ``extra``, and each entry of ``checkpoints/``
    named as a checkpoint) that leads outside it through a symbolic link: a run reads, writes and removes only
    inside its own folder, so a linked ``checkpoints/`` never has its folders rotated away, a linked ``tb/`` never
    gets event files, and a linked ``final_model.zip`` is never replaced. A link that stays inside the run is its
    own business. ``train`` and ``imitate`` both check this before any work."""
    room = os.path.realpath(run_dir)
    folder = run_dir / "checkpoints"  # every entry named as a checkpoint, links included
    checkpoints = [f"checkpoints/{p.name}" for p in (sorted(folder.iterdir()) if folder.is_dir() else [])
                   if CHECKPOINT_NAME.fullmatch(p.name)]
    for part in dict.fromkeys((*extra, *MADE_BY_A_RUN, *checkpoints)):
        if not os.path.lexists(run_dir / part):
            continue
        real = os.path.realpath(run_dir / part)
        if not Path(real).is_relative_to(room):
            raise ValueError(f"run directory {str(run_dir)!r}: {part} leads outside the run (a symbolic link to "
                             f"{real!r}); a run works only inside its own folder: put the real {part} there (or "
                             "remove the link), or start the run again with --out")


def map_digests(config: TrainConfig, stored: TrainConfig | None = None) -> dict[str, str]:
    """The content of each map file the run of ``config`` trained on (its full path -> :func:`map_digest`), for the
    training-map guard once a file has moved: the digests ``stored`` (the run's config.yaml, on resume), ``config``
    and the model of ``finetune.init_from`` (a new run from a model) recorded, and those of the map files among
    ``config``'s maps and history that are here now (a file read again replaces its older digest)."""
    digests: dict[str, str] = {}
    if stored is not None:
        digests.update(stored.env.map_digests)
    digests.update(config.env.map_digests)
    if stored is None and config.finetune.init_from:
        digests.update(recorded_digests(recorded_env(str(config.finetune.init_from))))
    for name in (*config.env.map_history, *env_maps(config_to_dict(config)["env"])):
        digest = map_digest(name)
        if digest is not None:
            digests[_history_entry(name)] = digest
    return digests


def start_new_run(config: TrainConfig, run_dir: Path) -> None:
    """Checks before a new run writes anything: ``run_dir`` holds no run yet (no checkpoints, none of
    :data:`RUN_FILES`), and the config carries no other features version; then records the current version in
    ``config``."""
    taken = [name for name in RUN_FILES if (run_dir / name).exists()]
    if (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir()):
        taken.append("checkpoints/")
    saved = list_checkpoints(run_dir / "checkpoints") or any(
        (run_dir / name).exists() for name in ("final_model.zip", "best_model.zip"))
    if taken and not saved:  # a start that was killed before it saved a model: nothing to resume
        raise ValueError(f"run directory {str(run_dir)!r} holds the start of a run that saved no model "
                         f"({', '.join(taken)}; killed before its first checkpoint), so there is nothing to resume: "
                         "delete the folder (or those entries) to start the run again there, or choose another "
                         "folder with --out (out: in the config)")
    if taken:
        raise ValueError(f"run directory {str(run_dir)!r} already holds a run ({', '.join(taken)}); a new run would "
                         f"overwrite it: use --resume {run_dir} to continue it, or --out (out: in the config) to "
                         "start a new run in a folder of its own")
    version = config.spec.submission.features.FEATURE_VERSION
    if config.feature_version not in (None, version):
        raise ValueError(f"feature_version = {config.feature_version!r} in the config, but this sb3_realm computes "
                         f"features version {version}; a new run always uses the current one: "
                         "remove feature_version from the config (it is copied from an older run's config.yaml)")
    config.feature_version = version


def _lookup(data: dict, dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def resume_changes(run_dir: Path, config: TrainConfig) -> dict:
    """What ``config`` (a run's config.yaml with ``--set`` overrides) changes for a resumed run: the algorithm
    hyperparameters that differ, which the loaded model takes (``algo_cls.load(..., **changes)``); a ``ValueError``
    for a change of :data:`FIXED_ON_RESUME`, which the saved model cannot take."""
    stored = config_to_dict(load_config(run_dir / "config.yaml"))
    new = config_to_dict(config)
    for key in FIXED_ON_RESUME:
        if _lookup(stored, key) != _lookup(new, key):
            raise ValueError(f"--resume {str(run_dir)!r} cannot change {key} (from {_lookup(stored, key)!r} to "
                             f"{_lookup(new, key)!r}): the saved model keeps the network and the observation it was "
                             "trained with. Drop that --set, or start a new run with --out; the run was left as it "
                             "was")
    before = stored["algo"]["hyperparams"]
    return model_kwargs({k: v for k, v in new["algo"]["hyperparams"].items() if k not in before or before[k] != v})


def train(config: TrainConfig, resume: str | Path | None = None, callbacks: list | None = None,
          trust_pickle: bool | None = None, progress: bool = True, talk: TextIO | None = None):
    """Train (or resume) a run; returns ``(model, run_dir)``.

    SB3's progress bar shows when ``config.progress_bar`` and ``progress`` are both true (the command line passes
    ``progress`` false for ``--no-progress`` and when stderr is not a terminal, which the bar needs). While no bar
    shows, ``talk`` (a text stream; the command line passes ``sys.stderr``) gets one line per held-out evaluation as
    it ends (:func:`~sb3_realm.training.callbacks.eval_line`), so that a run without a bar says how it is doing.

    With ``resume``, the run continues from its newest intact checkpoint (timesteps, optimizer, VecNormalize,
    curriculum phase) in ``resume``'s directory, until ``config.total_timesteps``; changed algorithm hyperparameters
    (learning rate, epochs, ...) apply from there, a changed network or observation is refused (see
    :func:`resume_changes`). Everything is checked before anything is written: a refused command leaves the run as it
    was. With ``finetune.init_from`` (``--init-from``), a new run starts from that model's weights (see
    :mod:`.finetune`: checks, critic warm start, anchor). ``callbacks``: extra SB3 callbacks (e.g. an Optuna pruning
    callback), called after the run's own ones. A resumed checkpoint is loaded without unpickling anything unless
    ``trust_pickle`` (:mod:`sb3_realm.agents.checkpoint`). The run folder is held for the run
    (:func:`~sb3_realm.atomic.hold_folder`): another command on it is refused. A new run that fails before it saved
    a model removes what it made (:func:`removed_if_unfinished`), so that the same command can run again. The run
    records every map it trained on in ``env.map_history`` (:func:`map_history`).
    """
    config.validate()
    run_dir = run_folder(config, resume)
    with hold_folder(run_dir, "run directory"):  # one command at a time in a run
        if resume is not None:
            return _train(config, run_dir, resume, callbacks, trust_pickle, progress, talk)
        with removed_if_unfinished(run_dir):
            return _train(config, run_dir, resume, callbacks, trust_pickle, progress, talk)


def run_folder(config: TrainConfig, resume: str | Path | None = None) -> Path:
    """The folder of a run (``resume``, else ``config.out``), once it is known that it can be written
    (:func:`~sb3_realm.atomic.check_writable_folder`) and that its name is UTF-8: TensorBoard, which writes the
    run's logs, takes no other path, and a name with a byte that is not UTF-8 would fail the run after it wrote
    its first files. Nothing is written."""
    where = resume if resume is not None else config.out
    problem = not_utf8(os.fspath(where))
    if problem is not None:
        flag = "--resume" if resume is not None else "out (--out)"
        raise ValueError(f"run directory {os.fspath(where)!r} ({flag}): its name holds {problem}; a run writes "
                         "its logs with TensorBoard, which takes only UTF-8 paths: rename the folder, or choose "
                         "a name in UTF-8; nothing was written")
    return check_writable_folder(where, "run directory")


@contextlib.contextmanager
def removed_if_unfinished(run_dir: Path, made: tuple[str, ...] = MADE_BY_A_RUN) -> Iterator[None]:
    """The block of a new run: when it raises before the run saved a model, what it made is removed
    (:func:`_remove_unfinished_run`, for the entries ``made``), so that the same command can run again. ``train``
    and ``imitate`` (with its ``dataset/``) both start a run in it."""
    existed = run_dir.is_dir()
    before = _entries(run_dir, made) if existed else set()
    try:
        yield
    except BaseException:
        _remove_unfinished_run(run_dir, existed, before, made)
        raise


def _entries(run_dir: Path, made: tuple[str, ...] = MADE_BY_A_RUN) -> set[str]:
    """The entries of ``run_dir`` a run may add to (``made``), and those of its folders among them
    (``tb/run_1``), as relative POSIX paths."""
    found = set(os.listdir(run_dir))
    for name in made:
        folder = run_dir / name
        if folder.is_dir() and not folder.is_symlink():
            found |= {f"{name}/{child}" for child in os.listdir(folder)}
    return found


def _remove_unfinished_run(run_dir: Path, existed: bool, before: set[str],
                           made: tuple[str, ...] = MADE_BY_A_RUN) -> None:
    """After a new run failed: when it saved no model (no checkpoint, no best or final model), remove what it made
    (the run folder when it made it, else the entries of ``made`` it added, and what it added in those folders that
    were there before, such as ``tb/run_2``), so that the same command can run again; a run that saved a model is
    left for ``--resume`` or the user."""
    if not run_dir.is_dir() or list_checkpoints(run_dir / "checkpoints"):
        return
    if any((run_dir / name).exists() and name not in before for name in ("best_model.zip", "final_model.zip")):
        return
    if not existed:
        with contextlib.suppress(OSError):
            remove_made(run_dir, run_dir.parent)
        return
    for name in made:
        path = run_dir / name
        if name not in before:
            added = [path] if path.exists() or path.is_symlink() else []
        elif path.is_dir() and not path.is_symlink():
            added = [path / child for child in os.listdir(path) if f"{name}/{child}" not in before]
        else:
            added = []
        for item in added:
            with contextlib.suppress(OSError):
                remove_made(item, run_dir)


def _train(config: TrainConfig, run_dir: Path, resume, callbacks, trust_pickle, progress=True, talk=None):
    """The run in order: checks (nothing written yet), envs, callbacks, the model (new, fine-tuned or resumed),
    what it starts from, learning, the final save."""
    check_run_parts(run_dir)
    found, changes = (None, {}) if resume is None else _check_resume(config, run_dir)
    if found is None:
        _check_new_run(config, run_dir)
    torch.set_num_threads(config.torch_threads)
    venv = make_vec_env(config.env, config.seed, game=config.game)
    try:
        bar = config.progress_bar and progress
        own, curriculum, checkpoint = _callbacks(config, run_dir, venv.num_envs, talk=None if bar else talk)
        callbacks = own + list(callbacks or [])
        if found is not None:
            model, venv = _resumed_model(config, run_dir, found, venv, changes, curriculum, trust_pickle)
        else:
            model = _new_model(config, venv, run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        save_config(config, run_dir / "config.yaml")  # what is in force, once the model took it
        if found is None and config.finetune.init_from:
            callbacks += _record_start(config, model, venv, run_dir)
        _learn(config, model, venv, callbacks, found, bar)
        checkpoint.model = model
        checkpoint.save()
        if found is not None:
            keep_final_aside(run_dir, int(found[1].get("num_timesteps", 0)))
        atomic_write(run_dir / "final_model.zip", model.save)
    finally:
        venv.close()
    return model, run_dir


def _check_new_run(config: TrainConfig, run_dir: Path) -> None:
    """The checks of a new run, before anything is written: an empty run folder (:func:`start_new_run`), the model
    it starts from, the maps it trained on (:func:`map_history`)."""
    start_new_run(config, run_dir)
    if config.finetune.init_from:
        check_init_model(config.finetune.init_from, config.algo.name, game=config.game)
    config.env.map_history = map_history(config)
    config.env.map_digests = map_digests(config)
    config.validate()  # eval_maps against the maps of the model it starts from, too


def _check_resume(config: TrainConfig, run_dir: Path) -> tuple[tuple[Path, dict], dict]:
    """The checks of a resumed run, before anything is written; returns ``((checkpoint, its state), the
    hyperparameters the config changes)``."""
    found = latest_checkpoint(run_dir / "checkpoints")
    if found is None:
        if not list_checkpoints(run_dir / "checkpoints"):
            raise ValueError(f"--resume {str(run_dir)!r}: the run saved no checkpoint (it was stopped before its "
                             "first), so there is nothing to resume: delete the folder and run the command that "
                             "started it again, or start the run in another folder with --out")
        raise ValueError(f"--resume {str(run_dir)!r}: no intact checkpoint under {run_dir / 'checkpoints'}")
    if "imitation" in found[1]:
        raise ValueError(f"--resume {str(run_dir)!r} is an imitation run; continue it with sb3-realm imitate "
                         f"--resume {run_dir}, or train from its model with --init-from "
                         f"{run_dir / 'final_model.zip'}")
    changes = resume_changes(run_dir, config)
    if found[1].get("algo") not in (None, config.algo.name):
        raise CheckpointError(f"checkpoint {str(found[0])!r} is of algorithm {found[1]['algo']!r}, and the run's "
                              f"config.yaml trains {config.algo.name!r}: the checkpoint is not this run's; "
                              "restore the run's checkpoints or start a new run with --out")
    stored = load_config(run_dir / "config.yaml")
    config.env.map_history = map_history(config, stored)
    config.env.map_digests = map_digests(config, stored)
    config.validate()  # eval_maps against every map of the run's history
    if (run_dir / "eval.json").exists():
        read_eval_history(run_dir / "eval.json")  # a damaged file is named now, before anything is written
    if config.finetune.anchor_coef and not (run_dir / INIT_MODEL).is_file():
        raise ValueError(f"--resume {str(run_dir)!r}: finetune.anchor_coef needs the model the run started from, "
                         f"{run_dir / INIT_MODEL}, which is gone; set finetune.anchor_coef=0 to go on without "
                         "the anchor")
    return found, changes


def _resumed_model(config: TrainConfig, run_dir: Path, found: tuple[Path, dict], venv: VecEnv, changes: dict,
                   curriculum, trust_pickle):
    """``(model, venv)`` of a resumed run: its checkpoint's model, VecNormalize and curriculum phase, with the
    hyperparameters the config changes and the run's anchor."""
    ckpt, state = found
    warn_feature_version(ckpt / "model.zip")
    venv = load_vecnormalize(ckpt, venv, trust_pickle)
    model = load_model(ckpt / "model.zip", algo_cls=_algo_class(config), env=venv, device=config.device,
                       trust_pickle=trust_pickle, tensorboard_log=str(run_dir / "tb"), **changes)
    if model.num_timesteps != state["num_timesteps"]:
        raise CheckpointError(f"checkpoint {str(ckpt)!r}: its state.json says {state['num_timesteps']} "
                              f"steps and its model.zip {model.num_timesteps}; the folder is damaged or "
                              "mixed: delete it to resume from the checkpoint before")
    record_config(model, config)
    if curriculum is not None and state.get("curriculum"):
        try:
            curriculum.load_state_dict(state["curriculum"])
        except (ValueError, TypeError, KeyError) as exc:
            raise CheckpointError(f"checkpoint {str(ckpt)!r}: the curriculum state in its state.json cannot "
                                  f"be restored ({exc}); delete the folder to resume from the checkpoint "
                                  "before") from None
    fine = config.finetune
    if fine.anchor_coef:
        model.set_anchor(reference_policy(model, run_dir / INIT_MODEL), fine.anchor_coef, fine.anchor_epochs)
    return model, venv


def _new_model(config: TrainConfig, venv: VecEnv, run_dir: Path):
    """The model of a new run: built afresh, with the weights of ``finetune.init_from`` when it names a model."""
    fine = config.finetune
    model = build_model(config, venv, tensorboard_log=str(run_dir / "tb"))
    if fine.init_from:
        load_initial_weights(model, fine.init_from)
        model.init_from = str(fine.init_from)  # saved with the model's data: where it started
        if fine.anchor_coef:
            model.set_anchor(model.policy, fine.anchor_coef, fine.anchor_epochs)
    return model


def _record_start(config: TrainConfig, model, venv: VecEnv, run_dir: Path) -> list:
    """A new run from another model: keep a copy of it (:data:`INIT_MODEL`) and warm-start the critic when asked
    (its statistics in ``warm_start.json``); returns the callbacks that log them."""
    fine = config.finetune
    source = Path(fine.init_from)
    atomic_write(run_dir / INIT_MODEL, lambda f: f.write(source.read_bytes()))
    if not fine.warm_start_games:
        return []
    stats = warm_start_value(model, venv, fine.warm_start_games, epochs=fine.warm_start_epochs,
                             learning_rate=fine.warm_start_lr, seed=config.seed)
    text = json.dumps(stats, indent=2) + "\n"
    atomic_write(run_dir / "warm_start.json", lambda f: f.write(text.encode("utf-8")))
    return [StartScalarsCallback({f"warm_start/{k}": v for k, v in stats.items()})]


def _learn(config: TrainConfig, model, venv: VecEnv, callbacks: list, found, bar: bool) -> None:
    """Learn until ``config.total_timesteps``; a resumed run ends where a whole run ends (a checkpoint taken
    mid-rollout shifts the rollouts)."""
    remaining = config.total_timesteps - model.num_timesteps
    if found is not None:
        rollout = int(model.n_steps) * venv.num_envs
        callbacks.append(StopAtTimesteps(-(-config.total_timesteps // rollout) * rollout))
    if remaining > 0:
        model.learn(remaining, callback=callbacks, reset_num_timesteps=found is None, tb_log_name="run",
                    progress_bar=bar)
