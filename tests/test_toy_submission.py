"""A game's own platform layout, brought from its own package: the toy game's (``tests/toy_pkg/toy_game/layout.py``
and ``platform_layout/``, named in its spec's ``Submission.layout_folders``) builds a package from a tiny toy model
into a toy code package, and ``build-submission --check`` runs it on the layout's stand-in, in a process that cannot
import sb3_realm or the game, with every action and score the model's; a broken package fails the check."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from toy_game import TOY_SPEC

from sb3_realm import cli, games
from sb3_realm.export import build_submission, check_submission, layouts

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("one_torch_thread")]

TOY_PATH = "toy_game.spec:TOY_SPEC"
TOY_PKG = Path(__file__).resolve().parent / "toy_pkg"  # the toy game's package folder, importable as toy_game


@pytest.fixture(scope="module")
def toy():
    assert games.get(TOY_PATH) is TOY_SPEC  # registered by its import path, as --game would
    yield TOY_SPEC
    games.unregister(TOY_SPEC.name)


@pytest.fixture(scope="module")
def model(toy, tmp_path_factory) -> Path:
    """A tiny MaskablePPO model of the toy game, trained by ``sb3-realm train`` in this process."""
    folder = tmp_path_factory.mktemp("toy_model")
    config = {
        "game": "toy", "total_timesteps": 128, "seed": 0, "out": str(folder / "run"), "torch_threads": 1,
        "checkpoint_freq": 128, "keep_checkpoints": 1, "eval_freq": 128, "eval_games": 4, "progress_bar": False,
        "env": {"usr_conf": {"max_step": 30}, "n_envs": 2},
        "algo": {"name": "maskable_ppo", "hyperparams": {"n_steps": 64, "batch_size": 64, "n_epochs": 1},
                 "extractor": "realm",
                 "extractor_kwargs": {"features_dim": 32, "cnn_channels": [8], "kernel_sizes": 3, "strides": 1,
                                      "mlp_hidden": 16},
                 "net_arch": {"pi": [32], "vf": [32]}},
    }
    recipe = folder / "toy.yaml"
    recipe.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert cli.main(["train", "--config", str(recipe), "--no-progress"]) == 0
    return folder / "run" / "final_model.zip"


def _code_package(root: Path) -> Path:
    """A toy code package as the toy platform's client would give it: kaiwu.json and conf/app.toml."""
    (root / "conf").mkdir(parents=True)
    (root / "kaiwu.json").write_text(json.dumps({"project_code": "toy_grid", "version": "1.0.0"}), encoding="utf-8")
    (root / "conf" / "app.toml").write_text("# the toy platform's app\n[app]\nalgo = \"none\"\npreload_model = false\n"
                                            "preload_model_id = 0\n", encoding="utf-8")
    return root


def test_the_toy_brings_its_layout_through_its_spec(toy):
    assert toy.submission.layouts == ("toy_grid",)
    layout = layouts.get("toy_grid")  # made from the folder its game names, the class its layout.toml names
    assert type(layout).__module__ == "toy_game.layout" and layout.folder == games.layout_folder("toy_grid")
    assert layout.algo_dirs == ["agent_toy"] and "toy_grid" not in layouts.names()  # the game's, not the registry's
    assert games.check_game(toy).notes["layouts"] == ("toy_grid",)


def test_build_submission_check_runs_the_toy_package_on_its_own_stand_in(model, tmp_path, capsys):
    package = _code_package(tmp_path / "toy_code")
    out = tmp_path / "upload"
    status = cli.main(["build-submission", str(model), "--out", str(out), "--code-package", str(package), "--check",
                       "--game", TOY_PATH])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert status == 0, result
    check = result["check"]
    assert check["ok"] and check["identical_actions"] and check["identical_scores"]
    assert check["games"] == 4 and check["states"] > 0 and check["leaked_modules"] == []
    assert check["package_scores"] == check["sb3_scores"]
    manifest = json.loads((out / "agent_toy" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["layout"] == "toy_grid" and manifest["game"] == "toy" and manifest["game_path"] == TOY_PATH
    app = tomllib.loads((out / "conf" / "app.toml").read_text(encoding="utf-8"))["app"]
    assert app == {"algo": "toy", "preload_model": True, "preload_model_id": manifest["weights"]["ckpt_id"]}
    assert (out / manifest["weights"]["file"]).is_file() and (out / "agent_toy" / "feature" / "features.py").is_file()
    assert "Upload" in captured.err  # the layout's own next steps
    assert (package / "conf" / "app.toml").read_text(encoding="utf-8").count("preload_model = false") == 1
    # a process where the toy is not registered reads the game back by the manifest's game_path, and its layout too
    probe = ("from sb3_realm import games; from sb3_realm.export import check_submission; "
             "assert 'toy' not in games.GAMES; "
             f"report = check_submission({str(out)!r}, {str(model)!r}); print(report['ok'], report['games'])")
    env = {**os.environ, "PYTHONPATH": str(TOY_PKG)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0 and done.stdout.split() == ["True", "4"], done.stderr[-3000:]


def test_a_broken_toy_package_fails_the_check(model, tmp_path):
    out = tmp_path / "upload"
    build_submission(model, out, code_package=_code_package(tmp_path / "toy_code"), game=TOY_PATH)
    agent = out / "agent_toy" / "agent.py"
    source = agent.read_text(encoding="utf-8")
    # an Agent that plays another move than the model's
    agent.write_text(source.replace("return int(self.model.greedy(logits, mask)[0])",
                                    "return (int(self.model.greedy(logits, mask)[0]) + 1) % 4"), encoding="utf-8")
    report = check_submission(out, model)
    assert not report["ok"] and not report["identical_actions"] and report["mismatched_states"] > 0
    # an Agent that imports what the platform does not have
    agent.write_text("import sb3_realm\n" + source, encoding="utf-8")
    report = check_submission(out, model)
    assert not report["ok"] and "sb3_realm" in report["platform_error"]
    # a conf that preloads weights the package does not hold
    agent.write_text(source, encoding="utf-8")
    conf = out / "conf" / "app.toml"
    conf.write_text(conf.read_text(encoding="utf-8").replace("preload_model_id = ", "preload_model_id = 9"),
                    encoding="utf-8")
    report = check_submission(out, model)
    assert not report["ok"] and "are not in agent_toy/ckpt/" in report["platform_error"]


def test_a_game_layout_whose_class_does_not_import_is_refused_by_name(toy, tmp_path):
    folder = tmp_path / "broken_layout"
    folder.mkdir()
    data = (games.layout_folder("toy_grid") / "layout.toml").read_text(encoding="utf-8")
    (folder / "layout.toml").write_text(data.replace("toy_game.layout:ToyLayout", "toy_game.layout:NoSuchLayout"),
                                        encoding="utf-8")
    broken = dataclasses.replace(toy, name="toy_broken_layout", submission=dataclasses.replace(
        toy.submission, layouts=("toy_broken",), layout_folders={"toy_broken": folder}))
    games.register(broken)
    try:
        with pytest.raises(ValueError, match=r"names the class 'toy_game\.layout:NoSuchLayout', which does not import"):
            layouts.get("toy_broken")
        with pytest.raises(ValueError, match=r"layout 'toy_nowhere' is unknown; choose one of .*toy_broken"):
            layouts.get("toy_nowhere")
    finally:
        games.unregister("toy_broken_layout")
