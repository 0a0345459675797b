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

from ..bins import calibration_bins
from ..errors import InvalidParameterError
from .._validate import MAX_BINS

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
    c = t.counts[0]
    acc = t.sum_outcome[0][c > 0] / c[c > 0]
    return bool(np.all(np.diff(acc) >= 0))


def ece_sweep(labels, probs, *, norm: str = "l1", binning: str = "adaptive",
              max_prob: bool = True, threshold: float = 0.0, max_bins: int | None = None,
              sample_weight=None) -> SweepResult:
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
    if norm not in ("l1", "l2"):
        raise InvalidParameterError(f"norm must be 'l1' or 'l2' for the sweep, got {norm!r}")
    n = int(np.shape(labels)[0])
    top = min(n, MAX_BINS) if max_bins is None else int(max_bins)
    if top < 1:
        raise InvalidParameterError(f"max_bins must be a positive integer, got {max_bins!r}")

    def table(b):
        return calibration_bins(labels, probs, binning=binning, max_prob=max_prob,
                                class_conditional=False, threshold=threshold, num_bins=b,
                                sample_weight=sample_weight)

    best = table(1)
    chosen = 1
    for b in range(2, top + 1):
        t = table(b)
        if not _monotone(t):
            break
        best, chosen = t, b
    return SweepResult(best.error(norm), chosen, norm)
