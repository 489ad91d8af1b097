"""robot_vacuum's experts: the coverage yardstick (``coverage``: the planner on the true map, dirt and official
robots) and the observation-only planner (``planner``: the same planner on what the platform's observations tell,
as a submission's ``exploit()`` plays it).

Both take the shared layers' expert API: ``__init__(env, **options)``, ``reset(env)``, ``act(env, obs) -> int``;
``env.unwrapped.game`` is the :class:`~.core.VacuumGame` and ``env.unwrapped.platform_obs()`` its current
``env_obs`` dict.
"""

from __future__ import annotations

from .memory import Memory
from .planner import DANGER, OBSERVED, YARDSTICK, Belief, CoveragePlanner
from .rules import NPC_RADIUS

__all__ = ["CoveragePolicy", "ObservedPolicy", "game_belief"]

AREA = NPC_RADIUS + DANGER  # an official robot threatens the cells this far from its spawn point


def game_belief(game) -> Belief:
    """The whole truth of a :class:`~.core.VacuumGame` as a :class:`~.planner.Belief` (the game's arrays, shared)."""
    return Belief(walkable=game.walkable, dirty=game.dirty, unknown=None, x=game.x, z=game.z, battery=game.battery,
                  battery_max=game.config.battery_max, chargers=game.chargers,
                  npcs=[(int(x), int(z)) for x, z in game.npcs], step=game.step_no, max_step=game.config.max_step,
                  terrain_version=0, npc_spawns=tuple(game.npc_spawns),
                  npc_areas=tuple((x - AREA, x + AREA, z - AREA, z + AREA) for x, z in game.npc_spawns))


class CoveragePolicy:
    """The yardstick: the coverage planner knowing the whole map, the true dirt and every official robot's cell.

    :param env: the env (its ``unwrapped.game`` is read each step).
    :param margin: battery kept in hand on arrival at a charger.
    """

    name = "coverage"

    def __init__(self, env=None, margin: int = YARDSTICK["margin"], **options) -> None:
        if options:
            raise ValueError(f"CoveragePolicy got unknown options {sorted(options)}; it takes margin")
        self.planner = CoveragePlanner(margin=margin)

    def reset(self, env=None) -> None:
        """Forget the last episode (call at the start of each episode)."""
        self.planner.reset()

    def act(self, env, obs=None) -> int:
        """The action for the env's current state."""
        return self.planner.act(game_belief(env.unwrapped.game))


class ObservedPolicy:
    """The observation-only planner: a :class:`~.memory.Memory` of the platform observations and the coverage
    planner on its belief; nothing of the game state is read.

    :param env: the env (only ``unwrapped.platform_obs()`` is read).
    :param margin: battery kept in hand on arrival at a charger.
    :param margin_share: extra battery per step to the charger.
    :param unknown_factor: a way to a charger through cells never seen counts this many times its steps.
    """

    name = "planner"

    def __init__(self, env=None, margin: int = OBSERVED["margin"], margin_share: float = OBSERVED["margin_share"],
                 unknown_factor: float = OBSERVED["unknown_factor"], **options) -> None:
        if options:
            raise ValueError(f"ObservedPolicy got unknown options {sorted(options)}; it takes margin, margin_share "
                             "and unknown_factor")
        self.memory = Memory()
        self.planner = CoveragePlanner(margin=margin, margin_share=margin_share, unknown_factor=unknown_factor)

    def reset(self, env=None) -> None:
        """Forget the last episode (call at the start of each episode)."""
        self.memory.reset()
        self.planner.reset()

    def act(self, env, obs=None) -> int:
        """The action for the env's current state, from its platform observation alone."""
        return self.act_obs(env.unwrapped.platform_obs())

    def act_obs(self, env_obs: dict) -> int:
        """The action for a platform ``env_obs`` dict (what a submission's ``exploit()`` receives)."""
        self.memory.update(env_obs)
        return self.planner.act(self.memory.belief())
