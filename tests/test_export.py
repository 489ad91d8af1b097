"""build-submission: the package's files, its torch + numpy purity, parity with the SB3 model in a guarded process,
evaluation of the folder, the Agent's LSTM handling, weights checksums, errors and atomic builds."""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SMALL_MODELS as MODELS
from helpers import make_code_package, make_legacy_run

from sb3_realm.agents import SubmissionPolicy
from sb3_realm.atomic import sha256_file
from sb3_realm.export import ExportError, build_submission, check_submission
from sb3_realm.export.build import next_steps
from sb3_realm.games.realm import features
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.models import nets
from sb3_realm.submission import PLATFORM_STUB

ROOT = Path(__file__).resolve().parents[1]
ALLOWED_IMPORTS = {"torch", "numpy", "kaiwu_agent"} | set(sys.stdlib_module_names)  # what the platform has


@pytest.fixture(scope="module")
def built(models, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("submissions")
    for name, path in models.items():
        build_submission(path, base / name, algo_dir="diy")
    return {name: base / name for name in models}


# ------------------------------------------------------------------------------------------ the package
def test_layout_and_manifest(built, models):
    folder = built["ppo"]
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    for need in ("diy/algorithm/agent.py", "diy/feature/definition.py", "diy/feature/features.py",
                 "diy/model/model.py", "diy/model/nets.py", "diy/model/spec.json", "diy/config.py",
                 "diy/train_workflow.py", "diy/manifest.json", "merge_into_configure_app.toml",
                 "ckpt/model.ckpt-512.pkl"):
        assert need in files
    assert not any(f.startswith("conf/") for f in files)  # never a conf/ that would replace the user's
    manifest = json.loads((folder / "diy" / "manifest.json").read_text())
    assert set(manifest["files"]) == set(files) - {"diy/manifest.json"}
    for rel, digest in manifest["files"].items():
        assert sha256_file(folder / rel) == digest
    assert manifest["source_model"]["sha256"] == sha256_file(models["ppo"])
    assert manifest["source_model"]["file"] == models["ppo"].name  # its name only: no local path travels
    assert manifest["feature_version"] == features.FEATURE_VERSION
    assert manifest["training_config"]["algo"]["name"] == "ppo"
    assert manifest["weights"]["file"] == "ckpt/model.ckpt-512.pkl" and manifest["weights"]["ckpt_id"] == 512
    merge = tomllib.loads((folder / "merge_into_configure_app.toml").read_text(encoding="utf-8"))
    assert merge == {"algo": "diy", "sample_dim": 10640, "preload_model": True,
                     "preload_model_dir": "/data/projects/back_to_the_realm/diy/ckpt", "preload_model_id": 512,
                     "eval_model_dir": "/data/projects/back_to_the_realm/ckpt", "eval_model_id": 512}
    assert list(merge)[-2:] == ["eval_model_dir", "eval_model_id"]


def test_features_and_nets_are_copied_verbatim(built):
    for folder in built.values():
        assert (folder / "diy/feature/features.py").read_bytes() == Path(features.__file__).read_bytes()
        assert (folder / "diy/model/nets.py").read_bytes() == Path(nets.__file__).read_bytes()


def test_submission_imports_only_torch_numpy_and_the_platform(built):
    """The package imports torch, numpy, the standard library, the platform's kaiwu_agent and its own algorithm folder,
    always absolutely (the platform's model loader rewrites ``from diy.`` lines; a relative import fails there)."""
    for path in built["recurrent_ppo"].rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: a relative import"
                names = [node.module.split(".")[0]]
            else:
                continue
            assert set(names) <= ALLOWED_IMPORTS | {"diy"}, f"{path}: imports {names}"
    assert not any(p.name == "kaiwu_agent" for p in built["ppo"].rglob("*"))  # the stand-in is never copied


def test_weights_are_a_plain_state_dict(built, models):
    from stable_baselines3 import PPO

    state = torch.load(built["ppo"] / "ckpt/model.ckpt-512.pkl", weights_only=True)
    assert all(isinstance(v, torch.Tensor) and v.device.type == "cpu" for v in state.values())
    policy = PPO.load(models["ppo"]).policy.state_dict()
    torch.testing.assert_close(state["action_net.weight"], policy["action_net.weight"], rtol=0, atol=0)
    torch.testing.assert_close(state["net.fuse.0.weight"], policy["features_extractor.net.fuse.0.weight"],
                               rtol=0, atol=0)
    recurrent = torch.load(built["recurrent_ppo"] / "ckpt/model.ckpt-512.pkl", weights_only=True)
    assert "lstm.weight_ih_l0" in recurrent and not any(k.startswith("lstm_critic") for k in recurrent)


def test_zip_holds_the_three_folders(models, tmp_path):
    """--zip: ckpt/, conf/ and the algorithm folder, as the 2024 recipe uploads them; only with a code package."""
    package = make_code_package(tmp_path / "code")
    build_submission(models["ppo"], tmp_path / "sub", make_zip=True, algo_dir="dqn", ckpt_id="7", code_package=package)
    with zipfile.ZipFile(tmp_path / "sub.zip") as archive:
        names = archive.namelist()
        conf = archive.read("conf/configure_app.toml").decode("utf-8")
    assert {n.split("/")[0] for n in names} == {"dqn", "ckpt", "conf"}
    assert "ckpt/model.ckpt-7.pkl" in names and not any(n.endswith(".tmp") for n in names)
    assert conf.splitlines()[-2:] == ['eval_model_dir = "/data/projects/back_to_the_realm/ckpt"', "eval_model_id = 7"]
    with pytest.raises(ExportError, match="--zip needs --code-package"):
        build_submission(models["ppo"], tmp_path / "other", make_zip=True)
    assert not (tmp_path / "other").exists()


def test_the_zip_is_readable_keeps_crlf_and_records_no_local_paths(models, tmp_path):
    """The archive and its files are 0644 (mkstemp's 0600 would hide it from the uploader); a CRLF conf keeps its
    line endings; other models' weights stay out (named in the next steps); the manifest names the model and the
    code package without their local paths, which would travel in every saved model."""
    package = make_code_package(tmp_path / "code")
    conf = package / "conf/configure_app.toml"
    conf.write_bytes(conf.read_bytes().replace(b"\n", b"\r\n"))
    (package / "ckpt").mkdir()
    (package / "ckpt/model.ckpt-3.pkl").write_bytes(b"another model's weights")
    (package / "ckpt/kaiwu.json").write_text('{"train_step": 3}', encoding="utf-8")  # that model's, too
    (package / "ckpt/id_list").write_text("all id list\nmodel.ckpt-3\n", encoding="utf-8")
    umask = os.umask(0o022)
    try:
        manifest = build_submission(models["ppo"], tmp_path / "sub", make_zip=True, ckpt_id=7, code_package=package)
    finally:
        os.umask(umask)
    assert manifest["zip"]["left_out"] == ["ckpt/id_list", "ckpt/kaiwu.json", "ckpt/model.ckpt-3.pkl"]
    assert "ckpt/model.ckpt-3.pkl" in next_steps(manifest, tmp_path / "sub")
    if os.name == "posix":
        assert stat.S_IMODE((tmp_path / "sub.zip").stat().st_mode) == 0o644
        assert stat.S_IMODE((tmp_path / "sub").stat().st_mode) == 0o755  # a folder's mode, not mkdtemp's 0700
    with zipfile.ZipFile(tmp_path / "sub.zip") as archive:
        assert all((info.external_attr >> 16) & 0o777 == 0o644 for info in archive.infolist())
        assert "ckpt/model.ckpt-7.pkl" in archive.namelist() and "ckpt/model.ckpt-3.pkl" not in archive.namelist()
        text = archive.read("conf/configure_app.toml")
    assert text.count(b"\r\n") == text.count(b"\n") > 40
    saved = (tmp_path / "sub/diy/manifest.json").read_text(encoding="utf-8")
    assert str(tmp_path) not in saved and tmp_path.as_posix() not in saved
    run = models["ppo"].parent  # the training run's folder, an absolute path in its config
    assert str(run) not in saved and manifest["training_config"]["out"] == run.name
    assert manifest["source_model"]["file"] == "final_model.zip" and manifest["code_package"]["folder"] == "code"


# ------------------------------------------------------------------------------------------ parity
def test_check_ppo_10k_states_and_30_leaderboard_games(built, models):
    report = check_submission(built["ppo"], models["ppo"], games=30, max_step=150, min_states=10_000)
    assert report["states"] >= 10_000 and report["leaderboard_games"] == 30
    assert report["identical_actions"] and report["mismatched_states"] == 0
    assert report["identical_scores"] and report["ok"]
    assert report["torch_threads"] == 1
    assert not set(report["imported_top_level_modules"]) & {"sb3_realm", "stable_baselines3", "gymnasium",
                                                            "sb3_contrib"}


@pytest.mark.parametrize("name", ["maskable_ppo", "recurrent_ppo"])
def test_check_maskable_and_recurrent(built, models, name):
    report = check_submission(built[name], models[name], games=6, max_step=150, min_states=2_000)
    assert report["ok"] and report["states"] >= 2_000, report["first_mismatches"]


def test_check_fails_when_the_weights_differ(built, models):
    report = check_submission(built["ppo"], models["maskable_ppo"], games=2, max_step=60, min_states=100)
    assert not report["ok"] and report["mismatched_states"] > 0 and report["first_mismatches"]


def test_guarded_process_cannot_import_sb3_realm(built):
    script = (f"import sys; sys.path.insert(0, {str(PLATFORM_STUB.parent)!r}); import harness; "
              "harness._STAND_IN.guard_imports(); import sb3_realm")
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True)
    assert out.returncode != 0 and "cannot be imported in a submission" in out.stderr


def test_eval_of_the_folder_matches_the_model(built, models):
    from sb3_realm.evaluation import evaluate

    kw = {"map_path": None, "games": 4, "max_step": 150, "yardstick": False, "seed": 3}
    folder = evaluate(str(built["maskable_ppo"]), env_kwargs={"map_name": "small", "mask_wall_moves": True}, **kw)
    model = evaluate(str(models["maskable_ppo"]), env_kwargs={"map_name": "small", "mask_wall_moves": True}, **kw)
    assert [g.score for g in folder.games] == [g.score for g in model.games]
    assert [g.steps for g in folder.games] == [g.steps for g in model.games]


def test_a_wall_masked_checkpoint_plays_with_its_runs_mask_in_any_env(models):
    """A MaskablePPO model trained with ``env.mask_wall_moves`` (its run's config.yaml) plays with that mask even in
    an env without the option: eval gives the same games with or without ``--mask-wall-moves``."""
    from sb3_realm.agents.sb3 import SB3Policy
    from sb3_realm.evaluation import evaluate

    policy = SB3Policy(models["maskable_ppo"])
    assert policy.mask_walls is True and SB3Policy(models["ppo"]).mask_walls is False
    env = RealmEnv(map_name="small", max_step=150, treasure_num=3)  # no wall mask of its own
    differ = 0
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        policy.reset(env)
        done = False
        while not done:
            action = policy.act(env, obs)
            assert env.action_masks(mask_walls=True)[action]  # never a move the model's own mask forbids
            differ += bool((env.action_masks(mask_walls=True) != env.action_masks()).any())
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    assert differ > 0  # the games met walls: the env's own mask would have let the model bump into them
    kw = {"map_path": None, "games": 4, "max_step": 150, "yardstick": False, "seed": 3}
    default = evaluate(str(models["maskable_ppo"]), env_kwargs={"map_name": "small"}, **kw)
    flagged = evaluate(str(models["maskable_ppo"]), env_kwargs={"map_name": "small", "mask_wall_moves": True}, **kw)
    assert [(g.score, g.steps) for g in default.games] == [(g.score, g.steps) for g in flagged.games]


def test_eval_refuses_a_package_changed_after_the_build(built, tmp_path):
    """``eval DIR`` verifies every file against the manifest before playing: bytecode caches are not part of a
    package; a changed, missing or extra file is named."""
    folder = tmp_path / "sub"
    shutil.copytree(built["ppo"], folder)
    (folder / "diy" / "feature" / "__pycache__").mkdir(exist_ok=True)
    (folder / "diy" / "feature" / "__pycache__" / "features.cpython-311.pyc").write_bytes(b"x")
    SubmissionPolicy(folder)  # as built (caches aside): it loads
    features_py = folder / "diy" / "feature" / "features.py"
    features_py.write_text(features_py.read_text(encoding="utf-8") + "\nSCALE = 2\n", encoding="utf-8")
    (folder / "diy" / "extra.py").write_text("x = 1\n", encoding="utf-8")
    (folder / "diy" / "model" / "spec.json").unlink()
    with pytest.raises(ValueError, match=r"not as build-submission wrote it \(changed diy/feature/features.py; "
                                         r"missing diy/model/spec.json; extra diy/extra.py\).*Rebuild it"):
        SubmissionPolicy(folder)
    out = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "eval", str(folder), "--games", "1",
                          "--no-yardstick"], capture_output=True, text=True)
    assert out.returncode == 2 and "changed diy/feature/features.py" in out.stderr
    assert "Traceback" not in out.stderr


def test_bad_outputs_and_check_options_are_refused_before_anything_is_built(models, tmp_path):
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    cli = [sys.executable, "-m", "sb3_realm.cli", "build-submission", str(models["ppo"])]
    for extra, fragment in ((["--out", str(tmp_path / "afile" / "sub")], "is a file, not a folder"),
                            (["--out", str(tmp_path / "sub"), "--check", "--check-games", "0"], "--check-games 0"),
                            (["--out", str(tmp_path / "sub"), "--check", "--check-states", "-1"], "--check-states -1")):
        out = subprocess.run([*cli, *extra], capture_output=True, text=True)
        assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
        assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_the_harness_stderr_is_drained_and_shown_when_it_crashes(built, tmp_path):
    """A package that writes much to stderr does not block its process (the pipe is read while it runs); one that
    crashes reports the end of its stderr."""
    import threading

    from sb3_realm.agents import SubmissionProcess

    noisy = tmp_path / "noisy"
    shutil.copytree(built["ppo"], noisy)
    agent = noisy / "diy" / "algorithm" / "agent.py"
    agent.write_text("import sys\nsys.stderr.write('x' * 1_000_000)\nsys.stderr.flush()\n" +
                     agent.read_text(encoding="utf-8"), encoding="utf-8")
    started = []

    def start():
        with SubmissionProcess(noisy) as proc:
            started.append(proc.hello)

    worker = threading.Thread(target=start, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert started, "the submission process blocked on a full stderr pipe"
    broken = tmp_path / "broken"
    shutil.copytree(built["ppo"], broken)
    agent = broken / "diy" / "algorithm" / "agent.py"
    agent.write_text("raise RuntimeError('agent import failed on purpose')\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match=r"failed to start:(.|\n)*agent import failed on purpose"):
        SubmissionProcess(broken)


def test_cli_build_check_and_eval(models, tmp_path):
    out = tmp_path / "sub"
    run = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "build-submission", str(models["ppo"]), "--out",
                          str(out), "--check", "--check-games", "3", "--check-states", "500", "--check-max-step", "80"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["check"]["ok"] and result["size_bytes"] > 0
    run = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "eval", str(out), "--games", "2", "--max-step", "50",
                          "--no-yardstick"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "game" in run.stdout


# ------------------------------------------------------------------------------------------ the agent
def test_recurrent_state_restarts_at_each_episode(built):
    env = RealmEnv(map_name="small", max_step=40, treasure_num=3)
    path_before = list(sys.path)
    policy = SubmissionPolicy(built["recurrent_ppo"])
    assert sys.path == path_before  # the platform stand-in is loaded without editing the caller's import path

    def play(p, seed):
        env.reset(seed=seed)
        actions, done = [], False
        while not done:
            a = p.act(env, None)
            actions.append(a)
            _, _, term, trunc, _ = env.step(a)
            done = term or trunc
        return actions

    first = play(policy, 1)
    second = play(policy, 2)  # the same Agent, a new game: its state must restart from the observation
    fresh = play(SubmissionPolicy(built["recurrent_ppo"]), 2)
    assert second == fresh and len(first) == 40
    assert policy.agent.lstm_state is not None


def test_predict_samples_legal_actions_and_samples_round_trip(built):
    policy = SubmissionPolicy(built["maskable_ppo"])
    d, agent = policy.definition, policy.agent
    env = RealmEnv(map_name="small", max_step=30, treasure_num=3, mask_wall_moves=True)
    env.reset(seed=0)
    frames = []
    for t in range(30):
        comp, info = env.competition_obs()
        obs = d.observation_process(comp, None if t == 0 else info)
        act = agent.predict([obs])[0]
        assert obs.legal_action[d.action_process(act)]
        _, reward, term, trunc, _ = env.step(d.action_process(act))
        frames.append(d.Frame(obs_data=obs, act_data=act, reward=reward, done=term or trunc))
    samples = d.sample_process(frames)
    assert samples[0].episode_start and not samples[1].episode_start
    flat = d.SampleData2NumpyData(samples[3])
    round_trip = d.NumpyData2SampleData(flat[None])  # as the replay buffer may hand it over: (1, SAMPLE_DIM)
    np.testing.assert_array_equal(round_trip.maps, samples[3].maps)
    assert round_trip.act == samples[3].act and round_trip.ret == pytest.approx(samples[3].ret)


def _workflow_module(folder):
    """The package's train_workflow module, imported as the platform's servers import it."""
    import importlib

    from sb3_realm.agents.submission import platform_framework

    with platform_framework().imported_package(folder, {"diy", "conf"}):
        return importlib.import_module("diy.train_workflow")


def test_train_workflow_rewards_the_oracle_episode_by_the_platform_score(built):
    """The template's reward, read the platform's way, on the oracle's game: one TREASURE_REWARD per treasure (at the
    step of its pickup) and the end reward at the last step."""
    from sb3_realm.games.realm import EpisodeConfig, small_map
    from sb3_realm.games.realm.experts import OraclePolicy
    from sb3_realm.games.realm.observation import CompetitionEnv, competition_observation

    policy = SubmissionPolicy(built["ppo"])
    workflow = _workflow_module(built["ppo"])
    game_map = small_map()
    env = CompetitionEnv(game_map, seed=1)
    usr_conf = {"diy": {"treasure_random": 1, "treasure_num": 3, "max_step": 300}}
    oracle = OraclePolicy(game_map)
    oracle.reset(EpisodeConfig.from_usr_conf(usr_conf["diy"]))

    class OracleAgent:  # the workflow's agent interface, acting as the oracle on the env's current state
        def predict(self, list_obs_data):
            return [policy.definition.ActData(act=oracle.act(*competition_observation(env.game)), prob=None)]

    frames, score = workflow.run_episode(env, OracleAgent(), env.reset(usr_conf=usr_conf), usr_conf)
    steps = len(frames)
    assert env.game.win and env.game.treasure_count == 3
    assert score == pytest.approx(150 + 300 + 0.2 * (300 - steps))
    rewards = [f.reward for f in frames]
    end = workflow.END_REWARD + workflow.STEP_LEFT_REWARD * (300 - steps)
    assert sum(rewards) == pytest.approx(3 * workflow.TREASURE_REWARD + end)
    assert rewards[-1] >= end and sum(r > 0 for r in rewards[:-1]) >= 2


# ------------------------------------------------------------------------------------------ errors
def test_models_and_packages_record_the_feature_version(models, built):
    from sb3_realm.models.saved import model_feature_version

    for name, path in models.items():
        assert model_feature_version(path) == features.FEATURE_VERSION
        assert json.loads(zipfile.ZipFile(path).read("data"))["feature_version"] == features.FEATURE_VERSION
        manifest = json.loads((built[name] / "diy" / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["feature_version"] == manifest["spec"]["feature_version"] == features.FEATURE_VERSION


def test_a_model_of_an_older_feature_version_is_refused_by_build_and_warned_by_eval(models, tmp_path):
    import shutil

    from sb3_realm.evaluation import evaluate
    from sb3_realm.models.saved import FeatureVersionWarning

    run = tmp_path / "old_run"
    shutil.copytree(models["ppo"].parent, run)
    make_legacy_run(run)  # as a model trained before versions were recorded: version 1
    with pytest.raises(ExportError, match=r"trained on features version 1, .* computes version 2.*retrain"):
        build_submission(run / "final_model.zip", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))
    with pytest.warns(FeatureVersionWarning, match="features version 1"):
        evaluate(str(run / "final_model.zip"), games=1, max_step=20, yardstick=False,
                 env_kwargs={"map_name": "small"})
    out = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "build-submission", str(run / "final_model.zip"),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert out.returncode == 2 and "retrain" in out.stderr and "Traceback" not in out.stderr


def test_a_model_whose_run_config_names_no_game_builds_as_the_realms_with_a_note(models, tmp_path):
    """A model trained before the package had a second game records no game: build-submission reads it as the
    Realm's, says so in one line, and the package is the one the same model with game: realm gives."""
    from sb3_realm.games import LegacyGameNote

    run = tmp_path / "old_run"
    shutil.copytree(models["ppo"].parent, run)
    model = run / "final_model.zip"
    with zipfile.ZipFile(model) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    assert data["sb3_realm_config"].pop("game") == "realm"
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(model, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    config = run / "config.yaml"
    config.write_text("".join(line for line in config.read_text(encoding="utf-8").splitlines(keepends=True)
                              if not line.startswith("game:")), encoding="utf-8")
    with pytest.warns(LegacyGameNote, match=r"names no game: read as Back to the Realm's"):
        build_submission(model, tmp_path / "out", algo_dir="diy")
    manifest = json.loads((tmp_path / "out" / "diy" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["game"] == "realm" and manifest["layout"] == "kaiwu2024"


def test_load_model_refuses_tampered_weights(built, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(built["ppo"], folder)
    weights = folder / "ckpt/model.ckpt-512.pkl"
    data = bytearray(weights.read_bytes())
    data[-20] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"not as build-submission wrote it \(changed ckpt/model.ckpt-512.pkl\)"):
        SubmissionPolicy(folder)  # eval DIR: the manifest check names the file
    from sb3_realm.agents import SubmissionProcess

    with pytest.raises(RuntimeError, match="checksum mismatch"):
        SubmissionProcess(folder)  # the package's own load_model refuses the weights too


def test_missing_and_corrupt_models(tmp_path):
    with pytest.raises(ExportError, match="does not exist"):
        build_submission(tmp_path / "nope.zip", tmp_path / "out")
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"not a zip at all")
    with pytest.raises(ExportError, match=r"is not a zip archive .* so it is not a Stable-Baselines3 checkpoint"):
        build_submission(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_truncated_model(models, tmp_path):
    data = models["ppo"].read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ExportError):
        build_submission(cut, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unsupported_extractor(tmp_path):
    from stable_baselines3 import PPO

    model = PPO("MultiInputPolicy", RealmEnv(map_name="small"), n_steps=16, batch_size=16)
    model.feature_version = features.FEATURE_VERSION  # trained with your own SB3 code on this version
    model.save(tmp_path / "default.zip")
    with pytest.raises(ExportError, match=r"no run config to rebuild them from.*--trust-pickle"):
        build_submission(tmp_path / "default.zip", tmp_path / "out")  # your own file: its pickles only on request
    with pytest.raises(ExportError, match="CombinedExtractor"):
        build_submission(tmp_path / "default.zip", tmp_path / "out", trust_pickle=True)
    assert not (tmp_path / "out").exists()


def test_existing_output_needs_force_and_is_left_untouched(models, tmp_path):
    out = tmp_path / "sub"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="--force"):
        build_submission(models["ppo"], out)
    assert (out / "keep.txt").read_text() == "mine"
    with pytest.raises(ExportError, match="not a package built by sb3-realm"):  # --force: only its own packages
        build_submission(models["ppo"], out, force=True)
    assert (out / "keep.txt").read_text() == "mine"
    (out / "keep.txt").unlink()
    out.rmdir()
    build_submission(models["ppo"], out)
    build_submission(models["ppo"], out, force=True)
    assert (out / "diy" / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]  # no temporary or backup folder left


def test_a_crash_mid_build_leaves_nothing(models, tmp_path, monkeypatch):
    from sb3_realm.export import build as export

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(export.torch, "save", boom)
    with pytest.raises(OSError, match="disk full"):
        build_submission(models["ppo"], tmp_path / "sub")
    assert list(tmp_path.iterdir()) == []


def test_bad_names(models, tmp_path):
    with pytest.raises(ExportError, match="--algo-dir"):
        build_submission(models["ppo"], tmp_path / "a", algo_dir="my-agent")
    with pytest.raises(ExportError, match="--layout"):
        build_submission(models["ppo"], tmp_path / "a", layout="kaiwu2099")
    for ckpt_id in ("../x", "1.5", "abc", "0", "-3"):  # the platform reads an integer >= 1
        with pytest.raises(ExportError, match=r"--ckpt-id .* must be an integer >= 1"):
            build_submission(models["ppo"], tmp_path / "a", ckpt_id=ckpt_id)
    with pytest.raises(ExportError, match="registers the algorithm folders diy, dqn, target_dqn only"):
        build_submission(models["ppo"], tmp_path / "a", algo_dir="my_agent")
    with pytest.raises(ExportError, match="--workflow 'train' is unknown"):
        build_submission(models["ppo"], tmp_path / "a", workflow="train")
    assert not (tmp_path / "a").exists()


def test_reset_observation_without_env_info_matches(real_map_path):
    """The platform's loop has no env_info right after reset: the features fill it in exactly."""
    for kwargs in ({"map_name": "small"}, {"map_path": str(real_map_path)}):
        env = RealmEnv(**kwargs)
        for seed in range(60):
            env.reset(seed=seed, options={"treasure_num": seed % 14} if seed % 3 else None)
            comp, info = env.competition_obs()
            with_info = features.arrays_from_competition(comp, info)
            without = features.arrays_from_competition(comp, None)
            for a, b in zip(with_info, without, strict=True):
                np.testing.assert_array_equal(a, b)
            assert features.episode_start(None) and features.episode_start(info)


def test_wheel_ships_the_templates_and_harness(tmp_path):
    """build-submission must work from an installed wheel: the top-level submission/ folder is installed as
    sb3_realm.submission, its templates and harness as package data (never a top-level module named submission)."""
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                          str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (wheel,) = tmp_path.glob("sb3_realm-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    template = ROOT / "submission"
    sources = [p for p in template.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) >= 10
    for path in [*sources, *template.glob("*/layout.toml")]:
        assert f"sb3_realm/submission/{path.relative_to(template).as_posix()}" in names
    assert "sb3_realm/games/realm/features.py" in names and "sb3_realm/models/nets.py" in names
    assert not [n for n in names if n.split("/")[0] in ("submission", "tools", "tests")]
    # installed from the wheel (ahead of the editable install on the path), the package finds its templates
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site),
                          str(wheel)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    probe = ("import sb3_realm.submission as s; print(s.__file__); print(sorted(s.LAYOUTS) == ['gorge15', 'kaiwu2024'] "
             "and all((p / s.layout_spec(n)['template'] / 'agent.py').is_file() or "
             "(p / s.layout_spec(n)['template'] / 'algorithm' / 'agent.py').is_file() for n, p in s.LAYOUTS.items()) "
             "and all((s.COMMON / f).is_file() for n in s.LAYOUTS for f in s.layout_spec(n)['common']) and "
             "s.HARNESS.is_file() and (s.PLATFORM_STUB / 'framework.py').is_file() and "
             "(s.LAYOUTS['gorge15'] / 'platform' / 'framework.py').is_file() and "
             "(s.LAYOUTS['gorge15'] / 'agent_diy' / 'conf' / 'train_env_conf.toml').is_file())")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(site)})
    assert out.returncode == 0, out.stderr
    installed_at, ok = out.stdout.split()
    assert Path(installed_at).is_relative_to(site) and ok == "True"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_full_check_on_the_default_protocol(built, models, name):
    """The check as the CLI runs it by default: the 30 leaderboard games (max_step 2000) and >= 10,000 states."""
    report = check_submission(built[name], models[name])
    assert report["ok"] and report["states"] >= 10_000 and report["leaderboard_games"] == 30


@pytest.mark.slow
def test_build_submission_from_an_installed_wheel(models, tmp_path):
    """The wheel installed into a fresh venv (dependencies from the system site) builds and checks a package."""
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else sysconfig.get_default_scheme()  # bin/ or Scripts/
    scripts = Path(sysconfig.get_path("scripts", scheme, vars={"base": str(venv), "platbase": str(venv)}))
    python = scripts / ("python.exe" if os.name == "nt" else "python")
    (wheel,) = wheels.glob("sb3_realm-*.whl")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True)
    where = subprocess.run([str(python), "-c", "import sb3_realm; print(sb3_realm.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv))
    out = subprocess.run([str(scripts / "sb3-realm"), "build-submission", str(models["ppo"]), "--out",
                          str(tmp_path / "sub"), "--check", "--check-games", "2", "--check-states", "300",
                          "--check-max-step", "100"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["check"]["ok"]


def test_force_never_removes_work_it_did_not_write(models, tmp_path):
    """--force replaces a package build-submission wrote (bytecode caches included), never a run folder holding
    the source model, a folder with other files, or an unrelated <out>.zip; --zip alone never overwrites."""
    run = models["ppo"].parent
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(ExportError, match="holds the model being packaged"):
        build_submission(models["ppo"], run, force=True)
    assert sorted(p.name for p in run.iterdir()) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(ExportError, match="not a package built by sb3-realm"):
        build_submission(models["ppo"], mine, force=True)
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "keep"
    out, package = tmp_path / "sub", make_code_package(tmp_path / "code")
    build_submission(models["ppo"], out, make_zip=True, code_package=package)
    (out / "diy" / "__pycache__").mkdir()
    (out / "diy" / "__pycache__" / "agent.cpython-311.pyc").write_bytes(b"x")
    build_submission(models["ppo"], out, make_zip=True, force=True, code_package=package)  # over its own package
    (out / "diy" / "mine.py").write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(ExportError, match=r"holds files build-submission did not write \(diy/mine.py\)"):
        build_submission(models["ppo"], out, force=True)
    assert (out / "diy" / "mine.py").exists()
    other = tmp_path / "other"
    (tmp_path / "other.zip").write_bytes(b"my archive")
    with pytest.raises(ExportError, match=r"other.zip' already exists; pass --force"):
        build_submission(models["ppo"], other, make_zip=True, code_package=package)
    with pytest.raises(ExportError, match="not a package archive written by build-submission"):
        build_submission(models["ppo"], other, make_zip=True, force=True, code_package=package)
    assert (tmp_path / "other.zip").read_bytes() == b"my archive" and not other.exists()
