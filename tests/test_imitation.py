"""Imitation: expert datasets (round trip, shards, refusals), behaviour cloning (PPO, MaskablePPO with masks), DAgger
(learner-visited states labelled by the expert), the imitate run (outputs, resume, errors) and its models in eval,
replay and build-submission."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from helpers import realm_result

import sb3_realm.imitation.dagger as dagger_module
from sb3_realm import games
from sb3_realm.evaluation import GameResult
from sb3_realm.games.realm import features
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.rules import EpisodeConfig
from sb3_realm.imitation import (
    Block,
    Collector,
    DatasetError,
    ExpertDataset,
    ExpertSpec,
    action_accuracy,
    fit,
    fit_sequences,
    imitate,
    load_imitate_config,
)
from sb3_realm.imitation.bc import episode_bounds
from sb3_realm.imitation.config import ImitationConfig, SelectionConfig, read_run_config
from sb3_realm.imitation.dataset import decode_maps, encode_maps
from sb3_realm.models.algorithms import algorithm_class
from sb3_realm.training.config import load_config
from sb3_realm.training.run import build_model, make_vec_env

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
SMALL_ENV = {"map_name": "small", "map_path": None, "rules": {}, "reward_weights": {}, "mask_wall_moves": False}
FOVEA = ["algo.extractor=fovea", "algo.extractor_kwargs={features_dim: 64}", "algo.policy_kwargs={normalize_images: "
         "false}", "algo.net_arch={pi: [64], vf: [32]}"]
QUICK = ["env.map_name=small", "env.usr_conf={treasure_num: 2, max_step: 200}", "eval_games=3", "torch_threads=1",
         "imitation.expert_games=8", "imitation.rounds=1", "imitation.dagger_games=4", "imitation.epochs=2",
         "imitation.dagger_epochs=1", "imitation.workers=1", "imitation.screen_games=6", "imitation.dagger_overrun=60",
         *FOVEA]


def small_games(n: int, seed: int = 0, treasures: int = 2) -> list[tuple[int, dict]]:
    return [(seed + i, {"treasure_random": 1, "treasure_num": treasures, "max_step": 200}) for i in range(n)]


#: batch sizes here are small: one thread is fastest, and never spins against other processes for the cores
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def expert_block() -> Block:
    with Collector(1) as collector:
        return collector.run(SMALL_ENV, small_games(30)).block


def small_model(algo: str = "ppo", extra: tuple = ()):
    config = load_config(None, [f"algo.name={algo}", "env.map_name=small", "env.n_envs=1", *FOVEA, *extra])
    return build_model(config, make_vec_env(config.env, seed=0, game=config.game))


# ------------------------------------------------------------------------------------------ datasets
def test_maps_round_trip_compactly(expert_block):
    env = RealmEnv(map_name="small")
    obs, _ = env.reset(seed=1)
    maps = np.stack([obs["maps"]] * 3)
    bits, memory = encode_maps(maps)
    assert bits.shape == (3, 3, 326) and memory.shape == (3, 2601)
    assert np.array_equal(decode_maps(bits, memory), maps)
    # bytes a state: bits 978 + memory 2601 + vector 864 + action 1 + mask 16 + start 1 (the observation: 11,268)
    assert expert_block.nbytes / len(expert_block) == 4461
    bad = maps.copy()
    bad[0, 0, 0, 0] = 7
    with pytest.raises(DatasetError, match="only 0 and 255"):
        encode_maps(bad)


def test_dataset_round_trips_and_grows_by_shards(expert_block, tmp_path):
    ds = ExpertDataset.create(tmp_path / "ds", expert="oracle", map_name="small")
    half = len(expert_block) // 2
    first = Block(*(getattr(expert_block, k)[:half] for k in ("bits", "memory", "vector", "actions", "masks",
                                                              "starts")))
    second = Block(*(getattr(expert_block, k)[half:] for k in ("bits", "memory", "vector", "actions", "masks",
                                                               "starts")))
    ds.append(first, "expert")
    ds.append(second, "dagger round 1")
    again = ExpertDataset.open(tmp_path / "ds")
    assert again.states == len(expert_block) and [s["source"] for s in again.meta["shards"]] == ["expert",
                                                                                                "dagger round 1"]
    assert again.feature_version == features.FEATURE_VERSION
    loaded = again.all()
    assert len(loaded) == len(expert_block) and len(loaded.blocks) == 2
    whole = Block.concatenate(loaded.blocks)
    for name in ("bits", "memory", "vector", "actions", "masks", "starts"):
        assert np.array_equal(getattr(whole, name), getattr(expert_block, name)), name
    idx = np.array([0, 5, half - 1, half, len(expert_block) - 1])  # across the two shards
    batch = loaded.gather(idx)
    assert np.array_equal(batch.actions, expert_block.actions[idx])
    obs = batch.observations()
    assert obs["maps"].dtype == np.uint8 and obs["maps"].shape == (5, *features.MAP_SHAPE)
    assert np.array_equal(obs["maps"], expert_block.observations(idx)["maps"])
    again.truncate(1)
    assert ExpertDataset.open(tmp_path / "ds").states == half and not (tmp_path / "ds" / "shard-00001.npz").exists()
    assert not list((tmp_path / "ds").glob(".*.tmp"))


def test_the_expert_breaks_ties_as_configured(expert_block):
    """``tie_break`` reaches the oracle in the collector (in this process, so its cached expert too): other labels
    in some states, the same won games."""
    with Collector(1) as collector:
        heading = collector.run(SMALL_ENV, small_games(30), expert=ExpertSpec("oracle", tie_break="heading"))
        index = collector.run(SMALL_ENV, small_games(30))
    assert all(g.won for g in heading.games)
    assert np.array_equal(index.block.actions, expert_block.actions)  # the default: the lowest action
    n = min(len(heading.block), len(index.block))
    assert np.mean(heading.block.actions[:n] != index.block.actions[:n]) > 0.05


def test_dataset_refuses_damage_and_mismatches(expert_block, tmp_path):
    ds = ExpertDataset.create(tmp_path / "ds", expert="oracle", map_name="small")
    ds.append(expert_block, "expert")
    model = small_model()
    ds.check_compatible(model.observation_space, model.action_space.n, features.FEATURE_VERSION)
    with pytest.raises(DatasetError, match="features version 2, the model uses version 1"):
        ds.check_compatible(model.observation_space, model.action_space.n, "1")
    stacked = spaces.Dict({"maps": spaces.Box(0, 255, (8, 51, 51), np.uint8),
                           "vector": spaces.Box(-1, 1, (432,), np.float32)})
    with pytest.raises(DatasetError, match="observation layout"):
        ds.check_compatible(stacked, 16, features.FEATURE_VERSION)
    shard = tmp_path / "ds" / "shard-00000.npz"
    shard.write_bytes(shard.read_bytes()[:1000])  # truncated
    with pytest.raises(DatasetError, match="damaged or truncated"):
        ExpertDataset.open(tmp_path / "ds").all()
    with pytest.raises(DatasetError, match=r"no meta.json"):
        ExpertDataset.open(tmp_path / "nothing")
    with pytest.raises(DatasetError, match="already holds a dataset"):
        ExpertDataset.create(tmp_path / "ds", expert="oracle", map_name="small")


# ------------------------------------------------------------------------------------------ behaviour cloning
def test_bc_lowers_the_loss_and_matches_the_expert(expert_block):
    torch.manual_seed(0)
    model = small_model()
    before = action_accuracy(model.policy, expert_block)
    losses = []
    stats = fit(model.policy, expert_block, epochs=100, batch_size=64, learning_rate=3e-3,
                on_update=lambda update, loss, acc: losses.append(loss))
    after = action_accuracy(model.policy, expert_block)
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])
    assert after > 0.95 and after > before + 0.3, (before, after)
    assert stats.updates == 100 * int(np.ceil(len(expert_block) / 64))
    # the cloned model plays the expert's game: deterministic predict = the expert's action on most states
    obs = expert_block.observations(np.arange(len(expert_block)))
    actions, _ = model.predict(obs, deterministic=True)
    assert np.mean(actions == expert_block.actions) > 0.9


def test_maskable_ppo_clones_with_the_mask(expert_block):
    torch.manual_seed(0)
    model = small_model("maskable_ppo")
    assert (~expert_block.masks).any()  # flashes are masked after the first one
    fit(model.policy, expert_block, epochs=100, batch_size=64, learning_rate=3e-3, masked=True)
    assert action_accuracy(model.policy, expert_block, masked=True) > 0.9
    idx = np.flatnonzero(~expert_block.masks[:, 8])[:50]
    obs = {k: torch.as_tensor(v) for k, v in expert_block.observations(idx).items()}
    with torch.no_grad():
        probs = model.policy.get_distribution(obs, action_masks=expert_block.masks[idx]).distribution.probs
    assert float(probs[:, 8:].sum()) == 0.0  # masked actions have no probability, as in training


LSTM = ("algo.policy_kwargs={normalize_images: false, lstm_hidden_size: 64}",)


@torch.no_grad()
def _episode_accuracy(policy, block: Block) -> float:
    """Share of the states where the recurrent policy, run over each whole episode from a zero state, picks the
    expert's action."""
    hits = 0
    for first, end in episode_bounds(block):
        obs = {k: torch.as_tensor(v) for k, v in block.observations(np.arange(first, end)).items()}
        zeros = torch.zeros(policy.lstm_hidden_state_shape)
        dist, _ = policy.get_distribution(obs, (zeros, zeros.clone()), torch.zeros(end - first))
        hits += int((dist.distribution.probs.argmax(dim=1).numpy() == block.actions[first:end]).sum())
    return hits / len(block)


def test_recurrent_ppo_clones_whole_episodes(expert_block):
    torch.manual_seed(0)
    model = small_model("recurrent_ppo", LSTM)
    before = _episode_accuracy(model.policy, expert_block)
    losses = []
    stats = fit_sequences(model.policy, expert_block, epochs=100, batch_size=64, window=16, learning_rate=3e-3,
                          on_update=lambda update, loss, acc: losses.append(loss))
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])
    after = _episode_accuracy(model.policy, expert_block)
    assert after > 0.95 and after > before + 0.3, (before, after)
    assert stats.samples == 100 * len(expert_block)
    # predict, step by step with the LSTM state as SB3 carries it, gives the same actions on the first episode
    first, end = episode_bounds(expert_block)[0]
    state, start, acted = None, np.ones(1, dtype=bool), []
    for i in range(first, end):
        obs = expert_block.observations(np.arange(i, i + 1))
        action, state = model.predict(obs, state=state, episode_start=start, deterministic=True)
        acted.append(int(action[0]))
        start = np.zeros(1, dtype=bool)
    assert np.mean(np.array(acted) == expert_block.actions[first:end]) > 0.9


def test_batched_play_of_a_recurrent_model_is_the_evaluation(tmp_path):
    from sb3_realm.evaluation import evaluate, protocol_configs
    from sb3_realm.evaluation.batched import play_games

    torch.manual_seed(1)
    model = small_model("recurrent_ppo", LSTM)
    model.save(tmp_path / "lstm.zip")
    report = evaluate(str(tmp_path / "lstm.zip"), games=5, max_step=60, yardstick=False, seed=4,
                      env_kwargs={"map_name": "small"})
    confs = protocol_configs("leaderboard", seed=4, games=5, max_step=60)
    played = play_games(model.policy, {"map_name": "small"}, [(4 * 1_000_003 + i, c) for i, c in enumerate(confs)],
                        batch=2, game="realm")  # slots reused: each new game must start from a zero LSTM state
    assert [(g.score, g.steps, g.treasures, g.missed) for g in report.games] == \
        [(g.score, g.steps, g.treasures, g.missed) for g in played]


# ------------------------------------------------------------------------------------------ DAgger
def test_dagger_labels_the_states_the_learner_visits(expert_block, tmp_path):
    model = small_model()  # untrained: it wanders where the expert never goes
    path = tmp_path / "learner.zip"
    model.save(path)
    with Collector(1) as collector:
        learner = collector.run(SMALL_ENV, small_games(3, seed=100), learner=str(path), beta=0.0)
        expert = collector.run(SMALL_ENV, small_games(3, seed=100))
    assert all(g.expert_steps == 0 for g in learner.games)
    assert all(g.expert_steps == g.steps for g in expert.games)
    assert len(learner.block) > len(expert.block)  # the learner loses time; every visited state is labelled
    # the labels are the expert's own answers in those states, not the learner's actions
    env = RealmEnv(map_name="small")
    assert learner.block.actions.max() < 16 and learner.block.starts.sum() == 3
    vectors = {v.tobytes() for v in expert.block.vector}
    assert sum(v.tobytes() not in vectors for v in learner.block.vector) > len(learner.block) // 2
    del env


def test_a_dagger_game_stops_past_the_experts_plan(tmp_path):
    from sb3_realm.games.realm.experts.adapter import OracleAdapter

    model = small_model()  # untrained: it never finishes
    path = tmp_path / "learner.zip"
    model.save(path)
    games = small_games(2, seed=100)
    with Collector(1) as collector:
        cut = collector.run(SMALL_ENV, games, learner=str(path), beta=0.0, overrun=30).games
    env = RealmEnv(map_name="small")
    for (seed, conf), game in zip(games, cut, strict=True):
        obs, _ = env.reset(seed=seed, options=conf)
        oracle = OracleAdapter(env)
        oracle.reset(env)
        oracle.act(env, obs)
        assert game.cut and game.steps == oracle.planned_steps + 30
        # a cut game's result names the treasures left, as play_games does: it is not won
        assert set(game.missed) <= set(game.treasure_ids) and not game.won and not game.reached_end
        assert game.treasures + len(game.missed) == len(game.treasure_ids)


def test_the_expert_takes_over_a_game_the_learner_overruns(tmp_path):
    """``takeover``: where a game would be cut, the oracle plays it to the end instead, and those states are
    labelled like the rest (the way out of the learner's loop)."""
    model = small_model()  # untrained: it never finishes
    path = tmp_path / "learner.zip"
    model.save(path)
    games = small_games(2, seed=100)
    with Collector(1) as collector:
        cut = collector.run(SMALL_ENV, games, learner=str(path), beta=0.0, overrun=30)
        taken = collector.run(SMALL_ENV, games, learner=str(path), beta=0.0, overrun=30, takeover=True)
    for short, game in zip(cut.games, taken.games, strict=True):
        assert short.cut and not short.taken_over
        assert game.taken_over == short.steps and not game.cut
        assert game.won  # the oracle finishes what the learner could not
        assert game.expert_steps == game.steps - game.taken_over
    # the same learner states first, then the expert's way to the end
    assert len(taken.block) == sum(g.steps for g in taken.games) > len(cut.block)
    first = cut.games[0].steps
    np.testing.assert_array_equal(taken.block.vector[:first], cut.block.vector[:first])
    np.testing.assert_array_equal(taken.block.actions[:first], cut.block.actions[:first])


def test_a_set_labelled_again_replays_the_refined_expert_s_first_search(tmp_path, monkeypatch):
    """The refined expert's first search of a game is a function of its ``SearchKey``: the collector keeps those its
    jobs made (the expert's own games of the sweep's sets too) and a later game of the same set replays it, with the
    labels of searching afresh and one search fewer; another beam setting is another search."""
    from sb3_realm.games.realm.experts import refine as refine_module

    model = small_model()  # untrained: it leaves the refined sequence at once, so later searches follow
    path = tmp_path / "learner.zip"
    model.save(path)
    games = [(100 + i, {"treasure_random": 0, "treasure_num": 2, "treasure_id": ids, "max_step": 200})
             for i, ids in enumerate(([3, 4], [5, 9]))]
    steps = []
    real = refine_module.refine
    monkeypatch.setattr(refine_module, "refine", lambda oracle, step, *a, **k: steps.append(step) or
                        real(oracle, step, *a, **k))
    settings = (("beam_width", 3), ("max_refines", 3))
    expert = ExpertSpec("oracle-refined", refine=settings)
    kwargs = {"expert": expert, "learner": str(path), "beta": 0.0, "max_steps": 80}
    with Collector(1) as collector:
        afresh = collector.run(SMALL_ENV, games, **kwargs)
    searched, steps[:] = list(steps), []
    assert searched.count(0) == 2 and len(searched) > 2 and len(afresh.searches) == 2

    with Collector(1) as collector:
        reference = collector.play_expert(SMALL_ENV, games, expert)
        assert steps == [0, 0] and all(g.reached_end for g in reference)  # one search a game: the expert follows it
        steps[:] = []
        again = collector.run(SMALL_ENV, games, **kwargs)
        assert steps == [s for s in searched if s != 0] and again.searches == {}
        assert again.games == afresh.games
        for name in ("bits", "memory", "vector", "actions", "masks", "starts"):
            np.testing.assert_array_equal(getattr(again.block, name), getattr(afresh.block, name))
        steps[:] = []
        other = ExpertSpec("oracle-refined", refine=(("beam_width", 4), ("max_refines", 3)))
        collector.run(SMALL_ENV, games, **{**kwargs, "expert": other})
        assert steps.count(0) == 2


def test_batched_play_is_the_evaluation(run):
    """``play_games`` plays the same games as ``evaluate`` (same sets, env seeds, deterministic actions)."""
    from sb3_realm.agents import SB3Policy
    from sb3_realm.evaluation import evaluate, protocol_configs
    from sb3_realm.evaluation.batched import play_games

    policy = SB3Policy(run / "final_model.zip")
    report = evaluate(policy, games=5, max_step=120, yardstick=False, seed=4, env_kwargs={"map_name": "small"})
    confs = protocol_configs("leaderboard", seed=4, games=5, max_step=120)
    played = play_games(policy.model.policy, {"map_name": "small"}, [(4 * 1_000_003 + i, c) for i, c in
                                                                      enumerate(confs)], batch=2, game="realm")
    assert [(g.score, g.steps, g.treasures, g.missed) for g in report.games] == \
        [(g.score, g.steps, g.treasures, g.missed) for g in played]


@contextlib.contextmanager
def _imitation(tmp_path, *overrides):
    """An imitation run (``dagger.Imitation``) on the QUICK config with ``overrides``, closed afterwards."""
    from sb3_realm.imitation.dagger import Imitation

    run = Imitation(load_imitate_config(None, [*QUICK, *overrides, f"out={json.dumps(str(tmp_path))}"]), tmp_path)
    try:
        yield run
    finally:
        run.close()


def result(index: int, *, reached_end: bool = True, missed: tuple = (), ids: tuple = (3, 5), score: float = 1.0,
           steps: int = 99) -> GameResult:
    """A game's result as the batched player returns it."""
    return realm_result(index, ids=tuple(ids), score=score, reached_end=reached_end, missed=tuple(missed), steps=steps)


SMALL_USR = EpisodeConfig.from_usr_conf({"treasure_num": 2, "max_step": 200})


def selection(**kw):
    from sb3_realm.imitation import SelectionConfig

    config = SelectionConfig(**kw)
    config.validate()
    return config


def test_screening_puts_the_unfinished_games_among_the_dagger_games(run, tmp_path):
    from sb3_realm.evaluation.batched import play_games
    from sb3_realm.imitation.selection import training_games

    model = algorithm_class("ppo").load(run / "final_model.zip")
    with _imitation(tmp_path, "imitation.screen_games=10", "imitation.dagger_games=4") as imitation:
        config = imitation.config
        chosen = imitation.dagger_games(model, 1)
        stats = dict(imitation.stats)
    pool = training_games(config, 1, 10)
    played = play_games(model.policy, imitation.env_kwargs, pool, max_steps=config.imitation.dagger_max_steps,
                        game="realm")
    lost = [game for game, p in zip(pool, played, strict=True) if not p.reached_end]
    assert stats == {"screen_games": 10, "screen_reached_end": 10 - len(lost)}
    assert len(chosen) == 4 and all(game in pool for game in chosen)
    assert all(game in chosen for game in lost[:4])


def test_fill_from_screening_puts_the_unfinished_ones_after_the_labelled_then_a_random_rest():
    from sb3_realm.imitation.selection import fill_from_screening

    pool = small_games(8, seed=50)
    played = [result(i, reached_end=i not in (2, 6)) for i in range(8)]
    labelled = small_games(1, seed=900)
    chosen = fill_from_screening(labelled, pool, played, dagger_games=4, seed=0, round_no=1)
    assert chosen[0] == labelled[0] and pool[2] in chosen and pool[6] in chosen and len(chosen) == 4
    rest = [g for g in chosen[1:] if g not in (pool[2], pool[6])]
    assert chosen[1:] == sorted(chosen[1:], key=pool.index)  # in pool order
    assert fill_from_screening(labelled, pool, played, dagger_games=4, seed=0, round_no=1) == chosen
    others = {tuple(g[0] for g in fill_from_screening(labelled, pool, played, dagger_games=4, seed=0, round_no=r))
              for r in range(1, 8)}
    assert len(others) > 1 and len(rest) == 1  # the random rest is drawn from (seed, round)
    assert fill_from_screening(small_games(5), pool, played, dagger_games=4, seed=0, round_no=1) == small_games(4)


def test_the_sweep_holds_every_set_of_the_leaderboard_count_once():
    from math import comb

    from sb3_realm.imitation.selection import sweep_games

    games = sweep_games(selection(games="sweep", other_sets=5), SMALL_USR, [2, 2, 0, 3, 13], eval_seed=12345)
    sets = [tuple(conf["treasure_id"]) for _, conf in games]
    assert len(set(sets)) == len(sets)  # each set once
    assert len({seed for seed, _ in games}) == len(games)
    by_count = {k: [s for s in sets if len(s) == k] for k in range(14)}
    assert len(by_count[2]) == comb(13, 2) and sets[:comb(13, 2)] == by_count[2]  # env.usr_conf's count, first
    assert by_count[0] == [()] and by_count[13] == [tuple(range(3, 16))]
    assert (3, 4, 5) in by_count[3] and 1 < len(by_count[3]) <= 6  # the fixed set and up to 5 random ones
    assert not any(by_count[k] for k in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))
    assert all(conf["treasure_random"] == 0 and conf["max_step"] == 200 for _, conf in games)
    assert sweep_games(selection(), SMALL_USR, [2, 3], eval_seed=12345) == []  # held_out: no sweep


def test_all_sets_holds_every_set_of_every_count():
    from math import comb

    from sb3_realm.imitation.selection import sweep_games

    games = sweep_games(selection(games="all_sets", other_sets=1), SMALL_USR, [2, 0, 3, 11], eval_seed=12345)
    sets = [tuple(conf["treasure_id"]) for _, conf in games]
    assert len(set(sets)) == len(sets) and len({seed for seed, _ in games}) == len(games)
    assert len(sets) == comb(13, 2) + 1 + comb(13, 3) + comb(13, 11)
    assert sets[:comb(13, 2)] == [s for s in sets if len(s) == 2]  # env.usr_conf's count first, as without it
    assert set(sets) == {c for k in (2, 0, 3, 11) for c in itertools.combinations(range(3, 16), k)}
    assert sets[comb(13, 2) + 1] == (3, 4, 5)  # each other count begins with its fixed set


def test_all_sets_labels_the_main_count_first_then_a_sample_of_the_other_unfinished_games():
    from sb3_realm.imitation.selection import sweep_games, sweep_labels

    config = selection(games="all_sets")
    games = sweep_games(config, SMALL_USR, [2, 1, 3], eval_seed=12345)
    lost = {0, 5, 77, *range(78, 78 + 13), *range(100, 140)}  # 3 of count 2, 53 of counts 1 and 3
    swept = [(g, result(i, reached_end=i not in lost, ids=g[1]["treasure_id"])) for i, g in enumerate(games)]
    first, again, other_round = (sweep_labels(config, swept, SMALL_USR, dagger_games=6, seed=0, round_no=r)[0]
                                 for r in (1, 1, 2))
    assert first[:3] == [games[0], games[5], games[77]]  # the main count's unfinished games, in order
    assert len(first) == 6 and all(games.index(g) in lost for g in first)
    assert [games.index(g) for g in first[3:]] != [78, 79, 80]  # not the first lost ones: a random sample
    assert again == first and other_round[:3] == first[:3] and other_round[3:] != first[3:]  # drawn from (seed, round)


def test_the_sweep_never_holds_the_start_or_end_id():
    from sb3_realm.imitation.selection import sweep_games

    usr = EpisodeConfig.from_usr_conf({"treasure_num": 2, "max_step": 200, "start": 3, "end": 15})
    games = sweep_games(selection(games="sweep"), usr, [2, 4], eval_seed=12345)
    assert sum(len(conf["treasure_id"]) == 2 for _, conf in games) == 78  # C(13, 2) of the ids other than 3 and 15
    assert [1, 2, 4, 5] in [conf["treasure_id"] for _, conf in games]  # the fixed set: the pool's first four ids
    for _, conf in games:
        assert not {3, 15} & set(conf["treasure_id"])
        assert EpisodeConfig.from_usr_conf(conf).start == 3  # a valid game of this config


def test_the_kept_round_loses_fewest_sweep_games_then_scores_best():
    from sb3_realm.imitation.selection import keep_key

    swept = [result(0, ids=(3, 5), score=10.0), result(1, ids=(3, 5), reached_end=False, score=0.0),
             result(2, ids=(3, 5), missed=(5,), score=4.0), result(3, ids=(4,), reached_end=False, score=0.0)]
    # a game is lost unless won with every treasure: the loop and the game that left a treasure behind count
    assert keep_key(selection(games="sweep"), 0.0, swept, SMALL_USR) == (-3, pytest.approx(14 / 3))
    assert keep_key(selection(games="sweep", keep="fewest_lost_leaderboard"), 0.0, swept, SMALL_USR)[0] == -2
    assert keep_key(selection(), 7.5, None, SMALL_USR) == (7.5,)  # without the sweep: the held-out mean


def test_the_labels_follow_selection_label_in_its_order():
    from sb3_realm.imitation.selection import sweep_labels

    games = small_games(10, seed=300)
    swept = [(g, result(i, reached_end=i != 6, missed=(5,) if i in (2, 9) else ())) for i, g in enumerate(games)]
    only_loops, stats = sweep_labels(selection(games="sweep"), swept, SMALL_USR, dagger_games=4, seed=0, round_no=1)
    assert only_loops == [games[6]] and stats == {"sweep_lost_labelled": 1}  # a treasure left: lost, not labelled
    both, stats = sweep_labels(selection(games="sweep", label=["unfinished", "treasure_left"]), swept, SMALL_USR,
                               dagger_games=4, seed=0, round_no=1)
    assert both == [games[6], games[2], games[9]] and stats == {"sweep_lost_labelled": 3}
    slow = [games[4], games[1], games[0]]
    labelled, stats = sweep_labels(selection(games="sweep", label=["unfinished", "slow"], slow_games=2), swept,
                                   SMALL_USR, dagger_games=2, seed=0, round_no=1, slow=slow)
    assert labelled == [games[6], games[4], games[1]]  # the caller cuts at dagger_games; the counts say what fits
    assert stats == {"sweep_lost_labelled": 1, "sweep_slow_labelled": 1}


def test_slow_games_are_the_won_leaderboard_sets_slowest_first_past_the_margin():
    from sb3_realm.imitation.selection import slow_games

    ids = [(3, 5), (3, 6), (4,), (3, 7), (4, 8), (5, 9)]  # (4,) is another count: never slow
    games = [(400 + i, {"treasure_random": 0, "treasure_num": len(s), "treasure_id": list(s)}) for i, s in
             enumerate(ids)]
    steps = [105, 101, 150, 120, 100, 130]
    won = [True, True, True, True, True, False]  # the last is lost: labelled as lost, never as slow
    swept = [(g, result(i, ids=ids[i], steps=steps[i], reached_end=won[i])) for i, g in enumerate(games)]
    reference = [100, 100, 100, 100, 100]  # the expert's steps on the five leaderboard-count sets, in sweep order
    chosen, stats = slow_games(swept, reference, SMALL_USR, margin=2)
    assert chosen == [games[3], games[0]]  # 20 and 5 steps over; 1 and 0 are under the margin
    assert stats == {"sweep_steps_over_expert": pytest.approx((5 + 1 + 20 + 0) / 4), "sweep_slow": 2}


def test_the_sweep_s_unfinished_games_are_labelled_first_in_a_run(run, tmp_path):
    model = algorithm_class("ppo").load(run / "final_model.zip")
    with _imitation(tmp_path, "imitation.selection={games: sweep, other_sets: 2}", "imitation.screen_games=0",
                    "imitation.treasure_counts=[2, 1]", "imitation.dagger_games=5") as imitation:
        chosen = imitation.dagger_games(model, 1)
        swept = imitation.swept
        games = imitation.sweep_games()
        stats = dict(imitation.stats)
    lost = [game for game, g in zip(games, swept, strict=True) if not g.reached_end]
    assert len(swept) == len(games) and len(chosen) == 5
    assert chosen[:len(lost[:5])] == lost[:5]  # the sweep's unfinished games first, the rest fresh training games
    assert stats["sweep_lost_labelled"] == min(5, len(lost))


def test_a_round_filled_by_labelled_sweep_games_skips_the_screening(run, tmp_path):
    model = algorithm_class("ppo").load(run / "final_model.zip")
    with _imitation(tmp_path, "imitation.selection={games: sweep, other_sets: 2}", "imitation.screen_games=10",
                    "imitation.treasure_counts=[2, 1]", "imitation.dagger_games=3") as imitation:
        games = imitation.sweep_games()
        imitation.swept = [result(i, reached_end=i % 2 == 0) for i in range(len(games))]  # every other one: > 3
        filled = imitation.dagger_games(model, 1)
        filled_stats, imitation.stats = dict(imitation.stats), {}
        imitation.swept = [result(i, reached_end=i != 4) for i in range(len(games))]  # one: screening fills 2
        screened = imitation.dagger_games(model, 1)
        screened_stats = dict(imitation.stats)
    assert filled == [games[1], games[3], games[5]]
    assert filled_stats == {"sweep_lost_labelled": 3}  # no screening played
    assert screened[0] == games[4] and len(screened) == 3
    assert screened_stats["sweep_lost_labelled"] == 1 and screened_stats["screen_games"] == 10


def test_a_run_labels_the_won_games_that_lose_most_steps_to_the_expert(run, tmp_path):
    from sb3_realm.agents import load_policy, play_episode

    model = algorithm_class("ppo").load(run / "final_model.zip")
    with _imitation(tmp_path, "imitation.selection={games: sweep, other_sets: 2, label: [unfinished, slow], "
                    "slow_games: 2, slow_margin: 2}", "imitation.screen_games=0", "imitation.treasure_counts=[2, 1]",
                    "imitation.dagger_games=4") as imitation:
        games = imitation.sweep_games()
        main = [i for i, (_, conf) in enumerate(games) if len(conf["treasure_id"]) == 2]
        env = RealmEnv(**imitation.env_kwargs)
        oracle = load_policy("oracle", env)
        steps = {i: play_episode(env, oracle, *games[i])["steps"] for i in main}
        over = {3: 5, 10: 2, 20: 1, 30: 9}  # 20: under the margin; 30: 9 steps slower, but lost
        imitation.swept = [result(i, reached_end=i not in (7, 30), ids=games[i][1]["treasure_id"],
                                  steps=steps.get(i, 99) + over.get(i, 0)) for i in range(len(games))]
        chosen = imitation.dagger_games(model, 1)
        reference = list(imitation.state.reference["steps"])
        stats, imitation.stats = dict(imitation.stats), {}
        imitation.swept[10] = result(10, ids=games[10][1]["treasure_id"], steps=steps[10] + 12)  # now the slowest
        again = imitation.dagger_games(model, 1)  # the oracle's games are not played again
    assert reference == [steps[i] for i in main]  # the expert's (oracle's) own games of the main count's sets
    assert chosen[:4] == [games[7], games[30], games[3], games[10]]  # the lost games, then the slowest won ones
    assert stats == {"sweep_lost_labelled": 2, "sweep_slow_labelled": 2, "sweep_slow": 2,
                     "sweep_steps_over_expert": pytest.approx(8 / (len(main) - 2))}
    assert again[2:4] == [games[10], games[3]]


def test_a_resumed_run_keeps_the_expert_s_reference_games(tmp_path, monkeypatch):
    """The expert's games of the sweep's sets are played once per run: the checkpoint keeps them, so a resume with
    the same expert does not play them again (15 min for ``oracle-refined`` on the real map); another expert, tie rule
    or beam setting does."""
    quick = [*QUICK, "imitation.selection={games: sweep, other_sets: 2, label: [unfinished, slow], slow_games: 3}",
             "imitation.treasure_counts=[2, 1]", "imitation.rounds=1"]
    imitate(load_imitate_config(None, [*quick, f"out={json.dumps(str(tmp_path / 'run'))}"]))
    played = []
    real = Collector.play_expert

    def counting(self, env_kwargs, games, expert):
        played.append((expert.kind, expert.tie_break, len(games)))
        return real(self, env_kwargs, games, expert)

    monkeypatch.setattr(Collector, "play_expert", counting)
    imitate(read_run_config(tmp_path / "run", ["imitation.rounds=2"]), resume=tmp_path / "run")
    assert played == []
    imitate(read_run_config(tmp_path / "run", ["imitation.rounds=3", "imitation.tie_break=heading"]),
            resume=tmp_path / "run")
    assert [p[:2] for p in played] == [("oracle", "heading")]
    # the refined expert's beam settings are part of what its games are kept for
    refined = ["imitation.expert=oracle-refined", "imitation.refine_max_refines=2"]
    for rounds, changes in ((4, refined), (5, [*refined, "imitation.refine_beam_width=4"])):
        imitate(read_run_config(tmp_path / "run", [f"imitation.rounds={rounds}", *changes]), resume=tmp_path / "run")
    assert [p[:2] for p in played] == [("oracle", "heading")] + [("oracle-refined", "heading")] * 2
    history = json.loads((tmp_path / "run" / "eval.json").read_text(encoding="utf-8"))["history"]
    assert [e["round"] for e in history] == [0, 1, 2, 3, 4, 5]
    assert all("sweep_steps_over_expert" in e for e in history[1:])


def test_a_run_written_with_the_old_selection_flags_resumes(tmp_path):
    """A run whose config.yaml and checkpoint history hold the seven flags and the old eval.json names (from before
    imitation.selection) resumes: its config is converted on load to the section that plays the same games, and its
    records to the new names."""
    import yaml

    run = tmp_path / "run"
    imitate(load_imitate_config(None, [*QUICK, "imitation.selection={games: sweep, other_sets: 2}",
                                       "imitation.treasure_counts=[2, 1]", "imitation.rounds=0",
                                       f"out={json.dumps(str(run))}"]))
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    del config["imitation"]["selection"]
    config["imitation"].update(sweep=True, sweep_other=2, sweep_all=False, sweep_label_left=False,
                               sweep_label_slow=0, sweep_slow_margin=1, select_lost="all")
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    for state_file in (run / "checkpoints").glob("*/state.json"):
        saved = json.loads(state_file.read_text(encoding="utf-8"))
        for record in saved["imitation"]["history"]:  # the old names: eval_wins counted the games reaching the end
            record["eval_full_wins"], record["eval_wins"] = record.pop("eval_wins"), record.pop("eval_reached_end")
        state_file.write_text(json.dumps(saved), encoding="utf-8")
    resumed = read_run_config(run, ["imitation.rounds=1"])
    assert resumed.imitation.selection == selection(games="sweep", other_sets=2)
    before = json.loads((run / "eval.json").read_text(encoding="utf-8"))["history"]
    imitate(resumed, resume=run)
    history = json.loads((run / "eval.json").read_text(encoding="utf-8"))["history"]
    assert [h["round"] for h in history] == [0, 1] and history[:1] == before
    assert "sweep_lost" in history[1] and "eval_full_wins" not in history[0]


def test_the_refine_settings_reach_the_expert_that_labels_and_name_its_data(tmp_path):
    """``imitation.refine_*`` set the beam search of the expert that labels the states, and the dataset names that
    expert; a resume that switches expert names the new one on the shards it labels."""
    from sb3_realm.games.realm.experts.refine import RefinedOraclePolicy
    from sb3_realm.imitation import collect

    run = tmp_path / "run"
    config = load_imitate_config(None, [*QUICK, "imitation.expert=oracle-refined", "imitation.refine_beam_width=3",
                                        "imitation.refine_max_refines=1", f"out={json.dumps(str(run))}"])
    imitate(config)
    expert = collect._CACHE["expert"].oracle  # imitation.workers=1: the games were labelled in this process
    assert isinstance(expert, RefinedOraclePolicy)
    assert (expert.beam_width, expert.max_refines, expert._refines) == (3, 1, 1)
    meta = json.loads((run / "dataset" / "meta.json").read_text(encoding="utf-8"))
    assert meta["expert"] == "oracle-refined (beam_width 3, max_refines 1)"
    assert len(meta["shards"]) == 2 and not any("expert" in shard for shard in meta["shards"])

    imitate(read_run_config(run, ["imitation.rounds=2", "imitation.expert=oracle", "imitation.refine_beam_width=10",
                                  "imitation.refine_max_refines=4"]), resume=run)
    assert not isinstance(collect._CACHE["expert"].oracle, RefinedOraclePolicy)
    meta = json.loads((run / "dataset" / "meta.json").read_text(encoding="utf-8"))
    assert meta["expert"] == "oracle-refined (beam_width 3, max_refines 1)"
    assert [shard.get("expert") for shard in meta["shards"]] == [None, None, "oracle"]


def test_a_swept_run_keeps_the_round_that_loses_fewest_sweep_games(tmp_path):
    config = load_imitate_config(None, [*QUICK, "imitation.selection={games: sweep, other_sets: 2}",
                                        "imitation.rounds=2", "imitation.treasure_counts=[2, 1]",
                                        f"out={json.dumps(str(tmp_path / 'run'))}"])
    imitate(config)
    report = json.loads((tmp_path / "run" / "eval.json").read_text(encoding="utf-8"))
    history = report["history"]
    assert [e["sweep_games"] for e in history] == [history[0]["sweep_games"]] * 3
    keys = [(-e["sweep_lost"], e["sweep_mean_score"], e["round"]) for e in history]
    assert report["best_round"] == max(keys)[2]
    assert all("sweep_lost_labelled" in e for e in history[1:])


def test_collection_runs_in_spawned_workers(monkeypatch):
    monkeypatch.setenv("SB3_REALM_START_METHOD", "spawn")
    with Collector(2) as collector:
        parallel = collector.run(SMALL_ENV, small_games(4, seed=7))
    with Collector(1) as collector:
        serial = collector.run(SMALL_ENV, small_games(4, seed=7))
    assert len(parallel.block) == len(serial.block)
    assert sorted(g.seed for g in parallel.games) == [7, 8, 9, 10]


@pytest.mark.processes
def test_the_pool_plays_the_learner_s_games_as_this_process_does(run, monkeypatch):
    """``Collector.play`` (the screening, held-out and sweep games of a run, shared out over spawned workers) gives
    the summaries ``play_games`` gives in this process, in the order of the games."""
    from sb3_realm.evaluation.batched import play_games

    monkeypatch.setenv("SB3_REALM_START_METHOD", "spawn")
    model = algorithm_class("ppo").load(run / "final_model.zip")
    games = small_games(7, seed=11)
    serial = play_games(model.policy, SMALL_ENV, games, max_steps=40, game="realm")
    with Collector(2) as collector:
        parallel = collector.play(model, "ppo", SMALL_ENV, games, max_steps=40, game="realm")
    assert parallel == serial
    assert [g.seed for g in parallel] == [seed for seed, _ in games]


# ------------------------------------------------------------------------------------------ the imitate run
@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("imitate") / "run"
    config = load_imitate_config(None, [*QUICK, f"out={json.dumps(str(out))}"])
    _model, run_dir = imitate(config)
    return run_dir


def test_imitate_writes_a_complete_run(run):
    names = {p.name for p in run.iterdir()}
    assert {"config.yaml", "dataset", "checkpoints", "tb", "eval.json", "best_model.zip", "final_model.zip"} <= names
    report = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    history = report["history"]
    assert [h["round"] for h in history] == [0, 1] and history[1]["states"] > history[0]["states"]
    assert history[1]["screen_games"] == 6 and 0 <= history[1]["screen_reached_end"] <= 6
    assert all(0 <= h["eval_wins"] <= h["eval_reached_end"] <= h["eval_games"] for h in history)
    assert report["best_mean_score"] == max(h["eval_mean_score"] for h in history)
    assert (run / "final_model.zip").read_bytes() == (run / "best_model.zip").read_bytes()
    ds = ExpertDataset.open(run / "dataset")
    assert [s["source"].split(" (")[0] for s in ds.meta["shards"]] == ["expert", "dagger round 1"]
    assert any(p.name.startswith("events") for p in (run / "tb").rglob("*"))
    model = algorithm_class("ppo").load(run / "final_model.zip")  # the plain SB3 class
    assert model.feature_version == features.FEATURE_VERSION


def test_a_cloned_model_works_in_eval_replay_and_build_submission(run, tmp_path):
    from sb3_realm.evaluation import evaluate, replay
    from sb3_realm.export import build_submission, check_submission

    model = run / "final_model.zip"
    report = evaluate(str(model), games=2, max_step=100, yardstick=False, env_kwargs={"map_name": "small"})
    assert len(report.games) == 2
    assert Path(replay(str(model), tmp_path / "ep.gif", usr_conf={"max_step": 50}, seed=1)["gif"]).is_file()
    build_submission(model, tmp_path / "sub")
    result = check_submission(tmp_path / "sub", model, games=2, min_states=200, max_step=100)
    assert result["ok"] and result["identical_actions"]


def test_resume_continues_rounds_and_drops_a_killed_rounds_shard(run, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    ds = ExpertDataset.open(copy / "dataset")
    ds.append(ds.shard(0), "a round killed before its checkpoint")  # must not survive the resume
    out = subprocess.run([*CLI, "imitate", "--resume", str(copy), "--set", "imitation.rounds=2", "--no-progress"],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((copy / "eval.json").read_text(encoding="utf-8"))
    assert [h["round"] for h in report["history"]] == [0, 1, 2]
    sources = [s["source"] for s in ExpertDataset.open(copy / "dataset").meta["shards"]]
    assert len(sources) == 3 and sources[2].startswith("dagger round 2")


def test_resume_with_a_damaged_shard_is_refused_before_anything_is_written(run, tmp_path):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    shard = copy / "dataset" / ExpertDataset.open(copy / "dataset").meta["shards"][0]["file"]
    shard.write_bytes(shard.read_bytes()[:-100])  # cut short, as a full disk or a bad copy leaves it
    before = {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    out = subprocess.run([*CLI, "imitate", "--resume", str(copy), "--set", "imitation.rounds=2", "--no-progress"],
                         capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 2 and f"shard {shard.name} is damaged" in out.stderr and "Traceback" not in out.stderr
    assert {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("extra, match", [
    (["imitation.expert=nobody"], "imitation.expert = 'nobody' is neither 'oracle', 'oracle-refined' nor an "
                                 "existing SB3 checkpoint"),
    (["imitation.rounds=-1"], "imitation.rounds = -1 must be >= 0"),
    (["imitation.treasure_counts=[3, 14]"], "each count must be an integer in 0..13"),
    (["algo.name=recurrent_ppo", "imitation.window=0"], "imitation.window = 0 must be >= 1"),
    (["imitation.epochs=0"], "imitation.epochs = 0 must be >= 1"),
    (["imitation.tie_break=sideways"], "imitation.tie_break = 'sideways'; use one of ['index', 'heading']"),
    (["imitation.dagger_takeover=maybe"], "imitation.dagger_takeover = 'maybe' has the wrong type; expected bool"),
    (["imitation.selection={games: some}"], "imitation.selection.games = 'some'; use one of ['held_out'"),
    (["imitation.selection={games: sweep, slow_margin: 0}"], "imitation.selection.slow_margin = 0 must be >= 1"),
    (["imitation.selection={games: sweep, label: [loops]}"], "imitation.selection.label = ['loops']; list each of"),
    (["imitation.selection={games: sweep, label: [slow, slow]}"], "list each of ['unfinished', 'treasure_left', "
                                                                  "'slow'] at most once"),
    (["imitation.selection={games: sweep, keep: best}"], "imitation.selection.keep = 'best'; use one of"),
    (["imitation.selection={keep: fewest_lost_leaderboard}"], "imitation.selection.keep = 'fewest_lost_leaderboard' "
                                                              "acts on the sweep, but imitation.selection.games = "
                                                              "'held_out' plays none"),
    (["imitation.selection={games: sweep, sweep: 2}"], "unknown config keys ['imitation.selection.sweep']"),
    # the seven flags that selection replaced: one line with the section to write
    (["imitation.sweep=true", "imitation.sweep_label_slow=40"], "imitation.sweep, imitation.sweep_label_slow were "
                                                                "replaced by one section, imitation.selection; write "
                                                                "instead: imitation: {selection: {games: sweep, label: "
                                                                "[unfinished, slow], slow_games: 40, keep: "
                                                                "fewest_lost}}"),
    (["imitation.select_lost=main"], "imitation.select_lost were replaced by one section, imitation.selection; write "
                                     "instead: imitation: {selection: {games: held_out}}"),
])
def test_bad_config_is_refused_before_anything_is_written(tmp_path, extra, match):
    out = tmp_path / "run"
    res = subprocess.run([*CLI, "imitate", *[a for kv in QUICK for a in ("--set", kv)], "--out", str(out),
                          *[a for kv in extra for a in ("--set", kv)]], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and match in res.stderr and "Traceback" not in res.stderr, res.stderr[-2000:]
    assert not out.exists()


def test_imitate_clones_a_recurrent_policy_with_dagger(tmp_path):
    config = load_imitate_config(None, [*QUICK, "algo.name=recurrent_ppo", *LSTM, "imitation.window=16",
                                f"out={json.dumps(str(tmp_path / 'lstm'))}"])
    model, run_dir = imitate(config)
    assert type(model).__name__ == "RecurrentPPO"
    history = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))["history"]
    assert [h["round"] for h in history] == [0, 1] and history[1]["new_states"] > 0
    assert history[1]["screen_games"] == 6  # the recurrent learner was screened by the batched player
    reloaded = algorithm_class("recurrent_ppo").load(run_dir / "final_model.zip")
    for key, value in model.policy.state_dict().items():
        assert torch.equal(reloaded.policy.state_dict()[key], value), key


def test_unwritable_output_and_existing_runs(run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    res = subprocess.run([*CLI, "imitate", *[a for kv in QUICK for a in ("--set", kv)], "--out",
                          str(blocker / "run")], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and str(blocker) in res.stderr and "Traceback" not in res.stderr, res.stderr[-2000:]
    res = subprocess.run([*CLI, "imitate", *[a for kv in QUICK for a in ("--set", kv)], "--out", str(run)],
                         capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and "already holds a run" in res.stderr
    res = subprocess.run([*CLI, "imitate", "--resume", str(tmp_path)], capture_output=True, text=True, cwd=REPO)
    assert res.returncode == 2 and "no config.yaml there" in res.stderr


def _marked(mark: str) -> list[int]:
    pids = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if mark.encode() in environ.read_bytes():
                pids.append(int(environ.parent.name))
        except OSError:
            continue
    return pids


@pytest.mark.processes
def test_an_interrupted_collector_ends_its_workers_without_waiting_for_their_jobs():
    """Ctrl-C or SIGTERM in the middle of a long job (an ``oracle-refined`` labelling job runs for minutes): the pool's
    workers are ended, not waited for, so the job never completes."""
    import time
    from concurrent.futures import CancelledError
    from concurrent.futures.process import BrokenProcessPool

    with pytest.raises(KeyboardInterrupt), Collector(2) as collector:
        pool = collector._pool._start()  # the executor's process pool
        job = pool.submit(time.sleep, 30)
        while not job.running():
            time.sleep(0.05)
        workers = list(pool._processes.values())
        raise KeyboardInterrupt
    with pytest.raises((BrokenProcessPool, CancelledError)):
        job.result(timeout=0)  # a job waited for would have returned None
    for worker in workers:
        worker.join(timeout=30)
        assert not worker.is_alive()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc to find the worker processes")
@pytest.mark.processes
def test_sigterm_leaves_no_worker_process_behind(tmp_path):
    import signal
    import time
    import uuid

    mark = f"SB3_REALM_TEST_MARK={uuid.uuid4().hex}"
    env = {**os.environ, mark.split("=")[0]: mark.split("=")[1]}
    args = [a for kv in QUICK if not kv.startswith("imitation.workers") for a in ("--set", kv)]
    proc = subprocess.Popen([*CLI, "imitate", *args, "--set", "imitation.workers=2", "--set",
                             "imitation.expert_games=400", "--out", str(tmp_path / "run"), "--no-progress"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(_marked(mark)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)  # the command, its pool's workers (and the forkserver) are running
    assert proc.poll() is None and len(_marked(mark)) >= 3, proc.stderr.read().decode()[-2000:]
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    assert code == 128 + signal.SIGTERM, proc.stderr.read().decode()[-3000:]  # the traceback, when it is not
    deadline = time.monotonic() + 30
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked(mark) == []


@pytest.mark.slow
def test_imitation_on_the_small_map_wins_its_games(tmp_path):
    from sb3_realm.evaluation import evaluate

    config = load_imitate_config(None, ["env.map_name=small", "env.usr_conf={treasure_num: 3, max_step: 300}",
                                "eval_games=10", "torch_threads=2", "imitation.expert_games=100",
                                "imitation.rounds=3", "imitation.dagger_games=40", f"out={json.dumps(str(tmp_path))}",
                                # small data (about 25 states a game): many passes over it
                                "imitation.epochs=100", "imitation.dagger_epochs=30",
                                "imitation.dagger_learning_rate=0.001", *FOVEA])
    _, run_dir = imitate(config)
    report = evaluate(str(run_dir / "final_model.zip"), seed=777, games=20, treasures=3, max_step=300,
                      env_kwargs={"map_name": "small"}, workers=2)
    summary = report.summary()
    assert summary["wins"] == 20 and summary["games_with_missed_treasure"] == 0
    assert summary["mean_gap_to_yardstick"] < 5.0
    assert os.path.getsize(run_dir / "final_model.zip") > 0


# ------------------------------------------------------------------------------------------ a round's parts
def test_the_kept_round_is_chosen_by_its_key_ties_to_the_later_round():
    from sb3_realm.imitation.records import RunState

    state = RunState()
    assert state.choose((-3, 100.0), 90.0, 0) and state.best_round == 0
    assert not state.choose((-4, 200.0), 95.0, 1)  # more lost games: never kept, whatever its score
    assert state.choose((-3, 100.0), 80.0, 2) and (state.best_round, state.best_score) == (2, 80.0)  # a tie
    assert state.choose((50.0,), 50.0, 3) and state.best_key == (50.0,)  # a resume without the sweep: afresh


def test_a_round_record_round_trips_and_reads_the_old_names():
    from sb3_realm.imitation.records import RoundRecord, RunState

    fields = {"round": 1, "source": "dagger round 1 (beta 0)", "games_played": 4, "states": 900, "new_states": 300,
              "learner_wins": 2, "games_cut": 1, "games_taken_over": 1, "learner_mean_score": 400.0, "bc_loss": 0.1,
              "bc_accuracy": 0.97, "bc_entropy": 0.2, "updates": 30, "eval_mean_score": 380.0,
              "eval_reached_end": 3, "eval_wins": 2, "eval_games": 3, "eval_mean_steps": 60.0,
              "eval_missed_treasure_games": 1, "yardstick_mean_score": 385.0, "best_round": 1, "collect_s": 1.0,
              "fit_s": 2.0, "eval_s": 3.0, "wall_s": 9.0, "screen_games": 6, "screen_reached_end": 5}
    record = RoundRecord(**fields)
    assert record.to_dict() == fields  # the optional counts a round did not make are left out
    assert RoundRecord.from_dict(record.to_dict()) == record
    old = {k: v for k, v in fields.items() if k not in ("eval_reached_end", "eval_wins", "screen_reached_end",
                                                         "yardstick_mean_score")}
    old.update(eval_wins=3, eval_full_wins=2, screen_wins=5)  # eval_wins counted the games that reached the end
    old.update(oracle_mean_score=385.0)  # the yardstick's old name
    assert RoundRecord.from_dict(old) == record
    state = RunState(round=1, history=[record], best_key=(-1, 380.0), best_score=380.0, best_round=1,
                     yardstick_score=385.0, elapsed=9.0, updates=30, reference={"key": "k", "steps": [50]})
    saved = json.loads(json.dumps(state.to_dict(shards=2)))
    assert "yardstick_score" in saved and "oracle_score" not in saved
    assert RunState.from_dict(saved) == state
    saved["oracle_score"] = saved.pop("yardstick_score")  # a checkpoint written before the yardstick's rename
    saved["history"] = [old]
    assert RunState.from_dict(saved) == state


def test_the_expert_spec_names_its_data_and_labels_as_configured():
    from sb3_realm.games.realm.experts.refine import RefinedOraclePolicy
    from sb3_realm.imitation.dagger import expert_spec

    assert ExpertSpec("oracle").label == "oracle"
    assert ExpertSpec("oracle", tie_break="heading").label == "oracle (tie_break heading)"
    refined = ExpertSpec("oracle-refined", refine=(("beam_width", 3), ("max_refines", RefinedOraclePolicy.max_refines)))
    assert refined.label == "oracle-refined (beam_width 3)"
    env = RealmEnv(map_name="small")
    policy = refined.build(env)
    assert isinstance(policy.oracle, RefinedOraclePolicy) and policy.oracle.beam_width == 3
    config = load_imitate_config(None, [*QUICK, "imitation.tie_break=heading"])
    spec = expert_spec(config)
    assert (spec.kind, spec.tie_break, spec.build(env).oracle.tie_break) == ("oracle", "heading", "heading")


def test_imitate_no_progress_prints_one_line_a_round(tmp_path, capsys):
    """``imitate --no-progress`` drops only the bar: every round still writes its line to stderr as it ends (round,
    states, held-out score, time), and stdout holds the final JSON alone."""
    from sb3_realm.cli import main

    out = tmp_path / "run"
    argv = ["imitate", "--out", str(out), "--no-progress"]
    for item in [*QUICK, "imitation.rounds=2"]:
        argv += ["--set", item]
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["run_dir"] == str(out)
    lines = [line for line in captured.err.splitlines() if line.startswith("round ")]
    assert [line.split(":")[0] for line in lines] == ["round 0/2", "round 1/2", "round 2/2"]
    history = json.loads((out / "eval.json").read_text(encoding="utf-8"))["history"]
    for line, record in zip(lines, history, strict=True):
        assert f"{record['states']:,} states" in line
        assert f"held-out score {record['eval_mean_score']:.1f}" in line


# ---------------------------------------------------------------------------------------------- the game's spec
def test_a_sweep_needs_a_game_of_treasure_sets():
    """``imitation.selection.games: sweep`` asks the spec whether its games are treasure sets (``treasure_sets``):
    the Realm without them is refused as Gorge Chase is, Gorge Chase with them is not."""
    realm, gorge = games.get("realm"), games.get("gorge")
    sweep = SelectionConfig(games="sweep")
    ImitationConfig(selection=sweep).validate(realm)
    with pytest.raises(ValueError, match="sweeps treasure sets, which Back to the Realm has not"):
        ImitationConfig(selection=sweep).validate(
            dataclasses.replace(realm, episodes=dataclasses.replace(realm.episodes, treasure_sets=False)))
    ImitationConfig(expert="scripted", selection=sweep).validate(
        dataclasses.replace(gorge, episodes=dataclasses.replace(gorge.episodes, treasure_sets=True)))


def test_the_held_out_games_are_reported_as_the_specs_protocol(monkeypatch):
    """The report of a run's held-out games names the spec's ``held_out_protocol``, whatever the game's name."""
    config = load_imitate_config(None, QUICK)
    protocol, played = dagger_module._held_out(config)
    assert protocol == "leaderboard" and [conf for _, conf in played] == config.held_out_configs()
    monkeypatch.setitem(games.GAMES, "realm", dataclasses.replace(
        games.get("realm"), evaluation=dataclasses.replace(games.get("realm").evaluation, held_out_protocol="fixed")))
    assert dagger_module._held_out(config)[0] == "fixed"
