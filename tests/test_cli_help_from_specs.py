"""The shared layers (everything in ``sb3_realm/`` outside ``sb3_realm/games/``) name no game in their strings: the
per-game parts of help texts and messages are built from the registered specs (and platform layouts) when the parser
or the message is made, so a third game registers itself and shows up everywhere without an edit of shared code."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from sb3_realm import cli, games

PACKAGE = Path(cli.__file__).resolve().parent
#: string constants allowed to name a game, by file: the registry keys of the features extractors and networks are
#: the names of networks (``algo.extractor``), recorded in run configs and exported packages, so they keep the names
#: of the games they were made for
ALLOWED = {
    "models/extractors.py": {"realm", "gorge"},
    "models/nets.py": {"realm", "gorge"},
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module's module, classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.add(id(first.value))
    return found


def _names_a_game(text: str) -> bool:
    """``text`` is a registered game's name, or holds a game's title (or "the Realm") as a word."""
    if text.strip().lower() in games.GAMES:
        return True
    titles = [spec.title for spec in games.GAMES.values()] + ["the Realm"]
    return any(re.search(rf"(?<!\w){re.escape(title)}(?!\w)", text) for title in titles)


def _game_strings() -> list[str]:
    hits = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("games/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                    and _names_a_game(node.value) and node.value not in ALLOWED.get(rel, ())):
                hits.append(f"sb3_realm/{rel}:{node.lineno}: {node.value!r}")
    return hits


def test_the_shared_layers_name_no_game_in_their_strings():
    assert _game_strings() == []


def test_the_scan_sees_a_game_named_in_a_string():
    assert _names_a_game("gorge") and _names_a_game("for Gorge Chase;") and _names_a_game("the Realm's oracle")
    assert not _names_a_game("realm_map_1.json") and not _names_a_game("SB3_REALM_GORGE_MAPS")
    assert not _names_a_game("sb3_realm")


def _help(parser, command: str) -> str:
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return " ".join(sub.format_help().split())


def test_a_registered_game_shows_up_in_the_help_where_it_lists_per_game_facts(monkeypatch):
    gorge = games.get("gorge")
    monkeypatch.setitem(games.GAMES, "toy", dataclasses.replace(gorge, name="toy", title="Toy Chase"))
    parser = cli.build_parser()
    ev, bs = _help(parser, "eval"), _help(parser, "build-submission")
    expert = gorge.evaluation.yardstick
    names = [f"'{name}'" for name in gorge.experts]
    listed = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    assert f"{listed} for Toy Chase)" in ev  # the experts the policy may name
    assert f"Toy Chase: {gorge.evaluation.protocols[0]}" in ev  # --protocol's default
    assert f"Toy Chase's '{expert}'" in ev  # --no-yardstick
    assert f"Toy Chase: {gorge.maps.competition_file}" in ev  # --maps-dir
    # every registered game with a maps protocol (an installed game of one's own too), in the registry's order
    owners = [g.title for g in games.GAMES.values() if "maps" in g.evaluation.protocols]
    assert f"--protocol maps ({', '.join(owners[:-1])} or {owners[-1]})" in ev and owners[-1] == "Toy Chase"
    assert "agent_diy (default) or agent_ppo for Toy Chase" in bs  # --algo-dir, from the layout
    assert "10 for Toy Chase" in bs  # --check-games, the layout's
    assert "the game's own for Toy Chase" in bs  # --check-max-step: the layout has none of its own
    assert f"Toy Chase: {gorge.maps.competition_file}" in bs  # --maps-dir
    assert f"the game the model plays ({', '.join(games.GAMES)})" in bs and list(games.GAMES)[-1] == "toy"
    # built when the parser is: without the toy, none of it
    monkeypatch.delitem(games.GAMES, "toy")
    assert "Toy Chase" not in _help(cli.build_parser(), "eval") + _help(cli.build_parser(), "build-submission")


def test_per_game_defaults_come_from_the_layouts():
    from sb3_realm.export import layouts

    bs = _help(cli.build_parser(), "build-submission")
    for spec in games.GAMES.values():
        for name in spec.submission.layouts:
            if name in spec.submission.layout_folders:
                continue  # a game's own layout: the help lists the shipped layouts' defaults only
            layout = layouts.get(name)
            assert f"{layout.check_games} for {spec.title}" in bs
            if getattr(layout, "check_max_step", None):
                assert f"{layout.check_max_step} for {spec.title}" in bs
            assert f"{layout.default_algo_dir} (default)" in bs
