"""Neural-network scaling (calibkit.recalibration.network)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import calibkit
from calibkit.recalibration import (
    ConvergenceWarning,
    NeuralNetworkScaling,
    TemperatureScaling,
)
from calibkit.recalibration.network import _Net


def overconfident(n, k, seed, scale=4.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    return scale * z, y


def nll_of(p, y):
    return float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-300))))


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_gradient_matches_finite_differences(activation):
    rng = np.random.default_rng(0)
    n, k, h = 200, 4, 5
    z = 3 * rng.normal(size=(n, k))
    zs = (z - z.mean(0)) / z.std(0)
    y = rng.integers(0, k, n)
    net = _Net(k, h, activation)
    x = rng.normal(size=net.size) * 0.5
    alpha = 0.3
    f, g = net.loss_grad(x, z, zs, y, alpha)

    def loss(x):
        p = net.unpack(x)
        pre = zs @ p["W1"] + p["b1"]
        hid = np.tanh(pre) if activation == "tanh" else np.maximum(pre, 0)
        a = p["a"] * z + hid @ p["W2"] + p["b2"]
        reg = 0.5 * alpha * (np.sum(p["W1"] ** 2) + np.sum(p["W2"] ** 2)) / n
        return np.mean(logsumexp(a, 1) - a[np.arange(n), y]) + reg

    assert f == pytest.approx(loss(x), rel=1e-12)
    eps = 1e-6
    idx = rng.choice(net.size, 25, replace=False)
    num = [
        (loss(x + eps * np.eye(net.size)[i]) - loss(x - eps * np.eye(net.size)[i])) / (2 * eps)
        for i in idx
    ]
    np.testing.assert_allclose(g[idx], num, atol=1e-6)


def test_lowers_held_out_nll_and_keeps_best_validation_point():
    z, y = overconfident(4000, 6, seed=1)
    fit, test = slice(0, 2000), slice(2000, None)
    nn = NeuralNetworkScaling(input="logits", random_state=0).fit(z[fit], y[fit])
    p0 = calibkit.softmax(z[test])
    p = nn.predict_proba(z[test])
    assert nll_of(p, y[test]) < 0.8 * nll_of(p0, y[test])
    assert nn.converged_ and 1 <= nn.n_iter_ <= 500
    curve = nn.validation_curve_
    assert curve.ndim == 1 and curve.size == nn.n_iter_ + 1  # the start, then every iteration
    assert nn.validation_loss_ == pytest.approx(curve.min())
    # the model starts as temperature scaling, so it can only improve on the held-out part
    assert curve.min() <= curve[0]


def test_deterministic_and_seed_dependent():
    z, y = overconfident(800, 4, seed=2)
    a = NeuralNetworkScaling(input="logits", random_state=3).fit(z, y)
    b = NeuralNetworkScaling(input="logits", random_state=3).fit(z, y)
    c = NeuralNetworkScaling(input="logits", random_state=4).fit(z, y)
    np.testing.assert_array_equal(a.predict_proba(z), b.predict_proba(z))
    np.testing.assert_array_equal(a.validation_curve_, b.validation_curve_)
    assert not np.array_equal(a.predict_proba(z), c.predict_proba(z))


def test_early_stopping_stops_before_max_iter():
    z, y = overconfident(600, 3, seed=5)
    nn = NeuralNetworkScaling(
        input="logits",
        hidden_units=64,
        alpha=0.0,
        n_iter_no_change=3,
        max_iter=2000,
        random_state=0,
    ).fit(z, y)
    assert nn.converged_ and nn.n_iter_ < 2000
    # after the best point, exactly n_iter_no_change non-improving iterations were run
    assert nn.n_iter_ - int(np.argmin(nn.validation_curve_)) == 3


@pytest.mark.filterwarnings("ignore::calibkit.recalibration.ConvergenceWarning")
def test_without_early_stopping_uses_all_rows():
    z, y = overconfident(500, 3, seed=6)
    nn = NeuralNetworkScaling(input="logits", early_stopping=False, random_state=0).fit(z, y)
    assert np.isnan(nn.validation_loss_) and nn.validation_curve_.size == 0
    ts = TemperatureScaling(input="logits").fit(z, y)
    # trained on every row from the temperature-scaling start: its fitting NLL is no worse
    assert nll_of(nn.predict_proba(z), y) <= nll_of(ts.predict_proba(z), y) + 1e-9


def test_max_iter_exhaustion_warns():
    z, y = overconfident(500, 3, seed=7)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        nn = NeuralNetworkScaling(
            input="logits", max_iter=2, n_iter_no_change=50, random_state=0
        ).fit(z, y)
    assert not nn.converged_


def test_probs_input_and_predict_logits():
    z, y = overconfident(600, 4, seed=8, scale=2.0)
    p = calibkit.softmax(z)
    nn = NeuralNetworkScaling(input="probs", random_state=0).fit(p, y)
    q = nn.predict_proba(p)
    np.testing.assert_allclose(q, calibkit.softmax(nn.predict_logits(p)), atol=1e-12)
    assert nn.coefs_["W1"].shape == (4, 32) and nn.coefs_["W2"].shape == (32, 4)
