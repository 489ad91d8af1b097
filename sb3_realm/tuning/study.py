"""Studies: create or join one, run workers (in this process, K processes on this host or K Ray tasks on a cluster),
replay a stored trial (their config, :class:`~sb3_realm.tuning.study_config.StudyConfig`, is in
:mod:`sb3_realm.tuning.study_config`).

The study stores its kind (``rewards`` / ``hparams``), the base training config and the sampling options as the
user attribute ``sb3_realm``, so that any worker (on any machine) and ``sb3-realm train --from-study`` can rebuild a
trial's config from its ``params`` alone. ``n_trials`` is the study's total of finished trials (complete, pruned or
failed by the objective), shared by all workers; trials of killed workers do not count (they end FAILED through the
heartbeat and are retried up to ``max_retry`` times). The budget is exact even when workers race: a trial that finds
``n_trials`` live trials numbered before it (finished, running or waiting) ends at once, FAILED with the user
attribute ``surplus``, without training (an enqueued trial's parameters are enqueued again), and counts for nothing.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any, TextIO

import optuna
from optuna.trial import TrialState

from .. import games
from ..executors import RETRIES, check_executor, connect_ray, disconnect_ray
from ..processes import mp_context
from ..training.config import TrainConfig, config_from_dict
from .objective import objective
from .outputs import check_output_folder, write_outputs
from .space import KINDS, baseline_params, convert_params
from .storage import make_storage, storage_kind
from .study_config import PRUNERS, StudyConfig
from .trials import SURPLUS_KEY, TrialLines, is_killed, is_surplus, study_counts

__all__ = [
    "PRUNERS",
    "StudyConfig",
    "load_study",
    "make_pruner",
    "open_study",
    "run_study",
    "run_worker",
    "study_counts",
    "trial_config",
]

META_KEY = "sb3_realm"
METRIC_NAME = "mean competition score (held-out games)"


def make_pruner(name: str, base: TrainConfig) -> optuna.pruners.BasePruner:
    """The pruner by name (see :class:`StudyConfig`)."""
    if name == "median":  # reported steps are env steps: skip the first third of training
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=base.total_timesteps // 3)
    if name == "wilcoxon":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ValueError(f"--pruner {name!r}; choose one of {list(PRUNERS)}")


def _sampler(config: StudyConfig, worker: int) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        seed = None if config.sampler_seed is None else config.sampler_seed + worker
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(10, max(2, config.n_trials // 3)),
                                          multivariate=True, constant_liar=True)


def _differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{path}.{k}".lstrip("."))]
    return [] if a == b else [f"{path}: stored {a!r}, given {b!r}"]


def load_study(storage_url: str, name: str, storage=None) -> tuple[optuna.Study, dict]:
    """An existing sb3_realm study and its stored ``sb3_realm`` attribute (kind, base_config, curriculum)."""
    storage = storage if storage is not None else make_storage(storage_url, create=False)
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        names = optuna.get_all_study_names(storage)
        raise ValueError(f"no study {name!r} in {storage_url}; studies there: {names}") from None
    meta = study.user_attrs.get(META_KEY)
    if not isinstance(meta, dict) or meta.get("kind") not in KINDS or "base_config" not in meta:
        raise ValueError(f"study {name!r} in {storage_url} was not made by sb3_realm's tuning scripts (no "
                         f"{META_KEY!r} user attribute with kind and base_config)")
    return study, meta


def open_study(config: StudyConfig, worker: int = 0, enqueue: bool = True) -> optuna.Study:
    """Create the study (storing its kind and base config, enqueuing the base config's own parameters as trial 0
    and ``config.enqueue``), or join it (enqueuing ``config.enqueue`` unless ``enqueue`` is False), checking that it
    was made with the same kind and base config."""
    storage = config.make_storage()
    sampler, pruner = _sampler(config, worker), make_pruner(config.pruner, config.base)
    for attempt in range(3):
        try:
            study = optuna.create_study(study_name=config.name, storage=storage, sampler=sampler, pruner=pruner,
                                        direction="maximize", load_if_exists=True)
            break
        except Exception as exc:  # two scripts created it at once: this one joins it
            if attempt == 2 or not _created_meanwhile(exc):
                raise
            time.sleep(0.2)
    meta = study.user_attrs.get(META_KEY)
    if meta is None:
        with warnings.catch_warnings():  # experimental in Optuna 3.x / 4.x
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names([METRIC_NAME])  # optuna-dashboard's name for the objective
        study.set_user_attr(META_KEY, config.meta())
        first = baseline_params(config.kind, config.base, config.curriculum)
        for params in ([first] if first is not None else []) + list(config.enqueue):
            study.enqueue_trial(params, skip_if_exists=True)
        return study
    if study.direction != optuna.study.StudyDirection.MAXIMIZE:
        raise ValueError(f"study {config.name!r} minimises; sb3_realm studies maximise the competition score")
    diffs = _differences(meta, config.meta())
    if diffs:
        raise ValueError(f"study {config.name!r} in {config.storage} was created with another kind or base config: "
                         f"{'; '.join(diffs[:8])}. Use a new --study-name, or join it without --config/--set so "
                         "that the stored base config is used")
    for params in config.enqueue if enqueue else []:
        study.enqueue_trial(params, skip_if_exists=True)
    return study


def _created_meanwhile(exc: Exception) -> bool:
    """Whether creating a study failed because another process created it at the same moment (Optuna's
    ``DuplicatedStudyError`` or the database's unique-name ``IntegrityError``)."""
    return isinstance(exc, optuna.exceptions.DuplicatedStudyError) or type(exc).__name__ == "IntegrityError"


class _Surplus(Exception):
    """A trial started past the study's budget (two workers each took the last free slot)."""


def _check_budget(trial: optuna.Trial, n_trials: int) -> None:
    """Raise :class:`_Surplus` when ``n_trials`` trials that count are numbered before ``trial``. Trial numbers are
    handed out in order by the storage, so of two racing workers exactly the later trial steps back."""
    trials = trial.study.get_trials(deepcopy=False)
    earlier = sum(t.number < trial.number and not (is_killed(t) or is_surplus(t)) for t in trials)
    if earlier < n_trials:
        return
    trial.set_user_attr(SURPLUS_KEY, f"{earlier} trials before it already fill n_trials={n_trials}")
    this = next((t for t in trials if t.number == trial.number), None)
    fixed = this.system_attrs.get("fixed_params") if this is not None else None
    if fixed:  # an enqueued trial (the base config's, --enqueue's or a retry): keep its parameters in the queue
        trial.study.enqueue_trial(dict(fixed), user_attrs={"requeued_from": trial.number})
    raise _Surplus(trial.user_attrs[SURPLUS_KEY])


def _objective(trial: optuna.Trial, config: StudyConfig) -> float:
    _check_budget(trial, config.n_trials)
    try:
        return objective(trial, config)
    except optuna.TrialPruned:
        raise
    except Exception as exc:
        if "fail_reason" not in trial.user_attrs:
            trial.set_user_attr("fail_reason", f"{type(exc).__name__}: {str(exc)[:500]}")
        raise


class _SurplusFilter(logging.Filter):
    """Drops Optuna's two "Trial N failed" records of a surplus trial (the first carries the _Surplus exception), and
    the traceback of another failed trial's record: its one line names the error, which the trial keeps as
    ``fail_reason`` and the scripts report when the study ends."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: set[str | None] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        words = str(record.msg).split()
        number = words[1] if len(words) > 1 and words[0] == "Trial" else None
        if record.exc_info and record.exc_info[0] is _Surplus:
            self.numbers.add(number)
            return False
        if number in self.numbers:
            return False
        record.exc_info, record.exc_text = None, None
        return True


@contextlib.contextmanager
def _quiet_surplus():
    """Keep Optuna's "Trial N failed" warning for a surplus trial out of the log (it is expected when workers race,
    and the trial's ``surplus`` attribute says why it ended), and a failed trial's traceback (see
    :class:`_SurplusFilter`)."""
    log, flt = logging.getLogger("optuna.study._optimize"), _SurplusFilter()
    log.addFilter(flt)
    try:
        yield
    finally:
        log.removeFilter(flt)


def _optimize(study: optuna.Study, config: StudyConfig, n_trials: int = 1) -> None:
    with _quiet_surplus():
        study.optimize(lambda t: _objective(t, config), n_trials=n_trials, catch=(Exception,), gc_after_trial=True)


def run_worker(config: StudyConfig, worker: int = 0, progress: bool = False,
               talk: TextIO | None = None) -> dict[str, int]:
    """Run trials until the study has ``n_trials`` finished ones; returns the final counts. A worker waits while the
    remaining budget is taken by running trials: if one of them turns out stale, it is failed and its retry run.
    ``talk``, a text stream, gets one line per trial of the study that finishes meanwhile
    (:func:`~sb3_realm.tuning.trials.trial_line`), with or without the bar."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(config, worker, enqueue=False)
    lines = None if talk is None else TrialLines(talk, config.n_trials, study.get_trials(deepcopy=False))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=config.n_trials, desc=f"study {config.name}", unit="trial")
    try:
        while True:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                optuna.storages.fail_stale_trials(study)
            counts = study_counts(study)
            if lines is not None:
                lines.update(study.get_trials(deepcopy=False), bar)
            if bar is not None:
                _update_bar(bar, study, counts)
            if counts["finished"] >= config.n_trials:
                return counts
            if counts["finished"] + counts["running"] >= config.n_trials:
                time.sleep(config.poll_interval)
                continue
            _optimize(study, config)
    finally:
        if bar is not None:
            bar.close()


def _update_bar(bar, study: optuna.Study, counts: dict[str, int]) -> None:
    bar.n = min(counts["finished"], bar.total)
    best = None
    try:
        best = study.best_value
    except ValueError:
        pass
    bar.set_postfix(best=None if best is None else round(best, 2), pruned=counts["pruned"], failed=counts["fail"],
                    running=counts["running"], refresh=False)
    bar.refresh()


def _worker_entry(config: StudyConfig, worker: int, game_paths: tuple[str, ...] = ()) -> None:
    games.adopt(game_paths)  # the parent's games, by import path (under forkserver and spawn a worker starts afresh)
    run_worker(config, worker, progress=False)


def _ray_study_worker(config: StudyConfig, worker: int, game_paths: tuple[str, ...] = ()) -> None:
    """A study's worker as a Ray task (its process is titled ``ray::_ray_study_worker`` while it runs)."""
    _worker_entry(config, worker, game_paths)


def run_study(config: StudyConfig, workers: int = 1, progress: bool = True, talk: TextIO | None = None,
              executor: str = "processes", ray_address: str | None = None) -> dict:
    """Create or join the study, run its ``workers`` workers, then write the study folder's outputs
    (:func:`~sb3_realm.tuning.outputs.write_outputs`); returns their summary. ``talk``, a text stream (the scripts pass
    ``sys.stderr``), gets one line per trial as it finishes (:func:`~sb3_realm.tuning.trials.trial_line`), whichever
    worker ran it, with or without the progress bar.

    :param executor: ``processes``: worker processes on this host (1 = in this process); ``ray``: Ray tasks of one
        CPU each on the cluster at ``ray_address`` (else ``$RAY_ADDRESS``; without either, on a Ray instance started
        here for the study and stopped after it; see :func:`~sb3_realm.executors.connect_ray`). Ray workers share the
        study through a journal file on a filesystem every machine mounts at the same path, or PostgreSQL; never
        SQLite.
    :param ray_address: the Ray cluster to join (``executor="ray"`` only).

    With several worker processes, or Ray workers, the summary has ``worker_exit_codes``, one per worker: a
    process's exit code; for a Ray worker 0 when its task finished, 1 when it raised an error (its message goes to
    ``talk``), None when its process died (killed, out of memory, its machine lost) and it was not started again. A
    Ray worker that dies is started again (a new worker number, so a new sampler seed) while the study lacks finished
    trials, up to :data:`~sb3_realm.executors.RETRIES` times per worker; ``worker_restarts`` counts those restarts. A
    dead worker's running trial is failed through the heartbeat after ``grace_period`` seconds (and its parameters
    enqueued again, ``max_retry`` times), as with worker processes; it never counts towards ``n_trials``."""
    check_executor(executor, ray_address)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers {workers} must be >= 1")
    if storage_kind(config.storage) == "sqlite":
        if executor == "ray":
            raise ValueError(f"--executor ray with SQLite ({config.storage}): SQLite is for one worker process, "
                             "which Ray's workers are not; use --storage postgresql://USER@HOST/DB for Ray workers on "
                             "several machines, or a journal file (journal:///PATH/study.log) only on a filesystem "
                             "that every machine of the cluster mounts at the same path (any path on this host for "
                             "a local Ray instance)")
        if workers > 1:
            raise ValueError(f"--workers {workers} with SQLite ({config.storage}): SQLite is for one worker process; "
                             "use --storage journal:///PATH/study.log for several processes on this host or "
                             "postgresql://USER@HOST/DB for several machines")
    config.validate()
    check_output_folder(config.out, config.folder_names(), script="a tuning study")
    if executor == "ray":
        games.reference(config.base.spec.name)  # a game the workers could not import is refused before any starts
    # a cluster that does not answer (a ConnectionError naming the address) is reported before the study is touched
    started = executor == "ray" and connect_ray(ray_address, cpus=workers)
    try:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = open_study(config)
        trials_dir = Path(config.out) / "trials"
        if not study.get_trials(deepcopy=False) or all(t.state == TrialState.WAITING for t in study.trials):
            if trials_dir.is_dir() and any(trials_dir.iterdir()):
                raise ValueError(f"{trials_dir} holds the runs of an earlier study, and study {config.name!r} has no "
                                 "trials yet; use another --out (or delete that folder)")
        exit_codes: list[int | None] = []
        restarts = None
        if executor == "ray":
            exit_codes, restarts = _run_ray(config, workers, study, progress, talk)
        elif workers == 1:
            run_worker(config, 0, progress, talk)
        else:
            exit_codes = _run_processes(config, workers, study, progress, talk)
    finally:
        if started:  # only the Ray instance this call started; a cluster joined before stays as it was
            disconnect_ray()
    summary = write_outputs(optuna.load_study(study_name=config.name, storage=config.make_storage()), config)
    if exit_codes:
        summary["worker_exit_codes"] = exit_codes
    if restarts is not None:
        summary["worker_restarts"] = restarts
    return summary


class _Watch:
    """The progress bar and the trial lines of a study whose workers run elsewhere: :meth:`look` at the study now
    and then, :meth:`close` at the end."""

    def __init__(self, config: StudyConfig, study: optuna.Study, progress: bool, talk: TextIO | None,
                 desc: str) -> None:
        self.study, self.talk = study, talk
        self.lines = None if talk is None else TrialLines(talk, config.n_trials, study.get_trials(deepcopy=False))
        self.bar = None
        if progress:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=config.n_trials, desc=f"study {config.name} ({desc})", unit="trial")

    def look(self) -> None:
        if self.lines is not None:
            self.lines.update(self.study.get_trials(deepcopy=False), self.bar)
        if self.bar is not None:
            _update_bar(self.bar, self.study, study_counts(self.study))

    def say(self, line: str) -> None:
        """A line about a worker, on ``talk`` (stderr without it), above the bar."""
        talk = self.talk if self.talk is not None else sys.stderr
        if self.bar is not None:
            self.bar.write(line, file=talk)
        else:
            print(line, file=talk, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _run_processes(config: StudyConfig, workers: int, study: optuna.Study, progress: bool,
                   talk: TextIO | None = None) -> list[int | None]:
    games.reference(config.base.spec.name)  # a game the workers could not import is refused before any starts
    ctx = mp_context(preload=[__name__])  # torch, SB3 and the package imported once, in a fork server
    procs = [ctx.Process(target=_worker_entry, args=(config, i, games.references()), name=f"sb3-realm-worker-{i}")
             for i in range(workers)]
    watch = _Watch(config, study, progress, talk, f"{workers} workers")
    try:
        for p in procs:
            p.start()
        while any(p.is_alive() for p in procs):
            watch.look()
            time.sleep(config.poll_interval)
            for p in procs:
                p.join(timeout=0)
        if watch.lines is not None:  # the trials that finished since the last look
            watch.lines.update(study.get_trials(deepcopy=False), watch.bar)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
        watch.close()
    return [p.exitcode for p in procs]


def _run_ray(config: StudyConfig, workers: int, study: optuna.Study, progress: bool,
             talk: TextIO | None) -> tuple[list[int | None], int]:
    """Run the study's workers as Ray tasks (Ray connected); returns each worker's exit code (see
    :func:`run_study`) and how many dead workers were started again."""
    import ray  # installed and connected: run_study did both

    game_paths = games.references()
    # Ray does not run the task again by itself (max_retries=0): Ray's retry would start the same worker number,
    # whose seeded sampler would draw its first parameters again, and would start it even when the study is done.
    # A dead worker is started again here instead, as a new worker number, only while the study lacks finished
    # trials (see run_study). Running a worker again never counts a trial twice: a worker counts the trials in the
    # storage, and the dead worker's trial is failed through the heartbeat (not counted) and enqueued again.
    task: Any = ray.remote(num_cpus=1, max_retries=0)(_ray_study_worker)  # Ray's stubs miss the default
    slots: dict = {}  # running task -> (its place in the exit codes, its worker number)
    codes: list[int | None] = [None] * workers
    lives = [0] * workers
    number = workers
    watch = _Watch(config, study, progress, talk, f"{workers} Ray workers")
    try:
        for i in range(workers):
            slots[task.remote(config, i, game_paths)] = (i, i)
        while slots:
            done, _ = ray.wait(list(slots), num_returns=len(slots), timeout=config.poll_interval)
            watch.look()
            for ref in done:
                i, worker = slots.pop(ref)
                try:
                    ray.get(ref)
                    codes[i] = 0
                except ray.exceptions.RayTaskError as exc:  # the worker's own error: running it again would repeat it
                    cause = getattr(exc, "cause", None) or exc
                    codes[i] = 1
                    watch.say(f"Ray worker {worker} stopped with an error: {type(cause).__name__}: {cause}")
                except ray.exceptions.RayError as exc:  # its process or its machine died
                    codes[i] = None
                    why = f"Ray worker {worker} died ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})"
                    if lives[i] < RETRIES and study_counts(study)["finished"] < config.n_trials:
                        lives[i] += 1
                        watch.say(f"{why}; worker {number} takes its place (a trial it was running is failed "
                                  f"after the grace period, {config.grace_period} s, and does not count)")
                        slots[task.remote(config, number, game_paths)] = (i, number)
                        number += 1
                    else:
                        watch.say(why)
        watch.look()  # the trials that finished since the last look
    finally:
        for ref in slots:  # interrupted: the tasks stop too (their trials are failed as stale when the study goes on)
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        watch.close()
    return codes, sum(lives)


def trial_config(storage_url: str, study_name: str, number: int | None = None) -> tuple[TrainConfig, int]:
    """The training config of trial ``number`` (default: the best trial) of a stored study, rebuilt from its
    ``params`` and the study's base config with the study's ``convert`` function; returns ``(config, number)``."""
    study, meta = load_study(storage_url, study_name)
    if number is None:
        try:
            trial = study.best_trial
        except ValueError:
            raise ValueError(f"study {study_name!r} has no complete trial yet; pass --trial N to replay another "
                             "one") from None
    else:
        found = [t for t in study.get_trials(deepcopy=False) if t.number == number]
        if not found:
            raise ValueError(f"--trial {number}: study {study_name!r} has trials 0..{len(study.trials) - 1}")
        trial = found[0]
        if not trial.params:
            raise ValueError(f"--trial {number} ({trial.state.name}) has no parameters yet")
    base = config_from_dict(meta["base_config"])
    return convert_params(meta["kind"], dict(trial.params), base), trial.number
