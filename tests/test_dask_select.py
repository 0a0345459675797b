"""The fast paths of the exact selection (issue 29 item 4): the first pass's grid buckets by a
lookup table, fetched scores by comparisons, and groupings that differ by their threshold
sharing one chunk's groups; each must find what the plain searches find."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires

import calibkit
import calibkit.scale.select as sel
from calibkit.binned.groups import score_groups
from calibkit.binned.table import adaptive_positions


def _awkward(dtype, bounds):
    """Scores on, next to and between the grid's bounds, tiny, negative and past 1."""
    rng = np.random.default_rng(3)
    on = sel.from_keys(bounds, dtype)
    parts = [rng.random(20000), rng.random(5000) ** 20, 1 - rng.random(5000) ** 8,
             -rng.random(100) * 1e-7, on, np.nextafter(on, 3), np.nextafter(on, -3),
             [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 1e-300, 5e-324, 1e-45]]
    s = np.concatenate([np.asarray(x, dtype=np.float64) for x in parts]).astype(dtype)
    return s[np.isfinite(s)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("uniform", [64, 10485, 65536])
def test_grid_locator_is_the_exact_search(dtype, uniform):
    bounds = sel.initial_bounds(dtype, uniform)
    s = _awkward(dtype, bounds)
    want = np.searchsorted(bounds, sel.to_keys(s), side="right") - 1
    got = sel._grid_locator(np.dtype(dtype).str, uniform)(s)
    np.testing.assert_array_equal(got, want)


def _sorted_fetch(groups, plan, dtype):
    """Each target's fetched scores, sorted (the fetch order within a chunk is free)."""
    _, fetched = sel.scan_groups(groups, plan, dtype)
    return {t: np.sort(np.concatenate(v)) for t, v in fetched.items()}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scan_with_a_threshold_equals_the_groups_of_that_threshold(dtype):
    rng = np.random.default_rng(4)
    p = calibkit.softmax(rng.normal(size=(6000, 4)) * 3).astype(dtype)
    y = rng.integers(0, 4, 6000)
    low = score_groups(y, p, False, True, 0.0)
    for t in (0.01, 0.3):
        own = score_groups(y, p, False, True, t)
        s_own, s_low = sel.Selection(4, dtype, (10, 15)), sel.Selection(4, dtype, (10, 15))
        located: dict = {}
        sel.scan_groups(low, s_low.plan(), dtype, located=located)  # fills the shared buckets
        while not s_own.done:
            plan = s_own.plan()
            a = sel.scan_groups(own, plan, dtype)
            b = sel.scan_groups(low, plan, dtype, threshold=t, located=located)
            np.testing.assert_array_equal(sel.unpack(a[0]), sel.unpack(b[0]))
            assert a[1].keys() == b[1].keys()
            for tid in a[1]:
                np.testing.assert_array_equal(np.sort(np.concatenate(a[1][tid])),
                                              np.sort(np.concatenate(b[1][tid])))
            s_own.advance(*a)
        for b in (10, 15):
            want = np.sort(own[0][0])[adaptive_positions(own[0][0].size, b)]
            np.testing.assert_array_equal(s_own.edges(0, b), want)


def test_many_fetch_targets_take_the_sort(monkeypatch):
    """Direct and sorted fetching find the same scores."""
    rng = np.random.default_rng(5)
    s = rng.random(50000).astype(np.float32)
    groups = [(s, s > 0.5)]
    los = np.sort(rng.choice(sel.to_keys(s), 40, replace=False))
    his = los + 1000
    keep = np.r_[True, his[:-1] <= los[1:]]
    plan = {"size": 0, "refine": {}, "fetch": {0: (los[keep], his[keep],
                                                    np.arange(keep.sum(), dtype=np.int64))}}
    direct = _sorted_fetch(groups, plan, np.float32)
    monkeypatch.setattr(sel, "FETCH_DIRECT", 0)
    assert direct.keys() == _sorted_fetch(groups, plan, np.float32).keys()
    for t, v in _sorted_fetch(groups, plan, np.float32).items():
        np.testing.assert_array_equal(direct[t], v)


def test_thresholds_of_one_grouping_share_the_chunk_groups(monkeypatch):
    requires("dask")
    da = requires("dask.array")
    import calibkit.scale.dask as cdask

    calls = []
    original = cdask.score_groups

    def counted(*args):
        calls.append(args[2:])
        return original(*args)

    monkeypatch.setattr(cdask, "score_groups", counted)
    rng = np.random.default_rng(6)
    p = calibkit.softmax(rng.normal(size=(3000, 5)) * 2)
    y = rng.integers(0, 5, 3000)
    ev = cdask.evaluate(da.from_array(y, chunks=3000), da.from_array(p, chunks=(3000, 5)),
                        space=["ACE", "TACE"], num_bins=15, scheduler="synchronous")
    # one score_groups per chunk and selection pass; the counting pass forms both groupings'
    assert calls[:-2] and all(c == (False, True, 0.0) for c in calls[:-2])
    for m in ("ACE", "TACE"):
        assert ev.get(m, 15) == pytest.approx(calibkit.evaluate(y, p, space=[m], num_bins=15)
                                              .get(m, 15), rel=1e-12, abs=1e-15)
