"""A sweep of bad inputs across the CLI and the tuning scripts, as a user types them: every one exits non-zero with
a one-paragraph message that names the problem (no traceback), and leaves the files around it as they were."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MAP = REPO / "sb3_realm" / "games" / "realm" / "data" / "default_map.json"
CLI = [sys.executable, "-m", "sb3_realm.cli"]
TINY = str(REPO / "configs" / "realm" / "tiny.yaml")
IMITATE = str(REPO / "configs" / "realm" / "imitate" / "quick.yaml")


def _prepare(work: Path) -> None:
    """The files the rows refer to, in the command's working folder."""
    (work / "afile").write_text("not a folder\n", encoding="utf-8")
    (work / "list.yaml").write_text("- a\n- b\n", encoding="utf-8")
    (work / "string.yaml").write_text("just a string\n", encoding="utf-8")
    (work / "broken.yaml").write_text("env: {n_envs: [\n", encoding="utf-8")
    (work / "empty_map.json").write_text("{}\n", encoding="utf-8")
    (work / "broken_map.json").write_text("{not json", encoding="utf-8")
    (work / "garbage.zip").write_bytes(b"PK\x03\x04 not really a zip")
    (work / "notes.txt").write_text("a text file\n", encoding="utf-8")
    (work / "existing").mkdir()
    (work / "existing" / "mine.txt").write_text("keep\n", encoding="utf-8")
    (work / "emptydir").mkdir()
    (work / "taken.gif").write_bytes(b"GIF89a mine")
    split = json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))
    for row in range(128):  # a wall across the whole map: positions on its two sides cannot reach each other
        split["Flags"][row * 128 + 64] = 0
    (work / "split_map.json").write_text(json.dumps(split), encoding="utf-8")
    (work / "baddb").mkdir()
    (work / "baddb" / "study.db").write_text("not a database\n", encoding="utf-8")
    huge = json.loads(DEFAULT_MAP.read_text(encoding="utf-8"))
    huge["positions_world_xz"]["3"] = [10**30, 500]
    (work / "huge_map.json").write_text(json.dumps(huge), encoding="utf-8")
    imitated = work / "imitated" / "checkpoints" / "step_000000001024"  # an imitation run, as train --resume sees it
    imitated.mkdir(parents=True)
    (imitated / "state.json").write_text(json.dumps({"num_timesteps": 1024, "imitation": {"round": 0}}),
                                         encoding="utf-8")
    with zipfile.ZipFile(imitated / "model.zip", "w") as archive:
        archive.writestr("data", "{}")
    base = (REPO / "configs" / "realm" / "imitate" / "base.yaml").read_text(encoding="utf-8")
    (work / "imitated" / "config.yaml").write_text(base, encoding="utf-8")


# (command, fragment the message must hold)
ROWS = [
    # ---------------------------------------------------------------- train
    (["train", "--config", "missing.yaml"], "does not exist"),
    (["train", "--config", "list.yaml"], "holds a list, not a mapping"),
    (["train", "--config", "string.yaml"], "holds a str, not a mapping"),
    (["train", "--config", "broken.yaml"], "is not valid YAML"),
    (["train", "--config", TINY, "--set", "algo.hyperparams.gamma=1.5"], "gamma = 1.5 is out of range"),
    (["train", "--config", TINY, "--set", "algo.hyperparams.n_steps=0"], "n_steps"),
    (["train", "--config", TINY, "--set", "algo.hyperparams.batch_size=1"], "batch_size"),
    (["train", "--config", TINY, "--set", "algo.hyperparams.batch_size=100000"], "larger than a rollout"),
    (["train", "--config", TINY, "--set", "algo.hyperparams.lernrate=0.1"], "unknown keys"),
    (["train", "--config", TINY, "--set", "device=gpu0"], "gpu0"),
    (["train", "--config", TINY, "--set", "nosuchkey=1"], "nosuchkey"),
    (["train", "--config", TINY, "--set", "env.n_envs=0"], "n_envs"),
    (["train", "--config", TINY, "--set", "env.usr_conf={treasure_num: 20}"], "treasure_num"),
    (["train", "--config", TINY, "--set", "algo.name=dqn"], "algo.name = 'dqn'"),
    (["train", "--config", TINY, "--set", "algo.extractor=nope"], "nope"),
    (["train", "--config", TINY, "--set", "algo.activation=nope"], "nope"),
    (["train", "--config", TINY, "--set", "total_timesteps"], "key=value"),
    (["train", "--config", TINY, "--out", ""], "names no folder"),
    (["train", "--config", TINY, "--out", "afile/run"], "is a file, not a folder"),
    (["train", "--config", TINY, "--out", "runs/con"], "'con' is a reserved device name on Windows"),
    (["train", "--config", TINY, "--out", "runs/a:b"], "holds ':', which Windows does not allow"),
    (["train", "--config", TINY, "--map", "missing.json"], "missing.json"),
    (["train", "--config", TINY, "--map", "empty_map.json"], "empty_map.json"),
    (["train", "--config", TINY, "--map", "broken_map.json"], "broken_map.json"),
    (["train", "--resume", "emptydir"], "no config.yaml there"),
    (["train", "--config", TINY, "--trial", "3"], "--trial N goes with --from-study"),
    (["train", "--config", TINY, "--init-from", "missing.zip"], "(finetune.init_from) is not a file"),
    (["train", "--config", TINY, "--init-from", "garbage.zip"], "is not a Stable-Baselines3 checkpoint"),
    (["train", "--resume", "emptydir", "--init-from", "garbage.zip"], "drop --config/--out/--from-study/--init-from"),
    (["train", "--config", TINY, "--set", "finetune.anchor_coef=1"], "act on a trained model"),
    # ---------------------------------------------------------------- imitate
    (["imitate", "--config", IMITATE, "--set", "imitation.expert=nobody"], "neither 'oracle', 'oracle-refined' nor"),
    (["imitate", "--config", IMITATE, "--set", "imitation.rounds=-1"], "imitation.rounds = -1"),
    (["imitate", "--config", IMITATE, "--set", "imitation.screen_games=-5"], "imitation.screen_games = -5"),
    (["imitate", "--config", IMITATE, "--set", "imitation.treasure_counts=[14]"], "0..13"),
    (["imitate", "--config", IMITATE, "--set", "imitation.window=0"], "imitation.window = 0 must be >= 1"),
    (["imitate", "--config", IMITATE, "--set", "env.frame_stack=2"], "env.frame_stack = 2"),
    (["imitate", "--config", IMITATE, "--out", "afile/run"], "is a file, not a folder"),
    (["imitate", "--config", str(REPO / "configs" / "realm" / "imitate" / "competition_fifteen_minutes.yaml")],
     "tuned for the competition's map, which the package does not ship; pass it with --map"),
    (["imitate", "--config", str(REPO / "configs" / "imitate_real_map.yaml")],
     "that recipe is now configs/realm/imitate/competition_fifteen_minutes.yaml"),
    (["imitate", "--config", IMITATE, "--set", "imitation.sweep=true"],
     "write instead: imitation: {selection: {games: sweep, label: [unfinished], keep: fewest_lost}}"),
    (["imitate", "--resume", "emptydir"], "no config.yaml there"),
    # ---------------------------------------------------------------- eval
    (["eval", "missing.zip"], "missing.zip"),
    (["eval", "garbage.zip"], "garbage.zip"),
    (["eval", "notes.txt"], "notes.txt"),
    (["eval", "existing"], "is not a built submission"),
    (["eval", "random", "--game", "realm", "--sets", "3,4"], "--protocol custom"),
    (["eval", "random", "--game", "realm", "--treasures", "14"], "--treasures 14 is out of range"),
    (["eval", "random", "--game", "realm", "--games", "0"], "--games 0"),
    (["eval", "random", "--game", "realm", "--workers", "0"], "--workers 0"),
    (["eval", "random", "--game", "realm", "--max-step", "0"], "max_step"),
    (["eval", "random", "--game", "realm", "--json", "afile/report.json"], "afile"),
    (["eval", "random", "--game", "realm", "--plot", "afile/scores.png"], "afile"),
    (["eval", "random", "--game", "realm", "--map", "missing.json"], "missing.json"),
    (["eval", "random", "--game", "realm", "--protocol", "custom", "--sets", "3,99"], "99"),
    # ---------------------------------------------------------------- replay, demo
    (["replay", "missing.zip", "--out", "ep.gif"], "missing.zip"),
    (["replay", "random", "--game", "realm", "--out", "existing"], "existing"),
    (["replay", "random", "--game", "realm", "--out", "afile/ep.gif"], "afile"),
    (["replay", "random", "--game", "realm", "--usr-conf", "{bad json"], "JSON"),
    (["replay", "random", "--game", "realm", "--usr-conf", '{"treasure_num": 99}'], "treasure_num"),
    (["demo", "--game", "realm", "--out", "notes.txt"], "notes.txt"),
    (["demo", "--game", "realm", "--usr-conf", '{"max_step": 0}'], "max_step"),
    (["demo", "--game", "realm", "--map", "missing.json"], "missing.json"),
    # ---------------------------------------------------------------- build-submission
    (["build-submission", "missing.zip", "--out", "sub"], "missing.zip"),
    (["build-submission", "garbage.zip", "--out", "sub"], "garbage.zip"),
    (["build-submission", "notes.txt", "--out", "sub"], "notes.txt"),
    # ---------------------------------------------------------------- the tuning scripts
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--enqueue", '{"treasur": 2.0}'], "treasur"),
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--n-trials", "0"], "n_trials = 0"),
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--workers", "0"], "--workers 0"),
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--study-name", "nul"], "reserved device name"),
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--enqueue", "[1, 2]"], "enqueue"),
    ([str(REPO / "tuning" / "tune_hparams.py"), "--config", "list.yaml"], "not a mapping"),
    ([str(REPO / "tuning" / "tune_hparams.py"), "--config", TINY, "--storage", "bogus://x"], "bogus://x"),
    ([str(REPO / "tuning" / "tune_hparams.py"), "--config", TINY, "--storage",
      "postgresql://me:secret@127.0.0.1:1/db"], "'postgresql://me:***@127.0.0.1:1/db': the database server refused"),
    # an empty output path names no folder or file, for every command (never the current folder)
    (["demo", "--game", "realm", "--out", ""], "names no folder"),
    (["replay", "random", "--game", "realm", "--out", ""], "names no file"),
    (["eval", "random", "--game", "realm", "--games", "1", "--no-yardstick", "--json", ""], "names no file"),
    (["build-submission", "garbage.zip", "--out", ""], "names no folder"),
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--out", ""], "--out '' is empty"),
    # paths and values that are not what they look like: one line naming the value and the fix
    (["eval", "random", "--game", "realm", "--seed", "-1"], "argument --seed: -1 is negative"),
    (["eval", ""], "policy '' is empty"),
    (["eval", "random", "--game", "realm", "--map", ""], "map file '' is empty"),
    (["eval", "random", "--game", "realm", "--map", "existing"], "map file 'existing' is a folder, not a file"),
    (["eval", "random", "--game", "realm", "--map", "huge_map.json"],
     "position 3 x = 1000000000000000000000000000000 is out of range"),
    (["build-submission", "existing", "--out", "sub"], "model file 'existing' is a folder, not an SB3 checkpoint file"),
    (["demo", "--game", "realm", "--out", "x" * 300], "is too long; use a shorter one"),
    (["eval", "random", "--game", "realm", "--games", "1", "--no-yardstick", "--json", "/".join(["d" * 200] * 25)],
     "is too long"),
    (["train", "--resume", "imitated"], "is an imitation run; continue it with sb3-realm imitate --resume"),
    # a study's inputs are all checked before it is created (a study stores its map and config)
    ([str(REPO / "tuning" / "tune_rewards.py"), "--config", TINY, "--map", "split_map.json", "--out", "study"],
     "are not connected by walkable cells"),
    ([str(REPO / "tuning" / "tune_hparams.py"), "--config", TINY, "--out", "baddb"], "is not a SQLite database"),
]


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob("*"))}


@pytest.mark.parametrize("args, fragment", ROWS, ids=[f"{i:02d}-{' '.join(a[:3])[-40:]}" for i, (a, _) in
                                                      enumerate(ROWS)])
def test_bad_input_is_one_clear_paragraph_and_writes_nothing(args, fragment, tmp_path):
    _prepare(tmp_path)
    before = _snapshot(tmp_path)
    command = [sys.executable, *args] if args[0].endswith(".py") else [*CLI, *args]
    out = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         env={**__import__("os").environ, "PYTHONDONTWRITEBYTECODE": "1"})
    err = out.stderr.strip()
    assert out.returncode != 0, f"exit 0 for {args}: {out.stdout[-500:]}"
    assert "Traceback" not in err, err[-3000:]
    assert fragment in err, err[-2000:]
    message = err[err.index("error:"):]  # argparse prints its usage lines first
    assert "\n\n" not in err and len(message.splitlines()) <= 2, err  # one paragraph
    assert _snapshot(tmp_path) == before, json.dumps(sorted(set(_snapshot(tmp_path)) ^ set(before)))


def test_checkpoints_of_another_game_or_algorithm_are_named_as_such(tmp_path):
    import gymnasium as gym
    from stable_baselines3 import A2C, DQN, PPO

    from sb3_realm.games.realm.env import RealmEnv

    PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=64).save(tmp_path / "cartpole_ppo.zip")
    DQN("MlpPolicy", gym.make("CartPole-v1")).save(tmp_path / "cartpole_dqn.zip")
    A2C("MultiInputPolicy", RealmEnv(map_name="small")).save(tmp_path / "realm_a2c.zip")
    before = _snapshot(tmp_path)
    for name, fragment in (("cartpole_ppo", "is not a model of this game: its observation space is Box(4,) and its "
                                            "action space Discrete(2)"),
                           ("cartpole_dqn", "is not a model of this game"),
                           ("realm_a2c", "is a model of another algorithm (policy class MultiInputActorCriticPolicy, "
                                         "no PPO clip_range)")):
        for command in (["eval", f"{name}.zip", "--games", "1", "--no-yardstick"], ["replay", f"{name}.zip"],
                        ["build-submission", f"{name}.zip", "--out", "sub"]):
            out = subprocess.run([*CLI, *command], capture_output=True, text=True, cwd=tmp_path)
            assert out.returncode == 2 and fragment in out.stderr, out.stderr[-2000:]
            assert "Traceback" not in out.stderr and "gAWV" not in out.stderr  # no pickled blob
    assert _snapshot(tmp_path) == before


def _rezip(source: Path, target: Path, change) -> Path:
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    change(members)
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return target


def test_damaged_checkpoints_and_packages_are_named_in_one_line(models, tmp_path):
    """A checkpoint with a damaged member or without its weights, a package whose manifest is not JSON or whose
    weights file is a pickle (its manifest re-hashed): one line each; the pickle's payload never runs."""
    import hashlib
    import pickle
    import shutil

    damaged = tmp_path / "damaged.zip"
    data = bytearray(models["ppo"].read_bytes())
    with zipfile.ZipFile(models["ppo"]) as archive:
        info = archive.getinfo("policy.pth")
    middle = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[middle] ^= 0xFF
    damaged.write_bytes(bytes(data))
    weightless = _rezip(models["ppo"], tmp_path / "weightless.zip", lambda m: m.pop("policy.pth"))
    for path, fragment in ((damaged, "its member policy.pth does not read back whole"),
                           (weightless, "has no policy.pth")):
        out = subprocess.run([*CLI, "eval", str(path), "--games", "1", "--no-yardstick"], capture_output=True,
                             text=True)
        assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
    from sb3_realm.export import build_submission

    package = tmp_path / "package"
    build_submission(models["ppo"], package)
    broken = tmp_path / "broken_manifest"
    shutil.copytree(package, broken)
    (broken / "diy" / "manifest.json").write_text("{not json", encoding="utf-8")
    pickled = tmp_path / "pickled"
    shutil.copytree(package, pickled)
    marker = tmp_path / "marker"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    manifest = json.loads((pickled / "diy" / "manifest.json").read_text(encoding="utf-8"))
    payload = pickle.dumps({"net.w": Payload()})
    digest = hashlib.sha256(payload).hexdigest()
    manifest["weights"]["sha256"] = digest
    for key in ("file", "preload_file"):  # the weights and the preload's copy, each with its checksum file
        rel = manifest["weights"].get(key)
        if not rel:
            continue
        (pickled / rel).write_bytes(payload)
        manifest["files"][rel] = digest
        sidecar = pickled / (rel + ".sha256")
        if sidecar.exists():
            sidecar.write_text(digest + "\n", encoding="utf-8")
            if rel + ".sha256" in manifest["files"]:
                manifest["files"][rel + ".sha256"] = hashlib.sha256(sidecar.read_bytes()).hexdigest()
    (pickled / "diy" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for folder, fragment in ((broken, "is not a readable manifest"), (pickled, "not plain tensors")):
        out = subprocess.run([*CLI, "eval", str(folder), "--games", "1", "--no-yardstick"], capture_output=True,
                             text=True)
        assert out.returncode == 2 and fragment in out.stderr and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert not marker.exists()


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE stands in for a full disk on POSIX systems")
def test_no_room_to_write_is_one_line_and_keeps_what_was_written(models, tmp_path):
    """A write that fails for room (here a file-size limit, as a full disk refuses a write): one line naming the
    file being written; an existing package it would have replaced is intact."""
    import resource
    import signal

    from sb3_realm.export import build_submission

    out = tmp_path / "upload"
    build_submission(models["ppo"], out)
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    run = subprocess.run([*CLI, "build-submission", str(models["ppo"]), "--out", str(out), "--force"],
                         capture_output=True, text=True, preexec_fn=limit)
    assert run.returncode == 1 and "could not write" in run.stderr and "model.ckpt-512.pkl" in run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr[-2000:]
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["upload"]  # no half-built folder left beside it


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is a POSIX test")
def test_ctrl_c_ends_a_command_with_one_line_and_exit_130(tmp_path):
    import signal
    import time

    def as_from_a_terminal():
        # a command typed in a terminal starts with Ctrl-C at its default and unblocked; the test worker's own
        # signal state (which earlier tests in the same worker may have changed) must not reach the command
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})

    run = tmp_path / "run"
    proc = subprocess.Popen([*CLI, "train", "--config", TINY, "--set", "env.map_name=small", "--set", "eval_freq=0",
                             "--out", str(run), "--total-steps", "200000", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 120
    while not (run / "config.yaml").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    status = Path(f"/proc/{proc.pid}/status")
    masks = [line for line in status.read_text().splitlines() if line.startswith(("SigBlk", "SigIgn"))] if (
        status.exists()) else []
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"SIGINT did not end the command in 120 s (its signal state: {masks}); stderr: {err[-1500:]}")
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err[-2000:]
    assert len(err.strip().splitlines()) == 1
