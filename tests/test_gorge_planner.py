"""The observation-only planner of Gorge Chase (:mod:`sb3_realm.games.gorge.planner`, :mod:`.memory`): it reads only the
platform observation, its searches on the believed terrain equal the true ones where the terrain is known, its memory
tracks the monsters out of view, and its modules can be copied into a submission (numpy and the standard library
only)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from sb3_realm.games import gorge
from sb3_realm.games.gorge import memory as memory_module
from sb3_realm.games.gorge import planner as planner_module
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.experts import PlannerPolicy, ScriptedPolicy, local_tables
from sb3_realm.games.gorge.memory import FAR, RULES, UNREACHABLE, Memory, distance_field, window_distances
from sb3_realm.games.gorge.observation import GorgeCompetitionEnv
from sb3_realm.games.gorge.planner import HERO_LEVELS, NEAR, RADIUS, ObservationPlanner
from sb3_realm.games.gorge.rules import DIRECTIONS, Rules

SHORT = {"max_step": 300}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or "").split(".")[0])
    return names


@pytest.mark.parametrize("module", [memory_module, planner_module])
def test_modules_copy_into_a_submission(module):
    # numpy, the standard library and each other only: the same files run inside the platform's Agent
    allowed = {"__future__", "collections", "dataclasses", "math", "typing", "numpy", ".memory"}
    assert _imports(Path(module.__file__)) <= allowed


def test_engine_values_match_the_rules():
    rules = Rules()
    assert RULES == {key: getattr(rules, key) for key in RULES}
    assert memory_module.DIRECTIONS == DIRECTIONS


def test_searches_equal_the_true_terrains():
    env = GorgeEnv(map_name="own_2")
    m = env.game_map
    tables = local_tables(m)
    cells = [tuple(int(v) for v in m.road_xz[i]) for i in range(0, m.road_count, max(1, m.road_count // 7))]
    ids = [m.road_id(*c) for c in cells]
    assert np.array_equal(window_distances(m.walkable, cells, RADIUS, True, HERO_LEVELS), tables.hero[ids])
    assert np.array_equal(window_distances(m.walkable, cells, NEAR, False), tables.monster[ids])
    for cell in cells[:3]:
        assert np.array_equal(distance_field(m.walkable, cell), m.distance_field(*cell))
    # a search cut short past some cells is exact up to them and a lower bound beyond
    a, b = cells[0], cells[-1]
    full, cut = m.distance_field(*a), distance_field(m.walkable, a, near=[b], extra=5)
    inside = full <= full[b[1], b[0]] + 5
    assert np.array_equal(cut[inside], full[inside])
    assert (cut <= full).all() and (cut[~m.walkable] == UNREACHABLE).all()
    assert (window_distances(m.walkable, [(0, 0)] if not m.walkable[0, 0] else [], RADIUS, True) == FAR).all()


def _observation(env: GorgeEnv) -> dict:
    """The platform observation of the env's state as plain JSON data: nothing of the game reaches the planner."""
    return json.loads(json.dumps(env.platform_obs()["observation"]))


def test_plays_from_the_observation_alone():
    # the policy of the package and a planner fed only JSON copies of the observation act alike, step for step
    env = GorgeEnv(map_name="own_3", **SHORT)
    policy, alone = PlannerPolicy(env), ObservationPlanner()
    obs, _ = env.reset(seed=4)
    policy.reset(env)
    done, steps = False, 0
    while not done:
        action = policy.act(env, obs)
        assert alone.act(_observation(env)) == action
        assert env.action_masks()[action]
        obs, _, terminated, truncated, _info = env.step(action)
        done, steps = terminated or truncated, steps + 1
    assert steps >= 150  # it flees: random play is caught within a few dozen steps


def test_plays_through_the_platform_protocol(tmp_path):
    # the platform's env interface: env_obs in, action out, a new game on a lower step number
    maps = {k: gorge.env.shipped_map(f"own_{k}") for k in (1, 2)}
    env = GorgeCompetitionEnv(maps, seed=0)
    planner = ObservationPlanner()
    scores = []
    for _ in range(2):
        env_obs = env.reset({"env_conf": {"map": [1, 2], "max_step": 120}})
        while not (env_obs["terminated"] or env_obs["truncated"]):
            _, env_obs = env.step(planner.act(json.loads(json.dumps(env_obs["observation"]))))
        scores.append(env_obs["observation"]["env_info"]["total_score"])
        assert planner.memory.step == env_obs["observation"]["step_no"] - 1
    assert min(scores) > 0


def test_memory_keeps_the_seen_terrain_and_items():
    env = GorgeEnv(map_name="own_4", **SHORT)
    env.reset(seed=1)
    mem = Memory()
    policy = ScriptedPolicy(env)
    policy.reset(env)
    remembered = 0
    for _ in range(200):
        mem.update(_observation(env))
        # a remembered treasure was seen, and it is still there (collected ones are forgotten)
        remaining = {t.entity_id: t.cell for t in env.game.treasures}
        assert all(remaining.get(oid) == cell for oid, cell in mem.treasures.items())
        assert all(mem.seen[cell[1], cell[0]] for cell in mem.treasures.values())
        remembered = max(remembered, len(mem.treasures))
        env.step(policy.act(env))
        if env.game.done:
            break
    assert remembered > 0
    truth = env.game_map.walkable
    assert mem.seen.any() and not mem.seen.all()
    assert np.array_equal(mem.walkable[mem.seen], truth[mem.seen])  # seen: as it is
    assert mem.walkable[~mem.seen].all()  # never seen: taken as road


def test_tracks_monsters_out_of_view():
    # with the terrain known, the monsters' rule replayed from their last view finds them out of view almost always
    env = GorgeEnv(map_name="own_5", max_step=600, monster_interval=120, monster_speedup=400)
    exact = total = 0
    for seed in range(3):
        env.reset(seed=seed)
        policy = ScriptedPolicy(env)
        policy.reset(env)
        mem = Memory()
        while not env.game.done:
            mem.update(_observation(env))
            mem.walkable = env.game_map.walkable.copy()
            for tracked, true in zip(mem.monsters, env.game.monsters, strict=True):
                if tracked.age > 0:
                    total += 1
                    exact += tracked.cell == true.cell
            env.step(policy.act(env))
    assert total > 200
    assert exact / total >= 0.9


def test_planner_is_an_expert_of_the_game():
    from sb3_realm.agents.load import load_policy

    env = GorgeEnv(**SHORT)
    policy = load_policy("planner", env, game="gorge")
    assert isinstance(policy, PlannerPolicy)
    obs, _ = env.reset(seed=0)
    policy.reset(env)
    assert 0 <= policy.act(env, obs) < 16


def test_weighs_every_flash_that_lands_somewhere():
    # a flash that lands in place is masked; every other flash the mask allows is one of the planner's outcomes
    # (unless a move reaches the same cell), also on the steps where only some flash directions are allowed
    env = GorgeEnv(map_name="own_1", max_step=300, talent_cooldown=50)
    alone = ObservationPlanner()
    env.reset(seed=2)
    done, partial = False, 0
    while not done:
        action = alone.act(_observation(env))
        legal, planner, hero = alone.legal, alone.planner, alone.memory.hero
        moves = {planner.landings[a] for a in range(8) if legal[a]}
        flashes = {o.cell for o in planner.outcomes if o.flash}
        for d in range(8):
            cell = alone.terrain.flash_landing(hero, d)
            assert legal[8 + d] == (cell is not None and bool(env.action_masks()[8:].any()))
            if legal[8 + d]:
                assert planner.landings[8 + d] == cell
                assert cell in moves or cell in flashes
        partial += bool(legal[8:].any() and not legal[8:].all())
        _, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert partial >= 5
