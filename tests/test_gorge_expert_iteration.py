"""Expert iteration on Gorge Chase (``configs/gorge/expert_iteration.yaml``): the observation-only search labels the
states, those where its label departs from the planner's choice (which the features carry) weigh
``imitation.disagree_weight`` times in the behaviour-cloning loss, and every round reports its states labelled a
second."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sb3_realm import games
from sb3_realm.games.gorge import features
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.spec import planner_choices
from sb3_realm.imitation import ExpertDataset, imitate
from sb3_realm.imitation.config import load_imitate_config
from sb3_realm.imitation.dagger import Imitation, round_line
from sb3_realm.imitation.dataset import Block, Layout
from sb3_realm.imitation.records import RoundRecord

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECIPE = CONFIGS / "gorge" / "expert_iteration.yaml"
TEST_MAPS = {"open_9", "open_10", "own_6", "own_7", "own_8", "own_9", "own_10"}
SMALL = ["env.n_envs=2", "algo.hyperparams.n_steps=64", "algo.hyperparams.batch_size=64",
         "algo.extractor_kwargs={features_dim: 32, cnn_channels: [8, 8, 8]}", "algo.net_arch={pi: [16], vf: [16]}",
         "torch_threads=1", "imitation.workers=1"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_recipe_loads_with_the_search_as_expert_and_no_test_map():
    config = load_imitate_config(RECIPE).validate()
    im = config.imitation
    assert config.game == "gorge" and im.expert == "search" and im.expert in config.spec.experts
    assert im.disagree_weight > 1 and im.rounds >= 1 and im.beta_rampdown == 0 and im.workers == 2
    assert set(config.eval_maps) == {"own_5"}
    assert not (set(config.env.map_names) | set(config.eval_maps)) & TEST_MAPS
    assert set(config.env.settings_names(config.spec)) == {"default", "final"}


def test_the_planner_choice_is_read_from_the_features_vector():
    vectors = np.zeros((3, features.VECTOR_SIZE), dtype=np.float32)
    vectors[0, features.PER_ACTION * 5 + 9] = 1.0
    vectors[1, features.PER_ACTION * 12 + 9] = 1.0
    vectors[:, features.PER_ACTION * 3 + 8] = 0.9  # another per-action feature (the planner's value) is no choice
    assert planner_choices(vectors).tolist() == [5, 12, -1]
    env = GorgeEnv(map_name="own_1")
    obs, _ = env.reset(seed=4)
    for _ in range(30):
        choice = int(planner_choices(obs["vector"][None])[0])
        assert env.action_masks()[choice]  # the planner's choice in the env's own observation: a legal action
        obs, _, terminated, truncated, _ = env.step(choice)
        if terminated or truncated:
            break
    assert games.get("gorge").expert_setup().suggested_actions is planner_choices
    assert games.get("realm").expert_setup().suggested_actions is None


def _conflicting_dataset(folder: Path) -> tuple[ExpertDataset, int, int]:
    """A dataset of one state ten times: nine labelled with the planner's choice, one with another legal action."""
    env = GorgeEnv(map_name="own_1")
    obs, _ = env.reset(seed=2)
    for _ in range(5):
        obs, *_ = env.step(int(planner_choices(obs["vector"][None])[0]))
    mask = env.action_masks()
    choice = int(planner_choices(obs["vector"][None])[0])
    other = int(next(a for a in np.flatnonzero(mask) if a != choice))
    n = 10
    block = Block.from_observations(np.stack([obs["maps"]] * n), np.stack([obs["vector"]] * n),
                                    [choice] * (n - 1) + [other], np.stack([mask] * n), [True] + [False] * (n - 1),
                                    Layout.of("gorge"))
    dataset = ExpertDataset.create(folder, expert="search", map_name="own_1",
                                   feature_version=features.FEATURE_VERSION, layout=Layout.of("gorge"))
    dataset.append(block, "test")
    return dataset, choice, other


@pytest.mark.parametrize(("weight", "learnt"), [(1, "choice"), (30, "other")])
def test_states_that_depart_from_the_planner_are_weighted_up(weight, learnt, tmp_path):
    # the same state, labelled 9 times with the planner's choice and once against it: weighed alike, the policy
    # learns the choice; with disagree_weight 30 the one departing label outweighs the nine
    config = load_imitate_config(RECIPE, [*SMALL, f"imitation.disagree_weight={weight}", "imitation.epochs=60",
                                          "imitation.batch_size=10", "imitation.learning_rate=0.003",
                                          f"out={json.dumps(str(tmp_path / 'run'))}"]).validate()
    dataset, choice, other = _conflicting_dataset(tmp_path / "dataset")
    run = Imitation(config, tmp_path / "run")
    try:
        model = run.new_model()
        stats = run.fit(model, dataset, 0)
    finally:
        run.close()
    block = dataset.all().blocks[0]
    obs = block.observations(slice(0, 1))
    action, _ = model.predict(obs, deterministic=True, action_masks=block.masks[:1])
    assert int(action[0]) == {"choice": choice, "other": other}[learnt]
    assert stats.accuracy == pytest.approx(0.9 if learnt == "choice" else 0.1)  # every state counted once
    assert run.stats["disagree_states"] == 1
    assert run.stats["disagree_accuracy"] == (1.0 if learnt == "other" else 0.0)


@pytest.mark.parametrize(("overrides", "message"), [
    (["imitation.disagree_weight=0.5"], r"imitation.disagree_weight = 0.5 must be a number >= 1"),
    (["imitation.disagree_weight=0"], r"imitation.disagree_weight = 0(\.0)? must be a number >= 1"),
    (["imitation.disagree_weight=.inf"], r"imitation.disagree_weight = inf must be a number >= 1"),
    (["algo.name=recurrent_ppo"], r"imitation.disagree_weight = 20(\.0)? weighs single states"),
])
def test_bad_disagree_weights_are_refused_before_anything_is_written(overrides, message, tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match=message):
        imitate(load_imitate_config(RECIPE, [*overrides, f"out={json.dumps(str(out))}"]))
    assert not out.exists()


def test_a_game_whose_features_suggest_nothing_refuses_the_weight(tmp_path):
    with pytest.raises(ValueError, match=r"features suggest no action to disagree with; drop disagree_weight"):
        load_imitate_config(CONFIGS / "realm" / "imitate" / "quick.yaml",
                            ["imitation.disagree_weight=5", f"out={json.dumps(str(tmp_path / 'run'))}"]).validate()


def test_round_line_reports_the_states_labelled_a_second():
    record = RoundRecord(round=1, source="dagger round 1 (beta 0)", games_played=2, states=1500, new_states=600,
                         learner_wins=0, games_cut=0, games_taken_over=0, learner_mean_score=10.0, bc_loss=0.1,
                         bc_accuracy=0.99, bc_entropy=0.1, updates=5, eval_mean_score=100.0, eval_reached_end=0,
                         eval_wins=0, eval_games=2, eval_mean_steps=50.0, eval_missed_treasure_games=None,
                         yardstick_mean_score=None, best_round=1, collect_s=40.0, fit_s=1.0, eval_s=1.0, wall_s=90.0,
                         labelled_per_s=15.0, disagree_states=7, disagree_accuracy=0.5)
    assert "1,500 states (15.0 labelled a second)" in round_line(record, 2)
    assert RoundRecord.from_dict(record.to_dict()) == record


def test_a_tiny_expert_iteration_run_labels_with_the_search(tmp_path):
    out = tmp_path / "run"
    config = load_imitate_config(RECIPE, [*SMALL, "eval_games=1", "env.usr_conf={max_step: 120}",
                                          "imitation.expert_games=1", "imitation.rounds=1", "imitation.dagger_games=1",
                                          "imitation.epochs=1", "imitation.dagger_epochs=1",
                                          f"out={json.dumps(str(out))}"])
    _, run_dir = imitate(config)
    history = json.loads((run_dir / "eval.json").read_text(encoding="utf-8"))["history"]
    assert [h["round"] for h in history] == [0, 1]
    assert history[1]["source"] == "dagger round 1 (beta 0)"
    for h in history:
        assert h["labelled_per_s"] == pytest.approx(h["new_states"] / h["collect_s"], rel=0.02)
        assert 0 <= h["disagree_states"] <= h["states"]
    dataset = ExpertDataset.open(run_dir / "dataset")
    assert dataset.meta["expert"] == "search" and dataset.states == history[1]["states"]
    for block in dataset.all().blocks:
        assert block.masks[np.arange(len(block)), block.actions].all()
