"""calibkit.binary: the calibration of P(y = pos_label) as scikit-learn users hold it (issue 31).

References: the textbook binned formula (torchmetrics' binning: even edges
``np.linspace(0, 1, B + 1)``, left-closed bins, the last closed), torchmetrics where installed,
model-diagnostics' CORP decomposition, scikit-learn's ``calibration_curve`` and scorers.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from conftest import load_shared, requires

import calibkit
from calibkit import binary
from calibkit.errors import (
    CalibkitError,
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)


def textbook(y, p, num_bins, norm="l1", w=None):
    """Even bins of width 1/B, left-closed, the last closed; l1, max or (adaptive-free) l2."""
    y = np.asarray(y, dtype=float)
    p = np.asarray(p, dtype=float)
    w = np.ones_like(p) if w is None else np.asarray(w, dtype=float)
    edges = np.linspace(0, 1, num_bins + 1)
    idx = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, num_bins - 1)
    total, gaps = 0.0, []
    for b in range(num_bins):
        m = idx == b
        if w[m].sum() == 0:
            continue
        gap = abs(np.average(y[m], weights=w[m]) - np.average(p[m], weights=w[m]))
        total += w[m].sum() / w.sum() * gap
        gaps.append(gap)
    return max(gaps) if norm == "max" else total


@pytest.fixture(scope="module")
def forest():
    """A 25-tree random forest's P(y = 1) on make_classification: many exact 0s and 1s."""
    requires("sklearn")
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier

    X, y = make_classification(n_samples=4000, n_features=20, random_state=0)
    rf = RandomForestClassifier(n_estimators=25, random_state=0).fit(X[:2000], y[:2000])
    p = rf.predict_proba(X[2000:])[:, 1]
    assert (p == 0).mean() > 0.03 and (p == 1).mean() > 0.03  # the case this issue is about
    return y[2000:], p


@pytest.mark.parametrize("num_bins", [10, 15, 20])
def test_forest_equals_the_textbook_formula(forest, num_bins):
    y, p = forest
    assert binary.ece(y, p, num_bins=num_bins) == pytest.approx(textbook(y, p, num_bins),
                                                                  abs=1e-12)
    assert binary.mce(y, p, num_bins=num_bins) == pytest.approx(
        textbook(y, p, num_bins, "max"), abs=1e-12)


def test_forest_differs_from_the_top_label_reading(forest):
    # calibkit.ece(y, p) with 1-D p is the paper's top-label ECE of [1 - p, p], another metric
    y, p = forest
    assert abs(binary.ece(y, p) - calibkit.ece(y, p)) > 1e-4


def test_torchmetrics_binary_calibration_error(forest):
    # torchmetrics >= 1 bins left-closed like calibkit, 0.0 in bin 0, but gives a score of
    # exactly 1.0 a bin of its own (as the paper's code); calibkit.binary closes the last bin
    # (scikit-learn's calibration_curve, the textbook). Equal where no score is 1.0, and with
    # torchmetrics' own bin_boundaries= closing the last bin everywhere.
    tm = requires("torchmetrics.functional.classification")
    import torch
    from torchmetrics.functional.classification.calibration_error import _ce_compute

    y, p = forest
    below = p < 1
    for norm in ("l1", "max"):
        ours = binary.ece if norm == "l1" else binary.mce
        ref = tm.binary_calibration_error(torch.tensor(p[below], dtype=torch.float64),
                                          torch.tensor(y[below]), n_bins=15, norm=norm).item()
        assert ours(y[below], p[below]) == pytest.approx(ref, abs=1e-12)
        edges = torch.tensor(np.append(np.linspace(0, 1, 16)[:-1], np.nextafter(1.0, 2.0)))
        ref = _ce_compute(torch.tensor(p), torch.tensor(y, dtype=torch.float64), edges,
                          norm=norm).item()
        assert ours(y, p) == pytest.approx(ref, abs=1e-12)


def test_class_names_booleans_and_minus_one(forest):
    y, p = forest
    names = np.where(y == 1, "spam", "ham")
    pm = np.where(y == 1, 1, -1)
    for fn in (binary.ece, binary.mce, binary.rmsce, binary.adaptive_ece, binary.smece,
               binary.ksce):
        want = fn(y, p)
        assert fn(names, p, pos_label="spam") == want
        assert fn(names.astype(object), p, pos_label="spam") == want
        assert fn(y.astype(bool), p) == want
        assert fn(y.astype(object), p) == want  # 0/1 held as Python objects: still 0/1
        assert fn(y.astype(float), p) == want
        assert fn(pm, p) == want
        assert fn(y, p, pos_label=1) == want
        # the other class as positive: P(y = "ham") = 1 - p
        assert fn(names, 1 - p, pos_label="ham") == fn(1 - y, 1 - p)
    assert binary.decompose(names, p, pos_label="spam") == binary.decompose(y, p)


def test_pandas_series_and_columns(forest):
    pd = requires("pandas")
    y, p = forest
    df = pd.DataFrame({"y": np.where(y == 1, "yes", "no"), "p": p})
    assert binary.ece(df["y"], df["p"], pos_label="yes") == binary.ece(y, p)
    assert binary.ece(df[["y"]], df[["p"]], pos_label="yes") == binary.ece(y, p)
    assert binary.ece(df["y"].astype("category"), df["p"], pos_label="yes") == binary.ece(y, p)


@pytest.mark.parametrize("scoring", ["brier", "log"])
def test_decompose_equals_model_diagnostics(forest, scoring):
    md = requires("model_diagnostics.scoring")
    y, p = forest
    if scoring == "log":  # confidently wrong 0/1 forecasts: calibkit floors at 1e-15, md gives inf
        p = np.clip(p, 0.01, 0.99)
    fn = {"brier": md.SquaredError(), "log": md.LogLoss()}[scoring]
    ref = md.decompose(y.astype(float), p, scoring_function=fn).to_numpy()[0]
    d = binary.decompose(y, p, scoring=scoring)
    np.testing.assert_allclose([d.miscalibration, d.discrimination, d.uncertainty, d.score],
                               ref, rtol=0, atol=1e-9)


def test_decompose_equals_isotonic_corp(forest):
    sk_iso = requires("sklearn.isotonic")
    y, p = forest
    r = sk_iso.IsotonicRegression(y_min=0, y_max=1).fit(p, y).predict(p)
    mcb = np.mean((p - y) ** 2) - np.mean((r - y) ** 2)
    assert binary.decompose(y, p).miscalibration == pytest.approx(mcb, abs=1e-9)


def test_make_scorer_with_cross_val_score():
    requires("sklearn")
    from sklearn.datasets import make_classification
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import KFold, cross_val_score

    X, y = make_classification(n_samples=600, random_state=1)
    rf = RandomForestClassifier(n_estimators=10, random_state=0)
    cv = KFold(3)
    scorer = make_scorer(binary.ece, response_method="predict_proba", greater_is_better=False)
    scores = cross_val_score(rf, X, y, cv=cv, scoring=scorer)
    want = []
    for train, test in cv.split(X):
        p = rf.fit(X[train], y[train]).predict_proba(X[test])[:, 1]
        want.append(-binary.ece(y[test], p))
    np.testing.assert_allclose(scores, want, rtol=0, atol=1e-15)
    names = np.where(y == 1, "yes", "no")
    named = make_scorer(binary.ece, response_method="predict_proba", greater_is_better=False,
                        pos_label="yes")
    np.testing.assert_allclose(cross_val_score(rf, X, names, cv=cv, scoring=named), want,
                               rtol=0, atol=1e-15)
    for fn in (binary.mce, binary.rmsce, binary.smece, binary.ksce):
        s = make_scorer(fn, response_method="predict_proba", greater_is_better=False)
        assert np.all(np.isfinite(cross_val_score(rf, X, y, cv=cv, scoring=s)))


def test_real_binary_network():
    # P(positive review): a few exact 1.0, and scores above 1 by 1e-5 (within the tolerance,
    # binned in the last bin as the textbook formula's clip does)
    d = load_shared("label_errors__imdb.npz")
    y, p = d["labels"], d["probs"][:, 1]
    assert binary.ece(y, p) == pytest.approx(textbook(y, p, 15), abs=1e-12)


def test_weights_match_the_pair_form_and_repeated_rows(forest):
    y, p = forest
    w = np.random.default_rng(0).integers(0, 4, size=y.size)
    below = p < 1  # where the even tables of both forms are the same (no extra 1.0 bin)
    assert binary.ece(y[below], p[below], sample_weight=w[below]) == pytest.approx(
        calibkit.ece(confidence=p[below], correct=y[below], sample_weight=w[below]), abs=1e-12)
    for fn, eng in ((binary.rmsce, calibkit.rmsce), (binary.ksce, calibkit.ksce),
                    (binary.smece, calibkit.smece)):
        assert fn(y, p, sample_weight=w) == pytest.approx(
            eng(confidence=p, correct=y, sample_weight=w), abs=1e-12)
    rep = np.repeat(np.arange(y.size), w)
    for fn in (binary.ece, binary.mce, binary.rmsce, binary.adaptive_ece):
        assert fn(y, p, sample_weight=w) == pytest.approx(fn(y[rep], p[rep]), abs=1e-12)
    assert binary.ece(y, p, sample_weight=w) == pytest.approx(textbook(y, p, 15, w=w), abs=1e-12)


def test_tables_and_the_closed_last_bin():
    t = binary.calibration_bins([0, 1, 1, 1], [0.0, 0.6, 1.0, 1.0], num_bins=2)
    assert t.counts.tolist() == [[1, 3]]
    assert t.edges.tolist() == [[0.0, 0.5, 1.0]]
    # 0.6 is summed on the 2**-50 grid (docs/spec.md, "Cell sums"): 2.6 to within 2**-51.
    assert t.sum_score[0, 0] == 0.0 and t.sum_score[0, 1] == pytest.approx(2.6, abs=2**-51)
    a = binary.calibration_bins([0, 1, 1, 1], [0.0, 0.6, 1.0, 1.0], binning="adaptive",
                                num_bins=2)
    assert a.counts.sum() == 4  # adaptive bins keep the engine's table (no extra bin)


def test_calibration_curve_matches_scikit_learn():
    requires("sklearn")
    from sklearn.calibration import calibration_curve as sk_curve

    rng = np.random.default_rng(3)
    p = rng.uniform(size=3000)
    y = rng.uniform(size=3000) < p ** 1.3
    p[:50] = 0.0
    p[50:90] = 1.0
    for n_bins in (5, 10, 13):
        ours = binary.calibration_curve(y, p, n_bins=n_bins)
        ref = sk_curve(y, p, n_bins=n_bins)
        for a, b in zip(ours, ref):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    names = np.where(y, "yes", "no")
    for a, b in zip(binary.calibration_curve(names, p, pos_label="yes", strategy="quantile"),
                    binary.calibration_curve(y, p, strategy="quantile")):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(InvalidParameterError, match="strategy"):
        binary.calibration_curve(y, p, strategy="kmeans")


def test_ece_sweep_is_the_engines(forest):
    y, p = forest
    assert binary.ece_sweep(y, p) == calibkit.ece_sweep(confidence=p, correct=y)


def test_display(forest, tmp_path):
    requires("matplotlib")
    requires("sklearn")
    from sklearn.linear_model import LogisticRegression

    y, p = forest
    d = binary.CalibrationDisplay.from_predictions(y, p, n_bins=10, name="forest")
    assert d.figure_.axes[0].get_ylabel() == "accuracy"
    np.testing.assert_array_equal(d.prob_true, binary.calibration_curve(y, p, n_bins=10)[0])
    X = np.random.default_rng(0).normal(size=(300, 3))
    yy = np.where(X[:, 0] + 0.3 * X[:, 1] > 0, "b", "a")
    lr = LogisticRegression().fit(X, yy)
    d = binary.CalibrationDisplay.from_estimator(lr, X, yy, n_bins=5, path=tmp_path / "r.png")
    assert (tmp_path / "r.png").exists() and d.pos_label == "b"
    np.testing.assert_allclose(d.y_prob, lr.predict_proba(X)[:, 1])
    d = binary.CalibrationDisplay.from_estimator(lr, X, yy, pos_label="a", n_bins=5)
    np.testing.assert_allclose(d.y_prob, lr.predict_proba(X)[:, 0])
    with pytest.raises(InvalidParameterError, match="pos_label"):
        binary.CalibrationDisplay.from_estimator(lr, X, yy, pos_label="c")
    with pytest.raises(InvalidParameterError, match="predict_proba"):
        binary.CalibrationDisplay.from_estimator(object(), X, yy)


# -- bad input: one clear calibkit error each ------------------------------------------------------
@pytest.mark.parametrize("bad", [[0.2, 1.5], [-0.3, 0.5], [0.2, np.nan], [0.1, np.inf]])
def test_probabilities_outside_the_unit_interval(bad):
    with pytest.raises(InvalidProbabilitiesError, match="y_prob"):
        binary.ece([0, 1], bad)


def test_class_names_need_pos_label():
    with pytest.raises(InvalidLabelsError, match="holds the classes 'ham', 'spam', so pos_label is "
                                                 "needed .* e.g. pos_label='spam'"):
        binary.ece(["ham", "spam"], [0.2, 0.9])
    with pytest.raises(InvalidLabelsError, match="pos_label"):
        binary.ece([1, 2, 2], [0.2, 0.9, 0.8])  # {1, 2}: which one is positive?


def test_pos_label_not_in_the_labels():
    with pytest.raises(InvalidParameterError, match="pos_label='eggs' is not one of"):
        binary.ece(["ham", "spam"], [0.2, 0.9], pos_label="eggs")
    with pytest.raises(InvalidParameterError, match="pos_label=2"):
        binary.ece([0, 1], [0.2, 0.9], pos_label=2)
    # all negatives with 0/1 labels: pos_label 1 is still the positive class
    assert binary.ece([0, 0], [0.2, 0.0], num_bins=5) == pytest.approx(0.1, abs=1e-15)


def test_more_than_two_classes():
    with pytest.raises(InvalidLabelsError, match="3 classes"):
        binary.ece([0, 1, 2], [0.2, 0.9, 0.5])
    with pytest.raises(InvalidLabelsError, match="3 classes"):
        binary.ece(["a", "b", "c"], [0.2, 0.9, 0.5], pos_label="a")


def test_shapes_and_types():
    with pytest.raises(ShapeMismatchError, match=r"predict_proba\(X\)\[:, 1\]"):
        binary.ece([0, 1], [[0.8, 0.2], [0.1, 0.9]])
    with pytest.raises(ShapeMismatchError, match="2 samples but y_prob has 3"):
        binary.ece([0, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ShapeMismatchError, match="empty"):
        binary.ece([], [])
    with pytest.raises(InputTypeError, match="y_prob"):
        binary.ece([0, 1], ["a", "b"])
    with pytest.raises(InputTypeError, match="y_true"):
        binary.ece(None, [0.1, 0.2])
    with pytest.raises(InvalidLabelsError, match="NaN"):
        binary.ece([0.0, np.nan], [0.1, 0.2])
    with pytest.raises(CalibkitError):
        binary.ece([0, 1], [0.1, 0.2], num_bins=0)


# -- every public function refuses bad input with a CalibkitError only ------------------------------
BAD_PAIRS = [
    (["a", "b"], ["x", "y"]),
    ([0, 1, 0], [0.6, 0.4]),
    ([0, 1], [np.nan, 0.5]),
    ([0, 1], [0.2, 1.5]),
    ([0, 1, 2], [0.1, 0.2, 0.3]),
    (None, None),
    ([0, 1], np.full((2, 2, 2), 0.25)),
    (object(), object()),
]
BAD_VALUES = [object(), "not a number", -3, 1.5, np.nan, [1, "x"]]
FUNCTIONS = [(n, getattr(binary, n)) for n in binary.__all__
             if inspect.isfunction(getattr(binary, n))
             and next(iter(inspect.signature(getattr(binary, n)).parameters)) == "y_true"]


@pytest.mark.filterwarnings("ignore::calibkit.FewSamplesWarning")
@pytest.mark.parametrize("name,fn", FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_every_binary_function_raises_only_calibkit_errors(name, fn):
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, size=80)
    y = (rng.uniform(size=80) < p).astype(int)
    raised = 0
    for yt, yp in BAD_PAIRS:
        try:
            fn(yt, yp)
        except CalibkitError:
            raised += 1
        except Exception as exc:  # noqa: BLE001 - the point of the test
            pytest.fail(f"{name}(bad arrays) raised {type(exc).__name__}: {exc}")
    keywords = [k for k, v in inspect.signature(fn).parameters.items()
                if v.kind is v.KEYWORD_ONLY or (v.default is not v.empty and k != "y_prob")]
    for key in keywords:
        for bad in BAD_VALUES:
            kw = {key: bad}
            if "n_resamples" in inspect.signature(fn).parameters and key != "n_resamples":
                kw["n_resamples"] = 5
            try:
                fn(y, p, **kw)
            except CalibkitError:
                raised += 1
            except Exception as exc:  # noqa: BLE001
                pytest.fail(f"{name}({key}={bad!r}) raised {type(exc).__name__}: {exc}")
    assert raised >= len(BAD_PAIRS)


def test_scorer_helper():
    requires("sklearn")
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import cross_val_score

    X, y = make_classification(n_samples=300, random_state=0)
    names = np.where(y == 1, "yes", "no")
    lr = LogisticRegression()
    for metric in ("ece", "mce", "rmsce", "adaptive_ece", "smece", "ksce"):
        fn = getattr(binary, metric)
        want = cross_val_score(lr, X, y, cv=3, scoring=make_scorer(
            fn, response_method="predict_proba", greater_is_better=False, num_bins=10)
            if metric not in ("smece", "ksce") else make_scorer(
            fn, response_method="predict_proba", greater_is_better=False))
        kw = {} if metric in ("smece", "ksce") else {"num_bins": 10}
        got = cross_val_score(lr, X, names, cv=3,
                              scoring=binary.scorer(metric, pos_label="yes", **kw))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    with pytest.raises(InvalidParameterError, match="metric must be one of"):
        binary.scorer("brier")
