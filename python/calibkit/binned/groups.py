"""The score groups of docs/spec.md from one *already validated* batch, for the modules that
bin kept scores themselves (:mod:`calibkit.streaming`, :mod:`calibkit.dask`, the sweep).
Binning them is the primitive's job (:func:`calibkit.binned.table.grouped_bin_stats`,
``docs/weighted-bins.md``).

The rules are the kernels': a row's top label is the one ``rust/kernels/gce/rows.rs`` takes
(the first maximum, via ``_native.score_rows``); a score is kept when it exceeds the threshold
compared in float64 (:func:`kept`); a group's scores keep their input order
(:func:`split_by_group`). Scores keep the input dtype (float32 stays float32) and are widened
exactly to float64 before any comparison with a threshold or an edge; sums are float64.
"""

from __future__ import annotations

import numpy as np

from .. import _native

# SPEC's positions come from the kernel (rust/kernels/core/edges.rs); re-exported for the tests
# that compare sketch edges with them.
from .table import adaptive_positions

__all__ = ["adaptive_positions", "kept", "split_by_group", "score_groups", "pair_groups"]


def kept(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Which scores a metric keeps: those above ``threshold``, compared in float64."""
    # np.float64 is a "strong" scalar under NEP 50: the comparison happens in float64, as SPEC
    # requires for float32 input (a Python float would be cast to float32 first).
    return scores > np.float64(threshold)


def split_by_group(scores: np.ndarray, outcomes: np.ndarray, group: np.ndarray | None,
                   num_groups: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(scores, outcomes)`` per group ``0..num_groups`` (one group when ``group`` is None), in
    input order within a group."""
    if group is None:
        return [(scores, outcomes)]
    order = np.argsort(group, kind="stable")
    splits = np.cumsum(np.bincount(group, minlength=num_groups))[:-1]
    return list(zip(np.split(scores[order], splits), np.split(outcomes[order], splits)))


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
        # every row's top label as the kernels take it, then the threshold
        pred, top, correct, _ = _native.score_rows(labels, probs, True, True, float("-inf"), False)
        keep = kept(top, threshold)
        top = top[keep].astype(probs.dtype, copy=False)  # exact: the kernel widened the score
        return split_by_group(top, correct[keep] > 0.5, pred[keep] if class_conditional else None, k)
    if not class_conditional:
        flat = probs.reshape(-1)
        outcome = np.zeros(n * k, dtype=bool)
        outcome[np.arange(n) * k + labels] = True
        keep = kept(flat, threshold)
        return [(flat[keep], outcome[keep])]
    cols = np.ascontiguousarray(probs.T)
    out = []
    for c in range(k):
        s = cols[c]
        keep = kept(s, threshold)
        out.append((s[keep], (labels == c)[keep]))
    return out


def pair_groups(pairs, class_conditional: bool,
                threshold: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """The kept ``(scores, outcomes)`` of each group of validated top-label pairs
    (:class:`calibkit._toplabel.Pairs`), as :func:`score_groups` forms them from a matrix:
    scores in the dtype of ``confidence``, outcomes bool, groups in predicted-class order; kept
    by the pair form's rule (:func:`calibkit._toplabel.kept_rows`: every pair at threshold 0)."""
    from .._toplabel import kept_rows

    keep = kept_rows(pairs.confidence, threshold)
    group = None
    if class_conditional:
        assert pairs.predicted is not None  # require_top_label: class-conditional pairs have it
        group = pairs.predicted[keep]
    return split_by_group(pairs.confidence[keep], pairs.correct[keep].view(bool), group, pairs.k)
