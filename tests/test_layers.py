"""The package's architecture, enforced: layers whose imports point down only, independent siblings, games that the
shared layers reach only through their spec, no import cycles, and the package's own imports at the top of each module
(the CLI alone may defer its heavy layers).

The modules are read with :mod:`ast` (nothing is imported), so a new upward import or cycle fails here with the file
and line, before it can hide behind a function-level import.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROOT = "sb3_realm"

# Highest first: a module may import its own layer's modules of the same entry and the layers below it. Entries of
# one layer are independent siblings (neither imports the other). The package root (`sb3_realm/__init__.py`, the
# front door that registers the envs) may import anything and is imported by none of them.
LAYERS: list[tuple[str, ...]] = [
    ("cli",),
    ("tuning",),
    ("export",),
    ("imitation",),
    ("training",),
    ("evaluation",),
    ("agents",),
    ("models",),
    ("games",),
    ("executors",),
    ("atomic", "processes", "arguments", "version", "submission"),
]
# The games layer (sb3_realm/games/): the registry (games/__init__.py), the spec interface (games/spec.py), the
# spec's checker (games/check.py) and one folder per game. Outside it, a module may import only these three; each game
# folder is an independent sibling, and inside one the parts are tiers whose imports point down: core <- protocol <-
# features <- env <- experts <- spec.
GAMES = f"{ROOT}.games"
GAME_INTERFACE = {GAMES, f"{GAMES}.spec", f"{GAMES}.check", f"{GAMES}.registry"}
GAME_TIERS = {"maps": 0, "rules": 0, "core": 0, "render": 0, "protocols": 0, "raw": 0, "protocol": 1, "observation": 1,
              "memory": 2, "planner": 3, "features": 4, "search": 4, "env": 5, "rewards": 5, "experts": 6, "spec": 7}
GAME_PACKAGE_TIER = 1  # a game's __init__ re-exports its core and protocol
# Modules allowed to import the package's own modules inside functions: the CLI defers the layers that load torch,
# SB3 and Optuna, so that `sb3-realm --help` starts fast.
LAZY_ALLOWED = {"sb3_realm.cli"}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    top_level: bool


def package_files() -> dict[str, Path]:
    """Module name -> source file, for every module of the installed package (``submission/`` is installed as
    ``sb3_realm.submission``; its templates are data, not modules of the package)."""
    files: dict[str, Path] = {}
    for path in sorted((REPO / ROOT).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    files[f"{ROOT}.submission"] = REPO / "submission" / "__init__.py"
    files[f"{ROOT}.submission.harness"] = REPO / "submission" / "harness.py"
    return files


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom | ast.Import, modules: set[str]) -> list[str]:
    """The package modules an import statement loads (a name imported from a package counts as its submodule when
    it is one)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == ROOT]
    if node.level:
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    if module.split(".")[0] != ROOT:
        return []
    targets = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in modules]
    return targets or [module]


def collect_imports(files: dict[str, Path]) -> list[Import]:
    modules = set(files)
    out: list[Import] = []
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nested: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                nested.update(id(n) for n in ast.walk(node) if n is not node)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(name, path.name == "__init__.py", node, modules):
                    out.append(Import(name, target, node.lineno, id(node) not in nested))
    return out


def layer_of(module: str) -> tuple[int, str] | None:
    """``(layer index, entry)`` of a module, None for the package root."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for index, entries in enumerate(LAYERS):
        if parts[1] in entries:
            return index, parts[1]
    raise AssertionError(f"{module} belongs to no layer: add {parts[1]!r} to LAYERS in tests/test_layers.py")


def layer_violations(imports: list[Import]) -> list[str]:
    problems = []
    for imp in imports:
        source, target = layer_of(imp.importer), layer_of(imp.target)
        if source is None:
            continue  # the root is the front door
        where = f"{imp.importer} (line {imp.line}) imports {imp.target}"
        if target is None:
            problems.append(f"{where}: the package root; import the module that defines the name instead")
        elif target[0] < source[0]:
            problems.append(f"{where}: layer {LAYERS[target[0]]} is above {LAYERS[source[0]]}")
        elif target[0] == source[0] and target[1] != source[1]:
            problems.append(f"{where}: siblings {source[1]!r} and {target[1]!r} must stay independent")
    return problems


def import_graph(imports: list[Import]) -> dict[str, set[str]]:
    """Module -> the modules its import statements run: the target and each of its parent packages (their
    ``__init__`` runs first) that is not a parent of the importer (already being initialised); the root excluded."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        parts = imp.target.split(".")
        for n in range(2, len(parts) + 1):
            module = ".".join(parts[:n])
            if module != imp.importer and not imp.importer.startswith(module + "."):
                graph.setdefault(imp.importer, set()).add(module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return collect_imports(package_files())


def test_every_import_points_down_a_layer(imports):
    problems = layer_violations(imports)
    assert not problems, "imports against the layers (tests/test_layers.py LAYERS):\n" + "\n".join(problems)


def game_violations(imports: list[Import]) -> list[str]:
    """Imports against the games' rules: a shared layer imports a game's own modules; a game imports another game;
    the spec interface imports a game; a part of a game imports a higher tier of it."""
    problems = []
    for imp in imports:
        where = f"{imp.importer} (line {imp.line}) imports {imp.target}"
        source, target = imp.importer.split("."), imp.target.split(".")
        inside = imp.importer == GAMES or imp.importer.startswith(GAMES + ".")
        to_game = imp.target.startswith(GAMES + ".") and imp.target not in GAME_INTERFACE
        if not inside:
            if to_game and imp.importer != ROOT:  # the root is the front door
                problems.append(f"{where}: a shared layer reaches a game only through its GameSpec "
                                f"(games.get(name)), never its modules")
            continue
        if not to_game:
            continue
        if imp.importer == f"{GAMES}.spec":
            problems.append(f"{where}: the spec interface imports no game")
        elif imp.importer == GAMES:
            if target[3:] != ["spec"]:
                problems.append(f"{where}: the registry imports only each game's spec")
        elif source[2] != target[2]:
            problems.append(f"{where}: games {source[2]!r} and {target[2]!r} must stay independent")
        else:
            low, high = _game_tier(target), _game_tier(source)
            if low > high:
                problems.append(f"{where}: within a game, tier {target[3] if len(target) > 3 else '__init__'} is "
                                f"above {source[3] if len(source) > 3 else '__init__'}")
    return problems


def _game_tier(parts: list[str]) -> int:
    if len(parts) == 3:
        return GAME_PACKAGE_TIER
    if parts[3] not in GAME_TIERS:
        raise AssertionError(f"{'.'.join(parts)} belongs to no tier of its game: add {parts[3]!r} to GAME_TIERS in "
                             "tests/test_layers.py")
    return GAME_TIERS[parts[3]]


def test_games_are_reached_through_their_spec(imports):
    problems = game_violations(imports)
    assert not problems, "imports against the games' rules (tests/test_layers.py):\n" + "\n".join(problems)


def game_name_comparisons(files: dict[str, Path], names: set[str]) -> list[str]:
    """``x == "realm"`` (any comparison with a game's name) outside ``sb3_realm/games``: a shared layer asks the
    spec instead."""
    found = []
    for module, path in files.items():
        if module == GAMES or module.startswith(GAMES + "."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                for operand in (node.left, *node.comparators):
                    if isinstance(operand, ast.Constant) and operand.value in names:
                        found.append(f"{module} (line {node.lineno}) compares with the game name {operand.value!r}")
    return found


def test_no_shared_module_compares_with_a_game_name():
    from sb3_realm import games

    found = game_name_comparisons(package_files(), set(games.GAMES))
    assert not found, "ask the game's spec instead:\n" + "\n".join(found)


def test_no_import_cycles(imports):
    found = cycles(import_graph(imports))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_own_imports_are_at_module_top(imports):
    nested = [f"{i.importer} (line {i.line}) imports {i.target} inside a function or class" for i in imports
              if not i.top_level and i.importer not in LAZY_ALLOWED]
    assert not nested, "move these imports to the top of their module:\n" + "\n".join(nested)


def test_the_package_never_imports_the_tools_or_tests():
    for name, path in package_files().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not [n for n in names if n.split(".")[0] in ("tools", "tests", "submission")], (name, names)


def test_the_checks_catch_what_they_guard(tmp_path):
    """The checker itself: an upward import, a sibling import, the root and a cycle are reported; so are a shared
    layer that imports a game's module, a game that imports another, the spec interface importing a game, and a
    lower tier of a game importing a higher one."""
    fake = [Import("sb3_realm.models.saved", "sb3_realm.agents.base", 1, True),
            Import("sb3_realm.atomic", "sb3_realm.processes", 2, True),
            Import("sb3_realm.games.realm.env", "sb3_realm", 3, True),
            Import("sb3_realm.agents.base", "sb3_realm.models.algorithms", 4, True)]
    problems = layer_violations(fake)
    assert len(problems) == 3 and "above" in problems[0] and "siblings" in problems[1] and "root" in problems[2]
    loop = [Import("sb3_realm.tuning.study", "sb3_realm.tuning.outputs", 1, True),
            Import("sb3_realm.tuning.outputs", "sb3_realm.tuning.study", 2, False)]
    assert cycles(import_graph(loop)) == [["sb3_realm.tuning.outputs", "sb3_realm.tuning.study"]]
    assert cycles(import_graph(fake)) == []
    games = [Import("sb3_realm.games.gorge.env", "sb3_realm.games.realm.core", 1, True),  # cross-game
             Import("sb3_realm.training.run", "sb3_realm.games.realm.env", 2, True),  # a shared layer, a game module
             Import("sb3_realm.games.realm.core", "sb3_realm.games.realm.features", 3, True),  # tier upward
             Import("sb3_realm.games.spec", "sb3_realm.games.realm.spec", 4, True),  # the interface, a game
             Import("sb3_realm.games", "sb3_realm.games.realm.env", 5, True),  # the registry, past the spec
             Import("sb3_realm.games.realm.spec", "sb3_realm.games.realm.experts.adapter", 6, True),  # allowed
             Import("sb3_realm.evaluation.replay", "sb3_realm.games", 7, True),  # allowed
             Import("sb3_realm", "sb3_realm.games.realm.env", 8, True)]  # allowed: the front door
    problems = game_violations(games)
    assert [p.split(" (line ")[0] for p in problems] == [
        "sb3_realm.games.gorge.env", "sb3_realm.training.run", "sb3_realm.games.realm.core", "sb3_realm.games.spec",
        "sb3_realm.games"], problems
    shared = tmp_path / "shared.py"
    shared.write_text('def f(config):\n    return config.game == "realm"\n', encoding="utf-8")
    assert game_name_comparisons({"sb3_realm.training.fake": shared}, {"realm"})


def test_at_most_four_functions_are_exempt_from_the_complexity_rule():
    """ruff's C901 (max 15, pyproject.toml) holds everywhere but in four functions, each exempt by name with its
    reason on the line above."""
    exempt = []
    for path in sorted(REPO.rglob("*.py")):
        if {"build", ".git", ".venv"} & set(path.relative_to(REPO).parts):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.rstrip().endswith("# noqa: C901"):
                assert line.lstrip().startswith("def ") and lines[i - 1].lstrip().startswith("# C901 exempt:"), \
                    f"{path}:{i + 1}: an exemption names its function and gives its reason on the line above"
                exempt.append(f"{path.relative_to(REPO)}:{i + 1}")
    assert len(exempt) <= 4, exempt

