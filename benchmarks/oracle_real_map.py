"""The oracle (sb3_realm.games.realm.experts) on a map: every 9-treasure set of the leaderboard configuration (start 2,
end 1, max_step 2000: C(13, 9) = 715 sets) and the 30-game leaderboard protocol (9 random treasures per game drawn with
``np.random.default_rng(seed)``). Prints JSON: wins, treasures, steps, scores, the gap between the steps played and the
steps the first plan predicted, flash/buff use, planning and acting time per episode.

    python benchmarks/oracle_real_map.py [--map PATH] [--no-flash] [--no-buff] [--compare] [--refined]
        [--refine-setting NAME=VALUE ...] [--limit N] [--workers N]

``--compare`` also plays the sets with the flash off and with the buff off and reports the steps each saves.
``--refined`` also plays them with ``oracle-refined`` (the tour played step-exactly,
:mod:`sb3_realm.games.realm.experts.refine`) and reports the steps it saves over the oracle, set by set;
``--refine-setting beam_width=30`` (repeatable) sets its beam search
(:data:`~sb3_realm.games.realm.experts.refine.REFINE_SETTINGS`, as ``imitation.refine_*`` does).
The map defaults to $SB3_REALM_REAL_MAP, else ../shared/data/realm_map_1.json beside the checkout, else the shipped
default map.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.games.realm import LEADERBOARD_CONF, EpisodeConfig, Game, competition_observation, default_map, load_map
from sb3_realm.games.realm.experts import OraclePolicy
from sb3_realm.games.realm.experts.refine import RefinedOraclePolicy, check_setting

REPO = Path(__file__).resolve().parents[1]
REAL_MAP = REPO.parent / "shared" / "data" / "realm_map_1.json"


def resolve_map(path: str | None):
    """The map to use and its description."""
    raw = path or os.environ.get("SB3_REALM_REAL_MAP") or (str(REAL_MAP) if REAL_MAP.is_file() else None)
    if raw is None:
        return default_map(), "default (shipped)"
    return load_map(raw), str(raw)


def play_episode(game: Game, policy: OraclePolicy, config: EpisodeConfig, ids: tuple[int, ...]) -> dict:
    """One episode through the competition-shaped observation; the policy's own time is measured."""
    game.reset(config, ids)
    policy.reset(config)
    act_s = 0.0
    while not (game.terminated or game.truncated):
        obs, env_info = competition_observation(game)
        t0 = time.perf_counter()
        action = policy.act(obs, env_info)
        act_s += time.perf_counter() - t0
        game.step(action)
    return {"ids": list(ids), "win": bool(game.win), "treasures": game.treasure_count, "steps": game.step_no,
            "score": game.score(), "planned": policy.planned_steps, "first_cost": policy.planned_cost,
            "replans": policy.replans, "flash": game.talent_count, "flash_failed": game.flash_fail_count,
            "buff": game.buff_count, "plan_s": policy.plan_seconds, "policy_s": act_s}


def _run_chunk(args: tuple) -> list[dict]:
    map_path, use_flash, use_buff, jobs, refined = args
    game_map, _ = resolve_map(map_path)
    policy = (RefinedOraclePolicy if refined is not None else OraclePolicy)(game_map, use_flash=use_flash,
                                                                            use_buff=use_buff)
    if refined:
        policy.configure(**refined)
    game = Game(game_map, policy.rules)
    return [play_episode(game, policy, EpisodeConfig.from_usr_conf(conf), tuple(ids)) for conf, ids in jobs]


def run(jobs: list[tuple[dict, tuple[int, ...]]], map_path: str | None, use_flash: bool, use_buff: bool,
        workers: int, refined: dict | None = None) -> list[dict]:
    """Play the ``(usr_conf, treasure ids)`` jobs, split over ``workers`` processes (``refined``: the refined
    oracle, with these settings)."""
    if workers <= 1:
        return _run_chunk((map_path, use_flash, use_buff, jobs, refined))
    chunks = [jobs[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        parts = list(pool.map(_run_chunk, [(map_path, use_flash, use_buff, c, refined) for c in chunks]))
    out: list[dict] = []
    for i in range(len(jobs)):
        out.append(parts[i % workers][i // workers])
    return out


def summary(results: list[dict], n_treasures: int) -> dict:
    """The figures of a batch of episodes."""
    steps = np.array([r["steps"] for r in results], dtype=float)
    score = np.array([r["score"] for r in results], dtype=float)
    planned = np.array([r["planned"] for r in results], dtype=float)
    cost = np.array([r["first_cost"] for r in results], dtype=float)
    gap = (steps - planned) / planned
    raw = (steps - cost) / cost
    worst = int(np.argmax(np.abs(gap)))
    return {
        "episodes": len(results),
        "wins": int(sum(r["win"] for r in results)),
        "all_treasures": int(sum(r["win"] and r["treasures"] == n_treasures for r in results)),
        "mean_steps": round(float(steps.mean()), 3),
        "min_steps": int(steps.min()),
        "max_steps": int(steps.max()),
        "mean_score": round(float(score.mean()), 3),
        "min_score": round(float(score.min()), 3),
        "mean_planned_steps": round(float(planned.mean()), 3),
        "gap_played_vs_planned": {"mean": round(float(gap.mean()), 5), "max_abs": round(float(np.abs(gap).max()), 5),
                                  "worst_set": " ".join(map(str, results[worst]["ids"]))},
        "gap_played_vs_model_cost": {"mean": round(float(raw.mean()), 5),
                                     "max_abs": round(float(np.abs(raw).max()), 5)},
        "episodes_with_flash": int(sum(r["flash"] > 0 for r in results)),
        "failed_flashes": int(sum(r["flash_failed"] for r in results)),
        "episodes_with_buff": int(sum(r["buff"] > 0 for r in results)),
        "mean_replans": round(float(np.mean([r["replans"] for r in results])), 4),
        "plan_seconds_per_episode": round(float(np.mean([r["plan_s"] for r in results])), 4),
        "policy_seconds_per_episode": round(float(np.mean([r["policy_s"] for r in results])), 4),
        "act_seconds_per_episode": round(float(np.mean([r["policy_s"] - r["plan_s"] for r in results])), 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--map", default=None, help="map JSON (default: the real map if present, else the default map)")
    ap.add_argument("--no-flash", action="store_true", help="the oracle never flashes")
    ap.add_argument("--no-buff", action="store_true", help="the oracle never uses (and avoids) the speed buff")
    ap.add_argument("--compare", action="store_true", help="also play with the flash off and with the buff off")
    ap.add_argument("--refined", action="store_true", help="also play the sets with oracle-refined")
    ap.add_argument("--refine-setting", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of oracle-refined's beam search (beam_width, max_refines, departure_cost, guided)")
    ap.add_argument("--games", type=int, default=30, help="games of the leaderboard protocol")
    ap.add_argument("--seed", type=int, default=0, help="seed of the leaderboard protocol's treasure draws")
    ap.add_argument("--limit", type=int, default=None, help="play only every k-th of the 715 sets (k = 715 // N)")
    ap.add_argument("--workers", type=int, default=1, help="processes")
    args = ap.parse_args()
    settings = {}
    for item in args.refine_setting:
        name, _, raw = item.partition("=")
        try:
            value = json.loads(raw)
        except ValueError:
            ap.error(f"--refine-setting {item!r}: the value {raw!r} is not a number or true/false; write NAME=VALUE, "
                     "e.g. beam_width=30 or guided=false")
        try:
            settings[name] = check_setting(name, value, f"--refine-setting {name}")
        except ValueError as exc:
            ap.error(f"--refine-setting {item!r}: {exc}")
    if settings and not args.refined:
        ap.error("--refine-setting sets oracle-refined's search: add --refined")

    _game_map, map_name = resolve_map(args.map)
    base = EpisodeConfig.from_usr_conf(LEADERBOARD_CONF)
    fixed = {**LEADERBOARD_CONF, "treasure_random": 0}
    sets = list(itertools.combinations(base.treasure_pool(), base.treasure_num))
    if args.limit:
        sets = sets[::max(1, len(sets) // args.limit)][:args.limit]
    set_jobs = [({**fixed, "treasure_id": list(ids)}, ids) for ids in sets]
    rng = np.random.default_rng(args.seed)
    drawn = [base.draw_treasures(rng) for _ in range(args.games)]
    lb_jobs = [({**fixed, "treasure_id": list(ids)}, ids) for ids in drawn]

    use_flash, use_buff = not args.no_flash, not args.no_buff
    t0 = time.perf_counter()
    res = run(set_jobs, args.map, use_flash, use_buff, args.workers)
    out = {
        "map": map_name,
        "config": {"start": base.start, "end": base.end, "treasures": base.treasure_num, "max_step": base.max_step},
        "use_flash": use_flash,
        "use_buff": use_buff,
        "all_sets": summary(res, base.treasure_num),
        "leaderboard": {"games": args.games, "seed": args.seed,
                        **summary(run(lb_jobs, args.map, use_flash, use_buff, args.workers), base.treasure_num)},
    }
    if args.compare:
        by_set = {tuple(r["ids"]): r["steps"] for r in res}
        for name, fl, bf in (("no_flash", False, use_buff), ("no_buff", use_flash, False)):
            other = run(set_jobs, args.map, fl, bf, args.workers)
            diff = np.array([r["steps"] - by_set[tuple(r["ids"])] for r in other], dtype=float)
            out[name] = {**summary(other, base.treasure_num),
                         "steps_saved_mean": round(float(diff.mean()), 3),
                         "steps_saved_min": int(diff.min()), "steps_saved_max": int(diff.max())}
    if args.refined:
        t1 = time.perf_counter()
        other = run(set_jobs, args.map, use_flash, use_buff, args.workers, refined=settings)
        saved = np.array([by - r["steps"] for by, r in zip([r["steps"] for r in res], other, strict=True)], dtype=float)
        out["refined"] = {**summary(other, base.treasure_num), "settings": settings,
                          "steps_saved_mean": round(float(saved.mean()), 3),
                          "steps_saved_min": int(saved.min()), "steps_saved_max": int(saved.max()),
                          "sets_better": int((saved > 0).sum()), "sets_worse": int((saved < 0).sum()),
                          "wall_seconds": round(time.perf_counter() - t1, 1)}
    out["wall_seconds"] = round(time.perf_counter() - t0, 1)
    out["machine"] = {"python": platform.python_version(), "cpu": platform.processor() or platform.machine(),
                      "workers": args.workers}
    out["peak_rss"] = peak_rss_mib()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
