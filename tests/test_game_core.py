"""The rules of the spec on hand-built maps: moves, sliding, flash, buff, pickups, termination, score, windows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import open_map

from sb3_realm.games.realm import CELL_WIDTH, GRID_ORIGIN_X, EpisodeConfig, Game, RealmMap, Rules
from sb3_realm.games.realm.observation import competition_observation

S = math.sqrt(0.5)


def spread_positions(**fixed: tuple[int, int]) -> list[tuple[int, int]]:
    """16 grid positions on a 40 x 40 open map; ``fixed`` overrides ids given as ``p<id>=(gx, gz)``."""
    pos = [(4 + 5 * (i % 7), 28 + 3 * (i // 7)) for i in range(16)]  # far away in the top rows by default
    for key, cell in fixed.items():
        pos[int(key[1:])] = cell
    return pos


def new_game(walls=(), rules: Rules | None = None, treasures=(), max_step: int = 2000, size: int = 40, **fixed):
    game_map = open_map(size, walls=list(walls), grid_positions=spread_positions(**fixed))
    game = Game(game_map, rules or Rules())
    config = EpisodeConfig.from_usr_conf({"treasure_random": 0, "treasure_id": list(treasures), "max_step": max_step})
    game.reset(config, config.treasure_id)
    return game


def test_move_length_and_direction():
    g = new_game(p2=(10, 10))
    x0, z0 = g.x, g.z
    g.step(0)  # east
    assert (g.x - x0, g.z - z0) == pytest.approx((700.0, 0.0))
    g.step(2)  # north = +z
    assert (g.x - x0, g.z - z0) == pytest.approx((700.0, 700.0))
    g.step(5)  # south-west
    assert (g.x - x0, g.z - z0) == pytest.approx((700.0 - 700 * S, 700.0 - 700 * S))
    assert g.events.displacement == pytest.approx(700.0)
    assert not g.events.bump


def test_buff_speed_duration_and_respawn():
    # start right next to the buff (one cell east of it): the first step picks it up
    g = new_game(p2=(10, 10), p0=(9, 10))
    g.step(4)  # west, onto the buff
    assert g.events.buff and g.buff_count == 1
    assert not g.buff_available()
    speeds = []
    for i in range(52):
        x0 = g.x
        g.step(0 if i % 2 == 0 else 4)  # shuttle east/west in the open room
        speeds.append(abs(g.x - x0))
    assert speeds[:50] == pytest.approx([1000.0] * 50)
    assert speeds[50:] == pytest.approx([700.0, 700.0])


def test_buff_respawns_after_450_steps():
    rules = Rules()
    pickups = []
    # the buff lies against the west wall; the hero keeps pushing west into the wall, so it stays in reach
    g = new_game(p2=(4, 20), p0=(3, 20), walls=[(slice(0, 40), slice(0, 3))], rules=rules)
    for s in range(1, 1000):
        g.step(4)
        if g.events.buff:
            pickups.append(s)
        assert g.buff_available() == (s + 1 >= pickups[-1] + rules.buff_respawn)
    assert pickups == [1, 1 + rules.buff_respawn, 1 + 2 * rules.buff_respawn]


def test_wall_slides_and_bumps():
    # wall row just north of the hero's cell (gz = 11), hero at the centre of cell (10, 10)
    g = new_game(p2=(10, 10), walls=[(slice(11, 13), slice(2, 30))])  # a gap at x 30..37 keeps it connected
    x0 = g.x
    top = (11) * CELL_WIDTH - 5250  # world z of the wall's lower edge
    g.step(1)  # north-east: blocked on z, slides on x
    assert g.x - x0 == pytest.approx(700 * S)
    assert g.z == pytest.approx(top, abs=1e-2)
    assert g.cell[1] == 10
    assert g.events.displacement == pytest.approx(math.hypot(700 * S, 250)) and not g.events.bump
    g.step(1)  # again: now only the x component moves, 495 units <= 500 counts as a bump
    assert g.x - x0 == pytest.approx(2 * 700 * S) and g.z == pytest.approx(top, abs=1e-2)
    assert g.events.bump
    g.step(2)  # straight north into the wall: no motion at all
    assert g.events.displacement == pytest.approx(0.0, abs=1e-2)
    assert g.events.bump and g.bump_count == 2


def test_no_corner_cutting():
    # hero in cell (10, 10); walls east (11, 10) and north (10, 11); the diagonal cell (11, 11) is free
    walls = [(slice(10, 11), slice(11, 12)), (slice(11, 12), slice(10, 11))]
    g = new_game(p2=(10, 10), walls=walls)
    for _ in range(5):
        g.step(1)
        assert g.cell == (10, 10)
        assert g.map.walkable[g.cell[1], g.cell[0]]


def test_flash_success_cooldown_and_mask():
    rules = Rules()
    g = new_game(p2=(5, 10), rules=rules)
    x0 = g.x
    assert g.talent_ready()
    g.step(8)  # flash east
    assert g.events.flash and not g.events.flash_failed
    assert g.x - x0 == pytest.approx(8000.0)
    assert g.talent_count == 1
    assert not g.talent_ready() and g.talent_cooldown() == rules.flash_cooldown - 1
    obs, info = competition_observation(g)
    assert obs.legal_act == [1, 0] and info.frame_state.heroes[0].talent.status == 0
    # while cooling down, a flash action moves instead (Rules.unready_flash = "move")
    x1 = g.x
    g.step(12)  # flash west -> move west
    assert g.x - x1 == pytest.approx(-700.0) and g.talent_count == 1
    flashed_at = 1
    while not g.talent_ready():
        g.step(0 if g.step_no % 2 else 4)
    assert g.step_no + 1 == flashed_at + rules.flash_cooldown


def test_flash_into_wall_fails_and_spends_cooldown():
    walls = [(slice(2, 26), slice(20, 24))]  # a wall at x 20..23 (open above z 26); a flash from x 5 lands in 21
    g = new_game(p2=(5, 10), walls=walls)
    x0, z0 = g.x, g.z
    g.step(8)
    assert g.events.flash_failed and (g.x, g.z) == (x0, z0)
    assert not g.talent_ready() and g.flash_fail_count == 1
    g2 = new_game(p2=(5, 10), walls=walls, rules=Rules(failed_flash_spends_cooldown=False))
    g2.step(8)
    assert g2.events.flash_failed and g2.talent_ready()


def test_flash_off_map_fails():
    g = new_game(p2=(5, 10))
    g.step(12)  # west: 16 cells off the 40-cell map
    assert g.events.flash_failed and g.cell == (5, 10)


def test_unready_flash_error_mode():
    g = new_game(p2=(5, 10), rules=Rules(unready_flash="error"))
    g.step(8)
    with pytest.raises(ValueError, match="cooling down"):
        g.step(9)


def test_pickup_radius_boundary():
    # treasure 3 cells east of the start (1500 units): one step east leaves 800, inside a 1000 radius
    g = new_game(p2=(10, 10), p3=(13, 10), treasures=[3])
    g.step(2)  # north: distance sqrt(1500^2 + 700^2) = 1655 > 1000
    assert g.collected == []
    g = new_game(p2=(10, 10), p3=(13, 10), treasures=[3])
    g.step(0)
    assert g.collected == [3] and g.events.treasures == (3,)
    # exactly on the radius counts; just outside does not
    g = new_game(p2=(10, 10), p3=(13, 10), treasures=[3], rules=Rules(pickup_radius=800.0))
    g.step(0)
    assert g.collected == [3]
    g = new_game(p2=(10, 10), p3=(13, 10), treasures=[3], rules=Rules(pickup_radius=799.0))
    g.step(0)
    assert g.collected == []


def test_termination_score_and_truncation():
    # start (10,10), treasures at (13,10) and (16,10), end at (22,10): walk east
    g = new_game(p2=(10, 10), p3=(13, 10), p4=(16, 10), p1=(22, 10), treasures=[3, 4], max_step=100)
    steps = 0
    while not g.terminated:
        g.step(0)
        steps += 1
    assert g.win and not g.truncated and g.collected == [3, 4]
    # end at 6000 units east, reached within 1000: x advances 700 per step -> 5000 after step 8 (7.14 steps)
    assert steps == math.ceil(5000 / 700)
    assert g.score() == pytest.approx(150 + 100 * 2 + 0.2 * (100 - steps))
    with pytest.raises(RuntimeError, match="reset"):
        g.step(0)
    # the same walk with max_step 5 truncates without a score
    g = new_game(p2=(10, 10), p3=(13, 10), p4=(16, 10), p1=(22, 10), treasures=[3, 4], max_step=5)
    for _ in range(5):
        g.step(0)
    assert g.truncated and not g.terminated and g.score() == 0.0
    # reaching the end on exactly the last step is a win, not a truncation
    g = new_game(p2=(10, 10), p1=(22, 10), max_step=steps)
    for _ in range(steps):
        g.step(0)
    assert g.terminated and not g.truncated and g.score() == pytest.approx(150.0)


def test_end_terminates_with_treasures_left():
    g = new_game(p2=(10, 10), p1=(13, 10), p3=(30, 30), treasures=[3])
    g.step(0)
    assert g.terminated and g.available_treasures == [3]
    assert g.score() == pytest.approx(150 + 0.2 * (2000 - 1))


def test_window_orientation_matches_grid():
    g = new_game(p2=(10, 10), walls=[(slice(14, 16), slice(12, 14)), (slice(5, 7), slice(6, 8))], size=40)
    for action in (0, 2, 0, 2, 1, 1, 5, 4, 4):
        gx, gz = g.cell
        obs, _ = competition_observation(g)
        window = obs.feature.obstacle_map
        for r in range(51):
            for c in range(51):
                z, x = gz - 25 + r, gx - 25 + c
                expected = int(0 <= z < 40 and 0 <= x < 40 and g.map.walkable[z, x])
                assert window[r * 51 + c] == expected, (r, c)  # flat, row by row
        before = g.cell
        g.step(action)
        if action == 0:
            assert g.cell[0] > before[0] and g.cell[1] == before[1]  # action 0 moves toward column c + 1
        if action == 2:
            assert g.cell[1] > before[1] and g.cell[0] == before[0]  # action 2 moves toward row r + 1


def test_action_0_and_2_move_along_window_columns_and_rows():
    g = new_game(p2=(10, 10), p3=(13, 10), p4=(10, 12), treasures=[3, 4], rules=Rules(pickup_radius=1.0))
    obs, _ = competition_observation(g)
    tm = obs.feature.treasure_map
    assert tm[25 * 51 + 28] == 1 and tm[27 * 51 + 25] == 1  # +x is column + 1, +z is row + 1
    g.step(0)
    g.step(0)  # from the centre of cell 10, 1400 units east: cell 13
    obs, _ = competition_observation(g)
    assert obs.feature.treasure_map[1300] == 1  # the hero's cell
    assert obs.feature.treasure_pos[2].direction == 0  # same cell


def test_memory_map_increments_before_and_after_visit():
    g = new_game(p2=(3, 10))  # next to the west wall (cells 0..1 are walls)
    obs, _ = competition_observation(g)
    assert obs.feature.memory_map[1300] == 0.0  # cropped before the start cell's first visit
    seen = []
    for _ in range(7):
        g.step(4)  # push west into the wall: the hero stays in cell (2, 10) after the first step
        obs, _ = competition_observation(g)
        seen.append(round(obs.feature.memory_map[1300], 6))
    assert g.cell == (2, 10)
    assert seen == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.0]
    # the start cell, one column east, was visited once
    assert obs.feature.memory_map[1301] == pytest.approx(0.2)


def test_relative_positions_and_nulls():
    g = new_game(p2=(10, 10), p1=(30, 10), p3=(10, 20), p4=(20, 20), treasures=[3, 4])
    obs, info = competition_observation(g)
    f = obs.feature
    assert f.end_pos.direction == 1  # east
    assert f.treasure_pos[2].direction == 3  # id 3: north
    assert f.treasure_pos[3].direction == 2  # id 4: north-east
    assert f.end_pos.grid_distance == pytest.approx(20 / 256)
    null = (0, 5, 5, 1.0)
    for i in (0, 1, 4, 5):  # ids 1 (end), 2 (start), 5, 6 (not in this episode)
        rp = f.treasure_pos[i]
        assert (rp.direction, rp.l2_distance, rp.path_distance, rp.grid_distance) == null
    assert f.start_pos.direction == 0 and f.start_pos.grid_distance == 0.0
    assert [o.config_id for o in info.frame_state.organs] == [3, 4, 0]
    assert f.norm_pos.x == pytest.approx(g.x / 64000)


def test_grid_and_world_conversion_roundtrip():
    for gx in (0, 5, 127):
        x, z = RealmMap.grid_to_world(gx, gx)
        assert RealmMap.world_to_grid(x, z) == (gx, gx)
        assert x == gx * CELL_WIDTH + GRID_ORIGIN_X + 250


def test_frame_no_advances_by_three():
    g = new_game(p2=(10, 10))
    for _ in range(4):
        g.step(0)
    assert g.frame_no == 12 and g.step_no == 4


def test_bad_action_leaves_state_unchanged():
    g = new_game(p2=(10, 10))
    g.step(0)
    snapshot = (g.x, g.z, g.step_no, g.frame_no, g.layers.copy())
    for bad in (16, -1, 3.0, "1", None, True, np.array([1, 2])):
        with pytest.raises(ValueError, match=r"0..15"):
            g.step(bad)
    assert (g.x, g.z, g.step_no, g.frame_no) == snapshot[:4]
    assert np.array_equal(g.layers, snapshot[4])
