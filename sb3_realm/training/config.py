"""Training configuration: dataclasses loaded from YAML, validated, overridable with ``--set key=value``.

Unknown keys raise a ``ValueError`` listing the valid ones; values are type-checked; ``policy_kwargs`` are data
(activation functions by name, extractors by registry name): nothing is ever ``eval()``-ed.

The run's config is :class:`TrainConfig`; its sections (:class:`EnvConfig`, :class:`AlgoConfig`,
:class:`FinetuneConfig`) live in :mod:`.config_sections` and are importable from here.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import games
from ..atomic import atomic_write, check_portable_path
from ..evaluation.training_map import env_maps, same_maps
from ..models.algorithms import ALGORITHMS
from .config_files import RENAMED_CONFIGS, apply_overrides, merge_config, read_config_file
from .config_sections import (
    COMPETITION_MAP,
    HYPERPARAM_RANGES,
    MAX_REWARD_WEIGHT,
    AlgoConfig,
    EnvConfig,
    FinetuneConfig,
)

__all__ = [
    "ALGORITHMS",
    "COMPETITION_MAP",
    "HYPERPARAM_RANGES",
    "MAX_REWARD_WEIGHT",
    "RENAMED_CONFIGS",
    "AlgoConfig",
    "EnvConfig",
    "FinetuneConfig",
    "TrainConfig",
    "apply_overrides",
    "config_from_dict",
    "config_to_dict",
    "load_config",
    "merge_config",
    "read_config_file",
    "save_config",
]


@dataclass
class TrainConfig:
    """A training run.

    :param total_timesteps: env steps to train for (in total, across resumes).
    :param seed: seed of the envs and the model.
    :param device: torch device (``cpu``, ``cuda``, ``auto``).
    :param torch_threads: ``torch.set_num_threads`` (1 is often fastest on small CPUs).
    :param out: run directory (config, TensorBoard logs, checkpoints, best model, evaluation JSON).
    :param checkpoint_freq: env steps between checkpoints.
    :param keep_checkpoints: how many of the latest checkpoints to keep.
    :param eval_freq: env steps between competition evaluations (0 = never).
    :param eval_games: games of the held-out evaluation: the Realm's leaderboard draw (with ``usr_conf``'s treasure
        count); Gorge Chase's games per map of ``eval_maps``.
    :param eval_maps: Gorge Chase: the held-out maps (never one the run trains on); empty: the validation map,
        ``open_8`` (which needs the open maps: ``env.maps_dir``).
    :param eval_seed: seed of the held-out draw (use one you never train on).
    :param log_window: episodes in the moving averages of the ``train_episodes/*`` metrics.
    :param eval_route_every: every this many evaluations, also a route image of the first held-out game in
        TensorBoard (``eval/route``, the Images tab; a few percent of a run's time at 2); 0 = never. Tuning trials never
        draw them.
    :param curriculum: phases (see :class:`~sb3_realm.callbacks.CurriculumCallback`); empty = none.
    :param progress_bar: show a progress bar.
    :param game: the game the run plays, one of :func:`sb3_realm.games.names`. A config file that names none (one
        written before the package had a second game) loads as :data:`~sb3_realm.games.LEGACY_GAME`'s, with a
        one-line note.
    :param feature_version: the features version (the game's ``features.FEATURE_VERSION``) the run's models see;
        written by ``train`` when a run starts (leave it out of your configs; null in a run's config means a run from
        before versions were recorded, version 1).
    :param env: the envs (:class:`EnvConfig`).
    :param algo: the algorithm and its network (:class:`AlgoConfig`).
    :param imitation: the section of ``sb3-realm imitate`` (:class:`sb3_realm.imitation.config.ImitationConfig`, which
        reads and checks it); ``train`` keeps it as data and never reads it.
    :param finetune: RL from a trained model (:class:`FinetuneConfig`); ``imitate`` ignores it.
    """

    game: str | None = None
    total_timesteps: int = 1_000_000
    seed: int = 0
    device: str = "cpu"
    torch_threads: int = 1
    out: str = "runs/ppo"
    checkpoint_freq: int = 50_000
    keep_checkpoints: int = 3
    eval_freq: int = 100_000
    eval_games: int = 10
    eval_maps: list = field(default_factory=list)
    eval_seed: int = 12345
    log_window: int = 100
    eval_route_every: int = 2
    curriculum: list = field(default_factory=list)
    progress_bar: bool = True
    feature_version: str | None = None
    env: EnvConfig = field(default_factory=EnvConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    imitation: dict = field(default_factory=dict)
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)

    def validate(self) -> TrainConfig:
        for name in ("total_timesteps", "checkpoint_freq", "keep_checkpoints", "eval_games", "log_window",
                     "torch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} = {getattr(self, name)} must be >= 1")
        if self.eval_freq < 0:
            raise ValueError(f"eval_freq = {self.eval_freq} must be >= 0 (0 = no evaluation)")
        if self.eval_route_every < 0:
            raise ValueError(f"eval_route_every = {self.eval_route_every} must be >= 0 (0 = no route images)")
        if not isinstance(self.out, str) or not self.out.strip():
            raise ValueError(f"out = {self.out!r} names no folder (it would write the run into the current one): set "
                             "out in the config, or --out, to the run's own folder, e.g. runs/NAME")
        check_portable_path(self.out, "out")
        self.game = games.get(self.game).name  # a config names its game (by name, or by import path: its name here)
        if self.algo.extractor is None:
            self.algo.extractor = self.spec.env.extractor
        if not self.spec.config_runs:
            raise ValueError(f"game = {self.game!r}: sb3-realm train does not run {self.spec.title} from a config; "
                             "train it from Python with Stable-Baselines3 on its Gymnasium env, or set game: to "
                             f"one of {[g.name for g in games.GAMES.values() if g.config_runs]}")
        self.env.validate(self.spec)
        self.held_out_configs()  # the game refuses eval_maps it cannot play
        trained_on = [*self.env.map_history, *env_maps(dataclasses.asdict(self.env))]
        pairs = same_maps(self.spec, self.eval_maps or [], trained_on, self.env.maps_dirs(), self.env.map_digests)
        if pairs:
            overlap = [m if m == t else f"{m} (the same map as {t})" for m, t in pairs]
            raise ValueError(f"eval_maps {overlap} are maps the run trains on (env.map_names / env.map_path / "
                             "env.map_name, or env.map_history: maps of its earlier parts): the held-out evaluation "
                             "would select the model on its training maps; evaluate on others")
        self.algo.validate()
        self.finetune.validate(self.algo.name)
        self._check_rollout()
        self._check_device()
        return self

    def held_out_configs(self) -> list[dict]:
        """The ``usr_conf`` of each held-out game of the run (its evaluations, a study's objective): the game's
        :attr:`~sb3_realm.games.GameSpec.evaluation.held_out_configs` of ``env.usr_conf``, ``eval_games``,
        ``eval_seed`` and ``eval_maps``, under each of ``env.settings`` in turn (its keys over each game's, except those
        ``env.usr_conf`` gives)."""
        spec, env = self.spec, self.env
        return [spec.apply_settings(name, conf, keep=env.usr_conf)
                for name in env.settings_names(spec)
                for conf in spec.evaluation.held_out_configs(env.settings_usr_conf(name, spec), self.eval_games,
                                                             self.eval_seed, self.eval_maps)]

    @property
    def spec(self) -> games.GameSpec:
        """The :class:`~sb3_realm.games.GameSpec` of :attr:`game` (``ValueError`` for a game the package has not)."""
        return games.get(self.game)

    def _check_rollout(self) -> None:
        """A minibatch must fit in a rollout (SB3 only warns, then trains on truncated minibatches)."""
        n_steps, batch_size = self.algo.hyperparam("n_steps"), self.algo.hyperparam("batch_size")
        rollout = n_steps * self.env.n_envs
        if rollout < 2:
            raise ValueError(f"a rollout of algo.hyperparams.n_steps = {n_steps} x env.n_envs = {self.env.n_envs} "
                             "holds one step; PPO needs at least 2: raise n_steps")
        if batch_size > rollout:
            raise ValueError(f"algo.hyperparams.batch_size = {batch_size} is larger than a rollout (n_steps "
                             f"{n_steps} x env.n_envs {self.env.n_envs} = {rollout}); set batch_size <= {rollout} "
                             "(a divisor of it) or raise n_steps")

    def _check_device(self) -> None:
        import torch  # loaded already by validate()'s algorithm_class (SB3); here so that importing configs stays light

        try:
            device = torch.device(self.device) if self.device != "auto" else None
        except (RuntimeError, ValueError):
            raise ValueError(f"device = {self.device!r} is not a torch device; use cpu, cuda, cuda:0 or auto") \
                from None
        if device is not None and device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device = {self.device!r}, but this machine has no CUDA GPU that torch "
                             f"{torch.__version__} can use; set device: cpu (or auto, which picks the GPU where there "
                             "is one)")


# ---------------------------------------------------------------------------------------------- dict <-> dataclass
# C901 exempt: one branch per typing form a config value may have (union, None, int, float, bool, str, list, dict)
def _check_type(value, hint, where: str):  # noqa: C901
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        for option in typing.get_args(hint):
            try:
                return _check_type(value, option, where)
            except ValueError:
                continue
        raise ValueError(f"{where} = {value!r} has the wrong type; expected {hint}")
    if hint is type(None):
        if value is None:
            return None
        raise ValueError(f"{where} = {value!r}: expected null")
    if hint in (int, float) and isinstance(value, str):  # YAML reads 1e6 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            pass
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():  # 1e6 in YAML
            return int(value)
    elif hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hint in (dict, list) or origin in (dict, list):
        if isinstance(value, origin or hint):
            return value
    else:
        return value
    name = getattr(hint, "__name__", str(hint))
    raise ValueError(f"{where} = {value!r} has the wrong type; expected {name}")


def _from_dict(cls, data, where: str):
    if not isinstance(data, dict):
        raise ValueError(f"{where or 'config'} must be a mapping of keys to values, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        prefix, of = (f"{where}.", f" of {where}") if where else ("", "")
        raise ValueError(f"unknown config keys {[prefix + k for k in unknown]}; valid keys{of} are {sorted(fields)}")
    kwargs = {}
    for key, value in data.items():
        path = f"{where}.{key}" if where else key
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = _from_dict(hint, value, path)
        else:
            kwargs[key] = _check_type(value, hint, path)
    return cls(**kwargs)


def config_to_dict(config: TrainConfig) -> dict:
    return dataclasses.asdict(config)


def load_config(path: str | os.PathLike | None = None, overrides: list[str] | None = None, *,
                cls: type[TrainConfig] = TrainConfig) -> TrainConfig:
    """Load a YAML config (or the defaults when ``path`` is None) with its ``base:`` chain
    (:func:`~.config_files.read_config_file`), apply ``--set`` overrides, validate (as ``cls``: a subclass such as
    imitation's adds its own section). The result is the whole resolved config: what a
    run's ``config.yaml`` records, so a run never depends on the base file later."""
    data = read_config_file(path) if path is not None else {}
    data = apply_overrides(data, overrides or [])
    return _with_game(_from_dict(cls, data, ""), f"config {str(path)!r}" if path is not None else "the config")


def _with_game(config: TrainConfig, what: str) -> TrainConfig:
    """``config`` validated, its game :data:`~sb3_realm.games.LEGACY_GAME` (with a one-line note naming ``what``)
    when it names none, as configs did before the package had a second game."""
    if config.game is None:
        config.game = games.recorded(None, what, stacklevel=3).name
    return config.validate()


def config_from_dict(data: dict, overrides: list[str] | None = None, *,
                     cls: type[TrainConfig] = TrainConfig) -> TrainConfig:
    """A validated config from a plain dict (as made by :func:`config_to_dict`), with ``--set`` overrides."""
    return _with_game(_from_dict(cls, apply_overrides(copy.deepcopy(data), overrides or []), ""), "the config")


def save_config(config: TrainConfig, path: str | os.PathLike) -> Path:
    """Write the resolved config as YAML, atomically."""
    text = yaml.safe_dump(config_to_dict(config), sort_keys=False)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))
