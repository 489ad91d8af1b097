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

import numpy as np

from .rules import LEADERBOARD_CONF, EpisodeConfig

__all__ = ["PROTOCOLS", "SLOTS", "protocol_configs", "describe_protocol", "check_eval_configs", "random_starts"]

PROTOCOLS = ("leaderboard", "exhaustive", "fixed", "custom")
SLOTS = tuple(range(3, 16))  # treasure slots of the leaderboard (start 2, end 1)


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int = 30,
                     custom: list[list[int]] | None = None, max_step: int = 2000) -> list[dict]:
    """The ``usr_conf`` dicts of a protocol (all with fixed treasure ids, start 2, end 1)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {list(PROTOCOLS)}")
    if custom and protocol != "custom":
        raise ValueError(f"treasure sets (--sets) are played only by the custom protocol, not by {protocol!r}: add "
                         "--protocol custom, or drop --sets")
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
