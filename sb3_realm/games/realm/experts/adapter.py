"""The oracle planner's expert as a policy of the common interface."""

from __future__ import annotations

import numpy as np

from ..env import RealmEnv
from .expert import OraclePolicy
from .refine import RefinedOraclePolicy

__all__ = ["OracleAdapter", "configure_expert", "new_searches", "start_searches"]


class OracleAdapter:
    """The oracle planner's expert policy, acting from the competition-shaped observation."""

    name = "oracle"

    def __init__(self, env: RealmEnv, use_flash: bool = True, use_buff: bool = True, refined: bool = False) -> None:
        cls = RefinedOraclePolicy if refined else OraclePolicy
        self.oracle = cls(env.game_map, env.rules, use_flash=use_flash, use_buff=use_buff)
        if refined:
            self.name = "oracle-refined"

    def reset(self, env: RealmEnv) -> None:
        assert env.game.config is not None, "OracleAdapter.reset(env) needs an env that has been reset"
        self.oracle.reset(env.game.config)

    def act(self, env: RealmEnv, obs: dict[str, np.ndarray]) -> int:
        return int(self.oracle.act(*env.competition_obs()))

    def played_other(self) -> None:
        """The step just played was another policy's (see :meth:`OraclePolicy.played_other`)."""
        self.oracle.played_other()

    @property
    def planned_steps(self) -> int | None:
        return self.oracle.planned_steps


def configure_expert(policy, tie_break: str, settings=()) -> None:
    """Set up a built oracle expert for labelling: its tie rule, and for the refined one its beam search's settings
    (``(name, value)`` pairs of :data:`~.refine.REFINE_SETTINGS`). Other policies are left as they are."""
    oracle = getattr(policy, "oracle", None)
    if oracle is None:
        return
    oracle.tie_break = tie_break
    if isinstance(oracle, RefinedOraclePolicy):
        oracle.configure(**dict(settings))


def start_searches(policy, searches) -> None:
    """Give the refined expert the first searches it starts a job with (``{SearchKey: packed sequence}``, replayed
    with the same moves instead of searched again) and no new ones; nothing for another policy."""
    oracle = getattr(policy, "oracle", None)
    if isinstance(oracle, RefinedOraclePolicy):
        oracle.first_searches, oracle.new_searches = dict(searches), {}


def new_searches(policy) -> dict:
    """The first searches the refined expert made since it was configured (none for another policy)."""
    oracle = getattr(policy, "oracle", None)
    return dict(oracle.new_searches) if isinstance(oracle, RefinedOraclePolicy) else {}
