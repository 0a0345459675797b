"""The exact selection of calibkit.dask (issue 29 item 4): the native pass's bucket tables and
fetched scores are what plain searches give, thresholds of one grouping share one read, and the
bins assembled from whole buckets plus fetched scores are the in-memory tables bit for bit
(no counting pass)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import count_passes, requires

import calibkit
import calibkit.scale.select as sel
from calibkit import _native
from calibkit.binned.groups import score_groups
from calibkit.binned.table import grouped_bin_stats

dask = requires("dask")
da = requires("dask.array")
import calibkit.scale.dask as cdask  # noqa: E402

SYNC = {"scheduler": "synchronous"}


def _awkward(dtype, bounds):
    """Scores on, next to and between the grid's bounds, tiny, negative and past 1."""
    rng = np.random.default_rng(3)
    on = sel.from_keys(bounds, dtype)
    parts = [rng.random(20000), rng.random(5000) ** 20, 1 - rng.random(5000) ** 8,
             -rng.random(100) * 1e-7, on, np.nextafter(on, 3), np.nextafter(on, -3),
             [0.0, -0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 1e-300, 5e-324, 1e-45]]
    s = np.concatenate([np.asarray(x, dtype=np.float64) for x in parts]).astype(dtype)
    return s[np.isfinite(s)]


def _plan(plan, threshold=0.0):
    return (threshold, plan["regions"], plan["bounds"], plan["size"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keys_sort_like_the_values_and_invert(dtype):
    s = np.unique(_awkward(dtype, sel.initial_bounds(dtype, 64)))
    k = sel.to_keys(s)
    assert (np.diff(k) > 0).all()  # -0.0 and 0.0 are one value (np.unique keeps one)
    np.testing.assert_array_equal(sel.from_keys(k, dtype), s.astype(np.float64) + 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("uniform", [64, 10485, 65536])
@pytest.mark.parametrize("per_super", [False, True])
def test_grid_pass_is_the_exact_search(dtype, uniform, per_super):
    """Pass 1 (the grid locator on bit patterns) counts what a search of the bounds counts, and
    its outcome counts and exact score sums add up to the group's; tabled per bucket (kind 0)
    or per super-bucket of 16 with each bucket's count (kind 3)."""
    bounds = sel.initial_bounds(dtype, uniform)
    s = _awkward(dtype, bounds)
    s = s[(s >= -1e-4) & (s <= 1 + 1e-4)]
    outcome = (np.arange(s.size) % 3 == 0).astype(np.uint8)
    plan = {"regions": np.array([[0, 3 if per_super else 0, 0, bounds.size, 0]], dtype=np.int64),
            "bounds": bounds, "size": bounds.size - 1}
    res = _native.select_scan_pairs(s, outcome, None, 1, False, [_plan(plan, -np.inf)])[0]
    (c, o, w, fine), ids = sel.unpack_tables(res[:4]), res[4]
    idx = np.searchsorted(bounds, sel.to_keys(s), side="right") - 1
    counts = np.bincount(idx, minlength=bounds.size - 1)
    np.testing.assert_array_equal(fine, counts if per_super else [])
    tab = idx // sel.SUPER if per_super else idx
    np.testing.assert_array_equal(c[:tab.max() + 1], np.bincount(tab))
    np.testing.assert_array_equal(o[:tab.max() + 1], np.bincount(tab, weights=outcome))
    assert ids.size == 0
    whole = grouped_bin_stats(None, s, outcome, num_bins=1, units=True)[4].words.reshape(-1, 2)
    def total(words):
        return _native.units_sum_at(words, np.zeros(len(words), dtype=np.int64), 1)
    np.testing.assert_array_equal(total(w), total(whole))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("uniform", [64, 1048, 10485, 65536])
def test_grid_cuts_binades_and_keeps_every_uniform_step(dtype, uniform):
    """The first-pass grid: every uniform step on [0, 1]; each binade from 2**-5 to 2**-64 cut
    into binade_split(uniform) equal buckets, those wholly below the first step into
    TINY_SPLIT at least; above 1/16 only the steps, powers of two and the steps toward 1 (so a
    power-of-two grid's steps there stay one run of consecutive multiples)."""
    v = sel.from_keys(sel.initial_bounds(dtype, uniform), dtype)
    assert np.all(np.diff(v) > 0)
    steps = np.linspace(0.0, 1.0, uniform + 1).astype(dtype).astype(np.float64)
    assert np.isin(steps, v).all()
    cut = sel.binade_split(uniform)
    assert cut == {64: 1, 1048: 4, 10485: 32, 65536: 32}[uniform]
    for e in range(5, 65):
        np.testing.assert_array_equal(np.isin(2.0 ** -e * (1 + np.arange(cut) / cut), v), True)
    for e in range(int(np.ceil(1 + np.log2(uniform))), 65):  # the binades wholly below it
        inside = v[(v >= 2.0 ** -e) & (v < 2.0 ** (1 - e))]
        want = 2.0 ** -e * (1 + np.arange(max(cut, sel.TINY_SPLIT)) / max(cut, sel.TINY_SPLIT))
        np.testing.assert_array_equal(inside, want)
    above = v[(v > 1 / 16) & (v < 1.0)]
    pow2 = np.exp2(np.round(np.log2(above))) == above
    near_one = np.isin(above, 1.0 - 2.0 ** -np.arange(1, 54))
    assert (np.isin(above, steps) | pow2 | near_one).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_thresholds_share_one_read_and_equal_their_own_groups(dtype):
    rng = np.random.default_rng(4)
    p = calibkit.softmax(rng.normal(size=(6000, 4)) * 3).astype(dtype)
    y = rng.integers(0, 4, 6000)
    s0, s1, s2 = (sel.Selection(4, dtype, (10, 15)) for _ in range(3))
    both = _native.select_scan(y, p, False, True, [_plan(s0.plan(), 0.0),
                                                   _plan(s1.plan(), 0.01)])
    alone = _native.select_scan(y, p, False, True, [_plan(s2.plan(), 0.01)])
    for a, b in zip(both[1], alone[0]):
        np.testing.assert_array_equal(a, b)
    groups = score_groups(y, p, False, True, 0.01)
    r = both[1]
    s1.advance((*sel.unpack_tables(r[:4]), r[4], r[5], r[6]))
    counts = s1.sizes
    np.testing.assert_array_equal(counts, [g[0].size for g in groups])


def test_fetch_regions_return_exactly_their_scores():
    rng = np.random.default_rng(5)
    s = rng.random(50000).astype(np.float32)
    ok = (s > 0.5).astype(np.uint8)
    keys = np.sort(rng.choice(sel.to_keys(s), 40, replace=False))
    los = keys[::2]
    his = np.minimum(los + 1000, keys[1::2])
    bounds = np.column_stack([los, his]).reshape(-1)
    regions = np.array([[0, 2, 2 * i, 2, 100 + i] for i in range(los.size)], dtype=np.int64)
    res = _native.select_scan_pairs(s, ok, None, 1, False,
                                    [(-np.inf, regions, bounds, 0)])[0]
    ids, got, got_ok = res[4], res[5], res[6]
    k = sel.to_keys(s)
    for i, (lo, hi) in enumerate(zip(los, his)):
        want = np.sort(s[(k >= lo) & (k < hi)])
        np.testing.assert_array_equal(np.sort(got[ids == 100 + i]), want)
        np.testing.assert_array_equal(got_ok[ids == 100 + i], got[ids == 100 + i] > 0.5)


def test_tables_ship_packed_when_they_fit():
    """16 bytes a bucket (int32 counts, one int64 per score sum) unless a sum needs two words."""
    rng = np.random.default_rng(10)
    for n, packed in ((1000, True), (20000, False)):  # 20000 scores near 1 in one bucket
        s = np.concatenate([rng.random(n), np.full(n, 0.99)])
        ok = (rng.random(s.size) < 0.5).astype(np.uint8)
        bounds = np.array([0, sel.to_keys(np.array([0.5]))[0], sel.to_keys(np.array([2.0]))[0]])
        plan = (-np.inf, np.array([[0, 1, 0, 3, 0]]), bounds, 2)
        c, o, w, fine = _native.select_scan_pairs(s, ok, None, 1, False, [plan])[0][:4]
        assert (c.dtype == np.int32 and w.ndim == 1) == packed
        c, o, w, _ = sel.unpack_tables((c, o, w, fine))
        np.testing.assert_array_equal(c, [(s < 0.5).sum(), (s >= 0.5).sum()])
        np.testing.assert_array_equal(o, [ok[s < 0.5].sum(), ok[s >= 0.5].sum()])
        whole = grouped_bin_stats([0] * s.size, s, ok, num_bins=1, units=True)
        assert _native.units_value(w[None]).sum() == pytest.approx(s.sum(), rel=1e-12)
        assert whole[0].sum() == c.sum()


def test_unit_sums_of_packed_and_wide_parts_add_exactly():
    one = np.array([2**62, -5, 7], dtype=np.int64)
    wide = np.array([[1, 0], [-1, -3], [0, 9]], dtype=np.int64)  # 2**64, -3, 9
    got = _native.units_sum_parts([one, wide, one])
    want = [2**64 + 2**63, -13, 23]
    as_int = [(int(h) << 64) + (int(lo) & (2**64 - 1)) for h, lo in got]
    assert as_int == want
    with pytest.raises(calibkit.errors.CalibkitError):
        _native.units_sum_parts([one, one[:2]])


def test_bad_plans_are_calibkit_errors():
    p = np.full((4, 2), 0.5)
    y = np.zeros(4, dtype=np.int64)
    with pytest.raises(calibkit.errors.CalibkitError, match="selection plan"):
        _native.select_scan(y, p, False, True, [(0.0, np.array([[5, 0, 0, 2, 0]]),
                                                 np.array([0, 9]), 1)])
    with pytest.raises(calibkit.errors.CalibkitError, match="cell"):
        _native.units_sum_at(np.zeros((1, 2), dtype=np.int64), np.array([3]), 2)
    ok = (0.0, np.array([[0, 1, 0, 2, 0]]), np.array([0, 9]), 1)
    assert len(_native.select_scan(y, p, False, True, [ok])) == 1
    # a size far past the regions' slots is refused before it is allocated
    with pytest.raises(calibkit.errors.CalibkitError, match="size"):
        _native.select_scan(y, p, False, True, [ok[:3] + (1 << 62,)])
    with pytest.raises(calibkit.errors.CalibkitError, match="NaN"):
        _native.select_scan(y, p, False, True, [(np.nan,) + ok[1:]])
    # not a matrix: a type error naming the argument, not an IndexError
    for probs in (p[:, 0].copy(), [[0.5, 0.5]] * 4):
        with pytest.raises(calibkit.errors.InputTypeError, match="probs"):
            _native.select_scan(y, probs, False, True, [ok])


def test_thresholds_of_one_grouping_share_the_chunk_read(monkeypatch):
    calls = []
    original = _native.select_scan

    def counted(y, p, mp, cc, plans):
        calls.append((mp, cc, [t for t, *_ in plans]))
        return original(y, p, mp, cc, plans)

    monkeypatch.setattr(_native, "select_scan", counted)
    rng = np.random.default_rng(6)
    p = calibkit.softmax(rng.normal(size=(3000, 5)) * 2)
    y = rng.integers(0, 5, 3000)
    ev = cdask.evaluate(da.from_array(y, chunks=3000), da.from_array(p, chunks=(3000, 5)),
                        space=["ACE", "TACE"], num_bins=15, **SYNC)
    assert calls and calls[0] == (False, True, [0.0, 0.01])
    assert all(c[:2] == (False, True) for c in calls)
    for m in ("ACE", "TACE"):
        assert ev.get(m, 15) == calibkit.evaluate(y, p, space=[m], num_bins=15).get(m, 15)


def _data(kind, dtype, n=3000, k=4, seed=8):
    rng = np.random.default_rng(seed)
    if kind == "ties":
        p = rng.dirichlet(np.ones(k), size=5)[rng.integers(0, 5, size=n)]
    elif kind == "grid":
        p = rng.multinomial(10, np.ones(k) / k, size=n) / 10.0
    else:
        p = calibkit.softmax(rng.normal(size=(n, k)) * 3)
    return rng.integers(0, k, size=n), p.astype(dtype)


ADAPTIVE = ["ACE", "TACE", "RMSCE", "gce(adaptive,top,classwise,0.0,l1)",
            "gce(adaptive,all,pooled,0.01,l2)", "gce(adaptive,top,classwise,0.01,l2)"]


@pytest.mark.parametrize("kind", ["softmax", "ties", "grid"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("deep", [False, True])
def test_adaptive_tables_equal_in_memory_bit_for_bit(monkeypatch, kind, dtype, deep):
    """Whole buckets plus fetched scores give the in-memory values bit for bit: matrices and
    their top-label pairs, thresholds 0 and 0.01, ties, several bin counts, and with tiny
    budgets (refined down to single keys, nothing fetched)."""
    if deep:
        monkeypatch.setattr(sel, "FETCH_MAX", 0)
        monkeypatch.setattr(sel, "BUCKET_BUDGET", 64)
    y, p = _data(kind, dtype)
    bins = (1, 3, 15, 40)
    dl, dp = da.from_array(y, chunks=700), da.from_array(p, chunks=(700, p.shape[1]))
    got = cdask.evaluate(dl, dp, space=ADAPTIVE, num_bins=bins, **SYNC)
    want = calibkit.evaluate(y, p, space=ADAPTIVE, num_bins=bins)
    np.testing.assert_array_equal(got.values, want.values)
    pred = p.argmax(axis=1)
    conf, ok = p.max(axis=1), pred == y
    pair_space = ["RMSCE", "gce(adaptive,top,classwise,0.0,l1)",
                  "gce(adaptive,top,classwise,0.01,l2)"]
    args = {"confidence": da.from_array(conf, chunks=500), "correct": da.from_array(ok, chunks=500),
            "predicted": da.from_array(pred, chunks=500), "num_classes": p.shape[1]}
    got = cdask.evaluate(space=pair_space, num_bins=bins, **args, **SYNC)
    want = calibkit.evaluate(space=pair_space, num_bins=bins, confidence=conf, correct=ok,
                             predicted=pred, num_classes=p.shape[1])
    np.testing.assert_array_equal(got.values, want.values)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pairs_with_zero_and_negative_confidences_bit_for_bit(dtype):
    rng = np.random.default_rng(9)
    conf = rng.random(4000)
    conf[::7] = 0.0
    conf[3::11] = -rng.random(conf[3::11].size) * 5e-5  # within the range tolerance
    conf[5::13] = 1.0
    conf = conf.astype(dtype)
    ok = rng.random(4000) < 0.6
    pred = rng.integers(0, 3, 4000)
    space = ["RMSCE", "gce(adaptive,top,classwise,0.0,l1)", "gce(adaptive,top,pooled,0.01,l1)"]
    kw = {"confidence": conf, "correct": ok, "predicted": pred, "num_classes": 3}
    dkw = {k: da.from_array(v, chunks=900) if isinstance(v, np.ndarray) else v
           for k, v in kw.items()}
    got = cdask.evaluate(space=space, num_bins=(2, 10, 30), **dkw, **SYNC)
    want = calibkit.evaluate(space=space, num_bins=(2, 10, 30), **kw)
    np.testing.assert_array_equal(got.values, want.values)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_edges_on_single_keys_retable_their_super_buckets(monkeypatch, dtype):
    """Pass 1 tables super-buckets of 16 grid buckets: when every edge falls on a single key
    (0, 1, the floats just below 1, exactly on grid bounds), the super-buckets holding them are
    tabled again around them in a second pass (runs of buckets between ranks, single keys
    alone), and the values stay those of memory bit for bit."""
    calls = count_passes(monkeypatch)
    rng = np.random.default_rng(12)
    one = dtype(1.0)
    below = [np.nextafter(one, dtype(0))]
    for _ in range(3):
        below.append(np.nextafter(below[-1], dtype(0)))
    # grid bounds in the super-buckets (above 1/16; below it every bucket is tabled in pass 1)
    grid = sel.initial_bounds(dtype, sel.grid_size(3))
    grid_on = sel.from_keys(grid[grid >= sel.to_keys(np.array([1 / 16], dtype))[0]][200:232],
                            dtype)
    values = np.concatenate([[0.0, 1.0], np.asarray(below, dtype=np.float64), grid_on])
    v = values[rng.integers(0, values.size, size=5000)].astype(dtype)
    p = np.column_stack([v, 1 - v])
    y = rng.integers(0, 2, size=5000)
    dl, dp = da.from_array(y, chunks=1200), da.from_array(p, chunks=(1200, 2))
    space = ["ACE", "TACE", "gce(adaptive,all,pooled,0.0,l2)"]
    bins = (2, 7, 15, 40)
    got = cdask.evaluate(dl, dp, space=space, num_bins=bins, **SYNC)
    np.testing.assert_array_equal(got.values, calibkit.evaluate(y, p, space=space,
                                                                num_bins=bins).values)
    assert len(calls) == 2  # grid, then the super-buckets' tables and fetches
    pred = rng.integers(0, 3, size=5000)
    kw = {"confidence": v, "correct": y == 1, "predicted": pred, "num_classes": 3}
    dkw = {k: da.from_array(x, chunks=1100) if isinstance(x, np.ndarray) else x
           for k, x in kw.items()}
    space = ["RMSCE", "gce(adaptive,top,classwise,0.0,l1)", "gce(adaptive,top,pooled,0.01,l1)"]
    got = cdask.evaluate(space=space, num_bins=bins, **dkw, **SYNC)
    np.testing.assert_array_equal(got.values, calibkit.evaluate(space=space, num_bins=bins,
                                                                **kw).values)


def test_retabling_splits_super_buckets_at_ranked_buckets():
    """The table targets of one super-bucket: runs of unranked buckets, each ranked single
    key alone, nothing for empty runs; the ranked buckets of several keys are left to the
    refine/fetch targets."""
    bounds = np.array([0, 10, 11, 20, 30, 31, 40, 50] + list(range(60, 60 + 2 * sel.SUPER, 2)))
    c = np.ones(bounds.size - 1, dtype=np.int64)
    c[5] = 0  # an empty run: no target
    piece = [bounds[:-1:sel.SUPER], np.array([9, 9]), np.array([5, 5]), np.ones((2, 2))]
    out = sel.Selection._retable(0, bounds, c, np.array([1, 3, 4, 6]), piece)  # 1, 4: single
    got = [(u["lo"], u["hi"], u["count"]) for u in out]
    assert got == [(0, 10, 1), (10, 11, 1), (11, 20, 1), (30, 31, 1), (50, 76, 9)]
    assert all(u["kind"] == "table" and not len(u["ranks"]) for u in out)
    assert piece[1][0] == 0 and piece[2][0] == 0 and (piece[3][0] == 0).all()
    assert piece[1][1] == 9  # a super-bucket with no rank stays whole
