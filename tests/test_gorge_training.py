"""``sb3-realm train`` on Gorge Chase: its recipe loads, a run trains on its maps and selects on held-out ones (never a
training map), logs the game's own episode metrics, resumes, follows a curriculum over the game's settings, and its
model packages with build-submission without naming the game."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from helpers import make_gorge_code_package

from sb3_realm import games
from sb3_realm.cli import main
from sb3_realm.evaluation import evaluate
from sb3_realm.export import build_submission
from sb3_realm.games.gorge.rewards import RewardWeights
from sb3_realm.models.saved import run_game
from sb3_realm.training import train
from sb3_realm.training.callbacks import CurriculumCallback
from sb3_realm.training.config import load_config
from sb3_realm.tuning.objective import eval_configs
from sb3_realm.tuning.storage import make_storage

RECIPE = Path(__file__).resolve().parents[1] / "configs" / "gorge" / "maskable_ppo.yaml"
SMALL = ["env.n_envs=2", "algo.hyperparams.n_steps=64", "algo.hyperparams.batch_size=64", "algo.hyperparams.n_epochs=1",
         "algo.extractor_kwargs={features_dim: 32, cnn_channels: [8, 8, 8]}", "algo.net_arch={pi: [16], vf: [16]}",
         "eval_games=2", "eval_freq=128", "checkpoint_freq=128", "progress_bar=false", "eval_route_every=1",
         "env.usr_conf={max_step: 60}"]


def test_the_recipe_trains_on_its_maps_and_selects_on_others():
    config = load_config(RECIPE)
    assert config.game == "gorge" and config.env.map_names == ["own_1", "own_2", "own_3", "own_4"]
    held_out = config.held_out_configs()
    assert {c["map_name"] for c in held_out} == {"own_5"} and len(held_out) == config.eval_games
    # protocols name lists, not maps
    assert not set(config.env.map_names) & set(games.get("gorge").evaluation.protocols)
    for test_map in ("open_9", "open_10", "own_6"):
        assert test_map not in config.env.map_names + config.eval_maps


@pytest.mark.parametrize(("overrides", "message"), [
    (["eval_maps=[own_2]"], r"eval_maps \['own_2'\] are maps the run trains on"),
    (["env.map_names=[own_1, 3]"], r"env.map_names = \['own_1', 3\] must be a list of map names"),
    (["eval_maps=[nowhere]"], r"nowhere"),
    (["game=realm", "env.map_names=[]", "eval_maps=[own_5]", "algo.extractor=realm", "env.usr_conf={}"],
     r"eval_maps = \['own_5'\]: Back to the Realm plays one map"),
    (["game=realm", "eval_maps=[]", "algo.extractor=realm", "env.usr_conf={}"],
     r"env.map_names = .*Back to the Realm plays one map"),
])
def test_bad_map_settings_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config(RECIPE, overrides)


def test_a_run_logs_the_games_metrics_resumes_and_packages(tmp_path, capsys):
    out = tmp_path / "run"
    config = load_config(RECIPE, [*SMALL, f"out={json.dumps(str(out))}", "total_timesteps=256"])
    model, run_dir = train(config)
    assert model.num_timesteps == 256
    history = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
    assert [h["timesteps"] for h in history] == [128, 256]
    assert history[-1]["protocol"] == "maps" and list(history[-1]["per_map"]) == ["own_5"]
    assert {"survival_share", "deaths_after_speedup", "cornered"} <= set(history[-1])
    # the held-out games are those of eval_seed, as sb3-realm eval and a study play them: the best model, saved when
    # it was evaluated, scores what its evaluation logged (the final model has one more update after the last one)
    best = evaluate(str(run_dir / "best_model.zip"), "maps", maps=["own_5"], games=2, max_step=60,
                    seed=config.eval_seed, yardstick=False, game="gorge", allow_overlap=True)
    assert max(h["mean_score"] for h in history) == pytest.approx(best.summary()["mean_score"])
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = (run_dir / "tb").rglob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    assert {"train_episodes/survival_rate", "train_episodes/caught_before_speedup", "train_episodes/flashes",
            "train_episodes/reward_terms/survive", "eval/survival_share", "eval/score"} <= tags
    assert "eval/route" in accumulator.Tags()["images"]
    assert run_game(run_dir / "best_model.zip").name == "gorge"
    # resumed on another day with a larger total: it continues from its checkpoint
    assert main(["train", "--resume", str(run_dir), "--set", "total_timesteps=384", "--set", "progress_bar=false"]) == 0
    assert json.loads(capsys.readouterr().out)["num_timesteps"] == 384
    # the run's model records its game: build-submission needs no --game and no --trust-pickle
    manifest = build_submission(run_dir / "final_model.zip", tmp_path / "upload",
                                code_package=make_gorge_code_package(tmp_path / "package"))
    assert manifest["game"] == "gorge" and manifest["layout"] == "gorge15"


def test_a_curriculum_over_the_games_settings(tmp_path):
    out = tmp_path / "run"
    phases = ("curriculum=[{usr_conf: {monster_interval: 2000, monster_speedup: 2000}, until_step: 128}, "
              "{usr_conf: {monster_interval: 300, monster_speedup: 500}}]")
    config = load_config(RECIPE, [*SMALL, f"out={json.dumps(str(out))}", "total_timesteps=256", "eval_freq=0",
                                  phases])
    model, _ = train(config)
    configs = model.get_env().get_attr("base_config")
    assert all(c.monster_interval == 300 and c.monster_speedup == 500 for c in configs)
    with pytest.raises(ValueError, match=r"metric = 'win_rate'; choose one of \['survival_rate', 'score', 'steps'\]"):
        CurriculumCallback([{"usr_conf": {}}], metric="win_rate", game="gorge")
    assert CurriculumCallback([{"usr_conf": {}}], game="gorge").metric == "survival_rate"


def test_a_reward_study_trains_on_the_training_maps_and_scores_the_held_out_ones(tmp_path):
    """Two trials of the reward study on the recipe (tiny): the defaults first, each trial's objective the mean
    competition score of its final model on the held-out map, with the survival share beside it."""
    assert {c["map_name"] for c in eval_configs(load_config(RECIPE))} == {"own_5"}
    out = tmp_path / "study"
    args = [sys.executable, "tuning/tune_rewards.py", "--config", str(RECIPE), "--total-steps", "128",
            "--eval-games", "2", "--eval-freq", "128", "--n-trials", "2", "--out", str(out), "--no-progress",
            "--sampler-seed", "0", *[item for o in SMALL if not o.startswith(("eval_games", "eval_freq"))
                                     for item in ("--set", o)]]
    res = subprocess.run(args, capture_output=True, text=True, cwd=RECIPE.parents[2], timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    storage = make_storage(f"sqlite:///{out}/study.db", create=False)
    trials = optuna.load_study(study_name="rewards", storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE"]
    assert trials[0].params == RewardWeights().to_dict()  # the defaults come first
    for t in trials:
        history = json.loads((Path(t.user_attrs["run_dir"]) / "eval.json").read_text(encoding="utf-8"))
        assert t.value == history[-1]["mean_score"] and list(history[-1]["per_map"]) == ["own_5"]
        assert t.user_attrs["win_rate"] == history[-1]["survival_share"]
    res = subprocess.run([*args, "--pruner", "wilcoxon", "--out", str(tmp_path / "other")], capture_output=True,
                         text=True, cwd=RECIPE.parents[2], timeout=600)
    assert res.returncode != 0 and "--pruner wilcoxon replays the held-out games one by one" in res.stderr
    assert not (tmp_path / "other").exists()
    res = subprocess.run([*args, "--curriculum", "--out", str(tmp_path / "other")], capture_output=True, text=True,
                         cwd=RECIPE.parents[2], timeout=600)
    assert res.returncode != 0 and "--curriculum samples an easier first phase" in res.stderr
    assert not (tmp_path / "other").exists()


@pytest.mark.slow
def test_a_short_run_survives_longer_than_a_random_policy(tmp_path):
    """The recipe learns something in a short run: on a map it trains on, its deterministic model survives more steps
    than the random policy in the same games."""
    from sb3_realm.evaluation import evaluate

    out = tmp_path / "run"
    config = load_config(RECIPE, [f"out={json.dumps(str(out))}", "total_timesteps=150000", "env.map_names=[own_1]",
                                  "eval_freq=0", "progress_bar=false", "env.n_envs=8", "checkpoint_freq=1000000"])
    train(config)
    played = {policy: evaluate(policy, "maps", maps=["own_1"], games=20, seed=7, game="gorge", yardstick=False,
                               allow_overlap=True).summary()["mean_steps"]
              for policy in (str(out / "final_model.zip"), "random")}
    assert played[str(out / "final_model.zip")] > played["random"], played
