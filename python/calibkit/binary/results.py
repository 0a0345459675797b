"""The result types of the binary tests and summaries (:mod:`calibkit.binary`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BinaryTestResult", "LogisticCalibration", "CalibrationIndex"]


@dataclass(frozen=True)
class BinaryTestResult:
    """A test of "P(y = pos_label) is calibrated": its ``statistic`` and ``pvalue`` (small:
    evidence of miscalibration), ``test`` its name, ``df`` the chi-squared degrees of freedom
    where there are any."""

    statistic: float
    pvalue: float
    test: str
    df: int | None = None


@dataclass(frozen=True)
class LogisticCalibration:
    """Logistic recalibration of P(y = 1) (Cox 1958), as a binomial GLM fits it.

    ``intercept``: calibration-in-the-large, the intercept of ``logit P(y=1) = a + logit(p)``
    (``logit(p)`` an offset; 0 when the mean prediction is right). ``slope``: the coefficient of
    ``logit(p)`` in ``logit P(y=1) = a' + b logit(p)`` (1 when the spread of the predictions is
    right; below 1: too extreme, over-fitted). ``slope_intercept`` is that model's ``a'``;
    ``intercept_se`` and ``slope_se`` are the GLM's standard errors (inverse Fisher information).
    """

    intercept: float
    slope: float
    slope_intercept: float
    intercept_se: float
    slope_se: float


@dataclass(frozen=True)
class CalibrationIndex:
    """Absolute differences between a smoothed calibration curve and the predictions
    (Austin & Steyerberg 2019): ``ici`` their mean, ``e50`` median, ``e90`` 90th percentile,
    ``emax`` maximum, ``smoother`` the curve used."""

    ici: float
    e50: float
    e90: float
    emax: float
    smoother: str
