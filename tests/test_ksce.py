"""KS calibration error against a direct NumPy formula (Gupta et al. 2021), ties included."""

from __future__ import annotations

import numpy as np
import pytest
from _binfree_data import HOLLANCE, REAL, SYNTH, real, synthetic, toplabel
from conftest import load_shared

import calibkit
from calibkit.errors import InputTypeError, InvalidParameterError, ShapeMismatchError


def ks_numpy(s, o, w=None):
    """max over tie-block ends of |cumsum w (s - o)| / sum w, by np.unique on the scores."""
    s = np.asarray(s, dtype=np.float64)
    o = np.asarray(o, dtype=np.float64)
    w = np.ones_like(s) if w is None else np.asarray(w, dtype=np.float64)
    u, inv = np.unique(s, return_inverse=True)
    per_value = np.bincount(inv, weights=w * (s - o), minlength=len(u))
    return np.abs(np.cumsum(per_value)).max() / w.sum()


@pytest.mark.parametrize("name", REAL)
def test_real_records(name):
    labels, probs = real(name)
    c, o = toplabel(labels, probs)
    assert calibkit.ksce(labels, probs) == pytest.approx(ks_numpy(c, o), abs=1e-12)


def test_hollance_confidence_pairs():
    d = load_shared(HOLLANCE)
    ok = d["pred"] == d["labels"]
    assert calibkit.ksce(confidence=d["confidence"], correct=ok) == pytest.approx(
        ks_numpy(d["confidence"], ok), abs=1e-12)


@pytest.mark.parametrize("kw", SYNTH)
def test_synthetic(kw):
    labels, probs = synthetic(**kw)
    c, o = toplabel(labels, probs)
    assert calibkit.ksce(labels, probs) == pytest.approx(ks_numpy(c, o), abs=1e-12)
    per_class = np.mean([ks_numpy(probs[:, k], labels == k) for k in range(probs.shape[1])])
    assert calibkit.ksce(labels, probs, max_prob=False) == pytest.approx(per_class, abs=1e-12)


def test_order_within_ties_is_irrelevant():
    rng = np.random.default_rng(0)
    c = np.round(rng.uniform(0.5, 1, 2000), 1)
    o = (rng.random(2000) < c).astype(float)
    base = calibkit.ksce(confidence=c, correct=o)
    for _ in range(3):
        perm = rng.permutation(2000)
        assert calibkit.ksce(confidence=c[perm], correct=o[perm]) == pytest.approx(base, abs=1e-12)
    # A tie of one right and one wrong prediction at 0.5 is perfectly calibrated.
    assert calibkit.ksce(confidence=[0.5, 0.5], correct=[0, 1]) == 0.0


def test_saturated_and_tiny_negative_scores():
    # Exact 0 and 1, and a value just below 0 (allowed by the 1e-4 tolerance): general path.
    s = np.array([0.0, 1.0, 1.0, -5e-5, 0.3])
    o = np.array([0.0, 1.0, 0.0, 0.0, 1.0])
    labels = o.astype(int)
    probs = np.stack([1 - s, s], axis=1)
    assert calibkit.ksce(labels, probs, max_prob=False) == pytest.approx(
        np.mean([ks_numpy(probs[:, k], labels == k) for k in range(2)]), abs=1e-12
    )


def test_weights():
    labels, probs = synthetic(4, n=700)
    w = np.random.default_rng(1).integers(0, 4, 700)
    rep = np.repeat(np.arange(700), w)
    assert calibkit.ksce(labels, probs, sample_weight=w) == pytest.approx(
        calibkit.ksce(labels[rep], probs[rep]), abs=1e-12)
    wf = np.random.default_rng(2).random(700)
    c, o = toplabel(labels, probs)
    assert calibkit.ksce(labels, probs, sample_weight=wf) == pytest.approx(ks_numpy(c, o, wf), abs=1e-12)
    assert calibkit.ksce(labels, probs, max_prob=False, sample_weight=wf) == pytest.approx(
        np.mean([ks_numpy(probs[:, k], labels == k, wf) for k in range(probs.shape[1])]), abs=1e-12
    )


def test_sample_weight_validation():
    labels, probs = synthetic(5, n=20)
    for bad, err in [
        (np.ones(19), ShapeMismatchError),
        (np.ones((20, 1)), ShapeMismatchError),
        (np.r_[np.ones(19), np.nan], InvalidParameterError),
        (np.r_[np.ones(19), -1.0], InvalidParameterError),
        (np.zeros(20), InvalidParameterError),
        (np.array(["a"] * 20), InputTypeError),
        ("abc", InputTypeError),
    ]:
        for f in (calibkit.ksce, calibkit.smece, calibkit.decompose):
            with pytest.raises(err):
                f(labels, probs, sample_weight=bad)


def test_binary_1d_probs_and_validation():
    p = np.array([0.2, 0.9, 0.6, 0.4])
    y = np.array([0, 1, 0, 1])
    c, o = toplabel(y, np.stack([1 - p, p], axis=1))
    assert calibkit.ksce(y, p) == pytest.approx(ks_numpy(c, o), abs=1e-12)
    with pytest.raises(calibkit.InvalidLabelsError):
        calibkit.ksce(np.array([0, 1, 2, 1]), p)
    with pytest.raises(calibkit.InvalidProbabilitiesError):
        calibkit.ksce(y, np.array([0.2, 0.9, 0.6, 1.4]))


def test_study_binning_free_tables_agree_with_scipy_spearman():
    from types import SimpleNamespace

    from scipy.stats import spearmanr

    from calibkit.analysis import binning_free_study_tables, binning_free_table
    from calibkit.space import metric_space

    labels, probs = synthetic(20, n=600, k=4)
    temps = [0.5, 0.8, 1.0, 1.5, 2.5]
    logp = np.log(probs)
    methods = [f"T={t}" for t in temps]
    pr = {}
    for t, m in zip(temps, methods):
        z = np.exp(logp / t)
        pr[m] = z / z.sum(axis=1, keepdims=True)
    space = metric_space()
    values = np.stack([calibkit.evaluate(labels, pr[m], num_bins=[15]).values[:, :1] for m in methods])
    ms = SimpleNamespace(name="fake", methods=methods, probs=pr, labels=labels, values=values, space=space,
                         report_bins=15, bin_column=lambda b: 0,
                         metric_labels=lambda: [str(s.index) for s in space])
    vals_t, corr_t = binning_free_study_tables(ms)
    sm = [calibkit.smece(labels, pr[m]) for m in methods]
    ks = [calibkit.ksce(labels, pr[m]) for m in methods]
    assert np.allclose([r[1] for r in vals_t.data], sm) and np.allclose([r[2] for r in vals_t.data], ks)
    for j, row in enumerate(corr_t.data):
        assert row[1] == pytest.approx(spearmanr(values[:, j, 0], sm)[0], abs=1e-12)
        assert row[2] == pytest.approx(spearmanr(values[:, j, 0], ks)[0], abs=1e-12)
    t = binning_free_table(labels, probs)
    assert t.cell("KS error", "value") == calibkit.ksce(labels, probs)


def test_pairs_go_through_the_shared_top_label_resolver():
    from calibkit.errors import TopLabelInputError

    labels, probs = synthetic(21, n=300)
    c, o = toplabel(labels, probs)
    c32 = probs.astype(np.float32).max(axis=1)
    ok32 = probs.astype(np.float32).argmax(axis=1) == labels
    assert calibkit.ksce(confidence=c32, correct=ok32) == pytest.approx(
        calibkit.ksce(labels, probs.astype(np.float32)), abs=1e-12)
    for f in (calibkit.ksce, calibkit.smece, calibkit.decompose):
        with pytest.raises(TopLabelInputError):
            f(confidence=c, correct=o, max_prob=False)
        with pytest.raises(calibkit.InvalidProbabilitiesError):
            f(confidence=np.r_[c[:-1], np.nan], correct=o)
        with pytest.raises(calibkit.InvalidLabelsError):
            f(confidence=c, correct=np.r_[o[:-1], 2.0])
        with pytest.raises(calibkit.InvalidParameterError):
            f(labels, probs, confidence=c, correct=o)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 0.9, 1.0]), st.booleans(), st.integers(0, 3)),
        min_size=1,
        max_size=60,
    )
)
def test_property_ties_weights_and_saturation(rows):
    c = np.array([r[0] for r in rows])
    o = np.array([float(r[1]) for r in rows])
    w = np.array([float(r[2]) for r in rows])
    assert calibkit.ksce(confidence=c, correct=o) == pytest.approx(ks_numpy(c, o), abs=1e-12)
    if w.sum() > 0:
        assert calibkit.ksce(confidence=c, correct=o, sample_weight=w) == pytest.approx(ks_numpy(c, o, w), abs=1e-12)
