"""calibkit.binary's intervals, tests and sweep: the engine's methods on the binary pairs, equal
to their pair-form counterparts where both apply (issue 31)."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit import binary
from calibkit.errors import InvalidParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    p = np.round(rng.beta(2, 2, size=1500), 2)  # ties and exact 0.0, no 1.0
    p[:40] = 0.0
    y = rng.uniform(size=p.size) < p ** 1.2
    w = rng.integers(0, 3, size=p.size).astype(float)
    return y, p, w


@pytest.mark.parametrize("name,engine", [("ece", "ECE"), ("rmsce", "RMSCE"),
                                         ("adaptive_ece", "gce(adaptive,top,pooled,0.0,l1)"),
                                         ("smece", "smece"), ("ksce", "ksce")])
@pytest.mark.parametrize("weighted", [False, True])
def test_interval_and_test_equal_the_pair_form(data, name, engine, weighted):
    y, p, w = data
    kw = dict(sample_weight=w if weighted else None, random_state=3, n_resamples=60)
    a = binary.confidence_interval(y, p, name, **kw)
    b = calibkit.confidence_interval(confidence=p, correct=y, metric=engine, **kw)
    assert a.value == pytest.approx(b.value, abs=1e-12)
    assert a.low == pytest.approx(b.low, abs=1e-12) and a.high == pytest.approx(b.high, abs=1e-12)
    assert a.std == pytest.approx(b.std, abs=1e-12)
    t = binary.calibration_test(y, p, name, **kw)
    u = calibkit.calibration_test(confidence=p, correct=y, metric=engine, **kw)
    assert t.statistic == pytest.approx(u.statistic, abs=1e-12)
    assert t.pvalue == u.pvalue


def test_interval_value_is_the_binary_metric_with_exact_ones():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=400)
    p[:60] = 1.0
    y = rng.uniform(size=400) < p
    for name, fn in (("ece", binary.ece), ("mce", binary.mce)):
        ci = binary.confidence_interval(y, p, name, n_resamples=30, random_state=0)
        assert ci.value == fn(y, p)
        assert binary.calibration_test(y, p, name, n_resamples=30,
                                       random_state=0).statistic == fn(y, p)


def test_callable_metric_and_class_names(data):
    y, p, _ = data
    names = np.where(y, "pos", "neg")

    def brier(y_true, y_prob, sample_weight=None):
        return float(np.average((y_prob - y_true) ** 2, weights=sample_weight))

    a = binary.confidence_interval(names, p, brier, pos_label="pos", n_resamples=40,
                                   random_state=1)
    assert a.value == pytest.approx(np.mean((p - y) ** 2), abs=1e-15)
    b = binary.confidence_interval(y, p, "ece", n_resamples=40, random_state=1)
    c = binary.confidence_interval(names, p, "ece", pos_label="pos", n_resamples=40,
                                   random_state=1)
    assert (b.value, b.low, b.high) == (c.value, c.low, c.high)
    with pytest.raises(InvalidParameterError, match="metric must be one of"):
        binary.confidence_interval(y, p, "ECE-ish")
    with pytest.raises(InvalidParameterError, match="metric must be one of"):
        binary.calibration_test(y, p, 3)


def test_calibration_test_detects_miscalibration():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=2000)
    y = rng.uniform(size=2000) < p
    assert binary.calibration_test(y, p, n_resamples=100, random_state=0).pvalue > 0.05
    assert binary.calibration_test(y, p ** 2, n_resamples=100, random_state=0).pvalue < 0.05


def test_ece_sweep_weighted(data):
    y, p, w = data
    assert binary.ece_sweep(y, p, sample_weight=w, max_bins=30) == calibkit.ece_sweep(
        confidence=p, correct=y, sample_weight=w, max_bins=30)
