"""The competition side of a submission, installed as ``sb3_realm.submission`` (its source is the repository's
top-level ``submission/`` folder): templates of the 2024 agent layout (``kaiwu2024/``), a test-only stand-in for the
platform's ``kaiwu_agent`` modules (``platform_stub/``, never copied into a submission) and the harness that plays a
built submission in a process where sb3_realm, SB3 and gymnasium cannot be imported (``harness.py``).

Everything here ships as package data, found with :mod:`importlib.resources`; the templates import only torch,
numpy, the standard library and ``kaiwu_agent``, and this module imports nothing of sb3_realm."""

from importlib import resources
from pathlib import Path

# The package's own folder. The templates are copied with shutil and the harness runs as a script, so they must be
# real files: true of every install (wheel, editable, source tree), never of a zip import.
_FILES = resources.files(__name__)
TEMPLATES = {"kaiwu2024": Path(str(_FILES / "kaiwu2024"))}
PLATFORM_STUB = Path(str(_FILES / "platform_stub"))
HARNESS = Path(str(_FILES / "harness.py"))
BLOCKED_MODULES = ("sb3_realm", "stable_baselines3", "sb3_contrib", "gymnasium", "gym")

__all__ = ["TEMPLATES", "PLATFORM_STUB", "HARNESS", "BLOCKED_MODULES"]
