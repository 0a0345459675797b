"""Smooth ECE against relplot 1.0.3 (the definition), on real records and synthetic data."""

from __future__ import annotations

import numpy as np
import pytest
from _binfree_data import REAL, SYNTH, real, synthetic, toplabel
from conftest import requires

import calibkit
from calibkit.errors import InvalidParameterError, InvalidProbabilitiesError, ShapeMismatchError

relplot = requires("relplot")  # a test peer: fails under CI when missing, skips elsewhere

TOL = 1e-5


@pytest.mark.parametrize("name", REAL)
def test_equals_relplot_on_real_records(name):
    labels, probs = real(name)
    c, o = toplabel(labels, probs)
    assert abs(calibkit.smece(labels, probs) - relplot.smECE(c, o)) < TOL


@pytest.mark.parametrize("kw", SYNTH)
def test_equals_relplot_on_synthetic(kw):
    labels, probs = synthetic(**kw)
    c, o = toplabel(labels, probs)
    got, sigma = calibkit.smece(labels, probs, return_bandwidth=True)
    want, want_sigma = relplot.smECE(c, o, return_width=True)
    assert abs(got - want) < TOL
    assert sigma == want_sigma


@pytest.mark.parametrize("n, shift", [(200, 0.0), (5000, 0.0), (5000, 0.003), (20000, 0.1)])
def test_small_bandwidths_and_large_grids(n, shift):
    # Nearly calibrated data: the searched bandwidth drops below 0.01, where the grid grows.
    rng = np.random.default_rng(n)
    c = rng.uniform(0.3, 1, n)
    o = (rng.random(n) < np.clip(c - shift, 0, 1)).astype(float)
    got, sigma = calibkit.smece(confidence=c, correct=o, return_bandwidth=True)
    want, want_sigma = relplot.smECE(c, o, return_width=True)
    assert abs(got - want) < TOL and sigma == want_sigma


@pytest.mark.parametrize("sigma", [0.003, 0.05, 0.2, 1.0])
def test_fixed_bandwidth_equals_smece_sigma(sigma):
    labels, probs = synthetic(5)
    c, o = toplabel(labels, probs)
    assert abs(calibkit.smece(labels, probs, bandwidth=sigma) - relplot.smECE_sigma(c, o, sigma)) < TOL


def test_classwise_is_the_class_average_of_one_vs_rest():
    labels, probs = synthetic(6, k=4)
    want = np.mean([relplot.smECE(probs[:, k], (labels == k).astype(float)) for k in range(4)])
    assert abs(calibkit.smece(labels, probs, max_prob=False) - want) < TOL


def test_classwise_on_a_real_record():
    labels, probs = real("verified_calibration__cifar10_vgg.npz")
    p = probs.astype(np.float64)
    want = np.mean([relplot.smECE(p[:, k], (labels == k).astype(float)) for k in range(p.shape[1])])
    assert abs(calibkit.smece(labels, probs, max_prob=False) - want) < TOL


def test_integer_weights_are_repeated_rows():
    labels, probs = synthetic(7, n=800)
    w = np.random.default_rng(0).integers(0, 4, len(labels))
    rep = np.repeat(np.arange(len(labels)), w)
    got = calibkit.smece(labels, probs, sample_weight=w)
    assert abs(got - calibkit.smece(labels[rep], probs[rep])) < TOL
    c, o = toplabel(labels[rep], probs[rep])
    assert abs(got - relplot.smECE(c, o)) < TOL


def test_unit_weights_change_nothing_and_scale_is_not_ignored():
    labels, probs = synthetic(8, n=500)
    assert calibkit.smece(labels, probs, sample_weight=np.ones(500)) == pytest.approx(
        calibkit.smece(labels, probs), abs=1e-12)


def test_confidence_pairs_equal_labels_probs():
    labels, probs = synthetic(9)
    c, o = toplabel(labels, probs)
    assert calibkit.smece(confidence=c, correct=o.astype(bool)) == pytest.approx(
        calibkit.smece(labels, probs), abs=1e-12)


def test_float32_input():
    labels, probs = synthetic(10)
    p32 = probs.astype(np.float32)
    c, o = toplabel(labels, p32)
    assert abs(calibkit.smece(labels, p32) - relplot.smECE(c, o)) < TOL


def test_validation_is_that_of_gce():
    labels, probs = synthetic(11, n=50)
    bad = probs.copy()
    bad[3, 0] = np.nan
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.smece(labels, bad)
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.smece(labels, probs * 2)
    with pytest.raises(ShapeMismatchError):
        calibkit.smece(labels[:-1], probs)
    for bw in (0, -1.0, np.inf, "x"):
        with pytest.raises(InvalidParameterError):
            calibkit.smece(labels, probs, bandwidth=bw)
    with pytest.raises(calibkit.InputTypeError):
        calibkit.smece(labels, probs, max_prob="yes")
    with pytest.raises(InvalidParameterError):
        calibkit.smece(labels, probs, confidence=probs[:, 0], correct=labels == 0)
    with pytest.raises(InvalidParameterError):
        calibkit.smece(confidence=probs[:, 0])
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.smece(confidence=[0.5, 1.5], correct=[0, 1])
    with pytest.raises(calibkit.InvalidLabelsError):
        calibkit.smece(confidence=[0.5, 0.5], correct=[0, 2])


def test_hollance_imagenet_pairs():
    from _binfree_data import HOLLANCE
    from conftest import load_shared

    d = load_shared(HOLLANCE)
    ok = (d["pred"] == d["labels"]).astype(float)
    assert abs(calibkit.smece(confidence=d["confidence"], correct=ok) - relplot.smECE(d["confidence"], ok)) < TOL


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0, 1)), st.booleans()),
        min_size=1,
        max_size=80,
    )
)
def test_property_equals_relplot(rows):
    c = np.array([r[0] for r in rows])
    o = np.array([float(r[1]) for r in rows])
    assert abs(calibkit.smece(confidence=c, correct=o) - relplot.smECE(c, o)) < TOL


def test_evaluate_carries_the_binning_free_estimators():
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(5), size=800)
    labels = rng.integers(0, 5, size=800)
    ev = calibkit.evaluate(labels, probs, space=["ECE"], binning_free=True)
    assert ev.binning_free.smece == calibkit.smece(labels, probs)
    assert ev.binning_free.ksce == calibkit.ksce(labels, probs)
    assert ev.binning_free.corp.score == calibkit.decompose(labels, probs).score
    assert calibkit.evaluate(labels, probs, space=["ECE"]).binning_free is None
    with pytest.raises(calibkit.errors.InvalidFlagError):
        calibkit.evaluate(labels, probs, binning_free="yes")
