"""docs/spec.md's worked example and small hand-checked cases, against both implementations.

Every expected number here comes from docs/spec.md or is worked out by hand in the comment beside it;
none was produced by the code under test. Each case runs against the NumPy oracle
(``calibkit.reference``) and the native path (``calibkit.gce`` / ``calibkit.calibration_bins``).
"""

from __future__ import annotations

import ast
import inspect
import itertools

import numpy as np
import pytest
from spec_doc import table_32, worked_example

import calibkit
from calibkit import reference

TOL = 1e-12

# docs/spec.md, "Worked example" (N = 10, K = 3, B = 3) and its 32 values, read from the document.
WORKED_LABELS, WORKED_PROBS = worked_example()
SPEC_32 = [v for _, _, v in table_32()]


def spec_params(index: int) -> dict:
    """Keyword arguments of metric ``index`` (docs/spec.md: 16*adaptive + 8*!max_prob + 4*!cc + ...)."""
    return dict(
        binning="adaptive" if index & 16 else "even",
        max_prob=not (index & 8),
        class_conditional=not (index & 4),
        threshold=0.01 if index & 2 else 0.0,
        norm="l2" if index & 1 else "l1",
    )


IMPLS = {"reference": reference, "calibkit": calibkit}


@pytest.fixture(params=sorted(IMPLS))
def impl(request):
    """The module under test: ``calibkit.reference`` or ``calibkit``."""
    return IMPLS[request.param]


def table(impl, labels, probs, **kw):
    """The per-bin table from either implementation."""
    if impl is reference:
        return reference.bin_table(labels, probs, **kw)
    return calibkit.calibration_bins(labels, probs, **kw)


# ---------------------------------------------------------------------------------------------
# The worked example
# ---------------------------------------------------------------------------------------------


def test_index_formula_matches_spec_named_indices():
    assert spec_params(0) == dict(
        binning="even", max_prob=True, class_conditional=True, threshold=0.0, norm="l1"
    )
    assert spec_params(4)["class_conditional"] is False  # ECE
    assert spec_params(21) == dict(
        binning="adaptive", max_prob=True, class_conditional=False, threshold=0.0, norm="l2"
    )  # RMSCE
    assert spec_params(26) == dict(
        binning="adaptive", max_prob=False, class_conditional=True, threshold=0.01, norm="l1"
    )  # TACE
    assert spec_params(31) == dict(
        binning="adaptive", max_prob=False, class_conditional=False, threshold=0.01, norm="l2"
    )


@pytest.mark.parametrize("index", range(32))
def test_worked_example_all_32(impl, index):
    value = impl.gce(WORKED_LABELS, WORKED_PROBS, num_bins=3, **spec_params(index))
    assert isinstance(value, float)
    assert value == pytest.approx(SPEC_32[index], abs=TOL)


@pytest.mark.parametrize("index", range(32))
def test_worked_example_all_32_from_table(impl, index):
    kw = spec_params(index)
    norm = kw.pop("norm")
    t = table(impl, WORKED_LABELS, WORKED_PROBS, num_bins=3, **kw)
    assert t.error(norm) == pytest.approx(SPEC_32[index], abs=TOL)


def test_worked_example_named(impl):
    y, p = WORKED_LABELS, WORKED_PROBS
    assert impl.ece(y, p, num_bins=3) == pytest.approx(0.159, abs=TOL)
    assert impl.cce(y, p, num_bins=3) == pytest.approx(0.189888888888889, abs=TOL)
    assert impl.sce(y, p, num_bins=3) == pytest.approx(0.111333333333333, abs=TOL)
    assert impl.ace(y, p, num_bins=3) == pytest.approx(0.112, abs=TOL)
    assert impl.tace(y, p, num_bins=3) == pytest.approx(0.130759259259259, abs=TOL)
    assert impl.rmsce(y, p, num_bins=3) == pytest.approx(0.104956340129281, abs=TOL)


def test_worked_example_mce(impl):
    # Top-label scores at B=3: bin [1/3, 2/3) holds .5 .6 .4 .45 .55 .34 with 2 correct:
    # |2/6 - 2.84/6| = 0.14; bin [2/3, 1) holds .7 .9 .85 .8 all correct: |1 - 3.25/4| = 0.1875.
    assert impl.mce(WORKED_LABELS, WORKED_PROBS, num_bins=3) == pytest.approx(0.1875, abs=TOL)
    assert impl.gce(WORKED_LABELS, WORKED_PROBS, norm="max", num_bins=3) == pytest.approx(
        0.1875, abs=TOL
    )


def test_worked_example_ece_table(impl):
    # Same bins as above: 0 / 6 / 4 rows, nothing at exactly 1.0.
    t = table(impl, WORKED_LABELS, WORKED_PROBS, num_bins=3)
    np.testing.assert_array_equal(t.counts, [[0, 6, 4, 0]])
    np.testing.assert_allclose(t.sum_score, [[0.0, 2.84, 3.25, 0.0]], atol=TOL)
    np.testing.assert_allclose(t.sum_outcome, [[0.0, 2.0, 4.0, 0.0]], atol=TOL)
    np.testing.assert_array_equal(t.edges[0, :4], np.linspace(0, 1, 4))


# ---------------------------------------------------------------------------------------------
# Small hand-checked cases
# ---------------------------------------------------------------------------------------------


def test_exact_one_gets_extra_bin(impl):
    # Top labels: 1.0 (wrong, extra bin 2, gap -1) and 0.6 (right, bin 1, gap +0.4), B = 2:
    # ECE = 0.5 * 1 + 0.5 * 0.4 = 0.7. Clipping 1.0 into the last bin would give 0.3.
    probs = np.array([[1.0, 0.0], [0.6, 0.4]])
    labels = np.array([1, 0])
    assert impl.ece(labels, probs, num_bins=2) == pytest.approx(0.7, abs=TOL)
    t = table(impl, labels, probs, num_bins=2)
    np.testing.assert_array_equal(t.counts, [[0, 1, 1]])
    np.testing.assert_allclose(t.sum_score, [[0.0, 0.6, 1.0]], atol=TOL)
    np.testing.assert_allclose(t.sum_outcome, [[0.0, 1.0, 0.0]], atol=TOL)


def test_left_closed_even_bins(impl):
    # 0.5 equals the upper edge of bin 0 at B = 2, so it belongs to bin 1 (left-closed bins).
    probs = np.array([[0.5, 0.5], [0.75, 0.25]])
    t = table(impl, [0, 0], probs, num_bins=2)
    np.testing.assert_array_equal(t.counts, [[0, 2, 0]])


def test_float32_compared_after_widening(impl):
    # float32(0.7) = 0.699999988 lies below the float64 edge 7 * 0.1 = 0.7000000000000001, so it
    # goes to bin 6 at B = 10; comparing in float32 would put it on the edge and into bin 7.
    p = np.array([[np.float32(0.7), np.float32(0.3)]], dtype=np.float32)
    t = table(impl, [0], p, num_bins=10)
    assert t.counts[0, 6] == 1 and t.counts.sum() == 1
    # its sum is the exact float64 widening of the float32 value
    assert t.sum_score[0, 6] == float(np.float32(0.7))


def test_adaptive_ties_move_to_upper_bin(impl):
    # Top-label scores 0.55 0.7 0.7 0.7 0.9, B = 2: positions [0, round(2.5) = 2], edge = 0.7,
    # so every 0.7 moves up: bins [0.55] and [0.7, 0.7, 0.7, 0.9].
    s = np.array([0.55, 0.7, 0.7, 0.7, 0.9])
    probs = np.stack([1 - s, s], axis=1)
    labels = np.array([1, 1, 0, 1, 1])
    t = table(impl, labels, probs, binning="adaptive", num_bins=2)
    np.testing.assert_array_equal(t.counts, [[1, 4]])
    # bin 0: |1 - 0.55| * 1/5 = 0.09; bin 1: conf 3.0/4 = 0.75, acc 3/4: gap 0.
    value = impl.gce(labels, probs, binning="adaptive", num_bins=2)
    assert value == pytest.approx(0.09, abs=TOL)


def test_adaptive_n10_b3_sizes(impl):
    # positions round(j * 10/3) = [0, 3, 7] -> sizes [3, 4, 3] (array_split would give [4, 3, 3])
    s = np.linspace(0.51, 0.96, 10)
    probs = np.stack([1 - s, s], axis=1)
    t = table(impl, np.ones(10, dtype=int), probs, binning="adaptive", num_bins=3)
    np.testing.assert_array_equal(t.counts, [[3, 4, 3]])


def test_adaptive_rounds_half_to_even(impl):
    # n = 10, B = 4: positions j * 2.5 = [0, 2.5, 5, 7.5] round half-even to [0, 2, 5, 8]:
    # sizes [2, 3, 3, 2] (rounding half up would give [3, 2, 3, 2]).
    s = np.linspace(0.51, 0.96, 10)
    probs = np.stack([1 - s, s], axis=1)
    t = table(impl, np.ones(10, dtype=int), probs, binning="adaptive", num_bins=4)
    np.testing.assert_array_equal(t.counts, [[2, 3, 3, 2]])


def test_adaptive_fewer_scores_than_bins(impl):
    # n = 3 < B = 5: positions round(j * 0.6) = [0, 1, 1, 2, 2], edges [s1, s1, s2, s2]:
    # each distinct value gets its own bin: counts [1, 0, 1, 0, 1].
    s = np.array([0.6, 0.8, 0.7])
    probs = np.stack([1 - s, s], axis=1)
    labels = np.array([1, 0, 1])
    t = table(impl, labels, probs, binning="adaptive", num_bins=5)
    np.testing.assert_array_equal(t.counts, [[1, 0, 1, 0, 1]])
    # every bin holds one score: ECE-like l1 = (0.4 + 0.3 + 0.8) / 3
    value = impl.gce(labels, probs, binning="adaptive", num_bins=5)
    assert value == pytest.approx(1.5 / 3, abs=TOL)


def test_adaptive_single_bin(impl):
    # B = 1: one bin holding everything: |mean outcome - mean score|.
    s = np.array([0.6, 0.8, 0.7, 0.9])
    probs = np.stack([1 - s, s], axis=1)
    labels = np.array([1, 0, 1, 1])
    value = impl.gce(labels, probs, binning="adaptive", num_bins=1)
    assert value == pytest.approx(abs(0.75 - 0.75), abs=TOL)
    value = impl.gce(labels, probs, binning="adaptive", num_bins=1, norm="l2")
    assert value == pytest.approx(0.0, abs=TOL)


def test_threshold_drops_exact_zero(impl):
    # All entries pooled, B = 2, threshold 0: scores 0.8 (o=1), 0.2 (o=0), 1.0 (o=0) are kept,
    # the exact 0.0 (o=1) is dropped: (0.2 + 0.2 + 1.0) / 3. Keeping it would give 0.5.
    probs = np.array([[0.8, 0.2], [1.0, 0.0]])
    labels = np.array([0, 1])
    value = impl.gce(labels, probs, max_prob=False, num_bins=2)
    assert value == pytest.approx(1.4 / 3, abs=TOL)
    assert table(impl, labels, probs, max_prob=False, num_bins=2).counts.sum() == 3


def test_threshold_is_strict_and_after_max_prob(impl):
    # Top labels 0.5 (tie, class 0) and 0.8; threshold 0.5 drops the tie's 0.5 itself.
    probs = np.array([[0.5, 0.5], [0.2, 0.8]])
    labels = np.array([0, 0])
    t = table(impl, labels, probs, threshold=0.5, num_bins=2)
    np.testing.assert_array_equal(t.counts, [[0, 1, 0]])
    assert impl.gce(labels, probs, threshold=0.5, num_bins=2) == pytest.approx(0.8, abs=TOL)


def test_argmax_ties_take_lowest_index(impl):
    # [0.4, 0.4, 0.2]: predicted class 0. Label 0 -> correct; label 1 -> wrong.
    probs = np.array([[0.4, 0.4, 0.2]])
    assert impl.ece([0], probs, num_bins=5) == pytest.approx(0.6, abs=TOL)
    assert impl.ece([1], probs, num_bins=5) == pytest.approx(0.4, abs=TOL)
    t = table(impl, [1], probs, class_conditional=True, num_bins=5)
    assert t.counts[0].sum() == 1 and t.counts[1].sum() == 0


def test_empty_class_conditional_groups_count_zero(impl):
    # K = 3, class 2 never predicted. Class 0: 0.6 right -> 0.4; class 1: 0.7 wrong -> 0.7.
    probs = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    labels = np.array([0, 0])
    kw = dict(class_conditional=True, num_bins=2)
    assert impl.gce(labels, probs, **kw) == pytest.approx(1.1 / 3, abs=TOL)
    assert impl.gce(labels, probs, norm="l2", **kw) == pytest.approx(
        np.sqrt((0.16 + 0.49) / 3), abs=TOL
    )
    assert impl.gce(labels, probs, norm="max", **kw) == pytest.approx(1.1 / 3, abs=TOL)
    t = table(impl, labels, probs, **kw)
    assert t.counts.shape == (3, 3)
    np.testing.assert_array_equal(t.counts.sum(axis=1), [1, 1, 0])


def test_num_classes_comes_from_probs(impl):
    # SCE with K = 4 and only classes 0, 1 in the labels: classes 2 and 3 still count.
    probs = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.7, 0.1, 0.1]])
    labels = np.array([0, 1])
    # class 0: 0.7 (o=1) bin 1 gap .3, 0.1 (o=0) bin 0 gap .1 -> (0.3 + 0.1) / 2 = 0.2; same for
    # class 1; classes 2, 3: two 0.1 scores with outcome 0 -> 0.1. Mean: (0.2+0.2+0.1+0.1)/4.
    assert impl.sce(labels, probs, num_bins=2) == pytest.approx(0.15, abs=TOL)
    assert table(impl, labels, probs, max_prob=False, class_conditional=True).counts.shape[0] == 4


def test_everything_thresholded_away_gives_zero(impl):
    probs = np.array([[0.6, 0.4], [0.7, 0.3]])
    assert impl.gce([0, 1], probs, threshold=0.9, num_bins=4) == 0.0
    assert impl.gce([0, 1], probs, threshold=0.9, binning="adaptive", num_bins=4) == 0.0
    assert impl.gce([0, 1], probs, threshold=0.9, norm="max", num_bins=4) == 0.0


@pytest.mark.parametrize("shape", ["1d", "column"])
def test_binary_probs_expand_to_two_columns(impl, shape):
    p = np.array([0.1, 0.65, 0.8, 0.35, 1.0])
    labels = np.array([0, 1, 0, 1, 1])
    two = np.stack([1 - p, p], axis=1)
    one = p if shape == "1d" else p[:, None]
    for binning, mp, cc, norm in itertools.product(
        ["even", "adaptive"], [True, False], [True, False], ["l1", "l2", "max"]
    ):
        kw = dict(binning=binning, max_prob=mp, class_conditional=cc, norm=norm, num_bins=4)
        assert impl.gce(labels, one, **kw) == pytest.approx(impl.gce(labels, two, **kw), abs=TOL)


def test_l2_weight_outside_square(impl):
    # Top labels: 0.7 (right), 0.8 (wrong), 0.6 (wrong), 0.9 (right).
    probs = np.array([[0.3, 0.7], [0.8, 0.2], [0.4, 0.6], [0.9, 0.1]])
    labels = np.array([1, 1, 0, 0])
    # B = 2: one bin [0.5, 1) with conf 0.75, acc 0.5: sqrt(1 * 0.25^2).
    assert impl.gce(labels, probs, norm="l2", num_bins=2) == pytest.approx(0.25, abs=TOL)
    # B = 4: [0.5, 0.75) holds 0.7, 0.6: gap 0.5 - 0.65; [0.75, 1) holds 0.8, 0.9: gap 0.5 - 0.85.
    # SPEC: sqrt(sum w gap^2) = sqrt(0.5 * 0.15^2 + 0.5 * 0.35^2); 0.0.81 would square w too.
    expected = np.sqrt(0.5 * 0.15**2 + 0.5 * 0.35**2)
    assert impl.gce(labels, probs, norm="l2", num_bins=4) == pytest.approx(expected, abs=TOL)
    assert impl.gce(labels, probs, norm="max", num_bins=4) == pytest.approx(0.35, abs=TOL)


# ---------------------------------------------------------------------------------------------
# The oracle stays independent
# ---------------------------------------------------------------------------------------------


def test_reference_imports_numpy_only():
    tree = ast.parse(inspect.getsource(reference))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # relative: ".errors" (from . import errors: ".errors" too)
            imported.add((node.module or "").split(".")[0] if node.level == 0
                         else "." + (node.module or ".".join(a.name for a in node.names)))
    # calibkit.errors, the exception classes, is the one calibkit module allowed: it holds no
    # logic, so the oracle still restates no rule (tests/test_imports.py says the same)
    assert imported <= {"numpy", "__future__", "dataclasses", "math", ".errors"}, imported


def test_reference_adaptive_edges_match_upstream_formula():
    # SPEC: positions as np.round(np.linspace(0, n, B, endpoint=False)) clipped to n - 1.
    rng = np.random.default_rng(3)
    for n, b in [(1, 1), (1, 7), (5, 2), (10, 3), (10, 4), (37, 15), (100, 30), (7, 7)]:
        s = rng.random(n)
        pos = np.minimum(np.round(np.linspace(0, n, b, endpoint=False)).astype(int), n - 1)
        np.testing.assert_array_equal(reference.upper_edges(s, "adaptive", b), np.sort(s)[pos][1:])
