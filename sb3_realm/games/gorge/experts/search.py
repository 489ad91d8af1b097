"""The rollout searches of Gorge Chase as policies of the package: ``search`` (:class:`SearchPolicy`, the search of
:mod:`..search` on what the platform observation shows, as it runs inside the submission's ``exploit()``) and
``ceiling`` (:class:`CeilingPolicy`, the same one-step rollout search on the true game: copies of the game, its
generator included, followed by the scripted yardstick), the measure of how far above the planner a policy can go."""

from __future__ import annotations

import copy

import numpy as np

from ..core import FAILED, Game
from ..memory import RULES
from ..observation import env_obs
from ..search import STEP_SCORE, ObservationSearch, World
from .scripted import ScriptedPolicy

__all__ = ["CeilingPolicy", "NumpyTies", "SearchPolicy", "SearchedPolicy", "world_of"]


class NumpyTies:
    """A world's tie draws taken from a numpy generator as the game takes them (``uniform_choice``): a world built
    by :func:`world_of` with the game's generator draws the game's ties."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def randrange(self, n: int) -> int:
        return int(self.rng.integers(n))


def world_of(game: Game, rng: np.random.Generator | None = None) -> World:
    """The search's :class:`~..search.World` of a game's true state: its terrain, every treasure and buff, the
    monsters' cells, speeds and last moves, monster 2's spawn cell and step, the timers; ties drawn from ``rng``
    (default: a copy of the game's generator, so the world plays the game's own draws)."""
    w = World()
    w.set_grid(game.game_map.walkable)
    cfg, rules = game.config, game.rules
    w.step, w.max_step, w.hero = game.step_no, cfg.max_step, game.hero
    w.flash_cd, w.talent_cooldown = game.flash_cooldown, cfg.talent_cooldown
    w.buff_remaining, w.buff_cooldown = game.buff_remaining, cfg.buff_cooldown
    w.treasures = {t.entity_id: t.cell for t in game.treasures}
    w.buffs = [[b.entity_id, b.cell, b.visible, b.respawn_counter] for b in game.buffs]
    w.monsters = [[m.cell, m.speed, m.prev, m.last_axis] for m in game.monsters]
    w.monster_speed = rules.monster_speed + rules.monster_speed_bonus
    w.monster_interval, w.monster_speedup = game.monster_interval, game.monster_speedup
    w.boosted, w.second_spawned = game.boosted, game.second_spawned
    w.rules = {**RULES, **{k: getattr(rules, k) for k in RULES}}
    w.spawn_step = game.monster_interval - rules.spawn_delay
    w.spawn_cell = next((c for s, c in game.history if s == w.spawn_step), None)
    if w.spawn_cell is None and w.spawn_step < game.step_no and game.history:
        w.spawn_cell = game.history[0][1]  # the oldest kept cell, as the game takes it
    w.collected = game.treasures_collected
    w.rng = NumpyTies(copy.deepcopy(game.rng) if rng is None else rng)  # type: ignore[assignment]
    return w


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


class SearchedPolicy:
    """A model's policy with the observation-only search around its action, as a package built with ``--search``
    plays: each step the policy proposes, and :meth:`~..search.ObservationSearch.decide` keeps the proposal unless,
    where it leads into a catch within the horizon, another action's rollouts are worth more. The search shares the
    planner of the env's features (the one that encoded the policy's observation).

    :param policy: the package's policy (``reset(env)``, ``act(env, obs)``) on a Gorge env with its model input.
    :param settings: the search's settings (:class:`~..search.ObservationSearch`), as the package records them.
    """

    def __init__(self, policy, settings: dict) -> None:
        self.policy = policy
        self.settings = dict(settings)
        self.algo = getattr(policy, "algo", None)
        self.search: ObservationSearch | None = None

    def reset(self, env) -> None:
        self.policy.reset(env)
        self.search = None

    def act(self, env, obs=None) -> int:
        action = int(self.policy.act(env, obs))
        planner = env.features.planner
        if self.search is None or self.search.agent is not planner:
            self.search = ObservationSearch(agent=planner, **self.settings)
        return self.search.decide(env.platform_obs()["observation"], proposal=action)
