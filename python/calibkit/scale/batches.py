"""One batch of a streaming accumulator: the metric argument, the batch's checks, and what it
adds (even tables and kept score groups; :class:`calibkit.streaming.Accumulator` and
``calibkit.dask``)."""

from __future__ import annotations

import numpy as np

from .. import _native, _toplabel
from .._validate import float_dtype, length_mismatch_error, no_columns_error, validate_inputs
from ..binned.bins import calibration_bins
from ..binned.groups import pair_groups, score_groups
from ..binned.spec import MetricSpace, MetricSpec, as_space
from ..binned.units import ScoreUnits, exact_sums
from ..binned.weights import as_sample_weight, pair_triples
from ..errors import InvalidParameterError

__all__ = ["metric_space_of", "check_batch", "batch_weights", "as_total", "add_table",
           "kept_groups", "lowest_thresholds", "matrix_contribution", "pairs_contribution"]




def metric_space_of(metric, gce_params) -> tuple[MetricSpace, bool]:
    """(space, single) from the ``metric`` argument or GCE keywords."""
    if gce_params:
        if metric is not None:
            raise InvalidParameterError(
                f"metric: pass either a metric or GCE keywords ({sorted(gce_params)}), not both"
            )
        allowed = {"binning", "max_prob", "class_conditional", "threshold", "norm"}
        bad = sorted(set(gce_params) - allowed)
        if bad:
            raise InvalidParameterError(
                f"unknown keyword(s) {bad}; the GCE keywords are {sorted(allowed)}"
            )
        return MetricSpace([MetricSpec(**gce_params)]), True
    if metric is None:
        return MetricSpace([MetricSpec()]), True
    return as_space(metric)


def check_batch(labels, probs):
    """Validated ``(labels, probs, K, dtype)``; ``labels``/``probs`` are None for an empty batch."""
    try:
        p = None if isinstance(probs, (str, bytes)) or probs is None else np.asarray(probs)
    except (TypeError, ValueError):  # ragged input: let validate_inputs explain
        p = None
    if p is not None and p.dtype.kind in "fiub" and p.ndim in (1, 2) and p.shape[0] == 0:
        if p.ndim == 2 and p.shape[1] == 0:
            raise no_columns_error()
        y = np.asarray(labels)
        if y.ndim != 1 or y.shape[0] != 0:
            raise length_mismatch_error(y.shape[0] if y.ndim else 1, 0)
        k = 2 if p.ndim == 1 or p.shape[1] == 1 else p.shape[1]
        return None, None, k, float_dtype(p.dtype)
    y, p = validate_inputs(labels, probs)
    return y, p, p.shape[1], p.dtype


def as_total(x):
    """A total weight as int when it is integral (so integer weights count like rows)."""
    x = float(x)
    return int(x) if x.is_integer() else x


def add_table(acc, part):
    """``acc + part`` in place when the dtypes allow; int64 counts become float64 total weights
    once a weighted table arrives. Exact score sums (:class:`ScoreUnits`) add exactly, and
    become float sums once a table without them arrives."""
    if isinstance(acc, ScoreUnits) or isinstance(part, ScoreUnits):
        return acc + part
    if acc.dtype.kind == "i" and np.asarray(part).dtype.kind == "f":
        return acc + part
    acc += part
    return acc


def kept_groups(y, p, w, max_prob: bool, class_conditional: bool, threshold: float, k: int):
    """Per group ``(scores, outcomes)``, or with weights ``(scores, outcomes, weights)``, of one
    validated batch (rows of weight 0 already dropped)."""
    if w is None:
        return score_groups(y, p, max_prob, class_conditional, threshold)
    if y.shape[0] == 0:  # every row had weight 0
        return [(p[:0, 0], np.zeros(0, bool), w) for _ in range(k if class_conditional else 1)]
    group, score, outcome, row = _native.score_rows(y, p, bool(max_prob),
                                                    bool(class_conditional), float(threshold))
    return _weighted_groups(group, score, outcome, w[row], k if class_conditional else 1,
                            p.dtype)


def _weighted_groups(group, score, outcome, weight, num_groups: int, dtype) -> list:
    """Per group ``(scores in dtype, outcomes as bool, weights)`` of weighted kept entries, in
    entry order, without those of weight 0 (which drop a row)."""
    out = []
    for g in range(num_groups):
        m = (group == g) & (weight > 0)
        out.append((score[m].astype(dtype), outcome[m] > 0.5, weight[m]))
    return out


def lowest_thresholds(adaptive_keys) -> dict:
    """``{(max_prob, class_conditional): lowest threshold}`` of adaptive keys ``(mp, cc, t)``:
    a batch keeps each grouping's scores once, at its lowest threshold (higher ones filter
    them when added)."""
    low: dict = {}
    for mp, cc, t in adaptive_keys:
        low[(mp, cc)] = min(t, low.get((mp, cc), t))
    return low


def matrix_contribution(y, p, w, even_keys, num_bins, adaptive_keys) -> tuple[dict, dict]:
    """What one checked matrix batch (weight-0 rows dropped) adds to an accumulator: its even
    tables ``{(mp, cc, t, b): (counts, exact score sums, outcome sums)}`` and its kept groups
    ``{(mp, cc): (t_min, groups)}`` (:func:`lowest_thresholds`, :func:`kept_groups`)."""
    even = {}
    if y.shape[0]:
        for mp, cc, t in even_keys:
            for b in num_bins:
                tab = calibration_bins(y, p, binning="even", max_prob=mp, class_conditional=cc,
                                       threshold=t, num_bins=b, sample_weight=w)
                even[(mp, cc, t, b)] = (tab.counts, exact_sums(tab.sum_score, tab.score_units),
                                        tab.sum_outcome)
    groups = {(mp, cc): (t, kept_groups(y, p, w, mp, cc, t, p.shape[1]))
              for (mp, cc), t in lowest_thresholds(adaptive_keys).items()}
    return even, groups


def pairs_contribution(pairs, w, even_keys, num_bins, adaptive_keys, k: int) -> tuple[dict, dict]:
    """:func:`matrix_contribution` of a batch of top-label pairs (:mod:`calibkit._toplabel`;
    ``k`` classes); the values are checked here (by the even tables' pass, or alone)."""
    even = {}
    for mp, cc, t in even_keys:
        for b in num_bins:
            if w is None:
                c, s, o, _, u = _toplabel.bin_stats(pairs, "even", mp, cc, t, b, units=True)
            else:
                tr = pair_triples(pairs, binning="even", class_conditional=cc, threshold=t,
                                  num_bins=b)
                c, s, o, _, u = tr.stats(tr.weight_of(w), units=True)
            even[(mp, cc, t, b)] = (c, exact_sums(s, u), o)
    if not even:  # the Rust pass checks the values
        _toplabel.bin_stats(pairs, "even", True, False, 0.0, 1)
    groups: dict[tuple, tuple] = {}
    for (mp, cc), t in lowest_thresholds(adaptive_keys).items():
        if w is None:
            groups[(mp, cc)] = (t, pair_groups(pairs, cc, t))
            continue
        tr = pair_triples(pairs, binning="adaptive", class_conditional=cc, threshold=t,
                          num_bins=1)
        groups[(mp, cc)] = (t, _weighted_groups(tr.group, tr.score, tr.outcome,
                                                tr.weight_of(w), k if cc else 1,
                                                pairs.confidence.dtype))
    return even, groups


def batch_weights(sample_weight, n: int, *, carried: float, integer: bool):
    """A batch's checked float64 weights (None stays None): the one weight rule, with the weight
    ``carried`` from earlier batches; ``integer`` (sketch mode) refuses fractional weights."""
    if sample_weight is None:
        return None
    w = as_sample_weight(sample_weight, n, allow_all_zero=True, carried=carried)
    if integer and not np.all(w == np.round(w)):
        i = int(np.flatnonzero(w != np.round(w))[0])
        raise InvalidParameterError(
            f"sample_weight[{i}] is {w[i]}: adaptive='sketch' takes integer sample weights "
            f"only (KLL sketches count items); build the Accumulator with adaptive='exact' "
            f"for fractional weights"
        )
    return w
