"""calibkit.calibration_test: consistency resampling (Broecker & Smith 2007)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import calibkit
from calibkit.errors import CalibkitError, InvalidParameterError


def _calibrated(rng, n, k=3):
    p = rng.dirichlet(np.ones(k), size=n)
    y = np.array([rng.choice(k, p=row) for row in p])
    return y, p


def test_statistic_is_the_metric_and_pvalue_formula():
    rng = np.random.default_rng(0)
    y, p = _calibrated(rng, 500)
    for metric in ("ECE", "SCE", "RMSCE", "ACE", 0, 31):
        r = calibkit.calibration_test(y, p, metric, num_bins=8, n_resamples=99, random_state=1)
        spec = calibkit.MetricSpec.coerce(metric)
        assert r.statistic == pytest.approx(calibkit.gce(y, p, num_bins=8, **spec.kwargs()),
                                            abs=1e-12)
        assert r.pvalue == pytest.approx((1 + np.sum(r.resamples >= r.statistic - 1e-12)) / 100)
        assert r.resamples.shape == (99,)


def test_deterministic_for_a_seed():
    rng = np.random.default_rng(1)
    y, p = _calibrated(rng, 400)
    a = calibkit.calibration_test(y, p, n_resamples=50, random_state=3)
    b = calibkit.calibration_test(y, p, n_resamples=50, random_state=3)
    assert np.array_equal(a.resamples, b.resamples) and a.pvalue == b.pvalue


def test_resampled_labels_follow_the_predictions():
    """Top-label: the mean redrawn accuracy per bin equals the mean confidence (law of large
    numbers over resamples): the resampled ECE is small when bins are large."""
    rng = np.random.default_rng(2)
    p = rng.uniform(0.5, 1.0, 20000)
    y = np.zeros(20000, dtype=int)  # labels irrelevant for the resamples
    r = calibkit.calibration_test(y, p, num_bins=5, n_resamples=50, random_state=0)
    assert r.resamples.max() < 0.02 and r.pvalue < 0.05


def test_detects_miscalibration():
    rng = np.random.default_rng(3)
    p = rng.uniform(0.5, 1.0, 3000)
    y = (rng.uniform(size=3000) < p - 0.08).astype(int)
    for metric in ("ECE", "ACE", "SCE"):
        assert calibkit.calibration_test(y, p, metric, num_bins=10, n_resamples=200,
                                         random_state=1).pvalue < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["ECE", "SCE"])
def test_pvalues_uniform_under_calibration(metric):
    """200 datasets calibrated by construction: p-values ~ Uniform(0, 1) (KS test at 1%).

    With R = 199 the p-value takes values j / 200; the KS statistic against the continuous
    uniform is then inflated by at most 1/200, negligible against the 1% critical value 0.115.
    """
    rng = np.random.default_rng(4)
    ps = []
    for d in range(200):
        y, p = _calibrated(rng, 300)
        ps.append(calibkit.calibration_test(y, p, metric, num_bins=5, n_resamples=199,
                                            random_state=d).pvalue)
    assert stats.kstest(ps, "uniform").pvalue > 0.01


@pytest.mark.parametrize("kw", [{"n_resamples": 0}, {"n_resamples": 2.5}, {"random_state": -3},
                                {"metric": "XYZ"}, {"num_bins": 0}])
def test_bad_arguments(kw):
    with pytest.raises(CalibkitError):
        calibkit.calibration_test([0, 1], [0.2, 0.7], **kw)
    assert issubclass(InvalidParameterError, CalibkitError)
