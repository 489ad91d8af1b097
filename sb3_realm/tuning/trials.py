"""The states of a study's trials as the budget counts them: finished, ``surplus`` (started past the budget by a
worker that raced another) and ``killed`` (a dead worker's, failed through the heartbeat)."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

__all__ = ["SURPLUS_KEY", "study_counts", "is_surplus", "is_killed"]

SURPLUS_KEY = "surplus"


def study_counts(study: optuna.Study) -> dict[str, int]:
    """Trials by state; ``finished`` = complete + pruned + failed by the objective (not ``killed`` with a dead
    worker, not ``surplus``: started past the budget by a worker that raced another)."""
    trials = study.get_trials(deepcopy=False)
    counts = {s.name.lower(): sum(t.state == s for t in trials) for s in TrialState}
    counts["surplus"] = sum(is_surplus(t) for t in trials)
    counts["killed"] = sum(is_killed(t) for t in trials)
    counts["finished"] = counts["complete"] + counts["pruned"] + counts["fail"] - counts["killed"] - counts["surplus"]
    return counts


def is_surplus(t: optuna.trial.FrozenTrial) -> bool:
    return t.state == TrialState.FAIL and SURPLUS_KEY in t.user_attrs


def is_killed(t: optuna.trial.FrozenTrial) -> bool:
    return t.state == TrialState.FAIL and "fail_reason" not in t.user_attrs and not is_surplus(t)
