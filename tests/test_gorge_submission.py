"""build-submission for Gorge Chase (``--layout gorge15``): the package built into a copy of a 15.0.1 code package
(its conf kept key for key, only the algorithm and preload keys edited), the stand-in of the 15.0.1 framework and its
contracts (each test breaks one and sees the stand-in refuse it), and ``--check`` (the training task keeps the
exported weights; the evaluation loop plays the SB3 model's actions on 10,000 states with its scores)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import torch
from helpers import GORGE_USER_TRAIN_CONF, make_gorge_code_package, small_gorge_model, tree_digest

from sb3_realm.agents.submission import read_manifest
from sb3_realm.cli import main
from sb3_realm.evaluation import evaluate
from sb3_realm.export import ExportError, build_submission, check_submission, same_weights
from sb3_realm.export.build import next_steps
from sb3_realm.export.check import check_on_own_stand_in, run_own_platform_task
from sb3_realm.export.code_package import edit_settings, ensure_table
from sb3_realm.games.gorge import features
from sb3_realm.games.gorge.rules import SETTINGS
from sb3_realm.submission import LAYOUTS

LAYOUT = LAYOUTS["gorge15"]
@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gorge15")
    model = small_gorge_model(root / "model.zip")
    package = make_gorge_code_package(root / "code_package")
    out = root / "upload"
    build_submission(model, out, code_package=package, game="gorge", trust_pickle=True)
    return {"root": root, "model": model, "package": package, "out": out}


def _copy(folder: Path, target: Path, edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of a built folder with ``rel: (old, new)`` text replaced (each ``old`` must be there)."""
    shutil.copytree(folder, target)
    for rel, (old, new) in edits.items():
        text = (target / rel).read_text(encoding="utf-8")
        assert old in text, (rel, old)
        (target / rel).write_text(text.replace(old, new), encoding="utf-8")
    return target


def _framework():
    """The stand-in's framework module in this process (it imports only the standard library and numpy)."""
    spec = importlib.util.spec_from_file_location("gorge15_framework", LAYOUT / "platform" / "framework.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------ the build
def test_the_package_is_a_copy_of_the_code_package_with_the_policy(setup):
    out, package = setup["out"], setup["package"]
    manifest = json.loads((out / "agent_diy" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["layout"] == "gorge15" and manifest["game"] == "gorge" and manifest["algo_dir"] == "agent_diy"
    assert manifest["game_path"] == "sb3_realm.games.gorge.spec:SPEC"  # where the game is read back from
    assert manifest["weights"]["file"] == "agent_diy/ckpt/model.ckpt-64.pkl"
    for rel in ("agent.py", "algorithm/algorithm.py", "conf/conf.py", "feature/definition.py", "feature/features.py",
                "model/model.py", "model/weights.py", "model/nets.py", "model/spec.json",
                "workflow/train_workflow.py", "ckpt/model.ckpt-64.pkl"):
        assert (out / "agent_diy" / rel).is_file(), rel
    from sb3_realm.models import nets

    assert (out / "agent_diy/feature/features.py").read_bytes() == Path(features.__file__).read_bytes()
    assert (out / "agent_diy/model/nets.py").read_bytes() == Path(nets.__file__).read_bytes()
    # the user's own files outside the algorithm folder, and their training games and panel inside it, are kept
    for rel in ("kaiwu.json", "train_test.py", "conf/.gitignore", "agent_ppo/agent.py",
                "agent_diy/conf/monitor_builder.py"):
        assert (out / rel).read_bytes() == (package / rel).read_bytes(), rel
    assert (out / "agent_diy/conf/train_env_conf.toml").read_text(encoding="utf-8") == GORGE_USER_TRAIN_CONF
    state = torch.load(out / manifest["weights"]["file"], weights_only=True)
    assert set(state) >= {"net.cnn.0.weight", "action_net.weight"}


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b, strict=True) if x != y]


def test_only_the_algorithm_and_the_preload_keys_are_edited(setup):
    out, package = setup["out"], setup["package"]
    conf = {rel: ((package / rel).read_text(encoding="utf-8"), (out / rel).read_text(encoding="utf-8"))
            for rel in ("conf/app_conf_gorge_chase.toml", "conf/configure_app.toml", "conf/algo_conf_gorge_chase.toml")}
    assert _changed_lines(*conf["conf/app_conf_gorge_chase.toml"]) == [('algo = "ppo"', 'algo = "diy"')]
    assert _changed_lines(*conf["conf/configure_app.toml"]) == [("preload_model = false", "preload_model = true"),
                                                                ("preload_model_id = 1000", "preload_model_id = 64")]
    assert conf["conf/algo_conf_gorge_chase.toml"][0] == conf["conf/algo_conf_gorge_chase.toml"][1]
    app = tomllib.loads(conf["conf/configure_app.toml"][1])["app"]
    assert app["preload_model_dir"] == "{agent_name}/ckpt" and app["train_batch_size"] == 2048


def test_a_missing_algorithm_table_is_added_and_agent_ppo_can_be_chosen(setup, tmp_path):
    package = shutil.copytree(setup["package"], tmp_path / "package")
    registry = package / "conf/algo_conf_gorge_chase.toml"
    registry.write_text(registry.read_text(encoding="utf-8").split("[diy]")[0], encoding="utf-8")
    before = tree_digest(package)
    build_submission(setup["model"], tmp_path / "a", code_package=package, game="gorge", trust_pickle=True)
    added = tomllib.loads((tmp_path / "a/conf/algo_conf_gorge_chase.toml").read_text(encoding="utf-8"))
    assert added["diy"]["actor_agent"] == "agent_diy.agent.Agent" and "ppo" in added
    build_submission(setup["model"], tmp_path / "b", code_package=package, game="gorge", trust_pickle=True,
                     algo_dir="agent_ppo", ckpt_id=7)
    policy = tomllib.loads((tmp_path / "b/conf/app_conf_gorge_chase.toml").read_text(encoding="utf-8"))
    assert policy["gorge_chase"]["policies"]["train_one"]["algo"] == "ppo"
    assert (tmp_path / "b/agent_ppo/ckpt/model.ckpt-7.pkl").is_file()
    assert "from agent_diy" not in (tmp_path / "b/agent_ppo/agent.py").read_text(encoding="utf-8")
    assert tree_digest(package) == before  # the code package is only read


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"code_package": None}, r"needs --code-package"),
    ({"algo_dir": "diy"}, r"agent_diy, agent_ppo only"),
    ({"layout": "kaiwu2024"}, r"layout of another game"),
    ({"game": "chess"}, r"chess"),
    ({"package_kaiwu": {"version": "10.2.1", "project_code": "back_to_the_realm"}},
     r"project 'back_to_the_realm' version '10.2.1'.*gorge15 builds for 'gorge_chase' version 15\.0\.x"),
    ({"package_kaiwu": {"version": "14.1", "project_code": "gorge_chase"}}, r"version '14.1'"),
    ({"package_kaiwu": None}, r"has no kaiwu.json\. .*at its root.*\{\"version\": \"15\.0\.x\", \"project_code\": "
                              r"\"gorge_chase\"\}.*copy its kaiwu\.json to the root"),
])
def test_bad_requests_are_refused_before_anything_is_written(setup, tmp_path, kwargs, message):
    package = shutil.copytree(setup["package"], tmp_path / "package")
    if "package_kaiwu" in kwargs:
        kaiwu = kwargs.pop("package_kaiwu")
        if kaiwu is None:  # a copy from a repository, without the client's kaiwu.json
            (package / "kaiwu.json").unlink()
        else:
            (package / "kaiwu.json").write_text(json.dumps(kaiwu), encoding="utf-8")
    options = {"code_package": package, "game": "gorge", "trust_pickle": True, **kwargs}
    with pytest.raises(ExportError, match=message):
        build_submission(setup["model"], tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()


def test_the_zip_leaves_out_editors_folders_and_other_models_weights(setup, tmp_path):
    """A user's copy of the package with editors' folders, another model's files (its weights, and the kaiwu.json
    and id_list of a model unpacked into ckpt/), the package's PDFs and no train_test.py: the zip leaves out all
    but the last (the next steps name them), keeps the rest, and the next steps do not send the user to a
    train_test.py that is not there."""
    package = shutil.copytree(setup["package"], tmp_path / "package")
    (package / "train_test.py").unlink()
    for rel, data in {".idea/workspace.xml": b"<project/>", ".vscode/settings.json": b"{}",
                      "agent_ppo/ckpt/model.ckpt-100.pkl": b"another model", "docs/rules.pdf": b"%PDF-1.4",
                      "ckpt/kaiwu.json": b'{"train_step": 100}', "ckpt/id_list": b"all id list\nmodel.ckpt-100\n",
                      "Guide.PDF": b"%PDF-1.4"}.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_bytes(data)
    manifest = build_submission(setup["model"], tmp_path / "out", code_package=package, game="gorge",
                                trust_pickle=True, make_zip=True)
    left_out = [".idea/workspace.xml", ".vscode/settings.json", "Guide.PDF", "agent_ppo/ckpt/model.ckpt-100.pkl",
                "ckpt/id_list", "ckpt/kaiwu.json", "docs/rules.pdf"]
    assert manifest["zip"]["left_out"] == left_out
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        names = set(archive.namelist())
    assert not names & set(left_out) and {"agent_diy/ckpt/model.ckpt-64.pkl", "kaiwu.json"} <= names
    steps = next_steps(manifest, tmp_path / "out")
    assert all(rel in steps for rel in left_out) and "has no train_test.py" in steps
    assert f"set algorithm_name = \"diy\" in {tmp_path / 'out' / 'train_test.py'}" not in steps


def test_the_next_steps_name_the_final_rounds_settings(setup):
    steps = next_steps(read_manifest(setup["out"]), setup["out"])
    assert ("talent_cooldown = 200, monster_interval = 200, monster_speedup = 300, buff_cooldown = 200, "
            "max_step = 1000") in steps and f"sb3-realm eval {setup['out']} --settings final" in steps


def test_toml_tables_are_edited_line_by_line():
    text = '[a]\nx = 1\n\n[a.b.c]\n# keep me\nalgo = "ppo"  # note\nother = 2\n'
    out = edit_settings(text, "a.b.c", {"algo": "diy"}, {})
    assert out == '[a]\nx = 1\n\n[a.b.c]\n# keep me\nalgo = "diy"\nother = 2\n'
    assert ensure_table("[ppo]\nk = 1\n", "diy", {"k": "v"}) == '[ppo]\nk = 1\n\n[diy]\nk = "v"\n'
    assert ensure_table('[diy]\nk = "old"\nz = 3\n', "diy", {"k": "v"}) == '[diy]\nk = "v"\nz = 3\n'


# ------------------------------------------------------------------------------------------ the stand-in's contracts
def _task(folder: Path, tmp_path: Path, **kwargs) -> dict:
    return run_own_platform_task(folder, tmp_path / "task", **kwargs)


@pytest.mark.parametrize(("edits", "message"), [
    ({"conf/algo_conf_gorge_chase.toml": ('actor_agent = "agent_diy.agent.Agent"', 'actor_agent = "x.Agent"')},
     r"\[diy\].*actor_agent = 'x.Agent'"),
    ({"conf/algo_conf_gorge_chase.toml": ("[diy]", "[diy_old]")}, r"algo = 'diy' but .* has no \[diy\] table"),
    ({"conf/configure_app.toml": ("preload_model_id = 64", "preload_model_id = 65")},
     r"preload model file failed.*model.ckpt-65.pkl"),
    ({"conf/configure_app.toml": ("preload_model_id = 64", 'preload_model_id = "64"')},
     r"preload model file failed: preload_model_id = '64' is not valid"),
    ({"kaiwu.json": ('"gorge_chase"', '"back_to_the_realm"')}, r"kaiwu.json names project 'back_to_the_realm'"),
    ({"agent_diy/agent.py": ("    def exploit(self, env_obs):", "    def _exploit(self, env_obs):")},
     r"lacks exploit"),
])
def test_the_stand_in_refuses_a_package_that_breaks_a_contract(setup, tmp_path, edits, message):
    folder = _copy(setup["out"], tmp_path / "copy", edits)
    report = _task(folder, tmp_path)
    assert not report["ok"]
    assert "platform_error" in report and re.search(message, report["platform_error"])


def test_samples_of_other_lengths_than_declared_are_errors(setup, tmp_path):
    folder = _copy(setup["out"], tmp_path / "copy", {
        "agent_diy/feature/definition.py": ("    vector=Config.VECTOR_SIZE,", "    vector=Config.VECTOR_SIZE + 1,")})
    report = _task(folder, tmp_path)
    assert not report["ok"] and report["bad_samples"] > 0 and report["samples"] == 0
    assert any("SampleData.vector has 202 values; the class declares 203" in e for e in report["errors"])


def test_saves_over_the_platforms_limits_are_errors(setup, tmp_path):
    folder = _copy(setup["out"], tmp_path / "copy", {
        "agent_diy/conf/conf.py": ("    SAVE_INTERVAL_S = 1800", "    SAVE_INTERVAL_S = 0")})
    report = _task(folder, tmp_path)
    assert not report["ok"] and any("saves within a minute" in e for e in report["errors"])


def test_a_saved_model_holds_the_code_and_the_weights(setup, tmp_path):
    report = _task(setup["out"], tmp_path, episodes=1)
    saved = Path(report["saves"][0]["model_dir"])  # a saved model: the code folders and ckpt/
    assert (saved / "agent_diy/agent.py").is_file() and (saved / "conf/configure_app.toml").is_file()
    assert json.loads((saved / "ckpt/kaiwu.json").read_text(encoding="utf-8"))["train_step"] == 64
    assert same_weights(saved / "ckpt/model.ckpt-64.pkl", setup["out"] / "agent_diy/ckpt/model.ckpt-64.pkl")
    assert not {"sb3_realm", "gymnasium", "stable_baselines3"} & set(report["modules"])


def test_without_preload_saves_count_from_the_learners_steps(setup, tmp_path):
    folder = _copy(setup["out"], tmp_path / "copy", {
        "conf/configure_app.toml": ("preload_model = true", "preload_model = false")})
    report = _task(folder, tmp_path)
    assert report["saves"] and all(0 < s["id"] < 64 for s in report["saves"])  # step 0 is never saved
    assert report["exported_weights_kept"]  # the Agent loads the exported weights when it is made


@pytest.fixture(scope="module")
def finetune(setup) -> Path:
    out = setup["root"] / "finetune"
    build_submission(setup["model"], out, code_package=setup["package"], game="gorge", trust_pickle=True,
                     workflow="finetune")
    return out


def test_a_finetuning_package_saves_new_weights(setup, finetune, tmp_path):
    """The first save is taken before any sample reaches the learner: the exported weights, under the preload's
    id; the later ones are fine-tuned."""
    report = _task(finetune, tmp_path)
    assert report["crashed"] is None and not report["errors"] and len(report["saves"]) >= 2
    assert report["workflow"] == "finetune" and report["ok"]
    assert report["saves"][0]["id"] == 64 and report["first_save_exported"] and not report["exported_weights_kept"]


_REAL_ORDER = """
import hashlib, sys, torch
sys.path[:0] = sys.argv[1:3]
from agent_diy.agent import Agent
agent = Agent()
agent.load_model(path=sys.argv[2] + "/ckpt", id=int(sys.argv[3]))  # the model to evaluate
agent.load_model(path=sys.argv[2] + "/agent_diy/ckpt", id=64)  # then the preload keys of its conf
saved = torch.load(sys.argv[2] + "/ckpt/model.ckpt-" + sys.argv[3] + ".pkl", weights_only=True)
state = agent.model.state_dict()
print(all(torch.equal(state[k], saved[k]) for k in saved))
"""


def test_a_finetuned_save_evaluates_as_itself_when_the_preload_comes_after_it(finetune, tmp_path):
    """Where the platform loads the model to evaluate and then plays the preload keys (their file travels in every
    save), the Agent keeps the save's fine-tuned weights; the stand-in's evaluation plays that order, and --check
    finds every save playing with its own weights."""
    report = _task(finetune, tmp_path)
    last = report["saves"][-1]
    assert not last["exported_weights"]
    out = subprocess.run([sys.executable, "-c", _REAL_ORDER, str(LAYOUT / "platform"), last["model_dir"],
                          str(last["id"])], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "True"
    from sb3_realm.export.check import _load_own, saves_play_as_themselves

    manifest = read_manifest(finetune)
    assert saves_play_as_themselves(report["saves"], tmp_path / "task", lambda save: _load_own(save, manifest))
    assert all(s["plays_own_weights"] and s["load_errors"] == [] for s in report["saves"])


def test_the_check_of_a_finetuning_package(setup, finetune):
    report = check_submission(finetune, setup["model"], games=1, min_states=200, trust_pickle=True)
    assert report["ok"] and report["identical_actions"] and report["saves_play_as_themselves"]
    assert report["platform_task"]["first_save_exported"] and report["evaluated_model_id"] == 64


def test_failed_games_are_skipped_without_a_limit(setup, tmp_path, monkeypatch):
    """As the official workflow does: however many games fail in a row (here the first 15 resets), each is skipped
    with a log line, never an ERROR line, and the task goes on to its games and saves."""
    from sb3_realm.export import check

    class DownAtFirst(check._TaskEnv):
        down = 15

        def reset(self, usr_conf):
            self.down -= 1
            return None if self.down >= 0 else super().reset(usr_conf)

    monkeypatch.setattr(check, "_TaskEnv", DownAtFirst)
    report = _task(setup["out"], tmp_path, fault_rate=0.0)
    assert report["ok"] and report["errors"] == [] and len(report["saves"]) >= 2
    assert "INFO game skipped (15 failed so far, 0 played)" in report["log"]


def test_the_monitor_gets_the_metrics_of_the_users_panel(setup, tmp_path):
    """The workflow puts the metric that the official panel (the user's kept conf/monitor_builder.py) declares,
    ``reward``; a key the panel lacks would never show, and the stand-in says so in a WARNING line."""
    report = _task(setup["out"], tmp_path)
    assert report["panel_metrics"] == ["reward"] and report["monitor_keys"] == ["reward"]
    assert report["monitor_reports"] > 0 and not any("not a metric of the panel" in line for line in report["log"])


def test_the_workflow_reads_the_users_training_games(setup, tmp_path):
    bad = GORGE_USER_TRAIN_CONF.replace("max_step = 1000", "max_step = 5000")
    folder = _copy(setup["out"], tmp_path / "copy", {
        "agent_diy/conf/train_env_conf.toml": (GORGE_USER_TRAIN_CONF, bad)})
    report = _task(folder, tmp_path)
    assert not report["ok"] and report["episodes"] == 0
    assert any("max_step = 5000 is outside 1..2000" in e for e in report["errors"])


class _CountingAgent:
    def __init__(self):
        self.calls = []

    def reset(self, env_obs=None):
        self.calls.append(("reset", env_obs["frame_no"]))

    def exploit(self, env_obs):
        self.calls.append(("exploit", env_obs["frame_no"]))
        return self.answer(env_obs)

    @staticmethod
    def answer(env_obs):
        return 4


class _Env:
    def __init__(self, games, length):
        self.games, self.length, self.played, self.step_no = games, length, 0, 0

    def _obs(self):
        done = self.step_no >= self.length
        return {"frame_no": self.step_no, "observation": {"step_no": self.step_no}, "terminated": done,
                "truncated": False}

    def reset(self, usr_conf=None):
        if self.played == self.games:
            return None
        self.played, self.step_no = self.played + 1, 0
        return self._obs()

    def step(self, action):
        assert isinstance(action, int) and 0 <= action < 16
        self.step_no += 1
        return {"reward": 1.5}, self._obs()


def test_the_evaluation_loop_resets_once_a_game_and_exploits_once_a_step():
    framework = _framework()
    agent = _CountingAgent()
    report = framework.evaluate(agent, _Env(games=2, length=3))
    assert report == {"games": 2, "steps": 6, "scores": [4.5, 4.5]}
    assert agent.calls == [("reset", 0), ("exploit", 0), ("exploit", 1), ("exploit", 2)] * 2


@pytest.mark.parametrize(("answer", "message"), [
    (lambda env_obs: [7], None),
    (lambda env_obs: 16, r"returned 16"),
    (lambda env_obs: "4", r"returned '4'"),
    (lambda env_obs: [1, 2], r"returned \[1, 2\]"),
    (lambda env_obs: env_obs["observation"].update(step_no=-1) or 3, r"changed the env_obs"),
])
def test_the_evaluation_loop_takes_only_an_action(answer, message):
    framework = _framework()
    agent = _CountingAgent()
    agent.answer = answer
    if message is None:
        assert framework.evaluate(agent, _Env(games=1, length=2))["steps"] == 2
    else:
        with pytest.raises(framework.PlatformError, match=message):
            framework.evaluate(agent, _Env(games=1, length=2))


# ------------------------------------------------------------------------------------------ --check
def _check_passes(report: dict, states: int, games: int) -> None:
    assert report["ok"], {k: report[k] for k in ("first_mismatches", "platform_task", "evaluation_errors")}
    task = report["platform_task"]  # the training task kept the exported weights in every save
    assert [s["exported_weights"] for s in task["saves"]] == [True] * len(task["saves"])
    assert task["saves"][0]["id"] == 64  # the learner's step count starts at the preload id
    assert task["samples"] > 0 and task["train_count"] > 64 and task["faults_injected"] > 0
    assert task["monitor_reports"] > 0 and not task["errors"] and task["crashed"] is None
    assert report["states"] >= states and report["identical_actions"] and report["identical_scores"]
    # the games of the protocol under each of the game's settings: the shipped ones and the final round's
    assert report["settings"] == {"default": {}, "final": SETTINGS["final"]}
    assert report["protocol"] == "hidden" and report["protocol_games"] == 2 * games
    assert len(report["submission_scores"]) == 2 * games and report["leaked_modules"] == []
    assert report["platform_task"]["exported_weights_kept"] and len(report["platform_task"]["saves"]) >= 2


def test_check_plays_the_models_actions(setup):
    _check_passes(check_submission(setup["out"], setup["model"], games=3, min_states=1500, trust_pickle=True),
                  1500, 3)


@pytest.mark.slow
def test_check_plays_the_models_actions_on_10k_states(setup):
    # the default check: each state's features run the planner twice (the package's Agent and the reference)
    _check_passes(check_submission(setup["out"], setup["model"], trust_pickle=True), 10_000, 10)


def test_check_fails_for_another_model(setup, tmp_path):
    other = small_gorge_model(tmp_path / "other.zip", seed=3)
    report = check_on_own_stand_in(setup["out"], other, games=3, min_states=200, trust_pickle=True)
    assert not report["ok"] and not report["identical_actions"] and report["first_mismatches"]


def test_check_of_a_recurrent_policy(setup, tmp_path):
    model = small_gorge_model(tmp_path / "recurrent.zip", algo="recurrent")
    out = tmp_path / "upload"
    build_submission(model, out, code_package=setup["package"], game="gorge", trust_pickle=True)
    report = check_on_own_stand_in(out, model, games=3, min_states=600, trust_pickle=True)
    assert report["ok"] and report["algo"] == "recurrent_ppo" and report["states"] >= 600


def test_cli_builds_and_the_folder_plays_as_the_model(setup, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["build-submission", str(setup["model"]), "--out", str(out), "--code-package",
                 str(setup["package"]), "--game", "gorge", "--trust-pickle"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["weights"]["file"] == "agent_diy/ckpt/model.ckpt-64.pkl"
    assert "训练任务" in captured.err and 'algo = "diy"' in captured.err and "exploit(env_obs)" in captured.err
    folder = evaluate(str(out), "maps", game="gorge", maps=["own_7"], games=2, yardstick=False)
    model = evaluate(str(setup["model"]), "maps", game="gorge", maps=["own_7"], games=2, yardstick=False,
                     trust_pickle=True)
    assert [g.score for g in folder.games] == [g.score for g in model.games]
    assert main(["build-submission", str(setup["model"]), "--out", str(tmp_path / "x"), "--game", "gorge",
                 "--trust-pickle"]) == 2
    assert "needs --code-package" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_the_agent_uses_one_torch_thread(setup):
    """As the official agents do: making the Agent sets torch to one intra-op and one inter-op thread, whatever the
    process had; a second Agent in the same process (torch takes the inter-op setting once) does not raise."""
    code = ("import sys, torch; sys.path[:0] = sys.argv[1:3]; torch.set_num_threads(3); "
            "from agent_diy.agent import Agent; Agent(); Agent(); "
            "print(torch.get_num_threads(), torch.get_num_interop_threads())")
    out = subprocess.run([sys.executable, "-c", code, str(LAYOUT / "platform"), str(setup["out"])],
                         capture_output=True, text=True, cwd=setup["root"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["1", "1"]


def test_the_agent_imports_only_torch_numpy_and_the_platform(setup):
    allowed = {"torch", "numpy", "kaiwudrl", "common_python", "tools", "agent_diy", "__future__", "dataclasses"}
    stdlib = set(sys.stdlib_module_names)
    for path in (setup["out"] / "agent_diy").rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if words[:1] in (["import"], ["from"]) and len(words) > 1:
                top = words[1].split(".")[0]
                relative = words[1].startswith(".")  # the features' companions, beside them
                assert relative or top in allowed or top in stdlib, (path, line)
