"""Every input check of the metric functions and its message, in one place.

Cheap structural checks (types, dimensions, lengths, parameters) run here, before crossing
into Rust; checks that must read every value (finite, within [0, 1], rows summing to 1, labels
in range) run inside the Rust pass that reads the data anyway, and raise the same exception
classes (see :mod:`calibkit.errors`).

Accepted input, and what is copied:

* ``probs``: float32 or float64, shape (N, K); a 1-D array or an (N, 1) array is the binary
  probability of class 1 and becomes ``[1 - p, p]`` (a new array). Other real dtypes (ints,
  float16, bool) are converted to float64. Non-contiguous or Fortran-ordered arrays are copied
  to C order; a C-contiguous float32/float64 array is used without a copy.
* ``labels``: integers of any width, or floats holding exact integer values (``3.0``), shape
  (N,) or (N, 1) (a column of class indices). Class names (strings) are refused with the
  ``numpy.unique`` call that maps them. ``f(probs, labels)`` (a float matrix first, integer
  labels second) is refused with a message saying labels come first. They are converted to
  int64 (a copy of N values unless already int64 and contiguous). Booleans are accepted as 0/1
  for binary problems.
* PyTorch / JAX / other tensors: see :mod:`calibkit._arraylike` (CPU tensors without a copy
  where the layout allows; a GPU tensor is refused with a request to move it to the CPU).
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _native
from ._arraylike import to_numpy
from .errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    ShapeMismatchError,
)

__all__ = [
    "validate_inputs",
    "is_multilabel",
    "check_gce_params",
    "as_probs",
    "as_labels",
    "BINNINGS",
    "NORMS",
    "RANGE_TOL",
    "ROW_SUM_TOL",
    "MAX_BINS",
]

BINNINGS = ("even", "adaptive")
NORMS = ("l1", "l2", "max")
#: Probabilities may leave [0, 1] by this much (float rounding in softmax outputs); the Rust
#: kernels use the same constant.
RANGE_TOL: float = _native.RANGE_TOL
#: Each row of ``probs`` must sum to 1 within this absolute tolerance.
ROW_SUM_TOL: float = _native.ROW_SUM_TOL
#: Largest accepted ``num_bins`` (the kernels refuse larger ones too).
MAX_BINS: int = _native.MAX_BINS


def as_probs(probs, name: str = "probs") -> np.ndarray:
    """``probs`` as a C-contiguous 2-D float32/float64 array (binary 1-D / (N, 1) expanded)."""
    if isinstance(probs, (str, bytes)) or probs is None:
        raise InputTypeError(
            f"{name} must be an array of probabilities of shape (N, K), got {type(probs).__name__}"
        )
    try:
        p = to_numpy(probs, name)
    except InputTypeError:
        raise
    except Exception as exc:  # ragged lists and the like
        raise InputTypeError(f"{name} could not be converted to a NumPy array: {exc}") from exc
    if p.dtype.kind not in "fiub":
        raise InputTypeError(
            f"{name} must hold real numbers, got dtype {p.dtype}; pass float32 or float64 probabilities"
        )
    if p.dtype not in (np.float32, np.float64):
        p = p.astype(np.float64)
    if p.ndim == 1 or (p.ndim == 2 and p.shape[1] == 1):
        q = p.reshape(-1)
        p = np.stack([1 - q, q], axis=1)
    elif p.ndim != 2:
        raise ShapeMismatchError(
            f"{name} must be 2-D (N samples, K classes) or 1-D binary P(y=1), got shape {p.shape}"
        )
    if p.shape[0] == 0:
        raise ShapeMismatchError(f"{name} is empty (0 rows); pass at least one prediction")
    if p.shape[1] == 0:
        raise ShapeMismatchError(f"{name} has 0 columns; it needs one column per class")
    return np.ascontiguousarray(p)


def as_labels(labels, name: str = "labels") -> np.ndarray:
    """``labels`` as a contiguous 1-D int64 array (range is checked by the kernel)."""
    if isinstance(labels, (str, bytes)) or labels is None:
        raise InputTypeError(f"{name} must be an array of integer class indices, got {type(labels).__name__}")
    try:
        y = to_numpy(labels, name)
    except InputTypeError:
        raise
    except Exception as exc:
        raise InputTypeError(f"{name} could not be converted to a NumPy array: {exc}") from exc
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]  # a column of class indices, as (N, 1) label arrays from data loaders often are
    if y.dtype.kind in "US" or (
        y.dtype.kind == "O" and y.size and isinstance(y.reshape(-1)[0], (str, bytes))
    ):
        raise InputTypeError(_string_labels_message(y, name))
    if y.ndim != 1:
        raise ShapeMismatchError(
            f"{name} must be 1-D (one class index per row), got shape {y.shape}; "
            "for multilabel data pass an (N, K) 0/1 matrix to the functions that accept it"
        )
    if y.dtype.kind == "b":
        y = y.astype(np.int64)
    elif y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise InvalidLabelsError(f"{name} contains NaN or infinite values; labels must be class indices")
        if not np.all(y == np.round(y)):
            bad = int(np.flatnonzero(y != np.round(y))[0])
            raise InvalidLabelsError(
                f"{name}[{bad}] is {float(y[bad])!r}, not an integer: labels must be class indices "
                "(did you pass probabilities or scores as labels? Labels come first: "
                "f(labels, probs))"
            )
    elif y.dtype.kind not in "iu":
        raise InputTypeError(f"{name} must hold integers, got dtype {y.dtype}")
    if y.dtype.kind == "u" and y.size and y.max() > np.iinfo(np.int64).max:
        raise InvalidLabelsError(f"{name} holds values too large to be class indices")
    return np.ascontiguousarray(y, dtype=np.int64)


_FAST_PROBS = (np.dtype(np.float64), np.dtype(np.float32))
_INT64 = np.dtype(np.int64)


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
    dtype = getattr(a, "dtype", None)
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):
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
    p = as_probs(probs)
    y = as_labels(labels)
    if y.shape[0] != p.shape[0]:
        raise ShapeMismatchError(
            f"labels has {y.shape[0]} entries but probs has {p.shape[0]} rows; pass one label per row"
        )
    return y, p


def check_gce_params(binning, norm, threshold, num_bins) -> tuple[str, str, float, int]:
    """Validate the GCE keywords; returns them normalised (threshold as float, num_bins as int)."""
    if (
        type(threshold) is float
        and type(num_bins) is int
        and type(binning) is str
        and type(norm) is str
        and binning in BINNINGS
        and norm in NORMS
        and 0.0 <= threshold < 1.0
        and 1 <= num_bins <= MAX_BINS
    ):
        return binning, norm, threshold, num_bins
    if not isinstance(binning, str) or binning not in BINNINGS:
        raise InvalidParameterError(f"binning must be one of {BINNINGS}, got {binning!r}")
    if not isinstance(norm, str) or norm not in NORMS:
        raise InvalidParameterError(f"norm must be one of {NORMS}, got {norm!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise InvalidParameterError(f"threshold must be a number in [0, 1), got {threshold!r}")
    threshold = float(threshold)
    if not (0.0 <= threshold < 1.0):
        raise InvalidParameterError(
            f"threshold must be in [0, 1) (scores <= threshold are dropped), got {threshold!r}"
        )
    if isinstance(num_bins, bool) or not isinstance(num_bins, numbers.Integral):
        raise InvalidParameterError(f"num_bins must be a positive integer, got {num_bins!r}")
    num_bins = int(num_bins)
    if num_bins < 1:
        raise InvalidParameterError(f"num_bins must be a positive integer (>= 1), got {num_bins}")
    if num_bins > MAX_BINS:
        raise InvalidParameterError(
            f"num_bins must be at most {MAX_BINS} (got {num_bins}); calibration estimates need "
            "many points per bin, so use far fewer bins"
        )
    return binning, norm, threshold, num_bins
