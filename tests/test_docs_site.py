"""The documentation site as a reader of either language meets it (mkdocs.yml): the 中文 section of the navigation
lists every English page's Chinese twin at the same position, the header's language switcher leads to both front
pages, and the search splits Chinese text into words (Material's search plugin with ``lang: [en, zh]``, jieba from
the docs extra, the glossary's terms kept whole)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"
CHINESE_SECTION = "中文"

#: Chinese pages without an English twin, with the reason
ZH_ONLY: dict[str, str] = {
    "zh/glossary.md": "the glossary fixes the Chinese terms; English pages need none",
}
#: English pages whose Chinese twin is not written yet, with the reason; a twin that appears must join the nav
NO_TWIN_YET: dict[str, str] = {}


def load_config(path: Path = MKDOCS) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def pages(entries: list) -> list[str]:
    """The page paths of a nav (or of one of its sections), in reading order."""
    found: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found += pages(value) if isinstance(value, list) else [value]
    return found


def split_nav(config: dict) -> tuple[list[str], list[str]]:
    """``(English pages, Chinese pages)``: the Chinese ones are the 中文 section's, the English ones all the others."""
    english: list[str] = []
    chinese: list[str] = []
    for entry in config["nav"]:
        if isinstance(entry, dict) and CHINESE_SECTION in entry:
            chinese += pages(entry[CHINESE_SECTION])
        else:
            english += pages([entry])
    return english, chinese


def twin_problems(
    config: dict, zh_only: dict[str, str] = ZH_ONLY, no_twin_yet: dict[str, str] = NO_TWIN_YET
) -> list[str]:
    """What keeps the two navigations from listing the same pages in the same order (empty: nothing)."""
    english, chinese = split_nav(config)
    expected = [f"zh/{page}" for page in english if page not in no_twin_yet]
    listed = [page for page in chinese if page not in zh_only]
    problems = [] if listed == expected else [f"the 中文 nav lists {listed}, the English nav's twins are {expected}"]
    problems += [f"{page} is a Chinese page without the zh/ prefix" for page in chinese if not page.startswith("zh/")]
    problems += [f"{page} is in the exceptions but not in the 中文 nav" for page in zh_only if page not in chinese]
    problems += [
        f"zh/{page} exists: add it to the 中文 nav and drop it from NO_TWIN_YET"
        for page in no_twin_yet
        if (DOCS / "zh" / page).is_file()
    ]
    return problems


def alternate_pages(config: dict) -> dict[str, Path]:
    """The language switcher's entries: ``lang -> the page its link leads to``, resolved from the site root."""
    out = {}
    for alt in config.get("extra", {}).get("alternate", []):
        link = alt["link"].strip("/").removeprefix(".").strip("/")
        out[alt["lang"]] = DOCS / link / "index.md"
    return out


def search_plugin(config: dict) -> dict | None:
    for plugin in config.get("plugins", []):
        if plugin == "search":
            return {}
        if isinstance(plugin, dict) and "search" in plugin:
            return plugin["search"] or {}
    return None


def test_every_nav_page_exists() -> None:
    english, chinese = split_nav(load_config())
    missing = [page for page in english + chinese if not (DOCS / page).is_file()]
    assert not missing, f"mkdocs.yml lists pages that do not exist: {missing}"


def test_every_english_page_has_its_chinese_twin_at_the_same_position() -> None:
    problems = twin_problems(load_config())
    assert not problems, "\n".join(problems)


def test_a_twin_out_of_place_or_missing_is_found() -> None:
    config = load_config()
    section = next(entry for entry in config["nav"] if isinstance(entry, dict) and CHINESE_SECTION in entry)
    entries = section[CHINESE_SECTION]
    entries[1], entries[2] = entries[2], entries[1]
    assert twin_problems(config)
    del entries[1]
    assert twin_problems(config)


def test_the_language_switcher_leads_to_both_front_pages() -> None:
    assert alternate_pages(load_config()) == {"en": DOCS / "index.md", "zh": DOCS / "zh" / "index.md"}
    broken = load_config()
    broken["extra"]["alternate"] = broken["extra"]["alternate"][:1]
    assert "zh" not in alternate_pages(broken)


def test_the_search_reads_chinese() -> None:
    plugin = search_plugin(load_config())
    assert plugin is not None, "no search plugin"
    assert {"en", "zh"} <= set(plugin.get("lang", [])), plugin
    # jieba separates the words of the index with zero-width spaces: the separator must split there
    separator = plugin.get("separator")
    assert separator is None or re.fullmatch(separator, "\u200b"), separator
    docs_extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["docs"]
    assert any(re.match(r"jieba\b", requirement) for requirement in docs_extra), docs_extra
    assert search_plugin({"plugins": ["mkdocstrings"]}) is None


def glossary_terms() -> list[str]:
    """The Chinese terms of the glossary's table (the second column), those of one word."""
    rows = re.findall(
        r"^\| (?!English \|)[^|\n]+ \| ([^|\n]+) \| [^|\n]+ \| [^|\n]+ \|$",
        (DOCS / "zh" / "glossary.md").read_text(encoding="utf-8"),
        re.M,
    )
    terms = [term.strip() for row in rows for term in re.split("[、，]", row)]
    return [term for term in terms if len(term) > 1 and " " not in term and re.search(r"[\u4e00-\u9fff]", term)]


def test_the_glossary_terms_are_whole_search_words() -> None:
    plugin = search_plugin(load_config())
    assert plugin is not None
    words_file = ROOT / plugin["jieba_dict_user"]
    words = {line.split()[0] for line in words_file.read_text(encoding="utf-8").splitlines() if line.strip()}
    terms = glossary_terms()
    assert "代码包" in terms and "全知规划器" in terms, terms
    missing = [term for term in terms if term not in words]
    assert not missing, f"{words_file.name} lacks the glossary's terms {missing}"
    jieba = pytest.importorskip("jieba")
    tokenizer = jieba.Tokenizer()
    tokenizer.load_userdict(str(words_file))
    assert "代码包" in tokenizer.lcut("把模型写进你自己的代码包")
    assert "代码包" not in jieba.Tokenizer().lcut("把模型写进你自己的代码包")  # without the words: 代码, 包


# --------------------------------------------------------------------------------------- the same commands in both
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
COMMENT = re.compile(r"\s+#\s.*$", re.M)  # a code comment after the code: translated on the Chinese pages


def code_blocks(text: str) -> list[str]:
    """The fenced code blocks of a Markdown page, in order, with end-of-line comments (`` # ...``) dropped."""
    return [COMMENT.sub("", block).rstrip() for block in FENCE.findall(text)]


def block_problems(english: str, chinese: str) -> list[str]:
    """Where a Chinese page's code blocks (commands, configs, printed output) differ from its English twin's."""
    en, zh = code_blocks(english), code_blocks(chinese)
    problems = [f"{len(en)} code blocks in English, {len(zh)} in Chinese"] if len(en) != len(zh) else []
    for k, (a, b) in enumerate(zip(en, zh, strict=False)):
        if a != b:
            problems.append(f"block {k + 1} differs: English {a[:80]!r}, Chinese {b[:80]!r}")
    return problems


def twins() -> list[tuple[Path, Path]]:
    english, _ = split_nav(load_config())
    return [(DOCS / page, DOCS / "zh" / page) for page in english if page not in NO_TWIN_YET]


@pytest.mark.parametrize("english,chinese", twins(), ids=lambda p: str(p.relative_to(DOCS)))
def test_the_chinese_twin_gives_the_same_commands(english: Path, chinese: Path) -> None:
    """A reader of either language runs the same commands and sees the same output: every code block of an English
    page is on its Chinese twin, in the same order (comments may be translated)."""
    problems = block_problems(english.read_text(encoding="utf-8"), chinese.read_text(encoding="utf-8"))
    assert not problems, f"{chinese.relative_to(ROOT)}: " + "; ".join(problems)


def test_a_command_changed_on_one_side_is_found() -> None:
    english = "Run:\n\n```bash\nsb3-realm imitate --out runs/a  # the clone\n```\n"
    same = "运行：\n\n```bash\nsb3-realm imitate --out runs/a  # 克隆\n```\n"
    assert block_problems(english, same) == []
    assert block_problems(english, same.replace("runs/a", "runs/b"))
    assert block_problems(english, "运行：\n")


# ------------------------------------------------------------------------------ Chinese pages link Chinese pages
LINK = re.compile(r"\[([^\]]*)\]\(([^)#\s]+\.md)(#[^)\s]*)?\)(（英文）)?")


def english_links(page: Path, text: str) -> list[str]:
    """The links of a Chinese page (after its first line, the language switcher) that open an English page which has
    a Chinese twin, without saying so (英文 in the link's text, or （英文） after it)."""
    found = []
    for line in text.splitlines()[1:]:
        for label, target, _, marked in LINK.findall(line):
            if "://" in target or marked or "英文" in label:
                continue
            opened = (page.parent / target).resolve()
            if DOCS / "zh" in opened.parents:
                continue
            twin = DOCS / "zh" / opened.relative_to(DOCS) if DOCS in opened.parents else None
            if twin is not None and twin.exists():
                found.append(target)
    return found


def test_chinese_pages_link_the_chinese_twins() -> None:
    """A reader of a Chinese page stays in Chinese: a link to a page that has a Chinese twin opens the twin (a link
    that must open the English page says （英文） after it)."""
    problems = {}
    for page in sorted((DOCS / "zh").rglob("*.md")):
        links = english_links(page, page.read_text(encoding="utf-8"))
        if links:
            problems[str(page.relative_to(ROOT))] = links
    assert not problems, f"Chinese pages link English pages that have a Chinese twin: {problems}"


def test_a_link_to_the_english_twin_is_found() -> None:
    page = DOCS / "zh" / "gorge" / "getting-started.md"
    text = ("header\n见[基准测试](../../benchmarks.md)；[规则](rules.md)；[API](../../api.md#x)（英文）；"
            "[英文页面](../../index.md)\n")
    assert english_links(page, text) == ["../../benchmarks.md"]


# ------------------------------------------------------------------------------ the hook: switcher and changelog
def _hook():
    from helpers import load_tool

    return load_tool("mkdocs_hooks")


def _site_urls(config: dict) -> dict[str, str]:
    """Every nav page's source path to its URL, as MkDocs makes them (``gorge/rules.md`` -> ``gorge/rules/``)."""
    english, chinese = split_nav(config)
    urls = {}
    for page in english + chinese:
        folder, _, name = page.removesuffix(".md").rpartition("/")
        path = folder if name == "index" else f"{folder}/{name}".lstrip("/")
        urls[page] = f"{path}/" if path else "./"
    return urls


def test_the_language_switcher_leads_to_the_twin_of_the_page() -> None:
    """The header's switcher on a page opens that page in the other language (mkdocs.yml's entries, the front pages,
    stay for a page without a twin)."""
    hook, config = _hook(), load_config()
    front, urls = config["extra"]["alternate"], _site_urls(config)
    for page in ("gorge/rules.md", "zh/gorge/rules.md"):
        links = {entry["lang"]: entry["link"] for entry in hook.twin_links(page, urls, front)}
        assert links == {"en": "gorge/rules/", "zh": "zh/gorge/rules/"}, (page, links)
    glossary = {entry["lang"]: entry["link"] for entry in hook.twin_links("zh/glossary.md", urls, front)}
    assert glossary == {"en": "./", "zh": "zh/glossary/"}, glossary


def test_the_hook_sets_each_pages_switcher() -> None:
    from types import SimpleNamespace

    hook, config = _hook(), load_config()
    site = SimpleNamespace(extra=dict(config["extra"]))
    hook.on_config(site)
    nav = SimpleNamespace(pages=[SimpleNamespace(file=SimpleNamespace(src_uri=src), url=url)
                                 for src, url in _site_urls(config).items()])
    page = next(p for p in nav.pages if p.file.src_uri == "zh/faq.md")
    hook.on_page_context({}, page, site, nav)
    assert {entry["lang"]: entry["link"] for entry in site.extra["alternate"]} == {"en": "faq/", "zh": "zh/faq/"}


def test_the_changelog_is_in_both_navigations_and_shows_the_repositorys_file() -> None:
    hook = _hook()
    english, chinese = split_nav(load_config())
    assert "changelog.md" in english and "zh/changelog.md" in chinese
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for page in ("changelog.md", "zh/changelog.md"):
        shown = hook.changelog_markdown((DOCS / page).read_text(encoding="utf-8"), changelog)
        assert hook.CHANGELOG_MARKER not in shown and "## Unreleased" in shown, page
        assert "\n# Changelog" not in shown.replace("# Changelog\n\n**English**", ""), page  # one title a page


def test_troubleshooting_is_in_both_navigations() -> None:
    english, chinese = split_nav(load_config())
    assert "faq.md" in english and "zh/faq.md" in chinese
