"""Weighted tables over all probabilities straight from the matrix
(``_native.weighted_matrix_stats``): even bins (``rust/kernels/weighted/matrix.rs``) and
adaptive bins by class or pooled (``matrix_adaptive.rs``, each group sorted once for every bin
count), bit for bit the weighted primitive's tables of the metric's triples, and the path every
weighted call over all probabilities takes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import calibkit
from calibkit import _native
from calibkit.binned import weights as weights_mod
from calibkit.binned.weights import form_triples
from calibkit.space import MetricSpec


def _bits(a) -> bytes:
    return np.ascontiguousarray(a, dtype=np.float64).tobytes()


def _triples_bins(y, p, w, binning, cc, thr, b):
    tr = form_triples(y, p, binning=binning, max_prob=False, class_conditional=cc,
                      threshold=thr, num_bins=b)
    return tr.bins(tr.weight_of(w))


def _same_bins(a, b, what):
    for name in ("counts", "sum_score", "sum_outcome", "edges"):
        assert _bits(getattr(a, name)) == _bits(getattr(b, name)), (name, what)
    ua, ub = a.score_units, b.score_units
    assert (ua is None) == (ub is None), what
    if ua is not None:
        assert np.array_equal(np.asarray(ua.words), np.asarray(ub.words)), what


WEIGHT_KINDS = ["ones", "whole", "fractional", "zeros", "tiny", "huge"]


def _weights(kind, n, rng):
    if kind == "ones":
        return np.ones(n)
    if kind == "whole":  # some zeros (never all: an all-zero weight vector is an error)
        w = rng.integers(0, 5, n).astype(float)
        w[rng.integers(0, n)] = 2.0
        return w
    if kind == "fractional":
        return rng.uniform(0.0, 3.0, n)
    if kind == "zeros":  # mostly zero, one positive
        w = np.zeros(n)
        w[rng.integers(0, n)] = 0.3
        return w
    if kind == "tiny":  # lifted by a power of two
        return rng.uniform(1e-9, 1e-7, n)
    return rng.uniform(1e20, 1e22, n)  # huge: scaled down, products past 2^51


@st.composite
def cases(draw):
    n = draw(st.integers(1, 120))
    k = draw(st.integers(1, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    conc = draw(st.sampled_from([0.05, 0.5, 5.0]))
    p = rng.dirichlet(np.full(k, conc), size=n) if k > 1 else np.ones((n, 1))
    if draw(st.booleans()):  # exact zeros and ties on edges
        p = np.round(p * 20) / 20
        p[:, 0] += 1.0 - p.sum(axis=1)
        p = np.clip(p, 0.0, 1.0)
        p /= p.sum(axis=1, keepdims=True)
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    y = rng.integers(0, k, n)
    w = _weights(draw(st.sampled_from(WEIGHT_KINDS)), n, rng)
    binning = draw(st.sampled_from(["even", "adaptive"]))
    cc = draw(st.booleans())
    thr = draw(st.sampled_from([0.0, 0.01, 0.2]))
    b = draw(st.sampled_from([1, 2, 10, 15, 33]))
    return y, p.astype(dtype), w, binning, cc, thr, b


@given(case=cases())
def test_matrix_tables_are_the_triples_tables(case):
    y, p, w, binning, cc, thr, b = case
    note(f"n={p.shape[0]} k={p.shape[1]} dtype={p.dtype} {binning} cc={cc} thr={thr} b={b}")
    got = calibkit.calibration_bins(y, p, binning=binning, max_prob=False, class_conditional=cc,
                                    threshold=thr, num_bins=b, sample_weight=w)
    _same_bins(got, _triples_bins(y, p, w, binning, cc, thr, b), "calibration_bins")


@pytest.mark.parametrize("kind", WEIGHT_KINDS)
def test_weighted_gce_and_evaluate_equal_the_triples_path(kind):
    rng = np.random.default_rng(3)
    n, k = 400, 12
    p = rng.dirichlet(np.full(k, 0.3), size=n)
    y = rng.integers(0, k, n)
    w = _weights(kind, n, rng)
    specs = [MetricSpec(binning, False, cc, t, norm) for binning in ("even", "adaptive")
             for cc in (True, False) for t in (0.0, 0.01) for norm in ("l1", "l2")]
    ev = calibkit.evaluate(y, p, space=specs, num_bins=(5, 15), sample_weight=w)
    for i, s in enumerate(specs):
        for j, b in enumerate((5, 15)):
            tr = form_triples(y, p, binning=s.binning, max_prob=False,
                              class_conditional=s.class_conditional, threshold=s.threshold,
                              num_bins=b)
            want = tr.error(tr.weight_of(w), s.norm)
            got = calibkit.gce(y, p, **s.kwargs(), num_bins=b, sample_weight=w)
            assert got == want and ev.values[i, j] == want, (s, b)


def test_weighted_metrics_over_all_probabilities_take_the_matrix_passes(monkeypatch):
    """Weighted calls over all probabilities (SCE, ACE, TACE, pooled adaptive) form no
    triples; top-label ones still do."""
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(5), size=200)
    y = rng.integers(0, 5, 200)
    w = rng.uniform(0.5, 2.0, 200)
    calls = []
    real = _native.score_rows
    monkeypatch.setattr(_native, "score_rows", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    for name in ("sce", "ace", "tace"):
        getattr(calibkit, name)(y, p, sample_weight=w)
    calibkit.evaluate(y, p, space=["SCE", "ACE", "TACE"], num_bins=(10, 15), sample_weight=w)
    assert calls == []
    calibkit.gce(y, p, binning="adaptive", max_prob=False, class_conditional=False,
                 sample_weight=w)
    assert calls == []
    calibkit.ece(y, p, sample_weight=w)
    assert len(calls) == 1


def test_weighted_evaluate_makes_one_matrix_call_per_grouping(monkeypatch):
    """``evaluate`` asks for both groupings and every bin count of a (binning, threshold) in one
    call (adaptive groups sorted once, even pooled tables from the class sums), shared by both
    norms: 4 calls for the 16 metrics over all probabilities at 3 bin counts, each value the
    single call's."""
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(6, 0.4), size=300)
    y = rng.integers(0, 6, 300)
    w = rng.integers(0, 4, 300).astype(float)
    w[0] = 1.0
    calls = []
    real = _native.weighted_matrix_stats
    monkeypatch.setattr(_native, "weighted_matrix_stats",
                        lambda *a, **kw: calls.append((a[4], a[6])) or real(*a, **kw))
    specs = [MetricSpec(binning, False, cc, t, norm) for binning in ("even", "adaptive")
             for cc in (True, False) for t in (0.0, 0.01) for norm in ("l1", "l2")]
    ev = calibkit.evaluate(y, p, space=specs, num_bins=(4, 15, 30), sample_weight=w)
    assert calls == [([True, False], [4, 15, 30])] * 4
    for i, s in enumerate(specs):
        for j, b in enumerate((4, 15, 30)):
            assert ev.values[i, j] == calibkit.gce(y, p, **s.kwargs(), num_bins=b,
                                                   sample_weight=w), (s, b)


def test_weights_whose_total_may_overflow_take_the_triples_path(monkeypatch):
    """Weights near the float64 limit: the triples path, which names an overflowing total."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(4), size=10)
    y = rng.integers(0, 4, 10)
    w = np.full(10, 1e307)  # total 1e308: finite per row, not once per kept score
    used = []
    monkeypatch.setattr(weights_mod, "matrix_tables",
                        lambda *a, **kw: used.append(1) or pytest.fail("matrix path taken"))
    with pytest.raises(calibkit.errors.InvalidParameterError, match="exceeds the largest float64"):
        calibkit.sce(y, p, sample_weight=w)
    with pytest.raises(calibkit.errors.InvalidParameterError, match="exceeds the largest float64"):
        calibkit.evaluate(y, p, space=["SCE", "ACE"], num_bins=(5, 10), sample_weight=w)
    assert used == []


@pytest.mark.parametrize("binning, cc", [("even", True), ("even", False), ("adaptive", True),
                                         ("adaptive", False)])
@pytest.mark.parametrize("bad, says", [
    (np.ones(9), "one weight per row"),
    (np.r_[np.ones(9), -1.0], "sample_weight"),
    (np.r_[np.ones(9), np.nan], "sample_weight"),
    (np.r_[np.ones(9), np.inf], "sample_weight"),
])
def test_native_entry_point_names_bad_weights(binning, cc, bad, says):
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(3), size=10)
    y = rng.integers(0, 3, 10).astype(np.int64)
    with pytest.raises((ValueError, TypeError), match=says):
        _native.weighted_matrix_stats(y, p, np.ascontiguousarray(bad, dtype=np.float64), binning,
                                      [cc], 0.0, [10])


def test_native_entry_point_names_bad_binning_and_bin_counts():
    p = np.array([[0.6, 0.4], [0.3, 0.7]])
    y = np.array([0, 1])
    with pytest.raises(calibkit.errors.InvalidParameterError, match="binning"):
        _native.weighted_matrix_stats(y, p, np.ones(2), "quantile", [True], 0.0, [10])
    for binning in ("even", "adaptive"):
        with pytest.raises(calibkit.errors.InvalidParameterError, match="num_bins"):
            _native.weighted_matrix_stats(y, p, np.ones(2), binning, [False], 0.0, [10, 0])
        with pytest.raises(calibkit.errors.InvalidParameterError, match="num_bins"):
            _native.weighted_matrix_stats(y, p, np.ones(2), binning, [True, False], 0.0, [0])
        assert _native.weighted_matrix_stats(y, p, np.ones(2), binning, [False], 0.0, []) == [[]]
        assert _native.weighted_matrix_stats(y, p, np.ones(2), binning, [], 0.0, [10]) == []


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_native_entry_point_validates_probabilities(binning):
    p = np.array([[0.6, 0.5], [0.3, 0.7]])
    with pytest.raises(calibkit.errors.CalibkitError, match="sum"):
        _native.weighted_matrix_stats(np.array([0, 1]), p, np.ones(2), binning, [True], 0.0, [10])
    with pytest.raises(calibkit.errors.CalibkitError, match="label"):
        _native.weighted_matrix_stats(np.array([0, 2]), np.array([[0.6, 0.4], [0.3, 0.7]]),
                                      np.ones(2), binning, [True], 0.0, [10])


def test_native_entry_point_names_non_contiguous_weights():
    p = np.array([[0.6, 0.4], [0.3, 0.7]])
    with pytest.raises(calibkit.errors.ShapeMismatchError, match="weights must be contiguous"):
        _native.weighted_matrix_stats(np.array([0, 1]), p, np.ones(4)[::2], "even", [True], 0.0,
                                      [10])
