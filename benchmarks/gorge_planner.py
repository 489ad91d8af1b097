"""Gorge Chase planners: the scripted yardstick (``scripted``: the planner with the whole terrain and the monsters'
true states, :class:`sb3_realm.games.gorge.experts.ScriptedPolicy`) and the observation-only planner (``planner``:
the same decision code on what the platform observation shows, :class:`sb3_realm.games.gorge.experts.PlannerPolicy`)
on the test maps, under the game's named settings, with the time each takes to choose an action; with
``--policies``, also the rollout searches: ``search`` (the search on what the observation shows,
:class:`sb3_realm.games.gorge.experts.SearchPolicy`, as it runs inside ``exploit()``) and ``ceiling`` (the same search
on copies of the true game, :class:`sb3_realm.games.gorge.experts.CeilingPolicy`). Prints JSON.

    python benchmarks/gorge_planner.py [--maps open_9 open_10 own_6 own_7 own_8 own_9 own_10] [--maps-dir DIR]
        [--games 50] [--settings default final] [--policies scripted planner [search ceiling]] [--search-steps N]
        [--jobs 1] [--out runs/gorge_planner]

``--maps`` takes open map ids (``open_<k>``, read from ``--maps-dir`` as ``gorge_chase_map_<k>.json``), shipped
maps (``own_1`` .. ``own_10``) and map files (``.json``); the default is the test maps: open_9, open_10 and the
stand-ins for the hidden maps, own_6 .. own_10. ``--maps-dir`` defaults to ``$SB3_REALM_GORGE_MAPS``, else
``../shared/data/gorge`` beside the repository. ``--settings`` names one or more of
:data:`sb3_realm.games.gorge.rules.SETTINGS`: ``default`` (the game as shipped) and ``final`` (the final round's:
talent_cooldown 200, monster_interval 200, monster_speedup 300, buff_cooldown 200, max_step 1000).

The games are the test games of ``benchmarks/gorge_recipe.py`` and of ``sb3-realm eval --protocol maps --maps
M1,M2,... --games N --seed 20260917 --settings S``: game ``j`` of the ``i``-th map of ``--maps`` is played from env
seed ``game_seed(TEST_SEED, i * games + j)`` (:func:`sb3_realm.evaluation.game_seed`) with the protocol's
``usr_conf`` under the named settings, so every policy plays the same games and their scores pair game by game.

Per policy, settings and map (and over all maps): games, mean score and its standard deviation, the share of games
survived to max_step, the catches before monster 2 spawns (catch step < the episode's monster_interval), between
monster 2 and the speed-up, and after the speed-up, mean flashes, treasures, buffs and steps, and the time of
``act()`` alone per step (``time.perf_counter`` around each call: mean, p50, p99, max in ms; every policy builds the
platform observation inside ``act()``, and that time is in it); for a search, the share of steps it searched and the
actions it changed per game. The paired differences of the score (mean and standard error over the same games, per
map and over all maps) of planner - scripted, search - planner, search - scripted and ceiling - scripted, each where
both policies play.

``--search-steps N`` gives the search the work budget of a package built with ``build-submission --search N``
(``max_rollout_steps``: once a step's rollouts have played N world steps, no further action is tried); the JSON
records it as ``search_steps``.

``--jobs J`` (> 1) plays each (policy, settings, map) in one of ``J`` processes (the package's start method,
:func:`sb3_realm.processes.start_method`): the scores are the same, the per-step times are not the cost of one step on
an idle core (the JSON's ``timing`` says which).

``--out`` (optional) also writes the JSON as ``OUT/gorge_planner.json``, and each job's games, as it finishes, in
``OUT/jobs/``: a new or empty folder, or an earlier output of this script (its ``gorge_planner.json`` and ``jobs/``,
nothing else). A rerun into the folder of a run that was stopped takes the jobs it finished with the same games and
settings instead of playing them again (``wall_s`` is then this run's alone); any other folder is refused before
any game, untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm import games as _games
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.experts import CeilingPolicy, PlannerPolicy, ScriptedPolicy, SearchPolicy
from sb3_realm.games.gorge.protocols import MAP_LISTS, check_map_name
from sb3_realm.games.gorge.rules import MONSTER_INTERVAL_NEVER, SETTINGS
from sb3_realm.processes import mp_context

# sb3_realm.evaluation and sb3_realm.tuning are imported in the functions of the main process only: they bring torch
# and Optuna (seconds), which every spawned worker would import again with this module, and none of them needs.

REPO = Path(__file__).resolve().parents[1]
#: the seed of the test games' env seeds: benchmarks/gorge_recipe.py's, never used to train or select
TEST_SEED = 20_260_917
TEST_MAPS = MAP_LISTS["test"]  # open_9, open_10, own_6 .. own_10
POLICIES: dict[str, type] = {"scripted": ScriptedPolicy, "planner": PlannerPolicy, "search": SearchPolicy,
                              "ceiling": CeilingPolicy}
#: the paired differences reported where both policies play: (policy, baseline)
PAIRS = (("planner", "scripted"), ("search", "planner"), ("search", "scripted"), ("ceiling", "scripted"))
#: what this script writes in --out: the result, and each finished job's games (a rerun with the same arguments
#: plays only the jobs not there yet)
OWN = ("gorge_planner.json", "jobs")


def default_maps_dir() -> str:
    return os.environ.get("SB3_REALM_GORGE_MAPS") or str(REPO.parent / "shared" / "data" / "gorge")


class Job(NamedTuple):
    """One policy's games on one map under one settings (picklable: a worker process gets it whole)."""

    policy: str
    """``scripted`` or ``planner``"""
    settings: str
    """a name of SETTINGS"""
    map_name: str
    """the map played"""
    maps_dir: str | None
    """the folder of the open maps (None when only shipped maps are played)"""
    seeds: tuple[int, ...]
    """the env seed of each game"""
    confs: tuple[dict, ...]
    """the ``usr_conf`` of each game (the settings played over it, the map under ``map_name``)"""
    weights: tuple[tuple[str, float], ...] = ()
    """the planner's weights played instead of its defaults (attributes of
    :class:`sb3_realm.games.gorge.planner.Planner`); none: the defaults"""
    search_steps: int | None = None
    """the search's work budget a step in rollout steps (``max_rollout_steps``, as a package built with ``--search
    STEPS`` plays it); None: no budget (only for the ``search`` policy)"""


def planner_of(policy):
    """The :class:`~sb3_realm.games.gorge.planner.Planner` a policy decides with (the scripted policy is one; a
    search's is the planner it follows)."""
    if isinstance(policy, SearchPolicy):
        return policy.search.agent.planner
    if isinstance(policy, CeilingPolicy):
        return policy.base
    return policy.agent.planner if isinstance(policy, PlannerPolicy) else policy


def play(job: Job) -> dict:
    """Play ``job``'s games (module level, so that a ``spawn`` worker can run it): per game its summary, and the
    time of every ``act()`` call in ms."""
    env = GorgeEnv(map_names=[job.map_name], maps_dir=job.maps_dir, model_input=False)  # the policies read the dict
    policy = POLICIES[job.policy](env, **({"max_rollout_steps": job.search_steps} if job.search_steps is not None
                                          else {}))
    for name, value in job.weights:
        setattr(planner_of(policy), name, value)
    games: list[dict] = []
    times: list[float] = []
    end: dict[str, Any]
    for seed, conf in zip(job.seeds, job.confs, strict=True):
        obs, _ = env.reset(seed=seed, options=conf)
        policy.reset(env)
        # the episode's value: usr_conf's, or the one drawn at reset where usr_conf says -1 (random)
        game = env.game
        assert game is not None  # reset made it
        monster_interval = game.monster_interval
        done, end = False, {}  # end: the last step's info (the episode's summary)
        spent: list[int] = []  # a search's rollout steps per call
        while not done:
            start = time.perf_counter()
            action = policy.act(env, obs)
            times.append(time.perf_counter() - start)
            if hasattr(policy, "search"):
                spent.append(int(policy.search.spent))
            obs, _, terminated, truncated, end = env.step(action)
            done = terminated or truncated
        searcher = getattr(policy, "search", policy)  # a search's counters: states searched, actions changed
        games.append({"seed": seed, "score": float(end["score"]), "steps": int(end["steps"]),
                      "phase": catch_phase(end, monster_interval), "flashes": int(end["flash_used"]),
                      "treasures": int(end["treasures"]), "buffs": int(end["buff_used"]),
                      **({"searched": int(searcher.searched), "changed": int(searcher.changed)}
                         if hasattr(searcher, "searched") else {}),
                      **({"rollout_steps": spent} if spent else {})})
    return {"games": games, "act_ms": np.asarray(times, dtype=np.float64) * 1000.0}


def catch_phase(end: dict, monster_interval: int) -> str | None:
    """When an episode (its end-of-episode ``info``) was caught: ``before_monster2`` (catch step < monster_interval,
    or monster 2 never spawns), ``monster2_to_speedup``, ``after_speedup``; None when it survived."""
    if not end["caught"]:
        return None
    if end["caught_after_speedup"]:
        return "after_speedup"
    if monster_interval == MONSTER_INTERVAL_NEVER or end["steps"] < monster_interval:
        return "before_monster2"
    return "monster2_to_speedup"


def summarise(games: list[dict], act_ms: np.ndarray, scores: bool = True) -> dict:
    """The figures of a list of games (from :func:`play`) and the times of their ``act()`` calls (ms); with
    ``scores``, every game's score too (in the order of their seeds)."""
    played = np.array([g["score"] for g in games])
    phases = [g["phase"] for g in games]
    return {
        "games": len(games),
        "mean_score": round(float(played.mean()), 1),
        "score_std": round(float(played.std()), 1),
        "survival_share": round(phases.count(None) / len(games), 3),
        "caught": {phase: phases.count(phase) for phase in ("before_monster2", "monster2_to_speedup",
                                                               "after_speedup")},
        "mean_flashes": round(float(np.mean([g["flashes"] for g in games])), 2),
        "mean_treasures": round(float(np.mean([g["treasures"] for g in games])), 2),
        "mean_buffs": round(float(np.mean([g["buffs"] for g in games])), 2),
        "mean_steps": round(float(np.mean([g["steps"] for g in games])), 1),
        **({"searched_share": round(sum(g["searched"] for g in games) / max(1, sum(g["steps"] for g in games)), 4),
            "changed_per_game": round(float(np.mean([g["changed"] for g in games])), 2)}
           if all("searched" in g for g in games) else {}),
        **({"rollout_steps_per_call": _spread(np.concatenate([g["rollout_steps"] for g in games]))}
           if all("rollout_steps" in g for g in games) else {}),
        "act_ms": {"steps": int(act_ms.size), "mean": round(float(act_ms.mean()), 3),
                   "p50": round(float(np.percentile(act_ms, 50)), 3),
                   "p99": round(float(np.percentile(act_ms, 99)), 3), "max": round(float(act_ms.max()), 3)},
        **({"scores": [round(float(s), 1) for s in played]} if scores else {}),
    }


def _spread(values: np.ndarray) -> dict:
    """Mean, p50, p99 and max of per-call counts."""
    return {"mean": round(float(values.mean()), 1), "p50": float(np.percentile(values, 50)),
            "p99": float(np.percentile(values, 99)), "max": int(values.max())}


def paired(planner: list[dict], scripted: list[dict]) -> dict:
    """The paired difference of the score over the same games (the first list's minus the second's): mean and
    standard error."""
    assert [g["seed"] for g in planner] == [g["seed"] for g in scripted]  # the same games, in the same order
    diff = np.array([p["score"] - s["score"] for p, s in zip(planner, scripted, strict=True)])
    se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else None
    return {"games": int(diff.size), "mean": round(float(diff.mean()), 1),
            "standard_error": None if se is None else round(se, 1)}


def jobs_of(args, maps_dir: str | None) -> list[Job]:
    """One job per policy, settings and map; game ``j`` of the ``i``-th map from env seed
    ``game_seed(TEST_SEED, i * games + j)``, as ``sb3-realm eval --protocol maps`` plays them."""
    from sb3_realm.evaluation import game_seed  # main process only (see the imports)

    spec = _games.get("gorge")
    confs = spec.evaluation.configs("maps", maps=list(args.maps), games=args.games)  # map by map
    jobs = []
    for settings in args.settings:  # a settings' policies first: an interrupted run leaves whole settings
        for policy in args.policies:
            for i, name in enumerate(args.maps):
                block = range(i * args.games, (i + 1) * args.games)
                jobs.append(Job(policy, settings, name, maps_dir, tuple(game_seed(TEST_SEED, k) for k in block),
                                tuple(spec.apply_settings(settings, confs[k]) for k in block),
                                search_steps=getattr(args, "search_steps", None) if policy == "search" else None))
    return jobs


def _record(job: Job) -> dict:
    """A job as plain JSON data (what a finished job's file must hold to be taken instead of played again)."""
    return json.loads(json.dumps(job._asdict()))


def _job_file(out: str, job: Job, jobs: list[Job]) -> Path:
    index = [j for j in jobs if j.policy == job.policy and j.settings == job.settings].index(job)
    return Path(out) / "jobs" / f"{job.policy}-{job.settings}-{index}.json"


def finished(out: str | None, job: Job, jobs: list[Job]) -> dict | None:
    """The games of ``job`` from an earlier run into ``out`` (None: not played yet, or played with other
    arguments)."""
    if out is None:
        return None
    path = _job_file(out, job, jobs)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("job") != _record(job):
        return None
    return {"games": data["games"], "act_ms": np.asarray(data["act_ms"], dtype=np.float64)}


def keep(out: str | None, job: Job, jobs: list[Job], result: dict) -> None:
    """Write a finished job's games into ``out/jobs/`` (atomically), for a rerun to take."""
    if out is None:
        return
    from sb3_realm.evaluation import write_json_atomic  # main process only (see the imports)

    path = _job_file(out, job, jobs)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic({"job": _record(job), "games": result["games"],
                       "act_ms": [round(float(t), 6) for t in result["act_ms"]]}, path)


def check_args(args) -> str | None:
    """Refuse bad input before any game (a ``ValueError`` naming the value and the fix); returns the maps folder
    the env reads the open maps from (None when only shipped maps are played)."""
    if args.games < 1:
        raise ValueError(f"--games {args.games} must be >= 1 (games per map)")
    if args.jobs < 1:
        raise ValueError(f"--jobs {args.jobs} must be >= 1 (1: in this process, the only way to time a step)")
    steps = getattr(args, "search_steps", None)  # the scripts that share these checks have no search
    if steps is not None and (steps < 0 or "search" not in args.policies):
        raise ValueError(f"--search-steps {steps}: give a budget >= 0 (rollout steps a step) and play "
                         "the search with it (--policies ... search), or leave --search-steps out")
    for flag, values in (("--maps", args.maps), ("--settings", args.settings), ("--policies", args.policies)):
        if len(set(values)) < len(values):
            raise ValueError(f"{flag} {' '.join(values)} names one twice; name each once")
    for name in args.maps:
        check_map_name(name)
    open_maps = [name for name in args.maps if name.startswith("open_")]
    if not open_maps:
        return None
    folder = Path(args.maps_dir).expanduser()
    missing = [name for name in open_maps if not (folder / f"gorge_chase_map_{name[5:]}.json").is_file()]
    if missing:
        raise ValueError(f"--maps {' '.join(missing)}: no gorge_chase_map_<k>.json for them in --maps-dir "
                         f"{args.maps_dir!r}; pass --maps-dir FOLDER (or set SB3_REALM_GORGE_MAPS) to the folder of "
                         "the open maps, or play shipped maps only, e.g. --maps own_6 own_7")
    return str(folder)


def main() -> None:
    from sb3_realm.evaluation import write_json_atomic  # main process only (see the imports)
    from sb3_realm.tuning.script import check_output_folder

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--maps", nargs="+", default=list(TEST_MAPS),
                        help="open map ids (open_<k>), shipped maps (own_1 .. own_10) or map files; default: the test "
                             "maps")
    parser.add_argument("--maps-dir", default=default_maps_dir(), help="folder of gorge_chase_map_<k>.json")
    parser.add_argument("--games", type=int, default=50, help="games per map (seeds fixed by TEST_SEED)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["default", "final"],
                        help="the named settings to play, each on every map (default: default final)")
    parser.add_argument("--policies", nargs="+", choices=list(POLICIES), default=["scripted", "planner"],
                        help="the policies to play (default: scripted planner; search and ceiling take 20 to 60 "
                             "times as long)")
    parser.add_argument("--search-steps", type=int, default=None,
                        help="the search's budget a step in rollout steps, as a package built with --search STEPS "
                             "plays it (default: no budget)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes (default 1; per-step times are the cost of a step only with 1)")
    parser.add_argument("--out", default=None, help="also write OUT/gorge_planner.json (a new or empty folder, or "
                                                    "an earlier output of this script, which is replaced)")
    args = parser.parse_args()
    maps_dir = check_args(args)
    if args.out is not None:
        check_output_folder(args.out, OWN, markers=OWN, script="benchmarks/gorge_planner.py")
    jobs = jobs_of(args, maps_dir)
    GorgeEnv(map_names=list(args.maps), maps_dir=maps_dir)  # every map loads now, not halfway through the run
    start = time.perf_counter()
    results = {}
    for job in jobs:
        done = finished(args.out, job, jobs)
        if done is not None:
            results[job.policy, job.settings, job.map_name] = done
    pending = [job for job in jobs if (job.policy, job.settings, job.map_name) not in results]
    if args.jobs == 1 or len(pending) <= 1:
        for job in pending:
            results[job.policy, job.settings, job.map_name] = result = play(job)
            keep(args.out, job, jobs, result)
            progress(job, result)
    else:
        with mp_context().Pool(min(args.jobs, len(pending))) as pool:
            for job, result in zip(pending, pool.imap(play, pending), strict=True):
                results[job.policy, job.settings, job.map_name] = result
                keep(args.out, job, jobs, result)
                progress(job, result)
    wall_s = time.perf_counter() - start
    by_settings = {}
    for settings in args.settings:
        policies = {}
        for policy in args.policies:
            rows = [results[policy, settings, name] for name in args.maps]
            policies[policy] = {
                "maps": {name: summarise(row["games"], row["act_ms"])
                         for name, row in zip(args.maps, rows, strict=True)},
                "overall": summarise([g for row in rows for g in row["games"]],
                                     np.concatenate([row["act_ms"] for row in rows]), scores=False),
            }
        played_conf = next(job for job in jobs if job.settings == settings).confs[0]
        entry = {"env_conf": {k: v for k, v in played_conf.items() if k not in ("map_name", "map", "map_random")},
                 "policies": policies}  # the maps are --maps
        for policy, baseline in PAIRS:
            if not {policy, baseline} <= set(args.policies):
                continue
            games = {name: (results[policy, settings, name]["games"], results[baseline, settings, name]["games"])
                     for name in args.maps}
            entry[f"{policy}_minus_{baseline}"] = {
                "maps": {name: paired(*pair) for name, pair in games.items()},
                "overall": paired([g for p, _ in games.values() for g in p], [g for _, s in games.values() for g in s]),
            }
        by_settings[settings] = entry
    result = {
        "benchmark": "gorge_planner",
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "maps": list(args.maps),
        "games_per_map": args.games,
        "test_seed": TEST_SEED,
        "seeds": "game j of the i-th map: game_seed(test_seed, i * games_per_map + j) = test_seed * 1000003 + "
                 "i * games_per_map + j",
        "policies": list(args.policies),
        "search_steps": args.search_steps,
        "settings": by_settings,
        "timing": {"jobs": args.jobs, "per_step_times_meaningful": args.jobs == 1,
                   "note": "act_ms: time.perf_counter around each act() call, the platform observation's building "
                           "included; " + ("one process, one game at a time" if args.jobs == 1 else
                                           f"{args.jobs} processes sharing the machine: not the cost of a step on "
                                           "an idle core (rerun with --jobs 1 for that)")},
        "wall_s": round(wall_s, 1),
        "peak_rss": peak_rss_mib(),
        "machine": {"cpu": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                    "platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__},
    }
    if args.out is not None:
        write_json_atomic(result, Path(args.out) / "gorge_planner.json")
    print(json.dumps(result, indent=2))


def progress(job: Job, result: dict) -> None:
    """One line on stderr per finished job (a full run takes over an hour)."""
    scores = [g["score"] for g in result["games"]]
    print(json.dumps({"policy": job.policy, "settings": job.settings, "map": job.map_name, "games": len(scores),
                      "mean_score": round(float(np.mean(scores)), 1),
                      "act_ms_mean": round(float(result["act_ms"].mean()), 3)}), file=sys.stderr, flush=True)


if __name__ == "__main__":
    from sb3_realm.tuning.script import run_script  # main process only (see the imports)

    run_script(main, "gorge_planner.py")
