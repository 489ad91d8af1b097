"""Search spaces: ``sample_*(trial) -> dict`` draws parameters, ``convert_*(params, base) -> TrainConfig`` turns them
into a training config. The two are kept apart so that any stored trial (its ``params``) can be replayed later
without Optuna's sampler: ``convert_params(kind, trial.params, base)`` rebuilds exactly the config it trained.

Parameter names are Optuna's: reward weights keep the names of
:attr:`~sb3_realm.games.GameSpec.env.reward_weights`; the PPO space samples ``n_minibatches`` (batch_size =
n_steps * n_envs / n_minibatches, so it always divides the rollout) and ``one_minus_gamma`` (log scale) instead of
``batch_size`` and ``gamma``.
"""

from __future__ import annotations

import copy
from typing import Any

import optuna

from .. import games
from ..models.algorithms import algorithm
from ..training.config import TrainConfig

__all__ = [
    "KINDS",
    "NET_ARCHS",
    "baseline_params",
    "convert_hparams",
    "convert_params",
    "convert_rewards",
    "param_distributions",
    "sample_maskable_ppo_hparams",
    "sample_params",
    "sample_ppo_hparams",
    "sample_recurrent_ppo_hparams",
    "sample_rewards",
]

KINDS = ("rewards", "hparams")

CURRICULUM_FRACTION = (0.0, 0.6)  # share of total_timesteps spent in the easier first phase
NET_ARCHS = {"tiny": {"pi": [32], "vf": [32]}, "small": {"pi": [64], "vf": [64]},
             "medium": {"pi": [128, 128], "vf": [128, 128]}}
N_STEPS = (64, 128, 256, 512, 1024, 2048)
N_MINIBATCHES = (1, 2, 4, 8, 16)
LSTM_SIZES = (32, 64, 128, 256)
HPARAM_KEYS = ("learning_rate", "n_steps", "n_minibatches", "n_epochs", "one_minus_gamma", "gae_lambda", "clip_range",
               "ent_coef", "vf_coef", "max_grad_norm", "net_arch", "activation", "lstm_hidden_size")


def _full_treasures(base: TrainConfig) -> int:
    return base.spec.episodes.config.from_usr_conf(base.env.usr_conf).treasure_num


# ---------------------------------------------------------------------------------------------- rewards
def sample_rewards(trial, base: TrainConfig | None = None, curriculum: bool = False) -> dict:
    """The reward weights of the base config's game (None: :data:`~sb3_realm.games.LEGACY_GAME`'s, as before the
    package had a second game), each in its range of the game's
    :attr:`~sb3_realm.games.GameSpec.env.reward_ranges` (the Realm's 11); with ``curriculum`` also
    ``curriculum_treasures`` (treasures of an easier first phase, 0 .. the config's count) and
    ``curriculum_fraction`` (its share of the training steps; < 1 step = no curriculum)."""
    ranges = (base.spec if base is not None else games.GAMES[games.LEGACY_GAME]).env.reward_ranges
    params = {term: trial.suggest_float(term, low, high, log=log) for term, (low, high, log) in ranges.items()}
    if curriculum:
        if base is None:
            raise ValueError("sample_rewards(curriculum=True) needs the base config (its treasure count)")
        params["curriculum_treasures"] = trial.suggest_int("curriculum_treasures", 0, _full_treasures(base))
        params["curriculum_fraction"] = trial.suggest_float("curriculum_fraction", *CURRICULUM_FRACTION)
    return params


def convert_rewards(params: dict, base: TrainConfig) -> TrainConfig:
    """``base`` with the sampled reward weights (and curriculum phases). Weights missing from ``params`` keep the
    base config's values."""
    terms = base.spec.env.reward_terms
    unknown = sorted(set(params) - set(terms) - {"curriculum_treasures", "curriculum_fraction"})
    if unknown:
        raise ValueError(f"reward params {unknown} are not reward weights; valid keys are {list(terms)} and "
                         "curriculum_treasures / curriculum_fraction")
    config = copy.deepcopy(base)
    weights = {**config.env.reward_weights, **{k: float(v) for k, v in params.items() if k in terms}}
    config.env.reward_weights = base.spec.env.reward_weights.from_dict(weights).to_dict()
    if ("curriculum_treasures" in params) != ("curriculum_fraction" in params):
        raise ValueError(f"curriculum params need both curriculum_treasures and curriculum_fraction, got {params}")
    if "curriculum_treasures" in params:
        if config.curriculum:
            raise ValueError("the base config already has a curriculum; drop it (--set curriculum=[]) or do not "
                             "sample curriculum parameters")
        full, first = _full_treasures(config), int(params["curriculum_treasures"])
        until = int(float(params["curriculum_fraction"]) * config.total_timesteps)
        if until >= 1 and first != full:
            config.curriculum = [{"usr_conf": {"treasure_num": first}, "until_step": until},
                                 {"usr_conf": {"treasure_num": full}}]
    return config.validate()


# ---------------------------------------------------------------------------------------------- hyperparameters
def _n_steps_choices(base: TrainConfig | None) -> list[int]:
    """Rollout lengths that fit at least one rollout into the training budget (the choices are fixed per study)."""
    if base is None:
        return list(N_STEPS)
    fits = [n for n in N_STEPS if n * base.env.n_envs <= base.total_timesteps]
    return fits or [N_STEPS[0]]


def sample_ppo_hparams(trial, base: TrainConfig | None = None) -> dict:
    """PPO hyperparameters (learning rate, ent_coef, 1 - gamma and max_grad_norm on a log scale) and the MLP."""
    return {
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 3e-3, log=True),
        "n_steps": trial.suggest_categorical("n_steps", _n_steps_choices(base)),
        "n_minibatches": trial.suggest_categorical("n_minibatches", list(N_MINIBATCHES)),
        "n_epochs": trial.suggest_int("n_epochs", 1, 10),
        "one_minus_gamma": trial.suggest_float("one_minus_gamma", 1e-3, 0.05, log=True),
        "gae_lambda": trial.suggest_float("gae_lambda", 0.8, 1.0),
        "clip_range": trial.suggest_float("clip_range", 0.1, 0.4),
        "ent_coef": trial.suggest_float("ent_coef", 1e-6, 0.05, log=True),
        "vf_coef": trial.suggest_float("vf_coef", 0.2, 1.0),
        "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 5.0, log=True),
        "net_arch": trial.suggest_categorical("net_arch", list(NET_ARCHS)),
        "activation": trial.suggest_categorical("activation", ["tanh", "relu"]),
    }


def sample_maskable_ppo_hparams(trial, base: TrainConfig | None = None) -> dict:
    """MaskablePPO: the PPO space (the mask changes the policy, not the optimiser)."""
    return sample_ppo_hparams(trial, base)


def sample_recurrent_ppo_hparams(trial, base: TrainConfig | None = None) -> dict:
    """RecurrentPPO: the PPO space plus the LSTM's hidden size."""
    params = sample_ppo_hparams(trial, base)
    params["lstm_hidden_size"] = trial.suggest_categorical("lstm_hidden_size", list(LSTM_SIZES))
    return params


HPARAM_SAMPLERS = {"ppo": sample_ppo_hparams, "maskable_ppo": sample_maskable_ppo_hparams,
                   "recurrent_ppo": sample_recurrent_ppo_hparams}


def convert_hparams(params: dict, base: TrainConfig) -> TrainConfig:
    """``base`` with the sampled hyperparameters; keys missing from ``params`` keep the base config's values."""
    unknown = sorted(set(params) - set(HPARAM_KEYS))
    if unknown:
        raise ValueError(f"hyperparameter params {unknown} are unknown; valid keys are {list(HPARAM_KEYS)}")
    if "lstm_hidden_size" in params and not algorithm(base.algo.name).recurrent:
        raise ValueError(f"lstm_hidden_size is a RecurrentPPO parameter; the base config's algo.name is "
                         f"{base.algo.name!r}")
    config = copy.deepcopy(base)
    hp = config.algo.hyperparams
    for key in ("learning_rate", "n_epochs", "gae_lambda", "clip_range", "ent_coef", "vf_coef", "max_grad_norm"):
        if key in params:
            hp[key] = params[key]
    if "n_steps" in params:
        hp["n_steps"] = int(params["n_steps"])
    if "n_minibatches" in params:
        n_steps = int(hp.get("n_steps", config.algo.hyperparam("n_steps")))
        rollout = n_steps * config.env.n_envs  # env steps per rollout, all envs together
        if rollout % int(params["n_minibatches"]):
            raise ValueError(f"n_minibatches = {params['n_minibatches']} does not divide the rollout of {rollout} "
                             f"steps (n_steps {n_steps} x {config.env.n_envs} envs)")
        hp["batch_size"] = rollout // int(params["n_minibatches"])
    if "one_minus_gamma" in params:
        hp["gamma"] = 1.0 - float(params["one_minus_gamma"])
    if "net_arch" in params:
        if params["net_arch"] not in NET_ARCHS:
            raise ValueError(f"net_arch = {params['net_arch']!r}; choose one of {list(NET_ARCHS)}")
        config.algo.net_arch = copy.deepcopy(NET_ARCHS[params["net_arch"]])
    if "activation" in params:
        config.algo.activation = params["activation"]
    if "lstm_hidden_size" in params:
        config.algo.policy_kwargs = {**config.algo.policy_kwargs, "lstm_hidden_size": int(params["lstm_hidden_size"])}
    return config.validate()


# ---------------------------------------------------------------------------------------------- by kind
def sample_params(kind: str, trial, base: TrainConfig, curriculum: bool = False) -> dict:
    """``sample_rewards`` or the hyperparameter sampler of the base config's algorithm."""
    if kind == "rewards":
        return sample_rewards(trial, base, curriculum=curriculum)
    if kind == "hparams":
        if curriculum:
            raise ValueError("curriculum parameters belong to reward studies (tune_rewards.py)")
        return HPARAM_SAMPLERS[base.algo.name](trial, base)
    raise ValueError(f"study kind {kind!r}; choose one of {list(KINDS)}")


def _scratch_trial() -> optuna.Trial:
    """A trial of a study in memory, made without Optuna's "new study created" line."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return optuna.create_study().ask()
    finally:
        optuna.logging.set_verbosity(verbosity)


def param_distributions(kind: str, base: TrainConfig, curriculum: bool = False) -> dict:
    """The parameters a study of ``kind`` samples (what ``--enqueue`` dicts may hold), each with the Optuna
    distribution it is drawn from, in the sampler's order (asked of a scratch trial in memory)."""
    trial = _scratch_trial()
    sample_params(kind, trial, base, curriculum=curriculum)
    return dict(trial.distributions)


def convert_params(kind: str, params: dict, base: TrainConfig) -> TrainConfig:
    """The training config of a trial's ``params`` (``convert_rewards`` or ``convert_hparams``)."""
    if kind == "rewards":
        return convert_rewards(params, base)
    if kind == "hparams":
        return convert_hparams(params, base)
    raise ValueError(f"study kind {kind!r}; choose one of {list(KINDS)}")


def baseline_params(kind: str, base: TrainConfig, curriculum: bool = False) -> dict | None:
    """The params that reproduce ``base`` itself (enqueued as trial 0), or None when the base config lies outside
    the search space (e.g. a schedule string as learning rate)."""
    if kind == "rewards":
        params: dict[str, Any] = base.spec.env.reward_weights.from_dict(base.env.reward_weights).to_dict()
        if curriculum:
            params.update(curriculum_treasures=_full_treasures(base), curriculum_fraction=0.0)
        return params
    get = base.algo.hyperparam
    n_steps, batch = int(get("n_steps")), int(get("batch_size"))
    rollout = n_steps * base.env.n_envs
    arch = next((k for k, v in NET_ARCHS.items() if v == base.algo.net_arch), None)
    params = {"learning_rate": get("learning_rate"), "n_steps": n_steps,
              "n_minibatches": rollout // batch if rollout % batch == 0 else None, "n_epochs": get("n_epochs"),
              "one_minus_gamma": 1.0 - float(get("gamma")), "gae_lambda": get("gae_lambda"),
              "clip_range": get("clip_range"), "ent_coef": get("ent_coef"), "vf_coef": get("vf_coef"),
              "max_grad_norm": get("max_grad_norm"), "net_arch": arch, "activation": base.algo.activation}
    if algorithm(base.algo.name).recurrent:
        params["lstm_hidden_size"] = base.algo.policy_kwargs.get("lstm_hidden_size", 256)
    return params if _inside(params, base) else None


def _inside(params: dict, base: TrainConfig) -> bool:
    """Whether every value lies in the distribution the sampler would use for it (checked on a scratch trial)."""
    trial = _scratch_trial()
    HPARAM_SAMPLERS[base.algo.name](trial, base)
    for key, dist in trial.distributions.items():
        value = params.get(key)
        if isinstance(dist, optuna.distributions.CategoricalDistribution):
            if value not in dist.choices:
                return False
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        elif (isinstance(dist, (optuna.distributions.FloatDistribution, optuna.distributions.IntDistribution))
              and not dist.low <= value <= dist.high):  # (Optuna's other distributions: all Float or Int ones)
            return False
    return True
