"""Every bad input raises a clear error that names the value and the fix, and leaves nothing broken."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sb3_realm.games.realm import EpisodeConfig, MapError, Rules, load_map, map_from_dict, small_map
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.rewards import RewardWeights


@pytest.mark.parametrize(
    "conf, match",
    [
        ({"start": 0}, r"'start'.*0.*1\.\.15"),
        ({"start": 16}, r"'start'.*16.*1\.\.15"),
        ({"end": 2}, r"'end'.*equals.*'start'"),
        ({"end": "1"}, r"'end'.*integer"),
        ({"treasure_random": 2}, r"'treasure_random'.*2.*0\.\.1"),
        ({"treasure_num": 14}, r"'treasure_num'.*14.*0\.\.13"),
        ({"treasure_num": -1}, r"'treasure_num'.*-1"),
        ({"treasure_random": 0, "treasure_id": [3, 3]}, r"'treasure_id'.*duplicates"),
        ({"treasure_random": 0, "treasure_id": [1, 3]}, r"'treasure_id'.*\[1\].*start/end"),
        ({"treasure_random": 0, "treasure_id": [16]}, r"'treasure_id'.*16.*1\.\.15"),
        ({"treasure_random": 0, "treasure_id": 5}, r"'treasure_id'.*list"),
        ({"talent_type": 2}, r"'talent_type'.*2.*must be 1"),
        ({"max_step": 0}, r"'max_step'.*0.*1\.\.2000"),
        ({"max_step": 2001}, r"'max_step'.*2001.*1\.\.2000"),
        ({"max_step": 10.5}, r"'max_step'.*integer"),
        ({"maxstep": 10}, r"unknown usr_conf keys \['maxstep'\].*valid keys"),
    ],
)
def test_usr_conf_validation(conf, match):
    with pytest.raises(ValueError, match=match):
        EpisodeConfig.from_usr_conf(conf)


def test_usr_conf_accepts_competition_wrapping_and_draws_from_pool():
    conf = EpisodeConfig.from_usr_conf({"diy": {"start": 3, "end": 4, "treasure_num": 13}})
    assert conf.treasure_pool() == [i for i in range(1, 16) if i not in (3, 4)]
    drawn = conf.draw_treasures(np.random.default_rng(0))
    assert sorted(drawn) == conf.treasure_pool()


def test_bad_reset_options_leave_env_usable():
    env = RealmEnv(map_name="small")
    env.reset(seed=0)
    env.step(0)
    before = (env.game.x, env.game.z, env.game.step_no)
    with pytest.raises(ValueError, match="treasure_num"):
        env.reset(options={"treasure_num": 99})
    assert (env.game.x, env.game.z, env.game.step_no) == before
    env.step(0)  # the running episode continues
    assert env.game.step_no == 2


def test_bad_action_in_env():
    env = RealmEnv(map_name="small")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"0\.\.15.*16"):
        env.step(16)
    env.step(np.int64(3))
    env.step(np.array(2))
    assert env.game.step_no == 2


def test_step_before_reset_and_after_end():
    env = RealmEnv(map_name="small", max_step=1)
    with pytest.raises(RuntimeError, match="before reset"):
        env.step(0)
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


def test_bad_env_arguments():
    with pytest.raises(ValueError, match="unknown usr_conf keys"):
        RealmEnv(map_name="small", treasure_number=3)
    with pytest.raises(ValueError, match="unknown reward weight keys \\['tresure'\\]"):
        RealmEnv(map_name="small", reward_weights={"tresure": 1.0})
    with pytest.raises(ValueError, match=r"RewardWeights.step must be a finite number"):
        RewardWeights(step=float("nan"))
    with pytest.raises(ValueError, match="unknown rules keys \\['speed'\\]"):
        RealmEnv(map_name="small", rules={"speed": 3})
    with pytest.raises(ValueError, match=r"map_name='tiny'.*default.*small"):
        RealmEnv(map_name="tiny")
    with pytest.raises(ValueError, match="render_mode='human'"):
        RealmEnv(map_name="small", render_mode="human")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"move_speed": 0}, "move_speed must be a positive number"),
        ({"substep": 600.0}, "substep must be <= 500"),
        ({"flash_cooldown": -1}, "flash_cooldown must be a non-negative integer"),
        ({"unready_flash": "ignore"}, "unready_flash must be 'move' or 'error'"),
        ({"l2_bucket_edges": (1, 2, 3)}, "4 increasing thresholds"),
    ],
)
def test_rules_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Rules(**kwargs)


def good_map_dict() -> dict:
    return small_map().to_dict()


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: d.pop("Flags"), "missing key 'Flags'"),
        (lambda d: d.pop("Width"), "missing key 'Width'"),
        (lambda d: d.update(CellWidth=400), "CellWidth is 400"),
        (lambda d: d.update(Flags=d["Flags"][:-1]), "Flags has 1023 values, expected Width\\*Height = 1024"),
        (lambda d: d.update(Flags=[2, *d["Flags"][1:]]), "only 0 \\(obstacle\\) and 1"),
        (lambda d: d.update(Width=200), "each must be in 8..128"),
        (lambda d: d.pop("positions_world_xz"), "no 'positions_world_xz'"),
        (lambda d: d["positions_world_xz"].pop("7"), "exactly the ids 0..15"),
        (lambda d: d["positions_world_xz"].update({"3": [-2000, -5000]}), "position 3 .* is an obstacle"),
        (lambda d: d["positions_world_xz"].update({"3": [90000, 0]}), "position 3 .* outside"),
        (lambda d: d["positions_world_xz"].update({"3": d["positions_world_xz"]["4"]}), "16 different cells"),
        (lambda d: d["positions_world_xz"].update({"3": ["a", 1]}), "position 3 x must be an integer"),
    ],
)
def test_malformed_map(mutate, match):
    data = good_map_dict()
    mutate(data)
    with pytest.raises(MapError, match=match):
        map_from_dict(data)


def test_unreachable_position_is_rejected():
    data = good_map_dict()
    flags = np.array(data["Flags"]).reshape(32, 32)
    flags[2:6, 2:6] = 0  # wall in the start position (4, 4) with a ring
    flags[3, 3] = 1  # except a walkable hole without exit
    flags[4, 4] = 1
    flags[3, 4] = flags[4, 3] = 1
    data["Flags"] = flags.ravel().tolist()
    with pytest.raises(MapError, match="not connected"):
        map_from_dict(data)


def test_map_file_errors(tmp_path):
    with pytest.raises(MapError, match="does not exist"):
        load_map(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(MapError, match="not valid JSON"):
        load_map(bad)
    ok = tmp_path / "ok.json"
    data = good_map_dict()
    positions = data.pop("positions_world_xz")
    ok.write_text(json.dumps(data), encoding="utf-8")
    assert load_map(ok, positions=positions).bfs_between(2, 1) > 0
