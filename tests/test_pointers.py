"""Pointers that name a module or a function point at one that exists: the package's ``:mod:`` references, the
complexity exemptions that pyproject.toml names, and the project's description."""

from __future__ import annotations

import importlib.util
import re
import tomllib

from helpers import REPO

from sb3_realm import MOVED_MODULES

MOD_ROLE = re.compile(r":mod:`~?(sb3_realm(?:\.\w+)*)`")


def test_every_mod_reference_of_the_package_names_a_module():
    missing = []
    for path in sorted((REPO / "sb3_realm").rglob("*.py")):
        for name in MOD_ROLE.findall(path.read_text(encoding="utf-8")):
            if name in MOVED_MODULES or importlib.util.find_spec(name) is None:  # an old name, kept for old pickles
                missing.append(f"{path.relative_to(REPO)}: {name}")
    assert not missing, missing


def test_the_complexity_exemptions_pyproject_names_exist():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    comment = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    named = re.search(r"exempt by name.*?:\s*(.*?)\. A new", comment).group(1)
    dotted = re.findall(r"(?<![/\w.])([a-z_]+(?:\.[a-z_]+)+)\b", named)  # tools/mapgen.check_map is a script's
    assert dotted, named
    for name in dotted:
        module, function = name.rsplit(".", 1)
        path = REPO / "sb3_realm" / (module.replace(".", "/") + ".py")
        assert path.is_file(), f"pyproject.toml names {name}, but there is no sb3_realm/{module.replace('.', '/')}.py"
        assert re.search(rf"^def {function}\(.*# noqa: C901", path.read_text(encoding="utf-8"), re.M | re.S), name


def test_description_names_both_games():
    description = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["description"]
    assert "Back to the Realm" in description and "Gorge Chase" in description, description
