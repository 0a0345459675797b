"""Parity of ``calibkit.compat.uncertainty_metrics`` with ``uncertainty_metrics==0.0.81``.

The upstream module is imported directly (``uncertainty_metrics.numpy.general_calibration_error``
needs only NumPy). Checked: every l1 variant (2 binnings x max_prob x class_conditional x
threshold 0 / 0.01 = 16), the ``legacy_l2=True`` switch for all 16 l2 variants, ``rmsce``,
``datapoints_per_bin``, ``compute_all_metrics`` and the ``GeneralCalibrationError`` object, on
random data built to hit ties, exact 0/1 and bin edges, and on the real network outputs in
``../shared/data`` (all rows; upstream is fast enough at these sizes, about 1 s per file).

Where 0.0.81 disagrees with docs/spec.md (its l2 form, its rmsce default) the default compat result
is checked against calibkit instead, and the disagreement itself is asserted so that it stays
documented.
"""

from __future__ import annotations

import importlib
import inspect
import itertools

import numpy as np
import pytest
from conftest import SHARED_DATA, load_shared, requires

import calibkit
import calibkit.compat.uncertainty_metrics as cum
from calibkit import reference

upstream = requires("uncertainty_metrics.numpy.general_calibration_error")
# `import uncertainty_metrics.numpy.general_calibration_error` can resolve to the *function* of
# that name re-exported by the package's numpy/__init__; take the module itself.
upstream = importlib.import_module("uncertainty_metrics.numpy.general_calibration_error")

TOL = 1e-12
GROUPINGS = list(
    itertools.product(["even", "adaptive"], [True, False], [True, False], [0.0, 0.01])
)


def _ids(g):
    return "-".join(str(v) for v in g)


# ---------------------------------------------------------------------------------------------
# Random data
# ---------------------------------------------------------------------------------------------


def _random_cases():
    rng = np.random.default_rng(81)
    cases = {}

    def add(name, labels, probs):
        cases[name] = (np.asarray(labels), np.asarray(probs))

    for n, k in ((1, 3), (9, 4), (300, 10), (1000, 3)):
        p = rng.random((n, k)) ** 4
        add(f"random-{n}x{k}", rng.integers(0, k, n), p / p.sum(1, keepdims=True))
    x = rng.integers(0, 4, size=(400, 5)).astype(float)
    x[x.sum(1) == 0, 0] = 1.0
    add("ties-0-1", rng.integers(0, 5, 400), x / x.sum(1, keepdims=True))
    # top label exactly on even edges of B = 10 and 30, and exact 1.0 / 0.0
    e = np.concatenate([np.linspace(0, 1, 11), np.linspace(0, 1, 31), np.arange(31) / 30])
    add("edges-2col", rng.integers(0, 2, e.size), np.stack([1 - e, e], axis=1))
    add("edges-binary1d", rng.integers(0, 2, e.size), e)
    add("edges-binary1d-f32", rng.integers(0, 2, e.size), e.astype(np.float32))
    add("column-n1", rng.integers(0, 2, 50), rng.random((50, 1)))
    p = rng.random((200, 6)) ** 3
    add("f32-200x6", rng.integers(0, 6, 200), (p / p.sum(1, keepdims=True)).astype(np.float32))
    p = rng.random((5, 3))
    add("fewer-rows-than-bins", [0, 1, 2, 2, 1], p / p.sum(1, keepdims=True))
    return cases


RANDOM = _random_cases()


@pytest.mark.parametrize("grouping", GROUPINGS, ids=_ids)
@pytest.mark.parametrize("num_bins", [30, 10, 3, 1])
def test_l1_parity_random(grouping, num_bins):
    binning, max_prob, cc, threshold = grouping
    for name, (labels, probs) in RANDOM.items():
        want = upstream.gce(labels, probs, binning, max_prob, cc, "l1",
                            num_bins=num_bins, threshold=threshold)
        got = cum.gce(labels, probs, binning, max_prob, cc, "l1",
                      num_bins=num_bins, threshold=threshold)
        assert got == pytest.approx(want, abs=TOL), name


@pytest.mark.parametrize("grouping", GROUPINGS, ids=_ids)
@pytest.mark.parametrize("num_bins", [30, 7])
def test_legacy_l2_parity_random(grouping, num_bins):
    binning, max_prob, cc, threshold = grouping
    for name, (labels, probs) in RANDOM.items():
        want = upstream.gce(labels, probs, binning, max_prob, cc, "l2",
                            num_bins=num_bins, threshold=threshold)
        got = cum.gce(labels, probs, binning, max_prob, cc, "l2",
                      num_bins=num_bins, threshold=threshold, legacy_l2=True)
        assert got == pytest.approx(want, abs=TOL), name


@pytest.mark.parametrize("grouping", GROUPINGS, ids=_ids)
def test_default_l2_is_spec_not_0081(grouping):
    binning, max_prob, cc, threshold = grouping
    labels, probs = RANDOM["random-300x10"]
    kw = dict(num_bins=15, threshold=threshold)
    got = cum.gce(labels, probs, binning, max_prob, cc, "l2", **kw)
    spec = reference.gce(labels, probs, binning=binning, max_prob=max_prob,
                         class_conditional=cc, norm="l2", **kw)
    legacy = upstream.gce(labels, probs, binning, max_prob, cc, "l2", **kw)
    assert got == pytest.approx(spec, abs=TOL)
    # 0.0.81 squares the weight too, which makes its value smaller whenever more than one bin
    # is used: the documented difference.
    assert legacy < got - 1e-6


def test_named_functions_parity_default_bins():
    for name, (labels, probs) in RANDOM.items():
        assert cum.ece(labels, probs) == pytest.approx(upstream.ece(labels, probs), abs=TOL), name
        assert cum.sce(labels, probs) == pytest.approx(upstream.sce(labels, probs), abs=TOL), name
        assert cum.ace(labels, probs) == pytest.approx(upstream.ace(labels, probs), abs=TOL), name
        assert cum.tace(labels, probs) == pytest.approx(upstream.tace(labels, probs), abs=TOL)
        if probs.dtype == np.float64:  # float32 and threshold 0.2: see the test below
            assert cum.tace(labels, probs, num_bins=5, threshold=0.2) == pytest.approx(
                upstream.tace(labels, probs, num_bins=5, threshold=0.2), abs=TOL
            ), name


def test_float32_threshold_difference_is_as_documented():
    # Under NumPy 2, 0.0.81 compares float32 scores with float32(threshold). float32(0.2) is
    # 0.2000000030 > 0.2, so a float32 score equal to it is dropped upstream and kept by
    # calibkit (score > 0.2 in float64). float32(0.01) rounds down, so 0.01 is unaffected.
    assert float(np.float32(0.2)) > 0.2 and float(np.float32(0.01)) < 0.01
    s = np.float32(0.2)
    probs = np.array([[1 - s, s], [np.float32(0.9), np.float32(0.1)]], dtype=np.float32)
    labels = np.array([1, 0])
    kw = dict(max_prob=False, class_conditional=True, norm="l1", num_bins=5)
    want = reference.gce(labels, probs, binning="adaptive", threshold=0.2, **kw)
    got = cum.gce(labels, probs, "adaptive", False, True, "l1", num_bins=5, threshold=0.2)
    assert got == pytest.approx(want, abs=TOL)
    counts = calibkit.calibration_bins(labels, probs, binning="adaptive", max_prob=False,
                                       class_conditional=True, threshold=0.2, num_bins=5).counts
    assert counts[1].sum() == 1  # the float32 0.2 in column 1 is kept
    theirs = upstream.gce(labels, probs, "adaptive", False, True, "l1", num_bins=5,
                          threshold=0.2)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        assert theirs != pytest.approx(got, abs=1e-6)
    # with the threshold given as float32 by the caller, both sides agree
    assert cum.gce(labels, probs, "adaptive", False, True, "l1", num_bins=5,
                   threshold=float(np.float32(0.2))) == pytest.approx(theirs, abs=TOL)


def test_rmsce_legacy_and_default():
    for name, (labels, probs) in RANDOM.items():
        # 0.0.81: datapoints_per_bin=100 overrides num_bins, weight squared
        assert cum.rmsce(labels, probs, legacy_l2=True) == pytest.approx(
            upstream.rmsce(labels, probs), abs=TOL
        ), name
        assert cum.rmsce(labels, probs, num_bins=5, datapoints_per_bin=20, legacy_l2=True) == (
            pytest.approx(upstream.rmsce(labels, probs, num_bins=5, datapoints_per_bin=20),
                          abs=TOL)
        ), name
        # default: num_bins honoured, SPEC l2 (= calibkit.rmsce)
        assert cum.rmsce(labels, probs, num_bins=7) == pytest.approx(
            calibkit.rmsce(labels, probs, num_bins=7), abs=TOL
        ), name
    labels, probs = RANDOM["random-1000x3"]
    assert cum.rmsce(labels, probs, num_bins=3) != pytest.approx(
        cum.rmsce(labels, probs, num_bins=30), abs=1e-9
    )


@pytest.mark.parametrize("datapoints_per_bin", [1, 7, 50, 100, 10_000, 2.5])
@pytest.mark.parametrize("max_prob,cc", list(itertools.product([True, False], repeat=2)))
def test_datapoints_per_bin_parity(datapoints_per_bin, max_prob, cc):
    for name, (labels, probs) in RANDOM.items():
        for norm, legacy in (("l1", False), ("l2", True)):
            want = upstream.gce(labels, probs, "adaptive", max_prob, cc, norm,
                                datapoints_per_bin=datapoints_per_bin)
            got = cum.gce(labels, probs, "adaptive", max_prob, cc, norm,
                          datapoints_per_bin=datapoints_per_bin, legacy_l2=legacy)
            assert got == pytest.approx(want, abs=TOL), (name, norm)


def test_compute_all_metrics():
    for name, (labels, probs) in RANDOM.items():
        want = upstream.compute_all_metrics(labels, probs)
        legacy = cum.compute_all_metrics(labels, probs, legacy_l2=True)
        np.testing.assert_allclose(legacy, want, rtol=0, atol=TOL, err_msg=name)
        default = cum.compute_all_metrics(labels, probs)
        assert default.shape == (32,) and default.dtype == np.float64
        np.testing.assert_allclose(default[0::2], want[0::2], rtol=0, atol=TOL, err_msg=name)
        # l2 entries follow SPEC, in upstream's order (= SPEC's index formula)
        for i, (binning, max_prob, cc, thr) in enumerate(GROUPINGS):
            spec = calibkit.gce(labels, probs, binning=binning, max_prob=max_prob,
                                class_conditional=cc, threshold=thr, norm="l2", num_bins=30)
            assert default[2 * i + 1] == pytest.approx(spec, abs=TOL), (name, i)


def test_compute_all_metrics_num_bins_keyword():
    labels, probs = RANDOM["random-300x10"]
    got = cum.compute_all_metrics(labels, probs, num_bins=4)
    for i, (binning, max_prob, cc, thr) in enumerate(GROUPINGS):
        for j, norm in enumerate(("l1", "l2")):
            want = calibkit.gce(labels, probs, binning=binning, max_prob=max_prob,
                                class_conditional=cc, threshold=thr, norm=norm, num_bins=4)
            assert got[2 * i + j] == pytest.approx(want, abs=TOL)


@pytest.mark.parametrize("grouping", GROUPINGS, ids=_ids)
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_object_api_parity(grouping, norm):
    binning, max_prob, cc, threshold = grouping
    for name, (labels, probs) in RANDOM.items():
        theirs = upstream.GeneralCalibrationError(binning, max_prob, cc, norm, num_bins=10,
                                                  threshold=threshold)
        ours = cum.GeneralCalibrationError(binning, max_prob, cc, norm, num_bins=10,
                                           threshold=threshold, legacy_l2=True)
        theirs.update_state(labels, probs)
        ours.update_state(labels, probs)
        assert ours.result() == pytest.approx(theirs.result(), abs=TOL), name
        if theirs.accuracies is None:
            assert ours.accuracies is None
            continue
        for attr in ("accuracies", "confidences", "calibration_errors"):
            np.testing.assert_allclose(getattr(ours, attr), getattr(theirs, attr),
                                       rtol=1e-12, atol=TOL, err_msg=f"{name} {attr}")
        ours.reset_state()
        assert ours.result() is None


def test_signatures_match_upstream():
    # Same parameter names, order and defaults; compat adds keyword-only switches, and rmsce's
    # datapoints_per_bin default is None (upstream main) instead of 0.0.81's 100.
    for name in ("gce", "ece", "sce", "ace", "tace", "rmsce", "compute_all_metrics"):
        theirs = inspect.signature(getattr(upstream, name)).parameters
        ours = inspect.signature(getattr(cum, name)).parameters
        positional = [p for p in ours.values() if p.kind != inspect.Parameter.KEYWORD_ONLY]
        assert [p.name for p in positional] == list(theirs), name
        for p in positional:
            if (name, p.name) == ("rmsce", "datapoints_per_bin"):
                assert theirs[p.name].default == 100 and p.default is None
            else:
                assert p.default == theirs[p.name].default, (name, p.name)
    assert set(cum.__all__) >= {"gce", "ece", "sce", "ace", "tace", "rmsce",
                                "compute_all_metrics", "GeneralCalibrationError"}
    for alias, target in (("general_calibration_error", "gce"),
                          ("static_calibration_error", "sce"),
                          ("adaptive_calibration_error", "ace"),
                          ("thresholded_adaptive_calibration_error", "tace"),
                          ("root_mean_squared_calibration_error", "rmsce")):
        assert getattr(cum, alias) is getattr(cum, target)


def test_returns_python_float():
    labels, probs = RANDOM["random-9x4"]
    assert type(cum.ece(labels, probs)) is float
    assert type(cum.gce(labels, probs, "even", True, False, "l2", legacy_l2=True)) is float
    # everything thresholded away: upstream returns int-like 0.; compat a float 0.0
    assert cum.gce(labels, probs, "even", True, False, "l1", threshold=0.99) == 0.0


def test_binary_float32_follows_upstream():
    # 0.0.81 computes 1 - p in float32 for 1-D float32 input, and so does calibkit: a value
    # whose float32 complement lands on an edge is binned identically.
    p = np.array([0.3, 0.7, 0.9, 0.1, 0.6], dtype=np.float32)
    labels = np.array([0, 1, 1, 0, 0])
    for binning, max_prob, cc, thr in GROUPINGS:
        want = upstream.gce(labels, p, binning, max_prob, cc, "l1", num_bins=10, threshold=thr)
        got = cum.gce(labels, p, binning, max_prob, cc, "l1", num_bins=10, threshold=thr)
        assert got == pytest.approx(want, abs=TOL)


# ---------------------------------------------------------------------------------------------
# Bad input: errors where 0.0.81 silently returns something or fails obscurely
# ---------------------------------------------------------------------------------------------


def test_unknown_norm_raises_where_upstream_silently_uses_l2():
    labels, probs = RANDOM["random-9x4"]
    assert np.isfinite(upstream.gce(labels, probs, "even", True, False, "L1"))  # silent l2
    with pytest.raises(ValueError, match="norm"):
        cum.gce(labels, probs, "even", True, False, "L1")


def test_unknown_binning_raises_value_error():
    labels, probs = RANDOM["random-9x4"]
    with pytest.raises(NameError):
        upstream.gce(labels, probs, "uniform", True, False, "l1")
    with pytest.raises(ValueError, match="binning"):
        cum.gce(labels, probs, "uniform", True, False, "l1")


def test_datapoints_per_bin_with_even_binning_raises():
    labels, probs = RANDOM["random-9x4"]
    with pytest.raises(ValueError):
        upstream.gce(labels, probs, "even", True, False, "l1", datapoints_per_bin=3)
    with pytest.raises(ValueError, match="datapoints_per_bin.*adaptive"):
        cum.gce(labels, probs, "even", True, False, "l1", datapoints_per_bin=3)


@pytest.mark.parametrize("bad", [0, -5, float("nan"), float("inf"), "10", True])
def test_bad_datapoints_per_bin(bad):
    labels, probs = RANDOM["random-9x4"]
    with pytest.raises(ValueError, match="datapoints_per_bin"):
        cum.gce(labels, probs, "adaptive", True, False, "l1", datapoints_per_bin=bad)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_bad_legacy_switch(bad):
    labels, probs = RANDOM["random-9x4"]
    with pytest.raises(ValueError, match="legacy_l2"):
        cum.gce(labels, probs, "even", True, False, "l2", legacy_l2=bad)
    with pytest.raises(ValueError, match="legacy_l2"):
        cum.compute_all_metrics(labels, probs, legacy_l2=bad)


def test_negative_labels_raise_where_upstream_wraps():
    probs = np.array([[0.8, 0.2], [0.3, 0.7]])
    labels = np.array([0, -1])  # upstream: np.eye(2)[-1] is class 1
    assert upstream.ece(labels, probs) == pytest.approx(upstream.ece([0, 1], probs), abs=TOL)
    with pytest.raises(ValueError, match="label"):
        cum.ece(labels, probs)


def test_invalid_probabilities_raise():
    labels = np.array([0, 1])
    with pytest.raises(ValueError, match="probs"):
        cum.ece(labels, np.array([[0.8, 0.2], [np.nan, 0.7]]))
    with pytest.raises(ValueError, match="probs"):
        cum.ece(labels, np.array([[2.0, -1.0], [0.3, 0.7]]))
    with pytest.raises(ValueError, match="num_bins"):
        cum.ece(labels, np.array([[0.8, 0.2], [0.3, 0.7]]), num_bins=0)


# ---------------------------------------------------------------------------------------------
# Real network outputs (../shared/data; skipped when absent)
# ---------------------------------------------------------------------------------------------


def _real_names():
    if not SHARED_DATA.exists():
        return ["netcal__lenet-5-cifar-10.npz"]  # will skip with a reason
    names = sorted(
        p.name
        for pattern in ("netcal__*.npz", "verified_calibration__*.npz", "label_errors__*.npz",
                        "kangsepp__*.npz")
        for p in SHARED_DATA.glob(pattern)
    )
    return names or ["netcal__lenet-5-cifar-10.npz"]


def _load_real(name):
    d = load_shared(name)
    probs = d["probs"] if "probs" in d else calibkit.softmax(d["logits"])
    return d["labels"], probs


@pytest.mark.realdata
@pytest.mark.parametrize("name", _real_names())
def test_real_data_parity(name):
    labels, probs = _load_real(name)
    for binning, max_prob, cc, threshold in GROUPINGS:
        for norm, legacy in (("l1", False), ("l2", True)):
            want = upstream.gce(labels, probs, binning, max_prob, cc, norm,
                                num_bins=30, threshold=threshold)
            got = cum.gce(labels, probs, binning, max_prob, cc, norm,
                          num_bins=30, threshold=threshold, legacy_l2=legacy)
            assert got == pytest.approx(want, abs=TOL), (binning, max_prob, cc, threshold, norm)
    assert cum.rmsce(labels, probs, legacy_l2=True) == pytest.approx(
        upstream.rmsce(labels, probs), abs=TOL
    )


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["netcal__wideresnet-16-4-cifar-10.npz",
                                  "verified_calibration__cifar10_vgg.npz"])
def test_real_data_parity_float32(name):
    labels, probs = _load_real(name)
    probs = probs.astype(np.float32)
    for binning, max_prob, cc, threshold in GROUPINGS:
        want = upstream.gce(labels, probs, binning, max_prob, cc, "l1", threshold=threshold)
        got = cum.gce(labels, probs, binning, max_prob, cc, "l1", threshold=threshold)
        assert got == pytest.approx(want, abs=TOL), (binning, max_prob, cc, threshold)
