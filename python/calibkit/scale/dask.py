"""Calibration metrics over ``dask.array`` inputs, on one machine or a cluster, exactly.

``labels`` (N,) and ``probs`` (N, K) (or binary (N,)) are dask arrays chunked by rows (columns
are rechunked into one chunk if needed, and ``labels`` is rechunked to the row chunks of
``probs``). The data never move to one worker: each chunk is reduced where it lives to small
partial results that are combined in a tree (``split_every`` at a time).

* **Even binning**: one map-reduce. Each chunk yields per-(group, bin) count, score sum and
  outcome sum (:func:`calibkit.calibration_bins`); the sums are added and reduced to the metric.
* **Adaptive binning, exact**: the equal-mass edges are order statistics of each score group, so
  they are found by a distributed selection (histogram refinement on the bit patterns of the
  scores, see :mod:`calibkit.scale.select`): pass 1 puts each group's scores in a fixed grid of
  buckets (and does the even-binning map-reduce), each later pass narrows every wanted rank to
  a finer bucket or fetches the scores of its bucket once it holds at most 2**18 of them. Every
  bucket comes back as an exact table (count, outcome count, exact score sum; in pass 1 per
  super-bucket of 16 grid buckets, those holding an edge tabled again around it in pass 2), so
  the bins' tables are the whole buckets between the edges plus the fetched scores binned at the
  edges: no counting pass. Typically 2 passes in all (10M x 10 float32: 2; also when every edge
  falls on a single value, e.g. scores of exactly 0 and 1); 3 when edge buckets hold too many
  scores to fetch, as for many classes with heavy ties (CIFAR-100 outputs tiled 40 times).
  Only bucket tables (at most about 2**20 buckets per pass) and a bounded number of scores (at
  most 2**22 per pass) ever travel.

* **Sample weights** (``sample_weight=``, any finite weights >= 0): one pass. Each chunk yields
  weighted even tables (:func:`calibkit.calibration_bins` with the chunk's weights) and, for
  adaptive binning, its kept (group, score, outcome, weight) rows; those are gathered and binned
  once by the weighted primitive (:func:`calibkit.binned.table.grouped_bin_stats`), so the weighted
  equal-mass edges are exactly those of :func:`calibkit.gce`. This gathers the kept scores of
  adaptive metrics on the calling process (about 28-32 bytes each, see :func:`gce`).

Every pass reads the input chunks again, so the inputs must give the same data each time
(``persist()`` them if they are expensive or random without a seed); a change between passes is
detected and raises :class:`calibkit.errors.SelectionError` (a ``RuntimeError``). All metrics of an
:func:`evaluate` call share their passes. Results equal the in-memory :func:`calibkit.gce` /
:func:`calibkit.evaluate` to 1e-12 for any chunking.

Needs the ``dask`` extra: ``pip install 'calibkit[dask]'``.

Examples
--------
>>> import numpy as np, dask.array as da, calibkit, calibkit.dask
>>> rng = np.random.default_rng(0)
>>> probs = rng.dirichlet(np.ones(4), size=2000)
>>> labels = rng.integers(0, 4, size=2000)
>>> dp, dl = da.from_array(probs, chunks=(300, 4)), da.from_array(labels, chunks=300)
>>> v = calibkit.dask.gce(dl, dp, binning="adaptive", max_prob=False, class_conditional=True,
...                       num_bins=10, scheduler="synchronous")
>>> bool(abs(v - calibkit.ace(labels, probs, num_bins=10)) < 1e-12)
True
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import _native, _toplabel
from .._budget import check_tables, held_groups
from .._params import (
    as_bin_counts,
    as_int,
    as_num_classes,
    check_gce_params,
    check_table,
    check_weight_total,
)
from .._validate import (
    empty_probs_error,
    float_dtype,
    labels_ndim_error,
    length_mismatch_error,
    no_columns_error,
    probs_dtype_error,
    probs_ndim_error,
    validate_inputs,
)
from ..binned.bins import calibration_bins, reduce_bins
from ..binned.space import Evaluation
from ..binned.spec import DEFAULT_NUM_BINS, MetricSpace, MetricSpec, as_space
from ..binned.table import grouped_bin_stats
from ..binned.units import exact_sums
from ..binned.weights import as_sample_weight, pair_triples
from ..errors import (
    CalibkitError,
    InputTypeError,
    InvalidParameterError,
    MissingDependencyError,
    ShapeMismatchError,
)
from .select import Selection, SelectionError, unpack_tables

__all__ = ["SelectionError", "evaluate", "gce"]


def _import_dask():
    # Absolute imports: inside calibkit/scale/dask.py, "import dask" is the top-level dask package.
    try:
        import dask
        import dask.array as da
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError(
            "calibkit.dask needs dask: pip install 'calibkit[dask]' (dask[array,distributed])"
        ) from exc
    return dask, da


# ------------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------------


def _prepare(labels, probs):
    """Row-aligned delayed blocks, row count, K and float dtype of the inputs."""
    _, da = _import_dask()
    for name, x in (("labels", labels), ("probs", probs)):
        if isinstance(x, (str, bytes)) or x is None:
            raise InputTypeError(f"{name} must be a dask array or an array, got {type(x).__name__}")
    probs = da.asarray(probs)
    labels = da.asarray(labels)
    if probs.ndim not in (1, 2):
        raise probs_ndim_error(probs.shape)
    if labels.ndim != 1:
        raise labels_ndim_error(labels.shape)
    if any(math.isnan(c) for c in probs.chunks[0] + labels.chunks[0]):
        raise ShapeMismatchError(
            "labels/probs have unknown chunk sizes; call .compute_chunk_sizes() on them first"
        )
    if probs.dtype.kind not in "fiub":
        raise probs_dtype_error(probs.dtype)
    n = probs.shape[0]
    if labels.shape[0] != n:
        raise length_mismatch_error(labels.shape[0], n)
    if n == 0:
        raise empty_probs_error()
    if probs.ndim == 2 and probs.shape[1] == 0:
        raise no_columns_error()
    k = 2 if probs.ndim == 1 or probs.shape[1] == 1 else probs.shape[1]
    dtype = float_dtype(probs.dtype)
    if probs.ndim == 2 and len(probs.chunks[1]) > 1:
        probs = probs.rechunk({1: -1})
    if labels.chunks[0] != probs.chunks[0]:
        labels = labels.rechunk((probs.chunks[0],))
    # Unoptimized graphs keep the keys the two arrays share (e.g. a task producing both), so a
    # source feeding both arrays runs once per pass, not once per array.
    lblocks = labels.to_delayed(optimize_graph=False).ravel()
    pblocks = probs.to_delayed(optimize_graph=False).ravel()
    # each block knows the global index of its first row, for error messages
    starts = np.concatenate([[0], np.cumsum(probs.chunks[0])[:-1]]).astype(int).tolist()
    return list(zip(lblocks, starts)), pblocks, n, k, dtype


# Row numbers in the messages of calibkit.errors: "probs[12, 3]", "row 12 of probs",
# "labels[12]", "label_matrix[12, 3]" (and "at [12, 3]").
_ROW_PATTERNS = re.compile(r"(probs\[|labels\[|confidence\[|correct\[|predicted\[|sample_weight\[|row "
                           r"|at \[)(\d+)")


def _globalise_rows(exc: CalibkitError, start: int) -> CalibkitError:
    """The same error with its row numbers counted from the start of the whole array."""
    if start == 0 or not exc.args or not isinstance(exc.args[0], str):
        return exc
    msg = _ROW_PATTERNS.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + start}", exc.args[0])
    return type(exc)(msg)


def _located_chunk_task(labels_at, probs, job):
    """:func:`_chunk_task` with errors naming global row numbers."""
    labels, start = labels_at
    try:
        return _chunk_task(labels, probs, job)
    except CalibkitError as exc:
        raise _globalise_rows(exc, start) from None


def _prepare_pairs(confidence, correct, predicted, num_classes):
    """:func:`_prepare` for top-label input: blocks are tuples (confidence, correct, predicted
    or None, num_classes) of row-aligned delayed chunks; values are checked per chunk."""
    _, da = _import_dask()
    arrays = {"confidence": confidence, "correct": correct, "predicted": predicted}
    arrays = {name: da.asarray(x) for name, x in arrays.items() if x is not None}
    for name, x in arrays.items():
        if x.ndim != 1:
            raise ShapeMismatchError(f"{name} must be 1-D (one entry per prediction), got shape "
                                     f"{x.shape}")
        if any(math.isnan(c) for c in x.chunks[0]):
            raise ShapeMismatchError(
                f"{name} has unknown chunk sizes; call .compute_chunk_sizes() on it first")
    conf = arrays["confidence"]
    if conf.dtype.kind not in "fiu":
        raise InputTypeError(f"confidence must hold real numbers, got dtype {conf.dtype}")
    n = conf.shape[0]
    for name, x in arrays.items():
        if x.shape[0] != n:
            raise ShapeMismatchError(
                f"{name} has {x.shape[0]} entries but confidence has {n}; pass one per prediction")
    if n == 0:
        raise ShapeMismatchError("confidence is empty (0 entries); pass at least one prediction")
    k = None if num_classes is None else as_num_classes(num_classes)
    dtype = conf.dtype if conf.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    blocks = {name: (x if x.chunks[0] == conf.chunks[0] else x.rechunk((conf.chunks[0],)))
              .to_delayed(optimize_graph=False).ravel() for name, x in arrays.items()}
    pblocks = [(c, o, blocks["predicted"][i] if "predicted" in blocks else None, k)
               for i, (c, o) in enumerate(zip(blocks["confidence"], blocks["correct"]))]
    starts = np.concatenate([[0], np.cumsum(conf.chunks[0])[:-1]]).astype(int).tolist()
    return [(None, start) for start in starts], pblocks, n, (k or 1), np.dtype(dtype)


# ------------------------------------------------------------------------------------------------
# Chunk tasks and their combination
# ------------------------------------------------------------------------------------------------


def _scans(plans, scan) -> dict:
    """Every planned grouping's selection pass over one chunk: one ``scan(max_prob,
    class_conditional, plans)`` (a native read of the chunk) per grouping, its thresholds'
    plans sorted by threshold (``plans`` maps (max_prob, class_conditional, threshold) to
    (the kernel's threshold, plan))."""
    by: dict = {}
    for key in sorted(plans):
        by.setdefault(key[:2], []).append(key)
    out = {}
    for (mp, cc), keys in by.items():
        sent = [(plans[k][0], plans[k][1]["regions"], plans[k][1]["bounds"], plans[k][1]["size"])
                for k in keys]
        for key, res in zip(keys, scan(mp, cc, sent)):
            out[key] = (tuple(res[:4]), [res[4]], [res[5]], [res[6]])
    return out


def _chunk_task(labels, probs, job):
    """One chunk's partial result for one pass (None for an empty chunk)."""
    if isinstance(probs, tuple):  # top-label pairs, from _prepare_pairs
        return _pairs_chunk_task(*probs, job)
    if isinstance(probs, dict):  # probs (or pairs) and sample weights, from _prepare_weights
        if isinstance(probs["probs"], tuple):
            return _weighted_pairs_chunk_task(*probs["probs"], probs["weight"], job)
        return _weighted_chunk_task(labels, probs["probs"], probs["weight"], job)
    if np.shape(labels)[0] == 0 and np.shape(probs)[0] == 0:
        return None
    y, p = validate_inputs(labels, probs)
    out: dict = {"rows": y.shape[0], "even": {}, "scan": {}}
    for mp, cc, t, b in job["even"]:
        tab = calibration_bins(y, p, binning="even", max_prob=mp, class_conditional=cc,
                               threshold=t, num_bins=b)
        out["even"][(mp, cc, t, b)] = [tab.counts, exact_sums(tab.sum_score, tab.score_units),
                                       tab.sum_outcome]
    if job["validate"] and not job["even"]:
        calibration_bins(y, p, num_bins=1)  # the Rust pass checks every value
    plans = {key: (float(key[2]), plan) for key, plan in job["scan"].items()}
    out["scan"] = _scans(plans, lambda mp, cc, sent: _native.select_scan(y, p, mp, cc, sent))
    return out


def _pairs_chunk_task(confidence, correct, predicted, num_classes, job):
    """:func:`_chunk_task` of one chunk of top-label pairs."""
    if np.shape(confidence)[0] == 0:
        return None
    pairs = _toplabel.resolve(None, None, confidence, correct, predicted, num_classes)
    out: dict = {"rows": pairs.n, "even": {}, "scan": {}}
    for mp, cc, t, b in job["even"]:
        c, ss, so, _, u = _toplabel.bin_stats(pairs, "even", mp, cc, t, b, units=True)
        out["even"][(mp, cc, t, b)] = [c, exact_sums(ss, u), so]
    if job["validate"] and not job["even"]:
        _toplabel.bin_stats(pairs, "even", True, False, 0.0, 1)  # the Rust pass checks values
    plans = {key: (_toplabel.keep_above(key[2]), plan) for key, plan in job["scan"].items()}
    out["scan"] = _scans(plans, lambda mp, cc, sent: _native.select_scan_pairs(
        *pairs.native_args(), cc, sent))
    return out


def _weighted_chunk_task(labels, probs, weight, job):
    """One chunk's weighted partial result: weighted even tables, and the kept (group, score,
    outcome, weight) of every adaptive grouping (rows of weight 0 dropped)."""
    if np.shape(labels)[0] == 0 and np.shape(probs)[0] == 0:
        return None
    y, p = validate_inputs(labels, probs)
    w = as_sample_weight(weight, y.shape[0], allow_all_zero=True)
    calibration_bins(y, p, num_bins=1)  # the Rust pass checks every row's values
    pos = w > 0
    if not pos.all():
        y, p, w = y[pos], np.ascontiguousarray(p[pos]), w[pos]
    out: dict = {"rows": int(pos.size), "weight": float(w.sum()), "even": {}, "kept": {}}
    if y.shape[0] == 0:
        return out
    for mp, cc, t, b in job["even"]:
        tab = calibration_bins(y, p, binning="even", max_prob=mp, class_conditional=cc,
                               threshold=t, num_bins=b, sample_weight=w)
        out["even"][(mp, cc, t, b)] = [tab.counts, exact_sums(tab.sum_score, tab.score_units),
                                       tab.sum_outcome]
    for mp, cc, t in job["kept"]:
        g, sc, o, row = _native.score_rows(y, p, bool(mp), bool(cc), float(t))
        out["kept"][(mp, cc, t)] = [(g, sc.astype(p.dtype), o, w[row])]
    return out


def _weighted_pairs_chunk_task(confidence, correct, predicted, num_classes, weight, job):
    """:func:`_weighted_chunk_task` of one chunk of top-label pairs."""
    if np.shape(confidence)[0] == 0:
        return None
    pairs = _toplabel.resolve(None, None, confidence, correct, predicted, num_classes)
    w = as_sample_weight(weight, pairs.n, allow_all_zero=True)
    _toplabel.bin_stats(pairs, "even", True, False, 0.0, 1)  # the Rust pass checks the values
    out: dict = {"rows": pairs.n, "weight": float(w.sum()), "even": {}, "kept": {}}
    for mp, cc, t, b in job["even"]:
        tr = pair_triples(pairs, binning="even", class_conditional=cc, threshold=t, num_bins=b)
        out["even"][(mp, cc, t, b)] = list(tr.stats(tr.weight_of(w))[:3])
    for mp, cc, t in job["kept"]:
        tr = pair_triples(pairs, binning="adaptive", class_conditional=cc, threshold=t,
                          num_bins=1)
        tw = tr.weight_of(w)
        m = tw > 0  # weight 0 drops a row
        out["kept"][(mp, cc, t)] = [(tr.group[m], tr.score[m].astype(pairs.confidence.dtype),
                                     tr.outcome[m], tw[m])]
    return out


def _combine_weighted(parts):
    """:func:`_combine` of weighted partial results (kept rows are listed, not copied)."""
    out = {"rows": sum(q["rows"] for q in parts), "weight": sum(q["weight"] for q in parts),
           "even": {}, "kept": {}}
    for q in parts:
        for key, arrays in q["even"].items():
            have = out["even"].get(key)
            out["even"][key] = list(arrays) if have is None else [
                a + b for a, b in zip(have, arrays)]
        for key, pieces in q["kept"].items():
            out["kept"][key] = out["kept"].get(key, []) + pieces
    return out


def _combine(*parts):
    """Sum of partial results (never mutates its arguments)."""
    parts = [q for q in parts if q is not None]
    if not parts:
        return None
    if "kept" in parts[0]:
        return _combine_weighted(parts)
    out = {"rows": sum(q["rows"] for q in parts), "even": {}, "scan": {}}
    for q in parts:
        for key, arrays in q["even"].items():
            if key in out["even"]:
                out["even"][key] = [a + b for a, b in zip(out["even"][key], arrays)]
            else:
                out["even"][key] = list(arrays)
    tables: dict = {}
    for q in parts:
        for akey, (packed, ids, sc, oc) in q["scan"].items():
            tables.setdefault(akey, []).append(packed)
            fetched = out["scan"].get(akey, (None, [], [], []))
            out["scan"][akey] = (None, fetched[1] + ids, fetched[2] + sc, fetched[3] + oc)
    for akey, tabs in tables.items():  # summed: wide
        summed = (sum(t[0].astype(np.int64) for t in tabs), sum(t[1].astype(np.int64) for t in tabs),
                  _native.units_sum_parts([t[2] for t in tabs]),
                  sum(t[3].astype(np.int64) for t in tabs))
        out["scan"][akey] = (summed,) + out["scan"][akey][1:]
    return out


def _run_pass(lblocks, pblocks, job, scheduler, split_every):
    dask, _ = _import_dask()
    job_d = dask.delayed(job, traverse=False)
    level = [dask.delayed(_located_chunk_task)((lb, start), pb, job_d)
             for (lb, start), pb in zip(lblocks, pblocks)]
    while True:
        level = [dask.delayed(_combine)(*level[i:i + split_every])
                 for i in range(0, len(level), split_every)]
        if len(level) == 1:
            break
    kwargs = {} if scheduler is None else {"scheduler": scheduler}
    (result,) = dask.compute(level[0], **kwargs)
    return result


# ------------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------------


def _prepare_weights(pblocks, lblocks, n: int, sample_weight):
    """``pblocks`` with each block's sample weights: dicts {"probs", "weight"} of delayed chunks."""
    _, da = _import_dask()
    if isinstance(sample_weight, (str, bytes)):
        raise InputTypeError(
            f"sample_weight must be an array of N = {n} non-negative numbers, got a string")
    w = da.asarray(sample_weight)
    if w.dtype.kind not in "biuf":
        raise InputTypeError(f"sample_weight must hold real numbers, got dtype {w.dtype}")
    if w.ndim != 1 or w.shape[0] != n:
        raise ShapeMismatchError(
            f"sample_weight must have shape ({n},), one weight per row, got shape {w.shape}")
    starts = [start for _, start in lblocks] + [n]
    w = w.rechunk((tuple(int(b - a) for a, b in zip(starts[:-1], starts[1:])),))
    wblocks = w.to_delayed(optimize_graph=False).ravel()
    return [{"probs": pb, "weight": wb} for pb, wb in zip(pblocks, wblocks)]


def _weighted_values(lblocks, pblocks, n, k, space, num_bins, scheduler, split_every):
    """The values table under sample weights: one pass (see :func:`gce`, ``sample_weight``)."""
    even = sorted({(s.max_prob, s.class_conditional, s.threshold, b)
                   for s in space if s.binning == "even" for b in num_bins})
    kept = sorted({(s.max_prob, s.class_conditional, s.threshold)
                   for s in space if s.binning == "adaptive"})
    res = _run_pass(lblocks, pblocks, {"even": even, "kept": kept}, scheduler, split_every)
    if res is None or res["rows"] != n:  # pragma: no cover - guarded by _prepare
        raise SelectionError("the chunks held fewer rows than the arrays' shape says")
    check_weight_total(res["weight"])
    tables = {("even",) + key: tab for key, tab in res["even"].items()}
    for mp, cc, t in kept:
        pieces = res["kept"].get((mp, cc, t), [])
        g, sc, o, w = (np.concatenate([q[i] for q in pieces]) for i in range(4))
        for b in num_bins:
            c, ss, so, _ = grouped_bin_stats(g, sc, o, w, num_groups=k if cc else 1,
                                             binning="adaptive", num_bins=b)
            tables[("adaptive", mp, cc, t, b)] = [c, ss, so]
    return tables


def _values(labels, probs, space: MetricSpace, num_bins: tuple, scheduler, split_every,
            pairs=None, sample_weight=None):
    split_every = as_int(split_every, "split_every", minimum=2)
    for s in space:
        for b in num_bins:
            check_gce_params(s.binning, s.norm, s.threshold, b)
    if pairs is not None:  # (confidence, correct, predicted, num_classes)
        lblocks, pblocks, n, k, dtype = _prepare_pairs(*pairs)
    else:
        lblocks, pblocks, n, k, dtype = _prepare(labels, probs)
    for s in space:
        for b in num_bins:
            check_table(k if s.class_conditional else 1, b)
    check_tables(held_groups(space, k), num_bins, per_table=False)
    if sample_weight is not None:
        pblocks = _prepare_weights(pblocks, lblocks, n, sample_weight)
        tables = _weighted_values(lblocks, pblocks, n, k, space, num_bins, scheduler,
                                  split_every)
        return _reduce(tables, space, num_bins), n, k
    even = sorted({(s.max_prob, s.class_conditional, s.threshold, b)
                   for s in space if s.binning == "even" for b in num_bins})
    akeys = sorted({(s.max_prob, s.class_conditional, s.threshold)
                    for s in space if s.binning == "adaptive"})
    sel = {a: Selection(k if a[1] else 1, dtype, num_bins) for a in akeys}

    def run(job):
        job.setdefault("even", [])
        job.setdefault("validate", False)
        job.setdefault("scan", {})
        res = _run_pass(lblocks, pblocks, job, scheduler, split_every)
        if res is None or res["rows"] != n:  # pragma: no cover - guarded by _prepare
            raise SelectionError("the chunks held fewer rows than the arrays' shape says")
        return res

    first = run({"even": even, "validate": True,
                 "scan": {a: s.plan() for a, s in sel.items()}})
    tables = {("even",) + key: tab for key, tab in first["even"].items()}
    scans = first["scan"]
    while True:
        for a, s in sel.items():
            if not s.done and a in scans:
                packed, ids, sc, oc = scans[a]
                s.advance((*unpack_tables(packed), np.concatenate(ids), np.concatenate(sc),
                           np.concatenate(oc)))
        todo = {a: s.plan() for a, s in sel.items() if not s.done}
        if not todo:
            break
        scans = run({"scan": todo})["scan"]
    for (mp, cc, t), s in sel.items():
        for b in num_bins:
            tables[("adaptive", mp, cc, t, b)] = s.table(b)
    return _reduce(tables, space, num_bins), n, k


def _reduce(tables, space, num_bins) -> np.ndarray:
    """The (len(space), len(num_bins)) values of the per-metric tables."""
    values = np.empty((len(space), len(num_bins)))
    for i, s in enumerate(space):
        for j, b in enumerate(num_bins):
            c, ss, so = tables[(s.binning, s.max_prob, s.class_conditional, s.threshold, b)][:3]
            values[i, j] = reduce_bins(c, ss, so, norm=s.norm,
                                       class_conditional=s.class_conditional)
    return values


def gce(labels=None, probs=None, *, binning: str = "even", max_prob: bool = True,
        class_conditional: bool = False, threshold: float = 0.0, norm: str = "l1",
        num_bins: int = 15, scheduler=None, split_every: int = 8, confidence=None,
        correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """General Calibration Error of dask arrays; same semantics and result as :func:`calibkit.gce`.

    Parameters
    ----------
    labels : dask.array.Array (or array_like) of shape (N,)
        Integer labels in ``[0, K)``, chunked by rows.
    probs : dask.array.Array (or array_like) of shape (N, K), (N, 1) or (N,)
        Probabilities (float32 or float64), chunked by rows.
    binning, max_prob, class_conditional, threshold, norm, num_bins
        As in :func:`calibkit.gce` (defaults: "even", True, False, 0.0, "l1", 15).
    scheduler : str or None, default None
        Passed to :func:`dask.compute` (``"synchronous"``, ``"threads"``, ``"processes"``); None
        uses dask's default, i.e. the active ``dask.distributed.Client`` if there is one.
    split_every : int, default 8
        Fan-in of the tree that combines partial results.
    confidence, correct, predicted, num_classes : dask arrays of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs``, as in :func:`calibkit.gce`
        (max-prob metrics only); chunked by rows, rechunked to the chunks of ``confidence``
        (``sample_weight`` works with it too).
    sample_weight : dask.array.Array (or array_like) of shape (N,), optional
        Finite weights >= 0 (0 drops a row; not all 0), rechunked to the row chunks of
        ``probs``: the result equals :func:`calibkit.gce` with the same weights (to 1e-12;
        integer weights equal repeated rows). One pass: each chunk yields weighted even tables
        and, for adaptive binning, its kept ``(group, score, outcome, weight)`` rows, which are
        gathered and binned once by the weighted primitive (docs/weighted-bins.md). Memory of
        that gather, on the process that calls ``gce``: about 28 bytes per kept score with
        float32 input and 32 with float64 (N kept scores for a max-prob metric, N * K for an
        all-probabilities one, fewer with a threshold), so a weighted adaptive metric needs its
        kept scores to fit in one machine's memory; weighted even binning does not.

    Returns
    -------
    float

    Raises
    ------
    ValueError, TypeError
        Exactly what :func:`calibkit.gce` raises for bad values (raised when the chunk holding
        them is processed), plus shape errors found up front.

    Examples
    --------
    >>> import numpy as np, dask.array as da, calibkit.dask
    >>> p = da.from_array(np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]]), chunks=(2, 2))
    >>> y = da.from_array(np.array([0, 1, 1]), chunks=2)
    >>> round(calibkit.dask.gce(y, p, num_bins=10, scheduler="synchronous"), 6)
    0.4
    """
    spec = MetricSpec(binning, max_prob, class_conditional, threshold, norm)
    pairs = None
    if _toplabel.is_top_label(labels, probs, confidence, correct, predicted, num_classes):
        pairs = (confidence, correct, predicted, num_classes)
        # only predicted and num_classes are read: the arrays are still dask arrays here
        known = _toplabel.Pairs(None, None, predicted, num_classes)  # type: ignore[arg-type]
        _toplabel.require_top_label(known, max_prob, class_conditional, "calibkit.dask.gce")
        if isinstance(num_bins, str):
            raise InvalidParameterError(
                "calibkit.dask.gce: num_bins='auto' needs labels and probs; give an integer "
                "number of bins with top-label input")
    if isinstance(num_bins, str) and num_bins == "auto":
        from ..binned.auto_bins import resolve_num_bins

        num_bins = resolve_num_bins(num_bins, labels, probs, max_prob=spec.max_prob,
                                    class_conditional=spec.class_conditional)
    bins, single = as_bin_counts(num_bins)
    if not single:
        raise InputTypeError(f"num_bins must be one integer here, got {num_bins!r}; use "
                             "calibkit.dask.evaluate for several bin counts")
    values, _, _ = _values(labels, probs, MetricSpace([spec]), bins, scheduler, split_every,
                           pairs, sample_weight)
    return float(values[0, 0])


def evaluate(labels=None, probs=None, space=None, num_bins=DEFAULT_NUM_BINS, *, scheduler=None,
             split_every: int = 8, confidence=None, correct=None, predicted=None,
             num_classes=None, sample_weight=None) -> Evaluation:
    """Every metric of a space at every bin count, over dask arrays, sharing passes.

    Same arguments and result as :func:`calibkit.evaluate`; all even-binning metrics come
    from one map-reduce and all adaptive ones from one shared selection, whose passes also give
    their tables (no counting pass).

    Parameters
    ----------
    labels : dask.array.Array (or array_like) of shape (N,)
    probs : dask.array.Array (or array_like) of shape (N, K), (N, 1) or (N,)
    space : MetricSpace, sequence of metrics or a single metric, optional
        Default: the paper's 32 metrics (:func:`calibkit.space.metric_space`).
    num_bins : int or sequence of int, default (10, 15, 20, 30, 40, 50)
    scheduler : str or None, default None
        See :func:`gce`.
    split_every : int, default 8
    confidence, correct, predicted, num_classes : dask arrays of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs``, as in
        :func:`calibkit.evaluate` (default space: the max-prob metrics the input allows; the
        result's ``top_label_only`` is True).
    sample_weight : dask.array.Array (or array_like) of shape (N,), optional
        Finite weights >= 0, as in :func:`gce` (one pass for every metric; the kept rows of
        each adaptive grouping are gathered, with the memory cost given there).

    Returns
    -------
    calibkit.space.Evaluation

    Examples
    --------
    >>> import numpy as np, dask.array as da, calibkit.dask
    >>> rng = np.random.default_rng(2)
    >>> probs = rng.dirichlet(np.ones(3), size=500)
    >>> labels = rng.integers(0, 3, size=500)
    >>> ev = calibkit.dask.evaluate(da.from_array(labels, chunks=128),
    ...                             da.from_array(probs, chunks=(128, 3)),
    ...                             space=["ECE", "ACE", "RMSCE"], num_bins=(5, 15),
    ...                             scheduler="synchronous")
    >>> ev.values.shape
    (3, 2)
    """
    pairs = None
    if _toplabel.is_top_label(labels, probs, confidence, correct, predicted, num_classes):
        pairs = (confidence, correct, predicted, num_classes)
        space = _toplabel.toplabel_space(space, predicted is not None)
        if isinstance(num_bins, str):
            raise InvalidParameterError(
                "calibkit.dask.evaluate: num_bins='auto' needs labels and probs; give integer "
                "bin counts with top-label input")
    space, _ = as_space(space)
    if isinstance(num_bins, str) and num_bins == "auto":
        from ..binned.auto_bins import resolve_num_bins

        num_bins = resolve_num_bins(num_bins, labels, probs)
    bins, _ = as_bin_counts(num_bins)
    values, n, k = _values(labels, probs, space, bins, scheduler, split_every, pairs,
                           sample_weight)
    return Evaluation(values, space, bins, n_samples=n, num_classes=k,
                      top_label_only=pairs is not None)
