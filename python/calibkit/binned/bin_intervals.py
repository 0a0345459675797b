"""Confidence intervals for a binomial proportion: the accuracy of each reliability-diagram bin.

A bin holding ``n`` predictions of which ``k`` were correct estimates its accuracy by ``k / n``;
these intervals say how far the true accuracy of that confidence range may be from it.

* ``"clopper-pearson"`` (Clopper & Pearson, 1934): the exact interval, inverting two one-sided
  binomial tests; ``low = Beta(a/2; k, n-k+1)``, ``high = Beta(1-a/2; k+1, n-k)`` quantiles with
  ``low = 0`` when ``k = 0`` and ``high = 1`` when ``k = n``. Conservative: it covers at least the
  nominal level for every true proportion.
* ``"wilson"`` (Wilson, 1927): the score interval, without continuity correction,
  ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``.
* ``"jeffreys"`` (Brown, Cai & DasGupta, 2001): the equal-tailed Beta(k+1/2, n-k+1/2) posterior
  interval, with the same conventions at ``k = 0`` and ``k = n`` as Clopper-Pearson.

Empty bins give NaN. Weighted bins (sample weights): the bin's total weight is used as ``n``
and its weighted outcome sum as ``k`` (an *effective count*: exact for integer weights, which
mean repeated rows; for other weights it treats the total weight as the number of trials).
"""

from __future__ import annotations

import numpy as np

from .._params import as_choice, as_confidence_level, renames
from ..errors import InvalidParameterError

__all__ = ["binomial_interval", "INTERVAL_METHODS"]

INTERVAL_METHODS = ("clopper-pearson", "wilson", "jeffreys")


@renames(confidence="confidence_level")
def binomial_interval(successes, trials, *, method: str = "clopper-pearson",
                      confidence_level: float = 0.90):
    """Two-sided interval for the proportion ``successes / trials``, elementwise.

    Parameters
    ----------
    successes, trials : array_like, same shape
        Outcome sum and count (both may be non-integer for weighted bins, see the module doc).
    method : {"clopper-pearson", "wilson", "jeffreys"}, default "clopper-pearson"
    confidence_level : float in (0, 1), default 0.90
        The interval's level (scipy's name). ``confidence=``, its name before calibkit 0.2,
        still works with a DeprecationWarning.

    Returns
    -------
    (low, high) : tuple of ndarray of float64, shaped like ``trials``
        NaN where ``trials == 0``.

    Examples
    --------
    >>> lo, hi = binomial_interval([0, 5, 10], [10, 10, 10], confidence_level=0.95)
    >>> [round(float(v), 4) for v in lo], [round(float(v), 4) for v in hi]
    ([0.0, 0.1871, 0.6915], [0.3085, 0.8129, 1.0])
    """
    method = as_choice(method, "method", INTERVAL_METHODS)
    conf = as_confidence_level(confidence_level)
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if k.shape != n.shape:
        raise InvalidParameterError(
            f"successes and trials must have one shape, got {k.shape} and {n.shape}"
        )
    alpha = 1.0 - conf
    empty = ~(n > 0)
    nn = np.where(empty, 1.0, n)
    kk = np.clip(np.where(empty, 0.0, k), 0.0, nn)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "wilson":
            from scipy.stats import norm

            z = float(norm.ppf(1.0 - alpha / 2.0))
            p = kk / nn
            den = 1.0 + z * z / nn
            centre = (p + z * z / (2.0 * nn)) / den
            half = z / den * np.sqrt(p * (1.0 - p) / nn + z * z / (4.0 * nn * nn))
            low, high = np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)
        else:
            from scipy.stats import beta

            a, b = (kk, nn - kk + 1.0) if method == "clopper-pearson" else (kk + 0.5, nn - kk + 0.5)
            a2, b2 = (kk + 1.0, nn - kk) if method == "clopper-pearson" else (a, b)
            low = np.where(kk > 0, beta.ppf(alpha / 2.0, np.maximum(a, 1e-300), b), 0.0)
            high = np.where(kk < nn, beta.ppf(1.0 - alpha / 2.0, a2, np.maximum(b2, 1e-300)), 1.0)
    low = np.where(empty, np.nan, low)
    high = np.where(empty, np.nan, high)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
