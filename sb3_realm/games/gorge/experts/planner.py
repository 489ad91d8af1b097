"""The observation-only planner as a policy of the package (``planner``, next to ``scripted``): each step it hands
:class:`~sb3_realm.games.gorge.planner.ObservationPlanner` the platform observation of the env's state, nothing of
the game state, so it plays as it would inside the submission's ``exploit()``."""

from __future__ import annotations

from ..features import FeatureState
from ..planner import ObservationPlanner

__all__ = ["PlannerPolicy"]


class PlannerPolicy:
    """The observation-only planner for ``eval``, imitation and the benchmarks.

    :param env: a :class:`~sb3_realm.games.gorge.env.GorgeEnv` (only its platform observation is read).
    :param use_flash: allow flash actions.
    :param use_buff: go for seen speed buffs.
    :param reuse_env: take the choice of the env's own features when they hold this step (the same planner on the
        same observations: the same action, computed once); False decides here every step (to time it).
    """

    name = "planner"

    def __init__(self, env, use_flash: bool = True, use_buff: bool = True, reuse_env: bool = True) -> None:
        self.agent = ObservationPlanner(use_flash=use_flash, use_buff=use_buff)
        # the env's features run the same planner: their choice is this policy's (unless told to decide itself)
        self.default = bool(use_flash) and bool(use_buff) and bool(reuse_env)

    def reset(self, env=None) -> None:
        """Forget the last episode (call at the start of each episode)."""
        self.agent.reset()

    def act(self, env, obs=None) -> int:
        """The action for the env's current state, from its platform observation alone: the choice of the env's
        own features (the same planner on the same observations) when they hold this step, else this policy's."""
        state = getattr(env, "features", None)
        if self.default and isinstance(state, FeatureState) and state.planner.memory.step == env.game.step_no and (
                state.planner.memory.hero == env.game.hero and state.choice >= 0):
            return int(state.choice)
        return self.agent.act(env.platform_obs()["observation"])
