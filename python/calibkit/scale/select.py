"""Private: exact distributed selection of adaptive bin edges by histogram refinement.

Used by :mod:`calibkit.dask`. The data live in row chunks that are read once per pass; only small
summaries travel. For every score group we need the order statistics at SPEC's adaptive positions
(for every requested bin count). Kept scores are floats of at least -RANGE_TOL (top-label pairs
keep a confidence of 0, or just below it within the tolerance, at threshold 0); their IEEE bit
patterns, read as integers with the magnitude bits of negative values flipped ("keys", -0.0 taken
as +0.0), sort exactly like the values; all bucketing happens on keys, so it is exact and
identical on every worker.

Pass 1 counts each group's keys in a fixed grid of buckets (powers of two for tiny values, a
uniform grid on [0, 1], ``1 - 2**-j`` steps next to 1, and a bucket of its own for exactly 1.0);
it gives the group sizes and thus the wanted ranks. Each later pass takes, for every wanted rank,
the bucket that holds it (known from the cumulative counts) and either splits it into finer
buckets (a *refine* target), or, once it holds few enough scores, fetches its scores (a *fetch*
target) so the rank can be read off exactly. A bucket that is a single key is resolved at once
(its value is the key). Every refine step shrinks a bucket's key range at least 16-fold, so the
number of passes is bounded (in practice one or two before the counting pass).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..binned.groups import kept
from ..binned.table import adaptive_positions
from ..errors import SelectionError

__all__ = [
    "Selection",
    "SelectionError",
    "bounds_of",
    "from_keys",
    "grid_size",
    "initial_bounds",
    "scan_groups",
    "split_bounds",
    "to_keys",
]

#: Total buckets per pass (over all refine targets): bounds the size of every partial result.
BUCKET_BUDGET = 1 << 20
#: A target is fetched when it holds at most this many scores ...
FETCH_MAX = 1 << 18
#: ... and the scores fetched in one pass stay below this total.
FETCH_BUDGET = 1 << 22


def _signed(bits: np.ndarray, mask: int) -> np.ndarray:
    """Bit patterns (as signed ints) -> order-preserving keys: negative values get their
    magnitude bits flipped (an involution, so it also maps keys back); -0.0 (key -1) is +0.0."""
    if not (bits < 0).any():  # positive scores (every matrix form): the bits themselves
        return bits
    out = np.where(bits < 0, bits ^ bits.dtype.type(mask), bits)
    out[out == -1] = 0
    return out


def to_keys(scores: np.ndarray) -> np.ndarray:
    """Order-preserving int64 keys of float32/float64 scores (their bit patterns, see
    :func:`_signed`)."""
    if scores.dtype == np.float32:
        return _signed(scores.view(np.int32), 0x7FFFFFFF).astype(np.int64)
    return _signed(np.ascontiguousarray(scores, dtype=np.float64).view(np.int64),
                   0x7FFFFFFFFFFFFFFF)


def from_keys(keys, dtype) -> np.ndarray:
    """Float64 values of keys made by :func:`to_keys` for ``dtype`` (exact widening)."""
    k = np.asarray(keys, dtype=np.int64)
    if np.dtype(dtype) == np.float32:
        return _signed(k.astype(np.int32), 0x7FFFFFFF).view(np.float32).astype(np.float64)
    return _signed(k, 0x7FFFFFFFFFFFFFFF).view(np.float64)


def grid_size(num_groups: int) -> int:
    """Uniform steps on [0, 1] of the first-pass grid, for ``num_groups`` groups."""
    return int(np.clip(BUCKET_BUDGET // max(num_groups, 1), 64, 1 << 16))


def initial_bounds(dtype, uniform: int) -> np.ndarray:
    """Sorted unique keys of the first-pass grid; it covers every key in
    ``[key(-1.0), key(2.0))``.

    The grid: powers of two for tiny values, ``uniform`` equal steps on [0, 1], ``1 - 2**-j``
    next to 1, and a bucket of its own for exactly 1.0.
    """
    return _initial_bounds(np.dtype(dtype).str, int(uniform))


@functools.lru_cache(maxsize=16)
def _initial_bounds(dtype_str: str, uniform: int) -> np.ndarray:
    dtype = np.dtype(dtype_str)
    if dtype == np.float32:
        tiny = 2.0 ** -np.arange(1, 150)
        near_one = 1.0 - 2.0 ** -np.arange(1, 25)
    else:
        tiny = 2.0 ** -np.concatenate([np.arange(1, 65), np.arange(72, 1075, 8)])
        near_one = 1.0 - 2.0 ** -np.arange(1, 54)
    one = dtype.type(1.0)
    vals = np.concatenate([
        [-1.0, 0.0], tiny, np.linspace(0.0, 1.0, uniform + 1), near_one,
        [1.0, float(np.nextafter(one, dtype.type(2.0))), 2.0],
    ]).astype(dtype)
    out = np.unique(to_keys(vals))
    out.setflags(write=False)
    return out


def bounds_of(spec, dtype) -> np.ndarray:
    """The bucket bounds a target spec stands for: ``("grid", uniform)`` or ``("split", lo, hi,
    m)``. Everything the chunks need travels in the spec, so workers and coordinator agree."""
    if spec[0] == "grid":
        return initial_bounds(dtype, spec[1])
    return split_bounds(*spec[1:])


def split_bounds(lo: int, hi: int, m: int) -> np.ndarray:
    """About ``m`` equal key-width buckets covering ``[lo, hi)``: ``m + 1`` increasing bounds."""
    width = hi - lo
    if width <= m:
        return np.arange(lo, hi + 1, dtype=np.int64)
    i = np.arange(m + 1, dtype=np.int64)
    step, rem = divmod(width, m)
    return lo + i * np.int64(step) + (i * np.int64(rem)) // np.int64(m)


class _GridLocator:
    """Bucket of each score in the first-pass grid, without sorting (exactly
    ``searchsorted(bounds, key, "right") - 1``).

    Non-negative scores are mapped by their bit pattern to cells of a lookup table: below
    ``2**-8`` a few cells per binade, above it cells of ``2**(mantissa - 16)`` ulps, narrower than
    half the grid's uniform step, so a cell holds at most one bound inside it and one comparison
    finishes the lookup. Cells holding more (next to 1.0, among the powers of two) and negative
    scores take the exact search.
    """

    def __init__(self, bounds: np.ndarray, dtype):
        dtype = np.dtype(dtype)
        self.int = np.int32 if dtype == np.float32 else np.int64
        mant = 23 if dtype == np.float32 else 52
        self.bounds = bounds
        # bound keys with a sentinel, in the bit patterns' integer type for the comparisons
        top = np.iinfo(self.int).max
        self.keys = np.concatenate([np.clip(bounds, -top - 1, top), [top]]).astype(self.int)
        self.fine = self.int(to_keys(np.array([2.0 ** -8], dtype=dtype))[0])
        self.end = self.int(to_keys(np.array([2.0], dtype=dtype))[0])
        self.coarse_shift, self.fine_shift = mant - 8, mant - 16
        n_coarse = int(self.fine) >> self.coarse_shift
        n_fine = (int(self.end) - int(self.fine) >> self.fine_shift) + 1
        starts = np.concatenate([
            np.arange(n_coarse, dtype=np.int64) << self.coarse_shift,
            int(self.fine) + (np.arange(n_fine, dtype=np.int64) << self.fine_shift)])
        stops = np.append(starts[1:], int(self.end) + (1 << self.fine_shift))
        first = np.searchsorted(bounds, starts, side="right") - 1
        inside = np.searchsorted(bounds, stops, side="left") - (first + 1)
        self.offset = self.int(n_coarse)
        # -2: a cell with more than one bound inside it, and (last entry) negative scores or
        # scores past 2.0: the exact search
        self.table = np.append(np.where(inside <= 1, first, -2), -2).astype(self.int)

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        bits = scores.view(self.int)
        cell = bits - self.fine
        cell >>= self.fine_shift
        cell += self.offset
        np.copyto(cell, bits >> self.coarse_shift, where=bits < self.fine)
        np.clip(cell, -1, self.table.size - 1, out=cell)  # -1: the last entry
        idx = self.table[cell]
        slow = idx == -2
        idx += self.keys[idx + 1] <= bits  # -2 reads the sentinel; fixed below
        if slow.any():
            idx[slow] = np.searchsorted(self.bounds, to_keys(scores[slow]), side="right") - 1
        return idx


@functools.lru_cache(maxsize=8)
def _grid_locator(dtype_str: str, uniform: int) -> _GridLocator:
    return _GridLocator(_initial_bounds(dtype_str, uniform), np.dtype(dtype_str))


def _fetch_direct(s: np.ndarray, keep, lo_v: np.ndarray, hi_v: np.ndarray, ids,
                  fetched: dict) -> None:
    """The scores (those ``keep`` marks, if given) of each of a few fetch targets, by
    comparisons, in chunk order (no sort)."""
    for t, a, b in zip(ids, lo_v, hi_v):
        m = s >= a
        m &= s < b
        if keep is not None:
            m &= keep
        if m.any():
            fetched.setdefault(int(t), []).append(s[m])


#: Up to this many fetch targets in a group, their scores are found by comparisons, not a sort.
FETCH_DIRECT = 24


def _pack_slots(slots: np.ndarray, size: int):
    """Histogram of slot indices, dense or sparse (whichever is smaller)."""
    if slots.size * 4 < size:
        idx, cnt = np.unique(slots, return_counts=True)
        return ("sparse", size, idx, cnt.astype(np.int64))
    return _dense(np.bincount(slots, minlength=size))


def _dense(counts: np.ndarray):
    # A chunk's counts fit in int32 (half the bytes to ship); sums are taken in int64.
    small = counts.size == 0 or counts.max() < np.iinfo(np.int32).max
    return ("dense", counts.astype(np.int32 if small else np.int64))


def unpack(packed) -> np.ndarray:
    """Dense int64 counts of a (possibly sparse) packed histogram."""
    if packed[0] == "dense":
        return packed[1].astype(np.int64, copy=False)
    out = np.zeros(packed[1], dtype=np.int64)
    out[packed[2]] = packed[3]
    return out


def add_packed(a, b):
    """Sum of two packed histograms of the same size (packed again; arguments unchanged)."""
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == "sparse" and b[0] == "sparse" and (a[2].size + b[2].size) * 4 < a[1]:
        idx, inv = np.unique(np.concatenate([a[2], b[2]]), return_inverse=True)
        cnt = np.bincount(inv, weights=np.concatenate([a[3], b[3]]).astype(np.float64))
        return ("sparse", a[1], idx, np.rint(cnt).astype(np.int64))
    return ("dense", unpack(a) + unpack(b))


def scan_groups(groups, plan, dtype, threshold=None, located=None):
    """One chunk's contribution to one pass for one score grouping.

    Parameters
    ----------
    groups : list of (scores, outcomes)
        The chunk's kept scores per group (see :func:`calibkit.binned.groups.score_groups`).
    plan : dict
        ``{"size": int, "refine": {g: (target specs, offset)}, "fetch": {g: (lo, hi, ids)}}``
        as made by :meth:`Selection.plan` (a target spec is ``("grid", uniform)`` or
        ``("split", lo, hi, m)``, see :func:`bounds_of`).
    dtype : numpy.dtype
        The float dtype the keys were made from.
    threshold : float, optional
        Scan only the scores :func:`calibkit.binned.groups.kept` keeps at this threshold:
        ``groups`` are those of a lower threshold of the same grouping (a grouping's groups at
        a higher threshold are its groups at a lower one, filtered in order), so the groupings
        of one chunk that differ by their threshold share one :func:`score_groups`.
    located : dict, optional
        Grid buckets of ``groups`` found by an earlier call on the same ``groups`` (filled in
        here): such groupings locate their scores in the first pass's grid once.

    Returns
    -------
    (packed counts of length ``plan["size"]``, {target id: list of fetched score arrays})

    Notes
    -----
    Counting n scores into the first pass's grid: each score's bucket from a lookup table on
    its bit pattern (:class:`_GridLocator`, linear in n). Into other buckets (m of them): when n
    is small the scores are looked up in the bucket bounds (n log m); otherwise the scores are
    sorted once and the bounds looked up in them (n log n for a cache-friendly SIMD sort, then
    m log n). Fetching the scores of a few targets takes two comparisons per score and target;
    of many, the sort.
    """
    size = plan["size"]
    slots, dense = [], None
    sorted_cache: dict[int, np.ndarray] = {}
    masks: dict[int, np.ndarray | None] = {}

    def keep(g):  # the threshold's mask of group g (None: every score)
        if threshold is None:
            return None
        if g not in masks:
            masks[g] = kept(groups[g][0], threshold)
        return masks[g]

    def scores(g):  # group g's scanned scores, in chunk order
        s, m = groups[g][0], keep(g)
        return s if m is None else s[m]

    for g, (specs, offset) in plan["refine"].items():
        s = groups[g][0]
        if s.size == 0:
            continue
        if len(specs) == 1 and specs[0][0] == "grid" and s.dtype == dtype and s.size >= 1024:
            found = None if located is None else located.get((g, specs[0]))
            if found is None:
                found = _grid_locator(np.dtype(dtype).str, specs[0][1])(s)
                if located is not None:
                    located[(g, specs[0])] = found
            idx = found if keep(g) is None else np.where(keep(g), found, -1)
            last = bounds_of(specs[0], dtype).size - 1  # scores at or past the grid's end
            c = np.bincount(idx + 1, minlength=last + 2)[1:last + 1]
            if dense is None:
                dense = np.zeros(size, dtype=np.int64)
            dense[offset:offset + c.size] += c
            continue
        s = scores(g)
        if s.size == 0:
            continue
        parts = [bounds_of(spec, dtype) for spec in specs]
        bounds = parts[0] if len(parts) == 1 else np.concatenate(parts)
        is_end = np.zeros(bounds.size, dtype=bool)
        is_end[np.cumsum([b.size for b in parts]) - 1] = True
        if s.size * 8 < bounds.size:
            idx = np.searchsorted(bounds, to_keys(s), side="right") - 1
            idx = idx[idx >= 0]
            slots.append(idx[~is_end[idx]] + offset)
            continue
        v = sorted_cache[g] = np.sort(s)
        c = np.diff(np.searchsorted(v, from_keys(bounds, dtype).astype(v.dtype), side="left"))
        c[is_end[:-1]] = 0  # gaps between targets
        if dense is None:
            dense = np.zeros(size, dtype=np.int64)
        dense[offset:offset + c.size] += c
    slots = np.concatenate(slots) if slots else np.empty(0, np.int64)
    if dense is None:
        packed = _pack_slots(slots, size)
    else:
        if slots.size:
            dense += np.bincount(slots, minlength=size)
        nz = np.flatnonzero(dense)
        packed = ("sparse", size, nz, dense[nz]) if nz.size * 4 < size else _dense(dense)
    fetched: dict[int, list] = {}
    for g, (los, his, ids) in plan["fetch"].items():
        s = groups[g][0]
        if s.size == 0:
            continue
        v = sorted_cache.get(g)
        lo_v = from_keys(los, dtype).astype(s.dtype)
        hi_v = from_keys(his, dtype).astype(s.dtype)
        if v is None and len(ids) <= FETCH_DIRECT:
            _fetch_direct(s, keep(g), lo_v, hi_v, ids, fetched)
            continue
        if v is None:
            v = np.sort(scores(g))
        starts = np.searchsorted(v, lo_v, side="left")
        stops = np.searchsorted(v, hi_v, side="left")
        for t, a, b in zip(ids, starts, stops):
            if b > a:  # a copy: a view would keep the chunk's whole sorted group alive
                fetched.setdefault(int(t), []).append(v[a:b].copy())
    return packed, fetched


class Selection:
    """Coordinator state of the exact selection for one score grouping.

    Parameters
    ----------
    num_groups : int
    dtype : numpy.dtype
        float32 or float64 (keys are this dtype's bit patterns).
    num_bins : sequence of int
        Bin counts whose edges are wanted.
    """

    def __init__(self, num_groups: int, dtype, num_bins):
        self.num_groups = int(num_groups)
        self.dtype = np.dtype(dtype)
        self.num_bins = tuple(num_bins)
        self.sizes: np.ndarray | None = None  # kept scores per group, after the first pass
        self.values: list[dict[int, float]] = [{} for _ in range(self.num_groups)]
        spec = ("grid", grid_size(self.num_groups))
        grid = bounds_of(spec, self.dtype)
        # A target: dict(g, lo, hi, below, count, ranks, spec, bounds, kind); the first pass has
        # one grid target per group whose ranks are filled in once the group size is known.
        self._targets: list[dict[str, Any]] = [
            {"g": g, "below": 0, "count": None, "ranks": None, "spec": spec, "bounds": grid,
             "kind": "refine"}
            for g in range(self.num_groups)
        ]
        self._layout: list = []

    @property
    def done(self) -> bool:
        """True once every wanted order statistic is known."""
        return not self._targets

    def plan(self) -> dict:
        """The chunk-side plan of the next pass (see :func:`scan_groups`)."""
        refine: dict[int, list] = {}
        fetch: dict[int, list] = {}
        for tid, t in enumerate(self._targets):
            (refine if t["kind"] == "refine" else fetch).setdefault(t["g"], []).append(tid)
        plan: dict[str, Any] = {"size": 0, "refine": {}, "fetch": {}}
        self._layout = []
        offset = 0
        for g, tids in refine.items():
            tids.sort(key=lambda i: self._targets[i]["bounds"][0])
            start = 0
            for tid in tids:
                b = self._targets[tid]["bounds"]
                self._layout.append((tid, offset + start, b.size - 1))
                start += b.size
            plan["refine"][g] = ([self._targets[i]["spec"] for i in tids], offset)
            offset += start
        plan["size"] = offset
        for g, tids in fetch.items():
            tids.sort(key=lambda i: self._targets[i]["lo"])
            plan["fetch"][g] = (
                np.array([self._targets[i]["lo"] for i in tids], dtype=np.int64),
                np.array([self._targets[i]["hi"] for i in tids], dtype=np.int64),
                np.array(tids, dtype=np.int64),
            )
        return plan

    def _wanted(self, n: int) -> np.ndarray:
        ranks = [adaptive_positions(n, b) for b in self.num_bins]
        return np.unique(np.concatenate(ranks)) if ranks else np.empty(0, np.int64)

    def advance(self, packed_counts, fetched: dict) -> None:
        """Digest the reduced result of the pass planned by :meth:`plan`."""
        counts = unpack(packed_counts) if packed_counts is not None else None
        first = self.sizes is None
        if self.sizes is None:
            self.sizes = np.zeros(self.num_groups, dtype=np.int64)
        sizes = self.sizes
        new = []
        for tid, start, m in self._layout:
            t = self._targets[tid]
            assert counts is not None  # a pass with refine targets reduces counts
            c = counts[start:start + m]
            if first:
                n = int(c.sum())
                sizes[t["g"]] = n
                t["count"] = n
                t["ranks"] = self._wanted(n)
            elif int(c.sum()) != t["count"]:
                raise SelectionError(
                    f"group {t['g']}: a pass counted {int(c.sum())} scores in a range that held "
                    f"{t['count']} before; the input chunks changed between passes (make them "
                    "deterministic, e.g. persist() the arrays)"
                )
            if not len(t["ranks"]):
                continue
            cum = np.cumsum(c)
            where = np.searchsorted(cum, t["ranks"] - t["below"], side="right")
            for i in np.unique(where):
                ranks = t["ranks"][where == i]
                lo, hi = int(t["bounds"][i]), int(t["bounds"][i + 1])
                below = t["below"] + (int(cum[i - 1]) if i > 0 else 0)
                new.append({"g": t["g"], "lo": lo, "hi": hi, "below": below,
                            "count": int(c[i]), "ranks": ranks})
        for tid, t in enumerate(self._targets):
            if t["kind"] != "fetch":
                continue
            vals = fetched.get(tid, [])
            vals = np.sort(np.concatenate(vals)) if vals else np.empty(0)
            if vals.size != t["count"]:
                raise SelectionError(
                    f"group {t['g']}: fetched {vals.size} scores from a range that held "
                    f"{t['count']}; the input chunks changed between passes"
                )
            for r in t["ranks"]:
                self.values[t["g"]][int(r)] = float(vals[int(r) - t["below"]])
        self._schedule(new)

    def _schedule(self, targets) -> None:
        pending = []
        for t in targets:
            if t["hi"] - t["lo"] == 1:  # a single key: its value is known
                v = float(from_keys([t["lo"]], self.dtype)[0])
                for r in t["ranks"]:
                    self.values[t["g"]][int(r)] = v
            else:
                pending.append(t)
        fetched_total = 0
        refine = []
        for t in sorted(pending, key=lambda t: t["count"]):
            if t["count"] <= FETCH_MAX and fetched_total + t["count"] <= FETCH_BUDGET:
                t["kind"] = "fetch"
                fetched_total += t["count"]
            else:
                t["kind"] = "refine"
                refine.append(t)
        if refine:
            m = int(np.clip(BUCKET_BUDGET // len(refine), 16, 1 << 16))
            for t in refine:
                t["spec"] = ("split", t["lo"], t["hi"], m)
                t["bounds"] = bounds_of(t["spec"], self.dtype)
        self._targets = pending

    def edges(self, g: int, num_bins: int) -> np.ndarray:
        """The exact upper edges (float64, ``num_bins - 1`` of them) of group ``g``."""
        assert self.sizes is not None, "edges() before the first pass"
        n = int(self.sizes[g])
        return np.array([self.values[g][int(r)] for r in adaptive_positions(n, num_bins)],
                        dtype=np.float64)
