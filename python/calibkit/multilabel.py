"""Calibration error for multilabel classifiers: each label column is its own one-vs-rest problem.

Labels given as an (N, K) matrix of 0/1 mean *multilabel*: row i may carry any number of the K
labels, and ``probs[i, k]`` is the model's probability that label k applies (an independent
sigmoid output, so rows need not sum to 1). Every column is a binary problem with score
``probs[:, k]`` and outcome ``labels[:, k]``; the General Calibration Error then follows SPEC.md
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

from ._validate import RANGE_TOL
from .bins import reduce_bins
from .errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

__all__ = [
    "multilabel_gce",
    "multilabel_bins",
    "multilabel_evaluate",
    "validate_multilabel",
    "MultilabelError",
]

#: Probabilities may leave [0, 1] by this much (the core's ``RANGE_TOL``, rust/kernels/validate.rs).
_PROB_TOL = RANGE_TOL


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
    y = np.asarray(label_matrix)
    p = np.asarray(probs)
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
            f"label_matrix: multilabel labels must be 0 or 1, got {y[i, k]!r} at [{i}, {k}] "
            f"({int(bad.sum())} such entries); for integer class labels pass a 1-D array"
        )
    p64 = np.ascontiguousarray(p, dtype=np.float64)
    if not np.isfinite(p64).all():
        i, k = np.argwhere(~np.isfinite(p64))[0]
        raise InvalidProbabilitiesError(
            f"probs: contains NaN or infinite values (first at [{i}, {k}]); remove them first"
        )
    lo, hi = float(p64.min()), float(p64.max())
    if lo < -_PROB_TOL or hi > 1.0 + _PROB_TOL:
        raise InvalidProbabilitiesError(
            f"probs: multilabel probabilities must lie in [0, 1], found values in "
            f"[{lo:.6g}, {hi:.6g}]; apply a sigmoid to logits first"
        )
    return y64, p64


def _check_params(binning, max_prob, class_conditional, threshold, num_bins, norm="l1"):
    if isinstance(max_prob, (bool, np.bool_)) and bool(max_prob):
        raise MultilabelError(
            "max_prob: top-label metrics (ECE, RMSCE, class-conditional ECE, ...) are undefined "
            "for multilabel data, where a row can have several true labels; pass "
            "max_prob=False (e.g. SCE, ACE, TACE)"
        )
    if not isinstance(max_prob, (bool, np.bool_)):
        raise InputTypeError(f"max_prob: expected False for multilabel data, got {max_prob!r}")
    if not isinstance(class_conditional, (bool, np.bool_)):
        raise InputTypeError(
            f"class_conditional: expected True or False, got {class_conditional!r}"
        )
    if binning not in ("even", "adaptive"):
        raise InvalidParameterError(
            f"binning: expected 'even' or 'adaptive', got {binning!r}"
        )
    if norm not in ("l1", "l2", "max"):
        raise InvalidParameterError(f"norm: expected 'l1', 'l2' or 'max', got {norm!r}")
    if isinstance(num_bins, (bool, np.bool_)) or not isinstance(num_bins, numbers.Integral):
        raise InputTypeError(f"num_bins: expected a positive int, got {num_bins!r}")
    if num_bins < 1:
        raise InvalidParameterError(f"num_bins: must be at least 1, got {num_bins}")
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, numbers.Real):
        raise InputTypeError(f"threshold: expected a number in [0, 1), got {threshold!r}")
    if not (np.isfinite(threshold) and 0.0 <= threshold < 1.0):
        raise InvalidParameterError(
            f"threshold: expected a finite number in [0, 1), got {threshold!r}"
        )


class _Groups:
    """Kept (score, outcome) pairs of one (class_conditional, threshold) choice.

    Pairs are stored group after group (column after column when class-conditional). Even
    binning uses them as they are; adaptive binning sorts each group once (lazily, then shared
    by every bin count), so its edges come from position lookups.
    """

    def __init__(self, y: np.ndarray, p: np.ndarray, class_conditional: bool, threshold: float):
        k = p.shape[1]
        if class_conditional:
            pt, yt = p.T, y.T  # views; boolean indexing below copies column after column
            keep = pt > threshold
            self.s, self.o = pt[keep], yt[keep]
            sizes = keep.sum(axis=1)
        else:
            keep = p > threshold
            self.s, self.o = p[keep], y[keep]
            sizes = np.array([self.s.size])
        del keep
        self.sizes = sizes.astype(np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        self.g = np.repeat(np.arange(len(self.sizes), dtype=np.int64), self.sizes)
        self.num_groups = len(self.sizes)
        self.num_classes = k
        self._sorted = None

    def sorted(self):
        """(scores, outcomes, run_start) with each group sorted ascending (cached).

        ``run_start[i]`` is the first position of the run of values equal to ``scores[i]``
        within its group: where a bin whose lower edge is ``scores[i]`` starts.
        """
        if self._sorted is None:
            s = np.empty_like(self.s)
            o = np.empty_like(self.o)
            for a, b in zip(self.offsets[:-1], self.offsets[1:]):
                order = np.argsort(self.s[a:b], kind="stable")
                s[a:b] = self.s[a:b][order]
                o[a:b] = self.o[a:b][order]
            idx = np.arange(s.size)
            new_run = np.ones(s.size, dtype=bool)
            if s.size:
                new_run[1:] = (s[1:] != s[:-1]) | (self.g[1:] != self.g[:-1])
            run_start = np.maximum.accumulate(np.where(new_run, idx, 0)) if s.size else idx
            self._sorted = (s, o, run_start)
        return self._sorted

    def stats(self, binning: str, num_bins: int, threshold: float):
        """(counts, sum_score, sum_outcome, edges) in the CalibrationBins layout."""
        G, B = self.num_groups, num_bins
        if binning == "even":
            upper = np.linspace(0.0, 1.0, B + 1)[1:]
            nb = B + 1
            s, o = self.s, self.o
            b = np.searchsorted(upper, s, side="right")  # how many upper edges are <= s
            edges = np.broadcast_to(np.concatenate([[0.0], upper, [1.0]]), (G, nb + 1)).copy()
        else:
            nb = B
            s, o, run_start = self.sorted()
            n = self.sizes
            j = np.arange(B, dtype=np.float64)
            pos = np.rint(j[None, :] * (n[:, None] / B)).astype(np.int64)  # round half to even
            pos = np.minimum(pos, np.maximum(n[:, None] - 1, 0)) + self.offsets[:-1, None]
            nonempty = n > 0
            edges = np.full((G, nb + 1), np.nan)  # as the core: threshold, B-1 edges, 1.0
            edges[:, 0] = threshold
            edges[:, -1] = 1.0
            # bin boundaries as absolute positions in the sorted scores: a score goes to the bin
            # numbered by how many upper edges are <= it, so bin j (j >= 1) starts at the first
            # occurrence of the value at pos_j (ties on an edge all move to the upper bin)
            starts = np.empty((G, B + 1), dtype=np.int64)
            starts[:, 0] = self.offsets[:-1]
            starts[:, B] = self.offsets[1:]
            if B > 1:
                safe = np.where(nonempty[:, None], pos[:, 1:], 0)
                if s.size:
                    edges[:, 1:B] = np.where(nonempty[:, None], s[safe], np.nan)
                    starts[:, 1:B] = np.where(
                        nonempty[:, None], run_start[safe], self.offsets[:-1, None]
                    )
                else:
                    starts[:, 1:B] = 0
            counts_per_bin = np.diff(starts, axis=1).reshape(-1)
            b = np.repeat(np.tile(np.arange(B), G), counts_per_bin)
        flat = self.g * nb + b
        size = G * nb
        counts = np.bincount(flat, minlength=size).reshape(G, nb).astype(np.int64)
        sum_score = np.bincount(flat, weights=s, minlength=size).reshape(G, nb)
        sum_outcome = np.bincount(flat, weights=o, minlength=size).reshape(G, nb)
        return counts, sum_score, sum_outcome, edges


def _make_bins(counts, sum_score, sum_outcome, edges, num_classes, class_conditional, binning,
               threshold):
    from .bins import CalibrationBins

    return CalibrationBins(
        counts=counts,
        sum_score=sum_score,
        sum_outcome=sum_outcome,
        edges=edges,
        num_classes=num_classes,
        binning=binning,
        class_conditional=class_conditional,
        max_prob=False,
        threshold=threshold,
    )


def multilabel_bins(
    label_matrix,
    probs,
    *,
    binning: str = "even",
    max_prob: bool = False,
    class_conditional: bool = True,
    threshold: float = 0.0,
    num_bins: int = 15,
):
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
    _check_params(binning, max_prob, class_conditional, threshold, num_bins)
    y, p = validate_multilabel(label_matrix, probs)
    groups = _Groups(y, p, bool(class_conditional), float(threshold))
    c, s, o, e = groups.stats(binning, int(num_bins), float(threshold))
    return _make_bins(c, s, o, e, p.shape[1], bool(class_conditional), binning,
                      float(threshold))


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
    _check_params(binning, max_prob, class_conditional, threshold, num_bins, norm)
    y, p = validate_multilabel(label_matrix, probs)
    groups = _Groups(y, p, bool(class_conditional), float(threshold))
    c, s, o, _ = groups.stats(binning, int(num_bins), float(threshold))
    return float(reduce_bins(c, s, o, norm=norm, class_conditional=bool(class_conditional)))


def multilabel_evaluate(label_matrix, probs, space=None, num_bins=(10, 15, 20, 30, 40, 50)):
    """Every metric of a space at every bin count for multilabel predictions.

    The multilabel counterpart of :func:`calibkit.evaluate` (which dispatches here when the
    labels are 2-D). Scores are grouped and sorted once per (class_conditional, threshold), bin
    statistics computed once per (binning, bin count) and shared by all norms.

    Parameters
    ----------
    label_matrix : array_like of shape (N, K)
    probs : array_like of shape (N, K)
    space : MetricSpace or sequence of metrics, optional
        Default: the 16 metrics of the paper's space with ``max_prob=False``. A space holding a
        top-label metric is refused with :class:`MultilabelError`.
    num_bins : int or sequence of int, default (10, 15, 20, 30, 40, 50)

    Returns
    -------
    calibkit.space.Evaluation
        With ``multilabel=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.multilabel import multilabel_evaluate
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=(100, 3)); y = (rng.uniform(size=(100, 3)) < p).astype(int)
    >>> multilabel_evaluate(y, p, space=["SCE", "ACE"], num_bins=10).values.shape
    (2, 1)
    """
    from .evaluation import Evaluation, _as_num_bins
    from .space import _as_space, metric_space

    space = metric_space(max_prob=False) if space is None else _as_space(space)
    bins = _as_num_bins(num_bins)
    top = [s.name for s in space if s.max_prob]
    if top:
        raise MultilabelError(
            f"space: top-label metrics {top} are undefined for multilabel data (several true "
            f"labels per row); use a space with max_prob=False, e.g. "
            f"metric_space(max_prob=False)"
        )
    for spec in space:
        for b in bins:
            _check_params(spec.binning, False, spec.class_conditional, spec.threshold, b, spec.norm)
    y, p = validate_multilabel(label_matrix, probs)
    values = np.empty((len(space), len(bins)))
    group_cache: dict[tuple[bool, float], _Groups] = {}
    stats_cache: dict[tuple[bool, float, str, int], tuple] = {}
    for i, spec in enumerate(space):
        gkey = (spec.class_conditional, spec.threshold)
        if gkey not in group_cache:
            group_cache[gkey] = _Groups(y, p, spec.class_conditional, spec.threshold)
        for j, b in enumerate(bins):
            skey = (*gkey, spec.binning, b)
            if skey not in stats_cache:
                stats_cache[skey] = group_cache[gkey].stats(spec.binning, b, spec.threshold)[:3]
            c, s, o = stats_cache[skey]
            values[i, j] = reduce_bins(
                c, s, o, norm=spec.norm, class_conditional=spec.class_conditional
            )
    return Evaluation(
        values, space, bins, n_samples=p.shape[0], num_classes=p.shape[1], multilabel=True
    )
