"""The sections of a training run's config: the envs (:class:`EnvConfig`), the algorithm and its network
(:class:`AlgoConfig`, its hyperparameters checked against their valid ranges) and RL from a trained model
(:class:`FinetuneConfig`). :class:`~sb3_realm.training.config.TrainConfig` holds them."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any

from .. import games
from ..arguments import not_utf8
from ..atomic import check_portable_path
from ..executors import RayNotInstalledError, check_executor
from ..models.algorithms import ALGORITHMS, algorithm, algorithm_class, schedule
from ..models.nets import ACTIVATIONS

__all__ = [
    "COMPETITION_MAP",
    "HYPERPARAM_RANGES",
    "MAX_REWARD_WEIGHT",
    "VEC_ENVS",
    "AlgoConfig",
    "EnvConfig",
    "FinetuneConfig",
]


#: ``env.map_name`` of a recipe tuned for the competition's own map, which the package does not ship: such a config
#: runs only with ``env.map_path`` (``--map``)
COMPETITION_MAP = "competition"

#: ``env.vec_env``'s choices: every env in this process, one process per env, Ray actors of ``env.envs_per_actor``
#: envs each
VEC_ENVS = ("dummy", "subproc", "ray")

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
    :param vec_env: ``dummy`` (every env in this process), ``subproc`` (one process per env) or ``ray`` (Ray
        actors of ``envs_per_actor`` envs each, on this machine or a Ray cluster: ``$RAY_ADDRESS``; the optional extra
        ``pip install 'sb3-realm[ray]'``).
    :param envs_per_actor: with ``vec_env: ray``, the envs each Ray actor steps as one batch (the last actor may have
        fewer).
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
    envs_per_actor: int = 8
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
        self._check_vec_env()
        if self.n_envs < 1:
            raise ValueError(f"env.n_envs = {self.n_envs} must be >= 1")
        if self.frame_stack < 1:
            raise ValueError(f"env.frame_stack = {self.frame_stack} must be >= 1")

    def _check_vec_env(self) -> None:
        if self.vec_env not in VEC_ENVS:
            raise ValueError(f"env.vec_env = {self.vec_env!r} is not a vec env; choose one of {list(VEC_ENVS)} (dummy: "
                             "every env in this process; subproc: one process per env; ray: Ray actors of "
                             "env.envs_per_actor envs each)")
        n = self.envs_per_actor
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"env.envs_per_actor = {n!r} must be an integer >= 1 (the envs each Ray actor steps with "
                             "env.vec_env: ray), e.g. 8")
        if self.vec_env == "ray":
            try:
                check_executor("ray")
            except RayNotInstalledError as exc:
                raise RayNotInstalledError(
                    "env.vec_env = 'ray' needs Ray, which is not installed: install the optional extra with pip "
                    "install -e '.[ray]' in a checkout (pip install 'sb3-realm[ray]' otherwise), or choose "
                    "env.vec_env: subproc (one process per env) or dummy") from exc

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
