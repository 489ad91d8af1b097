"""The ``--game`` help of the commands says what the code does: there is no default game."""

from __future__ import annotations

import argparse

from sb3_realm import games
from sb3_realm.cli import build_parser


def _game_help(command: str) -> str:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return next(a.help for a in sub.choices[command]._actions if a.dest == "game")


def test_game_help_names_no_default_game():
    for command in ("demo", "eval", "replay"):
        text = _game_help(command)
        assert "no default game" in text, (command, text)
        assert f"else {games.LEGACY_GAME}" not in text, (command, text)
