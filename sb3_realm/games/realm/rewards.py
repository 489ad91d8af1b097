"""Reward terms and their weights. The reward is ``sum(weight * term)``; the competition score never uses them."""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import TermWeights
from .core import Game, StepEvents

__all__ = ["REWARD_RANGES", "TERMS", "RewardWeights", "potential", "progress_spacing", "reward_terms"]

TERMS = ("treasure", "end", "step", "bump", "flash", "flash_fail", "buff", "progress", "revisit",
         "missed_treasure", "timeout")
_FAR = 256  # cap, in cells, of the distance used by the progress potential (also for unreachable targets)


@dataclass(frozen=True)
class RewardWeights(TermWeights):
    """Weight of each reward term (the term's unit in brackets).

    :param treasure: per treasure collected [count].
    :param end: reaching the end [0/1].
    :param step: every step [1]; negative = a time cost.
    :param bump: a move that bumped into a wall (displacement <= 500) [0/1].
    :param flash: a flash that landed [0/1].
    :param flash_fail: a flash into an obstacle, which fails and (by default) spends the talent [0/1].
    :param buff: picking up the speed buff [0/1].
    :param progress: potential-based shaping ``phi(s') - phi(s)`` with ``phi = -(d + D * n)``: ``d`` BFS cells to
        the nearest available treasure (to the end when none is left; 0 once the end is reached), ``n`` treasures
        still available, ``D`` the map's largest BFS distance (capped at 256). ``D * n`` makes a pickup a gain
        (``D - d_next >= 0``) instead of a loss: without it the jump to the next, farther treasure taught agents to
        hover next to a treasure without taking it [cells].
    :param revisit: stepping on a cell visited before in this episode [0/1].
    :param missed_treasure: at the end of an episode, per treasure left behind [count].
    :param timeout: the episode was truncated at max_step without reaching the end [0/1].
    """

    treasure: float = 1.0
    end: float = 1.0
    step: float = -0.001
    bump: float = -0.005
    flash: float = 0.0
    flash_fail: float = -0.1
    buff: float = 0.05
    progress: float = 0.05
    revisit: float = -0.001
    missed_treasure: float = -0.5
    timeout: float = -1.0


def progress_spacing(game_map) -> int:
    """``D`` of the progress potential: the map's largest finite BFS distance between a cell and a position, capped
    at 256 cells."""
    d = game_map.distance_fields
    finite = d[d < _FAR]
    return int(min(finite.max(), _FAR)) if finite.size else _FAR


def potential(game: Game, spacing: int = _FAR) -> float:
    """``-(d + spacing * n)``: ``d`` BFS cells from the hero to the nearest available treasure (to the end if none
    is left; 0 once the end is reached; capped at ``spacing``), ``n`` treasures still available."""
    d = 0 if game.terminated else min(game.next_target_distance(), spacing)
    return -float(d + spacing * game.n_available)


def reward_terms(game: Game, ev: StepEvents, phi_before: float, phi_after: float) -> list[float]:
    """Values of the terms for the step just played, in the order of :data:`TERMS`."""
    r = game.rules.view_radius
    over = game.terminated or game.truncated
    return [
        float(len(ev.treasures)),
        float(ev.win),
        1.0,
        float(ev.bump),
        float(ev.flash and not ev.flash_failed),
        float(ev.flash_failed),
        float(ev.buff),
        phi_after - phi_before,
        float(game.window[1, r, r] > 0),  # the memory window is cropped before this step's visit is added
        float(game.n_available) if over else 0.0,
        float(game.truncated),
    ]


#: the range a reward tuning study samples each weight from, ``(low, high, log)``: every default weight lies inside
#: its range, so the defaults can be the first trial
REWARD_RANGES: dict[str, tuple[float, float, bool]] = {
    "treasure": (0.1, 10.0, True),
    "end": (0.1, 10.0, True),
    "step": (-0.01, 0.0, False),
    "bump": (-0.05, 0.0, False),
    "flash": (-0.2, 0.2, False),
    "flash_fail": (-1.0, 0.0, False),
    "buff": (0.0, 0.5, False),
    "progress": (0.005, 0.5, True),
    "revisit": (-0.01, 0.0, False),
    "missed_treasure": (-2.0, 0.0, False),
    "timeout": (-5.0, 0.0, False),
}
