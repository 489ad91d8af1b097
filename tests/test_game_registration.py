"""Games come into the registry by entry point (the group ``sb3_realm.games``, the shipped games' too) or by import
path (``package.module:ATTR``, wherever a game's name is accepted); each registered game knows the import path a
worker process is handed, and a built package's manifest records it."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
import yaml
from toy_game import TOY_SPEC

from sb3_realm import cli, games
from sb3_realm.agents.manifest import manifest_game
from sb3_realm.training.config import load_config

REPO = Path(__file__).resolve().parents[1]
TOY_PKG = REPO / "tests" / "toy_pkg"
TOY_PATH = "toy_game.spec:TOY_SPEC"


@pytest.fixture
def no_toy():
    """The toy unregistered before and after the test (another test module may have registered it)."""
    games.unregister(TOY_SPEC.name)
    yield
    games.unregister(TOY_SPEC.name)


def test_the_shipped_games_are_declared_as_entry_points_with_the_paths_the_registry_knows():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["entry-points"][games.ENTRY_POINT_GROUP] == games.SHIPPED
    assert list(games.SHIPPED) == games.names()[:2] == ["realm", "gorge"]
    for name, path in games.SHIPPED.items():
        assert games.path_of(name) == games.reference(name) == path
        assert games.get(path) is games.get(name)
    toy_pkg = tomllib.loads((TOY_PKG / "pyproject.toml").read_text(encoding="utf-8"))
    assert toy_pkg["project"]["entry-points"][games.ENTRY_POINT_GROUP] == {"toy": TOY_PATH}


def test_an_import_path_registers_the_game_under_its_own_name(no_toy):
    assert "toy" not in games.names()
    assert games.get(TOY_PATH) is TOY_SPEC
    assert games.names()[-1] == "toy" and games.get("toy") is TOY_SPEC
    assert games.path_of("toy") == TOY_PATH and games.reference("toy") == TOY_PATH
    assert TOY_PATH in games.references()
    games.adopt([TOY_PATH, "toy_game:TOY_SPEC"])  # the same game again, by another path that holds it: no clash
    assert games.names().count("toy") == 1


def test_a_game_registered_by_object_gets_the_path_of_a_module_that_holds_it(no_toy):
    games.register(TOY_SPEC)
    assert games.path_of("toy") == "toy_game:TOY_SPEC"  # the game's own package, the shortest module holding it
    orphan = games.register(dataclasses.replace(TOY_SPEC, name="toy_orphan"))
    try:
        assert games.path_of("toy_orphan") is None
        with pytest.raises(ValueError, match=r"'toy_orphan' \(.*\) was registered by object from a script"):
            games.reference(orphan.name)
        assert "toy_orphan" not in " ".join(games.references())
    finally:
        games.unregister("toy_orphan")


@pytest.mark.parametrize(("path", "message"), [
    ("toy_game.spec", "is not a game of this package"),
    ("toy_game.spec:", "is not an import path: write it as 'package.module:ATTR'"),
    ("toy-game:SPEC", "is not an import path"),
    ("no_such_game.spec:SPEC", r"module 'no_such_game.spec' does not import \(ModuleNotFoundError"),
    ("toy_game.spec:NO_SUCH_SPEC", "module 'toy_game.spec' has no attribute 'NO_SUCH_SPEC'"),
    ("toy_game.spec:FIXED_STARTS", "is a tuple, not a GameSpec"),
])
def test_a_path_that_gives_no_game_is_refused_with_the_fix(no_toy, path, message):
    with pytest.raises(ValueError, match=message):
        games.get(path)
    assert "toy" not in games.names()


def test_a_game_whose_name_is_taken_is_refused(tmp_path, monkeypatch):
    (tmp_path / "clashing_game.py").write_text(textwrap.dedent("""
        import dataclasses

        from toy_game import TOY_SPEC

        SPEC = dataclasses.replace(TOY_SPEC, name="gorge", title="Another gorge")
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"game = 'gorge' \(clashing_game:SPEC\) is already registered \(Gorge Chase, "
                                         r"from sb3_realm.games.gorge.spec:SPEC\); give the new game another name"):
        games.get("clashing_game:SPEC")
    assert games.get("gorge").title == "Gorge Chase"


def test_a_config_and_the_command_line_name_a_game_by_its_import_path(no_toy, tmp_path):
    recipe = tmp_path / "toy.yaml"
    recipe.write_text(yaml.safe_dump({"game": TOY_PATH, "out": str(tmp_path / "run"), "eval_freq": 0,
                                      "algo": {"name": "maskable_ppo"}}), encoding="utf-8")
    assert load_config(recipe).game == "toy"  # the run records the game's name
    games.unregister("toy")
    args = cli.build_parser().parse_args(["eval", "bfs", "--game", TOY_PATH])
    assert args.game == "toy" and games.get("toy") is TOY_SPEC


def test_the_eval_command_plays_a_game_named_by_its_import_path(no_toy, tmp_path, capsys):
    path = tmp_path / "bfs.json"
    # the toy's protocol is offered: the game is registered before the parser is built
    assert cli.main(["eval", "bfs", f"--game={TOY_PATH}", "--protocol", "fixed", "--games", "2", "--json",
                     str(path)]) == 0
    assert "reached the exit 2/2 (100%)" in capsys.readouterr().out
    report = json.loads(path.read_text(encoding="utf-8"))
    assert report["summary"]["protocol"] == "fixed" and report["summary"]["exit_share"] == 1.0  # the toy's figure


def test_an_unknown_game_on_the_command_line_is_one_line_naming_the_fix(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["eval", "random", "--game", "no_such_game.spec:SPEC"])
    err = capsys.readouterr().err
    assert "argument --game: game = 'no_such_game.spec:SPEC': module 'no_such_game.spec' does not import" in err
    assert "Traceback" not in err


def test_a_manifest_reads_its_game_back_by_the_path_it_records(no_toy):
    assert manifest_game({"game": "toy", "game_path": TOY_PATH}) is TOY_SPEC
    assert games.names()[-1] == "toy"
    games.unregister("toy")
    with pytest.raises(ValueError, match=r"records game 'toy_two' at 'toy_game\.spec:TOY_SPEC', which gives the "
                                         r"game 'toy'"):
        manifest_game({"game": "toy_two", "game_path": TOY_PATH})
    games.unregister("toy")
    with pytest.raises(ValueError, match="'toy' is not a game of this package"):
        manifest_game({"game": "toy"})


def _dist_info(folder: Path, name: str, entry_points: str) -> None:
    """An installed distribution's metadata, as ``pip install`` writes it, for importlib.metadata to find on
    ``sys.path`` (no pip, no network)."""
    info = folder / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def _python(script: str, *path: Path, cwd: Path) -> subprocess.CompletedProcess:
    """``script`` run by a fresh interpreter with ``path`` (and the checkout) on its ``PYTHONPATH``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, path), str(REPO)])}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, cwd=cwd, timeout=300,
                          check=True, encoding="utf-8")


def test_a_game_named_by_path_brings_its_gymnasium_ids(tmp_path):
    script = textwrap.dedent(f"""
        import gymnasium
        from sb3_realm import games
        assert "sb3_realm/ToyGrid-v0" not in gymnasium.registry and "toy" not in games.names()
        games.get("{TOY_PATH}")
        print(type(gymnasium.make("sb3_realm/ToyGrid-v0").unwrapped).__name__)
    """)
    assert _python(script, TOY_PKG, cwd=tmp_path).stdout.split() == ["ToyEnv"]


def test_an_installed_package_registers_its_game_by_entry_point_on_first_use(tmp_path):
    site = tmp_path / "site"
    _dist_info(site, "sb3-realm-toy", f"[sb3_realm.games]\ntoy = {TOY_PATH}\n")
    _dist_info(site, "sb3-realm-broken", "[sb3_realm.games]\nbroken = no_such_game.spec:SPEC\n")
    script = textwrap.dedent("""
        import json
        import gymnasium
        from sb3_realm import games
        try:
            games.get("broken")
        except ValueError as exc:
            why = str(exc)
        env = gymnasium.make("sb3_realm/ToyGrid-v0")
        print(json.dumps({"names": games.names(), "toy": games.path_of("toy"), "broken": why,
                          "env": type(env.unwrapped).__name__}))
    """)
    done = _python(script, site, TOY_PKG, cwd=tmp_path)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # the shipped games first; then the toy, and any game installed here from a package of its own (robot_vacuum)
    assert out["names"][:2] == ["realm", "gorge"] and "toy" in out["names"] and "broken" not in out["names"]
    assert out["toy"] == TOY_PATH and out["env"] == "ToyEnv"
    assert "Its entry point did not load: entry point 'broken' of group 'sb3_realm.games'" in out["broken"]
    assert "GamePluginWarning" in done.stderr and "module 'no_such_game.spec' does not import" in done.stderr
