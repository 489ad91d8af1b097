"""The platform layouts build-submission writes, by name: one module per layout, each a :class:`Layout` that owns its
conf edits, its weights folder, what its zip holds, its check and its defaults, and its next-steps text; the builder,
the checker and the code-package reader ask the layout and never name one.

A new layout is a folder with a ``layout.toml`` and its templates in :mod:`sb3_realm.submission`, a subclass of
:class:`Layout` here, and one :func:`register` call (a layout registered from anywhere else, a test for one, is
built the same way). A game names the layouts its models go into
(:attr:`sb3_realm.games.GameSpec.submission.layouts`)."""

from __future__ import annotations

from .base import Layout
from .gorge15 import LAYOUT as GORGE15
from .kaiwu2024 import LAYOUT as KAIWU2024
from .registry import get, names, register, unregister

__all__ = ["Layout", "get", "names", "register", "unregister"]

register(KAIWU2024)
register(GORGE15)
