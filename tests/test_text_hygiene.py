"""The project's prose describes; it does not report. The README, the docs, the package's modules, the submission's
modules and the configs hold no lab-notebook traces: no internal step numbers (``Step 9``), no "this stop", no dates
of runs, and no paths outside the repository (the rules are cited as docs/game.md; measurements live on
docs/benchmarks.md with their commands).

One test per group of files, so that each group passes or fails on its own; a failure lists every offending
``file:line`` with the pattern it matched. The tests themselves are not checked (they hold these patterns).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: group -> the glob patterns (relative to the repository root) of its files
GROUPS: dict[str, tuple[str, ...]] = {
    "readme": ("README.md", "README.zh-CN.md"),
    "docs": ("docs/**/*.md",),
    "package": ("sb3_realm/**/*.py",),
    "submission": ("submission/**/*.py",),
    "configs": ("configs/**/*.yaml",),
}

#: name -> what no line may hold
PATTERNS: dict[str, re.Pattern[str]] = {
    "an internal step number": re.compile(r"\bStep \d"),
    '"this stop"': re.compile(r"\bthis stop\b", re.IGNORECASE),
    "a run date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "a path to shared/docs": re.compile(r"shared/docs"),
    "a path outside the repository (../shared)": re.compile(r"\.\./shared[^\s`'\")）]*"),
    "realm-rules.md, which is not in the repository (cite docs/game.md)": re.compile(r"realm-rules\.md"),
}

#: ``(relative path, exact matched text)`` pairs that match a pattern without being what it looks for (a date that
#: is not the date of a run, say; a ``../shared/...`` match is the whole path); none so far
ALLOWED: frozenset[tuple[str, str]] = frozenset()


def _files(group: str) -> list[Path]:
    found: set[Path] = set()
    for pattern in GROUPS[group]:
        found.update(p for p in REPO.glob(pattern) if p.is_file() and "__pycache__" not in p.parts)
    return sorted(found)


def offences(path: Path, root: Path = REPO) -> list[str]:
    """``file:line: what (text)`` for each match of :data:`PATTERNS` in ``path`` (named relative to ``root``) not
    in :data:`ALLOWED`."""
    rel = path.relative_to(root).as_posix()
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for what, pattern in PATTERNS.items():
            for match in pattern.finditer(line):
                if (rel, match.group(0)) not in ALLOWED:
                    out.append(f"{rel}:{number}: {what} ({match.group(0)!r}): {line.strip()[:100]}")
    return out


@pytest.mark.parametrize("group", list(GROUPS))
def test_prose_describes_not_reports(group: str) -> None:
    files = _files(group)
    if group in ("package", "configs"):
        assert files, f"no files found for group {group!r} ({GROUPS[group]}): the globs are stale"
    found = [line for path in files for line in offences(path)]
    assert not found, (f"{len(found)} line(s) of {group} read as a lab notebook; describe instead (rules: "
                       "docs/game.md, measurements: docs/benchmarks.md):\n" + "\n".join(found))


@pytest.mark.parametrize("text, expected", [
    ("As Step 9 measured", "an internal step number"),
    ("kept at this stop", '"this stop"'),
    ("run on 2026-11-25", "a run date"),
    ("see ../shared/docs/oracle-headroom.md", "a path to shared/docs"),
    ("see ../shared/docs/oracle-headroom.md", "a path outside the repository (../shared)"),
    ("(realm-rules.md, section 5)", "realm-rules.md, which is not in the repository (cite docs/game.md)"),
])
def test_patterns_catch_what_they_name(tmp_path, text: str, expected: str) -> None:
    path = tmp_path / "page.md"
    path.write_text(f"fine\n{text}\n", encoding="utf-8")
    found = offences(path, tmp_path)
    assert any(line.startswith("page.md:2: " + expected) for line in found), found


@pytest.mark.parametrize("text", ["one step at a time", "step 2 of the module docstring", "the 2026 seed",
                                  "docs/game.md", "map 20x20-30"])
def test_patterns_leave_descriptions_alone(tmp_path, text: str) -> None:
    path = tmp_path / "page.md"
    path.write_text(text + "\n", encoding="utf-8")
    assert offences(path, tmp_path) == []
