"""calibkit.torch.CalibrationError on CPU tensors: equal to calibkit on the concatenated arrays.

Both paths a metric takes are run: the engine's kernels (CPU tensors) and the torch ops a GPU
runs (``TORCH_OPS_ON_CPU``), on real network outputs, float32 and float64, after ``reset()``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared, requires

torch = requires("torch")


import calibkit  # noqa: E402
import calibkit.torch.tables as tables_module  # noqa: E402
from calibkit.errors import (  # noqa: E402
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
    TopLabelInputError,
)
from calibkit.torch import CalibrationError  # noqa: E402
from calibkit.torch.metric import CalibrationErrorCore  # noqa: E402
from calibkit.torch.protocol import MetricProtocol  # noqa: E402

# torchmetrics warns when compute() comes before update(), as the tests of empty state do
pytestmark = pytest.mark.filterwarnings("ignore:The ``compute`` method:UserWarning")

NAMED = ["ECE", "ACE", "TACE", "SCE", "RMSCE", "CCE", "MCE"]


@pytest.fixture(params=["engine", "torch-ops"])
def path(request, monkeypatch):
    monkeypatch.setattr(tables_module, "TORCH_OPS_ON_CPU", request.param == "torch-ops")
    return request.param


@pytest.fixture(scope="module")
def cifar():
    d = load_shared("netcal__densenet-bc-100-cifar-100.npz")
    return d["labels"][:2000], d["probs"][:2000]


def _feed(m, y, p, sizes=(700, 1, 599, 700), w=None):
    i = 0
    for n in sizes:
        sl = slice(i, i + n)
        kw = {} if w is None else {"sample_weight": torch.from_numpy(w[sl])}
        m.update(torch.from_numpy(p[sl]), torch.from_numpy(y[sl]), **kw)
        i += n
    assert i == y.shape[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_named_metrics_equal_calibkit_on_the_concatenated_arrays(cifar, dtype, path):
    y, p = cifar
    p = p.astype(dtype)
    m = CalibrationError(NAMED, num_bins=(10, 15), num_classes=100)
    ref = calibkit.evaluate(y, p, NAMED, num_bins=(10, 15))
    for _ in range(2):  # the second round after reset()
        _feed(m, y, p)
        got = m.compute()
        assert set(got) == {f"{n}@{b}" for n in NAMED for b in (10, 15)}
        for name in NAMED:
            for b in (10, 15):
                assert abs(float(got[f"{name}@{b}"]) - ref.get(name, b)) <= 1e-12
        np.testing.assert_allclose(m.evaluation().values, ref.values, rtol=0, atol=1e-12)
        m.reset()
        with pytest.raises(ShapeMismatchError, match="no predictions"):
            m.compute()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_engine_bits_for_any_batching(cifar, dtype, path):
    # Both paths' even parts are whole numbers (counts, the exact unit sums' halves, outcomes),
    # added exactly across batches; the adaptive tables come from every kept score at
    # compute().
    y, p = cifar
    p = p.astype(dtype)
    ref = calibkit.evaluate(y, p, NAMED, num_bins=(10, 15)).values
    rng = np.random.default_rng(5)
    for _ in range(3):
        cuts = np.sort(rng.choice(np.arange(1, y.shape[0]), size=int(rng.integers(1, 6)),
                                  replace=False))
        sizes = np.diff(np.concatenate(([0], cuts, [y.shape[0]])))
        m = CalibrationError(NAMED, num_bins=(10, 15), num_classes=100)
        _feed(m, y, p, sizes)
        np.testing.assert_array_equal(m.evaluation().values, ref)


def test_large_cells_add_exactly_across_batches(path):
    # Cells whose float sums round (sums above 8): batches' float tables would differ from one
    # call's in the last bits; the exact halves do not.
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.full(10, 0.3), 20_000)
    y = rng.integers(0, 10, 20_000)
    ref = calibkit.evaluate(y, p, ["ECE", "SCE", "CCE"], 15).values
    for _ in range(10):
        cuts = np.sort(rng.choice(np.arange(1, 20_000), size=7, replace=False))
        m = CalibrationError(["ECE", "SCE", "CCE"], num_classes=10)
        _feed(m, y, p, np.diff(np.concatenate(([0], cuts, [20_000]))))
        np.testing.assert_array_equal(m.evaluation().values, ref)


@pytest.mark.parametrize("name", ["ECE", "ACE", "TACE", "SCE", "RMSCE"])
def test_one_metric_gives_a_scalar_tensor(cifar, name, path):
    y, p = cifar
    m = CalibrationError(name, num_classes=100)
    _feed(m, y, p)
    v = m.compute()
    assert isinstance(v, torch.Tensor) and v.ndim == 0 and v.dtype == torch.float64
    assert abs(float(v) - calibkit.gce(y, p, **calibkit.space.MetricSpec.coerce(name).kwargs(),
                                       num_bins=15)) <= 1e-12


def test_the_paper_space_by_index(cifar, path):
    y, p = cifar
    space = calibkit.space.metric_space()
    m = CalibrationError(space, num_bins=[5, 20], num_classes=100)
    _feed(m, y, p)
    np.testing.assert_allclose(m.values(), calibkit.evaluate(y, p, space, (5, 20)).values,
                               rtol=0, atol=1e-12)


def test_sample_weights(cifar, path):
    y, p = cifar
    w = np.random.default_rng(0).uniform(0, 2, y.shape[0])
    w[::5] = 0.0
    m = CalibrationError(["ECE", "ACE", "RMSCE", "SCE"], num_classes=100)
    _feed(m, y, p, w=w)
    ref = calibkit.evaluate(y, p, ["ECE", "ACE", "RMSCE", "SCE"], 15, sample_weight=w)
    np.testing.assert_allclose(m.values()[:, 0], ref.values[:, 0], rtol=0, atol=1e-12)


def test_top_label_pairs(path):
    d = load_shared("hollance__ImageNet_torchvision__resnet101.npz")
    conf, pred, y = d["confidence"][:5000], d["pred"][:5000].astype(np.int64), d["labels"][:5000]
    ok = pred == y
    m = CalibrationError(["ECE", "RMSCE", "CCE"], num_classes=1000)
    for s in (slice(0, 2500), slice(2500, 5000)):
        m.update(confidence=torch.from_numpy(conf[s]), correct=torch.from_numpy(ok[s]),
                 predicted=torch.from_numpy(pred[s]))
    ref = calibkit.evaluate(confidence=conf, correct=ok, predicted=pred, num_classes=1000,
                            space=["ECE", "RMSCE", "CCE"], num_bins=15)
    np.testing.assert_allclose(m.values(), ref.values, rtol=0, atol=1e-12)
    with pytest.raises(TopLabelInputError):
        CalibrationError("ACE").update(confidence=torch.tensor([0.9]), correct=torch.tensor([1]))


def test_binary_probabilities(path):
    d = load_shared("label_errors__imdb.npz")
    y, p1 = d["labels"][:3000], d["probs"][:3000, 1]
    m = CalibrationError(["ECE", "ACE", "SCE"], num_classes=2)
    m.update(torch.from_numpy(p1), torch.from_numpy(y))
    np.testing.assert_allclose(m.values(), calibkit.evaluate(y, p1, ["ECE", "ACE", "SCE"], 15)
                               .values, rtol=0, atol=1e-12)


def test_forward_returns_the_batch_value_and_accumulates(cifar, path):
    y, p = cifar
    m = CalibrationError("ACE")
    first = m(torch.from_numpy(p[:1000]), torch.from_numpy(y[:1000]))
    assert abs(float(first) - calibkit.ace(y[:1000], p[:1000])) <= 1e-12
    m(torch.from_numpy(p[1000:]), torch.from_numpy(y[1000:]))
    assert abs(float(m.compute()) - calibkit.ace(y, p)) <= 1e-12


def test_the_protocol_without_torchmetrics(cifar, path):
    class Plain(CalibrationErrorCore, MetricProtocol):
        pass

    y, p = cifar
    m = Plain(["ECE", "TACE"], num_bins=15)
    first = m(torch.from_numpy(p[:1000]), torch.from_numpy(y[:1000]))
    assert abs(float(first["TACE"]) - calibkit.tace(y[:1000], p[:1000])) <= 1e-12
    m.update(torch.from_numpy(p[1000:]), torch.from_numpy(y[1000:]))
    np.testing.assert_allclose(m.values(), calibkit.evaluate(y, p, ["ECE", "TACE"], 15).values,
                               rtol=0, atol=1e-12)
    m.reset()
    with pytest.raises(ShapeMismatchError):
        m.compute()


def test_is_a_torchmetrics_metric_for_lightning():
    torchmetrics = requires("torchmetrics")
    m = CalibrationError("ECE")
    assert isinstance(m, torchmetrics.Metric)  # what Lightning's self.log(name, metric) takes
    coll = torchmetrics.MetricCollection({"ece": CalibrationError("ECE"),
                                          "ace": CalibrationError("ACE")})
    p = torch.softmax(torch.randn(50, 3, generator=torch.Generator().manual_seed(0)), 1)
    y = torch.arange(50) % 3
    out = coll(p, y)
    assert abs(float(out["ace"]) - calibkit.ace(y.numpy(), p.numpy())) <= 1e-12


# -- bad input ----------------------------------------------------------------------------------


def _batch(n=40, k=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(torch.randn(n, k, generator=g, dtype=dtype), 1), torch.arange(n) % k


def test_tensors_with_gradients_are_detached(path):
    p, y = _batch()
    logits = torch.log(p).requires_grad_()
    q = torch.softmax(logits, 1)
    m = CalibrationError(["ECE", "ACE"])
    m.update(q, y)
    assert abs(float(m.compute()["ECE"]) - calibkit.ece(y.numpy(), q.detach().numpy())) <= 1e-12
    # public functions (the device path under torch-ops: equal to 1e-12)
    assert abs(calibkit.ece(y, q) - calibkit.ece(y.numpy(), q.detach().numpy())) <= 1e-12


def test_non_contiguous_and_half_precision(path):
    p, y = _batch(60, 4)
    t = p.t().contiguous().t()  # a strided view
    assert not t.is_contiguous()
    m = CalibrationError(["ECE", "ACE"])
    m.update(t, y)
    ref = calibkit.evaluate(y.numpy(), p.numpy(), ["ECE", "ACE"], 15).values
    np.testing.assert_allclose(m.values(), ref, rtol=0, atol=1e-12)
    h = p.half()  # float16 is converted to float64, as calibkit converts it
    m = CalibrationError(["ECE", "ACE"])
    m.update(h, y)
    ref = calibkit.evaluate(y.numpy(), h.numpy(), ["ECE", "ACE"], 15).values
    np.testing.assert_allclose(m.values(), ref, rtol=0, atol=1e-12)
    with pytest.raises(InvalidProbabilitiesError, match="sums to"):  # bfloat16: 3 digits
        CalibrationError().update(torch.full((4, 3), 1 / 3).bfloat16() * 1.02, y[:4] % 3)


def test_mixed_devices_are_refused():
    p, y = _batch()
    with pytest.raises(InputTypeError, match="different devices"):
        CalibrationError().update(p, y.to("meta"))
    m = CalibrationError()
    m.update(p, y)
    with pytest.raises(InputTypeError, match="metric.to"):
        m.update(p.to("meta"), y.to("meta"))


@pytest.mark.parametrize("bad, err, match", [
    ("nan", InvalidProbabilitiesError, "NaN"),
    ("range", InvalidProbabilitiesError, "outside"),
    ("rowsum", InvalidProbabilitiesError, "sums to"),
    ("label", InvalidLabelsError, "label"),
    ("weight", InvalidParameterError, "sample_weight"),
])
def test_invalid_values_raise_the_engines_errors(bad, err, match, path):
    p, y = _batch()
    w = None
    if bad == "nan":
        p[3, 1] = float("nan")
    elif bad == "range":
        p[3] = torch.tensor([1.5, -0.25, -0.25], dtype=p.dtype)
    elif bad == "rowsum":
        p[3] *= 1.01
    elif bad == "label":
        y = y.clone()
        y[5] = 7
    else:
        w = torch.ones(40, dtype=torch.float64)
        w[2] = -1
    m = CalibrationError(["ECE", "ACE"])
    with pytest.raises(err, match=match):
        m.update(p, y, sample_weight=w)
    with pytest.raises(ShapeMismatchError):  # nothing was added
        m.compute()


def test_rows_at_the_sum_tolerance_are_decided_by_the_engine(path):
    p = torch.tensor([[0.5, 0.5 + 1e-3], [0.5, 0.5 + 1.5e-3]], dtype=torch.float64)
    m = CalibrationError()
    m.update(p[:1], torch.tensor([0]))  # |sum - 1| = 1e-3 (to rounding): the engine decides
    try:
        calibkit.ece([0], p[:1].numpy())
    except InvalidProbabilitiesError:  # pragma: no cover - depends on the rounding
        pytest.fail("the engine refused the row the metric accepted")
    with pytest.raises(InvalidProbabilitiesError):
        m.update(p[1:], torch.tensor([0]))


def test_structure_errors():
    p, y = _batch()
    with pytest.raises(ShapeMismatchError, match="target has 39"):
        CalibrationError().update(p, y[:39])
    with pytest.raises(InvalidParameterError, match="num_classes"):
        CalibrationError("CCE")
    m = CalibrationError(num_classes=3)
    with pytest.raises(ShapeMismatchError, match="num_classes=3"):
        m.update(torch.softmax(torch.randn(5, 4), 1), torch.zeros(5, dtype=torch.int64))
    m = CalibrationError("ACE")
    m.update(p, y)
    with pytest.raises(ShapeMismatchError, match="K=3"):
        m.update(torch.softmax(torch.randn(5, 4), 1), torch.zeros(5, dtype=torch.int64))
    with pytest.raises(InputTypeError, match="float32"):
        m.update(p.float(), y)
    with pytest.raises(InvalidParameterError, match="auto"):
        CalibrationError(num_bins="auto")
    with pytest.raises(InvalidParameterError):
        CalibrationError("no such metric")
    with pytest.raises(InvalidParameterError, match="not both"):
        CalibrationError().update(p, y, confidence=p[:, 0], correct=y == 0)


def test_a_used_metric_keeps_its_device_after_reset():
    p, y = _batch()
    m = CalibrationError()
    m.update(p, y)
    m.reset()
    with pytest.raises(InputTypeError, match="metric.to"):
        m(p.to("meta"), y.to("meta"))  # forward resets its batch state: still refused


class DLPackOnly:
    """An array that speaks only DLPack (as CuPy and JAX arrays do)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_numpy_and_dlpack_inputs(path):
    p, y = _batch(50, 4)
    want = calibkit.evaluate(y.numpy(), p.numpy(), ["ECE", "ACE"], 15).values
    for wrap in (lambda t: t.numpy(), lambda t: t.numpy().tolist(), lambda t: DLPackOnly(t)):
        m = CalibrationError(["ECE", "ACE"])
        m.update(wrap(p), wrap(y))
        np.testing.assert_allclose(m.values(), want, rtol=0, atol=1e-12)
    with pytest.raises(InputTypeError, match="preds must be"):
        CalibrationError().update("0.5", y)


@pytest.mark.parametrize("bad, err", [
    ("nan", InvalidProbabilitiesError),
    ("range", InvalidProbabilitiesError),
    ("correct", InvalidLabelsError),
    ("predicted", InvalidLabelsError),
])
def test_invalid_pairs_raise_the_engines_errors(bad, err, path):
    conf = torch.linspace(0.3, 1.0, 20, dtype=torch.float64)
    ok = torch.arange(20) % 2
    pred = torch.arange(20) % 3
    if bad == "nan":
        conf[4] = float("nan")
    elif bad == "range":
        conf[4] = 1.2
    elif bad == "correct":
        ok[4] = 2
    else:
        pred[4] = 3
    m = CalibrationError(["ECE", "RMSCE", "CCE"], num_classes=3)
    with pytest.raises(err):
        m.update(confidence=conf, correct=ok, predicted=pred)
    m.update(confidence=conf.clamp(0, 1).nan_to_num(0.5), correct=ok.clamp(0, 1),
             predicted=pred % 3)  # the fixed batch is accepted
    assert float(m.rows) == 20


def test_the_one_shot_evaluate(cifar, path):
    from calibkit.torch import evaluate

    y, p = cifar
    ev = evaluate(torch.from_numpy(p), torch.from_numpy(y), num_bins=(10, 15))
    ref = calibkit.evaluate(y, p, num_bins=(10, 15))
    assert ev.space == ref.space
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)
    conf, ok = p.max(1), p.argmax(1) == y
    ev = evaluate(confidence=torch.from_numpy(conf), correct=torch.from_numpy(ok))
    ref = calibkit.evaluate(confidence=conf, correct=ok)
    assert ev.space == ref.space
    np.testing.assert_allclose(ev.values, ref.values, rtol=0, atol=1e-12)


@pytest.mark.parametrize("base", ["torchmetrics", "protocol"])
def test_forward_with_a_bad_batch_keeps_the_state(base, path):
    class Plain(CalibrationErrorCore, MetricProtocol):
        pass

    p, y = _batch()
    m = (CalibrationError if base == "torchmetrics" else Plain)(["ECE", "ACE"])
    m.update(p, y)
    bad = p.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(InvalidProbabilitiesError):
        m(bad, y)
    np.testing.assert_allclose(m.values(), calibkit.evaluate(y.numpy(), p.numpy(),
                                                             ["ECE", "ACE"], 15).values,
                               rtol=0, atol=1e-12)
