"""The Kolmogorov-Smirnov calibration error (Gupta, Rahimi, Ajanthan, Mensink, Sminchisescu &
Hartley, "Calibration of Neural Networks using Splines", ICLR 2021).

Sort the predictions by score ``s`` (outcome ``o``, weight ``w``, 1 by default); the error is

    KS = max_j | sum_{i <= j} w_i (s_i - o_i) | / sum_i w_i,

the maximum taken at the last prediction of each block of tied scores (so the order of
predictions inside a tie does not matter; the empty prefix counts 0). It is the largest gap
between the cumulative confidence and the cumulative accuracy curves. The sort and the scan run
in Rust (:func:`calibkit._native.ks_error`; unit weights: one radix sort of 64-bit keys).
"""

from __future__ import annotations

import numpy as np

from .. import _native
from .common import groups

__all__ = ["ksce"]


def ksce(labels=None, probs=None, *, max_prob: bool = True, sample_weight=None, confidence=None, correct=None) -> float:
    """Kolmogorov-Smirnov calibration error (Gupta et al., 2021).

    Parameters
    ----------
    labels : array_like of shape (N,), optional
        True class indices in ``[0, K)``.
    probs : array_like of shape (N, K), (N, 1) or (N,), optional
        Predicted probabilities, validated as for :func:`calibkit.gce`.
    max_prob : bool, default True
        True: top-label (confidence of the argmax, outcome "prediction correct"), the paper's
        definition. False: per class, one-vs-rest: the KS error of column k against
        ``labels == k`` for every class, averaged over the K classes.
    sample_weight : array_like of shape (N,), optional
        Non-negative finite weights (weighted cumulative sums, divided by the total weight);
        integer weights act as repeated rows.
    confidence, correct : array_like of shape (N,), optional
        Top-label pairs given directly instead of ``labels, probs``.

    Returns
    -------
    float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    >>> labels = np.array([0, 1, 1, 0])
    >>> round(calibkit.ksce(labels, probs), 6)
    0.175
    >>> calibkit.ksce(confidence=[0.5, 0.5], correct=[1, 0])
    0.0
    """
    gs, w = groups(labels, probs, max_prob=max_prob, confidence=confidence, correct=correct,
                   sample_weight=sample_weight, what="ksce")
    return float(np.mean([_native.ks_error(s, o, w) for s, o in gs]))
