"""An upload folder against the platform's contracts: the algorithm folder's (sample length, registrations, absolute
imports, weights from construction, checksums of re-saves, a recurrent Agent batched), the training workflow's
(weights kept, timed saves, the platform's None returns) and the stand-in framework's own behaviours (the model
loader, the preload keys, save ids and limits, the model pool, the conf checks); and build-submission into a copy of a
code package (every key kept, the needed lines edited, the original untouched)."""

from __future__ import annotations

import importlib
import itertools
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import make_code_package, tree_digest

from sb3_realm.agents import SubmissionPolicy
from sb3_realm.agents.submission import platform_framework
from sb3_realm.export import ExportError, build_submission, check_submission, same_weights
from sb3_realm.export.build import next_steps
from sb3_realm.export.check import TASK_OVERRIDES
from sb3_realm.export.code_package import CodePackageError, edit_settings, ensure_registration
from sb3_realm.games.realm import small_map
from sb3_realm.games.realm.env import RealmEnv
from sb3_realm.games.realm.observation import CompetitionEnv
from sb3_realm.submission import LAYOUTS

LAYOUT = LAYOUTS["kaiwu2024"]
PLATFORM_CKPT = "/data/projects/back_to_the_realm/ckpt"
PLATFORM_PRELOAD = "/data/projects/back_to_the_realm/diy/ckpt"  # the preload's copy travels in every saved model


@pytest.fixture(scope="module")
def framework():
    return platform_framework()


@pytest.fixture(scope="module")
def uploads(models, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("uploads")
    package = make_code_package(base / "official")
    out = {name: base / name for name in ("ppo", "recurrent_ppo", "code", "finetune")}
    build_submission(models["ppo"], out["ppo"])
    build_submission(models["recurrent_ppo"], out["recurrent_ppo"])
    build_submission(models["ppo"], out["code"], code_package=package)
    build_submission(models["ppo"], out["finetune"], workflow="finetune")
    return out


class ShortGames:
    """The platform's env interface on the small map, each game at most ``max_step`` steps (whatever the workflow
    asks for), with the platform's failures injected at ``fault_rate``."""

    def __init__(self, max_step=60, fault_rate=0.0, seed=0):
        self.env = CompetitionEnv(small_map(), seed=seed, fault_rate=fault_rate, fault_seed=seed + 1)
        self.max_step = max_step

    def reset(self, usr_conf=None):
        inner = {**(usr_conf or {}).get("diy", {}), "max_step": self.max_step, "treasure_num": 3}
        return self.env.reset(usr_conf={"diy": inner})

    def step(self, act):
        return self.env.step(act)


def run_task(framework, folder, task_dir, env=None, **options):
    upload = framework.Upload(folder, LAYOUT)
    task = framework.TrainingTask(upload, task_dir, overrides=TASK_OVERRIDES)
    report = task.run(env or ShortGames(), **options)
    return task, report


def copy_with(folder, tmp_path, rel, old, new, name="copy"):
    """A copy of ``folder`` with ``old`` replaced by ``new`` in its file ``rel``."""
    target = tmp_path / name
    shutil.copytree(folder, target)
    path = target / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{rel} has no {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return target


def imported(framework, folder, *modules):
    with framework.imported_package(folder, {"diy", "conf"}):
        return [importlib.import_module(f"diy.{m}") for m in modules]


def states(n=40, seed=0):
    """``n`` competition observations of the small map (env_info None at each reset)."""
    env, out = RealmEnv(map_name="small", max_step=20, treasure_num=3), []
    while len(out) < n:
        env.reset(seed=seed + len(out))
        for t in range(20):
            comp, info = env.competition_obs()
            out.append((comp, None if t == 0 else info))
            env.step(int(np.random.default_rng(len(out)).integers(16)))
    return out[:n]


# ------------------------------------------------------------------------------------------ the algorithm folder
def test_sample_dim_is_the_length_of_a_flattened_sample(framework, uploads):
    """The learner reads ``Config.SAMPLE_DIM`` from ``<algo>/config.py``: it is the length SampleData2NumpyData makes,
    and the conf lines and the manifest say the same."""
    with framework.imported_package(uploads["ppo"], {"diy"}):
        config = __import__("diy.config", fromlist=["Config"])  # as the learner imports it
        definition = importlib.import_module("diy.feature.definition")
    obs = definition.observation_process(*states(1)[0])
    frames = [definition.Frame(obs_data=obs, act_data=definition.ActData(act=3, prob=None), reward=1.0, done=True)]
    flat = definition.SampleData2NumpyData(definition.sample_process(frames)[0])
    manifest = json.loads((uploads["ppo"] / "diy" / "manifest.json").read_text(encoding="utf-8"))
    merge = tomllib.loads((uploads["ppo"] / "merge_into_configure_app.toml").read_text(encoding="utf-8"))
    assert flat.shape == (config.Config.SAMPLE_DIM,) == (manifest["sample_dim"],) == (merge["sample_dim"],)


def test_every_entry_point_the_platform_calls_is_registered(framework, uploads):
    from kaiwu_agent.agent.protocol import protocol

    with framework.imported_package(uploads["ppo"], {"diy"}):
        agent = importlib.import_module("diy.algorithm.agent")
        workflow = importlib.import_module("diy.train_workflow")
        assert protocol.missing() == []
        assert protocol.Agent is agent.Agent and protocol.workflow is workflow.workflow
        assert protocol.SampleData2NumpyData is importlib.import_module("diy.feature.definition").SampleData2NumpyData


def test_a_saved_model_loads_as_the_platforms_model_loader_does(framework, uploads, tmp_path):
    """The loader copies the model, strips the wrapper decorators, renames the ``from diy.`` imports and imports
    agent.py alone: the package's agent loads and acts as in the folder; a relative import would fail there."""
    _task, report = run_task(framework, uploads["code"], tmp_path / "task")
    model_dir = Path(report["saves"][0]["model_dir"])
    assert json.loads((model_dir / "ckpt" / "kaiwu.json").read_text())["algorithm"] == "diy"
    pool = tmp_path / "pool"
    package = f"model_{report['saves'][0]['id']}_pid_{__import__('os').getpid()}"
    log = framework.Log()
    with framework.imported_package(pool / str(__import__("os").getpid()), {package}):
        agent, step = framework.load_saved_model(model_dir, pool, log)
        from kaiwu_agent.agent.protocol import protocol

        observation_process, action_process = protocol.observation_process, protocol.action_process
    assert step == report["saves"][0]["id"] and "@predict_wrapper" not in (
        pool / str(__import__("os").getpid()) / package / "diy" / "algorithm" / "agent.py").read_text()
    reference = SubmissionPolicy(uploads["code"])
    for comp, info in states():
        ours = reference.definition.action_process(reference.agent.exploit([reference.definition.observation_process(
            comp, info)])[0])
        assert action_process(agent.exploit([observation_process(comp, info)])[0]) == ours
    relative = copy_with(model_dir, tmp_path, "diy/algorithm/agent.py", "from diy.config import",
                         "from ..config import", name="relative")
    with pytest.raises(ImportError, match="relative import"):
        with framework.imported_package(tmp_path / "pool2" / str(__import__("os").getpid()), {package}):
            framework.load_saved_model(relative, tmp_path / "pool2", log)


def test_evaluating_any_save_finds_the_preload(framework, uploads, tmp_path):
    """The conf's preload keys travel in every saved model and an evaluation plays them after the save: the
    preload's file is inside the algorithm folder, which travels too, so evaluating a save of another id than the
    preload's logs no ERROR line; with the file in ckpt/ (which holds only the save there) it logs two."""
    _, report = run_task(framework, uploads["code"], tmp_path / "task")
    save = report["saves"][-1]
    assert save["id"] != 512

    def evaluate(model_dir, pool):
        log, package = framework.Log(), f"model_{save['id']}_pid_{__import__('os').getpid()}"
        with framework.imported_package(pool / str(__import__("os").getpid()), {package}):
            agent, _ = framework.load_saved_model(model_dir, pool, log, tomllib.loads(
                (LAYOUT / "layout.toml").read_text(encoding="utf-8")))
        return agent, log

    agent, log = evaluate(Path(save["model_dir"]), tmp_path / "pool")
    assert log.errors == [] and "diy/ckpt/model.ckpt-512.pkl" in "\n".join(m for _, m in log.lines)
    assert agent.loaded.endswith(f"ckpt/model.ckpt-{save['id']}.pkl")  # the save is what is played
    old = copy_with(Path(save["model_dir"]), tmp_path, "conf/configure_app.toml", f'"{PLATFORM_PRELOAD}"',
                    f'"{PLATFORM_CKPT}"', name="old")
    agent, log = evaluate(old, tmp_path / "pool2")
    assert len(log.errors) == 2 and "model.ckpt-512.pkl does not exist" in log.errors[0]
    assert agent.loaded.endswith(f"ckpt/model.ckpt-{save['id']}.pkl")


def test_the_agent_acts_with_the_exported_weights_from_construction(framework, uploads, tmp_path):
    """An actor predicts before any model sync: the Agent loads diy/ckpt/model.ckpt-<id>.pkl when it is made (the
    copy inside the algorithm folder, which travels in every saved model)."""
    (agent_module,) = imported(framework, uploads["ppo"], "algorithm.agent")
    policy = SubmissionPolicy(uploads["ppo"])  # loads the weights explicitly too
    agent = agent_module.Agent(agent_type="player", device="cpu")
    assert agent.loaded == str(uploads["ppo"] / "diy" / "ckpt" / "model.ckpt-512.pkl")
    observations = [policy.definition.observation_process(c, i) for c, i in states()]
    assert [a.act for o in observations for a in agent.exploit([o])] == \
        [a.act for o in observations for a in policy.agent.exploit([o])]
    bare = tmp_path / "bare"
    shutil.copytree(uploads["ppo"], bare, ignore=shutil.ignore_patterns("ckpt"))
    (agent_module,) = imported(framework, bare, "algorithm.agent")
    log = framework.Log()
    waiting = agent_module.Agent(agent_type="player", device="cpu", logger=log)
    assert waiting.loaded is None and any("waiting for load_model" in m for _, m in log.lines)
    with pytest.raises(RuntimeError, match="no weights loaded"):
        waiting.exploit(observations[:1])


def test_saves_of_the_same_weights_are_the_same_bytes_and_checksums_hold(framework, uploads, tmp_path):
    """save_model's bytes depend on the weights only: two saves (and the exported file) are identical, so the
    manifest's checksum accepts a re-save under the exported id; a file with a wrong .sha256 is refused; a file
    without one loads, with a log line."""
    for name in ("recurrent_ppo", "ppo"):
        (agent_module,) = imported(framework, uploads[name], "algorithm.agent")
        agent = agent_module.Agent(agent_type="player", device="cpu")
        first = Path(agent.save_model(path=str(tmp_path / name / "a"), id=512)).read_bytes()
        second = Path(agent.save_model(path=str(tmp_path / name / "b"), id=512)).read_bytes()
        assert first == second == (uploads[name] / "ckpt" / "model.ckpt-512.pkl").read_bytes()
    shutil.copy(tmp_path / "ppo" / "a" / "model.ckpt-512.pkl", uploads["ppo"] / "diy" / "ckpt" / "model.ckpt-513.pkl")
    try:  # beside the package, under another id: no .sha256 and not the manifest's file, so it loads with a log line
        log = framework.Log()
        agent.logger = log
        agent.load_model(id=513)
        assert any("no checksum" in m for _, m in log.lines)
    finally:
        (uploads["ppo"] / "diy" / "ckpt" / "model.ckpt-513.pkl").unlink()
    side = tmp_path / "ppo" / "a" / "model.ckpt-512.pkl.sha256"
    side.write_text("0" * 64 + "\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        agent.load_model(path=str(side.parent), id=512)
    side.unlink()
    log = framework.Log()
    # a fresh Agent: after a load_model call, a copy of the exported file (the preload's) is skipped, not loaded
    agent = agent_module.Agent(agent_type="player", device="cpu", logger=log)
    agent.load_model(path=str(side.parent), id="latest")
    assert agent.loaded.endswith("model.ckpt-512.pkl") and any("no checksum" in m for _, m in log.lines)


def test_a_recurrent_agent_given_a_batch_says_so_once(framework, uploads):
    (agent_module,) = imported(framework, uploads["recurrent_ppo"], "algorithm.agent")
    policy = SubmissionPolicy(uploads["recurrent_ppo"])
    log = framework.Log()
    agent = agent_module.Agent(agent_type="player", device="cpu", logger=log)
    observations = [policy.definition.observation_process(c, i) for c, i in states(4)]
    for _ in range(3):
        assert len(agent.predict(observations)) == 4 and len(agent.exploit(observations[:2])) == 2
    warnings = [m for level, m in log.lines if level == "WARNING"]
    assert len(warnings) == 1 and "predict_batch_size = 1" in warnings[0] and "\n" not in warnings[0]
    assert agent.lstm_state is None  # the per-game state was not touched by the batches


def test_learn_keeps_the_weights_unless_built_to_finetune(framework, uploads, models, tmp_path):
    for name, changes in (("ppo", False), ("finetune", True)):
        agent_module, definition = imported(framework, uploads[name], "algorithm.agent", "feature.definition")
        agent = agent_module.Agent(agent_type="player", device="cpu")
        frames = []
        for comp, info in states(30):
            obs = definition.observation_process(comp, info)
            frames.append(definition.Frame(obs_data=obs, act_data=agent.predict([obs])[0], reward=1.0, done=False))
        before = {k: v.clone() for k, v in agent.model.state_dict().items()}
        loss = agent.learn(definition.sample_process(frames))
        changed = any(not torch.equal(before[k], v) for k, v in agent.model.state_dict().items())
        assert changed == changes and (loss is None) == (not changes)
    with pytest.raises(ExportError, match=r"recurrent policy.*--workflow keep"):
        build_submission(models["recurrent_ppo"], tmp_path / "no", workflow="finetune")
    assert not (tmp_path / "no").exists()


# ------------------------------------------------------------------------------------------ a training task
@pytest.mark.parametrize("name", ["ppo", "code"])
def test_a_training_task_keeps_the_exported_weights(framework, uploads, tmp_path, name):
    """With the preload keys, the task's learner starts at the exported id; every save (its id the learner's step)
    holds the exported weights byte for byte, at least 120 s apart on the platform's clock; the aisrv's learn
    returns None; the actor syncs to the model pool; no ERROR line, with the platform's failures injected."""
    task, report = run_task(framework, uploads[name], tmp_path / "task", ShortGames(fault_rate=0.05),
                            episodes=4, saves=3)
    assert report["crashed"] is None and report["errors"] == [] and report["episodes"] >= 4
    assert len(report["saves"]) >= 3 and report["samples"] > 0 and report["bad_samples"] == 0
    exported = uploads[name] / "ckpt" / "model.ckpt-512.pkl"
    ids = [s["id"] for s in report["saves"]]
    assert ids == sorted(set(ids)) and ids[0] >= 512  # the step count started at preload_model_id
    for save in report["saves"]:
        saved = Path(save["model_dir"]) / "ckpt" / f"model.ckpt-{save['id']}.pkl"
        assert same_weights(saved, exported) and saved.read_bytes() == exported.read_bytes()
    times = [s["time"] for s in report["saves"]]
    assert all(b - a >= 120 for a, b in itertools.pairwise(times))
    assert report["actor_synced_to"] is not None and report["actor_synced_to"] > 512
    assert task.actor.loaded.endswith(f"model.ckpt-{report['actor_synced_to']}.pkl")  # a save of the same weights
    assert report["train_count"] > ids[0]  # the learner trained on the shipped samples (the aisrv's learn: None)
    logged = "\n".join(m for _, m in task.log.lines)
    assert "env.reset returned None" in logged and "score None" in logged


def test_without_preload_the_saves_count_from_zero_and_still_keep_the_weights(framework, uploads, tmp_path):
    """Preload off (the user did not merge the lines): the learner's ids start at 0, yet its Agent loaded the
    exported weights when it was made, so the saves still hold them."""
    folder = copy_with(uploads["ppo"], tmp_path, "merge_into_configure_app.toml", "preload_model = true",
                       "preload_model = false")
    _, report = run_task(framework, folder, tmp_path / "task")
    assert report["errors"] == [] and report["saves"] and report["saves"][0]["id"] < 512
    for save in report["saves"]:
        assert same_weights(Path(save["model_dir"]) / "ckpt" / f"model.ckpt-{save['id']}.pkl",
                            uploads["ppo"] / "ckpt" / "model.ckpt-512.pkl")


def test_a_finetuning_task_saves_new_weights(framework, uploads, tmp_path):
    """The first save is taken before any sample reaches the learner (the exported weights, under the preload's
    id); the later ones hold fine-tuned weights."""
    _, report = run_task(framework, uploads["finetune"], tmp_path / "task")
    assert report["errors"] == [] and len(report["saves"]) >= 2
    exported = uploads["finetune"] / "ckpt" / "model.ckpt-512.pkl"
    first, last = report["saves"][0], report["saves"][-1]
    assert first["id"] == 512 and same_weights(Path(first["model_dir"]) / "ckpt" / "model.ckpt-512.pkl", exported)
    assert not same_weights(Path(last["model_dir"]) / "ckpt" / f"model.ckpt-{last['id']}.pkl", exported)


def _weights_of(agent):
    return {k: v.clone() for k, v in agent.model.state_dict().items()}


def _same(state, path):
    saved = torch.load(path, map_location="cpu", weights_only=True)
    return set(state) == set(saved) and all(torch.equal(state[k], saved[k]) for k in state)


def test_a_finetuned_save_evaluates_as_itself_in_the_platforms_load_order(framework, uploads, tmp_path):
    """The platform's actor loads the model to evaluate, then plays the conf's preload keys, whose file (the
    exported weights) travels in every save: the Agent keeps the save's own weights, with a log line, and the
    stand-in's model loader plays that order. The preload still loads where the Agent holds the exported weights."""
    _, report = run_task(framework, uploads["finetune"], tmp_path / "task")
    save = report["saves"][-1]
    model_dir, pool, pid = Path(save["model_dir"]), tmp_path / "pool", __import__("os").getpid()
    saved = model_dir / "ckpt" / f"model.ckpt-{save['id']}.pkl"
    log = framework.Log()
    with framework.imported_package(pool / str(pid), {f"model_{save['id']}_pid_{pid}"}):
        agent, _ = framework.load_saved_model(model_dir, pool, log)  # the save's weights, no preload yet
        copy = pool / str(pid) / f"model_{save['id']}_pid_{pid}"
        agent.load_model(str(copy / "diy" / "ckpt"), 512)  # the preload, after it, as the real actor plays it
    assert _same(_weights_of(agent), saved) and agent.loaded.endswith(f"model.ckpt-{save['id']}.pkl")
    assert any("keeps the weights of" in m for _, m in log.lines)
    layout = tomllib.loads((LAYOUT / "layout.toml").read_text(encoding="utf-8"))
    with framework.imported_package(tmp_path / "pool2" / str(pid), {f"model_{save['id']}_pid_{pid}"}):
        agent, _ = framework.load_saved_model(model_dir, tmp_path / "pool2", framework.Log(), layout)
    assert _same(_weights_of(agent), saved)
    (agent_module,) = imported(framework, uploads["finetune"], "algorithm.agent")
    fresh = agent_module.Agent(agent_type="player", device="cpu")
    fresh.load_model(path=str(uploads["finetune"] / "diy" / "ckpt"), id=512)  # a training task's preload
    assert _same(_weights_of(fresh), uploads["finetune"] / "ckpt" / "model.ckpt-512.pkl")


def test_saved_weights_get_the_modes_of_ordinary_files(framework, uploads, tmp_path):
    """A save is mode 0666 less the umask (0644 under 022), as any new file, never a temporary file's 0600."""
    if sys.platform == "win32":
        pytest.skip("POSIX file modes")
    (agent_module,) = imported(framework, uploads["ppo"], "algorithm.agent")
    agent = agent_module.Agent(agent_type="player", device="cpu")
    old = __import__("os").umask(0o022)
    try:
        target = Path(agent.save_model(path=str(tmp_path / "a"), id=7))
        __import__("os").umask(0o002)
        other = Path(agent.save_model(path=str(tmp_path / "b"), id=7))
    finally:
        __import__("os").umask(old)
    assert target.stat().st_mode & 0o777 == 0o644 and Path(f"{target}.sha256").stat().st_mode & 0o777 == 0o644
    assert other.stat().st_mode & 0o777 == 0o664
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_saves_over_the_platforms_limits_are_error_lines(framework, uploads, tmp_path):
    folder = copy_with(uploads["ppo"], tmp_path, "diy/config.py", "SAVE_INTERVAL_S = 120", "SAVE_INTERVAL_S = 0")
    _, report = run_task(framework, folder, tmp_path / "task", ShortGames(max_step=10), episodes=12, saves=12)
    assert any("saves within a minute" in e for e in report["errors"])
    times = [s["time"] for s in report["saves"]]
    assert all(sum(1 for t in times if 0 <= u - t < 60) <= 2 for u in times)  # what was saved kept to the limit


def test_a_sample_of_another_length_than_sample_dim_is_an_error(framework, uploads, tmp_path):
    folder = copy_with(uploads["ppo"], tmp_path, "diy/feature/definition.py",
                       "np.array([g_data.episode_start, g_data.act, g_data.reward, g_data.ret], dtype=np.float32)])",
                       "np.array([g_data.episode_start, g_data.act, g_data.reward, g_data.ret, 0], dtype=np.float32)])")
    _, report = run_task(framework, folder, tmp_path / "task")
    assert report["bad_samples"] > 0 and report["samples"] == 0
    assert any("SAMPLE_DIM = 10640" in e for e in report["errors"])


def test_samples_go_to_the_learner_256_at_most_a_call(framework, uploads, tmp_path):
    """As the official workflows send them (every 256 frames), never a whole episode in one call: the stand-in
    refuses a call of more (an ERROR line, the call dropped)."""
    _, report = run_task(framework, uploads["ppo"], tmp_path / "task", ShortGames(max_step=600), episodes=2)
    assert report["errors"] == [] and report["largest_send"] == 256 and report["samples"] > 256
    folder = copy_with(uploads["ppo"], tmp_path, "diy/config.py", "SEND_SIZE = 256", "SEND_SIZE = 100_000")
    _, report = run_task(framework, folder, tmp_path / "whole", ShortGames(max_step=600), episodes=2)
    assert report["largest_send"] > 256 and any("samples in one call; the stand-in takes at most 256" in e
                                                for e in report["errors"])


def test_an_unregistered_workflow_is_refused(framework, uploads, tmp_path):
    folder = copy_with(uploads["ppo"], tmp_path, "diy/train_workflow.py", "@attached\ndef workflow", "def workflow")
    with pytest.raises(framework.PlatformError, match=r"not registered with @attached.*workflow"):
        run_task(framework, folder, tmp_path / "task")


class Flaky:
    """The platform under load: env.step returns None for the observation, the frame number or env_info."""

    def __init__(self, every):
        self.games, self.every, self.calls = ShortGames(fault_rate=0.2), every, 0

    def reset(self, usr_conf=None):
        return self.games.reset(usr_conf)

    def step(self, act):
        self.calls += 1
        frame_no, obs, score, terminated, truncated, env_info = self.games.step(act)
        kind = self.calls % self.every
        return (None if kind == 1 else frame_no, None if kind == 2 else obs, score, terminated, truncated,
                None if kind == 3 else env_info)


def test_the_workflow_survives_the_platforms_none_returns(framework, uploads, tmp_path):
    task, report = run_task(framework, uploads["ppo"], tmp_path / "task", Flaky(every=100), episodes=3)
    assert report["crashed"] is None and report["errors"] == [] and report["episodes"] >= 3
    logged = "\n".join(m for _, m in task.log.lines)
    assert "env.step returned None; the episode is abandoned" in logged and "env.reset returned None" in logged



class DownAtFirst:
    """The platform's environment failing its first ``down`` resets, then well."""

    def __init__(self, down):
        self.games, self.down = ShortGames(), down

    def reset(self, usr_conf=None):
        self.down -= 1
        return None if self.down >= 0 else self.games.reset(usr_conf)

    def step(self, act):
        return self.games.step(act)


def test_failed_episodes_are_skipped_without_a_limit(framework, uploads, tmp_path):
    """As the official workflows do: however many episodes fail in a row, each is skipped with a log line (never an
    ERROR line, which fails a task), the workflow goes on and the saves keep coming."""
    task, report = run_task(framework, uploads["ppo"], tmp_path / "task", DownAtFirst(25), episodes=3, saves=2,
                            max_episodes=60)
    assert report["crashed"] is None and report["errors"] == [] and "workflow_returned" not in report
    assert report["episodes"] >= 3 and len(report["saves"]) >= 2
    logged = [m for _, m in task.log.lines]
    assert "episode skipped (25 failed so far, 0 played)" in logged


# ------------------------------------------------------------------------------------------ the upload's conf
@pytest.mark.parametrize(("old", "new", "message"), [
    ('eval_model_dir = "/data/projects/back_to_the_realm/ckpt"\neval_model_id = 512\n',
     'eval_model_id = 512\neval_model_dir = "/data/projects/back_to_the_realm/ckpt"\n', "last two settings"),
    ('eval_model_dir = "/data/projects/back_to_the_realm/ckpt"', 'eval_model_dir = "ckpt"', "must be absolute"),
    ("eval_model_id = 512", 'eval_model_id = "latest"', "not an integer"),
    ("preload_model_id = 512", "preload_model_id = 999", "does not exist"),
    ('algo = "diy"', 'algo = "my_agent"', "registers the algorithm folders"),
    ('copy_dir = "conf,target_dqn,dqn,diy"', 'copy_dir = "conf,dqn"', "copy_dir"),
])
def test_the_stand_in_refuses_a_conf_the_platform_cannot_use(framework, uploads, tmp_path, old, new, message):
    folder = copy_with(uploads["code"], tmp_path, "conf/configure_app.toml", old, new)
    with pytest.raises(framework.PlatformError, match=message):
        framework.Upload(folder, LAYOUT)


def test_the_stand_in_refuses_a_registry_entry_of_other_classes(framework, uploads, tmp_path):
    folder = copy_with(uploads["code"], tmp_path, "conf/nature_algo_back_to_the_realm.yaml",
                       "train_workflow: diy.train_workflow.workflow", "train_workflow: diy.other.workflow")
    with pytest.raises(framework.PlatformError, match="train_workflow"):
        framework.Upload(folder, LAYOUT)


# ------------------------------------------------------------------------------------------ into a code package
def test_build_into_a_copy_of_a_code_package(models, tmp_path):
    package = make_code_package(tmp_path / "code")
    before = tree_digest(package)
    out = tmp_path / "upload"
    build_submission(models["maskable_ppo"], out, code_package=package, ckpt_id=77)
    assert tree_digest(package) == before  # the original is only read
    original = tomllib.loads((package / "conf/configure_app.toml").read_text(encoding="utf-8"))["app"]
    text = (out / "conf/configure_app.toml").read_text(encoding="utf-8")
    edited = tomllib.loads(text)["app"]
    changed = {"algo": "diy", "sample_dim": 10640, "preload_model": True, "preload_model_dir": PLATFORM_PRELOAD,
               "preload_model_id": 77, "copy_dir": "conf,target_dqn,dqn,diy", "eval_model_dir": PLATFORM_CKPT,
               "eval_model_id": 77}
    assert set(edited) == set(original) and len(original) >= 40
    assert {k: v for k, v in edited.items() if k not in changed} == {k: v for k, v in original.items()
                                                                    if k not in changed}
    assert {k: edited[k] for k in changed} == changed
    assert text.splitlines()[-2:] == [f'eval_model_dir = "{PLATFORM_CKPT}"', "eval_model_id = 77"]
    assert text.count("eval_model_id") == 1 and "# the model an evaluation loads" in text  # comments kept
    digest = tree_digest(out)
    for rel in ("kaiwu.json", "train_test.py", "conf/nature_algo_back_to_the_realm.yaml", "conf/usr_conf.py",
                "dqn/algorithm/agent.py", "target_dqn/config.py"):
        assert digest[rel] == before[rel]
    assert (out / "ckpt/model.ckpt-77.pkl").is_file() and (out / "diy/manifest.json").is_file()
    assert "diy/algorithm/agent.py" in digest and digest["diy/algorithm/agent.py"] != before["diy/algorithm/agent.py"]
    assert not (out / "merge_into_configure_app.toml").exists()


def test_the_servers_build_the_agent_of_the_algorithm_the_workflow_runs(models, uploads, tmp_path, framework):
    """The framework builds the servers' Agent from the app conf's ``policies.train_one.algo`` and the workflow from
    ``configure_app.toml``'s ``algo``: the build sets both (every other line kept, CRLF too), the stand-in refuses
    them out of step, and the next steps say which algorithm to pick in the task dialog."""
    servers = "conf/nature_app_back_to_the_realm.yaml"
    built = (uploads["code"] / servers).read_text(encoding="utf-8")
    assert yaml.safe_load(built)["back_to_the_realm"]["policies"]["train_one"]["algo"] == "diy"
    package = make_code_package(tmp_path / "code")
    original = (package / servers).read_text(encoding="utf-8")
    assert built == original.replace("algo: dqn  #", "algo: diy  #")  # only that line, its comment kept
    (package / servers).write_bytes(original.replace("\n", "\r\n").encode("utf-8"))
    build_submission(models["ppo"], tmp_path / "crlf", code_package=package)
    assert (tmp_path / "crlf" / servers).read_bytes() == built.replace("\n", "\r\n").encode("utf-8")
    assert framework.Upload(uploads["code"], LAYOUT).servers_algo == "diy"
    folder = copy_with(uploads["code"], tmp_path, servers, "algo: diy", "algo: dqn")
    with pytest.raises(framework.PlatformError, match=r"build the dqn Agent.*algo = 'diy'"):
        framework.Upload(folder, LAYOUT)
    manifest = json.loads((uploads["code"] / "diy/manifest.json").read_text(encoding="utf-8"))
    assert "in the task's dialog pick the algorithm (算法) diy" in next_steps(manifest, uploads["code"])
    (package / servers).unlink()
    with pytest.raises(ExportError, match=r"has no conf/nature_app_back_to_the_realm.yaml"):
        build_submission(models["ppo"], tmp_path / "none", code_package=package)


def test_a_registry_without_the_folder_gets_its_entry(models, tmp_path, framework):
    package = make_code_package(tmp_path / "code", registry=("dqn", "target_dqn"))
    build_submission(models["ppo"], tmp_path / "upload", code_package=package)
    text = (tmp_path / "upload/conf/nature_algo_back_to_the_realm.yaml").read_text(encoding="utf-8")
    assert text.startswith((package / "conf/nature_algo_back_to_the_realm.yaml").read_text(encoding="utf-8").rstrip())
    assert "  train_workflow: diy.train_workflow.workflow" in text
    assert framework.Upload(tmp_path / "upload", LAYOUT).algo == "diy"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"project": "gorge_chase", "version": "15.0.1"}, r"project 'gorge_chase' version '15.0.1'.*back_to_the_realm"),
    ({"version": "18.0.2"}, r"project 'back_to_the_realm' version '18.0.2'"),
])
def test_a_code_package_of_another_game_or_edition_is_refused(models, tmp_path, kwargs, message):
    package = make_code_package(tmp_path / "code", **kwargs)
    with pytest.raises(ExportError, match=message):
        build_submission(models["ppo"], tmp_path / "upload", code_package=package)
    assert not (tmp_path / "upload").exists()


def test_bad_code_packages_are_refused_before_anything_is_written(models, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ExportError, match=r'no kaiwu.json\. .*"project_code": "back_to_the_realm"'):
        build_submission(models["ppo"], tmp_path / "upload", code_package=tmp_path / "empty")
    with pytest.raises(ExportError, match="is not a folder"):
        build_submission(models["ppo"], tmp_path / "upload", code_package=tmp_path / "nowhere")
    package = make_code_package(tmp_path / "code")
    with pytest.raises(ExportError, match="inside --code-package"):
        build_submission(models["ppo"], package / "upload", code_package=package)
    broken = make_code_package(tmp_path / "broken")
    (broken / "conf/configure_app.toml").write_text("[app]\nalgo = \n", encoding="utf-8")
    with pytest.raises(ExportError, match="does not parse as TOML"):
        build_submission(models["ppo"], tmp_path / "upload", code_package=broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "code", "empty"]
    assert not (package / "upload").exists()
    out = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "build-submission", str(models["ppo"]), "--out",
                          str(tmp_path / "upload"), "--code-package", str(tmp_path / "empty")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "kaiwu.json" in out.stderr and "Traceback" not in out.stderr


def test_settings_are_edited_line_by_line():
    text = ('# top\r\n[app]\r\nalgo = "dqn"  # which folder\r\nlist = [\r\n  1,\r\n  2,\r\n]\r\n'
            'eval_model_id = 3\r\nx = 1\r\n\r\n[other]\r\ny = 2\r\n')
    out = edit_settings(text, "app", {"algo": "diy", "new": True}, {"eval_model_dir": "/d", "eval_model_id": 4})
    assert "\r\n" in out and "\n" not in out.replace("\r\n", "")
    assert tomllib.loads(out) == {"app": {"algo": "diy", "list": [1, 2], "x": 1, "new": True, "eval_model_dir": "/d",
                                          "eval_model_id": 4}, "other": {"y": 2}}
    app_lines = out.split("\r\n\r\n[other]")[0].splitlines()
    assert app_lines[-2:] == ['eval_model_dir = "/d"', "eval_model_id = 4"] and "# top" in out
    with pytest.raises(CodePackageError, match=r"no \[app\] table"):
        edit_settings("[other]\ny = 1\n", "app", {"algo": "diy"}, {})
    entry = {"actor_model": "diy.algorithm.agent.Agent"}
    registry = "dqn:\n  actor_model: dqn.algorithm.agent.Agent\n\ndiy:\n  actor_model: old.Agent\n  trainer: x\n"
    assert ensure_registration(registry, "diy", entry) == ("dqn:\n  actor_model: dqn.algorithm.agent.Agent\n\ndiy:\n"
                                                           "  actor_model: diy.algorithm.agent.Agent\n")


# ------------------------------------------------------------------------------------------ the check
def test_check_with_a_code_package_and_its_cli_next_steps(models, tmp_path):
    package = make_code_package(tmp_path / "code")
    out = tmp_path / "upload"
    run = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "build-submission", str(models["ppo"]), "--out",
                          str(out), "--code-package", str(package), "--check", "--check-games", "2",
                          "--check-states", "200", "--check-max-step", "80"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)["check"]
    assert report["ok"] and report["platform_task"]["ok"] and report["evaluated_model_id"] == 512
    assert report["saves_play_as_themselves"]
    for term in ("代码包", "开悟客户端", "训练任务", "模型管理", "评估任务", "preload_model = true", "sign"):
        assert term in run.stderr
    assert not list(out.rglob("__pycache__"))  # the stand-in only read the folder


def test_check_fails_when_the_platform_task_breaks_a_limit(models, uploads, tmp_path):
    folder = tmp_path / "fast"
    build_submission(models["ppo"], folder)
    config = folder / "diy" / "config.py"
    config.write_text(config.read_text(encoding="utf-8").replace("SAVE_INTERVAL_S = 120", "SAVE_INTERVAL_S = 0"),
                      encoding="utf-8")
    report = check_submission(folder, models["ppo"], games=1, max_step=40, min_states=10, task_max_step=10)
    assert not report["ok"] and not report["platform_task"]["ok"]
    assert any("saves within a minute" in e for e in report["platform_task"]["errors"])


def test_the_check_of_a_finetuning_package_plays_each_save_as_itself(models, uploads, tmp_path):
    """--workflow finetune: the first save is the exported model (it plays the SB3 model's actions), the later ones
    hold their fine-tuned weights, and each, loaded as the platform's actor loads it (the preload after it), plays
    with its own weights."""
    report = check_submission(uploads["finetune"], models["ppo"], games=1, max_step=60, min_states=100,
                              task_max_step=60)
    task = report["platform_task"]
    assert report["ok"] and report["identical_actions"] and report["saves_play_as_themselves"], report
    assert task["workflow"] == "finetune" and task["first_save_exported"] and not task["exported_weights_kept"]
    assert task["saves"][0]["exported_weights"] and not task["saves"][-1]["exported_weights"]
    assert all(s["plays_own_weights"] for s in task["saves"])


@pytest.mark.slow
def test_the_readme_main_jobs_model_passes_the_check(tmp_path):
    """The README's main job (imitation, 4 rounds, on the default map), then its upload folder, checked on the stand-in
    with the CLI's default check (30 leaderboard games, >= 10,000 states)."""
    cli = [sys.executable, "-m", "sb3_realm.cli"]
    run = tmp_path / "quick"
    subprocess.run([*cli, "imitate", "--config", "configs/realm/imitate/quick.yaml", "--out",
                    str(run), "--no-progress"], check=True, capture_output=True, cwd=Path(__file__).parents[1])
    out = subprocess.run([*cli, "build-submission", str(run / "final_model.zip"), "--out", str(run / "submission"),
                          "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)["check"]
    assert report["ok"] and report["platform_task"]["exported_weights_kept"] and report["states"] >= 10_000
    folder = run / "submission"
    assert not (folder / "conf").exists() and (folder / "merge_into_configure_app.toml").is_file()
