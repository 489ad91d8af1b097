"""Robot Vacuum maps: the shipped maps' structure (one connected road, road share, chargers, room for the NPCs), the
generator's determinism, stored files == a fresh generation, the loader (both formats, errors) and a real Gorge Chase
map read as a structural check of the loader."""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from sb3_realm_vacuum import maps
from sb3_realm_vacuum.maps import (
    CHARGER_SPACING,
    MAP_SIZE,
    NPC_SPACING,
    ROAD_SHARE_RANGE,
    SHIPPED_MAPS,
    VacuumMap,
    check_data,
    choose_chargers,
    components,
    generate_map,
    load_map,
    main,
    map_to_gorge_dict,
    maps_folder_map,
    save_map,
    shipped_map,
    spread_cells,
    write_data,
)

REPO = Path(__file__).resolve().parents[3]
GORGE_MAP = REPO.parent / "shared" / "data" / "gorge" / "gorge_chase_map_1.json"


def cheb(a, b) -> int:
    return max(abs(a[0] - b[0]), abs(a[1] - b[1]))


def small_map(name: str = "tiny") -> VacuumMap:
    """A hand-made map: an open 40 x 40 room with a wall across it, passable through one door."""
    walk = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    walk[10:50, 10:50] = True
    walk[30, 10:50] = False
    walk[30, 25] = True  # the door
    return VacuumMap(name=name, walkable=walk, chargers=((12, 12), (47, 12), (12, 47), (47, 47)))


# --- VacuumMap -------------------------------------------------------------------------------------------------------

def test_map_is_read_only_private_copy_and_pickles():
    game_map = small_map()
    with pytest.raises(ValueError):
        game_map.walkable[0, 0] = True
    copy = pickle.loads(pickle.dumps(game_map))
    assert np.array_equal(copy.walkable, game_map.walkable) and copy.chargers == game_map.chargers
    assert not copy.walkable.flags.writeable


def test_road_cells_and_total_dirt_follow_the_active_chargers():
    game_map = small_map()
    road = 40 * 40 - 39
    assert game_map.road_cells() == road
    assert game_map.total_dirt() == road - 4 * 9
    assert game_map.total_dirt(game_map.chargers[:2]) == road - 2 * 9
    assert game_map.total_dirt([]) == road
    mask = game_map.charger_mask([(12, 12)])
    assert mask.sum() == 9 and mask[11:14, 11:14].all()
    with pytest.raises(ValueError, match="not one of its charger spots"):
        game_map.total_dirt([(20, 20)])


def test_total_dirt_counts_only_road_under_a_partly_blocked_charger():
    walk = small_map().walkable.copy()
    walk[11, 11:14] = False  # the top row of the first charger's footprint becomes an obstacle
    game_map = VacuumMap(name="partial", walkable=walk, chargers=small_map().chargers)
    assert game_map.road_cells() - game_map.total_dirt() == 3 * 9 + 6


def test_connected_follows_the_anti_corner_cutting_rule():
    assert small_map().connected()
    walk = small_map().walkable.copy()
    walk[30, 25] = False  # close the door: two rooms
    assert not VacuumMap(name="split", walkable=walk, chargers=small_map().chargers).connected()
    walk = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    walk[0:5, 0:5] = True
    walk[5:10, 5:10] = True  # touches the first block only at the corner (4, 4) - (5, 5): both sides blocked
    chargers = ((1, 1), (3, 3), (6, 6), (8, 8))
    assert not VacuumMap(name="corner", walkable=walk, chargers=chargers).connected()
    walk[4, 5] = True  # one side open: the diagonal move is allowed
    assert VacuumMap(name="corner", walkable=walk, chargers=chargers).connected()
    assert [len(c) for c in components(walk)] == [51]


@pytest.mark.parametrize(("chargers", "message"), [
    (((12, 12), (47, 12), (12, 47)), "must be 4 distinct"),
    (((12, 12), (12, 12), (12, 47), (47, 47)), "must be 4 distinct"),
    (((0, 12), (47, 12), (12, 47), (47, 47)), "off the map"),
    (((100, 100), (47, 12), (12, 47), (47, 47)), "no road cell"),
    (((12.5, 12), (47, 12), (12, 47), (47, 47)), "pair"),
])
def test_bad_chargers_are_refused(chargers, message):
    with pytest.raises(ValueError, match=message):
        VacuumMap(name="bad", walkable=small_map().walkable, chargers=chargers)


def test_bad_grid_is_refused():
    with pytest.raises(ValueError, match="shape"):
        VacuumMap(name="bad", walkable=np.ones((64, 64), dtype=bool), chargers=small_map().chargers)


# --- shipped maps and the generator ----------------------------------------------------------------------------------

def test_shipped_map_names():
    assert SHIPPED_MAPS == (*(f"own_{k}" for k in range(1, 11)), *(f"standin_{k}" for k in range(1, 6)))
    assert shipped_map("own_1") is shipped_map("own_1")
    with pytest.raises(ValueError, match="not a shipped map"):
        shipped_map("own_11")


@pytest.mark.parametrize("name", SHIPPED_MAPS)
def test_shipped_map_structure(name):
    game_map = shipped_map(name)
    assert game_map.name == name
    assert game_map.walkable.shape == (MAP_SIZE, MAP_SIZE) and game_map.walkable.dtype == bool
    assert game_map.connected()
    share = game_map.road_cells() / MAP_SIZE ** 2
    assert ROAD_SHARE_RANGE[0] <= share <= ROAD_SHARE_RANGE[1]
    assert 0.35 <= share <= 0.48
    assert game_map.total_dirt() == game_map.road_cells() - 4 * 9  # every footprint fully on road
    for x, z in game_map.chargers:
        assert game_map.walkable[z - 1:z + 2, x - 1:x + 2].all()
    spots = game_map.chargers
    assert min(cheb(a, b) for i, a in enumerate(spots) for b in spots[i + 1:]) >= CHARGER_SPACING
    spawns = game_map.spawn_room()
    assert spawns is not None and len(spawns) == 4
    under = game_map.charger_mask()
    for x, z in spawns:
        assert game_map.walkable[z, x] and not under[z, x]
    assert min(cheb(a, b) for i, a in enumerate(spawns) for b in spawns[i + 1:]) >= NPC_SPACING
    # a house: outdoor space and free-standing furniture (obstacle islands off the outer obstacle), not open field
    border = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    border[[0, -1], :] = border[:, [0, -1]] = True
    islands = [c for c in components(~game_map.walkable) if not border.reshape(-1)[c].any()]
    assert len(islands) >= 10
    assert (~game_map.walkable).sum() - sum(len(c) for c in islands) > 0.3 * MAP_SIZE ** 2


def test_shipped_maps_are_varied():
    grids = [shipped_map(name).walkable for name in SHIPPED_MAPS]
    shares = [g.mean() for g in grids]
    assert max(shares) - min(shares) > 0.04
    for i, a in enumerate(grids):
        for b in grids[i + 1:]:
            assert (a != b).mean() > 0.2


def test_generation_is_deterministic_and_depends_on_the_seed():
    a, b, c = generate_map(7, "a"), generate_map(7, "b"), generate_map(8, "c")
    assert np.array_equal(a.walkable, b.walkable) and a.chargers == b.chargers and b.name == "b"
    assert not np.array_equal(a.walkable, c.walkable)
    with pytest.raises(ValueError, match="seed"):
        generate_map(-1, "x")


def test_stored_files_equal_a_fresh_generation(tmp_path):
    assert check_data() == []
    written = write_data(tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{name}.json.gz" for name in SHIPPED_MAPS)
    for path in written:
        stored = Path(maps.__file__).parent / "data" / path.name
        assert gzip.decompress(path.read_bytes()) == gzip.decompress(stored.read_bytes())
    assert main(["--check-data", "--folder", str(tmp_path)]) == 0
    (tmp_path / "own_3.json.gz").unlink()
    assert check_data(tmp_path) == ["own_3"]
    assert main(["--check-data", "--folder", str(tmp_path)]) == 1


def test_spread_cells():
    mask = np.zeros((MAP_SIZE, MAP_SIZE), dtype=bool)
    for x0, z0 in ((10, 10), (50, 10), (10, 50), (50, 50)):
        mask[z0:z0 + 3, x0:x0 + 3] = True
    rng = np.random.default_rng(0)
    cells = spread_cells(mask, 4, 38, rng)
    assert cells is not None and len(cells) == 4
    assert min(cheb(a, b) for i, a in enumerate(cells) for b in cells[i + 1:]) >= 38
    assert all(mask[z, x] for x, z in cells)
    assert spread_cells(mask, 5, 30, rng) is None
    assert spread_cells(mask, 2, 43, rng) is None


# --- files -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("file_name", ["own.json", "own.json.gz"])
def test_own_format_round_trip(tmp_path, file_name):
    game_map = shipped_map("own_4")
    path = save_map(game_map, tmp_path / file_name)
    loaded = load_map(path)
    assert loaded.name == "own_4"
    assert np.array_equal(loaded.walkable, game_map.walkable) and loaded.chargers == game_map.chargers


@pytest.mark.parametrize("file_name", ["robot_vacuum_map_3.json", "room_grid_map_3.json", "map3.json",
                                       "robot_vacuum_map_3.json.gz"])
def test_competition_format_round_trip(tmp_path, file_name):
    game_map = shipped_map("standin_2")
    loaded = load_map(save_map(game_map, tmp_path / file_name, fmt="gorge"))
    assert loaded.name == "open_3"
    assert np.array_equal(loaded.walkable, game_map.walkable) and loaded.chargers == game_map.chargers


@pytest.mark.parametrize("file_name", ["my_map3.json", "robot_vacuum_map_3.json.bak", "house.json"])
def test_other_file_names_keep_the_file_s_own_name(tmp_path, file_name):
    game_map = shipped_map("own_8")
    assert load_map(save_map(game_map, tmp_path / file_name, fmt="gorge")).name == "own_8"


def test_competition_file_without_charger_objects_gets_chargers_from_the_map(tmp_path):
    data = map_to_gorge_dict(shipped_map("own_2"))
    data["objects"] = [{"sub_type": 7, "pos": {"x": 3, "z": 3}, "w": 21, "h": 21}]  # not a charger
    path = tmp_path / "robot_vacuum_map_9.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    loaded = load_map(path)
    assert loaded.name == "open_9"
    for x, z in loaded.chargers:
        assert loaded.walkable[z - 1:z + 2, x - 1:x + 2].all()
    assert loaded.chargers == choose_chargers(loaded.walkable)  # seeded by the map's cells
    spots = loaded.chargers
    assert min(cheb(a, b) for i, a in enumerate(spots) for b in spots[i + 1:]) >= CHARGER_SPACING


def test_charger_objects_by_type_name_and_config_id(tmp_path):
    game_map = small_map()
    data = map_to_gorge_dict(game_map)
    data["objects"] = [{"type": "charger", "config_id": 3 - i, "x": x, "z": z}
                       for i, (x, z) in enumerate(game_map.chargers)]
    path = tmp_path / "robot_vacuum_map_1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_map(path).chargers == tuple(reversed(game_map.chargers))


def _write(tmp_path: Path, data: object, name: str = "robot_vacuum_map_1.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _bad_cells(data: dict) -> dict:
    data["cells"][5]["type_id"] = 2
    return data


def _repeat_cell(data: dict) -> dict:
    data["cells"][5] = dict(data["cells"][4])
    return data


def _three_chargers(data: dict) -> dict:
    data["objects"] = data["objects"][:3]
    return data


def _charger_without_pos(data: dict) -> dict:
    data["objects"][0].pop("pos")
    return data


def _short_cells(data: dict) -> dict:
    data["cells"] = data["cells"][:100]
    return data


def _wide(data: dict) -> dict:
    data["width"] = 64
    return data


def _no_cells(data: dict) -> dict:
    del data["cells"]
    return data


def _float_x(data: dict) -> dict:
    data["cells"][7]["x"] = 7.5
    return data


def _bool_type(data: dict) -> dict:
    data["cells"][9]["type_id"] = True
    return data


@pytest.mark.parametrize(("change", "message"), [
    (_bad_cells, "type_id 2"), (_repeat_cell, "appears 2 times"), (_three_chargers, "lists 3 chargers"),
    (_charger_without_pos, "without a position"), (_short_cells, "got 100 cells"), (_wide, "64 x 128"),
    (_no_cells, "missing key 'cells'"), (_float_x, "non-integer"), (_bool_type, "non-integer"),
])
def test_bad_competition_files_name_the_file_and_the_problem(tmp_path, change, message):
    path = _write(tmp_path, change(map_to_gorge_dict(small_map())))
    with pytest.raises(ValueError, match=message) as info:
        load_map(path)
    assert str(path) in str(info.value)


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_map(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="folder"):
        load_map(tmp_path)
    broken = tmp_path / "robot_vacuum_map_2.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON") as info:
        load_map(broken)
    assert str(broken) in str(info.value)
    with pytest.raises(ValueError, match="JSON object"):
        load_map(_write(tmp_path, [1, 2, 3], "list.json"))
    own = maps.map_to_dict(small_map())
    own["rows"][3] = "x" * MAP_SIZE
    with pytest.raises(ValueError, match="rows"):
        load_map(_write(tmp_path, own, "own.json"))


def test_maps_folder_map(tmp_path):
    save_map(shipped_map("own_1"), tmp_path / "map2.json", fmt="gorge")
    save_map(shipped_map("own_5"), tmp_path / "room_grid_map_2.json", fmt="gorge")
    found = maps_folder_map(tmp_path, 2)
    assert found.name == "open_2" and np.array_equal(found.walkable, shipped_map("own_5").walkable)
    save_map(shipped_map("own_6"), tmp_path / "robot_vacuum_map_2.json", fmt="gorge")
    assert np.array_equal(maps_folder_map(tmp_path, 2).walkable, shipped_map("own_6").walkable)
    with pytest.raises(ValueError, match="holds no map 4"):
        maps_folder_map(tmp_path, 4)
    with pytest.raises(ValueError, match="not a folder"):
        maps_folder_map(tmp_path / "nowhere", 1)
    with pytest.raises(ValueError, match="map id"):
        maps_folder_map(tmp_path, 0)


def test_a_real_gorge_map_loads():
    """The competition's map files share Gorge Chase's format: a real Gorge map is read cell for cell."""
    if not GORGE_MAP.is_file():
        if os.environ.get("SB3_REALM_REQUIRE_REAL_MAP") == "1":
            pytest.fail(f"{GORGE_MAP} is missing and SB3_REALM_REQUIRE_REAL_MAP=1")
        pytest.skip(f"{GORGE_MAP} is absent")
    raw = json.loads(GORGE_MAP.read_text(encoding="utf-8"))
    game_map = load_map(GORGE_MAP)
    assert game_map.name == raw["name"] == "gorge_chase_map_1"
    assert game_map.road_cells() == sum(cell["type_id"] == 3 for cell in raw["cells"])
    for cell in raw["cells"][::97]:
        assert game_map.walkable[cell["z"], cell["x"]] == (cell["type_id"] == 3)
    for x, z in game_map.chargers:
        assert game_map.walkable[z - 1:z + 2, x - 1:x + 2].all()
    assert len(set(game_map.chargers)) == 4
