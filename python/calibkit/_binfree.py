"""Inputs shared by the binning-free estimators (:mod:`calibkit.smooth`, :mod:`calibkit.ks`,
:mod:`calibkit.decompose`): the (score, outcome, weight) groups they work on.

* ``labels, probs`` go through :func:`calibkit._validate.validate_inputs` and the Rust value
  checks of ``gce`` (finite, within [0, 1] up to 1e-4, rows summing to 1 within 1e-3, labels in
  ``[0, K)``).
* ``confidence=, correct=`` are top-label pairs given directly: ``confidence`` is checked like
  a binary probability column, ``correct`` like binary labels (0/1 or bool), by the same checks.
* ``max_prob=True`` gives one group (top-label confidence, prediction correct);
  ``max_prob=False`` gives one group per class k (column k, ``labels == k``: one-vs-rest).
* ``sample_weight``: length N, finite, >= 0, not all 0; integer weights act as repeated rows.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _native
from ._validate import as_labels, as_probs, validate_inputs
from .errors import InputTypeError, InvalidParameterError, ShapeMismatchError

__all__ = ["groups", "check_sample_weight", "check_flag"]


def check_flag(value, name: str) -> bool:
    """A strict bool keyword (``max_prob``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    """``sample_weight`` as a float64 (N,) array (None stays None)."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (str, bytes)):
        raise InputTypeError(f"sample_weight must be an array of N non-negative numbers, got {type(sample_weight).__name__}")
    try:
        w = np.asarray(sample_weight)
    except Exception as exc:
        raise InputTypeError(f"sample_weight could not be converted to a NumPy array: {exc}") from exc
    if w.dtype.kind not in "fiub":
        raise InputTypeError(f"sample_weight must hold real numbers, got dtype {w.dtype}")
    if w.ndim != 1 or w.shape[0] != n:
        raise ShapeMismatchError(
            f"sample_weight must have shape ({n},), one weight per prediction, got shape {w.shape}"
        )
    w = np.ascontiguousarray(w, dtype=np.float64)
    if not np.all(np.isfinite(w)):
        bad = int(np.flatnonzero(~np.isfinite(w))[0])
        raise InvalidParameterError(f"sample_weight[{bad}] is {w[bad]!r}: weights must be finite")
    if np.any(w < 0):
        bad = int(np.flatnonzero(w < 0)[0])
        raise InvalidParameterError(f"sample_weight[{bad}] is {w[bad]!r}: weights must be >= 0")
    if not w.sum() > 0:
        raise InvalidParameterError("sample_weight sums to 0: at least one prediction needs a positive weight")
    return w


def _pairs(confidence, correct):
    p = as_probs(confidence, name="confidence")
    if np.ndim(confidence) != 1:
        raise ShapeMismatchError(
            f"confidence must be 1-D (one top-label confidence per prediction), got shape {np.shape(confidence)}"
        )
    y = as_labels(correct, name="correct")
    if y.shape[0] != p.shape[0]:
        raise ShapeMismatchError(
            f"correct has {y.shape[0]} entries but confidence has {p.shape[0]}; pass one of each per prediction"
        )
    # The value checks of gce on the binary matrix [1 - c, c] with labels `correct`:
    # confidence finite and within [0, 1], correct in {0, 1}.
    _native.check_values(y, p)
    return np.ascontiguousarray(p[:, 1], dtype=np.float64), y.astype(np.float64)


def groups(labels, probs, *, max_prob, confidence=None, correct=None, sample_weight=None):
    """The validated groups: ``(list of (scores, outcomes) float64 pairs, weights or None)``."""
    max_prob = check_flag(max_prob, "max_prob")
    given_pairs = confidence is not None or correct is not None
    if given_pairs:
        if labels is not None or probs is not None:
            raise InvalidParameterError(
                "pass either (labels, probs) or confidence= and correct=, not both"
            )
        if confidence is None or correct is None:
            raise InvalidParameterError("confidence= and correct= go together: pass both")
        if not max_prob:
            raise InvalidParameterError(
                "confidence/correct are top-label pairs; max_prob=False needs labels and probs"
            )
        conf, outcome = _pairs(confidence, correct)
        return [(conf, outcome)], check_sample_weight(sample_weight, conf.shape[0])
    if labels is None or probs is None:
        raise InvalidParameterError("pass labels and probs (or confidence= and correct=)")
    y, p = validate_inputs(labels, probs)
    w = check_sample_weight(sample_weight, y.shape[0])
    if max_prob:
        conf, ok = _native.toplabel_pairs(y, p)
        return [(conf, ok.astype(np.float64))], w
    _native.check_values(y, p)
    out = []
    for k in range(p.shape[1]):
        out.append((np.ascontiguousarray(p[:, k], dtype=np.float64), (y == k).astype(np.float64)))
    return out, w


def positive_float(value, name: str) -> float:
    """A finite number > 0 (a bandwidth)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
        raise InvalidParameterError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)
