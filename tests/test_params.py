"""Argument handling is one rule everywhere (calibkit._params), and the measured cases of issue 10.

Each entry point gets the same bad keyword and must raise the same calibkit error with the same
text; flags are True/False only; bin counts any integer type (not bool) within the limits;
metric ids any integer, name, spec or mapping; tolerances are the kernel's. Then the smaller
measured cases: big-endian float32, labels beyond int64, monotone edges, global row numbers in
calibkit.dask errors, pickling with every protocol, reduce_bins on bad tables, scaling of huge
logits, calibkit errors from softmax and analysis.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit import _native, _params
from calibkit.errors import (
    CalibkitError,
    InputTypeError,
    InvalidFlagError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    NumericalError,
    ParameterTypeError,
    ShapeMismatchError,
)
from calibkit.scale.streaming import Accumulator
from calibkit.space import MetricSpec


def _dask():
    """``dask.array`` and ``calibkit.scale.dask``: the dask entry points are checked with the
    others (a test peer: :func:`conftest.requires`, a failure under CI, a skip elsewhere)."""
    return requires("dask.array"), requires("calibkit.scale.dask")


SYNC = {"scheduler": "synchronous"}


def data(n=300, k=4, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n).astype(dtype)
    return rng.integers(0, k, size=n), probs


def message(call):
    with pytest.raises(CalibkitError) as info:
        call()
    return type(info.value), str(info.value)


# ---------------------------------------------------------------------------------- flags


BAD_FLAGS = ["False", "True", 0, 1, None, 1.0, np.array(True), [True]]


def flag_calls(labels, probs, flag, value):
    """Every public entry point that takes max_prob / class_conditional, called with one."""
    from calibkit import recalibration as R
    from calibkit.compat import uncertainty_metrics as cum

    calls = [
        lambda: calibkit.gce(labels, probs, **{flag: value}),
        lambda: calibkit.calibration_bins(labels, probs, **{flag: value}),
        lambda: MetricSpec(**{flag: value}),
        lambda: calibkit.evaluate(labels, probs, space=[{flag: value}], num_bins=5),
        lambda: Accumulator(**{flag: value}),
        lambda: Accumulator({flag: value}),
        lambda: calibkit.metric_space(**{flag: value if not isinstance(value, list) else [value]}),
        lambda: R.MetricTemperatureScaling(input="probs", **{flag: value}).fit(probs, labels),
    ]
    if flag == "class_conditional":
        calls.append(lambda: calibkit.reduce_bins([[1, 1]], [[0.5, 0.5]], [[1, 0]],
                                                  class_conditional=value))
    da, cdask = _dask()
    calls.append(lambda: cdask.gce(da.from_array(labels, chunks=100),
                                   da.from_array(probs, chunks=(100, 4)),
                                   **{flag: value}, **SYNC))
    calls.append(lambda: cum.gce(labels, probs, "even", True, False, "l1", legacy_l2=value))
    return calls


@pytest.mark.parametrize("flag", ["max_prob", "class_conditional"])
@pytest.mark.parametrize("value", BAD_FLAGS, ids=repr)
def test_flags_are_bools_everywhere(flag, value):
    labels, probs = data()
    for call in flag_calls(labels, probs, flag, value):
        with pytest.raises(InvalidFlagError):
            call()


def test_flag_error_is_both_value_and_type_error():
    labels, probs = data()
    with pytest.raises(InvalidParameterError, match="max_prob must be True or False"):
        calibkit.gce(labels, probs, max_prob="False")
    with pytest.raises(ValueError):
        calibkit.gce(labels, probs, max_prob="False")
    with pytest.raises(TypeError):
        calibkit.gce(labels, probs, max_prob="False")
    assert issubclass(InvalidFlagError, ParameterTypeError)


def test_numpy_bools_are_flags():
    labels, probs = data()
    for flag in ("max_prob", "class_conditional"):
        for v in (True, False):
            assert calibkit.gce(labels, probs, **{flag: np.bool_(v)}) == \
                calibkit.gce(labels, probs, **{flag: v})


# ------------------------------------------------------------------------------ bin counts


INT_TYPES = [int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint64]


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.__name__)
def test_bin_counts_of_any_integer_type(t):
    labels, probs = data()
    want = calibkit.ece(labels, probs, num_bins=10)
    b = t(10)
    assert calibkit.ece(labels, probs, num_bins=b) == want
    assert calibkit.calibration_bins(labels, probs, num_bins=b).counts.shape == (1, 11)
    assert calibkit.evaluate(labels, probs, space="ECE", num_bins=b).get("ECE") == want
    assert calibkit.evaluate(labels, probs, space="ECE", num_bins=[b, t(20)]).num_bins == (10, 20)
    assert Accumulator("ECE", num_bins=b).update(labels, probs).compute() == pytest.approx(
        want, abs=1e-12)
    da, cdask = _dask()
    dl, dp = da.from_array(labels, chunks=100), da.from_array(probs, chunks=(100, 4))
    assert cdask.gce(dl, dp, num_bins=b, **SYNC) == pytest.approx(want, abs=1e-12)
    assert cdask.evaluate(dl, dp, space="ECE", num_bins=b, **SYNC).get("ECE") == \
        pytest.approx(want, abs=1e-12)


BAD_BINS = [(True, ParameterTypeError), (np.bool_(True), ParameterTypeError),
            (10.0, ParameterTypeError), ("10", ParameterTypeError), (0, InvalidParameterError),
            (-3, InvalidParameterError), (_native.MAX_BINS + 1, InvalidParameterError),
            (10**30, InvalidParameterError)]


@pytest.mark.parametrize("bad,exc", BAD_BINS, ids=lambda v: repr(v))
def test_bad_bin_counts_give_one_message_everywhere(bad, exc):
    labels, probs = data()
    calls = [
        lambda: calibkit.gce(labels, probs, num_bins=bad),
        lambda: calibkit.ece(labels, probs, num_bins=bad),
        lambda: calibkit.calibration_bins(labels, probs, num_bins=bad),
        lambda: calibkit.evaluate(labels, probs, space="ECE", num_bins=bad),
        lambda: calibkit.evaluate(labels, probs, space="ECE", num_bins=[5, bad]),
        lambda: Accumulator("ECE", num_bins=bad),
        lambda: Accumulator("ECE", num_bins=[5, bad]),
    ]
    da, cdask = _dask()
    dl, dp = da.from_array(labels, chunks=100), da.from_array(probs, chunks=(100, 4))
    calls += [lambda: cdask.gce(dl, dp, num_bins=bad, **SYNC),
              lambda: cdask.evaluate(dl, dp, space="ECE", num_bins=bad, **SYNC)]
    if not isinstance(bad, str):  # a string is a sequence for the multi-bin entry points
        seen = {message(c) for c in calls}
        assert len(seen) == 1, seen
        (cls, text), = seen
        assert issubclass(cls, exc) and "num_bins" in text
    else:
        for c in calls:
            with pytest.raises(exc):
                c()


def test_table_limit_on_every_path():
    # 2 classes x (10**6 + 1) bins fits; 100 classes x 10**6 bins does not (2^25 cells)
    labels = np.zeros(20, dtype=np.int64)
    probs = np.full((20, 100), 0.01)
    b = 10**6
    calls = [
        lambda: calibkit.sce(labels, probs, num_bins=b),
        lambda: calibkit.evaluate(labels, probs, space=["SCE"], num_bins=b),
        lambda: Accumulator("ACE", num_bins=b).update(labels, probs),
        lambda: Accumulator("SCE", num_bins=b).update(labels, probs),
    ]
    da, cdask = _dask()
    calls.append(lambda: cdask.gce(da.from_array(labels, chunks=10),
                                   da.from_array(probs, chunks=(10, 100)),
                                   binning="adaptive", max_prob=False,
                                   class_conditional=True, num_bins=b, **SYNC))
    for call in calls:
        with pytest.raises(InvalidParameterError, match="cells"):
            call()
    acc = Accumulator("ACE", num_bins=b)
    with pytest.raises(InvalidParameterError):
        acc.update(labels, probs)
    assert acc.num_classes is None and acc.n_samples == 0  # unchanged


# ------------------------------------------------------------------------------- metric ids


METRIC_IDS = ["ECE", "ece", "gce(even,top,pooled,0.0,l1)", 4, np.int64(4), np.uint8(4),
              MetricSpec(), {"binning": "even"}, ("even", True, False, 0.0, "l1")]


@pytest.mark.parametrize("metric", METRIC_IDS, ids=repr)
def test_metric_ids_accepted_alike(metric):
    labels, probs = data()
    want = calibkit.ece(labels, probs, num_bins=10)
    assert calibkit.evaluate(labels, probs, space=metric, num_bins=10).get("ECE") == want
    assert Accumulator(metric, num_bins=10).update(labels, probs).compute() == \
        pytest.approx(want, abs=1e-12)
    da, cdask = _dask()
    got = cdask.evaluate(da.from_array(labels, chunks=100),
                         da.from_array(probs, chunks=(100, 4)), space=metric, num_bins=10,
                         **SYNC)
    assert got.get("ECE") == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("bad", [True, 3.5, 32, object()], ids=repr)
def test_bad_metric_ids_refused_alike(bad):
    labels, probs = data()
    calls = [lambda: calibkit.evaluate(labels, probs, space=bad),
             lambda: Accumulator(bad)]
    da, cdask = _dask()
    calls.append(lambda: cdask.evaluate(da.from_array(labels, chunks=100),
                                        da.from_array(probs, chunks=(100, 4)), space=bad,
                                        **SYNC))
    assert len({message(c) for c in calls}) == 1


# ------------------------------------------------------------------------------- tolerances


def test_tolerances_are_read_from_the_kernel():
    from calibkit.recalibration import _base

    assert _params.RANGE_TOL == _native.RANGE_TOL and _params.ROW_SUM_TOL == _native.ROW_SUM_TOL
    assert _params.MAX_BINS == _native.MAX_BINS
    assert _params.MAX_TABLE_CELLS == _native.MAX_TABLE_CELLS
    assert _base.RANGE_TOL is _params.RANGE_TOL and _base.ROW_SUM_TOL is _params.ROW_SUM_TOL
    src = inspect.getsource(_base)
    assert "1e-4" not in src and "1e-3" not in src  # no literal copy of the tolerances


def test_check_gce_params_stays_importable_from_validate():
    from calibkit._validate import check_gce_params

    assert check_gce_params is _params.check_gce_params
    assert check_gce_params("even", "l1", np.float32(0.25), np.int64(7)) == ("even", "l1", 0.25, 7)


# ----------------------------------------------------------------- measured: big-endian float32


def test_big_endian_float32_is_float32():
    labels, p32 = data(n=2000, k=5, dtype=np.float32)
    be = p32.astype(">f4")
    for fn in (calibkit.ece, calibkit.sce, calibkit.ace, calibkit.rmsce, calibkit.tace):
        assert fn(labels, be) == fn(labels, p32)  # bitwise
    binary = p32[:, 1] / p32[:, :2].sum(axis=1)
    assert calibkit.ece(labels % 2, binary.astype(">f4")) == calibkit.ece(labels % 2, binary)
    assert calibkit.evaluate(labels, be, num_bins=(5, 15)) == \
        calibkit.evaluate(labels, p32, num_bins=(5, 15))
    be64 = p32.astype(np.float64).astype(">f8")
    assert calibkit.ece(labels, be64) == calibkit.ece(labels, p32.astype(np.float64))


def test_accumulator_takes_native_float32_after_big_endian():
    labels, p32 = data(n=400, dtype=np.float32)
    acc = Accumulator(["ECE", "ACE"], num_bins=10)
    acc.update(labels[:200], p32[:200].astype(">f4"))
    acc.update(labels[200:], p32[200:])
    assert acc.dtype == np.float32
    want = calibkit.evaluate(labels, p32, space=["ECE", "ACE"], num_bins=10)
    np.testing.assert_allclose(acc.compute().values, want.values, rtol=0, atol=1e-12)
    with pytest.raises(InputTypeError, match="float32"):
        acc.update(labels, p32.astype(np.float64))


def test_dask_big_endian_float32():
    da, cdask = _dask()
    labels, p32 = data(n=400, dtype=np.float32)
    got = cdask.gce(da.from_array(labels, chunks=100), da.from_array(p32.astype(">f4"),
                                                                      chunks=(100, 4)), **SYNC)
    assert got == pytest.approx(calibkit.ece(labels, p32), abs=1e-12)


# ----------------------------------------------------------------- measured: smaller cases


@pytest.mark.parametrize("labels,shown", [
    (np.array([0, 2**63 + 5], dtype=np.uint64), "9223372036854775813"),
    (np.array([0.0, 1e20]), "1e+20"),
    ([0, 2**70], str(2**70)),
    (np.array([0, -(2.0**64)]), "-1.8446744073709552e+19"),
])
def test_labels_beyond_int64_named_by_their_value(labels, shown):
    with pytest.raises(InvalidLabelsError) as info:
        calibkit.ece(labels, [[0.5, 0.5], [0.4, 0.6]])
    assert f"labels[1] is {shown}" in str(info.value)
    assert "-9223372036854775808" not in str(info.value)


def test_edges_monotonic_with_scores_above_one_within_tolerance():
    tol = _native.RANGE_TOL
    probs = np.array([[1 + tol / 2, 0.0], [0.9, 0.1], [0.99, 0.01], [1 + tol / 4, 0.0],
                      [0.2, 0.8], [0.6, 0.4]])
    labels = np.array([0, 0, 1, 0, 1, 0])
    for binning in ("even", "adaptive"):
        for mp in (True, False):
            for cc in (True, False):
                for b in (1, 2, 3, 10):
                    t = calibkit.calibration_bins(labels, probs, binning=binning, max_prob=mp,
                                                  class_conditional=cc, num_bins=b)
                    e = t.edges
                    ok = np.isnan(e[:, 1:]) | np.isnan(e[:, :-1]) | (np.diff(e, axis=1) >= 0)
                    assert ok.all(), (binning, mp, cc, b, e)
                    # every score of a bin lies inside its edges
                    assert t.error() == pytest.approx(
                        calibkit.gce(labels, probs, binning=binning, max_prob=mp,
                                     class_conditional=cc, num_bins=b), abs=1e-12)


@pytest.mark.parametrize("bad,pattern", [
    ("nan", r"probs\[734, 1\] is NaN"),
    ("label", r"labels\[512\] is 7"),
    ("rowsum", r"row 901 of probs"),
    ("range", r"probs\[333, 0\] is 3"),
])
def test_dask_errors_name_global_rows(bad, pattern):
    da, cdask = _dask()
    labels, probs = data(n=1000, k=3)
    if bad == "nan":
        probs[734, 1] = np.nan
    elif bad == "label":
        labels[512] = 7
    elif bad == "rowsum":
        probs[901] = [0.5, 0.5, 0.5]
    else:
        probs[333] = [3.0, -1.0, -1.0]
    dl, dp = da.from_array(labels, chunks=100), da.from_array(probs, chunks=(100, 3))
    for call in (lambda: cdask.gce(dl, dp, **SYNC),
                 lambda: cdask.gce(dl, dp, binning="adaptive", **SYNC),
                 lambda: cdask.evaluate(dl, dp, space=["ACE"], num_bins=5, **SYNC)):
        with pytest.raises(CalibkitError, match=pattern):
            call()
    # the in-memory function names the same row
    with pytest.raises(CalibkitError, match=pattern):
        calibkit.ece(labels, probs)


@pytest.mark.parametrize("adaptive", ["exact", "sketch"])
def test_accumulator_pickles_with_every_protocol(adaptive):
    if adaptive == "sketch":
        requires("datasketches")
    labels, probs = data()
    acc = Accumulator(["ECE", "ACE", "TACE"], num_bins=(5, 10), adaptive=adaptive)
    fresh = Accumulator("ECE")
    acc.update(labels, probs)
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(acc, protocol=proto))
        assert back == acc
        assert back.compute() == acc.compute()
        assert pickle.loads(pickle.dumps(fresh, protocol=proto)) == fresh
        assert pickle.loads(pickle.dumps(acc.space, protocol=proto)) == acc.space


@pytest.mark.parametrize("counts,ss,so,match", [
    ([[-1, 2]], [[0.0, 1.0]], [[0.0, 1.0]], r"counts\[0, 0\] is -1.0"),
    ([[np.nan, 2]], [[0.0, 1.0]], [[0.0, 1.0]], r"counts\[0, 0\] is nan"),
    ([[1, 2]], [[0.5, np.inf]], [[0.0, 1.0]], r"sum_score\[0, 1\] is inf"),
    ([[1, 2]], [[0.5, 1.0]], [[-0.5, 1.0]], r"sum_outcome\[0, 0\]"),
    ([[1, 2]], [[0.5, 1.0]], [[3.0, 1.0]], r"sum_outcome\[0, 0\] is 3.0 but counts"),
    ([[1, 2]], [[0.5, 2.5]], [[0.0, 1.0]], r"sum_score\[0, 1\] is 2.5 but counts"),
    ([["a", 2]], [[0.5, 1.0]], [[0.0, 1.0]], "counts must hold real numbers"),
])
def test_reduce_bins_refuses_impossible_tables(counts, ss, so, match):
    with pytest.raises(CalibkitError, match=match):
        calibkit.reduce_bins(counts, ss, so)


def test_reduce_bins_still_reduces_real_tables():
    labels, probs = data()
    for binning in ("even", "adaptive"):
        t = calibkit.calibration_bins(labels, probs, binning=binning, max_prob=False,
                                      class_conditional=True, num_bins=7)
        for norm in ("l1", "l2", "max"):
            assert calibkit.reduce_bins(t.counts, t.sum_score, t.sum_outcome, norm=norm,
                                        class_conditional=True) == pytest.approx(
                calibkit.gce(labels, probs, binning=binning, max_prob=False,
                             class_conditional=True, norm=norm, num_bins=7), abs=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["VectorScaling", "MatrixScaling", "PlattScaling"])
def test_scaling_fits_logits_times_1e300(name):
    from calibkit import recalibration as R

    rng = np.random.default_rng(3)
    k = 2 if name == "PlattScaling" else 4
    y = rng.integers(0, k, 400)
    z = 4.0 * (np.eye(k)[y] + rng.normal(size=(400, k)))
    cls = getattr(R, name)
    small = cls(input="logits").fit(z, y)
    huge = cls(input="logits").fit(z * 1e300, y)
    p_small, p_huge = small.predict_proba(z), huge.predict_proba(z * 1e300)
    assert np.all(np.isfinite(p_huge))
    np.testing.assert_allclose(p_huge, p_small, atol=1e-4)


def test_numerical_error_is_a_calibkit_floating_point_error():
    assert issubclass(NumericalError, CalibkitError)
    assert issubclass(NumericalError, FloatingPointError)


@pytest.mark.parametrize("logits,exc", [
    ("abc", InputTypeError), ([[np.nan, 1.0]], CalibkitError), ([[1 + 1j, 2]], InputTypeError),
    (np.zeros((3, 0)), ShapeMismatchError), ([[1, 2], [3]], InputTypeError), (3.0, ShapeMismatchError),
])
def test_softmax_raises_calibkit_errors(logits, exc):
    for fn in (calibkit.softmax, calibkit.log_softmax):
        with pytest.raises(exc):
            fn(logits)
    with pytest.raises(InvalidParameterError, match="axis"):
        calibkit.softmax([[1.0, 2.0]], axis=2)
    with pytest.raises(InvalidParameterError, match="axis"):
        calibkit.softmax([[1.0, 2.0]], axis=True)


def test_softmax_keeps_float32_of_either_byte_order():
    z = np.array([[1.0, 2.0, 3.0]], dtype=">f4")
    assert calibkit.softmax(z).dtype == np.float32
    np.testing.assert_array_equal(calibkit.softmax(z), calibkit.softmax(z.astype(np.float32)))


def test_analysis_raises_calibkit_errors():
    from calibkit import analysis
    from calibkit.analysis.temperature import temperature_curves

    labels, probs = data()
    logits = np.log(probs)
    calls = [
        lambda: analysis.spearman_rho([1, 2, 3], [1, 2]),
        lambda: analysis.spearman_rho(["a", "b"], [1, 2]),
        lambda: analysis.spearman_rho([1, 2, 3], [1, 2, 3], formula="other"),
        lambda: analysis.kendall_tau([1.0], [2.0]),
        lambda: analysis.rank_order([[1.0, 2.0]]),
        lambda: analysis.noise_levels(0),
        lambda: analysis.noise_levels(True),
        lambda: analysis.noise_levels(3, max_level=2.0),
        lambda: temperature_curves(labels, logits, [1.0, -1.0]),
        lambda: temperature_curves(labels, logits, ["a"]),
        lambda: temperature_curves(labels, logits[:, 0], [1.0]),
        lambda: analysis.StudyConfig(num_bins=(10,)),
        lambda: analysis.StudyConfig(report_bins=0),
        lambda: analysis.Table("t", "title", ["r0", "r1"], ["a", "b"], [[1, 2]]),
    ]
    for call in calls:
        with pytest.raises(CalibkitError):
            call()


def test_prediction_file_error_is_a_calibkit_error(tmp_path):
    from calibkit.analysis import PredictionFileError, load_predictions

    assert issubclass(PredictionFileError, CalibkitError)
    assert issubclass(PredictionFileError, ValueError)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(CalibkitError):
        load_predictions(bad)


def test_invalid_probabilities_still_specific():
    # the value checks of the kernel are untouched by the parameter module
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.ece([0, 1], [[0.5, 0.6], [0.2, 0.8]])


# ------------------------------------------------------------------- the rules themselves


def test_param_rules_directly():
    P = _params
    assert P.as_int(np.uint16(7), "n", 1, 10) == 7
    for bad in (True, 7.0, "7", None):
        with pytest.raises(ParameterTypeError, match="n must be an integer"):
            P.as_int(bad, "n")
    with pytest.raises(InvalidParameterError, match=r"\[1, 10\]"):
        P.as_int(11, "n", 1, 10)
    assert P.as_real(np.float32(0.5), "x", low=0.0, high=1.0) == 0.5
    with pytest.raises(InvalidParameterError, match="> 0"):
        P.as_real(0, "x", low=0.0, low_open=True)
    with pytest.raises(InvalidParameterError, match="finite"):
        P.as_real(float("nan"), "x")
    with pytest.raises(ParameterTypeError):
        P.as_real(False, "x")
    with pytest.raises(InvalidParameterError, match=r"\('a', 'b'\) \(hint\), got 'c'"):
        P.as_choice("c", "mode", ("a", "b"), " (hint)")
    for bad in (1.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(InvalidParameterError, match="threshold"):
            P.as_threshold(bad)
    assert P.as_threshold(np.float16(0.25)) == 0.25
    assert P.as_bin_counts(np.array([10, 20])) == ((10, 20), False)
    assert P.as_bin_counts(np.int8(3)) == ((3,), True)
    for bad in ([], (5, 5), {"a": 1}, b"10", np.array(10)):
        with pytest.raises(InvalidParameterError, match="num_bins"):
            P.as_bin_counts(bad)
    P.check_table(1, P.MAX_BINS)
    with pytest.raises(InvalidParameterError, match="cells"):
        P.check_table(P.MAX_TABLE_CELLS // 10, 10)


@pytest.mark.parametrize("call,shown", [
    (lambda: _params.as_num_bins(np.float64(2.5)), "got 2.5 of type float64"),
    (lambda: _params.as_flag(np.int64(1), "max_prob"), "got 1 of type int64"),
    (lambda: _params.as_threshold(np.float64(1.5)), "got 1.5"),
    (lambda: _params.as_num_bins(np.int64(-3)), "got -3"),
])
def test_messages_show_numpy_scalars_plainly(call, shown):
    """The value a message names reads as the number, not NumPy 2's repr (np.float64(2.5))."""
    with pytest.raises(CalibkitError) as info:
        call()
    assert shown in str(info.value) and "np." not in str(info.value)
