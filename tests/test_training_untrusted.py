"""``sb3-realm train`` against untrusted inputs: a run held through a symbolic link, a checkpoint folder or
``eval.json`` that is damaged or not the package's, a user's files beside the checkpoints, reward weights that
overflow float32, a new run that fails before its first checkpoint, and the guard that refuses a checkpoint on its
training maps walked around by a map file, an alias or a resume that switches maps."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import pytest
from stable_baselines3.common.callbacks import BaseCallback

from sb3_realm.atomic import hold_folder
from sb3_realm.evaluation import training_map as tm
from sb3_realm.training.checkpoints import (
    CheckpointError,
    ResumeWarning,
    RunCheckpointCallback,
    keep_final_aside,
    latest_checkpoint,
    list_checkpoints,
    save_checkpoint,
)
from sb3_realm.training.config import load_config, save_config
from sb3_realm.training.run import resume_config, start_new_run, train

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = REPO / "configs" / "realm" / "tiny.yaml"
GORGE = REPO / "configs" / "gorge" / "maskable_ppo.yaml"
SHIPPED = REPO / "sb3_realm" / "games" / "gorge" / "data"
#: a Realm run of one rollout (512 steps) with a checkpoint at its end
TINY_RUN = ["total_timesteps=512", "checkpoint_freq=512", "eval_freq=0", "progress_bar=false"]
#: a Gorge Chase run of one rollout (128 steps)
GORGE_RUN = ["env.n_envs=2", "algo.hyperparams.n_steps=64", "algo.hyperparams.batch_size=64",
             "algo.hyperparams.n_epochs=1", "algo.extractor_kwargs={features_dim: 16, cnn_channels: [4, 4, 4]}",
             "algo.net_arch={pi: [8], vf: [8]}", "eval_freq=0", "checkpoint_freq=128", "total_timesteps=128",
             "progress_bar=false", "env.usr_conf={max_step: 40}", "eval_maps=[own_9]"]


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (p.stat().st_mtime_ns, p.is_symlink())
            for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A finished Realm run with one checkpoint (step 512); tests copy it before changing it."""
    run = tmp_path_factory.mktemp("tiny") / "run"
    train(load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(run))}"]))
    return run


def copy_run(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, symlinks=True)
    return to


# ------------------------------------------------------------------------------------------ one command per run
def test_a_resume_through_a_link_to_a_held_run_is_refused_with_the_holders_pid(tmp_path):
    folder, link = tmp_path / "run", tmp_path / "link"
    folder.mkdir()
    save_config(load_config(TINY), folder / "config.yaml")
    link.symlink_to(folder, target_is_directory=True)
    before = snapshot(tmp_path)
    with hold_folder(folder):
        out = subprocess.run([*CLI, "train", "--resume", str(link), "--total-steps", "1000"], capture_output=True,
                             text=True)
        assert snapshot(folder) == snapshot(link)
    assert out.returncode == 2, out.stderr[-2000:]
    assert f"is in use by another sb3-realm command (pid {os.getpid()})" in out.stderr and str(link) in out.stderr
    assert "Traceback" not in out.stderr and snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------ parts of the run
@pytest.mark.parametrize("part", ["checkpoints", "tb", "final_model.zip", "best_model.zip", "eval.json"])
def test_a_resume_refuses_a_part_of_the_run_that_leads_outside_it_before_any_work(tiny_run, tmp_path, part):
    """A linked checkpoints/ would have its folders rotated away (a user's named like a checkpoint among them), a
    linked tb/ would get event files, a linked file would be replaced: the resume is refused and nothing changes."""
    run = copy_run(tiny_run, tmp_path / "run")
    elsewhere = tmp_path / "elsewhere" / part
    elsewhere.parent.mkdir()
    if (run / part).exists():
        shutil.move(run / part, elsewhere)
    else:
        elsewhere.write_text("the user's", encoding="utf-8")
    if part == "checkpoints":
        _user_folder(elsewhere / "step_000000000001")
    (run / part).symlink_to(elsewhere, target_is_directory=elsewhere.is_dir())
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=rf"{part} leads outside the run \(a symbolic link to .*elsewhere"):
        train(resume_config(run, ["total_timesteps=1024"]), resume=run)
    assert snapshot(tmp_path) == before


def test_a_new_run_and_the_cli_refuse_a_linked_tb_folder_in_one_line(tmp_path):
    outside = _user_folder(tmp_path / "outside")
    run = tmp_path / "run"
    run.mkdir()
    (run / "tb").symlink_to(outside, target_is_directory=True)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"tb leads outside the run"):
        train(load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(run))}"]))
    out = subprocess.run([*CLI, "train", "--config", str(TINY), "--out", str(run), "--no-progress",
                          *(arg for o in TINY_RUN for arg in ("--set", o))], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "tb leads outside the run" in out.stderr and str(outside) in out.stderr
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------ checkpoints
class _Model:
    """What save_checkpoint uses of a model: its step count, save() and its VecNormalize (none)."""

    def __init__(self, steps: int) -> None:
        self.num_timesteps = steps

    def save(self, path) -> None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("data", json.dumps({"num_timesteps": self.num_timesteps}))

    def get_vec_normalize_env(self):
        return None


def _user_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "keep.txt").write_text("the user's", encoding="utf-8")
    return path


def test_rotation_and_cleaning_remove_only_the_packages_own_names(tmp_path):
    folder, outside = tmp_path / "checkpoints", tmp_path / "outside"
    own_old = save_checkpoint(_Model(512), folder)
    users = [_user_folder(folder / "step_best"), _user_folder(folder / ".tmp-notes"),
             _user_folder(folder / "step_0000000001024-copy")]
    target = _user_folder(outside)
    save_checkpoint(_Model(9), target)  # a checkpoint-shaped folder elsewhere, linked in below
    (folder / "step_999999999999").symlink_to(target / "step_000000000009", target_is_directory=True)
    (folder / ".tmp-abcdefgh").symlink_to(target, target_is_directory=True)
    leftover = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder))  # a checkpoint a kill left half-written
    (leftover / "model.zip").write_bytes(b"half")
    outside_before = snapshot(outside)

    assert list_checkpoints(folder) == [own_old]  # a link or another name is not one of the package's checkpoints
    found = latest_checkpoint(folder)
    assert found is not None and found[0] == own_old and found[1]["num_timesteps"] == 512
    assert not leftover.exists() and all((p / "keep.txt").is_file() for p in users)
    callback = RunCheckpointCallback(1, folder, keep_last=1)
    callback.model = _Model(1024)
    callback.save()
    assert [p.name for p in list_checkpoints(folder)] == ["step_000000001024"] and not own_old.exists()
    assert all((p / "keep.txt").is_file() for p in users)
    assert (folder / "step_999999999999").is_symlink() and (folder / ".tmp-abcdefgh").is_symlink()
    assert snapshot(outside) == outside_before


def test_a_link_in_place_of_a_checkpoint_is_unlinked_and_its_target_kept(tmp_path):
    folder, target = tmp_path / "checkpoints", _user_folder(tmp_path / "elsewhere")
    folder.mkdir()
    (folder / "step_000000000512").symlink_to(target, target_is_directory=True)
    saved = save_checkpoint(_Model(512), folder)
    assert saved.is_dir() and not saved.is_symlink() and (target / "keep.txt").is_file()


@pytest.mark.parametrize("state", [[], {"curriculum": None}, {"num_timesteps": "512"}, {"num_timesteps": -1},
                                   {"num_timesteps": 512, "curriculum": [1]}, {"num_timesteps": True}])
def test_a_checkpoint_whose_state_is_not_the_packages_is_passed_over_and_named(tmp_path, state):
    folder = tmp_path / "checkpoints"
    good = save_checkpoint(_Model(512), folder)
    bad = save_checkpoint(_Model(1024), folder)
    (bad / "state.json").write_text(json.dumps(state), encoding="utf-8")
    with pytest.warns(ResumeWarning, match=r"state\.json.*damaged or not this package's.*resuming from "
                                           "step_000000000512"):
        found = latest_checkpoint(folder)
    assert found is not None and found[0] == good


@pytest.mark.parametrize(("key", "value", "message"), [
    ("num_timesteps", 256, r"state.json says 256 steps and its model.zip 512"),
    ("algo", "recurrent_ppo", r"of algorithm 'recurrent_ppo'.*not this run's"),
])
def test_a_resume_refuses_a_checkpoint_whose_state_does_not_match_its_model_before_writing(tiny_run, tmp_path, key,
                                                                                           value, message):
    run = copy_run(tiny_run, tmp_path / "run")
    state_file = list_checkpoints(run / "checkpoints")[-1] / "state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state[key] = value
    state_file.write_text(json.dumps(state), encoding="utf-8")
    before = snapshot(run)
    with pytest.raises(CheckpointError, match=message):
        train(resume_config(run, ["total_timesteps=1024"]), resume=run)
    assert snapshot(run) == before


@pytest.mark.parametrize("entry", [{"timesteps": "../../victim", "new_best": True}, {"timesteps": 9000,
                                   "new_best": "yes"}, "not a mapping", {"best_score": 1.0}])
def test_a_resume_refuses_an_eval_json_that_is_not_the_runs_before_writing(tiny_run, tmp_path, entry):
    run = copy_run(tiny_run, tmp_path / "run")
    (run / "eval.json").write_text(json.dumps([entry]), encoding="utf-8")
    (run / "best_model.zip").write_bytes(b"the best model")
    victim = tmp_path / "victim"
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"eval\.json.*entry 0.*restore it, or move it away"):
        train(resume_config(run, ["total_timesteps=1024", "eval_freq=512"]), resume=run)
    assert snapshot(tmp_path) == before and not victim.exists()


# ------------------------------------------------------------------------------------------ reward weights
@pytest.mark.parametrize(("config", "weight", "value"), [
    (TINY, "treasure", "1e300"), (TINY, "step", "-1e7"), (TINY, "end", ".inf"), (TINY, "bump", ".nan"),
    (GORGE, "caught", "-1e300"), (GORGE, "survive", "-.inf"),
])
def test_a_reward_weight_beyond_float32_is_refused_naming_it(config, weight, value):
    with pytest.raises(ValueError, match=rf"env\.reward_weights\.{weight} = .* out of range.*float32"):
        load_config(config, [f"env.reward_weights.{weight}={value}"])
    load_config(config, [f"env.reward_weights.{weight}=-1e6"])  # the bound itself trains


def test_the_cli_refuses_a_huge_weight_in_one_line_before_making_the_run(tmp_path):
    out = subprocess.run([*CLI, "train", "--config", str(TINY), "--out", str(tmp_path / "run"), "--set",
                          "env.reward_weights.treasure=1e300", "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 2 and "env.reward_weights.treasure = 1e+300" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------------ a failed new run
class _Fails(BaseCallback):
    """Raises at the first step at or after ``at`` steps."""

    def __init__(self, at: int = 0) -> None:
        super().__init__()
        self.at = at

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.at:
            raise FloatingPointError("the training diverged")
        return True


def test_a_new_run_that_fails_before_its_first_checkpoint_leaves_nothing_that_blocks_a_rerun(tmp_path):
    run = tmp_path / "runs" / "new"
    config = load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(run))}"])
    with pytest.raises(FloatingPointError):
        train(config, callbacks=[_Fails()])
    assert not run.exists() and list(tmp_path.iterdir()) == []
    start_new_run(load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(run))}"]), run)  # the rerun may start

    existing = _user_folder(tmp_path / "mine")
    (existing / "tb" / "run_1").mkdir(parents=True)
    (existing / "checkpoints").mkdir()
    with pytest.raises(FloatingPointError):
        train(load_config(TINY, [*TINY_RUN, f"out={json.dumps(str(existing))}"]), callbacks=[_Fails()])
    # what the user had, and only that
    assert sorted(snapshot(existing)) == ["checkpoints", "keep.txt", "tb", "tb/run_1"]
    assert (existing / "keep.txt").read_text(encoding="utf-8") == "the user's"


def test_a_new_run_that_fails_after_a_checkpoint_is_kept_for_resume(tmp_path):
    run = tmp_path / "run"
    config = load_config(TINY, ["total_timesteps=2048", "checkpoint_freq=512", "eval_freq=0",
                                f"out={json.dumps(str(run))}"])
    with pytest.raises(FloatingPointError):
        train(config, callbacks=[_Fails(at=700)])
    assert (run / "config.yaml").is_file() and [p.name for p in list_checkpoints(run / "checkpoints")] == \
        ["step_000000000512"]


# ------------------------------------------------------------------------------------------ training maps
def _gorge_map_file(folder: Path, shipped: str, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(SHIPPED / f"gorge_{shipped}.json.gz", folder / name))


def test_the_guard_compares_maps_by_content(monkeypatch, tmp_path):
    copy = _gorge_map_file(tmp_path / "maps", "own_2", "practice.json.gz")
    monkeypatch.setattr(tm, "recorded_env", lambda policy: {"map_names": [str(copy), "own_1"]})
    with pytest.raises(ValueError, match=r"trained on own_2 \(the same map as its training map .*practice.*\)"):
        tm.check_training_maps("run/model.zip", ["own_2"], game="gorge")
    with pytest.raises(ValueError, match=r"trained on default \(the same map as its training map own_1\)"):
        tm.check_training_maps("run/model.zip", ["default"], game="gorge")
    other = _gorge_map_file(tmp_path / "elsewhere", "own_1", "gorge_chase_map_3.json.gz")
    with pytest.raises(ValueError, match=r"gorge_chase_map_3.*the same map as its training map own_1"):
        tm.check_training_maps("run/model.zip", [str(other)], game="gorge")
    tm.check_training_maps("run/model.zip", ["own_3"], game="gorge")  # a map it never saw


def test_the_guard_compares_contents_only_never_names_first(monkeypatch, tmp_path):
    """Another map saved under a training map file's name is a map the policy never saw; a training map file
    moved and renamed since the run is still its training map, by the content the run recorded."""
    trained = _gorge_map_file(tmp_path / "maps", "own_2", "mine.json.gz")
    other = _gorge_map_file(tmp_path / "elsewhere", "own_5", "mine.json.gz")  # another map, the same file name
    digest = hashlib.sha256(gzip.decompress(trained.read_bytes())).hexdigest()  # the content, as train records it
    env = {"map_names": [str(trained)], "map_digests": {str(trained.resolve()): digest}}
    monkeypatch.setattr(tm, "recorded_env", lambda policy: env)
    tm.check_training_maps("run/model.zip", [str(other)], game="gorge")  # scored: a map it never saw
    moved = tmp_path / "moved" / "renamed.json.gz"
    moved.parent.mkdir()
    trained.rename(moved)
    with pytest.raises(ValueError, match=r"renamed.json.gz \(the same map as its training map .*mine.json.gz\)"):
        tm.check_training_maps("run/model.zip", [str(moved)], game="gorge")
    tm.check_training_maps("run/model.zip", [str(other)], game="gorge")  # still another map
    # a plain JSON copy of the gzip-compressed file has the same content
    plain = tmp_path / "moved" / "plain.json"
    plain.write_bytes(gzip.decompress(moved.read_bytes()))
    with pytest.raises(ValueError, match=r"plain.json \(the same map"):
        tm.check_training_maps("run/model.zip", [str(plain)], game="gorge")


def test_the_map_warning_reads_a_moved_training_file_by_its_recorded_content(monkeypatch, tmp_path):
    from sb3_realm.games.realm import default_map, load_map, small_map

    def write(game_map, path: Path) -> Path:
        path.write_text(json.dumps(game_map.to_dict()), encoding="utf-8")
        return path

    trained = write(small_map(), tmp_path / "realm_map_1.json")
    env = {"map_path": str(trained), "map_digests": {str(trained.resolve()): tm.map_digest(trained)}}
    monkeypatch.setattr(tm, "recorded_env", lambda policy: env)
    moved = trained.rename(tmp_path / "renamed.json")
    assert tm.training_map_mismatch("run/model.zip", load_map(moved), game="realm") is None  # its own map
    (tmp_path / "elsewhere").mkdir()
    other = write(default_map(), tmp_path / "elsewhere" / "realm_map_1.json")  # another map, the same name
    message = tm.training_map_mismatch("run/model.zip", load_map(other), game="realm")
    assert message is not None and "a map it never learned" in message
    write(default_map(), trained)  # another map in the training file's place: it is not the training map either
    assert "moved or changed since" in tm.training_map_mismatch("run/model.zip", load_map(trained), game="realm")
    assert tm.training_map_mismatch("run/model.zip", load_map(moved), game="realm") is None


def test_a_run_records_the_content_of_its_map_files_for_the_guard(tmp_path):
    trained = _gorge_map_file(tmp_path / "maps", "own_2", "mine.json.gz")
    _, run = train(load_config(GORGE, [*GORGE_RUN, f"env.map_names=[{json.dumps(str(trained))}, own_1]",
                                       f"out={json.dumps(str(tmp_path / 'run'))}"]))
    recorded = load_config(run / "config.yaml").env.map_digests
    assert recorded == {str(trained.resolve()): tm.map_digest(trained)}
    moved = trained.rename(tmp_path / "renamed.json.gz")
    with pytest.raises(ValueError, match=r"renamed.json.gz \(the same map as its training map"):
        tm.check_training_maps(run / "final_model.zip", [str(moved)], game="gorge")
    with pytest.raises(ValueError, match=r"env.map_digests = .* must map map files"):
        load_config(GORGE, ["env.map_digests={a: 1}"])


@pytest.mark.parametrize(("overrides", "shown"), [
    (["env.map_names=[own_1]", "eval_maps=[default]"], "default (the same map as own_1)"),
    (["env.map_names=[]", "env.map_name=default", "eval_maps=[own_1]"], "own_1 (the same map as default)"),
    (["env.map_names=[{map}]", "eval_maps=[own_3]"], "own_3 (the same map as "),
    (["env.map_names=[own_6]", "env.map_history=[own_3]", "eval_maps=[own_3]"], "'own_3'"),
])
def test_eval_maps_may_name_no_training_map_under_another_name(tmp_path, overrides, shown):
    copy = _gorge_map_file(tmp_path, "own_3", "mine.json.gz")
    overrides = [o.replace("{map}", json.dumps(str(copy))) for o in overrides]
    with pytest.raises(ValueError, match=r"eval_maps \[.*\] are maps the run trains on") as caught:
        load_config(GORGE, overrides)
    assert shown in str(caught.value)


def test_a_run_keeps_every_map_it_trained_on_across_a_resume_and_a_fine_tune(tmp_path):
    first = tmp_path / "first"
    _, run = train(load_config(GORGE, [*GORGE_RUN, "env.map_names=[own_1]", f"out={json.dumps(str(first))}"]))
    assert load_config(run / "config.yaml").env.map_history == []  # a run on the maps it names records no more
    # the resume switches the maps (and tries to clear the history): the final model is refused on both
    config = resume_config(run, ["total_timesteps=256", "env.map_names=[own_2]", "env.map_history=[]"])
    _model, _ = train(config, resume=run)
    final = run / "final_model.zip"
    assert tm.training_maps(final, game="gorge") == ["own_1", "own_2"]
    assert load_config(run / "config.yaml").env.map_history == ["own_1"]
    for played in ("own_1", "own_2"):
        with pytest.raises(ValueError, match=rf"trained on {played}"):
            tm.check_training_maps(final, [played], game="gorge")
    with pytest.raises(ValueError, match=r"eval_maps \['own_1'\] are maps the run trains on"):
        train(resume_config(run, ["total_timesteps=384", "eval_maps=[own_1]"]), resume=run)

    # a run from that model inherits its maps
    second = tmp_path / "second"
    _, run2 = train(load_config(GORGE, [*GORGE_RUN, "env.map_names=[own_3]", f"out={json.dumps(str(second))}",
                                        f"finetune.init_from={json.dumps(str(final))}"]))
    assert tm.training_maps(run2 / "final_model.zip", game="gorge") == ["own_1", "own_2", "own_3"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tm.check_training_maps(run2 / "final_model.zip", ["own_4"], game="gorge")


def test_a_curriculum_state_that_cannot_be_restored_is_refused_before_writing(tiny_run, tmp_path):
    run = copy_run(tiny_run, tmp_path / "run")
    state_file = list_checkpoints(run / "checkpoints")[-1] / "state.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state_file.write_text(json.dumps({**state, "curriculum": {"phase": 0, "rng": "not a generator"}}),
                          encoding="utf-8")
    before = snapshot(run)
    config = resume_config(run, ["total_timesteps=1024", "curriculum=[{usr_conf: {treasure_num: 2}}]"])
    with pytest.raises(CheckpointError, match=r"curriculum state in its state.json cannot be restored"):
        train(config, resume=run)
    assert snapshot(run) == before


def test_a_model_set_aside_never_replaces_one_set_aside_before(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    _Model(1024).save(run / "final_model.zip")
    (run / "final_model.step-1024.zip").write_bytes(b"set aside by an earlier resume")
    with pytest.warns(ResumeWarning, match="kept as final_model.step-1024.2.zip"):
        aside = keep_final_aside(run, 512)
    assert aside == run / "final_model.step-1024.2.zip"
    assert (run / "final_model.step-1024.zip").read_bytes() == b"set aside by an earlier resume"


@pytest.mark.parametrize("env", [{"map_names": 5}, {"map_names": "own_2"}, {"map_names": [3], "map_path": 7},
                                 {"map_name": ["x"], "map_history": "own_2"}])
def test_a_recorded_env_of_another_shape_is_read_as_naming_no_map(monkeypatch, env):
    monkeypatch.setattr(tm, "recorded_env", lambda policy: env)
    assert tm.training_maps("run/model.zip", game="gorge") == ["own_1"]  # nothing named: the default map
    tm.check_training_maps("run/model.zip", ["own_2"], game="gorge")
