"""Evaluation by the competition's own scoring, over the leaderboard protocol and over every treasure set.

Protocols (each a list of fixed ``usr_conf`` dicts, so every policy plays exactly the same games):

- ``leaderboard``: 30 games, start 2, end 1, 9 random treasures drawn from ``seed``, max_step 2000;
- ``exhaustive``: every set of ``treasures`` ids (default 9) out of the 13 slots {3..15}: C(13, 9) = 715 games;
- ``fixed``: one game with treasure ids 3 .. 3 + treasures - 1;
- ``custom``: the treasure sets you give (lists of ids).

For every game: competition score, win, treasures collected and missed (ids), steps, flash and buff use, and the gap
to the oracle planner's score on the same game.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ..agents import PolicySpec, play_episode
from ..envs import RealmEnv
from ..game.rules import LEADERBOARD_CONF, EpisodeConfig
from ..models.saved import warn_feature_version
from ..processes import mp_context
from .reports import EvalReport, GameResult
from .training_map import warn_training_map

__all__ = ["PROTOCOLS", "SLOTS", "protocol_configs", "game_seed", "evaluate"]

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


def game_seed(seed: int, index: int) -> int:
    """The env seed of game ``index`` of a protocol played from ``seed``: results never depend on which worker (or
    batch) plays which game, and every player of the package plays the same games."""
    return seed * 1_000_003 + index


# ---------------------------------------------------------------------------------------------- playing
_WORKER: dict = {}


def _setup_worker(*init) -> None:
    """A worker process: one torch thread (batch-1 inference; N workers x M threads on N cores only wait on each
    other, several times slower), then :func:`_setup`."""
    import torch  # lazy: only the worker processes set it; this module serves the CLI without torch

    torch.set_num_threads(1)
    _setup(*init)


def _setup(map_path: str | None, env_kwargs: dict, spec, oracle_gap: bool, seed: int) -> None:
    env = RealmEnv(map_path=map_path, **env_kwargs)
    policy = spec.build(env) if isinstance(spec, PolicySpec) else spec
    _WORKER.update(env=env, policy=policy, seed=seed, oracle=None)
    if oracle_gap and policy.name != "oracle":
        _WORKER["oracle"] = PolicySpec("oracle").build(env)


def _run_one(job: tuple[int, dict]) -> GameResult:
    index, conf = job
    env, policy = _WORKER["env"], _WORKER["policy"]
    seed = game_seed(_WORKER["seed"], index)
    info = play_episode(env, policy, seed, conf)
    oracle = _WORKER["oracle"] if _WORKER["oracle"] is not None else (policy if policy.name == "oracle" else None)
    extra = {}
    if oracle is not None:
        o = info if oracle is policy else play_episode(env, oracle, seed, conf)
        extra = {"oracle_score": float(o["score"]), "oracle_steps": int(o["steps"])}
    return GameResult.from_summary(info, index=index, treasure_ids=conf["treasure_id"], seed=seed,
                                   planned_steps=getattr(policy, "planned_steps", None), **extra)


def evaluate(policy, protocol: str = "leaderboard", *, map_path: str | None = None, seed: int = 0,
             treasures: int | None = None, games: int = 30, custom: list[list[int]] | None = None,
             max_step: int = 2000, workers: int = 1, oracle_gap: bool = True, env_kwargs: dict | None = None,
             progress: bool = False, use_flash: bool = True, use_buff: bool = True,
             trust_pickle: bool | None = None) -> EvalReport:
    """Play every game of a protocol with ``policy`` (``"random"``, ``"oracle"`` or a checkpoint path; with
    ``workers=1`` also any object with ``name``, ``reset(env)`` and ``act(env, obs)``).

    :param workers: processes; 1 plays in this process. Results are the same for any number of workers.
    :param oracle_gap: also play the oracle on each game and report the gap to its score.
    :param env_kwargs: extra :class:`RealmEnv` arguments (rules, mask_wall_moves, ...), as in training.
    :param trust_pickle: let a checkpoint's pickles run (only for a file you made yourself); default: its entries
        are rebuilt from plain data (:mod:`sb3_realm.agents.checkpoint`).
    """
    if workers < 1:
        raise ValueError(f"--workers {workers} must be >= 1")
    configs = protocol_configs(protocol, seed=seed, treasures=treasures, games=games, custom=custom,
                               max_step=max_step)
    if isinstance(policy, str):
        spec = PolicySpec(policy, seed=seed, use_flash=use_flash, use_buff=use_buff, trust_pickle=trust_pickle)
        if Path(policy).is_file():
            warn_feature_version(policy)
    elif workers == 1 and hasattr(policy, "act") and hasattr(policy, "reset"):
        spec = policy
    else:
        raise ValueError(f"policy must be 'random', 'oracle' or a checkpoint path (a policy object only with "
                         f"workers=1), got {policy!r}")
    env_kwargs = dict(env_kwargs or {})
    init = (str(map_path) if map_path is not None else None, env_kwargs, spec, oracle_gap, seed)
    _setup(*init)  # validates the policy and the map here, with a clear error, before any worker starts
    warn_training_map(policy, _WORKER["env"].game_map)
    jobs = list(enumerate(configs))
    bar = None
    if progress:
        from tqdm.auto import tqdm  # lazy: only with progress=True; it costs `sb3-realm --help` 30 ms

        bar = tqdm(total=len(jobs), desc=f"eval {protocol}", unit="game")
    results: list[GameResult] = []
    if workers == 1:
        for job in jobs:
            results.append(_run_one(job))
            if bar:
                bar.update()
    else:
        chunk = max(1, math.ceil(len(jobs) / (workers * 8)))
        with ProcessPoolExecutor(workers, mp_context=mp_context(), initializer=_setup_worker,
                                 initargs=init) as pool:
            for r in pool.map(_run_one, jobs, chunksize=chunk):
                results.append(r)
                if bar:
                    bar.update()
    if bar:
        bar.close()
    name = _WORKER["policy"].name
    return EvalReport(policy=name, protocol=protocol, map=_WORKER["env"].game_map.name, seed=seed,
                      games=sorted(results, key=lambda r: r.index))
