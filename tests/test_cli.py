"""Subprocess smoke runs of the CLI."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys

import pytest
from PIL import Image

from sb3_realm import cli, games


def with_env_options(spec, options):
    """``spec`` whose env takes the optional arguments ``options``."""
    return dataclasses.replace(spec, env=dataclasses.replace(spec.env, options=options))


def run_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sb3_realm.cli", *args], capture_output=True, text=True, check=check)


def test_demo_writes_gif_and_summary(tmp_path):
    out = run_cli("demo", "--game", "realm", "--out", str(tmp_path), "--seed", "3", "--usr-conf", '{"max_step": 120}')
    summary = json.loads(out.stdout)
    assert summary["steps"] <= 120 and summary["usr_conf"]["max_step"] == 120
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    with Image.open(tmp_path / "episode.gif") as gif:
        assert gif.format == "GIF" and gif.n_frames >= 120 // 4
        assert gif.size == (512, 512)


def test_demo_bad_input_is_one_clear_line(tmp_path):
    out = run_cli("demo", "--game", "realm", "--out", str(tmp_path), "--usr-conf", '{"treasure_num": 20}', check=False)
    assert out.returncode == 2
    assert "treasure_num" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("demo", "--game", "realm", "--map", str(tmp_path / "missing.json"), check=False)
    assert out.returncode == 2 and "does not exist" in out.stderr
    assert not (tmp_path / "episode.gif").exists()


def test_console_script_is_installed():
    out = subprocess.run(["sb3-realm", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("sb3-realm ")


def test_eval_no_yardstick_keeps_the_old_flag_as_a_hidden_alias():
    """``--no-yardstick`` skips the game's yardstick; ``--no-oracle``, its old name, still does, and --help shows only
    the new one."""
    parser = cli.build_parser()
    assert parser.parse_args(["eval", "random", "--game", "realm"]).no_yardstick is False
    assert parser.parse_args(["eval", "random", "--game", "realm", "--no-yardstick"]).no_yardstick is True
    assert parser.parse_args(["eval", "random", "--game", "realm", "--no-oracle"]).no_yardstick is True
    out = subprocess.run([sys.executable, "-m", "sb3_realm.cli", "eval", "--help"], capture_output=True, text=True,
                         check=True).stdout
    assert "--no-yardstick" in out and "--no-oracle" not in out


def _eval_args(game: str | None, policy: str = "random", **flags) -> argparse.Namespace:
    return argparse.Namespace(policy=policy, game=game, **{"mask_wall_moves": False, "maps_dir": None, **flags})


def test_eval_takes_the_env_options_the_games_spec_lists(tmp_path, monkeypatch):
    """``--mask-wall-moves`` and ``--maps-dir`` reach the env of a game whose spec lists them (``env_options``), and
    are refused, naming the game that takes them, for one that does not: whatever the env's signature says."""
    monkeypatch.delenv("SB3_REALM_GORGE_MAPS", raising=False)
    realm = games.get("realm")
    assert cli._eval_env_kwargs(_eval_args("realm", mask_wall_moves=True)) == {"mask_wall_moves": True}
    assert cli._eval_env_kwargs(_eval_args("gorge", maps_dir=str(tmp_path))) == {"maps_dir": str(tmp_path)}
    monkeypatch.setitem(games.GAMES, "realm", with_env_options(realm, frozenset()))
    with pytest.raises(ValueError, match="--mask-wall-moves is an option of another game's env; Back to the Realm"):
        cli._eval_env_kwargs(_eval_args("realm", mask_wall_moves=True))
    with pytest.raises(ValueError, match=r"Back to the Realm plays one map, given with --map PATH: drop --maps-dir "
                                         r"\(or pass --game gorge: --maps-dir is an option of Gorge Chase\)"):
        cli._eval_env_kwargs(_eval_args(None, "oracle", maps_dir=str(tmp_path)))  # the expert's name says its game
    with pytest.raises(ValueError, match=r"^policy 'random': the random policy plays any game; say which with --game"):
        cli._eval_env_kwargs(_eval_args(None, maps_dir=str(tmp_path)))  # there is no default game
    for name, spec in list(games.GAMES.items()):  # Gorge Chase, and any game installed here (robot_vacuum)
        if name != "realm":
            monkeypatch.setitem(games.GAMES, name, with_env_options(spec, frozenset()))
    with pytest.raises(ValueError, match=r"Back to the Realm plays one map, given with --map PATH: drop --maps-dir$"):
        cli._eval_env_kwargs(_eval_args(None, "oracle", maps_dir=str(tmp_path)))  # no game takes it: none to suggest
    monkeypatch.setitem(games.GAMES, "realm", with_env_options(realm, frozenset({"maps_dir"})))
    assert cli._eval_env_kwargs(_eval_args("realm", maps_dir=str(tmp_path))) == {"maps_dir": str(tmp_path)}
