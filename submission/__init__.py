"""The competition side of a submission, installed as ``sb3_realm.submission`` (its source is the repository's
top-level ``submission/`` folder): one folder per platform layout (``kaiwu2024/``: its ``layout.toml`` and the
algorithm folder's templates), a test-only stand-in for the platform's ``kaiwu_agent`` modules and framework
(``platform_stub/``, never copied into a submission) and the harness that runs a built submission through that
stand-in in a process where sb3_realm, SB3 and gymnasium cannot be imported (``harness.py``).

A new layout is a new folder with a ``layout.toml`` here and its module in ``sb3_realm.export.layouts`` (what the
builder does for it); the builder itself does not change. Everything here ships as
package data, found with :mod:`importlib.resources`; the templates import only torch, numpy, the standard library
and ``kaiwu_agent``, and this module imports nothing of sb3_realm."""

import tomllib
from importlib import resources
from pathlib import Path

# The package's own folder. The templates are copied with shutil and the harness runs as a script, so they must be
# real files: true of every install (wheel, editable, source tree), never of a zip import.
_FILES = Path(str(resources.files(__name__)))
LAYOUTS = {path.parent.name: path.parent for path in sorted(_FILES.glob("*/layout.toml"))}
PLATFORM_STUB = _FILES / "platform_stub"
HARNESS = _FILES / "harness.py"
COMMON = _FILES / "common"  # files every layout's algorithm folder shares (layout.toml's common)
BLOCKED_MODULES = ("sb3_realm", "stable_baselines3", "sb3_contrib", "gymnasium", "gym")


def layout_spec(name):
    """The ``layout.toml`` of the layout ``name`` as a dict (``KeyError`` for an unknown layout)."""
    return tomllib.loads((LAYOUTS[name] / "layout.toml").read_text(encoding="utf-8"))


__all__ = ["BLOCKED_MODULES", "COMMON", "HARNESS", "LAYOUTS", "PLATFORM_STUB", "layout_spec"]
