"""Temperature scaling by NLL and by a calibration metric (calibkit.recalibration.temperature)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import load_shared
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

import calibkit
from calibkit import reference
from calibkit.recalibration import (
    ConvergenceWarning,
    MetricTemperatureScaling,
    TemperatureScaling,
)
from calibkit.recalibration.temperature import fit_temperature_nll


def nll(z, y, t):
    """Mean NLL of softmax(z / t), computed independently with scipy."""
    a = np.asarray(z, dtype=np.float64) / t
    return float(np.mean(logsumexp(a, axis=1) - a[np.arange(len(y)), y]))


def grid_temperature(z, y, lo=0.05, hi=20.0):
    """Brute force: a log-spaced grid, then two finer linear grids around the best point."""
    ts = np.geomspace(lo, hi, 400)
    best = ts[np.argmin([nll(z, y, t) for t in ts])]
    for step in (best * 0.02, best * 2e-4):
        ts = best + step * np.arange(-100, 101) / 100 * 2
        ts = ts[ts > 0]
        best = ts[np.argmin([nll(z, y, t) for t in ts])]
    return float(best)


def overconfident(n, k, seed, scale=4.0, signal=1.5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += signal
    return scale * z, y


def test_matches_grid_search_synthetic():
    z, y = overconfident(3000, 7, seed=1)
    ts = TemperatureScaling(input="logits").fit(z, y)
    t_grid = grid_temperature(z, y)
    assert ts.temperature_ > 1.5  # the data is overconfident
    assert abs(ts.temperature_ - t_grid) < 1e-4
    assert ts.converged_ and ts.n_iter_ >= 1
    assert ts.nll_ == pytest.approx(nll(z, y, ts.temperature_), abs=1e-10)
    assert ts.nll_uncalibrated_ == pytest.approx(nll(z, y, 1.0), abs=1e-10)


@pytest.mark.realdata
def test_matches_grid_search_densenet40():
    d = load_shared("kangsepp__densenet40_c10.npz")
    z, y = d["val_logits"], d["val_labels"]
    ts = TemperatureScaling(input="logits").fit(z, y)
    assert abs(ts.temperature_ - grid_temperature(z, y)) < 1e-4


def test_probs_input_gives_the_same_temperature():
    z, y = overconfident(2000, 5, seed=2, scale=2.0)
    t_logits = TemperatureScaling(input="logits").fit(z, y).temperature_
    t_probs = TemperatureScaling(input="probs").fit(calibkit.softmax(z), y).temperature_
    assert t_probs == pytest.approx(t_logits, rel=1e-8)


def test_float32_passes_agree_with_float64():
    """Large inputs (N*K >= 2**20) iterate in float32; the temperature must not move."""
    z, y = overconfident(11000, 100, seed=3, scale=3.0)
    r32 = fit_temperature_nll(z, y, dtype=np.float32)
    r64 = fit_temperature_nll(z, y, dtype=np.float64)
    assert r32["temperature"] == pytest.approx(r64["temperature"], rel=1e-5)
    auto = TemperatureScaling(input="logits").fit(z, y)
    assert auto.temperature_ == pytest.approx(r64["temperature"], rel=1e-5)
    assert nll(z, y, auto.temperature_) <= nll(z, y, 1.0)


@settings(deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 300),
    k=st.integers(2, 6),
    scale=st.sampled_from([0.0, 0.01, 0.3, 1.0, 5.0, 40.0]),
    calibrated=st.booleans(),
    rng_bounds=st.sampled_from([(0.01, 100.0), (0.9, 1.1), (0.5, 2.0)]),
)
def test_never_worse_than_t_equal_1(seed, n, k, scale, calibrated, rng_bounds):
    rng = np.random.default_rng(seed)
    z = scale * rng.normal(size=(n, k))
    if calibrated:  # labels drawn from the model itself: T* near 1, the hardest case to settle
        p = calibkit.softmax(z)
        y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, k - 1)
    else:
        y = rng.integers(0, k, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ts = TemperatureScaling(input="logits", temperature_range=rng_bounds).fit(z, y)
    lo, hi = rng_bounds
    assert lo <= ts.temperature_ <= hi
    assert nll(z, y, ts.temperature_) <= nll(z, y, 1.0) + 1e-12


def test_never_worse_than_t_equal_1_large_calibrated():
    """The float32 path near T = 1: the decision falls back to float64 values."""
    rng = np.random.default_rng(5)
    z = 2.0 * rng.normal(size=(11000, 100))
    p = calibkit.softmax(z)
    y = (rng.random(11000)[:, None] > np.cumsum(p, axis=1)).sum(axis=1).clip(0, 99)
    ts = TemperatureScaling(input="logits").fit(z, y)
    assert abs(ts.temperature_ - 1.0) < 0.05
    assert nll(z, y, ts.temperature_) <= nll(z, y, 1.0) + 1e-12


def test_optimum_beyond_the_range_warns_and_stays_on_the_bound():
    # always-correct, separable logits: the NLL keeps falling as T -> 0
    y = np.arange(300) % 3
    z = 5.0 * np.eye(3)[y]
    with pytest.warns(ConvergenceWarning, match="Widen temperature_range"):
        ts = TemperatureScaling(input="logits").fit(z, y)
    assert ts.temperature_ == pytest.approx(0.01)
    # strongly overconfident data with a narrow range: T sits on the upper bound
    z, y = overconfident(2000, 4, seed=6, scale=20.0, signal=0.3)
    with pytest.warns(ConvergenceWarning):
        ts = TemperatureScaling(input="logits", temperature_range=(0.5, 2.0)).fit(z, y)
    assert ts.temperature_ == pytest.approx(2.0)
    assert ts.nll_ < ts.nll_uncalibrated_


def test_uninformative_logits_keep_t_equal_1():
    z = np.ones((50, 4))
    y = np.arange(50) % 4
    ts = TemperatureScaling(input="logits").fit(z, y)
    assert ts.temperature_ == 1.0
    np.testing.assert_allclose(ts.predict_proba(z), 0.25)


def test_predict_logits_and_argmax_preserved():
    z, y = overconfident(500, 6, seed=7)
    ts = TemperatureScaling(input="logits").fit(z, y)
    np.testing.assert_allclose(ts.predict_logits(z), z / ts.temperature_)
    np.testing.assert_array_equal(ts.predict(z), z.argmax(axis=1))


def test_deterministic():
    z, y = overconfident(5000, 10, seed=8)
    a = TemperatureScaling(input="logits").fit(z, y).temperature_
    b = TemperatureScaling(input="logits").fit(z.copy(), y.copy()).temperature_
    assert a == b


# ------------------------------------------------------------------ metric temperature scaling


def test_metric_temperature_scaling_ece():
    z, y = overconfident(3000, 5, seed=9)
    m = MetricTemperatureScaling(input="logits").fit(z, y)
    t, loss = m.curve_[:, 0], m.curve_[:, 1]
    assert np.all(np.diff(t) > 0) and 1.0 in t
    assert m.temperature_ == t[np.argmin(loss)] or loss.min() == m.loss_
    # the reported losses are the ECE of the scaled probabilities (checked by the oracle)
    for i in (0, len(t) // 2, len(t) - 1):
        want = reference.ece(y, calibkit.softmax(z / t[i]), num_bins=15)
        assert loss[i] == pytest.approx(want, abs=1e-12)
    assert m.loss_ == pytest.approx(calibkit.ece(y, m.predict_proba(z)), abs=1e-12)
    assert m.loss_uncalibrated_ == pytest.approx(calibkit.ece(y, calibkit.softmax(z)), abs=1e-12)
    assert m.loss_ < 0.5 * m.loss_uncalibrated_
    # close to the best of an independent grid search over the range
    grid = np.geomspace(0.05, 20.0, 300)
    best_grid = min(reference.ece(y, calibkit.softmax(z / g)) for g in grid)
    assert m.loss_ <= best_grid + 2e-3
    assert m.converged_ and m.n_iter_ > 0


def test_metric_temperature_scaling_any_gce_variant():
    z, y = overconfident(2000, 4, seed=10)
    kw = {
        "binning": "adaptive",
        "max_prob": False,
        "class_conditional": True,
        "threshold": 0.01,
        "norm": "l2",
        "num_bins": 10,
    }
    m = MetricTemperatureScaling(input="logits", **kw).fit(z, y)
    want = calibkit.gce(y, calibkit.softmax(z / m.temperature_), **kw)
    assert m.loss_ == pytest.approx(want, abs=1e-12)
    assert m.loss_ <= m.loss_uncalibrated_
    # a different target gives a different optimum than ECE
    e = MetricTemperatureScaling(input="logits").fit(z, y)
    assert e.temperature_ != m.temperature_


def test_metric_temperature_start_points_documented():
    m = MetricTemperatureScaling(input="logits")
    np.testing.assert_allclose(
        np.log(m.start_temperatures()), np.linspace(-1, 1, 7)[1:-1] * np.log(20)
    )
    m.set_params(n_starts=2, temperature_range=(0.1, 10.0))
    np.testing.assert_allclose(m.start_temperatures(), [10 ** (-1 / 3), 10 ** (1 / 3)])


def test_metric_temperature_stays_in_range_and_is_deterministic():
    z, y = overconfident(1500, 3, seed=11, scale=30.0)
    a = MetricTemperatureScaling(input="logits", temperature_range=(0.5, 3.0)).fit(z, y)
    b = MetricTemperatureScaling(input="logits", temperature_range=(0.5, 3.0)).fit(z, y)
    assert 0.5 <= a.temperature_ <= 3.0
    assert np.all((a.curve_[:, 0] >= 0.5 - 1e-12) & (a.curve_[:, 0] <= 3.0 + 1e-12))
    np.testing.assert_array_equal(a.curve_, b.curve_)
    assert a.temperature_ == b.temperature_
