"""The exceptions calibkit raises on bad input.

Every class subclasses the built-in exception a caller would expect (``ValueError`` for bad
values, ``TypeError`` for bad types), so ``except ValueError`` keeps working, while a caller
who wants to tell the cases apart can catch the specific class. The Rust kernels raise these
same classes (the glue looks them up here), so an error is the same whether Python or Rust
found it.
"""

from __future__ import annotations

__all__ = [
    "CalibkitError",
    "InvalidProbabilitiesError",
    "InvalidLabelsError",
    "ShapeMismatchError",
    "InvalidParameterError",
    "InputTypeError",
]


class CalibkitError(Exception):
    """Base class of every error calibkit raises about its input."""


class InvalidProbabilitiesError(CalibkitError, ValueError):
    """``probs`` holds NaN/inf, values outside [0, 1], or rows that do not sum to 1."""


class InvalidLabelsError(CalibkitError, ValueError):
    """``labels`` are not integer class indices in ``[0, K)``."""


class ShapeMismatchError(CalibkitError, ValueError):
    """Arrays have the wrong number of dimensions, or lengths that do not agree, or are empty."""


class InvalidParameterError(CalibkitError, ValueError):
    """A keyword argument (binning, norm, threshold, num_bins, ...) has an invalid value."""


class InputTypeError(CalibkitError, TypeError):
    """An argument has a type calibkit cannot use (strings, objects, complex numbers, ...)."""


class FewSamplesWarning(UserWarning):
    """Bins hold too few predictions for a calibration error to be told apart from noise.

    Raised (as a warning) by ``num_bins="auto"`` when the kept predictions per non-empty bin
    average fewer than 30; see ``docs/trust.md``.
    """
