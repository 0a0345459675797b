"""Histogram binning, class-conditional and bootstrap variants (calibkit.recalibration.binning).

The expected maps are computed directly: one class, one bin, one boolean mask at a time.
"""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.recalibration import (
    BootstrapHistogramBinning,
    ClassConditionalHistogramBinning,
    HistogramBinning,
)


def probs_data(n=800, k=4, seed=0, scale=4.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    return calibkit.softmax(scale * z), y


def direct_edges(s, n_bins, binning):
    if binning == "even":
        return np.linspace(0, 1, n_bins + 1)
    srt = np.sort(s)
    pos = np.minimum(np.round(np.arange(1, n_bins) * (len(s) / n_bins)).astype(int), len(s) - 1)
    return np.concatenate([[0.0], srt[pos], [1.0]])


def direct_map(s, t, edges):
    """Bin value per bin: mean target among the scores in [e_j, e_j+1) (last bin: up to 1)."""
    nb = len(edges) - 1
    vals = np.empty(nb)
    for j in range(nb):
        inner_hi = edges[j + 1] if j < nb - 1 else np.inf
        lo = edges[j] if j > 0 else -np.inf
        m = (s >= lo) & (s < inner_hi)
        vals[j] = t[m].mean() if m.any() else 0.5 * (edges[j] + edges[j + 1])
    return vals


def direct_apply(s, edges, vals):
    out = np.empty_like(s)
    nb = len(vals)
    for i, x in enumerate(s):
        j = 0
        while j < nb - 1 and x >= edges[j + 1]:
            j += 1
        out[i] = vals[j]
    return out


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("n_bins", [1, 5, 15])
def test_one_vs_rest_matches_direct_computation(binning, n_bins):
    p, y = probs_data()
    pt, _ = probs_data(300, seed=1)
    hb = HistogramBinning(input="probs", num_bins=n_bins, binning=binning).fit(p, y)
    raw = np.empty_like(pt)
    for c in range(4):
        e = direct_edges(p[:, c], n_bins, binning)
        v = direct_map(p[:, c], (y == c).astype(float), e)
        np.testing.assert_allclose(hb.bin_edges_[c], e)
        np.testing.assert_allclose(hb.bin_values_[c], v, atol=1e-15)
        raw[:, c] = direct_apply(pt[:, c], e, v)
    want = raw / raw.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(hb.predict_proba(pt), want, atol=1e-12)


def test_top_label_matches_direct_computation():
    p, y = probs_data()
    pt, _ = probs_data(300, seed=2)
    hb = HistogramBinning(input="probs", num_bins=10, binning="even", multiclass="top_label")
    hb.fit(p, y)
    conf, pred = p.max(1), p.argmax(1)
    e = np.linspace(0, 1, 11)
    v = direct_map(conf, (pred == y).astype(float), e)
    np.testing.assert_allclose(hb.bin_values_[0], v)
    q = hb.predict_proba(pt)
    c_new = direct_apply(pt.max(1), e, v)
    rows = np.arange(300)
    np.testing.assert_allclose(q[rows, pt.argmax(1)], c_new, atol=1e-12)
    others = pt.copy()
    others[rows, pt.argmax(1)] = 0
    want = others * ((1 - c_new) / (1 - pt.max(1)))[:, None]
    want[rows, pt.argmax(1)] = c_new
    np.testing.assert_allclose(q, want, atol=1e-12)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_class_conditional_matches_direct_computation(binning):
    p, y = probs_data(2000, k=5, seed=3)
    pt, _ = probs_data(400, k=5, seed=4)
    cc = ClassConditionalHistogramBinning(input="probs", num_bins=6, binning=binning).fit(p, y)
    assert cc.fallback_classes_.size == 0
    conf, pred = p.max(1), p.argmax(1)
    rows = np.arange(400)
    new = np.empty(400)
    for c in range(5):
        m = pred == c
        e = direct_edges(conf[m], 6, binning)
        v = direct_map(conf[m], (y[m] == c).astype(float), e)
        np.testing.assert_allclose(cc.bin_values_[c], v, atol=1e-15)
        mt = pt.argmax(1) == c
        new[mt] = direct_apply(pt[mt].max(1), e, v)
    q = cc.predict_proba(pt)
    np.testing.assert_allclose(q[rows, pt.argmax(1)], new, atol=1e-12)
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-12)


def test_class_conditional_differs_from_pooled_top_label():
    """The per-class maps use each class's own accuracy (the paper's point)."""
    rng = np.random.default_rng(5)
    n = 4000
    p, y = probs_data(n, k=2, seed=5, scale=3.0)
    pred = p.argmax(1)
    # make class 1 predictions wrong far more often than class 0 predictions
    flip = (pred == 1) & (rng.random(n) < 0.4)
    y = np.where(flip, 0, np.where(pred == 0, 0, y))
    cc = ClassConditionalHistogramBinning(input="probs", num_bins=5).fit(p, y)
    tl = HistogramBinning(input="probs", num_bins=5, binning="even", multiclass="top_label").fit(p, y)
    q_cc, q_tl = cc.predict_proba(p), tl.predict_proba(p)
    assert calibkit.cce(y, q_cc) < calibkit.cce(y, q_tl)


def test_class_conditional_fallback_for_rarely_predicted_classes():
    p, y = probs_data(600, k=3, seed=6)
    p = p.copy()
    # class 2 is never the argmax (but still occurs as a label)
    p[:, 2] = 0.25 * p[:, :2].min(axis=1)
    p /= p.sum(1, keepdims=True)
    assert not np.any(p.argmax(1) == 2)
    cc = ClassConditionalHistogramBinning(input="probs", num_bins=5).fit(p, y)
    np.testing.assert_array_equal(cc.fallback_classes_, [2])
    pooled = HistogramBinning(input="probs", num_bins=5, binning="even", multiclass="top_label")
    pooled.fit(p, y)
    np.testing.assert_allclose(cc.bin_values_[2], pooled.bin_values_[0])
    many = ClassConditionalHistogramBinning(input="probs", num_bins=5, min_samples_per_class=10**6)
    assert many.fit(p, y).fallback_classes_.tolist() == [0, 1, 2]


def test_empty_bins_map_to_their_midpoint():
    p = np.array([[0.95, 0.05], [0.9, 0.1], [0.15, 0.85], [0.05, 0.95], [0.97, 0.03]])
    y = np.array([0, 1, 1, 1, 0])
    hb = HistogramBinning(input="probs", num_bins=5, binning="even").fit(p, y)
    # class 0 scores fill bins 0 and 4 only; bins 1..3 are empty
    np.testing.assert_allclose(hb.bin_values_[0], [0.0, 0.3, 0.5, 0.7, 2 / 3])
    np.testing.assert_array_equal(hb.bin_counts_[0], [2, 0, 0, 0, 3])


def test_left_closed_bins_and_one_in_the_last_bin():
    p = np.array([[0.2, 0.8], [0.8, 0.2], [0.0, 1.0], [1.0, 0.0], [0.4, 0.6]])
    y = np.array([1, 0, 1, 0, 0])
    hb = HistogramBinning(input="probs", num_bins=5, binning="even").fit(p, y)
    # class 1: 0.8 sits on the edge 0.8 and goes up into bin 4 with 1.0; 0.2 into bin 1; 0.6
    # stays in bin 2 because the float64 edge is 0.6000000000000001 (as in calibkit's metrics)
    np.testing.assert_array_equal(hb.bin_counts_[1], [1, 1, 1, 0, 2])
    np.testing.assert_allclose(hb.bin_values_[1], [0.0, 0.0, 0.0, 0.7, 1.0])


def test_all_zero_rows_keep_their_input():
    p = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    y = np.array([0, 1, 2])  # every class's low bin holds only negatives: it maps to 0
    hb = HistogramBinning(input="probs", num_bins=2, binning="even").fit(p, y)
    np.testing.assert_allclose(hb.bin_values_, [[0.0, 1.0]] * 3)
    q = np.array([[0.4, 0.3, 0.3], [0.6, 0.3, 0.1]])
    np.testing.assert_allclose(hb.predict_proba(q), [[0.4, 0.3, 0.3], [1.0, 0.0, 0.0]])


def test_bootstrap_is_the_average_of_resampled_maps():
    p, y = probs_data(500, seed=7)
    pt, _ = probs_data(200, seed=8)
    bb = BootstrapHistogramBinning(input="probs", num_bins=8, n_estimators=6, random_state=42)
    q = bb.fit(p, y).predict_proba(pt)
    rng = np.random.default_rng(42)
    acc = np.zeros_like(pt)
    for _ in range(6):
        idx = rng.integers(0, 500, size=500)
        # classes absent from a resample are legal inside the bag: build the map directly
        hb = HistogramBinning(input="probs", num_bins=8)
        raw = np.empty_like(pt)
        for c in range(4):
            e = direct_edges(p[idx, c], 8, "adaptive")
            v = direct_map(p[idx, c], (y[idx] == c).astype(float), e)
            raw[:, c] = direct_apply(pt[:, c], e, v)
        acc += raw / raw.sum(1, keepdims=True)
        del hb
    np.testing.assert_allclose(q, acc / 6, atol=1e-12)
    assert len(bb.estimators_) == 6


def test_bootstrap_reduces_variance_of_the_map():
    """Bagging smooths: its outputs vary less across fitting sets than a single histogram's."""
    outs_hb, outs_bb = [], []
    pt, _ = probs_data(300, seed=99)
    for seed in range(6):
        p, y = probs_data(300, seed=seed + 10)
        outs_hb.append(HistogramBinning(input="probs", num_bins=15).fit(p, y).predict_proba(pt))
        outs_bb.append(
            BootstrapHistogramBinning(input="probs", num_bins=15, n_estimators=20, random_state=seed)
            .fit(p, y)
            .predict_proba(pt)
        )
    assert np.var(outs_bb, axis=0).mean() < np.var(outs_hb, axis=0).mean()


def test_binning_lowers_ece_on_overconfident_model():
    p, y = probs_data(6000, k=5, seed=11, scale=6.0)
    fit, test = slice(0, 3000), slice(3000, None)
    base = calibkit.ece(y[test], p[test])
    for est in (
        HistogramBinning(input="probs"),
        HistogramBinning(input="probs", binning="even", multiclass="top_label"),
        ClassConditionalHistogramBinning(input="probs"),
        BootstrapHistogramBinning(input="probs", random_state=0),
    ):
        q = est.fit(p[fit], y[fit]).predict_proba(p[test])
        assert calibkit.ece(y[test], q) < 0.5 * base, est


def test_logits_input_goes_through_softmax():
    rng = np.random.default_rng(12)
    z = 3 * rng.normal(size=(400, 3))
    y = rng.integers(0, 3, 400)
    a = HistogramBinning(input="logits").fit(z, y).predict_proba(z)
    b = (
        HistogramBinning(input="probs")
        .fit(calibkit.softmax(z), y)
        .predict_proba(calibkit.softmax(z))
    )
    np.testing.assert_allclose(a, b, atol=1e-12)
