"""An imitation run's files met as a hostile or damaged copy: a dataset index naming files outside its folder, a
dataset that does not match its checkpoint, a shard holding a pickle, a damaged checkpoint state or eval.json, a run
folder whose parts lead elsewhere. Each is refused in one line naming the file and the fix, before anything is
written, and nothing outside the run folder is read, written or deleted."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_imitation import CLI, QUICK, REPO, small_model

from sb3_realm.atomic import sha256_file
from sb3_realm.imitation import DatasetError, ExpertDataset, imitate, load_imitate_config
from sb3_realm.imitation.config import read_run_config
from sb3_realm.imitation.records import RecordError, RoundRecord, RunState, RunWriter

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: the smallest run: round 0 only (2 expert games, one epoch, one held-out game)
TINY = [*QUICK, "imitation.rounds=0", "imitation.expert_games=2", "eval_games=1", "imitation.epochs=1"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "run"
    imitate(load_imitate_config(None, [*TINY, f"out={json.dumps(str(out))}"]))
    return out


@pytest.fixture
def run(tiny_run, tmp_path) -> Path:
    """A copy of the tiny run at ``tmp_path / "run"`` (its checkpoint counts one shard)."""
    copy = tmp_path / "run"
    shutil.copytree(tiny_run, copy)
    return copy


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


def edit_meta(run: Path, change) -> None:
    path = run / "dataset" / "meta.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    change(meta)
    path.write_text(json.dumps(meta), encoding="utf-8")


def edit_state(run: Path, change) -> Path:
    """The checkpoint's state.json changed by ``change`` (a function that edits it in place), or replaced by
    ``change`` when it is not a function."""
    (path,) = (run / "checkpoints").glob("step_*/state.json")
    saved = json.loads(path.read_text(encoding="utf-8"))
    if callable(change):
        change(saved)
    else:
        saved = change
    path.write_text(json.dumps(saved), encoding="utf-8")
    return path


def resume_cli(run: Path, rounds: int = 1) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "imitate", "--resume", str(run), "--set", f"imitation.rounds={rounds}",
                           "--no-progress"], capture_output=True, text=True, cwd=REPO)


def refused(out: subprocess.CompletedProcess, *names: str) -> str:
    """The one line of a refusal (exit code 2, no traceback), which names each of ``names``."""
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert lines[0].startswith("sb3-realm imitate: error: "), lines[0]
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


def resume(run: Path, rounds: int = 1):
    return imitate(read_run_config(run, [f"imitation.rounds={rounds}"]), resume=run)


# ------------------------------------------------------------------------------------------ the dataset's index
@pytest.mark.parametrize("outside", ["../../victim.txt", "absolute"])
def test_a_dataset_index_naming_files_outside_deletes_nothing(run, tmp_path, outside):
    """The resume drops the shards a killed round appended after its checkpoint: an entry naming a file outside the
    dataset (by '..' or an absolute path) is refused before anything is removed."""
    victim = tmp_path / "victim.txt"
    victim.write_text("not the run's", encoding="utf-8")
    name = str(victim) if outside == "absolute" else outside
    shard = json.loads((run / "dataset" / "meta.json").read_text(encoding="utf-8"))["shards"][0]
    edit_meta(run, lambda meta: meta["shards"].append({**shard, "file": name}))
    before = snapshot(tmp_path)
    line = refused(resume_cli(run), "meta.json", repr(name))
    assert "stay inside" in line
    assert snapshot(tmp_path) == before and victim.read_text(encoding="utf-8") == "not the run's"


@pytest.mark.parametrize("name, match", [
    ("link.npz", "symbolic link"),  # a link inside the dataset leading out
    ("meta.json", "is not a shard's name"),  # inside, but not a file this package writes as a shard
    ("sub/shard-00001.npz", "is not a shard's name"),
])
def test_a_dataset_index_naming_other_files_is_refused_before_any_removal(run, tmp_path, name, match):
    victim = tmp_path / "victim.txt"
    victim.write_text("not the run's", encoding="utf-8")
    (run / "dataset" / "link.npz").symlink_to(victim)
    shard = json.loads((run / "dataset" / "meta.json").read_text(encoding="utf-8"))["shards"][0]
    edit_meta(run, lambda meta: meta["shards"].append({**shard, "file": name}))
    before = snapshot(tmp_path)
    with pytest.raises(DatasetError, match=match):
        resume(run)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("change, match", [
    (lambda m: m.update(shards="all"), "shards = 'all' must be a list"),
    (lambda m: m["shards"][0].pop("sha256"), r"shards\[0\] lacks 'sha256'"),
    (lambda m: m["shards"][0].update(states="38"), r"shards\[0\]\.states = '38'"),
    (lambda m: m["shards"].append(dict(m["shards"][0])), "names shard-00000.npz twice"),
    (lambda m: m.update(layout={"maps_shape": [4, 51]}), "layout"),
    (lambda m: m.pop("feature_version"), "lacks 'feature_version'"),
])
def test_a_damaged_dataset_index_is_one_line_naming_it(run, change, match):
    edit_meta(run, change)
    with pytest.raises(DatasetError, match=match) as info:
        ExpertDataset.open(run / "dataset")
    assert "meta.json" in str(info.value)


# ------------------------------------------------------------------------------------------ dataset vs checkpoint
def test_a_dataset_with_fewer_shards_than_its_checkpoint_is_refused(run, tmp_path):
    """A resume on an index that lost round 0's entry would train on fewer states and write its new shard over round
    0's file."""
    edit_meta(run, lambda meta: meta.update(shards=[]))
    shard = run / "dataset" / "shard-00000.npz"
    before = snapshot(tmp_path)
    line = refused(resume_cli(run), "meta.json", "lists 0 shards", "step_")
    assert "checkpoint" in line
    assert snapshot(tmp_path) == before and shard.is_file()


def test_a_dataset_whose_shards_differ_from_its_checkpoint_s_is_refused(run, tmp_path):
    """The first shards must be the ones the checkpoint trained on: another shard in their place is refused (by its
    sha256 where the checkpoint records them, by the states counted where it predates them)."""
    ds = ExpertDataset.open(run / "dataset")
    block = ds.shard(0)
    ds.append(block.take(slice(0, 5)), "a round killed before its checkpoint")
    edit_meta(run, lambda meta: meta.update(shards=meta["shards"][::-1]))  # the killed round's shard first
    before = snapshot(tmp_path)
    with pytest.raises(DatasetError, match=r"shard-00001.npz is not the shard the checkpoint"):
        resume(run)
    assert snapshot(tmp_path) == before
    edit_state(run, lambda saved: saved["imitation"].pop("shard_sha256"))  # a checkpoint from before they were kept
    before = snapshot(tmp_path)
    with pytest.raises(DatasetError, match=r"hold 5 states, the checkpoint '.*step_000000000038' trained on 38"):
        resume(run)
    assert snapshot(tmp_path) == before


def test_append_never_overwrites_a_shard_file_it_did_not_record(run):
    """A shard file the index does not name (a round killed between writing it and recording it, or anything else)
    is left as it is: the new shard takes the next free name."""
    ds = ExpertDataset.open(run / "dataset")
    block = ds.shard(0)
    unrecorded = run / "dataset" / "shard-00001.npz"
    unrecorded.write_bytes(b"whatever was there")
    entry = ds.append(block, "dagger round 1")
    assert entry["file"] == "shard-00002.npz" and unrecorded.read_bytes() == b"whatever was there"
    assert ExpertDataset.open(run / "dataset").states == 2 * len(block)


def test_the_resume_drops_a_killed_round_s_shard_and_only_it(run):
    ds = ExpertDataset.open(run / "dataset")
    ds.append(ds.shard(0).take(slice(0, 5)), "a round killed before its checkpoint")
    ds = ExpertDataset.open(run / "dataset")
    ds.verify(1)
    ds.truncate(1)
    assert [p.name for p in sorted((run / "dataset").iterdir())] == ["meta.json", "shard-00000.npz"]
    assert len(ds.all()) == 38


# ------------------------------------------------------------------------------------------ the shards
def write_shard(run: Path, arrays: dict | bytes) -> Path:
    """Shard 0 replaced by ``arrays`` (an npz of them, or raw bytes), its sha256 updated in meta.json and in the
    checkpoint's state so that every checksum passes."""
    path = run / "dataset" / "shard-00000.npz"
    if isinstance(arrays, bytes):
        path.write_bytes(arrays)
    else:
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        path.write_bytes(buffer.getvalue())
    digest = sha256_file(path)
    edit_meta(run, lambda meta: meta["shards"][0].update(sha256=digest))
    edit_state(run, lambda saved: saved["imitation"].update(shard_sha256=[digest]))
    return path


def shard_arrays(run: Path) -> dict:
    with np.load(run / "dataset" / "shard-00000.npz", allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def test_a_shard_holding_a_pickle_is_refused_before_anything_is_written(run, tmp_path):
    arrays = shard_arrays(run)
    arrays["actions"] = np.array([int(a) for a in arrays["actions"]], dtype=object)  # pickled by np.savez
    write_shard(run, arrays)
    before = snapshot(tmp_path)
    line = refused(resume_cli(run), "shard-00000.npz", "pickle")
    assert "collect the data again" in line or "restore" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("damage, match", [
    (lambda a: a.pop("masks"), "lacks the array 'masks'"),
    (lambda a: a.update(vector=a["vector"][:, :10]), r"vector has the shape \(38, 10\), expected \(38, \d+\)"),
    (lambda a: a.update(actions=a["actions"].astype(np.int64)), "actions is int64, expected uint8"),
    (lambda a: a.update(actions=np.full_like(a["actions"], 200)), "actions outside 0..15"),
    (lambda a: a.update(vector=np.full_like(a["vector"], np.nan)), "not finite"),
    (lambda a: a.update(starts=a["starts"][:5]), r"starts has the shape \(5,\), expected \(38,\)"),
    (b"not a zip archive", "is not a readable .npz"),
])
def test_a_damaged_shard_with_a_matching_checksum_is_refused_naming_it(run, tmp_path, damage, match):
    if isinstance(damage, bytes):
        write_shard(run, damage)
    else:
        arrays = shard_arrays(run)
        damage(arrays)
        write_shard(run, arrays)
    before = snapshot(tmp_path)
    with pytest.raises(DatasetError, match=match) as info:
        resume(run)
    assert "shard-00000.npz" in str(info.value)
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------ checkpoint and records
def test_a_damaged_checkpoint_state_is_one_line_naming_it(run, tmp_path):
    path = edit_state(run, lambda saved: saved["imitation"].pop("history"))
    before = snapshot(tmp_path)
    line = refused(resume_cli(run), str(path), "'history'")
    assert "KeyError" not in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("change, match", [
    (["not", "a", "mapping"], "holds a list"),
    (lambda s: s.update(imitation="yes"), "imitation = 'yes'"),
    (lambda s: s["imitation"].pop("shards"), "lacks 'shards'"),
    (lambda s: s["imitation"].update(round="0"), "round = '0'"),
    (lambda s: s["imitation"].update(history={}), "history = {} must be a list"),
    (lambda s: s["imitation"]["history"][0].pop("states"), r"history\[0\] lacks 'states'"),
    (lambda s: s["imitation"]["history"][0].update(bc_loss="low"), r"history\[0\]\.bc_loss = 'low'"),
    (lambda s: s["imitation"]["history"][0].update(extra=1), r"history\[0\] holds unknown keys \['extra'\]"),
    (lambda s: s["imitation"].update(round=3), r"history holds rounds \[0\], which must rise to its round 3"),
    (lambda s: s["imitation"].update(best_round=7), "best_round = 7"),
    (lambda s: s["imitation"].update(reference={"key": 1}), "reference"),
    (lambda s: s["imitation"].update(shard_sha256=["ab"]), "shard_sha256"),
])
def test_a_damaged_checkpoint_state_names_the_file_and_the_key(run, tmp_path, change, match):
    path = edit_state(run, change)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=match) as info:
        resume(run)
    assert str(path) in str(info.value)
    assert snapshot(tmp_path) == before


def test_a_round_record_of_the_wrong_shape_is_refused():
    with pytest.raises(RecordError, match=r"eval\.json: history\[2\] lacks 'round'"):
        RoundRecord.from_dict({}, "eval.json: history[2]")
    with pytest.raises(RecordError, match=r"state.json: imitation holds a list"):
        RunState.from_dict([], "state.json: imitation")


def test_a_damaged_eval_json_is_written_again_from_the_checkpoint(run):
    (run / "eval.json").write_text('{"history": "lost"}', encoding="utf-8")
    out = resume_cli(run, rounds=0)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    report = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    assert [h["round"] for h in report["history"]] == [0] and report["best_round"] == 0
    assert json.loads(out.stdout)["dataset_states"] == 38


# ------------------------------------------------------------------------------------------ the run folder
@pytest.mark.parametrize("part", ["dataset", "checkpoints", "checkpoints/step_000000000099"])
def test_a_run_part_leading_outside_the_run_is_refused(run, tmp_path, part):
    elsewhere = tmp_path / "elsewhere"
    if (run / part).exists():
        shutil.move(run / part, elsewhere)
    else:  # a newer checkpoint, elsewhere
        shutil.copytree(next((run / "checkpoints").glob("step_*")), elsewhere)
    (run / part).symlink_to(elsewhere, target_is_directory=True)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=f"{part}.*leads outside the run"):
        resume(run)
    assert snapshot(tmp_path) == before


def test_a_missing_or_outside_kept_model_is_refused_up_front(run, tmp_path):
    (run / "best_model.zip").write_bytes(b"PK cut short")
    with pytest.raises(ValueError, match=r"best_model.zip.*is damaged"):
        resume(run)
    (run / "best_model.zip").unlink()
    with pytest.raises(ValueError, match=r"best_model.zip.*missing"):
        resume(run)
    outside = tmp_path / "model.zip"
    shutil.copy(run / "final_model.zip", outside)
    (run / "best_model.zip").symlink_to(outside)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"best_model.zip.*symbolic link"):
        resume(run)
    assert snapshot(tmp_path) == before


def test_a_run_config_naming_a_base_file_is_refused(run, tmp_path):
    """A run's config.yaml is written whole; one naming a base would read a file outside the run."""
    (tmp_path / "outside.yaml").write_text("seed: 5\n", encoding="utf-8")
    config = read_run_config(run, ["imitation.rounds=1"])
    path = run / "config.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "base: ../outside.yaml\n", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=r"config.yaml.*names a base"):
        read_run_config(run)
    with pytest.raises(ValueError, match=r"config.yaml.*names a base"):  # a config given to the API, not read from it
        imitate(config, resume=run)
    assert snapshot(tmp_path) == before


def test_checkpoint_rotation_removes_only_the_run_s_own_checkpoints(run, tmp_path):
    """Only checkpoint folders of this package's names are rotated: a folder of another name beside them (sorted
    after them) is never counted, and a link is never followed or removed."""
    folder = run / "checkpoints"
    (folder / "step_notes").mkdir()
    (folder / "step_notes" / "mine.txt").write_text("keep", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "file.txt").write_text("keep", encoding="utf-8")
    (folder / "step_000000000001").symlink_to(elsewhere, target_is_directory=True)
    config = load_imitate_config(None, [*TINY, "keep_checkpoints=1", f"out={json.dumps(str(run))}"])
    model = small_model()
    model.num_timesteps = 500
    state = RunState.from_dict(json.loads(next(folder.glob("step_0*38/state.json")).read_text())["imitation"])
    writer = RunWriter(run, config)
    try:
        writer.round_done(model, state, state.history[-1], ExpertDataset.open(run / "dataset").meta["shards"])
    finally:
        writer.close()
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["step_000000000001", "step_000000000500", "step_notes"]
    assert (folder / "step_notes" / "mine.txt").is_file() and (elsewhere / "file.txt").is_file()
    assert os.path.islink(folder / "step_000000000001")
