"""Gorge Chase reward terms and their weights. The reward is ``sum(weight * term)``; the competition score never uses
them."""

from __future__ import annotations

from dataclasses import dataclass

from ..spec import TermWeights
from .core import Game, StepEvents
from .maps import UNREACHABLE

__all__ = [
    "DISTANCE_CAP",
    "REWARD_RANGES",
    "TERMS",
    "RewardWeights",
    "monster_distance",
    "potential",
    "reward_terms",
]

TERMS = ("survive", "treasure", "monster_distance", "buff", "flash", "flash_waste", "caught")
DISTANCE_CAP = 30  # cells: a monster farther than this (or none) counts as this far in the distance potential


@dataclass(frozen=True)
class RewardWeights(TermWeights):
    """Weight of each reward term (the term's unit in brackets).

    :param survive: every step the hero is not caught [0/1].
    :param treasure: per treasure collected in the step [count].
    :param monster_distance: potential-based shaping ``phi(s') - phi(s)`` with ``phi = min(d, 30) / 30``, ``d`` the
        4-connected path length from the hero to the nearest monster (Chebyshev distance when no path exists) [0..1].
    :param buff: picking up a speed buff [0/1].
    :param flash: a flash was executed (the cooldown started) [0/1].
    :param flash_waste: a flash that moved nothing: on cooldown or with no landing cell [0/1].
    :param caught: a monster caught the hero in this step (the episode ends) [0/1].
    """

    survive: float = 0.01
    treasure: float = 1.0
    monster_distance: float = 1.0
    buff: float = 0.1
    flash: float = 0.0
    flash_waste: float = -0.05
    caught: float = -5.0


def monster_distance(game: Game, cap: int = DISTANCE_CAP) -> int:
    """Cells from the hero to the nearest monster, capped at ``cap``: the 4-connected path length (the search stops
    at ``cap``), or the Chebyshev distance for a monster with no path; ``cap`` when there is no monster."""
    monsters = game.monsters
    if not monsters:
        return cap
    hx, hz = game.hero
    cells = [m.cell for m in monsters]
    chebyshev = min([max(abs(x - hx), abs(z - hz)) for x, z in cells])
    game_map = game.game_map
    if chebyshev >= cap or not game_map.is_road(hx, hz):
        return min(chebyshev, cap)
    # GorgeMap.distances_to(hero, cells, anchors=[hero], margin=cap), inlined: the hero's own distance is 0, so the
    # search stops at ``cap`` and a monster farther than that (or with no path) reads UNREACHABLE
    row = game_map.distance_view(game_map.road_id(hx, hz))
    unreachable = game_map.row_unreachable
    index, w, h = game_map._index_flat, game_map._w, game_map._h  # the map's flat lookup tables
    path = UNREACHABLE
    for x, z in cells:
        if 0 <= x < w and 0 <= z < h:
            d = row[index[z * w + x]]
            if d <= cap and d != unreachable and d < path:
                path = d
    return min(path if path < UNREACHABLE else chebyshev, cap)


def potential(game: Game, cap: int = DISTANCE_CAP) -> float:
    """``min(d, cap) / cap`` with ``d`` of :func:`monster_distance`: 1 far from every monster, 0 on one."""
    return monster_distance(game, cap) / cap


def reward_terms(events: StepEvents, phi_before: float, phi_after: float) -> list[float]:
    """Values of the terms for the step just played, in the order of :data:`TERMS`."""
    return [
        0.0 if events.caught else 1.0,
        float(len(events.treasures)),
        phi_after - phi_before,
        float(events.buff is not None),
        float(events.flash),
        float(events.flash_on_cooldown or events.flash_in_place),
        float(events.caught),
    ]


#: the range a reward tuning study samples each weight from, ``(low, high, log)``: every default weight lies inside
#: its range, so the defaults can be the first trial
REWARD_RANGES: dict[str, tuple[float, float, bool]] = {
    "survive": (0.0, 0.1, False),
    "treasure": (0.1, 10.0, True),
    "monster_distance": (0.0, 5.0, False),
    "buff": (0.0, 1.0, False),
    "flash": (-0.5, 0.5, False),
    "flash_waste": (-0.5, 0.0, False),
    "caught": (-20.0, 0.0, False),
}
