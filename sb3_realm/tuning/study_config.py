"""The config of a study (:class:`StudyConfig`): what it tunes, the base training config every trial starts from,
its storage, folder and budget, and its pruner; :meth:`StudyConfig.validate` checks it all before a study starts.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import optuna

from .. import games
from ..atomic import check_portable_path
from ..training.config import TrainConfig, config_to_dict
from .outputs import STORAGE_COMPANIONS, STUDY_FILES
from .space import KINDS, baseline_params, convert_params, param_distributions
from .storage import make_storage, storage_kind, storage_path

__all__ = ["PRUNERS", "StudyConfig"]

PRUNERS = ("median", "wilcoxon", "halving", "none")


@dataclass
class StudyConfig:
    """A study.

    :param kind: ``rewards`` (reward weights, optionally curriculum) or ``hparams`` (the algorithm's
        hyperparameters).
    :param base: the training config every trial starts from (its eval_seed / eval_games / eval_freq define the
        held-out evaluation; its total_timesteps the budget of a trial).
    :param name: the study name in the storage.
    :param storage: storage URL (see :mod:`sb3_realm.tuning.storage`).
    :param out: study folder: ``trials/trial_NNNN`` run folders (TensorBoard under each), best.yaml, trials.csv,
        HTML plots, study.json.
    :param n_trials: finished trials the study aims for, all workers together.
    :param pruner: ``median`` (intermediate evaluations), ``wilcoxon`` (paired test over the held-out games),
        ``halving`` (successive halving) or ``none``.
    :param train_seeds: training runs (seeds ``seed``, ``seed + 1``, ...) per trial; the objective is their mean.
    :param curriculum: reward studies: also sample an easier first curriculum phase.
    :param heartbeat_interval: seconds between heartbeats of a running trial.
    :param grace_period: seconds without a heartbeat after which a trial counts as its worker's death.
    :param max_retry: how many times the parameters of a killed worker's trial are enqueued again.
    :param sampler_seed: seed of the TPE sampler (worker i uses seed + i); None = random.
    :param enqueue: extra parameter dicts to try first (partial dicts: the rest is sampled).
    :param poll_interval: seconds between looks at the storage while waiting for other workers.
    """

    kind: str
    base: TrainConfig
    name: str
    storage: str
    out: str
    n_trials: int = 20
    pruner: str = "median"
    train_seeds: int = 1
    curriculum: bool = False
    heartbeat_interval: int = 30
    grace_period: int = 120
    max_retry: int = 1
    sampler_seed: int | None = None
    enqueue: list = field(default_factory=list)
    poll_interval: float = 2.0

    def validate(self) -> StudyConfig:
        if self.kind not in KINDS:
            raise ValueError(f"kind = {self.kind!r}; choose one of {list(KINDS)}")
        if self.pruner not in PRUNERS:
            raise ValueError(f"--pruner {self.pruner!r}; choose one of {list(PRUNERS)}")
        for key in ("n_trials", "train_seeds", "heartbeat_interval", "grace_period"):
            if getattr(self, key) < 1:
                raise ValueError(f"{key} = {getattr(self, key)} must be >= 1")
        if self.max_retry < 0:
            raise ValueError(f"max_retry = {self.max_retry} must be >= 0")
        if self.grace_period <= self.heartbeat_interval:
            raise ValueError(f"grace_period = {self.grace_period} s must exceed heartbeat_interval = "
                             f"{self.heartbeat_interval} s, or live trials would be failed as stale")
        storage_kind(self.storage)
        check_portable_path(self.name, "--study-name")  # it names the study's folder, runs/study-<name>
        check_portable_path(self.out, "--out")
        self.base.validate()
        if self.curriculum and not self.base.spec.episodes.treasure_sets:
            sets = ", ".join(spec.title for spec in games.GAMES.values() if spec.episodes.treasure_sets)
            raise ValueError(f"--curriculum samples an easier first phase by its treasure count (the treasure_num of "
                             f"a game of treasure sets{': ' + sets if sets else ''}), which {self.base.spec.title} "
                             "does not vary that way; drop --curriculum and write the curriculum: phases in the config "
                             "instead")
        if self.pruner == "wilcoxon" and not self.base.spec.episodes.treasure_sets:
            raise ValueError(f"--pruner wilcoxon replays the held-out games one by one as treasure sets, which "
                             f"{self.base.spec.title}'s games are not (they differ by map and env seed); use --pruner "
                             "median, halving or none")
        # the map and its usr_conf, before a study stores them
        env = self.base.spec.env.make(**self.base.env.env_kwargs(game=self.base.spec))
        try:
            env.reset(seed=0)
        finally:
            env.close()
        distributions = param_distributions(self.kind, self.base, self.curriculum)
        names = list(distributions)
        baseline = baseline_params(self.kind, self.base, self.curriculum) if self.enqueue else None
        for params in self.enqueue:
            if not isinstance(params, dict):
                raise ValueError(f"--enqueue {params!r}: not a dict; the parameters of this {self.kind} study are "
                                 f"{names}")
            unknown = sorted(set(params) - set(names))
            if unknown:
                raise ValueError(f"--enqueue {params!r}: unknown keys {unknown}; the parameters of this {self.kind} "
                                 f"study are {names}")
            for key, value in params.items():
                problem = _enqueued_value_problem(value, distributions[key])
                if problem:
                    raise ValueError(f"--enqueue {params!r}: {key} = {value!r} {problem}")
            try:  # the config it trains, the rest of the parameters the base config's own
                convert_params(self.kind, {**(baseline or {}), **params}, self.base)
            except ValueError as exc:
                raise ValueError(f"--enqueue {params!r}: {exc}") from None
        return self

    def folder_names(self) -> list[str]:
        """What the study folder ``out`` may hold: :data:`~sb3_realm.tuning.outputs.STUDY_FILES`, and the storage's
        file with its companions when it lies there."""
        databases = ["study.db"]
        path = storage_path(self.storage)
        if path is not None and Path(os.path.realpath(path.parent)) == Path(os.path.realpath(self.out)):
            databases.append(path.name)
        return [*STUDY_FILES, *databases, *(name + end for name in databases for end in STORAGE_COMPANIONS)]

    def make_storage(self, create: bool = True):
        return make_storage(self.storage, self.heartbeat_interval, self.grace_period, self.max_retry, create)

    def meta(self) -> dict:
        return {"kind": self.kind, "base_config": config_to_dict(self.base), "curriculum": self.curriculum}


def _enqueued_value_problem(value, distribution) -> str | None:
    """Why an ``--enqueue`` value cannot be a trial's value of ``distribution`` (None when it can). A number outside
    the sampled range is allowed (Optuna warns): trying a value the sampler would not is what enqueuing is for."""
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        if not isinstance(value, bool) and value in distribution.choices:
            return None
        return f"is not one of its choices {list(distribution.choices)}; give one of them"
    low, high = distribution.low, distribution.high
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"is not a finite number; give a number (the study samples it from {low} to {high})"
    if isinstance(distribution, optuna.distributions.IntDistribution) and value != int(value):
        return f"is not a whole number; give one (the study samples it from {low} to {high})"
    return None
