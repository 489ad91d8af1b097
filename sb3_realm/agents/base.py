"""The one policy interface and the one episode loop.

A policy has a ``name``, ``reset(env)`` (called after ``env.reset``) and ``act(env, obs) -> int``; it may read the
env (action masks, the competition observation) beside the Gymnasium observation ``obs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..games import GameEnv

__all__ = ["Policy", "RandomPolicy", "play_episode"]


class Policy(Protocol):
    name: str

    def reset(self, env: GameEnv) -> None: ...

    def act(self, env: GameEnv, obs: dict[str, np.ndarray]) -> int: ...


@dataclass
class RandomPolicy:
    """Uniformly random legal actions.

    :param seed: seed of the stream.
    :param reseed: draw a fresh stream for each episode from the env's own seeded generator (what the evaluator
        does: results independent of the order of the games); False plays one stream from ``seed`` (the demo).
    """

    seed: int = 0
    name: str = "random"
    reseed: bool = True
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def reset(self, env: GameEnv) -> None:
        if self.reseed:
            self.rng = np.random.default_rng(int(env.np_random.integers(2**63)))

    def act(self, env: GameEnv, obs: dict[str, np.ndarray]) -> int:
        return int(self.rng.choice(np.flatnonzero(env.action_masks())))


def play_episode(env: GameEnv, policy: Policy, seed: int, options: dict | None = None,
                 observe: Callable[[GameEnv, dict, bool], None] | None = None) -> dict:
    """Play one episode of ``policy`` on ``env`` (reset with ``seed`` and the episode config ``options``); returns
    the final ``info`` (competition score, win, treasures, ...).

    :param observe: called as ``observe(env, info, done)`` after the reset (with the reset's ``info``) and after
        every step, e.g. to record a replay.
    """
    obs, info = env.reset(seed=seed, options=options)
    policy.reset(env)
    if observe is not None:
        observe(env, info, False)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(policy.act(env, obs))
        done = terminated or truncated
        if observe is not None:
            observe(env, info, done)
    return info
