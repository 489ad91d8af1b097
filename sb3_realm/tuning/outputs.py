"""The study folder's outputs, each written atomically: ``best.yaml`` (a full config for ``sb3-realm train
--config``), ``trials.csv``, HTML plots (optimization history, parameter importances, parallel coordinates) and
``study.json`` (the summary the scripts print)."""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from dataclasses import replace
from pathlib import Path

import optuna

from ..atomic import atomic_write
from ..training.config import save_config
from .space import convert_params
from .trials import study_counts

__all__ = ["write_outputs", "PLOTS"]

PLOTS = ("optimization_history", "param_importances", "parallel_coordinate")


def _write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def _plot(name: str, study: optuna.Study):
    from optuna import visualization as vis

    if name == "optimization_history":
        return vis.plot_optimization_history(study)
    if name == "param_importances":  # PED-ANOVA: no scikit-learn needed (fANOVA, Optuna's default, needs it)
        return vis.plot_param_importances(study, evaluator=optuna.importance.PedAnovaImportanceEvaluator())
    return vis.plot_parallel_coordinate(study)


def write_outputs(study: optuna.Study, config) -> dict:
    """Write the outputs of ``study`` (a :class:`~sb3_realm.tuning.study.StudyConfig`'s) under ``config.out``;
    returns the summary also written to ``study.json``. A plot that cannot be drawn yet (e.g. importances before
    two complete trials) is listed under ``skipped`` with the reason."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    counts = study_counts(study)
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}
    best = None
    complete = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    if complete:
        trial = study.best_trial
        best_config = replace(convert_params(config.kind, dict(trial.params), config.base),
                              out=str(out / "best_run"))
        files["best_yaml"] = str(save_config(best_config, out / "best.yaml"))
        best = {"number": trial.number, "value": trial.value, "params": trial.params}
    else:
        skipped["best_yaml"] = "no complete trial"
    files["trials_csv"] = str(_write_text(out / "trials.csv", trials_csv(study)))
    for name in PLOTS:
        if len(complete) < (2 if name != "optimization_history" else 1):
            skipped[name] = f"needs {'two complete trials' if name != 'optimization_history' else 'a complete trial'}"
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fig = _plot(name, study)
        except (ImportError, ValueError, RuntimeError, ZeroDivisionError) as exc:
            skipped[name] = f"{type(exc).__name__}: {exc}"
            continue
        html = fig.to_html(include_plotlyjs=True, full_html=True)  # plotly.js inside: works offline
        files[name] = str(_write_text(out / f"{name}.html", html))
    values = [t.value for t in complete if t.value is not None and math.isfinite(t.value)]
    summary = {"study": config.name, "storage": config.storage, "kind": config.kind, "out": str(out),
               "n_trials": config.n_trials, "trials": counts, "best": best,
               "baseline_value": _baseline_value(study), "mean_complete_value": (sum(values) / len(values))
               if values else None, "files": files, "skipped": skipped,
               "dashboard": f"optuna-dashboard {config.storage}"}
    files["study_json"] = str(out / "study.json")
    _write_text(out / "study.json", json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def trials_csv(study: optuna.Study) -> str:
    """One row per trial, the columns of ``study.trials_dataframe()`` (without needing pandas): number, state,
    value, times, ``params_*`` and ``user_attrs_*`` (the full ``config`` left out: it is in best.yaml), and
    ``retry_of`` for trials that re-run a killed worker's trial."""
    trials = study.get_trials(deepcopy=False)
    params = sorted({k for t in trials for k in t.params})
    attrs = sorted({k for t in trials for k in t.user_attrs} - {"config"})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["number", "state", "value", "datetime_start", "datetime_complete", "duration_s",
                     *[f"params_{k}" for k in params], *[f"user_attrs_{k}" for k in attrs], "retry_of"])
    for t in trials:
        duration = (t.datetime_complete - t.datetime_start).total_seconds() if t.datetime_complete and \
            t.datetime_start else None
        writer.writerow([t.number, t.state.name, t.value, t.datetime_start, t.datetime_complete, duration,
                         *[t.params.get(k) for k in params],
                         *[_cell(t.user_attrs[k]) if k in t.user_attrs else None for k in attrs],
                         t.system_attrs.get("failed_trial")])
    return buffer.getvalue()


def _cell(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _baseline_value(study: optuna.Study) -> float | None:
    """The value of trial 0 (the base config's own parameters when the study enqueued them)."""
    first = [t for t in study.get_trials(deepcopy=False) if t.number == 0]
    return first[0].value if first and first[0].state == optuna.trial.TrialState.COMPLETE else None
