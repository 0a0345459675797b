"""Private NumPy helpers shared by :mod:`calibkit.streaming` and :mod:`calibkit.dask`.

They form the score groups of docs/spec.md from one *already validated* batch, compute SPEC's
adaptive edge positions, and turn kept scores (exact, or weighted as a sketch holds them) into
per-bin sufficient statistics (count, sum of scores, sum of outcomes) that
:func:`calibkit.bins.reduce_bins` reduces to a metric.

Conventions (binding, from docs/spec.md): scores keep the input dtype (float32 stays float32)
and are widened exactly to float64 before any comparison with a threshold or an edge; sums are
float64.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "adaptive_bin_sums",
    "adaptive_positions",
    "score_groups",
    "sorted_adaptive_bin_sums",
    "sorted_bin_sums",
    "weighted_adaptive_bin_sums",
]


def _keep(scores: np.ndarray, threshold: float) -> np.ndarray:
    # np.float64 is a "strong" scalar under NEP 50: the comparison happens in float64, as SPEC
    # requires for float32 input (a Python float would be cast to float32 first).
    return scores > np.float64(threshold)


def score_groups(labels: np.ndarray, probs: np.ndarray, max_prob: bool,
                 class_conditional: bool, threshold: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The kept ``(scores, outcomes)`` of every score group of one validated batch.

    Parameters
    ----------
    labels : numpy.ndarray of shape (N,), int64
        Validated labels in ``[0, K)``.
    probs : numpy.ndarray of shape (N, K), float32 or float64, C-contiguous
        Validated probabilities.
    max_prob, class_conditional : bool
    threshold : float
        Scores ``<= threshold`` are dropped (after the max-prob selection).

    Returns
    -------
    list of (scores, outcomes)
        One pair per group (K when ``class_conditional`` else 1); ``scores`` in the dtype of
        ``probs``, ``outcomes`` bool, both of length ``n_g``.

    Examples
    --------
    >>> p = np.array([[0.6, 0.4], [0.3, 0.7]])
    >>> [(s.tolist(), o.tolist()) for s, o in score_groups(np.array([0, 0]), p, True, True, 0.0)]
    [([0.6], [True]), ([0.7], [False])]
    """
    n, k = probs.shape
    if max_prob:
        pred = np.argmax(probs, axis=1)  # lowest index on ties
        top = np.take_along_axis(probs, pred[:, None], axis=1)[:, 0]
        correct = pred == labels
        keep = _keep(top, threshold)
        top, correct = top[keep], correct[keep]
        if not class_conditional:
            return [(top, correct)]
        pred = pred[keep]
        order = np.argsort(pred, kind="stable")
        splits = np.cumsum(np.bincount(pred, minlength=k))[:-1]
        return list(zip(np.split(top[order], splits), np.split(correct[order], splits)))
    if not class_conditional:
        flat = probs.reshape(-1)
        outcome = np.zeros(n * k, dtype=bool)
        outcome[np.arange(n) * k + labels] = True
        keep = _keep(flat, threshold)
        return [(flat[keep], outcome[keep])]
    cols = np.ascontiguousarray(probs.T)
    out = []
    for c in range(k):
        s = cols[c]
        keep = _keep(s, threshold)
        out.append((s[keep], (labels == c)[keep]))
    return out


def adaptive_positions(n: int, num_bins: int) -> np.ndarray:
    """0-based ranks of the ``num_bins - 1`` adaptive upper edges in a group of ``n`` scores.

    SPEC: ``pos_j = round_half_even(j * (n / B))`` in float64 for ``j = 0..B-1``, clipped to
    ``n - 1``; the upper edges are the sorted scores at ``pos_1 .. pos_{B-1}``.

    Examples
    --------
    >>> adaptive_positions(10, 3).tolist()
    [3, 7]
    """
    if n <= 0:
        return np.empty(0, dtype=np.int64)
    pos = np.round(np.arange(num_bins) * (n / num_bins)).astype(np.int64)
    return np.minimum(pos, n - 1)[1:]


def _bin_sums(idx, weights, scores64, outcomes, num_bins):
    counts = np.bincount(idx, weights=weights, minlength=num_bins)
    ws = scores64 if weights is None else weights * scores64
    wo = outcomes.astype(np.float64) if weights is None else weights * outcomes
    sum_score = np.bincount(idx, weights=ws, minlength=num_bins)
    sum_outcome = np.bincount(idx, weights=wo, minlength=num_bins)
    if weights is not None:
        counts = np.rint(counts).astype(np.int64)
    return counts, sum_score, sum_outcome


def adaptive_bin_sums(scores: np.ndarray, outcomes: np.ndarray, num_bins: int):
    """Exact per-bin sums of one group under SPEC's adaptive binning.

    Parameters
    ----------
    scores : numpy.ndarray of shape (n,), float32 or float64
        The group's kept scores, in any order.
    outcomes : numpy.ndarray of shape (n,), bool or 0/1
    num_bins : int

    Returns
    -------
    counts : numpy.ndarray of shape (num_bins,), int64
    sum_score, sum_outcome : numpy.ndarray of shape (num_bins,), float64
    edges : numpy.ndarray of shape (num_bins - 1,), float64
        The upper edges (empty if the group is empty).

    Examples
    --------
    >>> c, s, o, e = adaptive_bin_sums(np.arange(10.0), np.zeros(10, bool), 3)
    >>> c.tolist()
    [3, 4, 3]
    """
    s64 = np.asarray(scores, dtype=np.float64)
    n = s64.shape[0]
    if n == 0:
        return (np.zeros(num_bins, np.int64), np.zeros(num_bins), np.zeros(num_bins), np.empty(0))
    pos = adaptive_positions(n, num_bins)
    edges = np.partition(s64, pos)[pos] if pos.size else np.empty(0)
    idx = np.searchsorted(edges, s64, side="right")  # number of upper edges <= score
    return _bin_sums(idx, None, s64, np.asarray(outcomes), num_bins) + (edges,)


def _kth_of_union(a: np.ndarray, b: np.ndarray, r: int):
    """The value of 0-based rank ``r`` in the sorted union of sorted ``a`` and ``b``."""
    lo, hi = max(0, r + 1 - b.size), min(r + 1, a.size)
    while lo < hi:  # smallest i (taken from a) with a[i] >= b[r - i]
        i = (lo + hi) // 2
        j = r + 1 - i
        if j > 0 and a[i] < b[j - 1]:
            lo = i + 1
        else:
            hi = i
    j = r + 1 - lo
    return max(x for x in ((a[lo - 1] if lo > 0 else None), (b[j - 1] if j > 0 else None))
               if x is not None)


def _segment_sums(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """float64 sums of ``x[starts[i]:starts[i+1]]`` (last one to the end); 0 for empty ones."""
    out = np.zeros(starts.size)
    ends = np.append(starts[1:], x.size)
    nonempty = ends > starts
    if nonempty.any():
        out[nonempty] = np.add.reduceat(x, starts[nonempty], dtype=np.float64)
    return out


def sorted_adaptive_bin_sums(neg: np.ndarray, pos: np.ndarray, num_bins: int):
    """:func:`adaptive_bin_sums` of a group given as its sorted outcome-0 and outcome-1 scores.

    Sorting is SIMD-fast in NumPy, and with sorted scores every bin is a slice: the edges are
    order statistics of the union (a binary search per edge), the counts are differences of
    positions, the outcome sum of a bin is the count of its outcome-1 scores, and the score sum
    a slice sum.

    Parameters
    ----------
    neg, pos : numpy.ndarray, sorted ascending, float32 or float64
        The group's kept scores whose outcome is 0, resp. 1.
    num_bins : int

    Returns
    -------
    counts, sum_score, sum_outcome, edges : as :func:`adaptive_bin_sums`

    Examples
    --------
    >>> c, s, o, e = sorted_adaptive_bin_sums(np.arange(5.0), np.arange(5.0, 10.0), 3)
    >>> c.tolist(), o.tolist(), e.tolist()
    ([3, 4, 3], [0.0, 2.0, 3.0], [3.0, 7.0])
    """
    n = neg.size + pos.size
    if n == 0:
        return (np.zeros(num_bins, np.int64), np.zeros(num_bins), np.zeros(num_bins), np.empty(0))
    edges = np.array([_kth_of_union(neg, pos, int(r)) for r in adaptive_positions(n, num_bins)],
                     dtype=np.float64)
    return sorted_bin_sums(neg, pos, edges) + (edges,)


def sorted_bin_sums(neg: np.ndarray, pos: np.ndarray, edges: np.ndarray):
    """Per-bin sums of a group, given sorted outcome-0 / outcome-1 scores and upper ``edges``.

    A score s goes to bin ``#(edges <= s)`` (SPEC's left-closed rule), so there are
    ``len(edges) + 1`` bins.

    Returns
    -------
    counts : numpy.ndarray of int64; sum_score, sum_outcome : numpy.ndarray of float64

    Examples
    --------
    >>> c, s, o = sorted_bin_sums(np.array([0.1, 0.5]), np.array([0.5, 0.9]), np.array([0.5]))
    >>> c.tolist(), s.tolist(), o.tolist()
    ([1, 3], [0.1, 1.9], [0.0, 2.0])
    """
    num_bins = edges.size + 1
    counts = np.zeros(num_bins, np.int64)
    sum_score = np.zeros(num_bins)
    sum_outcome = np.zeros(num_bins)
    for x, is_pos in ((neg, False), (pos, True)):
        if x.size == 0:
            continue
        # bin b holds e_b <= s < e_{b+1}: it starts at the first score >= e_b
        starts = np.concatenate([[0], np.searchsorted(x, edges, side="left")])
        c = np.diff(np.append(starts, x.size))
        counts += c
        sum_score += _segment_sums(x, starts)
        if is_pos:
            sum_outcome += c
    return counts, sum_score, sum_outcome


def weighted_adaptive_bin_sums(values: np.ndarray, weights: np.ndarray, outcomes: np.ndarray,
                               num_bins: int):
    """SPEC's adaptive rule applied to a weighted sample (what a KLL sketch retains).

    An item of weight ``w`` stands for ``w`` equal scores; the group size is ``n = sum(w)``.
    Edge ``j`` is the item that covers rank ``pos_j`` in the weight-expanded sorted order; every
    item then goes to the bin given by the number of edges ``<= value``, carrying its weight.
    With all weights 1 this is exactly :func:`adaptive_bin_sums`.

    Parameters
    ----------
    values : numpy.ndarray of shape (m,)
    weights : numpy.ndarray of shape (m,), positive integers
    outcomes : numpy.ndarray of shape (m,), 0/1
    num_bins : int

    Returns
    -------
    counts : numpy.ndarray of shape (num_bins,), int64
    sum_score, sum_outcome : numpy.ndarray of shape (num_bins,), float64
    edges : numpy.ndarray of shape (num_bins - 1,), float64
        The estimated upper edges (empty if the sample is empty).

    Examples
    --------
    >>> c, s, o, e = weighted_adaptive_bin_sums(np.array([0.2, 0.5]), np.array([2, 2]),
    ...                                         np.array([0, 1]), 2)
    >>> c.tolist(), e.tolist()
    ([2, 2], [0.5])
    """
    v = np.asarray(values, dtype=np.float64)
    if v.shape[0] == 0:
        z = np.zeros(num_bins)
        return np.zeros(num_bins, np.int64), z, z.copy(), np.empty(0)
    order = np.argsort(v, kind="stable")
    v = v[order]
    w = np.asarray(weights, dtype=np.int64)[order]
    o = np.asarray(outcomes, dtype=np.float64)[order]
    cw = np.cumsum(w)
    pos = adaptive_positions(int(cw[-1]), num_bins)
    edges = v[np.searchsorted(cw, pos, side="right")]  # first item whose cumulative weight > pos
    idx = np.searchsorted(edges, v, side="right")
    counts, ss, so = _bin_sums(idx, w.astype(np.float64), v, o, num_bins)
    return counts, ss, so, edges
