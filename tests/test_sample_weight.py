"""sample_weight: integer weights equal repeated rows, for all 32 metrics and every entry point."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit.errors import CalibkitError, InputTypeError, InvalidParameterError, ShapeMismatchError
from calibkit.space import MetricSpec


def _data(seed=0, n=250, k=4, ties=True):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.6, size=n)
    if ties:  # repeated scores exercise the adaptive edges' tie rule
        p[: n // 5] = np.round(p[: n // 5] * 5) / 5
        p[: n // 5] /= p[: n // 5].sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    w = rng.integers(0, 4, n)
    return y, p, w


@pytest.mark.parametrize("index", range(32))
def test_integer_weights_equal_repeated_rows(index):
    y, p, w = _data(index)
    rep = np.repeat(np.arange(len(y)), w)
    kw = MetricSpec.from_index(index).kwargs()
    for b in (1, 2, 5, 13):
        got = calibkit.gce(y, p, num_bins=b, sample_weight=w, **kw)
        assert got == pytest.approx(calibkit.gce(y[rep], p[rep], num_bins=b, **kw), abs=1e-12)
        ones = calibkit.gce(y, p, num_bins=b, sample_weight=np.ones(len(y)), **kw)
        assert ones == pytest.approx(calibkit.gce(y, p, num_bins=b, **kw), abs=1e-12)


def test_float32_and_binary_inputs():
    y, p, w = _data(1, k=2)
    rep = np.repeat(np.arange(len(y)), w)
    for probs in (p.astype(np.float32), p[:, 1]):
        for fn in (calibkit.ece, calibkit.rmsce, calibkit.ace):
            assert fn(y, probs, sample_weight=w) == pytest.approx(fn(y[rep], probs[rep]), abs=1e-12)


def test_zero_weight_drops_the_row():
    y, p, w = _data(2)
    keep = w > 0
    for fn in (calibkit.ece, calibkit.cce, calibkit.sce, calibkit.ace, calibkit.tace,
               calibkit.rmsce, calibkit.mce):
        assert fn(y, p, sample_weight=(w > 0).astype(float)) == pytest.approx(
            fn(y[keep], p[keep]), abs=1e-12)


def test_calibration_bins_and_evaluate_with_weights():
    y, p, w = _data(3)
    rep = np.repeat(np.arange(len(y)), w)
    t = calibkit.calibration_bins(y, p, binning="adaptive", num_bins=6, sample_weight=w)
    r = calibkit.calibration_bins(y[rep], p[rep], binning="adaptive", num_bins=6)
    np.testing.assert_allclose(t.counts, r.counts)
    np.testing.assert_allclose(t.sum_score, r.sum_score, atol=1e-12)
    np.testing.assert_allclose(t.sum_outcome, r.sum_outcome)
    np.testing.assert_allclose(t.edges, r.edges)
    ev = calibkit.evaluate(y, p, num_bins=(3, 7), sample_weight=w)
    ref = calibkit.evaluate(y[rep], p[rep], num_bins=(3, 7))
    np.testing.assert_allclose(ev.values, ref.values, atol=1e-12)


def test_fractional_weights_scale_invariant_for_even_bins():
    """Even bins: only weight ratios matter. (Adaptive edges round the weighted positions
    j * W / B, so they may move with the weights' scale: the price of integer weights being
    exactly repeated rows; see docs/weighted-bins.md.)"""
    y, p, w = _data(4)
    f = w * 0.37 + 0.01
    for idx in (4, 8, 9, 13):
        kw = MetricSpec.from_index(idx).kwargs()
        assert calibkit.gce(y, p, sample_weight=f, **kw) == pytest.approx(
            calibkit.gce(y, p, sample_weight=f * 8.0, **kw), abs=1e-12)


@pytest.mark.parametrize("index", range(32))
def test_small_weights_are_lifted_for_adaptive_edges(index):
    """Adaptive edges round their weighted ranks to whole units of weight; a group whose
    largest weight is below 1/2 is lifted by a power of two first (docs/weighted-bins.md).
    So weights normalised to sum to 1 give the bins of weights of about 1 (they once put
    almost every score in one bin), and any power-of-two scale below 1 gives the same bits."""
    y, p, w = _data(index + 40, n=400)
    kw = MetricSpec.from_index(index).kwargs()
    f = 0.75 * (w + 0.25) / (w.max() + 0.25)  # fractional, largest 0.75: not lifted
    want = calibkit.gce(y, p, sample_weight=f, **kw)
    for k in (1, 7, 40, 300):  # (below about 1e-301 the lift stops: units::weight_scale)
        assert calibkit.gce(y, p, sample_weight=f * 2.0**-k, **kw) == want
    if kw["binning"] == "adaptive":
        ones = calibkit.gce(y, p, **kw)
        normalised = calibkit.gce(y, p, sample_weight=np.full(len(y), 1 / len(y)), **kw)
        assert normalised == pytest.approx(ones, rel=0.05, abs=1e-3)
        b = calibkit.calibration_bins(y, p, num_bins=10, sample_weight=np.full(len(y), 1 / len(y)),
                                      **{k: v for k, v in kw.items() if k != "norm"})
        assert (np.diff(b.edges[:, 1:-1], axis=1) >= 0).all()
        assert (b.counts > 0).sum() > b.counts.shape[0] * 5  # not one bin a group


@pytest.mark.parametrize("bad,exc", [
    (np.ones(3), ShapeMismatchError),
    (np.ones((250, 1)), ShapeMismatchError),
    (np.full(250, np.nan), InvalidParameterError),
    (np.r_[np.ones(249), np.inf], InvalidParameterError),
    (np.r_[np.ones(249), -1.0], InvalidParameterError),
    (np.zeros(250), InvalidParameterError),
    ("heavy", InputTypeError),
    (np.array(["a"] * 250), InputTypeError),
])
def test_bad_weights_are_clear_errors(bad, exc):
    y, p, _ = _data(5)
    for call in (lambda: calibkit.ece(y, p, sample_weight=bad),
                 lambda: calibkit.calibration_bins(y, p, sample_weight=bad),
                 lambda: calibkit.evaluate(y, p, sample_weight=bad)):
        with pytest.raises(exc) as info:
            call()
        assert isinstance(info.value, CalibkitError)
        assert "sample_weight" in str(info.value)


def _weighted_entry_points():
    """Every public function of calibkit that takes ``sample_weight``."""
    import inspect

    out = []
    for name in calibkit.__all__:
        f = getattr(calibkit, name)
        if callable(f) and not inspect.isclass(f) and "sample_weight" in inspect.signature(f).parameters:
            out.append(name)
    return out


def test_every_weighted_entry_point_is_found():
    assert {"gce", "ece", "smece", "ksce", "decompose", "binning_free", "evaluate",
            "calibration_bins", "confidence_interval", "signed_ece", "ece_sweep"} <= set(_weighted_entry_points())


@pytest.mark.parametrize("name", _weighted_entry_points())
@pytest.mark.parametrize("bad,says", [
    (np.full(250, 1e308), "the sum of sample_weight exceeds the largest float64"),
    (np.r_[np.ones(249), np.nan], "sample_weight[249] is nan: weights must be finite and >= 0"),
    (np.r_[-2.0, np.ones(249)], "sample_weight[0] is -2.0: weights must be finite and >= 0"),
    (np.zeros(250), "sample_weight is zero everywhere"),
])
def test_every_weighted_entry_point_applies_the_weight_rule(name, bad, says):
    """One rule, one message, everywhere: a weight sum that overflows float64 was a silent NaN
    from smece (its grid mass overflowed) and differently worded elsewhere."""
    y, p, _ = _data(5)
    kw = {"n_resamples": 20, "random_state": 0} if name == "confidence_interval" else {}
    with pytest.raises(InvalidParameterError) as info:
        getattr(calibkit, name)(y, p, sample_weight=bad, **kw)
    assert str(info.value).startswith(says)


def _numbers(obj, depth=0):
    """Every float in a result (floats, arrays, dataclasses and named tuples of them)."""
    if isinstance(obj, (float, np.floating)):
        return [float(obj)]
    if isinstance(obj, np.ndarray) and obj.dtype.kind == "f":
        return obj.ravel().tolist()
    if depth < 3 and isinstance(obj, (tuple, list)):
        return [x for o in obj for x in _numbers(o, depth + 1)]
    if depth < 3 and hasattr(obj, "__dataclass_fields__"):
        return [x for f in obj.__dataclass_fields__ for x in _numbers(getattr(obj, f), depth + 1)]
    return []


@pytest.mark.parametrize("name", _weighted_entry_points())
def test_huge_weights_give_a_finite_result_or_a_clear_error(name):
    """Weights whose sum is finite but near the top of float64: each row's weight counts once
    per score a metric keeps (K per row without max_prob) and smece's grids carry their sum.
    Every entry point returns finite numbers or says to scale the weights down; never NaN."""
    y, p, _ = _data(5)
    w = np.zeros(len(y))
    w[0], w[1:5] = 1e308, 1.0
    kw = {"n_resamples": 20, "random_state": 0} if name == "confidence_interval" else {}
    try:
        res = getattr(calibkit, name)(y, p, sample_weight=w, **kw)
    except (InvalidParameterError, calibkit.NumericalError) as e:
        assert "scale the weights down" in str(e)
        return
    values = [v for v in _numbers(res) if not (name == "calibration_bins" and v == 0)]
    assert values and np.isfinite(values).all(), res


def test_accumulator_refuses_a_running_weight_total_that_overflows():
    """Each batch's weights pass, but with the earlier batches' (or a merged accumulator's)
    they would sum past float64: refused before anything changes, not NaN tables later."""
    from calibkit.scale.streaming import Accumulator

    y, p, _ = _data(9)
    w = np.zeros(len(y))
    w[0] = 1e308
    a = Accumulator(["ECE", "RMSCE"], num_bins=5)
    a.update(y, p, sample_weight=w)
    before = a.copy()
    says = "the sum of sample_weight with the weights of earlier batches exceeds the largest float64"
    with pytest.raises(InvalidParameterError, match=says):
        a.update(y, p, sample_weight=w)
    b = Accumulator(["ECE", "RMSCE"], num_bins=5)
    b.update(y, p, sample_weight=w)
    with pytest.raises(InvalidParameterError, match=says):
        a.merge(b)
    assert a == before
    assert np.isfinite(a.compute().values).all()


def test_weighted_path_still_validates_probabilities():
    y, p, w = _data(6)
    p = p.copy()
    p[3, 0] = 1.5
    with pytest.raises(calibkit.InvalidProbabilitiesError):
        calibkit.ece(y, p, sample_weight=w)


def test_accumulator_integer_weights_equal_weighted_gce():
    from calibkit.scale.streaming import Accumulator

    y, p, w = _data(7)
    names = ["ECE", "ACE", "SCE", "RMSCE", "TACE"]
    a = Accumulator(names, num_bins=(4, 9))
    a.update(y[:100], p[:100], sample_weight=w[:100])
    a.update(y[100:], p[100:], sample_weight=w[100:])
    a.update(y[:7], p[:7], sample_weight=np.zeros(7))  # a batch of zero weights adds nothing
    ref = calibkit.evaluate(y, p, space=names, num_bins=(4, 9), sample_weight=w)
    np.testing.assert_allclose(a.compute().values, ref.values, atol=1e-12)
    assert a.n_samples == int(w.sum())
    before = a.copy()
    with pytest.raises(ShapeMismatchError):
        a.update(y[:5], p[:5], sample_weight=np.ones(4))
    with pytest.raises(InvalidParameterError, match="finite and >= 0"):
        a.update(y[:5], p[:5], sample_weight=[1, 1, -1, 1, 1])
    assert a == before  # refused batches change nothing
    requires("datasketches")
    sk = Accumulator(names, num_bins=(4, 9), adaptive="sketch")
    with pytest.raises(InvalidParameterError, match="adaptive='exact'"):
        sk.update(y[:5], p[:5], sample_weight=np.full(5, 0.5))
    sk.update(y, p, sample_weight=w)  # integer weights: repeated scores, exact below k
    np.testing.assert_allclose(sk.compute().values, ref.values, atol=1e-12)


def test_dask_integer_weights_equal_weighted_gce():
    da = requires("dask.array")
    import calibkit.scale.dask as cdask

    y, p, w = _data(8)
    names = ["ECE", "ACE", "SCE", "RMSCE"]
    ev = cdask.evaluate(da.from_array(y, chunks=70), da.from_array(p, chunks=(64, 4)),
                        space=names, num_bins=(5, 10), scheduler="synchronous",
                        sample_weight=da.from_array(w, chunks=50))
    ref = calibkit.evaluate(y, p, space=names, num_bins=(5, 10), sample_weight=w)
    np.testing.assert_allclose(ev.values, ref.values, atol=1e-12)
    assert cdask.gce(y, p, sample_weight=w, scheduler="synchronous") == pytest.approx(
        calibkit.gce(y, p, sample_weight=w), abs=1e-12)
    with pytest.raises(InvalidParameterError, match="finite and >= 0"):
        cdask.gce(y, p, sample_weight=w * -0.5 - 1, scheduler="synchronous")
    with pytest.raises(ShapeMismatchError):
        cdask.gce(y, p, sample_weight=w[:10], scheduler="synchronous")
