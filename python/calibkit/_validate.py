"""Every input check of the metric functions and its message, in one place.

Cheap structural checks of the arrays (types, dimensions, lengths) run here (the keyword
arguments are checked by :mod:`calibkit._params`), before crossing
into Rust; checks that must read every value (finite, within [0, 1], rows summing to 1, labels
in range) run inside the Rust pass that reads the data anyway, and raise the same exception
classes (see :mod:`calibkit.errors`).

Accepted input, and what is copied:

* ``probs``: float32 or float64, shape (N, K); a 1-D array or an (N, 1) array is the binary
  probability of class 1 and becomes ``[1 - p, p]`` (a new array). float32 of either byte
  order is float32 (a big-endian array is byte-swapped first); other real dtypes (ints,
  float16, bool) are converted to float64. Non-contiguous or Fortran-ordered arrays are copied
  to C order; a C-contiguous float32/float64 array is used without a copy.
* ``labels``: integers of any width, or floats holding exact integer values (``3.0``), shape
  (N,) or (N, 1) (a column of class indices). Class names (strings) are refused with the
  ``numpy.unique`` call that maps them. ``f(probs, labels)`` (a float matrix first, integer
  labels second) is refused with a message saying labels come first. They are converted to
  int64 (a copy of N values unless already int64 and contiguous). Booleans are accepted as 0/1
  for binary problems.
* PyTorch / JAX / other tensors: see :mod:`calibkit._arraylike` (CPU tensors without a copy
  where the layout allows; a GPU tensor is copied to the host once).
"""

from __future__ import annotations

import numpy as np

from . import _native
from ._arraylike import dtype_kind, to_numpy

# The parameter half of the checks lives in calibkit._params; these names stay importable here.
from ._params import (
    BINNINGS,
    MAX_BINS,
    NORMS,
    RANGE_TOL,
    ROW_SUM_TOL,
    check_gce_params,
    check_weights,
    shown,
)
from .errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

__all__ = [
    "validate_inputs",
    "is_multilabel",
    "check_gce_params",
    "check_weights",
    "shown",
    "as_probs",
    "as_labels",
    "check_scores",
    "BINNINGS",
    "NORMS",
    "RANGE_TOL",
    "ROW_SUM_TOL",
    "MAX_BINS",
]


_FAST_PROBS = (np.dtype(np.float64), np.dtype(np.float32))
_INT64 = np.dtype(np.int64)


def float_dtype(dtype) -> np.dtype:
    """The float dtype calibkit computes in for input of ``dtype``: native-order float32 for
    float32 of either byte order, else float64 (ints, bools, float16, float64 of any order)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize == 4:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


# One message per error: the shape and type errors below are raised by validate_inputs and by
# the entry points that see arrays before it does (streaming's empty batches, calibkit.dask).


def empty_probs_error(name: str = "probs") -> ShapeMismatchError:
    return ShapeMismatchError(f"{name} is empty (0 rows); pass at least one prediction")


def no_columns_error(name: str = "probs") -> ShapeMismatchError:
    return ShapeMismatchError(f"{name} has 0 columns; it needs one column per class")


def probs_dtype_error(dtype, name: str = "probs") -> InputTypeError:
    return InputTypeError(
        f"{name} must hold real numbers, got dtype {dtype}; pass float32 or float64 probabilities"
    )


def probs_ndim_error(shape, name: str = "probs") -> ShapeMismatchError:
    return ShapeMismatchError(
        f"{name} must be 2-D (N samples, K classes) or 1-D binary P(y=1), got shape {shape}"
    )


def labels_ndim_error(shape, name: str = "labels") -> ShapeMismatchError:
    return ShapeMismatchError(
        f"{name} must be 1-D (one class index per row), got shape {shape}; "
        "for multilabel data pass an (N, K) 0/1 matrix to the functions that accept it"
    )


def length_mismatch_error(n_labels: int, n_rows: int, what: str = "probs",
                          name: str = "labels") -> ShapeMismatchError:
    return ShapeMismatchError(
        f"{name} has {n_labels} entries but {what} has {n_rows} rows; pass one label per row"
    )


def as_array(obj, name: str, what: str) -> np.ndarray:
    """``obj`` as a NumPy array (tensors and DLPack objects on the CPU included; see
    :func:`calibkit._arraylike.to_numpy`), or an :class:`InputTypeError` naming ``name``:
    ``None``, a string or bytes ("``name`` must be ``what``") and anything NumPy cannot convert
    (ragged lists and the like). The one conversion every array argument goes through."""
    if isinstance(obj, (str, bytes)) or obj is None:
        raise InputTypeError(f"{name} must be {what}, got {type(obj).__name__}")
    try:
        return to_numpy(obj, name)
    except InputTypeError:
        raise
    except Exception as exc:  # ragged lists and the like
        raise InputTypeError(f"{name} could not be converted to a NumPy array: {exc}") from exc


def as_probs(probs, name: str = "probs") -> np.ndarray:
    """``probs`` as a C-contiguous 2-D float32/float64 array (binary 1-D / (N, 1) expanded)."""
    p = as_array(probs, name, "an array of probabilities of shape (N, K)")
    if p.dtype.kind not in "fiub":
        raise probs_dtype_error(p.dtype, name)
    if p.dtype not in _FAST_PROBS:  # ints, bools, float16, non-native byte order
        p = p.astype(float_dtype(p.dtype))
    if p.ndim == 1 or (p.ndim == 2 and p.shape[1] == 1):
        q = p.reshape(-1)
        p = np.stack([1 - q, q], axis=1)
    elif p.ndim != 2:
        raise probs_ndim_error(p.shape, name)
    if p.shape[0] == 0:
        raise empty_probs_error(name)
    if p.shape[1] == 0:
        raise no_columns_error(name)
    return np.ascontiguousarray(p)


def as_labels(labels, name: str = "labels", num_classes: int | None = None) -> np.ndarray:
    """``labels`` as a contiguous 1-D int64 array. The range is checked by the kernel, or here
    with ``num_classes`` (for callers that run no metric kernel on them: every label must then
    be in ``[0, num_classes)``)."""
    y = as_array(labels, name, "an array of integer class indices")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]  # a column of class indices, as (N, 1) label arrays from data loaders often are
    if y.dtype.kind in "US" or (
        y.dtype.kind == "O" and y.size and isinstance(y.reshape(-1)[0], (str, bytes))
    ):
        raise InputTypeError(_string_labels_message(y, name))
    if y.ndim != 1:
        raise labels_ndim_error(y.shape, name)
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    elif y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise InvalidLabelsError(f"{name} contains NaN or infinite values; labels must be class indices")
        if not np.all(y == np.round(y)):
            bad = int(np.flatnonzero(y != np.round(y))[0])
            # the argument-order hint is for the metric functions' labels (the recalibrators
            # take fit(X, y))
            hint = (" (did you pass probabilities or scores as labels? Labels come first: "
                    "f(labels, probs))") if name == "labels" else ""
            raise InvalidLabelsError(
                f"{name}[{bad}] is {float(y[bad])!r}, not an integer: labels must be class "
                f"indices{hint}"
            )
    elif y.dtype == object and all(isinstance(v, (int, np.integer)) for v in y.tolist()):
        _check_int64(y, name)  # Python ints beyond uint64
        y = y.astype(np.int64)
    elif y.dtype.kind not in "iu":
        raise InputTypeError(f"{name} must hold integers, got dtype {y.dtype}")
    _check_int64(y, name)
    y = np.ascontiguousarray(y, dtype=np.int64)
    if num_classes is not None and y.size and (y.min() < 0 or y.max() >= num_classes):
        i = int(np.flatnonzero((y < 0) | (y >= num_classes))[0])
        raise InvalidLabelsError(
            f"label {int(y[i])} at row {i} is out of range: {name} must hold class indices in "
            f"[0, {num_classes}) for scores with {num_classes} classes"
        )
    return y


_INT64_LIMIT = 2**63


def _check_int64(y: np.ndarray, name: str) -> None:
    """Refuse integer-valued labels outside int64, naming the first one by its real value."""
    if y.size == 0 or y.dtype.kind == "i":
        return
    if y.dtype.kind == "u":
        bad = y > np.uint64(_INT64_LIMIT - 1)
    elif y.dtype.kind == "f":
        # a strong float64 scalar: compared in float64 (a Python float would be cast to
        # float16 labels' dtype and overflow, with a RuntimeWarning)
        bad = np.abs(y) >= np.float64(_INT64_LIMIT)
    else:
        bad = np.array([not -_INT64_LIMIT <= int(v) < _INT64_LIMIT for v in y.tolist()])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        v = y[i]
        shown = int(v) if y.dtype.kind != "f" else float(v)
        raise InvalidLabelsError(
            f"{name}[{i}] is {shown}, far outside the class indices [0, K) (K = the number of "
            "columns of probs): labels must be class indices"
        )


def check_scores(scores, kind: str = "probs", *, name: str = "probs", row_sums: bool = True,
                 fix: str | None = None) -> None:
    """The value checks of a score array, for the callers that run no metric kernel on it: the
    recalibrators, the diagnostics, multilabel input and the prediction-file reader.

    ``scores`` is a 2-D float array (as :func:`as_probs` returns), or 1-D for a binary P(y=1)
    or binary logit (checked as one column, without row sums). In order:

    * every value finite, else :class:`InvalidProbabilitiesError` saying how many are not and
      where the first is;
    * ``kind="probs"``: the metric functions' own checks, by the same Rust pass
      (``_native.check_values``), so that their tolerances and the way a row is summed are
      stated once, in ``rust/kernels/core/validate.rs``: values within [0, 1] up to
      ``RANGE_TOL`` and, with ``row_sums``, each row summing to 1 within ``ROW_SUM_TOL``. Its
      :class:`InvalidProbabilitiesError` names ``name`` in place of ``probs``, and ``fix``, when
      given, replaces the kernel's advice (which speaks of metric calls);
    * ``kind="logits"``: any finite value is a logit, but an (N, K >= 2) array that passes the
      probability checks is refused with :class:`InvalidParameterError` (probabilities
      declared as logits), ``fix`` saying what to do instead.
    """
    s = np.asarray(scores)
    if s.ndim == 1:
        s, row_sums = s.reshape(-1, 1), False
    finite = np.isfinite(s)
    if not finite.all():
        r, c = (int(i) for i in np.argwhere(~finite)[0])
        v = float(s[r, c])
        what = "NaN" if np.isnan(v) else ("inf" if v > 0 else "-inf")
        noun = "probabilities" if kind == "probs" else "scores"
        raise InvalidProbabilitiesError(
            f"{name} contains {int(s.size - np.count_nonzero(finite))} NaN/inf value(s) (first: "
            f"{what} at row {r}, column {c}): {noun} must be finite, not NaN or infinite; drop or "
            "repair those rows"
        )
    if kind == "logits" and s.shape[1] < 2:
        return
    s = np.ascontiguousarray(s, dtype=s.dtype if s.dtype in _FAST_PROBS else float_dtype(s.dtype))
    try:
        _native.check_values(np.zeros(s.shape[0], dtype=np.int64), s, bool(row_sums))
    except InvalidProbabilitiesError as exc:
        if kind == "logits":
            return
        msg = str(exc)
        if name != "probs":
            msg = msg.replace("probs[", f"{name}[", 1).replace(" of probs ", f" of {name} ", 1)
        if fix is not None:
            head, sep, _ = msg.rpartition("; ")
            msg = f"{head if sep else msg}; {fix}"
        raise InvalidProbabilitiesError(msg) from None
    if kind == "logits":
        raise InvalidParameterError(
            f"{name} looks like probabilities (every value in [0, 1], every row summing to 1) but "
            f"was declared as logits; {fix or 'pass them as probabilities'}"
        )


def surely_valid(lo: float, hi: float, max_row_deviation: float | None = None,
                 num_classes: int = 1) -> bool:
    """Whether scores whose extremes are ``lo`` and ``hi`` (and whose rows of ``num_classes``
    values sum to 1 within ``max_row_deviation``) surely pass the kernels' value rules.

    For callers that compute the extremes elsewhere (``calibkit.torch`` on the device): a True
    answer means the engine's own pass would accept the rows; False means "run the engine's
    check for its error" (it may still pass). NaN fails every comparison. The row-sum bound keeps
    the kernel's ``row_sum_surely_ok`` margin for float64 sums of ``num_classes`` values.
    """
    if not (lo >= -RANGE_TOL and hi <= 1.0 + RANGE_TOL):
        return False
    if max_row_deviation is None:
        return True
    eps = float(np.finfo(np.float64).eps)
    margin = 2.0 * num_classes * eps * (1.0 + ROW_SUM_TOL + 2.0 * num_classes * RANGE_TOL)
    return bool(max_row_deviation <= ROW_SUM_TOL - margin)


def _string_labels_message(y: np.ndarray, name: str) -> str:
    """The message for labels given as class names (strings or objects)."""
    flat = y.reshape(-1)
    example = repr(flat[0].item() if hasattr(flat[0], "item") else flat[0]) if flat.size else "''"
    return (
        f"{name} hold class names (dtype {y.dtype}, e.g. {example}), but {name} must hold "
        "integers: class indices 0..K-1 numbering the columns of probs. Map the names first, e.g. "
        "classes, y = numpy.unique(names, return_inverse=True) (classes in sorted order: check "
        "that it is the column order of probs)"
    )


def _shape(a) -> tuple[int, ...] | None:
    """Shape of an array-like without converting arrays and tensors (None when unreadable)."""
    shape = getattr(a, "shape", None)
    if shape is None and not isinstance(a, (list, tuple)):
        return None
    try:
        return tuple(int(d) for d in (shape if shape is not None else np.shape(a)))
    except (TypeError, ValueError):
        return None


def _kind(a) -> str:
    kind = dtype_kind(a)  # tensors' kinds without a conversion (a GPU tensor is not copied)
    if kind is not None:
        return kind
    try:
        return to_numpy(a, "input").dtype.kind
    except Exception:
        return "O"


def _check_not_swapped(labels, probs) -> None:
    """Refuse ``f(probs, labels)``: a float matrix of K > 1 columns where labels go and a 1-D
    array of class indices (integers, booleans or whole-number floats) of the same length where
    probs go."""
    a, b = _shape(labels), _shape(probs)
    if a is None or b is None or len(a) != 2 or len(b) != 1 or a[0] != b[0] or a[1] < 2:
        return
    if _kind(labels) != "f":
        return
    b_kind = _kind(probs)
    if b_kind == "f":
        v = to_numpy(probs, "probs")
        if not (np.all(np.isfinite(v)) and np.all(v == np.round(v))):
            return
    elif b_kind not in "iub":
        return
    raise ShapeMismatchError(
        f"the arguments look swapped: labels has shape {a} (floats) and probs has shape {b} "
        "(class indices). Labels come first, as in scikit-learn: call f(labels, probs), e.g. "
        "calibkit.ece(labels, probs)"
    )


def warn_binary_reading(labels, probs) -> None:
    """Warn (:class:`~calibkit.errors.BinaryReadingWarning`) when ``f(correct, confidence)``
    looks likely: boolean ``labels`` (a ``pred == y`` array; class indices are integers) and a
    1-D ``probs`` with a value below 0.5, where reading it as P(y=1) (top label of
    ``[1 - p, p]``) and as a confidence differ. Costs a dtype test, and a ``min`` only then."""
    a, b = _shape(labels), _shape(probs)
    if a is None or b is None or len(a) != 1 or len(b) != 1 or _kind(labels) != "b":
        return
    if _kind(probs) != "f" or not float(np.min(to_numpy(probs, "probs"), initial=1.0)) < 0.5:
        return
    import os
    import sys
    import types
    import warnings

    from .errors import BinaryReadingWarning

    here, level = os.path.dirname(__file__), 1
    frame: types.FrameType | None = sys._getframe(0)
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1  # point at the caller's line, not calibkit's
    warnings.warn(
        "labels is boolean and probs is 1-D: calibkit reads them as binary labels (True = "
        "class 1) and P(y = 1), and scores the top label of [1 - p, p] (the paper's reading). "
        "If they are (correct, confidence) pairs, call f(confidence=..., correct=...); for the "
        "calibration of P(y = 1) itself use calibkit.binary (e.g. calibkit.binary.ece(y_true, "
        "y_prob)); see docs/binary.md", BinaryReadingWarning, stacklevel=level)


def is_multilabel(labels, probs) -> bool:
    """Whether ``labels`` is an (N, K) label matrix with K > 1 (multilabel input).

    An (N, 1) array is a column of class indices, not a matrix; swapped arguments
    (``f(probs, labels)``) raise :class:`~calibkit.errors.ShapeMismatchError` saying labels come
    first.
    """
    shape = _shape(labels)
    if shape is None or len(shape) != 2 or shape[1] == 1:
        return False
    _check_not_swapped(labels, probs)
    return True


def validate_inputs(labels, probs):
    """Structural validation of a (labels, probs) pair; returns (labels int64, probs 2-D C-order).

    Values (finite, in range, row sums, label range) are checked by the Rust pass.
    """
    # Fast path for what most callers pass (a few attribute reads instead of the general
    # conversions): int64 labels and float probabilities, C-contiguous, K >= 2.
    if (
        type(probs) is np.ndarray
        and type(labels) is np.ndarray
        and probs.ndim == 2
        and labels.ndim == 1
        and probs.dtype in _FAST_PROBS
        and labels.dtype == _INT64
        and probs.shape[1] > 1
        and 0 < probs.shape[0] == labels.shape[0]
        and probs.flags.c_contiguous
        and labels.flags.c_contiguous
    ):
        return labels, probs
    _check_not_swapped(labels, probs)
    warn_binary_reading(labels, probs)
    p = as_probs(probs)
    y = as_labels(labels)
    if y.shape[0] != p.shape[0]:
        raise length_mismatch_error(y.shape[0], p.shape[0])
    return y, p
