"""Training callbacks: metrics and evaluation reach TensorBoard, the best model is kept by competition score, the
curriculum changes the envs' configuration, SubprocVecEnv, VecNormalize and MaskablePPO."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import realm_result
from sb3_contrib import MaskablePPO, RecurrentPPO
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack, VecNormalize
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import sb3_realm.training.eval_callback as eval_callback_module
from sb3_realm import games
from sb3_realm.agents import ModelPolicy
from sb3_realm.evaluation import EvalReport, protocol_configs
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.rewards import TERMS
from sb3_realm.training import MetricsCallback, RealmMetricsCallback
from sb3_realm.training.callbacks import CompetitionEvalCallback, CurriculumCallback
from sb3_realm.training.checkpoints import load_vecnormalize

SMALL = {"map_name": "small", "max_step": 24, "treasure_num": 2}
TINY_NET = {"net_arch": [8]}
PPO_KW = {"n_steps": 32, "batch_size": 32, "n_epochs": 1, "policy_kwargs": TINY_NET, "seed": 0, "device": "cpu"}
CONFIGS = protocol_configs("leaderboard", seed=7, games=2, treasures=2, max_step=24)


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def venv(n: int = 2, cls=DummyVecEnv, **overrides):
    return make_vec_env(RealmEnv, n_envs=n, seed=0, vec_env_cls=cls, env_kwargs={**SMALL, **overrides})


def with_logger(model, folder: Path):
    model.set_logger(configure(str(folder), ["csv"]))
    return model


def finished(win: bool = False) -> dict:
    """The final info of a Realm episode (only the keys the callbacks read)."""
    return {"score": 200.0 if win else 0.0, "win": win, "treasures": 1, "treasures_missed": [4], "steps": 10,
            "flash_used": 0, "buff_used": 1, "bumps": 2, "episode_reward_terms": dict.fromkeys(TERMS, 1.0)}


def drive(cb, model, timesteps: int, infos: list[dict], dones: list[bool]) -> None:
    """One callback step at ``timesteps`` with the given per-env infos / dones."""
    model.num_timesteps = timesteps
    cb.update_locals({"infos": infos, "dones": np.array(dones)})
    cb.on_step()


# ---------------------------------------------------------------------------------------------- TensorBoard
def test_promised_keys_reach_tensorboard(tmp_path):
    env = venv(2)
    model = PPO("MultiInputPolicy", env, tensorboard_log=str(tmp_path / "tb"), **PPO_KW)
    curriculum = CurriculumCallback([{"usr_conf": {"treasure_num": 1}, "until_step": 64},
                                     {"usr_conf": {"treasure_num": 2}}], game="realm")
    evaluation = CompetitionEvalCallback(32, CONFIGS, tmp_path / "best" / "best_model.zip", env_kwargs={
        "map_name": "small"}, json_path=tmp_path / "best" / "eval.json", replay_every=2, game="realm")
    model.learn(128, callback=[MetricsCallback(window=10, game="realm"), curriculum, evaluation])
    acc = EventAccumulator(str(next((tmp_path / "tb").iterdir())), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    scalars = set(acc.Tags()["scalars"])
    promised = {f"train_episodes/{k}" for k in ("score", "win_rate", "treasures", "steps", "flash_rate", "buff_rate",
                                                "bumps")}
    promised |= {f"train_episodes/reward_by_term/{t}" for t in TERMS}
    promised |= {"eval/score", "eval/win_rate", "eval/treasures", "eval/steps", "curriculum/phase"}
    assert promised <= scalars, sorted(promised - scalars)
    assert [e.value for e in acc.Scalars("curriculum/phase")][-1] == 1
    assert len(acc.Scalars("eval/score")) == 2  # 64 calls / eval_freq 32
    assert "eval/route" in acc.Tags()["images"]
    image = acc.Images("eval/route")[0]
    assert image.width > 100 and image.height > 100
    history = json.loads((tmp_path / "best" / "eval.json").read_text())
    assert [h["evaluation"] for h in history] == [1, 2] and history[0]["games"] == 2
    assert PPO.load(tmp_path / "best" / "best_model.zip").observation_space == model.observation_space
    assert env.get_attr("base_config")[0].treasure_num == 2


# ---------------------------------------------------------------------------------------------- best model
def fake_report(score: float) -> EvalReport:
    games = [realm_result(i, ids=tuple(c["treasure_id"]), score=score, reached_end=score > 0, treasures=1, steps=10)
             for i, c in enumerate(CONFIGS)]
    return EvalReport(policy="fake", protocol="custom", map="small", seed=0, games=games)


def test_best_model_kept_by_competition_score(tmp_path, monkeypatch):
    scores = iter([10.0, 5.0, 20.0, 20.0, 15.0])
    calls = []

    def fake_evaluate(policy, protocol, **kwargs):
        calls.append((policy, protocol, kwargs))
        return fake_report(next(scores))

    monkeypatch.setattr(eval_callback_module, "evaluate", fake_evaluate)
    model = with_logger(PPO("MultiInputPolicy", venv(1), **PPO_KW), tmp_path / "log")
    folder = tmp_path / "best"
    cb = CompetitionEvalCallback(2, CONFIGS, folder / "best_model", json_path=folder / "eval.json", batched=False,
                                 game="realm")
    cb.init_callback(model)
    kept = []
    for k in range(1, 11):
        with torch.no_grad():
            model.policy.action_net.bias[0] = float(k)  # a marker: which call's weights are in the file
        drive(cb, model, k, [{}], [False])
        if k % 2 == 0:
            kept.append(float(PPO.load(folder / "best_model.zip").policy.action_net.bias[0].detach()))
    assert kept == [2.0, 2.0, 6.0, 6.0, 6.0]  # replaced on 10 and 20 only; a tie (20 again) keeps the first
    assert cb.best_score == 20.0
    policy, protocol, kwargs = calls[0]
    assert isinstance(policy, ModelPolicy) and protocol == "custom"
    assert kwargs["yardstick"] is False and kwargs["workers"] == 1 and kwargs["max_step"] == 24
    assert kwargs["custom"] == [c["treasure_id"] for c in CONFIGS]
    history = json.loads((folder / "eval.json").read_text())
    assert [h["mean_score"] for h in history] == [10.0, 5.0, 20.0, 20.0, 15.0]
    assert [h["new_best"] for h in history] == [True, False, True, False, False]
    assert sorted(p.name for p in folder.iterdir()) == ["best_model.zip", "eval.json"]  # no temporary files left


def test_the_evaluation_plays_and_logs_what_the_games_spec_says(tmp_path, monkeypatch):
    """The held-out games are played with the protocol and arguments of the game's ``evaluate_args`` and the logged
    rate is the spec's ``success.rate``: a game that is the Realm in all but these answers gets them followed."""
    calls = []

    def fake_evaluate(policy, protocol, **kwargs):
        calls.append((protocol, kwargs))
        return fake_report(10.0)

    realm = games.get("realm")
    toy = dataclasses.replace(realm, name="toy", evaluation=dataclasses.replace(
        realm.evaluation, evaluate_args=lambda confs: {"protocol": "fixed", "max_step": 7},
        success=dataclasses.replace(realm.evaluation.success, rate="wins")))
    monkeypatch.setitem(games.GAMES, "toy", toy)
    monkeypatch.setattr(eval_callback_module, "evaluate", fake_evaluate)
    model = with_logger(PPO("MultiInputPolicy", venv(1), **PPO_KW), tmp_path / "log")
    cb = CompetitionEvalCallback(1, CONFIGS, tmp_path / "best.zip", batched=False, game="toy")
    cb.init_callback(model)
    cb.evaluate_now()
    [(protocol, kwargs)] = calls
    assert protocol == "fixed" and kwargs["max_step"] == 7 and "custom" not in kwargs and kwargs["game"] == "toy"
    logged = (tmp_path / "log" / "progress.csv").read_text().splitlines()[0].split(",")
    assert "eval/wins" in logged and "eval/win_rate" not in logged and "eval/score" in logged


def test_the_metrics_callback_keeps_its_old_name():
    assert RealmMetricsCallback is MetricsCallback
    assert MetricsCallback(game="gorge").episode_metrics is games.get("gorge").env.episode_metrics


def test_vecnormalize_statistics_used_and_saved(tmp_path):
    env = VecNormalize(venv(2), norm_obs_keys=["vector"], norm_reward=False)
    model = PPO("MultiInputPolicy", env, **PPO_KW)
    cb = CompetitionEvalCallback(32, CONFIGS[:1], tmp_path / "best_model.zip", env_kwargs={"map_name": "small"},
                                 game="realm")
    model.learn(64, callback=cb)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best_model.zip", "vecnormalize.json"]  # numbers, no pickle
    saved = load_vecnormalize(tmp_path, venv(1))
    assert saved.obs_rms["vector"].count > 1
    assert not np.allclose(saved.obs_rms["vector"].mean, 0.0)
    policy = ModelPolicy(model, model.get_env())
    raw, _ = RealmEnv(**SMALL).reset(seed=0)
    seen = policy.model_input(raw)["vector"][0]
    np.testing.assert_allclose(seen, env.normalize_obs({"vector": raw["vector"]})["vector"])
    assert not np.allclose(seen, raw["vector"])


def test_frame_stack_is_replayed_for_evaluation():
    env = VecFrameStack(venv(1), n_stack=3)
    model = PPO("MultiInputPolicy", env, **PPO_KW)
    policy = ModelPolicy(model, env)
    single = RealmEnv(**SMALL)
    obs, _ = single.reset(seed=0)
    policy.reset(single)
    first = policy.model_input(obs)
    assert first["vector"].shape == (1, 3 * obs["vector"].shape[0]) and first["maps"].shape[1] == 3 * 4
    obs2, *_ = single.step(policy.act(single, obs))
    second = policy.model_input(obs2)
    np.testing.assert_array_equal(second["vector"][0, -obs2["vector"].shape[0]:], obs2["vector"])
    assert model.observation_space["vector"].shape == first["vector"].shape[1:]


def test_eval_config_errors(tmp_path):
    with pytest.raises(ValueError, match="start 2, end 1"):
        CompetitionEvalCallback(1, [{"start": 3, "end": 1, "treasure_random": 0, "treasure_id": [4]}], tmp_path / "b",
                                game="realm")
    with pytest.raises(ValueError, match="eval_freq"):
        CompetitionEvalCallback(0, CONFIGS, tmp_path / "b", game="realm")
    with pytest.raises(ValueError, match="configs is empty"):
        CompetitionEvalCallback(1, [], tmp_path / "b", game="realm")


# ---------------------------------------------------------------------------------------------- curriculum
PHASES = [{"usr_conf": {"treasure_num": 1, "max_step": 20}, "until_step": 64},
          {"usr_conf": {"treasure_num": 2, "max_step": 25}, "until_step": 128},
          {"usr_conf": {"treasure_num": 3}}]


def confs(env) -> list[tuple[int, int, int]]:
    return [(c.treasure_num, c.max_step, c.start) for c in env.get_attr("base_config")]


def test_curriculum_advances_by_step_and_changes_the_envs(tmp_path):
    env = venv(2)
    model = with_logger(PPO("MultiInputPolicy", env, **PPO_KW), tmp_path)
    cb = CurriculumCallback(PHASES, game="realm")
    cb.init_callback(model)
    assert cb.phase == 0 and confs(env) == [(1, 20, 2)] * 2
    drive(cb, model, 63, [{}, {}], [False, False])
    assert cb.phase == 0
    drive(cb, model, 64, [{}, {}], [False, False])
    assert cb.phase == 1 and confs(env) == [(2, 25, 2)] * 2
    drive(cb, model, 500, [{}, {}], [False, False])
    assert cb.phase == 2 and confs(env) == [(3, 25, 2)] * 2  # phases build on each other: max_step stays 25
    drive(cb, model, 10_000, [{}, {}], [False, False])
    assert cb.phase == 2


def test_curriculum_advances_by_success(tmp_path):
    env = venv(2)
    model = with_logger(PPO("MultiInputPolicy", env, **PPO_KW), tmp_path)
    cb = CurriculumCallback([{"usr_conf": {"treasure_num": 1}, "until_success": 0.5}, {"usr_conf": {
        "treasure_num": 4}}], window=4, game="realm")
    cb.init_callback(model)
    drive(cb, model, 1, [finished(True), finished(True)], [True, True])  # episodes begun before the phase: skipped
    assert list(cb.recent) == []
    for k, win in enumerate([True, False, False, False]):
        drive(cb, model, 2 + k, [finished(win), {}], [True, False])
    assert cb.phase == 0 and list(cb.recent) == [1.0, 0.0, 0.0, 0.0]
    drive(cb, model, 10, [finished(True), {}], [True, False])
    assert cb.phase == 0  # 0.25
    drive(cb, model, 11, [{}, finished(True)], [False, True])
    assert cb.phase == 1 and list(cb.recent) == []  # [0, 0, 1, 1] -> 0.5
    assert [c.treasure_num for c in env.get_attr("base_config")] == [4, 4]


def test_curriculum_random_start(tmp_path):
    env = venv(2)
    model = with_logger(PPO("MultiInputPolicy", env, **PPO_KW), tmp_path)
    phase = {"usr_conf": {"treasure_random": 0, "treasure_id": [3, 4, 5], "end": 1}, "random_start": True}
    cb = CurriculumCallback([phase], seed=3, game="realm")
    cb.init_callback(model)
    seen = set()
    for k in range(40):
        for c in env.get_attr("base_config"):
            assert c.start not in (1, 3, 4, 5) and c.end == 1 and c.treasure_id == (3, 4, 5)
            seen.add(c.start)
        drive(cb, model, k, [finished(), finished()], [True, True])
    assert len(seen) > 3
    obs = env.reset()  # the envs really play from those starts
    assert obs["vector"].shape == (2, env.observation_space["vector"].shape[0])


def test_curriculum_state_dict_round_trip(tmp_path):
    env = venv(2)
    model = with_logger(PPO("MultiInputPolicy", env, **PPO_KW), tmp_path)
    cb = CurriculumCallback(PHASES, game="realm")
    cb.init_callback(model)
    drive(cb, model, 100, [{}, {}], [False, False])
    state = json.loads(json.dumps(cb.state_dict()))  # checkpoints store it as JSON
    assert state["phase"] == 1
    env2 = venv(2)
    model2 = with_logger(PPO("MultiInputPolicy", env2, **PPO_KW), tmp_path)
    restored = CurriculumCallback(PHASES, game="realm")
    restored.load_state_dict(state)  # before training, as train.py does on resume
    restored.init_callback(model2)
    assert restored.phase == 1 and confs(env2) == [(2, 25, 2)] * 2
    restored.load_state_dict({**state, "phase": 2})  # after: applied at once
    assert confs(env2) == [(3, 25, 2)] * 2
    with pytest.raises(ValueError, match=r"'phase' must be an integer in 0..2"):
        restored.load_state_dict({"phase": 3})


@pytest.mark.parametrize("phases, kwargs, match", [
    ([], {}, "non-empty list"),
    ([{"usr_conf": {}, "until": 5}], {}, r"unknown key 'until'; valid keys are \['usr_conf', 'until_step'"),
    ([{"usr_conf": {"tresure_num": 1}}], {}, "unknown key 'tresure_num'; valid keys are"),
    ([{"until_step": 5, "until_success": 0.5}, {}], {}, "both"),
    ([{"usr_conf": {}}, {"usr_conf": {}}], {}, "phase 0 is not the last"),
    ([{"until_success": 1.5}, {}], {}, "until_success"),
    ([{"until_step": -1}, {}], {}, "until_step"),
    ([{"random_start": "yes"}], {}, "random_start"),
    ([{}], {"metric": "reward"}, "metric = 'reward'; choose one of"),
    ([{}], {"window": 0}, "window"),
])
def test_bad_phases_raise(phases, kwargs, match):
    with pytest.raises(ValueError, match=match):
        CurriculumCallback(phases, **kwargs, game="realm")


def test_bad_phase_values_raise_when_training_starts(tmp_path):
    model = with_logger(PPO("MultiInputPolicy", venv(1), **PPO_KW), tmp_path)
    cb = CurriculumCallback([{"usr_conf": {"treasure_num": 1}, "until_step": 5}, {"usr_conf": {"treasure_num": 20}}],
                            game="realm")
    with pytest.raises(ValueError, match=r"curriculum phase 1: usr_conf\['treasure_num'\] = 20 is out of range"):
        cb.init_callback(model)


# ---------------------------------------------------------------------------------------------- vec envs, algos
@pytest.mark.processes
def test_metrics_with_subproc_vecnormalize(tmp_path):
    env = VecNormalize(venv(2, SubprocVecEnv, max_step=10), norm_obs_keys=["vector"])
    try:
        model = with_logger(PPO("MultiInputPolicy", env, **PPO_KW), tmp_path)
        cb = MetricsCallback(window=50, game="realm")
        model.learn(64, callback=cb)
    finally:
        env.close()
    assert len(cb.episodes) >= 6  # 32 steps per env, episodes of at most 10 steps
    assert all(e["steps"] <= 10 and set(e) >= {f"reward_by_term/{t}" for t in TERMS} for e in cb.episodes)
    rows = (tmp_path / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    last = dict(zip(header, rows[-1].split(","), strict=True))
    assert float(last["train_episodes/steps"]) == pytest.approx(np.mean([e["steps"] for e in cb.episodes]))


def test_maskable_evaluation_respects_masks(tmp_path, monkeypatch):
    model = MaskablePPO("MultiInputPolicy", venv(1), learning_rate=0.0, **PPO_KW)
    with torch.no_grad():  # the network prefers a flash (action 8) everywhere, legal or not
        model.policy.action_net.weight.zero_()
        model.policy.action_net.bias.zero_()
        model.policy.action_net.bias[8] = 10.0
    played = {"illegal": 0, "flash_masked": 0}
    original = RealmEnv.step

    def checked_step(self, action):
        mask = self.action_masks()
        played["illegal"] += int(not mask[int(action)])
        played["flash_masked"] += int(not mask[8])
        return original(self, action)

    monkeypatch.setattr(RealmEnv, "step", checked_step)
    cb = CompetitionEvalCallback(16, CONFIGS, tmp_path / "best_model.zip", env_kwargs={"map_name": "small"},
                                 game="realm")
    model.learn(32, callback=cb)
    assert cb.n_evals == 2 and played["illegal"] == 0 and played["flash_masked"] > 20
    # control: without the mask the same network would play the illegal flash
    env = RealmEnv(**SMALL)
    obs, _ = env.reset(seed=0)
    env.step(8)
    assert not env.action_masks()[8] and int(model.predict(obs, deterministic=True)[0]) == 8
    assert ModelPolicy(model).act(env, obs) != 8


def test_recurrent_policy_carries_its_state():
    model = RecurrentPPO("MultiInputLstmPolicy", venv(1), n_steps=32, batch_size=32, policy_kwargs={
        "net_arch": [8], "lstm_hidden_size": 8}, device="cpu", seed=0)
    policy = ModelPolicy(model)
    env = RealmEnv(**SMALL)
    obs, _ = env.reset(seed=0)
    policy.reset(env)
    policy.act(env, obs)
    state = policy._state
    assert state is not None and not policy._start[0]
    policy.act(env, obs)
    assert not np.allclose(state[0], policy._state[0])  # the LSTM state moves on
    policy.reset(env)
    assert policy._state is None and policy._start[0]


@pytest.mark.parametrize("cls", [PPO, MaskablePPO, RecurrentPPO])
def test_batched_evaluation_is_the_sequential_one(tmp_path, cls):
    """The held-out games played side by side in one process give exactly what one game at a time gives."""
    configs = protocol_configs("leaderboard", seed=3, games=6, treasures=2, max_step=40)
    policy = "MultiInputLstmPolicy" if cls is RecurrentPPO else "MultiInputPolicy"
    model = with_logger(cls(policy, venv(2), **PPO_KW), tmp_path)
    entries = []
    for batched in (True, False):
        cb = CompetitionEvalCallback(1, configs, tmp_path / f"{batched}.zip", env_kwargs={"map_name": "small"},
                                     batched=batched, game="realm")
        cb.init_callback(model)
        assert cb._plays_batched() is batched
        entries.append({k: v for k, v in cb.evaluate_now().items() if k != "wall_s"})
    assert entries[0] == entries[1]
    assert entries[0]["games"] == 6


def test_frame_stacked_models_are_evaluated_one_game_at_a_time(tmp_path):
    model = with_logger(PPO("MultiInputPolicy", VecFrameStack(venv(1), n_stack=2), **PPO_KW), tmp_path)
    cb = CompetitionEvalCallback(1, CONFIGS, tmp_path / "best.zip", env_kwargs={"map_name": "small"}, game="realm")
    cb.init_callback(model)
    assert not cb._plays_batched()
    assert cb.evaluate_now()["games"] == len(CONFIGS)
