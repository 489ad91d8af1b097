"""The oracle planner's expert as a policy of the common interface."""

from __future__ import annotations

import numpy as np

from ..envs import RealmEnv
from ..oracle import OraclePolicy
from ..oracle.refine import RefinedOraclePolicy

__all__ = ["OracleAdapter"]


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
