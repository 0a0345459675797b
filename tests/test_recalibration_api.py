"""calibkit.recalibration: the conventions every estimator shares, and its handling of bad input."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit import recalibration as R
from calibkit.errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

ALL = [
    R.TemperatureScaling,
    R.MetricTemperatureScaling,
    R.VectorScaling,
    R.MatrixScaling,
    R.HistogramBinning,
    R.ClassConditionalHistogramBinning,
    R.BootstrapHistogramBinning,
    R.IsotonicRegression,
    R.NeuralNetworkScaling,
]
MULTICLASS = ALL
SEEDED = {R.BootstrapHistogramBinning, R.NeuralNetworkScaling}
PER_CLASS = {
    R.VectorScaling,
    R.MatrixScaling,
    R.HistogramBinning,
    R.ClassConditionalHistogramBinning,
    R.BootstrapHistogramBinning,
    R.IsotonicRegression,
    R.NeuralNetworkScaling,
}
SRC = Path(R.__file__).resolve().parents[2]


def make(cls, input="logits", **kw):
    if cls in SEEDED:
        kw.setdefault("random_state", 0)
    if cls is R.NeuralNetworkScaling:
        kw.setdefault("hidden_units", 8)
        kw.setdefault("max_iter", 60)
    return cls(input=input, **kw)


def overconfident(n=600, k=4, seed=0, scale=4.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    return scale * z, y


@pytest.fixture(scope="module")
def data():
    return overconfident()


# ------------------------------------------------------------------ contract


def test_public_names_and_all():
    expected = {
        "TemperatureScaling",
        "MetricTemperatureScaling",
        "VectorScaling",
        "MatrixScaling",
        "HistogramBinning",
        "ClassConditionalHistogramBinning",
        "BootstrapHistogramBinning",
        "IsotonicRegression",
        "NeuralNetworkScaling",
        "PlattScaling",
        "PAPER_METHODS",
    }
    assert expected <= set(R.__all__)
    for name in R.__all__:
        assert hasattr(R, name)


def test_paper_methods_numbering_and_factories(data):
    z, _ = data
    names = [n for n, _ in R.PAPER_METHODS]
    assert names == [
        "cc_histogram_binning",
        "bootstrap_histogram_binning",
        "isotonic",
        "temperature",
        "ece_temperature",
        "vector",
        "matrix",
        "neural_network",
    ]
    kinds = [
        R.ClassConditionalHistogramBinning,
        R.BootstrapHistogramBinning,
        R.IsotonicRegression,
        R.TemperatureScaling,
        R.MetricTemperatureScaling,
        R.VectorScaling,
        R.MatrixScaling,
        R.NeuralNetworkScaling,
    ]
    p = calibkit.softmax(z)
    for (_name, factory), cls in zip(R.PAPER_METHODS, kinds):
        for kind, _x in (("logits", z), ("probs", p)):
            est = factory(input=kind, random_state=3)
            assert type(est) is cls and est.input == kind
            if cls in SEEDED:
                assert est.random_state == 3
        assert pickle.loads(pickle.dumps(factory)) is factory  # shippable to workers
    # the ECE-optimised method targets ECE by default
    ece_ts = dict(R.PAPER_METHODS)["ece_temperature"](input="logits")
    assert (ece_ts.binning, ece_ts.max_prob, ece_ts.class_conditional, ece_ts.norm) == (
        "even",
        True,
        False,
        "l1",
    )


def test_input_is_required():
    for cls in ALL + [R.PlattScaling]:
        with pytest.raises(TypeError, match="input"):
            cls()


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("kind", ["logits", "probs"])
def test_fit_predict_valid_rows(cls, kind, data):
    z, y = data
    x = z if kind == "logits" else calibkit.softmax(z)
    est = make(cls, kind)
    assert est.fit(x, y) is est
    p = est.predict_proba(x)
    assert p.shape == z.shape and p.dtype == np.float64
    assert np.all(np.isfinite(p)) and np.all(p >= 0) and np.all(p <= 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(est.transform(x), p)
    np.testing.assert_array_equal(est.predict(x), p.argmax(axis=1))
    assert est.n_classes_ == z.shape[1]
    np.testing.assert_array_equal(est.classes_, np.arange(z.shape[1]))


@pytest.mark.parametrize("cls", ALL)
def test_optimisers_report_convergence(cls, data):
    z, y = data
    est = make(cls).fit(z, y)
    optimised = cls not in {
        R.HistogramBinning,
        R.ClassConditionalHistogramBinning,
        R.BootstrapHistogramBinning,
        R.IsotonicRegression,
    }
    assert hasattr(est, "converged_") == optimised
    assert hasattr(est, "n_iter_") == optimised
    if optimised:
        assert isinstance(est.converged_, bool) and est.n_iter_ >= 1


@pytest.mark.parametrize("cls", ALL)
def test_deterministic_for_a_seed(cls, data):
    z, y = data
    a = make(cls).fit(z, y).predict_proba(z)
    b = make(cls).fit(z, y).predict_proba(z)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls", sorted(SEEDED, key=lambda c: c.__name__))
def test_seed_changes_the_randomised_methods(cls, data):
    z, y = data
    a = make(cls, random_state=0).fit(z, y).predict_proba(z)
    b = make(cls, random_state=1).fit(z, y).predict_proba(z)
    assert not np.array_equal(a, b)
    # a Generator and a RandomState are accepted too
    make(cls, random_state=np.random.default_rng(0)).fit(z, y)
    make(cls, random_state=np.random.RandomState(0)).fit(z, y)
    with pytest.raises(InvalidParameterError, match="random_state"):
        make(cls, random_state="seed").fit(z, y)


# ------------------------------------------------------------------ scikit-learn integration


@pytest.mark.parametrize("cls", ALL + [R.PlattScaling])
def test_get_set_params_and_clone(cls):
    sklearn_base = requires("sklearn.base")
    est = make(cls)
    params = est.get_params()
    assert params["input"] == "logits"
    est.set_params(input="probs")
    assert est.get_params()["input"] == "probs"
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(no_such_parameter=1)
    twin = sklearn_base.clone(est)
    assert type(twin) is cls and twin is not est
    assert twin.get_params() == est.get_params()
    assert "input='probs'" in repr(est)


def test_clone_drops_fitted_state(data):
    sklearn_base = requires("sklearn.base")
    z, y = data
    est = R.TemperatureScaling(input="logits").fit(z, y)
    twin = sklearn_base.clone(est)
    with pytest.raises(R.NotFittedError):
        twin.predict_proba(z)


def test_pipeline_and_grid_search(data):
    requires("sklearn")
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer

    z, y = data
    # recalibrators chained: temperature scaling feeds isotonic regression its probabilities
    pipe = Pipeline(
        [
            ("ts", R.TemperatureScaling(input="logits")),
            ("iso", R.IsotonicRegression(input="probs")),
        ]
    )
    p = pipe.fit(z, y).predict_proba(z)
    ts = R.TemperatureScaling(input="logits").fit(z, y)
    iso = R.IsotonicRegression(input="probs").fit(ts.predict_proba(z), y)
    np.testing.assert_allclose(p, iso.predict_proba(ts.predict_proba(z)), atol=1e-12)
    # a preprocessing step in front, and nested parameters
    pipe = Pipeline([("id", FunctionTransformer()), ("vs", R.VectorScaling(input="logits"))])
    pipe.set_params(vs__reg_bias=1.0)
    assert pipe.named_steps["vs"].reg_bias == 1.0
    pipe.fit(z, y)
    assert pipe.predict_proba(z).shape == z.shape
    # grid search over a hyperparameter with a probabilistic scorer
    gs = GridSearchCV(
        R.HistogramBinning(input="logits"),
        {"num_bins": [5, 10]},
        scoring="neg_log_loss",
        cv=KFold(3),
        error_score="raise",
    )
    gs.fit(z, y)
    assert gs.best_params_["num_bins"] in (5, 10)


def test_works_without_scikit_learn():
    """With sklearn unimportable the estimators carry their own get_params/set_params."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["sklearn"] = None  # make `import sklearn` fail
        import numpy as np
        from calibkit import recalibration as R
        est = R.VectorScaling(input="logits", reg_bias=0.5)
        assert est.get_params() == {"input": "logits", "max_iter": 100, "reg_bias": 0.5,
                                    "reg_weight": 1.0, "tol": 1e-10}
        assert est.set_params(reg_bias=2.0) is est and est.reg_bias == 2.0
        try:
            est.set_params(bogus=1)
        except ValueError as e:
            assert "Invalid parameter" in str(e)
        else:
            raise AssertionError("no error")
        twin = type(est)(**est.get_params(deep=False))
        assert twin.get_params() == est.get_params()
        assert repr(est).startswith("VectorScaling(")
        rng = np.random.default_rng(0)
        y = rng.integers(0, 3, 300)
        z = 3 * (np.eye(3)[y] + rng.normal(size=(300, 3)))
        p = est.fit(z, y).predict_proba(z)
        assert np.allclose(p.sum(1), 1)
        try:
            R.TemperatureScaling(input="logits").predict_proba(z)
        except ValueError as e:
            assert isinstance(e, AttributeError) and "not fitted" in str(e)
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=SRC,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("ok")


def test_fallback_params_mixin_is_clone_compatible():
    """The no-sklearn mixin on its own satisfies sklearn.base.clone's contract."""
    sklearn_base = requires("sklearn.base")
    from calibkit.recalibration._base import ParamsMixin

    class Toy(ParamsMixin):
        def __init__(self, *, input, alpha=1.0):
            self.input = input
            self.alpha = alpha

    toy = Toy(input="probs", alpha=2.0)
    assert toy.get_params() == {"alpha": 2.0, "input": "probs"}
    twin = sklearn_base.clone(toy)
    assert twin.get_params() == toy.get_params() and twin is not toy


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("cls", ALL)
def test_predict_before_fit(cls, data):
    z, _ = data
    with pytest.raises(R.NotFittedError, match="not fitted"):
        make(cls).predict_proba(z)


@pytest.mark.parametrize("cls", ALL)
def test_shape_mismatches(cls, data):
    z, y = data
    with pytest.raises(ShapeMismatchError, match="one label per row"):
        make(cls).fit(z, y[:-1])
    with pytest.raises(ShapeMismatchError, match="2-D"):
        make(cls).fit(z[None], y)
    with pytest.raises(ShapeMismatchError, match="empty"):
        make(cls).fit(z[:0], y[:0])
    with pytest.raises(ShapeMismatchError, match="1-D"):
        make(cls).fit(z, np.stack([y, y], axis=1))
    est = make(cls).fit(z, y)
    with pytest.raises(ShapeMismatchError, match="fitted with 4"):
        est.predict_proba(z[:, :3])


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores(cls, bad, data):
    z, y = data
    zb = z.copy()
    zb[5, 1] = bad
    with pytest.raises(InvalidProbabilitiesError, match="row 5"):
        make(cls).fit(zb, y)
    est = make(cls).fit(z, y)
    with pytest.raises(InvalidProbabilitiesError, match="NaN or infinite"):
        est.predict_proba(zb)


@pytest.mark.parametrize("cls", ALL)
def test_bad_labels(cls, data):
    z, y = data
    with pytest.raises(InvalidLabelsError, match=r"label 4 at row 3 is out of range: y must hold "
                                                 r"class indices in \[0, 4\)"):
        make(cls).fit(z, np.where(np.arange(y.size) == 3, 4, y))
    with pytest.raises(InvalidLabelsError, match="label -1 at row 3 is out of range"):
        make(cls).fit(z, np.where(np.arange(y.size) == 3, -1, y))
    with pytest.raises(InvalidLabelsError, match=r"\] is \d+\.5, not an integer"):
        make(cls).fit(z, y + 0.5)  # the plain value, not numpy's scalar repr
    with pytest.raises(InvalidLabelsError, match="NaN"):
        make(cls).fit(z, np.where(np.arange(y.size) == 0, np.nan, y))
    with pytest.raises(InputTypeError):
        make(cls).fit(z, y.astype(str))
    # integral floats are fine
    make(cls).fit(z, y.astype(float))


@pytest.mark.parametrize("cls", ALL)
def test_class_missing_from_fitting_labels(cls, data):
    z, y = data
    keep = y != 2
    if cls in PER_CLASS:
        with pytest.raises(InvalidLabelsError, match="never contains class"):
            make(cls).fit(z[keep], y[keep])
    else:  # one shared temperature: documented as allowed
        p = make(cls).fit(z[keep], y[keep]).predict_proba(z)
        assert np.all(np.isfinite(p))


@pytest.mark.parametrize("cls", ALL)
def test_probs_declared_as_logits_and_vice_versa(cls, data):
    z, y = data
    p = calibkit.softmax(z)
    with pytest.raises(InvalidParameterError, match="looks like probabilities"):
        make(cls, "logits").fit(p, y)
    with pytest.raises(InvalidProbabilitiesError, match="outside"):
        make(cls, "probs").fit(z, y)
    with pytest.raises(InvalidProbabilitiesError, match="sums to"):
        make(cls, "probs").fit(p * 0.5, y)
    with pytest.raises(InvalidParameterError, match="input"):
        make(cls, "log-probs").fit(z, y)
    est = make(cls, "logits").fit(z, y)
    with pytest.raises(InvalidParameterError, match="looks like probabilities"):
        est.predict_proba(p)


def test_probability_and_label_rules_are_the_metric_functions(data):
    """input='probs' is checked by the metric kernels' own pass (calibkit._validate.check_scores):
    a row the metrics refuse is refused, one they accept is accepted, at the edge of the row-sum
    tolerance too, with the message naming X; labels follow calibkit._validate.as_labels."""
    z, y = data
    p = calibkit.softmax(z[:2])
    for row, ok in (([0.499, 0.5], False), ([0.4995, 0.5], True)):  # |sum - 1| just over / at 1e-3
        q = np.vstack([np.array([row + [0.0, 0.0]]), p])
        ok_metric = True
        try:
            calibkit.ece([0, 0, 1], q)
        except InvalidProbabilitiesError:
            ok_metric = False
        assert ok_metric is ok
        est = R.TemperatureScaling(input="probs").fit(p, y[:2])
        if ok:
            est.predict_proba(q)
        else:
            with pytest.raises(InvalidProbabilitiesError, match=r"row 0 of X sums to .*X was "
                                                                r"declared as probabilities"):
                est.predict_proba(q)
    with pytest.raises(InvalidProbabilitiesError, match=r"X\[0, 0\] is -0\.5, outside \[0, 1\]"):
        R.TemperatureScaling(input="probs").fit(np.array([[-0.5, 1.5], [0.5, 0.5]]), [0, 1])
    # an (N, 1) column of labels is the labels, as everywhere in calibkit
    a = R.TemperatureScaling(input="logits").fit(z, y[:, None]).temperature_
    assert a == R.TemperatureScaling(input="logits").fit(z, y).temperature_


def test_non_numeric_input(data):
    _, y = data
    for x in ("abc", None, np.array([["a", "b"]] * 3), [[1, 2], [3]]):
        with pytest.raises(InputTypeError):
            R.TemperatureScaling(input="logits").fit(x, y[:3])


@pytest.mark.parametrize("cls", ALL)
def test_single_column_is_binary(cls):
    """An (N, 1) or (N,) X is a binary score (calibkit's convention), never a K=1 problem."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 400)
    s = 4.0 * (y - 0.5 + rng.normal(size=400))
    for x in (s, s[:, None]):
        p = make(cls).fit(x, y).predict_proba(x)
        assert p.shape == (400, 2)
    q = 1.0 / (1.0 + np.exp(-s))
    assert make(cls, "probs").fit(q, y).predict_proba(q[:, None]).shape == (400, 2)
    # a genuinely one-class fitting set has class 1 (or 0) missing: a clear error or, for the
    # shared-temperature methods, a valid fit
    ones = np.zeros(400, dtype=int)
    if cls in PER_CLASS:
        with pytest.raises(InvalidLabelsError, match="never contains class"):
            make(cls).fit(s, ones)
    with pytest.raises(InvalidLabelsError):
        make(cls).fit(s, ones + 2)


@pytest.mark.parametrize(
    "cls, kw, match",
    [
        (R.TemperatureScaling, {"temperature_range": (2.0, 5.0)}, "T = 1 must be inside"),
        (R.TemperatureScaling, {"temperature_range": 3.0}, "pair"),
        (R.TemperatureScaling, {"max_iter": 0}, "max_iter"),
        (R.MetricTemperatureScaling, {"norm": "l3"}, "norm"),
        (R.MetricTemperatureScaling, {"binning": "quantile"}, "binning"),
        (R.MetricTemperatureScaling, {"num_bins": 0}, "num_bins"),
        (R.MetricTemperatureScaling, {"threshold": 1.5}, "threshold"),
        (R.MetricTemperatureScaling, {"max_prob": "yes"}, "max_prob"),
        (R.MetricTemperatureScaling, {"n_starts": 0}, "n_starts"),
        (R.VectorScaling, {"reg_bias": -1.0}, "reg_bias"),
        (R.VectorScaling, {"tol": 0.0}, "tol"),
        (R.MatrixScaling, {"reg_off_diagonal": np.nan}, "reg_off_diagonal"),
        (R.HistogramBinning, {"num_bins": 0}, "num_bins"),
        (R.HistogramBinning, {"binning": "quantile"}, "binning"),
        (R.HistogramBinning, {"multiclass": "ovo"}, "multiclass"),
        (R.ClassConditionalHistogramBinning, {"min_samples_per_class": 0}, "min_samples"),
        (R.BootstrapHistogramBinning, {"n_estimators": 0}, "n_estimators"),
        (R.NeuralNetworkScaling, {"activation": "sigmoid"}, "activation"),
        (R.NeuralNetworkScaling, {"validation_fraction": 1.0}, "validation_fraction"),
        (R.NeuralNetworkScaling, {"hidden_units": 0}, "hidden_units"),
    ],
)
def test_bad_parameters_named_at_fit(cls, kw, match, data):
    z, y = data
    est = make(cls, **kw)  # the constructor only stores (scikit-learn convention)
    with pytest.raises(InvalidParameterError, match=match):
        est.fit(z, y)


@pytest.mark.parametrize(
    "cls", [R.HistogramBinning, R.ClassConditionalHistogramBinning, R.BootstrapHistogramBinning]
)
def test_too_few_rows_for_the_bins(cls):
    z, y = overconfident(n=12, k=2, seed=4)
    with pytest.raises(InvalidParameterError, match="fewer than num_bins=15"):
        make(cls, num_bins=15).fit(z, y)
    make(cls, num_bins=12).fit(z, y)  # N == num_bins is enough


@pytest.mark.filterwarnings("ignore::calibkit.recalibration.ConvergenceWarning")
def test_network_needs_rows_for_early_stopping():
    z, y = overconfident(n=4, k=2, seed=0)
    y = np.array([0, 1, 0, 1])
    with pytest.raises(InvalidParameterError, match="early_stopping=False"):
        R.NeuralNetworkScaling(input="logits", validation_fraction=0.1, random_state=0).fit(z, y)
    p = (
        R.NeuralNetworkScaling(input="logits", early_stopping=False, random_state=0, max_iter=20)
        .fit(z, y)
        .predict_proba(z)
    )
    assert np.all(np.isfinite(p))


def test_probability_tolerances(data):
    """Probabilities within calibkit's tolerances are accepted and renormalised."""
    z, y = data
    p = calibkit.softmax(z)
    q = p * (1 + 5e-5)  # rows sum to 1.00005, entries reach 1.00005 (within 1e-4)
    a = R.IsotonicRegression(input="probs").fit(q, y).predict_proba(q)
    b = R.IsotonicRegression(input="probs").fit(p, y).predict_proba(p)
    np.testing.assert_allclose(a, b, atol=1e-9)
    # exact zeros are fine for the logit-space methods (floored log)
    p0 = p.copy()
    p0[p0 < 1e-3] = 0.0
    p0 /= p0.sum(1, keepdims=True)
    out = R.VectorScaling(input="probs").fit(p0, y).predict_proba(p0)
    assert np.all(np.isfinite(out))
