"""Logistic calibration of P(y = pos_label): calibration-in-the-large and the calibration slope
(Cox 1958; Steyerberg's "calibration intercept and slope"), the binomial GLM's maximum
likelihood by Newton's method (IRLS), as statsmodels' ``GLM(..., family=Binomial())`` fits it.

``logit(p)`` is evaluated at ``p`` clipped to ``[LOGIT_FLOOR, 1 - LOGIT_FLOOR]`` (an exact 0 or
1 has no finite logit).
"""

from __future__ import annotations

import numpy as np

from ..binned.weights import as_sample_weight
from ..errors import NumericalError
from ._labels import binary_inputs
from .results import LogisticCalibration

__all__ = ["logistic_calibration", "LOGIT_FLOOR"]

#: Probabilities are clipped to [LOGIT_FLOOR, 1 - LOGIT_FLOOR] before the logit.
LOGIT_FLOOR = 1e-15
_MAX_ITER = 100


def _expit(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _fit(X: np.ndarray, y: np.ndarray, w: np.ndarray, offset: np.ndarray):
    """Binomial GLM (logit link) coefficients and their covariance by Newton's method."""
    beta = np.zeros(X.shape[1])
    with np.errstate(all="ignore"):
        for _ in range(_MAX_ITER):
            mu = _expit(X @ beta + offset)
            info = X.T @ (X * (w * mu * (1 - mu))[:, None])
            try:
                step = np.linalg.solve(info, X.T @ (w * (y - mu)))
            except np.linalg.LinAlgError:
                break  # a flat likelihood: separated data or one class
            beta = beta + step
            if not np.all(np.isfinite(beta)):
                break
            if np.max(np.abs(step)) < 1e-13 * (1 + np.max(np.abs(beta))):
                mu = _expit(X @ beta + offset)
                info = X.T @ (X * (w * mu * (1 - mu))[:, None])
                try:
                    return beta, np.linalg.inv(info)
                except np.linalg.LinAlgError:
                    break
    raise NumericalError(
        "logistic_calibration: the maximum-likelihood fit did not converge (the outcomes are "
        "perfectly separated by the predictions, or every outcome is the same); the "
        "calibration intercept and slope are not defined for these data")


def logistic_calibration(y_true, y_prob, *, pos_label=None,
                         sample_weight=None) -> LogisticCalibration:
    """Calibration intercept (in the large) and calibration slope of P(y = pos_label).

    Parameters
    ----------
    y_true, y_prob, pos_label
        As :func:`calibkit.binary.ece`.
    sample_weight : array_like of shape (N,), optional
        Frequency weights of the likelihood (statsmodels' ``freq_weights``).

    Returns
    -------
    LogisticCalibration
        ``intercept`` (0 if calibrated in the large), ``slope`` (1 if calibrated),
        ``slope_intercept``, standard errors.

    Raises
    ------
    calibkit.errors.NumericalError
        When the likelihood has no maximum (separated data, a single class).

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, 4000)
    >>> y = rng.uniform(size=4000) < p
    >>> r = calibkit.binary.logistic_calibration(y, p)
    >>> abs(r.intercept) < 0.1, abs(r.slope - 1) < 0.1
    (True, True)
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    p = np.clip(b.prob.astype(np.float64), LOGIT_FLOOR, 1 - LOGIT_FLOOR)
    lp = np.log(p) - np.log1p(-p)
    y = b.positive.astype(np.float64)
    n = y.shape[0]
    w = np.ones(n) if sample_weight is None else as_sample_weight(sample_weight, n)
    a, cov_a = _fit(np.ones((n, 1)), y, w, lp)
    ab, cov_ab = _fit(np.column_stack([np.ones(n), lp]), y, w, np.zeros(n))
    return LogisticCalibration(float(a[0]), float(ab[1]), float(ab[0]),
                               float(np.sqrt(cov_a[0, 0])), float(np.sqrt(cov_ab[1, 1])))
