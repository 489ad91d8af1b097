"""The command line of ``tuning/tune_rewards.py`` and ``tuning/tune_hparams.py`` (one parser, two kinds), and what
every script under ``benchmarks/`` and ``tuning/`` shares: the check of its output folder before it writes anything
(:func:`~sb3_realm.tuning.outputs.check_output_folder`, :func:`~sb3_realm.tuning.outputs.remove_outputs`) and one
line with exit code 2 for bad input (:func:`run_script`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from ..arguments import ArgumentParser, json_dict, map_file
from ..executors import EXECUTORS, RAY_ADDRESS_ENV
from ..training.config import config_from_dict, load_config
from .outputs import check_output_folder, remove_outputs
from .study import PRUNERS, StudyConfig, load_study, run_study

__all__ = [
    "build_parser",
    "check_output_folder",
    "main",
    "remove_outputs",
    "run_script",
    "study_config_from_args",
    "study_problems",
]

DESCRIPTIONS = {
    "rewards": "Optuna study over the reward weights (and optionally a curriculum) of a training config, judged by "
               "the mean competition score on held-out games.",
    "hparams": "Optuna study over the hyperparameters of the config's algorithm (PPO, MaskablePPO, RecurrentPPO), "
               "judged by the mean competition score on held-out games.",
}


def build_parser(kind: str) -> argparse.ArgumentParser:
    p = ArgumentParser(prog=f"tune_{kind}.py", description=DESCRIPTIONS[kind])
    p.add_argument("--config", default=None,
                   help="base training config (YAML, see configs/); needed to create a study, optional to join one "
                        "(the stored base config is used)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a base config value, as in `sb3-realm train` (repeatable)")
    p.add_argument("--map", dest="map_path", type=map_file, default=None,
                   help="map JSON (official format) of training and evaluation")
    p.add_argument("--total-steps", type=int, default=None, help="env steps of each trial's training")
    p.add_argument("--eval-games", type=int, default=None, help="held-out games of each evaluation (eval_games)")
    p.add_argument("--eval-freq", type=int, default=None,
                   help="env steps between intermediate evaluations (eval_freq; 0 = only the final one)")
    p.add_argument("--n-trials", type=int, default=20,
                   help="finished trials the study aims for, all workers together (re-running continues a study)")
    p.add_argument("--storage", default=None,
                   help="sqlite:///PATH.db (default: OUT/study.db, one worker), journal:///PATH.log or PATH.log "
                        "(several workers on one host), postgresql://USER@HOST/DB (several machines)")
    p.add_argument("--study-name", default=kind, help=f"study name in the storage (default {kind!r})")
    p.add_argument("--out", default=None, help="study folder (default runs/study-<name>)")
    p.add_argument("--workers", type=int, default=1,
                   help="workers of the study: processes on this host, or Ray tasks with --executor ray (> 1 needs a "
                        "journal file or PostgreSQL storage)")
    p.add_argument("--executor", choices=EXECUTORS, default="processes",
                   help="processes: the workers are processes on this host (--workers 1: this process); ray: Ray "
                        "tasks of one CPU each on the cluster at --ray-address (else a Ray instance started here "
                        "for the study), sharing a PostgreSQL storage or a journal file on a filesystem every machine "
                        "mounts (not SQLite); needs pip install 'sb3-realm[ray]'")
    p.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help=f"the Ray cluster of --executor ray: host:6379 of its head, or auto for the one `ray start` "
                        f"started on this machine (default ${RAY_ADDRESS_ENV}, else a Ray instance of this study)")
    p.add_argument("--pruner", choices=PRUNERS, default="median",
                   help="median: intermediate evaluations; wilcoxon: paired test over the held-out games (and seeds); "
                        "halving: successive halving; none")
    p.add_argument("--train-seeds", type=int, default=1, help="training seeds per trial (objective: their mean)")
    if kind == "rewards":
        p.add_argument("--curriculum", action="store_true",
                       help="also sample an easier first phase (its treasure count and share of the steps)")
    p.add_argument("--enqueue", type=json_dict, action="append", default=[], metavar="JSON",
                   help="parameters to try first, e.g. '{\"treasure\": 2.0}' (the rest is sampled; repeatable)")
    p.add_argument("--heartbeat", type=int, default=30, help="seconds between heartbeats of a running trial")
    p.add_argument("--grace", type=int, default=120,
                   help="seconds without a heartbeat after which a trial is failed as its worker's death")
    p.add_argument("--max-retry", type=int, default=1, help="re-runs of a killed worker's trial")
    p.add_argument("--sampler-seed", type=int, default=None, help="TPE sampler seed (worker i: seed + i)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (each finished trial still gets its line on stderr)")
    return p


def _base_config(args, storage: str):
    overrides = list(args.overrides)
    if args.map_path is not None:
        overrides.append(f"env.map_path={json.dumps(args.map_path)}")
    for flag, key in (("total_steps", "total_timesteps"), ("eval_games", "eval_games"), ("eval_freq", "eval_freq")):
        if getattr(args, flag) is not None:
            overrides.append(f"{key}={getattr(args, flag)}")
    if args.config is not None:
        return load_config(args.config, overrides)
    try:
        _, meta = load_study(storage, args.study_name)
    except ValueError as exc:
        raise ValueError(f"--config is needed to create a study ({exc})") from None
    if overrides:
        raise ValueError("joining a study without --config uses its stored base config; drop --set/--map/--total-steps/"
                         "--eval-games/--eval-freq (or give the same --config and options it was created with)")
    return config_from_dict(meta["base_config"])


def study_config_from_args(kind: str, args):
    """The :class:`~sb3_realm.tuning.study.StudyConfig` of parsed arguments."""
    out = args.out if args.out is not None else f"runs/study-{args.study_name}"
    storage = args.storage or f"sqlite:///{Path(out) / 'study.db'}"
    base = _base_config(args, storage)
    return StudyConfig(kind=kind, base=base, name=args.study_name, storage=storage, out=out, n_trials=args.n_trials,
                       pruner=args.pruner, train_seeds=args.train_seeds,
                       curriculum=bool(getattr(args, "curriculum", False)), heartbeat_interval=args.heartbeat,
                       grace_period=args.grace, max_retry=args.max_retry, sampler_seed=args.sampler_seed,
                       enqueue=list(args.enqueue)).validate()


def study_problems(summary: dict) -> str | None:
    """What went wrong in a finished study (its :func:`~sb3_realm.tuning.study.run_study` summary), in one line
    naming each failed trial's reason and the fix, or None when nothing did."""
    failed = summary.get("failed") or []
    codes = [code for code in summary.get("worker_exit_codes") or [] if code != 0]
    if not failed and not codes:
        return None
    parts = []
    if failed:
        shown = "; ".join(f"trial {t['number']}: {t['reason']}" for t in failed[:3])
        more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        parts.append(f"{len(failed)} trial(s) failed ({shown}{more})")
    if codes:
        died = " (None: a Ray worker that died)" if None in codes else ""
        parts.append(f"worker processes ended with exit codes {codes}{died}")
    return (f"{' and '.join(parts)}; their reasons are in {summary.get('out')}/trials.csv (fail_reason): fix the "
            "cause, then run the same command again to go on with the study (failed trials count as finished: raise "
            "--n-trials for new ones)")


def main(kind: str, argv: list[str] | None = None) -> int:
    """Run the study; print its summary (``study.json``) as JSON. Exit code 2 with one line on bad input (a Ray
    cluster that does not answer at ``--ray-address`` included), 1 with one line when a trial failed or a worker
    process died (the summary is printed first)."""
    args = build_parser(kind).parse_args(argv)
    try:
        config = study_config_from_args(kind, args)
        summary = run_study(config, workers=args.workers, progress=not args.no_progress and sys.stderr.isatty(),
                            talk=sys.stderr, executor=args.executor, ray_address=args.ray_address)
    except (ValueError, ConnectionError) as exc:  # ConnectionError: no Ray cluster at --ray-address / $RAY_ADDRESS
        print(f"tune_{kind}.py: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a full disk, a folder without permission: one line
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"tune_{kind}.py: error: {exc.strerror or exc}:{where}; check the path, its permissions and the free "
              "space, then run the same command again (the study goes on from its storage)", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, default=str))
    problems = study_problems(summary)
    if problems:
        print(f"tune_{kind}.py: error: {problems}", file=sys.stderr)
        return 1
    return 0


def run_script(main: Callable[[], int | None], prog: str) -> NoReturn:
    """Run a script's ``main()`` and exit with its return value (None: 0). Bad input (a ``ValueError``: the scripts
    check theirs before any work and any write) ends it with one line, ``PROG: error: ...``, and exit code 2, as
    ``sb3-realm`` does."""
    try:
        code = main()
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.exit(code or 0)
