"""Per-class errors, per-class adaptive edges, the fraction ECE ignores, and the ECE pathology."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared

import calibkit
from calibkit.binned.diagnostics import (
    adaptive_bin_edges,
    ece_pathology_example,
    ignored_important_fraction,
    per_class_error,
)
from calibkit.errors import InputTypeError, InvalidParameterError, InvalidProbabilitiesError
from calibkit.space import MetricSpec, metric_space

CLASS_CONDITIONAL = [s for s in metric_space(norms=("l1", "l2", "max")) if s.class_conditional]


def case(seed, n=600, k=6):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.3), size=n)
    probs[: n // 10] = np.round(probs[: n // 10], 1)
    probs[: n // 10] /= probs[: n // 10].sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, size=n)
    labels[labels == k - 1] = 0  # the last class never occurs as a label
    return labels, probs


# --- per-class error -----------------------------------------------------------------------


@pytest.mark.parametrize("spec", CLASS_CONDITIONAL, ids=lambda s: s.name)
def test_per_class_error_averages_to_the_metric(spec):
    labels, probs = case(0)
    for b in (5, 15):
        per = per_class_error(labels, probs, spec, num_bins=b)
        assert per.shape == (probs.shape[1],) and per.dtype == np.float64
        assert np.all(per >= 0) and np.all(np.isfinite(per))
        metric = calibkit.gce(labels, probs, **spec.kwargs(), num_bins=b)
        if spec.norm == "l2":
            assert np.sqrt(np.mean(per ** 2)) == pytest.approx(metric, abs=1e-12)
        else:
            assert per.mean() == pytest.approx(metric, abs=1e-12)


@pytest.mark.parametrize("name", ["SCE", "ACE", "TACE"])
def test_per_class_error_is_the_one_vs_rest_error(name):
    # An all-probability metric's class k is the binary problem (labels == k, probs[:, k]);
    # for a binary input [1 - p, p] the pooled top-label-free error of column 1 is that problem.
    labels, probs = case(1, n=400, k=4)
    spec = MetricSpec.from_name(name)
    per = per_class_error(labels, probs, name, num_bins=10)
    for k in range(4):
        t = calibkit.calibration_bins(
            (labels == k).astype(int), probs[:, k], binning=spec.binning, max_prob=False,
            class_conditional=True, threshold=spec.threshold, num_bins=10,
        )
        want = calibkit.reduce_bins(t.counts[1:], t.sum_score[1:], t.sum_outcome[1:])
        assert per[k] == pytest.approx(want, abs=1e-12)


def test_per_class_error_empty_class_is_zero_and_cce_groups_by_prediction():
    # class 2 is never predicted: its top-label group is empty
    probs = np.array([[0.8, 0.1, 0.1], [0.3, 0.6, 0.1], [0.7, 0.2, 0.1], [0.2, 0.7, 0.1]])
    labels = np.array([0, 0, 0, 1])
    per = per_class_error(labels, probs, "CCE", num_bins=10)
    # class 0: 0.8 and 0.7 both right, in different bins -> |1-0.8|/2 + |1-0.7|/2 = 0.25
    # class 1: 0.6 (wrong, label 0) and 0.7 (right) -> |0-0.6|/2 + |1-0.7|/2 = 0.45
    np.testing.assert_allclose(per, [0.25, 0.45, 0.0], atol=1e-15)


def test_per_class_error_multilabel():
    rng = np.random.default_rng(2)
    probs = rng.uniform(size=(300, 5))
    labels = (rng.uniform(size=(300, 5)) < probs).astype(int)
    per = per_class_error(labels, probs, "ACE", num_bins=10)
    assert per.mean() == pytest.approx(
        calibkit.gce(labels, probs, binning="adaptive", max_prob=False, class_conditional=True,
                     num_bins=10), abs=1e-12)


@pytest.mark.realdata
def test_per_class_ace_real_cifar100_is_non_uniform():
    # the paper's Figure 1 left: per-class ACE of a CIFAR-100 network varies across classes
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    per = per_class_error(d["labels"], d["probs"], "ACE", num_bins=15)
    assert per.shape == (100,)
    assert per.mean() == pytest.approx(calibkit.ace(d["labels"], d["probs"]), abs=1e-12)
    assert per.max() > 2 * per.min()


def test_per_class_error_refuses_pooled_metrics():
    labels, probs = case(3, n=50)
    with pytest.raises(InvalidParameterError, match="class-conditional metric.*ECE"):
        per_class_error(labels, probs, "ECE")
    with pytest.raises(InvalidParameterError, match="unknown metric"):
        per_class_error(labels, probs, "ACEE")


# --- adaptive edges ------------------------------------------------------------------------


def independent_edges(col, threshold, B):
    s = np.sort(col[col > threshold])
    n = s.size
    if n == 0:
        return np.full(B - 1, np.nan)
    pos = [min(int(np.round(j * (n / B))), n - 1) for j in range(1, B)]
    return s[pos]


@pytest.mark.parametrize("threshold", [0.0, 0.01, 0.3])
def test_adaptive_edges_per_class(threshold):
    labels, probs = case(4, n=500, k=5)
    B = 8
    full = adaptive_bin_edges(labels, probs, num_bins=B, threshold=threshold)
    inner = adaptive_bin_edges(labels, probs, num_bins=B, threshold=threshold,
                               include_ends=False)
    assert full.shape == (5, B + 1) and inner.shape == (5, B - 1)
    np.testing.assert_array_equal(full[:, 1:-1], inner)
    assert np.all(full[:, 0] == threshold) and np.all(full[:, -1] == 1.0)
    for k in range(5):
        np.testing.assert_array_equal(inner[k], independent_edges(probs[:, k], threshold, B))
        assert np.all(np.diff(inner[k]) >= 0)
    # these are the edges ACE bins with
    t = calibkit.calibration_bins(labels, probs, binning="adaptive", max_prob=False,
                                  class_conditional=True, threshold=threshold, num_bins=B)
    np.testing.assert_array_equal(full, t.edges)


def test_adaptive_edges_give_equal_mass_bins_on_continuous_scores():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), size=3000)
    labels = rng.integers(0, 3, size=3000)
    edges = adaptive_bin_edges(labels, probs, num_bins=10)
    for k in range(3):
        counts = np.histogram(probs[:, k], bins=edges[k])[0]
        assert counts.max() - counts.min() <= 1


def test_adaptive_edges_empty_class_is_nan():
    probs = np.array([[0.95, 0.05], [0.9, 0.1], [0.99, 0.01]])
    edges = adaptive_bin_edges([0, 0, 1], probs, num_bins=3, threshold=0.2)
    assert np.isnan(edges[1, 1:-1]).all() and not np.isnan(edges[0]).any()


# --- what ECE ignores ----------------------------------------------------------------------


def test_ignored_fraction_hand_examples():
    # row 0: 0.5 (max), 0.3, 0.2 important -> 2 ignored of 3; row 1: only 0.9 -> 0 of 1
    assert ignored_important_fraction([[0.5, 0.3, 0.2], [0.9, 0.05, 0.05]], 0.1) == 0.5
    # strict threshold: 0.2 is not above 0.2
    assert ignored_important_fraction([[0.5, 0.3, 0.2]], 0.2) == 0.5
    # ties: one maximum per row (the predicted class); the tied twin counts as ignored
    assert ignored_important_fraction([[0.45, 0.45, 0.1]], 0.1) == 0.5
    # a row whose maximum equals the threshold has nothing important, not even its maximum
    assert ignored_important_fraction([[0.4, 0.4, 0.2], [0.5, 0.3, 0.2]], 0.4) == 0.0
    # nothing important at all -> 0.0, not NaN
    assert ignored_important_fraction([[0.34, 0.33, 0.33]], 0.5) == 0.0
    # binary 1-D input is P(y=1): rows [0.4, 0.6] and [0.95, 0.05]
    assert ignored_important_fraction([0.6, 0.05], 0.1) == 1 / 3


def test_ignored_fraction_matches_brute_force_and_grows_with_uncertainty():
    rng = np.random.default_rng(6)
    fractions = []
    for conc in (0.05, 0.3, 1.0, 5.0):  # flatter predictions ~ more label noise
        probs = rng.dirichlet(np.full(10, conc), size=500)
        f = ignored_important_fraction(probs, threshold=0.1)
        imp = ign = 0
        for row in probs:
            top = int(np.argmax(row))
            for k, v in enumerate(row):
                if v > 0.1:
                    imp += 1
                    ign += k != top
        assert f == pytest.approx(ign / imp, abs=0)
        fractions.append(f)
    assert fractions == sorted(fractions) and fractions[-1] > fractions[0]


def test_ignored_fraction_errors():
    with pytest.raises(InvalidParameterError, match="threshold"):
        ignored_important_fraction([[0.5, 0.5]], threshold=1.0)
    with pytest.raises(InputTypeError, match="threshold"):
        ignored_important_fraction([[0.5, 0.5]], threshold="0.1")
    with pytest.raises(InvalidProbabilitiesError, match="NaN"):
        ignored_important_fraction([[np.nan, 0.5]])
    with pytest.raises(InvalidProbabilitiesError, match=r"\[0, 1\]"):
        ignored_important_fraction([[3.0, -2.0]])
    with pytest.raises(ValueError):
        ignored_important_fraction(np.zeros((0, 3)))


# --- the ECE pathology ---------------------------------------------------------------------


def test_ece_pathology_construction():
    labels, probs = ece_pathology_example()
    assert probs.shape == (1000, 2) and labels.shape == (1000,)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    top = probs.max(axis=1)
    pred = probs.argmax(axis=1)
    correct = pred == labels
    assert np.sum(np.isclose(top, 0.52)) == 450 and not correct[np.isclose(top, 0.52)].any()
    assert np.sum(np.isclose(top, 0.58)) == 550 and correct[np.isclose(top, 0.58)].all()
    assert correct.mean() == pytest.approx(0.55)


def test_ece_is_tiny_while_classwise_metrics_are_large():
    labels, probs = ece_pathology_example()
    ece = calibkit.ece(labels, probs, num_bins=10)
    assert ece == pytest.approx(0.003, abs=1e-9)  # |0.55 - (0.45*0.52 + 0.55*0.58)|
    sce = calibkit.sce(labels, probs, num_bins=10)
    cce = calibkit.cce(labels, probs, num_bins=10)
    assert sce == pytest.approx(0.45 * 0.52 + 0.55 * 0.42, abs=1e-9)  # 0.465
    assert cce == pytest.approx((0.52 + 0.42) / 2, abs=1e-9)  # 0.47
    assert min(sce, cce, calibkit.ace(labels, probs, num_bins=10)) > 100 * ece
    np.testing.assert_allclose(per_class_error(labels, probs, "CCE", num_bins=10), [0.52, 0.42])
    # the cancellation is an artefact of the bin placement: 15 bins split 0.52 from 0.58
    assert calibkit.ece(labels, probs, num_bins=15) > 0.4


def test_ece_pathology_parameters():
    labels, probs = ece_pathology_example(n_wrong=10, p_wrong=0.9, n_right=0, p_right=0.6)
    assert calibkit.ece(labels, probs, num_bins=10) == pytest.approx(0.9)
    with pytest.raises(InvalidParameterError, match="p_wrong"):
        ece_pathology_example(p_wrong=0.4)
    with pytest.raises(InvalidParameterError, match="n_right"):
        ece_pathology_example(n_right=-1)
    with pytest.raises(InputTypeError, match="n_wrong"):
        ece_pathology_example(n_wrong=4.5)
    with pytest.raises(InvalidParameterError, match="at least one row"):
        ece_pathology_example(n_wrong=0, n_right=0)
