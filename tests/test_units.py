"""Exact cell sums (docs/spec.md, "Cell sums"): every score adds round(s * 2**50) units to its
cell, so tables of disjoint rows add exactly to the table of all rows, whatever the split, and
the float sums are the exact ones rounded once."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import calibkit
from calibkit import _native
from calibkit.binned.table import grouped_bin_stats
from calibkit.binned.units import ScoreUnits
from calibkit.errors import ShapeMismatchError

METRICS = [("even", True, False), ("even", True, True), ("even", False, False),
           ("even", False, True), ("adaptive", True, False)]


def _exact_units(scores) -> int:
    """The oracle: sum of round-half-even(s * 2**50) over the scores, in Python integers."""
    return sum(round(Fraction(float(s)) * 2**50) for s in scores)


def _data(seed: int, n: int, k: int, dtype=np.float64):
    rng = np.random.default_rng(seed)
    p = calibkit.softmax(rng.normal(size=(n, k)) * 2).astype(dtype)
    return rng.integers(0, k, n), p


@given(st.integers(0, 2**32 - 1), st.integers(2, 400), st.integers(2, 9),
       st.lists(st.floats(0.0, 1.0), max_size=4), st.sampled_from([np.float32, np.float64]))
def test_tables_of_any_split_add_to_the_whole_bit_for_bit(seed, n, k, cuts, dtype):
    y, p = _data(seed, n, k, dtype)
    at = sorted({int(c * n) for c in cuts} | {0, n})
    for binning, mp, cc in METRICS[:4]:
        kw = dict(binning=binning, max_prob=mp, class_conditional=cc, num_bins=7)
        whole = calibkit.calibration_bins(y, p, **kw)
        total = None
        for a, b in zip(at[:-1], at[1:]):
            if b > a:
                part = calibkit.calibration_bins(y[a:b], p[a:b], **kw).score_units
                total = part if total is None else total + part
        assert total == whole.score_units
        assert np.array_equal(np.asarray(total), whole.sum_score)


def test_sum_score_is_the_exact_unit_sum_rounded_once():
    y, p = _data(3, 500, 4)
    t = calibkit.calibration_bins(y, p, max_prob=False, class_conditional=True, num_bins=5)
    for g in range(4):
        col = p[:, g]
        bins = np.minimum(np.searchsorted(t.edges[g, 1:-1], col, side="right"), t.counts.shape[1])
        for b in range(t.counts.shape[1]):
            exact = _exact_units(col[bins == b])
            assert t.sum_score[g, b] == float(Fraction(exact, 2**50)), (g, b)
            hi, lo = t.score_units.words[g, b]
            assert (int(hi) << 64) + (int(lo) & (2**64 - 1)) == exact


def test_whole_number_weights_are_repeated_rows_and_unit_weights_are_none():
    rng = np.random.default_rng(1)
    s, o = rng.random(300), (rng.random(300) < 0.6).astype(float)
    g = rng.integers(0, 3, 300)
    m = rng.integers(0, 4, 300).astype(float)
    for binning in ("even", "adaptive"):
        kw = dict(num_groups=3, binning=binning, num_bins=6, units=True)
        rep = grouped_bin_stats(np.repeat(g, m.astype(int)), np.repeat(s, m.astype(int)),
                                np.repeat(o, m.astype(int)), **kw)
        wtd = grouped_bin_stats(g, s, o, m, **kw)
        for a, b in zip(rep[:3], wtd[:3]):
            assert np.array_equal(a, b), binning
        assert rep[4] == wtd[4]
        ones = grouped_bin_stats(g, s, o, np.ones(300), **kw)
        none = grouped_bin_stats(g, s, o, None, **kw)
        for a, b in zip(ones[:3], none[:3]):
            assert np.array_equal(a, b), binning
        assert ones[4] == none[4]


def test_small_weights_keep_their_resolution_and_leave_no_units():
    rng = np.random.default_rng(2)
    s, o, w = rng.random(200), (rng.random(200) < 0.5).astype(float), rng.random(200)
    c1, s1, o1, _, u1 = grouped_bin_stats(None, s, o, w, binning="even", num_bins=5, units=True)
    c2, s2, o2, _, u2 = grouped_bin_stats(None, s, o, w * 1e-9, binning="even", num_bins=5,
                                          units=True)
    # Scaling the weights by 1e-9 scales every sum by 1e-9, to rounding (no loss to the grid).
    np.testing.assert_allclose(c2, c1 * 1e-9, rtol=1e-14)
    np.testing.assert_allclose(s2, s1 * 1e-9, rtol=1e-14)
    np.testing.assert_allclose(o2, o1 * 1e-9, rtol=1e-14)
    assert u2 is None  # rescaled weights: not on the unit-weight grid


def test_score_units_arithmetic_and_pickling():
    y, p = _data(4, 200, 3)
    u = calibkit.calibration_bins(y, p).score_units
    assert pickle.loads(pickle.dumps(u)) == u
    f = np.asarray(u)
    assert np.array_equal(np.zeros(u.shape) + u, f)  # a float table added: float sums
    assert np.array_equal(u + np.zeros(u.shape), f)
    # Carries between the words: sums far beyond 2**64 units stay exact.
    big = ScoreUnits(np.array([[[0, -1], [1, -1]]], dtype=np.int64))  # 2**64 - 1, 2**65 - 1
    twice = big + big
    assert [[(int(h) << 64) + (int(lo) & (2**64 - 1)) for h, lo in row]
            for row in twice.words] == [[2**65 - 2, 2**66 - 2]]
    assert twice.value().tolist() == [[float(Fraction(2**65 - 2, 2**50)),
                                       float(Fraction(2**66 - 2, 2**50))]]


def test_unit_tables_of_other_shapes_are_refused():
    a = np.zeros((1, 3, 2), np.int64)
    with pytest.raises(ShapeMismatchError, match="cannot be added"):
        _native.units_add(a, np.zeros((2, 3, 2), np.int64))
    with pytest.raises(ShapeMismatchError, match=r"\(G, nb, 2\)"):
        _native.units_value(np.zeros((1, 3, 3), np.int64))


def test_units_only_for_calls_on_the_unit_grid():
    s, o = np.array([0.2, 0.7]), np.array([0.0, 1.0])
    kw = dict(binning="even", num_bins=3, units=True)
    assert grouped_bin_stats(None, s, o, **kw)[4] is not None
    assert grouped_bin_stats(None, s, o, np.array([0.3, 0.6]), **kw)[4] is not None
    # scores beyond +-2 are scaled into range, weights below 1/2 lifted: no units
    assert grouped_bin_stats(None, np.array([0.2, 3.0]), o, **kw)[4] is None
    assert grouped_bin_stats(None, s, o, np.array([0.1, 0.2]), **kw)[4] is None


def test_score_units_refuse_to_broadcast_against_an_array():
    u = ScoreUnits.zeros((2, 3))
    assert np.array_equal(u + np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ShapeMismatchError, match=r"\(2, 3\).*\(5, 1, 3\)"):
        u + np.ones((5, 1, 3))
