"""The platform layouts by name (as :mod:`sb3_realm.games` maps a name to a game): :func:`register` adds one,
:func:`unregister` removes one, :func:`get` and :func:`names` read them."""

from __future__ import annotations

from .base import Layout

__all__ = ["get", "names", "register", "unregister"]

_LAYOUTS: dict[str, Layout] = {}


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
    """The layout ``name``; a ``ValueError`` names the layouts there are."""
    if name not in _LAYOUTS:
        raise ValueError(f"layout {name!r} is unknown; choose one of {names()}")
    return _LAYOUTS[name]


def names() -> list[str]:
    """The names of the registered layouts, sorted."""
    return sorted(_LAYOUTS)
