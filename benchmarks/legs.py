"""Where a model gains or loses steps against the oracle, leg by leg: both play the same nine-treasure sets (every
``--every``-th of the 715, start 2, end 1, max_step 2000); a leg ends with a pickup (treasure, or the end). For the
sets where both take the treasures in the same order, the steps each leg took are compared; the flash and the buff
pickup are located by leg. Prints JSON.

    python benchmarks/legs.py MODEL --map realm_map_1.json [--compare OTHER_MODEL] [--every 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from rss import peak_rss_mib  # benchmarks/rss.py, beside this script

from sb3_realm.agents import load_policy, play_episode
from sb3_realm.atomic import check_output_file
from sb3_realm.evaluation import game_seed, protocol_configs, write_json_atomic
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.tuning.script import run_script


def trace(env: RealmEnv, spec: str, seed: int, conf: dict) -> dict:
    """One game of ``spec``: the pickups in order as ``(id, step)`` (the end as id 1), the flash and buff steps."""
    policy = load_policy(spec, env)
    pickups, state = [], {"left": None, "flash": None, "buff": None}

    def observe(env: RealmEnv, info: dict, done: bool) -> None:
        game = env.unwrapped.game
        left = set(game.available_treasures)
        if state["left"] is not None:
            pickups.extend((t, game.step_no) for t in sorted(state["left"] - left))
        state["left"] = left
        if state["flash"] is None and game.talent_count:
            state["flash"] = game.step_no
        if state["buff"] is None and game.buff_count:
            state["buff"] = game.step_no
        if done and info.get("win"):
            pickups.append((1, game.step_no))

    info = play_episode(env, policy, seed, conf, observe=observe)
    return {"pickups": pickups, "flash": state["flash"], "buff": state["buff"], "score": float(info["score"]),
            "steps": int(info["steps"]), "win": bool(info["win"])}


def leg_of(step: int | None, pickups: list[tuple[int, int]]) -> int | None:
    """The leg (0 = to the first pickup) during which ``step`` happened."""
    if step is None:
        return None
    return next((i for i, (_, s) in enumerate(pickups) if step <= s), len(pickups))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--compare", default="oracle", help="the reference: 'oracle' or another model")
    parser.add_argument("--map", dest="map_path", default=None)
    parser.add_argument("--every", type=int, default=5, help="play every N-th of the 715 sets")
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args()
    if args.json_path is not None:  # before the games, not after them
        check_output_file(args.json_path, "--json")

    t0 = time.perf_counter()
    confs = protocol_configs("exhaustive", treasures=9, max_step=2000)
    env = RealmEnv(map_path=args.map_path)
    same_order, diffs, flash_legs, buff_legs, totals = 0, [], {"model": [], "reference": []}, \
        {"model": [], "reference": []}, []
    for index in range(0, len(confs), args.every):
        seed = game_seed(0, index)
        a, b = trace(env, args.model, seed, confs[index]), trace(env, args.compare, seed, confs[index])
        totals.append(a["score"] - b["score"])
        for name, t in (("model", a), ("reference", b)):
            flash_legs[name].append(leg_of(t["flash"], t["pickups"]))
            buff_legs[name].append(leg_of(t["buff"], t["pickups"]))
        order_a, order_b = [i for i, _ in a["pickups"]], [i for i, _ in b["pickups"]]
        if a["win"] and b["win"] and order_a == order_b:
            same_order += 1
            sa, sb = np.diff([0] + [s for _, s in a["pickups"]]), np.diff([0] + [s for _, s in b["pickups"]])
            diffs.append(sa - sb)
    diffs = np.array(diffs)  # (games, legs): the model's steps minus the reference's, leg by leg
    result = {
        "benchmark": "legs", "model": args.model, "reference": args.compare, "map": args.map_path or "default",
        "sets": len(totals), "mean_score_difference": float(np.mean(totals)),
        "sets_same_order": same_order,
        "per_leg_mean_steps_difference": [round(float(v), 3) for v in diffs.mean(axis=0)] if len(diffs) else [],
        "per_leg_share_faster": [round(float(v), 3) for v in (diffs < 0).mean(axis=0)] if len(diffs) else [],
        "per_leg_share_slower": [round(float(v), 3) for v in (diffs > 0).mean(axis=0)] if len(diffs) else [],
        "mean_total_steps_difference_same_order": float(diffs.sum(axis=1).mean()) if len(diffs) else None,
        "flash_leg_same": float(np.mean([x == y for x, y in zip(flash_legs["model"], flash_legs["reference"],
                                                                 strict=True)])),
        "buff_leg_same": float(np.mean([x == y for x, y in zip(buff_legs["model"], buff_legs["reference"],
                                                                strict=True)])),
        "wall_s": round(time.perf_counter() - t0, 1), "peak_rss_mib": peak_rss_mib(),
    }
    print(json.dumps(result, indent=2))
    if args.json_path:
        write_json_atomic(result, args.json_path)


if __name__ == "__main__":
    run_script(main, "legs.py")
