"""Gorge Chase: an Optuna study of the planner's weights on validation games, then a check of the best weights
against the defaults on the test maps, games the study never saw. Prints JSON.

    python benchmarks/gorge_planner_study.py [--trials 60] [--maps own_5 open_8] [--games 6]
        [--settings default final] [--study-policy scripted] [--check-games 10] [--check-policy planner]
        [--check-maps open_9 ...] [--jobs 2] [--maps-dir DIR] [--seed 0] [--out runs/gorge_planner_study]

The weights are the class attributes of :class:`sb3_realm.games.gorge.planner.Planner` named in :data:`SPACE` (each
searched around its default; the defaults are the first trial). A trial plays ``--games`` games on each of
``--maps`` under each of ``--settings`` (env seeds from :data:`VALIDATION_SEED`, the same games every trial, so
trials compare on paired games) with ``--study-policy``: ``scripted`` (the same decision code on the true terrain,
about four times faster) or ``planner`` (the observation-only planner); its value is the mean competition score.
Optuna's TPE sampler (seeded by ``--seed``) proposes the weights.

The check plays the best trial's weights and the defaults with ``--check-policy`` on ``--check-maps``, by default the
test maps of ``benchmarks/gorge_planner.py`` (open_9, open_10, own_6 .. own_10; the first ``--check-games`` test
games a map, env seeds from its TEST_SEED), under each of ``--settings``, and reports per settings the mean score of
both and the paired difference (tuned - default: mean and standard error over the games), per map and overall. The
validation maps and the check maps must not overlap.

``--out`` (optional) also writes the JSON as ``OUT/gorge_planner_study.json`` (a new or empty folder, or an earlier
output of this script, which is replaced; any other folder is refused before any game).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from gorge_planner import (  # benchmarks/, beside this script
    POLICIES,
    TEST_MAPS,
    TEST_SEED,
    Job,
    check_args,
    default_maps_dir,
    paired,  # first - second over the same games: mean and standard error
    play,
    summarise,
)
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm import games as _games
from sb3_realm.games.gorge.planner import Planner
from sb3_realm.games.gorge.rules import SETTINGS
from sb3_realm.processes import mp_context

#: the seed of the validation games' env seeds (never the test games')
VALIDATION_SEED = 20_261_128
#: weight -> (low, high, log scale); integers where the default is one
SPACE: dict[str, tuple[float, float, bool]] = {
    "margin_weight": (15.0, 100.0, True),
    "room_weight": (10.0, 90.0, True),
    "exit_weight": (10.0, 90.0, True),
    "lasting_weight": (15.0, 100.0, True),
    "critical_margin": (1, 6, False),
    "critical_cost": (20.0, 180.0, True),
    "safe_margin": (3, 10, False),
    "min_room": (20, 150, False),
    "progress_weight": (1.5, 10.0, True),
    "flash_cost": (15.0, 180.0, True),
    "flash_cost_late": (5.0, 80.0, True),
    "contest_weight": (1.0, 9.0, True),
    "buff_weight_late": (0.5, 4.0, True),
}
#: what this script writes in --out
OWN = ("gorge_planner_study.json",)


def defaults() -> dict[str, float]:
    """The planner's current value of each weight of :data:`SPACE`."""
    return {name: getattr(Planner, name) for name in SPACE}


def suggest(trial) -> dict[str, float]:
    """One trial's weights."""
    out: dict[str, float] = {}
    for name, (low, high, log) in SPACE.items():
        if isinstance(getattr(Planner, name), int):
            out[name] = trial.suggest_int(name, int(low), int(high))
        else:
            out[name] = trial.suggest_float(name, low, high, log=log)
    return out


def jobs_for(policy: str, maps: list[str], settings: list[str], games: int, seed_base: int,
             maps_dir: str | None, weights: dict[str, float]) -> list[Job]:
    """One job per settings and map: game ``j`` of the ``i``-th map from env seed ``game_seed(seed_base, i * games +
    j)`` with the maps protocol's ``usr_conf`` under the settings."""
    from sb3_realm.evaluation import game_seed  # main process only (torch)

    spec = _games.get("gorge")
    confs = spec.evaluation.configs("maps", maps=list(maps), games=games)
    frozen = tuple(sorted(weights.items()))
    jobs = []
    for name in settings:
        for i, map_name in enumerate(maps):
            block = range(i * games, (i + 1) * games)
            jobs.append(Job(policy, name, map_name, maps_dir, tuple(game_seed(seed_base, k) for k in block),
                            tuple(spec.apply_settings(name, confs[k]) for k in block), frozen))
    return jobs


def run_jobs(jobs: list[Job], pool) -> list[dict]:
    """Each job's result (from :func:`gorge_planner.play`), in order."""
    return list(pool.imap(play, jobs)) if pool is not None else [play(job) for job in jobs]


def mean_score(results: list[dict]) -> float:
    return float(np.mean([g["score"] for r in results for g in r["games"]]))


def check_study_args(args) -> str | None:
    """Refuse bad input before any game; returns the maps folder (see :func:`gorge_planner.check_args`)."""
    if args.trials < 1:
        raise ValueError(f"--trials {args.trials} must be >= 1 (the first trial plays the defaults)")
    if args.check_games < 0:
        raise ValueError(f"--check-games {args.check_games} must be >= 0 (0: no check on the test maps)")
    test = sorted(set(args.maps) & set(args.check_maps))
    if test:
        raise ValueError(f"--maps {' '.join(test)}: a map of the check cannot be a validation map (the check plays "
                         f"games the study never saw); pick validation maps among own_1 .. own_5 and open_1 .. "
                         f"open_8")
    args.policies = [args.study_policy, args.check_policy]
    maps_dir = check_args(args)
    if args.check_games:
        check = argparse.Namespace(**{**vars(args), "maps": list(args.check_maps), "games": args.check_games,
                                      "policies": [args.check_policy]})
        maps_dir = check_args(check) or maps_dir
    return maps_dir


def main() -> None:
    import optuna  # main process only

    from sb3_realm.evaluation import write_json_atomic
    from sb3_realm.tuning.script import check_output_folder

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=60, help="Optuna trials (the first plays the defaults)")
    parser.add_argument("--maps", nargs="+", default=["own_5", "open_8"], help="validation maps (not test maps)")
    parser.add_argument("--maps-dir", default=default_maps_dir(), help="folder of gorge_chase_map_<k>.json")
    parser.add_argument("--games", type=int, default=6, help="validation games per map and settings, per trial")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["default", "final"])
    parser.add_argument("--study-policy", choices=list(POLICIES), default="scripted",
                        help="the policy the trials play (default scripted: the same decision code, faster)")
    parser.add_argument("--check-games", type=int, default=10, help="test games per map and settings (0: none)")
    parser.add_argument("--check-policy", choices=list(POLICIES), default="planner",
                        help="the policy the check plays (default planner: the one inside the agent)")
    parser.add_argument("--check-maps", nargs="+", default=list(TEST_MAPS), help="the check's maps (the test maps)")
    parser.add_argument("--jobs", type=int, default=1, help="processes playing a trial's games")
    parser.add_argument("--seed", type=int, default=0, help="the sampler's seed")
    parser.add_argument("--out", default=None, help="also write OUT/gorge_planner_study.json")
    args = parser.parse_args()
    maps_dir = check_study_args(args)  # a ValueError: one line from run_script, before any game
    if args.out is not None:
        check_output_folder(args.out, OWN, markers=OWN, script="benchmarks/gorge_planner_study.py")
    start = time.perf_counter()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=args.seed))
    study.enqueue_trial(defaults())
    pool = mp_context().Pool(args.jobs) if args.jobs > 1 else None
    try:
        for _ in range(args.trials):
            trial = study.ask()
            weights = suggest(trial)
            value = mean_score(run_jobs(jobs_for(args.study_policy, args.maps, args.settings, args.games,
                                                 VALIDATION_SEED, maps_dir, weights), pool))
            study.tell(trial, value)
            print(json.dumps({"trial": trial.number, "value": round(value, 1),
                              "best": round(float(study.best_value), 1)}), file=sys.stderr, flush=True)
        study_s = time.perf_counter() - start
        best = {name: study.best_params[name] for name in SPACE}
        check: dict = {}
        if args.check_games:
            for name in args.settings:
                tuned = run_jobs(jobs_for(args.check_policy, list(args.check_maps), [name], args.check_games, TEST_SEED,
                                          maps_dir, best), pool)
                default = run_jobs(jobs_for(args.check_policy, list(args.check_maps), [name], args.check_games,
                                            TEST_SEED, maps_dir, {}), pool)
                rows = {}
                for map_name, t, d in zip(args.check_maps, tuned, default, strict=True):
                    rows[map_name] = {"tuned": summarise(t["games"], t["act_ms"], scores=False)["mean_score"],
                                      "default": summarise(d["games"], d["act_ms"], scores=False)["mean_score"],
                                      "tuned_minus_default": paired(t["games"], d["games"])}
                every_t = [g for r in tuned for g in r["games"]]
                every_d = [g for r in default for g in r["games"]]
                check[name] = {
                    "tuned": summarise(every_t, np.concatenate([r["act_ms"] for r in tuned]), scores=False),
                    "default": summarise(every_d, np.concatenate([r["act_ms"] for r in default]), scores=False),
                    "tuned_minus_default": paired(every_t, every_d),
                    "maps": rows,
                }
                print(json.dumps({"check": name, **check[name]["tuned_minus_default"]}), file=sys.stderr, flush=True)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
    values = [t.value for t in study.trials if t.value is not None]
    result = {
        "benchmark": "gorge_planner_study",
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "validation": {"maps": list(args.maps), "games_per_map": args.games, "settings": list(args.settings),
                       "seed": VALIDATION_SEED, "policy": args.study_policy},
        "trials": len(values),
        "default_value": round(float(values[0]), 1),
        "best_value": round(float(study.best_value), 1),
        "best_trial": study.best_trial.number,
        "defaults": defaults(),
        "best_weights": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in best.items()},
        "values": [round(float(v), 1) for v in values],
        "check": {"maps": list(args.check_maps), "games_per_map": args.check_games, "test_seed": TEST_SEED,
                  "policy": args.check_policy, "settings": check} if args.check_games else None,
        "study_s": round(study_s, 1),
        "wall_s": round(time.perf_counter() - start, 1),
        "jobs": args.jobs,
        "peak_rss": peak_rss_mib(),
        "machine": {"cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                    "python": platform.python_version(), "numpy": np.__version__, "optuna": optuna.__version__},
    }
    if args.out is not None:
        write_json_atomic(result, Path(args.out) / "gorge_planner_study.json")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    from sb3_realm.tuning.script import run_script  # main process only

    run_script(main, "gorge_planner_study.py")
