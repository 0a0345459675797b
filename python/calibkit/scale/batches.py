"""One batch of a streaming accumulator: the metric argument, the batch's checks, and its kept
score groups (:class:`calibkit.streaming.Accumulator` and ``calibkit.dask``)."""

from __future__ import annotations

import numpy as np

from .. import _native
from .._validate import float_dtype, length_mismatch_error, no_columns_error, validate_inputs
from ..binned.groups import score_groups
from ..binned.spec import MetricSpace, MetricSpec, as_space
from ..binned.units import ScoreUnits
from ..binned.weights import as_sample_weight
from ..errors import InvalidParameterError

__all__ = ["metric_space_of", "check_batch", "batch_weights", "as_total", "add_table",
           "kept_groups"]




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
    tw = w[row]
    out = []
    for g in range(k if class_conditional else 1):
        m = group == g
        out.append((score[m].astype(p.dtype), outcome[m] > 0.5, tw[m]))
    return out


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
