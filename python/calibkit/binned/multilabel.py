"""Calibration error for multilabel classifiers: each label column is its own one-vs-rest problem.

Labels given as an (N, K) matrix of 0/1 mean *multilabel*: row i may carry any number of the K
labels, and ``probs[i, k]`` is the model's probability that label k applies (an independent
sigmoid output, so rows need not sum to 1). Every column is a binary problem with score
``probs[:, k]`` and outcome ``labels[:, k]``; the General Calibration Error then follows docs/spec.md
with ``max_prob=False``:

- ``class_conditional=True``: one score group per column, the K per-column errors averaged over
  all K columns (columns with no kept score count 0), one square root after the average for l2;
- ``class_conditional=False``: all N*K (score, outcome) pairs pooled into one group.

Binning, thresholds (``score > threshold``, strict) and norms are exactly those of single-label
GCE. With a one-hot label matrix this coincides with ``calibkit.gce(labels.argmax(1), probs,
max_prob=False, ...)``, whose class-conditional form *is* one-vs-rest.

Top-label (``max_prob=True``) metrics are refused: with several true labels per row, "the
prediction is correct" has no meaning. Implemented in vectorised NumPy; float32 scores are
widened exactly to float64 and all sums use float64.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._params import as_flag
from .._validate import as_array, check_gce_params, check_scores, shown
from ..errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    ShapeMismatchError,
)
from .table import CalibrationBins, as_calibration_bins, grouped_bin_stats, reduce_table

__all__ = [
    "multilabel_gce",
    "multilabel_bins",
    "multilabel_values",
    "validate_multilabel",
    "MultilabelError",
]


class MultilabelError(InvalidParameterError):
    """A multilabel call asked for something only single-label data has (e.g. ``max_prob``)."""


def validate_multilabel(label_matrix, probs) -> tuple[np.ndarray, np.ndarray]:
    """Check a multilabel (label matrix, probabilities) pair and return float64 copies.

    Parameters
    ----------
    label_matrix : array_like of shape (N, K)
        0/1 (or bool) entries: ``label_matrix[i, k] == 1`` when label k applies to example i.
    probs : array_like of shape (N, K)
        Per-label probabilities in [0, 1] (a tolerance of the core's size is allowed), finite.
        Rows need not sum to 1. For K == 1 a 1-D array of length N is accepted.

    Returns
    -------
    (labels, probs) : tuple of numpy.ndarray of shape (N, K), both float64 and C-contiguous

    Raises
    ------
    InputTypeError
        Non-numeric input.
    ShapeMismatchError
        Not 2-D, empty, or the two shapes differ.
    InvalidLabelsError
        A label entry other than 0 or 1.
    InvalidProbabilitiesError
        NaN / infinite probabilities or values outside [0, 1].
    """
    y = as_array(label_matrix, "label_matrix", "an (N, K) 0/1 label matrix")
    p = as_array(probs, "probs", "an (N, K) array of probabilities")
    for name, a in (("label_matrix", y), ("probs", p)):
        if a.dtype == object or not (
            np.issubdtype(a.dtype, np.number) or np.issubdtype(a.dtype, np.bool_)
        ):
            raise InputTypeError(f"{name}: expected a numeric array, got dtype {a.dtype}")
        if np.issubdtype(a.dtype, np.complexfloating):
            raise InputTypeError(f"{name}: complex values are not probabilities/labels")
    if y.ndim != 2:
        raise ShapeMismatchError(
            f"label_matrix: a multilabel label matrix must be 2-D (N, K), got shape {y.shape}"
        )
    if p.ndim == 1 and y.shape[1] == 1:
        p = p.reshape(-1, 1)
    if p.shape != y.shape:
        raise ShapeMismatchError(
            f"probs: shape {p.shape} does not match label_matrix shape {y.shape}; multilabel "
            f"needs one probability per (example, label)"
        )
    if y.shape[0] == 0 or y.shape[1] == 0:
        raise ShapeMismatchError(
            f"label_matrix: needs at least one example and one label, got shape {y.shape}"
        )
    y64 = np.ascontiguousarray(y, dtype=np.float64)
    bad = (y64 != 0.0) & (y64 != 1.0)
    if bad.any():
        i, k = np.argwhere(bad)[0]
        raise InvalidLabelsError(
            f"label_matrix: multilabel labels must be 0 or 1, got {shown(y[i, k])} at [{i}, {k}] "
            f"({int(bad.sum())} such entries); for integer class labels pass a 1-D array"
        )
    p64 = np.ascontiguousarray(p, dtype=np.float64)
    # the metric functions' value rules (calibkit._validate), without row sums
    check_scores(p64, row_sums=False, fix="multilabel probabilities are per-label sigmoid "
                                           "outputs: apply a sigmoid to logits first")
    return y64, p64


def _check_params(binning, max_prob, class_conditional, threshold, num_bins, norm="l1"):
    """The multilabel flags, then the shared GCE checks (bin-count limit included)."""
    if as_flag(max_prob, "max_prob"):
        raise MultilabelError(
            "max_prob: top-label metrics (ECE, RMSCE, class-conditional ECE, ...) are undefined "
            "for multilabel data, where a row can have several true labels; pass "
            "max_prob=False (e.g. SCE, ACE, TACE)"
        )
    as_flag(class_conditional, "class_conditional")
    if isinstance(threshold, numbers.Real) and not isinstance(threshold, (bool, np.bool_)) \
            and not np.isfinite(threshold):
        raise InvalidParameterError(
            f"threshold: expected a finite number in [0, 1), got {threshold!r}"
        )
    return check_gce_params(binning, norm, threshold, num_bins)


def _stats(y: np.ndarray, p: np.ndarray, class_conditional: bool, threshold: float,
           binning: str, num_bins: int):
    """(counts, sum_score, sum_outcome, edges) of the kept entries, binned by the primitive.

    One group per column (class-conditional) or one pooled group; entries are kept when
    ``score > threshold``.
    """
    keep = p > threshold
    scores, outcomes = p[keep], y[keep]
    if class_conditional:
        groups = np.nonzero(keep)[1]
        num_groups = p.shape[1]
    else:
        groups, num_groups = None, 1
    return grouped_bin_stats(groups, scores, outcomes, num_groups=num_groups, binning=binning,
                             num_bins=num_bins)


def multilabel_bins(
    label_matrix,
    probs,
    *,
    binning: str = "even",
    max_prob: bool = False,
    class_conditional: bool = True,
    threshold: float = 0.0,
    num_bins: int = 15,
) -> CalibrationBins:
    """Per-(label column, bin) sufficient statistics of multilabel predictions.

    Parameters
    ----------
    label_matrix : array_like of shape (N, K)
        0/1 entries, any number of ones per row.
    probs : array_like of shape (N, K)
        Per-label probabilities in [0, 1]; rows need not sum to 1.
    binning : {"even", "adaptive"}, default "even"
        Even: SPEC's ``np.linspace(0, 1, B+1)[1:]`` upper edges (left-closed bins plus a last
        bin holding scores equal to 1.0). Adaptive: per group, the sorted kept scores at
        positions ``round_half_even(j * n / B)`` for j = 1..B-1 are the upper edges.
    max_prob : bool, default False
        Must be False (top-label metrics are undefined for multilabel data).
    class_conditional : bool, default True
        One group per label column (True) or all N*K entries in one group (False).
    threshold : float, default 0.0
        Keep only scores strictly above it.
    num_bins : int, default 15

    Returns
    -------
    calibkit.bins.CalibrationBins
        ``counts`` (G, nb) int64, ``sum_score`` / ``sum_outcome`` (G, nb) float64 and
        ``edges`` (G, nb+1) with G = K if class-conditional else 1, nb = num_bins + 1 (even) or
        num_bins (adaptive). Edges as in the core: even ``[0, u_1, ..., u_B = 1, 1]``; adaptive
        ``[threshold, e_1, ..., e_{B-1}, 1]`` with NaN inner edges for a group with no kept
        score.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.multilabel import multilabel_bins
    >>> y = np.array([[1, 0], [1, 1], [0, 0]])
    >>> p = np.array([[0.9, 0.2], [0.6, 0.7], [0.1, 0.3]])
    >>> multilabel_bins(y, p, num_bins=2).counts
    array([[1, 2, 0],
           [2, 1, 0]])
    """
    binning, _, threshold, num_bins = _check_params(binning, max_prob, class_conditional,
                                                    threshold, num_bins)
    y, p = validate_multilabel(label_matrix, probs)
    stats = _stats(y, p, bool(class_conditional), threshold, binning, num_bins)
    return as_calibration_bins(stats, num_classes=p.shape[1], binning=binning,
                               class_conditional=bool(class_conditional), max_prob=False,
                               threshold=threshold)


def multilabel_gce(
    label_matrix,
    probs,
    *,
    binning: str = "even",
    max_prob: bool = False,
    class_conditional: bool = True,
    threshold: float = 0.0,
    norm: str = "l1",
    num_bins: int = 15,
) -> float:
    """General Calibration Error of multilabel predictions (one-vs-rest per label column).

    The defaults give multilabel SCE (even bins, class-conditional, l1). See the module
    docstring for the definition; parameters as in :func:`multilabel_bins` plus ``norm``.

    Parameters
    ----------
    label_matrix : array_like of shape (N, K)
        0/1 entries; rows may have any number of ones.
    probs : array_like of shape (N, K)
        Per-label probabilities in [0, 1].
    binning : {"even", "adaptive"}, default "even"
    max_prob : bool, default False
        True is refused with :class:`MultilabelError`.
    class_conditional : bool, default True
    threshold : float, default 0.0
    norm : {"l1", "l2", "max"}, default "l1"
    num_bins : int, default 15

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.multilabel import multilabel_gce
    >>> y = np.array([[1, 0], [1, 1], [0, 0]])
    >>> p = np.array([[0.9, 0.2], [0.6, 0.7], [0.1, 0.3]])
    >>> round(multilabel_gce(y, p, num_bins=2), 6)
    0.233333
    """
    binning, norm, threshold, num_bins = _check_params(binning, max_prob, class_conditional,
                                                       threshold, num_bins, norm)
    y, p = validate_multilabel(label_matrix, probs)
    c, s, o, _ = _stats(y, p, bool(class_conditional), threshold, binning, num_bins)
    return reduce_table(c, s, o, norm, bool(class_conditional))


def multilabel_values(label_matrix, probs, space, num_bins) -> np.ndarray:
    """Every metric of ``space`` at every bin count for multilabel predictions.

    The computation behind :func:`calibkit.evaluate` (and
    :func:`calibkit.evaluation.multilabel_evaluate`) for a label matrix: statistics are
    computed once per (class_conditional, threshold, binning, bin count) and shared by all
    norms.

    Parameters
    ----------
    label_matrix : array_like of shape (N, K)
    probs : array_like of shape (N, K)
    space : sequence of metric specs
        Objects with ``name``, ``binning``, ``max_prob``, ``class_conditional``, ``threshold``
        and ``norm`` (e.g. a :class:`calibkit.MetricSpace`). A top-label metric is refused with
        :class:`MultilabelError`.
    num_bins : sequence of int

    Returns
    -------
    numpy.ndarray of shape (len(space), len(num_bins)), float64

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit import MetricSpace
    >>> y = np.array([[1, 0], [1, 1], [0, 0]])
    >>> p = np.array([[0.9, 0.2], [0.6, 0.7], [0.1, 0.3]])
    >>> multilabel_values(y, p, MetricSpace(["SCE"]), [2]).round(6).tolist()
    [[0.233333]]
    """
    top = [s.name for s in space if s.max_prob]
    if top:
        raise MultilabelError(
            f"space: top-label metrics {top} are undefined for multilabel data (several true "
            f"labels per row); use a space with max_prob=False, e.g. "
            f"metric_space(max_prob=False)"
        )
    checked = [[_check_params(spec.binning, False, spec.class_conditional, spec.threshold, b,
                              spec.norm) for b in num_bins] for spec in space]
    y, p = validate_multilabel(label_matrix, probs)
    values = np.empty((len(space), len(num_bins)))
    cache: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for i, spec in enumerate(space):
        cc = bool(spec.class_conditional)
        for j, (binning, norm, threshold, b) in enumerate(checked[i]):
            key = (cc, threshold, binning, b)
            if key not in cache:
                cache[key] = _stats(y, p, cc, threshold, binning, b)[:3]
            values[i, j] = reduce_table(*cache[key], norm, cc)
    return values
