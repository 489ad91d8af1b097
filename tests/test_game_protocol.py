"""The platform's protocol as competition code reads it (realm-rules.md, sections 2 and 5): flat maps, the score
object, ``buff_pos`` after a pickup, the wrapped ``usr_conf``, failures that return None."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from helpers import open_map

from sb3_realm.games.realm import EpisodeConfig, Game, default_map, features
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.experts import OraclePolicy
from sb3_realm.games.realm.observation import CompetitionEnv, competition_observation
from sb3_realm.games.realm.protocol import RepeatedScalars, ScoreInfo

FLAT = 2601
LEADERBOARD = {"diy": {"start": 2, "end": 1, "treasure_random": 1, "treasure_num": 9, "talent_type": 1,
                       "max_step": 2000}}


# ------------------------------------------------------------------------------------------ a 2024-style client
class Client:
    """Reads the protocol the way 2024 competition code does (written from the spec): the four maps concatenated
    from ``list()`` into 4 x 2601 values, the hero's cell at the middle of the memory map, +100 of ``score.score``
    counted as a treasure, ``buff_pos`` null means the buff is gone, None from reset or step retried or skipped."""

    MAX_RESETS = 20

    def __init__(self, env: CompetitionEnv) -> None:
        self.env = env
        self.resets_none = 0
        self.scores_none = 0

    def reset(self, usr_conf):
        for _ in range(self.MAX_RESETS):
            obs = self.env.reset(usr_conf)
            if obs is not None:
                return obs
            self.resets_none += 1
        raise AssertionError("reset returned None too often")

    @staticmethod
    def read_maps(obs) -> tuple[list, float]:
        f = obs.feature
        maps = list(f.obstacle_map) + list(f.memory_map) + list(f.treasure_map) + list(f.end_map)
        assert len(maps) == 4 * FLAT
        return maps, f.memory_map[len(f.memory_map) // 2]

    @staticmethod
    def buff_gone(obs) -> bool:
        b = obs.feature.buff_pos
        return (b.direction, b.l2_distance, b.path_distance, b.grid_distance) == (0, 5, 5, 1.0)

    def play(self, usr_conf, choose) -> dict:
        """One episode; ``choose(obs)`` gives the action. Returns what the client measured."""
        obs = self.reset(usr_conf)
        last_score, treasure_rewards, buff_seen_gone, steps = 0, 0, [], 0
        while True:
            maps, hero_memory = self.read_maps(obs)
            assert maps[1300] == 1  # the hero stands on a free cell (obstacle map, centre)
            assert 0.0 <= hero_memory <= 1.0
            frame_no, obs, score, terminated, truncated, env_info = self.env.step(choose(obs))
            steps += 1
            assert type(terminated) is int and type(truncated) is int and terminated in (0, 1)
            assert frame_no == 3 * steps
            if score is None:
                self.scores_none += 1
            else:
                if score.score - last_score == 100:
                    treasure_rewards += 1
                else:
                    assert score.score == last_score  # the running score only moves by whole treasures
                last_score = score.score
                assert score.score == env_info.game_info.score == 100 * score.treasure_count
            buff_status = next(o.status for o in env_info.frame_state.organs if o.sub_type == 2)
            assert self.buff_gone(obs) == (buff_status == 0)
            buff_seen_gone.append(self.buff_gone(obs))
            if terminated or truncated:
                return {"treasure_rewards": treasure_rewards, "score": score, "env_info": env_info, "steps": steps,
                        "terminated": terminated, "buff_gone": buff_seen_gone}


def _oracle_client(game_map, usr_conf, seed, **env_kwargs) -> tuple[Client, dict]:
    env = CompetitionEnv(game_map, seed=seed, **env_kwargs)
    client = Client(env)
    oracle = OraclePolicy(game_map)
    config = EpisodeConfig.from_usr_conf(usr_conf["diy"])

    def choose(obs):
        if env.game.step_no == 0 and oracle._config is None:  # first call of the episode
            oracle.reset(config)
        return oracle.act(obs, env.env_info)  # the package's own oracle interface: (obs, env_info)

    return client, client.play(usr_conf, choose)


@pytest.mark.parametrize("map_kind", ["default", "real"])
def test_client_plays_the_oracle_with_its_own_rewards(map_kind, request):
    game_map = default_map() if map_kind == "default" else request.getfixturevalue("real_map")
    _client, result = _oracle_client(game_map, LEADERBOARD, seed=3)
    info = result["env_info"].game_info
    assert result["terminated"] == 1 and info.treasure_count == 9
    assert result["treasure_rewards"] == 9  # +100 of score.score at each pickup step
    score = result["score"]
    assert isinstance(score, ScoreInfo) and score.score == 900 and score.treasure_count == 9
    assert score.total_score == pytest.approx(150 + 900 + 0.2 * (2000 - result["steps"]))  # the leaderboard score
    assert score.buff_count == 1 and score.talent_count == 1
    gone = result["buff_gone"]
    assert not gone[0] and any(gone)  # the oracle takes the buff: buff_pos goes null at the pickup
    first = gone.index(True)
    assert all(gone[first:])  # and stays null (respawn is 450 steps later, after the game)


@pytest.mark.parametrize("map_kind", ["default", "real"])
def test_client_random_play_with_platform_failures(map_kind, request):
    game_map = default_map() if map_kind == "default" else request.getfixturevalue("real_map")
    env = CompetitionEnv(game_map, seed=5, fault_rate=0.25, fault_seed=1)
    client = Client(env)
    rng = np.random.default_rng(0)
    conf = {"diy": {"treasure_random": 1, "treasure_num": 13, "max_step": 150}}
    for _ in range(6):
        result = client.play(conf, lambda obs: int(rng.integers(8)) + 8 * int(obs.legal_act[1] and rng.random() < 0.01))
        assert result["steps"] <= 150
    assert client.resets_none > 0 and client.scores_none > 0  # the retry paths ran


# ------------------------------------------------------------------------------------------ flat maps
def test_repeated_scalars_behaves_like_a_protobuf_repeated_field():
    values = np.arange(10, dtype=np.int32)
    rep = RepeatedScalars(values)
    assert len(rep) == 10 and rep[3] == 3 and type(rep[3]) is int and rep[-1] == 9
    assert rep[2:5] == [2, 3, 4] and type(rep[2:5]) is list
    assert list(rep) == list(range(10)) and rep == list(range(10)) and rep != list(range(9))
    assert rep == RepeatedScalars(np.arange(10)) and 4 in rep and rep.index(7) == 7 and rep.count(1) == 1
    assert not hasattr(rep, "reshape") and not hasattr(rep, "shape") and not hasattr(rep, "dtype")
    with pytest.raises(TypeError):
        hash(rep)
    with pytest.raises(IndexError):
        rep[10]
    arr = np.asarray(rep)
    assert np.shares_memory(arr, values) and arr.dtype == np.int32  # zero-copy
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 5
    assert np.asarray(rep, dtype=np.float64).dtype == np.float64
    assert np.array(rep, copy=True).flags.writeable
    floats = RepeatedScalars(np.array([0.2, 1.0], dtype=np.float32))
    assert type(floats[0]) is float and floats[0] == pytest.approx(0.2)
    for clone in (pickle.loads(pickle.dumps(rep)), copy.deepcopy(rep)):
        assert clone == rep
    with pytest.raises(ValueError, match="flat"):
        RepeatedScalars(np.zeros((2, 2)))


def test_maps_are_flat_rows_with_the_hero_in_the_middle():
    env = CompetitionEnv(default_map(), seed=0)
    obs = env.reset()
    f = obs.feature
    for name in ("obstacle_map", "memory_map", "treasure_map", "end_map"):
        m = getattr(f, name)
        assert isinstance(m, RepeatedScalars) and len(m) == FLAT
    assert all(type(v) is int for v in f.obstacle_map[:51]) and type(f.memory_map[0]) is float
    game = env.game
    gx, gz = game.cell
    flat = np.asarray(f.obstacle_map)
    for r, c in ((0, 0), (25, 25), (10, 40), (50, 3)):
        z, x = gz - 25 + r, gx - 25 + c
        inside = 0 <= z < 128 and 0 <= x < 128
        assert flat[r * 51 + c] == int(inside and game.map.walkable[z, x])
    for _ in range(3):
        env.step(4)
    obs = env.step(0)[1]  # back: the hero's cell has been visited before
    assert obs.feature.memory_map[1300] > 0
    assert np.asarray(obs.feature.end_map).sum() <= 1


def test_features_read_the_flat_maps_as_the_windows():
    env = RealmEnv(treasure_num=9)
    env.reset(seed=1)
    for a in (0, 0, 2, 2, 1):
        env.step(a)
    obs, info = env.competition_obs()
    assert isinstance(obs.feature.obstacle_map, RepeatedScalars)
    _scalars, _relative, maps = features.arrays_from_competition(obs, info)
    assert maps.shape == features.MAP_SHAPE and np.array_equal(maps, env.game.window)
    model_input, _ = features.observation_to_model_input(obs, info)
    assert np.array_equal(model_input["vector"], env._obs()["vector"])


# ------------------------------------------------------------------------------------------ buff_pos
def _buff_game() -> Game:
    """Start one cell west of the buff (id 0), the end far away."""
    positions = [(20, 20), (35, 35), (19, 20)] + [(4 + 2 * i, 4) for i in range(13)]
    game = Game(open_map(40, grid_positions=positions))
    config = EpisodeConfig.from_usr_conf({"treasure_random": 0, "treasure_id": [], "max_step": 2000})
    game.reset(config, ())
    return game


def test_buff_pos_is_null_while_the_buff_is_taken_and_back_at_respawn():
    game = _buff_game()
    obs, _ = competition_observation(game)
    assert obs.feature.buff_pos.direction == 1 and game.relative()[2].tolist() != [0, 5, 5, 1]
    game.step(0)  # onto the buff: picked up at step 1
    assert game.events.buff
    respawn = 1 + game.rules.buff_respawn
    for _ in range(8):
        game.step(4)  # walk away west, beyond the pickup radius
    while game.step_no < respawn - 1:
        obs, info = competition_observation(game)
        buff = next(o for o in info.frame_state.organs if o.sub_type == 2)
        assert buff.status == 0
        rp = obs.feature.buff_pos
        assert (rp.direction, rp.l2_distance, rp.path_distance, rp.grid_distance) == (0, 5, 5, 1.0)
        assert game.relative()[2].tolist() == [0.0, 5.0, 5.0, 1.0]  # the env's fast path agrees
        game.step(2 if game.step_no % 2 else 6)  # pace north and south, away from the buff
    obs, info = competition_observation(game)
    assert [o.status for o in info.frame_state.organs if o.sub_type == 2] == [1]
    assert obs.feature.buff_pos.direction != 0 and game.relative()[2, 0] != 0


def test_fast_path_equals_the_competition_path_across_a_buff_pickup():
    env = RealmEnv(treasure_num=9)
    env.reset(seed=3, options={"treasure_random": 1, "treasure_num": 9})
    oracle = OraclePolicy(env.game_map)
    oracle.reset(env.game.config)
    done, buff_nulls = False, 0
    while not done:
        raw = env.raw_arrays()
        parsed = features.arrays_from_competition(*env.competition_obs())
        assert all(np.array_equal(a, b) for a, b in zip(raw, parsed, strict=True))
        buff_nulls += raw[1][2].tolist() == [0.0, 5.0, 5.0, 1.0]
        _, _, te, tr, _ = env.step(oracle.act(*env.competition_obs()))
        done = te or tr
    assert buff_nulls > 0


# ------------------------------------------------------------------------------------------ the score object
def test_step_returns_the_score_object_and_int_flags():
    env = CompetitionEnv(default_map(), seed=0)
    env.reset({"diy": {"treasure_random": 0, "treasure_id": [3], "max_step": 5}})
    for i in range(5):
        _frame_no, _obs, score, terminated, truncated, env_info = env.step(0)
        assert isinstance(score, ScoreInfo) and score.score == 0 and score.total_score == 0
        assert (terminated, truncated) == (0, int(i == 4)) and type(truncated) is int
        assert env_info.game_info.score == 0 and env_info.game_info.total_score == 0


def test_leaderboard_score_is_unchanged_by_the_protocol():
    env = RealmEnv(treasure_num=9)
    env.reset(seed=3)
    oracle = OraclePolicy(env.game_map)
    oracle.reset(env.game.config)
    done, info = False, {}
    while not done:
        _, _, te, tr, info = env.step(oracle.act(*env.competition_obs()))
        done = te or tr
    assert info["win"] and info["score"] == pytest.approx(150 + 900 + 0.2 * (2000 - info["steps"]))
    _, env_info = env.competition_obs()
    assert env_info.game_info.total_score == info["score"] and env_info.game_info.score == 900


# ------------------------------------------------------------------------------------------ usr_conf and failures
def test_usr_conf_only_in_the_wrapped_form():
    env = CompetitionEnv(default_map(), seed=0)
    with pytest.raises(ValueError, match=r"wrapped under the key 'diy'.*\{'diy': \{'treasure_num': 3\}\}"):
        env.reset({"treasure_num": 3})
    obs = env.reset({"diy": {"treasure_num": 3}})
    assert obs is not None and len(env.game.treasure_ids) == 3
    env.reset()  # no usr_conf: the leaderboard configuration
    assert len(env.game.treasure_ids) == 9 and env.game.config.max_step == 2000
    with pytest.raises(ValueError, match=r"usr_conf\['treasure_num'\] = 20 is out of range"):
        env.reset({"diy": {"treasure_num": 20}})


def test_invalid_usr_conf_returns_none_when_asked():
    env = CompetitionEnv(default_map(), seed=0, invalid_conf="none")
    assert env.reset({"treasure_num": 3}) is None  # bare: the platform times out
    assert env.reset({"diy": {"treasure_num": 20}}) is None
    assert env.reset({"diy": {"treasure_num": 2}}) is not None


def test_fault_injection_is_seeded_and_keeps_the_game_going():
    def run(seed):
        env = CompetitionEnv(default_map(), seed=0, fault_rate=0.3, fault_seed=seed)
        nones = [env.reset(LEADERBOARD) is None for _ in range(20)]
        steps, positions, scores = 0, [], []
        while env.env_info is None:
            env.reset(LEADERBOARD)
        for _ in range(40):
            _, obs, score, *_ = env.step(0)
            steps += 1
            positions.append(obs.feature.grid_pos.x)
            scores.append(score is None)
        return nones, positions, scores, env.game.step_no

    a, b = run(7), run(7)
    assert a == b  # seeded
    nones, positions, score_nones, step_no = a
    assert any(nones) and not all(nones) and any(score_nones) and not all(score_nones)
    assert step_no == 40  # a step whose score is None still applied its action
    clean = CompetitionEnv(default_map(), seed=0)
    clean.reset(LEADERBOARD)
    assert [clean.step(0)[1].feature.grid_pos.x for _ in range(40)] == positions


@pytest.mark.parametrize("kwargs, match", [
    ({"invalid_conf": "ignore"}, "invalid_conf = 'ignore'"),
    ({"fault_rate": 1.0}, r"fault_rate = 1.0; use a probability in \[0, 1\)"),
    ({"fault_rate": -0.1}, "fault_rate = -0.1"),
])
def test_failure_options_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CompetitionEnv(default_map(), **kwargs)
