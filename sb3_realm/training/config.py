"""Training configuration: dataclasses loaded from YAML, validated, overridable with ``--set key=value``.

Unknown keys raise a ``ValueError`` listing the valid ones; values are type-checked; ``policy_kwargs`` are data
(activation functions by name, extractors by registry name): nothing is ever ``eval()``-ed.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..atomic import atomic_write, check_portable_path, not_a_file
from ..envs.rewards import RewardWeights
from ..game.rules import EpisodeConfig, Rules
from ..models.algorithms import ALGORITHMS, algorithm_class, schedule
from ..models.nets import ACTIVATIONS
from ..oracle import TIE_BREAKS
from ..oracle.refine import REFINE_SETTINGS, RefinedOraclePolicy, check_setting

__all__ = ["EnvConfig", "AlgoConfig", "ImitationConfig", "FinetuneConfig", "TrainConfig", "load_config",
           "apply_overrides", "config_to_dict", "config_from_dict", "save_config", "ALGORITHMS", "merge_config",
           "read_config_file", "RENAMED_CONFIGS", "COMPETITION_MAP"]

#: ``env.map_name`` of a recipe tuned for the competition's own map, which the package does not ship: such a config
#: runs only with ``env.map_path`` (``--map``)
COMPETITION_MAP = "competition"



@dataclass
class EnvConfig:
    """The training envs.

    :param map_path: map JSON in the official format; None = a built-in map (``map_name``).
    :param map_name: built-in map: ``default`` or ``small``; or ``competition`` for a recipe tuned for the
        competition's map, which is Tencent's and not shipped: such a config runs only with ``map_path`` (``--map``).
    :param usr_conf: the competition's episode configuration (``treasure_num``, ``max_step``, ...).
    :param reward_weights: :class:`~sb3_realm.envs.RewardWeights` overrides.
    :param rules: :class:`~sb3_realm.game.Rules` overrides.
    :param mask_wall_moves: the action mask also forbids moves straight into an adjacent wall.
    :param n_envs: parallel envs.
    :param vec_env: ``dummy`` (one process) or ``subproc`` (one process per env).
    :param frame_stack: stack this many observations (``VecFrameStack``) for the temporal extractors.
    :param normalize_reward: wrap in ``VecNormalize(norm_obs=False, norm_reward=True)``.
    """

    map_path: str | None = None
    map_name: str = "default"
    usr_conf: dict = field(default_factory=dict)
    reward_weights: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)
    mask_wall_moves: bool = False
    n_envs: int = 8
    vec_env: str = "dummy"
    frame_stack: int = 1
    normalize_reward: bool = False

    def validate(self) -> None:
        if self.map_name == COMPETITION_MAP and self.map_path is None:
            raise ValueError("env.map_name = 'competition': this recipe is tuned for the competition's map, which the "
                             "package does not ship; pass it with --map PATH/realm_map_1.json (or --set "
                             "env.map_path=PATH), or use a recipe for the shipped default map")
        EpisodeConfig.from_usr_conf(self.usr_conf)
        RewardWeights.from_dict(self.reward_weights)
        Rules.from_dict(self.rules)
        if self.vec_env not in ("dummy", "subproc"):
            raise ValueError(f"env.vec_env = {self.vec_env!r}; choose 'dummy' or 'subproc'")
        if self.n_envs < 1:
            raise ValueError(f"env.n_envs = {self.n_envs} must be >= 1")
        if self.frame_stack < 1:
            raise ValueError(f"env.frame_stack = {self.frame_stack} must be >= 1")

    def env_kwargs(self, usr_conf: bool = True) -> dict:
        """Keyword arguments of :class:`~sb3_realm.envs.RealmEnv` (without the episode configuration when
        ``usr_conf`` is False, e.g. for evaluations that bring their own games)."""
        kwargs = {"map_path": self.map_path, "map_name": self.map_name, "reward_weights": dict(self.reward_weights),
                  "rules": dict(self.rules), "mask_wall_moves": self.mask_wall_moves}
        return {**kwargs, **self.usr_conf} if usr_conf else kwargs


@dataclass
class AlgoConfig:
    """The algorithm and its network.

    :param name: ``ppo``, ``maskable_ppo`` or ``recurrent_ppo``.
    :param hyperparams: keyword arguments of the algorithm (``learning_rate``, ``n_steps``, ``batch_size``, ...),
        checked against its signature.
    :param extractor: features extractor by registry name (``realm``, ``conv3d``, ``transformer``) or ``default``
        (SB3's CombinedExtractor).
    :param extractor_kwargs: keyword arguments of the extractor.
    :param net_arch: policy/value MLP after the extractor, e.g. ``{pi: [64], vf: [64]}`` or ``[64, 64]``.
    :param activation: activation of that MLP, by name.
    :param policy_kwargs: other policy keyword arguments as plain data (``ortho_init``, ``lstm_hidden_size``, ...).
    """

    name: str = "ppo"
    hyperparams: dict = field(default_factory=dict)
    extractor: str = "realm"
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
    if key not in HYPERPARAM_RANGES or value is None and key in ("clip_range_vf", "target_kl"):
        return
    test, valid = HYPERPARAM_RANGES[key]
    number = schedule(value, key)(1.0) if isinstance(value, str) else value  # "lin_<x>": its start value x
    if isinstance(number, bool) or not isinstance(number, int | float) or not test(number):
        raise ValueError(f"algo.hyperparams.{key} = {value!r} is out of range: it must be {valid}")


@dataclass
class ImitationConfig:
    """Imitation of an expert (``sb3-realm imitate``): expert games, behaviour cloning, then DAgger rounds. The
    model, its network and the envs come from the rest of the config; ``train`` ignores this section.

    :param expert: the policy that labels every state: ``oracle`` (the planner), ``oracle-refined`` (its tour played
        step-exactly by a beam search, :mod:`sb3_realm.oracle.refine`: about 0.5 points a game better, about 1 s more
        a game to label) or an SB3 checkpoint path.
    :param expert_games: games the expert plays alone for the first dataset.
    :param rounds: DAgger rounds after the first fit: the learner plays ``dagger_games`` games, the expert labels
        every state it visits, the dataset grows and the policy is fitted again.
    :param dagger_games: games per DAgger round.
    :param screen_games: 0, or games the deterministic learner plays first in each DAgger round (batched, fast): the
        ones it loses are among the round's ``dagger_games`` (all of them if they fit), the rest drawn at random. With
        the sweep, the lost sweep games come first, and a round they fill skips the screening. The games put first are
        those the learner never finishes; for the choice of the best round (the sweep's count of lost games) a game is
        also lost when the end is reached with a treasure left.
    :param sweep: after every round the deterministic learner also plays the sweep: every treasure set of
        ``env.usr_conf``'s treasure count (C(13, 9) = 715 for the leaderboard's nine) and, for each other count in
        ``treasure_counts``, its fixed set and ``sweep_other`` random sets (from ``eval_seed``). A game is a function of
        its treasure set alone (the env seed draws only the set), so these are the competition's own games, and they
        are trained on: the sweep games the learner loses are labelled first in the next round, and the best model is
        the round with the fewest lost sweep games, ties broken by its mean score over the sets of ``env.usr_conf``'s
        count (the held-out games still give the ``eval/*`` curve). False: the best round by the held-out games.
    :param sweep_other: random sets per other treasure count in the sweep.
    :param sweep_all: the sweep holds every set of every other count of ``treasure_counts`` instead of ``sweep_other``
        random ones (with counts 0..13, all 8,192 sets of the 13 slots, about 9 times the default sweep's games), so
        no set of the competition's other games is left untried; when more sweep games are lost than a round labels,
        the lost games of ``env.usr_conf``'s count come first and the rest are drawn at random from the other lost
        ones (one game of each way of losing, rather than the first in order).
    :param sweep_label_left: with the sweep, the lost sweep games that reach the end with a treasure left are
        labelled too, after those the learner never finishes (before screened or fresh games). Measured with
        ``sweep_all`` on the default map, where after 8 rounds they were all the losses left.
    :param sweep_label_slow: with the sweep, up to this many of the sweep games of ``env.usr_conf``'s treasure count
        that the learner wins but plays slower than the expert's own game of the same set (at least
        ``sweep_slow_margin`` steps more) are labelled each round, the slowest first, after the lost sweep games and
        before screened or fresh games (within ``dagger_games``): DAgger where the competition's games lose steps, not
        only where they lose a treasure. The expert plays the sweep's sets once per run for that (the oracle: about
        3 min on the real map, 2 workers; ``oracle-refined``: about 15 min); the checkpoints keep its games, and a
        resume plays them again only for another expert, tie rule, ``refine_*`` setting or set of games.
    :param sweep_slow_margin: steps over the expert's game from which a won sweep game counts as slow.
    :param select_lost: with the sweep, which lost games choose the best round first: ``all`` (every count of the
        sweep) or ``main`` (only the sets of ``env.usr_conf``'s count, the leaderboard's games); then the mean score
        over those sets decides.
    :param dagger_max_steps: a DAgger game stops after this many steps (0: at max_step): once the learner loops, more
        of the same states teach nothing and cost labelling time.
    :param dagger_overrun: a DAgger game also stops once it runs this many steps past the oracle's own plan for it
        (0: only ``dagger_max_steps`` stops it).
    :param dagger_takeover: a DAgger game that reaches ``dagger_max_steps`` or its ``dagger_overrun`` is not cut:
        the expert takes over and plays it to the end, labelled (HG-DAgger's expert intervention), so the dataset
        holds the way out of a learner's loop.
    :param beta_rampdown: rounds over which ``beta``, the probability that a step plays the expert's action rather
        than the learner's, falls linearly from 1: ``beta = max(0, 1 - round / beta_rampdown)`` (round 1 is the first
        DAgger round; 0 = the learner plays every step from round 1).
    :param epochs: passes over the data in the first fit.
    :param dagger_epochs: passes over the whole dataset in each refit after a round.
    :param batch_size: states per gradient step.
    :param learning_rate: Adam's learning rate at the start of each fit (cosine decay to ``final_lr`` times it).
    :param dagger_learning_rate: the same for the refits after DAgger rounds (smaller: a refit corrects the policy
        where the learner went astray without unlearning the rest).
    :param final_lr: the learning rate at the end of a fit, as a fraction of its starting rate.
    :param ent_weight: weight of the entropy bonus in the loss.
    :param l2_weight: Adam's weight decay.
    :param treasure_counts: treasure counts the training games draw from, uniformly (repeat a count to weigh it);
        empty: the count of ``env.usr_conf``. Treasure sets are random; ``max_step`` and the rest are env.usr_conf's.
    :param window: RecurrentPPO: states per training window (episodes are cloned in order, the LSTM state carried
        from one window to the next); ``batch_size // window`` episodes go side by side in a gradient step.
    :param tie_break: how the oracle expert breaks exact ties of its cost-to-go, which it meets in over half of its
        states: ``index`` (the lowest action, as the oracle plays by default) or ``heading`` (the move closest to the
        straight line to the next node of its route): the labels the policy must reproduce then follow a rule it can
        read from its own observation (the target's direction), and it imitates them better.
    :param refine_beam_width: with ``expert: oracle-refined``, the states its beam search keeps per step (wider finds
        shorter games and labels slower: ``sb3_realm.oracle.refine``'s table).
    :param refine_max_refines: with ``expert: oracle-refined``, how many times a game it searches again from the exact
        state (the first step and each time a learner's move leaves its sequence); after that it labels the oracle's
        own actions.
    :param refine_departure_cost: with ``expert: oracle-refined``, the steps its beam charges for each move unlike
        the guide's (the oracle's, or with ``refine_guided: false`` the greedy one): the higher, the closer its games
        stay to the oracle's.
    :param refine_guided: with ``expert: oracle-refined``, whether departures are counted from the oracle's own move
        (slower, fewer moves unlike the oracle's) or from the greedy move of its cost-to-go.
    :param workers: processes that play the games (collection and held-out evaluation).
    """

    expert: str = "oracle"
    expert_games: int = 200
    rounds: int = 4
    dagger_games: int = 60
    screen_games: int = 0
    sweep: bool = False
    sweep_other: int = 20
    sweep_all: bool = False
    sweep_label_left: bool = False
    sweep_label_slow: int = 0
    sweep_slow_margin: int = 1
    select_lost: str = "all"
    dagger_max_steps: int = 800
    dagger_overrun: int = 0
    dagger_takeover: bool = False
    beta_rampdown: int = 1
    epochs: int = 8
    dagger_epochs: int = 3
    batch_size: int = 256
    learning_rate: float = 1e-3
    dagger_learning_rate: float = 3e-4
    final_lr: float = 0.05
    ent_weight: float = 0.0
    l2_weight: float = 0.0
    treasure_counts: list = field(default_factory=list)
    window: int = 64
    tie_break: str = "index"
    refine_beam_width: int = RefinedOraclePolicy.beam_width
    refine_max_refines: int = RefinedOraclePolicy.max_refines
    refine_departure_cost: float = RefinedOraclePolicy.departure_cost
    refine_guided: bool = RefinedOraclePolicy.guided
    workers: int = 2

    def refine_settings(self) -> tuple:
        """The ``oracle-refined`` expert's settings (``refine_*``) as ``(name, value)`` pairs, in
        :data:`~sb3_realm.oracle.refine.REFINE_SETTINGS` order."""
        return tuple((name, getattr(self, f"refine_{name}")) for name in REFINE_SETTINGS)

    def changed_refine_settings(self) -> dict:
        """The ``refine_*`` settings that differ from the refined oracle's defaults (what names a run's expert)."""
        return {name: value for name, value in self.refine_settings() if value != getattr(RefinedOraclePolicy, name)}

    def validate(self) -> None:
        for name in ("expert_games", "dagger_games", "epochs", "dagger_epochs", "batch_size", "window", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be >= 1")
        for name in ("rounds", "beta_rampdown", "dagger_max_steps", "dagger_overrun", "screen_games",
                     "sweep_other", "sweep_label_slow"):
            if getattr(self, name) < 0:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be >= 0")
        for name in ("learning_rate", "dagger_learning_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be > 0")
        if not 0 <= self.final_lr <= 1:
            raise ValueError(f"imitation.final_lr = {self.final_lr} must be in [0, 1] (a fraction of learning_rate)")
        for name in ("ent_weight", "l2_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"imitation.{name} = {getattr(self, name)} must be >= 0")
        for count in self.treasure_counts:
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 13:
                raise ValueError(f"imitation.treasure_counts holds {count!r}; each count must be an integer in 0..13")
        if not isinstance(self.expert, str) or not self.expert:
            raise ValueError(f"imitation.expert = {self.expert!r}; use 'oracle', 'oracle-refined' or the path of an "
                             "SB3 checkpoint")
        builtin = self.expert in ("oracle", "oracle-refined")
        if not builtin and not (Path(self.expert).is_file() and self.expert.endswith(".zip")):
            raise ValueError(f"imitation.expert = {self.expert!r} is neither 'oracle', 'oracle-refined' nor an "
                             "existing SB3 checkpoint (.zip); the oracle planner is the expert the package ships")
        if self.sweep_slow_margin < 1:
            raise ValueError(f"imitation.sweep_slow_margin = {self.sweep_slow_margin} must be >= 1 (steps over the "
                             "expert's own game)")
        for name in ("sweep_all", "sweep_label_left", "sweep_label_slow"):
            value = getattr(self, name)
            if value and not self.sweep:
                shown = "true" if value is True else value
                raise ValueError(f"imitation.{name} = {shown} needs imitation.sweep = true (it changes what the sweep "
                                 f"does); set both, or drop {name}")
        if self.select_lost not in ("all", "main"):
            raise ValueError(f"imitation.select_lost = {self.select_lost!r}; use 'all' (lost sweep games of every "
                             "count choose the best round) or 'main' (only those of env.usr_conf's treasure count)")
        if self.tie_break not in TIE_BREAKS:
            raise ValueError(f"imitation.tie_break = {self.tie_break!r}; use one of {list(TIE_BREAKS)}")
        for name, value in self.refine_settings():
            check_setting(name, value, label=f"imitation.refine_{name}")
        changed = self.changed_refine_settings()
        if changed and self.expert != "oracle-refined":
            name = next(iter(changed))
            raise ValueError(f"imitation.refine_{name} = {changed[name]!r} sets the beam search of the "
                             f"'oracle-refined' expert, but imitation.expert = {self.expert!r}; set imitation.expert: "
                             f"oracle-refined, or drop refine_{name}")

    def beta(self, round_no: int) -> float:
        """The expert's share of the played actions in DAgger round ``round_no`` (1, 2, ...)."""
        if self.beta_rampdown == 0:
            return 0.0
        return max(0.0, 1.0 - round_no / self.beta_rampdown)


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
        elif self.warm_start_games or self.anchor_coef:
            raise ValueError("finetune.warm_start_games and finetune.anchor_coef act on a trained model: set "
                             "finetune.init_from (or --init-from MODEL.zip), or set them to 0")
        if (self.warm_start_games or self.anchor_coef) and algo == "recurrent_ppo":
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
    :param eval_games: games of the held-out evaluation (leaderboard protocol with ``usr_conf``'s treasure count).
    :param eval_seed: seed of the held-out draw (use one you never train on).
    :param log_window: episodes in the moving averages of the ``train_episodes/*`` metrics.
    :param eval_route_every: every this many evaluations, also a route image of the first held-out game in
        TensorBoard (``eval/route``, the Images tab; about 3% of a run's time at 2); 0 = never. Tuning trials never
        draw them.
    :param curriculum: phases (see :class:`~sb3_realm.callbacks.CurriculumCallback`); empty = none.
    :param progress_bar: show a progress bar.
    :param feature_version: the features version (``sb3_realm.features.FEATURE_VERSION``) the run's models see;
        written by ``train`` when a run starts (leave it out of your configs; null in a run's config means a run from
        before versions were recorded, version 1).
    :param env: the envs (:class:`EnvConfig`).
    :param algo: the algorithm and its network (:class:`AlgoConfig`).
    :param imitation: imitation of an expert by ``sb3-realm imitate`` (:class:`ImitationConfig`).
    :param finetune: RL from a trained model (:class:`FinetuneConfig`); ``imitate`` ignores it.
    """

    total_timesteps: int = 1_000_000
    seed: int = 0
    device: str = "cpu"
    torch_threads: int = 1
    out: str = "runs/ppo"
    checkpoint_freq: int = 50_000
    keep_checkpoints: int = 3
    eval_freq: int = 100_000
    eval_games: int = 10
    eval_seed: int = 12345
    log_window: int = 100
    eval_route_every: int = 2
    curriculum: list = field(default_factory=list)
    progress_bar: bool = True
    feature_version: str | None = None
    env: EnvConfig = field(default_factory=EnvConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
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
        self.env.validate()
        self.algo.validate()
        self.imitation.validate()
        self.finetune.validate(self.algo.name)
        self._check_rollout()
        self._check_device()
        return self

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
def _check_type(value, hint, where: str):
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


def _parse_value(text: str):
    try:
        return yaml.safe_load(text)  # data only: numbers, strings, lists, mappings; never code
    except yaml.YAMLError as exc:
        raise ValueError(f"cannot parse value {text!r} ({exc})") from exc


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Apply ``key.sub=value`` overrides (values parsed as YAML data) to a config dict."""
    data = dict(data)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"--set {item!r}: expected key=value, e.g. --set algo.hyperparams.n_steps=256")
        key, _, raw = item.partition("=")
        parts = key.strip().split(".")
        node = data
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"--set {item!r}: {part!r} is not a section")
        node[parts[-1]] = _parse_value(raw)
    return data


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """``" at line L, column C: what"`` of a YAML error, on one line."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    return f"{where}: {problem}"


#: recipes that were renamed: the old file name -> the new path under ``configs/``; a config path that does not exist
#: and ends in an old name gets one line naming the new one
RENAMED_CONFIGS: dict[str, str] = {
    "imitate.yaml": "imitate/base.yaml", "imitate_default_map.yaml": "imitate/fifteen_minutes.yaml",
    "imitate_default_map_all_sets.yaml": "imitate/all_sets.yaml",
    "imitate_default_map_slow.yaml": "imitate/past_the_oracle.yaml",
    "imitate_real_map.yaml": "imitate/competition_fifteen_minutes.yaml",
    "imitate_real_map_all_sets.yaml": "imitate/competition_all_sets.yaml",
    "imitate_real_map_slow.yaml": "imitate/competition_oracle_level.yaml",
    "imitate_real_map_refined.yaml": "imitate/competition_past_the_oracle.yaml",
}


def _read_yaml(path: str | os.PathLike) -> dict:
    """One config file's own mapping (its ``base:`` not followed)."""
    p = Path(path)
    problem = not_a_file(path)
    if problem:
        renamed = RENAMED_CONFIGS.get(p.name) if p.name and not p.exists() else None
        if renamed:
            raise ValueError(f"config file {str(path)!r} {problem}: that recipe is now configs/{renamed} (the "
                             "recipes were renamed by purpose); pass --config configs/" + renamed)
        raise ValueError(f"config file {str(path)!r} {problem}; see configs/ for examples")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"config file {str(p)!r} is not valid YAML{_yaml_problem(exc)}; fix it (configs/ppo.yaml "
                         "shows the shape)") from exc
    if not isinstance(data, dict):
        raise ValueError(f"config file {str(p)!r} holds a {type(data).__name__}, not a mapping of keys (seed:, "
                         "env:, algo:, ...); see configs/ppo.yaml for the shape")
    return data


def merge_config(base: dict, overlay: dict) -> dict:
    """``overlay`` laid over ``base``: mappings merge key by key (at any depth), anything else (a number, a string,
    a list) is replaced whole by the overlay's value."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_config_file(path: str | os.PathLike, _chain: tuple[Path, ...] = ()) -> dict:
    """The mapping of a config file with its ``base:`` resolved: ``base: FILE`` (relative to the file's own folder)
    names the config it extends, and the file lists only what differs (merged by :func:`merge_config`; a base may
    have its own base). The result holds no ``base`` key: it is the whole config."""
    data = _read_yaml(path)
    if "base" not in data:
        return data
    base = data.pop("base")
    if not isinstance(base, str) or not base.strip():
        raise ValueError(f"config file {str(path)!r}: base = {base!r}; it must name the config file this one extends, "
                         "relative to its folder (e.g. base: base.yaml)")
    here = Path(path).resolve()
    target = (here.parent / base).resolve()
    chain = (*_chain, here)
    if target in chain:
        loop = " -> ".join(str(p.name) for p in (*chain, target))
        raise ValueError(f"config file {str(path)!r}: base = {base!r} makes a loop ({loop}); a base must not extend "
                         "the file that names it")
    if not target.is_file():
        raise ValueError(f"config file {str(path)!r}: base = {base!r} is not a file ({target}); name the config it "
                         "extends, relative to its folder")
    return merge_config(read_config_file(target, chain), data)


def load_config(path: str | os.PathLike | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Load a YAML config (or the defaults when ``path`` is None) with its ``base:`` chain
    (:func:`read_config_file`), apply ``--set`` overrides, validate. The result is the whole resolved config: what a
    run's ``config.yaml`` records, so a run never depends on the base file later."""
    data = read_config_file(path) if path is not None else {}
    data = apply_overrides(data, overrides or [])
    return _from_dict(TrainConfig, data, "").validate()


def config_from_dict(data: dict, overrides: list[str] | None = None) -> TrainConfig:
    """A validated config from a plain dict (as made by :func:`config_to_dict`), with ``--set`` overrides."""
    return _from_dict(TrainConfig, apply_overrides(copy.deepcopy(data), overrides or []), "").validate()


def save_config(config: TrainConfig, path: str | os.PathLike) -> Path:
    """Write the resolved config as YAML, atomically."""
    text = yaml.safe_dump(config_to_dict(config), sort_keys=False)
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))
