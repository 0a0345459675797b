"""MetricTemperatureScaling's matrix-free top-label loss against the scaled probability matrix."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.recalibration import MetricTemperatureScaling
from calibkit.recalibration._kernels import scaled_softmax
from calibkit.recalibration.temperature import _TopLabelLoss, top_label_scaled


def logits(n, k, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = 3.0 * rng.normal(size=(n, k))
    z[np.arange(n), y] += 3.0
    return z, y


@pytest.mark.parametrize("beta", [0.05, 0.37, 1.0, 2.5, 20.0])
def test_top_label_confidence_is_bitwise_the_matrix_maximum(beta):
    z, _ = logits(3000, 37, seed=1)
    want = scaled_softmax(z, beta).max(axis=1)
    np.testing.assert_array_equal(top_label_scaled(z, beta), want)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=3) as pool:  # rows shared by threads: same bits
        np.testing.assert_array_equal(top_label_scaled(z, beta, pool=pool), want)


@pytest.mark.parametrize("cc", [False, True])
def test_loss_is_the_gce_of_the_scaled_matrix_even_with_near_ties(cc):
    z, y = logits(2000, 6, seed=2)
    # earlier classes a hair below the top one: scaling can round them into a tie
    top = z.argmax(axis=1)
    rows = np.flatnonzero(top > 0)[:200]
    z[rows, 0] = np.nextafter(z[rows, top[rows]], -np.inf)
    kw = dict(binning="even", max_prob=True, class_conditional=cc, threshold=0.0, norm="l1",
              num_bins=15)
    f = _TopLabelLoss(z, y, kw, beta_max=20.0)
    assert f.near.size >= 200
    for beta in (0.05, 0.5, 1.0, 7.0, 20.0):
        want = calibkit.gce(y, scaled_softmax(z, beta), **kw)
        assert f(beta) == pytest.approx(want, abs=1e-12)


def test_same_answer_as_the_matrix_loss():
    # the matrix path (max_prob=False never takes the pair kernel) against the top-label one,
    # through a top-label metric computed both ways on the final temperature
    z, y = logits(4000, 10, seed=3)
    m = MetricTemperatureScaling(input="logits").fit(z, y)
    assert m.loss_ == pytest.approx(calibkit.ece(y, scaled_softmax(z, 1.0 / m.temperature_)), abs=1e-12)
    t, loss = m.curve_[:, 0], m.curve_[:, 1]
    for i in range(0, len(t), max(1, len(t) // 6)):
        assert loss[i] == pytest.approx(calibkit.ece(y, scaled_softmax(z, 1.0 / t[i])), abs=1e-12)
    assert m.loss_ <= m.loss_uncalibrated_
    # every evaluation stays in the range, and the search is deterministic
    m2 = MetricTemperatureScaling(input="logits").fit(z, y)
    np.testing.assert_array_equal(m.curve_, m2.curve_)
