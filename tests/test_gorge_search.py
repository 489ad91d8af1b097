"""The rollout searches of Gorge Chase: the believed world steps by the game's rules, the observation-only search
plays the planner's action unless its rollouts find a better one, and the ceiling search leaves the game it searches
untouched."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from sb3_realm.games.gorge.core import RUNNING
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.experts import CeilingPolicy, ScriptedPolicy, SearchPolicy
from sb3_realm.games.gorge.experts.search import _View, world_of
from sb3_realm.games.gorge.features import FeatureState, encode
from sb3_realm.games.gorge.search import ObservationSearch, World

CONF = {"monster_interval": 60, "monster_speedup": 150, "max_step": 400}


def game_state(game) -> tuple:
    return (game.step_no, game.hero, [(m.cell, m.speed, m.prev, m.last_axis) for m in game.monsters],
            sorted(t.cell for t in game.treasures), [(b.visible, b.respawn_counter) for b in game.buffs],
            game.flash_cooldown, game.buff_remaining, game.status, game.treasures_collected)


def world_state(w: World) -> tuple:
    return (w.step, w.hero, [(m[0], m[1], m[2], m[3]) for m in w.monsters], sorted(w.treasures.values()),
            [(b[2], b[3]) for b in w.buffs], w.flash_cd, w.buff_remaining, w.status, w.collected)


@pytest.mark.parametrize("map_name", ["own_6", "own_8"])
def test_the_world_steps_as_the_game_does(map_name):
    """From the true state, with the game's generator for the ties, the world and the game go through the same
    states under the same actions: moves, flashes, pickups, the monsters' chase, monster 2's spawn and the speed-up."""
    env = GorgeEnv(map_names=[map_name], model_input=False)
    rng = np.random.default_rng(0)
    compared = spawned = boosted = 0
    for seed in range(2):
        env.reset(seed=seed, options=CONF)
        expert = ScriptedPolicy(env)
        expert.reset(env)
        while env.game.status == RUNNING:
            game = env.game
            if game.step_no % 40 == 5:
                copied = copy.deepcopy(game, {id(game.game_map): game.game_map})
                world = world_of(copied)
                player = copy.deepcopy(expert, {id(expert.terrain): expert.terrain})
                for _ in range(60):  # the expert's moves, a fifth of them replaced by random actions
                    action = player.act(_View(copied, env.map_id))
                    if rng.random() < 0.2:
                        action = int(rng.integers(16))
                    if action >= 8 and copied.flash_cooldown > 0:
                        action -= 8
                    copied.step(action)
                    world.step_action(action)
                    assert world_state(world) == game_state(copied)
                    compared += 1
                    spawned += copied.events.monster_spawned
                    boosted += copied.events.speed_up
                    if copied.status != RUNNING:
                        break
            env.step(expert.act(env))
    assert compared > 300 and spawned and boosted


def play(policy, env, seed: int, conf: dict = CONF) -> list[int]:
    env.reset(seed=seed, options=conf)
    policy.reset(env)
    actions = []
    while env.game.status == RUNNING:
        actions.append(policy.act(env))
        env.step(actions[-1])
    return actions


def test_the_search_plays_the_planner_unless_a_rollout_finds_better():
    """Where the search does not search, it plays the planner's choice; where it plays another action, that action's
    rollouts were worth more than the planner's; the same game gives the same actions."""
    env = GorgeEnv(map_names=["own_7"], model_input=False)
    search = ObservationSearch(horizon=40)
    for seed in range(3):
        env.reset(seed=seed, options=CONF)
        search.reset()
        while env.game.status == RUNNING:
            action = search.act(env.platform_obs()["observation"])
            planner = search.agent.choice
            if not search.values:
                assert action == planner
            elif action != planner:
                assert search.values[action] > search.values[planner]
            env.step(action)
        if search.searched:
            break
    assert search.searched > 0
    assert play(SearchPolicy(env, horizon=40), env, seed) == play(SearchPolicy(env, horizon=40), env, seed)


@pytest.mark.parametrize("budget", [{"budget_ms": 0.0}, {"max_rollout_steps": 0}])
def test_a_spent_budget_plays_the_planner(budget):
    """With no time or work left for other actions, the search keeps the planner's action."""
    env = GorgeEnv(map_names=["own_7"], model_input=False)
    search = ObservationSearch(horizon=40, **budget)
    env.reset(seed=0, options=CONF)
    while env.game.status == RUNNING:
        action = search.act(env.platform_obs()["observation"])
        assert action == search.agent.choice
        assert set(search.values) <= {action}
        env.step(action)
    assert search.searched > 0


def test_the_ceiling_leaves_the_game_it_searches_untouched():
    """The ceiling plays copies: the game, its generator included, is as it was after each decision, and the game
    with its decisions is the same game when played again."""
    env = GorgeEnv(map_names=["own_6"], model_input=False)
    policy = CeilingPolicy(env, horizon=30)
    short = {**CONF, "max_step": 250}
    env.reset(seed=2, options=short)
    policy.reset(env)
    while env.game.status == RUNNING:
        before = game_state(env.game), env.game.rng.bit_generator.state
        action = policy.act(env)
        assert (game_state(env.game), env.game.rng.bit_generator.state) == before
        env.step(action)
    assert policy.searched > 0 and policy.changed > 0
    assert play(CeilingPolicy(env, horizon=30), env, 2, short) == play(CeilingPolicy(env, horizon=30), env, 2, short)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="horizon = 0"):
        ObservationSearch(horizon=0)
    with pytest.raises(ValueError, match="horizon = 0"):
        CeilingPolicy(None, horizon=0)


def test_a_search_sharing_the_features_planner_decides_as_its_own():
    """Around the features' planner (the Agent's FeatureState) and its choice as the proposal, the search plays what
    a search with a planner of its own plays."""
    env = GorgeEnv(map_names=["own_7"], model_input=False)
    own = ObservationSearch(horizon=40)
    state = FeatureState()
    shared = ObservationSearch(horizon=40, agent=state.planner)
    env.reset(seed=0, options=CONF)
    searched = 0
    while env.game.status == RUNNING:
        observation = env.platform_obs()["observation"]
        action = own.act(observation)
        encode(observation, state)
        assert shared.decide(observation, proposal=state.choice) == action
        searched += bool(shared.values)
        env.step(action)
    assert searched > 0


def open_world() -> World:
    """A 12 x 12 world of road, the hero on (2, 5), no monster yet."""
    from sb3_realm.games.gorge.memory import RULES

    world = World()
    world.set_grid(np.ones((12, 12), dtype=bool))
    world.rules = dict(RULES)
    world.hero = (2, 5)
    return world


def test_a_pessimistic_world_closes_cells_to_the_hero_only():
    """In a pessimistic copy the hero stops before a closed cell and a flash lands short of it, while a monster walks
    through one; the world it was copied from still lets the hero in."""
    world = open_world()
    world.monsters = [[(9, 5), 1, None, None]]
    closed = np.zeros_like(world.walkable)
    closed[5, 3] = closed[5, 8] = True  # east of the hero, west of the monster
    blocked = world.pessimistic(closed)
    blocked.step_action(0)  # east
    assert blocked.hero == (2, 5) and blocked.monsters[0][0] == (8, 5)
    flash = world.pessimistic(np.ones_like(closed))
    flash.step_action(8)  # a flash east: no cell the hero can enter, so in place
    assert flash.hero == (2, 5) and flash.flash_cd == flash.talent_cooldown - 1
    free = world.copy()
    free.step_action(0)
    assert free.hero == (3, 5)


def test_two_monsters_believed_on_one_cell_both_move():
    """Tracking can put two monsters on one believed cell (the game never does): the world moves both."""
    world = open_world()
    world.monsters = [[(9, 5), 1, None, None], [(9, 5), 1, None, None]]
    world.step_action(4)  # west
    assert world.monsters[0][0] == (8, 5) and world.monsters[1][0] in ((10, 5), (9, 4), (9, 6))
