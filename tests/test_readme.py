"""The README and the docs as a user reads them: the Python example runs as shown, every command shown parses with the
real argument parser (a renamed flag fails here), the Chinese README keeps the English one's set-up commands and
recipe table, and every link to a file of the repository leads to one."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sb3_realm.cli import build_parser
from sb3_realm.tuning.script import build_parser as tuning_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_ZH = ROOT / "README.zh-CN.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
SHELLS = {"bash", "sh", "shell", "console", "powershell", "ps1"}


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced code block of a Markdown text, in order."""
    blocks = re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.M | re.S)
    return [(m.group(1).strip().lower(), m.group(2)) for m in blocks]


def section(text: str, heading: str) -> str:
    """The text of the ``## heading`` section, up to the next ``## `` heading."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"no '## {heading}' section"
    return m.group(1)


def shown_commands(text: str) -> list[str]:
    """The ``sb3-realm`` and ``python tuning/...`` commands of a Markdown text: every line of its shell blocks (with
    ``\\`` continuations joined, ``&&`` chains split) and every inline code span that is a whole command (synopses
    with ``[...]`` or ``|`` alternatives are not commands)."""
    lines: list[str] = []
    for lang, body in fenced_blocks(text):
        if lang in SHELLS:
            lines += body.replace("\\\n", " ").replace("`\n", " ").splitlines()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    spans = [span for span in re.findall(r"`([^`\n]+)`", prose) if not re.search(r"\[|\||\.\.\.|<", span)]
    lines += [span for span in spans if len(span.split()) > 2]  # `sb3-realm eval` alone names a command
    commands = []
    for line in lines:
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue
        chain: list[list[str]] = [[]]
        for token in tokens:
            if token in ("&&", ";", "||"):
                chain.append([])
            else:
                chain[-1].append(token)
        commands += [shlex.join(part) for part in chain if is_command(part)]
    return commands


def is_command(tokens: list[str]) -> bool:
    return bool(tokens) and (tokens[0] == "sb3-realm" or tokens[:2] in (["python", "tuning/tune_rewards.py"],
                                                                       ["python", "tuning/tune_hparams.py"]))


def parse(command: str, map_file: Path = README) -> None:
    """Parse ``command`` with the parser its program uses; a usage error fails the test with the command. ``--map``
    takes an existing file (checked while parsing): the competition map a command names is not in the repository, so
    ``map_file`` stands in for it."""
    tokens = shlex.split(command)
    after = zip(["", *tokens[:-1]], tokens, strict=True)
    tokens = [str(map_file) if before == "--map" else token for before, token in after]
    if tokens[0] == "sb3-realm":
        parser, args = build_parser(), tokens[1:]
    else:
        parser, args = tuning_parser("rewards" if "rewards" in tokens[1] else "hparams"), tokens[2:]
    try:
        parser.parse_args(args)
    except SystemExit as stop:  # --help exits 0; a usage error exits 2
        assert stop.code == 0, f"{command!r} does not parse"


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def test_every_command_in_the_readme_parses() -> None:
    commands = shown_commands(README.read_text(encoding="utf-8"))
    assert len(commands) >= 6, commands  # the main job's four, the leaderboard's, the table's
    for command in commands:
        parse(command)


@pytest.mark.parametrize("page", DOCS + ([README_ZH] if README_ZH.exists() else []),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_in_the_docs_parses(page: Path) -> None:
    for command in shown_commands(page.read_text(encoding="utf-8")):
        parse(command)


def test_the_docs_show_commands() -> None:
    """The extraction itself works: the docs show many commands, of both programs."""
    commands = [c for page in DOCS for c in shown_commands(page.read_text(encoding="utf-8"))]
    assert len(commands) >= 20
    assert any(c.startswith("python tuning/") for c in commands)


def test_a_renamed_flag_fails_the_parse() -> None:
    with pytest.raises(AssertionError, match="does not parse"):
        parse("sb3-realm eval runs/quick/final_model.zip --protocl leaderboard")


def test_the_chinese_readme_keeps_the_set_up_and_the_recipe_table() -> None:
    en, zh = README.read_text(encoding="utf-8"), README_ZH.read_text(encoding="utf-8")
    bash = [[body for lang, body in fenced_blocks(text) if lang == "bash"][:2] for text in (en, zh)]
    assert bash[0] == bash[1], "the two set-up commands differ between README.md and README.zh-CN.md"
    configs = [re.findall(r"^\|.*\| `(configs/[^`]+)` \|$", text, re.M) for text in (en, zh)]
    assert len(configs[0]) >= 10 and configs[0] == configs[1], "the recipe tables' rows differ"
    python = [[body for lang, body in fenced_blocks(text) if lang == "python"] for text in (en, zh)]
    assert python[0] == python[1], "the Python examples differ"


@pytest.mark.parametrize("page", [README, README_ZH], ids=lambda p: p.name)
def test_links_to_repository_files_lead_to_files(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    links = [target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", text)
             if not re.match(r"[a-z]+://|#|mailto:", target)]
    assert links
    missing = [target for target in links if not (page.parent / target).exists()]
    assert not missing, f"{page.name} links to files that do not exist: {missing}"


def test_the_readme_python_example_runs_as_shown(tmp_path: Path) -> None:
    """The README's example, verbatim, in a fresh process in an empty folder: a renamed function fails here."""
    blocks = [body for lang, body in fenced_blocks(section(README.read_text(encoding="utf-8"), "Python API"))
              if lang == "python"]
    assert len(blocks) == 1
    done = subprocess.run([sys.executable, "-c", blocks[0]], cwd=tmp_path, capture_output=True, text=True,
                          encoding="utf-8", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "protocol leaderboard (3 games)" in done.stdout
    assert (tmp_path / "ppo_realm.zip").is_file()
    assert "Warning" not in done.stderr, done.stderr[-3000:]
