"""Vector, matrix and Platt scaling (calibkit.recalibration.scaling) and their NLL kernels."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared, requires
from scipy.optimize import minimize
from scipy.special import log_softmax, logsumexp

import calibkit
from calibkit.errors import InvalidLabelsError, ShapeMismatchError
from calibkit.recalibration import (
    MatrixScaling,
    PlattScaling,
    TemperatureScaling,
    VectorScaling,
)
from calibkit.recalibration._kernels import (
    temperature_pass,
    vector_pass,
    xent_grad_inplace,
)


def overconfident(n, k, seed, scale=4.0, signal=1.5):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) + rng.normal(size=k)  # class-dependent offsets too
    z[np.arange(n), y] += signal
    return scale * z, y


def nll_of(p, y):
    return float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-300))))


def mean_nll(a, y):
    return float(np.mean(logsumexp(a, axis=1) - a[np.arange(len(y)), y]))


# ------------------------------------------------------------------ kernels


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_xent_grad_inplace(dtype):
    rng = np.random.default_rng(0)
    a = (5 * rng.normal(size=(1000, 7))).astype(dtype)
    y = rng.integers(0, 7, 1000)
    want_f = mean_nll(a.astype(np.float64), y) * 1000
    want_g = (np.exp(log_softmax(a.astype(np.float64), axis=1)) - np.eye(7)[y]) / 1000
    g = a.copy()
    f = xent_grad_inplace(g, y, 1.0 / 1000)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    assert f == pytest.approx(want_f, rel=tol)
    np.testing.assert_allclose(g, want_g, atol=tol * 1e-2 if dtype == np.float64 else 1e-8)


def test_vector_pass_matches_finite_differences():
    rng = np.random.default_rng(1)
    z = 3 * rng.normal(size=(400, 5))
    y = rng.integers(0, 5, 400)
    w, b = rng.uniform(0.5, 1.5, 5), rng.normal(size=5)
    f, gw, gb = vector_pass(z, y, w, b)
    assert f == pytest.approx(mean_nll(z * w + b, y), rel=1e-12)
    eps = 1e-6
    for j in range(5):
        e = np.eye(5)[j] * eps
        num_w = (mean_nll(z * (w + e) + b, y) - mean_nll(z * (w - e) + b, y)) / (2 * eps)
        num_b = (mean_nll(z * w + b + e, y) - mean_nll(z * w + b - e, y)) / (2 * eps)
        assert gw[j] == pytest.approx(num_w, abs=1e-7)
        assert gb[j] == pytest.approx(num_b, abs=1e-7)


def test_temperature_pass_derivatives():
    rng = np.random.default_rng(2)
    z = 4 * rng.normal(size=(300, 6))
    y = rng.integers(0, 6, 300)
    d = z - z.max(axis=1, keepdims=True)
    dy = d[np.arange(300), y]
    beta, eps = 0.7, 1e-5
    f, g, h = temperature_pass(d, dy, beta)
    assert f == pytest.approx(mean_nll(beta * z, y), rel=1e-12)
    fp, gp, _ = temperature_pass(d, dy, beta + eps)
    fm, gm, _ = temperature_pass(d, dy, beta - eps)
    assert g == pytest.approx((fp - fm) / (2 * eps), rel=1e-6)
    assert h == pytest.approx((gp - gm) / (2 * eps), rel=1e-5)


# ------------------------------------------------------------------ vector scaling


def independent_fit(z, y, model, n_params, penalty=lambda x: 0.0):
    """Fit with scipy's BFGS and finite-difference gradients on a separately written loss."""

    def loss(x):
        return mean_nll(model(x, z), y) + penalty(x) / len(y)

    k = z.shape[1]
    x0 = np.concatenate([np.ones(k) if n_params == 2 * k else np.eye(k).ravel(), np.zeros(k)])
    res = minimize(loss, x0, method="BFGS", options={"gtol": 1e-9, "maxiter": 10_000})
    return res.x


def test_vector_scaling_matches_independent_fit():
    z, y = overconfident(600, 3, seed=3)
    vs = VectorScaling(input="logits", reg_weight=0.0, tol=1e-12).fit(z, y)
    x = independent_fit(z, y, lambda x, z: z * x[:3] + x[3:], 6)
    p_ref = np.exp(log_softmax(z * x[:3] + x[3:], axis=1))
    np.testing.assert_allclose(vs.predict_proba(z), p_ref, atol=2e-5)
    assert vs.converged_ and vs.n_iter_ > 0
    assert abs(vs.intercept_.sum()) < 1e-12


def test_vector_scaling_penalties():
    z, y = overconfident(600, 3, seed=4)
    lw, lb = 2.0, 20.0
    vs = VectorScaling(input="logits", reg_weight=lw, reg_bias=lb, tol=1e-12).fit(z, y)

    s = z.std(axis=0)

    def penalty(x):
        w, b = x[:3], x[3:]
        return lw * np.sum(((w - w.mean()) * s) ** 2) + lb * np.sum(b**2)

    x = independent_fit(z, y, lambda x, z: z * x[:3] + x[3:], 6, penalty)
    p_ref = np.exp(log_softmax(z * x[:3] + x[3:], axis=1))
    np.testing.assert_allclose(vs.predict_proba(z), p_ref, atol=2e-5)
    # a huge reg_weight is temperature scaling with biases: all scales equal 1/T
    strong = VectorScaling(input="logits", reg_weight=1e9, tol=1e-12).fit(z, y)
    assert np.ptp(strong.coef_) < 1e-4


def test_vector_scaling_default_prior_tames_separable_data():
    """A class never confused on a small fitting set: the MLE scale diverges, the prior not."""
    rng = np.random.default_rng(12)
    y = rng.integers(0, 3, 120)
    z = rng.normal(size=(120, 3))
    z[:, 0] = np.where(y == 0, 5.0, -5.0) + 0.1 * rng.normal(size=120)  # class 0 separable
    raw = VectorScaling(input="logits", reg_weight=0.0, max_iter=200).fit(z, y)
    tamed = VectorScaling(input="logits").fit(z, y)
    assert tamed.converged_
    assert raw.coef_[0] > 3.0  # runs off along the flat valley of the separable class
    assert tamed.coef_[0] < 0.5 * raw.coef_[0]


def test_vector_scaling_improves_on_temperature_with_class_bias():
    rng = np.random.default_rng(5)
    z, y = overconfident(4000, 5, seed=5)
    z[:, 2] += 6.0  # a class the model over-predicts: only per-class biases can fix it
    fit, test = slice(0, 2000), slice(2000, None)
    ts = TemperatureScaling(input="logits").fit(z[fit], y[fit])
    vs = VectorScaling(input="logits").fit(z[fit], y[fit])
    assert nll_of(vs.predict_proba(z[test]), y[test]) < nll_of(ts.predict_proba(z[test]), y[test])
    del rng


# ------------------------------------------------------------------ matrix scaling


def test_matrix_scaling_matches_independent_fit():
    z, y = overconfident(500, 3, seed=6)
    lo, lb = 5.0, 0.5
    ms = MatrixScaling(input="logits", reg_off_diagonal=lo, reg_bias=lb, tol=1e-12).fit(z, y)
    s = z.std(axis=0)
    off = ~np.eye(3, dtype=bool)

    def model(x, z):
        return z @ x[:9].reshape(3, 3).T + x[9:]

    def penalty(x):
        w = x[:9].reshape(3, 3) * s[None, :]  # entries in units of their input's spread
        return lo * np.sum(w[off] ** 2) + lb * np.sum(x[9:] ** 2)

    x = independent_fit(z, y, model, 12, penalty)
    np.testing.assert_allclose(
        ms.predict_proba(z), np.exp(log_softmax(model(x, z), axis=1)), atol=2e-5
    )
    np.testing.assert_allclose(ms.predict_logits(z), z @ ms.coef_.T + ms.intercept_)


def test_matrix_scaling_unregularised_is_guo_matrix_scaling():
    z, y = overconfident(500, 3, seed=7)
    ms = MatrixScaling(input="logits", reg_off_diagonal=0, reg_bias=0, tol=1e-12).fit(z, y)
    x = independent_fit(z, y, lambda x, z: z @ x[:9].reshape(3, 3).T + x[9:], 12)
    ref = np.exp(log_softmax(z @ x[:9].reshape(3, 3).T + x[9:], axis=1))
    np.testing.assert_allclose(ms.predict_proba(z), ref, atol=5e-5)


def test_matrix_scaling_stable_at_k100_n5000():
    """10,100 parameters on 5,000 rows: the defaults must not blow up (unregularised does)."""
    z, y = overconfident(10_000, 100, seed=8, scale=3.0, signal=2.5)
    fit, test = slice(0, 5000), slice(5000, None)
    p0 = calibkit.softmax(z[test])
    ms = MatrixScaling(input="logits").fit(z[fit], y[fit])
    p = ms.predict_proba(z[test])
    assert np.all(np.isfinite(ms.coef_)) and np.all(np.isfinite(p))
    assert ms.converged_
    ts_nll = nll_of(
        TemperatureScaling(input="logits").fit(z[fit], y[fit]).predict_proba(z[test]), y[test]
    )
    assert nll_of(p, y[test]) < nll_of(p0, y[test])
    assert nll_of(p, y[test]) < ts_nll + 0.05
    # the same fit without the prior overfits: held-out NLL far worse (the test can fail)
    raw = MatrixScaling(input="logits", reg_off_diagonal=0, reg_bias=0, max_iter=150)
    with pytest.warns(calibkit.recalibration.ConvergenceWarning):
        raw.fit(z[fit], y[fit])
    assert nll_of(raw.predict_proba(z[test]), y[test]) > nll_of(p, y[test]) + 0.5


@pytest.mark.realdata
@pytest.mark.slow
def test_matrix_scaling_stable_on_cifar100():
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    p, y = d["probs"], d["labels"]
    ms = MatrixScaling(input="probs").fit(p[:5000], y[:5000])
    q = ms.predict_proba(p[5000:])
    assert nll_of(q, y[5000:]) < nll_of(np.clip(p[5000:], 1e-300, 1), y[5000:])
    assert calibkit.ece(y[5000:], q) < calibkit.ece(y[5000:], p[5000:])


# ------------------------------------------------------------------ Platt scaling


def test_platt_matches_logistic_regression():
    linear_model = requires("sklearn.linear_model")
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 800)
    s = 6.0 * (y - 0.5) + 3.0 * rng.normal(size=800) + 1.0
    ps = PlattScaling(input="logits").fit(s, y)
    lr = linear_model.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    lr.fit(s[:, None], y)
    assert ps.coef_ == pytest.approx(lr.coef_[0, 0], rel=1e-5)
    assert ps.intercept_ == pytest.approx(lr.intercept_[0], abs=1e-5)
    np.testing.assert_allclose(ps.predict_proba(s), lr.predict_proba(s[:, None]), atol=1e-6)
    assert ps.converged_ and ps.n_iter_ > 0
    # the same through two-column logits and through probabilities
    two = np.column_stack([np.zeros(800), s])
    assert PlattScaling(input="logits").fit(two + 3.0, y).coef_ == pytest.approx(ps.coef_, rel=1e-6)
    prob = 1.0 / (1.0 + np.exp(-s))
    assert PlattScaling(input="probs").fit(prob, y).coef_ == pytest.approx(ps.coef_, rel=1e-6)


def test_platt_smoothed_targets():
    rng = np.random.default_rng(10)
    y = np.r_[np.ones(8, int), np.zeros(4, int)]
    s = rng.normal(size=12) + 3 * y
    ps = PlattScaling(input="logits", smooth_targets=True).fit(s, y)
    t = np.where(y == 1, 9 / 10, 1 / 6)

    def loss(x):
        u = x[0] * s + x[1]
        return np.mean(np.logaddexp(0, u) - t * u)

    ref = minimize(
        loss, [1.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14}
    ).x
    assert ps.coef_ == pytest.approx(ref[0], abs=1e-5)
    assert ps.intercept_ == pytest.approx(ref[1], abs=1e-5)


def test_platt_rejects_multiclass_and_one_class():
    z, y = overconfident(100, 3, seed=11)
    with pytest.raises(ShapeMismatchError, match="binary problems, but X has 3 classes"):
        PlattScaling(input="logits").fit(z, y)
    with pytest.raises(InvalidLabelsError, match="never contains class"):
        PlattScaling(input="logits").fit(z[:, 0], np.zeros(100, int))


def test_platt_extreme_scores_stay_finite():
    s = np.array([-800.0, -50.0, 0.0, 50.0, 800.0, 3.0])
    y = np.array([0, 0, 1, 1, 1, 0])
    p = PlattScaling(input="logits").fit(s, y).predict_proba(s)
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(1), 1)
