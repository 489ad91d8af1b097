"""Training configuration: dataclasses loaded from YAML, validated, overridable with ``--set key=value``.

Unknown keys raise a ``ValueError`` listing the valid ones; values are type-checked; ``policy_kwargs`` are data
(activation functions by name, extractors by registry name): nothing is ever ``eval()``-ed.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import games
from ..arguments import not_utf8
from ..atomic import atomic_write, check_portable_path
from ..evaluation.training_map import env_maps, same_maps
from ..models.algorithms import ALGORITHMS, algorithm, algorithm_class, schedule
from ..models.nets import ACTIVATIONS
from .config_files import RENAMED_CONFIGS, apply_overrides, merge_config, read_config_file

__all__ = [
    "ALGORITHMS",
    "COMPETITION_MAP",
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

#: ``env.map_name`` of a recipe tuned for the competition's own map, which the package does not ship: such a config
#: runs only with ``env.map_path`` (``--map``)
COMPETITION_MAP = "competition"

#: the largest size of a reward weight. A term of one step is at most a few thousand in size (the Realm's progress
#: potential, in cells; the other terms are counts and 0/1 events), so with every weight within 1e6 a step's reward, an
#: episode's return and PPO's squared value error stay far inside float32 (about 3.4e38), in which the envs and the
#: networks compute; a larger weight overflows to inf and training ends in NaN
MAX_REWARD_WEIGHT = 1e6


@dataclass
class EnvConfig:
    """The training envs.

    :param map_path: map JSON in the official format; None = a built-in map (``map_name``).
    :param map_name: built-in map: ``default`` or ``small``; or ``competition`` for a recipe tuned for the
        competition's map, which is Tencent's and not shipped: such a config runs only with ``map_path`` (``--map``).
        Gorge Chase: one map's name (``own_1``.. ``own_10``, ``open_1``.. ``open_10``).
    :param map_names: Gorge Chase: the maps drawn per episode (e.g. ``[own_1, own_2, open_3]``); empty: ``map_name``.
    :param map_history: the maps the run trained on before and no longer names in ``map_names`` / ``map_path`` /
        ``map_name`` (each as its config named it, a file by its full path), kept by ``train``: a resume that changes
        the maps, and a run started from a model (``--init-from``) trained elsewhere, add them. An evaluation refuses
        a checkpoint on any of them as on the maps the config names, and ``eval_maps`` may name none. Leave it out of
        your configs (``train`` writes it; a map is never dropped from it while the config does not name it).
    :param map_digests: the content of each map file the run trained on (its full path -> the sha256 of its JSON),
        kept by ``train`` beside ``map_history``: an evaluation refuses a checkpoint on a copy of a training map
        file moved or renamed since. Leave it out of your configs (``train`` writes it).
    :param maps_dir: Gorge Chase: the folder of the open maps (``gorge_chase_map_<k>.json``) for the ``open_<k>``
        names; None: the folder the game's environment variable names (:attr:`~sb3_realm.games.Maps.folder_variable`).
    :param usr_conf: the competition's episode configuration (``treasure_num``, ``max_step``, ...).
    :param settings: the game's named settings (Gorge Chase: ``default`` or ``final``, the final round's), played
        over ``usr_conf`` (whose own keys win): one name, or a list (``[default, final]``) whose settings the
        training episodes mix, each episode one of them; the held-out games are then played under each, in turn.
    :param reward_weights: the game's reward weights' overrides (the Realm's
        :class:`~sb3_realm.games.realm.rewards.RewardWeights`).
    :param rules: the game's rule overrides (the Realm's :class:`~sb3_realm.games.realm.rules.Rules`).
    :param mask_wall_moves: the action mask also forbids moves straight into an adjacent wall.
    :param n_envs: parallel envs.
    :param vec_env: ``dummy`` (one process) or ``subproc`` (one process per env).
    :param frame_stack: stack this many observations (``VecFrameStack``) for the temporal extractors.
    :param normalize_reward: wrap in ``VecNormalize(norm_obs=False, norm_reward=True)``.
    """

    map_path: str | None = None
    map_name: str = "default"
    map_names: list = field(default_factory=list)
    map_history: list = field(default_factory=list)
    map_digests: dict = field(default_factory=dict)
    maps_dir: str | None = None
    usr_conf: dict = field(default_factory=dict)
    settings: str | list = "default"
    reward_weights: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)
    mask_wall_moves: bool = False
    n_envs: int = 8
    vec_env: str = "dummy"
    frame_stack: int = 1
    normalize_reward: bool = False

    def validate(self, game: games.GameSpec) -> None:
        """Check the section for ``game``."""
        if self.map_name == COMPETITION_MAP and self.map_path is None:
            raise ValueError("env.map_name = 'competition': this recipe is tuned for the competition's map, which the "
                             f"package does not ship; pass it with --map PATH/{game.maps.competition_file} (or --set "
                             "env.map_path=PATH), or use a recipe for the shipped default map")
        for key in ("map_names", "maps_dir"):
            if getattr(self, key) and key not in game.env.options:
                raise ValueError(f"env.{key} = {getattr(self, key)!r}: {game.title} plays one map (env.map_path or "
                                 f"env.map_name); remove env.{key}")
        if not isinstance(self.map_names, list) or not all(isinstance(m, str) for m in self.map_names):
            raise ValueError(f"env.map_names = {self.map_names!r} must be a list of map names, e.g. [own_1, own_2]")
        if not all(isinstance(m, str) and m.strip() for m in self.map_history):
            raise ValueError(f"env.map_history = {self.map_history!r} must be a list of map names (train keeps it: "
                             "copy it from the run's config.yaml, or leave it out)")
        if not isinstance(self.map_digests, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and len(v) == 64 for k, v in self.map_digests.items()):
            raise ValueError(f"env.map_digests = {self.map_digests!r} must map map files to the sha256 of their "
                             "content (train keeps it: copy it from the run's config.yaml, or leave it out)")
        game.episodes.config.from_usr_conf(self.usr_conf)
        for name in self.settings_names(game):
            game.episodes.config.from_usr_conf(self.settings_usr_conf(name, game))
        self._check_reward_weights()
        game.env.reward_weights.from_dict(self.reward_weights)
        game.episodes.rules.from_dict(self.rules)
        if self.vec_env not in ("dummy", "subproc"):
            raise ValueError(f"env.vec_env = {self.vec_env!r}; choose 'dummy' or 'subproc'")
        if self.n_envs < 1:
            raise ValueError(f"env.n_envs = {self.n_envs} must be >= 1")
        if self.frame_stack < 1:
            raise ValueError(f"env.frame_stack = {self.frame_stack} must be >= 1")

    def _check_reward_weights(self) -> None:
        """Each reward weight a finite number within :data:`MAX_REWARD_WEIGHT` in size. A weight YAML read as a
        string because it has no dot (``1e-3``, ``1e6``) is taken as the number it writes."""
        for name, weight in list(self.reward_weights.items()):
            if isinstance(weight, str):
                try:
                    weight = self.reward_weights[name] = float(weight)
                except ValueError:
                    continue  # the game's weights class names a weight of the wrong type
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                continue  # the game's weights class names a weight of the wrong type
            if not math.isfinite(weight) or abs(weight) > MAX_REWARD_WEIGHT:
                raise ValueError(f"env.reward_weights.{name} = {weight!r} is out of range: a weight must be a finite "
                                 f"number within +-{MAX_REWARD_WEIGHT:g} (a step's reward terms reach a few thousand, "
                                 "and the reward, the returns and the value loss are computed in float32, whose "
                                 "range ends near 3.4e38: a larger weight overflows and training ends in NaN); "
                                 "scale the weights down together")

    def settings_names(self, game: games.GameSpec) -> tuple[str, ...]:
        """The names of :attr:`settings`, checked against ``game``'s: a ``ValueError`` names a value that is not one
        of them."""
        return game.check_settings(self.settings, "env.settings", games.GAMES.values())

    def settings_usr_conf(self, name: str, game: games.GameSpec) -> dict:
        """``usr_conf`` with the keys of settings ``name`` of ``game`` played over it, except those it gives itself."""
        return game.apply_settings(name, self.usr_conf, keep=self.usr_conf)

    def maps_dirs(self) -> list[str | None]:
        """The folders a map name of the env may be read from: ``maps_dir``, else the one a game's environment
        variable names (:attr:`~sb3_realm.games.Maps.folder_variable`)."""
        return [self.maps_dir, games.maps_folder_from_environment()]

    def env_kwargs(self, usr_conf: bool = True, game: games.GameSpec | None = None) -> dict:
        """Keyword arguments of the game's env (without the episode configuration, ``usr_conf`` and
        ``settings``, when ``usr_conf`` is False, e.g. for evaluations that bring their own games).

        :param game: the game played: the maps folder goes to its env for ``map_name`` when the game reads that name
            from one (:attr:`~sb3_realm.games.GameSpec.maps.in_folder`). None: when any game reads it from one.
        """
        kwargs: dict = {"map_path": self.map_path, "map_name": self.map_name,
                        "reward_weights": dict(self.reward_weights), "rules": dict(self.rules)}
        if self.mask_wall_moves:  # an env option; a game whose env lacks it says so
            kwargs["mask_wall_moves"] = True
        maps_dir = self.maps_dir or games.maps_folder_from_environment(game)
        if self.map_names:  # validate refuses them for a game whose env takes no map_names
            kwargs["map_names"] = list(self.map_names)
        readers = [game] if game is not None else games.GAMES.values()
        if self.map_names or self.maps_dir or (maps_dir and any(spec.maps.in_folder(str(self.map_name))
                                                                for spec in readers)):
            kwargs["maps_dir"] = maps_dir
        if not usr_conf:
            return kwargs
        if not (isinstance(self.settings, str) and self.settings == "default"):  # a game with named settings
            kwargs["settings"] = [self.settings] if isinstance(self.settings, str) else list(self.settings)
        return {**kwargs, **self.usr_conf}


@dataclass
class AlgoConfig:
    """The algorithm and its network.

    :param name: ``ppo``, ``maskable_ppo`` or ``recurrent_ppo``.
    :param hyperparams: keyword arguments of the algorithm (``learning_rate``, ``n_steps``, ``batch_size``, ...),
        checked against its signature.
    :param extractor: features extractor by registry name (``realm``, ``conv3d``, ``transformer``) or ``default``
        (SB3's own); None: the one of the config's game (:attr:`~sb3_realm.games.Env.extractor`)
        (SB3's CombinedExtractor).
    :param extractor_kwargs: keyword arguments of the extractor.
    :param net_arch: policy/value MLP after the extractor, e.g. ``{pi: [64], vf: [64]}`` or ``[64, 64]``.
    :param activation: activation of that MLP, by name.
    :param policy_kwargs: other policy keyword arguments as plain data (``ortho_init``, ``lstm_hidden_size``, ...).
    """

    name: str = "ppo"
    hyperparams: dict = field(default_factory=dict)
    extractor: str | None = None
    extractor_kwargs: dict = field(default_factory=dict)
    net_arch: Any = None
    activation: str = "tanh"
    policy_kwargs: dict = field(default_factory=dict)

    def hyperparam(self, key: str):
        """The value of hyperparameter ``key`` in force: the config's, else the algorithm's own default."""
        return self.hyperparams.get(key, inspect.signature(algorithm_class(self.name).__init__).parameters[key].default)

    def validate(self) -> None:
        if self.name not in ALGORITHMS:
            raise ValueError(f"algo.name = {self.name!r}; choose one of {list(ALGORITHMS)}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"algo.activation = {self.activation!r}; choose one of {list(ACTIVATIONS)}")
        for key in ("features_extractor_class", "features_extractor_kwargs", "net_arch", "activation_fn"):
            if key in self.policy_kwargs:
                raise ValueError(f"algo.policy_kwargs.{key}: set it with algo.extractor / algo.extractor_kwargs / "
                                 "algo.net_arch / algo.activation instead (data, never code)")
        params = inspect.signature(algorithm_class(self.name).__init__).parameters
        reserved = {"self", "policy", "env", "policy_kwargs", "seed", "device", "tensorboard_log", "verbose",
                    "_init_setup_model"}
        valid = sorted(set(params) - reserved)
        unknown = sorted(set(self.hyperparams) - set(valid))
        if unknown:
            raise ValueError(f"algo.hyperparams: unknown keys {unknown} for {self.name}; valid keys are {valid}")
        for key, value in self.hyperparams.items():
            if isinstance(value, str) and key not in ("learning_rate", "clip_range", "clip_range_vf"):
                raise ValueError(f"algo.hyperparams.{key} = {value!r} must be a number, not a string")
            if isinstance(value, str):
                schedule(value, key)  # "lin_3e-4" style schedules are data too
            _check_range(key, value)


# Valid values of the numeric hyperparameters: SB3 asserts a few of them deep inside the first rollout and accepts the
# rest silently (gamma = 1.5 trains). key -> (test, what the valid values are).
def _positive(v) -> bool:
    return v > 0


HYPERPARAM_RANGES = {
    "learning_rate": (_positive, "a number > 0 (or 'lin_<number>' with a number > 0)"),
    "clip_range": (_positive, "a number > 0 (or 'lin_<number>' with a number > 0)"),
    "clip_range_vf": (_positive, "a number > 0, or null for no value clipping"),
    "target_kl": (_positive, "a number > 0, or null for no early stop"),
    "gamma": (lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    "gae_lambda": (lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    "ent_coef": (lambda v: v >= 0, "a number >= 0"),
    "vf_coef": (lambda v: v >= 0, "a number >= 0"),
    "max_grad_norm": (_positive, "a number > 0"),
    "n_steps": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
    "batch_size": (lambda v: isinstance(v, int) and v >= 2, "an integer >= 2"),
    "n_epochs": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
    "sde_sample_freq": (lambda v: isinstance(v, int) and v >= -1, "an integer >= -1 (-1: only at rollout start)"),
    "stats_window_size": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
}


def _check_range(key: str, value) -> None:
    if key not in HYPERPARAM_RANGES or (value is None and key in ("clip_range_vf", "target_kl")):
        return
    test, valid = HYPERPARAM_RANGES[key]
    number = schedule(value, key)(1.0) if isinstance(value, str) else value  # "lin_<x>": its start value x
    if isinstance(number, bool) or not isinstance(number, int | float) or not test(number):
        raise ValueError(f"algo.hyperparams.{key} = {value!r} is out of range: it must be {valid}")


@dataclass
class FinetuneConfig:
    """RL from a trained model (``sb3-realm train --init-from MODEL.zip``, e.g. a cloned policy of ``sb3-realm
    imitate``): the weights come from the model, the hyperparameters from this config, the optimizer and the
    timestep count start afresh.

    :param init_from: an SB3 checkpoint of the same algorithm, observation and features version; "" = a new model.
        The run keeps a copy as ``init_model.zip`` (where it started; the anchor's reference on resume).
    :param warm_start_games: 0, or games the initial policy plays (sampling its actions, as PPO's rollouts do) before
        RL; the value head is fitted to their discounted returns of the configured reward, so that the first PPO
        updates see advantages of a trained critic rather than an untrained one (the actor is left as it was).
    :param warm_start_epochs: passes of that fit over the games' states.
    :param warm_start_lr: Adam's learning rate of that fit.
    :param anchor_coef: 0, or the weight of a behaviour-cloning term toward the initial policy: after each PPO
        update the policy takes ``anchor_epochs`` passes over the rollout minimising ``anchor_coef * KL(initial ||
        current)`` (a distillation phase in the manner of Phasic Policy Gradient). The model stays a plain
        PPO / MaskablePPO: it loads with the SB3 class and packages with build-submission.
    :param anchor_epochs: passes over each rollout of the anchor term.
    """

    init_from: str = ""
    warm_start_games: int = 0
    warm_start_epochs: int = 20
    warm_start_lr: float = 1e-3
    anchor_coef: float = 0.0
    anchor_epochs: int = 1

    def validate(self, algo: str) -> None:
        for name in ("warm_start_games", "anchor_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"finetune.{name} = {getattr(self, name)} must be >= 0 (0: off)")
        for name in ("warm_start_epochs", "anchor_epochs"):
            if getattr(self, name) < 1:
                raise ValueError(f"finetune.{name} = {getattr(self, name)} must be >= 1")
        if not self.warm_start_lr > 0:
            raise ValueError(f"finetune.warm_start_lr = {self.warm_start_lr} must be > 0")
        if self.init_from:
            check_portable_path(self.init_from, "finetune.init_from")  # the file itself: checked when a run starts
            problem = not_utf8(str(self.init_from))
            if problem is not None:  # the run records where it started, in UTF-8 (config.yaml, the model's data)
                raise ValueError(f"finetune.init_from = {str(self.init_from)!r} (--init-from): its name holds "
                                 f"{problem}; the run records the model it starts from in UTF-8: rename the file, "
                                 "or copy it to a name in UTF-8")
        elif self.warm_start_games or self.anchor_coef:
            raise ValueError("finetune.warm_start_games and finetune.anchor_coef act on a trained model: set "
                             "finetune.init_from (or --init-from MODEL.zip), or set them to 0")
        if (self.warm_start_games or self.anchor_coef) and algorithm(algo).recurrent:
            raise ValueError("finetune.warm_start_games and finetune.anchor_coef are for ppo and maskable_ppo; "
                             "RecurrentPPO fine-tunes with --init-from alone (set them to 0)")


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
        games.get(self.game)  # a config names its game
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
