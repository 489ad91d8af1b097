"""The outputs the documentation shows are what the commands print: the quick, deterministic commands and snippets of
the pages run here, on both languages' pages, and their output is compared with the block the page shows after them
(a page that shows ``...`` shows the first lines only)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from helpers import REPO, gorge_maps_dir

from sb3_realm.cli import main

DOCS = REPO / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
GORGE_PAGES = [DOCS / "gorge" / "getting-started.md", DOCS / "zh" / "gorge" / "getting-started.md"]
RULES_PAGES = [DOCS / "gorge" / "rules.md", DOCS / "zh" / "gorge" / "rules.md"]


def _ids(path: Path) -> str:
    return str(path.relative_to(DOCS))


def shown(page: Path, marker: str) -> tuple[str, str]:
    """The code block of ``page`` that holds ``marker`` and the output block the page shows right after it."""
    blocks = FENCE.findall(page.read_text(encoding="utf-8"))
    for k, (_lang, code) in enumerate(blocks):
        if marker in code:
            assert k + 1 < len(blocks) and blocks[k + 1][0] == "text", f"{page}: no output shown after {marker!r}"
            return code, blocks[k + 1][1]
    raise AssertionError(f"{page} has no code block with {marker!r}")


def same_as_shown(printed: str, output: str) -> None:
    """``printed`` is the page's ``output``; where the page shows ``...``, the lines before it start the output."""
    lines = output.rstrip("\n").splitlines()
    if any(line.strip() == "..." for line in lines):
        head = lines[:next(i for i, line in enumerate(lines) if line.strip() == "...")]
        assert printed.splitlines()[:len(head)] == head, printed
    else:
        assert printed.rstrip("\n").splitlines() == lines, printed


def run_snippet(code: str, where: Path, **names) -> str:
    """Run a page's Python snippet in ``where`` with ``names`` defined (the page's placeholders, e.g. FOLDER)."""
    out = io.StringIO()
    with contextlib.chdir(where), contextlib.redirect_stdout(out):
        exec(compile(code, "<page snippet>", "exec"), {"__name__": "__page__", **names})  # the page's own code
    return out.getvalue()


@pytest.mark.parametrize("page", GORGE_PAGES, ids=_ids)
def test_the_gorge_demo_prints_what_the_page_shows(page, tmp_path, capsys):
    code, output = shown(page, "sb3-realm demo --game gorge")
    argv = code.split()[1:]
    argv[argv.index("--out") + 1] = str(tmp_path / "demo")
    assert main(argv) == 0
    printed = capsys.readouterr().out
    json.loads(printed)  # the whole summary is JSON
    same_as_shown(printed, output)


@pytest.mark.parametrize("page", GORGE_PAGES, ids=_ids)
def test_the_gym_env_snippet_prints_what_the_page_shows(page, tmp_path):
    code, output = shown(page, 'gym.make("sb3_realm/GorgeChase-v0"')
    same_as_shown(run_snippet(code, tmp_path), output)


@pytest.mark.parametrize("page", GORGE_PAGES, ids=_ids)
def test_the_platform_interface_snippet_prints_what_the_page_shows(page, tmp_path):
    code, output = shown(page, "GorgeCompetitionEnv(FOLDER")
    same_as_shown(run_snippet(code, tmp_path, FOLDER=str(gorge_maps_dir())), output)


@pytest.mark.parametrize("page", RULES_PAGES, ids=_ids)
def test_the_rules_page_gives_the_env_observation(page):
    from sb3_realm.games.gorge.env import GorgeEnv

    space = GorgeEnv().observation_space
    line = next(line for line in page.read_text(encoding="utf-8").splitlines() if "Dict(maps=Box(" in line)
    maps, vector = re.search(r"maps=Box\(0, 255, \(([\d, ]+)\), uint8\), vector=Box\(-1, 1, \((\d+),\)", line).groups()
    assert tuple(int(v) for v in maps.split(",")) == space["maps"].shape, line
    assert (int(vector),) == space["vector"].shape, line
