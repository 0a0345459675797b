"""One-vs-rest isotonic regression (calibkit.recalibration.isotonic) against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared, requires
from hypothesis import given, settings
from hypothesis import strategies as st

import calibkit
from calibkit.recalibration import IsotonicRegression
from calibkit.recalibration.isotonic import isotonic_fit_1d

sk_iso = requires("sklearn.isotonic")


def sklearn_maps(p_fit, y, p_new):
    """scikit-learn's IsotonicRegression per class, clipped out of range: (N_new, K)."""
    out = np.empty_like(p_new, dtype=np.float64)
    for c in range(p_fit.shape[1]):
        ir = sk_iso.IsotonicRegression(out_of_bounds="clip", increasing=True)
        ir.fit(p_fit[:, c], (y == c).astype(np.float64))
        out[:, c] = ir.predict(p_new[:, c])
    return out


def probs_data(n, k, seed, scale=3.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.0
    return calibkit.softmax(scale * z), y


@pytest.mark.parametrize("scale", [0.5, 3.0, 12.0])
def test_matches_sklearn_per_class(scale):
    p, y = probs_data(1500, 5, seed=1, scale=scale)
    pt, _ = probs_data(700, 5, seed=2, scale=scale)
    iso = IsotonicRegression(input="probs").fit(p, y)
    want = sklearn_maps(p, y, pt)
    np.testing.assert_allclose(iso.predict_scores(pt), want, atol=1e-12, rtol=0)
    np.testing.assert_allclose(
        iso.predict_proba(pt), want / want.sum(1, keepdims=True), atol=1e-12, rtol=0
    )


def test_matches_sklearn_with_ties_and_near_ties():
    """Exact ties (float32-rounded scores) and values closer than float64 resolution."""
    p, y = probs_data(2000, 4, seed=3, scale=8.0)
    p = np.round(p.astype(np.float32), 3).astype(np.float64)  # many exact ties
    p[:50, 0] = 1e-20 * np.arange(1, 51)  # all within 1e-15 of each other: merged by sklearn
    p[50:60, 0] = 1e-15 * np.arange(10) + 2e-15  # a chain spanning more than the resolution
    p /= p.sum(1, keepdims=True)
    pt, _ = probs_data(500, 4, seed=4, scale=8.0)
    iso = IsotonicRegression(input="probs").fit(p, y)
    np.testing.assert_allclose(iso.predict_scores(pt), sklearn_maps(p, y, pt), atol=1e-12)
    np.testing.assert_allclose(iso.predict_scores(p), sklearn_maps(p, y, p), atol=1e-12)


@settings(deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 80),
    levels=st.sampled_from([2, 5, 1000]),
)
def test_1d_fit_matches_sklearn(seed, n, levels):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(n) * levels) / levels
    t = (rng.random(n) < x).astype(np.float64)
    xt, yt = isotonic_fit_1d(x, t)
    ir = sk_iso.IsotonicRegression(out_of_bounds="clip").fit(x, t)
    grid = np.linspace(-0.2, 1.2, 57)
    mine = np.interp(np.clip(grid, xt[0], xt[-1]), xt, yt) if xt.size > 1 else np.full(57, yt[0])
    np.testing.assert_allclose(mine, ir.predict(grid), atol=1e-12)
    np.testing.assert_allclose(xt, ir.X_thresholds_)
    np.testing.assert_allclose(yt, ir.y_thresholds_, atol=1e-12)


def test_out_of_range_inputs_are_clipped():
    rng = np.random.default_rng(5)
    q = rng.uniform(0.2, 0.8, 600)  # binary P(y=1), fitted only inside [0.2, 0.8]
    y = (rng.random(600) < q).astype(int)
    iso = IsotonicRegression(input="probs").fit(q, y)
    for c in (0, 1):
        assert iso.x_thresholds_[c][0] >= 0.2 - 1e-12 and iso.x_thresholds_[c][-1] <= 0.8 + 1e-12
    new = np.array([0.0, 0.05, 0.5, 0.97, 1.0])
    s = iso.predict_scores(new)
    # class 1 sees the scores themselves: beyond the fitted range the end values extend flat
    np.testing.assert_allclose(s[[0, 1], 1], iso.y_thresholds_[1][0])
    np.testing.assert_allclose(s[[3, 4], 1], iso.y_thresholds_[1][-1])
    both = np.column_stack([1 - q, q])
    np.testing.assert_allclose(
        s, sklearn_maps(both, y, np.column_stack([1 - new, new])), atol=1e-12
    )


def test_monotone_per_class_and_lowers_ece():
    p, y = probs_data(6000, 4, seed=6, scale=6.0)
    fit, test = slice(0, 3000), slice(3000, None)
    iso = IsotonicRegression(input="probs").fit(p[fit], y[fit])
    for c in range(4):
        assert np.all(np.diff(iso.y_thresholds_[c]) >= 0)
        assert np.all(np.diff(iso.x_thresholds_[c]) > 0)
    q = iso.predict_proba(p[test])
    assert calibkit.ece(y[test], q) < 0.5 * calibkit.ece(y[test], p[test])


def test_logits_and_probs_agree():
    rng = np.random.default_rng(7)
    z = 4 * rng.normal(size=(500, 3))
    y = rng.integers(0, 3, 500)
    a = IsotonicRegression(input="logits").fit(z, y).predict_proba(z)
    b = (
        IsotonicRegression(input="probs")
        .fit(calibkit.softmax(z), y)
        .predict_proba(calibkit.softmax(z))
    )
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.realdata
def test_matches_sklearn_on_cifar100_outputs():
    """Real softmax outputs: 100 classes, many probabilities below 1e-15."""
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    p, y = d["probs"], d["labels"]
    iso = IsotonicRegression(input="probs").fit(p[:5000], y[:5000])
    pt = p[5000:6000]
    mine = iso.predict_scores(pt)
    for c in (0, 17, 58, 99):
        ir = sk_iso.IsotonicRegression(out_of_bounds="clip").fit(p[:5000, c], (y[:5000] == c) * 1.0)
        np.testing.assert_allclose(mine[:, c], ir.predict(pt[:, c]), atol=1e-12)
