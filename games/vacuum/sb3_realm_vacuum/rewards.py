"""robot_vacuum's reward terms and their default weights.

Terms, each per step: ``clean`` (cells the robot cleaned: 0 or 1), ``step`` (1), ``charge`` (1 on a step that
enters a charger with less than half the battery), ``complete`` (1 when the episode reaches max_step), ``coverage``
(at that end, the share of the map's dirt the robot cleaned), ``fail`` (1 when the battery runs out or an official
robot touches the robot) and ``danger`` (1 on a step that ends within Chebyshev 2 of an official robot).
The defaults are the official baseline's reward: 0.1 a cell, -0.001 a step, 5 + 5 x coverage at the end, -2 on a
failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from sb3_realm.games.spec import TermWeights

__all__ = ["REWARD_RANGES", "TERMS", "RewardWeights", "reward_terms"]


@dataclass(frozen=True)
class RewardWeights(TermWeights):
    """The weight of each reward term (the reward is the weighted sum)."""

    clean: float = 0.1
    step: float = -0.001
    charge: float = 0.0
    complete: float = 5.0
    coverage: float = 5.0
    fail: float = -2.0
    danger: float = 0.0


TERMS = RewardWeights.terms()
#: a reward study's ranges: term -> (low, high, log scale)
REWARD_RANGES = {"clean": (0.02, 1.0, True), "step": (-0.01, 0.0, False), "charge": (0.0, 0.5, False),
                 "complete": (0.0, 10.0, False), "coverage": (0.0, 10.0, False), "fail": (-10.0, 0.0, False),
                 "danger": (-0.5, 0.0, False)}


def reward_terms(game, cleaned: int, battery_before: int) -> list[float]:
    """The terms of the step just played, in the order of :data:`TERMS`."""
    entered = "charge" in game.events and battery_before < game.config.battery_max // 2
    completed = game.truncated and not game.terminated
    return [float(cleaned), 1.0, float(entered), float(completed),
            game.clean_score / max(1, game.total_dirt) if completed else 0.0, float(game.terminated),
            float(game.nearest_npc() <= 2)]
