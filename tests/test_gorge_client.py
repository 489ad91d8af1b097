"""A client written against the platform's interface, in the shape of the official baseline's code (a feature
preprocessor that reads ``env_obs`` by the platform's key names, an episode runner that resets with a ``usr_conf``,
steps until ``terminated`` or ``truncated`` and reads the score from ``env_info``), plays full episodes on every open
map through :class:`~sb3_realm.games.gorge.observation.GorgeCompetitionEnv`, which it never imports beyond the
constructor: what runs here runs on the platform's env and back."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import gorge_maps_dir

from sb3_realm.games.gorge.observation import GorgeCompetitionEnv

MAP_SIZE = 128.0


def _unit(value: float, top: float) -> float:
    return min(max(float(value), 0.0), top) / top


class Preprocessor:
    """Reads one ``env_obs`` as a baseline feature processor does: the hero (a dict), the monsters (a list, masked
    out of view), the local map, the legal actions and the progress; the reward shaped on the nearest seen monster."""

    def __init__(self) -> None:
        self.last_nearest = 1.0

    def feature_process(self, env_obs: dict) -> tuple[np.ndarray, list[int], float]:
        observation = env_obs["observation"]
        frame_state, env_info = observation["frame_state"], observation["env_info"]
        map_info, legal = observation["map_info"], observation["legal_action"]
        hero = frame_state["heroes"]
        hx, hz = hero["pos"]["x"], hero["pos"]["z"]
        feature = [_unit(hx, MAP_SIZE), _unit(hz, MAP_SIZE), _unit(hero["flash_cooldown"], 2000.0),
                   _unit(hero["buff_remaining_time"], 50.0)]
        nearest = 1.0
        for i in range(2):
            monsters = frame_state.get("monsters", [])
            if i < len(monsters) and monsters[i].get("is_in_view", 0):
                m = monsters[i]
                d = math.hypot(hx - m["pos"]["x"], hz - m["pos"]["z"])
                nearest = min(nearest, _unit(d, MAP_SIZE * 1.41))
                feature += [1.0, _unit(m["pos"]["x"], MAP_SIZE), _unit(m["pos"]["z"], MAP_SIZE),
                            _unit(m.get("speed", 1), 5.0), _unit(d, MAP_SIZE * 1.41)]
            else:
                feature += [0.0, 0.0, 0.0, 0.0, 1.0]
        centre = len(map_info) // 2
        feature += [float(map_info[r][c] != 0) for r in range(centre - 2, centre + 2)
                    for c in range(centre - 2, centre + 2)]
        feature += [_unit(observation["step_no"], env_info.get("max_step", 200))]
        reward = 0.01 + 0.1 * (nearest - self.last_nearest)
        self.last_nearest = nearest
        return np.asarray(feature, dtype=np.float32), [int(bool(a)) for a in legal], reward


def choose(env_obs: dict, legal: list[int], rng: np.random.Generator) -> int:
    """Move away from the nearest monster in view along a legal move (flash when it is next to the hero), else a
    random legal move: enough to play episodes of some length."""
    frame_state = env_obs["observation"]["frame_state"]
    hero = frame_state["heroes"]["pos"]
    seen = [m["pos"] for m in frame_state["monsters"] if m.get("is_in_view")]
    moves = [a for a in range(8) if legal[a]]
    if not seen:
        return int(rng.choice(moves))
    m = min(seen, key=lambda p: (p["x"] - hero["x"]) ** 2 + (p["z"] - hero["z"]) ** 2)
    dx, dz = np.sign(hero["x"] - m["x"]), np.sign(hero["z"] - m["z"])
    directions = [(1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1), (0, 1), (1, 1)]
    away = [a for a in moves if directions[a] == (dx, dz)] or moves
    if max(abs(m["x"] - hero["x"]), abs(m["z"] - hero["z"])) <= 2 and legal[8 + away[0]]:
        return 8 + away[0]
    return int(away[0] if rng.random() < 0.7 else rng.choice(moves))


def run_episode(env, usr_conf: dict, rng: np.random.Generator) -> dict:
    """One episode as the baseline's episode runner plays it; returns what it logs at the end."""
    env_obs = env.reset(usr_conf)
    assert env_obs is not None and env_obs["extra_info"]["result_code"] == 0
    pre = Preprocessor()
    feature, legal, _ = pre.feature_process(env_obs)
    done, step, total_reward = False, 0, 0.0
    while not done:
        assert feature.shape == (31,) and np.all((0.0 <= feature) & (feature <= 1.0))
        assert len(legal) == 16 and sum(legal[:8]) == 8
        env_reward, env_obs = env.step(choose(env_obs, legal, rng))
        assert env_obs["extra_info"]["result_code"] == 0 and env_reward["frame_no"] == env_obs["frame_no"]
        terminated, truncated = env_obs["terminated"], env_obs["truncated"]
        step += 1
        done = terminated or truncated
        feature, legal, reward = pre.feature_process(env_obs)
        total_reward += reward
    env_info = env_obs["observation"]["env_info"]
    return {"steps": step, "terminated": terminated, "truncated": truncated, "score": env_info["total_score"],
            "step_score": env_info["step_score"], "treasures": env_info["treasures_collected"],
            "map_id": env_obs["extra_info"]["map_id"], "max_step": env_info["max_step"], "reward": total_reward}


@pytest.fixture(scope="module")
def env() -> GorgeCompetitionEnv:
    return GorgeCompetitionEnv(gorge_maps_dir(), seed=0)


@pytest.mark.parametrize("map_id", range(1, 11))
def test_a_baseline_style_client_plays_full_episodes_on_every_open_map(env, map_id):
    rng = np.random.default_rng(map_id)
    conf = {"env_conf": {"map": [map_id], "map_random": False, "max_step": 1000}}
    for _ in range(2):
        end = run_episode(env, conf, rng)
        assert end["map_id"] == map_id and 1 <= end["steps"] <= 1000
        assert end["terminated"] != end["truncated"]  # caught, or the step limit
        assert end["truncated"] == (end["steps"] == 1000)
        assert end["step_score"] == pytest.approx(1.5 * end["steps"])
        assert end["score"] == pytest.approx(1.5 * end["steps"] + 100 * end["treasures"])
        assert math.isfinite(end["reward"])


def test_the_step_limit_ends_an_episode_truncated(env):
    conf = {"env_conf": {"map": [3], "max_step": 6}}  # monster 1 starts 10 cells away: it cannot catch in 6 steps
    end = run_episode(env, conf, np.random.default_rng(0))
    assert (end["steps"], end["terminated"], end["truncated"], end["max_step"]) == (6, False, True, 6)
