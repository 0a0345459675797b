"""The per-entry work shared by every resampling method: each kept score's cell, once.

A *cell* is ``group * nb + bin`` of the table :func:`calibkit.calibration_bins` returns. The
kernel assigns it (``_native.table_cells``, ``rust/kernels/weighted/cells.rs``) by the metric kernels'
own rules, never restated here: even bins by the even kernels' bin function, adaptive bins by
the number of the group's inner edges ``<= score`` (left-closed) at the table's edges, and
``DROPPED`` for a score at or below the threshold. So the cells reproduce the kernel's table
exactly (tested: their counts are the table's counts, with scores on edges, at 1 and at the
threshold).

Layout handed to the Rust resamplers (``rust/kernels/weighted/resample.rs``): ``cell`` (N, W) uint32
with ``DROPPED`` for scores at or below the threshold, ``score`` (N, W) float64 and ``hit`` (N,)
uint32, the column whose outcome is 1. Top-label metrics: W = 1, the row's top probability,
``hit = 0`` when the prediction is correct. All-probability metrics: W = K, the full row (the
consistency test draws a class from it), ``hit = label``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native
from .._validate import validate_inputs
from ..binned.bins import CalibrationBins, calibration_bins
from ..binned.spec import MetricSpec
from ..binned.weights import Triples, weighted_bins

__all__ = ["RowCells", "row_cells", "pair_cells", "DROPPED", "triples"]

DROPPED = np.uint32(np.iinfo(np.uint32).max)


@dataclass(frozen=True, eq=False)
class RowCells:
    """Cells of one metric on one dataset (see the module doc)."""

    cell: np.ndarray
    score: np.ndarray
    hit: np.ndarray
    bins: CalibrationBins
    spec: MetricSpec
    num_bins: int

    @property
    def groups(self) -> int:
        return int(self.bins.counts.shape[0])

    @property
    def nb(self) -> int:
        return int(self.bins.counts.shape[1])


def _cells(scores: np.ndarray, groups, b: CalibrationBins, spec: MetricSpec,
           num_bins: int, by_column: bool = False, keep_all: bool = False) -> np.ndarray:
    """The kernel's cell of each score (1-D) of table ``b``, ``DROPPED`` at or below the
    threshold; ``groups`` (1-D, or None for one group) are the scores' groups, or with
    ``by_column`` the scores are a flattened (N, K) matrix whose columns are the groups."""
    edges = (None if spec.binning == "even"
             else np.ascontiguousarray(b.edges, dtype=np.float64))
    g = None if groups is None else np.ascontiguousarray(groups, dtype=np.int64)
    return _native.table_cells(np.ascontiguousarray(scores, dtype=np.float64), g,
                               int(b.counts.shape[0]), int(num_bins), edges,
                               None if keep_all else float(spec.threshold), by_column)


def pair_cells(pairs, spec: MetricSpec, num_bins: int, sample_weight=None) -> RowCells:
    """The cells of a top-label ``spec`` for resolved top-label input (a
    :class:`calibkit._toplabel.Pairs`): one score per row, ``hit = 0`` when it is correct.
    With checked ``sample_weight``, the table (and so the adaptive edges) is the weighted one."""
    from .._toplabel import bin_stats, require_top_label

    require_top_label(pairs, spec.max_prob, spec.class_conditional, "this resampling method")
    if sample_weight is not None:
        b = weighted_bins(None, None, sample_weight, binning=spec.binning, max_prob=True,
                          class_conditional=spec.class_conditional, threshold=spec.threshold,
                          num_bins=num_bins, pairs=pairs)
    else:
        counts, ss, so, edges = bin_stats(pairs, spec.binning, True, spec.class_conditional,
                                          spec.threshold, num_bins)
        b = CalibrationBins(counts, ss, so, edges, pairs.k, spec.binning,
                            spec.class_conditional, True, spec.threshold)
    top = np.ascontiguousarray(pairs.confidence, dtype=np.float64)
    group = pairs.predicted if spec.class_conditional else None
    # the pair form's keep rule (calibkit._toplabel.kept_rows): threshold 0 keeps every pair
    cell = _cells(top, group, b, spec, num_bins, keep_all=spec.threshold == 0.0)[:, None]
    hit = np.where(pairs.correct.astype(bool), 0, DROPPED).astype(np.uint32)
    return RowCells(cell, top[:, None].copy(), hit, b, spec, num_bins)


def row_cells(labels, probs, spec: MetricSpec, num_bins: int, sample_weight=None) -> RowCells:
    """Validate ``(labels, probs)`` and form the cells of ``spec`` at ``num_bins`` bins (with
    checked ``sample_weight``, against the weighted table: its adaptive edges are weighted).

    The arrays are converted once (``validate_inputs``; ``calibration_bins`` then takes its
    no-copy path) and their values checked by the kernels; the top label of a row (its
    confidence, predicted class and correctness) is the kernel's (``_native.score_rows``: the
    first maximum, as every top-label metric takes it), never recomputed here."""
    y, p = validate_inputs(labels, probs)
    b = calibration_bins(y, p, num_bins=num_bins, binning=spec.binning, max_prob=spec.max_prob,
                         class_conditional=spec.class_conditional, threshold=spec.threshold,
                         sample_weight=sample_weight)
    n, k = p.shape
    if spec.max_prob:
        # every row (threshold -inf; the cells drop the scores at or below the threshold)
        pred, top, correct, _ = _native.score_rows(y, p, True, True, float("-inf"))
        cell = _cells(top, pred if spec.class_conditional else None, b, spec, num_bins)[:, None]
        hit = np.where(correct != 0, 0, DROPPED).astype(np.uint32)
        return RowCells(cell, top[:, None].copy(), hit, b, spec, num_bins)
    s = np.ascontiguousarray(p, dtype=np.float64)
    cell = _cells(s.reshape(-1), None, b, spec, num_bins,
                  by_column=spec.class_conditional).reshape(n, k)
    return RowCells(cell, s, y.astype(np.uint32), b, spec, num_bins)


def triples(rc) -> Triples:
    """The triples of a :class:`RowCells` (for bootstrap resampling)."""
    n, width = rc.cell.shape
    cell = rc.cell.reshape(-1)
    keep = cell != DROPPED
    col = np.tile(np.arange(width, dtype=np.int64), n)
    row = np.repeat(np.arange(n, dtype=np.int64), width)
    outcome = (col == rc.hit[row].astype(np.int64)).astype(np.float64)
    spec = rc.spec
    return Triples((cell[keep] // rc.nb).astype(np.int64), rc.score.reshape(-1)[keep],
                   outcome[keep], row[keep], rc.groups, rc.bins.num_classes, spec.binning,
                   rc.num_bins, spec.max_prob, spec.class_conditional, spec.threshold)
