"""robot_vacuum's 13.0.1 code package (layout ``vacuum13``, brought by the game: ``sb3_realm_vacuum.layout`` and
``platform_layout/``): build-submission builds a tiny model into a copy of a 13.0.1 code package (the stand-in of the
user's own in ``fixtures/robot_vacuum_code_package``), ``--check`` runs it on the layout's stand-in of the 13.0.1
framework in processes that cannot import sb3_realm, SB3, gymnasium or this game, with every action and score the
model's; a package of another edition or game is refused, and a broken package fails the check."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import torch
import yaml
from sb3_realm_vacuum import features
from sb3_realm_vacuum.env import VacuumEnv
from sb3_realm_vacuum.layout import LAYOUT_FOLDER, LAYOUT_NAME, run_task
from sb3_realm_vacuum.rules import VacuumConfig
from sb3_realm_vacuum.spec import SPEC

from sb3_realm import cli, games
from sb3_realm.agents import SB3Policy, SubmissionPolicy
from sb3_realm.export import ExportError, build_submission, check_submission, layouts
from sb3_realm.submission import LAYOUTS

pytestmark = pytest.mark.processes

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "robot_vacuum_code_package"
TEMPLATE = LAYOUT_FOLDER / "agent_diy"
# the check's games, kept short: 2 games of at most 150 steps (the battery lasts 200), 300 states at least
CHECK = ["--check-games", "2", "--check-states", "300", "--check-max-step", "150"]


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A tiny MaskablePPO model of robot_vacuum, trained for 128 steps by ``sb3-realm train`` in this process."""
    folder = tmp_path_factory.mktemp("vacuum_model")
    config = {
        "game": "robot_vacuum", "total_timesteps": 128, "seed": 0, "out": str(folder / "run"), "torch_threads": 1,
        "checkpoint_freq": 128, "keep_checkpoints": 1, "eval_freq": 128, "eval_games": 1, "eval_maps": ["own_9"],
        "progress_bar": False, "env": {"usr_conf": {"max_step": 60}, "n_envs": 2},
        "algo": {"name": "maskable_ppo", "hyperparams": {"n_steps": 64, "batch_size": 64, "n_epochs": 1},
                 "extractor": "gorge", "extractor_kwargs": {"features_dim": 32, "cnn_channels": [8, 8, 8]},
                 "net_arch": {"pi": [32], "vf": [32]}},
    }
    recipe = folder / "vacuum.yaml"
    recipe.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert cli.main(["train", "--config", str(recipe), "--no-progress"]) == 0
    return folder / "run" / "final_model.zip"


@pytest.fixture(scope="module")
def built(model, tmp_path_factory) -> Path:
    """The package built from :func:`model` into a copy of the fixture's code package."""
    out = tmp_path_factory.mktemp("vacuum_build") / "upload"
    build_submission(model, out, code_package=FIXTURE)
    return out


def _copy(folder: Path, target: Path, edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of a built folder with ``rel: (old, new)`` text replaced (each ``old`` must be there)."""
    shutil.copytree(folder, target)
    for rel, (old, new) in edits.items():
        text = (target / rel).read_text(encoding="utf-8")
        assert old in text, (rel, old)
        (target / rel).write_text(text.replace(old, new), encoding="utf-8")
    return target


def _framework():
    """The stand-in's framework in this process: Gorge Chase's 15.0.1 one as the layout's ``platform/framework.py``
    loads it (it imports only the standard library and numpy)."""
    spec = importlib.util.spec_from_file_location("vacuum13_framework", LAYOUT_FOLDER / "platform" / "framework.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load(LAYOUTS["gorge15"] / "platform", LAYOUT_FOLDER)


# ------------------------------------------------------------------------------------------ the layout
def test_the_game_brings_its_layout_and_importing_it_is_cheap():
    assert SPEC.submission.layouts == (LAYOUT_NAME,) == ("vacuum13",)
    assert games.layout_folder(LAYOUT_NAME) == LAYOUT_FOLDER
    layout = layouts.get(LAYOUT_NAME)  # made from the folder its game names, the class its layout.toml names
    assert type(layout).__name__ == "Vacuum13" and type(layout).__module__ == "sb3_realm_vacuum.layout"
    assert layout.algo_dirs == ["agent_diy", "agent_ppo"] and layout.default_algo_dir == "agent_diy"
    assert layout.spec["project_code"] == "robot_vacuum" and layout.spec["versions"] == ["13.0."]
    assert LAYOUT_NAME not in layouts.names()  # the game's, not the shared registry's
    # the spec may import the layout's module for its names: that loads neither torch nor sb3_realm
    probe = ("import sys, sb3_realm_vacuum.layout as m; "
             "print(m.LAYOUT_NAME, sorted({'torch', 'sb3_realm'} & set(sys.modules)))")
    # the package's folder on the path, as pytest's pythonpath puts it here: the package need not be installed
    folder = str(LAYOUT_FOLDER.parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip() == "vacuum13 []", done.stderr[-2000:]


def test_the_template_runs_on_the_platforms_python_and_imports_nothing_of_ours():
    for path in sorted(TEMPLATE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path), feature_version=(3, 8))  # the platform's Python
        imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom) and node.module}
        assert not imported & {"sb3_realm", "sb3_realm_vacuum", "stable_baselines3", "sb3_contrib", "gymnasium"}, path


def test_the_stand_in_takes_the_8_moves_and_robot_vacuums_env_conf():
    framework = _framework()
    assert framework.N_ACTIONS == 8
    assert framework.action_of(7) == 7 and framework.action_of([3]) == 3
    for answer in (8, 15, -1, True, "1"):  # Gorge Chase's stand-in takes 8..15 (its flashes); this one does not
        with pytest.raises(framework.PlatformError, match=r"an int 0\.\.7"):
            framework.action_of(answer)
    spec = importlib.util.spec_from_file_location(
        "vacuum13_env_conf", LAYOUT_FOLDER / "platform" / "tools" / "train_env_conf_validate.py")
    validate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(validate)
    log = framework.Log()
    template = TEMPLATE / "conf" / "train_env_conf.toml"
    conf = validate.read_usr_conf(template, log)["env_conf"]
    assert conf == VacuumConfig().to_usr_conf()  # the template's training games: the competition's defaults
    assert validate.read_usr_conf(FIXTURE / "agent_diy" / "conf" / "train_env_conf.toml", log) is not None
    assert not log.errors
    for text, message in (("robot_count = 0", "robot_count = 0 is outside 1..4"),
                          ("battery_max = 99", "battery_max = 99 is outside 100..999"),
                          ("map = [0, 1]", "map = [0, 1] must be a non-empty list of map ids 1..10"),
                          ("treasure_count = 3", "unknown keys ['treasure_count']")):
        assert message in validate._problem(tomllib.loads(f"[env_conf]\n{text}\n")["env_conf"]), text


# ------------------------------------------------------------------------------------------ the build
def test_build_submission_check_passes_on_the_stand_in(model, tmp_path, capsys):
    before = _tree_digest(FIXTURE)
    out = tmp_path / "upload"
    status = cli.main(["build-submission", str(model), "--out", str(out), "--code-package", str(FIXTURE), "--zip",
                       "--check", *CHECK])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert status == 0, json.dumps(result.get("check"), indent=1)[-3000:]
    check = result["check"]
    assert check["ok"] and check["identical_actions"] and check["identical_scores"] and check["mismatched_states"] == 0
    assert check["states"] >= 300 and check["games"] >= 2 and check["protocol_games"] == 2
    assert check["package_scores"] == check["sb3_scores"] == check["stand_in_scores"]
    assert check["leaked_modules"] == [] and check["evaluation_errors"] == [] and check["saves_play_as_themselves"]
    task = check["platform_task"]
    assert task["ok"] and task["errors"] == [] and task["episodes"] >= 3 and task["faults_injected"] > 0
    assert len(task["saves"]) >= 2 and all(s["exported_weights"] and s["plays_own_weights"] for s in task["saves"])
    assert task["monitor_keys"] == ["reward"] and "reward" in task["panel_metrics"]  # the user's panel, kept
    manifest = json.loads((out / "agent_diy" / "manifest.json").read_text(encoding="utf-8"))
    with zipfile.ZipFile(result["zip"]) as archive:
        names = set(archive.namelist())
    for rel in ("kaiwu.json", "train_test.py", "conf/configure_app.toml", "conf/app_conf_robot_vacuum.toml",
                "conf/algo_conf_robot_vacuum.toml", "agent_diy/agent.py", "agent_diy/feature/features.py",
                "agent_diy/feature/memory.py", "agent_diy/feature/planner.py", "agent_diy/feature/rules.py",
                "agent_diy/model/model.py", "agent_diy/model/spec.json", "agent_diy/workflow/train_workflow.py",
                manifest["weights"]["file"], "agent_ppo/agent.py"):
        assert rel in names, rel
    assert "preload_model_id" in captured.err  # the layout's next steps
    assert _tree_digest(FIXTURE) == before  # the user's code package is only read


def test_the_package_is_a_copy_of_the_code_package_with_the_policy(built):
    manifest = json.loads((built / "agent_diy" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["layout"] == "vacuum13" and manifest["game"] == "robot_vacuum"
    assert manifest["algo_dir"] == "agent_diy" and manifest["game_path"] == "sb3_realm_vacuum.spec:SPEC"
    ckpt = manifest["weights"]["ckpt_id"]
    assert manifest["weights"]["file"] == f"agent_diy/ckpt/model.ckpt-{ckpt}.pkl"
    assert manifest["code_package"]["kaiwu"] == {"version": "13.0.1-comp-normal-lite.26comp",
                                                 "project_code": "robot_vacuum"}
    source = Path(features.__file__).parent
    for name in ("features.py", *features.COMPANION_FILES):  # the game's features, verbatim, with their companions
        assert (built / "agent_diy" / "feature" / name).read_bytes() == (source / name).read_bytes(), name
    spec = json.loads((built / "agent_diy" / "model" / "spec.json").read_text(encoding="utf-8"))
    assert spec["n_actions"] == 8 and spec["maps_shape"] == list(features.MAP_SHAPE)
    # the user's own files outside the algorithm folder, and their training games and panel inside it, are kept
    for rel in ("kaiwu.json", "train_test.py", "conf/.gitignore", "agent_ppo/agent.py", "agent_ppo/conf/conf.py",
                "agent_diy/conf/train_env_conf.toml", "agent_diy/conf/monitor_builder.py"):
        assert (built / rel).read_bytes() == (FIXTURE / rel).read_bytes(), rel
    assert (built / "agent_diy" / "conf" / "conf.py").read_bytes() == (TEMPLATE / "conf" / "conf.py").read_bytes()
    # the conf, line for line as the user's, with only the algorithm that trains and the preload keys edited
    changed = {}
    for rel in ("conf/app_conf_robot_vacuum.toml", "conf/configure_app.toml", "conf/algo_conf_robot_vacuum.toml"):
        old = (FIXTURE / rel).read_text(encoding="utf-8").splitlines()
        new = (built / rel).read_text(encoding="utf-8").splitlines()
        assert len(old) == len(new), rel
        changed[rel] = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert changed == {"conf/app_conf_robot_vacuum.toml": [('algo = "ppo"', 'algo = "diy"')],
                       "conf/configure_app.toml": [("preload_model = false", "preload_model = true"),
                                                   ("preload_model_id = 1000", f"preload_model_id = {ckpt}")],
                       "conf/algo_conf_robot_vacuum.toml": []}


def test_agent_ppo_can_be_chosen(model, tmp_path):
    out = tmp_path / "upload"
    manifest = build_submission(model, out, code_package=FIXTURE, algo_dir="agent_ppo", ckpt_id=7)
    assert manifest["weights"]["file"] == "agent_ppo/ckpt/model.ckpt-7.pkl"
    assert (out / manifest["weights"]["file"]).is_file()
    policy = tomllib.loads((out / "conf/app_conf_robot_vacuum.toml").read_text(encoding="utf-8"))
    assert policy["robot_vacuum"]["policies"]["train_one"]["algo"] == "ppo"
    app = tomllib.loads((out / "conf/configure_app.toml").read_text(encoding="utf-8"))["app"]
    assert (app["preload_model"], app["preload_model_dir"], app["preload_model_id"]) == (True, "{agent_name}/ckpt", 7)
    source = (out / "agent_ppo" / "agent.py").read_text(encoding="utf-8")
    assert "from agent_ppo.feature.features import" in source and "agent_diy" not in source
    for rel in ("agent_ppo/conf/train_env_conf.toml", "agent_ppo/conf/monitor_builder.py", "agent_diy/agent.py"):
        assert (out / rel).read_bytes() == (FIXTURE / rel).read_bytes(), rel  # the user's own, kept


@pytest.mark.parametrize(("kaiwu", "message"), [
    ({"version": "15.0.1-comp-normal-lite.26comp", "project_code": "robot_vacuum"},
     r"project 'robot_vacuum' version '15\.0\.1-comp-normal-lite\.26comp'.*vacuum13 builds for 'robot_vacuum' "
     r"version 13\.0\.x"),
    ({"version": "13.0.1-comp-normal-lite.26comp", "project_code": "gorge_chase"},
     r"project 'gorge_chase' version '13\.0\.1.*vacuum13 builds for 'robot_vacuum'"),
    (None, r"has no kaiwu\.json\. .*\{\"version\": \"13\.0\.x\", \"project_code\": \"robot_vacuum\"\}"),
])
def test_a_code_package_of_another_edition_or_game_is_refused(model, tmp_path, kaiwu, message):
    package = shutil.copytree(FIXTURE, tmp_path / "package")
    if kaiwu is None:  # a copy from a repository, without the client's kaiwu.json
        (package / "kaiwu.json").unlink()
    else:
        (package / "kaiwu.json").write_text(json.dumps(kaiwu), encoding="utf-8")
    out = tmp_path / "upload"
    with pytest.raises(ExportError, match=message):
        build_submission(model, out, code_package=package)
    assert not out.exists()


@pytest.mark.parametrize(("options", "message"), [
    ({"code_package": None}, r"--layout vacuum13 needs --code-package: .*robot_vacuum 13\.0\.1 code package"),
    ({"layout": "gorge15"}, r"--layout 'gorge15' is a layout of another game.*vacuum13"),
    ({"algo_dir": "agent_dqn"}, r"agent_diy, agent_ppo only"),
])
def test_bad_requests_are_refused_before_anything_is_written(model, tmp_path, options, message):
    out = tmp_path / "upload"
    with pytest.raises(ExportError, match=message):
        build_submission(model, out, **{"code_package": FIXTURE, **options})
    assert not out.exists()


# ------------------------------------------------------------------------------------------ the Agent, the stand-in
@pytest.fixture
def own_stand_in_modules():
    """The platform's modules of this process (``kaiwudrl``, ``common_python``, ``tools``: another layout's stand-in
    may have loaded them) set aside while a test loads this layout's, and put back after it."""
    names = ("kaiwudrl", "common_python", "tools")
    saved = {k: m for k, m in sys.modules.items() if k.split(".")[0] in names}
    for key in saved:
        del sys.modules[key]
    yield
    for key in [k for k in sys.modules if k.split(".")[0] in names]:
        del sys.modules[key]
    sys.modules.update(saved)


def test_the_agent_keeps_the_13_0_1_contract_and_plays_as_the_model(built, model, own_stand_in_modules):
    policy = SubmissionPolicy(built)  # the package in this process, on the layout's stand-in modules
    # its modules: this layout's packages, holding Gorge Chase's 15.0.1 stand-in modules (the framework is the same)
    assert sys.modules["kaiwudrl"].__file__ == str(LAYOUT_FOLDER / "platform" / "kaiwudrl" / "__init__.py")
    assert Path(sys.modules["kaiwudrl.interface.agent"].__file__).is_relative_to(LAYOUTS["gorge15"] / "platform")
    agent = policy.agent
    assert inspect.signature(agent.reset).parameters["env_obs"].default is inspect.Parameter.empty  # required
    env, reference = VacuumEnv(), SB3Policy(model)
    obs, _ = env.reset(seed=3, options={"max_step": 120})
    agent.reset(env.platform_obs())
    reference.reset(env)
    cleaned, done, actions = 0, False, set()
    while not done:
        action = agent.exploit(env.platform_obs())
        actions.add(action)
        assert isinstance(action, int) and 0 <= action < 8 and action == reference.act(env, obs)
        # exploit processed the observation: its reward is the cells the robot cleaned in the step that led here
        assert agent.last_reward == float(env.game.clean_score - cleaned) and agent.last_action == action
        cleaned = env.game.clean_score
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    assert env.game.step_no == 120 or env.game.terminated
    assert len(actions) >= 2  # the policy's moves depend on what it sees: the comparison is not of a constant
    assert cleaned > 0  # and the rewards compared were not all 0
    obs_data, remain_info = agent.observation_process(env.platform_obs())
    assert remain_info == {}  # 13.0.1: the reward is the Agent's own (last_reward), not in remain_info
    assert obs_data.legal_action.shape == (8,) and obs_data.maps.shape == features.MAP_SHAPE
    assert agent.last_reward == float(env.game.clean_score - cleaned)


def test_a_package_that_breaks_the_platform_fails_its_task(built, tmp_path):
    # an Agent that imports this game's package, which the platform does not have
    broken = _copy(built, tmp_path / "imports", {"agent_diy/agent.py": ("import sys\n",
                                                                        "import sys\n\nimport sb3_realm_vacuum\n")})
    report = run_task(broken, tmp_path / "task1")
    assert not report["ok"] and "sb3_realm_vacuum" in report["platform_error"]
    # training games the platform rejects: the workflow logs the error and ends, the task saves nothing
    bad_conf = _copy(built, tmp_path / "conf", {"agent_diy/conf/train_env_conf.toml": ("robot_count = 3",
                                                                                       "robot_count = 0")})
    report = run_task(bad_conf, tmp_path / "task2")
    assert not report["ok"] and report["saves"] == [] and report["episodes"] == 0
    assert any("robot_count = 0 is outside 1..4" in line for line in report["errors"])


def test_an_agent_that_plays_another_move_fails_the_check(built, model, tmp_path):
    broken = _copy(built, tmp_path / "moves", {"agent_diy/agent.py": (
        "        return self.action_process(act_data, is_stochastic=False)\n",
        "        return (self.action_process(act_data, is_stochastic=False) + 1) % 8\n")})
    report = check_submission(broken, model, games=1, max_step=60, min_states=60)
    assert report["platform_task"]["ok"]  # the training task uses predict, unchanged
    assert not report["ok"] and not report["identical_actions"] and report["mismatched_states"] == report["states"]
    assert report["first_mismatches"][0]["package"] == (report["first_mismatches"][0]["sb3"] + 1) % 8


def test_a_training_task_plays_the_open_maps_of_maps_dir(tmp_path):
    from sb3_realm_vacuum.layout import _task_maps
    from sb3_realm_vacuum.maps import save_map, shipped_map
    from sb3_realm_vacuum.spec import same_map

    names = [f"standin_{k}" for k in range(1, 6)] + [f"own_{k}" for k in range(1, 6)]
    for k, name in enumerate(names, 1):  # a folder of the competition's map files, robot_vacuum_map_<k>.json
        save_map(shipped_map(name), tmp_path / f"robot_vacuum_map_{k}.json", fmt="gorge")
    maps = _task_maps(str(tmp_path))
    assert sorted(maps) == list(range(1, 11))
    assert all(same_map(maps[k], shipped_map(name)) for k, name in enumerate(names, 1))
    own = _task_maps(None)  # without a folder: the package's own ten, ids 1..10
    assert all(same_map(own[k], shipped_map(f"own_{k}")) for k in range(1, 11))
    (tmp_path / "robot_vacuum_map_7.json").unlink()
    with pytest.raises(ValueError, match=r"holds no map 7: looked for robot_vacuum_map_7\.json"):
        _task_maps(str(tmp_path))


def test_the_stand_in_finds_sb3_realms_files_without_importing_it(tmp_path):
    # a wheel's install: sb3_realm/submission/ inside the package (here a bare copy of the two folders' shape), found
    # by the import system's finders in a process where sb3_realm is never imported
    site = tmp_path / "site"
    for folder in ("sb3_realm", "sb3_realm/submission"):
        (site / folder).mkdir(parents=True)
        (site / folder / "__init__.py").write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    probe = ("import importlib.util, sys; sys.path.insert(0, sys.argv[1]); "
             "spec = importlib.util.spec_from_file_location('harness', sys.argv[2]); "
             "harness = importlib.util.module_from_spec(spec); spec.loader.exec_module(harness); "
             "print(harness._shipped_submission(), 'sb3_realm' in sys.modules)")

    def found(path_entry: Path) -> list[str]:
        done = subprocess.run([sys.executable, "-I", "-c", probe, str(path_entry), str(LAYOUT_FOLDER / "harness.py")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()

    assert found(site) == [str((site / "sb3_realm" / "submission").resolve()), "False"]
    # this installation's (an editable one here): the folder sb3_realm.submission is imported from
    assert found(tmp_path / "nothing") == [str(LAYOUTS["gorge15"].parent.resolve()), "False"]
