"""robot_vacuum's rules, simulator and platform observation: each rule of the spec's reset and step, on small maps
built in the test."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from sb3_realm_vacuum.core import FAIL_BATTERY, FAIL_COLLISION, VacuumGame, charger_footprints
from sb3_realm_vacuum.observation import VacuumCompetitionEnv, env_obs
from sb3_realm_vacuum.rules import DIRECTIONS, SIZE, Rules, VacuumConfig, can_move

EAST, NORTH_EAST, NORTH, WEST, SOUTH = 0, 1, 2, 4, 6
CHARGERS = ((10, 10), (110, 10), (10, 110), (110, 110))


def open_map(walls=()) -> SimpleNamespace:
    walkable = np.ones((SIZE, SIZE), dtype=bool)
    for x, z in walls:
        walkable[z, x] = False
    return SimpleNamespace(name="test", walkable=walkable, chargers=CHARGERS)


def game(walls=(), hero=(60, 60), npcs=((20, 100),), seed=0, **conf) -> VacuumGame:
    config = VacuumConfig(robot_count=len(npcs), **conf)
    return VacuumGame(open_map(walls), config, np.random.default_rng(seed), hero=hero, npc_spawns=npcs)


# ------------------------------------------------------------------------------------------------ configuration
@pytest.mark.parametrize(("conf", "named"), [
    ({"robot_count": 0}, "robot_count"), ({"charger_count": 5}, "charger_count"), ({"max_step": 2001}, "max_step"),
    ({"battery_max": 99}, "battery_max"), ({"map": [11]}, "map"), ({"map_random": "yes"}, "map_random"),
    ({"robots": 2}, "robots"), ({"max_step": True}, "max_step")])
def test_a_bad_env_conf_is_refused_naming_the_key(conf, named):
    with pytest.raises(ValueError, match=named):
        VacuumConfig.from_usr_conf(conf)


def test_env_conf_defaults_and_the_platform_wrapping():
    assert VacuumConfig.from_usr_conf(None).to_usr_conf() == {
        "map": list(range(1, 11)), "map_random": False, "robot_count": 4, "charger_count": 4, "max_step": 1000,
        "battery_max": 200}
    config = VacuumConfig.from_usr_conf({"env_conf": {"robot_count": 2, "map": [3]}})
    assert (config.robot_count, config.map) == (2, (3,))


def test_a_diagonal_move_needs_an_open_side():
    walkable = np.ones((SIZE, SIZE), dtype=bool)
    walkable[5, 6] = walkable[6, 5] = False
    assert not can_move(walkable, 5, 5, 1, 1)  # both sides shut
    walkable[6, 5] = True
    assert can_move(walkable, 5, 5, 1, 1)  # one side open
    assert not can_move(walkable, 0, 0, -1, 0)  # off the map
    walkable[5, 4] = False
    assert not can_move(walkable, 5, 5, -1, 0)  # into an obstacle


# ------------------------------------------------------------------------------------------------ reset
def test_reset_draws_chargers_npcs_and_hero_by_the_rules():
    for seed in range(20):
        config = VacuumConfig(robot_count=4, charger_count=2)
        g = VacuumGame(open_map(), config, np.random.default_rng(seed))
        assert len(g.chargers) == 2 and set(g.chargers) <= set(CHARGERS)
        assert g.total_dirt == SIZE * SIZE - 2 * 9  # every road cell but the footprints is dirty
        assert len(g.npc_spawns) == 4
        for i, a in enumerate(g.npc_spawns):
            assert not g.charger_mask[a[1], a[0]]
            for b in g.npc_spawns[i + 1:]:
                assert max(abs(a[0] - b[0]), abs(a[1] - b[1])) >= 21
            assert abs(g.x - a[0]) + abs(g.z - a[1]) > 5
        assert not g.charger_mask[g.z, g.x]
        assert g.dirty[g.z, g.x]  # the spawn cell stays dirty until re-entered
        assert (g.battery, g.step_no, g.clean_score, g.charge_count) == (200, 0, 0, 0)


def test_the_same_seed_plays_the_same_game():
    def play(seed):
        g = VacuumGame(open_map(), VacuumConfig(), np.random.default_rng(seed))
        moves = np.random.default_rng(99)
        trace = [(g.x, g.z, tuple(map(tuple, g.npcs)))]
        while not g.done:
            g.step(int(moves.integers(8)))
            trace.append((g.x, g.z, tuple(map(tuple, g.npcs))))
        return trace, g.clean_score, g.fail_reason
    assert play(3) == play(3)
    assert play(3) != play(4)


# ------------------------------------------------------------------------------------------------ step
def test_battery_cleaning_and_blocked_moves():
    g = game(walls=[(61, 60)])
    assert g.step(EAST) == 0  # blocked: stays, cleans nothing, still pays
    assert (g.x, g.z, g.battery, g.step_no, g.blocked) == (60, 60, 199, 1, 1)
    assert "blocked" in g.events
    assert g.step(NORTH) == 1 and (g.x, g.z) == (60, 59) and g.clean_score == 1
    assert g.cleaned_cell == (60, 59)
    assert g.step(SOUTH) == 1  # the spawn cell, dirty until re-entered
    assert g.step(NORTH) == 0 and g.cleaned_cell is None  # cleaned already
    assert g.battery == 196


def test_a_charger_refills_after_the_step_and_counts_each_step_on_it():
    g = game(hero=(12, 10), battery_max=100)  # next to the footprint of the charger at (10, 10)
    for _ in range(5):
        g.step(EAST)
        g.step(WEST)
    assert g.battery == 90
    start = g.charge_count
    g.step(WEST)  # (11, 10) is in the footprint
    assert (g.x, g.battery) == (11, 100) and g.charge_count == start + 1 and "charge" in g.events
    g.step(WEST)
    assert g.battery == 100 and g.charge_count == start + 2  # every step that ends on it
    g2 = VacuumGame(open_map(), VacuumConfig(robot_count=1), np.random.default_rng(0),
                    Rules(charge_every_step=False), hero=(12, 10), npc_spawns=[(20, 100)])
    g2.step(WEST)
    g2.step(WEST)
    assert g2.charge_count == 1  # counting entries only


def test_the_battery_runs_out_at_exactly_battery_max_steps_without_charging():
    g = game(hero=(60, 60), battery_max=100)
    steps = 0
    while not g.done:
        g.step(EAST if steps % 2 == 0 else WEST)
        steps += 1
    assert (steps, g.fail_reason, g.terminated, g.truncated) == (100, FAIL_BATTERY, True, False)
    with pytest.raises(ValueError, match="over"):
        g.step(EAST)


def test_arriving_on_a_charger_with_the_last_unit_saves_the_robot():
    g = game(hero=(13, 10), battery_max=100)  # the footprint of the charger at (10, 10) ends at x = 11
    for _ in range(49):
        g.step(EAST)
        g.step(WEST)
    g.step(WEST)  # 99 steps: battery 1 at (12, 10)
    assert (g.x, g.battery) == (12, 1)
    g.step(WEST)  # onto the footprint with the last unit: charging comes before the battery's test
    assert (g.x, g.battery, g.done) == (11, 100, False)


def test_max_step_completes_the_episode():
    g = game(max_step=7)
    for _ in range(7):
        g.step(EAST)
    assert (g.truncated, g.terminated, g.fail_reason) == (True, False, "")


def test_npcs_walk_inside_their_square_one_cell_a_step_and_clean():
    g = game(hero=(100, 100), npcs=((30, 30), (70, 30)), walls=[(31, 31)], max_step=2000, battery_max=999)
    previous = [tuple(p) for p in g.npcs]
    moved = 0
    for _ in range(800):
        if g.done:
            break
        g.step(EAST if g.step_no % 2 == 0 else WEST)
        for (x, z), (px, pz), (sx, sz) in zip(g.npcs, previous, g.npc_spawns, strict=True):
            assert max(abs(x - px), abs(z - pz)) <= 1
            assert abs(x - sx) <= 10 and abs(z - sz) <= 10
            assert g.walkable[z, x]
            assert not g.dirty[z, x] or (x, z) in g.npc_spawns
            moved += (x, z) != (px, pz)
        previous = [tuple(p) for p in g.npcs]
    assert moved > 400  # they move on most steps
    assert g.npc_cleaned > 0 and g.dirt_left == g.total_dirt - g.clean_score - g.npc_cleaned


def test_coming_within_one_cell_of_an_npc_loses():
    g = game(hero=(60, 60), npcs=((63, 60),), seed=1)
    while not g.done:
        g.step(EAST)
    assert g.fail_reason == FAIL_COLLISION and g.terminated and g.nearest_npc() <= 1


def test_a_collision_on_the_last_battery_unit_is_a_collision():
    g = game(hero=(60, 60), npcs=((60, 63),), battery_max=100, seed=5)
    g.battery = 1
    g.npcs[0][:] = [60, 62]
    g.npc_spawns = ((60, 62),)
    g.walkable = g.walkable.copy()
    g.walkable[61:64, 59:62] = False  # the NPC cannot move: boxed in
    g.walkable[62, 60] = g.walkable[61, 60] = True  # the NPC's cell and the robot's way to it
    g.step(SOUTH)
    assert g.fail_reason == FAIL_COLLISION


def test_an_action_out_of_range_is_refused():
    g = game()
    for bad in (-1, 8, 1.0, True):
        with pytest.raises(ValueError, match="action"):
            g.step(bad)


# ------------------------------------------------------------------------------------------------ observation
def test_map_info_is_row_z_column_x_with_dirt_codes():
    g = game(walls=[(63, 58)], hero=(60, 60))
    g.step(NORTH_EAST)  # to (61, 59), cleaned
    obs = env_obs(g, map_id=3)
    view = obs["observation"]["map_info"]
    assert len(view) == 21 and all(len(r) == 21 for r in view)
    assert view[10][10] == 1  # the robot's cell, cleaned
    assert view[10 - 1][10 + 2] == 0  # (63, 58): x + 2, z - 1
    assert view[10 + 1][10 - 1] == 2  # (60, 60): the spawn cell, still dirty
    g2 = game(hero=(3, 3))
    assert env_obs(g2)["observation"]["map_info"][0][0] == 0  # off the map
    charger = game(hero=(12, 10))
    assert env_obs(charger)["observation"]["map_info"][10][8] == 1  # a charger cell is road, not dirt
    assert obs["extra_info"]["map_id"] == 3


def test_npcs_out_of_view_are_hidden_and_chargers_always_listed():
    g = game(hero=(60, 60), npcs=((65, 60), (100, 100)))
    frame = env_obs(g)["observation"]["frame_state"]
    assert frame["npcs"][0]["is_in_view"] == 1 and frame["npcs"][0]["pos"] == {"x": 65, "z": 60}
    assert frame["npcs"][1] == {"npc_id": "3", "idx": 2, "is_in_view": 0, "pos": {"x": -1, "z": -1}}
    assert [o["pos"] for o in frame["organs"]] == [{"x": x, "z": z} for x, z in CHARGERS]
    truth = env_obs(g)["extra_info"]["frame_state"]["npcs"][1]["pos"]
    assert truth == {"x": 100, "z": 100}
    every = env_obs(g, rules=Rules(npcs_in_view_only=False))["observation"]["frame_state"]["npcs"][1]["pos"]
    assert every == {"x": 100, "z": 100}


def test_env_info_has_the_protocols_fifteen_keys():
    g = game()
    g.step(NORTH)
    info = env_obs(g)["observation"]["env_info"]
    assert sorted(info) == sorted([
        "total_score", "step_no", "clean_score", "total_dirt", "battery_max", "remaining_charge", "charge_count",
        "total_charger", "npc_count", "pos", "total_map", "map_random", "max_step", "finished_steps",
        "step_cleaned_cells"])
    assert info["step_cleaned_cells"] == [{"x": 60, "z": 59}] and info["remaining_charge"] == 199


def test_the_platform_facade_takes_maps_in_order_and_ends_like_the_platform():
    env = VacuumCompetitionEnv({1: open_map(), 2: open_map()}, seed=0)
    first = env.reset({"map": [2, 1], "max_step": 3})
    assert first["extra_info"]["map_id"] == 2 and first["frame_no"] == 0 and not first["truncated"]
    for _ in range(3):
        reward, obs = env.step(EAST)
    assert obs["truncated"] and not obs["terminated"] and set(reward) == {"frame_no", "env_id", "reward"}
    assert env.reset({"map": [2, 1]})["extra_info"]["map_id"] == 1


def test_charger_footprints_are_three_by_three():
    mask = charger_footprints([(0, 0), (5, 5)])
    assert mask.sum() == 4 + 9 and mask[6, 6] and not mask[7, 7]
    assert len(DIRECTIONS) == 8
