"""MkDocs hook of the documentation site (``hooks:`` in mkdocs.yml): Sphinx cross-reference roles in the package's
docstrings, as the API page renders them.

The docstrings use Sphinx roles (``:class:`RewardWeights```, ``:func:`~sb3_realm.evaluation.evaluate```), which
mkdocstrings shows as literal text before the code span. This hook drops the role, shortens a ``~`` name to its last
part, as Sphinx does, and links the name when the page has a heading of that full name.
"""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|mod|func|meth|data|attr|exc|obj):<code>(~?)([\w.]+)(\(\))?</code>")
HEADING_ID = re.compile(r'<h[1-6] id="([\w.]+)"')


def on_page_content(html: str, page, config, files) -> str:
    """Replace each rendered role with a plain code span, linked when the page documents that full name."""
    anchors = set(HEADING_ID.findall(html))

    def replace(match: re.Match) -> str:
        tilde, name, call = match.group(1), match.group(2), match.group(3) or ""
        shown = (name.rsplit(".", 1)[-1] if tilde else name) + call
        code = f"<code>{shown}</code>"
        return f'<a href="#{name}">{code}</a>' if name in anchors else code

    return ROLE.sub(replace, html)
