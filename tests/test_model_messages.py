"""What ``eval``, ``replay`` and the loaders say about a model file that is wrong: a model of the other game, a
checkpoint that is empty, truncated, random bytes or missing, an expert or protocol of the other game, a run config
beside a checkpoint that is not plain YAML (a Python tag in it never runs), and an output path that is one of the
command's inputs. Each is one line naming the problem and the fix, exit code 2, no traceback, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import strip_feature_version

from sb3_realm.agents.checkpoint import load_model
from sb3_realm.agents.load import policy_game
from sb3_realm.cli import main
from sb3_realm.models.saved import check_checkpoint_file, run_config

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
GORGE_SMALL = ["env.n_envs=2", "algo.hyperparams.n_steps=32", "algo.hyperparams.batch_size=64",
               "algo.hyperparams.n_epochs=1", "algo.extractor_kwargs={features_dim: 32, cnn_channels: [8, 8, 8]}",
               "algo.net_arch={pi: [16], vf: [16]}", "eval_freq=0", "checkpoint_freq=100000", "progress_bar=false",
               "env.usr_conf={max_step: 60}", "total_timesteps=64"]
PYTHON_TAG = 'game: realm\nenv: !!python/object/apply:os.system ["touch RAN"]\n'


@pytest.fixture(scope="module")
def gorge_model(tmp_path_factory) -> Path:
    """A Gorge Chase MaskablePPO model of 64 steps (its run config names its game)."""
    import torch

    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("gorge") / "run"
        _, run_dir = train(load_config(REPO / "configs" / "gorge" / "maskable_ppo.yaml",
                                       [*GORGE_SMALL, f"out={json.dumps(str(out))}"]))
    finally:
        torch.set_num_threads(threads)
    return run_dir / "final_model.zip"


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


def _cli(args: list[str], cwd: Path) -> str:
    """Run ``python -m sb3_realm.cli ARGS`` in ``cwd``; its stderr, checked to be one line of error with exit code 2,
    no traceback, and nothing written in ``cwd``."""
    before = _snapshot(cwd)
    out = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    err = out.stderr.strip()
    assert out.returncode == 2, (out.returncode, err[-3000:])
    assert "Traceback" not in err, err[-3000:]
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and len(err.splitlines()) == 1, err
    assert _snapshot(cwd) == before
    return err


def _main(args: list[str], capsys) -> str:
    """``main(args)`` in this process: exit code 2 and one line of error; its stderr."""
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "error:" in err, err
    return err


# ------------------------------------------------------------------------------------ a model of the other game
@pytest.mark.parametrize("command", [["eval", "MODEL", "--game", "realm", "--games", "1", "--no-yardstick"],
                                     ["replay", "MODEL", "--game", "realm", "--out", "ep.gif"]])
def test_a_gorge_model_played_as_the_realm_names_its_game(command, gorge_model, tmp_path):
    shutil.copyfile(gorge_model, tmp_path / "model.zip")
    err = _cli([("model.zip" if arg == "MODEL" else arg) for arg in command], tmp_path)
    assert "'model.zip' is a model of Gorge Chase (its run config records game: gorge)" in err
    assert "not of Back to the Realm (--game realm)" in err and "pass --game gorge" in err
    assert "retrain" not in err and "Unexpected observation shape" not in err


def test_a_realm_model_played_as_gorge_names_its_game(models, tmp_path):
    shutil.copyfile(models["ppo"], tmp_path / "model.zip")
    err = _cli(["replay", "model.zip", "--game", "gorge", "--out", "ep.gif"], tmp_path)
    assert "is a model of Back to the Realm (its run config records game: realm)" in err
    assert "pass --game realm" in err and "retrain" not in err


def test_a_model_that_records_no_game_is_known_by_its_observation_space(gorge_model, tmp_path, capsys):
    strip_feature_version(gorge_model, tmp_path / "model.zip")  # as saved by the user's own SB3 code
    model = str(tmp_path / "model.zip")
    assert policy_game(model).name == "gorge"  # its game, with no game given
    err = _main(["eval", model, "--game", "realm", "--games", "1", "--no-yardstick"], capsys)
    assert "is a model of Gorge Chase (its observation space is Gorge Chase's), not of Back to the Realm (--game " \
           "realm)" in err and "pass --game gorge" in err
    err = _main(["replay", model, "--game", "realm", "--out", str(tmp_path / "ep.gif")], capsys)
    assert "its observation space is Gorge Chase's" in err and not (tmp_path / "ep.gif").exists()


def test_a_submission_folder_of_the_other_game_is_named(monkeypatch, tmp_path, capsys):
    import sb3_realm.agents.load as load

    (tmp_path / "sub").mkdir()
    monkeypatch.setattr(load, "read_manifest", lambda folder: {"game": "gorge"})
    err = _main(["eval", str(tmp_path / "sub"), "--game", "realm", "--games", "1"], capsys)
    assert "is a model of Gorge Chase (its manifest records game: gorge)" in err and "pass --game gorge" in err


# ------------------------------------------------------------------------------------ damaged or missing files
def _damaged(kind: str, source: Path, folder: Path) -> str:
    if kind == "empty":
        (folder / "model.zip").write_bytes(b"")
    elif kind == "truncated":
        data = source.read_bytes()
        (folder / "model.zip").write_bytes(data[: len(data) // 2])
    elif kind == "random":
        (folder / "model.zip").write_bytes(bytes(range(256)) * 8)
    return {"missing file": "gone.zip", "missing folder": "runs/gone/"}.get(kind, "model.zip")


@pytest.mark.parametrize(("kind", "fragment"), [
    ("empty", "'model.zip' is empty (0 bytes)"),
    ("truncated", "'model.zip' is truncated: it starts as a zip archive but its end"),
    ("random", "'model.zip' is not a zip archive (it starts with the bytes b'\\x00\\x01\\x02\\x03')"),
    ("missing folder", "policy 'runs/gone/' does not exist"),
])
def test_a_damaged_or_missing_checkpoint_under_gorge_options_names_the_file(kind, fragment, models, tmp_path):
    policy = _damaged(kind, models["ppo"], tmp_path)
    err = _cli(["eval", policy, "--protocol", "maps", "--maps", "own_6"], tmp_path)
    assert fragment in err and "unknown protocol" not in err


@pytest.mark.parametrize("kind", ["empty", "truncated", "random", "missing file"])
def test_replay_and_the_loaders_name_the_damage_too(kind, models, tmp_path, capsys):
    policy = str(tmp_path / _damaged(kind, models["ppo"], tmp_path))
    word = {"empty": "is empty", "truncated": "is truncated", "random": "is not a zip archive",
            "missing file": "does not exist"}[kind]
    assert word in _main(["replay", policy, "--game", "gorge", "--out", str(tmp_path / "ep.gif")], capsys)
    assert word in _main(["eval", policy, "--maps-dir", str(tmp_path)], capsys)
    with pytest.raises(ValueError, match=word):
        load_model(policy)
    assert not (tmp_path / "ep.gif").exists()


def test_check_checkpoint_file_names_links_folders_and_pipes(tmp_path):
    try:
        (tmp_path / "dangling.zip").symlink_to(tmp_path / "nowhere.zip")
    except OSError:  # Windows without the right to make links
        pass
    else:
        with pytest.raises(ValueError, match="is a link to a file that does not exist"):
            check_checkpoint_file(tmp_path / "dangling.zip")
    with pytest.raises(ValueError, match="is a folder, not an SB3 checkpoint file"):
        check_checkpoint_file(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.zip")  # never opened: reading a pipe would wait for a writer
        with pytest.raises(ValueError, match="is not a regular file"):
            check_checkpoint_file(tmp_path / "pipe.zip")


# ------------------------------------------------------------------------------------ experts and protocols
def test_an_experts_name_says_its_game_and_another_game_refuses_it(tmp_path):
    err = _cli(["eval", "scripted", "--protocol", "maps"], tmp_path)  # Gorge Chase's protocol, asked of its expert
    assert "the maps protocol needs the maps to play" in err and "unknown protocol" not in err
    err = _cli(["eval", "scripted", "--game", "realm", "--protocol", "maps"], tmp_path)
    assert "policy 'scripted' is an expert of Gorge Chase, not of Back to the Realm (--game realm)" in err
    assert "pass --game gorge" in err


@pytest.mark.parametrize(("args", "fragments"), [
    (["eval", "scripted", "--game", "realm", "--maps-dir", "."], ["an expert of Gorge Chase", "pass --game gorge"]),
    (["replay", "scripted", "--game", "realm", "--out", "ep.gif"], ["an expert of Gorge Chase", "pass --game gorge"]),
    (["eval", "oracle", "--game", "gorge"], ["'oracle' is an expert of Back to the Realm, not of Gorge Chase "
                                             "(--game gorge)", "pass --game realm"]),
    (["eval", "random", "--game", "realm", "--protocol", "maps"],
     ["--protocol 'maps' is a protocol of Gorge Chase", "pass --game gorge"]),
    (["eval", "random", "--protocol", "maps"],
     ["policy 'random': the random policy plays any game; say which with --game"]),
    (["eval", "random", "--game", "gorge", "--protocol", "leaderboard"],
     ["--protocol 'leaderboard' is a protocol of Back to the Realm", "pass --game realm"]),
    (["eval", "random", "--game", "realm", "--maps-dir", "."], ["Back to the Realm plays one map"]),
    (["eval", "random", "--game", "gorge", "--maps-dir", "nowhere"], ["--maps-dir 'nowhere' does not exist"]),
])
def test_an_expert_protocol_or_option_of_the_other_game_names_it(args, fragments, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    err = _main(args, capsys)
    assert all(fragment in err for fragment in fragments), err
    assert not (tmp_path / "ep.gif").exists()


def test_a_maps_folder_from_the_environment_is_named_as_such(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SB3_REALM_GORGE_MAPS", str(tmp_path / "nowhere"))
    err = _main(["eval", "random", "--game", "gorge", "--games", "1"], capsys)
    assert f"the environment variable SB3_REALM_GORGE_MAPS={str(tmp_path / 'nowhere')!r} does not exist" in err
    assert "unset the variable" in err


def test_the_model_of_a_run_folder_is_pointed_at_before_the_protocol(gorge_model, tmp_path, capsys):
    err = _main(["eval", str(gorge_model.parent), "--protocol", "maps", "--maps", "own_6"], capsys)
    assert "is the folder of a training run, not a policy" in err and "final_model.zip" in err


def test_a_checkpoints_folder_points_at_its_model(models, tmp_path, capsys):
    step = tmp_path / "checkpoints" / "step_000000000512"
    step.mkdir(parents=True)
    shutil.copyfile(models["ppo"], step / "model.zip")
    err = _main(["eval", str(step), "--protocol", "maps"], capsys)
    assert f"is the folder of a checkpoint, not a policy; pass its model: {str(step / 'model.zip')!r}" in err


def test_a_zip_that_is_not_a_checkpoint_is_named_before_the_protocol(tmp_path, capsys):
    package = tmp_path / "upload.zip"  # what build-submission --zip writes
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("diy/manifest.json", json.dumps({"format": "sb3-realm submission"}))
    err = _main(["eval", str(package), "--protocol", "maps"], capsys)
    assert "is a package archive written by sb3-realm build-submission --zip" in err and "protocol" not in err


# ------------------------------------------------------------------------------------ the run config beside a model
def test_a_python_tag_in_the_config_beside_a_checkpoint_is_one_line_and_never_runs(models, tmp_path):
    strip_feature_version(models["ppo"], tmp_path / "model.zip")  # no run config inside: config.yaml is read
    (tmp_path / "config.yaml").write_text(PYTHON_TAG, encoding="utf-8")
    err = _cli(["eval", "model.zip", "--games", "1", "--no-yardstick"], tmp_path)
    assert "'config.yaml', the run config beside the checkpoint 'model.zip', is not plain YAML data" in err
    assert "python/object/apply:os.system" in err and "nothing in it ran" in err
    assert "ConstructorError" not in err and not (tmp_path / "RAN").exists()


@pytest.mark.parametrize(("text", "fragment"), [
    ("- a\n- b\n", "holds a list, not a mapping of settings"),
    ("env: {n_envs: [\n", "is not plain YAML data"),
    (b"game: r\xe9alm\n", "is not UTF-8 text"),
    ("game: chess\n", "records game = 'chess', which is not registered here"),
    ("game: [realm]\n", "records game = ['realm']"),
])
def test_a_config_beside_a_checkpoint_that_does_not_read_is_named(text, fragment, models, tmp_path, capsys):
    strip_feature_version(models["ppo"], tmp_path / "model.zip")
    cfg = tmp_path / "config.yaml"
    cfg.write_bytes(text) if isinstance(text, bytes) else cfg.write_text(text, encoding="utf-8")
    err = _main(["replay", str(tmp_path / "model.zip"), "--out", str(tmp_path / "ep.gif")], capsys)
    assert fragment in err and not (tmp_path / "ep.gif").exists()


def test_only_the_runs_own_config_is_read_two_levels_up(models, tmp_path):
    deep = tmp_path / "a" / "b" / "model.zip"  # not a run's checkpoints/step_*: tmp_path's config is not its run's
    deep.parent.mkdir(parents=True)
    strip_feature_version(models["ppo"], deep)
    (tmp_path / "config.yaml").write_text("game: gorge\n", encoding="utf-8")
    assert run_config(deep) is None
    step = tmp_path / "checkpoints" / "step_000000000512" / "model.zip"
    step.parent.mkdir(parents=True)
    strip_feature_version(models["ppo"], step)
    assert run_config(step) == {"game": "gorge"}


# ------------------------------------------------------------------------------------ outputs that are inputs
def test_replay_out_never_overwrites_the_model_or_its_config(models, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(models["ppo"], run / "final_model.zip")
    shutil.copyfile(models["ppo"].parent / "config.yaml", run / "config.yaml")
    err = _cli(["replay", "run/final_model.zip", "--out", "run/final_model.zip"], tmp_path)
    assert "replay --out 'run/final_model.zip' is the policy 'run/final_model.zip', which this command reads" in err


def test_eval_outputs_never_overwrite_an_input_or_each_other(models, tmp_path, capsys):
    model = str(models["ppo"])
    before = models["ppo"].read_bytes()
    config = models["ppo"].parent / "config.yaml"
    for args, fragment in (
            (["--json", model], f"--json {model!r} is the policy"),
            (["--plot", str(config)], "is the run config of the policy"),
            (["--json", str(tmp_path / "r.json"), "--plot", str(tmp_path / "r.json")], "--json and --plot are both")):
        err = _main(["eval", model, "--games", "1", "--no-yardstick", *args], capsys)
        assert fragment in err
    assert models["ppo"].read_bytes() == before and not (tmp_path / "r.json").exists()


def test_an_output_inside_a_submission_folder_is_refused(monkeypatch, tmp_path, capsys):
    import sb3_realm.agents.load as load

    (tmp_path / "sub").mkdir()
    monkeypatch.setattr(load, "read_manifest", lambda folder: {"game": "realm"})
    err = _main(["replay", str(tmp_path / "sub"), "--out", str(tmp_path / "sub" / "ep.gif")], capsys)
    assert "is inside the policy" in err and not (tmp_path / "sub" / "ep.gif").exists()


# -------------------------------------------------------------------------------- a checkpoint's data of another kind
def _rewrite_data(source: Path, target: Path, change) -> Path:
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = change(json.loads(members["data"]))
    with zipfile.ZipFile(target, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, json.dumps(data) if name == "data" else payload)
    return target


def _with_config(data: dict, **changes) -> dict:
    data["sb3_realm_config"].update(changes)
    return data


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda data: [1, 2], "its 'data' member holds a JSON list, not an object"),
    (lambda data: {**data, "observation_space": "Box"}, "an entry of its 'data' member is of another kind"),
    (lambda data: _with_config(data, env="x"), "its run config cannot rebuild its pickled entries"),
    (lambda data: _with_config(data, algo=[1]), "its run config cannot rebuild its pickled entries"),
])
def test_a_checkpoint_whose_data_is_of_another_kind_is_named(change, fragment, gorge_model, tmp_path, capsys):
    model = _rewrite_data(gorge_model, tmp_path / "model.zip", change)
    err = _main(["eval", str(model), "--protocol", "maps", "--maps", "own_6", "--games", "1", "--no-yardstick"], capsys)
    assert "'model.zip'" in err.replace(str(tmp_path) + os.sep, "") and fragment in err
