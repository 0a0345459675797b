"""Private NumPy helper shared by :mod:`calibkit.streaming` and :mod:`calibkit.dask`: the
score groups of docs/spec.md from one *already validated* batch. Binning them is the primitive's job
(:func:`calibkit.binned.table.grouped_bin_stats`, ``docs/weighted-bins.md``).

Conventions (binding, from docs/spec.md): scores keep the input dtype (float32 stays float32)
and are widened exactly to float64 before any comparison with a threshold or an edge; sums are
float64.
"""

from __future__ import annotations

import numpy as np

# SPEC's positions come from the kernel (rust/kernels/edges.rs); re-exported for the tests that
# compare sketch edges with them.
from .table import adaptive_positions

__all__ = ["adaptive_positions", "score_groups"]


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
