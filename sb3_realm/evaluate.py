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
import json
import math
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .atomic import atomic_write
from .envs import RealmEnv
from .game.rules import LEADERBOARD_CONF, EpisodeConfig
from .policies import PolicySpec, warn_feature_version
from .processes import mp_context

__all__ = ["PROTOCOLS", "GameResult", "EvalReport", "protocol_configs", "play_game", "evaluate", "format_report",
           "write_json_atomic", "plot_scores"]

PROTOCOLS = ("leaderboard", "exhaustive", "fixed", "custom")
SLOTS = tuple(range(3, 16))  # treasure slots of the leaderboard (start 2, end 1)


def protocol_configs(protocol: str, seed: int = 0, treasures: int | None = None, games: int = 30,
                     custom: list[list[int]] | None = None, max_step: int = 2000) -> list[dict]:
    """The ``usr_conf`` dicts of a protocol (all with fixed treasure ids, start 2, end 1)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {list(PROTOCOLS)}")
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


@dataclass
class GameResult:
    """One game of a protocol."""

    index: int
    treasure_ids: list[int]
    score: float
    win: bool
    treasures: int
    missed: list[int]
    steps: int
    flash_used: int
    buff_used: int
    oracle_score: float | None = None
    oracle_steps: int | None = None
    planned_steps: int | None = None  # the oracle's own plan, when the policy is the oracle

    @property
    def gap(self) -> float | None:
        return None if self.oracle_score is None else self.oracle_score - self.score


@dataclass
class EvalReport:
    policy: str
    protocol: str
    map: str
    seed: int
    games: list[GameResult] = field(default_factory=list)

    def summary(self) -> dict:
        g = self.games
        scores = np.array([r.score for r in g], dtype=np.float64)
        out = {
            "policy": self.policy, "protocol": self.protocol, "map": self.map, "seed": self.seed, "games": len(g),
            "mean_score": float(scores.mean()), "min_score": float(scores.min()), "max_score": float(scores.max()),
            "wins": int(sum(r.win for r in g)), "win_rate": float(np.mean([r.win for r in g])),
            "mean_treasures": float(np.mean([r.treasures for r in g])),
            "games_with_missed_treasure": int(sum(bool(r.missed) for r in g)),
            "missed_by_id": dict(sorted(Counter(i for r in g for i in r.missed).items())),
            "mean_steps": float(np.mean([r.steps for r in g])),
            "flash_games": int(sum(r.flash_used > 0 for r in g)), "buff_games": int(sum(r.buff_used > 0 for r in g)),
        }
        gaps = [r.gap for r in g if r.gap is not None]
        if gaps:
            out.update(oracle_mean_score=float(np.mean([r.oracle_score for r in g])), mean_gap_to_oracle=float(
                np.mean(gaps)), max_gap_to_oracle=float(np.max(gaps)))
        return out

    def to_dict(self) -> dict:
        return {"summary": self.summary(), "games": [{**asdict(r), "gap": r.gap} for r in self.games]}


# ---------------------------------------------------------------------------------------------- playing
_WORKER: dict = {}


def _setup_worker(*init) -> None:
    """A worker process: one torch thread (batch-1 inference; N workers x M threads on N cores only wait on each
    other, measured 7x slower), then :func:`_setup`."""
    import torch

    torch.set_num_threads(1)
    _setup(*init)


def _setup(map_path: str | None, env_kwargs: dict, spec, oracle_gap: bool, seed: int) -> None:
    env = RealmEnv(map_path=map_path, **env_kwargs)
    policy = spec.build(env) if isinstance(spec, PolicySpec) else spec
    _WORKER.update(env=env, policy=policy, seed=seed, oracle=None)
    if oracle_gap and policy.name != "oracle":
        _WORKER["oracle"] = PolicySpec("oracle").build(env)


def play_game(env: RealmEnv, policy, conf: dict, seed: int) -> dict:
    """One game of ``policy`` on ``env`` with the episode config ``conf``; returns the final ``info`` (score, ...)."""
    obs, _ = env.reset(seed=seed, options=conf)
    policy.reset(env)
    done, info = False, {}
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(env, obs))
        done = terminated or truncated
    return info


def _run_one(job: tuple[int, dict]) -> GameResult:
    index, conf = job
    env, policy = _WORKER["env"], _WORKER["policy"]
    seed = _WORKER["seed"] * 1_000_003 + index  # per-game seed: results do not depend on worker scheduling
    info = play_game(env, policy, conf, seed)
    result = GameResult(index=index, treasure_ids=list(conf["treasure_id"]), score=float(info["score"]),
                        win=bool(info["win"]), treasures=int(info["treasures"]), missed=list(info["treasures_missed"]),
                        steps=int(info["steps"]), flash_used=int(info["flash_used"]), buff_used=int(info["buff_used"]),
                        planned_steps=getattr(policy, "planned_steps", None))
    oracle = _WORKER["oracle"] if _WORKER["oracle"] is not None else (policy if policy.name == "oracle" else None)
    if oracle is not None:
        o = info if oracle is policy else play_game(env, oracle, conf, seed)
        result.oracle_score, result.oracle_steps = float(o["score"]), int(o["steps"])
    return result


def evaluate(policy, protocol: str = "leaderboard", *, map_path: str | None = None, seed: int = 0,
             treasures: int | None = None, games: int = 30, custom: list[list[int]] | None = None,
             max_step: int = 2000, workers: int = 1, oracle_gap: bool = True, env_kwargs: dict | None = None,
             progress: bool = False, use_flash: bool = True, use_buff: bool = True) -> EvalReport:
    """Play every game of a protocol with ``policy`` (``"random"``, ``"oracle"`` or a checkpoint path; with
    ``workers=1`` also any object with ``name``, ``reset(env)`` and ``act(env, obs)``).

    :param workers: processes; 1 plays in this process. Results are the same for any number of workers.
    :param oracle_gap: also play the oracle on each game and report the gap to its score.
    :param env_kwargs: extra :class:`RealmEnv` arguments (rules, mask_wall_moves, ...), as in training.
    """
    if workers < 1:
        raise ValueError(f"--workers {workers} must be >= 1")
    configs = protocol_configs(protocol, seed=seed, treasures=treasures, games=games, custom=custom,
                               max_step=max_step)
    if isinstance(policy, str):
        spec = PolicySpec(policy, seed=seed, use_flash=use_flash, use_buff=use_buff)
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
    jobs = list(enumerate(configs))
    bar = None
    if progress:
        from tqdm.auto import tqdm

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


# ---------------------------------------------------------------------------------------------- output
def format_report(report: EvalReport, worst: int = 10) -> str:
    """A readable summary and the worst games (lowest score first)."""
    s = report.summary()
    lines = [
        f"policy {s['policy']} | protocol {s['protocol']} ({s['games']} games) | map {s['map']} | seed {s['seed']}",
        f"score mean {s['mean_score']:.2f}  min {s['min_score']:.2f}  max {s['max_score']:.2f}  | wins "
        f"{s['wins']}/{s['games']}  | treasures {s['mean_treasures']:.2f}  | steps {s['mean_steps']:.1f}",
        f"games with a missed treasure: {s['games_with_missed_treasure']}  missed by id: {s['missed_by_id']}  | "
        f"flash in {s['flash_games']} games, buff in {s['buff_games']}",
    ]
    if "oracle_mean_score" in s:
        lines.append(f"oracle mean {s['oracle_mean_score']:.2f}  gap mean {s['mean_gap_to_oracle']:.2f}  "
                     f"max {s['max_gap_to_oracle']:.2f}")
    lines.append("")
    lines.append(f"{'game':>5} {'score':>8} {'win':>4} {'tr':>3} {'steps':>6} {'flash':>5} {'buff':>4} "
                 f"{'oracle':>8} {'gap':>7}  treasure ids / missed")
    for r in sorted(report.games, key=lambda r: (r.score, r.index))[:worst]:
        oracle = f"{r.oracle_score:8.1f}" if r.oracle_score is not None else f"{'-':>8}"
        gap = f"{r.gap:7.1f}" if r.gap is not None else f"{'-':>7}"
        lines.append(f"{r.index:>5} {r.score:8.1f} {'yes' if r.win else 'no':>4} {r.treasures:>3} {r.steps:>6} "
                     f"{r.flash_used:>5} {r.buff_used:>4} {oracle} {gap}  {r.treasure_ids} / {r.missed}")
    return "\n".join(lines)


def write_json_atomic(data: dict, path: str | os.PathLike) -> Path:
    """Write JSON through a temporary file and a rename, so a crash never leaves half a file."""
    return atomic_write(path, lambda f: f.write((json.dumps(data, indent=2) + "\n").encode("utf-8")))


def plot_scores(report: EvalReport, path: str | os.PathLike) -> Path:
    """PNG histogram of the score across the protocol's games (with the oracle's when available)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    scores = [r.score for r in report.games]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    bins = np.linspace(min(scores + [0.0]), max(scores + [r.oracle_score or 0.0 for r in report.games]) + 1, 40)
    ax.hist(scores, bins=bins, alpha=0.7, label=f"{report.policy} (mean {np.mean(scores):.1f})")
    oracle = [r.oracle_score for r in report.games if r.oracle_score is not None]
    if oracle and report.policy != "oracle":
        ax.hist(oracle, bins=bins, alpha=0.5, label=f"oracle (mean {np.mean(oracle):.1f})")
    ax.set_xlabel("competition score")
    ax.set_ylabel("games")
    ax.set_title(f"{report.protocol}: {len(scores)} games on map {Path(report.map).name}")
    ax.legend()
    fig.tight_layout()
    try:
        atomic_write(path, lambda f: fig.savefig(f, format="png"))
    finally:
        plt.close(fig)
    return path
