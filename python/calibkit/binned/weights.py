"""Sample weights: per-row weights on any metric of the space, through the weighted primitive.

A metric's score groups are formed once from ``(labels, probs)`` as triples (group, score,
outcome) with the row each came from, by one validating Rust pass (``rust/kernels/gce/rows.rs``);
the weighted primitive
(:func:`calibkit.binned.table.grouped_bin_stats`, ``rust/kernels/weighted/grouped.rs``) bins them with each
triple weighted by its row's weight, and :func:`calibkit.binned.table.reduce_table` reduces the
table. Metrics over all probabilities (SCE, ACE, TACE and their relatives, even or adaptive,
by class or pooled) take the same table bit for bit from passes over the matrix instead,
without forming the triples (:func:`matrix_tables`); adaptive groups are sorted once for every
bin count asked for together.
Integer weights give exactly the statistics of repeating each row ``weight`` times (the
primitive's weighted equal-mass positions make this hold for adaptive bins too); a weight of 0
drops the row. Bootstrap resamples (:mod:`calibkit.trust.intervals`) reuse the same triples,
one weight vector per resample.

Weights must be finite and >= 0, one per row (N,); calibkit raises
:class:`~calibkit.errors.ShapeMismatchError` for a wrong length or shape,
:class:`~calibkit.errors.InputTypeError` for non-numbers and
:class:`~calibkit.errors.InvalidParameterError` for NaN, infinite or negative values,
weights that are all zero, or weights whose sum overflows float64 (also counting a row's weight
once per score a metric keeps: K times per row without ``max_prob``). The rule is written once,
:func:`calibkit._params.check_weights`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native, _toplabel
from .._params import check_gce_params, check_weight_total, check_weights
from .._validate import as_array, validate_inputs
from ..errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from .table import CalibrationBins, _wrap_units, reduce_table, rows_table

__all__ = ["as_sample_weight", "Triples", "form_triples", "matrix_tables", "pair_triples",
           "weighted_bins", "weighted_evaluate"]


def as_sample_weight(sample_weight, n: int, *, allow_all_zero: bool = False,
                     carried: float = 0.0) -> np.ndarray:
    """``sample_weight`` checked (:func:`calibkit._params.check_weights`, with the weight
    ``carried`` from earlier batches) and as a contiguous float64 array of shape (n,)."""
    w = as_array(sample_weight, "sample_weight", f"an array of N = {n} non-negative numbers")
    if w.dtype.kind not in "biuf":
        raise InputTypeError(f"sample_weight must hold real numbers, got dtype {w.dtype}")
    if w.ndim != 1 or w.shape[0] != n:
        raise ShapeMismatchError(
            f"sample_weight must have shape ({n},), one weight per row, got shape {w.shape}"
        )
    return check_weights(np.ascontiguousarray(w, dtype=np.float64), "sample_weight", allow_all_zero=allow_all_zero,
                         carried=carried)


@dataclass(frozen=True, eq=False)
class Triples:
    """The kept (group, score, outcome) triples of one metric, with the row of each."""

    group: np.ndarray
    score: np.ndarray
    outcome: np.ndarray
    row: np.ndarray
    num_groups: int
    num_classes: int
    binning: str
    num_bins: int
    max_prob: bool
    class_conditional: bool
    threshold: float

    def weight_of(self, row_weights):
        """Per-triple weights from per-row weights (None stays None: all ones). A row's weight
        counts once per score of it that the metric keeps (up to K per row without
        ``max_prob``), so their total is checked too (:func:`calibkit._params.check_weight_total`)."""
        if row_weights is None:
            return None
        # every entry's weight is a checked row weight (finite, >= 0: ``as_sample_weight``),
        # so only their total is new
        w = row_weights[self.row]
        with np.errstate(over="ignore"):
            total = float(np.sum(w))
        check_weight_total(total, "sample_weight over the scores this metric bins (a row's "
                           "weight once per score it keeps)", allow_zero=True)
        return w

    def stats(self, weights, units: bool = False):
        # the rows were formed here from validated inputs: no second scan in Python
        return rows_table(self.group, self.score, self.outcome, weights, self.num_groups,
                          self.binning, self.num_bins, units)

    def error(self, weights, norm: str) -> float:
        c, s, o, _ = self.stats(weights)
        return reduce_table(c, s, o, norm, self.class_conditional)

    def bins(self, weights) -> CalibrationBins:
        c, s, o, e, u = self.stats(weights, units=True)
        if self.binning == "adaptive":
            e[:, 0] = self.threshold
        return CalibrationBins(c, s, o, e, self.num_classes, self.binning,
                               self.class_conditional, self.max_prob, self.threshold, u)


def form_triples(labels, probs, *, binning: str, max_prob: bool, class_conditional: bool,
                 threshold: float, num_bins: int) -> Triples:
    """Validate ``(labels, probs)`` and form the triples of one metric (see the module doc)."""
    y, p = validate_inputs(labels, probs)
    # One Rust pass validates the values (as every entry point does) and forms the groups.
    group, score, outcome, row = _native.score_rows(y, p, bool(max_prob),
                                                    bool(class_conditional), float(threshold))
    k = p.shape[1]
    return Triples(group, score, outcome, row, k if class_conditional else 1, k, binning,
                   num_bins, bool(max_prob), bool(class_conditional), float(threshold))


def pair_triples(pairs, *, binning: str, class_conditional: bool, threshold: float,
                 num_bins: int) -> Triples:
    """The triples of top-label pairs (:class:`calibkit._toplabel.Pairs`), values validated
    by the pair kernel's checks: one group (or one per predicted class), score the confidence,
    outcome ``correct``, kept by the pair form's rule (:func:`calibkit._toplabel.kept_rows`:
    ``confidence > threshold``, every confidence at threshold 0)."""
    group, score, outcome, row = _toplabel.rows(pairs, bool(class_conditional), float(threshold))
    return Triples(group, score, outcome, row,
                   pairs.k if class_conditional else 1, pairs.k, binning, num_bins, True,
                   bool(class_conditional), float(threshold))


def _fits_matrix_pass(max_prob: bool, w: np.ndarray, k: int) -> bool:
    """Whether a metric's weighted table comes from passes over the matrix
    (:func:`matrix_tables`) rather than its triples: every metric over all probabilities, with
    weights whose total over the kept entries (at most ``k`` per row) cannot overflow, which
    the triples path checks (and names) otherwise."""
    if max_prob:
        return False
    with np.errstate(over="ignore"):
        return float(np.sum(w)) * k < 1e300


def matrix_tables(y: np.ndarray, p: np.ndarray, w: np.ndarray, *, binning: str, groupings,
                  threshold: float, num_bins) -> list:
    """The weighted tables (counts, score sums, outcome sums, edges, units) of the
    all-probabilities groupings at ``threshold``, one list per ``class_conditional`` bool of
    ``groupings``, each with one table per bin count of ``num_bins``, from validated ``(y, p)``
    and checked row weights ``w``: each bit for bit the table of :meth:`Triples.bins` (the
    weighted primitive on the metric's triples, :func:`form_triples` with
    :meth:`Triples.weight_of`), adaptive edges starting at the threshold, from Rust passes over
    the matrix (``rust/kernels/weighted/matrix.rs``, even bins, pooled from the
    class-conditional sums when both are asked for; ``matrix_adaptive.rs``, adaptive bins, each
    group sorted once for all the bin counts)."""
    out = _native.weighted_matrix_stats(y, p, w, binning, [bool(c) for c in groupings],
                                        float(threshold), [int(b) for b in num_bins])
    if binning == "adaptive":
        for t in (t for per_grouping in out for t in per_grouping):
            t[3][:, 0] = threshold
    return [[_wrap_units(t) for t in per_grouping] for per_grouping in out]


def weighted_bins(labels, probs, sample_weight, *, binning: str, max_prob: bool,
                  class_conditional: bool, threshold: float, num_bins: int,
                  pairs=None) -> CalibrationBins:
    """:func:`calibkit.calibration_bins` with per-row weights (counts become total weights);
    ``pairs``: resolved top-label input (:class:`calibkit._toplabel.Pairs`) instead of
    ``labels``/``probs``."""
    if pairs is not None:
        tr = pair_triples(pairs, binning=binning, class_conditional=class_conditional,
                          threshold=threshold, num_bins=num_bins)
        return tr.bins(tr.weight_of(as_sample_weight(sample_weight, pairs.n)))
    if np.ndim(labels) == 2:
        raise InvalidParameterError(
            "sample_weight is not supported for multilabel (N, K) label matrices yet; pass "
            "1-D class labels, or compute each column with calibkit.gce(..., sample_weight=)"
        )
    y, p = validate_inputs(labels, probs)
    w = as_sample_weight(sample_weight, int(np.shape(labels)[0]))
    if _fits_matrix_pass(max_prob, w, p.shape[1]):
        num_bins = check_gce_params(binning, "l1", threshold, num_bins)[3]
        c, s, o, e, u = matrix_tables(y, p, w, binning=binning, groupings=[class_conditional],
                                      threshold=threshold, num_bins=[num_bins])[0][0]
        return CalibrationBins(c, s, o, e, p.shape[1], binning, bool(class_conditional), False,
                               float(threshold), u)
    tr = form_triples(y, p, binning=binning, max_prob=max_prob,
                      class_conditional=class_conditional, threshold=threshold, num_bins=num_bins)
    return tr.bins(tr.weight_of(w))


def weighted_evaluate(labels, probs, space, bins, sample_weight) -> np.ndarray:
    """The (len(space), len(bins)) table of :func:`calibkit.evaluate` under per-row weights.

    Metrics over all probabilities take one call over the matrix per (binning, threshold) for
    both groupings and every bin count (adaptive groups sorted once, even pooled tables from
    the class-conditional sums), its tables shared by both norms; the triples of each
    top-label grouping (class_conditional, threshold) are formed once and shared by every
    binning, norm and bin count.
    """
    from dataclasses import replace

    n = int(np.shape(labels)[0])
    w = as_sample_weight(sample_weight, n)
    y, p = validate_inputs(labels, probs)
    bins = [int(b) for b in bins]
    # The tables over all probabilities: one call per (binning, threshold) for the groupings
    # the space asks for there, class-conditional first, at every bin count.
    tables: dict = {}
    if _fits_matrix_pass(False, w, p.shape[1]):
        wanted: dict = {}
        for spec in space:
            if not spec.max_prob:
                wanted.setdefault((spec.binning, spec.threshold), set()).add(spec.class_conditional)
        for (binning, threshold), ccs in wanted.items():
            groupings = sorted(ccs, reverse=True)
            per = matrix_tables(y, p, w, binning=binning, groupings=groupings,
                                threshold=threshold, num_bins=bins)
            for cc, t in zip(groupings, per):
                tables[(binning, cc, threshold)] = t
    cache: dict = {}
    out = np.empty((len(space), len(bins)))
    for i, spec in enumerate(space):
        at = (spec.binning, spec.class_conditional, spec.threshold)
        if not spec.max_prob and at in tables:
            for j, (c, s, o, _e, _u) in enumerate(tables[at]):
                out[i, j] = reduce_table(c, s, o, spec.norm, spec.class_conditional)
            continue
        key = (spec.max_prob, spec.class_conditional, spec.threshold)
        if key not in cache:
            tr = form_triples(y, p, binning=spec.binning, max_prob=spec.max_prob,
                              class_conditional=spec.class_conditional,
                              threshold=spec.threshold, num_bins=1)
            cache[key] = (tr, tr.weight_of(w))
        tr, tw = cache[key]
        for j, b in enumerate(bins):
            out[i, j] = replace(tr, binning=spec.binning, num_bins=b).error(tw, spec.norm)
    return out
