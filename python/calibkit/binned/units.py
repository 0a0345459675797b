"""Exact score sums of a table, as whole grid units (the kernels' cell-sum rule).

Every kernel adds each kept score to its cell as ``round(score * 2**50)`` units (ties to
even) and keeps the exact integer sum, so a cell's sum does not depend on the order of the
rows, on the threads, or on how the rows were cut into batches or chunks; ``sum_score`` is that
sum rounded once. :class:`ScoreUnits` carries the exact sums of a table between calls, so that
tables built apart (``Accumulator`` batches, ``calibkit.dask`` chunks) add exactly and give
the bits of one call on all the rows. The arithmetic is the Rust core's
(``_native.units_add``, ``_native.units_value``); see docs/spec.md, "Cell sums".
"""

from __future__ import annotations

import numpy as np

from .. import _native
from ..errors import ShapeMismatchError

__all__ = ["ScoreUnits", "exact_sums"]


class ScoreUnits:
    """A table's exact score sums: an int64 array of shape (G, nb, 2), each cell's i128 sum of
    units as its [high, low] words.

    ``a + b`` adds exactly; adding a float array (a table without units) gives float sums.
    ``np.asarray(u)`` is ``u.value()``, the float64 sums the kernels report as ``sum_score``,
    so a ``ScoreUnits`` stands in for a ``sum_score`` array wherever one is read.
    """

    __slots__ = ("words",)
    __array_ufunc__ = None  # ndarray + ScoreUnits defers to ScoreUnits.__radd__

    def __init__(self, words: np.ndarray):
        self.words = words

    @classmethod
    def zeros(cls, shape: tuple) -> ScoreUnits:
        """The sums of an empty table of shape (G, nb)."""
        return cls(np.zeros((*shape, 2), np.int64))

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)

    def copy(self) -> ScoreUnits:
        return ScoreUnits(self.words.copy())

    def value(self) -> np.ndarray:
        """The float64 sums, shape (G, nb): each exact sum rounded once."""
        return _native.units_value(self.words)

    def __array__(self, dtype=None, copy=None):
        v = self.value()
        return v if dtype is None else v.astype(dtype)

    @property
    def shape(self) -> tuple:
        return self.words.shape[:2]

    def __add__(self, other):
        if isinstance(other, ScoreUnits):
            return ScoreUnits(_native.units_add(self.words, other.words))
        o = np.asarray(other, dtype=np.float64)
        if o.shape != self.shape:  # tables add cell by cell, never by broadcasting
            raise ShapeMismatchError(f"score sums of shape {self.shape} cannot be added to an "
                                     f"array of shape {o.shape}")
        return self.value() + o

    __radd__ = __add__

    def __eq__(self, other) -> bool:
        return isinstance(other, ScoreUnits) and np.array_equal(self.words, other.words)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return (ScoreUnits, (self.words,))

    def __repr__(self) -> str:
        return f"ScoreUnits(value={self.value().tolist()!r})"


def exact_sums(sum_score: np.ndarray, units: ScoreUnits | None) -> ScoreUnits | np.ndarray:
    """A table's score sums to add to others': exact (``units``) where the kernel gave them,
    else the float ``sum_score``."""
    return sum_score if units is None else units
