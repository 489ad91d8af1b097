"""Gorge Chase's numpy core, one rule per test on hand-built maps, plus the open maps: loading, road counts and full
random episodes.

The open maps are Tencent's data and are not in the repository: they are read from ``$SB3_REALM_GORGE_MAPS``, else
``../shared/data/gorge`` beside the checkout. Without them those tests skip, except where
``SB3_REALM_REQUIRE_REAL_MAP=1``: there they fail.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from helpers import gorge_maps_dir

from sb3_realm.games.gorge import (
    COMPLETED,
    FAILED,
    RUNNING,
    UNREACHABLE,
    Buff,
    Game,
    GorgeConfig,
    GorgeMap,
    MapError,
    Monster,
    Treasure,
    load_map,
    map_from_dict,
)
from sb3_realm.games.gorge.rules import (
    DIRECTIONS,
    Rules,
    check_action,
    choose_map_id,
    diagonal_allowed,
    is_caught,
    spawn_ring_order,
)

REPO = Path(__file__).resolve().parents[1]
ROAD_COUNTS = {1: 4024, 2: 3906, 3: 4304, 4: 4296, 5: 4298, 6: 4510, 7: 4947, 8: 4021, 9: 4239, 10: 4253}
E, NE, N, NW, W, SW, S, SE = range(8)  # move actions; flash = 8 + direction


@pytest.fixture(scope="module")
def open_maps_dir() -> Path:
    return gorge_maps_dir()


def open_room(size: int = 20, walls: tuple[tuple[int, int], ...] = ()) -> GorgeMap:
    """A ``size`` x ``size`` map: road inside a one-cell obstacle border, with obstacles at ``walls`` cells (x, z)."""
    walk = np.zeros((size, size), dtype=bool)
    walk[1:-1, 1:-1] = True
    for x, z in walls:
        walk[z, x] = False
    return GorgeMap(walkable=walk, name="room")


def drawn(rows: list[str]) -> GorgeMap:
    """A map drawn as text rows (z = row, x = column): ``.`` road, ``#`` obstacle."""
    return GorgeMap(walkable=np.array([[c == "." for c in row] for row in rows]), name="drawn")


def new_game(game_map: GorgeMap, hero: tuple[int, int], monsters=(), treasures=(), buffs=(), seed: int = 0,
             rules: Rules | None = None, **conf) -> Game:
    """A game reset with no items, then with the hero, monsters (speed 1), treasures and buffs placed by hand."""
    config = GorgeConfig.from_usr_conf({"treasure_count": 0, "buff_count": 0, **conf})
    game = Game(game_map, rules or Rules())
    game.reset(config, np.random.default_rng(seed))
    game.hero = hero
    game.history = deque([(0, hero)], maxlen=game.rules.history_length)
    game.treasures = [Treasure(i + 1, c) for i, c in enumerate(treasures)]
    game.buffs = [Buff(len(treasures) + i + 1, c) for i, c in enumerate(buffs)]
    game.monsters = [Monster(50 + i, c, 1, c) for i, c in enumerate(monsters)]
    return game


# ------------------------------------------------------------------------------------------------------- moves
def test_directions_follow_the_spec():
    assert DIRECTIONS[N] == (0, -1) and DIRECTIONS[S] == (0, 1) and DIRECTIONS[NE] == (1, -1)
    g = new_game(open_room(), (10, 10))
    for action, cell in [(N, (10, 9)), (E, (11, 9)), (SW, (10, 10)), (NW, (9, 9)), (SE, (10, 10))]:
        g.step(action)
        assert g.hero == cell
    assert g.events.path == ((10, 10),)


def test_corner_rule():
    # NE from (5, 5): target (6, 4); the orthogonal cells between are (6, 5) and (5, 4)
    both = open_room(walls=((6, 5), (5, 4)))
    one = open_room(walls=((6, 5),))
    target = open_room(walls=((6, 4),))
    assert not diagonal_allowed(both, 5, 5, 1, -1)
    assert diagonal_allowed(one, 5, 5, 1, -1)
    assert not diagonal_allowed(target, 5, 5, 1, -1)
    for game_map, end in [(both, (5, 5)), (one, (6, 4)), (target, (5, 5))]:
        g = new_game(game_map, (5, 5))
        g.step(NE)
        assert g.hero == end
        assert g.events.path == (() if end == (5, 5) else (end,))
    # straight moves need only the target
    g = new_game(both, (5, 5))
    g.step(E)
    assert g.hero == (5, 5) and g.step_no == 1


def test_buffed_move_goes_two_cells_and_stops_at_a_wall():
    g = new_game(open_room(walls=((8, 5),)), (5, 5))
    g.buff_remaining = 10
    g.step(E)
    assert g.hero == (7, 5) and g.events.path == ((6, 5), (7, 5))
    g.step(E)  # (8, 5) is a wall: stays
    assert g.hero == (7, 5) and g.events.path == ()
    g.hero = (6, 5)
    g.step(E)  # one cell, then the wall
    assert g.hero == (7, 5) and g.events.path == ((7, 5),)
    # the buffed diagonal applies the corner rule to each cell
    g = new_game(open_room(walls=((7, 4), (6, 3))), (5, 5))
    g.buff_remaining = 10
    g.step(NE)
    assert g.hero == (6, 4)


# ------------------------------------------------------------------------------------------------------- flash
def test_flash_lands_farthest_ignoring_walls_and_collects_on_the_path():
    walls = (*tuple((x, 5) for x in (6, 7, 8)), (13, 5))
    g = new_game(open_room(walls=walls), (3, 5), treasures=((4, 5), (12, 5), (14, 5)), buffs=((9, 5),))
    g.step(8 + E)
    # 10 cells east is (13, 5), a wall: the flash lands on (12, 5), crossing the wall block
    assert g.hero == (12, 5)
    assert g.events.path == tuple((x, 5) for x in range(4, 13))
    assert g.events.flash and not g.events.flash_in_place
    assert g.events.treasures == (1, 2) and g.treasures_collected == 2
    assert g.events.buff == 4 and g.buff_remaining == g.rules.buff_duration - 1
    assert [t.entity_id for t in g.treasures] == [3]
    assert g.events.reward == pytest.approx(1.5 + 200)


def test_diagonal_flash_reaches_eight_cells_and_ignores_the_corner_rule():
    g = new_game(open_room(size=30), (5, 5))
    g.step(8 + SE)
    assert g.hero == (13, 13)
    assert g.events.path == tuple((5 + j, 5 + j) for j in range(1, 9))
    g = new_game(open_room(size=30, walls=((6, 5), (5, 6))), (5, 5))
    g.step(8 + SE)
    assert g.hero == (13, 13)


def test_flash_out_of_the_map_lands_on_the_last_road_cell_and_in_place_flash():
    g = new_game(open_room(), (3, 3))
    g.step(8 + W)  # every cell 10..3 west is outside the map or the border: lands on (1, 3)
    assert g.hero == (1, 3)
    g = new_game(open_room(), (1, 3))
    g.step(8 + W)  # nothing but border and outside: in-place flash
    assert g.hero == (1, 3) and g.events.flash and g.events.flash_in_place and g.events.path == ()
    assert g.flash_count == 1 and g.flash_cooldown == 99


def test_flash_on_cooldown_does_nothing_and_cooldown_timing():
    g = new_game(open_room(size=40), (5, 5))
    g.step(8 + E)  # step 1
    assert g.hero == (15, 5) and g.flash_cooldown == 99 and g.flash_count == 1
    mask = g.legal_actions()
    assert mask.dtype == bool and mask.shape == (16,) and mask[:8].all() and not mask[8:].any()
    g.step(8 + E)  # step 2: on cooldown
    assert g.hero == (15, 5) and g.events.flash_on_cooldown and not g.events.flash and g.step_no == 2
    assert g.flash_count == 1 and g.flash_cooldown == 98
    for _ in range(97):
        g.step(N)
    assert g.step_no == 99 and g.flash_cooldown == 1
    g.step(S)  # step 100 = 1 + 99: the cooldown reads 0 ...
    assert g.flash_cooldown == 0 and g.legal_actions()[8:].all()
    g.step(8 + E)  # ... and the flash of step 101 = 1 + 100 works
    assert g.events.flash and g.flash_count == 2 and g.flash_cooldown == 99


def test_talent_cooldown_config_sets_the_cooldown():
    g = new_game(open_room(size=40), (5, 5), talent_cooldown=50)
    g.step(8 + S)
    assert g.flash_cooldown == 49


# -------------------------------------------------------------------------------------------------------- buff
def test_buff_duration_gives_49_double_moves():
    g = new_game(open_room(size=40), (5, 20), buffs=((6, 20),))
    g.step(E)  # step t = 1: picks the buff up, this move is still one cell
    assert g.hero == (6, 20) and g.events.buff == 1 and g.buff_remaining == 49 and g.buff_pickups == 1
    assert not g.buffs[0].visible and g.buffs[0].respawn_counter == 199
    lengths = []
    for i in range(51):
        x0 = g.hero[0]
        g.step(E if i % 2 == 0 else W)
        lengths.append(abs(g.hero[0] - x0))
    assert lengths == [2] * 49 + [1, 1]
    assert g.buff_remaining == 0 and not g.has_buff


def test_buff_respawn_timing_and_pickup_by_a_standing_hero():
    # the buff lies against the west border; the hero stands on it and keeps walking into the border
    g = new_game(open_room(), (1, 10), buffs=((1, 10),), monster_interval=-2)
    pickups, visible = [], []
    for _ in range(450):
        g.step(W)
        if g.events.buff is not None:
            pickups.append(g.step_no)
        visible.append(g.buffs[0].visible)
    assert pickups == [1, 201, 401]  # collectable again at t + R
    assert visible[198] is False and visible[199] is True  # status 1 again in the observation of t + R - 1 = 200


def test_repick_while_buffed_restarts_the_duration():
    g = new_game(open_room(), (5, 5), buffs=((6, 5), (7, 5)))
    g.step(E)
    assert g.events.buff == 1 and g.buff_remaining == 49
    g.step(E)  # buffed: (7, 5) then (8, 5); the buff on (7, 5) is picked, the duration starts again
    assert g.hero == (8, 5) and g.events.buff == 2 and g.buff_remaining == 49 and g.buff_pickups == 2


def test_at_most_one_buff_per_step():
    g = new_game(open_room(size=30), (3, 5), buffs=((5, 5), (8, 5)))
    g.step(8 + E)
    assert g.events.buff == 1 and g.buffs[1].visible and g.buff_pickups == 1


# ------------------------------------------------------------------------------------------------- treasures
def test_several_treasures_in_one_step_and_score():
    g = new_game(open_room(), (5, 5), treasures=((6, 5), (7, 5), (7, 5)))
    g.buff_remaining = 5
    g.step(E)
    assert g.events.treasures == (1, 2, 3) and g.treasures == [] and g.treasures_collected == 3
    assert g.treasure_score == 300 and g.step_score == 1.5 and g.total_score == 301.5
    assert g.events.reward == pytest.approx(301.5)
    g.step(E)
    assert g.events.reward == pytest.approx(1.5) and g.total_score == pytest.approx(303.0)


def test_a_blocked_move_checks_only_the_own_cell():
    g = new_game(open_room(walls=((6, 5),)), (5, 5), treasures=((4, 5),))
    g.step(E)
    assert g.hero == (5, 5) and g.treasures_collected == 0


# -------------------------------------------------------------------------------------------------- monsters
def test_monster_staircase_pursuit():
    # the hero stands in the south-east corner walking into the border; the monster comes diagonally, axis by axis
    g = new_game(open_room(size=30), (28, 28), monsters=((18, 18),))
    cells = [(18, 18)]
    for _ in range(10):
        g.step(SE)
        cells.append(g.monsters[0].cell)
    assert g.hero == (28, 28)
    axes = ["x" if b[0] != a[0] else "z" for a, b in itertools.pairwise(cells)]
    steps = [abs(b[0] - a[0]) + abs(b[1] - a[1]) for a, b in itertools.pairwise(cells)]
    assert steps == [1] * 10
    assert all(a != b for a, b in itertools.pairwise(axes))  # the axis alternates
    assert cells[-1] == (23, 23)


def test_monster_axis_and_back_step_penalties():
    room = open_room()
    # from (5, 5) toward (7, 7), E (6, 5) and S (5, 6) are both shortest
    g = new_game(room, (7, 7), monsters=((5, 5),))
    g.monsters[0].last_axis = "z"
    g.step(NW)
    g.hero = (7, 7)
    assert g.monsters[0].cell == (6, 5) and g.monsters[0].last_axis == "x" and g.monsters[0].prev == (5, 5)
    g = new_game(room, (7, 7), monsters=((5, 5),))
    g.monsters[0].last_axis = "x"
    g.step(NW)
    assert g.monsters[0].cell == (5, 6)
    g = new_game(room, (7, 7), monsters=((5, 5),))
    g.monsters[0].prev = (6, 5)  # stepping back costs 0.25: S wins
    g.step(NW)
    assert g.monsters[0].cell == (5, 6)


def test_monster_ties_are_drawn_from_the_rng():
    ends = set()
    for seed in range(20):
        g = new_game(open_room(), (7, 7), monsters=((5, 5),), seed=seed)
        g.step(NW)
        ends.add(g.monsters[0].cell)
    assert ends == {(6, 5), (5, 6)}


def test_monster_follows_the_4_connected_path_around_walls():
    m = drawn([
        "#########",
        "#.......#",
        "#.#####.#",
        "#.#.#.#.#",
        "#.#.#.#.#",
        "#...#...#",
        "#########",
    ])
    g = new_game(m, (3, 3), monsters=((5, 3),))  # Chebyshev 2 apart, 22 cells by road: down, around and back
    cells = []
    for action in (S, N, S, N):
        g.step(action)
        cells.append(g.monsters[0].cell)
    assert g.status == RUNNING
    assert cells == [(5, 4), (5, 5), (6, 5), (7, 5)]


def test_monsters_never_share_a_cell():
    m = drawn(["#################", "#...............#", "#################"])
    g = new_game(m, (15, 1), monsters=((4, 1), (5, 1)))  # monster 1 behind monster 2 in a corridor
    g.step(W)
    first, second = g.monsters
    assert second.cell == (6, 1)
    assert first.cell == (3, 1)  # its only free neighbour leads away from the hero
    g.step(E)
    assert first.cell != second.cell


def test_speed_two_monster_moves_two_cells():
    g = new_game(open_room(size=30), (25, 5), monsters=((5, 5),))
    g.monsters[0].speed = 2
    g.step(E)
    assert g.monsters[0].cell == (7, 5)


def test_second_monster_spawns_from_the_history():
    g = new_game(open_room(size=40), (5, 5), monsters=((35, 35),), monster_interval=11)
    g.monsters[0].speed = 0  # keep monster 1 far away
    for _ in range(10):
        g.step(E)
        assert len(g.monsters) == 1
    g.step(E)  # step 11: monster 2 appears where the hero stood after step 1
    assert g.events.monster_spawned and len(g.monsters) == 2
    second = g.monsters[1]
    assert second.cell == (6, 5) and second.start == (6, 5) and second.speed == 1
    assert second.entity_id == g.hero_id + 2
    g.step(E)  # its first move
    assert second.cell == (7, 5)


def test_second_monster_avoids_monster_one():
    g = new_game(open_room(size=40), (5, 5), monsters=((35, 35),), monster_interval=11)
    g.monsters[0].speed = 0
    for _ in range(10):
        g.step(E)
    g.monsters[0].cell = (6, 5)  # monster 1 stands on the spawn cell
    g.step(E)
    assert g.monsters[1].cell == (5, 4)  # first free road cell of ring 1, z ascending then x ascending
    assert spawn_ring_order(1)[0] == (-1, -1)


def test_second_monster_never():
    g = new_game(open_room(size=40), (5, 5), monster_interval=-2)
    g.monsters = []
    for _ in range(30):
        g.step(E if g.step_no % 2 else W)
    assert g.monsters == [] and g.second_spawned


def test_second_monster_takes_the_oldest_entry_when_the_delayed_one_is_gone():
    g = new_game(open_room(size=40), (5, 5), monster_interval=11, rules=Rules(spawn_delay=40))
    g.monsters = []
    for _ in range(11):
        g.step(S)
    assert len(g.history) == 12 and g.monsters[0].cell == (5, 5)  # the reset position


def test_history_keeps_the_last_32_positions():
    g = new_game(open_room(size=40), (5, 5), monster_interval=-2)
    g.monsters = []
    for _ in range(40):
        g.step(S if g.step_no % 2 else N)
    assert len(g.history) == 32 and g.history[0][0] == 9 and g.history[-1] == (40, g.hero)


def test_speed_up_and_later_spawn_is_born_boosted():
    g = new_game(open_room(size=60), (5, 5), monsters=((50, 50),), monster_speedup=5, monster_interval=11)
    for _ in range(4):
        g.step(E)
    assert g.monsters[0].speed == 1 and not g.boosted
    g.step(E)  # step 5
    assert g.events.speed_up and g.boosted and g.monsters[0].speed == 2
    for _ in range(6):
        g.step(S)
    assert len(g.monsters) == 2 and g.monsters[1].speed == 2


# ------------------------------------------------------------------------------------------------ episode end
def test_catch_at_chebyshev_one():
    assert is_caught((4, 4), (5, 5)) and is_caught((5, 5), (5, 5)) and not is_caught((5, 3), (5, 5))
    g = new_game(open_room(), (10, 10), monsters=((12, 12),))
    g.monsters[0].speed = 0
    g.step(SE)  # hero to (11, 11): diagonal neighbour
    assert g.events.caught and g.status == FAILED and g.terminated and not g.truncated
    assert g.total_score == 1.5
    with pytest.raises(ValueError, match="episode is over"):
        g.step(E)
    g = new_game(open_room(), (10, 10), monsters=((12, 10),))
    g.monsters[0].speed = 0
    g.step(W)
    g.step(E)  # hero back on (10, 10): two cells straight from the monster
    assert g.status == RUNNING and not g.events.caught


def test_max_step_completion_overrides_a_catch():
    g = new_game(open_room(), (10, 10), monsters=((12, 12),), max_step=1)
    g.monsters[0].speed = 0
    g.step(SE)
    assert g.events.caught and g.status == COMPLETED and g.truncated and not g.terminated and g.done
    g = new_game(open_room(), (10, 10), max_step=3)
    g.monsters = []
    for _ in range(3):
        g.step(N)
    assert g.status == COMPLETED and g.truncated and not g.terminated and g.total_score == 4.5


def test_invalid_actions_raise():
    assert check_action(np.int64(15)) == 15
    g = new_game(open_room(), (10, 10))
    for bad in (16, -1, 2.0, True, "3"):
        with pytest.raises(ValueError, match="action"):
            g.step(bad)
    assert g.step_no == 0


# --------------------------------------------------------------------------------------------------- config
def test_config_defaults_and_wrapping():
    c = GorgeConfig.from_usr_conf(None)
    assert c == GorgeConfig() and c.max_step == 1000 and c.map == tuple(range(1, 11))
    c = GorgeConfig.from_usr_conf({"env_conf": {"map": [9, 10], "map_random": True, "monster_interval": -1}})
    assert c.map == (9, 10) and c.map_random and c.monster_interval == -1 and c.treasure_count == 10
    assert GorgeConfig.from_usr_conf(c.to_usr_conf()) == c
    assert GorgeConfig.from_usr_conf({"monster_interval": -2}).monster_interval == -2


@pytest.mark.parametrize("conf, words", [
    ({"treasure_count": 11}, ["'treasure_count'", "11", "0..10"]),
    ({"buff_count": -1}, ["'buff_count'", "-1", "0..2"]),
    ({"buff_cooldown": 0}, ["'buff_cooldown'", "1..500"]),
    ({"talent_cooldown": 49}, ["'talent_cooldown'", "49", "50..2000"]),
    ({"monster_interval": 10}, ["'monster_interval'", "10", "-2 or -1 or 11..2000"]),
    ({"monster_speedup": 0}, ["'monster_speedup'", "-1 or 1..2000"]),
    ({"max_step": 2001}, ["'max_step'", "2001", "1..2000"]),
    ({"max_step": 10.0}, ["'max_step'", "10.0", "integer"]),
    ({"max_step": True}, ["'max_step'", "True"]),
    ({"map": [0, 3]}, ["'map'", "0", "1..10"]),
    ({"map": []}, ["'map'", "non-empty"]),
    ({"map_random": 1}, ["'map_random'", "1"]),
    ({"monster_count": 1}, ["unknown", "monster_count", "valid keys"]),
])
def test_config_errors_name_the_key_value_and_range(conf, words):
    with pytest.raises(ValueError) as info:
        GorgeConfig.from_usr_conf(conf)
    for word in words:
        assert word in str(info.value)


def test_config_built_directly_is_validated():
    with pytest.raises(ValueError, match=r"'max_step'\] = 0"):
        GorgeConfig(max_step=0)
    assert GorgeConfig(map=[2, 2]).map == (2, 2)


def test_rules_validate_engine_values():
    with pytest.raises(ValueError, match="monster_speed = 5"):
        Rules(monster_speed=5)
    with pytest.raises(ValueError, match="flash_distance"):
        Rules(flash_distance=0)


def test_map_choice():
    rng = np.random.default_rng(0)
    cycle = GorgeConfig.from_usr_conf({"map": [3, 1]})
    assert [choose_map_id(cycle, i, rng) for i in range(4)] == [3, 1, 3, 1]
    random_choice = GorgeConfig.from_usr_conf({"map": [3, 1], "map_random": True})
    assert {choose_map_id(random_choice, i, rng) for i in range(40)} == {1, 3}


# ---------------------------------------------------------------------------------------------------- reset
def big_open_map() -> GorgeMap:
    """128 x 128 with road in [3, 124]^2 and a few wall blocks."""
    walk = np.zeros((128, 128), dtype=bool)
    walk[3:125, 3:125] = True
    walk[30:90, 60:64] = False
    walk[70:74, 10:110] = False
    return GorgeMap(walkable=walk, name="big")


def test_reset_spawn_rules_and_entity_ids():
    m = big_open_map()
    g = Game(m)
    for seed in range(10):
        g.reset(GorgeConfig(), np.random.default_rng(seed))
        cells = [t.cell for t in g.treasures]
        assert [t.entity_id for t in g.treasures] == list(range(1, 11))
        assert [b.entity_id for b in g.buffs] == [11, 12] and all(b.visible for b in g.buffs)
        assert g.hero_id == 13 and [mon.entity_id for mon in g.monsters] == [14]
        for i, (x, z) in enumerate(cells):
            assert 5 <= x <= 123 and 5 <= z <= 123 and m.is_road(x, z)
            for px, pz in cells[:i]:
                assert np.hypot(x - px, z - pz) > 15
        (ax, az), (bx, bz) = (b.cell for b in g.buffs)
        assert np.hypot(ax - bx, az - bz) >= 10
        assert m.is_road(*g.hero) and g.hero not in cells + [b.cell for b in g.buffs]
        mon = g.monsters[0]
        assert max(abs(mon.cell[0] - g.hero[0]), abs(mon.cell[1] - g.hero[1])) == 10 and m.is_road(*mon.cell)
        assert mon.speed == 1 and mon.start == mon.cell and mon.prev is None and mon.last_axis is None
        assert list(g.history) == [(0, g.hero)]
        assert g.step_no == 0 and g.status == RUNNING and g.total_score == 0 and g.flash_cooldown == 0
        assert g.monster_interval == 300 and g.monster_speedup == 500


def test_reset_draws_random_intervals():
    g = Game(big_open_map())
    conf = GorgeConfig.from_usr_conf({"monster_interval": -1, "monster_speedup": -1})
    seen = set()
    for seed in range(5):
        g.reset(conf, np.random.default_rng(seed))
        assert 11 <= g.monster_interval <= 2000 and 1 <= g.monster_speedup <= 2000
        seen.add(g.monster_interval)
    assert len(seen) > 1


def test_reset_on_a_small_map_leaves_out_items_that_find_no_cell():
    g = Game(open_room())
    g.reset(GorgeConfig.from_usr_conf({"treasure_count": 10}), np.random.default_rng(0))
    assert all(5 <= t.cell[0] <= 18 and 5 <= t.cell[1] <= 18 for t in g.treasures)


def trace(game: Game, seed: int, steps: int) -> list:
    rng = np.random.default_rng(seed + 1000)
    out = []
    for _ in range(steps):
        if game.done:
            break
        game.step(int(rng.integers(16)))
        out.append((game.hero, tuple(m.cell for m in game.monsters), game.total_score, game.flash_cooldown,
                    game.buff_remaining, game.status))
    return out


def test_same_seed_same_episode():
    m = big_open_map()
    conf = GorgeConfig.from_usr_conf({"monster_interval": 20, "monster_speedup": 40, "max_step": 200})
    runs = []
    for seed in (3, 3, 4):
        g = Game(m)
        g.reset(conf, np.random.default_rng(seed))
        runs.append(([t.cell for t in g.treasures], g.hero, trace(g, seed=0, steps=200)))
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


# -------------------------------------------------------------------------------------------------------- maps
def test_bfs_matches_a_plain_bfs():
    m = big_open_map()
    field = m.distance_field(10, 10)
    assert field[10, 10] == 0 and field[0, 0] == UNREACHABLE and field[10, 20] == 10
    # plain queue BFS
    ref = np.full(m.walkable.shape, UNREACHABLE, dtype=np.int64)
    ref[10, 10] = 0
    queue = deque([(10, 10)])
    while queue:
        x, z = queue.popleft()
        for dx, dz in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            if m.is_road(x + dx, z + dz) and ref[z + dz, x + dx] == UNREACHABLE:
                ref[z + dz, x + dx] = ref[z, x] + 1
                queue.append((x + dx, z + dz))
    assert np.array_equal(field, ref)
    rng = np.random.default_rng(0)
    cells = [(int(x), int(z)) for x, z in rng.integers(0, 128, size=(50, 2))]
    assert m.distances_to(10, 10, cells) == [int(ref[z, x]) for x, z in cells]
    # with anchors, the search stops margin levels after the last anchor: cells farther read UNREACHABLE
    near = m.distances_to(10, 10, [(12, 10), (40, 10)], anchors=[(12, 10)], margin=3)
    assert near == [2, UNREACHABLE]


def test_map_validation_errors(tmp_path):
    with pytest.raises(MapError, match="does not exist"):
        load_map(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    with pytest.raises(MapError, match="not valid JSON"):
        load_map(bad)
    cells = [{"x": i % 128, "z": i // 128, "type_id": 1, "height": 0.0} for i in range(128 * 128)]
    good = {"name": "t", "width": 128, "height": 128, "cells": cells}
    assert map_from_dict(good).road_count == 0
    big = big_open_map()
    assert np.array_equal(map_from_dict(big.to_dict()).walkable, big.walkable)
    with pytest.raises(MapError, match="64 x 128"):
        map_from_dict({**good, "width": 64})
    with pytest.raises(MapError, match="missing key 'cells'"):
        map_from_dict({"width": 128, "height": 128})
    with pytest.raises(MapError, match="16383 cells"):
        map_from_dict({**good, "cells": cells[:-1]})
    odd = [dict(c) for c in cells]
    odd[5]["type_id"] = 2
    with pytest.raises(MapError, match=r"cells\[5\] at \(5, 0\) has type_id 2"):
        map_from_dict({**good, "cells": odd})
    twice = [dict(c) for c in cells]
    twice[1] = dict(cells[0])
    with pytest.raises(MapError, match=r"repeats cell \(0, 0\)"):
        map_from_dict({**good, "cells": twice})
    with pytest.raises(MapError, match="not a road cell"):
        open_room().distance_field(0, 0)
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps({**good, "height": 5}), encoding="utf-8")
    with pytest.raises(MapError, match=r"wrong.json"):
        load_map(path)


def test_open_maps_load_with_the_measured_road_counts(open_maps_dir):
    for k, count in ROAD_COUNTS.items():
        m = load_map(open_maps_dir / f"gorge_chase_map_{k}.json")
        assert m.name == f"gorge_chase_map_{k}" and m.walkable.shape == (128, 128)
        assert m.road_count == count
        x, z = m.road_xz[0]
        assert (m.distance_field(int(x), int(z))[m.walkable] < UNREACHABLE).all()  # one 4-connected component


@pytest.mark.parametrize("k", [9, 10])
def test_random_episodes_on_open_maps_end_correctly(open_maps_dir, k):
    m = load_map(open_maps_dir / f"gorge_chase_map_{k}.json")
    game = Game(m)
    rng = np.random.default_rng(k)
    ends = set()
    for max_step in (400, 400, 400, 400, 6, 6):
        conf = GorgeConfig.from_usr_conf({"monster_interval": 11, "monster_speedup": 14, "max_step": max_step})
        game.reset(conf, rng)
        while not game.done:
            mask = game.legal_actions()
            game.step(int(rng.choice(np.flatnonzero(mask))))
            cells = [mon.cell for mon in game.monsters]
            assert len(set(cells)) == len(cells) and all(m.is_road(*c) for c in cells)
            assert m.is_road(*game.hero)
            assert game.total_score == 1.5 * game.step_no + 100 * game.treasures_collected
            assert len(game.monsters) == (2 if game.step_no >= 11 else 1)
            assert all(mon.speed == (2 if game.step_no >= 14 else 1) for mon in game.monsters)
        caught = any(is_caught(c, game.hero) for c in cells)
        assert caught == game.events.caught
        if game.step_no < max_step:
            assert game.status == FAILED and game.terminated and not game.truncated and caught
        else:
            assert game.status == COMPLETED and game.truncated and not game.terminated
        ends.add(game.status)
    assert ends == {FAILED, COMPLETED}  # random play is caught within 400 steps; nobody is caught within 6
