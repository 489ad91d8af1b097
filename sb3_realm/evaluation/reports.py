"""Evaluation reports: per-game results, the summary, a readable table, the JSON file and the score histogram."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import atomic_write

__all__ = ["GameResult", "EvalReport", "format_report", "write_json_atomic", "plot_scores"]


@dataclass(frozen=True)
class GameResult:
    """One game's outcome: what evaluation, the batched player (:func:`~sb3_realm.evaluation.play_games`) and
    imitation's collection all return. ``won`` is the competition's clean win (the end reached with every treasure
    of the set); ``reached_end`` is the env's ``info["win"]`` (the end reached, maybe with a treasure left).

    :param index: the game's place in its protocol or list of games.
    :param treasure_ids: the game's treasure set.
    :param missed: the ids of the set left behind.
    :param seed: the env seed it was played from (None where the protocol's index names it).
    :param cut: stopped at a step limit before the game was over (imitation's ``dagger_max_steps``).
    :param expert_steps: collection: the steps the expert played.
    :param taken_over: collection: the step at which the expert took the game over from the learner (0: never).
    :param oracle_score, oracle_steps: the oracle's own game of the same set, where it was played beside.
    :param planned_steps: the oracle's own plan, when the policy is the oracle.
    """

    index: int
    treasure_ids: tuple[int, ...]
    score: float
    reached_end: bool
    treasures: int
    missed: tuple[int, ...]
    steps: int
    flash_used: int = 0
    buff_used: int = 0
    seed: int | None = None
    cut: bool = False
    expert_steps: int | None = None
    taken_over: int = 0
    oracle_score: float | None = None
    oracle_steps: int | None = None
    planned_steps: int | None = None

    @classmethod
    def from_summary(cls, info: dict, *, index: int, treasure_ids, **extra) -> GameResult:
        """The result of a game whose ``env.episode_summary()`` (or final ``info``) is ``info``."""
        return cls(index=index, treasure_ids=tuple(int(i) for i in treasure_ids), score=float(info["score"]),
                   reached_end=bool(info["win"]), treasures=int(info["treasures"]),
                   missed=tuple(int(i) for i in info["treasures_missed"]), steps=int(info["steps"]),
                   flash_used=int(info.get("flash_used", 0)), buff_used=int(info.get("buff_used", 0)), **extra)

    @property
    def won(self) -> bool:
        """The end reached with every treasure of the set: the competition's clean win."""
        return self.reached_end and not self.missed

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
        """The protocol's figures. ``wins`` and ``win_rate`` count the games won: the end reached with every treasure
        of the set, the competition's clean win (a game that ends with a treasure left forfeits 100 points for it);
        ``reached_end`` the games that reached the end (the env's ``info["win"]``)."""
        g = self.games
        scores = np.array([r.score for r in g], dtype=np.float64)
        out = {
            "policy": self.policy, "protocol": self.protocol, "map": self.map, "seed": self.seed, "games": len(g),
            "mean_score": float(scores.mean()), "min_score": float(scores.min()), "max_score": float(scores.max()),
            "wins": int(sum(r.won for r in g)), "win_rate": float(np.mean([r.won for r in g])),
            "reached_end": int(sum(r.reached_end for r in g)),
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
        return {"summary": self.summary(), "games": [{**asdict(r), "won": r.won, "gap": r.gap} for r in self.games]}


def format_report(report: EvalReport, worst: int = 10) -> str:
    """A readable summary and the worst games (lowest score first)."""
    s = report.summary()
    lines = [
        f"policy {s['policy']} | protocol {s['protocol']} ({s['games']} games) | map {s['map']} | seed {s['seed']}",
        f"score mean {s['mean_score']:.2f}  min {s['min_score']:.2f}  max {s['max_score']:.2f}  | wins "
        f"{s['wins']}/{s['games']} with every treasure, {s['reached_end']} reached the end  | treasures "
        f"{s['mean_treasures']:.2f}  | steps {s['mean_steps']:.1f}",
        f"games with a missed treasure: {s['games_with_missed_treasure']}  missed by id: {s['missed_by_id']}  | "
        f"flash in {s['flash_games']} games, buff in {s['buff_games']}",
    ]
    if "oracle_mean_score" in s:
        lines.append(f"oracle mean {s['oracle_mean_score']:.2f}  gap mean {s['mean_gap_to_oracle']:.2f}  "
                     f"max {s['max_gap_to_oracle']:.2f}")
    lines.append("")
    lines.append(f"{'game':>5} {'score':>8} {'won':>4} {'tr':>3} {'steps':>6} {'flash':>5} {'buff':>4} "
                 f"{'oracle':>8} {'gap':>7}  treasure ids / missed")
    for r in sorted(report.games, key=lambda r: (r.score, r.index))[:worst]:
        oracle = f"{r.oracle_score:8.1f}" if r.oracle_score is not None else f"{'-':>8}"
        gap = f"{r.gap:7.1f}" if r.gap is not None else f"{'-':>7}"
        lines.append(f"{r.index:>5} {r.score:8.1f} {'yes' if r.won else 'no':>4} {r.treasures:>3} {r.steps:>6} "
                     f"{r.flash_used:>5} {r.buff_used:>4} {oracle} {gap}  {list(r.treasure_ids)} / {list(r.missed)}")
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
    top = max(scores + [r.oracle_score or 0.0 for r in report.games]) + 1
    bins = np.linspace(min(scores + [0.0]), top, 40).tolist()
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
