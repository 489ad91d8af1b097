"""The states of a study's trials as the budget counts them: finished, ``surplus`` (started past the budget by a
worker that raced another) and ``killed`` (a dead worker's, failed through the heartbeat); and the line that reports
each trial as it finishes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TextIO

import optuna
from optuna.trial import FrozenTrial, TrialState

__all__ = ["SURPLUS_KEY", "TrialLines", "is_counted", "is_killed", "is_surplus", "study_counts", "trial_line"]

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


def is_counted(t: optuna.trial.FrozenTrial) -> bool:
    """Whether the budget counts ``t`` as finished: complete, pruned, or failed by the objective."""
    return t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) and not is_killed(t) \
        and not is_surplus(t)


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min"


def trial_line(trial: FrozenTrial, finished: int, n_trials: int, best: FrozenTrial | None, elapsed: float) -> str:
    """One line for a finished trial: its number and how it ended (complete, pruned, diverged or failed), the
    study's finished trials out of ``n_trials`` with it, its score (a pruned trial's last reported one), the best
    trial so far, its own time and ``elapsed`` seconds, the time since the command started."""
    score: str | None
    if trial.state == TrialState.COMPLETE:
        ended, score = "complete", f"score {trial.value:.1f}"
    elif trial.state == TrialState.PRUNED:
        ended = "diverged" if "diverged" in trial.user_attrs else "pruned"
        last = trial.intermediate_values[max(trial.intermediate_values)] if trial.intermediate_values else None
        score = None if last is None else f"last score {last:.1f}"
    else:
        ended, score = "failed", None
    parts = [score] if score is not None else []
    parts.append("no complete trial yet" if best is None else f"best {best.value:.1f} (trial {best.number})")
    if trial.duration is not None:
        parts.append(f"took {_duration(trial.duration.total_seconds())}")
    parts.append(f"{_duration(elapsed)} in all")
    return f"trial {trial.number} {ended} ({finished}/{n_trials} finished): {', '.join(parts)}"


class TrialLines:
    """Writes :func:`trial_line` for each trial of a study that finishes from now on (what the budget counts: not a
    surplus trial, not a dead worker's), whichever worker ran it: call :meth:`update` with the study's trials now
    and then. Trials that had finished before are not reported, but count among the finished ones.

    :param talk: the text stream (``sys.stderr`` from the scripts).
    :param n_trials: the study's budget of finished trials.
    :param trials: the study's trials when the command starts.
    """

    def __init__(self, talk: TextIO, n_trials: int, trials: Sequence[FrozenTrial]) -> None:
        self.talk, self.n_trials = talk, n_trials
        self.reported = {t.number for t in trials if is_counted(t)}
        self.started = time.monotonic()

    def update(self, trials: Sequence[FrozenTrial], bar=None) -> None:
        """Report the trials that finished since the last call, in the order they finished (through ``bar.write``
        when a tqdm bar shows, so that the bar stays below the lines)."""
        counted = [t for t in trials if is_counted(t)]
        new = sorted((t for t in counted if t.number not in self.reported),
                     key=lambda t: (t.datetime_complete is None, t.datetime_complete or 0, t.number))
        finished = len(counted) - len(new)
        for trial in new:
            finished += 1
            done = [t for t in counted if t.state == TrialState.COMPLETE and t.value is not None
                    and (t.number in self.reported or t is trial)]
            best = max(done, key=lambda t: float(t.value or 0.0), default=None)  # done: values set
            line = trial_line(trial, finished, self.n_trials, best, time.monotonic() - self.started)
            if bar is not None:
                bar.write(line, file=self.talk)
            else:
                print(line, file=self.talk, flush=True)
            self.reported.add(trial.number)
