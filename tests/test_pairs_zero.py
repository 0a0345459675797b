"""Top-label pairs keep a confidence of exactly 0.0 at threshold 0 (issue 31, item 3), on every
path that reads pairs; the matrix form keeps dropping an exact 0.0 (docs/spec.md). And the
reading of a 1-D ``probs`` is shown where a user sees it (item 4)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit.errors import BinaryReadingWarning


def textbook_pairs(conf, ok, num_bins, norm="l1"):
    """Even bins as the engine (left-closed, 1.0 in a bin of its own), every pair kept."""
    edges = np.linspace(0, 1, num_bins + 1)
    idx = np.searchsorted(edges, conf, side="right") - 1
    out = 0.0
    for b in np.unique(idx):
        m = idx == b
        gap = abs(ok[m].mean() - conf[m].mean())
        out += m.mean() * (gap if norm == "l1" else gap ** 2)
    return out if norm == "l1" else np.sqrt(out)


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(11)
    conf = rng.uniform(size=3000)
    conf[:300] = 0.0  # an LLM that says 0%, a forest's empty vote
    conf[300:400] = 1.0
    ok = rng.uniform(size=3000) < np.clip(conf, 0.05, 0.95)
    return conf, ok


def test_torchmetrics_zero_pred_case():
    # torchmetrics' test_binary_with_zero_pred through the pair form: 0.0 is kept (bin 0)
    conf = np.array([0.0, 0.0, 0.3, 1.0])
    ok = np.array([1, 0, 0, 1])
    assert calibkit.ece(confidence=conf, correct=ok) == pytest.approx(0.325, abs=1e-15)
    assert calibkit.calibration_bins(confidence=conf, correct=ok).counts.sum() == 4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_pair_path_keeps_zero(pairs, dtype):
    conf, ok = pairs
    c = conf.astype(dtype)
    want = textbook_pairs(c.astype(np.float64), ok, 15)
    assert calibkit.ece(confidence=c, correct=ok) == pytest.approx(want, abs=1e-12)
    assert calibkit.gce(confidence=c, correct=ok, norm="l2") == pytest.approx(
        textbook_pairs(c.astype(np.float64), ok, 15, "l2"), abs=1e-12)
    t = calibkit.calibration_bins(confidence=c, correct=ok)
    assert t.counts.sum() == conf.size and t.counts[0, 0] >= 300
    assert t.error() == pytest.approx(want, abs=1e-12)
    ev = calibkit.evaluate(confidence=c, correct=ok, num_bins=(10, 15))
    assert ev.get("ECE", 15) == pytest.approx(want, abs=1e-12)
    assert ev.get("RMSCE", 15) == pytest.approx(calibkit.rmsce(confidence=c, correct=ok),
                                                abs=1e-12)
    w = np.ones(conf.size)
    assert calibkit.ece(confidence=c, correct=ok, sample_weight=w) == pytest.approx(want,
                                                                                    abs=1e-12)
    assert calibkit.rmsce(confidence=c, correct=ok, sample_weight=w) == pytest.approx(
        calibkit.rmsce(confidence=c, correct=ok), abs=1e-12)


def test_adaptive_bins_count_the_zeros(pairs):
    conf, ok = pairs
    t = calibkit.calibration_bins(confidence=conf, correct=ok, binning="adaptive", num_bins=10)
    assert t.counts.sum() == conf.size
    np.testing.assert_array_equal(t.counts[0, :2], [300, 300])  # the 300 zeros: the first bin


def test_a_positive_threshold_still_drops(pairs):
    conf, ok = pairs
    kept = conf > 0.01
    assert calibkit.gce(confidence=conf, correct=ok, threshold=0.01) == pytest.approx(
        calibkit.gce(confidence=conf[kept], correct=ok[kept], threshold=0.01), abs=1e-15)
    ev = calibkit.evaluate(confidence=conf, correct=ok, num_bins=15)
    assert ev.get("gce(even,top,pooled,0.01,l1)", 15) == pytest.approx(
        calibkit.gce(confidence=conf[kept], correct=ok[kept]), abs=1e-12)


def test_matrix_form_unchanged():
    # max_prob=False at threshold 0 drops the exact 0.0 column entries (docs/spec.md)
    probs = np.array([[0.8, 0.2], [1.0, 0.0]])
    t = calibkit.calibration_bins([0, 1], probs, max_prob=False, num_bins=2)
    assert t.counts.sum() == 3


def test_resampling_streaming_dask_and_sweep_keep_zero(pairs):
    conf, ok = pairs
    ece = calibkit.ece(confidence=conf, correct=ok)
    ci = calibkit.confidence_interval(confidence=conf, correct=ok, n_resamples=30, random_state=0)
    assert ci.value == pytest.approx(ece, abs=1e-12)

    def f(confidence=None, correct=None, sample_weight=None):
        return calibkit.ece(confidence=confidence, correct=correct, sample_weight=sample_weight)

    ci_f = calibkit.confidence_interval(confidence=conf, correct=ok, metric=f, n_resamples=30,
                                        random_state=0)
    assert ci.low == pytest.approx(ci_f.low, abs=1e-12)
    assert ci.high == pytest.approx(ci_f.high, abs=1e-12)
    tt = calibkit.calibration_test(confidence=conf, correct=ok, n_resamples=30, random_state=0)
    tf = calibkit.calibration_test(confidence=conf, correct=ok, metric=f, n_resamples=30,
                                   random_state=0)
    assert tt.statistic == pytest.approx(ece, abs=1e-12) and tt.pvalue == tf.pvalue
    for metric, fn in (("ECE", calibkit.ece), ("RMSCE", calibkit.rmsce)):
        acc = calibkit.streaming.Accumulator(metric)
        acc.update(confidence=conf[:1000], correct=ok[:1000])
        acc.update(confidence=conf[1000:], correct=ok[1000:])
        assert acc.compute() == pytest.approx(fn(confidence=conf, correct=ok), abs=1e-12)
    s = calibkit.ece_sweep(confidence=conf, correct=ok)
    assert s.value == pytest.approx(calibkit.gce(confidence=conf, correct=ok,
                                                 binning="adaptive", num_bins=s.num_bins),
                                    abs=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dask_keeps_zero_and_scores_just_below_it(pairs, dtype):
    # the exact selection of adaptive edges keys scores by their bits: 0.0, -0.0 and scores
    # below 0 within the tolerance (kept at threshold 0) must sort as their values
    da = requires("dask.array")
    conf, ok = pairs
    conf = conf.copy()
    conf[400:430] = -5e-5
    conf[430:440] = -0.0
    conf = conf.astype(dtype)
    c, o = da.from_array(conf, chunks=700), da.from_array(ok, chunks=700)
    for kw in ({}, {"binning": "adaptive"}, {"binning": "adaptive", "norm": "l2"},
               {"binning": "adaptive", "num_bins": 700}):
        assert float(calibkit.dask.gce(confidence=c, correct=o, **kw)) == pytest.approx(
            calibkit.gce(confidence=conf, correct=ok, **kw), abs=1e-12)


# -- item 4: the reading of a 1-D probs ------------------------------------------------------------
def test_boolean_correct_with_confidences_warns():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.2, 1.0, 500)
    correct = rng.uniform(size=500) < conf
    with pytest.warns(BinaryReadingWarning, match="confidence=..., correct=") as rec:
        calibkit.ece(correct, conf)
    assert rec[0].filename == __file__  # points at the caller
    with pytest.warns(BinaryReadingWarning):
        calibkit.gce(list(correct), list(conf))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calibkit.ece(correct.astype(int), conf)  # integer labels: the documented binary reading
        calibkit.ece(correct, np.maximum(conf, 0.5))  # both readings agree: nothing to say
        calibkit.ece(confidence=conf, correct=correct)
        calibkit.ece(correct.astype(int), np.stack([1 - conf, conf], axis=1))


def test_evaluation_repr_says_the_reading():
    ev = calibkit.evaluate([0, 1, 1], [0.2, 0.7, 0.4], num_bins=5)
    assert ev.binary_1d and "read as [1 - p, p]" in repr(ev) and "calibkit.binary" in repr(ev)
    ev = calibkit.evaluate([0, 1, 1], [[0.2], [0.7], [0.4]], num_bins=5)
    assert ev.binary_1d
    ev = calibkit.evaluate([0, 1, 1], [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]], num_bins=5)
    assert not ev.binary_1d and "read as" not in repr(ev)


def test_reduce_bins_takes_score_sums_just_below_zero():
    # a bin holding only pairs just below 0 (within the tolerance) has a negative score sum
    tol = calibkit._validate.RANGE_TOL
    assert calibkit.reduce_bins([[3, 1]], [[-2 * tol, 0.5]], [[0.0, 1.0]]) == pytest.approx(
        0.125 + 3 / 4 * 2 * tol / 3, abs=1e-15)
    with pytest.raises(calibkit.InvalidParameterError, match=r"sum_score\[0, 0\] is -0.5"):
        calibkit.reduce_bins([[1, 2]], [[-0.5, 1.0]], [[0.0, 1.0]])


@pytest.mark.parametrize("cc", [False, True])
def test_pairs_just_below_zero_add_exactly_across_batches(pairs, cc):
    # confidences below 0 within the tolerance (kept at threshold 0) join bin 0 with their exact
    # units: any batching gives the bits of one call (they used to add in floating point)
    conf, ok = pairs
    conf = conf.copy()
    conf[400:460] = -3.3e-7 * np.arange(1, 61)
    pred = np.arange(conf.size) % 4 if cc else None
    kw = dict(confidence=conf, correct=ok, predicted=pred, num_classes=4 if cc else None)
    metric = "CCE" if cc else "ECE"
    whole = calibkit.evaluate(space=[metric], num_bins=15, **kw).values[0, 0]
    one = calibkit.calibration_bins(max_prob=True, class_conditional=cc, **kw)
    rng = np.random.default_rng(5)
    for _ in range(5):
        cuts = np.sort(rng.choice(np.arange(1, conf.size), size=4, replace=False))
        acc = calibkit.streaming.Accumulator(metric)
        for part in np.split(np.arange(conf.size), cuts):
            acc.update(confidence=conf[part], correct=ok[part],
                       predicted=None if pred is None else pred[part],
                       num_classes=4 if cc else None)
        assert acc.compute() == whole
    # the table is bitwise that of a kernel keeping every pair: the one primitive on all rows
    from calibkit.binned.table import grouped_bin_stats

    c, s, o, _, u = grouped_bin_stats(pred, conf, ok.astype(np.float64), num_groups=4 if cc else 1,
                                      binning="even", num_bins=15, units=True)
    assert np.array_equal(one.counts, c) and np.array_equal(one.sum_outcome, o)
    assert np.array_equal(one.sum_score, s) and one.score_units == u
