"""Every estimator takes every input form the pipeline reads (issue 30, item 8).

Top-label pairs (``confidence=``, ``correct=``) give the same result as the ``(labels,
probs)`` they come from, for the estimators that used to refuse them (``signed_ece``,
``ece_sweep``); ``confidence_interval`` takes the binning-free estimators by name.
"""

from __future__ import annotations

import numpy as np
import pytest

import calibkit


def _data(n=600, k=4, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = rng.integers(0, k, n)
    pred = p.argmax(1)
    return y, p, p[np.arange(n), pred], (pred == y).astype(int), pred


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("weighted", [False, True])
def test_signed_ece_takes_pairs(binning, weighted):
    y, p, conf, correct, pred = _data()
    w = np.random.default_rng(1).uniform(0, 2, y.size) if weighted else None
    a = calibkit.signed_ece(y, p, binning=binning, sample_weight=w)
    b = calibkit.signed_ece(confidence=conf, correct=correct, binning=binning, sample_weight=w)
    assert a == b
    cc = calibkit.signed_ece(y, p, class_conditional=True, sample_weight=w)
    assert cc == calibkit.signed_ece(confidence=conf, correct=correct, predicted=pred,
                                     num_classes=p.shape[1], class_conditional=True,
                                     sample_weight=w)


def test_signed_ece_pairs_refuse_all_probabilities():
    _, _, conf, correct, _ = _data()
    with pytest.raises(calibkit.TopLabelInputError, match="max_prob=False"):
        calibkit.signed_ece(confidence=conf, correct=correct, max_prob=False)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("threshold", [0.0, 0.5])
def test_ece_sweep_takes_pairs(binning, weighted, threshold):
    y, p, conf, correct, _ = _data(n=400)
    w = np.random.default_rng(2).integers(0, 3, y.size).astype(float) if weighted else None
    a = calibkit.ece_sweep(y, p, binning=binning, threshold=threshold, sample_weight=w,
                           max_bins=60)
    b = calibkit.ece_sweep(confidence=conf, correct=correct, binning=binning,
                           threshold=threshold, sample_weight=w, max_bins=60)
    assert (a.value, a.num_bins) == (b.value, b.num_bins)
    if not weighted:  # the sweep's fast path decides as the tables do
        t = calibkit.gce(confidence=conf, correct=correct, binning=binning, threshold=threshold,
                         num_bins=a.num_bins)
        assert a.value == t


def test_ece_sweep_refuses_half_a_pair():
    _, _, conf, _, _ = _data()
    with pytest.raises(calibkit.CalibkitError, match="correct"):
        calibkit.ece_sweep(confidence=conf)


@pytest.mark.parametrize("name, fn", [("smece", calibkit.smece), ("ksce", calibkit.ksce),
                                      ("smECE", calibkit.smece), ("KSCE", calibkit.ksce)])
def test_confidence_interval_takes_binning_free_estimators_by_name(name, fn):
    y, p, conf, correct, _ = _data(n=300)
    ci = calibkit.confidence_interval(y, p, name, n_resamples=30)
    assert ci.value == fn(y, p)
    assert ci.metric == fn.__name__
    assert ci.low <= ci.high
    # the same as passing the estimator itself, resample for resample (same seed)
    kw = {"n_resamples": 30, "return_resamples": True}
    by_name = calibkit.confidence_interval(y, p, name, **kw, random_state=3)
    by_fn = calibkit.confidence_interval(y, p, fn, **kw, random_state=3)
    np.testing.assert_array_equal(by_name.resamples, by_fn.resamples)
    on_pairs = calibkit.confidence_interval(metric=name, confidence=conf, correct=correct,
                                            n_resamples=30)
    assert on_pairs.value == fn(confidence=conf, correct=correct)


def test_an_unknown_metric_name_is_still_refused():
    y, p, *_ = _data(n=50)
    with pytest.raises(calibkit.InvalidParameterError):
        calibkit.confidence_interval(y, p, "smooth_ece_typo", n_resamples=5)


@pytest.mark.parametrize("metric", ["ECE", "ACE", "SCE", "TACE", "CCE"])
def test_calibration_test_takes_sample_weight(metric):
    rng = np.random.default_rng(5)
    n = 1500
    p = rng.uniform(0.5, 1.0, n)
    y = (rng.uniform(size=n) < p).astype(int)
    probs = np.c_[1 - p, p]
    plain = calibkit.calibration_test(y, probs, metric, n_resamples=100, random_state=4)
    ones = calibkit.calibration_test(y, probs, metric, n_resamples=100, sample_weight=np.ones(n),
                                     random_state=4)
    assert ones.statistic == pytest.approx(plain.statistic, abs=1e-15)
    assert ones.pvalue == plain.pvalue
    # integer weights: the statistic of the rows repeated
    w = rng.integers(0, 3, n).astype(float)
    rep = np.repeat(np.arange(n), w.astype(int))
    got = calibkit.calibration_test(y, probs, metric, n_resamples=100, sample_weight=w,
                                    random_state=4)
    spec = calibkit.MetricSpec.coerce(metric)
    assert got.statistic == pytest.approx(calibkit.gce(y[rep], probs[rep], **spec.kwargs()),
                                          abs=1e-12)
    assert 0 < got.pvalue <= 1


def test_weighted_calibration_test_sees_only_the_weighted_rows():
    """Half the rows are calibrated, half over-confident: weighting one half in and the other
    out, the test sees only the half that counts."""
    rng = np.random.default_rng(6)
    n = 4000
    p = rng.uniform(0.5, 1.0, n)
    good = (rng.uniform(size=n) < p).astype(int)
    bad = (rng.uniform(size=n) < p - 0.25).astype(int)
    half = np.arange(n) < n // 2
    y = np.where(half, good, bad)
    w = half.astype(float)
    calibrated = calibkit.calibration_test(y, p, n_resamples=200, sample_weight=w,
                                           random_state=1)
    off = calibkit.calibration_test(y, p, n_resamples=200, sample_weight=1 - w, random_state=1)
    assert calibrated.pvalue > 0.01
    assert off.pvalue < 0.01


def test_calibration_test_weights_are_checked():
    y, p, conf, correct, _ = _data(n=50)
    with pytest.raises(calibkit.ShapeMismatchError, match="sample_weight"):
        calibkit.calibration_test(y, p, n_resamples=5, sample_weight=np.ones(49))
    with pytest.raises(calibkit.InvalidParameterError, match="sample_weight"):
        calibkit.calibration_test(y, p, n_resamples=5, sample_weight=-np.ones(50))
    r = calibkit.calibration_test(confidence=conf, correct=correct, n_resamples=20,
                                  sample_weight=np.full(50, 2.0), random_state=0)
    assert r.statistic == pytest.approx(calibkit.ece(confidence=conf, correct=correct), abs=1e-15)


def _calibrated(n=2000, k=4, seed=8):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k), size=n)
    y = (p.cumsum(1) < rng.uniform(size=(n, 1))).sum(1)  # a label drawn from each row
    return y, p


@pytest.mark.parametrize("metric, fn", [("SCE", calibkit.sce), ("ACE", calibkit.ace),
                                        ("ECE", calibkit.ece)])
@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_test_takes_a_callable(metric, fn, weighted):
    """The callable sees the labels the kernel draws for the metrics of the space: an
    all-probabilities metric given as a callable gives the same resamples and p-value."""
    y, p = _calibrated()
    w = np.random.default_rng(2).integers(1, 3, y.size).astype(float) if weighted else None

    def statistic(labels, probs, sample_weight=None):
        return fn(labels, probs, sample_weight=sample_weight)

    native = calibkit.calibration_test(y, p, metric, n_resamples=120, random_state=5,
                                       sample_weight=w)
    mine = calibkit.calibration_test(y, p, statistic, n_resamples=120, random_state=5,
                                     sample_weight=w)
    assert mine.statistic == pytest.approx(native.statistic, abs=1e-15)
    assert mine.metric == "statistic" and mine.num_bins == 0
    if metric != "ECE":  # top-label ECE redraws "correct", the callable whole labels
        np.testing.assert_allclose(mine.resamples, native.resamples, rtol=0, atol=1e-13)
        assert mine.pvalue == native.pvalue
    assert 0.01 < mine.pvalue <= 1  # calibrated by construction


def test_calibration_test_callable_on_pairs_and_by_name():
    y, p = _calibrated()
    conf, correct = p.max(1), (p.argmax(1) == y)

    def ece_of_pairs(confidence, correct, sample_weight=None):
        return calibkit.ece(confidence=confidence, correct=correct, sample_weight=sample_weight)

    native = calibkit.calibration_test(confidence=conf, correct=correct, n_resamples=150,
                                       random_state=1)
    mine = calibkit.calibration_test(confidence=conf, correct=correct, metric=ece_of_pairs,
                                     n_resamples=150, random_state=1)
    np.testing.assert_allclose(mine.resamples, native.resamples, rtol=0, atol=1e-13)
    assert mine.pvalue == native.pvalue
    for name, fn in (("smece", calibkit.smece), ("ksce", calibkit.ksce)):
        r = calibkit.calibration_test(y, p, name, n_resamples=40, random_state=0)
        assert r.statistic == fn(y, p) and r.metric == fn.__name__
        bad = calibkit.calibration_test(y, np.roll(p, 1, axis=1), name, n_resamples=40,
                                        random_state=0)
        assert bad.pvalue < 0.05 < r.pvalue


def test_calibration_test_callable_is_checked():
    y, p = _calibrated(n=50)
    with pytest.raises(calibkit.InputTypeError, match="sample_weight"):
        calibkit.calibration_test(y, p, lambda a, b: 0.0, n_resamples=5)
    with pytest.raises(calibkit.InvalidProbabilitiesError):
        calibkit.calibration_test(y, p * 2, calibkit.smece, n_resamples=5)
    # a statistic undefined on some resamples: those are left out of the p-value
    calls = iter(range(10**6))

    def sometimes_nan(labels, probs, sample_weight=None):
        return float("nan") if next(calls) % 2 else 0.5

    r = calibkit.calibration_test(y, p, sometimes_nan, n_resamples=20, random_state=0)
    assert np.isnan(r.resamples).sum() == 10 and r.pvalue == 1.0


@pytest.mark.parametrize("metric", ["SCE", "ECE", "TACE", calibkit.MetricSpec("even", True, False, 0.5, "l1")])
def test_weighted_interval_value_is_the_weighted_metric(metric):
    """Even-binned metrics whose scores are not one per row (SCE, or a threshold that drops
    rows) took per-row weights where per-score weights were needed."""
    y, p = _calibrated(n=300, k=3)
    w = np.random.default_rng(3).integers(0, 3, y.size).astype(float)
    spec = calibkit.MetricSpec.coerce(metric)
    ci = calibkit.confidence_interval(y, p, spec, sample_weight=w, n_resamples=10, random_state=0)
    assert ci.value == pytest.approx(calibkit.gce(y, p, sample_weight=w, **spec.kwargs()),
                                     abs=1e-15)


@pytest.mark.parametrize("method", [calibkit.calibration_test, calibkit.confidence_interval])
def test_named_estimators_on_pairs_with_predicted(method):
    """smece and ksce are pooled top-label estimators: predicted= and num_classes= are not
    passed to them (they raised a TypeError)."""
    y, p = _calibrated()
    conf, correct, pred = p.max(1), (p.argmax(1) == y), p.argmax(1)
    for name, fn in (("smece", calibkit.smece), ("ksce", calibkit.ksce)):
        r = method(confidence=conf, correct=correct, predicted=pred, num_classes=p.shape[1],
                   metric=name, n_resamples=5, random_state=0)
        got = r.statistic if method is calibkit.calibration_test else r.value
        assert got == fn(confidence=conf, correct=correct)


@pytest.mark.parametrize("method", [calibkit.calibration_test, calibkit.confidence_interval])
def test_a_callable_undefined_on_the_data_is_an_error(method):
    y, p = _calibrated(n=50)
    with pytest.raises(calibkit.NumericalError, match="nan on the data"):
        method(y, p, lambda a, b, sample_weight=None: float("nan"), n_resamples=5)
    with pytest.raises(calibkit.InputTypeError, match="returned None"):
        method(y, p, lambda a, b, sample_weight=None: None, n_resamples=5)


def test_a_renamed_keyword_beside_its_new_name_given_by_position():
    t = calibkit.calibration_bins([0, 1, 1], [0.2, 0.7, 0.9], num_bins=2)
    with pytest.raises(calibkit.InvalidParameterError, match="both confidence= and confidence_level="):
        t.accuracy_interval("wilson", 0.8, confidence=0.9)


@pytest.mark.parametrize("call", [
    lambda: calibkit.gce([0, 1], [0.2, 0.8], threshold=10**400),
    lambda: calibkit.smece([0, 1], [0.2, 0.8], bandwidth=10**400),
    lambda: calibkit.confidence_interval([0, 1], [0.2, 0.8], confidence_level=10**400),
])
def test_integers_beyond_float64_are_parameter_errors(call):
    with pytest.raises(calibkit.InvalidParameterError, match="too large for a float"):
        call()
