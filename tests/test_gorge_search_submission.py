"""A Gorge Chase package built with ``--search``: it carries the search beside the features and records its settings,
its ``exploit()`` runs the search around the network's action, and ``--check`` proves every action equal to the model
with the same search around it."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import pytest
from helpers import make_gorge_code_package, small_gorge_model

from sb3_realm.agents import SB3Policy
from sb3_realm.export import ExportError, build_submission, check_submission
from sb3_realm.games.gorge import search
from sb3_realm.games.gorge.core import RUNNING
from sb3_realm.games.gorge.env import GorgeEnv
from sb3_realm.games.gorge.experts.search import SearchedPolicy

STEPS = 300


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gorge_search")
    model = small_gorge_model(root / "model.zip")
    package = make_gorge_code_package(root / "code_package")
    out = root / "upload"
    build_submission(model, out, code_package=package, game="gorge", trust_pickle=True, search=STEPS)
    return {"root": root, "model": model, "package": package, "out": out}


def test_the_package_carries_the_search_and_its_settings(built):
    algo = built["out"] / "agent_diy"
    assert filecmp.cmp(algo / "feature" / "search.py", search.__file__, shallow=False)
    settings = {"horizon": 80, "max_rollout_steps": STEPS}
    assert json.loads((algo / "model" / "spec.json").read_text(encoding="utf-8"))["search"] == settings
    assert json.loads((built["out"] / "agent_diy" / "manifest.json").read_text(encoding="utf-8"))["spec"][
        "search"] == settings


def test_the_search_changes_some_of_the_networks_actions(built):
    """The package's reference plays the network's action where it is safe and another where the search finds one:
    on a few games the two policies part somewhere (the small model walks into the monsters)."""
    env = GorgeEnv(map_names=["own_6"])
    network = SB3Policy(built["model"], trust_pickle=True)
    searched = SearchedPolicy(SB3Policy(built["model"], trust_pickle=True), {"horizon": 80,
                                                                               "max_rollout_steps": STEPS})
    differ = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed, options={"max_step": 300})
        searched.reset(env)
        network.reset(env)
        while env.game.status == RUNNING:
            action = searched.act(env, obs)
            differ += action != network.act(env, obs)
            obs, *_ = env.step(action)
    assert differ > 0


def test_check_plays_the_model_with_the_search(built):
    report = check_submission(built["out"], built["model"], games=1, min_states=300, trust_pickle=True)
    assert report["ok"], report
    assert report["identical_actions"] and report["identical_scores"] and report["states"] >= 300


@pytest.mark.parametrize(("search", "message"), [(0, r"--search 0 must be a whole number"),
                                                 (True, r"--search True must be")])
def test_a_bad_search_is_refused_before_anything_is_written(built, tmp_path, search, message):
    with pytest.raises(ExportError, match=message):
        build_submission(built["model"], tmp_path / "out", code_package=built["package"], game="gorge",
                         trust_pickle=True, search=search)
    assert not (tmp_path / "out").exists()


def test_eval_of_the_folder_plays_the_search(built):
    """``sb3-realm eval FOLDER`` loads the package's Agent as the platform does, the search included: it plays the
    same actions as the model with the search around it."""
    from sb3_realm.agents import SubmissionPolicy

    folder = SubmissionPolicy(built["out"])
    assert folder.agent.search is not None and folder.agent.search.max_rollout_steps == STEPS
    env = GorgeEnv(map_names=["own_7"])
    reference = SearchedPolicy(SB3Policy(built["model"], trust_pickle=True), {"horizon": 80,
                                                                                "max_rollout_steps": STEPS})
    obs, _ = env.reset(seed=4, options={"max_step": 200})
    folder.reset(env)
    reference.reset(env)
    while env.game.status == RUNNING:
        action = reference.act(env, obs)
        assert folder.act(env, obs) == action
        obs, *_ = env.step(action)
