"""Private: exact distributed selection of adaptive bin edges by histogram refinement, and the
bins' tables from the same passes.

Used by :mod:`calibkit.dask`. The data live in row chunks that are read once per pass; only small
summaries travel. For every score group we need the order statistics at SPEC's adaptive positions
(for every requested bin count). Kept scores are floats of at least -RANGE_TOL (top-label pairs
keep a confidence of 0, or just below it within the tolerance, at threshold 0); their IEEE bit
patterns, read as integers with the magnitude bits of negative values flipped ("keys", -0.0 taken
as +0.0, the kernel's rule: ``_native.select_keys``), sort exactly like the values; all
bucketing happens on keys, so it is exact and identical on every worker.

Pass 1 puts each group's keys in a fixed grid of buckets (tiny values by binade, each binade
below 1/16 cut into equal buckets, :func:`binade_split`, a uniform grid on [0, 1],
``1 - 2**-j`` steps next to 1, and a bucket of its own for exactly 1.0);
it gives the group sizes and thus the wanted ranks. Above :data:`FINE_BELOW` it counts every
grid bucket but tables (outcome counts, score sums) only *super-buckets* of :data:`SUPER`
consecutive grid buckets, so that the chunk's hot state stays in cache (below, where most of a
class's scores lie, every bucket is tabled); a super-bucket that holds a wanted rank is tabled
again in the next pass around the ranks (a *table* target per run of buckets that lie in one
bin, and per ranked bucket of a single key). Each later pass takes, for every wanted rank, the
bucket that holds it (known from the cumulative counts) and either splits it into finer
buckets (a *refine* target), or, once it holds few enough scores, fetches its scores (a *fetch*
target) so the rank can be read off exactly. A bucket that is a single key is resolved at once
(its value is the key). Every refine step shrinks a bucket's key range at least 16-fold, so the
number of passes is bounded (in practice two, three on many-class data with heavy ties).

Every bucket a pass fills comes back as an exact table: its count, its outcome count and the
exact sum of its scores' grid units (docs/spec.md, "Cell sums"), integers that add over chunks
in any order. A bucket that holds no wanted rank holds no edge, so all its scores fall in one
bin; the buckets holding ranks were refined or fetched. :meth:`Selection.table` adds the
whole buckets of each bin and bins the fetched scores at the exact edges with the primitive
(:func:`calibkit.binned.table.grouped_bin_stats_at`): the table of one in-memory call, bit for
bit, with no counting pass. The chunk side is one Rust read per grouping
(``rust/kernels/gce/select.rs``, ``_native.select_scan``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _native
from ..binned.table import adaptive_positions, grouped_bin_stats_at
from ..binned.units import ScoreUnits
from ..errors import SelectionError

__all__ = [
    "Selection",
    "SelectionError",
    "bounds_of",
    "from_keys",
    "binade_split",
    "grid_size",
    "initial_bounds",
    "split_bounds",
    "unpack_tables",
    "to_keys",
]

#: Total buckets per pass (over all refine targets): bounds the size of every partial result.
BUCKET_BUDGET = 1 << 20
#: A target is fetched when it holds at most this many scores ...
FETCH_MAX = 1 << 18
#: ... and the scores fetched in one pass stay below this total.
FETCH_BUDGET = 1 << 22
#: Each binade of the first-pass grid below its uniform step, down to 2**-64, is cut into this
#: many equal buckets: a confident many-class model puts most of a class's scores there (on
#: CIFAR-100 outputs this turned 3 passes into 2; docs/performance.md) ...
TINY_SPLIT = 8
#: ... and each binade from 2**-5 down to 2**-64 into up to this many (``uniform // 256`` down
#: to a power of two, at least 1): the uniform steps are too coarse for softmax tails (at
#: K = 100 this turned 3 passes into 2 on synthetic and on wideresnet CIFAR-100 outputs).
BINADE_SPLIT = 32
#: Grid buckets per super-bucket table in pass 1 (the kernel's ``SUPER``) ...
SUPER = 16
#: ... above this score; below it, pass 1 tables every grid bucket.
FINE_BELOW = 1 / 16


def _signed(bits: np.ndarray, mask: int) -> np.ndarray:
    """Keys -> bit patterns (as signed ints): the inverse of the kernel's key rule (an
    involution on negative values: their magnitude bits flip back; key 0 is +0.0)."""
    if not (bits < 0).any():
        return bits
    return np.where(bits < 0, bits ^ bits.dtype.type(mask), bits)


def to_keys(scores: np.ndarray) -> np.ndarray:
    """Order-preserving int64 keys of float32/float64 scores (the kernel's rule,
    ``_native.select_keys``)."""
    s = np.asarray(scores)
    s = s if s.dtype == np.float32 else np.asarray(s, dtype=np.float64)
    return _native.select_keys(np.ascontiguousarray(s).reshape(-1)).reshape(s.shape)


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

    The grid: powers of two for tiny values (each binade from ``2**-5`` down to ``2**-64`` cut
    into :func:`binade_split` equal buckets, and those below ``1 / uniform`` into at least
    :data:`TINY_SPLIT`), ``uniform`` equal steps on [0, 1], ``1 - 2**-j`` next to 1, and a
    bucket of its own for exactly 1.0.
    """
    return _initial_bounds(np.dtype(dtype).str, int(uniform))


def binade_split(uniform: int) -> int:
    """Equal buckets per binade from ``2**-5`` to ``2**-64`` in a grid of ``uniform`` steps:
    ``uniform // 256`` down to a power of two, within ``[1, BINADE_SPLIT]`` (a grid for many
    groups, with few steps, gets few)."""
    return int(min(BINADE_SPLIT, 1 << max(uniform // 256, 1).bit_length() - 1))


def _binade_cuts(first: int, cut: int) -> np.ndarray:
    """``2**-e * (1 + j / cut)`` for each binade ``e`` from ``first`` to 64 and ``0 < j < cut``
    (``cut`` a power of two): exact in float32 and float64."""
    e = np.arange(first, 65)
    return (2.0 ** -e[:, None] * (1 + np.arange(1, cut)[None, :] / cut)).ravel()


@functools.lru_cache(maxsize=16)
def _initial_bounds(dtype_str: str, uniform: int) -> np.ndarray:
    dtype = np.dtype(dtype_str)
    if dtype == np.float32:
        tiny = 2.0 ** -np.arange(1, 150)
        near_one = 1.0 - 2.0 ** -np.arange(1, 25)
    else:
        tiny = 2.0 ** -np.concatenate([np.arange(1, 65), np.arange(72, 1075, 8)])
        near_one = 1.0 - 2.0 ** -np.arange(1, 54)
    # below the first uniform step (which stays whole) at least TINY_SPLIT a binade
    split = _binade_cuts(int(np.floor(np.log2(uniform))), TINY_SPLIT)
    split = split[split < 1.0 / uniform]
    # (Where the binade cuts are finer than the uniform steps they end the steps' run of the
    # kernel's arithmetic lookup: below 2**-11 at 65536 steps; those scores take its table.)
    binades = _binade_cuts(5, binade_split(uniform))
    one = dtype.type(1.0)
    vals = np.concatenate([
        [-1.0, 0.0], tiny, split, binades, np.linspace(0.0, 1.0, uniform + 1), near_one,
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


def unpack_tables(packed) -> tuple:
    """``(counts int64, outcome counts int64, unit words int64 (size, 2), grid bucket counts
    int64)`` of bucket tables as a chunk ships them (``_native.select_scan``: packed to int32
    counts and one int64 per score sum when they fit, else wide; grid bucket counts uint32)."""
    c, o, w, fine = packed
    if w.ndim == 1:
        w = np.stack([w >> 63, w], axis=1)
    return (c.astype(np.int64, copy=False), o.astype(np.int64, copy=False), w,
            fine.astype(np.int64, copy=False))


#: Region kinds of a plan (``rust/kernels/gce/select.rs``, ``Plan::from_rows``).
_GRID, _BUCKETS, _FETCH, _GRID_SUPER = 0, 1, 2, 3


def _fine_part(bounds: np.ndarray, dtype) -> int:
    """Buckets of a first-pass grid tabled one by one (those below :data:`FINE_BELOW`: most
    of a class's scores lie there, and a super-bucket holding an edge is read again)."""
    return int(np.searchsorted(bounds, to_keys(np.array([FINE_BELOW], dtype=dtype))[0]))


def _by_target(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The order that groups fetched entries by target id, the ids present and their runs'
    starts (a stable radix sort when the ids are small)."""
    small = ids.astype(np.uint16) if ids.size and ids.max() < 1 << 16 else ids
    order = np.argsort(small, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]) if ids.size else ids
    return order, sorted_ids[starts], np.r_[starts, ids.size].astype(np.int64)


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
        # A target: dict(g, lo, hi, below, count, ranks, spec, bounds, kind, at); the first pass
        # has one grid target per group whose ranks are filled in once the group size is known;
        # "at" is (piece, bucket) of the bucket it stands for (None for the grid).
        self._targets: list[dict[str, Any]] = [
            {"g": g, "below": 0, "count": None, "ranks": None, "spec": spec, "bounds": grid,
             "kind": "refine", "at": None}
            for g in range(self.num_groups)
        ]
        self._layout: list = []
        # Whole buckets per group: pieces [lowest keys, counts, outcome counts, unit words],
        # the buckets that were refined or fetched zeroed; and the fetched (scores, outcomes).
        self._pieces: list[list[list[np.ndarray]]] = [[] for _ in range(self.num_groups)]
        self._entries: list[list[tuple[np.ndarray, np.ndarray]]] = [
            [] for _ in range(self.num_groups)]

    @property
    def done(self) -> bool:
        """True once every wanted order statistic is known."""
        return not self._targets

    def plan(self) -> dict:
        """The chunk-side plan of the next pass: ``{"regions": int64 (R, 5), "bounds": int64,
        "size": int}``, a region being ``[group, kind, bounds start, bounds length, slot or
        target id]`` (``_native.select_scan``). Everything the chunks need travels in it."""
        parts: list[np.ndarray] = []
        starts: dict[Any, int] = {}
        at = 0

        def place(key, bounds) -> int:  # the start of bounds in the plan (grids shared)
            nonlocal at
            if key is not None and key in starts:
                return starts[key]
            parts.append(bounds)
            where, at = at, at + bounds.size
            if key is not None:
                starts[key] = where
            return where

        rows, self._layout, size = [], [], 0
        order = sorted(range(len(self._targets)),
                       key=lambda i: (self._targets[i]["g"], self._targets[i]["kind"]))
        supers = {}  # grid targets: the slot of their super-buckets, first (counts packed)
        for tid in order:
            t = self._targets[tid]
            if t.get("spec", ("",))[0] == "grid":
                b, f = t["bounds"], _fine_part(t["bounds"], self.dtype)
                rows.append([t["g"], _GRID_SUPER, place(t["spec"], b) + f, b.size - f, size])
                supers[tid] = size
                size += -(-(b.size - 1 - f) // SUPER)
        for tid in order:
            t = self._targets[tid]
            if tid in supers:  # the grid's buckets below 1/16, tabled one by one
                f = _fine_part(t["bounds"], self.dtype)
                rows.append([t["g"], _GRID, place(t["spec"], t["bounds"]), f + 1, size])
                self._layout.append((tid, size, t["bounds"].size - 1, supers[tid]))
                size += f
            elif t["kind"] in ("refine", "table"):
                b = t["bounds"]
                rows.append([t["g"], _BUCKETS, place(None, b), b.size, size])
                self._layout.append((tid, size, b.size - 1, None))
                size += b.size - 1
            else:
                start = place(None, np.array([t["lo"], t["hi"]], dtype=np.int64))
                rows.append([t["g"], _FETCH, start, 2, tid])
        return {"regions": np.array(rows, dtype=np.int64).reshape(-1, 5),
                "bounds": np.concatenate(parts) if parts else np.empty(0, np.int64),
                "size": size}

    def _wanted(self, n: int) -> np.ndarray:
        ranks = [adaptive_positions(n, b) for b in self.num_bins]
        return np.unique(np.concatenate(ranks)) if ranks else np.empty(0, np.int64)

    def advance(self, scanned) -> None:
        """Digest the reduced result of the pass planned by :meth:`plan`: ``(counts, outcome
        counts, unit words (size, 2), grid bucket counts, fetched target ids, fetched scores,
        fetched outcomes)`` summed over the chunks (the fetched arrays concatenated)."""
        counts, outcomes, words, fine, ids, scores, fetched_out = scanned
        first = self.sizes is None
        if self.sizes is None:
            self.sizes = np.zeros(self.num_groups, dtype=np.int64)
        sizes = self.sizes
        new = []
        for tid, start, m, sup in self._layout:
            t = self._targets[tid]
            f = m if sup is None else _fine_part(t["bounds"], self.dtype)
            tab = slice(start, start + f)
            c = counts[tab]
            if sup is not None:  # a grid: buckets below 1/16, then the super-buckets' counts
                c = np.concatenate([c, fine[SUPER * sup:SUPER * sup + m - f]])
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
            pieces = self._pieces[t["g"]]
            pieces.append([t["bounds"][:f], counts[tab].copy(), outcomes[tab].copy(),
                           words[tab].copy()])
            own = len(pieces) - 1
            if sup is not None:
                tab = slice(sup, sup + -(-(m - f) // SUPER))
                pieces.append([t["bounds"][f:-1:SUPER], counts[tab].copy(),
                               outcomes[tab].copy(), words[tab].copy()])
            if not len(t["ranks"]):
                continue
            cum = np.cumsum(c)
            where = np.searchsorted(cum, t["ranks"] - t["below"], side="right")
            for i in np.unique(where):
                ranks = t["ranks"][where == i]
                lo, hi = int(t["bounds"][i]), int(t["bounds"][i + 1])
                below = t["below"] + (int(cum[i - 1]) if i > 0 else 0)
                new.append({"g": t["g"], "lo": lo, "hi": hi, "below": below,
                            "count": int(c[i]), "ranks": ranks,
                            "at": (own, i) if i < f else None})
            held = np.unique(where)
            if sup is not None and (held >= f).any():
                new += self._retable(t["g"], t["bounds"][f:], c[f:], held[held >= f] - f,
                                     pieces[-1])
        order, present, runs = _by_target(np.asarray(ids, dtype=np.int64))
        run_of = {int(t): (int(runs[j]), int(runs[j + 1])) for j, t in enumerate(present)}
        for tid, t in enumerate(self._targets):
            if t["kind"] != "fetch":
                continue
            a, b = run_of.get(tid, (0, 0))
            mine = order[a:b]
            vals, outs = scores[mine], fetched_out[mine]
            if vals.size != t["count"]:
                raise SelectionError(
                    f"group {t['g']}: fetched {vals.size} scores from a range that held "
                    f"{t['count']}; the input chunks changed between passes"
                )
            self._entries[t["g"]].append((vals, outs))
            ordered = np.sort(vals)
            for r in t["ranks"]:
                self.values[t["g"]][int(r)] = float(ordered[int(r) - t["below"]])
        self._schedule(new)

    @staticmethod
    def _retable(g, b, c, held, piece) -> list:
        """Table targets for the super-buckets of group ``g``'s grid part (bounds ``b``, bucket
        counts ``c``) that hold the ranked buckets ``held``: each run of buckets with no rank
        (they lie in one bin) and each ranked bucket of a single key (its value is an edge)
        becomes a bucket of the next pass; the other ranked buckets are refined or fetched.
        The super-buckets' tables in ``piece`` are zeroed."""
        out: list = []
        m = c.size
        ranked = np.zeros(m, dtype=bool)
        ranked[held] = True
        for j in np.unique(held // SUPER):
            for a in piece[1:]:
                a[j] = 0
            stop = min(SUPER * j + SUPER, m)
            runs, start = [], SUPER * j
            for i in range(SUPER * j, stop):
                if ranked[i]:
                    runs.append((start, i))
                    if b[i + 1] - b[i] == 1:  # a single key: its own bucket
                        runs.append((i, i + 1))
                    start = i + 1
            runs.append((start, stop))
            for lo, hi in runs:
                n = int(c[lo:hi].sum())
                if n:
                    out.append({"g": g, "lo": int(b[lo]), "hi": int(b[hi]), "count": n,
                                "ranks": np.empty(0, np.int64), "kind": "table",
                                "spec": ("table",), "bounds": b[[lo, hi]].astype(np.int64)})
        return out

    def _schedule(self, targets) -> None:
        pending = [t for t in targets if t.get("kind") == "table"]
        targets = [t for t in targets if t.get("kind") != "table"]
        for t in targets:
            if t["hi"] - t["lo"] == 1:  # a single key: its value is known (its bucket is whole)
                v = float(from_keys([t["lo"]], self.dtype)[0])
                for r in t["ranks"]:
                    self.values[t["g"]][int(r)] = v
            else:
                pending.append(t)
                if t["at"] is not None:  # grid buckets: zeroed with their super-bucket
                    piece, i = t["at"]
                    for a in self._pieces[t["g"]][piece][1:]:  # refined or fetched: not whole
                        a[i] = 0
        fetched_total = 0
        refine = []
        for t in sorted(targets, key=lambda t: t["count"]):
            if t["hi"] - t["lo"] == 1:
                continue
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

    def table(self, num_bins: int) -> list:
        """``[counts int64 (G, B), score sums (ScoreUnits), outcome sums float64 (G, B)]`` of
        the adaptive bins, once :attr:`done`: each bin's whole buckets plus the fetched scores
        binned at the exact edges (``num_bins - 1`` upper edges per group, left-closed)."""
        assert self.done, "table() before the selection is done"
        g_count, b = self.num_groups, int(num_bins)
        edges = np.zeros((g_count, b - 1))
        for g in range(g_count):
            if self.sizes is not None and self.sizes[g]:
                edges[g] = self.edges(g, b)
        # exact: the edges are scores of this dtype, widened
        edge_keys = to_keys(edges.astype(self.dtype))
        cells, cnt, out, words = [], [], [], []
        for g, pieces in enumerate(self._pieces):
            for lo, c, o, w in pieces:
                cells.append(g * b + np.searchsorted(edge_keys[g], lo, side="right"))
                cnt.append(c)
                out.append(o)
                words.append(w)
        cell = np.concatenate(cells).astype(np.int64)
        size = g_count * b
        counts = np.rint(np.bincount(cell, weights=np.concatenate(cnt), minlength=size))
        so = np.bincount(cell, weights=np.concatenate(out), minlength=size).reshape(g_count, b)
        units = ScoreUnits(_native.units_sum_at(np.concatenate(words), cell, size)
                           .reshape(g_count, b, 2))
        entries = [(g, s, o) for g, parts in enumerate(self._entries) for s, o in parts]
        if entries:
            grp = np.concatenate([np.full(s.size, g, dtype=np.int64) for g, s, _ in entries])
            c2, _, so2, _, u2 = grouped_bin_stats_at(
                grp, np.concatenate([s for _, s, _ in entries]),
                np.concatenate([o for _, _, o in entries]), edges, num_groups=g_count,
                units=True)
            counts = counts + c2.reshape(-1)
            so = so + so2
            units = units + u2
        return [counts.astype(np.int64).reshape(g_count, b), units, so]
