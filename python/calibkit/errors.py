"""The exceptions calibkit raises on bad input.

Every class subclasses the built-in exception a caller would expect (``ValueError`` for bad
values, ``TypeError`` for bad types, both for a keyword of the wrong type, ``FloatingPointError``
for a fit that left the finite range), so ``except ValueError`` keeps working, while a caller
who wants to tell the cases apart can catch the specific class. The Rust kernels raise these
same classes (the glue looks them up here), so an error is the same whether Python or Rust
found it.

Every exception a public calibkit function raises is a :class:`CalibkitError`, so one
``except calibkit.CalibkitError`` catches them all; the few that are not about bad input keep
the built-in base a caller expects (``ImportError`` for a missing optional dependency,
``RuntimeError`` for input that changed between the passes of ``calibkit.dask``, ``KeyError``
for a name looked up in a result, ``AttributeError`` and ``ValueError`` for an estimator used
before ``fit``). This module holds classes only, no logic, so that even
:mod:`calibkit.reference` (the independent oracle, which imports nothing else of calibkit) can
raise them.
"""

from __future__ import annotations

__all__ = [
    "IncompatibleAccumulatorError",
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
    "NotFittedError",
    "MissingDependencyError",
    "MemoryBudgetError",
    "SelectionError",
    "UnknownNameError",
    "MethodFailedError",
    "FewSamplesWarning",
    "BinaryReadingWarning",
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


class IncompatibleAccumulatorError(InvalidParameterError):
    """Two accumulators cannot be merged (different metrics, bin counts, mode, K or dtype)."""


class InternalError(CalibkitError, RuntimeError):
    """A bug in calibkit's native code (an internal check failed): please report it.

    The native kernels never let a Rust panic reach Python; if one happens anyway it becomes
    this error, with the internal message attached, and nothing is printed on stderr.
    """


class NotFittedError(CalibkitError, ValueError, AttributeError):
    """A recalibrator's ``predict_proba``/``transform``/``score`` was called before ``fit``.

    A ``ValueError`` and an ``AttributeError``, like scikit-learn's ``NotFittedError``. When
    scikit-learn is imported (and only then: calibkit never imports it itself), the raised
    error is also an instance of ``sklearn.exceptions.NotFittedError``, so scikit-learn's own
    ``except NotFittedError`` clauses catch it too; this class itself does not subclass
    scikit-learn's, which would mean importing scikit-learn with calibkit.
    """


class MemoryBudgetError(InvalidParameterError, MemoryError):
    """An argument (bin counts, a bandwidth, a resample count, a sketch size) asks for more
    memory than calibkit's budget (``calibkit.memory_budget()``, 1 GiB unless
    ``calibkit.set_memory_budget`` or ``CALIBKIT_MEMORY_BUDGET`` says otherwise). Raised before
    anything is allocated; the message names the argument and the size. A ``ValueError`` and a
    ``MemoryError`` too."""


class MissingDependencyError(CalibkitError, ImportError):
    """An optional dependency (pandas, matplotlib, dask, datasketches) is not installed; the
    message says which extra to install. An ``ImportError`` too."""


class SelectionError(CalibkitError, RuntimeError):
    """``calibkit.dask``: the chunks did not give the same data on every pass (the input must
    be deterministic, e.g. ``persist()`` the arrays). A ``RuntimeError`` too."""


class UnknownNameError(CalibkitError, KeyError):
    """A name looked up in a result (a model of a study) is not there. A ``KeyError`` too."""

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class MethodFailedError(CalibkitError, RuntimeError):
    """A recalibration method of a study failed with an error that is not about its input
    (the original exception is the ``__cause__``). A ``RuntimeError`` too."""


class FewSamplesWarning(UserWarning):
    """Bins hold too few predictions for a calibration error to be told apart from noise.

    Raised (as a warning) by ``num_bins="auto"`` when the kept predictions per non-empty bin
    average fewer than 30; see ``docs/trust.md``.
    """


class BinaryReadingWarning(UserWarning):
    """A call whose arguments look like top-label pairs ``(correct, confidence)`` given in
    ``(labels, probs)``'s places: boolean labels and a 1-D ``probs`` with values below 0.5,
    where the two readings differ. A 1-D ``probs`` is the binary P(y=1), scored as the top label
    of ``[1 - p, p]``; pass ``confidence=, correct=`` for pairs, or use :mod:`calibkit.binary`
    for the calibration of P(y=1) itself. See ``docs/binary.md``.
    """
