"""The Chinese pages speak one vocabulary: the glossary page (docs/zh/glossary.md) holds a table of English terms, their
Chinese terms and the variants not to use, and this module reads that table and checks every Chinese page against it.

The rule, as the glossary page states it:

1. Only prose is checked: fenced code blocks, inline code spans, link targets and HTML tags are removed first (commands
   and identifiers such as ``oracle`` stay English), and so are the glossary's own table rows.
2. Each variant of the "不要用" column is an offence wherever it occurs in the prose, unless that occurrence lies inside
   an occurrence of a term of the "中文" column (基准 inside 基准测试) or inside the "中文（English）" form of its
   own row (全知规划器（oracle）). A variant made of ASCII letters matches as a whole word, case-insensitively.
3. Every Chinese page links to the glossary (README.zh-CN.md by its path docs/zh/glossary.md).
4. No heading of a Chinese page carries a ``{#anchor}`` attribute (GitHub shows it as text); a link to ``page.md#name``
   or ``#name`` between Chinese pages names an ``<a id="name"></a>`` line of its target page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "docs" / "zh" / "glossary.md"
README_ZH = ROOT / "README.zh-CN.md"
ZH_DOCS = sorted((ROOT / "docs" / "zh").rglob("*.md"))
CHINESE_PAGES = [README_ZH, *ZH_DOCS]
HEADER = "| English | 中文 | 含义 | 不要用 |"
NONE = "—"


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    meaning: str
    variants: tuple[str, ...]


def cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def glossary_rows(text: str) -> list[str]:
    """The lines of the glossary's table, header and separator included."""
    lines = text.splitlines()
    start = lines.index(HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return lines[start:end]


def read_glossary(text: str) -> list[Term]:
    terms = []
    for row in glossary_rows(text)[2:]:
        english, chinese, meaning, variants = cells(row)
        found = () if variants == NONE else tuple(v.strip() for v in variants.split("、") if v.strip())
        terms.append(Term(english, chinese, meaning, found))
    return terms


def prose(text: str) -> str:
    """``text`` with fenced code blocks, inline code spans, link targets and HTML tags blanked out (each removed
    character becomes a space, so line numbers and positions stay those of the page)."""

    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    text = re.sub(r"^```.*?^```", blank, text, flags=re.M | re.S)
    text = re.sub(r"`[^`\n]+(?:\n[^`\n]+)?`", blank, text)  # a code span may wrap onto a second line
    text = re.sub(r"\]\([^)\s]*\)", lambda m: "]" + blank(m)[1:], text)
    return re.sub(r"<[^>\n]+>", blank, text)


def _pattern(variant: str) -> re.Pattern[str]:
    if variant.isascii():
        return re.compile(rf"(?<![A-Za-z0-9_-]){re.escape(variant)}(?![A-Za-z0-9_-])", re.IGNORECASE)
    return re.compile(re.escape(variant))


def _spans(text: str, needle: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(re.escape(needle), text)]


def offences(text: str, terms: list[Term]) -> list[str]:
    """``line N: variant (term): line`` for each occurrence of a variant in the prose of ``text`` that the rule does
    not allow."""
    checked = prose(text)
    allowed: list[tuple[int, int]] = []
    for term in terms:
        allowed += _spans(checked, term.chinese)
        for form in (
            f"{term.chinese}（{term.english}）",
            f"{term.chinese} ({term.english})",
            f"{term.chinese}({term.english})",
        ):
            allowed += _spans(checked, form)
    found = []
    for term in terms:
        for variant in term.variants:
            for match in _pattern(variant).finditer(checked):
                if any(start <= match.start() and match.end() <= end for start, end in allowed):
                    continue
                number = checked.count("\n", 0, match.start()) + 1
                line = text.splitlines()[number - 1].strip()
                found.append(f"line {number}: {variant!r} (for {term.english} use {term.chinese}): {line[:90]}")
    return found


def page_text(page: Path) -> str:
    """The text to check: the glossary page without its own table."""
    text = page.read_text(encoding="utf-8")
    if page == GLOSSARY:
        rows = set(glossary_rows(text))
        text = "\n".join("" if line in rows else line for line in text.splitlines())
    return text


def links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))


def anchor_ids(page: Path) -> set[str]:
    return set(re.findall(r'^<a id="([^"]+)"></a>$', page.read_text(encoding="utf-8"), re.M))


TERMS = read_glossary(GLOSSARY.read_text(encoding="utf-8"))


def rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name


def test_the_glossary_table_holds_the_project_terms() -> None:
    table = {term.english: term for term in TERMS}
    expected = {
        "yardstick": "标尺",
        "benchmark": "基准测试",
        "oracle": "全知规划器",
        "planner": "规划器",
        "scripted policy": "脚本策略",
        "workflow": "工作流",
        "stand-in (of the platform)": "本地模拟平台",
        "main job": "快速上手命令",
        "code package": "代码包",
        "Kaiwu client": "开悟客户端",
        "training task": "训练任务",
        "model management": "模型管理",
        "evaluation task": "评估任务",
        "leaderboard": "排行榜",
        "recipe": "配方",
        "imitation learning": "模仿学习",
        "fine-tuning": "微调",
        "simulator": "模拟器",
    }
    assert {english: table[english].chinese for english in expected if english in table} == expected
    assert {"衡量标准", "脚本基准", "基准"} <= set(table["yardstick"].variants)
    assert "替身" in table["stand-in (of the platform)"].variants
    assert "主任务" in table["main job"].variants
    assert all(term.meaning for term in TERMS), "every term says what it means here"
    chinese = [term.chinese for term in TERMS]
    assert len(chinese) == len(set(chinese)), "a Chinese term stands for one English term"


@pytest.mark.parametrize("page", CHINESE_PAGES, ids=rel)
def test_chinese_pages_use_the_glossary_terms(page: Path) -> None:
    found = offences(page_text(page), TERMS)
    assert not found, f"{rel(page)} uses variants the glossary (docs/zh/glossary.md) rules out:\n" + "\n".join(found)


@pytest.mark.parametrize("page", [p for p in CHINESE_PAGES if p != GLOSSARY], ids=rel)
def test_chinese_pages_link_to_the_glossary(page: Path) -> None:
    targets = [
        (page.parent / target.split("#")[0]).resolve()
        for target in links(page.read_text(encoding="utf-8"))
        if not re.match(r"[a-z]+://|#|mailto:", target)
    ]
    assert GLOSSARY.resolve() in targets, f"{rel(page)} does not link to docs/zh/glossary.md"


@pytest.mark.parametrize("page", CHINESE_PAGES, ids=rel)
def test_chinese_headings_render_on_github(page: Path) -> None:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    bad = [line for line in text.splitlines() if re.match(r"#{1,6} .*\{#[^}]*\}\s*$", line)]
    assert not bad, f"{rel(page)} has headings with {{#anchor}} attributes (write <a id=...> above them): {bad}"


@pytest.mark.parametrize("page", CHINESE_PAGES, ids=rel)
def test_links_into_chinese_pages_name_their_anchors(page: Path) -> None:
    zh = (ROOT / "docs" / "zh").resolve()
    missing = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://|mailto:", target) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        dest = (page.parent / path).resolve() if path else page.resolve()
        if dest.is_relative_to(zh) and dest.suffix == ".md" and anchor not in anchor_ids(dest):
            missing.append(target)
    assert not missing, f"{rel(page)} links to anchors with no <a id> line in their page: {missing}"


# the rule itself: each branch can fail


@pytest.mark.parametrize(
    "text",
    [
        "脚本策略是峡谷追猎的衡量标准。",
        "`scripted` 基准在同样的对局上得 1,634 分。",
        "脚本基准得 1,599 分。",
        "`--check` 在平台的替身上运行。",
        "先运行主任务。",
        "由 oracle 教出的策略。",
        "比 Oracle 低 0.2 分。",
        "运行自己的 workflow 和特征代码。",
        "仿真器实现了规则。",
    ],
)
def test_the_rule_catches_a_variant(text: str) -> None:
    assert offences(f"# 标题\n\n{text}\n", TERMS), text


@pytest.mark.parametrize(
    "text",
    [
        "见[基准测试](../benchmarks.md)。",
        "全知规划器（oracle）给出标尺。",
        "全知规划器 (oracle) 给出标尺。",
        "用 `sb3-realm eval oracle` 给它打分。",
        "`--workflow finetune` 改用 REINFORCE。",
        "```bash\nsb3-realm eval oracle --protocol leaderboard\n```",
        "[文档](docs/oracle-notes.md)",
        "`oracle-refined` 是逐步精确的教师。",
        "用 `sb3-realm eval\noracle --protocol leaderboard` 打分。",
        '<a id="oracle"></a>',
    ],
)
def test_the_rule_allows_the_terms_and_code(text: str) -> None:
    assert offences(f"# 标题\n\n{text}\n", TERMS) == []


def test_offences_name_the_line() -> None:
    found = offences("# 标题\n\n第一行\n脚本基准得 1,599 分。\n", TERMS)
    assert found and all(line.startswith("line 4: ") for line in found), found


def test_a_heading_attribute_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# 标题\n\n## 安装 {#install}\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="anchor"):
        test_chinese_headings_render_on_github(page)
