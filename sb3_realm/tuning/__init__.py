"""Optuna studies over reward weights and hyperparameters, judged by the competition score on held-out games.

``sample_*(trial) -> dict`` and ``convert_*(params, base) -> TrainConfig`` (:mod:`.space`), storages with heartbeats
(:mod:`.storage`), the objective and its pruning callback (:mod:`.objective`), a study's config (:mod:`.study_config`),
studies and workers (:mod:`.study`), outputs (:mod:`.outputs`); the scripts ``tuning/tune_rewards.py`` /
``tuning/tune_hparams.py`` are thin wrappers over :func:`.script.main`.
"""

from .objective import TrialEvalCallback, eval_configs, objective
from .outputs import write_outputs
from .space import (
    KINDS,
    baseline_params,
    convert_hparams,
    convert_params,
    convert_rewards,
    sample_maskable_ppo_hparams,
    sample_params,
    sample_ppo_hparams,
    sample_recurrent_ppo_hparams,
    sample_rewards,
)
from .storage import HeartbeatJournalStorage, make_storage, storage_kind
from .study import (
    PRUNERS,
    StudyConfig,
    load_study,
    make_pruner,
    open_study,
    run_study,
    run_worker,
    study_counts,
    trial_config,
)

__all__ = [
    "KINDS",
    "PRUNERS",
    "HeartbeatJournalStorage",
    "StudyConfig",
    "TrialEvalCallback",
    "baseline_params",
    "convert_hparams",
    "convert_params",
    "convert_rewards",
    "eval_configs",
    "load_study",
    "make_pruner",
    "make_storage",
    "objective",
    "open_study",
    "run_study",
    "run_worker",
    "sample_maskable_ppo_hparams",
    "sample_params",
    "sample_ppo_hparams",
    "sample_recurrent_ppo_hparams",
    "sample_rewards",
    "storage_kind",
    "study_counts",
    "trial_config",
    "write_outputs",
]
