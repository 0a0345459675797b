"""How sure a binary number is: bootstrap intervals, the consistency-resampling calibration
test and ECE_sweep of P(y = pos_label), each the engine's method
(:func:`calibkit.confidence_interval`, :func:`calibkit.calibration_test`,
:func:`calibkit.ece_sweep`) on the pairs ``(y_prob, y_true == pos_label)``.

``metric=`` names a binary metric (``"ece"``, ``"mce"``, ``"rmsce"``, ``"adaptive_ece"``,
``"smece"``, ``"ksce"``) or is a callable ``metric(y_true, y_prob, sample_weight=None)``; the
engine recomputes it on every resample with the resample's weights (the callable path of
:mod:`calibkit.trust.statistic`, which draws the same resamples as its metric-of-the-space path,
so where a binary metric equals an engine metric, e.g. ``"ece"`` on scores below 1.0 and
``"ECE"`` of the pairs, the intervals and p-values agree).
"""

from __future__ import annotations

from collections.abc import Callable

from .._typing import NumBins
from ..errors import InvalidParameterError
from ..trust.calibration_test import CalibrationTestResult
from ..trust.calibration_test import calibration_test as _calibration_test
from ..trust.intervals import ConfidenceInterval
from ..trust.intervals import confidence_interval as _confidence_interval
from ..trust.sweep import SweepResult
from ..trust.sweep import ece_sweep as _ece_sweep
from ._labels import binary_inputs
from .metrics import BINNED, ksce, pair_error, smece

__all__ = ["confidence_interval", "calibration_test", "ece_sweep", "METRICS"]

#: The names ``metric=`` accepts.
METRICS = (*BINNED, "smece", "ksce")


def _statistic(metric, num_bins) -> Callable[..., float]:
    """The engine-side callable ``f(confidence=, correct=, sample_weight=)`` of ``metric``."""
    if isinstance(metric, str) and metric.lower() in BINNED:
        name = metric.lower()

        def call(confidence=None, correct=None, sample_weight=None) -> float:
            return pair_error(confidence, correct, name, num_bins, sample_weight)
    elif isinstance(metric, str) and metric.lower() in ("smece", "ksce"):
        name = metric.lower()
        fn = {"smece": smece, "ksce": ksce}[name]

        def call(confidence=None, correct=None, sample_weight=None) -> float:
            return fn(correct, confidence, sample_weight=sample_weight)
    elif callable(metric):
        name = getattr(metric, "__name__", "metric")
        user = metric

        def call(confidence=None, correct=None, sample_weight=None) -> float:
            return user(correct, confidence, sample_weight=sample_weight)
    else:
        raise InvalidParameterError(
            f"metric must be one of {', '.join(map(repr, METRICS))} or a callable "
            f"metric(y_true, y_prob, sample_weight=None), got {metric!r}")
    call.__name__ = name
    return call


def confidence_interval(y_true, y_prob, metric="ece", *, pos_label=None,
                        num_bins: NumBins = 15, confidence_level: float = 0.90,
                        n_resamples: int = 1000, method: str = "basic", random_state=None,
                        sample_weight=None, weights: str = "poisson",
                        return_resamples: bool = False) -> ConfidenceInterval:
    """Bootstrap confidence interval of a binary calibration metric.

    Parameters
    ----------
    y_true, y_prob, pos_label, sample_weight
        As :func:`calibkit.binary.ece`.
    metric : str or callable, default "ece"
        See the module docstring.
    num_bins : int or "auto", default 15
        Bins of the binned metrics.
    confidence_level, n_resamples, method, random_state, weights, return_resamples
        As :func:`calibkit.confidence_interval`.

    Returns
    -------
    calibkit.ConfidenceInterval

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500); y = rng.uniform(size=500) < p
    >>> ci = calibkit.binary.confidence_interval(y, p, n_resamples=200, random_state=0)
    >>> ci.value == calibkit.binary.ece(y, p), ci.low <= ci.high
    (True, True)
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    return _confidence_interval(
        metric=_statistic(metric, num_bins), confidence_level=confidence_level,
        n_resamples=n_resamples, method=method, random_state=random_state,
        sample_weight=sample_weight, weights=weights, return_resamples=return_resamples,
        **b.pairs)


def calibration_test(y_true, y_prob, metric="ece", *, pos_label=None, num_bins: NumBins = 15,
                     n_resamples: int = 1000, random_state=None, sample_weight=None,
                     progress=None) -> CalibrationTestResult:
    """Consistency-resampling test of "P(y = pos_label) is calibrated" (Broecker & Smith):
    outcomes are redrawn as Bernoulli(``y_prob``), and the p-value is the share of resamples
    whose ``metric`` is at least the observed one (:func:`calibkit.calibration_test`).

    Parameters
    ----------
    y_true, y_prob, pos_label, sample_weight
        As :func:`calibkit.binary.ece`.
    metric : str or callable, default "ece"
        See the module docstring.
    num_bins, n_resamples, random_state, progress
        As :func:`calibkit.calibration_test`.

    Returns
    -------
    calibkit.CalibrationTestResult

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=500); y = rng.uniform(size=500) < p
    >>> r = calibkit.binary.calibration_test(y, p, n_resamples=200, random_state=0)
    >>> r.pvalue > 0.05
    True
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    return _calibration_test(metric=_statistic(metric, num_bins), n_resamples=n_resamples,
                             random_state=random_state, sample_weight=sample_weight,
                             progress=progress, **b.pairs)


def ece_sweep(y_true, y_prob, *, pos_label=None, norm: str = "l1", binning: str = "adaptive",
              max_bins: int | None = None, sample_weight=None) -> SweepResult:
    """ECE_sweep (Roelofs et al.) of P(y = pos_label): the largest bin count whose bin
    frequencies are monotone, and the error there (:func:`calibkit.ece_sweep` of the pairs;
    with ``binning="even"`` a score of exactly 1.0 keeps the engine's bin of its own).

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000); y = rng.uniform(size=2000) < p ** 2
    >>> r = calibkit.binary.ece_sweep(y, p)
    >>> r.num_bins > 1
    True
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    return _ece_sweep(norm=norm, binning=binning, max_bins=max_bins, sample_weight=sample_weight,
                      **b.pairs)
