"""Is this model calibrated? A test by consistency resampling.

Broecker & Smith (2007), "Increasing the reliability of reliability diagrams"; Vaicenavicius et
al. (2019), "Evaluating model calibration in classification". Under the null hypothesis that
the model is calibrated, each row's label is a draw from the row's own predicted distribution.
The test redraws every label that way ``R`` times (scores, and so the bins, unchanged), recomputes
the metric T* each time, and reports ``p = (1 + #{T* >= T}) / (1 + R)``, which is a valid
(slightly conservative) p-value for any R.

Top-label metrics redraw only the outcome "prediction correct", a Bernoulli(confidence) draw per
row; all-probability metrics draw a class by inverse CDF over the row's cumulative sum. The bins
stay fixed per entry: exact for even bins, and for adaptive bins too, whose edges depend on the
scores only. The draws run in Rust (``rust/kernels/resample.rs``) from a counter-based generator
keyed by (seed, resample, row): the same seed gives the same p-value for any thread count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _native
from .._params import as_resamples, as_seed, renames
from ..binned.spec import MetricSpec
from .._toplabel import resolve
from .._typing import NumBins
from ..binned.auto_bins import resolve_auto
from ..binned.weights import as_sample_weight
from .cells import pair_cells, row_cells

__all__ = ["calibration_test", "CalibrationTestResult"]


@dataclass(frozen=True)
class CalibrationTestResult:
    """Outcome of :func:`calibration_test`.

    Attributes
    ----------
    statistic : float
        The metric on the data.
    pvalue : float
        ``(1 + #{T* >= T}) / (1 + R)``; small values are evidence of miscalibration.
    n_resamples : int
    metric : str
        The metric's name.
    num_bins : int
    resamples : ndarray of shape (R,)
        The metric on each consistency resample.
    """

    statistic: float
    pvalue: float
    n_resamples: int
    metric: str
    num_bins: int
    resamples: np.ndarray = field(repr=False)


@renames(seed="random_state")
def calibration_test(labels=None, probs=None, metric="ECE", *, num_bins: NumBins = 15,
                     n_resamples: int = 1000, random_state=None, sample_weight=None,
                     confidence=None, correct=None, predicted=None,
                     num_classes=None) -> CalibrationTestResult:
    """Test the null hypothesis "the model is calibrated" by consistency resampling.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K), (N, 1) or (N,)
    metric : str, int or MetricSpec, default "ECE"
        Any metric of the space: a name (``"ECE"``, ``"SCE"``, ...), a paper index 0-31 or a
        :class:`calibkit.MetricSpec`. Its value is the test statistic.
    num_bins : int or "auto", default 15
    n_resamples : int, default 1000
        R, the number of label redraws.
    random_state : int or None
        Seed of the label redraws (an integer >= 0): same seed, same p-value, for any thread
        count. None draws a fresh seed. ``seed=``, its name before calibkit 0.2, still works
        with a DeprecationWarning.
    sample_weight : array_like of shape (N,), optional
        Per-row weights (finite, >= 0; see :func:`calibkit.calibration_bins`): the statistic is
        the weighted metric, its bins the weighted table's (weighted equal mass for adaptive
        bins), and each redrawn row counts with its weight.
    confidence, correct, predicted, num_classes : array_like of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs`` (as in :func:`calibkit.gce`;
        max-prob metrics only): each row's outcome is redrawn as Bernoulli(confidence).

    Returns
    -------
    CalibrationTestResult

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 2000)
    >>> y = (rng.uniform(size=2000) < p).astype(int)   # calibrated by construction
    >>> r = calibkit.calibration_test(y, p, num_bins=10, n_resamples=200, random_state=1)
    >>> r.pvalue > 0.05
    True
    >>> bad = calibkit.calibration_test(y, np.clip(p + 0.1, 0, 1), num_bins=10,
    ...                                 n_resamples=200, random_state=1)
    >>> bad.pvalue < 0.01
    True
    """
    spec = MetricSpec.coerce(metric)
    r = as_resamples(n_resamples)
    s = as_seed(random_state)
    pairs = resolve(labels, probs, confidence, correct, predicted, num_classes)
    if isinstance(num_bins, str):
        num_bins = resolve_auto(num_bins, labels, probs, pairs, max_prob=spec.max_prob,
                                class_conditional=spec.class_conditional)
    sw = None
    if sample_weight is not None:
        n = pairs.n if pairs is not None else int(np.shape(labels)[0]) if np.ndim(labels) else 0
        sw = as_sample_weight(sample_weight, n)
    rc = (pair_cells(pairs, spec, num_bins, sw) if pairs is not None
          else row_cells(labels, probs, spec, num_bins, sw))
    t = rc.bins.error(spec.norm)
    star = _native.resample_consistency(rc.cell, rc.score, rc.hit, sw, rc.groups, rc.nb,
                                        spec.norm, spec.class_conditional, s, r)
    # T* >= T up to rounding: a resample that reproduces the data's table must count.
    p = (1.0 + np.count_nonzero(star >= t - 1e-12 * max(1.0, abs(t)))) / (1.0 + r)
    return CalibrationTestResult(float(t), float(p), r, spec.name, num_bins, star)
