"""The public functions given device tensors: computed on the device, equal to NumPy's result.

``calibkit.gce``, the named metrics and ``calibkit.evaluate`` route a PyTorch tensor on a device
to :mod:`calibkit.torch.functional` (the tables built with torch ops where the tensors are, only
they crossing to the host). Without a GPU the device code runs on CPU tensors
(``TORCH_OPS_ON_CPU``, which also routes CPU tensors); tests/test_torch_cuda.py repeats the
checks on a real GPU.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import load_shared, requires

torch = requires("torch")


import calibkit  # noqa: E402
import calibkit._arraylike as arraylike  # noqa: E402
import calibkit.torch.tables as tables_module  # noqa: E402
from calibkit.errors import (  # noqa: E402
    FewSamplesWarning,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
    TopLabelInputError,
)

NAMED = {"ECE": calibkit.ece, "ACE": calibkit.ace, "TACE": calibkit.tace, "SCE": calibkit.sce,
         "RMSCE": calibkit.rmsce, "CCE": calibkit.cce, "MCE": calibkit.mce}


@pytest.fixture
def device(monkeypatch):
    """Route CPU tensors down the device path (torch ops), as a GPU tensor goes."""
    monkeypatch.setattr(tables_module, "TORCH_OPS_ON_CPU", True)


@pytest.fixture(scope="module")
def cifar():
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    return d["labels"][:2000], d["probs"][:2000]


def _t(*arrays):
    return tuple(None if a is None else torch.from_numpy(np.asarray(a)) for a in arrays)


@pytest.fixture
def spy(monkeypatch):
    """The sizes of the tensors that cross to the host, and whether calibkit's host conversion
    (``calibkit._arraylike``) took a tensor."""
    seen = {"numel": [], "to_numpy": 0}
    real_torch_numpy = arraylike._torch_numpy

    def torch_numpy(t):
        seen["to_numpy"] += 1
        return real_torch_numpy(t)

    monkeypatch.setattr(arraylike, "_torch_numpy", torch_numpy)
    for name in ("cpu", "numpy", "tolist"):
        real = getattr(torch.Tensor, name)

        def wrapped(self, *a, _real=real, **k):
            seen["numel"].append(self.numel())
            return _real(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, wrapped)
    return seen


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_named_metrics_on_the_device_equal_numpy(cifar, dtype, device):
    y, p = cifar
    p = p.astype(dtype)
    yt, pt = _t(y, p)
    for name, f in NAMED.items():  # the engine's tables, bit for bit: the same value
        assert f(yt, pt, num_bins=15) == f(y, p, num_bins=15), name


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_evaluate_over_the_space_on_the_device_equals_numpy(cifar, dtype, device):
    y, p = cifar
    p = p.astype(dtype)
    ev = calibkit.evaluate(*_t(y, p))
    ref = calibkit.evaluate(y, p)
    assert ev.space == ref.space and ev.num_bins == ref.num_bins
    assert (ev.n_samples, ev.num_classes) == (ref.n_samples, ref.num_classes)
    np.testing.assert_array_equal(ev.values, ref.values)


def test_float32_tables_on_the_device_hold_the_same_bins(cifar, device):
    y, p = cifar
    p = p.astype(np.float32)
    sc = tables_module.Scores.of_matrix(*_t(p, y))
    space = calibkit.space.metric_space()
    got = tables_module.space_tables(sc, space, (10, 15))
    for (binning, mp, cc, t, b), (c, _, o) in got.items():
        want = calibkit.calibration_bins(y, p, binning=binning, max_prob=mp, class_conditional=cc,
                                         threshold=t, num_bins=b)
        np.testing.assert_array_equal(c, want.counts)
        np.testing.assert_array_equal(o, want.sum_outcome)


def test_every_gce_keyword_is_honoured_on_the_device(cifar, device):
    y, p = cifar
    rng = np.random.default_rng(0)
    w = rng.integers(0, 4, size=y.size).astype(np.float64)
    yt, pt, wt = _t(y, p, w)
    for binning in ("even", "adaptive"):
        for mp in (True, False):
            for cc in (True, False):
                for t in (0.0, 0.05):
                    for norm in ("l1", "l2", "max"):
                        kw = dict(binning=binning, max_prob=mp, class_conditional=cc,
                                  threshold=t, norm=norm, num_bins=12)
                        assert abs(calibkit.gce(yt, pt, **kw) - calibkit.gce(y, p, **kw)) <= 1e-12
                        got = calibkit.gce(yt, pt, sample_weight=wt, **kw)
                        assert abs(got - calibkit.gce(y, p, sample_weight=w, **kw)) <= 1e-12
    assert abs(calibkit.rmsce(yt, pt, debias=True) - calibkit.rmsce(y, p, debias=True)) <= 1e-12
    with pytest.warns(FewSamplesWarning):  # 20 rows a class: as the host path warns
        got = calibkit.cce(yt, pt, num_bins="auto")
    with pytest.warns(FewSamplesWarning):
        assert abs(got - calibkit.cce(y, p, num_bins="auto")) <= 1e-12
    assert abs(calibkit.sce(yt, pt, num_bins="auto") - calibkit.sce(y, p, num_bins="auto")) <= 1e-12
    assert abs(calibkit.ece(yt, pt, num_bins="auto") - calibkit.ece(y, p, num_bins="auto")) <= 1e-12


def test_evaluate_keywords_on_the_device(cifar, device):
    y, p = cifar
    w = np.random.default_rng(1).uniform(0, 2, size=y.size)
    yt, pt, wt = _t(y, p, w)
    for kw in ({"num_bins": (7, 30)}, {"num_bins": "auto"}, {"space": ["ACE", "MCE"]}):
        np.testing.assert_allclose(calibkit.evaluate(yt, pt, **kw).values,
                                   calibkit.evaluate(y, p, **kw).values, rtol=0, atol=1e-12)
    ev = calibkit.evaluate(yt, pt, ["ECE", "TACE", "SCE"], 15, sample_weight=wt)
    ref = calibkit.evaluate(y, p, ["ECE", "TACE", "SCE"], 15, sample_weight=w)
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    ev = calibkit.evaluate(yt, pt, ["ECE"], 15, binning_free=True)
    ref = calibkit.evaluate(y, p, ["ECE"], 15, binning_free=True)
    assert ev.binning_free is not None and ref.binning_free is not None
    assert abs(ev.binning_free.smece - ref.binning_free.smece) <= 1e-12
    assert abs(ev.binning_free.ksce - ref.binning_free.ksce) <= 1e-12


def test_top_label_pairs_on_the_device(cifar, device):
    y, p = cifar
    conf = p.max(axis=1)
    pred = p.argmax(axis=1)
    ok = pred == y
    ct, okt, pt = _t(conf, ok, pred)
    for kw in ({}, {"threshold": 0.3}, {"num_bins": "auto"}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FewSamplesWarning)
            assert abs(calibkit.gce(confidence=ct, correct=okt, **kw)
                       - calibkit.gce(confidence=conf, correct=ok, **kw)) <= 1e-12
    assert abs(calibkit.cce(confidence=ct, correct=okt, predicted=pt, num_classes=100)
               - calibkit.cce(y, p)) <= 1e-12
    ev = calibkit.evaluate(confidence=ct, correct=okt, predicted=pt, num_classes=100)
    ref = calibkit.evaluate(confidence=conf, correct=ok, predicted=pred, num_classes=100)
    assert ev.top_label_only and ev.space == ref.space and ev.num_classes == 100
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    w = np.random.default_rng(5).uniform(0, 2, size=y.size)
    ev = calibkit.evaluate(confidence=ct, correct=okt, sample_weight=torch.from_numpy(w))
    ref = calibkit.evaluate(confidence=conf, correct=ok, sample_weight=w)
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    with pytest.raises(TopLabelInputError):
        calibkit.sce(confidence=ct, correct=okt)
    with pytest.raises(TopLabelInputError):
        calibkit.cce(confidence=ct, correct=okt)


def test_binary_probabilities_and_numpy_labels_on_the_device(device):
    rng = np.random.default_rng(2)
    q = rng.uniform(size=500)
    y = (rng.uniform(size=500) < q).astype(np.int64)
    qt = torch.from_numpy(q)
    assert abs(calibkit.ece(y, qt) - calibkit.ece(y, q)) <= 1e-12  # NumPy labels, tensor probs
    ev = calibkit.evaluate(torch.from_numpy(y), qt, ["ECE", "ACE"], 10)
    assert ev.binary_1d and ev.num_classes == 2
    np.testing.assert_allclose(ev.values, calibkit.evaluate(y, q, ["ECE", "ACE"], 10).values,
                               rtol=0, atol=1e-12)


def test_the_device_path_copies_no_matrix_to_the_host(device, spy):
    rng = np.random.default_rng(4)  # N well above the tables' size (K = 10 groups)
    n = 40000
    p = rng.dirichlet(np.ones(10) * 0.3, size=n)
    y = rng.integers(0, 10, size=n)
    yt, pt = _t(y, p)
    for f in NAMED.values():
        f(yt, pt, num_bins=15)
    calibkit.evaluate(yt, pt, num_bins=(10, 15))
    assert spy["to_numpy"] == 0  # calibkit._arraylike never converted a tensor
    # only tables (and a few extremes) crossed: no matrix, not even an (N,) vector
    assert spy["numel"] and max(spy["numel"]) < n


def test_numpy_input_never_reaches_the_device_path(cifar, device, monkeypatch):
    y, p = cifar

    def refuse(name):
        raise AssertionError(f"the device path of {name} was asked for NumPy input")

    monkeypatch.setattr("calibkit.binned.metrics.device_path", refuse)
    monkeypatch.setattr("calibkit.binned.space.device_path", refuse)
    calibkit.ece(y, p)
    calibkit.ece(confidence=p.max(axis=1), correct=p.argmax(axis=1) == y)
    calibkit.evaluate(y, p, ["ECE"], 15)


def test_host_fallbacks_and_errors_on_the_device(cifar, device):
    y, p = cifar
    yt, pt = _t(y, p)
    rng = np.random.default_rng(3)
    pm = rng.uniform(size=(200, 3))
    ym = (rng.uniform(size=(200, 3)) < pm).astype(np.int64)
    # a multilabel label matrix takes the host path
    assert abs(calibkit.sce(*_t(ym, pm)) - calibkit.sce(ym, pm)) <= 1e-12
    with pytest.raises(ShapeMismatchError):  # empty input: the host's error
        calibkit.ece(yt[:0], pt[:0])
    bad = pt.clone()
    bad[5, 5] = float("nan")
    with pytest.raises(InvalidProbabilitiesError):
        calibkit.ece(yt, bad)
    with pytest.raises(InvalidParameterError):
        calibkit.ece(yt, pt, sample_weight=torch.zeros(y.size, dtype=torch.float64))
    with pytest.raises(InvalidParameterError):
        calibkit.ece(yt, pt, confidence=pt[:, 0])
    with pytest.raises(InvalidParameterError):
        calibkit.gce(yt, pt, norm="l3")
    with pytest.raises(InvalidParameterError):
        calibkit.gce(yt, pt, debias=True)  # l1: refused
    # gradients are dropped, as on the host path
    assert abs(calibkit.ace(yt, pt.clone().requires_grad_()) - calibkit.ace(y, p)) <= 1e-12
