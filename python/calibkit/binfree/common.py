"""Inputs shared by the binning-free estimators (:mod:`calibkit.binfree.smooth`,
:mod:`calibkit.binfree.ks`, :mod:`calibkit.binfree.decompose`): the (score, outcome, weight)
groups they work on.

* ``labels, probs`` go through :func:`calibkit._validate.validate_inputs` and the Rust value
  checks of ``gce`` (finite, within [0, 1] up to 1e-4, rows summing to 1 within 1e-3, labels in
  ``[0, K)``).
* ``confidence=, correct=`` are top-label pairs given directly, resolved by the shared
  :func:`calibkit._toplabel.resolve` and value-checked by the pair kernel's checks (confidence
  finite within [0, 1] up to 1e-4, correct 0/1 or bool); ``max_prob=False`` refuses them
  (:class:`calibkit.errors.TopLabelInputError`).
* ``max_prob=True`` gives one group (top-label confidence, prediction correct);
  ``max_prob=False`` gives one group per class k (column k, ``labels == k``: one-vs-rest).
* ``sample_weight``: length N, finite, >= 0, not all 0, a finite sum; integer weights act as
  repeated rows.
"""

from __future__ import annotations

import numpy as np

from .. import _native
from .._params import as_flag, as_real
from .._toplabel import require_top_label, resolve
from .._validate import validate_inputs

__all__ = ["groups", "check_sample_weight", "positive_float"]


def check_sample_weight(sample_weight, n: int) -> np.ndarray | None:
    """``sample_weight`` as a float64 (N,) array (None stays None); the one weight rule of
    :func:`calibkit.binned.weights.as_sample_weight`."""
    if sample_weight is None:
        return None
    from ..binned.weights import as_sample_weight

    return as_sample_weight(sample_weight, n)


def groups(labels, probs, *, max_prob, confidence=None, correct=None, sample_weight=None,
           what: str = "this estimator"):
    """The validated groups: ``(list of (scores, outcomes) float64 pairs, weights or None)``."""
    max_prob = as_flag(max_prob, "max_prob")
    pairs = resolve(labels, probs, confidence, correct)
    if pairs is not None:
        require_top_label(pairs, max_prob, False, what)
        conf = np.ascontiguousarray(pairs.confidence, dtype=np.float64)  # exact widening
        _native.check_pairs(conf, pairs.correct, pairs.predicted, pairs.k)
        return [(conf, pairs.correct.astype(np.float64))], check_sample_weight(sample_weight, pairs.n)
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
    return as_real(value, name, low=0.0, low_open=True)
