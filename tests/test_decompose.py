"""CORP decomposition against model-diagnostics 1.5.0 and a direct NumPy PAV."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from _binfree_data import REAL, SYNTH, real, synthetic, toplabel
from conftest import requires

import calibkit


def md(x, y, scoring, w=None):
    if sys.version_info < (3, 11):  # a platform skip, not a missing peer
        pytest.skip("model-diagnostics 1.5.0 needs Python >= 3.11")
    md_scoring = requires("model_diagnostics.scoring")  # a test peer (pyproject's test extra)
    scores = {"brier": md_scoring.SquaredError(), "log": md_scoring.LogLoss()}
    # calibkit clips forecasts to [0, 1] first (label_errors__imdb exceeds 1 by 1e-5).
    x = np.clip(x, 0, 1)
    return md_scoring.decompose(y, x, weights=w, scoring_function=scores[scoring]).to_numpy()[0]


def ours(d):
    return np.array([d.miscalibration, d.discrimination, d.uncertainty, d.score])


def pav_numpy(x, y, w):
    """Textbook PAV over the distinct values of x (ties pooled), pure NumPy + lists."""
    u, inv = np.unique(x, return_inverse=True)
    sw = np.bincount(inv, weights=w)
    swy = np.bincount(inv, weights=w * y)
    blocks = []  # [sum w y, sum w, number of distinct values]
    for a, b in zip(swy, sw):
        blocks.append([a, b, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            a2, b2, c2 = blocks.pop()
            blocks[-1][0] += a2
            blocks[-1][1] += b2
            blocks[-1][2] += c2
    fit = np.concatenate([np.full(c, a / b) for a, b, c in blocks])
    return fit[inv]


def corp_numpy(x, y, scoring, w=None):
    w = np.ones_like(x) if w is None else w
    keep = w > 0  # zero-weight rows change no weighted mean
    x, y, w = np.clip(x[keep], 0, 1), y[keep], w[keep]
    r = pav_numpy(x, y, w)
    m = np.average(y, weights=w)

    def s(p):
        if scoring == "brier":
            v = (p - y) ** 2
        else:
            v = -np.log(np.maximum(np.where(y == 1, p, 1 - p), 1e-15))
        return np.average(v, weights=w)

    return np.array([s(x) - s(r), s(m) - s(r), s(m), s(x)])


def check_identity(d):
    assert abs(d.score - (d.miscalibration - d.discrimination + d.uncertainty)) < 1e-12


@pytest.mark.parametrize("scoring", ["brier", "log"])
@pytest.mark.parametrize("name", REAL)
def test_real_records(name, scoring):
    labels, probs = real(name)
    c, o = toplabel(labels, probs)
    d = calibkit.decompose(labels, probs, scoring=scoring)
    check_identity(d)
    got = ours(d)
    assert np.all(np.isfinite(got))
    assert np.allclose(got, corp_numpy(c, o, scoring), atol=1e-10)
    want = md(c, o, scoring)
    fin = np.isfinite(want)
    assert np.allclose(got[fin], want[fin], atol=1e-9)


@pytest.mark.parametrize("scoring", ["brier", "log"])
@pytest.mark.parametrize("kw", SYNTH)
def test_synthetic(kw, scoring):
    labels, probs = synthetic(**kw)
    c, o = toplabel(labels, probs)
    d = calibkit.decompose(labels, probs, scoring=scoring)
    check_identity(d)
    assert np.allclose(ours(d), corp_numpy(c, o, scoring), atol=1e-10)
    want = md(c, o, scoring)
    fin = np.isfinite(want)
    assert np.allclose(ours(d)[fin], want[fin], atol=1e-9)
    # One-vs-rest, summed over classes.
    dk = calibkit.decompose(labels, probs, scoring=scoring, max_prob=False)
    check_identity(dk)
    k = probs.shape[1]
    want_k = sum(corp_numpy(probs[:, j], (labels == j).astype(float), scoring) for j in range(k))
    assert np.allclose(ours(dk), want_k, atol=1e-9)


def test_multiclass_brier_is_the_one_vs_rest_sum():
    labels, probs = synthetic(12, k=4)
    d = calibkit.decompose(labels, probs, max_prob=False)
    brier = np.mean(np.sum((probs - np.eye(4)[labels]) ** 2, axis=1))
    assert d.score == pytest.approx(brier, abs=1e-12)


def test_densenet_where_model_diagnostics_gives_nan():
    labels, probs = real("kangsepp__densenet40_c10.npz")
    c, o = toplabel(labels, probs)
    # model-diagnostics: NaN (sklearn's isotonic fit merges x values less than 1e-15 apart, so
    # confidences of exactly 1.0 fall outside its fitted range and predict NaN).
    assert np.isnan(md(c, o, "brier")[0])
    for scoring in ("brier", "log"):
        d = calibkit.decompose(labels, probs, scoring=scoring)
        assert np.all(np.isfinite(ours(d)))
        check_identity(d)
        assert d.miscalibration >= -1e-12 and d.discrimination >= -1e-12


def test_weights_against_model_diagnostics_and_repetition():
    labels, probs = synthetic(13, n=900)
    c, o = toplabel(labels, probs)
    w = np.random.default_rng(3).integers(0, 4, 900).astype(float)
    rep = np.repeat(np.arange(900), w.astype(int))
    for scoring in ("brier", "log"):
        d = ours(calibkit.decompose(labels, probs, scoring=scoring, sample_weight=w))
        assert np.allclose(d, ours(calibkit.decompose(labels[rep], probs[rep], scoring=scoring)), atol=1e-10)
        wf = np.random.default_rng(4).random(900) + 0.1
        d = ours(calibkit.decompose(labels, probs, scoring=scoring, sample_weight=wf))
        assert np.allclose(d, md(c, o, scoring, wf), atol=1e-9)
        assert np.allclose(d, corp_numpy(c, o, scoring, wf), atol=1e-10)


def test_confident_wrong_forecasts_stay_finite_with_the_log_score():
    c = np.array([1.0, 1.0, 0.0, 0.6, 0.6])
    o = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    d = calibkit.decompose(confidence=c, correct=o, scoring="log")
    assert np.all(np.isfinite(ours(d)))
    assert np.allclose(ours(d), corp_numpy(c, o, "log"), atol=1e-12)
    check_identity(d)


def test_parameters():
    labels, probs = synthetic(14, n=30)
    with pytest.raises(calibkit.InvalidParameterError):
        calibkit.decompose(labels, probs, scoring="crps")
    with pytest.raises(calibkit.InvalidParameterError):
        calibkit.decompose(confidence=[0.3], correct=[1], max_prob=False)
    with pytest.raises(calibkit.ShapeMismatchError):
        calibkit.decompose(confidence=[[0.3]], correct=[1])


def test_binning_free_summary():
    labels, probs = synthetic(15)
    r = calibkit.binning_free(labels, probs)
    assert r.smece == calibkit.smece(labels, probs)
    assert r.ksce == calibkit.ksce(labels, probs)
    assert r.corp == calibkit.decompose(labels, probs)
    assert set(r.as_dict()) >= {"smECE", "KS", "CORP miscalibration"}


def test_corp_reliability_diagram(tmp_path):
    requires("matplotlib")  # the plots extra; the estimators above do not need it
    from calibkit.plots import corp_reliability_diagram

    labels, probs = synthetic(16, n=800)
    c, o = toplabel(labels, probs)
    fig = corp_reliability_diagram(labels, probs, n_resamples=30, path=tmp_path / "corp.png")
    assert (tmp_path / "corp.png").stat().st_size > 0
    ax = fig.axes[0]
    curve = [ln for ln in ax.get_lines() if ln.get_label() == "CORP (isotonic) curve"][0]
    xs, ys = curve.get_data()
    order = np.argsort(c, kind="stable")
    assert np.allclose(xs, c[order]) and np.allclose(ys, pav_numpy(c, o, np.ones_like(c))[order])
    # Same seed, same band; the confidence band is another band.
    a, b = (corp_reliability_diagram(labels, probs, n_resamples=30, random_state=1)
            .axes[0].collections[0].get_paths()[0].vertices for _ in range(2))
    assert np.array_equal(a, b)
    for kw in ({"band": "wide"}, {"n_resamples": 0}, {"confidence_level": 1.0},
               {"max_prob": False}):
        with pytest.raises(calibkit.InvalidParameterError):
            corp_reliability_diagram(labels, probs, **kw)


def test_hollance_imagenet_pairs():
    from _binfree_data import HOLLANCE
    from conftest import load_shared

    d = load_shared(HOLLANCE)
    c, o = d["confidence"], (d["pred"] == d["labels"]).astype(float)
    for scoring in ("brier", "log"):
        got = ours(calibkit.decompose(confidence=c, correct=o, scoring=scoring))
        assert np.allclose(got, corp_numpy(c, o, scoring), atol=1e-10)
        want = md(c, o, scoring)
        fin = np.isfinite(want)
        assert np.allclose(got[fin], want[fin], atol=1e-9)


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.2, 0.2, 0.5, 0.7, 0.95, 1.0]), st.booleans(), st.integers(0, 3)),
        min_size=1,
        max_size=50,
    ),
    st.sampled_from(["brier", "log"]),
)
def test_property_against_numpy_pav(rows, scoring):
    c = np.array([r[0] for r in rows])
    o = np.array([float(r[1]) for r in rows])
    w = np.array([float(r[2]) for r in rows])
    d = calibkit.decompose(confidence=c, correct=o, scoring=scoring)
    check_identity(d)
    assert np.allclose(ours(d), corp_numpy(c, o, scoring), atol=1e-10)
    if w.sum() > 0:
        dw = calibkit.decompose(confidence=c, correct=o, scoring=scoring, sample_weight=w)
        check_identity(dw)
        assert np.allclose(ours(dw), corp_numpy(c, o, scoring, w), atol=1e-10)
