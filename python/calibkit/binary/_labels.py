"""The one reading of binary input: ``y_true`` (0/1, booleans, -1/1 or two class names) with
``pos_label``, and ``y_prob`` = P(y = pos_label), as scikit-learn's binary metrics take them.

Every function of :mod:`calibkit.binary` reads its arguments here, once, and hands the engine
top-label pairs ``confidence = y_prob``, ``correct = (y_true == pos_label)``; the pair form keeps
exact 0.0 and 1.0 (:func:`calibkit._toplabel.kept_rows`). The rules, as scikit-learn's
``_check_pos_label_consistency``:

* labels that are a subset of {0, 1} or of {-1, 1} (numbers or booleans): ``pos_label``
  defaults to 1 (True);
* other labels (class names such as ``"spam"``, or {1, 2}): ``pos_label`` is required;
* ``pos_label`` must be one of the labels (or 1 for 0/1 and -1/1 labels, which may hold only
  negatives); more than two distinct labels is an error (use the multiclass API).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native
from .._params import RANGE_TOL
from .._validate import as_array, float_dtype
from ..errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

__all__ = ["Binary", "binary_inputs"]

#: Label sets whose positive class is 1 unless told otherwise (scikit-learn's rule).
_DEFAULT_POSITIVE = ({0, 1}, {-1, 1})


@dataclass(frozen=True)
class Binary:
    """Checked binary input.

    Attributes
    ----------
    prob : numpy.ndarray of shape (N,), float32 or float64
        P(y = pos_label), each within [0, 1] (the engine's range tolerance).
    positive : numpy.ndarray of shape (N,), bool
        ``y_true == pos_label``.
    pos_label : object
        The positive class as read.
    """

    prob: np.ndarray
    positive: np.ndarray
    pos_label: object

    @property
    def pairs(self) -> dict:
        """The engine's top-label keywords: ``confidence=`` and ``correct=``."""
        return {"confidence": self.prob, "correct": self.positive}


def _column(obj, name: str, what: str) -> np.ndarray:
    """A pandas Series / one-column DataFrame / list / array as a 1-D NumPy array."""
    if hasattr(obj, "to_numpy") and not isinstance(obj, np.ndarray):  # pandas, polars
        obj = obj.to_numpy()
    a = as_array(obj, name, what)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1:
        hint = (" (for predict_proba output pass its positive column, e.g. "
                "predict_proba(X)[:, 1], or use calibkit.ece(labels, probs) for the top label)"
                if name == "y_prob" and a.ndim == 2 else "")
        raise ShapeMismatchError(f"{name} must be 1-D, one value per sample, got shape "
                                 f"{a.shape}{hint}")
    if a.shape[0] == 0:
        raise ShapeMismatchError(f"{name} is empty (0 samples); pass at least one sample")
    return a


def _probabilities(y_prob) -> np.ndarray:
    p = _column(y_prob, "y_prob", "an array of probabilities P(y = pos_label)")
    if p.dtype.kind not in "fiub":
        raise InputTypeError(f"y_prob must hold probabilities (numbers), got dtype {p.dtype}")
    if p.dtype not in (np.float32, np.float64):
        p = p.astype(float_dtype(p.dtype))
    return np.ascontiguousarray(p)


def _check_values(p: np.ndarray, positive: np.ndarray) -> None:
    """The pair kernels' value check of ``y_prob`` (finite, within [0, 1] up to RANGE_TOL), one
    pass, its message naming ``y_prob``."""
    try:
        _native.check_pairs(p, positive.view(np.uint8), None, 1)
    except InvalidProbabilitiesError as exc:
        head = str(exc).split(":", 1)[0].replace("confidence[", "y_prob[", 1)
        raise InvalidProbabilitiesError(
            f"{head}: y_prob must be finite and within [0, 1] (tolerance {RANGE_TOL:g}): "
            f"P(y = pos_label), e.g. predict_proba(X)[:, 1], not a logit or a "
            f"decision_function score") from None


def _labels(values: np.ndarray) -> list:
    """The distinct labels: for numbers two min/max passes and one comparison (no sort) unless
    there are more than two (then the error lists them)."""
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise InvalidLabelsError("y_true contains NaN or infinite values; drop those samples")
    if values.dtype.kind == "b":
        return [v for v in (False, True) if (values.any() if v else not values.all())]
    if values.dtype.kind in "iuf":
        lo, hi = values.min(), values.max()
        if lo == hi:
            return [lo]
        if np.count_nonzero((values == lo) | (values == hi)) == values.size:
            return [lo, hi]
    try:
        return list(np.unique(values))
    except TypeError:  # mixed object labels that do not sort
        seen: list = []
        for v in values.tolist():
            if v not in seen:
                seen.append(v)
        return seen


def binary_inputs(y_true, y_prob, pos_label=None) -> Binary:
    """Check ``y_true``, ``y_prob`` and ``pos_label`` (see the module docstring).

    Raises
    ------
    calibkit.errors.InvalidLabelsError
        More than two classes; class names without ``pos_label``.
    calibkit.errors.InvalidParameterError
        A ``pos_label`` that is not one of the labels.
    calibkit.errors.InvalidProbabilitiesError
        ``y_prob`` not finite or outside [0, 1].
    calibkit.errors.ShapeMismatchError, calibkit.errors.InputTypeError
        Not 1-D, empty, lengths that differ, non-numeric ``y_prob``.
    """
    y = _column(y_true, "y_true", "an array of binary labels")
    p = _probabilities(y_prob)
    if y.shape[0] != p.shape[0]:
        raise ShapeMismatchError(
            f"y_true has {y.shape[0]} samples but y_prob has {p.shape[0]}; pass one "
            f"probability per label")
    classes = _labels(y)
    if len(classes) > 2:
        shown = ", ".join(repr(_plain(c)) for c in classes[:5])
        raise InvalidLabelsError(
            f"y_true holds {len(classes)} classes ({shown}{', ...' if len(classes) > 5 else ''})"
            f"; calibkit.binary is for two classes: for multiclass predictions use "
            f"calibkit.ece(labels, probs) with the (N, K) probability matrix")
    plain = {_plain(c) for c in classes}
    numeric = all(isinstance(v, (int, float)) for v in plain)  # bools are ints
    standard = numeric and any(plain <= s for s in _DEFAULT_POSITIVE)
    if pos_label is None:
        if not standard:
            raise InvalidLabelsError(
                f"y_true holds the classes {', '.join(sorted(map(repr, plain)))}, so pos_label is "
                f"needed to say which one y_prob is the probability of, e.g. pos_label="
                f"{_plain(classes[-1])!r} (as in scikit-learn; labels 0/1, -1/1 or booleans "
                f"default to pos_label=1)")
        pos_label = 1
    allowed = set(plain) | ({1} if standard else set())
    try:
        known = _plain(pos_label) in allowed
    except TypeError:  # unhashable: a list, an array
        known = False
    if not known:
        raise InvalidParameterError(
            f"pos_label={pos_label!r} is not one of the labels of y_true "
            f"({', '.join(sorted(map(repr, plain)))}); pass the class that y_prob is the "
            f"probability of")
    positive = np.ascontiguousarray(y == pos_label, dtype=bool)
    _check_values(p, positive)
    return Binary(p, positive, pos_label)


def _plain(v):
    """A NumPy scalar as the Python value it holds (so that sets and messages compare them)."""
    v = v.item() if isinstance(v, np.generic) else v
    if isinstance(v, bool) or (isinstance(v, float) and v.is_integer()):
        return int(v)
    return v
