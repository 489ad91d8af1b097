"""Gorge Chase's observation protocol (rules spec section 6): the structure of ``env_obs`` key by key against the spec's
tables, view masking, organs, ``map_info`` orientation, the legal actions, the reward, the episode end, and two real
platform frames rebuilt into a game whose observation equals the logged one field for field.

The platform frames and the open maps are Tencent's data and are not in the repository: they are read from
``$SB3_REALM_GORGE_MAPS`` (the frames from its ``platform_frames/`` subfolder), else ``../shared/data/gorge`` beside
the checkout. Without them those tests skip, except where ``SB3_REALM_REQUIRE_REAL_MAP=1``: there they fail.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from helpers import gorge_maps_dir

from sb3_realm.games.gorge import Buff, Game, GorgeConfig, GorgeMap, Monster, Treasure, load_map
from sb3_realm.games.gorge import protocol as P
from sb3_realm.games.gorge.observation import (
    GorgeCompetitionEnv,
    env_obs,
    frame_state,
    map_info,
    rebuild_from_frame,
)

REPO = Path(__file__).resolve().parents[1]
E, NE, N, NW, W, SW, S, SE = range(8)  # move actions; flash = 8 + direction

# ------------------------------------------------------------------------------- the spec's tables (6.2 to 6.5)
NUMBER = "number"  # an int or a float (the scores)
POS = {"x": int, "z": int}
HERO = {"hero_id": int, "pos": POS, "flash_cooldown": int, "buff_remaining_time": int, "treasure_score": NUMBER,
        "step_score": NUMBER, "treasure_collected_count": int}
VIEW_MONSTER = {"monster_id": int, "is_in_view": int, "pos": POS, "speed": int, "hero_l2_distance": int,
                "hero_relative_direction": int, "monster_interval": int}
EXTRA_MONSTER = {k: v for k, v in VIEW_MONSTER.items() if k != "is_in_view"} | {"start_pos": POS}
ORGAN = {"sub_type": int, "config_id": int, "status": int, "pos": POS, "hero_l2_distance": int,
         "hero_relative_direction": int}
ENV_INFO = {"total_score": NUMBER, "step_score": NUMBER, "treasure_score": NUMBER, "pos": POS,
            "treasures_collected": int, "total_treasure": int, "treasure_id": [int], "flash_count": int,
            "flash_cooldown_max": int, "collected_buff": int, "total_buff": int, "buff_refresh_time": int,
            "monster_interval": int, "monster_init_speed": int, "monster_speed_boost_step": int, "max_step": int,
            "step_no": int}
MAP_INFO = ("grid", 21, 21)
ENV_OBS = {
    "env_id": str,
    "frame_no": int,
    "observation": {"step_no": int, "frame_state": {"heroes": HERO, "monsters": [VIEW_MONSTER], "organs": [ORGAN]},
                    "env_info": ENV_INFO, "map_info": MAP_INFO, "legal_action": [bool]},
    "extra_info": {"frame_state": {"frame_no": int, "heroes": HERO, "monsters": [EXTRA_MONSTER], "organs": [ORGAN]},
                   "map_id": int, "result_code": int, "result_message": str},
    "terminated": bool,
    "truncated": bool,
}


def check(value, schema, path: str = "env_obs") -> None:
    """Assert that ``value`` has exactly the keys and the types of ``schema``."""
    if schema is NUMBER:
        assert type(value) in (int, float), f"{path}: {value!r} is not a number"
    elif isinstance(schema, type):
        assert type(value) is schema, f"{path}: {value!r} is a {type(value).__name__}, not a {schema.__name__}"
    elif isinstance(schema, dict):
        assert type(value) is dict, f"{path}: not a dict"
        assert set(value) == set(schema), f"{path}: keys {sorted(value)} != {sorted(schema)}"
        for key, sub in schema.items():
            check(value[key], sub, f"{path}.{key}")
    elif isinstance(schema, list):
        assert type(value) is list, f"{path}: not a list"
        for i, item in enumerate(value):
            check(item, schema[0], f"{path}[{i}]")
    else:
        _, rows, cols = schema
        assert type(value) is list and len(value) == rows, f"{path}: not {rows} rows"
        for r, row in enumerate(value):
            assert type(row) is list and len(row) == cols and all(type(v) is int and v in (0, 1) for v in row), \
                f"{path}[{r}]: not {cols} ints 0/1"


def differences(got, want, path: str = "") -> list[str]:
    """Every field where ``got`` and ``want`` differ (value, type, key set or key order); ints and floats of the same
    value count as equal (the platform's JSON writes an integral score as an int)."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = [] if list(got) == list(want) else [f"{path}: keys {list(got)} != {list(want)}"]
        for key in got.keys() & want.keys():
            out += differences(got[key], want[key], f"{path}.{key}")
        return out
    if isinstance(got, list) and isinstance(want, list):
        out = [] if len(got) == len(want) else [f"{path}: length {len(got)} != {len(want)}"]
        for i, (a, b) in enumerate(zip(got, want, strict=False)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    numbers = {type(got), type(want)} <= {int, float}
    if got != want or (type(got) is not type(want) and not numbers):
        return [f"{path}: {got!r} != {want!r}"]
    return []


# ----------------------------------------------------------------------------------------------------- helpers
def room(size: int = 41) -> GorgeMap:
    """A ``size`` x ``size`` map: road inside a one-cell obstacle border."""
    walk = np.zeros((size, size), dtype=bool)
    walk[1:-1, 1:-1] = True
    return GorgeMap(walkable=walk, name="room")


def place(game: Game, hero, monsters=(), treasures=(), buffs=()) -> Game:
    """Put the hero, monsters ``(id, cell)`` (speed 1), treasures ``(id, cell)`` and buffs ``(id, cell, visible)``."""
    game.hero = hero
    game.history = deque([(game.step_no, hero)], maxlen=game.rules.history_length)
    game.monsters = [Monster(i, c, 1, (c[0], c[1] + 1)) for i, c in monsters]
    game.treasures = [Treasure(i, c) for i, c in treasures]
    game.buffs = [Buff(i, c, v, 0 if v else 7) for i, c, v in buffs]
    return game


def new_game(game_map: GorgeMap | None = None, **conf) -> Game:
    game = Game(game_map or room())
    game.reset(GorgeConfig.from_usr_conf({"treasure_count": 0, "buff_count": 0, **conf}), np.random.default_rng(0))
    return game


def new_env(seed: int = 0, **conf) -> tuple[GorgeCompetitionEnv, dict]:
    env = GorgeCompetitionEnv({1: room(), 2: room(31)}, seed=seed, env_id="33926133")
    return env, env.reset({"env_conf": {"map": [1], **conf}})


@pytest.fixture(scope="module")
def frames_dir() -> Path:
    return gorge_maps_dir() / "platform_frames"


# -------------------------------------------------------------------------------------------------- protocol.py
def test_protocol_imports_only_the_standard_library():
    path = REPO / "sb3_realm" / "games" / "gorge" / "protocol.py"
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "protocol.py must not import relatively"
            modules.add(node.module.split(".")[0])
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules
    spec = importlib.util.spec_from_file_location("_gorge_protocol_by_path", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.distance_bucket(18, 24) == 1 and len(module.ENV_INFO_KEYS) == 17


def test_protocol_key_sets_match_the_spec_tables():
    assert set(P.ENV_OBS_KEYS) == set(ENV_OBS)
    assert set(P.OBSERVATION_KEYS) == set(ENV_OBS["observation"])
    assert set(P.EXTRA_INFO_KEYS) == set(ENV_OBS["extra_info"])
    assert set(P.VIEW_FRAME_STATE_KEYS) == set(ENV_OBS["observation"]["frame_state"])
    assert set(P.EXTRA_FRAME_STATE_KEYS) == set(ENV_OBS["extra_info"]["frame_state"])
    assert set(P.HERO_KEYS) == set(HERO)
    assert set(P.VIEW_MONSTER_KEYS) == set(VIEW_MONSTER)
    assert set(P.EXTRA_MONSTER_KEYS) == set(EXTRA_MONSTER)
    assert set(P.ORGAN_KEYS) == set(ORGAN)
    assert len(P.ENV_INFO_KEYS) == 17 and set(P.ENV_INFO_KEYS) == set(ENV_INFO)
    for gone in ("finished_steps", "map_random", "total_map", "flash_cooldown", "monster_speed"):
        assert gone not in P.ENV_INFO_KEYS
    assert (P.VIEW_SIZE, P.MAP_INFO_ROAD, P.MAP_INFO_BLOCKED) == (21, 1, 0)
    assert (P.SUB_TYPE_TREASURE, P.SUB_TYPE_BUFF, P.ORGAN_PRESENT, P.ORGAN_WAITING) == (1, 2, 1, 0)


def test_distance_bucket_is_floor_of_l2_over_30_capped_at_5():
    assert P.distance_bucket(0, 0) == 0
    assert P.distance_bucket(29, 0) == 0 and P.distance_bucket(21, 21) == 0  # 29.7
    assert P.distance_bucket(18, 24) == 1 and P.distance_bucket(-30, 0) == 1  # exactly 30
    assert P.distance_bucket(0, 59) == 1 and P.distance_bucket(36, -48) == 2  # exactly 60
    assert P.distance_bucket(149, 0) == 4 and P.distance_bucket(90, 120) == 5 and P.distance_bucket(127, 127) == 5
    with pytest.raises(ValueError, match=r"dx = 1.5"):
        P.distance_bucket(1.5, 0)


def test_relative_direction_uses_signs_only():
    table = {(0, 0): 0, (1, 0): 1, (1, -1): 2, (0, -1): 3, (-1, -1): 4, (-1, 0): 5, (-1, 1): 6, (0, 1): 7, (1, 1): 8}
    for (sx, sz), code in table.items():
        assert P.relative_direction(sx, sz) == code
        assert P.relative_direction(7 * sx, 2 * sz) == code
    assert P.relative_direction(-18, 2) == 6  # the spec's sample: SW, not W
    assert P.in_view(10, -10) and not P.in_view(11, 0) and not P.in_view(0, -11)
    assert P.legal_action_mask(0) == [True] * 16 and P.legal_action_mask(3) == [True] * 8 + [False] * 8


# --------------------------------------------------------------------------------------------------- structure
def test_env_obs_at_reset_and_step_has_the_spec_structure():
    env, obs = new_env(seed=3)
    for when in ("reset", "step"):
        check(obs, ENV_OBS)
        assert tuple(obs) == P.ENV_OBS_KEYS and tuple(obs["observation"]) == P.OBSERVATION_KEYS
        assert tuple(obs["extra_info"]) == P.EXTRA_INFO_KEYS
        assert tuple(obs["observation"]["env_info"]) == P.ENV_INFO_KEYS
        assert tuple(obs["observation"]["frame_state"]) == P.VIEW_FRAME_STATE_KEYS
        assert tuple(obs["extra_info"]["frame_state"]) == P.EXTRA_FRAME_STATE_KEYS
        assert tuple(obs["observation"]["frame_state"]["heroes"]) == P.HERO_KEYS
        for m in obs["observation"]["frame_state"]["monsters"]:
            assert tuple(m) == P.VIEW_MONSTER_KEYS
        for m in obs["extra_info"]["frame_state"]["monsters"]:
            assert tuple(m) == P.EXTRA_MONSTER_KEYS
        for o in obs["observation"]["frame_state"]["organs"] + obs["extra_info"]["frame_state"]["organs"]:
            assert tuple(o) == P.ORGAN_KEYS
        step = env.game.step_no
        assert obs["env_id"] == "33926133" and obs["frame_no"] == step == obs["observation"]["step_no"]
        assert obs["extra_info"]["frame_state"]["frame_no"] == step and obs["extra_info"]["map_id"] == 1
        assert obs["extra_info"]["result_code"] == 0
        assert obs["extra_info"]["result_message"] == ("success" if when == "reset" else "")
        assert len(obs["observation"]["legal_action"]) == 16
        info, hero = obs["observation"]["env_info"], obs["observation"]["frame_state"]["heroes"]
        assert info["pos"] == hero["pos"] and info["step_no"] == step
        assert info["step_score"] == hero["step_score"] == 1.5 * step
        assert info["treasure_score"] == hero["treasure_score"] == 100 * info["treasures_collected"]
        assert info["total_score"] == info["step_score"] + info["treasure_score"]
        assert (info["total_treasure"], info["total_buff"], info["buff_refresh_time"], info["flash_cooldown_max"],
                info["monster_init_speed"], info["monster_interval"], info["monster_speed_boost_step"],
                info["max_step"]) == (10, 2, 200, 100, 1, 300, 500, 1000)
        assert obs["extra_info"]["frame_state"]["heroes"] == hero
        ids = [o["config_id"] for o in obs["extra_info"]["frame_state"]["organs"] if o["sub_type"] == 1]
        assert info["treasure_id"] == ids
        _, obs = env.step(E)


def test_randomised_config_values_are_shown_drawn():
    _, obs = new_env(seed=5, monster_interval=-1, monster_speedup=-1)
    info = obs["observation"]["env_info"]
    assert 11 <= info["monster_interval"] <= 2000 and 1 <= info["monster_speed_boost_step"] <= 2000
    assert obs["observation"]["frame_state"]["monsters"][0]["monster_interval"] == info["monster_interval"]


# --------------------------------------------------------------------------------------------------- view, organs
def test_monsters_out_of_view_are_masked_with_bucket_and_direction_kept():
    game = place(new_game(), (20, 20), monsters=[(14, (30, 10)), (15, (9, 31))])  # cheb 10 (NE), cheb 11 (SW)
    seen, hidden = frame_state(game, view=True)["monsters"]
    assert seen == {"hero_l2_distance": 0, "hero_relative_direction": 2, "monster_id": 14, "monster_interval": 300,
                    "pos": {"x": 30, "z": 10}, "speed": 1, "is_in_view": 1}
    assert hidden == {"hero_l2_distance": 0, "hero_relative_direction": 6, "monster_id": 15, "monster_interval": 300,
                      "pos": {"x": -1, "z": -1}, "speed": -1, "is_in_view": 0}
    truth = frame_state(game, view=False)["monsters"]
    assert [m["pos"] for m in truth] == [{"x": 30, "z": 10}, {"x": 9, "z": 31}]
    assert [m["start_pos"] for m in truth] == [{"x": 30, "z": 11}, {"x": 9, "z": 32}]
    assert [m["speed"] for m in truth] == [1, 1] and all("is_in_view" not in m for m in truth)
    game.monsters[1].cell = (10, 30)  # dx = -10, dz = 10: the boundary is in view
    assert frame_state(game)["monsters"][1]["is_in_view"] == 1
    game.monsters[1].cell = (20, 35)
    game.monsters[1].speed = 2
    far = frame_state(game)["monsters"][1]
    assert (far["pos"], far["speed"], far["hero_relative_direction"]) == ({"x": -1, "z": -1}, -1, 7)


def test_organs_sorted_by_config_id_with_sub_type_and_view_filter():
    game = place(new_game(), (20, 20), treasures=[(3, (25, 20)), (1, (20, 35)), (2, (10, 10))],
                 buffs=[(5, (21, 19), False), (4, (38, 38), True)])
    truth = frame_state(game, view=False)["organs"]
    assert [(o["config_id"], o["sub_type"], o["status"]) for o in truth] == [
        (1, 1, 1), (2, 1, 1), (3, 1, 1), (4, 2, 1), (5, 2, 0)]
    assert truth[1]["hero_relative_direction"] == 4 and truth[3]["hero_l2_distance"] == 0
    seen = frame_state(game, view=True)["organs"]
    assert [o["config_id"] for o in seen] == [2, 3, 5]  # (20, 35) and (38, 38) are 15 and 18 away
    assert seen == [o for o in truth if o["config_id"] in (2, 3, 5)]
    game.treasures = []
    game.buffs = []
    assert frame_state(game)["organs"] == [] and frame_state(game, view=False)["organs"] == []


def test_map_info_is_indexed_z_then_x_around_the_hero_with_off_map_blocked():
    rows = ["......#",
            ".#....#",
            "...##..",
            "#......",
            "..#...."]
    game_map = GorgeMap(walkable=np.array([[c == "." for c in row] for row in rows]), name="drawn")
    game = place(new_game(game_map), (2, 1))
    grid = np.array(map_info(game))
    assert grid.shape == (21, 21)
    assert grid[10, 10] == 1  # the hero's cell
    assert grid[10, 9] == 0 and grid[10, 11] == 1  # west neighbour (1, 1) is an obstacle, east (3, 1) is road
    assert grid[11, 10] == 1 and grid[11, 11] == 0  # (2, 2) road, (3, 2) obstacle: the transposed reading fails
    assert grid[13, 10] == 0 and grid[12, 8] == 0  # (2, 4) and (0, 3)
    assert grid[:9].sum() == 0 and grid[:, :8].sum() == 0 and grid[14:].sum() == 0 and grid[:, 15:].sum() == 0
    window = np.zeros((21, 21), dtype=int)
    window[9:14, 8:15] = game_map.walkable  # map cell (x, z) at row z - 1 + 10, column x - 2 + 10
    assert (grid == window).all()
    game.hero = (6, 4)
    assert np.array(map_info(game))[6:11, 4:11].tolist() == game_map.walkable.astype(int).tolist()


# ------------------------------------------------------------------------------------------ actions, reward, end
def test_legal_action_after_a_flash():
    env, obs = new_env()
    assert obs["observation"]["legal_action"] == [True] * 16
    env.game.hero = (20, 20)
    env.game.monsters = []
    _, obs = env.step(8 + E)
    assert obs["observation"]["env_info"]["pos"] == {"x": 30, "z": 20}
    assert obs["observation"]["legal_action"] == [True] * 8 + [False] * 8
    assert obs["observation"]["frame_state"]["heroes"]["flash_cooldown"] == 99
    assert obs["observation"]["env_info"]["flash_count"] == 1
    env.game.flash_cooldown = 1
    _, obs = env.step(W)
    assert obs["observation"]["legal_action"] == [True] * 16


def test_reward_is_the_score_difference():
    env, _ = new_env()
    game = place(env.game, (20, 20), treasures=[(1, (21, 20)), (2, (22, 20))])
    game.monsters = []
    before = env_obs(game, env.env_id, env.map_id)["observation"]["env_info"]["total_score"]
    reward, obs = env.step(E)
    assert reward == {"env_id": "33926133", "frame_no": 1, "reward": 101.5}
    assert obs["observation"]["env_info"]["total_score"] - before == reward["reward"]
    reward, obs = env.step(N)
    assert reward["reward"] == 1.5 and reward["frame_no"] == obs["frame_no"] == 2
    assert obs["observation"]["env_info"]["treasure_id"] == [2]


def test_terminated_when_caught_before_max_step_truncated_at_max_step():
    env, _ = new_env(max_step=5)
    place(env.game, (20, 1), monsters=[(14, (20, 4))])  # north is the border: the hero stays, the monster closes in
    _, obs = env.step(N)
    assert (obs["terminated"], obs["truncated"]) == (False, False)
    _, obs = env.step(N)  # the monster reaches (20, 2): caught at step 2
    assert obs["frame_no"] == 2 and obs["terminated"] is True and obs["truncated"] is False
    env, _ = new_env(max_step=3)
    place(env.game, (20, 1), monsters=[(14, (20, 5))])  # caught exactly at step 3 = max_step
    obs = {}
    for _ in range(3):
        _, obs = env.step(N)
    assert env.game.events.caught
    assert obs["frame_no"] == 3 and obs["terminated"] is False and obs["truncated"] is True
    env, _ = new_env(max_step=2)
    env.game.monsters = []
    env.step(N)
    _, obs = env.step(N)
    assert (obs["terminated"], obs["truncated"]) == (False, True)
    with pytest.raises(ValueError, match="reset"):
        env.step(N)


# ------------------------------------------------------------------------------------------------------ the env
def test_env_map_choice_and_errors():
    env = GorgeCompetitionEnv({1: room(), 2: room(31)}, seed=1)
    order = [env.reset({"env_conf": {"map": [2, 1]}})["extra_info"]["map_id"] for _ in range(3)]
    assert order == [2, 1, 2]
    first = [GorgeCompetitionEnv({1: room(), 2: room(31)}, seed=7).reset({"env_conf": {"map": [1, 2],
                                                                                      "map_random": True}})
             for _ in range(2)]
    assert first[0] == first[1]  # the seeded generator makes every draw
    with pytest.raises(ValueError, match="env_conf"):
        env.reset({"map": [1]})
    with pytest.raises(ValueError, match="map 3"):
        env.reset({"env_conf": {"map": [3]}})
    with pytest.raises(ValueError, match="before reset"):
        GorgeCompetitionEnv({1: room()}).step(0)
    with pytest.raises(ValueError, match="folder"):
        GorgeCompetitionEnv("/nonexistent/maps")


# ------------------------------------------------------------------------------------------- platform frames
@pytest.mark.parametrize("name", ["frame_a.json", "frame_b.json"])
def test_platform_frame_rebuilds_exactly(frames_dir, name):
    frame = json.loads((frames_dir / name).read_text(encoding="utf-8"))
    check(frame, ENV_OBS)  # the spec's tables describe the real frame
    map_id = frame["extra_info"]["map_id"]
    game = rebuild_from_frame(frame, load_map(frames_dir.parent / f"gorge_chase_map_{map_id}.json"),
                              rng=np.random.default_rng(0))
    rebuilt = env_obs(game, frame["env_id"], map_id)
    check(rebuilt, ENV_OBS)
    assert differences(rebuilt, frame) == []
    # play goes on from the rebuilt state
    step = game.step_no
    game.step(N)
    assert game.step_no == step + 1 and len(game.history) == 2


def test_rebuild_rejects_a_partial_frame(frames_dir):
    frame = json.loads((frames_dir / "frame_a.json").read_text(encoding="utf-8"))
    game_map = load_map(frames_dir.parent / "gorge_chase_map_7.json")
    del frame["extra_info"]["frame_state"]["heroes"]["pos"]
    with pytest.raises(ValueError, match="pos"):
        rebuild_from_frame(frame, game_map)
    with pytest.raises(ValueError, match="GorgeMap"):
        rebuild_from_frame(frame, "gorge_chase_map_7.json")
