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
scores only. The draws run in Rust (``rust/kernels/weighted/resample.rs``) from a counter-based generator
keyed by (seed, resample, row): the same seed gives the same p-value for any thread count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _native
from .._budget import TEST_CELL_BYTES, check_resamples
from .._params import as_resamples, as_seed, renames
from .._progress import Progress
from .._toplabel import resolve
from .._typing import NumBins
from .._validate import validate_inputs
from ..binned.auto_bins import resolve_auto
from ..binned.weights import as_sample_weight
from .cells import pair_cells, row_cells
from .statistic import metric_of, observed, pairs_callable

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
        The bin count of a metric of the space (0 for a callable statistic).
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
                     num_classes=None, progress=None) -> CalibrationTestResult:
    """Test the null hypothesis "the model is calibrated" by consistency resampling.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K), (N, 1) or (N,)
    metric : str, int, MetricSpec or callable, default "ECE"
        The test statistic: any metric of the space (a name such as ``"ECE"`` or ``"SCE"``, a
        paper index 0-31 or a :class:`calibkit.MetricSpec`), a binning-free estimator by name
        (``"smece"``, ``"ksce"``), or any callable ``metric(labels, probs, sample_weight=w)``
        returning a float (with top-label input ``metric(confidence=..., correct=...,
        sample_weight=w)``). A callable is called once on the data and once per resample with
        the redrawn labels (or redrawn ``correct``); resamples where it is not finite are left
        out of the p-value.
    num_bins : int or "auto", default 15
        Ignored for a callable.
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
    progress : bool or None, default None
        A progress bar on stderr (:mod:`calibkit._progress`): None = when stderr is a terminal
        and the resampling runs over a second, True = always, False = never.

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
    spec, fn = metric_of(metric, "the test passes the sample weights, or None")
    r = as_resamples(n_resamples)
    s = as_seed(random_state)
    pairs = resolve(labels, probs, confidence, correct, predicted, num_classes)
    if fn is not None:
        with Progress(r, "calibration test", progress, unit="resamples") as bar:
            return _callable_test(fn, labels, probs, pairs, sample_weight, s, r,
                                  (confidence, correct, predicted, num_classes), bar)
    assert spec is not None  # metric_of gives a spec or a callable
    if isinstance(num_bins, str):
        num_bins = resolve_auto(num_bins, labels, probs, pairs, max_prob=spec.max_prob,
                                class_conditional=spec.class_conditional)
    sw = None
    if sample_weight is not None:  # checked against the rows of the checked arrays
        n = pairs.n if pairs is not None else validate_inputs(labels, probs)[0].shape[0]
        sw = as_sample_weight(sample_weight, n)
    rc = (pair_cells(pairs, spec, num_bins, sw) if pairs is not None
          else row_cells(labels, probs, spec, num_bins, sw))
    t = rc.bins.error(spec.norm)
    check_resamples(rc.groups * rc.nb, r, TEST_CELL_BYTES)
    with Progress(r, f"{spec.name} calibration test", progress, unit="resamples") as bar:
        star = _native.resample_consistency(rc.cell, rc.score, rc.hit, sw, rc.groups, rc.nb,
                                            spec.norm, spec.class_conditional, s, r)
        bar.update(r)
    return CalibrationTestResult(float(t), _pvalue(t, star), r, spec.name, num_bins, star)


def _pvalue(t: float, star: np.ndarray) -> float:
    """``(1 + #{T* >= T}) / (1 + R)`` over the finite resamples; T* >= T up to rounding, so that
    a resample reproducing the data's table counts."""
    star = star[np.isfinite(star)]
    return float((1.0 + np.count_nonzero(star >= t - 1e-12 * max(1.0, abs(t)))) / (1.0 + star.size))


#: Resamples drawn at a time for a callable (bounds the (block, N) labels held at once).
_BLOCK = 64


def _callable_test(fn, labels, probs, pairs, sample_weight, seed: int, r: int,
                   top, bar) -> CalibrationTestResult:
    """The test with a callable statistic: the labels (or ``correct``) of each consistency
    resample are drawn by the kernel that draws them for the metrics of the space
    (``_native.consistency_draws``), and ``fn`` recomputes the statistic on them."""
    if pairs is not None:
        confidence, _, predicted, num_classes = top
        # the values are checked by the pair kernel's checks, as every top-label entry point
        _native.check_pairs(np.ascontiguousarray(pairs.confidence, dtype=np.float64),
                            pairs.correct, pairs.predicted, pairs.k)
        on_pairs = pairs_callable(fn, confidence, predicted, num_classes)
        n, score = pairs.n, np.ascontiguousarray(pairs.confidence, dtype=np.float64)[:, None]

        def call(drawn, w):
            return on_pairs(drawn, sample_weight=w)

        data_outcomes = pairs.correct
    else:
        y, p = validate_inputs(labels, probs)
        _native.check_values(y, p)  # finite, in range, rows summing to 1, labels in [0, K)
        n, score = y.shape[0], np.ascontiguousarray(p, dtype=np.float64)

        def call(drawn, w):
            return fn(drawn, probs, sample_weight=w)

        data_outcomes = labels
    sw = None if sample_weight is None else as_sample_weight(sample_weight, n)
    t = observed(call(data_outcomes, sw), getattr(fn, "__name__", "metric"))
    star = np.empty(r)
    for r0 in range(0, r, _BLOCK):
        drawn = _native.consistency_draws(score, seed, r0, min(_BLOCK, r - r0))
        for j in range(drawn.shape[0]):
            star[r0 + j] = float(call(drawn[j], sw))
        bar.update(drawn.shape[0])
    return CalibrationTestResult(t, _pvalue(t, star), r, getattr(fn, "__name__", "metric"),
                                 0, star)
