"""Training: the run's config (:mod:`.config`), the run itself (:mod:`.run`: train, resume, init-from), resumable
checkpoints (:mod:`.checkpoints`) and the SB3 callbacks (:mod:`.callbacks`; the held-out evaluation in
:mod:`.eval_callback`)."""

from .callbacks import (
    CompetitionEvalCallback,
    ConfigLogCallback,
    CurriculumCallback,
    MetricsCallback,
    RealmMetricsCallback,
)
from .checkpoints import CheckpointError, RunCheckpointCallback, latest_checkpoint, list_checkpoints, save_checkpoint
from .config import TrainConfig, config_from_dict, config_to_dict, load_config, save_config
from .run import build_model, make_vec_env, resume_config, train

__all__ = [
    "CheckpointError",
    "CompetitionEvalCallback",
    "ConfigLogCallback",
    "CurriculumCallback",
    "MetricsCallback",
    "RealmMetricsCallback",
    "RunCheckpointCallback",
    "TrainConfig",
    "build_model",
    "config_from_dict",
    "config_to_dict",
    "latest_checkpoint",
    "list_checkpoints",
    "load_config",
    "make_vec_env",
    "resume_config",
    "save_checkpoint",
    "save_config",
    "train",
]
