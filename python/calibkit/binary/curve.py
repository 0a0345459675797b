"""The calibration curve of P(y = pos_label), with scikit-learn's ``calibration_curve``
signature and return value, read from the binary table (:func:`calibkit.binary.calibration_bins`).

Differences from scikit-learn (same ``n_bins``): ``"uniform"`` bins are left-closed with the
last bin closed (a score exactly on an inner edge ``j / n_bins`` goes to the upper bin, as in
torchmetrics and the engine; scikit-learn puts it in the lower one); ``"quantile"`` bins are the
engine's equal-mass bins (docs/spec.md) instead of ``numpy.percentile`` edges.
"""

from __future__ import annotations

import numpy as np

from .._params import as_choice
from .metrics import calibration_bins

__all__ = ["calibration_curve", "STRATEGIES"]

#: scikit-learn's strategy -> the engine's binning.
STRATEGIES = {"uniform": "even", "quantile": "adaptive"}


def calibration_curve(y_true, y_prob, *, pos_label=None, n_bins: int = 5,
                      strategy: str = "uniform",
                      sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """Observed frequency and mean predicted probability of each non-empty bin.

    Parameters
    ----------
    y_true, y_prob, pos_label, sample_weight
        As :func:`calibkit.binary.ece`.
    n_bins : int, default 5
    strategy : {"uniform", "quantile"}, default "uniform"

    Returns
    -------
    prob_true : numpy.ndarray of shape (M,)
        Share of positives in each non-empty bin (M <= n_bins), in bin order.
    prob_pred : numpy.ndarray of shape (M,)
        Mean ``y_prob`` in each non-empty bin.

    Examples
    --------
    >>> import calibkit
    >>> y = [0, 0, 1, 1, 1]
    >>> p = [0.0, 0.3, 0.6, 0.9, 1.0]
    >>> prob_true, prob_pred = calibkit.binary.calibration_curve(y, p, n_bins=2)
    >>> prob_true.tolist(), prob_pred.round(6).tolist()
    ([0.0, 1.0], [0.15, 0.833333])
    """
    binning = STRATEGIES[as_choice(strategy, "strategy", tuple(STRATEGIES))]
    t = calibration_bins(y_true, y_prob, pos_label=pos_label, binning=binning,
                         num_bins=n_bins, sample_weight=sample_weight)
    keep = np.asarray(t.counts)[0] > 0
    return t.accuracy[0][keep], t.mean_confidence[0][keep]
