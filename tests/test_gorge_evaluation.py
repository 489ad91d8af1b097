"""Gorge Chase through the shared layers: its spec in the registry, evaluation protocols over named maps with per-map
tables and catch figures, the refusal of a model's training maps, replays with the monsters' paths, the CLI."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from helpers import gorge_maps_dir

import sb3_realm  # noqa: F401  (registers the envs)
from sb3_realm import games
from sb3_realm.cli import main
from sb3_realm.evaluation import evaluate, format_report, plot_scores, protocol_configs
from sb3_realm.evaluation import training_map as tm
from sb3_realm.evaluation.replay import record_episode, replay, run_demo
from sb3_realm.games.gorge.env import GorgeEnv, free_neighbours
from sb3_realm.games.gorge.maps import GorgeMap
from sb3_realm.games.gorge.protocols import HIDDEN_STAND_INS, MAP_LISTS, PROTOCOLS, TRAINING_MAPS


def test_registered_with_gymnasium_and_the_registry():
    spec = games.get("gorge")
    assert spec.title == "Gorge Chase" and spec.evaluation.yardstick == "scripted"
    assert spec.evaluation.protocols[0] == "hidden"
    env = gym.make("sb3_realm/GorgeChase-v0")
    obs, info = env.reset(seed=0)
    assert set(obs) == {"maps", "vector"} and info["map"] == "default"
    assert isinstance(env.unwrapped, GorgeEnv)
    assert spec.maps.same(spec.maps.builtin["own_2"](), spec.maps.builtin["own_2"]())
    assert not spec.maps.same(spec.maps.builtin["own_2"](), spec.maps.builtin["own_3"]())


def test_map_lists_keep_training_and_test_maps_apart():
    assert not set(TRAINING_MAPS) & set(HIDDEN_STAND_INS)
    assert set(MAP_LISTS["test"]) == {"open_9", "open_10", *HIDDEN_STAND_INS}
    assert not set(MAP_LISTS["train"]) & (set(MAP_LISTS["test"]) | set(MAP_LISTS["validation"]))
    assert MAP_LISTS["validation"] == ("open_8",)


def test_protocol_configs_play_each_map_games_times():
    configs = protocol_configs("maps", game="gorge", maps=["own_2", "own_3"], games=3, treasures=4, max_step=300)
    assert [c["map_name"] for c in configs] == ["own_2"] * 3 + ["own_3"] * 3
    assert all(c["treasure_count"] == 4 and c["max_step"] == 300 for c in configs)
    assert len(protocol_configs("test", game="gorge")) == 20 * 7  # 20 games a map by default
    assert {c["max_step"] for c in protocol_configs("hidden", game="gorge", games=1)} == {1000}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"protocol": "leaderboard"}, "unknown protocol 'leaderboard' for Gorge Chase"),
    ({"protocol": "maps"}, "needs the maps to play"),
    ({"protocol": "hidden", "maps": ["own_2"]}, "played only by --protocol maps"),
    ({"protocol": "maps", "maps": ["own_11"]}, "'own_11' is not a Gorge Chase map"),
    ({"protocol": "hidden", "games": 0}, "--games 0 must be an integer >= 1"),
    ({"protocol": "hidden", "custom": [[3, 4]]}, "--sets"),
    ({"protocol": "hidden", "max_step": 5000}, r"max_step.*5000.*1\.\.2000"),
])
def test_protocol_errors_name_the_value_and_the_fix(kwargs, match):
    with pytest.raises(ValueError, match=match):
        protocol_configs(game="gorge", **kwargs)


def test_realm_refuses_maps():
    with pytest.raises(ValueError, match="plays one map"):
        protocol_configs("leaderboard", maps=["own_2"])


def test_free_neighbours_counts_the_ways_out():
    walk = np.zeros((7, 7), dtype=bool)
    walk[3, 1:6] = True  # a corridor: its end cells have one way out, its middle cells two
    walk[1:6, 3] = True  # crossed by another: the crossing has four
    m = GorgeMap(walkable=walk, name="cross")
    assert free_neighbours(m, (1, 3)) == 1
    assert free_neighbours(m, (2, 3)) == 2
    assert free_neighbours(m, (3, 3)) == 4


def test_evaluate_reports_per_map_and_catches():
    report = evaluate("random", "maps", game="gorge", maps=["own_2", "own_4"], games=2, yardstick=False)
    assert report.game == "gorge" and report.map == "own_2, own_4"
    assert [g.map for g in report.games] == ["own_2", "own_2", "own_4", "own_4"]
    s = report.summary()
    assert set(s["per_map"]) == {"own_2", "own_4"} and s["per_map"]["own_2"]["games"] == 2
    caught = [g for g in report.games if not g.details["survived"]]
    assert s["survived"] + s["deaths_before_speedup"] + s["deaths_after_speedup"] == 4
    assert sum(s["free_neighbours_when_caught"].values()) == len(caught)
    assert all(1 <= g.details["free_neighbours"] <= 4 and g.details["caught_step"] == g.steps for g in caught)
    assert all(g.score == pytest.approx(1.5 * g.steps + 100 * g.treasures) for g in report.games)
    text = format_report(report)
    assert "own_4" in text and "survived" in text and "died>su" in text
    data = report.to_dict()
    assert data["games"][0]["map"] == "own_2" and "survived" in data["games"][0]["details"]
    again = evaluate("random", "maps", game="gorge", maps=["own_2", "own_4"], games=2, yardstick=False)
    assert [g.score for g in again.games] == [g.score for g in report.games]  # fixed env seeds


def test_evaluate_beside_the_scripted_yardstick(tmp_path):
    report = evaluate("random", "maps", game="gorge", maps=["own_3"], games=2, max_step=150)
    s = report.summary()
    assert "yardstick_mean_score" in s and s["per_map"]["own_3"]["yardstick_mean_score"] == s["yardstick_mean_score"]
    assert "scripted mean" in format_report(report)
    assert plot_scores(report, tmp_path / "scores.png").stat().st_size > 0


def test_a_model_is_refused_on_its_training_maps(monkeypatch):
    monkeypatch.setattr(tm, "recorded_env", lambda policy: {"map_names": ["own_1", "open_9"]})
    assert tm.training_maps("run/model.zip", game="gorge") == ["own_1", "open_9"]
    with pytest.raises(ValueError, match=r"trained on open_9.*--allow-overlap"):
        tm.check_training_maps("run/model.zip", ["open_9", "open_10"], game="gorge")
    tm.check_training_maps("run/model.zip", ["own_6"], game="gorge")  # a map it never saw
    monkeypatch.setattr(tm, "recorded_env", lambda policy: {"map_name": "default"})
    assert tm.training_maps("run/model.zip", game="gorge") == ["own_1"]  # "default" by its own name
    with pytest.raises(ValueError, match="own_1"):
        tm.check_training_maps("run/model.zip", ["own_1"], game="gorge")


def test_replay_draws_the_monsters_and_the_catch(tmp_path):
    ep, _env = record_episode("random", game="gorge", seed=1, frame_every=4)
    assert ep.info["caught"] and len(ep.route) == ep.info["steps"] + 1
    tracks = ep.extra["monsters"]
    first = min(tracks)
    assert len(tracks[first]) == len(ep.route)  # monster 1 is there from the reset on
    assert ep.frames[0].shape == (4 * 128, 4 * 128, 3)
    out = replay("random", tmp_path / "ep.gif", game="gorge", seed=1)
    assert out["caught"] and out["steps"] == ep.info["steps"]
    assert (tmp_path / "ep.gif").stat().st_size > 0 and (tmp_path / "ep.png").stat().st_size > 0


def test_cli_eval_and_demo(tmp_path, capsys):
    path = tmp_path / "report.json"
    main(["eval", "random", "--game", "gorge", "--protocol", "maps", "--maps", "own_5", "--games", "1",
          "--no-yardstick", "--json", str(path)])
    out = capsys.readouterr().out
    assert "protocol maps (1 games)" in out and "own_5" in out
    assert json.loads(path.read_text(encoding="utf-8"))["summary"]["per_map"]["own_5"]["games"] == 1
    summary = run_demo(tmp_path / "demo", game="gorge", gif=False)
    assert summary["map"] == "own_1" and "caught" in summary and "treasure_ids" not in summary


def test_cli_refuses_options_of_the_other_game(tmp_path, capsys):
    assert main(["eval", "random", "--game", "realm", "--maps-dir", str(tmp_path)]) == 2
    assert "plays one map" in capsys.readouterr().err
    assert main(["eval", "random", "--game", "gorge", "--mask-wall-moves"]) == 2
    assert "masks its illegal actions itself" in capsys.readouterr().err


def test_open_maps_play_from_the_maps_folder():
    folder = gorge_maps_dir()
    report = evaluate("random", "validation", game="gorge", games=1, yardstick=False,
                      env_kwargs={"maps_dir": str(folder)})
    assert [g.map for g in report.games] == ["open_8"]
    with pytest.raises(ValueError, match="--maps-dir"):
        evaluate("random", "validation", game="gorge", games=1, yardstick=False)


def test_every_protocol_is_known_to_the_cli():
    from sb3_realm.evaluation import PROTOCOLS as ALL

    assert set(PROTOCOLS) <= set(ALL)


def test_train_refuses_a_network_that_does_not_fit_the_game_before_writing(tmp_path, capsys):
    out = tmp_path / "run"  # the Realm's extractor: four of its convs shrink 33 x 33 to nothing
    assert main(["train", "--set", "game=gorge", "--set", "algo.extractor=realm",
                 "--set", "algo.extractor_kwargs.cnn_channels=[16, 32, 32, 32]",
                 "--out", str(out), "--total-steps", "64"]) == 2
    assert "RealmNet: the conv layers do not fit maps of shape (9, 33, 33)" in capsys.readouterr().err
    assert not out.exists()


def test_a_maskable_ppo_checkpoint_plays_the_protocol(tmp_path):
    from sb3_contrib import MaskablePPO

    from sb3_realm.models.extractors import GorgeExtractor

    model = MaskablePPO("MultiInputPolicy", GorgeEnv(), n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu",
                        policy_kwargs={"features_extractor_class": GorgeExtractor,
                                       "features_extractor_kwargs": {"features_dim": 32, "cnn_channels": (8, 8, 8)}})
    model.learn(32)
    model.save(tmp_path / "model.zip")
    report = evaluate(str(tmp_path / "model.zip"), "maps", game="gorge", maps=["own_7"], games=2, yardstick=False,
                      trust_pickle=True)
    assert report.game == "gorge" and [g.map for g in report.games] == ["own_7", "own_7"]
    assert all(g.steps >= 1 for g in report.games)
    from sb3_realm.evaluation import evaluate_batched

    configs = protocol_configs("maps", game="gorge", maps=["own_7"], games=2)
    batched = evaluate_batched(model.policy, configs, seed=0, env_kwargs={}, masked=True, game="gorge",
                               protocol="maps")
    assert batched.game == "gorge" and batched.map == "own_7"
    assert [(g.score, g.steps, g.map, g.details) for g in batched.games] == [
        (g.score, g.steps, g.map, g.details) for g in report.games]  # the same games, actions and figures
    assert batched.summary()["per_map"] == report.summary()["per_map"]
