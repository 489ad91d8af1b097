"""argparse pieces shared by the command lines (``sb3-realm`` and the tuning scripts)."""

from __future__ import annotations

import argparse
import difflib
import json
import stat
from pathlib import Path

__all__ = ["ArgumentParser", "json_dict", "map_file", "not_utf8", "special_file"]


def _closest(word: str, candidates) -> str | None:
    found = difflib.get_close_matches(word, [str(c) for c in candidates], n=1, cutoff=0.6)
    return found[0] if found else None


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser that answers a misspelled option or choice with the closest right one ("did you mean
    --protocol?"), as Python 3.14's ``suggest_on_error`` does; still argparse's one-paragraph error, exit code 2.
    Subparsers made by :meth:`add_subparsers` are of this class too."""

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self._active_subparser(parsed)
            parser.error(f"unrecognized arguments: {' '.join(extras)}{parser._suggestion(extras)}")
        return parsed

    def _active_subparser(self, parsed) -> ArgumentParser:
        """The (sub)parser of the command that was chosen: the one whose options the extras missed."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, ArgumentParser):
                    return chosen._active_subparser(parsed)
        return self

    def _suggestion(self, extras: list[str]) -> str:
        options = [s for action in self._actions for s in action.option_strings if s.startswith("--")]
        flags = [extra.split("=", 1)[0] for extra in extras if extra.startswith("-")]
        hints = [(flag, match) for flag in flags if (match := _closest(flag, options)) is not None]
        if len(flags) == 1 and hints:
            return f" (did you mean {hints[0][1]}?)"
        return "".join(f"; {flag}: did you mean {match}?" for flag, match in hints)

    def _check_value(self, action, value):
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            match = _closest(str(value), action.choices or ())
            if match is None:
                raise
            raise argparse.ArgumentError(action, f"{exc.message}; did you mean {match!r}?") from None


def json_dict(text: str) -> dict:
    """argparse type of a JSON-object argument (``--usr-conf``, the tuning scripts' ``--enqueue``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {text!r}") from exc
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object such as '{{\"treasure_num\": 3}}' or "
                                         f"'{{\"treasure\": 2.0}}', got {text!r}")
    return value


def not_utf8(text: str) -> str | None:
    """What in ``text`` cannot be written as UTF-8, as a message part (``"the byte 0xff, which is not UTF-8"``), or
    None when all of it can. A name read from the system or the command line keeps each byte that is not UTF-8 as a
    lone surrogate (``os.fsdecode``: ``b"\\xff"`` becomes ``"\\udcff"``); the byte is what the user knows."""
    bad = list(dict.fromkeys(c for c in str(text) if 0xD800 <= ord(c) <= 0xDFFF))
    if not bad:
        return None
    shown = ", ".join(f"0x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF else ascii(c) for c in bad)
    return f"the byte{'s' if len(bad) > 1 else ''} {shown}, which {'are' if len(bad) > 1 else 'is'} not UTF-8"


def special_file(path: str | Path) -> str | None:
    """What ``path`` is when it exists but is neither a file nor a folder (``"is a named pipe, not a file"``, a
    socket, a device), or names a link to nothing; None otherwise. Such a path is never opened here."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError:
        return "is a symbolic link to nothing (a dangling link)" if path.is_symlink() else None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
    return f"is {kind}, not a file"


def map_file(text: str) -> str:
    """argparse type of ``--map``: the path of an existing file (whether it holds a valid map is checked where it is
    loaded). The message names the path and where the competition's map comes from."""
    where = Path(text).expanduser().absolute()
    if text.strip() and where.is_file():
        return text
    # as atomic.not_a_file says it (this module stays beside atomic, not above it: tests/test_layers.py)
    problem = ("is empty" if not text.strip() else "is a folder, not a file" if where.is_dir()
               else special_file(where) or "does not exist")
    looked = f" (looked for {where})" if problem == "does not exist" and str(where) != text else ""
    raise argparse.ArgumentTypeError(
        f"map file {text!r} {problem}{looked}; pass the path of the competition's map JSON (realm_map_1.json, "
        "from your official code package or the Kaiwu client), or leave out --map to use the shipped default "
        "map")
