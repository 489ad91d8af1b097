"""Which games an imitation run plays and labels, and which round it keeps: pure functions of the config, the games'
results and the round (no model, no process), so each choice is tested on its own.

- :func:`training_games`: fresh games of a round (env seeds never among the held-out evaluation's);
- :func:`sweep_games`: the sweep (``imitation.selection.games``), the competition's own games by treasure set;
- :func:`sweep_labels`: the sweep games labelled first next round (``selection.label``), with what it counted;
- :func:`slow_games`: the won sweep games slower than the expert's own game of the set;
- :func:`fill_from_screening`: the rest of a round's games from the screened ones the learner never finishes;
- :func:`keep_key`: what the kept round is chosen by (``selection.keep``).

A game is ``(env seed, usr_conf)``; a result is a :class:`~sb3_realm.evaluation.GameResult`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..evaluation import GameResult, game_seed
from .config import ImitateConfig, SelectionConfig

__all__ = [
    "Game",
    "fill_from_screening",
    "is_leaderboard_set",
    "keep_key",
    "slow_games",
    "sweep_games",
    "sweep_labels",
    "training_games",
]

Game = tuple[int, dict]


def training_games(config: ImitateConfig, round_no: int, n: int) -> list[Game]:
    """``n`` fresh games of round ``round_no``: env seeds drawn from ``(seed, round)`` in ``[2**20, 2**31)`` (so
    never 0..29, the games of ``sb3-realm eval --seed 0``) and never one of the held-out evaluation's, each the
    ``usr_conf`` of a variant drawn from the game's own (:attr:`~sb3_realm.games.Episodes.training_variants` of
    ``env.usr_conf`` and ``imitation.treasure_counts``); with several ``env.settings``, game ``k`` plays the ``k``-th
    in turn (its keys over the game's, except those ``env.usr_conf`` gives)."""
    spec, env = config.spec, config.env
    base = spec.episodes.config.from_usr_conf(env.usr_conf)
    variants = spec.episodes.training_variants(base, list(config.imitation.treasure_counts))
    if not variants:
        raise ValueError(f"{spec.title} gives no training games for imitation.treasure_counts = "
                         f"{config.imitation.treasure_counts!r}; give counts it plays, or none")
    names = env.settings_names(spec)
    held_out = {game_seed(config.eval_seed, i) for i in range(config.eval_games)}
    rng = np.random.default_rng([config.seed, round_no, 1])
    games: list[Game] = []
    while len(games) < n:
        seed = int(rng.integers(2**20, 2**31))
        if seed in held_out:
            continue
        conf = dict(variants[int(rng.choice(len(variants)))])
        if names != ("default",):
            conf = spec.apply_settings(names[len(games) % len(names)], conf, keep=env.usr_conf)
        games.append((seed, conf))
    return games


def is_leaderboard_set(treasure_ids: Sequence[int], usr: Any) -> bool:
    """Whether a treasure set is of ``usr``'s count (``env.usr_conf``'s: the leaderboard's games)."""
    return len(treasure_ids) == usr.treasure_num


def sweep_games(selection: SelectionConfig, usr: Any, treasure_counts: Sequence[int],
                eval_seed: int) -> list[Game]:
    """The sweep: every treasure set of ``usr``'s count first, then for each other count of ``treasure_counts`` its
    fixed set (the first ids of the pool) and ``selection.other_sets`` random sets drawn from ``eval_seed`` (each set
    once), or with ``games: all_sets`` every set of each other count. Sets come from ``usr``'s own pool: never its
    start or end id. Empty without a sweep."""
    if not selection.swept:
        return []
    pool = usr.treasure_pool()
    sets = [tuple(ids) for ids in itertools.combinations(pool, usr.treasure_num)]
    for count in sorted(set(treasure_counts) - {usr.treasure_num}):
        if selection.games == "all_sets":
            sets += list(itertools.combinations(pool, count))  # the first is the fixed set, pool[:count]
            continue
        draw = replace(usr, treasure_random=1, treasure_num=count)
        rng = np.random.default_rng(eval_seed + count)
        sets += [tuple(pool[:count])] + [draw.draw_treasures(rng) for _ in range(selection.other_sets)]
    base = {**usr.to_usr_conf(), "treasure_random": 0}
    unique = list(dict.fromkeys(sets))  # each set once, in order
    return [(game_seed(eval_seed, i), {**base, "treasure_num": len(ids), "treasure_id": list(ids)})
            for i, ids in enumerate(unique)]


def slow_games(swept: Sequence[tuple[Game, GameResult]], reference_steps: Sequence[int], usr: Any,
               margin: int) -> tuple[list[Game], dict]:
    """The sweep games of ``usr``'s count that the learner wins at least ``margin`` steps slower than the expert's
    own game of the same set (``reference_steps``: the expert's steps on those sets, in sweep order), the slowest
    first (ties in sweep order); and ``{"sweep_steps_over_expert": mean over the won ones, "sweep_slow": count}``."""
    main = [i for i, (game, _) in enumerate(swept) if is_leaderboard_set(game[1]["treasure_id"], usr)]
    over = [(swept[i][1].steps - ref, i) for i, ref in zip(main, reference_steps, strict=True) if swept[i][1].won]
    slow = sorted((-o, i) for o, i in over if o >= margin)
    stats = {"sweep_steps_over_expert": float(np.mean([o for o, _ in over])) if over else 0.0, "sweep_slow": len(slow)}
    return [swept[i][0] for _, i in slow], stats


def sweep_labels(selection: SelectionConfig, swept: Sequence[tuple[Game, GameResult]], usr: Any, *,
                 dagger_games: int, seed: int, round_no: int,
                 slow: Sequence[Game] = ()) -> tuple[list[Game], dict]:
    """The sweep games labelled first in round ``round_no``, in ``selection.label``'s order, and what was counted.

    ``unfinished``: the games the learner never finishes (its loops); with ``games: all_sets`` and more of them than
    ``dagger_games``, those of ``usr``'s count first, then the others in a random order drawn from ``(seed,
    round)``. ``treasure_left``: those that reach the end with a treasure left. ``slow``: ``slow`` (from
    :func:`slow_games`), at most ``selection.slow_games``. A game that ends with a treasure left is lost for
    :func:`keep_key` but labelled only with ``treasure_left`` (labelling them first as well gives worse models;
    docs/benchmarks.md)."""
    labelled: list[Game] = []
    stats: dict = {}
    lost = 0  # the labelled games that lose (unfinished, treasure_left), as against the slow ones
    for kind in selection.label:
        if kind == "unfinished":
            unfinished = [game for game, result in swept if not result.reached_end]
            if selection.games == "all_sets" and len(unfinished) > dagger_games:
                main = [g for g in unfinished if is_leaderboard_set(g[1]["treasure_id"], usr)]
                other = [g for g in unfinished if not is_leaderboard_set(g[1]["treasure_id"], usr)]
                rng = np.random.default_rng([seed, round_no, 5])
                unfinished = (main + [other[i] for i in rng.permutation(len(other)).tolist()])[:dagger_games]
            labelled += unfinished
            lost += len(unfinished)
        elif kind == "treasure_left":
            left = [game for game, result in swept if result.reached_end and not result.won]
            labelled += left
            lost += len(left)
        else:  # slow
            chosen = list(slow)[:selection.slow_games]
            stats["sweep_slow_labelled"] = min(len(chosen), max(0, dagger_games - len(labelled)))
            labelled += chosen
    stats["sweep_lost_labelled"] = min(lost, dagger_games)
    return labelled, stats


def fill_from_screening(labelled: list[Game], pool: Sequence[Game], played: Sequence[GameResult], *,
                        dagger_games: int, seed: int, round_no: int) -> list[Game]:
    """A round's ``dagger_games`` games: ``labelled`` first, then of the screened ``pool`` (played as ``played``)
    the games the learner never finishes, then the others drawn at random from ``(seed, round)``, the screened ones
    in pool order."""
    lost = [i for i, result in enumerate(played) if not result.reached_end]
    rng = np.random.default_rng([seed, round_no, 3])
    rest = [i for i in rng.permutation(len(pool)).tolist() if played[i].reached_end]
    chosen = sorted((lost + rest)[:max(0, dagger_games - len(labelled))])
    return (labelled + [pool[i] for i in chosen])[:dagger_games]


def keep_key(selection: SelectionConfig, held_out_mean: float, swept: Sequence[GameResult] | None,
             usr: Any) -> tuple:
    """What the kept round is chosen by (the larger the better; ties go to the later round): with a sweep, fewer
    lost sweep games (a game is lost unless won with every treasure; of every count, or with ``keep:
    fewest_lost_leaderboard`` of ``usr``'s count only), then the mean score over the sweep's sets of ``usr``'s
    count; without one, the held-out mean score."""
    if swept is None:
        return (held_out_mean,)
    main = [r for r in swept if is_leaderboard_set(r.treasure_ids, usr)]
    counted = main if selection.keep == "fewest_lost_leaderboard" else swept
    return (-sum(not r.won for r in counted), float(np.mean([r.score for r in main])))
