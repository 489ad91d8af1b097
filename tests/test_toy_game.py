"""A third game costs one package of its own: the toy grid of ``tests/toy_pkg/toy_game/`` (a 5 x 5 grid, two
treasures, an exit, a BFS expert), named by its import path ``toy_game.spec:TOY_SPEC`` alone, is trained, evaluated,
imitated and tuned through the package's shared layers, which reach it only through its GameSpec.

The tests marked ``processes`` play it in worker processes too (evaluation and collection workers, subprocess envs,
tuning workers): each learns of the game only from the import path it is handed, under ``forkserver`` and (as
``.ci/run`` reruns them) ``spawn``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
import torch
import toy_game
import yaml
from toy_game import TOY_SPEC
from toy_game.game import ToyEnv
from toy_game.spec import FIXED_STARTS

from sb3_realm import cli, games
from sb3_realm.evaluation import evaluate, format_report
from sb3_realm.imitation import imitate
from sb3_realm.imitation.config import ImitateConfig
from sb3_realm.models.algorithms import algorithm_class
from sb3_realm.training.config import config_from_dict
from sb3_realm.training.run import train
from sb3_realm.tuning import StudyConfig, run_study

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MAX_STEP = 30
#: the toy's scores of the BFS expert from the fixed starts (0, 0), (4, 2), (2, 2) and (3, 4): two treasures, the
#: exit, and a point per step left of 30 after 12, 14, 12 and 15 steps
BFS_SCORES = [268.0, 266.0, 268.0, 265.0]


def _config(out: Path, **changes) -> dict:
    """A tiny MaskablePPO run of the toy game as plain data, as a YAML config would give it."""
    config = {
        "game": "toy", "total_timesteps": 256, "seed": 0, "out": str(out), "torch_threads": 1,
        "checkpoint_freq": 128, "keep_checkpoints": 1, "eval_freq": 128, "eval_games": len(FIXED_STARTS),
        "eval_route_every": 2, "progress_bar": False,
        "env": {"usr_conf": {"max_step": MAX_STEP}, "n_envs": 2},
        "algo": {"name": "maskable_ppo", "hyperparams": {"n_steps": 64, "batch_size": 64, "n_epochs": 2},
                 # the package's CNN sized for 5 x 5 maps: one 3 x 3 conv, stride 1
                 "extractor": "realm",
                 "extractor_kwargs": {"features_dim": 32, "cnn_channels": [8], "kernel_sizes": 3, "strides": 1,
                                      "mlp_hidden": 16},
                 "net_arch": {"pi": [32], "vf": [32]}},
    }
    config.update(changes)
    return config


TOY_PATH = "toy_game.spec:TOY_SPEC"


@pytest.fixture(scope="module")
def toy():
    assert games.get(TOY_PATH) is TOY_SPEC  # registered by its import path, as a config's game: would
    yield TOY_SPEC
    games.unregister(TOY_SPEC.name)


@pytest.fixture(scope="module")
def trained(toy, tmp_path_factory) -> Path:
    """The run folder of a tiny training run of the toy game with held-out evaluations, from a YAML config, run by
    ``sb3-realm train`` in this process."""
    folder = tmp_path_factory.mktemp("toy")
    recipe = folder / "toy.yaml"
    recipe.write_text(yaml.safe_dump(_config(folder / "run")), encoding="utf-8")
    assert cli.main(["train", "--config", str(recipe), "--no-progress"]) == 0
    return folder / "run"


def _score(game) -> float:
    """A game's score by the toy's rules (100 a treasure; at the exit 50 and a point per step left), from what the
    report says of it."""
    return 100.0 * game.details["treasures"] + (50.0 + MAX_STEP - game.steps if game.details["reached_exit"] else 0.0)


def test_train_writes_the_model_and_the_held_out_figures_of_the_toy(trained):
    for name in ("final_model.zip", "best_model.zip", "config.yaml", "eval.json"):
        assert (trained / name).is_file(), name
    recorded = yaml.safe_load((trained / "config.yaml").read_text(encoding="utf-8"))
    assert recorded["game"] == "toy" and recorded["feature_version"] == "1"
    history = json.loads((trained / "eval.json").read_text(encoding="utf-8"))
    assert [e["timesteps"] for e in history] == [128, 256]
    for entry in history:
        assert entry["protocol"] == "fixed" and entry["games"] == len(FIXED_STARTS)
        # the toy's own figures: its success (the exit reached) under the names its spec gives them
        assert 0 <= entry["reached_exit"] <= entry["games"]
        assert entry["exit_share"] == entry["reached_exit"] / entry["games"]
        assert entry["mean_score"] <= max(BFS_SCORES)
    assert history[-1]["best_score"] == max(e["mean_score"] for e in history)


def test_evaluate_scores_the_model_and_the_yardstick_by_the_toys_rules(trained):
    report = evaluate(str(trained / "final_model.zip"), workers=1)  # the game and protocol the model records
    assert report.game == "toy" and report.protocol == "fixed" and len(report.games) == len(FIXED_STARTS)
    for game in report.games:
        assert game.score == _score(game)
        # the result in the toy's own terms: its success is the exit reached, its details what its spec reports
        assert set(game.details) == {"reached_exit", "treasures", "treasures_left"}
        assert game.success == game.details["reached_exit"]
        assert game.details["treasures"] + game.details["treasures_left"] == 2
    # the yardstick (the BFS expert) played each game beside the model
    assert [g.yardstick_score for g in report.games] == BFS_SCORES
    summary = report.summary()
    assert summary["exit_share"] == np.mean([g.success for g in report.games])
    assert summary["yardstick_mean_score"] == np.mean(BFS_SCORES)
    assert summary["mean_gap_to_yardstick"] == pytest.approx(np.mean(BFS_SCORES) - summary["mean_score"])

    expert = evaluate("bfs", game="toy", workers=1)
    assert [g.score for g in expert.games] == BFS_SCORES
    assert [g.steps for g in expert.games] == [12, 14, 12, 15]
    assert all(g.success and g.details["treasures"] == 2 and not g.details["treasures_left"] for g in expert.games)
    assert all(g.to_dict()["success"] and "won" not in g.to_dict() for g in expert.games)  # no Realm terms
    summary = expert.summary()
    assert summary["exit_share"] == 1.0 and summary["reached_exit"] == 4 and summary["mean_gap_to_yardstick"] == 0
    text = format_report(expert)
    assert "reached the exit 4/4 (100%)" in text and "bfs mean 266.75" in text


def test_the_eval_command_plays_the_toys_protocol(toy, tmp_path, capsys):
    path = tmp_path / "bfs.json"
    # --protocol offers the protocols of the games registered when the parser is built, the toy's among them
    assert cli.main(["eval", "bfs", "--game", "toy", "--protocol", "fixed", "--games", "2", "--json", str(path)]) == 0
    assert "reached the exit 2/2 (100%)" in capsys.readouterr().out
    report = json.loads(path.read_text(encoding="utf-8"))
    assert [g["score"] for g in report["games"]] == BFS_SCORES[:2]
    assert report["summary"]["exit_share"] == 1.0 and report["summary"]["protocol"] == "fixed"


def test_the_replay_command_draws_a_toy_game(trained, tmp_path, capsys):
    """``sb3-realm replay`` of the toy's model: the game read back from the run, its GIF and its route picture drawn
    by the toy's own replay parts, the episode's figures in the toy's terms."""
    out = tmp_path / "toy.gif"
    assert cli.main(["replay", str(trained / "best_model.zip"), "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert out.stat().st_size > 0 and out.with_suffix(".png").stat().st_size > 0
    assert out.read_bytes()[:6] in (b"GIF87a", b"GIF89a") and out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert 1 <= printed["steps"] <= MAX_STEP


def _fixed_games_agree(model) -> tuple[int, int]:
    """``(states where the model's deterministic action is the expert's, states)`` over the fixed games, the expert
    playing each game."""
    env = ToyEnv()
    expert = TOY_SPEC.experts["bfs"](env)
    agree = total = 0
    for start in FIXED_STARTS:
        obs, _ = env.reset(seed=0, options={"start": start, "max_step": MAX_STEP})
        done = False
        while not done:
            label = expert.act(env, obs)
            action, _ = model.predict(obs, deterministic=True, action_masks=env.action_masks())
            agree, total = agree + int(int(action) == label), total + 1
            obs, _, terminated, truncated, _ = env.step(label)
            done = terminated or truncated
    return agree, total


def test_imitate_clones_the_bfs_expert(toy, tmp_path):
    data = _config(tmp_path / "imitate")
    data["imitation"] = {"expert": "bfs", "expert_games": 16, "rounds": 1, "dagger_games": 4, "epochs": 40,
                         "dagger_epochs": 10, "batch_size": 32, "learning_rate": 0.003,
                         "dagger_learning_rate": 0.001, "workers": 1}
    config = config_from_dict(data, cls=ImitateConfig)
    model, run_dir = imitate(config)
    assert isinstance(model, algorithm_class("maskable_ppo"))
    agree, total = _fixed_games_agree(model)
    assert agree == total, f"the clone plays the expert's move in {agree} of {total} states"
    # so it plays the expert's games: the same score on every fixed game
    report = evaluate(str(run_dir / "final_model.zip"), workers=1)
    assert [g.score for g in report.games] == BFS_SCORES
    run = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
    assert [r["round"] for r in run["history"]] == [0, 1]
    # the held-out games are the fixed protocol's, the BFS expert (the yardstick) played beside
    assert run["yardstick_mean_score"] == np.mean(BFS_SCORES)
    kept = run["history"][run["best_round"]]
    assert kept["eval_games"] == len(FIXED_STARTS) and kept["eval_wins"] == kept["eval_reached_end"] == 4
    assert kept["eval_mean_score"] == run["best_mean_score"] == np.mean(BFS_SCORES)


def test_a_tuning_trial_records_the_toys_success_rate_and_score(toy, tmp_path):
    base = config_from_dict(_config(tmp_path / "base", eval_freq=0))
    study = StudyConfig(kind="rewards", base=base, name="toy", storage=f"sqlite:///{tmp_path / 'study.db'}",
                        out=str(tmp_path / "study"), n_trials=1, pruner="none", sampler_seed=0)
    summary = run_study(study, workers=1, progress=False)
    assert summary["trials"]["complete"] == 1, summary
    trial = optuna.load_study(study_name="toy", storage=study.storage).trials[0]
    # trial 0 is the base config's own reward weights
    assert trial.params == TOY_SPEC.env.reward_weights().to_dict()
    history = json.loads((Path(trial.user_attrs["run_dir"]) / "eval.json").read_text(encoding="utf-8"))
    final = history[-1]
    assert final["timesteps"] == base.total_timesteps and final["games"] == len(FIXED_STARTS)
    assert trial.value == final["mean_score"]
    assert trial.user_attrs["win_rate"] == final["exit_share"]
    assert trial.user_attrs["mean_treasures"] == final["mean_treasures"]
    assert summary["best"]["value"] == trial.value


@pytest.mark.processes
def test_two_evaluation_workers_play_the_same_games_as_one(trained):
    model = str(trained / "final_model.zip")
    one = evaluate(model, workers=1)
    two = evaluate(model, workers=2)
    assert [(g.score, g.steps) for g in two.games] == [(g.score, g.steps) for g in one.games]
    assert [g.yardstick_score for g in two.games] == BFS_SCORES
    assert [g.score for g in evaluate("bfs", game=TOY_PATH, workers=2).games] == BFS_SCORES


def _params(run_dir: Path) -> dict:
    model = algorithm_class("maskable_ppo").load(run_dir / "final_model.zip", device="cpu")
    return {k: v.clone() for k, v in model.policy.state_dict().items()}


@pytest.mark.processes
def test_a_run_of_subprocess_envs_learns_what_one_of_envs_in_this_process_does(toy, tmp_path):
    runs = {}
    for vec_env in ("dummy", "subproc"):
        data = _config(tmp_path / vec_env, game=TOY_PATH, total_timesteps=128, eval_freq=0)
        data["env"]["vec_env"] = vec_env
        config = config_from_dict(data)
        assert config.game == "toy"  # the import path names the game; the run records its name
        runs[vec_env] = _params(train(config)[1])
    for name, value in runs["dummy"].items():
        assert torch.equal(value, runs["subproc"][name]), name


@pytest.mark.processes
def test_imitate_with_two_collection_workers(toy, tmp_path):
    data = _config(tmp_path / "imitate")
    data["imitation"] = {"expert": "bfs", "expert_games": 16, "rounds": 1, "dagger_games": 4, "epochs": 40,
                         "dagger_epochs": 10, "batch_size": 32, "learning_rate": 0.003,
                         "dagger_learning_rate": 0.001, "workers": 2}
    model, run_dir = imitate(config_from_dict(data, cls=ImitateConfig))
    agree, total = _fixed_games_agree(model)
    assert agree == total, f"the clone plays the expert's move in {agree} of {total} states"
    run = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
    assert [r["round"] for r in run["history"]] == [0, 1]
    assert run["best_mean_score"] == np.mean(BFS_SCORES)


@pytest.mark.processes
def test_two_tuning_workers_run_the_toys_trials(toy, tmp_path):
    base = config_from_dict(_config(tmp_path / "base", eval_freq=0, total_timesteps=128))
    study = StudyConfig(kind="rewards", base=base, name="toy2", storage=str(tmp_path / "study.log"),
                        out=str(tmp_path / "study"), n_trials=2, pruner="none", sampler_seed=0)
    summary = run_study(study, workers=2, progress=False)
    assert summary["trials"]["complete"] == 2, summary
    assert summary.get("worker_exit_codes") == [0, 0]
    trials = optuna.load_study(study_name="toy2", storage=study.make_storage()).trials
    assert any(t.params == TOY_SPEC.env.reward_weights().to_dict() for t in trials)  # the base weights' trial
    for trial in trials:
        history = json.loads((Path(trial.user_attrs["run_dir"]) / "eval.json").read_text(encoding="utf-8"))
        assert trial.value == history[-1]["mean_score"]


def test_a_game_registered_by_object_from_a_script_is_refused_before_workers_start(toy):
    orphan = dataclasses.replace(TOY_SPEC, name="toy_orphan", title="Orphan toy")  # held by no module
    games.register(orphan)
    try:
        with pytest.raises(ValueError, match="registered by object from a script"):
            evaluate("bfs", game="toy_orphan", workers=2)
        assert [g.score for g in evaluate("bfs", game="toy_orphan", workers=1).games] == BFS_SCORES
    finally:
        games.unregister("toy_orphan")


def test_a_model_of_a_game_not_registered_here_is_named_by_its_game(trained, tmp_path):
    """A fresh process where the toy is not registered: ``eval`` of its model names the game its run records and how
    to register it (before reading its spaces as another game's), and plays with ``--game`` by import path."""
    paths = [str(Path(__file__).resolve().parents[1]), str(Path(toy_game.__file__).resolve().parents[1])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}
    model = str(trained / "final_model.zip")
    code = "import sys; from sb3_realm import cli; sys.exit(cli.main(sys.argv[1:]))"
    refused = subprocess.run([sys.executable, "-c", code, "eval", model], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=300)
    assert refused.returncode == 2, refused.stderr
    assert "records game = 'toy', which is not registered here" in refused.stderr
    assert "--game" in refused.stderr and "Traceback" not in refused.stderr
    played = subprocess.run([sys.executable, "-c", code, "eval", model, "--game", TOY_PATH, "--games", "1"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert played.returncode == 0, played.stderr
