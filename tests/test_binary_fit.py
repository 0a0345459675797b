"""calibkit.binary's tests and summaries against their references (issue 31): statsmodels' GLM
(calibration intercept and slope), MAPIE 1.6 (Spiegelhalter, KS, Kuiper), the Hosmer-Lemeshow
formula on the engine's equal-mass groups, and ICI against a textbook PAV."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import requires
from scipy import stats

from calibkit import binary
from calibkit.binary.goodness_of_fit import brownian_max_sf, brownian_range_sf
from calibkit.errors import InvalidParameterError, NumericalError


def _logistic(seed, n=3000, shift=0.0, scale=1.0):
    """A logistic regression's P(y = 1) on held-out data, optionally made miscalibrated."""
    requires("sklearn")
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(n_samples=2 * n, n_features=8, n_informative=4, flip_y=0.1,
                               random_state=seed)
    lr = LogisticRegression(max_iter=1000).fit(X[:n], y[:n])
    z = lr.decision_function(X[n:]) * scale + shift
    return y[n:], 1 / (1 + np.exp(-z))


CASES = [dict(seed=0), dict(seed=1, shift=0.3), dict(seed=2, scale=1.6),
         dict(seed=3, scale=0.7, shift=-0.2)]


@pytest.mark.parametrize("case", CASES)
def test_logistic_calibration_equals_statsmodels_glm(case):
    sm = requires("statsmodels.api")
    y, p = _logistic(**case)
    r = binary.logistic_calibration(y, p)
    lp = np.log(p / (1 - p))
    fam = sm.families.Binomial()
    large = sm.GLM(y, np.ones((y.size, 1)), family=fam, offset=lp).fit(tol=1e-14)
    slope = sm.GLM(y, sm.add_constant(lp), family=fam).fit(tol=1e-14)
    assert r.intercept == pytest.approx(large.params[0], abs=1e-6)
    assert r.intercept_se == pytest.approx(large.bse[0], abs=1e-6)
    assert r.slope_intercept == pytest.approx(slope.params[0], abs=1e-6)
    assert r.slope == pytest.approx(slope.params[1], abs=1e-6)
    assert r.slope_se == pytest.approx(slope.bse[1], abs=1e-6)
    w = np.random.default_rng(0).integers(1, 4, size=y.size)
    rw = binary.logistic_calibration(y, p, sample_weight=w)
    fw = sm.GLM(y, sm.add_constant(lp), family=fam, freq_weights=w).fit(tol=1e-14)
    assert rw.slope == pytest.approx(fw.params[1], abs=1e-6)
    rep = np.repeat(np.arange(y.size), w)
    assert rw.slope == pytest.approx(binary.logistic_calibration(y[rep], p[rep]).slope, abs=1e-9)


def test_logistic_calibration_reads_miscalibration():
    y, p = _logistic(seed=5, scale=2.0)  # too extreme: slope near 1/2
    assert binary.logistic_calibration(y, p).slope < 0.7
    y, p = _logistic(seed=5, shift=1.0)  # predictions too high: negative intercept
    assert binary.logistic_calibration(y, p).intercept < -0.5


def test_logistic_calibration_separated_data():
    with pytest.raises(NumericalError, match="did not converge"):
        binary.logistic_calibration([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])


@pytest.mark.parametrize("case", CASES)
def test_cumulative_and_spiegelhalter_tests_equal_mapie(case):
    mc = requires("mapie.metrics.calibration")
    y, p = _logistic(**case)
    s = binary.spiegelhalter_test(y, p, alternative="greater")
    assert s.statistic == pytest.approx(mc.spiegelhalter_statistic(y, p), abs=1e-6)
    assert s.pvalue == pytest.approx(mc.spiegelhalter_p_value(y, p), abs=1e-6)
    ks = binary.ks_test(y, p)
    assert ks.statistic == pytest.approx(mc.kolmogorov_smirnov_statistic(y, p), abs=1e-6)
    assert ks.pvalue == pytest.approx(mc.kolmogorov_smirnov_p_value(y, p), abs=1e-6)
    ku = binary.kuiper_test(y, p)
    assert ku.statistic == pytest.approx(mc.kuiper_statistic(y, p), abs=1e-6)
    assert ku.pvalue == pytest.approx(mc.kuiper_p_value(y, p), abs=1e-6)


def test_spiegelhalter_two_sided_and_formula():
    y, p = _logistic(seed=1, shift=0.3)
    z = np.sum((y - p) * (1 - 2 * p)) / np.sqrt(np.sum((1 - 2 * p) ** 2 * p * (1 - p)))
    r = binary.spiegelhalter_test(y, p)
    assert r.statistic == pytest.approx(z, rel=1e-12)
    assert r.pvalue == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-12)
    with pytest.raises(NumericalError):
        binary.spiegelhalter_test([0, 1], [0.5, 0.5])
    with pytest.raises(InvalidParameterError, match="alternative"):
        binary.spiegelhalter_test([0, 1], [0.2, 0.5], alternative="less-ish")


def test_ks_statistic_is_ksce_over_sigma_and_ties_do_not_matter():
    rng = np.random.default_rng(4)
    p = rng.integers(1, 10, size=500) / 10  # many ties
    y = rng.uniform(size=500) < p
    sigma = math.sqrt(np.sum(p * (1 - p))) / p.size
    assert binary.ks_test(y, p).statistic == pytest.approx(binary.ksce(y, p) / sigma, rel=1e-12)
    perm = rng.permutation(500)
    assert binary.kuiper_test(y[perm], p[perm]).statistic == pytest.approx(
        binary.kuiper_test(y, p).statistic, rel=1e-12)
    with pytest.raises(NumericalError, match="exactly 0 or 1"):
        binary.ks_test([0, 1], [0.0, 1.0])


def test_brownian_series_against_their_definitions():
    mc = requires("mapie.metrics.calibration")
    for x in (0.3, 0.8, 1.5, 2.5, 4.0):
        assert brownian_max_sf(x) == pytest.approx(1 - mc.kolmogorov_smirnov_cdf(x), abs=1e-8)
        assert brownian_range_sf(x) == pytest.approx(1 - mc.kuiper_cdf(x), abs=1e-8)
    # the reflection series of max |B| on [0, 1]: 4 sum_k (-1)^k Phi_bar((2k + 1) x)
    for x in (0.5, 1.0, 2.0, 6.0):
        k = np.arange(200)
        ref = 4 * np.sum((-1.0) ** k * stats.norm.sf((2 * k + 1) * x))
        assert brownian_max_sf(x) == pytest.approx(ref, abs=1e-12)
    assert brownian_max_sf(0.0) == 1.0 and brownian_range_sf(0.0) == 1.0
    assert 0 <= brownian_max_sf(60.0) < 1e-12 and 0 <= brownian_range_sf(60.0) < 1e-12


@pytest.mark.parametrize("num_bins", [10, 5])
def test_hosmer_lemeshow_is_its_formula_on_the_equal_mass_groups(num_bins):
    y, p = _logistic(seed=1, shift=0.3)
    t = binary.calibration_bins(y, p, binning="adaptive", num_bins=num_bins)
    inner = t.edges[0, 1:-1]
    g = np.searchsorted(inner, p, side="right")  # the table's left-closed groups
    h = 0.0
    for k in range(num_bins):
        m = g == k
        n, o, e = m.sum(), y[m].sum(), p[m].sum()
        h += (o - e) ** 2 / (e * (1 - e / n))
    r = binary.hosmer_lemeshow(y, p, num_bins=num_bins)
    assert r.statistic == pytest.approx(h, rel=1e-12, abs=1e-12)
    assert r.df == num_bins - 2
    assert r.pvalue == pytest.approx(stats.chi2.sf(h, num_bins - 2), rel=1e-12)
    assert binary.hosmer_lemeshow(y, p, num_bins=num_bins).pvalue < 0.05  # shifted: detected
    ok_y, ok_p = _logistic(seed=0)
    assert binary.hosmer_lemeshow(ok_y, ok_p).pvalue > 0.01
    with pytest.raises(InvalidParameterError, match="at least 3"):
        binary.hosmer_lemeshow(y, p, num_bins=2)


def _pav(x, y):
    u, inv = np.unique(x, return_inverse=True)
    sw = np.bincount(inv).astype(float)
    swy = np.bincount(inv, weights=y)
    blocks = []
    for a, b in zip(swy, sw):
        blocks.append([a, b, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            a2, b2, c2 = blocks.pop()
            blocks[-1][0] += a2
            blocks[-1][1] += b2
            blocks[-1][2] += c2
    return np.concatenate([np.full(c, a / b) for a, b, c in blocks])[inv]


def test_calibration_index_against_textbook_pav():
    y, p = _logistic(seed=2, scale=1.6)
    d = np.abs(_pav(p, y.astype(float)) - p)
    r = binary.calibration_index(y, p)
    assert r.ici == pytest.approx(d.mean(), abs=1e-12)
    assert r.e50 == pytest.approx(np.quantile(d, 0.5, method="inverted_cdf"), abs=1e-12)
    assert r.e90 == pytest.approx(np.quantile(d, 0.9, method="inverted_cdf"), abs=1e-12)
    assert r.emax == pytest.approx(d.max(), abs=1e-12)
    assert r.smoother == "isotonic"
    w = np.random.default_rng(1).integers(1, 3, size=y.size)
    rep = np.repeat(np.arange(y.size), w)
    rw, rr = binary.calibration_index(y, p, sample_weight=w), binary.calibration_index(y[rep], p[rep])
    assert rw.ici == pytest.approx(rr.ici, abs=1e-12)
    assert rw.e90 == pytest.approx(rr.e90, abs=1e-12) and rw.emax == rr.emax


def test_class_names_in_the_tests():
    y, p = _logistic(seed=0)
    names = np.where(y == 1, "event", "none")
    for fn in (binary.spiegelhalter_test, binary.ks_test, binary.kuiper_test,
               binary.hosmer_lemeshow, binary.logistic_calibration, binary.calibration_index):
        assert fn(names, p, pos_label="event") == fn(y, p)
