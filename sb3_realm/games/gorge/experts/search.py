"""The rollout searches of Gorge Chase as policies of the package: ``search`` (:class:`SearchPolicy`, the search of
:mod:`..search` on what the platform observation shows, as it runs inside the submission's ``exploit()``) and
``ceiling`` (:class:`CeilingPolicy`, the same one-step rollout search on the true game: copies of the game, its
generator included, followed by the scripted yardstick), the measure of how far above the planner a policy can go."""

from __future__ import annotations

import copy

import numpy as np

from ..core import FAILED, Game
from ..observation import env_obs
from ..search import STEP_SCORE, ObservationSearch
from .scripted import ScriptedPolicy

__all__ = ["CeilingPolicy", "SearchPolicy"]


class SearchPolicy:
    """The observation-only rollout search (:class:`~..search.ObservationSearch`) for ``eval``, imitation and the
    benchmarks: each step it reads the env's platform observation, nothing of the game state.

    :param env: a :class:`~sb3_realm.games.gorge.env.GorgeEnv` (only its platform observation is read).
    :param use_flash: allow flash actions.
    :param use_buff: go for seen speed buffs.
    :param kwargs: the search's other settings (:class:`~..search.ObservationSearch`).
    """

    name = "search"

    def __init__(self, env=None, use_flash: bool = True, use_buff: bool = True, **kwargs) -> None:
        self.search = ObservationSearch(use_flash=use_flash, use_buff=use_buff, **kwargs)

    def reset(self, env=None) -> None:
        """Forget the last episode (call at the start of each episode)."""
        self.search.reset()

    def act(self, env, obs=None) -> int:
        """The action for the env's current state, from its platform observation alone."""
        return self.search.act(env.platform_obs()["observation"])


class _View:
    """What the scripted policy reads of an env: the game and its platform observation."""

    def __init__(self, game: Game, map_id: int) -> None:
        self.game = game
        self.map_id = map_id

    def platform_obs(self) -> dict:
        return env_obs(self.game, "0", self.map_id)


class CeilingPolicy:
    """The one-step rollout search on the true game: wherever the scripted yardstick, played on a copy of the game,
    is caught within ``horizon`` steps, every distinct outcome of the legal actions is played on a copy and followed
    by the yardstick for ``horizon`` steps; the action with the most score, plus ``survival_value`` where the copy is
    still running at the horizon, is played (the yardstick's action when none is better). Elsewhere the yardstick's
    action is played. The yardstick's rollout is kept while the game follows it, so a quiet step costs one rollout
    step.

    :param env: a :class:`~sb3_realm.games.gorge.env.GorgeEnv`.
    :param use_flash: allow flash actions (the yardstick's and the search's).
    :param use_buff: let the yardstick go for seen speed buffs.
    :param horizon: steps each rollout looks ahead.
    :param foresight: the copies keep the game's generator (the monsters' tie draws to come); False gives each copy
        a fresh generator.
    :param survival_value: value of a copy still running at the horizon; default ``1.5 * horizon``.
    """

    name = "ceiling"

    def __init__(self, env=None, use_flash: bool = True, use_buff: bool = True, horizon: int = 80,
                 foresight: bool = True, survival_value: float | None = None) -> None:
        if horizon < 1:
            raise ValueError(f"horizon = {horizon} must be >= 1 (steps each rollout looks ahead)")
        self.horizon = int(horizon)
        self.foresight = bool(foresight)
        self.survival_value = STEP_SCORE * horizon if survival_value is None else float(survival_value)
        self.base = ScriptedPolicy(env, use_flash=use_flash, use_buff=use_buff)
        self._kept: tuple | None = None
        self.searched = self.changed = 0

    def reset(self, env=None) -> None:
        self.base.reset(env)
        self._kept = None
        self.searched = self.changed = 0

    # ------------------------------------------------------------------------------------------------ copies
    def _copy(self, game: Game, policy: ScriptedPolicy, seed: int) -> tuple[Game, ScriptedPolicy]:
        memo = {id(game.game_map): game.game_map, id(game.rules): game.rules, id(game.config): game.config}
        g = copy.deepcopy(game, memo)
        if not self.foresight:
            g.rng = np.random.default_rng(seed)
        terrain = policy.terrain
        p = copy.deepcopy(policy, {id(terrain): terrain} if terrain is not None else {})
        return g, p

    @staticmethod
    def _signature(game: Game) -> tuple:
        return (game.step_no, game.hero, tuple(m.cell for m in game.monsters), len(game.treasures),
                game.flash_cooldown)

    def act(self, env, obs=None) -> int:
        game = env.game
        base = self.base.act(env)
        if not game.monsters:
            self._kept = None
            return base
        view_id = env.map_id
        caught = self._base_caught(game, base, view_id)
        if caught is None:
            return base
        self.searched += 1
        actions = [o.action for o in self.base.outcomes]
        actions = [base] + [a for a in actions if a != base]
        best, best_value = base, -float("inf")
        for a in actions:
            g, p = self._copy(game, self.base, 7919 * game.step_no + a)
            value = self._rollout(g, p, a, view_id)
            if value > best_value:
                best, best_value = a, value
        if best != base:
            self._kept = None
            self.changed += 1
        return best

    def _base_caught(self, game: Game, base: int, map_id: int) -> int | None:
        kept = self._kept
        now = self._signature(game)
        if kept is not None and kept[0].get(game.step_no) == now:
            signatures, g, p, caught = kept
        else:
            g, p = self._copy(game, self.base, game.step_no)
            signatures, caught = {}, None
            g.step(base)
            signatures[g.step_no] = self._signature(g)
            if g.status == FAILED:
                caught = g.step_no
        view = _View(g, map_id)
        while caught is None and not g.done and g.step_no < game.step_no + self.horizon:
            g.step(p.act(view))
            signatures[g.step_no] = self._signature(g)
            if g.status == FAILED:
                caught = g.step_no
        self._kept = (signatures, g, p, caught)
        return caught if caught is not None and caught <= game.step_no + self.horizon else None

    def _rollout(self, game: Game, policy: ScriptedPolicy, first: int, map_id: int) -> float:
        start, end = game.total_score, game.step_no + self.horizon
        game.step(first)
        view = _View(game, map_id)
        while not game.done and game.step_no < end:
            game.step(policy.act(view))
        value = game.total_score - start
        if game.status != FAILED:
            value += self.survival_value
        return value
