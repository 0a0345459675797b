"""The signed calibration error: over- and under-confidence.

For a table of bins (:class:`calibkit.CalibrationBins`), per group:

* over-confident mass ``O = sum_b w_b max(conf_b - acc_b, 0)``,
* under-confident mass ``U = sum_b w_b max(acc_b - conf_b, 0)``,

with ``w_b = n_b / n`` the bin's share of its group, then the mean over all groups when
class-conditional (as the l1 metric). ``O + U`` is the l1 error (ECE for ECE's table) and
``O - U = sum_b w_b (conf_b - acc_b)`` is the signed error: positive when the model is
over-confident (confidence above accuracy), negative when under-confident. For ECE's table
the signed ECE is the mean confidence minus the accuracy of the kept predictions.
"""

from __future__ import annotations

from .._typing import NumBins
from ..binned.bins import calibration_bins

__all__ = ["signed_ece"]


def signed_ece(labels=None, probs=None, *, num_bins: NumBins = 15, binning: str = "even",
               max_prob: bool = True, class_conditional: bool = False, threshold: float = 0.0,
               sample_weight=None, confidence=None, correct=None, predicted=None,
               num_classes=None) -> float:
    """Signed calibration error: ``sum_b w_b (conf_b - acc_b)``, positive = over-confident.

    Same bins as :func:`calibkit.gce` with the same keywords (defaults: ECE's). Its absolute
    value is at most the l1 error; the two are equal when every bin errs in one direction.

    Parameters
    ----------
    labels, probs : array_like
        As for :func:`calibkit.gce`.
    num_bins : int or "auto", default 15
    binning, max_prob, class_conditional, threshold
        As for :func:`calibkit.gce`.
    sample_weight : array_like of shape (N,), optional
        Per-row weights (see :func:`calibkit.calibration_bins`).
    confidence, correct, predicted, num_classes : array_like of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs``, as for :func:`calibkit.gce`.

    Returns
    -------
    float
        In [-1, 1].

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.signed_ece([0, 1, 1], [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]], num_bins=5), 6)
    0.133333
    """
    b = calibration_bins(labels, probs, num_bins=num_bins, binning=binning, max_prob=max_prob,
                         class_conditional=class_conditional, threshold=threshold,
                         sample_weight=sample_weight, confidence=confidence, correct=correct,
                         predicted=predicted, num_classes=num_classes)
    over, under = b.overconfidence(), b.underconfidence()
    return over - under
