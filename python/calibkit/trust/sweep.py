"""ECE_sweep (Roelofs, Cain, Shlens & Mozer 2022, "Mitigating bias in calibration error
estimation", AISTATS): the bin count chosen from the data.

Sweep ``b = 1, 2, ...`` equal-mass bins of the top-label confidence and keep the largest ``b``
for which the bins' accuracies are monotone (non-decreasing in confidence, over non-empty bins);
the sweep stops at the first ``b`` that breaks monotonicity (or at ``N`` bins). The estimate is the
binned error at that ``b``. The rationale: a true calibration curve is usually monotone, so
non-monotone bin accuracies mean the bins have become small enough to fit noise; stopping just
before that balances the binning bias (too few bins) against the variance bias (too many).
The bins are calibkit's adaptive bins (SPEC's positions), so ``ece_sweep(...).num_bins = b`` gives
the same value as ``gce(binning="adaptive", num_bins=b, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native
from .._params import as_choice, as_int
from .._progress import Progress
from .._toplabel import resolve
from .._validate import MAX_BINS, validate_inputs
from ..binned.bins import calibration_bins
from ..binned.groups import pair_groups, score_groups
from ..binned.table import adaptive_ranks, even_bin_of, even_edges
from ..binned.weights import as_sample_weight, form_triples, pair_triples

__all__ = ["ece_sweep", "SweepResult"]


@dataclass(frozen=True)
class SweepResult:
    """Outcome of :func:`ece_sweep`: the error and the bin count the sweep chose."""

    value: float
    num_bins: int
    norm: str

    def __float__(self) -> float:
        return self.value


def ece_sweep(labels=None, probs=None, *, norm: str = "l1", binning: str = "adaptive",
              max_prob: bool = True, threshold: float = 0.0, max_bins: int | None = None,
              sample_weight=None, confidence=None, correct=None, progress=None) -> SweepResult:
    """The monotonic-sweep calibration error (ECE_sweep) and the bin count it chose.

    Parameters
    ----------
    labels, probs : array_like
        As for :func:`calibkit.gce`.
    norm : {"l1", "l2"}, default "l1"
        l1: ECE_sweep; l2: the RMS form (weight outside the square, one square root).
    binning : {"adaptive", "even"}, default "adaptive"
        Equal-mass bins (the paper's EM sweep) or equal-width bins (EW sweep).
    max_prob : bool, default True
        Top-label confidence (the paper's setting) or all probabilities pooled.
    threshold : float, default 0.0
    max_bins : int in [1, calibkit's bin limit], optional
        Stop the sweep there (default: N, capped at calibkit's bin limit; weighted, N is the
        total weight when every weight is an integer, as if each row were repeated ``weight``
        times, else the rows of positive weight).
    sample_weight : array_like of shape (N,), optional
        Per-row weights; integer weights give the sweep of the repeated rows. Weighted or not,
        the sweep costs O(N log N) (a sort and an isotonic fit) plus O(log N) per boundary
        that falls inside a pooled block of that fit: no table is built per bin count (see
        ``_choice`` in ``trust/sweep.py``).
    confidence, correct : array_like of shape (N,), optional
        Top-label input in place of ``labels`` and ``probs`` (as for :func:`calibkit.gce`):
        each prediction's confidence and whether it was right.
    progress : bool or None, default None
        A progress bar of the bin counts tried, on stderr (:mod:`calibkit._progress`): None =
        when stderr is a terminal and the sweep runs over a second, True = always, False = never.

    Returns
    -------
    SweepResult
        ``value`` and ``num_bins``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 5000)
    >>> y = (rng.uniform(size=5000) < p ** 2).astype(int)   # over-confident
    >>> r = calibkit.ece_sweep(y, p)
    >>> r.num_bins > 1, abs(r.value - calibkit.gce(y, p, binning="adaptive", num_bins=r.num_bins)) < 1e-12
    (True, True)
    """
    norm = as_choice(norm, "norm", ("l1", "l2"), " (the sweep's norms)")
    pairs = resolve(labels, probs, confidence, correct)

    def table(b):
        return calibration_bins(labels, probs, binning=binning, max_prob=max_prob,
                                class_conditional=False, threshold=threshold, num_bins=b,
                                sample_weight=sample_weight, confidence=confidence,
                                correct=correct)

    best = table(1)  # validates every argument and value (before reading the row count)
    n = pairs.n if pairs is not None else int(np.shape(labels)[0])
    if sample_weight is None:
        w = None
        if pairs is not None:
            ((s, o),) = pair_groups(pairs, False, threshold)
        else:
            y, p = validate_inputs(labels, probs)
            ((s, o),) = score_groups(y, p, max_prob, False, threshold)
    else:
        if pairs is not None:
            tr = pair_triples(pairs, binning=binning, class_conditional=False,
                              threshold=threshold, num_bins=1)
        else:
            tr = form_triples(labels, probs, binning=binning, max_prob=max_prob,
                              class_conditional=False, threshold=threshold, num_bins=1)
        sw = as_sample_weight(sample_weight, n)
        s, o, w = tr.score, tr.outcome, tr.weight_of(sw)
        n = _weighted_rows(sw)
    top = min(n, MAX_BINS) if max_bins is None else as_int(max_bins, "max_bins", 1, MAX_BINS)
    with Progress(None, "ECE sweep", progress, unit="bin counts"):
        chosen = _choice(s, o, w, binning, top)
    return SweepResult((table(chosen) if chosen > 1 else best).error(norm), chosen, norm)


def _weighted_rows(sample_weight: np.ndarray) -> int:
    """The rows a weighted sweep may split its data into: the total weight when every weight is
    an integer (the rows of the data with each row repeated ``weight`` times), else the rows of
    positive weight."""
    if np.all(sample_weight == np.floor(sample_weight)):
        return int(min(float(np.sum(sample_weight)), MAX_BINS))
    return int(np.count_nonzero(sample_weight))


def _choice(s: np.ndarray, o: np.ndarray, w: np.ndarray | None, binning: str, top: int) -> int:
    """The bin count the sweep stops at for kept scores ``s``, outcomes ``o`` and weights ``w``
    (None: all 1), without a table per bin count.

    Bins are value-defined, so in the sorted scores each bin is a range of rows, found by the
    engine's edge rules for many bin counts at once (:func:`calibkit.binned.table.even_edges`,
    :func:`~calibkit.binned.table.even_bin_of`, and the weighted ranks of ``grouped_bin_stats``,
    :func:`~calibkit.binned.table.adaptive_ranks`); bin weights and outcome sums are
    differences of prefix sums (exact integers unweighted, so every decision is the tables').

    Which boundaries can break monotonicity is known before the sweep: pool the runs of equal
    scores into the blocks of their isotonic (pool-adjacent-violators) fit. A boundary between
    two blocks never does: the bin left of it is at most the mean of the block ending there
    (every suffix of a block is at most the block's mean, and the blocks' means rise), the bin
    right of it at least the mean of the block starting there. So only boundaries inside a
    block are checked, each in O(log N) from the prefix sums, for all the bin counts of a chunk
    at once; chunks grow geometrically and the sweep stops at the first failing bin count. The
    cost is O(N log N) for the sort and the fit plus O(log N) per (bin count, boundary inside a
    block): linear overall when few rows are out of order, as in the sweeps that took an hour.
    """
    order = np.argsort(s, kind="stable")
    s = s[order].astype(np.float64)  # exact widening
    o = np.asarray(o, dtype=np.float64)[order]
    if w is not None:
        w = np.asarray(w, dtype=np.float64)[order]
        pos = w > 0  # weight 0 drops a row
        s, o, w = s[pos], o[pos], w[pos]
    m = s.size
    if m == 0 or top <= 1:
        return top
    # Prefix sums of the weights of the rows with outcome 1 and of those with outcome 0: a bin
    # of only one outcome then has accuracy exactly 1 or 0 (a difference of a flat prefix sum
    # is exactly 0), as the tables' exact sums give it; unweighted, all are integers.
    # The weight axis of the adaptive ranks is the kernels' sequential cumulative weight.
    if w is None:  # counts: exact integers
        cw = np.arange(m + 1.0)
        c1 = np.concatenate(([0.0], np.cumsum(o)))
        c0 = cw - c1
    else:
        # the kernels' lift of small weights (a power of two: exact), so that the ranks are
        # the tables' whole units of weight (rust/kernels/weighted/grouped.rs, `edge_ranks`)
        w = w * _native.weight_scale(float(w.max()))
        cw = np.concatenate(([0.0], np.cumsum(w)))
        c1 = np.concatenate(([0.0], np.cumsum(w * o)))
        c0 = np.concatenate(([0.0], np.cumsum(w * (1.0 - o))))
    # Most sweeps stop within a few dozen bin counts: check every boundary of those first.
    first_top = min(top, _FIRST)
    every = _Sweep(s, cw, c0, c1, None, binning)
    for lo, hi in ((2, 64), (65, first_top)):  # the second only when no count below 65 failed
        bad = every.failing(np.arange(lo, min(hi, first_top) + 1))
        if bad.size:
            return int(bad.min()) - 1
    if first_top == top:
        return top
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    ends = np.append(starts[1:], m)
    ry = c1[ends] - c1[starts]
    rw = ry + (c0[ends] - c0[starts])
    # Every binning groups whole runs of equal scores into consecutive bins: if the runs'
    # accuracies never decrease, no binning's do, and the sweep runs to the end.
    if _rises(ry, rw):
        return top
    inside = _inside_blocks(starts, ends, ry, rw, c0, c1)
    sweep = _Sweep(s, cw, c0, c1, np.repeat(inside, ends - starts), binning)
    # maximal stretches of consecutive inside runs
    first = np.flatnonzero(inside & ~np.concatenate(([False], inside[:-1])))
    last = np.flatnonzero(inside & ~np.append(inside[1:], False))
    if binning == "even":  # score intervals (s[k-1], s[k]] whose edges start an inside run
        segments = (s[starts[first] - 1], s[starts[last]])
    else:  # rows [start, end) of the inside runs
        segments = (starts[first], ends[last])
    # Chunks double, but hold at most _CANDIDATES candidate edges: a bin count costs about
    # min(B, 4 x segments) of them (every edge, or the segments' matrix and hits).
    b, chunk = first_top + 1, 64
    while b <= top:
        chunk = max(1, min(chunk, _CANDIDATES // max(1, min(b + chunk, 4 * first.size))))
        bs = np.arange(b, min(top, b + chunk - 1) + 1)
        bad = sweep.failing(bs, *segments)
        if bad.size:
            return int(bad.min()) - 1
        b, chunk = int(bs[-1]) + 1, min(chunk * 2, 1 << 14)
    return top


#: Bin counts checked boundary by boundary before the isotonic fit (most sweeps stop there).
_FIRST = 256
#: Most candidate edges examined at once (bounds the sweep's temporary arrays).
_CANDIDATES = 1 << 22


def _inside_blocks(starts, ends, ry, rw, c0, c1) -> np.ndarray:
    """Which runs begin inside a block of the runs' isotonic fit (True: the boundary before
    the run may break monotonicity; False: it never does).

    The fit's level sets (runs of one fitted value, means rising by more than rounding between
    them) are unions of blocks. Inside a level set of mean m every prefix has mean >= m, and a
    boundary whose prefix has mean exactly m splits it into two valid blocks: so a boundary is
    safe where its prefix in the level set has the level's mean, tested as
    ``prefix_outcome * level_weight == prefix_weight * level_outcome`` (exact for counts;
    with weights, inexact products only mark more boundaries as inside, which costs time,
    never correctness)."""
    fit = _native.isotonic_fit(np.arange(starts.size, dtype=np.float64), ry / rw, rw)
    level = np.concatenate(([0], np.cumsum(np.diff(fit) > 1e-12)))
    first = np.flatnonzero(np.concatenate(([True], level[1:] != level[:-1])))
    last = np.append(first[1:], starts.size) - 1
    a, e = starts[first][level], ends[last][level]  # each run's level set, as rows [a, e)
    k = starts
    d1, dw = c1[k] - c1[a], (c1[k] + c0[k]) - (c1[a] + c0[a])
    big1, bigw = c1[e] - c1[a], (c1[e] + c0[e]) - (c1[a] + c0[a])
    return (k != a) & (d1 * bigw != dw * big1)


class _Sweep:
    """Bins of sorted scores ``s`` (with the prefix sums ``cw`` of the weights, ``c0`` and
    ``c1`` of the weights of outcome 0 and 1, and ``inside``: whether each row's run begins
    inside an isotonic block, None for every row) at many bin counts, boundary by boundary."""

    def __init__(self, s, cw, c0, c1, inside, binning):
        self.s, self.cw, self.c0, self.c1 = s, cw, c0, c1
        self.inside, self.binning, self.m = inside, binning, s.size

    def rs(self, rows):
        """First row of the run (of equal scores) of each row."""
        return np.searchsorted(self.s, self.s[rows], side="left")

    def re(self, rows):
        """End (one past the last row) of the run of each row."""
        return np.searchsorted(self.s, self.s[rows], side="right")

    def failing(self, bs: np.ndarray, lo: np.ndarray | None = None,
                hi: np.ndarray | None = None) -> np.ndarray:
        """The bin counts of ``bs`` at which a boundary inside ``[lo, hi)`` (rows, adaptive) or
        ``(lo, hi]`` (scores, even) joins two non-empty bins whose accuracies decrease (no
        segments: every boundary)."""
        if lo is None or hi is None or int(bs.sum()) <= bs.size * max(lo.size, 1) * 4:
            # every edge (a check of all boundaries, or fewer candidates than the segments')
            b, j = self._every_edge(bs)
        else:
            b, j = self._hits(bs, lo, hi)
        # keep the edges that start a run inside a block, each (b, boundary) once
        if self.binning == "even":
            row = np.searchsorted(self.s, self._edge(b, j), side="left")
            keep = row < self.m
            if self.inside is not None:
                keep[keep] = self.inside[row[keep]]
        else:
            row = self._position(b, j)
            keep = np.ones(row.size, bool) if self.inside is None else self.inside[row]
        b, j, row = b[keep], j[keep], row[keep]
        if not b.size:
            return b
        _, once = np.unique(b * (self.m + 1) + (self.rs(row) if self.binning != "even" else row),
                            return_index=True)
        b, j = b[once], j[once]
        if self.binning == "even":
            k, left, right = self._even_bins(b, j)
        else:
            k, left, right = self._adaptive_bins(b, j)
        ok = (k > left) & (right > k)
        b, k, left, right = b[ok], k[ok], left[ok], right[ok]
        return b[self._accuracy(left, k) > self._accuracy(k, right)]

    def _accuracy(self, a, c):
        """Weighted accuracy of the rows ``[a, c)`` (non-empty)."""
        y = self.c1[c] - self.c1[a]
        return y / (y + (self.c0[c] - self.c0[a]))

    # -- the edges u_j (even) or weighted ranks t_j (adaptive) of bin count b ------------------
    def _edge(self, b, j):
        if self.binning == "even":
            return even_edges(b, j)
        return adaptive_ranks(b, j, self.cw[-1])

    def _every_edge(self, bs):
        """Every (b, j) pair of the bin counts ``bs``: j = 1..B (even), 1..B-1 (adaptive)."""
        last = bs if self.binning == "even" else bs - 1
        count = np.maximum(last, 0)
        b = np.repeat(bs, count)
        j = np.arange(b.size) - np.repeat(np.cumsum(count) - count, count) + 1
        return b, j

    def _hits(self, bs, lo, hi):
        """(b, j) pairs whose edge j falls in a segment, with a margin checked exactly."""
        if self.binning == "even":
            a, c = lo[None, :] * bs[:, None], hi[None, :] * bs[:, None]
        else:
            step = (self.cw[-1] / bs)[:, None]
            a = (self.cw[lo][None, :] - 0.5) / step
            c = (self.cw[hi][None, :] + 0.5) / step
        jlo = np.maximum(np.floor(a) - 1, 1).astype(np.int64)
        jhi = np.minimum(np.ceil(c) + 1, (bs if self.binning == "even" else bs - 1)[:, None])
        count = np.maximum(jhi.astype(np.int64) - jlo + 1, 0)
        total = int(count.sum())
        if total == 0:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        flat = count.ravel()
        b = np.repeat(np.broadcast_to(bs[:, None], count.shape).ravel(), flat)
        first = np.repeat(jlo.ravel(), flat)
        offset = np.arange(total) - np.repeat(np.cumsum(flat) - flat, flat)
        return b, first + offset

    def _even_bins(self, b, j):
        s, m = self.s, self.m
        k = np.searchsorted(s, self._edge(b, j), side="left")
        k = np.minimum(k, m - 1)
        prev = np.maximum(k - 1, 0)
        g_left, g_right = even_bin_of(s[prev], b), even_bin_of(s[k], b)
        left = np.where(g_left == 0, 0, np.searchsorted(s, self._edge(b, g_left), side="left"))
        right = np.where(g_right >= b, m,
                         np.searchsorted(s, self._edge(b, g_right + 1), side="left"))
        # the boundary exists only where the two rows fall in different bins
        k = np.where(g_left != g_right, k, left)
        return k, left, right


    def _position(self, b, j):
        """Row of the adaptive edge j of bin count b: the first row whose cumulative weight
        exceeds the weighted rank t_j, or the last row (SPEC's clip of pos_j to n - 1)."""
        t = self._edge(b, j)
        return np.minimum(np.searchsorted(self.cw[1:], t, side="right"), self.m - 1)

    def _adaptive_bins(self, b, j):
        step = self.cw[-1] / b
        k = self.rs(self._position(b, j))
        # the last edge left of row k (rank below cw[k]) and the first right of its run
        jl = self._last_below(b, step, self.cw[k])
        left = np.where(jl >= 1, self.rs(self._position(b, np.maximum(jl, 1))), 0)
        end = self.re(np.minimum(k, self.m - 1))
        jr = self._last_below(b, step, self.cw[end]) + 1
        right = np.where((jr <= b - 1) & (end < self.m),
                         self.rs(self._position(b, np.minimum(jr, b - 1))), self.m)
        return k, left, right

    def _last_below(self, b, step, limit):
        """The largest j in [0, b - 1] with t_j < limit (t_0 = -inf), by an estimate corrected
        exactly (t_j rises with j)."""
        guess = np.floor((limit - 0.5) / step).astype(np.int64)
        best = np.zeros_like(guess)
        for d in range(-3, 4):
            cand = np.clip(guess + d, 1, b - 1)
            best = np.where(self._edge(b, cand) < limit, np.maximum(best, cand), best)
        return best


def _rises(outcomes: np.ndarray, counts: np.ndarray) -> bool:
    """Whether the accuracies of the non-empty bins never decrease."""
    nz = counts > 0
    return bool(np.all(np.diff(outcomes[nz] / counts[nz]) >= 0))
