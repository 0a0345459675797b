"""Every recalibration method improves real, overconfident networks on held-out data.

* DenseNet-40 on CIFAR-10 (logits, with its own validation split): fit on ``val_*``,
  evaluate on the test arrays;
* two CIFAR-100 networks (probabilities only): fit on the first half, evaluate on the second
  (logit-space methods get log-probabilities, exact up to a per-row constant);
* an overconfident softmax regression on scikit-learn's bundled digits, so the check runs
  without the shared data.

Scaling methods must lower the held-out NLL; binning and isotonic maps (which produce exact
zeros, hence unbounded NLL) must lower the held-out ECE; the metric-optimised temperature must
lower both.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import load_shared, requires

import calibkit
from calibkit import recalibration as R

NLL_METHODS = {"temperature", "vector", "matrix", "neural_network", "ece_temperature"}
ECE_METHODS = {
    "cc_histogram_binning",
    "bootstrap_histogram_binning",
    "isotonic",
    "ece_temperature",
    "histogram_binning",
}
METHODS = [name for name, _ in R.PAPER_METHODS] + ["histogram_binning"]


def build(name, kind, **overrides):
    if name == "histogram_binning":
        return R.HistogramBinning(input=kind, **overrides)
    est = dict(R.PAPER_METHODS)[name](input=kind, random_state=0)
    return est.set_params(**overrides) if overrides else est


def nll(p, y):
    return float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-300))))


def check_improves(name, kind, x_fit, y_fit, x_test, y_test, **overrides):
    p0 = x_test if kind == "probs" else calibkit.softmax(x_test)
    est = build(name, kind, **overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("error", R.ConvergenceWarning)  # the defaults must converge
        est.fit(x_fit, y_fit)
    p = est.predict_proba(x_test)
    assert p.shape == p0.shape and np.allclose(p.sum(1), 1)
    if name in NLL_METHODS:
        assert nll(p, y_test) < nll(p0, y_test), (name, nll(p, y_test), nll(p0, y_test))
    if name in ECE_METHODS:
        e, e0 = calibkit.ece(y_test, p), calibkit.ece(y_test, p0)
        assert e < e0, (name, e, e0)


@pytest.fixture(scope="module")
def densenet40():
    return load_shared("kangsepp__densenet40_c10.npz")


@pytest.mark.realdata
@pytest.mark.parametrize("name", METHODS)
def test_densenet40_cifar10(name, densenet40):
    d = densenet40
    check_improves(name, "logits", d["val_logits"], d["val_labels"], d["logits"], d["labels"])


CIFAR100 = ["netcal__densenet-bc-100-cifar-100.npz", "netcal__wideresnet-16-4-cifar-100.npz"]


@pytest.mark.realdata
@pytest.mark.parametrize("record", CIFAR100)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in ("matrix", "ece_temperature") else n
        for n in METHODS
    ],
)
def test_cifar100_half_split(name, record):
    d = load_shared(record)
    p, y = d["probs"], d["labels"]
    h = len(y) // 2
    check_improves(name, "probs", p[:h], y[:h], p[h:], y[h:])


@pytest.fixture(scope="module")
def digits_model():
    datasets = requires("sklearn.datasets")
    linear_model = requires("sklearn.linear_model")
    x, y = datasets.load_digits(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    tr, fit, test = idx[:600], idx[600:1200], idx[1200:]
    # weak regularisation on 600 images: an overconfident softmax regression
    model = linear_model.LogisticRegression(C=1e4, max_iter=10_000).fit(x[tr] / 16, y[tr])
    z = model.decision_function(x / 16)
    return z[fit], y[fit], z[test], y[test]


@pytest.mark.parametrize("name", METHODS)
def test_digits_softmax_regression(name, digits_model):
    z_fit, y_fit, z_test, y_test = digits_model
    # 600 fitting rows over 10 classes: one-vs-rest histograms use 10 equal-width bins
    small = {"binning": "even", "num_bins": 10}
    overrides = small if name in ("bootstrap_histogram_binning", "histogram_binning") else {}
    check_improves(name, "logits", z_fit, y_fit, z_test, y_test, **overrides)
    check_improves(
        name, "probs", calibkit.softmax(z_fit), y_fit, calibkit.softmax(z_test), y_test, **overrides
    )
