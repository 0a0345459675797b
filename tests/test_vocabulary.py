"""One vocabulary: every keyword renamed in calibkit 0.2 keeps its old name for one release.

The new names: ``confidence_level=`` for the level of an interval or band (scipy's name;
``confidence=`` only ever means top-label confidences), ``random_state=`` for every seed
(scikit-learn's name), ``num_bins=`` for every bin count, ``CalibrationBins.signed_gap``
(``mean_confidence - accuracy``, the sign of ``signed_ece``). Each old name works with a
DeprecationWarning naming both names; giving the old and the new name of one keyword is an
InvalidParameterError naming both (``n_bins=5, num_bins=7`` would otherwise pick one
silently). The rule is written once, :func:`calibkit._params.renamed`.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit import _params
from calibkit.binned.bin_intervals import binomial_interval
from calibkit.errors import InvalidParameterError

RNG = np.random.default_rng(3)
P = RNG.uniform(0.5, 1.0, 400)
Y = (RNG.uniform(size=400) < P - 0.05).astype(int)
CONF, OK = P, Y.astype(bool)


def _no_warning(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


def _warns(call, old, new):
    with pytest.warns(DeprecationWarning) as record:
        out = call()
    text = " ".join(str(w.message) for w in record)
    assert f"{old}=" in text and f"{new}=" in text, text
    assert all(w.filename == __file__ for w in record), [w.filename for w in record]
    return out


# --- the one helper -----------------------------------------------------------------------


def test_renamed_moves_warns_and_refuses_both():
    kw = {"n_bins": 5}
    with pytest.warns(DeprecationWarning, match=r"f: n_bins= is deprecated since calibkit 0\.2.*"
                                                r"use num_bins="):
        assert _params.renamed(kw, "n_bins", "num_bins", where="f") is kw
    assert kw == {"num_bins": 5}
    assert _params.renamed({"num_bins": 7}, "n_bins", "num_bins") == {"num_bins": 7}
    with pytest.raises(InvalidParameterError, match=r"both n_bins= and num_bins= given"):
        _params.renamed({"n_bins": 5, "num_bins": 7}, "n_bins", "num_bins")


def test_renames_keeps_the_signature_of_the_new_names():
    @_params.renames(seed="random_state")
    def f(*, random_state=None):
        return random_state

    assert list(inspect.signature(f).parameters) == ["random_state"]
    assert f.__renamed__ == {"seed": "random_state"}
    assert _warns(lambda: f(seed=3), "seed", "random_state") == 3
    assert _no_warning(lambda: f(random_state=4)) == 4


# --- interval level: confidence_level ------------------------------------------------------


def test_binomial_interval_confidence_level():
    new = _no_warning(lambda: binomial_interval([3], [10], confidence_level=0.8))
    old = _warns(lambda: binomial_interval([3], [10], confidence=0.8), "confidence",
                 "confidence_level")
    np.testing.assert_array_equal(new, old)


def test_accuracy_interval_confidence_level():
    t = calibkit.calibration_bins(Y, P, num_bins=5)
    new = _no_warning(lambda: t.accuracy_interval("wilson", confidence_level=0.8))
    old = _warns(lambda: t.accuracy_interval("wilson", confidence=0.8), "confidence",
                 "confidence_level")
    np.testing.assert_array_equal(new, old)
    assert not np.array_equal(new, t.accuracy_interval("wilson"))  # the level was used


def test_confidence_interval_level_seed_and_top_label_names():
    kw = dict(num_bins=10, n_resamples=60)
    new = _no_warning(lambda: calibkit.confidence_interval(
        Y, P, confidence_level=0.8, random_state=5, **kw))
    assert new.confidence_level == 0.8
    old_level = _warns(lambda: calibkit.confidence_interval(Y, P, confidence=0.8, random_state=5,
                                                            **kw), "confidence", "confidence_level")
    old_seed = _warns(lambda: calibkit.confidence_interval(Y, P, confidence_level=0.8, seed=5,
                                                           **kw), "seed", "random_state")
    assert (old_level.low, old_level.high) == (new.low, new.high) == (old_seed.low, old_seed.high)
    # confidence= is the top-label input, as in gce; top_confidence= was its old name
    pairs = _no_warning(lambda: calibkit.confidence_interval(
        confidence=CONF, correct=OK, confidence_level=0.8, random_state=5, **kw))
    old_pairs = _warns(lambda: calibkit.confidence_interval(
        top_confidence=CONF, correct=OK, confidence_level=0.8, random_state=5, **kw),
        "top_confidence", "confidence")
    assert (pairs.low, pairs.high) == (old_pairs.low, old_pairs.high)
    assert pairs.value == calibkit.ece(confidence=CONF, correct=OK, num_bins=10)
    # a whole old call: top_confidence= plus the level as confidence= plus seed=
    with pytest.warns(DeprecationWarning):
        whole = calibkit.confidence_interval(top_confidence=CONF, correct=OK, confidence=0.8,
                                             seed=5, **kw)
    assert (whole.low, whole.high) == (pairs.low, pairs.high)


def test_confidence_interval_result_attribute():
    ci = calibkit.confidence_interval(Y, P, n_resamples=20, random_state=0)
    assert _no_warning(lambda: ci.confidence_level) == 0.9
    with pytest.warns(DeprecationWarning, match="confidence_level"):
        assert ci.confidence == 0.9


def test_calibration_test_random_state():
    new = _no_warning(lambda: calibkit.calibration_test(Y, P, n_resamples=30, random_state=2))
    old = _warns(lambda: calibkit.calibration_test(Y, P, n_resamples=30, seed=2), "seed",
                 "random_state")
    np.testing.assert_array_equal(new.resamples, old.resamples)


def test_plots_confidence_level_and_random_state():
    requires("matplotlib")
    from calibkit.plots import corp_reliability_diagram, reliability_diagram

    def bars(fig):
        return [c.get_label() for c in fig.axes[0].containers] + [
            t.get_text() for t in fig.axes[0].get_legend().get_texts()]

    new = _no_warning(lambda: reliability_diagram(Y, P, num_bins=5, confidence_level=0.8))
    old = _warns(lambda: reliability_diagram(Y, P, num_bins=5, interval_level=0.8),
                 "interval_level", "confidence_level")
    assert "80% interval (clopper-pearson)" in bars(new) and bars(new) == bars(old)

    def band(fig):
        return fig.axes[0].collections[0].get_paths()[0].vertices

    new = _no_warning(lambda: corp_reliability_diagram(Y, P, n_resamples=20,
                                                       confidence_level=0.8, random_state=4))
    old = _warns(lambda: corp_reliability_diagram(Y, P, n_resamples=20, level=0.8,
                                                  random_state=4), "level", "confidence_level")
    np.testing.assert_array_equal(band(new), band(old))
    old = _warns(lambda: corp_reliability_diagram(Y, P, n_resamples=20, confidence_level=0.8,
                                                  seed=4), "seed", "random_state")
    np.testing.assert_array_equal(band(new), band(old))


# --- seeds of the analysis: random_state ---------------------------------------------------


def test_analysis_seeds_are_random_state():
    from calibkit import analysis as A

    y = np.arange(200) % 10
    new = _no_warning(lambda: A.noisy_labels(y, 0.3, 10, random_state=4))
    old = _warns(lambda: A.noisy_labels(y, 0.3, 10, seed=4), "seed", "random_state")
    np.testing.assert_array_equal(new, old)
    cfg = _no_warning(lambda: A.StudyConfig(random_state=3))
    old_cfg = _warns(lambda: A.StudyConfig(seed=3), "seed", "random_state")
    assert cfg == old_cfg and cfg.to_dict()["random_state"] == 3
    with pytest.warns(DeprecationWarning, match="random_state"):
        assert cfg.seed == 3
    with pytest.warns(DeprecationWarning, match="random_state"):
        assert A.StudyConfig.quick_config(seed=2).random_state == 2
    d = _no_warning(lambda: A.load_digits_split(random_state=1))
    d_old = _warns(lambda: A.load_digits_split(seed=1), "seed", "random_state")
    np.testing.assert_array_equal(d.y_test, d_old.y_test)
    assert d.random_state == 1
    with pytest.warns(DeprecationWarning, match="random_state"):
        assert d.seed == 1
    m = _no_warning(lambda: A.default_models(random_state=1, models=["softmax-regression"],
                                             split=d))
    m_old = _warns(lambda: A.default_models(seed=1, models=["softmax-regression"], split=d),
                   "seed", "random_state")
    np.testing.assert_array_equal(m[0].test.scores, m_old[0].test.scores)


def test_label_noise_study_calls_train_with_random_state():
    from calibkit.analysis import label_noise_study

    seen = []

    class Model:
        classes_ = np.arange(3)

        def predict_proba(self, X):
            return np.full((len(X), 3), 1 / 3)

    def new_train(X, y, random_state=None):
        seen.append(("random_state", random_state))
        return Model()

    def old_train(X, y, seed=None):
        seen.append(("seed", seed))
        return Model()

    X, y = np.zeros((30, 2)), np.arange(30) % 3
    r = _no_warning(lambda: label_noise_study(X, y, X, y, levels=[0.0], train=new_train,
                                              random_state=7))
    assert r.settings["random_state"] == 7
    with pytest.warns(DeprecationWarning, match="random_state"):
        label_noise_study(X, y, X, y, levels=[0.0], train=old_train, random_state=7)
    assert seen == [("random_state", 7), ("seed", 7)]


# --- bin counts: num_bins, one default -----------------------------------------------------


@pytest.mark.parametrize("name", ["HistogramBinning", "ClassConditionalHistogramBinning",
                                  "BootstrapHistogramBinning"])
def test_histogram_binning_num_bins(name):
    from calibkit import recalibration as R

    cls = getattr(R, name)
    assert "n_bins" not in inspect.signature(cls).parameters
    assert inspect.signature(cls).parameters["num_bins"].default == 15  # one default everywhere
    est = _warns(lambda: cls(input="probs", n_bins=7), "n_bins", "num_bins")
    assert est.num_bins == 7 and est.get_params()["num_bins"] == 7
    est = _no_warning(lambda: cls(input="probs"))
    _warns(lambda: est.set_params(n_bins=9), "n_bins", "num_bins")
    assert est.num_bins == 9
    with pytest.raises(InvalidParameterError, match="both n_bins= and num_bins="):
        est.set_params(n_bins=5, num_bins=7)


def test_class_conditional_histogram_binning_default_and_the_study_count():
    from calibkit.recalibration import (
        PAPER_METHODS,
        STUDY_CC_HISTOGRAM_BINS,
        ClassConditionalHistogramBinning,
    )

    assert ClassConditionalHistogramBinning(input="probs").num_bins == 15
    assert STUDY_CC_HISTOGRAM_BINS == 5  # the study keeps its count, passed explicitly
    assert dict(PAPER_METHODS)["cc_histogram_binning"](input="probs").num_bins == 5


# --- one sign for gaps ---------------------------------------------------------------------


def test_signed_gap_is_confidence_minus_accuracy():
    t = calibkit.calibration_bins(Y, P, num_bins=5)
    gap = _no_warning(lambda: t.signed_gap)
    np.testing.assert_array_equal(gap, t.mean_confidence - t.accuracy)
    with pytest.warns(DeprecationWarning, match="signed_gap"):
        np.testing.assert_array_equal(t.gap, -gap)
    # the sign of signed_ece: over-confident data (accuracy = confidence - 0.05) is positive
    w = t.counts / t.counts.sum()
    assert calibkit.signed_ece(Y, P, num_bins=5) == pytest.approx(float(np.nansum(w * gap)))
    assert calibkit.signed_ece(Y, P, num_bins=5) > 0


def test_to_pandas_has_signed_gap():
    requires("pandas")
    t = calibkit.calibration_bins(Y, P, num_bins=5)
    df = _no_warning(t.to_pandas)
    assert "signed_gap" in df.columns and "gap" not in df.columns
    np.testing.assert_array_equal(df["signed_gap"].to_numpy(), t.signed_gap.ravel())


# --- conflicting keywords: every alias, both names given ------------------------------------

#: Where the public callables live that may accept an old keyword name.
MODULES = ["calibkit", "calibkit.binned.bin_intervals", "calibkit.recalibration",
           "calibkit.analysis", "calibkit.analysis.digits", "calibkit.analysis.report",
           "calibkit.analysis.trust_table", "calibkit.plots"]


def _aliased():
    """(name, callable, {old: new}) for every public function, class ``__init__`` and method
    that takes old keyword names (the ``__renamed__`` mark of :func:`calibkit._params.renames`
    and of ``confidence_interval``'s own wrapper)."""
    out, seen = [], set()
    for mod_name in MODULES:
        mod = importlib.import_module(mod_name)
        for name in dir(mod):
            if name.startswith("_"):
                continue
            obj = getattr(mod, name)
            targets = []
            if inspect.isclass(obj) and obj.__module__.startswith("calibkit"):
                targets.append((f"{obj.__name__}", obj, vars(obj).get("__init__")))
                targets += [(f"{obj.__name__}.{k}", v, v) for k, v in vars(obj).items()
                            if callable(v) and not k.startswith("_")]
            elif callable(obj):
                targets.append((name, obj, obj))
            for label, call, fn in targets:
                mark = getattr(fn, "__renamed__", None)
                if mark and id(fn) not in seen:
                    seen.add(id(fn))
                    out.append((label, call, mark))
    return out


ALIASED = _aliased()


def test_the_aliases_are_all_found():
    found = {(label, old) for label, _, mark in ALIASED for old in mark}
    expected = {
        ("confidence_interval", "confidence"), ("confidence_interval", "top_confidence"),
        ("confidence_interval", "seed"), ("calibration_test", "seed"),
        ("binomial_interval", "confidence"), ("CalibrationBins.accuracy_interval", "confidence"),
        ("HistogramBinning", "n_bins"), ("ClassConditionalHistogramBinning", "n_bins"),
        ("BootstrapHistogramBinning", "n_bins"), ("StudyConfig", "seed"), ("DigitsSplit", "seed"),
        ("load_digits_split", "seed"), ("default_models", "seed"), ("noisy_labels", "seed"),
        ("label_noise_study", "seed"), ("train_softmax_regression", "seed"),
        ("train_mlp", "seed"), ("interval_table", "seed"), ("named_metric_rows", "seed"),
        ("reliability_diagram", "interval_level"), ("corp_reliability_diagram", "level"),
        ("corp_reliability_diagram", "seed"),
    }
    assert expected <= found, expected - found


@pytest.mark.parametrize("label,call,mark", ALIASED, ids=[a[0] for a in ALIASED])
def test_old_and_new_name_together_is_an_error_naming_both(label, call, mark):
    for old, new in mark.items():
        # a number for an old level given as confidence=; arrays for the top-label confidences
        old_value, new_value = ((CONF, CONF) if old == "top_confidence" else (0.8, 0.7))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(InvalidParameterError) as info:
                call(**{old: old_value, new: new_value})
        assert f"{old}=" in str(info.value) and f"{new}=" in str(info.value), str(info.value)
