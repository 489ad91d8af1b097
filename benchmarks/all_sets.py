"""Every treasure set of the 13 leaderboard slots (2 ** 13 = 8,192 games: each count 0..13, start 2, end 1, max_step
2000) played by a model, deterministic and batched (``sb3_realm.evaluation.play_games``, the games and actions of
``sb3-realm eval --protocol exhaustive --treasures N``). A game is a function of its treasure set, so this is every
game of the competition's kind. Per count: sets, won (the end reached with every treasure), ended with a treasure
left, never finished; the mean score of the nine-treasure sets; the lost sets; wall time and peak RSS. Prints JSON.

    python benchmarks/all_sets.py MODEL --map realm_map_1.json [--counts 0 1 2 ...] [--json PATH]

``--workers N`` shares the games out over N worker processes, ``--executor ray`` over N Ray workers (on the cluster
at ``--ray-address`` / ``$RAY_ADDRESS``, else a Ray instance started here): the same games with the same results.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.agents.checkpoint import UntrustedCheckpointError, load_model
from sb3_realm.atomic import check_output_file
from sb3_realm.evaluation import game_seed, protocol_configs, write_json_atomic
from sb3_realm.evaluation.batched import play_games
from sb3_realm.executors import EXECUTORS, check_executor
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.protocols import SLOTS
from sb3_realm.imitation import Collector
from sb3_realm.models.algorithms import algorithm, detect_algorithm
from sb3_realm.models.saved import run_mask_wall_moves


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--map", dest="map_path", default=None, help="map JSON (default: the built-in default map)")
    parser.add_argument("--counts", type=int, nargs="+", default=list(range(len(SLOTS) + 1)),
                        help="treasure counts to play (default: all, 0..13)")
    parser.add_argument("--mask-wall-moves", action="store_true",
                        help="play with the wall mask (default: as the model's run config says)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of this process (without workers)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes (Ray workers with --executor ray); "
                        "1: play every game in this process")
    parser.add_argument("--executor", choices=EXECUTORS, default="processes")
    parser.add_argument("--ray-address", default=None, help="the Ray cluster to join (default: $RAY_ADDRESS, else "
                        "Ray starts here)")
    parser.add_argument("--json", dest="json_path", default=None)
    parser.add_argument("--trust-pickle", action="store_true",
                        help="let the checkpoint's pickles run (only for a file you made yourself)")
    args = parser.parse_args()
    bad = [n for n in args.counts if not 0 <= n <= len(SLOTS)]
    if bad:
        parser.error(f"--counts {bad} out of range; each count must be in 0..{len(SLOTS)}")
    try:  # bad input fails here, before any game is played
        if args.json_path:
            check_output_file(args.json_path, "--json")
        RealmEnv(map_path=args.map_path)  # the map file is read and checked
        algo = detect_algorithm(args.model)
        if args.workers < 1:
            raise ValueError(f"--workers {args.workers} must be >= 1")
        check_executor(args.executor, args.ray_address)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    mask_walls = args.mask_wall_moves or run_mask_wall_moves(Path(args.model))
    torch.set_num_threads(args.threads)
    try:
        model = load_model(args.model, device="cpu", trust_pickle=args.trust_pickle)
    except UntrustedCheckpointError as exc:
        parser.error(str(exc))
    policy = model.policy
    confs = [c for n in sorted(set(args.counts)) for c in protocol_configs("exhaustive", treasures=n)]
    games = [(game_seed(0, i), conf) for i, conf in enumerate(confs)]
    t0 = time.perf_counter()
    env_kwargs = {"map_path": args.map_path, "mask_wall_moves": mask_walls}
    if args.workers == 1 and args.executor == "processes":
        played = play_games(policy, env_kwargs, games, masked=algorithm(algo).maskable, batch=128)
    else:
        with Collector(args.workers, executor=args.executor, ray_address=args.ray_address) as collector:
            played = collector.play(model, algo, env_kwargs, games, masked=algorithm(algo).maskable, game="realm")
    wall = time.perf_counter() - t0
    by_count: dict[int, dict] = {}
    for g in played:
        row = by_count.setdefault(len(g.treasure_ids), {"sets": 0, "won": 0, "treasure_left": 0,
                                                        "never_finished": 0})
        row["sets"] += 1
        row["won"] += g.won
        row["treasure_left"] += g.reached_end and not g.won
        row["never_finished"] += not g.reached_end
    nine = [g.score for g in played if len(g.treasure_ids) == 9]
    out = {
        "model": args.model, "map": args.map_path or "default", "games": len(played),
        "won": sum(r["won"] for r in by_count.values()),
        "won_other_counts": sum(r["won"] for n, r in by_count.items() if n != 9),
        "games_other_counts": sum(r["sets"] for n, r in by_count.items() if n != 9),
        "nine_treasure_mean_score": round(sum(nine) / len(nine), 2) if nine else None,
        "by_count": {str(n): r for n, r in sorted(by_count.items())},
        "lost": [{"treasure_ids": list(g.treasure_ids), "reached_end": g.reached_end, "missed": list(g.missed),
                  "steps": g.steps, "score": g.score} for g in played if not g.won],
        "wall_s": round(wall, 1), "peak_rss": peak_rss_mib(), "workers": args.workers, "executor": args.executor,
    }
    if args.json_path:
        write_json_atomic(out, args.json_path)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
