"""What a newcomer meets on the command line: a missing --map file, a run folder or a package archive given to eval,
replay --out x.png, a flag the chosen protocol does not use, a misspelled flag, and a model played on another map
than the one it was trained on. Each is one paragraph (or one warning line) naming the value and the fix, before any
work."""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path

import pytest
from helpers import SMALL_RUN

from sb3_realm import cli
from sb3_realm.arguments import ArgumentParser
from sb3_realm.evaluation.replay import replay_paths
from sb3_realm.evaluation.training_map import training_map_mismatch
from sb3_realm.games.realm import default_map, load_map, small_map
from sb3_realm.models.saved import CONFIG_ENTRY
from sb3_realm.tuning.script import build_parser as tuning_parser

REPO = Path(__file__).resolve().parents[1]
FAST_EVAL = ["--protocol", "fixed", "--treasures", "1", "--max-step", "20", "--no-yardstick"]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    """``sb3-realm ARGV`` in this process: (exit code, stdout, stderr); argparse's exits become their codes."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def _error(err: str) -> str:
    """The message after argparse's usage lines, asserted to be one paragraph."""
    message = err[err.index("error:"):]
    assert "Traceback" not in err and len(message.strip().splitlines()) == 1, err
    return message


def _write_map(game_map, path: Path) -> Path:
    path.write_text(json.dumps(game_map.to_dict()), encoding="utf-8")
    return path


def _with_training_map(model: Path, out: Path, **env) -> Path:
    """A copy of ``model`` whose recorded run config says it was trained on ``env`` (map_path / map_name)."""
    with zipfile.ZipFile(model) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data[CONFIG_ENTRY]["env"].update(env)
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(out, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return out


@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    """A PPO model of one rollout on the small map (its run config records env.map_name = small)."""
    import torch

    from sb3_realm.training.config import load_config
    from sb3_realm.training.run import train

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run = tmp_path_factory.mktemp("newcomer") / "run"
        config = load_config(REPO / "configs" / "realm" / "ppo.yaml",
                             [*SMALL_RUN, f"out={json.dumps(str(run))}", "total_timesteps=256"])
        _, run_dir = train(config)
    finally:
        torch.set_num_threads(threads)
    return run_dir / "final_model.zip"


# ------------------------------------------------------------------------------------------- a missing --map file
@pytest.mark.parametrize("argv", [["eval", "random", "--game", "realm"], ["replay", "random", "--game", "realm"],
                                  ["demo", "--game", "realm"], ["train"], ["imitate"],
                                  ["build-submission", "model.zip", "--out", "sub"]])
def test_a_missing_map_file_says_where_the_map_comes_from(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = _run([*argv, "--map", "realm_map_1.json"], capsys)
    message = _error(err)
    assert code == 2
    assert "map file 'realm_map_1.json' does not exist" in message and str(tmp_path / "realm_map_1.json") in message
    assert "official code package or the Kaiwu client" in message and "leave out --map" in message
    assert "map_path=None" not in message  # the Python API's wording stays in the Python API
    assert list(tmp_path.iterdir()) == []


def test_the_tuning_scripts_say_it_too_and_python_keeps_its_wording(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        tuning_parser("rewards").parse_args(["--map", str(tmp_path / "realm_map_1.json")])
    assert exc.value.code == 2
    assert "leave out --map" in _error(capsys.readouterr().err)
    with pytest.raises(ValueError, match=r"map_path=None"):
        load_map(tmp_path / "realm_map_1.json")


# ------------------------------------------------------------------------------------------- eval RUN_DIR, eval X.zip
def test_eval_of_a_run_folder_points_at_its_models(capsys, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "final_model.zip").write_bytes(b"PK")
    code, _, err = _run(["eval", str(run), *FAST_EVAL], capsys)
    message = _error(err)
    assert code == 2 and "is the folder of a training run, not a policy" in message
    assert repr(str(run / "final_model.zip")) in message and "best_model.zip" not in message
    (run / "best_model.zip").write_bytes(b"PK")
    code, _, err = _run(["replay", str(run), "--out", str(tmp_path / "ep.gif")], capsys)
    message = _error(err)
    assert code == 2 and repr(str(run / "final_model.zip")) in message and repr(str(run / "best_model.zip")) in message


def test_eval_of_an_interrupted_run_points_at_its_latest_checkpoint(capsys, tmp_path):
    for step in ("000000000512", "000000001024"):
        folder = tmp_path / "run" / "checkpoints" / f"step_{step}"
        folder.mkdir(parents=True)
        (folder / "model.zip").write_bytes(b"PK")
    code, _, err = _run(["eval", str(tmp_path / "run"), *FAST_EVAL], capsys)
    assert code == 2 and "step_000000001024" in _error(err) and "step_000000000512" not in err


def test_eval_of_a_package_archive_says_what_it_is_and_what_to_pass(capsys, tmp_path):
    package = tmp_path / "upload.zip"  # what build-submission --zip writes: ckpt/, conf/ and the algorithm folder
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("ckpt/model.ckpt-512.pkl", b"weights")
        archive.writestr("conf/configure_app.toml", "[app]\nalgo = \"diy\"\n")
        archive.writestr("diy/manifest.json", json.dumps({"format": "sb3-realm submission"}))
    code, _, err = _run(["eval", str(package), *FAST_EVAL], capsys)
    message = _error(err)
    assert code == 2 and "no item named" not in message
    assert "is a package archive written by sb3-realm build-submission --zip" in message
    assert "not an SB3 checkpoint" in message and "the unzipped upload folder" in message
    assert "final_model.zip" in message


def test_eval_of_another_zip_says_it_is_not_a_checkpoint(capsys, tmp_path):
    other = tmp_path / "photos.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("holiday.jpg", b"jpeg")
    code, _, err = _run(["eval", str(other), *FAST_EVAL], capsys)
    message = _error(err)
    assert code == 2 and "no item named" not in message
    assert "not an SB3 checkpoint: it has no 'data' member" in message and "holiday.jpg" in message


# ------------------------------------------------------------------------------------------- replay --out x.png
def test_replay_out_png_writes_a_gif_and_a_png_and_reports_both(capsys, tmp_path):
    out = tmp_path / "x.png"
    code, stdout, err = _run(["replay", "random", "--game", "realm", "--out", str(out), "--usr-conf",
                              '{"max_step": 20, "treasure_num": 1}'], capsys)
    assert code == 0, err
    report = json.loads(stdout)
    assert report["gif"] == str(tmp_path / "x.gif") and report["png"] == str(out)
    assert (tmp_path / "x.gif").read_bytes()[:6] in (b"GIF87a", b"GIF89a")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_paths():
    assert replay_paths("a/ep.gif") == (Path("a/ep.gif"), Path("a/ep.png"))
    assert replay_paths("a/ep.PNG") == (Path("a/ep.gif"), Path("a/ep.PNG"))
    assert replay_paths("ep.gif", "route.png") == (Path("ep.gif"), Path("route.png"))
    with pytest.raises(ValueError, match=r"would both be 'ep.gif'"):
        replay_paths("ep.gif", "ep.gif")


# ------------------------------------------------------------------------------------------- protocol flags
@pytest.mark.parametrize("argv, fragments", [
    (["--protocol", "exhaustive", "--games", "3"],
     ["--games 3 is the number of games of the leaderboard protocol only", "(715 games)",
      "use --protocol leaderboard --games 3"]),
    (["--protocol", "exhaustive", "--treasures", "2", "--games", "3"], ["every set of 2 treasures", "(78 games)"]),
    (["--protocol", "fixed", "--games", "5"], ["--protocol fixed plays one game"]),
    (["--protocol", "custom", "--sets", "3,4", "--games", "5"], ["--games 5", "leaderboard"]),
    (["--protocol", "custom", "--sets", "3,4", "--treasures", "2"], ["--treasures 2 is not used by --protocol custom"]),
    (["--sets", "3,4"], ["add --protocol custom, or drop --sets"]),
])
def test_a_flag_the_protocol_does_not_use_is_refused_before_any_game(argv, fragments, capsys, monkeypatch):
    import sb3_realm.evaluation.protocols as protocols

    def no_games(*args, **kwargs):
        raise AssertionError("a game was played")

    monkeypatch.setattr(protocols, "_run_one", no_games)
    code, _, err = _run(["eval", "random", "--game", "realm", *argv], capsys)
    message = _error(err)
    assert code == 2
    for fragment in fragments:
        assert fragment in message


def test_games_still_counts_leaderboard_games(capsys, tmp_path):
    code, _, err = _run(["eval", "random", "--game", "realm", "--games", "2", "--max-step", "10", "--no-yardstick",
                         "--json", str(tmp_path / "r.json")], capsys)
    assert code == 0, err
    assert len(json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["games"]) == 2


# ------------------------------------------------------------------------------------------- misspelled flags
def _subcommands() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _misspelled(flag: str) -> str:
    """``--protocol`` -> ``--protcol``: a letter in the middle of the name dropped."""
    middle = (len(flag) + 2) // 2
    return flag[:middle] + flag[middle + 1:]


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_a_misspelled_flag_suggests_the_right_one_in_every_command(command, capsys):
    parser = _subcommands()[command]
    assert isinstance(parser, ArgumentParser)
    positionals = ["x"] * sum(1 for a in parser._actions if not a.option_strings)
    positionals += [s for a in parser._actions if a.required and a.option_strings for s in (a.option_strings[0], "x")]
    flags = [s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help"]
    checked = 0
    for flag in flags:
        typo = _misspelled(flag)
        if len(flag) < 7 or any(f.startswith(typo) for f in flags):  # too short, or an abbreviation argparse takes
            continue
        checked += 1
        code, _, err = _run([command, *positionals, typo], capsys)
        message = _error(err)
        assert code == 2 and f"unrecognized arguments: {typo}" in message, (flag, message)
        assert f"did you mean {flag}?" in message, (flag, message)
        assert err.startswith(f"usage: sb3-realm {command} "), err
    assert checked >= 2, flags


def test_misspellings_of_values_and_commands_and_of_the_tuning_scripts(capsys):
    code, _, err = _run(["eval", "random", "--game", "realm", "--protocl", "exhaustive"], capsys)
    assert code == 2 and "unrecognized arguments: --protocl exhaustive (did you mean --protocol?)" in _error(err)
    code, _, err = _run(["eval", "random", "--game", "realm", "--protocol", "exhastive"], capsys)
    assert code == 2 and "did you mean 'exhaustive'?" in _error(err)
    code, _, err = _run(["evl", "random"], capsys)
    assert code == 2 and "did you mean 'eval'?" in _error(err)
    code, _, err = _run(["eval", "random", "--game", "realm", "--gmes=3", "--zzzz"], capsys)
    message = _error(err)
    assert code == 2 and "--gmes: did you mean --games?" in message and "--zzzz:" not in message
    for kind in ("rewards", "hparams"):
        with pytest.raises(SystemExit) as exc:
            tuning_parser(kind).parse_args(["--n-trails", "3"])
        assert exc.value.code == 2 and "(did you mean --n-trials?)" in _error(capsys.readouterr().err)


# ------------------------------------------------------------------------------------------- the training map
def _warnings(err: str, command: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"sb3-realm {command}: warning: ")
            and "was trained on" in line]


def test_eval_and_replay_warn_in_one_line_when_the_maps_differ(small_model, capsys, tmp_path):
    code, _, err = _run(["eval", str(small_model), *FAST_EVAL], capsys)
    assert code == 0, err
    (line,) = _warnings(err, "eval")
    assert "was trained on the shipped small map and plays here on the shipped default map" in line
    assert "to play it there, use Python: evaluate(..., env_kwargs={'map_name': 'small'})" in line
    small_file = _write_map(small_map(), tmp_path / "small_copy.json")
    code, _, err = _run(["eval", str(small_model), *FAST_EVAL, "--map", str(small_file)], capsys)
    assert code == 0 and _warnings(err, "eval") == [], err  # the same map, from a file
    code, _, err = _run(["replay", str(small_model), "--out", str(tmp_path / "ep.gif"), "--usr-conf",
                         '{"max_step": 20, "treasure_num": 1}'], capsys)
    assert code == 0 and len(_warnings(err, "replay")) == 1, err


def test_a_model_of_the_competition_map_played_without_map_warns(small_model, capsys, tmp_path):
    real = _write_map(small_map(), tmp_path / "realm_map_1.json")  # a stand-in for the competition's map file
    model = _with_training_map(small_model, tmp_path / "real_model.zip", map_path=str(real), map_name="default")
    code, _, err = _run(["eval", str(model), *FAST_EVAL], capsys)
    assert code == 0, err
    (line,) = _warnings(err, "eval")
    assert f"was trained on the map file {str(real)!r} and plays here on the shipped default map" in line
    assert f"pass --map {real}" in line
    code, _, err = _run(["eval", str(model), *FAST_EVAL, "--map", str(real)], capsys)
    assert code == 0 and _warnings(err, "eval") == [], err
    other = _write_map(default_map(), tmp_path / "other.json")
    code, _, err = _run(["eval", str(model), *FAST_EVAL, "--map", str(other)], capsys)
    (line,) = _warnings(err, "eval")
    assert f"plays here on the map file {str(other.resolve())!r}" in line


def test_training_map_mismatch_compares_contents_and_names(small_model, tmp_path):
    default_file = _write_map(default_map(), tmp_path / "default_copy.json")
    trained_default = _with_training_map(small_model, tmp_path / "d.zip", map_path=None, map_name="default")
    assert training_map_mismatch(str(trained_default), default_map()) is None
    assert training_map_mismatch(str(trained_default), load_map(default_file)) is None
    assert "leave out --map" in training_map_mismatch(str(trained_default), small_map())
    gone = _with_training_map(small_model, tmp_path / "g.zip", map_path="/elsewhere/realm_map_1.json")
    same_name = _write_map(small_map(), tmp_path / "realm_map_1.json")
    assert training_map_mismatch(str(gone), load_map(same_name)) is None
    message = training_map_mismatch(str(gone), default_map())
    assert "'/elsewhere/realm_map_1.json' (not found here)" in message and "\n" not in message
    for policy in ("random", "oracle", str(tmp_path / "missing.zip")):
        assert training_map_mismatch(policy, default_map()) is None


def test_build_submission_help_says_which_map_the_check_plays(capsys):
    code, stdout, _ = _run(["build-submission", "--help"], capsys)
    assert code == 0
    text = " ".join(stdout.split())
    assert "map JSON of the --check's games; default: the map the model was trained on" in text
