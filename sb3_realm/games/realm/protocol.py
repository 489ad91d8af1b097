"""The platform's value types that are not plain records: the flat ``repeated`` map fields and the score object.

Self-contained (numpy and the standard library only, no package imports): the guarded process of
``build-submission --check`` loads this file by path to hand a submission the same types the simulator hands to
competition code, without importing sb3_realm.

- :class:`RepeatedScalars`: a read-only flat sequence that behaves like a protobuf ``repeated int32`` /
  ``repeated float`` field and no more: ``len``, indexing (a Python scalar), slicing (a list), iteration, ``list()``,
  ``in``, ``index``, ``count``, ``==`` with a list or another repeated field, and zero-copy ``np.asarray``. It has no
  numpy attributes (``.shape``, ``.reshape``): code that would fail on the platform fails here too.
- :class:`ScoreInfo`: the ``score`` that ``env.step`` returns (the game's rules, docs/game.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["RepeatedScalars", "ScoreInfo"]


class RepeatedScalars(Sequence):
    """A protobuf-like repeated scalar field over a read-only 1-D numpy array (never copied on the way in).

    :param values: the values, 1-D (ints for ``repeated int32``, floats for ``repeated float``).
    """

    __slots__ = ("_values",)

    def __init__(self, values: np.ndarray) -> None:
        values = np.asarray(values)
        if values.ndim != 1:
            raise ValueError(f"a repeated field is flat (1-D); got an array of shape {values.shape}")
        view = values.view()
        view.flags.writeable = False
        self._values = view

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._values[index].tolist()  # protobuf returns a plain list for a slice
        return self._values[index].item()

    def __iter__(self):
        return iter(self._values.tolist())

    def __contains__(self, value) -> bool:
        return value in self._values.tolist()

    def __eq__(self, other) -> bool:
        if isinstance(other, RepeatedScalars):
            return self._values.tolist() == other._values.tolist()
        if isinstance(other, list):
            return self._values.tolist() == other
        return NotImplemented

    # mutable on the platform, so unhashable, like protobuf's containers (typeshed's list does the same)
    __hash__ = None  # type: ignore[assignment]  # object.__hash__ is a method; None is how a class opts out

    def __repr__(self) -> str:
        return repr(self._values.tolist())

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy:
            return np.array(self._values, dtype=dtype, copy=True)
        if dtype is None or np.dtype(dtype) == self._values.dtype:
            return self._values
        if copy is False:
            raise ValueError(f"cannot convert a repeated field of {self._values.dtype} to {np.dtype(dtype)} "
                             "without a copy")
        return self._values.astype(dtype)

    def __reduce__(self):
        return (RepeatedScalars, (np.array(self._values),))


@dataclass
class ScoreInfo:
    """The ``score`` returned by ``env.step``.

    :param score: the treasure score so far: +100 at the step of each pickup (reaching the end adds nothing [A]).
    :param total_score: [A] ``score`` until the end is reached; from that step on, the leaderboard score of the game
        (``150 + 100 * treasures + 0.2 * (max_step - steps)``), which includes the treasures.
    :param treasure_count: treasures collected so far.
    :param buff_count: buff pickups so far.
    :param talent_count: flashes used so far.
    """

    score: float
    total_score: float
    treasure_count: int
    buff_count: int
    talent_count: int
