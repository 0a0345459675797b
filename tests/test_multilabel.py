"""Multilabel calibration: (N, K) 0/1 label matrices, one-vs-rest per column."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import calibkit
from calibkit.binned.multilabel import (
    MultilabelError,
    multilabel_bins,
    multilabel_gce,
    validate_multilabel,
)
from calibkit.errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)
from calibkit.space import metric_space, multilabel_evaluate

COMBOS = [
    (b, c, t, n)
    for b in ("even", "adaptive")
    for c in (True, False)
    for t in (0.0, 0.01, 0.3)
    for n in ("l1", "l2", "max")
]


def single_label_case(seed, n=300, k=5, dtype=np.float64):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.4), size=n)
    probs[: n // 6] = np.round(probs[: n // 6], 1)
    probs[: n // 6] /= probs[: n // 6].sum(axis=1, keepdims=True)
    probs[-1] = 0.0
    probs[-1, 2] = 1.0
    return rng.integers(0, k, size=n), probs.astype(dtype)


def multilabel_case(seed, n=250, k=4, decimals=None):
    rng = np.random.default_rng(seed)
    probs = rng.beta(0.5, 0.8, size=(n, k))
    if decimals is not None:
        probs = np.round(probs, decimals)
    labels = (rng.uniform(size=(n, k)) < probs ** 1.3).astype(np.int64)
    return labels, probs


def per_column_bins(labels, probs, k, **kw):
    """Column k (or the pooled matrix if k is None) as a binary problem through the Rust core.

    A binary problem's class-1 group with max_prob=False is exactly (p, y) one-vs-rest, so row 1
    of its class-conditional table is the column's own statistics.
    """
    if k is None:
        y, p = labels.ravel(), probs.ravel()
    else:
        y, p = labels[:, k], probs[:, k]
    t = calibkit.calibration_bins(y, p, max_prob=False, class_conditional=True, **kw)
    return t.counts[1:2], t.sum_score[1:2], t.sum_outcome[1:2], t.edges[1:2]


# --- agreement with single-label GCE on one-hot matrices ----------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("binning, cc, threshold, norm", COMBOS)
def test_one_hot_matches_single_label_gce(binning, cc, threshold, norm, dtype):
    labels, probs = single_label_case(1, dtype=dtype)
    onehot = np.eye(probs.shape[1], dtype=np.int64)[labels]
    for b in (1, 4, 15, 40):
        kw = dict(binning=binning, class_conditional=cc, threshold=threshold, num_bins=b)
        want = calibkit.gce(labels, probs, max_prob=False, norm=norm, **kw)
        got = multilabel_gce(onehot, probs, norm=norm, **kw)
        assert abs(got - want) <= 1e-12, (b, got, want)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("cc", [True, False])
def test_one_hot_bins_match_calibration_bins(binning, cc):
    labels, probs = single_label_case(2, n=120, k=3)
    onehot = np.eye(3)[labels]
    for threshold in (0.0, 0.2):
        kw = dict(binning=binning, class_conditional=cc, threshold=threshold, num_bins=7)
        ml = multilabel_bins(onehot, probs, **kw)
        sl = calibkit.calibration_bins(labels, probs, max_prob=False, **kw)
        np.testing.assert_array_equal(ml.counts, sl.counts)
        np.testing.assert_allclose(ml.sum_score, sl.sum_score, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ml.sum_outcome, sl.sum_outcome, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(ml.edges, sl.edges)
        assert ml.counts.dtype == np.int64 and ml.edges.shape == sl.edges.shape
        assert (ml.binning, ml.class_conditional, ml.max_prob) == (binning, cc, False)


# --- genuine multilabel data ---------------------------------------------------------------


def test_hand_computed_example():
    # Column 0: 0.9 (y=1), 0.6 (y=1) in [0.5, 1); 0.1 (y=0) in [0, 0.5)
    #   -> 1/3 * |0 - 0.1| + 2/3 * |1 - 0.75| = 0.2
    # Column 1: 0.2 (y=0), 0.3 (y=0) in [0, 0.5); 0.7 (y=1) in [0.5, 1)
    #   -> 2/3 * |0 - 0.25| + 1/3 * |1 - 0.7| = 0.2666...
    # Rows sum to 1.1, 1.3, 0.4: not a distribution, and that is fine.
    y = np.array([[1, 0], [1, 1], [0, 0]])
    p = np.array([[0.9, 0.2], [0.6, 0.7], [0.1, 0.3]])
    assert multilabel_gce(y, p, num_bins=2) == pytest.approx((0.2 + 0.8 / 3) / 2, abs=1e-15)
    # pooled: bin [0, .5): 0.1, 0.2, 0.3 all y=0 -> gap 0.2; [.5, 1): 0.9, 0.6, 0.7 all y=1
    # -> gap 1 - 0.7333 = 0.2667; weights 1/2 each
    assert multilabel_gce(y, p, num_bins=2, class_conditional=False) == pytest.approx(
        0.5 * 0.2 + 0.5 * (1 - 2.2 / 3), abs=1e-15
    )
    t = multilabel_bins(y, p, num_bins=2)
    np.testing.assert_array_equal(t.counts, [[1, 2, 0], [2, 1, 0]])


@pytest.mark.parametrize("binning, cc, threshold, norm", COMBOS)
def test_rows_not_summing_to_one_match_per_column_binary_problems(binning, cc, threshold, norm):
    labels, probs = multilabel_case(3, decimals=2)
    assert not np.allclose(probs.sum(axis=1), 1.0)
    B = 9
    kw = dict(binning=binning, threshold=threshold, num_bins=B)
    cols = range(probs.shape[1]) if cc else [None]
    stats = [per_column_bins(labels, probs, k, **kw) for k in cols]
    counts = np.vstack([s[0] for s in stats])
    sums = np.vstack([s[1] for s in stats])
    outs = np.vstack([s[2] for s in stats])
    want = calibkit.reduce_bins(counts, sums, outs, norm=norm, class_conditional=cc)
    got = multilabel_gce(labels, probs, class_conditional=cc, norm=norm, **kw)
    assert abs(got - want) <= 1e-12
    t = multilabel_bins(labels, probs, class_conditional=cc, **kw)
    np.testing.assert_array_equal(t.counts, counts)
    np.testing.assert_array_equal(t.edges, np.vstack([s[3] for s in stats]))


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    k=st.integers(1, 5),
    b=st.integers(1, 20),
    decimals=st.sampled_from([1, 2, None]),
    threshold=st.sampled_from([0.0, 0.01, 0.5]),
)
def test_multilabel_property(seed, n, k, b, decimals, threshold):
    labels, probs = multilabel_case(seed, n=n, k=k, decimals=decimals)
    for binning in ("even", "adaptive"):
        for cc in (True, False):
            kw = dict(binning=binning, threshold=threshold, num_bins=b)
            cols = range(k) if cc else [None]
            stats = [per_column_bins(labels, probs, c, **kw) for c in cols]
            t = multilabel_bins(labels, probs, class_conditional=cc, **kw)
            np.testing.assert_array_equal(t.counts, np.vstack([s[0] for s in stats]))
            np.testing.assert_allclose(t.sum_outcome, np.vstack([s[2] for s in stats]),
                                       atol=1e-12)


def test_calibkit_gce_and_calibration_bins_dispatch_to_multilabel():
    labels, probs = multilabel_case(4)
    kw = dict(binning="adaptive", class_conditional=True, threshold=0.01, num_bins=10)
    assert calibkit.gce(labels, probs, max_prob=False, **kw) == multilabel_gce(labels, probs, **kw)
    t = calibkit.calibration_bins(labels, probs, max_prob=False, **kw)
    np.testing.assert_array_equal(t.counts, multilabel_bins(labels, probs, **kw).counts)


def test_evaluate_multilabel():
    labels, probs = multilabel_case(5, n=300, k=6)
    ev = calibkit.space.evaluate(labels, probs)
    assert ev.multilabel and len(ev.space) == 16
    assert all(not s.max_prob for s in ev.space)
    assert [s.index for s in ev.space] == list(range(8, 16)) + list(range(24, 32))
    for i, spec in enumerate(ev.space):
        for j, b in enumerate(ev.num_bins):
            kw = spec.kwargs()
            kw.pop("max_prob")
            assert abs(ev.values[i, j] - multilabel_gce(labels, probs, **kw, num_bins=b)) <= 1e-12
    assert "multilabel N=300, K=6" in repr(ev)
    custom = multilabel_evaluate(labels, probs, space=metric_space(
        max_prob=False, norms=("l1", "max"), thresholds=(0.0, 0.1)), num_bins=(5, 50))
    assert custom.values.shape == (16, 2)
    assert custom.get("gce(even,all,pooled,0.1,max)", 50) == pytest.approx(
        multilabel_gce(labels, probs, class_conditional=False, threshold=0.1, norm="max",
                       num_bins=50), abs=1e-15)


def test_single_column_and_bool_labels():
    labels, probs = multilabel_case(6, n=80, k=1)
    a = multilabel_gce(labels.astype(bool), probs[:, 0])  # 1-D probs for K = 1
    b = multilabel_gce(labels.astype(float), probs)
    assert a == b
    counts, sums, outs, _ = per_column_bins(labels, probs, 0, binning="even", threshold=0.0,
                                            num_bins=15)
    assert a == pytest.approx(calibkit.reduce_bins(counts, sums, outs), abs=1e-12)


def test_probabilities_within_tolerance_accepted():
    labels, probs = multilabel_case(7, n=50, k=3)
    probs[0, 0] = 1.0 + 5e-5
    probs[1, 1] = -5e-5
    assert np.isfinite(multilabel_gce(labels, probs))


# --- refusals and validation ---------------------------------------------------------------


def test_max_prob_refused():
    labels, probs = multilabel_case(8, n=40, k=3)
    with pytest.raises(MultilabelError, match="max_prob=False"):
        multilabel_gce(labels, probs, max_prob=True)
    with pytest.raises(MultilabelError, match="max_prob"):
        multilabel_bins(labels, probs, max_prob=True)
    with pytest.raises(MultilabelError):
        calibkit.gce(labels, probs)  # gce's default is top-label
    with pytest.raises(MultilabelError, match="ECE"):
        calibkit.space.evaluate(labels, probs, space=["SCE", "ECE"])
    with pytest.raises(MultilabelError, match="ECE"):
        calibkit.space.evaluate(labels, probs, space=metric_space())
    assert issubclass(MultilabelError, ValueError)


@pytest.mark.parametrize("bad", [2, 0.5, -1])
def test_non_binary_labels(bad):
    labels, probs = multilabel_case(9, n=20, k=3)
    labels = labels.astype(float)
    labels[3, 1] = bad
    with pytest.raises(InvalidLabelsError, match=r"0 or 1, got " + re.escape(repr(float(bad))) + r" at \[3, 1\]"):
        multilabel_gce(labels, probs)  # the plain value, not numpy's scalar repr


def test_shape_and_value_errors():
    labels, probs = multilabel_case(10, n=20, k=3)
    with pytest.raises(ShapeMismatchError, match="does not match"):
        multilabel_gce(labels, probs[:, :2])
    with pytest.raises(ShapeMismatchError, match="does not match"):
        multilabel_gce(labels[:-1], probs)
    with pytest.raises(ShapeMismatchError, match="2-D"):
        validate_multilabel(labels[:, :, None], probs)
    with pytest.raises(ShapeMismatchError, match="at least one"):
        multilabel_gce(np.zeros((0, 3)), np.zeros((0, 3)))
    bad = probs.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidProbabilitiesError, match="NaN"):
        multilabel_gce(labels, bad)
    bad = probs.copy()
    bad[0, 0] = 1.01
    with pytest.raises(InvalidProbabilitiesError, match=r"\[0, 1\]"):
        multilabel_gce(labels, bad)
    with pytest.raises(InputTypeError, match="numeric"):
        multilabel_gce(labels.astype(str), probs)
    with pytest.raises(InvalidParameterError, match="binning"):
        multilabel_gce(labels, probs, binning="quantile")
    with pytest.raises(InvalidParameterError, match="norm"):
        multilabel_gce(labels, probs, norm="l3")
    with pytest.raises(InvalidParameterError, match="num_bins"):
        multilabel_gce(labels, probs, num_bins=0)
    with pytest.raises(InvalidParameterError, match="threshold"):
        multilabel_gce(labels, probs, threshold=1.0)


# --- bin-count and table limits (issue 10, measured case 1) -------------------------------


TWO_BY_TWO = (np.array([[1, 0], [0, 1]]), np.array([[0.9, 0.2], [0.3, 0.7]]))


@pytest.mark.parametrize(
    "call",
    [
        lambda y, p: calibkit.evaluate(y, p, space=["SCE"], num_bins=10**9),
        lambda y, p: calibkit.evaluate(y, p, space=["ACE"], num_bins=(10, 10**9)),
        lambda y, p: multilabel_gce(y, p, num_bins=10**9),
        lambda y, p: multilabel_gce(y, p, binning="adaptive", num_bins=10**9),
        lambda y, p: multilabel_bins(y, p, num_bins=10**9),
        lambda y, p: multilabel_evaluate(y, p, num_bins=10**9),
        lambda y, p: calibkit.gce(y, p, max_prob=False, num_bins=10**9),
        lambda y, p: calibkit.calibration_bins(y, p, max_prob=False, num_bins=10**9),
    ],
)
def test_huge_bin_counts_are_refused_before_allocating(call):
    with pytest.raises(InvalidParameterError, match="num_bins.*1000000"):
        call(*TWO_BY_TWO)


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_tables_beyond_the_limit_are_refused(binning):
    k = 64
    y = np.eye(k, dtype=np.int64)
    p = np.full((k, k), 0.5)
    for call in (
        lambda: multilabel_gce(y, p, binning=binning, num_bins=10**6),
        lambda: multilabel_bins(y, p, binning=binning, num_bins=10**6),
        lambda: calibkit.evaluate(y, p, space=["SCE" if binning == "even" else "ACE"],
                                  num_bins=10**6),
    ):
        with pytest.raises(InvalidParameterError, match="table"):
            call()
    # the pooled group is one row of the table: a million bins are allowed there
    v = multilabel_gce(y, p, binning=binning, class_conditional=False, num_bins=10**6)
    assert np.isfinite(v)


def test_multilabel_is_a_leaf_module():
    import ast
    from pathlib import Path

    binned = Path(calibkit.__file__).parent / "binned"

    def imports(name):
        tree = ast.parse((binned / name).read_text())
        return {(n.level, n.module) for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.level}

    assert imports("multilabel.py") <= {(1, "table"), (2, "_validate"), (2, "_params"),
                                        (2, "errors")}
    # (2, None): "from .. import _native"; the leaf modules behind CalibrationBins'
    # accuracy_interval / error(debias=) / overconfidence (imported inside those methods)
    leaves = {"bin_intervals", "debias", "masses"}
    assert imports("table.py") <= ({(2, None), (2, "_validate"), (2, "_params"), (2, "errors"),
                                    (2, "_budget"), (1, "units")} | {(1, leaf) for leaf in leaves})
    for leaf in leaves:
        assert imports(leaf + ".py") <= {(2, "errors"), (2, "_params")}, leaf
    # the exact score sums: the native module and the error family only
    assert imports("units.py") <= {(2, None), (2, "errors")}
