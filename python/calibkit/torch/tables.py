"""Per-(group, bin) tables of a batch computed with torch ops on the tensors' own device.

Only these (G, nb) tables (counts, score sums, outcome sums) cross to the host, where the one
reduction (:func:`calibkit.binned.table.reduce_table`) turns them into a metric, so a GPU
batch is never copied whole. The rules are the engine's (docs/spec.md), taken from it where it
states them:

* **scores**: float32 is widened exactly to float64 before any comparison; every sum is a
  float64 sum (order-dependent rounding: sums equal the Rust tables' to 1e-12, counts and
  unweighted outcome sums, being integers, bitwise);
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

__all__ = ["Scores", "even_table", "adaptive_table", "engine_tables", "use_engine", "even_of",
           "adaptive_of", "space_tables", "space_values"]

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


def _sums(cell: torch.Tensor, size: int, values: torch.Tensor | None) -> torch.Tensor:
    """Per-cell sums of ``values`` (counts when None) over ``size`` cells plus the drop cell,
    float64, by ``index_add_``: no host sync (``bincount`` reads the largest cell first), and
    deterministic on CUDA under ``torch.use_deterministic_algorithms``. Counts are sums of 1.0,
    exact integers in any order (up to 2^53)."""
    out = torch.zeros(size + 1, dtype=_F64, device=cell.device)
    if values is None:
        values = torch.ones((), dtype=_F64, device=cell.device).expand(cell.shape[0])
    return out.index_add_(0, cell, values)


def _kept(scores64: torch.Tensor, threshold: float, top_label: bool) -> torch.Tensor | None:
    """The keep mask, or None when every score is kept (top-label at threshold 0)."""
    if top_label and threshold == 0.0:
        return None
    return scores64 > threshold


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
        else 1.
    """
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
        ok = sc.correct.to(_F64)
        counts = _sums(cell, size, w)
        sum_score = _sums(cell, size, s if w is None else s * w)
        sum_outcome = _sums(cell, size, ok if w is None else ok * w)
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
        flat = cell.reshape(-1)
        wk = None if w is None else w[:, None].expand(n, k).reshape(-1)
        counts = _sums(flat, size, wk)
        sum_score = _sums(flat, size, s.reshape(-1) if w is None else (s * w[:, None]).reshape(-1))
        # the outcome is 1 only at each row's label: one cell per row
        label_cell = cell.gather(1, sc.labels[:, None])[:, 0]
        sum_outcome = _sums(label_cell, size, w)
    return tuple(t[:size].reshape(g, nb) for t in (counts, sum_score, sum_outcome))  # type: ignore


def _sorted_groups(sc: Scores, max_prob: bool, class_conditional: bool):
    """Scores sorted ascending within contiguous groups: ``(values, outcomes, sizes)``: values
    in the input dtype, outcomes bool, sizes (G,) int64 on the host (every row of the group,
    kept or not)."""
    if max_prob:
        conf, ok = sc.confidence, sc.correct
        if not class_conditional:
            v, order = torch.sort(conf)  # ties share a bin: any order among them
            return v, ok[order], np.array([sc.n], dtype=np.int64)
        pred = sc.predicted
        assert pred is not None
        order = torch.sort(conf)[1]
        order = order[torch.sort(pred[order], stable=True)[1]]
        sizes = torch.bincount(pred, minlength=sc.num_classes).cpu().numpy()
        return conf[order], ok[order], sizes.astype(np.int64)
    p, y = sc.probs, sc.labels
    assert p is not None and y is not None
    n, k = p.shape
    if not class_conditional:
        v, order = torch.sort(p.reshape(-1))
        ok = (order % k) == y[order // k]
        return v, ok, np.array([n * k], dtype=np.int64)
    # group k = column k: the columns as contiguous rows, each sorted
    v, rows = torch.sort(p.t().contiguous(), dim=1)
    ok = y[rows] == torch.arange(k, device=p.device)[:, None]
    return v.reshape(-1), ok.reshape(-1), np.full(k, n, dtype=np.int64)


def adaptive_table(sc: Scores, *, max_prob: bool, class_conditional: bool, thresholds,
                   num_bins) -> dict:
    """Adaptive tables of one grouping at several thresholds and bin counts (one sort shared).

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
    v, ok, sizes = _sorted_groups(sc, max_prob, class_conditional)
    dev = v.device
    g = sizes.shape[0]
    m = int(v.shape[0])
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    gid = torch.repeat_interleave(torch.arange(g, device=dev),
                                  torch.from_numpy(sizes).to(dev), output_size=m)
    idx = torch.arange(m, device=dev)
    new_run = torch.ones(m, dtype=torch.bool, device=dev)
    if m > 1:
        new_run[1:] = (v[1:] != v[:-1]) | (gid[1:] != gid[:-1])
    run_start = torch.cummax(torch.where(new_run, idx, 0), dim=0)[0]
    v64 = v.to(_F64)
    okf = ok.to(_F64)
    out = {}
    for t in thresholds:
        keep = _kept(v64, t, max_prob)
        if keep is None:
            dropped = np.zeros(g, dtype=np.int64)
        else:
            dropped = torch.bincount(gid[~keep], minlength=g).cpu().numpy().astype(np.int64)
        kept_n = sizes - dropped
        first = starts + dropped
        for b in num_bins:
            bnd = np.repeat(first[:, None], b, axis=1)  # empty groups: every bin starts at end
            pos = np.zeros((g, max(b - 1, 0)), dtype=np.int64)
            live = np.flatnonzero(kept_n > 0)
            for n_i in np.unique(kept_n[live]):  # the kernel's ranks, once per group size
                pos[kept_n == n_i] = np.asarray(adaptive_positions(int(n_i), b), dtype=np.int64)
            bnd_t = torch.from_numpy(bnd).to(dev)
            if b > 1 and live.size:
                at = torch.from_numpy((first[live, None] + pos[live]).reshape(-1)).to(dev)
                bnd_t[torch.from_numpy(live).to(dev), 1:] = run_start[at].reshape(live.size, b - 1)
            cell = torch.searchsorted(bnd_t.reshape(-1), idx, right=True) - 1
            size = g * b
            if keep is not None:
                cell = torch.where(keep, cell, size)
            counts = _sums(cell, size, None)
            sum_score = _sums(cell, size, v64)
            sum_outcome = _sums(cell, size, okf)
            out[(float(t), int(b))] = tuple(
                x[:size].reshape(g, b).cpu().numpy() for x in (counts, sum_score, sum_outcome))
    return out


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
    from ..binned.bins import calibration_bins

    w = sc.weight
    w_np = None if w is None or bool((w == 1).all()) else w.numpy()
    kw: dict = dict(binning=binning, max_prob=max_prob, class_conditional=class_conditional,
                    threshold=threshold, num_bins=num_bins, sample_weight=w_np)
    if sc.probs is not None:
        assert sc.labels is not None
        t = calibration_bins(sc.labels.numpy(), sc.probs.numpy(), **kw)
    else:
        pred = None if sc.predicted is None else sc.predicted.numpy()
        t = calibration_bins(confidence=sc.confidence.numpy(), correct=sc.correct.numpy(),
                             predicted=pred, num_classes=None if pred is None else sc.num_classes,
                             **kw)
    return (np.asarray(t.counts, dtype=np.float64), t.sum_score, t.sum_outcome)


def even_of(sc: Scores, *, max_prob: bool, class_conditional: bool, threshold: float,
            num_bins: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`even_table` where the scores are: torch ops on a device, the engine's kernels for
    CPU scores (:func:`use_engine`; the tables then as CPU tensors)."""
    if use_engine(sc.device):
        return tuple(torch.from_numpy(a) for a in engine_tables(  # type: ignore[return-value]
            sc, binning="even", max_prob=max_prob, class_conditional=class_conditional,
            threshold=threshold, num_bins=num_bins))
    return even_table(sc, max_prob=max_prob, class_conditional=class_conditional,
                      threshold=threshold, num_bins=num_bins)


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
            tabs = even_of(sc, max_prob=mp, class_conditional=cc, threshold=t, num_bins=b)
            keys.append((("even", mp, cc, t, b), tabs[0].shape))
            parts.extend(x.reshape(-1) for x in tabs)
    if parts:
        flat = torch.cat(parts).cpu().numpy()
        at = 0
        for key, shape in keys:
            size = shape[0] * shape[1]
            out[key] = tuple(flat[at + i * size: at + (i + 1) * size].reshape(shape)
                             for i in range(3))
            at += 3 * size
    groupings: dict = {}
    for s in space:
        if s.binning == "adaptive":
            groupings.setdefault((s.max_prob, s.class_conditional), set()).add(s.threshold)
    for (mp, cc), ts in groupings.items():
        got = adaptive_of(sc, max_prob=mp, class_conditional=cc, thresholds=sorted(ts),
                          num_bins=num_bins)
        for (t, b), tab in got.items():
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
