"""Training runs: envs, model, callbacks, checkpoints and resume, from a
:class:`~sb3_realm.training.config.TrainConfig`.

The run's folder (what a run writes there, the checks before it writes, the removal of an unfinished start) is in
:mod:`.run_files`, the maps it trained on in :mod:`.run_maps`; their names are importable from here too."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import gymnasium as gym
import torch
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecFrameStack, VecNormalize

from .. import games
from ..agents.checkpoint import load_model
from ..atomic import atomic_write, hold_folder
from ..models.algorithms import algorithm, model_kwargs
from ..models.extractors import policy_kwargs_of
from ..models.saved import CONFIG_ENTRY, warn_feature_version
from ..processes import start_method
from .callbacks import ConfigLogCallback, CurriculumCallback, MetricsCallback, StopAtTimesteps
from .checkpoints import (
    CheckpointError,
    RunCheckpointCallback,
    keep_final_aside,
    latest_checkpoint,
    list_checkpoints,
    load_vecnormalize,
)
from .config import EnvConfig, TrainConfig, config_to_dict, load_config, save_config
from .eval_callback import CompetitionEvalCallback, read_eval_history
from .finetune import (
    StartScalarsCallback,
    anchored_class,
    check_init_model,
    load_initial_weights,
    reference_policy,
    warm_start_value,
)
from .ray_vec_env import RayVecEnv
from .run_files import (
    INIT_MODEL,
    MADE_BY_A_RUN,
    RUN_FILES,
    check_run_parts,
    removed_if_unfinished,
    run_folder,
    start_new_run,
)
from .run_maps import map_digests, map_history

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
    """The training VecEnv of ``game`` (required; Dummy, Subproc or Ray actors, picklable factories),
    frame-stacked and reward-normalised as configured."""
    n = n_envs or env.n_envs
    spec = games.get(game)  # each env its own arguments, as each worker process gets its own
    elsewhere = env.vec_env in ("subproc", "ray")
    ref = games.reference(spec.name) if elsewhere else spec.name  # a worker process imports it by path
    fns: list[Callable[[], gym.Env]] = [functools.partial(_make_env, env.env_kwargs(game=spec), ref) for _ in range(n)]
    venv: VecEnv
    if env.vec_env == "ray":
        venv = RayVecEnv(fns, envs_per_actor=env.envs_per_actor)
    elif env.vec_env == "subproc":
        venv = SubprocVecEnv(fns, start_method=start_method())
    else:
        venv = DummyVecEnv(fns)
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


#: config keys a resumed run cannot change: they define the game, the saved network and the observation it reads
FIXED_ON_RESUME = ("game", "algo.name", "algo.extractor", "algo.extractor_kwargs", "algo.net_arch", "algo.activation",
                   "algo.policy_kwargs", "env.frame_stack", "env.normalize_reward", "feature_version",
                   "finetune.init_from")


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
    it ends (:func:`~sb3_realm.training.eval_callback.eval_line`), so that a run without a bar says how it is doing.

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
