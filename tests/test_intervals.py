"""Per-bin accuracy intervals and bootstrap confidence intervals (calibkit.trust)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires
from scipy import stats

import calibkit
from calibkit.binned.bin_intervals import binomial_interval
from calibkit.errors import CalibkitError, InvalidParameterError, ShapeMismatchError

# --- per-bin intervals -------------------------------------------------------------------

@pytest.mark.parametrize("method,scipy_method", [("clopper-pearson", "exact"), ("wilson", "wilson")])
@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95])
def test_binomial_interval_matches_scipy(method, scipy_method, confidence):
    for n in (1, 2, 7, 30, 101):
        for k in range(n + 1):
            lo, hi = binomial_interval([k], [n], method=method, confidence_level=confidence)
            ref = stats.binomtest(k, n).proportion_ci(confidence_level=confidence,
                                                       method=scipy_method)
            assert lo[0] == pytest.approx(ref.low, abs=1e-10)
            assert hi[0] == pytest.approx(ref.high, abs=1e-10)


def test_jeffreys_is_the_beta_posterior_interval():
    for n, k in [(10, 0), (10, 3), (10, 10), (57, 20)]:
        lo, hi = binomial_interval([k], [n], method="jeffreys", confidence_level=0.9)
        post = stats.beta(k + 0.5, n - k + 0.5)
        assert lo[0] == (0.0 if k == 0 else pytest.approx(post.ppf(0.05)))
        assert hi[0] == (1.0 if k == n else pytest.approx(post.ppf(0.95)))


def _exact_coverage(method, n, p, confidence):
    k = np.arange(n + 1)
    lo, hi = binomial_interval(k, np.full(n + 1, n), method=method, confidence_level=confidence)
    return float(stats.binom.pmf(k, n, p)[(lo <= p) & (p <= hi)].sum())


def test_clopper_pearson_covers_at_least_nominal_everywhere():
    for n in (5, 20, 80):
        for p in np.linspace(0.01, 0.99, 41):
            assert _exact_coverage("clopper-pearson", n, p, 0.9) >= 0.9 - 1e-12


def test_wilson_and_jeffreys_average_coverage_near_nominal():
    grid = np.linspace(0.05, 0.95, 61)
    for method in ("wilson", "jeffreys"):
        cov = np.mean([_exact_coverage(method, 50, p, 0.9) for p in grid])
        assert abs(cov - 0.9) < 0.02, (method, cov)


def test_accuracy_interval_shape_nan_and_bounds():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=300)
    y = rng.integers(0, 4, 300)
    t = calibkit.calibration_bins(y, p, num_bins=10, class_conditional=True)
    for method in ("clopper-pearson", "wilson", "jeffreys"):
        lo, hi = t.accuracy_interval(method=method, confidence_level=0.9)
        assert lo.shape == hi.shape == t.accuracy.shape
        empty = t.counts == 0
        assert np.isnan(lo[empty]).all() and np.isnan(hi[empty]).all()
        full = ~empty
        acc = t.accuracy[full]
        assert np.all(lo[full] <= acc + 1e-12) and np.all(acc <= hi[full] + 1e-12)
        assert np.all(lo[full] >= 0) and np.all(hi[full] <= 1)


def test_wider_at_higher_confidence():
    lo9, hi9 = binomial_interval([3], [10], confidence_level=0.9)
    lo99, hi99 = binomial_interval([3], [10], confidence_level=0.99)
    assert lo99[0] < lo9[0] and hi99[0] > hi9[0]


@pytest.mark.parametrize("kw", [{"method": "exact"}, {"confidence_level": 1.0},
                                {"confidence_level": 0}, {"confidence_level": True},
                                {"confidence_level": "0.9"}])
def test_accuracy_interval_rejects_bad_arguments(kw):
    t = calibkit.calibration_bins([0, 1], [0.3, 0.8], num_bins=2)
    with pytest.raises(InvalidParameterError):
        t.accuracy_interval(**kw)


# --- bootstrap intervals -----------------------------------------------------------------

def _overconfident(rng, n, shift=0.05):
    p = rng.uniform(0.5, 1.0, n)
    y = (rng.uniform(size=n) < p - shift).astype(np.int64)
    return y, p


def test_interval_fields_and_determinism():
    rng = np.random.default_rng(1)
    y, p = _overconfident(rng, 3000)
    a = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=300, random_state=7,
                                     return_resamples=True)
    b = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=300, random_state=7,
                                     return_resamples=True)
    assert a.value == pytest.approx(calibkit.ece(y, p, num_bins=10), abs=1e-15)
    assert np.array_equal(a.resamples, b.resamples)
    assert a.low <= a.value <= a.high
    assert a.std == pytest.approx(np.std(a.resamples, ddof=1))
    assert a.method == "basic" and a.metric == "ECE" and a.n_resamples == 300
    c = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=300, random_state=8)
    assert c.low != a.low
    low, high = a
    assert (low, high) == (a.low, a.high)


def test_same_numbers_for_any_thread_count():
    """rayon's global pool reads RAYON_NUM_THREADS at start: one subprocess per count."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np, calibkit; rng = np.random.default_rng(2); "
            "p = rng.dirichlet(np.ones(5), 4000); y = rng.integers(0, 5, 4000); "
            "print([calibkit.confidence_interval(y, p, m, n_resamples=200, random_state=3, "
            "return_resamples=True).resamples.tolist() for m in ('ECE', 'SCE', 'ACE')], "
            "calibkit.calibration_test(y, p, 'SCE', n_resamples=100, random_state=3).resamples.tolist())")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "RAYON_NUM_THREADS": t}).stdout
            for t in ("1", "2", "3")}
    assert len(outs) == 1


def test_percentile_and_basic_are_reflections():
    rng = np.random.default_rng(3)
    y, p = _overconfident(rng, 2000)
    kw = dict(num_bins=10, n_resamples=400, random_state=1, return_resamples=True)
    pc = calibkit.confidence_interval(y, p, method="percentile", **kw)
    bs = calibkit.confidence_interval(y, p, method="basic", **kw)
    q = np.quantile(pc.resamples, [0.05, 0.95])
    assert (pc.low, pc.high) == pytest.approx(tuple(q))
    assert (bs.low, bs.high) == pytest.approx((2 * bs.value - q[1], 2 * bs.value - q[0]))


@pytest.mark.parametrize("metric", ["ECE", "CCE", "SCE", "RMSCE", "ACE", "TACE", 13, 31])
def test_resamples_equal_weighted_metric(metric):
    """Each resample equals the metric with that resample's Poisson weights as sample weights."""
    from calibkit import _native
    from calibkit.space import MetricSpec

    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(4) * 0.7, size=400)
    y = rng.integers(0, 4, 400)
    ci = calibkit.confidence_interval(y, p, metric, num_bins=6, n_resamples=5, random_state=11,
                                      return_resamples=True)
    w = _native.bootstrap_weights("poisson", 11, 0, 5, 400)
    kw = MetricSpec.coerce(metric).kwargs()
    for j in range(5):
        assert ci.resamples[j] == pytest.approx(
            calibkit.gce(y, p, num_bins=6, sample_weight=w[j], **kw), abs=1e-12)


def test_callable_metric_gets_the_same_weights():
    rng = np.random.default_rng(5)
    y, p = _overconfident(rng, 1500)

    def my_ece(labels, probs, sample_weight=None):
        return calibkit.ece(labels, probs, num_bins=10, sample_weight=sample_weight)

    a = calibkit.confidence_interval(y, p, my_ece, n_resamples=50, random_state=2, return_resamples=True)
    b = calibkit.confidence_interval(y, p, "ECE", num_bins=10, n_resamples=50, random_state=2,
                                     return_resamples=True)
    assert a.metric == "my_ece"
    np.testing.assert_allclose(a.resamples, b.resamples, atol=1e-12)


def test_undefined_resamples_of_a_callable_leave_interval_and_std_alike():
    """A callable that is NaN on some resamples: the interval and the standard error are both
    those of the finite resamples (the standard error was NaN)."""
    rng = np.random.default_rng(6)
    y, p = _overconfident(rng, 400)
    calls = []

    def sometimes_nan(labels, probs, sample_weight=None):
        calls.append(1)
        v = calibkit.ece(labels, probs, num_bins=10, sample_weight=sample_weight)
        return float("nan") if len(calls) % 5 == 0 else v

    ci = calibkit.confidence_interval(y, p, sometimes_nan, n_resamples=60, random_state=1,
                                      return_resamples=True)
    fin = ci.resamples[np.isfinite(ci.resamples)]
    assert 0 < fin.size < ci.resamples.size
    assert ci.std == pytest.approx(np.std(fin, ddof=1))
    assert np.isfinite([ci.low, ci.high]).all()


def test_a_callable_is_not_called_on_a_resample_of_no_rows():
    """Three rows: about one Poisson resample in twenty draws none. The callable (whose own
    weight check refuses all-zero weights) is not called on those; they are left out."""
    y = np.array([0, 1, 0])
    p = np.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])

    def my_ece(labels, probs, sample_weight=None):
        return calibkit.ece(labels, probs, num_bins=2, sample_weight=sample_weight)

    ci = calibkit.confidence_interval(y, p, my_ece, n_resamples=200, random_state=0, return_resamples=True)
    assert 0 < np.isnan(ci.resamples).sum() < 50
    assert np.isfinite([ci.low, ci.high, ci.std]).all()


def test_resamples_overflowed_by_huge_weights_are_an_error():
    """The point estimate is finite, but a resample doubling a row of weight 1e308 is not: a
    NumericalError, not an interval from the other resamples."""
    rng = np.random.default_rng(7)
    y, p = _overconfident(rng, 300)
    w = np.ones(len(y))
    w[0] = 1e308
    with pytest.raises(calibkit.NumericalError, match="scale the weights down"):
        calibkit.confidence_interval(y, p, "ECE", n_resamples=200, random_state=0, sample_weight=w)


def test_multinomial_weights_resample_n_rows():
    from calibkit import _native

    w = _native.bootstrap_weights("multinomial", 1, 0, 3, 1000)
    assert np.all(w.sum(axis=1) == 1000)
    ci = calibkit.confidence_interval(*_overconfident(np.random.default_rng(6), 1000),
                                      weights="multinomial", n_resamples=100, random_state=1)
    assert ci.low <= ci.value <= ci.high


@pytest.mark.parametrize("kw,exc", [
    ({"method": "bca"}, InvalidParameterError),
    ({"confidence_level": 1.5}, InvalidParameterError),
    ({"n_resamples": 0}, InvalidParameterError),
    ({"random_state": -1}, InvalidParameterError),
    ({"random_state": 1.5}, InvalidParameterError),
    ({"weights": "gaussian"}, InvalidParameterError),
    ({"metric": "NOPE"}, InvalidParameterError),
    ({"sample_weight": [1.0, 2.0]}, ShapeMismatchError),
    ({"sample_weight": np.full(50, -1.0)}, InvalidParameterError),
])
def test_bad_arguments_are_calibkit_errors(kw, exc):
    rng = np.random.default_rng(7)
    y, p = _overconfident(rng, 50)
    with pytest.raises(exc) as info:
        calibkit.confidence_interval(y, p, n_resamples=kw.pop("n_resamples", 10), **kw)
    assert isinstance(info.value, CalibkitError)


def _population(power, rng, n):
    # top-label confidence p in (0.5, 1); true accuracy p ** power: over-confident for power > 1
    p = rng.uniform(0.5, 1.0, n)
    y = (rng.uniform(size=n) < p ** power).astype(np.int64)
    return y, p


@pytest.mark.slow
def test_coverage_near_nominal():
    """200 seeded datasets; the 90% basic interval covers the population ECE.

    The population ECE (same 10 bins) is computed on 4M rows (its own sampling error is about
    1e-4, a hundredth of the interval width). With 200 datasets the observed coverage of a
    perfect 90% interval has a standard deviation of 0.021; we accept [0.82, 0.97] (about
    -3.8 / +3.3 standard deviations: the bootstrap is first-order accurate only, and binned
    errors are biased, so a small shortfall is expected).
    """
    rng = np.random.default_rng(2024)
    truth = calibkit.ece(*_population(1.5, rng, 4_000_000), num_bins=10)
    hits = 0
    for d in range(200):
        y, p = _population(1.5, rng, 4000)
        ci = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=300, random_state=d)
        hits += ci.low <= truth <= ci.high
    assert 0.82 <= hits / 200 <= 0.97, hits


def test_basic_covers_better_than_percentile_for_a_calibrated_model():
    """The documented reason for the default: the true ECE of a calibrated model is 0, the
    estimate is biased up, and the percentile interval moves further up (never covering 0)."""
    rng = np.random.default_rng(9)
    cover = {"basic": 0, "percentile": 0}
    for d in range(40):
        y, p = _population(1.0, rng, 2000)
        for m in cover:
            ci = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=200, random_state=d, method=m)
            cover[m] += ci.low <= 0.0
    assert cover["percentile"] == 0
    assert cover["basic"] >= 20, cover


def test_reliability_diagram_error_bars():
    requires("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection

    from calibkit.plots import reliability_diagram

    rng = np.random.default_rng(10)
    y, p = _overconfident(rng, 800)

    def bars(fig):
        return [c for c in fig.axes[0].collections if isinstance(c, LineCollection)]

    t = calibkit.calibration_bins(y, p, num_bins=8)
    fig = reliability_diagram(y, p, num_bins=8)
    (lines,) = bars(fig)
    lo, hi = t.accuracy_interval()
    filled = t.counts[0] > 0
    segs = np.array([s[:, 1] for s in lines.get_segments()])
    np.testing.assert_allclose(np.sort(segs, axis=1), np.c_[lo[0, filled], hi[0, filled]],
                               atol=1e-12)
    assert not bars(reliability_diagram(y, p, num_bins=8, error_bars=False))
    assert reliability_diagram(y, p, num_bins="auto").axes[0].get_ylabel() == "accuracy"
    with pytest.raises(InvalidParameterError):
        reliability_diagram(y, p, num_bins=8, interval="exact")


def test_callable_without_sample_weight_is_refused_clearly():
    y, p = _overconfident(np.random.default_rng(11), 100)
    with pytest.raises(calibkit.InputTypeError, match="sample_weight"):
        calibkit.confidence_interval(y, p, lambda a, b: 0.1, n_resamples=5)


def test_basic_interval_stays_in_unit_range():
    ci = calibkit.confidence_interval([0, 1], [[0.3, 0.7], [0.2, 0.8]], "MCE", n_resamples=50,
                                      random_state=1)
    assert 0.0 <= ci.low <= ci.high <= 1.0


def test_few_samples_warning_points_at_the_caller():
    import warnings as w

    from calibkit.errors import FewSamplesWarning

    with w.catch_warnings(record=True) as rec:
        w.simplefilter("always")
        calibkit.ece([0, 1, 1], [0.3, 0.8, 0.6], num_bins="auto")
        calibkit.signed_ece([0, 1, 1], [0.3, 0.8, 0.6], num_bins="auto")
    assert [r.category for r in rec] == [FewSamplesWarning] * 2
    assert all(r.filename == __file__ for r in rec)
