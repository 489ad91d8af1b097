"""The competition side of a submission: templates of the 2024 agent layout (``kaiwu2024/``), a test-only stand-in
for the platform's ``kaiwu_agent`` modules (``platform_stub/``, never copied into a submission) and the harness
that plays a built submission in a process where sb3_realm, SB3 and gymnasium cannot be imported (``harness.py``).
Everything here ships as package data; the templates import only torch, numpy, the standard library and
``kaiwu_agent``."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
TEMPLATES = {"kaiwu2024": HERE / "kaiwu2024"}
PLATFORM_STUB = HERE / "platform_stub"
HARNESS = HERE / "harness.py"
BLOCKED_MODULES = ("sb3_realm", "stable_baselines3", "sb3_contrib", "gymnasium", "gym")

__all__ = ["TEMPLATES", "PLATFORM_STUB", "HARNESS", "BLOCKED_MODULES"]
