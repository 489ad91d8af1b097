"""The Realm's evaluation protocols: the fixed games a policy plays to be scored as the competition scores it.

Each protocol is a list of fixed ``usr_conf`` dicts, so every policy plays exactly the same games:

- ``leaderboard``: 30 games, start 2, end 1, 9 random treasures drawn from ``seed``, max_step 2000;
- ``exhaustive``: every set of ``treasures`` ids (default 9) out of the 13 slots {3..15}: C(13, 9) = 715 games;
- ``fixed``: one game with treasure ids 3 .. 3 + treasures - 1;
- ``custom``: the treasure sets you give (lists of ids).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .rules import LEADERBOARD_CONF, EpisodeConfig

__all__ = [
    "PROTOCOLS",
    "SLOTS",
    "SUCCESS_METRICS",
    "check_eval_configs",
    "describe_protocol",
    "episode_metrics",
    "evaluate_args",
    "held_out_configs",
    "protocol_configs",
    "random_starts",
    "report_lines",
    "result_details",
    "summarize",
    "won",
    "worst_table",
]

PROTOCOLS = ("leaderboard", "exhaustive", "fixed", "custom")
SLOTS = tuple(range(3, 16))  # treasure slots of the leaderboard (start 2, end 1)


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int | None = None,
                     custom: list[list[int]] | None = None, max_step: int | None = None,
                     maps: Sequence[str] | None = None) -> list[dict]:
    """The ``usr_conf`` dicts of a protocol (all with fixed treasure ids, start 2, end 1); ``games`` (default 30) is
    the leaderboard's alone, ``max_step`` defaults to 2000. The Realm has one map: ``maps`` is refused."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {list(PROTOCOLS)}")
    if maps:
        raise ValueError(f"--maps {','.join(map(str, maps))}: Back to the Realm plays one map; pass it with --map PATH "
                         "and drop --maps")
    if custom and protocol != "custom":
        raise ValueError(f"treasure sets (--sets) are played only by the custom protocol, not by {protocol!r}: add "
                         "--protocol custom, or drop --sets")
    if games is not None and protocol != "leaderboard":
        raise ValueError(f"--games {games} is the number of games of the leaderboard protocol only; --protocol "
                         f"{protocol} plays {describe_protocol(protocol, treasures)} and takes no --games: drop "
                         f"--games, or use --protocol leaderboard --games {games}")
    if treasures is not None and protocol == "custom":
        raise ValueError(f"--treasures {treasures} is not used by --protocol custom, whose treasure sets (--sets) "
                         "say how many treasures each game has: drop --treasures")
    games = 30 if games is None else games
    max_step = 2000 if max_step is None else max_step
    n = 9 if treasures is None else treasures
    if not isinstance(n, int) or not 0 <= n <= len(SLOTS):
        raise ValueError(f"--treasures {n!r} is out of range; allowed 0..{len(SLOTS)}")
    base = {**LEADERBOARD_CONF, "treasure_random": 0, "max_step": max_step}
    if protocol == "leaderboard":
        if games < 1:
            raise ValueError(f"--games {games} must be >= 1")
        draw = EpisodeConfig.from_usr_conf({**LEADERBOARD_CONF, "treasure_num": n, "max_step": max_step})
        rng = np.random.default_rng(seed)
        sets = [list(draw.draw_treasures(rng)) for _ in range(games)]
    elif protocol == "exhaustive":
        sets = [list(c) for c in itertools.combinations(SLOTS, n)]
    elif protocol == "fixed":
        sets = [list(SLOTS[:n])]
    else:
        if not custom:
            raise ValueError("the custom protocol needs treasure sets, e.g. --sets '3,4,5;6,7,8'")
        sets = [sorted(int(i) for i in s) for s in custom]
    configs = [{**base, "treasure_id": s} for s in sets]
    for c in configs:
        EpisodeConfig.from_usr_conf(c)  # validate every set now, not halfway through a run
    return configs


def describe_protocol(protocol: str, treasures: int | None) -> str:
    """What ``protocol`` plays with ``treasures`` treasures per game (None: its default), in words (the CLI prints
    it)."""
    n = 9 if treasures is None else treasures
    count = f" ({math.comb(len(SLOTS), n)} games)" if 0 <= n <= len(SLOTS) else ""
    plays = {"exhaustive": f"every set of {n} treasures out of the {len(SLOTS)} slots{count}", "fixed": "one game",
             "custom": "one game per treasure set of --sets"}
    return plays.get(protocol, "")


def check_eval_configs(configs: list) -> list[EpisodeConfig]:
    """The evaluation games of a training run, parsed: each with start 2, end 1, fixed treasure ids and one
    max_step, as :func:`protocol_configs` makes them; ``ValueError`` naming the first that is not."""
    parsed = [EpisodeConfig.from_usr_conf(c) for c in configs]
    for i, c in enumerate(parsed):
        if (c.start, c.end, c.treasure_random) != (2, 1, 0) or c.max_step != parsed[0].max_step:
            raise ValueError(f"configs[{i}] = {c.to_usr_conf()}: evaluation configs need start 2, end 1, "
                             f"treasure_random 0 (fixed treasure_id) and one max_step ({parsed[0].max_step}), "
                             "as protocol_configs() makes them")
    return parsed


def random_starts(config: EpisodeConfig) -> list[dict]:
    """The starts a curriculum's random start may draw under ``config``, as the env's ``set_config`` arguments:
    every position but the end and the fixed treasures."""
    fixed = () if config.treasure_random else config.treasure_id
    return [{"start": i, "end": config.end} for i in range(1, 16) if i != config.end and i not in fixed]


# ------------------------------------------------------------------------------------------------ figures
def result_details(info: dict) -> dict:
    """A game's own figures from its final ``info`` (:attr:`~sb3_realm.evaluation.GameResult.details`): its treasure
    set, whether it reached the end (the env's ``info["win"]``, maybe with a treasure left), the treasures taken, the
    ids of the set it left (``missed``), the flashes used and the buffs taken."""
    return {"treasure_ids": tuple(int(i) for i in info.get("treasure_ids", ())),
            "reached_end": bool(info.get("win", False)), "treasures": int(info["treasures"]),
            "missed": tuple(int(i) for i in info.get("treasures_missed", ())),
            "flash_used": int(info.get("flash_used", 0)), "buff_used": int(info.get("buff_used", 0))}


def summarize(games: Sequence) -> dict:
    """The Realm's figures of a report's games (each a :class:`~sb3_realm.evaluation.GameResult` with
    :func:`result_details`): the mean treasures taken, the games that flashed and that took the buff; ``wins`` and
    ``win_rate`` count the games won, the end reached with every treasure of the set, the competition's clean win (a
    game that ends with a treasure left forfeits 100 points for it); ``reached_end`` the games that reached the end
    (the env's ``info["win"]``)."""
    return {
        "mean_treasures": float(np.mean([r.treasures for r in games])),
        "flash_games": int(sum(r.flash_used > 0 for r in games)),
        "buff_games": int(sum(r.buff_used > 0 for r in games)),
        "wins": int(sum(r.won for r in games)), "win_rate": float(np.mean([r.won for r in games])),
        "reached_end": int(sum(r.reached_end for r in games)),
        "games_with_missed_treasure": int(sum(bool(r.missed) for r in games)),
        "missed_by_id": dict(sorted(Counter(i for r in games for i in r.missed).items())),
    }


def report_lines(s: dict, yardstick: str) -> list[str]:
    """The lines of a readable report between its first and the yardstick's: score, wins, treasures, steps."""
    del yardstick
    return [
        f"score mean {s['mean_score']:.2f}  min {s['min_score']:.2f}  max {s['max_score']:.2f}  | wins "
        f"{s['wins']}/{s['games']} with every treasure, {s['reached_end']} reached the end  | treasures "
        f"{s['mean_treasures']:.2f}  | steps {s['mean_steps']:.1f}",
        f"games with a missed treasure: {s['games_with_missed_treasure']}  missed by id: {s['missed_by_id']}  | "
        f"flash in {s['flash_games']} games, buff in {s['buff_games']}",
    ]


def worst_table(games: Sequence, worst: int, yardstick: str) -> list[str]:
    """The ``worst`` lowest-scoring games, one line each, with their treasure sets and what they missed."""
    lines = [f"{'game':>5} {'score':>8} {'won':>4} {'tr':>3} {'steps':>6} {'flash':>5} {'buff':>4} "
             f"{yardstick:>8} {'gap':>7}  treasure ids / missed"]
    for r in sorted(games, key=lambda r: (r.score, r.index))[:worst]:
        oracle = f"{r.yardstick_score:8.1f}" if r.yardstick_score is not None else f"{'-':>8}"
        gap = f"{r.gap:7.1f}" if r.gap is not None else f"{'-':>7}"
        lines.append(f"{r.index:>5} {r.score:8.1f} {'yes' if r.won else 'no':>4} {r.treasures:>3} {r.steps:>6} "
                     f"{r.flash_used:>5} {r.buff_used:>4} {oracle} {gap}  {list(r.treasure_ids)} / {list(r.missed)}")
    return lines


# ------------------------------------------------------------------------------------------ training runs
def episode_metrics(info: dict) -> dict[str, float]:
    """A finished training episode's logged values (``train_episodes/*``), from its final ``info``: score, win,
    treasures, steps, whether it used the flash and took the buff, bumps, and each reward term's weighted sum."""
    out = {"score": float(info["score"]), "win_rate": float(info["win"]), "treasures": float(info["treasures"]),
           "steps": float(info["steps"]), "flash_rate": float(info["flash_used"] > 0),
           "buff_rate": float(info["buff_used"] > 0), "bumps": float(info["bumps"])}
    out.update({f"reward_by_term/{k}": float(v) for k, v in info.get("episode_reward_by_term", {}).items()})
    return out


#: a curriculum's success metrics: the value of one finished episode
SUCCESS_METRICS = {
    "win_rate": lambda info: float(info["win"]),
    # fraction of the episode's treasures collected (1.0 when it had none)
    "treasure_rate": lambda info: info["treasures"] / max(1, info["treasures"] + len(info["treasures_missed"])),
    "score": lambda info: float(info["score"]),
}


def held_out_configs(usr_conf: dict, games: int, seed: int, maps: Sequence[str]) -> list[dict]:
    """A training run's held-out games: the leaderboard draw from ``seed`` with the run's treasure count and
    max_step. ``maps`` must be empty: the Realm plays one map (``env.map_path`` / ``env.map_name``)."""
    if maps:
        raise ValueError(f"eval_maps = {list(maps)!r}: Back to the Realm plays one map, the run's own (env.map_path or "
                         "env.map_name); remove eval_maps")
    usr = EpisodeConfig.from_usr_conf(usr_conf)
    return protocol_configs("leaderboard", seed=seed, games=games, treasures=usr.treasure_num, max_step=usr.max_step)


def evaluate_args(usr_confs: Sequence[dict]) -> dict:
    """The arguments of :func:`~sb3_realm.evaluation.evaluate` that play exactly the games ``usr_confs`` (each with
    start 2, end 1, its ``treasure_id`` and one ``max_step``, as :func:`held_out_configs` makes them), in order: the
    ``custom`` protocol on their treasure sets."""
    return {"protocol": "custom", "custom": [conf["treasure_id"] for conf in usr_confs],
            "max_step": usr_confs[0]["max_step"]}


def won(game) -> bool:
    """A game (a :class:`~sb3_realm.evaluation.GameResult` with :func:`result_details`) won: the end reached with
    every treasure of its set."""
    return bool(game.details.get("reached_end")) and not game.details.get("missed")
