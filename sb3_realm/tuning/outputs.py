"""Output folders: the check every script under ``benchmarks/`` and ``tuning/`` makes of its ``--out`` before it
writes anything (:func:`check_output_folder`: a new or empty folder, or one of the script's own earlier outputs,
never any other folder), and the study folder's outputs, each written atomically: ``best.yaml`` (a full config for
``sb3-realm train --config``), ``trials.csv``, HTML plots (optimization history, parameter importances, parallel
coordinates) and ``study.json`` (the summary the scripts print)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import optuna

from ..atomic import atomic_write, check_writable_folder, remove_made, temp_names
from ..training.config import save_config
from .space import convert_params
from .trials import SURPLUS_KEY, study_counts

__all__ = ["PLOTS", "STUDY_FILES", "check_output_folder", "failed_trials", "remove_outputs", "write_outputs"]

PLOTS = ("optimization_history", "param_importances", "parallel_coordinate")
#: what a study folder holds (the default SQLite storage among them)
STUDY_FILES = ("trials", "best.yaml", "trials.csv", "study.json", *(f"{name}.html" for name in PLOTS), "study.db")
#: what a database file brings beside itself: SQLite's rollback journal and write-ahead log, the journal file's lock
STORAGE_COMPANIONS = ("-journal", "-wal", "-shm", ".lock")


def _owned(name: str, own: Sequence[str | re.Pattern]) -> bool:
    """Whether ``name`` is one of ``own`` (exact names, or patterns matching the whole name) or the temporary file
    an atomic write of one of them leaves behind when killed."""
    for item in own:
        if isinstance(item, re.Pattern):
            if item.fullmatch(name):
                return True
        elif name == item or temp_names(item).fullmatch(name):
            return True
    return False


def _listed(names: list[str], most: int = 5) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def check_output_folder(path: str | os.PathLike, own: Sequence[str | re.Pattern], *, markers: Sequence[str] = (),
                        what: str = "--out", script: str = "this script") -> list[Path]:
    """Check the output folder of a script before it writes anything; returns the entries of an earlier output of the
    script found there (empty for a new or empty folder), which the caller keeps (a resumed run) or removes with
    :func:`remove_outputs` (a replaced one).

    A ``ValueError`` naming the path and the fix refuses an empty path (it would write into the current folder), one
    that cannot be written (:func:`~sb3_realm.atomic.check_writable_folder`), and an existing folder that is not an
    earlier output of the script: one holding anything but ``own`` (exact names, or patterns for names with a
    number in them; an atomic write's leftover of one counts as it), or, when ``markers`` are given, none of them
    (the file a run of the script writes first, so that a folder of the same names made by someone else is not
    taken for one).
    """
    folder = check_writable_folder(path, what)
    if not folder.is_dir():
        return []
    entries = sorted(folder.iterdir())
    if not entries:
        return []
    foreign = [p.name for p in entries if not _owned(p.name, own)]
    if foreign:
        raise ValueError(f"{what} {str(path)!r} is not an earlier output of {script}: it holds {_listed(foreign)}, "
                         f"which {script} does not write. Nothing was touched; give a new or empty folder")
    if markers and not any((folder / name).exists() for name in markers):
        raise ValueError(f"{what} {str(path)!r} is not an earlier output of {script}: it holds "
                         f"{_listed([p.name for p in entries])} but not {' or '.join(repr(m) for m in markers)}, "
                         f"which {script} writes first. Nothing was touched; give a new or empty folder")
    return entries


def remove_outputs(folder: str | os.PathLike, entries: Sequence[Path]) -> None:
    """Remove ``entries`` of ``folder`` (what :func:`check_output_folder` found of a script's earlier output): each
    with :func:`~sb3_realm.atomic.remove_made`, so nothing outside ``folder`` is followed or removed."""
    for entry in entries:
        remove_made(entry, folder)


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
               "n_trials": config.n_trials, "trials": counts, "best": best, "failed": failed_trials(study),
               "baseline_value": _baseline_value(study), "mean_complete_value": (sum(values) / len(values))
               if values else None, "files": files, "skipped": skipped,
               "dashboard": f"optuna-dashboard {config.storage}"}
    files["study_json"] = str(out / "study.json")
    _write_text(out / "study.json", json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def failed_trials(study: optuna.Study) -> list[dict]:
    """The trials the objective failed (not a dead worker's, not a surplus one), each ``{"number", "reason"}``."""
    return [{"number": t.number, "reason": str(t.user_attrs["fail_reason"])}
            for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.FAIL,))
            if "fail_reason" in t.user_attrs and SURPLUS_KEY not in t.user_attrs]


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
