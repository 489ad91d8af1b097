"""``sb3-realm imitate`` on Gorge Chase: the scripted policy labels the states of its own games and of the learner's,
the dataset stores the game's observations exactly, the held-out games are the validation maps' (the expert's score
beside the model's is the one ``sb3-realm eval`` gives), and settings that belong to the Realm are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sb3_realm import games
from sb3_realm.evaluation import evaluate
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.rules import USR_CONF_KEYS
from sb3_realm.imitation import Collector, ExpertDataset, ExpertSpec, imitate
from sb3_realm.imitation.config import load_imitate_config, read_run_config
from sb3_realm.imitation.dataset import Block, Layout, decode_maps, encode_maps
from sb3_realm.imitation.selection import training_games
from sb3_realm.models.algorithms import algorithm_class
from sb3_realm.models.saved import run_game

RECIPE = Path(__file__).resolve().parents[1] / "configs" / "gorge" / "imitate.yaml"
SCRIPTED = ExpertSpec("scripted", game="gorge")
TINY = ["env.n_envs=2", "algo.hyperparams.n_steps=64", "algo.hyperparams.batch_size=64",
        "algo.extractor_kwargs={features_dim: 32, cnn_channels: [8, 8, 8]}", "algo.net_arch={pi: [16], vf: [16]}",
        "eval_games=2", "env.usr_conf={max_step: 80}", "imitation.expert_games=2", "imitation.rounds=1",
        "imitation.dagger_games=2", "imitation.epochs=2", "imitation.dagger_epochs=1", "imitation.workers=1",
        "torch_threads=1"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_gorge_states_round_trip_in_the_games_layout():
    layout = Layout.of("gorge")
    assert layout.maps_shape == (9, 33, 33) and layout.binary_layers == (0, 1, 2)
    env = GorgeEnv(map_name="own_1")
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        obs, *_ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    maps = np.stack([obs["maps"]] * 2)
    bits, values = encode_maps(maps, layout)
    assert bits.shape == (2, 3, 137) and values.shape == (2, 6 * 1089)
    assert np.array_equal(decode_maps(bits, values, layout), maps)
    block = Block.from_observations(maps, np.stack([obs["vector"]] * 2), [1, 2], np.stack([env.action_masks()] * 2),
                                    [True, False], layout)
    assert np.array_equal(block.take([1]).observations()["maps"], maps[1:])


def test_the_scripted_expert_labels_its_games_on_the_named_maps():
    conf = games.get("gorge").episodes.config.from_usr_conf({"max_step": 60}).training_usr_conf(4)
    with Collector(1) as collector:
        rollouts = collector.run({"map_names": ["own_1", "own_2"]}, [(11, conf), (12, conf)], expert=SCRIPTED)
    block = rollouts.block
    assert block.layout == Layout.of("gorge") and block.episodes == 2
    assert len(block) == sum(g.steps for g in rollouts.games)
    assert all(block.masks[np.arange(len(block)), block.actions])  # every label is a legal action
    assert all(g.map is None and "survived" in g.details for g in rollouts.games)


def test_training_games_use_the_games_own_conf_keys():
    config = load_imitate_config(RECIPE, ["imitation.treasure_counts=[3, 10]"])
    drawn = training_games(config, 0, 20)
    assert all(set(conf) <= set(USR_CONF_KEYS) for _, conf in drawn)
    assert {conf["treasure_count"] for _, conf in drawn} == {3, 10}
    assert all(conf["max_step"] == 1000 for _, conf in drawn)


@pytest.mark.parametrize(("overrides", "message"), [
    (["imitation.selection={games: sweep}"], r"sweeps treasure sets, which Gorge Chase has not"),
    (["imitation.refine_beam_width=30"],
     r"imitation.refine_beam_width = 30 sets a search of Back to the Realm's 'oracle-refined' expert"),
    (["imitation.expert=oracle"], r"imitation.expert = 'oracle' is neither 'scripted'"),
    (["imitation.tie_break=random"], r"imitation.tie_break = 'random'; use one of \['index'\]"),
])
def test_realm_settings_are_refused_for_gorge(overrides, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        imitate(load_imitate_config(RECIPE, [*overrides, f"out={json.dumps(str(tmp_path / 'run'))}"]))
    assert not (tmp_path / "run").exists()


def test_a_gorge_imitation_run_reports_the_expert_beside_the_model(tmp_path):
    out = tmp_path / "run"
    # the yardstick as the teacher: its held-out score is reported beside the model's
    config = load_imitate_config(RECIPE, [*TINY, f"out={json.dumps(str(out))}", "imitation.expert=scripted"])
    _model, run_dir = imitate(config)
    report = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))
    history = report["history"]
    assert [h["round"] for h in history] == [0, 1] and history[1]["states"] > history[0]["states"]
    assert all(0 <= h["eval_wins"] <= h["eval_games"] == 2 for h in history)
    assert "eval_missed_treasure_games" not in history[0]
    # the expert's held-out score is sb3-realm eval's for the same games: own_5, eval_seed, max_step 80
    expert = evaluate("scripted", "maps", maps=["own_5"], seed=config.eval_seed, games=2, max_step=80,
                      yardstick=False, game="gorge").summary()
    assert report["yardstick_mean_score"] == pytest.approx(expert["mean_score"])
    dataset = ExpertDataset.open(run_dir / "dataset")
    assert dataset.layout == Layout.of("gorge") and dataset.meta["expert"] == "scripted"
    assert len(dataset.all()) == dataset.states == history[1]["states"]
    for block in dataset.all().blocks:  # the yardstick may stand still against a wall: its label stays allowed
        assert block.masks[np.arange(len(block.actions)), block.actions].all()
    saved = algorithm_class("maskable_ppo").load(run_dir / "final_model.zip")
    assert saved.feature_version == games.get("gorge").submission.features.FEATURE_VERSION
    assert run_game(run_dir / "final_model.zip").name == "gorge"
    # a resumed run reads its records back and plays one more round
    imitate(read_run_config(run_dir, ["imitation.rounds=2"]), resume=run_dir)
    history = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))["history"]
    assert [h["round"] for h in history] == [0, 1, 2]


def test_the_recipe_learns_from_the_planner_within_its_mask(tmp_path):
    # the recipe's teacher is the observation-only planner: its labels are allowed by the mask the model sees
    config = load_imitate_config(RECIPE, [*TINY, f"out={json.dumps(str(tmp_path / 'run'))}", "imitation.rounds=0"])
    assert config.imitation.expert == "planner"
    _, run_dir = imitate(config)
    dataset = ExpertDataset.open(run_dir / "dataset")
    assert dataset.meta["expert"] == "planner" and len(dataset.all()) > 0
    for block in dataset.all().blocks:
        assert block.masks[np.arange(len(block.actions)), block.actions].all()
