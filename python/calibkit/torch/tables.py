"""Per-(group, bin) tables of a batch computed with torch ops on the tensors' own device.

Only these (G, nb) tables (counts, score sums, outcome sums) cross to the host, where the one
reduction (:func:`calibkit.binned.table.reduce_table`) turns them into a metric, so a GPU
batch is never copied whole. The rules are the engine's (docs/spec.md), taken from it where it
states them:

* **scores**: float32 is widened exactly to float64 before any comparison;
* **cell sums** (docs/spec.md, "Cell sums"): a score adds its grid units ``round(s * 2**50)``
  (ties to even, ``rust/kernels/core/units.rs``) to its cell, split as ``hi * 2**25 + lo``
  (:func:`unit_halves`); each half is summed exactly (float64 of whole numbers below 2^53 in
  ``index_add_`` or ``bincount``, or int64 prefix sums) and the cell's value is the exact sum
  rounded once
  (:func:`unit_value`). So unweighted tables equal the Rust tables bit for bit, in any order of
  the atomic adds, for cells of up to 2^28 scores. Counts and unweighted outcome sums are
  integers. Weighted score sums are float64 sums of ``w * s`` (the engine's weighted units,
  with their per-call weight scale, are not reproduced): equal to the engine's to 1e-12;
* **threshold**: a matrix score is kept when ``score > threshold`` (float64, strict); a
  top-label confidence likewise, and every confidence at ``threshold == 0``
  (:func:`calibkit._toplabel.kept_rows`; a matrix row's top probability is always > 0);
* **even bins**: a score's bin is the number of upper edges ``u_j`` ``<=`` it, the edges being
  :func:`calibkit.binned.table.even_boundaries` (``torch.bucketize(..., right=True)``), so 1.0
  falls in the extra bin B;
* **adaptive bins**: per group, the kept scores sorted ascending; the upper edges are the scores
  at the ranks :func:`calibkit.binned.table.adaptive_positions` (the kernel's rule) gives for
  the group's size; bins are left-closed and value-defined (a score equal to an edge, and every
  tie of it, goes to the bin above). Unweighted only: weighted adaptive tables are binned on the
  host by the weighted primitive (:func:`calibkit.binned.table.grouped_bin_stats`), from the
  kept ``(group, score, outcome, weight)`` vectors.

Groupings (docs/spec.md, "Score groups"): top-label scores are ``(confidence, correct,
predicted)`` vectors; all-probabilities scores are the ``(N, K)`` matrix with its labels.

Examples
--------
>>> import torch
>>> from calibkit.torch.tables import Scores, even_table
>>> p = torch.tensor([[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]], dtype=torch.float64)
>>> sc = Scores.of_matrix(p, torch.tensor([0, 0, 0]))
>>> c, s, o = even_table(sc, max_prob=True, class_conditional=False, threshold=0.0, num_bins=2)
>>> c.tolist(), o.tolist()
([[0.0, 3.0, 0.0]], [[0.0, 2.0, 0.0]])
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import torch

from ..binned.table import adaptive_positions, even_boundaries, grouped_bin_stats, reduce_table

__all__ = ["Scores", "even_parts", "even_table", "adaptive_table", "engine_tables", "use_engine",
           "even_of", "adaptive_of", "parts_table", "space_tables", "space_values", "unit_halves",
           "unit_value"]

_F64 = torch.float64

#: Whether CPU tensors go through the torch ops (and the device's value checks) rather than the
#: engine's kernels and checks, and the public functions (``calibkit.gce``, ``calibkit.evaluate``,
#: the named metrics) take CPU tensors down the device path too
#: (:func:`calibkit._arraylike.device_tensor`); the tests set it to run the device code on CPU
#: tensors.
TORCH_OPS_ON_CPU = False


def use_engine(device: torch.device) -> bool:
    """Whether tensors on ``device`` are binned and checked by the engine itself (the CPU)."""
    return device.type == "cpu" and not TORCH_OPS_ON_CPU


@dataclass(frozen=True)
class Scores:
    """A batch's scores on one device, in the two forms the groupings read.

    Build it with :meth:`of_matrix` or :meth:`of_pairs`; the top-label vectors of a matrix are
    computed on first use (``torch.max``: each row's top probability and the lowest index among
    tied maxima, calibkit's predicted class).

    Attributes
    ----------
    probs : torch.Tensor of shape (N, K), float32 or float64, or None
        The probability matrix (None for top-label input).
    labels : torch.Tensor of shape (N,), int64, or None
    weight : torch.Tensor of shape (N,), float64, or None (every weight 1)
    num_classes : int
        K (1 for top-label input without ``predicted``).
    confidence : torch.Tensor of shape (N,), the input's float dtype
        Each row's top probability.
    correct : torch.Tensor of shape (N,), bool
    predicted : torch.Tensor of shape (N,), int64, or None (top-label input without it)
    """

    probs: torch.Tensor | None
    labels: torch.Tensor | None
    weight: torch.Tensor | None
    num_classes: int
    pairs: tuple | None = None

    @classmethod
    def of_matrix(cls, probs: torch.Tensor, labels: torch.Tensor,
                  weight: torch.Tensor | None = None) -> Scores:
        """From checked ``(N, K)`` probabilities and int64 labels."""
        return cls(probs, labels, weight, int(probs.shape[1]))

    @classmethod
    def of_pairs(cls, confidence: torch.Tensor, correct: torch.Tensor,
                 predicted: torch.Tensor | None, num_classes: int,
                 weight: torch.Tensor | None = None) -> Scores:
        """From checked top-label vectors (``correct`` bool)."""
        return cls(None, None, weight, int(num_classes), (confidence, correct, predicted))

    @cached_property
    def _top(self) -> tuple:
        if self.pairs is not None:
            return self.pairs
        assert self.probs is not None and self.labels is not None
        conf, pred = torch.max(self.probs, dim=1)
        return conf, pred == self.labels, pred

    @property
    def confidence(self) -> torch.Tensor:
        return self._top[0]

    @property
    def correct(self) -> torch.Tensor:
        return self._top[1]

    @property
    def predicted(self) -> torch.Tensor | None:
        return self._top[2]

    @property
    def _first(self) -> torch.Tensor:
        return self.probs if self.probs is not None else self.pairs[0]  # type: ignore[index]

    @property
    def device(self) -> torch.device:
        return self._first.device

    @property
    def dtype(self) -> torch.dtype:
        """The scores' float dtype."""
        return self._first.dtype

    @property
    def n(self) -> int:
        return int(self._first.shape[0])


@lru_cache(maxsize=64)
def _edges(num_bins: int, device: torch.device) -> torch.Tensor:
    """The even upper edges ``u_1..u_B`` (float64) on ``device``: the engine's own values."""
    return torch.from_numpy(even_boundaries(num_bins)[1:num_bins + 1].copy()).to(device)


def _groups(sc: Scores, max_prob: bool, class_conditional: bool) -> int:
    return sc.num_classes if class_conditional else 1


#: A score's units split as ``hi * 2**LO_BITS + lo`` with ``0 <= lo < 2**LO_BITS``: for scores
#: within [-1e-4, 1 + 1e-4] each half is at most about 2^25 in magnitude, so float64 sums of up
#: to 2^28 of them (a cell's scores) are whole numbers below 2^53, exact in any order.
LO_BITS = 25
_UNITS_PER_ONE = float(2 ** 50)  # units.rs SCALE: one unit is 2^-50


def unit_halves(scores64: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The engine's grid units of float64 scores, ``round(s * 2**50)`` with ties to even (exact:
    a power-of-two scale, then ``torch.round``, as ``units::units``), split into int64
    ``(hi, lo)`` with ``units = hi * 2**25 + lo`` and ``0 <= lo < 2**25``."""
    u = torch.round(scores64 * _UNITS_PER_ONE).to(torch.int64)
    return u >> LO_BITS, u & ((1 << LO_BITS) - 1)


def unit_value(hi, lo):
    """The float64 value of cells whose units sum to ``hi * 2**25 + lo`` (float64 tensors or
    arrays of whole numbers below 2^53): the exact sum rounded once, times 2^-50, the bits of
    ``units::value``. (``hi * 2**25`` is exact, and one float addition of two exact values is
    the correctly rounded sum.)"""
    return (hi * float(1 << LO_BITS) + lo) * (1.0 / _UNITS_PER_ONE)


#: When :func:`_sums` counts with ``torch.bincount``, a histogram in each block's shared
#: memory: for at most ``BINCOUNT_CELLS`` cells (the drop cell included) and at least
#: ``BINCOUNT_ROWS`` rows. 10M rows into 16 cells take about 0.28 ms a column on an H200,
#: where ``index_add_``'s atomic adds to a few hot cells take 4.4 ms
#: (``benches/gpu_primitives.py``). Otherwise ``index_add_``: it needs no host sync (bincount
#: reads the largest index first), which is what a batch of 50k rows pays for most, and many
#: cells share its atomic adds; it is also the one taken under
#: ``torch.use_deterministic_algorithms`` (CUDA's weighted bincount refuses to run there).
BINCOUNT_CELLS = 2048
BINCOUNT_ROWS = 1 << 17


def _sums(cell: torch.Tensor, cells: int, cols: list) -> torch.Tensor:
    """Per-cell sums over ``cells`` cells (every index of ``cell`` below it; the caller drops
    its drop cells) of each column of ``cols``: a 1-D float64 tensor, or None for a count.
    Returns (len(cols), cells) float64. Whole-number columns (counts, unit halves, 0/1
    outcomes) sum exactly in any order, so either way of summing gives the same bits."""
    # (weighted bincount on CUDA raises under torch.use_deterministic_algorithms; index_add_
    # does not, and gives the same bits)
    if (cells <= BINCOUNT_CELLS and cell.shape[0] >= BINCOUNT_ROWS
            and not torch.are_deterministic_algorithms_enabled()):
        return torch.stack([torch.bincount(cell, weights=col, minlength=cells).to(_F64)
                            for col in cols])
    out = torch.zeros((len(cols), cells), dtype=_F64, device=cell.device)
    one = torch.ones((), dtype=_F64, device=cell.device).expand(cell.shape[0])
    for row, col in zip(out, cols):
        row.index_add_(0, cell, one if col is None else col)
    return out


def _halves(s64: torch.Tensor) -> list[torch.Tensor]:
    """:func:`unit_halves` as float64 columns for :func:`_sums`."""
    return [x.to(_F64) for x in unit_halves(s64)]


def _score_sums(cell: torch.Tensor, cells: int, s64: torch.Tensor, w: torch.Tensor | None,
                extra: list) -> torch.Tensor:
    """:func:`_sums` of scores' (count, hi, lo) parts and the columns ``extra``: a count and
    the unit halves, or, weighted, the weights, 0 and ``w * s * 2**50`` (a float sum, whose
    :func:`unit_value` with hi 0 is ``sum w * s``)."""
    if w is None:
        return _sums(cell, cells, [None, *_halves(s64), *extra])
    out = _sums(cell, cells, [w, s64 * w * _UNITS_PER_ONE, *extra])
    return torch.cat([out[:1], torch.zeros_like(out[:1]), out[1:]])


def _keeps_all(threshold: float, top_label: bool) -> bool:
    """Whether every score is kept: top-label confidences at threshold 0
    (:func:`calibkit._toplabel.kept_rows`); otherwise a score is kept when ``> threshold``."""
    return top_label and threshold == 0.0


def _kept(scores64: torch.Tensor, threshold: float, top_label: bool) -> torch.Tensor | None:
    """The keep mask, or None when every score is kept (:func:`_keeps_all`)."""
    if _keeps_all(threshold, top_label):
        return None
    return scores64 > threshold


def even_parts(sc: Scores, *, max_prob: bool, class_conditional: bool, threshold: float,
               num_bins: int) -> torch.Tensor:
    """The exact parts of one even-binning grouping's table of a batch: a (4, G, B + 1) float64
    tensor on the scores' device, rows ``counts, hi, lo, sum_outcome``, where ``hi, lo`` are
    the cells' unit-half sums (:func:`unit_value` of them is the score sum). Parts of batches
    add exactly (whole numbers below 2^53), so a sum of them is the table of all the rows."""
    g = _groups(sc, max_prob, class_conditional)
    nb = num_bins + 1
    size = g * nb
    edges = _edges(num_bins, sc.device)
    w = sc.weight
    if max_prob:
        s = sc.confidence.to(_F64)
        cell = torch.bucketize(s, edges, right=True)
        if class_conditional:
            assert sc.predicted is not None
            cell = sc.predicted * nb + cell
        keep = _kept(s, threshold, True)
        if keep is not None:
            cell = torch.where(keep, cell, size)
        if w is None:  # counts and outcomes in one pass, of cell * 2 + correct
            both = _sums(cell * 2 + sc.correct, 2 * (size + 1), [None])[0].view(size + 1, 2)
            hi, lo = _sums(cell, size + 1, _halves(s))
            out = torch.stack([both.sum(1), hi, lo, both[:, 1]])[:, :size]
        else:
            ok = sc.correct.to(_F64)
            out = _score_sums(cell, size + 1, s, w, [ok * w])[:, :size]
    else:
        p = sc.probs
        assert p is not None and sc.labels is not None
        s = p.to(_F64)
        n, k = s.shape
        cell = torch.bucketize(s, edges, right=True)
        if class_conditional:
            cell += torch.arange(k, device=cell.device) * nb
        # 0 is a float32 value: the input dtype compares exactly, without the float64 copy
        cell.masked_fill_(~((p if threshold == 0.0 else s) > threshold), size)
        wk = None if w is None else w[:, None].expand(n, k).reshape(-1)
        # the outcome is 1 only at each row's label: one cell per row
        label_cell = cell.gather(1, sc.labels[:, None])[:, 0]
        out = torch.cat([_score_sums(cell.reshape(-1), size + 1, s.reshape(-1), wk, []),
                         _sums(label_cell, size + 1, [w])])[:, :size]
    return out.reshape(4, g, nb)


def even_table(sc: Scores, *, max_prob: bool, class_conditional: bool, threshold: float,
               num_bins: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(counts, sum_score, sum_outcome)`` of one even-binning grouping of a batch.

    Parameters
    ----------
    sc : Scores
        Checked scores (see :mod:`calibkit.torch.checks`).
    max_prob, class_conditional : bool
    threshold : float
    num_bins : int
        B; the table has B + 1 bins (the extra one holds 1.0).

    Returns
    -------
    counts, sum_score, sum_outcome : torch.Tensor of shape (G, B + 1), float64, on the scores'
        device
        Counts are total weights when ``sc.weight`` is given. G is K when class-conditional,
        else 1. Unweighted, the engine's table bit for bit (see the module docstring).
    """
    c, hi, lo, o = even_parts(sc, max_prob=max_prob, class_conditional=class_conditional,
                              threshold=threshold, num_bins=num_bins)
    return c, unit_value(hi, lo), o


def _narrow(x: torch.Tensor) -> torch.Tensor:
    """float64 scores as float32 when every one is a float32 exactly (the metric keeps float32
    batches as float64): the same values and order, and a sort of half the key bits."""
    if x.dtype != torch.float64 or x.numel() == 0:
        return x
    y = x.to(torch.float32)
    return y if bool((y.to(torch.float64) == x).all()) else x


def _group_order(values: torch.Tensor, group: torch.Tensor, g: int):
    """The order that sorts ``values`` ascending within ``group`` (groups ascending) and the
    (G,) group sizes on the host: a sort by value, then a stable sort by group."""
    order = torch.sort(values)[1]
    order = order[torch.sort(group[order], stable=True)[1]]
    return order, torch.bincount(group, minlength=g).cpu().numpy().astype(np.int64)


def _sorted_groups(sc: Scores, max_prob: bool, class_conditional: bool, floor: float | None):
    """Scores sorted ascending within contiguous groups: ``(values, outcomes, sizes)``: values
    in the input dtype (float32 if exactly so, :func:`_narrow`), outcomes bool (None for a
    matrix, whose outcomes :func:`adaptive_table` takes from the label scores), sizes (G,)
    int64 on the host. With ``floor``, a matrix's scores ``<= floor`` are left out first
    (every threshold at least ``floor`` drops them): TACE at (50k, 1000) sorts its 2% of
    scores above 0.01, not all 50M."""
    if max_prob:
        conf, ok = sc.confidence, sc.correct
        if not class_conditional:
            v, order = torch.sort(conf)  # ties share a bin: any order among them
            return v, ok[order], np.array([sc.n], dtype=np.int64)
        pred = sc.predicted
        assert pred is not None
        order, sizes = _group_order(conf, pred, sc.num_classes)
        return conf[order], ok[order], sizes
    p, y = sc.probs, sc.labels
    assert p is not None and y is not None
    # a matrix's outcomes come from its label scores (adaptive_table): values only here
    p = _narrow(p)
    n, k = p.shape
    if floor is not None:
        flat = p.reshape(-1)
        at = torch.nonzero(flat > _below(floor, p.dtype))[:, 0]
        vals = flat[at]
        if not class_conditional:
            return torch.sort(vals)[0], None, np.array([vals.shape[0]], dtype=np.int64)
        order, sizes = _group_order(vals, at % k, k)
        return vals[order], None, sizes
    if not class_conditional:
        return torch.sort(p.reshape(-1))[0], None, np.array([n * k], dtype=np.int64)
    # group k = column k: the columns as contiguous rows, each sorted
    v = torch.sort(p.t().contiguous(), dim=1)[0]
    return v.reshape(-1), None, np.full(k, n, dtype=np.int64)


def _below(t: float, dtype: torch.dtype) -> float:
    """The largest value of ``dtype`` at most ``t``: for scores of that dtype, ``s > t`` (in
    float64) exactly when ``s > _below(t)``, so a search can run in the scores' own dtype."""
    if dtype == torch.float64:
        return float(t)
    x = np.float32(t)
    if float(x) > t:
        x = np.nextafter(x, np.float32(-np.inf))
    return float(x)


def _group_search(v: torch.Tensor, starts: np.ndarray, sizes: np.ndarray, x: torch.Tensor,
                  right: bool) -> torch.Tensor:
    """Per group i and query j, the position in ``v`` of the first score of group i that is
    ``> x[i, j]`` (``right``) or ``>= x[i, j]``, or the group's end: ``searchsorted`` within
    each group of the sorted runs ``v[starts[i]:starts[i] + sizes[i]]``. ``x`` is (G, Q) in
    ``v``'s dtype; the result (G, Q) int64 on ``v``'s device.

    Groups of one size (one group, the classes of a matrix) are a (G, n) view and one
    ``torch.searchsorted``; groups of different sizes (top-label per predicted class) take a
    vectorised binary search of the same rule (``tests/test_torch_tables.py`` holds the two
    equal)."""
    g, q = x.shape
    dev = v.device
    if g == 0 or q == 0:
        return torch.zeros((g, q), dtype=torch.int64, device=dev)
    if np.all(sizes == sizes[0]):
        n = int(sizes[0])
        if n == 0:
            return torch.zeros((g, q), dtype=torch.int64, device=dev)
        rows = v.reshape(g, n)
        found = torch.searchsorted(rows, x.contiguous(), right=right)
        return found + torch.arange(g, device=dev)[:, None] * n
    lo = torch.from_numpy(np.repeat(starts, q)).to(dev)
    hi = torch.from_numpy(np.repeat(starts + sizes, q)).to(dev)
    xs = x.reshape(-1)
    last = max(int(v.shape[0]) - 1, 0)
    for _ in range(int(sizes.max()).bit_length() + 1):
        mid = (lo + hi) >> 1
        vm = v[mid.clamp(max=last)]
        go = ((vm <= xs) if right else (vm < xs)) & (lo < hi)
        lo = torch.where(go, mid + 1, lo)
        hi = torch.where(go, hi, mid)
    return lo.reshape(g, q)


def adaptive_table(sc: Scores, *, max_prob: bool, class_conditional: bool, thresholds,
                   num_bins) -> dict:
    """Adaptive tables of one grouping at several thresholds and bin counts (one sort shared).

    Per group: the scores sorted once; the kept ones start at the first score ``> t``; the
    upper edges are the kept scores at the kernel's ranks
    (:func:`calibkit.binned.table.adaptive_positions`), and a bin starts at the first score
    ``>=`` its edge (value-defined: ties go to the bin above), found by a search per edge. A
    bin's count and sums are differences of prefix sums (int64: unit halves and outcomes) at
    its boundaries, so no work is done per score beyond the sort and the prefix sums, and the
    sums are exact (the engine's bits).

    Parameters
    ----------
    sc : Scores
        Checked scores; with ``sc.weight`` the tables are binned on the host by the weighted
        primitive (see the module docstring).
    max_prob, class_conditional : bool
    thresholds : iterable of float
    num_bins : iterable of int

    Returns
    -------
    dict
        ``{(threshold, B): (counts, sum_score, sum_outcome)}``, each a (G, B) float64 array
        (NumPy, on the host).
    """
    if sc.weight is not None:
        return _weighted_adaptive(sc, max_prob, class_conditional, thresholds, num_bins)
    thresholds = [float(t) for t in thresholds]
    low = min(thresholds, default=0.0)
    v, ok, sizes = _sorted_groups(sc, max_prob, class_conditional,
                                  low if low > 0 and not max_prob else None)
    dev = v.device
    g = sizes.shape[0]
    m = int(v.shape[0])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    ends = starts + sizes
    # prefix sums (a leading 0) of the unit halves and the outcomes: 1-D scans (a scan down
    # the rows of an (m, 3) tensor runs column by column on CUDA, far slower)
    cols = [*unit_halves(v.to(_F64))] + ([] if ok is None else [ok.to(torch.int64)])
    prefix = torch.zeros((len(cols), m + 1), dtype=torch.int64, device=dev)
    for row, x in zip(prefix, cols):
        torch.cumsum(x, 0, out=row[1:])
    del cols
    if ok is None:  # a matrix: the outcome is 1 only at each row's label score
        assert sc.probs is not None and sc.labels is not None
        label_score = sc.probs.gather(1, sc.labels[:, None])[:, 0].to(_F64)
        label_group = sc.labels if class_conditional else torch.zeros_like(sc.labels)
    out = {}
    for t in thresholds:
        if _keeps_all(t, max_prob):
            first = starts
        else:
            x = torch.full((g, 1), _below(float(t), v.dtype), dtype=v.dtype, device=dev)
            first = _group_search(v, starts, sizes, x, right=True)[:, 0].cpu().numpy()
        kept_n = ends - first
        live = np.flatnonzero(kept_n > 0)
        for b in num_bins:
            bnd = np.empty((g, b + 1), dtype=np.int64)
            bnd[:, :b] = first[:, None]  # empty groups: every bin starts at the end
            bnd[:, b] = ends
            bnd_t = torch.from_numpy(bnd).to(dev)
            edge = None
            if b > 1 and live.size:
                # an empty group's edges are +inf: its searches end at its end
                at = np.where(kept_n[:, None] > 0, first[:, None] + adaptive_positions(kept_n, b),
                              -1)
                at_t = torch.from_numpy(at.reshape(-1)).to(dev)
                edge = torch.where(at_t >= 0, v[at_t.clamp(min=0)], float("inf")).reshape(g, b - 1)
                bnd_t[:, 1:b] = _group_search(v, starts, sizes, edge, right=False)
            p = prefix[:, bnd_t]  # (2 or 3, G, B + 1)
            parts = [(bnd_t[:, 1:] - bnd_t[:, :-1])[None], p[..., 1:] - p[..., :-1]]
            if ok is None:
                parts.append(_label_outcomes(label_score, label_group, edge, g, b, t)[None])
            d = torch.cat(parts).cpu().numpy().astype(np.float64)  # whole numbers below 2^53
            out[(t, int(b))] = (d[0], unit_value(d[1], d[2]), d[3])
    return out


def _label_outcomes(label_score: torch.Tensor, label_group: torch.Tensor,
                    edge: torch.Tensor | None, g: int, b: int, t: float) -> torch.Tensor:
    """A matrix's outcome sums (G, B) int64: each row's label score, kept when ``> t``, counted
    in its group's bin by value (the number of the group's upper edges ``<=`` it: ties go to
    the bin above, as the boundaries' searches put them), instead of a pass over every sorted
    score."""
    if edge is None:  # one bin, or no group kept anything
        cell = torch.zeros_like(label_group)
    else:
        cell = torch.searchsorted(edge.to(_F64)[label_group], label_score[:, None], right=True)[:, 0]
    cell = torch.where(label_score > t, label_group * b + cell, g * b)
    return _sums(cell, g * b + 1, [None])[0][:g * b].reshape(g, b).to(torch.int64)


def _weighted_adaptive(sc: Scores, max_prob: bool, class_conditional: bool, thresholds,
                       num_bins) -> dict:
    """Weighted adaptive tables: the kept rows to the host, binned by the weighted primitive."""
    g = _groups(sc, max_prob, class_conditional)
    w = sc.weight
    assert w is not None
    if max_prob:
        s = sc.confidence
        grp = sc.predicted if class_conditional else None
        ok = sc.correct
        ww = w
    else:
        p, y = sc.probs, sc.labels
        assert p is not None and y is not None
        n, k = p.shape
        s = p.reshape(-1)
        cols = torch.arange(k, device=p.device).repeat(n)
        grp = cols if class_conditional else None
        ok = cols == y.repeat_interleave(k)
        ww = w.repeat_interleave(k)
    out = {}
    for t in thresholds:
        keep = _kept(s.to(_F64), t, max_prob)
        host = [None if x is None else (x if keep is None else x[keep]).cpu().numpy()
                for x in (grp, s, ok, ww)]
        for b in num_bins:
            c, ss, so, _ = grouped_bin_stats(host[0], host[1], np.asarray(host[2], np.float64),
                                             host[3], num_groups=g, binning="adaptive",
                                             num_bins=int(b))
            out[(float(t), int(b))] = (c, ss, so)
    return out


def engine_tables(sc: Scores, *, binning: str, max_prob: bool, class_conditional: bool,
                  threshold: float, num_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The table of CPU scores by the engine itself (:func:`calibkit.calibration_bins`, no copy
    of the tensors' memory): the path for CPU tensors, where the Rust kernels are faster than
    torch ops. Weights that are all 1 count as no weights (the unweighted kernels' bits)."""
    t = _engine_bins(sc, binning=binning, max_prob=max_prob,
                     class_conditional=class_conditional, threshold=threshold, num_bins=num_bins)
    return (np.asarray(t.counts, dtype=np.float64), t.sum_score, t.sum_outcome)


def _engine_bins(sc: Scores, **kw):
    """:func:`calibkit.calibration_bins` of CPU scores (see :func:`engine_tables`)."""
    from ..binned.bins import calibration_bins

    w = sc.weight
    kw["sample_weight"] = None if w is None or bool((w == 1).all()) else w.numpy()
    if sc.probs is not None:
        assert sc.labels is not None
        return calibration_bins(sc.labels.numpy(), sc.probs.numpy(), **kw)
    pred = None if sc.predicted is None else sc.predicted.numpy()
    return calibration_bins(confidence=sc.confidence.numpy(), correct=sc.correct.numpy(),
                            predicted=pred, num_classes=None if pred is None else sc.num_classes,
                            **kw)


def _units_halves(words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The engine's exact cell sums (:class:`calibkit.binned.units.ScoreUnits` words: each
    cell's i128 units as [high, low] int64 words) as the device's halves ``hi * 2**25 + lo``:
    ``hi`` the units shifted right by 25 (below 2^53, exact in float64, for cells of up to
    2^28 scores, as on the device), ``lo`` the low 25 bits."""
    high, low = words[..., 0], words[..., 1].view(np.uint64)
    hi = (high << np.int64(64 - LO_BITS)) | (low >> np.uint64(LO_BITS)).astype(np.int64)
    lo = (low & np.uint64((1 << LO_BITS) - 1)).astype(np.int64)
    return hi, lo


def even_of(sc: Scores, *, max_prob: bool, class_conditional: bool, threshold: float,
            num_bins: int) -> torch.Tensor:
    """:func:`even_parts` where the scores are: torch ops on a device, the engine's kernels for
    CPU scores (:func:`use_engine`; the table's exact unit sums as the halves where the engine
    gives them, else ``0, sum_score * 2**50``; a CPU tensor)."""
    if use_engine(sc.device):
        t = _engine_bins(sc, binning="even", max_prob=max_prob,
                         class_conditional=class_conditional, threshold=threshold,
                         num_bins=num_bins)
        if t.score_units is not None:
            hi, lo = (x.astype(np.float64) for x in _units_halves(t.score_units.words))
        else:
            hi, lo = np.zeros_like(t.sum_score), t.sum_score * _UNITS_PER_ONE
        return torch.from_numpy(np.stack([np.asarray(t.counts, dtype=np.float64), hi, lo,
                                          t.sum_outcome]))
    return even_parts(sc, max_prob=max_prob, class_conditional=class_conditional,
                      threshold=threshold, num_bins=num_bins)


def parts_table(parts) -> tuple:
    """``(counts, sum_score, sum_outcome)`` of :func:`even_parts`-style parts (4, G, nb),
    NumPy or torch."""
    return parts[0], unit_value(parts[1], parts[2]), parts[3]


def adaptive_of(sc: Scores, *, max_prob: bool, class_conditional: bool, thresholds,
                num_bins) -> dict:
    """:func:`adaptive_table` where the scores are (the engine's kernels for CPU scores, as
    :func:`even_of`): ``{(threshold, B): (counts, sum_score, sum_outcome)}``, NumPy."""
    if use_engine(sc.device):
        return {(float(t), int(b)): engine_tables(
            sc, binning="adaptive", max_prob=max_prob, class_conditional=class_conditional,
            threshold=float(t), num_bins=int(b)) for t in thresholds for b in num_bins}
    return adaptive_table(sc, max_prob=max_prob, class_conditional=class_conditional,
                          thresholds=thresholds, num_bins=num_bins)


def space_tables(sc: Scores, space, num_bins) -> dict:
    """Every table the metrics of ``space`` read at the bin counts ``num_bins``, on the host.

    Even tables by :func:`even_of` (all of them cross to the host in one copy), adaptive ones
    by :func:`adaptive_of` (one sort per grouping, shared by its thresholds and bin counts).

    Returns
    -------
    dict
        ``{(binning, max_prob, class_conditional, threshold, B): (counts, sum_score,
        sum_outcome)}``, (G, nb) float64 NumPy arrays.
    """
    out: dict = {}
    even = sorted({(s.max_prob, s.class_conditional, s.threshold)
                   for s in space if s.binning == "even"})
    keys: list = []
    parts: list[torch.Tensor] = []
    for mp, cc, t in even:
        for b in num_bins:
            got = even_of(sc, max_prob=mp, class_conditional=cc, threshold=t, num_bins=b)
            keys.append((("even", mp, cc, t, b), got.shape))
            parts.append(got.reshape(-1))
    if parts:
        flat = torch.cat(parts).cpu().numpy()
        at = 0
        for key, shape in keys:
            size = shape[0] * shape[1] * shape[2]
            out[key] = parts_table(flat[at: at + size].reshape(shape))
            at += size
    groupings: dict = {}
    for s in space:
        if s.binning == "adaptive":
            groupings.setdefault((s.max_prob, s.class_conditional), set()).add(s.threshold)
    for (mp, cc), ts in groupings.items():
        tabs = adaptive_of(sc, max_prob=mp, class_conditional=cc, thresholds=sorted(ts),
                           num_bins=num_bins)
        for (t, b), tab in tabs.items():
            out[("adaptive", mp, cc, t, b)] = tab
    return out


def space_values(tables: dict, space, num_bins) -> np.ndarray:
    """Every (metric, bin count) value of ``tables`` (as :func:`space_tables` keys them), shape
    ``(len(space), len(num_bins))``: the one reduction
    (:func:`calibkit.binned.table.reduce_table`) of each metric's table."""
    out = np.empty((len(space), len(num_bins)))
    for i, s in enumerate(space):
        for j, b in enumerate(num_bins):
            c, ss, so = tables[(s.binning, s.max_prob, s.class_conditional, s.threshold, b)]
            out[i, j] = reduce_table(c, ss, so, s.norm, s.class_conditional)
    return out
