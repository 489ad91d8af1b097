"""MkDocs hook of the documentation site (``hooks:`` in mkdocs.yml).

- Sphinx cross-reference roles in the package's docstrings, as the API page renders them. The docstrings use Sphinx
  roles (``:class:`RewardWeights```, ``:func:`~sb3_realm.evaluation.evaluate```), which mkdocstrings shows as literal
  text before the code span. This hook drops the role, shortens a ``~`` name to its last part, as Sphinx does, and
  links the name when the page has a heading of that full name.
- The language switcher in the header leads to the twin of the page being read (``gorge/rules.md`` and
  ``zh/gorge/rules.md``), not to the other language's front page; a page without a twin keeps the front page.
- The changelog page (``changelog.md`` and its Chinese twin) shows ``CHANGELOG.md`` from the repository's root, which
  stays the one file to edit: the page's line ``<!-- CHANGELOG.md -->`` is replaced by the file's text after its title.
"""

from __future__ import annotations

import re
from pathlib import Path

ROLE = re.compile(r":(?:class|mod|func|meth|data|attr|exc|obj):<code>(~?)([\w.]+)(\(\))?</code>")
HEADING_ID = re.compile(r'<h[1-6] id="([\w.]+)"')

#: the line of a page that the repository's CHANGELOG.md replaces
CHANGELOG_MARKER = "<!-- CHANGELOG.md -->"
CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"
#: the Chinese pages' folder; an English page ``X.md`` has its twin at ``zh/X.md``
CHINESE = "zh/"

_front_pages: list[dict] = []  # extra.alternate as mkdocs.yml gives it: each language's front page


def on_config(config):
    """Keep mkdocs.yml's switcher entries (the front pages), which each page's own links replace."""
    _front_pages[:] = [dict(entry) for entry in config.extra.get("alternate") or []]
    return config


def twin_links(src_uri: str, urls: dict[str, str], front_pages: list[dict]) -> list[dict]:
    """The switcher's entries for the page ``src_uri`` (``urls``: every page's source path to its URL): each
    language's link goes to the page's twin in that language where the site has one, else to that language's front
    page as ``front_pages`` (mkdocs.yml's ``extra.alternate``) gives it."""
    english = src_uri[len(CHINESE):] if src_uri.startswith(CHINESE) else src_uri
    twins = {"en": english, "zh": CHINESE + english}
    out = []
    for entry in front_pages:
        twin = twins.get(entry.get("lang", ""))
        out.append({**entry, "link": urls[twin]} if twin in urls else dict(entry))
    return out


def on_page_context(context, page, config, nav):
    """Point the header's language switcher at this page's twins (the template reads ``config.extra.alternate``
    when it renders the page, right after this hook)."""
    if _front_pages:
        urls = {p.file.src_uri: p.url or "./" for p in nav.pages}
        config.extra["alternate"] = twin_links(page.file.src_uri, urls, _front_pages)
    return context


def changelog_markdown(markdown: str, changelog: str) -> str:
    """``markdown`` with its marker line replaced by ``changelog`` less the changelog's first heading (the page has
    its own title)."""
    if CHANGELOG_MARKER not in markdown:
        return markdown
    lines = changelog.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("# ")), -1)
    return markdown.replace(CHANGELOG_MARKER, "\n".join(lines[first + 1:]).strip("\n"))


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Insert the repository's CHANGELOG.md into the page that asks for it."""
    if CHANGELOG_MARKER in markdown:
        return changelog_markdown(markdown, CHANGELOG.read_text(encoding="utf-8"))
    return markdown


def on_page_content(html: str, page, config, files) -> str:
    """Replace each rendered role with a plain code span, linked when the page documents that full name."""
    anchors = set(HEADING_ID.findall(html))

    def replace(match: re.Match) -> str:
        tilde, name, call = match.group(1), match.group(2), match.group(3) or ""
        shown = (name.rsplit(".", 1)[-1] if tilde else name) + call
        code = f"<code>{shown}</code>"
        return f'<a href="#{name}">{code}</a>' if name in anchors else code

    return ROLE.sub(replace, html)
