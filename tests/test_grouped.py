"""The weighted binning primitive (calibkit.binned.table.grouped_bin_stats, rust/kernels/weighted/grouped.rs).

Checked against independent computations: reference.py's binning, the existing kernels'
bin_stats, and the weight-expanded sample (np.repeat) for integer weights.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibkit import _native, reference
from calibkit.binned.table import adaptive_positions, grouped_bin_stats
from calibkit.errors import (
    InputTypeError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    ShapeMismatchError,
)

TOL = 1e-12


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


def same_edges(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])


def rows_of(groups):
    """(group ids, scores, outcomes) of a list of (scores, outcomes) groups."""
    g = np.concatenate([np.full(len(s), i, dtype=np.int64) for i, (s, _) in enumerate(groups)])
    s = np.concatenate([s for s, _ in groups])
    o = np.concatenate([o for _, o in groups])
    return g, s, o


def reference_stats(groups, binning, num_bins):
    """Per-group statistics written out with reference.upper_edges / reference.bin_index."""
    nb = num_bins + 1 if binning == "even" else num_bins
    c = np.zeros((len(groups), nb))
    ss = np.zeros((len(groups), nb))
    so = np.zeros((len(groups), nb))
    for i, (s, o) in enumerate(groups):
        if len(s) == 0:
            continue
        idx = reference.bin_index(s, reference.upper_edges(s, binning, num_bins))
        c[i] = np.bincount(idx, minlength=nb)
        ss[i] = np.bincount(idx, weights=s, minlength=nb)
        so[i] = np.bincount(idx, weights=o, minlength=nb)
    return c, ss, so


def random_case(seed, n=200, k=4, decimals=None):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k) * 0.5, size=n)
    if decimals is not None:  # ties
        p = np.round(p, decimals)
        p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, size=n)
    return y, p


GROUPINGS = [(mp, cc, t) for mp in (True, False) for cc in (True, False) for t in (0.0, 0.01)]


@pytest.mark.parametrize("binning", ["even", "adaptive"])
@pytest.mark.parametrize("max_prob,cc,threshold", GROUPINGS)
@pytest.mark.parametrize("seed,decimals", [(0, None), (1, 1), (2, 2)])
def test_unweighted_equals_reference_and_existing_kernels(binning, max_prob, cc, threshold, seed,
                                                          decimals):
    y, p = random_case(seed, decimals=decimals)
    groups = reference.score_groups(y, p, max_prob=max_prob, class_conditional=cc,
                                    threshold=threshold)
    g, s, o = rows_of(groups)
    for b in (1, 2, 7, 15):
        c, ss, so, e = grouped_bin_stats(g, s, o, num_groups=len(groups), binning=binning,
                                         num_bins=b)
        rc, rss, rso = reference_stats(groups, binning, b)
        assert np.array_equal(c, rc)
        close(ss, rss)
        close(so, rso)
        kc, kss, kso, ke = _native.bin_stats(y, p, binning, max_prob, cc, threshold, b)
        assert np.array_equal(c, kc)
        close(ss, kss)
        close(so, kso)
        same_edges(e[:, 1:], ke[:, 1:])  # the kernel's adaptive lower boundary is the threshold


@given(
    seed=st.integers(0, 2**31),
    m=st.integers(0, 60),
    num_groups=st.integers(1, 4),
    num_bins=st.integers(1, 12),
    levels=st.integers(1, 20),
    max_weight=st.integers(0, 5),
    f32=st.booleans(),
)
def test_integer_weights_equal_repeated_rows(seed, m, num_groups, num_bins, levels, max_weight,
                                             f32):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, num_groups, size=m)
    s = (rng.integers(0, levels + 1, size=m) / levels).astype(np.float32 if f32 else np.float64)
    o = rng.integers(0, 2, size=m).astype(np.float64)
    w = rng.integers(0, max_weight + 1, size=m)
    for binning in ("even", "adaptive"):
        kw = dict(num_groups=num_groups, binning=binning, num_bins=num_bins)
        got = grouped_bin_stats(g, s, o, w.astype(np.float64), **kw)
        want = grouped_bin_stats(np.repeat(g, w), np.repeat(s, w), np.repeat(o, w), **kw)
        assert np.array_equal(got[0], want[0])
        close(got[1], want[1])
        close(got[2], want[2])
        same_edges(got[3], want[3])
        # and the expanded sample agrees with reference.py group by group
        groups = [(np.repeat(s, w)[np.repeat(g, w) == i].astype(np.float64),
                   np.repeat(o, w)[np.repeat(g, w) == i]) for i in range(num_groups)]
        rc, rss, rso = reference_stats(groups, binning, num_bins)
        assert np.array_equal(got[0], rc)
        close(got[1], rss)
        close(got[2], rso)


@given(seed=st.integers(0, 2**31), m=st.integers(1, 50), num_bins=st.integers(1, 10))
def test_zero_weight_drops_the_row(seed, m, num_bins):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, size=m)
    s = rng.uniform(size=m)
    o = rng.integers(0, 2, size=m).astype(float)
    w = rng.uniform(0.1, 3.0, size=m)
    w[rng.uniform(size=m) < 0.3] = 0.0
    keep = w > 0
    for binning in ("even", "adaptive"):
        a = grouped_bin_stats(g, s, o, w, num_groups=3, binning=binning, num_bins=num_bins)
        b = grouped_bin_stats(g[keep], s[keep], o[keep], w[keep], num_groups=3, binning=binning,
                              num_bins=num_bins)
        for x, y in zip(a[:3], b[:3]):
            close(x, y)
        same_edges(a[3], b[3])


def test_fractional_weights_follow_the_documented_rule():
    # W = 2.5, B = 2: t_1 = round_half_even(1.25) = 1; cumulative weights 0.5, 1.0, 2.5: the
    # first row whose cumulative weight exceeds 1 is the third (score 0.3).
    c, ss, so, e = grouped_bin_stats(None, [0.1, 0.2, 0.3], [0, 1, 1], [0.5, 0.5, 1.5],
                                     binning="adaptive", num_bins=2)
    assert e.tolist() == [[0.0, 0.3, 1.0]]
    close(c, [[1.0, 1.5]])
    close(ss, [[0.5 * 0.1 + 0.5 * 0.2, 1.5 * 0.3]])
    close(so, [[0.5, 1.5]])


def test_scaling_integer_weights_keeps_even_statistics_proportional():
    rng = np.random.default_rng(3)
    s, o = rng.uniform(size=100), rng.integers(0, 2, size=100).astype(float)
    a = grouped_bin_stats(None, s, o, np.ones(100), num_bins=10)
    b = grouped_bin_stats(None, s, o, np.full(100, 3.0), num_bins=10)
    for x, y in zip(a[:3], b[:3]):
        close(3 * x, y)


def test_long_repeated_sums_stay_accurate():
    m = 1_000_000
    s = np.full(m, 0.9)
    o = np.ones(m)
    for binning in ("even", "adaptive"):
        c, ss, so, _ = grouped_bin_stats(None, s, o, binning=binning, num_bins=3)
        assert c.sum() == m
        assert abs(ss.sum() - 0.9 * m) <= 1e-12 * m
        c, ss, _, _ = grouped_bin_stats(None, s, o, np.full(m, 0.1), binning=binning, num_bins=3)
        assert abs(c.sum() - 0.1 * m) <= 1e-12 * m
        assert abs(ss.sum() - 0.09 * m) <= 1e-12 * m


def test_big_endian_and_other_dtypes():
    s = np.array([0.1, 0.5, 0.9], dtype=">f4")
    a = grouped_bin_stats(None, s, [0, 1, 1], num_bins=4)
    b = grouped_bin_stats(None, s.astype(np.float32), [0, 1, 1], num_bins=4)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    a = grouped_bin_stats(np.array([0, 1, 1], dtype=np.uint8), [0.1, 0.5, 0.9],
                          np.array([False, True, True]), num_bins=4)
    assert a[0].shape == (2, 5)


def test_adaptive_positions_are_specs():
    for n in (0, 1, 5, 10, 101):
        for b in (1, 2, 3, 7, 15):
            want = reference.upper_edges(np.arange(float(n)), "adaptive", b)
            assert adaptive_positions(n, b).tolist() == want.astype(int).tolist()


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(weights=[1.0, -1.0, 1.0]), InvalidParameterError, r"weights\[1\].*>= 0"),
        (dict(weights=[1.0, np.nan, 1.0]), InvalidParameterError, r"weights\[1\].*finite"),
        (dict(weights=[1.0, np.inf, 1.0]), InvalidParameterError, r"weights\[1\]"),
        (dict(weights=[1.0, 1.0]), ShapeMismatchError, "weights has 2"),
        (dict(weights=[1e308, 1e308, 1.0]), InvalidParameterError, "scale the weights down"),
        (dict(weights=[[1.0, 1.0, 1.0]]), ShapeMismatchError, "1-D"),
        (dict(weights=["a", "b", "c"]), InputTypeError, "real numbers"),
        (dict(groups=[0, 3, 1], num_groups=3), InvalidParameterError, r"groups\[1\] is 3"),
        (dict(groups=[0, -1, 1]), InvalidParameterError, r"groups\[1\] is -1"),
        (dict(groups=[0, 1]), ShapeMismatchError, "groups has 2"),
        (dict(groups=[0, 0.5, 1]), InputTypeError, "integer"),
        (dict(num_groups=0), InvalidParameterError, "num_groups"),
        (dict(num_groups=True), InputTypeError, "num_groups"),
        (dict(scores=[0.1, np.nan, 0.3]), InvalidProbabilitiesError, r"scores\[1\]"),
        (dict(outcomes=[0, np.inf, 1]), InvalidParameterError, r"outcomes\[1\]"),
        (dict(outcomes=[0, 1]), ShapeMismatchError, "outcomes has 2"),
        (dict(binning="quantile"), InvalidParameterError, "binning"),
        (dict(num_bins=0), InvalidParameterError, "num_bins"),
        (dict(num_bins=10**9), InvalidParameterError, "at most 1000000"),
        (dict(num_groups=1000, num_bins=10**6), InvalidParameterError, "table"),
    ],
)
def test_bad_arguments_raise_calibkit_errors(kwargs, exc, match):
    args = dict(groups=None, scores=[0.1, 0.5, 0.9], outcomes=[0, 1, 1])
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        grouped_bin_stats(args.pop("groups"), args.pop("scores"), args.pop("outcomes"), **args)


def test_native_binding_refuses_without_panicking():
    s = np.array([0.1, 0.5])
    o = np.array([0.0, 1.0])
    with pytest.raises(InvalidParameterError, match="weights"):
        _native.grouped_bin_stats(None, s, o, np.array([1.0, -2.0]), 1, "even", 3)
    with pytest.raises(InvalidParameterError, match="groups"):
        _native.grouped_bin_stats(np.array([0, 5]), s, o, None, 2, "even", 3)
    with pytest.raises(ShapeMismatchError):
        _native.grouped_bin_stats(None, s, o[:1], None, 1, "even", 3)
    with pytest.raises(InvalidParameterError, match="table"):
        _native.grouped_bin_stats(None, s, o, None, 10**6, "adaptive", 10**6)
    with pytest.raises(InvalidParameterError, match="scale the weights down"):
        _native.grouped_bin_stats(None, s, o, np.array([1e308, 1e308]), 1, "adaptive", 3)


@given(seed=st.integers(0, 2**31), m=st.integers(0, 60), num_bins=st.integers(1, 10))
def test_given_edges_reproduce_the_adaptive_table(seed, m, num_bins):
    from calibkit.binned.table import grouped_bin_stats_at

    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, size=m)
    s = np.round(rng.uniform(size=m), 1)
    o = rng.integers(0, 2, size=m).astype(float)
    c, ss, so, e = grouped_bin_stats(g, s, o, num_groups=3, binning="adaptive",
                                     num_bins=num_bins)
    upper = np.nan_to_num(e[:, 1:-1], nan=0.0)
    c2, ss2, so2, e2 = grouped_bin_stats_at(g, s, o, upper, num_groups=3)
    assert np.array_equal(c, c2) and np.array_equal(ss, ss2) and np.array_equal(so, so2)
    # and each score's bin is reference.bin_index against its group's edges
    for i in range(3):
        mine = g == i
        idx = reference.bin_index(s[mine], upper[i])
        assert np.array_equal(c2[i], np.bincount(idx, minlength=num_bins))


def test_given_edges_errors():
    from calibkit.binned.table import grouped_bin_stats_at

    with pytest.raises(InvalidParameterError, match="non-decreasing"):
        grouped_bin_stats_at(None, [0.1, 0.5], [0, 1], [[0.6, 0.2]])
    with pytest.raises(InvalidParameterError, match="non-decreasing"):
        grouped_bin_stats_at(None, [0.1, 0.5], [0, 1], [[np.nan, 0.2]])
    with pytest.raises(ShapeMismatchError, match="one row per group"):
        grouped_bin_stats_at([0, 1], [0.1, 0.5], [0, 1], [[0.5]])
    with pytest.raises(InvalidParameterError, match="num_bins"):
        grouped_bin_stats_at(None, [0.1], [0], np.zeros((1, 10**6)))


def test_even_boundaries_are_specs():
    from calibkit.binned.table import even_boundaries

    for b in (1, 2, 3, 10, 15, 97):
        want = np.concatenate([[0.0], reference.upper_edges([], "even", b), [1.0]])
        assert np.array_equal(even_boundaries(b), want)


def test_native_scores_of_another_dtype_are_a_type_error():
    from calibkit.errors import InputTypeError

    with pytest.raises(InputTypeError, match="float32 or float64"):
        _native.grouped_bin_stats(None, np.zeros(3, np.int32), np.zeros(3), None, 1, "even", 5)


def test_adaptive_positions_of_many_sizes_and_bad_sizes():
    # The array form is the scalar rule row by row; malformed sizes are clear errors, and a
    # table too large to hold is refused before it is allocated.
    from calibkit.errors import InvalidParameterError, ParameterTypeError

    sizes = np.array([0, 1, 2, 7, 10, 299])
    for b in (1, 2, 3, 15):
        got = adaptive_positions(sizes, b)
        assert got.shape == (sizes.size, b - 1)
        for n, row in zip(sizes, got):
            want = adaptive_positions(int(n), b) if n else np.zeros(b - 1, np.int64)
            np.testing.assert_array_equal(row, want)
    np.testing.assert_array_equal(adaptive_positions(np.array(10), 3), [3, 7])
    for bad in (np.array([[10]]), np.array([10.5]), 2.5, True):
        with pytest.raises(ParameterTypeError):
            adaptive_positions(bad, 3)
    for bad in (-1, np.array([4, -1])):
        with pytest.raises(InvalidParameterError, match="-1"):
            adaptive_positions(bad, 3)
    with pytest.raises(InvalidParameterError, match="fewer groups or bins"):
        adaptive_positions(np.full(10**5, 5), 10**6)
