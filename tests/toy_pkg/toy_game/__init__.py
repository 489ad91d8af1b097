"""A toy third game in a package of its own (``tests/toy_pkg``, whose ``pyproject.toml`` declares it under the entry
point group ``sb3_realm.games``): a 5 x 5 grid with walls, two treasures and an exit (:mod:`.game`), its numpy-only
features (:mod:`.features`) and its GameSpec (:mod:`.spec`, import path ``toy_game.spec:TOY_SPEC``)."""

from .spec import TOY_SPEC

__all__ = ["TOY_SPEC"]
