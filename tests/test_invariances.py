"""Invariances every calibration metric of the GCE space must have (checked on calibkit.gce).

* permuting rows changes nothing;
* renaming classes (permuting the columns of ``probs`` together with the labels) changes
  nothing, pooled or class-conditional (data without ties in the row maximum, since the
  lowest-index tie rule is not invariant under renaming);
* duplicating every row changes nothing for even binning (all weights are shares);
* results lie in [0, 1];
* a model calibrated by construction (labels drawn from the predicted distribution) gets a small
  error that shrinks as N grows.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import calibkit

TOL = 1e-12
NORMS = ("l1", "l2", "max")
COMBOS = [
    dict(binning=b, max_prob=m, class_conditional=c, norm=n)
    for b, m, c, n in itertools.product(["even", "adaptive"], [True, False], [True, False], NORMS)
]


def _ids(kw):
    return "-".join(str(v) for v in kw.values())


def tie_free_probs(rng, n, k, sharp=3.0):
    """Continuous random rows: the row maximum is unique with probability 1 (checked)."""
    p = rng.random((n, k)) ** sharp
    p /= p.sum(axis=1, keepdims=True)
    top2 = np.sort(p, axis=1)[:, -2:] if k > 1 else np.zeros((n, 2))
    assert k == 1 or np.all(top2[:, 1] > top2[:, 0])
    return p


def calibrated_sample(rng, n, k, alpha=0.5):
    """Dirichlet predictions and labels drawn from them: calibrated by construction."""
    p = rng.dirichlet(np.full(k, alpha), size=n)
    u = rng.random((n, 1))
    labels = np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), k - 1)
    return labels, p


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(11)
    n, k = 600, 7
    probs = tie_free_probs(rng, n, k)
    labels = rng.integers(0, k, size=n)
    good = rng.random(n) < 0.6  # 60 % of labels follow the prediction, the rest are random
    labels[good] = np.argmax(probs[good], axis=1)
    return labels, probs


@pytest.mark.parametrize("kw", COMBOS, ids=_ids)
@pytest.mark.parametrize("threshold", [0.0, 0.01, 0.2])
def test_row_permutation(sample, kw, threshold):
    labels, probs = sample
    perm = np.random.default_rng(1).permutation(len(labels))
    a = calibkit.gce(labels, probs, threshold=threshold, num_bins=10, **kw)
    b = calibkit.gce(labels[perm], probs[perm], threshold=threshold, num_bins=10, **kw)
    assert a == pytest.approx(b, abs=TOL)


@pytest.mark.parametrize("kw", COMBOS, ids=_ids)
def test_class_permutation(sample, kw):
    labels, probs = sample
    k = probs.shape[1]
    for seed in range(3):
        perm = np.random.default_rng(100 + seed).permutation(k)
        # new class j is old class perm[j]: columns reordered, labels renamed accordingly
        inverse = np.argsort(perm)
        a = calibkit.gce(labels, probs, num_bins=8, **kw)
        b = calibkit.gce(inverse[labels], probs[:, perm], num_bins=8, **kw)
        assert a == pytest.approx(b, abs=TOL)


@pytest.mark.parametrize("kw", [k for k in COMBOS if k["binning"] == "even"], ids=_ids)
def test_duplicating_rows_even_binning(sample, kw):
    labels, probs = sample
    a = calibkit.gce(labels, probs, num_bins=12, **kw)
    b = calibkit.gce(np.tile(labels, 3), np.tile(probs, (3, 1)), num_bins=12, **kw)
    assert a == pytest.approx(b, abs=TOL)


def test_results_in_unit_interval():
    rng = np.random.default_rng(5)
    extremes = [
        # always wrong with full confidence: the largest possible top-label error
        (np.array([1, 1, 1]), np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])),
        (np.array([0, 0]), np.array([[0.0, 1.0], [0.5, 0.5]])),
    ]
    for n, k in ((1, 2), (5, 3), (50, 10), (400, 4)):
        probs = tie_free_probs(rng, n, k, sharp=rng.choice([1.0, 8.0]))
        extremes.append((rng.integers(0, k, size=n), probs))
    for labels, probs in extremes:
        for kw in COMBOS:
            for threshold, num_bins in ((0.0, 1), (0.0, 15), (0.01, 7), (0.5, 30)):
                v = calibkit.gce(labels, probs, threshold=threshold, num_bins=num_bins, **kw)
                assert 0.0 <= v <= 1.0, (kw, threshold, num_bins, v)
    # the worst case reaches 1 exactly
    labels, probs = extremes[0]
    assert calibkit.ece(labels, probs) == pytest.approx(1.0, abs=TOL)
    assert calibkit.mce(labels, probs) == pytest.approx(1.0, abs=TOL)


# MCE is left out on purpose: the maximum over bins is driven by the sparsest bin, so for a
# calibrated model it does not shrink with N (measured: ~0.16 at N=2e3, ~0.35 at N=2e5).
@pytest.mark.parametrize("name", ["ece", "cce", "sce", "ace", "tace", "rmsce"])
def test_calibrated_model_error_small_and_shrinking(name):
    metric = getattr(calibkit, name)
    k = 10

    def mean_error(n, seeds):
        return float(np.mean([metric(*calibrated_sample(np.random.default_rng(s), n, k))
                              for s in seeds]))

    small = mean_error(2_000, range(5))
    large = mean_error(200_000, range(100, 103))
    # estimation noise only, O(sqrt(B / N)): about 10x smaller for 100x more data
    assert large < small / 4, (small, large)
    assert large < 0.01, large
    assert small < 0.1, small


def test_miscalibrated_model_error_does_not_shrink():
    # Control for the test above: an overconfident model (probabilities sharpened after the
    # labels were drawn) keeps a clearly positive error at any N.
    k = 10
    values = []
    for n in (2_000, 200_000):
        labels, p = calibrated_sample(np.random.default_rng(n), n, k)
        sharp = p**3 / np.sum(p**3, axis=1, keepdims=True)
        values.append(calibkit.ece(labels, sharp))
    assert min(values) > 0.05
    assert values[1] == pytest.approx(values[0], abs=0.03)
