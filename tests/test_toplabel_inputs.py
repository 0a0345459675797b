"""Top-label input (``confidence=``, ``correct=``, ``predicted=``, ``num_classes=``).

Checked against two independent computations: the matrix form (a probability matrix whose row
maxima / first argmaxes are the given confidences / predictions, through calibkit's matrix
path) and direct NumPy formulas written here. Data: synthetic (hypothesis, with ties, exact 1.0
and thresholds equal to a confidence) and the 14 ImageNet model-zoo records of the shared data.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_DATA, load_shared, requires
from hypothesis import given
from hypothesis import strategies as st
from test_api_inputs import NumpyMethodOnly

import calibkit
from calibkit._params import MAX_TABLE_CELLS
from calibkit.errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
    TopLabelInputError,
)
from calibkit.scale.streaming import Accumulator
from calibkit.space import metric_space

TOP_SPACE = metric_space(norms=("l1", "l2", "max")).select(max_prob=True)
ZOO = sorted(p.name for p in SHARED_DATA.glob("hollance__*.npz")) if SHARED_DATA.exists() else []


def pairs_of(labels, probs):
    """The top-label pairs calibkit derives from a matrix (argmax = lowest tied index)."""
    probs = np.asarray(probs)
    pred = probs.argmax(axis=1)
    conf = probs[np.arange(len(pred)), pred]
    return dict(confidence=conf, correct=pred == np.asarray(labels), predicted=pred,
                num_classes=probs.shape[1])


def matrix_of(confidence, predicted, correct, num_classes, dtype=np.float64):
    """A matrix with these row maxima at these columns (the rest spread evenly below) and labels
    that make ``correct`` true: the label is the prediction, or the next class."""
    c = np.asarray(confidence, dtype=dtype)
    rest = ((1 - c.astype(np.float64)) / (num_classes - 1)).astype(dtype)
    m = np.repeat(rest[:, None], num_classes, axis=1)
    rows = np.arange(len(c))
    m[rows, predicted] = c
    labels = np.where(correct, predicted, (np.asarray(predicted) + 1) % num_classes)
    return labels, m


# ------------------------------------------------------------------------------------------------
# Direct NumPy computations (independent of calibkit's code)
# ------------------------------------------------------------------------------------------------


def _bin_table(scores, outcomes, groups, num_groups, binning, num_bins, threshold):
    s = np.asarray(scores, dtype=np.float64)
    o = np.asarray(outcomes, dtype=np.float64)
    # the pair form's rule: > threshold, and every pair at threshold 0 (an exact 0.0 is kept;
    # before issue 31 it was dropped as in the matrix form, where no top label is 0)
    keep = s > threshold if threshold > 0 else np.ones(s.size, dtype=bool)
    s, o, groups = s[keep], o[keep], np.asarray(groups)[keep]
    nb = num_bins + 1 if binning == "even" else num_bins
    count = np.zeros((num_groups, nb))
    ss = np.zeros((num_groups, nb))
    so = np.zeros((num_groups, nb))
    for g in range(num_groups):
        sg, og = s[groups == g], o[groups == g]
        if sg.size == 0:
            continue
        if binning == "even":
            edges = np.linspace(0, 1, num_bins + 1)[1:]
        else:
            srt = np.sort(sg)
            pos = np.minimum(np.round(np.arange(1, num_bins) * (sg.size / num_bins)), sg.size - 1)
            edges = srt[pos.astype(int)]
        b = np.searchsorted(edges, sg, side="right")  # how many upper edges are <= s
        count[g] = np.bincount(b, minlength=nb)
        ss[g] = np.bincount(b, weights=sg, minlength=nb)
        so[g] = np.bincount(b, weights=og, minlength=nb)
    return count, ss, so


def numpy_gce(conf, correct, *, predicted=None, num_classes=1, binning="even", max_prob=True,
              class_conditional=False, threshold=0.0, norm="l1", num_bins=15):
    groups = np.asarray(predicted) if class_conditional else np.zeros(len(conf), int)
    g_count = num_classes if class_conditional else 1
    c, ss, so = _bin_table(conf, correct, groups, g_count, binning, num_bins, threshold)
    errs = []
    for g in range(g_count):
        n = c[g].sum()
        nz = c[g] > 0
        if n == 0:
            errs.append(0.0)
            continue
        gap = so[g][nz] / c[g][nz] - ss[g][nz] / c[g][nz]
        w = c[g][nz] / n
        errs.append({"l1": np.sum(w * np.abs(gap)), "l2": np.sum(w * gap**2),
                     "max": np.max(np.abs(gap))}[norm])
    v = np.mean(errs) if class_conditional else errs[0]
    return float(np.sqrt(v) if norm == "l2" else v)


# ------------------------------------------------------------------------------------------------
# Synthetic data: matrix form == pairs, for every top-label metric
# ------------------------------------------------------------------------------------------------


@st.composite
def tied_matrices(draw):
    """Small matrices built from a coarse grid of weights: ties and exact 1.0 are common."""
    k = draw(st.integers(2, 6))
    n = draw(st.integers(1, 40))
    w = np.array(draw(st.lists(st.lists(st.integers(0, 3), min_size=k, max_size=k),
                               min_size=n, max_size=n)), dtype=np.float64)
    w[w.sum(axis=1) == 0, 0] = 1.0
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    probs = (w / w.sum(axis=1, keepdims=True)).astype(dtype)
    labels = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return labels, probs


@given(data=tied_matrices(), spec_i=st.integers(0, len(TOP_SPACE) - 1),
       num_bins=st.integers(1, 8), thr_mode=st.sampled_from(["space", "at_confidence", "0.5"]))
def test_pairs_equal_matrix_form_with_ties_and_exact_one(data, spec_i, num_bins, thr_mode):
    labels, probs = data
    spec = TOP_SPACE[spec_i]
    kw = spec.kwargs()
    pairs = pairs_of(labels, probs)
    conf = pairs["confidence"]
    if thr_mode == "at_confidence" and conf[0] < 1:
        kw["threshold"] = float(conf[0])  # strict: this confidence itself is dropped
    elif thr_mode == "0.5":
        kw["threshold"] = 0.5
    assert pairs["confidence"].dtype == probs.dtype
    want = calibkit.gce(labels, probs, **kw, num_bins=num_bins)
    got = calibkit.gce(**pairs, **kw, num_bins=num_bins)
    assert abs(got - want) <= 1e-12
    assert abs(got - numpy_gce(**_np_args(pairs), **kw, num_bins=num_bins)) <= 1e-12
    t_m = calibkit.calibration_bins(labels, probs, **_no_norm(kw), num_bins=num_bins)
    t_p = calibkit.calibration_bins(**pairs, **_no_norm(kw), num_bins=num_bins)
    np.testing.assert_array_equal(t_p.counts, t_m.counts)
    np.testing.assert_allclose(t_p.sum_score, t_m.sum_score, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(t_p.sum_outcome, t_m.sum_outcome)
    np.testing.assert_array_equal(t_p.edges, t_m.edges)
    if not spec.class_conditional:  # pooled metrics need only confidence and correct
        got2 = calibkit.gce(confidence=conf, correct=pairs["correct"], **kw, num_bins=num_bins)
        assert got2 == got


def _np_args(pairs):
    return dict(conf=pairs["confidence"], correct=pairs["correct"],
                predicted=pairs["predicted"], num_classes=pairs["num_classes"])


def _no_norm(kw):
    return {k: v for k, v in kw.items() if k != "norm"}


@given(data=tied_matrices(), num_bins=st.integers(1, 6))
def test_named_metrics_and_evaluate_equal_matrix_form(data, num_bins):
    labels, probs = data
    pairs = pairs_of(labels, probs)
    for f in (calibkit.ece, calibkit.cce, calibkit.rmsce, calibkit.mce):
        assert abs(f(**pairs, num_bins=num_bins) - f(labels, probs, num_bins=num_bins)) <= 1e-12
    bins = (num_bins, num_bins + 3)
    ev_m = calibkit.evaluate(labels, probs, space=TOP_SPACE, num_bins=bins)
    ev_p = calibkit.evaluate(**pairs, space=TOP_SPACE, num_bins=bins)
    np.testing.assert_allclose(ev_p.values, ev_m.values, rtol=0, atol=1e-12)


def test_binary_probs_are_max_p_one_minus_p():
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        p = rng.random(500).astype(dtype)
        p[:5] = [0.5, 1.0, 0.0, 0.25, 0.75]
        y = rng.integers(0, 2, 500)
        one_minus = (1 - p).astype(dtype)  # as calibkit expands [1 - p, p] in the dtype
        conf = np.maximum(one_minus, p)
        pred = (p > one_minus).astype(int)  # a tie (0.5) predicts class 0
        for f in (calibkit.ece, calibkit.cce, calibkit.rmsce, calibkit.mce):
            want = f(y, p, num_bins=10)
            got = f(confidence=conf, correct=pred == y, predicted=pred, num_classes=2, num_bins=10)
            assert abs(got - want) <= 1e-12
        # the wrong way the issue warns about: confidences as binary P(y=1)
        assert calibkit.ece(confidence=conf, correct=pred == y) != pytest.approx(
            calibkit.ece(pred == y, conf), abs=1e-6)


def test_exact_one_gets_its_own_even_bin_and_threshold_is_strict():
    conf = np.array([1.0, 1.0, 0.95, 0.3, 0.3])
    ok = np.array([1, 0, 1, 0, 1])
    t = calibkit.calibration_bins(confidence=conf, correct=ok, num_bins=10)
    assert t.counts[0, 10] == 2 and t.counts[0, 9] == 1
    t = calibkit.calibration_bins(confidence=conf, correct=ok, num_bins=10, threshold=0.3)
    assert t.counts.sum() == 3  # the two 0.3 are dropped: kept only if > threshold
    # a confidence just above 1 within the tolerance is accepted and lands in the extra bin
    t = calibkit.calibration_bins(confidence=[1 + 5e-5, 0.5], correct=[1, 0], num_bins=4)
    assert t.counts[0, 4] == 1


def test_large_input_is_deterministic_across_thread_counts():
    code = ("import numpy as np, calibkit\n"
            "r = np.random.default_rng(5); c = r.random(700_000); ok = r.random(700_000) < c\n"
            "p = r.integers(0, 7, 700_000)\n"
            "print(repr(calibkit.ece(confidence=c, correct=ok)),"
            " repr(calibkit.cce(confidence=c, correct=ok, predicted=p, num_classes=7)),"
            " repr(calibkit.rmsce(confidence=c, correct=ok)))\n")
    outs = set()
    for threads in ("1", "2", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                capture_output=True, text=True).stdout)
    assert len(outs) == 1
    r = np.random.default_rng(5)
    c = r.random(700_000)
    ok = r.random(700_000) < c
    assert abs(float(outs.pop().split()[0]) - numpy_gce(c, ok)) <= 1e-12


# ------------------------------------------------------------------------------------------------
# The 14 model-zoo records (labels, pred, confidence)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ZOO or ["hollance__(absent).npz"])
def test_model_zoo_against_matrix_form_and_numpy(name):
    if not ZOO:
        pytest.skip(f"no hollance__*.npz model-zoo records in {SHARED_DATA} (set CALIBKIT_SHARED_DATA)")
    d = load_shared(name)
    conf, pred, labels = d["confidence"], d["pred"].astype(np.int64), d["labels"]
    ok = pred == labels
    k = 1000  # ImageNet
    assert pred.max() < k and conf.min() > 1 / k  # so the matrix's argmax is pred
    pairs = dict(confidence=conf, correct=ok, predicted=pred, num_classes=k)
    # direct NumPy
    assert abs(calibkit.ece(confidence=conf, correct=ok) - numpy_gce(conf, ok)) <= 1e-12
    assert abs(calibkit.mce(confidence=conf, correct=ok)
               - numpy_gce(conf, ok, norm="max")) <= 1e-12
    assert abs(calibkit.rmsce(confidence=conf, correct=ok)
               - numpy_gce(conf, ok, binning="adaptive", norm="l2")) <= 1e-12
    assert abs(calibkit.cce(**pairs)
               - numpy_gce(conf, ok, predicted=pred, num_classes=k, class_conditional=True)) <= 1e-12
    # the matrix form: every max-prob metric of the paper's space at two bin counts
    y, m = matrix_of(conf, pred, ok, k)
    assert np.array_equal(m.argmax(axis=1), pred) and np.array_equal(m.max(axis=1), conf)
    space = metric_space().select(max_prob=True)
    ev_m = calibkit.evaluate(y, m, space=space, num_bins=(15, 30))
    del m
    ev_p = calibkit.evaluate(**pairs, num_bins=(15, 30))
    assert ev_p.space == space and ev_p.top_label_only
    np.testing.assert_allclose(ev_p.values, ev_m.values, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# Validation: each refused input, with a calibkit error naming the argument
# ------------------------------------------------------------------------------------------------

C = np.array([0.9, 0.6, 0.7])
OK = np.array([True, False, True])


@pytest.mark.parametrize("bad, where", [
    (np.nan, "confidence[1]"), (np.inf, "confidence[1]"), (1.0002, "confidence[1]"),
    (-0.001, "confidence[1]"),
])
def test_confidence_values_refused(bad, where):
    c = C.copy()
    c[1] = bad
    for f in (calibkit.ece, calibkit.rmsce):
        with pytest.raises(InvalidProbabilitiesError, match=rf"{where.replace('[', '.')}"):
            f(confidence=c, correct=OK)
    big = np.full(100_000, 0.5)
    big[77_777] = bad
    with pytest.raises(InvalidProbabilitiesError, match=r"confidence\[77777\]"):
        calibkit.ece(confidence=big, correct=np.ones(100_000, bool))
    with pytest.raises(InvalidProbabilitiesError, match=r"confidence\[77777\]"):
        calibkit.evaluate(confidence=big, correct=np.ones(100_000, bool))


def test_confidence_within_tolerance_accepted():
    calibkit.ece(confidence=[1 + 0.5 * calibkit._validate.RANGE_TOL, -0.5 * calibkit._validate.RANGE_TOL],
                 correct=[1, 0])


@pytest.mark.parametrize("bad", [
    np.array([1, 2, 0]), np.array([1, -1, 0]), np.array([1.0, 0.5, 0.0]),
    np.array([1, 255, 0], np.uint8), np.array([1, -1, 0], np.int8), np.array([1.0, np.nan, 0.0]),
])
def test_correct_must_be_boolean_or_01(bad):
    with pytest.raises(InvalidLabelsError, match=r"correct\[1\]"):
        calibkit.ece(confidence=C, correct=bad)


def test_correct_accepts_bool_ints_and_floats():
    want = calibkit.ece(confidence=C, correct=OK)
    for o in (OK.astype(int), OK.astype(np.uint8), OK.astype(np.int8), OK.astype(float),
              OK.tolist()):
        assert calibkit.ece(confidence=C, correct=o) == want


def test_predicted_and_num_classes_checked():
    with pytest.raises(InvalidLabelsError, match=r"predicted\[2\]"):
        calibkit.cce(confidence=C, correct=OK, predicted=[0, 1, 3], num_classes=3)
    with pytest.raises(InvalidLabelsError, match=r"predicted\[0\]"):
        calibkit.ece(confidence=C, correct=OK, predicted=[-1, 1, 2], num_classes=3)
    with pytest.raises(InvalidLabelsError, match="predicted"):
        calibkit.cce(confidence=C, correct=OK, predicted=[0.5, 1, 2], num_classes=3)
    for k in (0, True, 2.5, "3", 2**64 + 3, MAX_TABLE_CELLS + 1):
        with pytest.raises(InvalidParameterError, match="num_classes"):
            calibkit.cce(confidence=C, correct=OK, predicted=[0, 1, 0], num_classes=k)
    with pytest.raises(InvalidParameterError, match="num_classes"):
        calibkit.cce(confidence=C, correct=OK, predicted=[0, 1, 0])
    with pytest.raises(InvalidParameterError, match="predicted"):
        calibkit.cce(confidence=C, correct=OK, num_classes=3)


def test_pairs_convert_like_every_array_argument():
    # confidence=, correct= and sample_weight= go through the same conversion as probs=:
    # tensor-likes convert, None, strings and ragged lists are refused by name.
    want = calibkit.ece(confidence=C, correct=OK, sample_weight=[1.0, 2.0, 1.0])
    got = calibkit.ece(confidence=NumpyMethodOnly(C), correct=NumpyMethodOnly(OK),
                       sample_weight=NumpyMethodOnly([1.0, 2.0, 1.0]))
    assert got == want
    for name, bad in [("confidence", "0.9"), ("confidence", [[0.9], [0.1, 0.2]]),
                      ("correct", b"1"), ("correct", [[1], [0, 1]])]:
        kw = {"confidence": C, "correct": OK, name: bad}
        with pytest.raises(InputTypeError, match=name):
            calibkit.ece(**kw)
    with pytest.raises(InputTypeError, match="sample_weight"):
        calibkit.ece(confidence=C, correct=OK, sample_weight="1,2,1")


def test_shapes_and_forms_refused():
    with pytest.raises(ShapeMismatchError, match="correct has 2 entries"):
        calibkit.ece(confidence=C, correct=OK[:2])
    with pytest.raises(ShapeMismatchError, match="predicted has 2 entries"):
        calibkit.cce(confidence=C, correct=OK, predicted=[0, 1], num_classes=2)
    with pytest.raises(ShapeMismatchError, match="empty"):
        calibkit.ece(confidence=[], correct=[])
    with pytest.raises(ShapeMismatchError, match="1-D"):
        calibkit.ece(confidence=C[:, None], correct=OK)
    with pytest.raises(ShapeMismatchError, match="1-D"):
        calibkit.ece(confidence=C, correct=OK[:, None])
    with pytest.raises(InputTypeError, match="confidence"):
        calibkit.ece(confidence=OK, correct=C)  # swapped
    with pytest.raises(InputTypeError, match="confidence"):
        calibkit.ece(confidence="0.9", correct=OK)
    with pytest.raises(InputTypeError, match="correct"):
        calibkit.ece(confidence=C, correct=np.array(["a", "b", "c"]))
    with pytest.raises(InvalidParameterError, match="not both"):
        calibkit.ece([0, 1, 0], [[0.9, 0.1]] * 3, confidence=C, correct=OK)
    with pytest.raises(InvalidParameterError, match="not both"):
        calibkit.gce(probs=[[0.9, 0.1]] * 3, confidence=C, correct=OK)
    with pytest.raises(InvalidParameterError, match="both confidence"):
        calibkit.ece(confidence=C)
    with pytest.raises(InputTypeError, match="labels and probs missing"):
        calibkit.ece()


@pytest.mark.parametrize("call", [
    lambda: calibkit.sce(confidence=C, correct=OK),
    lambda: calibkit.ace(confidence=C, correct=OK),
    lambda: calibkit.tace(confidence=C, correct=OK, predicted=[0, 1, 0], num_classes=2),
    lambda: calibkit.gce(confidence=C, correct=OK, max_prob=False),
    lambda: calibkit.calibration_bins(confidence=C, correct=OK, max_prob=False),
    lambda: calibkit.evaluate(confidence=C, correct=OK, space=["ECE", "SCE"]),
    lambda: Accumulator("ACE").update(confidence=C, correct=OK),
])
def test_all_probabilities_metrics_refuse_top_label_input(call):
    with pytest.raises(TopLabelInputError, match="every class's probability.*pass labels and"):
        call()


def test_class_conditional_needs_predicted():
    for call in (lambda: calibkit.cce(confidence=C, correct=OK),
                 lambda: calibkit.evaluate(confidence=C, correct=OK, space=["CCE"]),
                 lambda: Accumulator("CCE").update(confidence=C, correct=OK)):
        with pytest.raises(TopLabelInputError, match="predicted="):
            call()


# ------------------------------------------------------------------------------------------------
# evaluate, Accumulator, dask, plots
# ------------------------------------------------------------------------------------------------


def _synthetic(n=4000, k=6, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k) * 0.5, size=n).astype(dtype)
    labels = rng.integers(0, k, size=n)
    return labels, probs


def test_evaluate_default_space_is_the_max_prob_metrics():
    labels, probs = _synthetic()
    pairs = pairs_of(labels, probs)
    full = calibkit.evaluate(labels, probs)
    ev = calibkit.evaluate(**pairs)
    assert ev.space == full.space.select(max_prob=True) and ev.top_label_only
    assert "max-prob metrics only" in repr(ev)
    np.testing.assert_allclose(ev.values, full.values[[s.max_prob for s in full.space]],
                               rtol=0, atol=1e-12)
    pooled = calibkit.evaluate(confidence=pairs["confidence"], correct=pairs["correct"])
    assert pooled.space == full.space.select(max_prob=True, class_conditional=False)
    assert not full.top_label_only


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_accumulator_pairs_equal_matrix_batches(dtype):
    labels, probs = _synthetic(dtype=dtype)
    pairs = pairs_of(labels, probs)
    space = metric_space().select(max_prob=True)
    a = Accumulator(space, num_bins=(10, 15))
    b = Accumulator(space, num_bins=(10, 15))
    for s in range(0, len(labels), 900):
        a.update(labels[s:s + 900], probs[s:s + 900])
        b.update(**{k: (v[s:s + 900] if k != "num_classes" else v) for k, v in pairs.items()})
    np.testing.assert_allclose(b.compute().values, a.compute().values, rtol=0, atol=1e-12)
    assert b.dtype == dtype and b.num_classes == probs.shape[1]
    pooled = Accumulator("RMSCE", num_bins=10)
    pooled.update(confidence=pairs["confidence"][:0], correct=pairs["correct"][:0])  # empty: ok
    pooled.update(confidence=pairs["confidence"], correct=pairs["correct"])
    assert abs(pooled.compute() - calibkit.rmsce(labels, probs, num_bins=10)) <= 1e-12
    with pytest.raises(InvalidProbabilitiesError):
        pooled.update(confidence=np.array([2.0], dtype), correct=[1])
    assert pooled.n_samples == len(labels)


def test_dask_pairs_equal_in_memory():
    da = requires("dask.array")
    import calibkit.scale.dask

    labels, probs = _synthetic(n=3000, dtype=np.float32)
    pairs = pairs_of(labels, probs)
    lazy = dict(confidence=da.from_array(pairs["confidence"], chunks=700),
                correct=da.from_array(pairs["correct"], chunks=500),
                predicted=da.from_array(pairs["predicted"], chunks=1000), num_classes=6)
    ev = calibkit.dask.evaluate(**lazy, num_bins=(10, 15), scheduler="synchronous")
    want = calibkit.evaluate(labels, probs, space=ev.space, num_bins=(10, 15))
    assert ev.top_label_only and len(ev.space) == 16
    np.testing.assert_allclose(ev.values, want.values, rtol=0, atol=1e-12)
    v = calibkit.dask.gce(confidence=lazy["confidence"], correct=lazy["correct"],
                          binning="adaptive", norm="l2", num_bins=10, scheduler="synchronous")
    assert abs(v - calibkit.rmsce(labels, probs, num_bins=10)) <= 1e-12
    with pytest.raises(TopLabelInputError):
        calibkit.dask.gce(confidence=lazy["confidence"], correct=lazy["correct"], max_prob=False)
    with pytest.raises(TopLabelInputError):
        calibkit.dask.evaluate(confidence=lazy["confidence"], correct=lazy["correct"],
                               space=["ECE", "ACE"])
    bad = pairs["confidence"].copy()
    bad[2100] = np.nan
    with pytest.raises(InvalidProbabilitiesError, match="confidence"):
        calibkit.dask.gce(confidence=da.from_array(bad, chunks=700), correct=lazy["correct"],
                          scheduler="synchronous")


def test_reliability_diagram_from_pairs():
    requires("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from calibkit.plots import reliability_diagram

    labels, probs = _synthetic(n=1000)
    pairs = pairs_of(labels, probs)
    f_m = reliability_diagram(labels, probs, num_bins=10, class_index=2)
    f_p = reliability_diagram(**pairs, num_bins=10, class_index=2)
    texts = lambda f: [t.get_text() for ax in f.axes for t in ax.texts]  # noqa: E731
    assert texts(f_p) == texts(f_m)
    with pytest.raises(TopLabelInputError):
        reliability_diagram(confidence=pairs["confidence"], correct=pairs["correct"],
                            max_prob=False)
    import matplotlib.pyplot as plt

    plt.close("all")


def test_docs_and_readme_describe_the_equality():
    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "toplabel-inputs.md").read_text()
    for phrase in ("lowest", "1.0", "threshold", "max(p, 1 - p)", "TopLabelInputError"):
        assert phrase in doc
    assert "binary_calibration_error" in (root / "README.md").read_text()


# --- sample weights with top-label input (the weighted primitive behind gce/calibration_bins) ---


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("class_conditional", [False, True])
def test_pair_weights_equal_repeated_pairs(binning, class_conditional):
    rng = np.random.default_rng(11)
    n, k = 400, 4
    conf = np.round(rng.uniform(0.25, 1.0, n), 2)  # ties and exact 1.0
    ok = rng.uniform(size=n) < conf
    pred = rng.integers(0, k, n)
    w = rng.integers(0, 4, n)
    kw = dict(binning=binning, class_conditional=class_conditional, num_bins=7, threshold=0.3)
    cc = dict(predicted=pred, num_classes=k) if class_conditional else {}
    ccr = dict(predicted=np.repeat(pred, w), num_classes=k) if class_conditional else {}
    for norm in ("l1", "l2", "max"):
        got = calibkit.gce(confidence=conf, correct=ok, sample_weight=w, norm=norm, **cc, **kw)
        want = calibkit.gce(confidence=np.repeat(conf, w), correct=np.repeat(ok, w), norm=norm,
                            **ccr, **kw)
        assert abs(got - want) < 1e-12, (norm, got, want)
    t = calibkit.calibration_bins(confidence=conf, correct=ok, sample_weight=w, **cc, **kw)
    r = calibkit.calibration_bins(confidence=np.repeat(conf, w), correct=np.repeat(ok, w),
                                  **ccr, **kw)
    np.testing.assert_allclose(t.counts, r.counts, atol=1e-9)
    np.testing.assert_allclose(t.sum_outcome, r.sum_outcome, atol=1e-9)


def test_pair_weights_everywhere():
    rng = np.random.default_rng(8)
    conf = np.round(rng.uniform(0.2, 1.0, 300), 2)
    ok = rng.uniform(size=300) < conf
    pred = rng.integers(0, 3, 300)
    w = rng.uniform(0, 2, 300)
    ev = calibkit.evaluate(confidence=conf, correct=ok, predicted=pred, num_classes=3,
                           sample_weight=w, num_bins=(5, 15))
    for spec in ev.space:
        for b in (5, 15):
            want = calibkit.gce(confidence=conf, correct=ok, predicted=pred, num_classes=3,
                                sample_weight=w, num_bins=b, **spec.kwargs())
            assert abs(ev.get(spec.name, b) - want) < 1e-12, (spec.name, b)
    # the Accumulator has a weighted pair path too (tests/test_weighted_streaming.py)
    acc = calibkit.Accumulator("ECE").update(confidence=conf, correct=ok, sample_weight=w)
    assert acc.compute() == pytest.approx(
        calibkit.ece(confidence=conf, correct=ok, sample_weight=w), abs=1e-12)
    with pytest.raises(TopLabelInputError):
        calibkit.sce(confidence=conf, correct=ok, sample_weight=w)


def test_trust_estimators_take_top_label_input():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(6) * 0.4, size=1500)
    labels = rng.integers(0, 6, size=1500)
    conf, ok, pred = probs.max(axis=1), probs.argmax(axis=1) == labels, probs.argmax(axis=1)
    for metric in ("ECE", "RMSCE", "CCE"):
        extra = dict(predicted=pred, num_classes=6) if metric == "CCE" else {}
        a = calibkit.confidence_interval(labels, probs, metric, n_resamples=40, random_state=3,
                                         return_resamples=True)
        b = calibkit.confidence_interval(metric=metric, confidence=conf, correct=ok,
                                         n_resamples=40, random_state=3, return_resamples=True, **extra)
        assert abs(a.value - b.value) < 1e-12
        np.testing.assert_allclose(a.resamples, b.resamples, atol=1e-12)
        ta = calibkit.calibration_test(labels, probs, metric, n_resamples=40, random_state=3)
        tb = calibkit.calibration_test(metric=metric, confidence=conf, correct=ok, n_resamples=40,
                                       random_state=3, **extra)
        assert abs(ta.statistic - tb.statistic) < 1e-12 and ta.pvalue == tb.pvalue
    c = calibkit.confidence_interval(metric=calibkit.smece, confidence=conf, correct=ok,
                                     n_resamples=20, random_state=1)
    assert abs(c.value - calibkit.smece(labels, probs)) < 1e-12
    with pytest.raises(TopLabelInputError):
        calibkit.confidence_interval(metric="SCE", confidence=conf, correct=ok, n_resamples=5)
