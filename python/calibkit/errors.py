"""The exceptions calibkit raises on bad input.

Every class subclasses the built-in exception a caller would expect (``ValueError`` for bad
values, ``TypeError`` for bad types, both for a keyword of the wrong type, ``FloatingPointError``
for a fit that left the finite range), so ``except ValueError`` keeps working, while a caller
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
    "ParameterTypeError",
    "InvalidFlagError",
    "InvalidScoresError",
    "NumericalError",
    "TopLabelInputError",
    "InputChangedError",
    "InternalError",
]


class CalibkitError(Exception):
    """Base class of every error calibkit raises about its input."""


class InvalidProbabilitiesError(CalibkitError, ValueError):
    """``probs`` holds NaN/inf, values outside [0, 1], or rows that do not sum to 1."""


class InvalidScoresError(CalibkitError, ValueError):
    """Logits or other unnormalised scores hold NaN or infinite values."""


class InvalidLabelsError(CalibkitError, ValueError):
    """``labels`` are not integer class indices in ``[0, K)``."""


class ShapeMismatchError(CalibkitError, ValueError):
    """Arrays have the wrong number of dimensions, or lengths that do not agree, or are empty."""


class InvalidParameterError(CalibkitError, ValueError):
    """A keyword argument (binning, norm, threshold, num_bins, ...) has an invalid value."""


class InputTypeError(CalibkitError, TypeError):
    """An argument has a type calibkit cannot use (strings, objects, complex numbers, ...)."""


class ParameterTypeError(InvalidParameterError, InputTypeError):
    """A keyword argument has the wrong type (a string or float bin count, a bool threshold).

    Both an :class:`InvalidParameterError` (``ValueError``) and an :class:`InputTypeError`
    (``TypeError``), so either ``except`` clause catches it.
    """


class InvalidFlagError(ParameterTypeError):
    """A flag (``max_prob``, ``class_conditional``, ...) is not ``True``/``False``.

    ``"False"`` or ``0`` is refused rather than read through ``bool()``.
    """


class NumericalError(CalibkitError, FloatingPointError):
    """A fit or an estimator left the finite floating-point range (non-finite parameters or
    loss, or a smoothed estimate's grids overflowing under huge sample weights).

    A ``FloatingPointError`` too, so existing ``except FloatingPointError`` clauses still work.
    """


class TopLabelInputError(InvalidParameterError):
    """Top-label input (``confidence=``, ``correct=``) given to a metric that needs every class's
    probability (``max_prob=False``: SCE, ACE, TACE), or to a class-conditional metric without
    ``predicted=`` and ``num_classes=``."""


class InputChangedError(CalibkitError, ValueError):
    """An input array was modified (by another thread) while calibkit was reading it.

    Large inputs are read with the GIL released, so another Python thread can write to them
    during the call; the kernels notice when two reads of the data disagree. Do not modify
    the arrays while a calibkit call runs: pass a copy (``probs.copy()``) if another thread
    keeps writing to them.
    """


class InternalError(CalibkitError, RuntimeError):
    """A bug in calibkit's native code (an internal check failed): please report it.

    The native kernels never let a Rust panic reach Python; if one happens anyway it becomes
    this error, with the internal message attached, and nothing is printed on stderr.
    """


class FewSamplesWarning(UserWarning):
    """Bins hold too few predictions for a calibration error to be told apart from noise.

    Raised (as a warning) by ``num_bins="auto"`` when the kept predictions per non-empty bin
    average fewer than 30; see ``docs/trust.md``.
    """
