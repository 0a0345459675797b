"""Pure-NumPy reference implementation of the General Calibration Error (the test oracle).

Everything here follows ``docs/spec.md`` literally and is written to be read, not to be fast: one
score group at a time, one bin at a time, with NumPy only. It deliberately imports nothing from
the rest of calibkit (neither the native module nor the validators), so that comparing the fast
path against it is an independent check; the one exception is :mod:`calibkit.errors`, which
holds the exception classes and no logic. Sums are correctly rounded (:func:`math.fsum`), so the
oracle's only rounding errors are in a few final divisions and products.

Input handling is minimal: arrays are converted with :func:`numpy.asarray`, float32 is widened
exactly to float64, and 1-D or (N, 1) binary probabilities become the two columns
``[1 - p, p]``. Nothing is validated; use :mod:`calibkit` itself for user-facing calls.

The semantics, in short (see ``docs/spec.md`` for the binding text):

* predicted class = row argmax, lowest index on ties;
* score groups: top-label or all entries, pooled or one group per class (K from ``probs``);
* a score is kept only if ``score > threshold`` (strict), tested after the max-prob selection;
* even bins: upper edges ``np.linspace(0, 1, B + 1)[1:]``; a score goes to the bin numbered by
  how many upper edges are ``<=`` it, so an exact 1.0 lands in an extra bin ``B``;
* adaptive bins: positions ``round_half_even(j * (n / B))`` clipped to ``n - 1`` for
  ``j = 0..B-1``; the upper edges are the sorted scores at positions ``1..B-1``; same rule;
* per group: ``l1 = sum_b w_b |gap_b|``, ``l2 = sum_b w_b gap_b**2`` (weight outside the
  square), ``max = max_b |gap_b|`` over non-empty bins, with ``w_b = n_b / n`` and
  ``gap_b = mean outcome - mean score``; an empty group contributes 0;
* class-conditional: the mean over **all** K classes; for l2 one square root after the mean.

Examples
--------
>>> import numpy as np
>>> from calibkit import reference
>>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]])
>>> labels = np.array([0, 1, 1])
>>> round(reference.ece(labels, probs, num_bins=10), 12)
0.4
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# The one calibkit module the oracle imports: the exception classes (no logic), so that its
# errors belong to calibkit's family like every other public function's.
from .errors import InvalidParameterError

__all__ = [
    "ReferenceBins",
    "prepare",
    "score_groups",
    "upper_edges",
    "bin_index",
    "group_error",
    "bin_table",
    "gce",
    "ece",
    "cce",
    "sce",
    "ace",
    "tace",
    "rmsce",
    "mce",
]


# --------------------------------------------------------------------------------------------
# Inputs and score groups
# --------------------------------------------------------------------------------------------


def prepare(labels, probs) -> tuple[np.ndarray, np.ndarray]:
    """Turn ``labels`` and ``probs`` into int64 ``(N,)`` and float64 ``(N, K)`` arrays.

    A 1-D or ``(N, 1)`` ``probs`` holds P(y=1) of a binary problem and becomes ``[1-p, p]``.
    As in ``uncertainty_metrics`` and calibkit's validator, ``1 - p`` is computed in the input's
    own dtype (float32 stays float32 until the exact widening that follows; any dtype other
    than float32/float64 is converted to float64 first). No validation.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K), (N, 1) or (N,)

    Returns
    -------
    labels : numpy.ndarray of shape (N,), int64
    probs : numpy.ndarray of shape (N, K), float64

    Examples
    --------
    >>> prepare([1, 0], [0.25, 0.5])[1]
    array([[0.75, 0.25],
           [0.5 , 0.5 ]])
    """
    p = np.asarray(probs)
    if p.dtype not in (np.float32, np.float64):
        p = p.astype(np.float64)
    if p.ndim == 1 or (p.ndim == 2 and p.shape[1] == 1):
        p1 = p.reshape(-1)
        p = np.stack([1 - p1, p1], axis=1)  # 1 - p in the input dtype
    p = p.astype(np.float64)  # exact widening of float32
    y = np.asarray(labels).reshape(-1).astype(np.int64)
    return y, p


def score_groups(labels, probs, *, max_prob=True, class_conditional=False, threshold=0.0):
    """The score groups of docs/spec.md: a list of ``(scores, outcomes)`` pairs of float64 arrays.

    One group when ``class_conditional`` is False, else one per class ``k = 0..K-1``.
    Only scores strictly greater than ``threshold`` are kept, tested after the max-prob
    selection.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K) (or binary, see :func:`prepare`)
    max_prob : bool, default True
    class_conditional : bool, default False
    threshold : float, default 0.0

    Returns
    -------
    list of tuple (scores (n_g,), outcomes (n_g,))

    Examples
    --------
    >>> groups = score_groups([0, 1], [[0.6, 0.4], [0.3, 0.7]], class_conditional=True)
    >>> [(s.tolist(), o.tolist()) for s, o in groups]
    [([0.6], [1.0]), ([0.7], [1.0])]
    """
    y, p = prepare(labels, probs)
    n, k = p.shape
    onehot = np.zeros((n, k), dtype=np.float64)
    onehot[np.arange(n), y] = 1.0
    pred = np.argmax(p, axis=1)  # numpy returns the first (lowest) index on ties
    rows = np.arange(n)

    raw = []
    if not class_conditional:
        if max_prob:
            raw.append((p[rows, pred], onehot[rows, pred]))
        else:
            raw.append((p.reshape(-1), onehot.reshape(-1)))
    else:
        for c in range(k):
            if max_prob:
                mine = pred == c
                raw.append((p[mine, c], onehot[mine, c]))
            else:
                raw.append((p[:, c], onehot[:, c]))

    groups = []
    for scores, outcomes in raw:
        keep = scores > threshold
        groups.append((scores[keep].copy(), outcomes[keep].copy()))
    return groups


# --------------------------------------------------------------------------------------------
# Bins
# --------------------------------------------------------------------------------------------


def upper_edges(scores, binning: str, num_bins: int) -> np.ndarray:
    """Upper bin edges used to bin ``scores``.

    even: the ``B`` values ``np.linspace(0, 1, B + 1)[1:]`` (scores equal to 1.0 therefore get
    the extra bin ``B``). adaptive: the ``B - 1`` sorted scores at positions
    ``round_half_even(j * (n / B))``, ``j = 1..B-1``, clipped to ``n - 1``; empty for an empty
    group.

    Parameters
    ----------
    scores : numpy.ndarray of shape (n,)
    binning : {"even", "adaptive"}
    num_bins : int

    Returns
    -------
    numpy.ndarray of shape (B,) for even, (B - 1,) for adaptive (``(0,)`` if ``n == 0``)

    Examples
    --------
    >>> upper_edges(np.arange(10.0), "adaptive", 3)
    array([3., 7.])
    """
    b = int(num_bins)
    if binning == "even":
        return np.linspace(0.0, 1.0, b + 1)[1:]
    if binning != "adaptive":
        raise InvalidParameterError(f"binning: unknown value {binning!r}; use 'even' or 'adaptive'")
    n = len(scores)
    if n == 0:
        return np.empty(0, dtype=np.float64)
    ordered = np.sort(np.asarray(scores, dtype=np.float64))
    positions = np.round(np.arange(b) * (n / b)).astype(np.int64)  # round half to even
    positions = np.minimum(positions, n - 1)
    return ordered[positions[1:]]


def bin_index(scores, edges) -> np.ndarray:
    """Bin of each score: how many of the (sorted) upper ``edges`` are ``<=`` it.

    Examples
    --------
    >>> bin_index(np.array([0.0, 0.5, 0.99, 1.0]), np.linspace(0, 1, 3)[1:]).tolist()
    [0, 1, 1, 2]
    """
    # For a sorted array, searchsorted(side="right") is exactly the count of edges <= score.
    return np.searchsorted(edges, scores, side="right").astype(np.int64)


def _bins_per_group(binning: str, num_bins: int) -> int:
    return int(num_bins) + 1 if binning == "even" else int(num_bins)


def _group_stats(scores, outcomes, binning, num_bins, threshold):
    """Counts, sums of scores, sums of outcomes per bin and the full edge row of one group."""
    nb = _bins_per_group(binning, num_bins)
    ups = upper_edges(scores, binning, num_bins)
    idx = bin_index(scores, ups)
    # per bin b: how many scores, and the correctly rounded sums of their scores and outcomes
    counts = np.bincount(idx, minlength=nb).astype(np.int64)
    order = np.argsort(idx, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)])
    by_bin_scores, by_bin_outcomes = scores[order], outcomes[order]
    sum_score = np.array(
        [math.fsum(by_bin_scores[starts[b]:starts[b + 1]]) for b in range(nb)], dtype=np.float64
    )
    sum_outcome = np.array(
        [math.fsum(by_bin_outcomes[starts[b]:starts[b + 1]]) for b in range(nb)],
        dtype=np.float64,
    )
    if binning == "even":
        # bins [0, u1), ..., [u_{B-1}, 1), and the extra bin [1, 1] for scores equal to 1.0
        edges = np.concatenate([[0.0], ups, [1.0]])
    else:
        # kept scores are > threshold, so the first bin starts at the threshold; an empty group
        # has no adaptive edges (NaN)
        inner = ups if len(scores) else np.full(nb - 1, np.nan)
        # the top edge is 1.0, or the largest inner edge when scores exceed 1 within the
        # tolerance, so that edges never decrease
        top = max(1.0, inner[-1]) if len(inner) and not np.isnan(inner[-1]) else 1.0
        edges = np.concatenate([[float(threshold)], inner, [top]])
    return counts, sum_score, sum_outcome, edges


def group_error(counts, sum_score, sum_outcome, norm: str = "l1") -> float:
    """Error of one group from its per-bin table (before any square root).

    l1: ``sum_b w_b |gap_b|``; l2: ``sum_b w_b gap_b**2``; max: ``max_b |gap_b|`` over
    non-empty bins; 0 for an empty group.

    Examples
    --------
    >>> group_error(np.array([2, 0]), np.array([1.5, 0.0]), np.array([1.0, 0.0]))
    0.25
    """
    total = int(np.sum(counts))
    if total == 0:
        return 0.0
    terms = []
    for n_b, s_b, o_b in zip(counts, sum_score, sum_outcome):
        if n_b == 0:
            continue
        gap = o_b / n_b - s_b / n_b
        w = n_b / total
        if norm == "l1":
            terms.append(w * abs(gap))
        elif norm == "l2":
            terms.append(w * gap * gap)
        elif norm == "max":
            terms.append(abs(gap))
        else:
            raise InvalidParameterError(f"norm: unknown value {norm!r}; use 'l1', 'l2' or 'max'")
    if norm == "max":
        return float(max(terms))
    return math.fsum(terms)


@dataclass(frozen=True)
class ReferenceBins:
    """Per-group, per-bin sufficient statistics (same layout as ``calibkit.CalibrationBins``).

    Attributes
    ----------
    counts : numpy.ndarray of shape (G, nb), int64
    sum_score : numpy.ndarray of shape (G, nb), float64
    sum_outcome : numpy.ndarray of shape (G, nb), float64
    edges : numpy.ndarray of shape (G, nb + 1), float64
        Bin boundaries; for even binning ``[0, 1/B, ..., 1, 1]`` (the last bin holds exact 1.0);
        for adaptive ``[threshold, u_1, ..., u_{B-1}, max(1, u_{B-1})]`` (inner edges NaN for an empty group).
    num_classes : int
    class_conditional : bool
    binning : str
    """

    counts: np.ndarray
    sum_score: np.ndarray
    sum_outcome: np.ndarray
    edges: np.ndarray
    num_classes: int
    class_conditional: bool
    binning: str

    def error(self, norm: str = "l1") -> float:
        """The GCE of this table under ``norm`` (see :func:`gce`)."""
        per_group = [
            group_error(c, s, o, norm)
            for c, s, o in zip(self.counts, self.sum_score, self.sum_outcome)
        ]
        value = math.fsum(per_group) / len(per_group)  # G == 1 pooled; all K classes otherwise
        return float(np.sqrt(value)) if norm == "l2" else value


def bin_table(
    labels,
    probs,
    *,
    binning="even",
    max_prob=True,
    class_conditional=False,
    threshold=0.0,
    num_bins=15,
) -> ReferenceBins:
    """Per-group, per-bin table of counts, score sums and outcome sums.

    G = K groups if ``class_conditional`` else 1; nb = ``num_bins + 1`` bins for even binning
    (the last one holds scores equal to 1.0) and ``num_bins`` for adaptive.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K), (N, 1) or (N,)
    binning : {"even", "adaptive"}, default "even"
    max_prob : bool, default True
    class_conditional : bool, default False
    threshold : float, default 0.0
    num_bins : int, default 15

    Returns
    -------
    ReferenceBins

    Examples
    --------
    >>> t = bin_table([0, 1], [[0.6, 0.4], [0.3, 0.7]], num_bins=2)
    >>> t.counts.tolist(), t.edges.tolist()
    ([[0, 2, 0]], [[0.0, 0.5, 1.0, 1.0]])
    """
    y, p = prepare(labels, probs)
    groups = score_groups(
        y, p, max_prob=max_prob, class_conditional=class_conditional, threshold=threshold
    )
    stats = [_group_stats(s, o, binning, num_bins, threshold) for s, o in groups]
    return ReferenceBins(
        counts=np.stack([st[0] for st in stats]),
        sum_score=np.stack([st[1] for st in stats]),
        sum_outcome=np.stack([st[2] for st in stats]),
        edges=np.stack([st[3] for st in stats]),
        num_classes=p.shape[1],
        class_conditional=bool(class_conditional),
        binning=binning,
    )


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def gce(
    labels,
    probs,
    *,
    binning="even",
    max_prob=True,
    class_conditional=False,
    threshold=0.0,
    norm="l1",
    num_bins=15,
) -> float:
    """General Calibration Error, computed the slow and obvious way.

    Parameters
    ----------
    labels : array_like of shape (N,)
        Integer labels in ``[0, K)``.
    probs : array_like of shape (N, K), (N, 1) or (N,)
        Probabilities; 1-D or (N, 1) is the binary P(y=1).
    binning : {"even", "adaptive"}, default "even"
    max_prob : bool, default True
        Top-label probability only (True) or every entry (False).
    class_conditional : bool, default False
        One group per class, averaged over all K classes.
    threshold : float, default 0.0
        Keep scores strictly greater than this.
    norm : {"l1", "l2", "max"}, default "l1"
    num_bins : int, default 15

    Returns
    -------
    float

    Examples
    --------
    >>> gce([0, 1, 1], [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]], norm="max", num_bins=10)
    0.8
    """
    table = bin_table(
        labels,
        probs,
        binning=binning,
        max_prob=max_prob,
        class_conditional=class_conditional,
        threshold=threshold,
        num_bins=num_bins,
    )
    return table.error(norm)


def ece(labels, probs, *, num_bins=15) -> float:
    """Expected Calibration Error: even bins, top label, pooled, l1."""
    return gce(labels, probs, num_bins=num_bins)


def cce(labels, probs, *, num_bins=15) -> float:
    """Class-conditional ECE: even bins, top label, one group per predicted class, l1."""
    return gce(labels, probs, class_conditional=True, num_bins=num_bins)


def sce(labels, probs, *, num_bins=15) -> float:
    """Static Calibration Error: even bins, every class probability, per class, l1."""
    return gce(labels, probs, max_prob=False, class_conditional=True, num_bins=num_bins)


def ace(labels, probs, *, num_bins=15) -> float:
    """Adaptive Calibration Error: adaptive bins, every class probability, per class, l1."""
    return gce(
        labels, probs, binning="adaptive", max_prob=False, class_conditional=True,
        num_bins=num_bins,
    )


def tace(labels, probs, *, num_bins=15, threshold=0.01) -> float:
    """Thresholded ACE: ACE keeping only scores ``> threshold`` (default 0.01)."""
    return gce(
        labels, probs, binning="adaptive", max_prob=False, class_conditional=True,
        threshold=threshold, num_bins=num_bins,
    )


def rmsce(labels, probs, *, num_bins=15) -> float:
    """Root Mean Squared Calibration Error: adaptive bins, top label, pooled, l2."""
    return gce(labels, probs, binning="adaptive", norm="l2", num_bins=num_bins)


def mce(labels, probs, *, num_bins=15) -> float:
    """Maximum Calibration Error: even bins, top label, pooled, largest |gap| of a bin."""
    return gce(labels, probs, norm="max", num_bins=num_bins)
