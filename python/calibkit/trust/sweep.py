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

from .._params import as_choice, as_int
from .._toplabel import resolve
from .._validate import MAX_BINS, validate_inputs
from ..binned.bins import calibration_bins
from ..binned.groups import pair_groups, score_groups
from ..binned.table import sorted_bin_starts

__all__ = ["ece_sweep", "SweepResult"]


@dataclass(frozen=True)
class SweepResult:
    """Outcome of :func:`ece_sweep`: the error and the bin count the sweep chose."""

    value: float
    num_bins: int
    norm: str

    def __float__(self) -> float:
        return self.value


def _monotone(t) -> bool:
    return _rises(t.sum_outcome[0], t.counts[0])


def ece_sweep(labels=None, probs=None, *, norm: str = "l1", binning: str = "adaptive",
              max_prob: bool = True, threshold: float = 0.0, max_bins: int | None = None,
              sample_weight=None, confidence=None, correct=None) -> SweepResult:
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
    max_bins : int, optional
        Stop the sweep there (default: N, capped at calibkit's bin limit).
    sample_weight : array_like of shape (N,), optional
        Per-row weights. Unweighted, each bin count of the sweep costs O(B) (boundaries in the
        sorted scores, counts and outcome sums by prefix sums) and scores whose finest bins
        (one per distinct score) are already monotone skip the sweep, since every coarser
        binning of them is monotone too; weighted, each bin count is a full table, so a sweep
        that runs to thousands of bins on large data takes long (set ``max_bins``).
    confidence, correct : array_like of shape (N,), optional
        Top-label input in place of ``labels`` and ``probs`` (as for :func:`calibkit.gce`):
        each prediction's confidence and whether it was right.

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
    top = min(n, MAX_BINS) if max_bins is None else as_int(max_bins, "max_bins", 1)
    if sample_weight is None:
        if pairs is not None:
            ((s, o),) = pair_groups(pairs, False, threshold)
        else:
            y, p = validate_inputs(labels, probs)
            ((s, o),) = score_groups(y, p, max_prob, False, threshold)
        chosen = _unweighted_choice(s, o, binning, top)
        return SweepResult((table(chosen) if chosen > 1 else best).error(norm), chosen, norm)
    chosen = 1
    for b in range(2, top + 1):
        t = table(b)
        if not _monotone(t):
            break
        best, chosen = t, b
    return SweepResult(best.error(norm), chosen, norm)


def _unweighted_choice(s: np.ndarray, o: np.ndarray, binning: str, top: int) -> int:
    """The bin count the sweep stops at, for the kept scores ``s`` and outcomes ``o`` of
    unweighted (validated) input, without a table per bin count. Bins are value-defined, so in
    the sorted kept scores each bin is a range between boundaries
    (:func:`calibkit.binned.table.sorted_bin_starts`, the engine's rule); counts and outcome sums
    are integer differences of prefix sums, so the accuracies, hence every decision, are the
    tables'."""
    order = np.argsort(s, kind="stable")
    s = s[order].astype(np.float64)  # exact widening
    n = s.size
    cum = np.concatenate(([0], np.cumsum(o[order], dtype=np.int64)))
    starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
    ends = np.append(starts[1:], n)
    # Every binning groups whole runs of equal scores into consecutive bins: if the runs'
    # accuracies never decrease, no binning's do, and the sweep runs to the end.
    if n == 0 or _rises(cum[ends] - cum[starts], ends - starts):
        return top
    chosen = 1
    for b in range(2, top + 1):
        bounds = sorted_bin_starts(s, binning, b)
        if not _rises(np.diff(cum[bounds]), np.diff(bounds)):
            break
        chosen = b
    return chosen


def _rises(outcomes: np.ndarray, counts: np.ndarray) -> bool:
    """Whether the accuracies of the non-empty bins never decrease (as :func:`_monotone`)."""
    nz = counts > 0
    return bool(np.all(np.diff(outcomes[nz] / counts[nz]) >= 0))
