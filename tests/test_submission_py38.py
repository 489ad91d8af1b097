"""The code that runs inside a built package (the layouts' templates, the files every layout shares, the network
module and each game's features module with the companions copied beside it, all verbatim) is written for Python
3.8, numpy 1.19 and torch 1.8 and later, where that costs nothing: the platform's images may run older versions than
this project's (the 2024 image Python 3.11; nothing says what 15.0.1 runs). Each file must parse with Python 3.8's
grammar, and must not use what 3.8 lacks at run time: ``zip(strict=)``, builtin generics (``list[int]``) or ``X | Y``
outside annotations (and inside them without ``from __future__ import annotations``), ``str.removeprefix``; nor what
numpy 1.19 lacks (``sliding_window_view`` and the others of ``helpers.NEWER_NUMPY``, the keywords of
``helpers.NEWER_NUMPY_KEYWORDS``); ``torch.load(weights_only=)`` only where its ``TypeError`` on torch < 1.13 is
caught. tests/test_gorge_old_numpy.py plays the Gorge copies with those numpy functions removed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import NEWER_NUMPY, NEWER_NUMPY_KEYWORDS

from sb3_realm.games import GAMES
from sb3_realm.submission import COMMON, LAYOUTS, layout_spec

REPO = Path(__file__).resolve().parents[1]
GENERICS = {"list", "dict", "tuple", "set", "frozenset", "type"}
NEWER_METHODS = {"removeprefix": "3.9", "removesuffix": "3.9", "bit_count": "3.10", "pairwise": "3.10",
                 "cache": "3.9", "lcm": "3.9"}
NEWER_MODULES = {"tomllib": "3.11", "zoneinfo": "3.9", "graphlib": "3.9"}
NEWER_NUMPY_METHODS = {"permuted": "1.20"}  # of numpy's Generator, called on an object of any name


def features_copies() -> list[Path]:
    """Each game's features module and the companions build-submission copies beside it into a package."""
    files = []
    for spec in GAMES.values():
        module = spec.submission.features
        source = Path(str(module.__file__))
        files += [source, *(source.parent / name for name in getattr(module, "COMPANION_FILES", ()))]
    return files


def _owned() -> list[Path]:
    files = {p for name, folder in LAYOUTS.items() for p in (folder / layout_spec(name)["template"]).rglob("*.py")}
    files |= set(COMMON.rglob("*.py"))
    files |= {REPO / "sb3_realm/models/nets.py", *features_copies()}
    return sorted(files)


def _dotted(node: ast.AST) -> list[str]:
    """``np.lib.stride_tricks.f`` -> ``["np", "lib", "stride_tricks", "f"]``; [] when it is not a dotted name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else []


def _numpy_problems(tree: ast.AST) -> list[str]:
    """What in ``tree`` numpy 1.19 lacks (``line: what``)."""
    aliases = {(a.asname or a.name.split(".")[0]) for n in ast.walk(tree) if isinstance(n, ast.Import)
               for a in n.names if a.name.split(".")[0] == "numpy"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain = _dotted(node)
            if chain and chain[0] in aliases and node.attr in NEWER_NUMPY:
                found.append(f"{node.lineno}: {'.'.join(chain)} needs numpy {NEWER_NUMPY[node.attr]}")
            elif node.attr in NEWER_NUMPY_METHODS:
                found.append(f"{node.lineno}: .{node.attr}() needs numpy {NEWER_NUMPY_METHODS[node.attr]}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: {a.name} needs numpy {NEWER_NUMPY[part]}" for a in node.names
                      if a.name.split(".")[0] == "numpy" for part in a.name.split(".")[1:] if part in NEWER_NUMPY]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            parts = [*(node.module or "").split(".")[1:], *(a.name for a in node.names)]
            found += [f"{node.lineno}: {part} from {node.module} needs numpy {NEWER_NUMPY[part]}" for part in parts
                      if part in NEWER_NUMPY]
        if isinstance(node, ast.Call):
            chain = _dotted(node.func)
            if chain and chain[0] in aliases and chain[-1] in NEWER_NUMPY_KEYWORDS:
                newer = NEWER_NUMPY_KEYWORDS[chain[-1]]
                found += [f"{node.lineno}: {'.'.join(chain)}({k.arg}=) needs numpy {newer[k.arg]}"
                          for k in node.keywords if k.arg in newer]
    return found


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """The ids of every node inside an annotation."""
    roots = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots += [a.annotation for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                                             node.args.vararg, node.args.kwarg) if a is not None and a.annotation]
            roots += [node.returns] if node.returns else []
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots for n in ast.walk(root)}


def problems_for_py38(path: Path) -> list[str]:
    """What in the file ``path`` Python 3.8, numpy 1.19 or torch 1.8 cannot run (``line: what``)."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, feature_version=(3, 8))
    except SyntaxError as exc:
        return [f"{exc.lineno}: not Python 3.8 grammar ({exc.msg})"]
    postponed = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                    any(a.name == "annotations" for a in n.names) for n in tree.body)
    in_annotation = _annotation_nodes(tree) if postponed else set()
    caught_type_error = {id(n) for node in ast.walk(tree) if isinstance(node, ast.Try)
                         and any(isinstance(h.type, ast.Name) and h.type.id == "TypeError" for h in node.handlers)
                         for stmt in node.body for n in ast.walk(stmt)}
    interop_checked = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and any(isinstance(t, ast.Attribute) and t.attr == "get_num_interop_threads"
                               for t in ast.walk(node.test))
                       for stmt in node.body for n in ast.walk(stmt)}
    found = _numpy_problems(tree)
    for node in ast.walk(tree):
        if id(node) in in_annotation:
            continue
        if isinstance(node, ast.Call):
            keywords = {k.arg for k in node.keywords}
            if isinstance(node.func, ast.Name) and node.func.id == "zip" and "strict" in keywords:
                found.append(f"{node.lineno}: zip(strict=) needs Python 3.10")
            if "weights_only" in keywords and id(node) not in caught_type_error:
                found.append(f"{node.lineno}: torch.load(weights_only=) needs torch 1.13 (catch its TypeError)")
            if (isinstance(node.func, ast.Attribute) and node.func.attr == "set_num_interop_threads"
                    and id(node) not in interop_checked):
                found.append(f"{node.lineno}: a second set_num_interop_threads() in a process aborts it on torch < 2.1 "
                             "(call it only where torch.get_num_interop_threads() differs)")
            if isinstance(node.func, ast.Attribute) and node.func.attr in NEWER_METHODS:
                found.append(f"{node.lineno}: {node.func.attr}() needs Python {NEWER_METHODS[node.func.attr]}")
            if keywords & {"slots", "kw_only"}:
                found.append(f"{node.lineno}: dataclass(slots=, kw_only=) needs Python 3.10")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            found += [f"{node.lineno}: {name} needs Python {NEWER_MODULES[name.split('.')[0]]}" for name in names
                      if name.split(".")[0] in NEWER_MODULES]
            if isinstance(node, ast.ImportFrom) and node.module in ("functools", "itertools"):
                found += [f"{node.lineno}: {node.module}.{a.name} needs Python {NEWER_METHODS[a.name]}"
                          for a in node.names if a.name in NEWER_METHODS]
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in GENERICS:
            found.append(f"{node.lineno}: {node.value.id}[...] evaluated at run time needs Python 3.9")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and any(
                isinstance(side, ast.Constant) and side.value is None for side in (node.left, node.right)):
            found.append(f"{node.lineno}: X | None evaluated at run time needs Python 3.10")
    return found


@pytest.mark.parametrize("path", _owned(), ids=lambda p: p.relative_to(REPO).as_posix()
                         if p.is_relative_to(REPO) else p.name)
def test_package_code_runs_on_python_38_numpy_119_and_torch_18(path):
    assert problems_for_py38(path) == []


def test_the_check_sees_what_38_cannot_run(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\ndef f(a: list[int]) -> dict[str, int] | None:\n"
                   "    x = list[int]\n    for p, q in zip(a, a, strict=True):\n        pass\n"
                   "    torch.load('x', weights_only=True)\n    if (n := 1):\n        pass\n"
                   "    return 'ab'.removeprefix('a')\n", encoding="utf-8")
    found = problems_for_py38(bad)
    assert found == [] or "grammar" not in found[0]  # walrus is 3.8 grammar
    assert {line.split(":")[0] for line in found} == {"3", "4", "5", "7", "10"}
    bad.write_text("import tomllib\nfrom functools import cache\n(5).bit_count()\n", encoding="utf-8")
    assert [line.split(":")[0] for line in problems_for_py38(bad)] == ["1", "2", "3"]
    bad.write_text("match 1:\n    case 1:\n        pass\n", encoding="utf-8")
    assert "not Python 3.8 grammar" in problems_for_py38(bad)[0]
    bad.write_text("import torch\ntry:\n    torch.set_num_interop_threads(1)\nexcept RuntimeError:\n    pass\n",
                   encoding="utf-8")
    assert [line.split(":")[0] for line in problems_for_py38(bad)] == ["3"]
    good = tmp_path / "good.py"
    good.write_text("from __future__ import annotations\nimport torch\n\ndef f(a: list[int]) -> dict | None:\n"
                    "    try:\n        return torch.load('x', weights_only=True)\n    except TypeError:\n"
                    "        return torch.load('x')\n\n\nif torch.get_num_interop_threads() != 1:\n"
                    "    torch.set_num_interop_threads(1)\n", encoding="utf-8")
    assert problems_for_py38(good) == []


def test_the_gorge_copies_are_checked():
    names = {p.relative_to(REPO).as_posix() for p in _owned()}
    assert {"sb3_realm/games/gorge/features.py", "sb3_realm/games/gorge/memory.py",
            "sb3_realm/games/gorge/planner.py", "sb3_realm/games/realm/features.py"} <= names


def test_the_check_sees_what_numpy_119_lacks(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\nfrom numpy.lib.stride_tricks import sliding_window_view\n"
                   "import numpy.typing\n"
                   "v = np.lib.stride_tricks.sliding_window_view(np.zeros((3, 3)), (2, 2))\n"
                   "m = np.mean(v, where=v > 0)\nc = np.concatenate([v, v], dtype=np.float32)\n"
                   "r = np.random.default_rng(0).permuted(v)\nk = np.argmax(v, keepdims=True)\n", encoding="utf-8")
    assert sorted({int(line.split(":")[0]) for line in problems_for_py38(bad)}) == [2, 3, 4, 5, 6, 7, 8]
    good = tmp_path / "good.py"
    good.write_text("import numpy as np\nimport torch\n\n"
                    "v = np.lib.stride_tricks.as_strided(np.zeros(4), (2, 2), (8, 8))\n"
                    "m = np.mean(v, axis=0)\nt = torch.zeros(2).long()\nx = v.astype(np.float32)\n"
                    "b = np.unpackbits(np.zeros(1, dtype=np.uint8), count=3, bitorder='little')\n",
                    encoding="utf-8")
    assert problems_for_py38(good) == []
