"""A toy third game, registered by a test alone (tests/test_toy_game.py): a 5 x 5 grid with walls, two treasures and
an exit (:mod:`.game`), its numpy-only features (:mod:`.features`) and its GameSpec (:mod:`.spec`)."""

from .spec import TOY_SPEC

__all__ = ["TOY_SPEC"]
