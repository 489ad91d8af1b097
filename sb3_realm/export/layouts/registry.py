"""The platform layouts by name (as :mod:`sb3_realm.games` maps a name to a game): :func:`register` adds one,
:func:`unregister` removes one, :func:`get` and :func:`names` read them. A layout a game brings itself
(:attr:`sb3_realm.games.Submission.layout_folders`) is found through its game: :func:`get` makes it from its folder
on first use, the class its ``layout.toml`` names (``class = "package.module:Class"``)."""

from __future__ import annotations

import importlib
from pathlib import Path

from ... import games
from ...submission import LAYOUTS
from .base import Layout

__all__ = ["get", "names", "register", "unregister"]

_LAYOUTS: dict[str, Layout] = {}
_BROUGHT: dict[tuple[str, Path], Layout] = {}  # the layouts games bring, by name and folder, made on first use


def register(layout: Layout) -> Layout:
    """Add ``layout`` under its name (a ``ValueError`` when another layout already has that name); returns it."""
    if not isinstance(layout, Layout):
        raise TypeError(f"{layout!r} is not a Layout; register an instance of a subclass of "
                        "sb3_realm.export.layouts.Layout")
    known = _LAYOUTS.get(layout.name)
    if known is not None and known is not layout:
        raise ValueError(f"a layout named {layout.name!r} is already registered ({known!r}); give the new one "
                         "another name")
    _LAYOUTS[layout.name] = layout
    return layout


def unregister(name: str) -> Layout:
    """Remove the layout ``name`` (a ``ValueError`` when there is none); returns it."""
    layout = get(name)
    del _LAYOUTS[name]
    return layout


def get(name: str) -> Layout:
    """The layout ``name``: a registered one, else one a registered game brings; a ``ValueError`` names the layouts
    there are, or what is wrong with the class a game's layout names."""
    if name in _LAYOUTS:
        return _LAYOUTS[name]
    if name in LAYOUTS or not isinstance(name, str):  # a shipped layout taken out of the registry stays out
        raise ValueError(f"layout {name!r} is unknown; choose one of {names()}")
    folder = games.layout_folder(name)  # the ValueError of an unknown name lists the games' layouts too
    key = (name, folder)
    if key not in _BROUGHT:
        _BROUGHT[key] = _brought(name, folder, games.layout_data(name))
    return _BROUGHT[key]


def _brought(name: str, folder: Path, data: dict) -> Layout:
    """The layout ``name`` a game brings in ``folder``, made from the class its ``layout.toml`` (``data``) names."""
    toml = folder / "layout.toml"
    path = data.get("class")
    if not isinstance(path, str) or ":" not in path:
        raise ValueError(f"{str(toml)!r} names no class (class = {path!r}); add class = \"package.module:Class\", "
                         "the import path of its subclass of sb3_realm.export.layouts.Layout")
    module, _, attr = path.partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{str(toml)!r} names the class {path!r}, which does not import ({type(exc).__name__}: "
                         f"{exc}); correct class = in it, or install the game's package") from None
    if not (isinstance(cls, type) and issubclass(cls, Layout)):
        raise ValueError(f"{str(toml)!r} names {path!r}, which is not a subclass of sb3_realm.export.layouts.Layout; "
                         "name the layout's class there")
    return cls(name, folder, data)


def names() -> list[str]:
    """The names of the registered layouts, sorted (the layouts games bring are their games':
    :attr:`sb3_realm.games.Submission.layouts`)."""
    return sorted(_LAYOUTS)
