"""The integrated calibration index (Austin & Steyerberg, Stat. Med. 2019) and its quantiles.

ICI is the mean of ``|c(p_i) - p_i|``, where ``c`` is a smoothed calibration curve (the observed
frequency of the positive class as a function of ``p``); E50, E90 and Emax are the median, 90th
percentile and maximum of the same differences.

**Smoother.** Austin & Steyerberg smooth by loess; calibkit uses the isotonic regression of the
outcome on ``p`` (pool-adjacent-violators, ties pooled), the CORP reliability curve of
:func:`calibkit.binary.decompose` (Dimitriadis, Gneiting & Jordan 2021): it needs no span or
bandwidth, is monotone, and is the curve whose score CORP's miscalibration compares with the
predictions'. Loess values differ (they depend on the span; loess is smoother, so its Emax is
usually smaller).
"""

from __future__ import annotations

import numpy as np

from ..binfree.decompose import recalibrate
from ..binned.weights import as_sample_weight
from ._labels import binary_inputs
from .results import CalibrationIndex

__all__ = ["calibration_index"]


def _weighted_quantile(v: np.ndarray, w: np.ndarray, q: float) -> float:
    """The smallest value whose cumulative weight share reaches ``q`` (unweighted: the
    ``inverted_cdf`` quantile)."""
    order = np.argsort(v, kind="stable")
    cw = np.cumsum(w[order])
    i = int(np.searchsorted(cw, q * cw[-1] * (1 - 1e-12)))
    return float(v[order][min(i, v.size - 1)])


def calibration_index(y_true, y_prob, *, pos_label=None, sample_weight=None) -> CalibrationIndex:
    """ICI, E50, E90 and Emax of P(y = pos_label) (see the module docstring for the smoother).

    Parameters
    ----------
    y_true, y_prob, pos_label
        As :func:`calibkit.binary.ece`.
    sample_weight : array_like of shape (N,), optional
        Weights of the isotonic fit, the mean and the quantiles (``inverted_cdf``).

    Returns
    -------
    CalibrationIndex

    Examples
    --------
    >>> import calibkit
    >>> r = calibkit.binary.calibration_index([0, 0, 1, 1], [0.1, 0.4, 0.3, 0.8])
    >>> round(r.ici, 4), round(r.emax, 4)
    (0.15, 0.2)
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    p = np.clip(b.prob.astype(np.float64), 0.0, 1.0)
    y = b.positive.astype(np.float64)
    w = None if sample_weight is None else as_sample_weight(sample_weight, p.shape[0])
    d = np.abs(recalibrate(p, y, w) - p)
    ww = np.ones_like(d) if w is None else w
    return CalibrationIndex(float(np.dot(ww, d) / ww.sum()), _weighted_quantile(d, ww, 0.5),
                            _weighted_quantile(d, ww, 0.9), float(d[ww > 0].max()), "isotonic")
