"""What the API accepts from a newcomer and the deep-learning stack (issue 13, builds 4 and 5).

Every expected value is computed independently: the same call on a plain NumPy array, a direct
NumPy formula, or scikit-learn.
"""

from __future__ import annotations

import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit import recalibration as R
from calibkit._validate import validate_inputs
from calibkit.errors import (
    CalibkitError,
    InputTypeError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

SRC = Path(calibkit.__file__).resolve().parents[1]


@pytest.fixture
def case():
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=300)
    labels = rng.integers(0, 4, size=300)
    return labels, probs


# ------------------------------------------------------------------ labels of shape (N, 1)


@pytest.mark.parametrize("k", [2, 4])
def test_column_labels_are_class_indices(k):
    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k), size=200)
    y = rng.integers(0, k, size=200)
    col = y[:, None]
    assert calibkit.ece(col, p) == calibkit.ece(y, p)
    assert calibkit.sce(col, p) == calibkit.sce(y, p)
    assert calibkit.ace(col.astype(np.float32), p) == calibkit.ace(y, p)
    np.testing.assert_array_equal(calibkit.evaluate(col, p).values, calibkit.evaluate(y, p).values)
    a = calibkit.calibration_bins(col, p, num_bins=5)
    b = calibkit.calibration_bins(y, p, num_bins=5)
    np.testing.assert_array_equal(a.counts, b.counts)
    acc = calibkit.Accumulator("ECE")
    acc.update(col, p)
    assert acc.compute() == pytest.approx(calibkit.ece(y, p), abs=1e-12)


# ------------------------------------------------------------------ swapped arguments


@pytest.mark.parametrize(
    "call",
    [
        lambda y, p: calibkit.ece(p, y),
        lambda y, p: calibkit.sce(p, y),
        lambda y, p: calibkit.evaluate(p, y),
        lambda y, p: calibkit.calibration_bins(p, y),
        lambda y, p: calibkit.ece(p, y.astype(np.float64)),
        lambda y, p: calibkit.ece(p.tolist(), y.tolist()),
    ],
)
def test_swapped_arguments_say_labels_come_first(case, call):
    y, p = case
    with pytest.raises(ShapeMismatchError, match="Labels come first") as info:
        call(y, p)
    assert "ece(labels, probs)" in str(info.value)
    assert "multilabel" not in str(info.value)


def test_binary_scores_as_labels_mention_the_order():
    p = np.array([0.2, 0.7, 0.9])
    with pytest.raises(CalibkitError, match="Labels come first"):
        calibkit.ece(p, np.array([0, 1, 1]))


def test_a_real_multilabel_matrix_is_still_multilabel():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(50, 3))
    y = (rng.uniform(size=(50, 3)) < p).astype(int)
    assert calibkit.sce(y, p) == pytest.approx(calibkit.multilabel.multilabel_gce(
        y, p, binning="even", max_prob=False, class_conditional=True, num_bins=15))


# ------------------------------------------------------------------ string labels


@pytest.mark.parametrize("names", [["cat", "dog"] * 50, np.array(["cat", "dog"] * 50, dtype=object)])
def test_string_labels_say_how_to_map_them(names):
    p = np.random.default_rng(0).dirichlet(np.ones(2), size=100)
    with pytest.raises(InputTypeError) as info:
        calibkit.ece(names, p)
    msg = str(info.value)
    assert "class names" in msg and "'cat'" in msg
    assert "numpy.unique(names, return_inverse=True)" in msg
    # the advice works: mapped labels are accepted
    classes, y = np.unique(np.asarray(names, dtype=str), return_inverse=True)
    assert list(classes) == ["cat", "dog"]
    calibkit.ece(y, p)


# ------------------------------------------------------------------ evaluate's default bins


def test_evaluate_default_bins_include_the_metric_default(case):
    y, p = case
    ev = calibkit.evaluate(y, p)
    assert 15 in ev.num_bins and set(ev.num_bins) >= {10, 20, 30, 40, 50}
    assert ev.get("ECE", 15) == calibkit.ece(y, p)  # ece's default num_bins is 15
    from calibkit.analysis.study import StudyConfig

    assert StudyConfig().num_bins == (10, 20, 30, 40, 50)  # the study keeps the paper's five


# ------------------------------------------------------------------ n_bins -> num_bins


@pytest.mark.parametrize(
    "cls", [R.HistogramBinning, R.ClassConditionalHistogramBinning, R.BootstrapHistogramBinning]
)
def test_num_bins_with_n_bins_deprecated(cls, case):
    y, p = case
    kw = {"random_state": 0} if cls is R.BootstrapHistogramBinning else {}
    new = cls(input="probs", num_bins=7, **kw).fit(p, y)
    with pytest.warns(DeprecationWarning, match="num_bins"):
        old = cls(input="probs", n_bins=7, **kw)
    np.testing.assert_array_equal(old.fit(p, y).predict_proba(p), new.predict_proba(p))
    default = cls(input="probs", **kw).fit(p, y)
    assert not np.array_equal(default.predict_proba(p), new.predict_proba(p))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls(input="probs", num_bins=7, **kw)  # the new name never warns


# ------------------------------------------------------------------ score and GridSearchCV


def _all_estimators():
    out = [R.TemperatureScaling(input="logits"), R.MetricTemperatureScaling(input="logits"),
           R.VectorScaling(input="logits"), R.MatrixScaling(input="logits"),
           R.NeuralNetworkScaling(input="logits", hidden_units=8, max_iter=60, random_state=0),
           R.HistogramBinning(input="logits"), R.ClassConditionalHistogramBinning(input="logits"),
           R.BootstrapHistogramBinning(input="logits", random_state=0),
           R.IsotonicRegression(input="logits")]
    return out


@pytest.fixture
def logits_case():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 600)
    z = 3.0 * (np.eye(3)[y] + rng.normal(size=(600, 3)))
    return z, y


@pytest.mark.filterwarnings("ignore::calibkit.recalibration.ConvergenceWarning")
@pytest.mark.parametrize("est", _all_estimators(), ids=lambda e: type(e).__name__)
def test_score_is_negative_log_loss(est, logits_case):
    metrics = requires("sklearn.metrics")
    z, y = logits_case
    est.fit(z[:400], y[:400])
    P = est.predict_proba(z[400:])
    direct = np.mean(np.log(np.maximum(P[np.arange(200), y[400:]], np.finfo(float).eps)))
    assert est.score(z[400:], y[400:]) == pytest.approx(direct, abs=1e-12)
    assert est.score(z[400:], y[400:]) == pytest.approx(
        -metrics.log_loss(y[400:], P, labels=[0, 1, 2]), abs=1e-9
    )


def test_score_before_fit_raises(logits_case):
    z, y = logits_case
    with pytest.raises(R.NotFittedError):
        R.TemperatureScaling(input="logits").score(z, y)


def test_plattscaling_score_binary():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    s = 2.0 * (y - 0.5) + rng.normal(size=300)
    est = R.PlattScaling(input="logits").fit(s, y)
    P = est.predict_proba(s)
    assert est.score(s, y) == pytest.approx(np.mean(np.log(P[np.arange(300), y])), abs=1e-12)


def test_grid_search_with_default_scoring(logits_case):
    requires("sklearn")
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

    z, y = logits_case
    gs = GridSearchCV(R.HistogramBinning(input="logits"), {"num_bins": [3, 10, 40]}, cv=KFold(3),
                      error_score="raise")
    gs.fit(z, y)
    # the winner is the bin count with the best mean held-out score (-log loss), recomputed here
    means = {}
    for b in (3, 10, 40):
        scores = []
        for tr, te in KFold(3).split(z):
            est = R.HistogramBinning(input="logits", num_bins=b).fit(z[tr], y[tr])
            P = est.predict_proba(z[te])
            scores.append(np.mean(np.log(np.maximum(P[np.arange(len(te)), y[te]], 2.2e-16))))
        means[b] = np.mean(scores)
    assert gs.best_params_["num_bins"] == max(means, key=means.get)
    assert gs.best_score_ == pytest.approx(means[gs.best_params_["num_bins"]], abs=1e-9)
    s = cross_val_score(R.TemperatureScaling(input="logits"), z, y, cv=KFold(3))
    assert s.shape == (3,) and np.all(s < 0)


# ------------------------------------------------------------------ import cost and hygiene


def test_recalibration_imports_no_scikit_learn():
    code = (
        "import sys, numpy as np\n"
        "import calibkit.recalibration as R\n"
        "assert 'sklearn' not in sys.modules, 'imported by import'\n"
        "rng = np.random.default_rng(0); y = rng.integers(0, 3, 300)\n"
        "z = 3 * (np.eye(3)[y] + rng.normal(size=(300, 3)))\n"
        "for cls in (R.TemperatureScaling, R.VectorScaling, R.HistogramBinning,\n"
        "            R.IsotonicRegression, R.MetricTemperatureScaling):\n"
        "    cls(input='logits').fit(z, y).score(z, y)\n"
        "assert 'sklearn' not in sys.modules, 'imported by fit'\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=SRC,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_no_stray_names_in_dir():
    public = {n for n in dir(calibkit) if not n.startswith("_")}
    submodules = {n for n in public if isinstance(getattr(calibkit, n), types.ModuleType)}
    stray = public - set(calibkit.__all__) - submodules
    assert not stray, f"names in dir(calibkit) that are neither exported nor submodules: {stray}"
    assert "annotations" not in dir(calibkit)


# ------------------------------------------------------------------ tolerance messages


def test_row_sum_message_states_the_accepted_interval():
    p = np.array([[0.499, 0.5]])  # "sums to 0.999", in float64 0.99899999999999999911...
    with pytest.raises(InvalidProbabilitiesError) as info:
        calibkit.ece([0], p)
    msg = str(info.value)
    assert "|sum - 1| <= 1e-3, i.e. sum in [1 - 1e-3, 1 + 1e-3], both ends inclusive" in msg
    total = float(p.sum())
    dev = abs(total - 1.0)
    assert dev > calibkit._validate.ROW_SUM_TOL  # why it is refused: float64 arithmetic
    assert f"sums to {total!r}," in msg and f"|sum - 1| = {dev!r})" in msg
    # a sum inside the stated interval is accepted
    calibkit.ece([0], np.array([[0.4995, 0.5]]))


def test_range_message_states_the_accepted_interval():
    with pytest.raises(InvalidProbabilitiesError) as info:
        calibkit.ece([0], np.array([[1.0002, -0.0002]]))
    assert "accepted in [-1e-4, 1 + 1e-4], both ends inclusive" in str(info.value)
    calibkit.ece([0], np.array([[1.00005, -0.00005]]))  # inside: accepted


# ------------------------------------------------------------------ tensors (fakes, no torch)


class ArrayOnly:
    """A CPU tensor that exposes ``__array__`` (as PyTorch and JAX do)."""

    def __init__(self, a):
        self._a = a
        self.device = types.SimpleNamespace(type="cpu")

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class DLPackOnly:
    """An array that speaks only DLPack."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class NumpyMethodOnly:
    """An eager tensor with only ``.numpy()`` (TensorFlow style)."""

    def __init__(self, a):
        self._a = a

    def numpy(self):
        return self._a


class CudaDLPack:
    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):  # pragma: no cover - must not be called
        raise AssertionError("read from the GPU")

    def __array__(self, *a, **k):  # pragma: no cover - must not be called
        raise AssertionError("read from the GPU")


class CudaTorchLike:
    device = types.SimpleNamespace(type="cuda", index=0)

    def __array__(self, *a, **k):  # pragma: no cover - must not be called
        raise AssertionError("read from the GPU")


class RequiresGrad:
    def __array__(self, *a, **k):
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                           "tensor.detach().numpy() instead.")


@pytest.mark.parametrize("wrap", [ArrayOnly, DLPackOnly, NumpyMethodOnly])
def test_cpu_tensors_are_accepted_without_a_copy(wrap, case):
    y, p = case
    y64 = np.ascontiguousarray(y, dtype=np.int64)
    yy, pp = validate_inputs(wrap(y64), wrap(p))
    assert np.shares_memory(pp, p) and np.shares_memory(yy, y64)
    assert calibkit.ece(wrap(y), wrap(p)) == calibkit.ece(y, p)
    assert calibkit.ace(wrap(y), wrap(p.astype(np.float32))) == calibkit.ace(y, p.astype(np.float32))
    np.testing.assert_array_equal(calibkit.evaluate(wrap(y), wrap(p)).values,
                                  calibkit.evaluate(y, p).values)


@pytest.mark.parametrize("tensor", [CudaDLPack(), CudaTorchLike()])
@pytest.mark.parametrize("where", ["probs", "labels"])
def test_gpu_tensors_are_refused_with_the_fix(tensor, where, case):
    y, p = case
    args = (y, tensor) if where == "probs" else (tensor, p)
    with pytest.raises(InputTypeError) as info:
        calibkit.ece(*args)
    msg = str(info.value)
    assert f"{where} is a tensor on the cuda device" in msg
    assert f"{where}.cpu()" in msg and "move it" in msg


def test_tensor_requiring_grad_gets_the_detach_hint(case):
    y, _ = case
    with pytest.raises(InputTypeError, match=r"probs\.detach\(\)"):
        calibkit.ece(y, RequiresGrad())


def _conversion_calls():
    """(argument name, call taking that argument, a valid value for it) for array arguments
    outside the metric entry points, each converted by ``_validate.as_array``."""
    from calibkit.analysis import error_vs_temperature
    from calibkit.binned.table import grouped_bin_stats

    rng = np.random.default_rng(3)
    z = rng.normal(size=(60, 3))
    y = (z + rng.normal(size=z.shape)).argmax(1)  # labels the logits predict, with noise
    first = lambda r: r[0] if isinstance(r, tuple) else r  # noqa: E731
    return [
        ("logits", lambda a: calibkit.softmax(a), z),
        ("logits", lambda a: calibkit.log_softmax(a), z),
        ("logits", lambda a: error_vs_temperature(y, a, [0.5, 2.0], metrics=("ECE",)).values, z),
        ("X", lambda a: R.TemperatureScaling(input="logits").fit(a, y).predict_proba(z), z),
        ("y", lambda a: R.TemperatureScaling(input="logits").fit(z, a).predict_proba(z), y),
        ("scores", lambda a: first(grouped_bin_stats(None, a, [0, 1, 1], num_bins=2)), [0.2, 0.5, 0.9]),
    ]


@pytest.mark.parametrize("i", range(6))
def test_every_array_argument_converts_the_same_way(i):
    # A tensor-like converts to what the plain array gives; None, strings, bytes and ragged
    # lists are InputTypeErrors that name the argument.
    name, call, good = _conversion_calls()[i]
    want = np.asarray(call(good))
    np.testing.assert_array_equal(np.asarray(call(NumpyMethodOnly(np.asarray(good)))), want)
    for bad in [None, "0.5", b"1", [[0.1, 0.2], [0.3]]]:
        with pytest.raises(InputTypeError, match=name):
            call(bad)
