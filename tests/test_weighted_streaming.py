"""Fractional sample weights and num_bins="auto" on the streaming Accumulator and calibkit.dask.

Every result is compared with the in-memory calibkit.gce / calibkit.evaluate on the
concatenated data and weights (an independent, one-shot computation), or with repeated rows.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from conftest import requires
from hypothesis import given
from hypothesis import strategies as st

import calibkit
from calibkit.errors import (
    FewSamplesWarning,
    InputTypeError,
    InvalidParameterError,
    ShapeMismatchError,
)
from calibkit.scale.streaming import Accumulator
from calibkit.space import MetricSpec, metric_space

SPACE = metric_space()


def _data(seed, n, k, *, ties=True, dtype=np.float64, zeros=0.15):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.7, size=n)
    if ties:  # repeated scores exercise the weighted edges' tie rule
        m = n // 4
        p[:m] = np.round(p[:m] * 4) / 4
        p[:m] /= p[:m].sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    w = rng.exponential(size=n) * rng.choice([0.3, 1.0, 7.0], size=n)
    w[rng.random(n) < zeros] = 0.0
    if not (w > 0).any():
        w[0] = 0.25
    return y, p.astype(dtype), w


def _split(n, cuts):
    pts = sorted({min(c, n) for c in cuts} | {0, n})
    return list(zip(pts[:-1], pts[1:]))


def _fed(y, p, w, parts, **kw):
    acc = Accumulator(SPACE, **kw)
    for a, b in parts:
        acc.update(y[a:b], p[a:b], sample_weight=w[a:b])
    return acc


# --- fractional weights on the Accumulator ---------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 120), k=st.integers(2, 5),
       cuts=st.lists(st.integers(0, 120), max_size=5), f32=st.booleans())
def test_accumulator_fractional_weights_equal_weighted_evaluate(seed, n, k, cuts, f32):
    y, p, w = _data(seed, n, k, dtype=np.float32 if f32 else np.float64)
    acc = _fed(y, p, w, _split(n, cuts), num_bins=(1, 3, 7))
    ref = calibkit.evaluate(y, p, SPACE, num_bins=(1, 3, 7), sample_weight=w)
    np.testing.assert_allclose(acc.compute().values, ref.values, rtol=0, atol=1e-12)
    assert acc.n_samples == pytest.approx(w.sum())


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 120), cut=st.integers(1, 119))
def test_merge_copy_pickle_carry_weights(seed, n, cut):
    y, p, w = _data(seed, n, 3)
    cut = min(cut, n - 1)
    a = _fed(y, p, w, [(0, cut)], num_bins=(4, 9))
    b = _fed(y, p, w, [(cut, n)], num_bins=(4, 9))
    b2 = pickle.loads(pickle.dumps(b))
    assert b2 == b and b.copy() == b
    merged = a.copy().merge(b2)
    ref = calibkit.evaluate(y, p, SPACE, num_bins=(4, 9), sample_weight=w)
    np.testing.assert_allclose(merged.compute().values, ref.values, rtol=0, atol=1e-12)
    # an unweighted accumulator merged with a weighted one: the unweighted rows weigh 1
    u = Accumulator(SPACE, num_bins=(4, 9)).update(y[:cut], p[:cut])
    u.merge(b)
    ref = calibkit.evaluate(y, p, SPACE, num_bins=(4, 9),
                            sample_weight=np.r_[np.ones(cut), w[cut:]])
    np.testing.assert_allclose(u.compute().values, ref.values, rtol=0, atol=1e-12)
    assert u != merged


def test_weighted_then_unweighted_batches_and_bins():
    y, p, w = _data(3, 300, 4)
    acc = Accumulator(SPACE, num_bins=(5, 11))
    acc.update(y[:100], p[:100])
    acc.update(y[100:], p[100:], sample_weight=w[100:])
    ww = np.r_[np.ones(100), w[100:]]
    ref = calibkit.evaluate(y, p, SPACE, num_bins=(5, 11), sample_weight=ww)
    np.testing.assert_allclose(acc.compute().values, ref.values, rtol=0, atol=1e-12)
    for spec in SPACE:
        kw = spec.kwargs()
        kw.pop("norm")
        got = acc.bins(spec, 11)
        want = calibkit.calibration_bins(y, p, num_bins=11, sample_weight=ww, **kw)
        for name in ("counts", "sum_score", "sum_outcome", "edges"):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-12,
                                       err_msg=f"{spec.name} {name}")


@pytest.mark.parametrize("index", [0, 3, 9, 16, 21, 30])
def test_integer_weights_equal_repeated_rows(index):
    y, p, _ = _data(index, 200, 4)
    w = np.random.default_rng(index).integers(0, 4, 200)
    rep = np.repeat(np.arange(200), w)
    spec = MetricSpec.from_index(index)
    a = Accumulator(spec, num_bins=6)
    b = Accumulator(spec, num_bins=6)
    for s in range(0, 200, 70):
        a.update(y[s:s + 70], p[s:s + 70], sample_weight=w[s:s + 70])
    b.update(y[rep], p[rep])
    assert a.compute() == pytest.approx(b.compute(), abs=1e-12)
    assert a.n_samples == b.n_samples == int(w.sum())


def test_weight_errors_leave_the_state_unchanged():
    y, p, w = _data(5, 60, 3)
    acc = Accumulator(SPACE, num_bins=5).update(y, p, sample_weight=w)
    before = acc.copy()
    for bad, err in (([1.0] * 59, ShapeMismatchError), (np.r_[w[:-1], np.nan], InvalidParameterError),
                     (np.r_[w[:-1], -1.0], InvalidParameterError), (["a"] * 60, InputTypeError),
                     ("weights", InputTypeError)):
        with pytest.raises(err, match="sample_weight"):
            acc.update(y, p, sample_weight=bad)
    assert acc == before
    acc.update(y[:10], p[:10], sample_weight=np.zeros(10))  # all zero: adds nothing
    np.testing.assert_allclose(acc.compute().values, before.compute().values, atol=0)
    fresh = Accumulator("ECE").update(y, p, sample_weight=np.zeros(60))
    with pytest.raises(ShapeMismatchError, match="no predictions"):
        fresh.compute()


def test_sketch_mode_refuses_fractional_weights():
    requires("datasketches")
    y, p, w = _data(6, 80, 3)
    acc = Accumulator("ACE", num_bins=4, adaptive="sketch")
    before = acc.copy()
    with pytest.raises(InvalidParameterError, match="adaptive='exact'"):
        acc.update(y, p, sample_weight=w)
    assert acc == before
    # even metrics need no sketch: fractional weights work there in sketch mode too
    even = Accumulator("ECE", num_bins=4, adaptive="sketch").update(y, p, sample_weight=w)
    assert even.compute() == pytest.approx(calibkit.ece(y, p, num_bins=4, sample_weight=w),
                                           abs=1e-12)


def test_weights_are_held_only_once_weighted():
    y, p, w = _data(7, 500, 3)
    a = Accumulator("ACE", num_bins=5).update(y, p)
    b = Accumulator("ACE", num_bins=5).update(y, p, sample_weight=np.ones(500))
    assert b.nbytes == 2 * a.nbytes  # a float64 weight beside each float64 kept score
    assert a.compute() == pytest.approx(b.compute(), abs=1e-12)


# --- num_bins="auto" ---------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(32))
def test_auto_single_metric_equals_gce(index):
    spec = MetricSpec.from_index(index)
    kw = spec.kwargs()
    y, p, w = _data(index, 400, 5)
    for weights in (None, w):
        acc = Accumulator(spec, num_bins="auto")
        for s in range(0, 400, 90):
            acc.update(y[s:s + 90], p[s:s + 90],
                       sample_weight=None if weights is None else weights[s:s + 90])
        kw2 = dict(kw)
        kw2.pop("norm")
        with warnings.catch_warnings(record=True) as mine:
            warnings.simplefilter("always")
            got = acc.compute()
            t = acc.bins()
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            ref = calibkit.gce(y, p, num_bins="auto", sample_weight=weights, **kw)
            want = calibkit.calibration_bins(y, p, num_bins="auto", sample_weight=weights, **kw2)
        assert got == pytest.approx(ref, abs=1e-12)
        # the same FewSamplesWarning decisions as the one-shot calls
        assert ([w.category for w in mine] == [w.category for w in theirs])
        np.testing.assert_allclose(t.counts, want.counts, atol=1e-12)
        np.testing.assert_allclose(t.edges, want.edges, atol=1e-12)


def test_auto_space_equals_evaluate_and_merges():
    y, p, w = _data(11, 700, 4)
    a = Accumulator(SPACE, num_bins="auto").update(y[:300], p[:300], sample_weight=w[:300])
    b = Accumulator(SPACE, num_bins="auto").update(y[300:], p[300:], sample_weight=w[300:])
    a.merge(pickle.loads(pickle.dumps(b)))
    ev = a.compute()
    ref = calibkit.evaluate(y, p, SPACE, num_bins="auto", sample_weight=w)
    assert ev.num_bins == ref.num_bins
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    # the count follows the rows seen
    small = Accumulator(SPACE, num_bins="auto").update(y[:30], p[:30])
    assert small.compute().num_bins == calibkit.evaluate(y[:30], p[:30], SPACE,
                                                         num_bins="auto").num_bins
    with pytest.raises(Exception, match="num_bins"):
        a.merge(Accumulator(SPACE, num_bins=15))


def test_auto_warns_like_gce():
    y, p, _ = _data(12, 60, 3)
    acc = Accumulator("ECE", num_bins="auto").update(y, p)
    with pytest.warns(FewSamplesWarning):
        v = acc.compute()
    with pytest.warns(FewSamplesWarning):
        ref = calibkit.ece(y, p, num_bins="auto")
    assert v == pytest.approx(ref, abs=1e-12)
    with pytest.warns(FewSamplesWarning):
        acc.bins()
    y, p, _ = _data(12, 5000, 3)
    big = Accumulator("ECE", num_bins="auto").update(y, p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big.compute()


def test_auto_argument_errors():
    with pytest.raises(InvalidParameterError, match="adaptive='exact'"):
        Accumulator("ACE", num_bins="auto", adaptive="sketch")
    with pytest.raises(Exception, match="num_bins"):
        Accumulator("ACE", num_bins="many")
    acc = Accumulator("ACE", num_bins="auto")
    with pytest.raises(ShapeMismatchError):
        acc.compute()
    y, p, _ = _data(13, 50, 3)
    acc.update(y, p)
    with pytest.raises(InvalidParameterError, match="auto"):
        acc.bins(num_bins=5)
    assert "num_bins='auto'" in repr(acc)


# --- calibkit.dask ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunks", [(17, 40), (64, 64), (250, 33), (250, 250)])
def test_dask_fractional_weights_equal_weighted_evaluate(chunks):
    da = requires("dask.array")
    import calibkit.scale.dask as cdask

    y, p, w = _data(sum(chunks), 250, 4, dtype=np.float32 if chunks[0] == 64 else np.float64)
    ev = cdask.evaluate(da.from_array(y, chunks=chunks[0]), da.from_array(p, chunks=(chunks[0], 4)),
                        SPACE, num_bins=(2, 7, 15), sample_weight=da.from_array(w, chunks=chunks[1]),
                        scheduler="synchronous", split_every=3)
    ref = calibkit.evaluate(y, p, SPACE, num_bins=(2, 7, 15), sample_weight=w)
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    for index in (2, 17, 29):
        kw = MetricSpec.from_index(index).kwargs()
        got = cdask.gce(da.from_array(y, chunks=chunks[0]), da.from_array(p, chunks=(chunks[0], 4)),
                        num_bins=9, sample_weight=w, scheduler="synchronous", **kw)
        assert got == pytest.approx(calibkit.gce(y, p, num_bins=9, sample_weight=w, **kw),
                                    abs=1e-12)


def test_dask_weight_errors():
    da = requires("dask.array")
    import calibkit.scale.dask as cdask

    y, p, w = _data(21, 120, 3)
    dy, dp = da.from_array(y, chunks=50), da.from_array(p, chunks=(50, 3))
    bad = w.copy()
    bad[107] = -2.0
    with pytest.raises(InvalidParameterError, match=r"sample_weight\[107\]"):
        cdask.gce(dy, dp, sample_weight=bad, scheduler="synchronous")
    with pytest.raises(InvalidParameterError, match="zero everywhere"):
        cdask.gce(dy, dp, sample_weight=np.zeros(120), binning="adaptive",
                  scheduler="synchronous")
    with pytest.raises(ShapeMismatchError, match="sample_weight"):
        cdask.evaluate(dy, dp, sample_weight=w[:-1], scheduler="synchronous")
    with pytest.raises(InputTypeError, match="sample_weight"):
        cdask.gce(dy, dp, sample_weight=np.array(["x"] * 120), scheduler="synchronous")
    # zero-weight rows are dropped but still validated, as by calibkit.gce
    p2 = p.copy()
    p2[5, 0] = np.nan
    w2 = w.copy()
    w2[5] = 0.0
    with pytest.raises(calibkit.InvalidProbabilitiesError):
        calibkit.gce(y, p2, sample_weight=w2)
    with pytest.raises(calibkit.InvalidProbabilitiesError):
        cdask.gce(da.from_array(y, chunks=50), da.from_array(p2, chunks=(50, 3)),
                  sample_weight=w2, scheduler="synchronous")


@pytest.mark.parametrize("f32", [False, True])
def test_top_label_pairs_with_weights_equal_gce(f32):
    y, p, w = _data(31, 300, 5, dtype=np.float32 if f32 else np.float64)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    correct = pred == y
    specs = [s for s in SPACE if s.max_prob]
    acc = Accumulator(specs, num_bins=(3, 8))
    for a, b in _split(300, [40, 41, 200]):
        acc.update(confidence=conf[a:b], correct=correct[a:b], predicted=pred[a:b],
                   num_classes=5, sample_weight=w[a:b])
    ref = calibkit.evaluate(y, p, specs, num_bins=(3, 8), sample_weight=w)
    np.testing.assert_allclose(acc.compute().values, ref.values, rtol=0, atol=1e-12)
    for s in specs:
        kw = s.kwargs()
        assert acc.compute().get(s.name, 8) == pytest.approx(
            calibkit.gce(confidence=conf, correct=correct, predicted=pred, num_classes=5,
                         num_bins=8, sample_weight=w, **kw), abs=1e-12)


def test_dask_top_label_pairs_with_weights():
    da = requires("dask.array")
    import calibkit.scale.dask as cdask

    y, p, w = _data(41, 260, 4)
    conf, pred = p.max(axis=1), p.argmax(axis=1)
    correct = (pred == y).astype(np.int8)
    specs = [s for s in SPACE if s.max_prob]
    ch = 37
    ev = cdask.evaluate(confidence=da.from_array(conf, chunks=ch),
                        correct=da.from_array(correct, chunks=ch),
                        predicted=da.from_array(pred, chunks=50), num_classes=4, space=specs,
                        num_bins=(4, 10), sample_weight=da.from_array(w, chunks=61),
                        scheduler="synchronous")
    ref = calibkit.evaluate(y, p, specs, num_bins=(4, 10), sample_weight=w)
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    got = cdask.gce(confidence=da.from_array(conf, chunks=ch), correct=da.from_array(correct, chunks=ch),
                    binning="adaptive", num_bins=7, sample_weight=w, scheduler="synchronous")
    assert got == pytest.approx(calibkit.gce(y, p, binning="adaptive", num_bins=7, sample_weight=w),
                                abs=1e-12)
