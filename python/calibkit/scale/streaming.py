"""Streaming calibration metrics: accumulate batch by batch, merge across processes, compute once.

:class:`Accumulator` holds the sufficient statistics of one metric or of a whole metric space
(see :mod:`calibkit.space`) at one or several bin counts. Feed it batches with
:meth:`Accumulator.update`, combine accumulators built on different shards with
:meth:`Accumulator.merge` (they pickle, so they travel between processes), and call
:meth:`Accumulator.compute` at the end.

What is kept, per score group of docs/spec.md (in detail, with the sketch's error bounds:
the guide's "Streaming and Dask" page, docs/guide/streaming.md):

* **even binning**: per-(group, bin) count, exact score sum (grid units) and outcome sum, taken
  per batch from :func:`calibkit.calibration_bins` and added; memory independent of N.
* **adaptive binning, ``adaptive="exact"``** (default): the kept scores themselves, compactly
  (input dtype, split by outcome, once per (max_prob, class_conditional) pair);
  :attr:`Accumulator.nbytes` says how much.
* **adaptive binning, ``adaptive="sketch"``**: two KLL quantile sketches per group (bounded
  memory; Apache DataSketches), approximate once they compact (:meth:`Accumulator.rank_error`).

Unweighted, both exact modes equal the one-shot :func:`calibkit.gce` bit for bit for any
batching and merging; with ``sample_weight`` to 1e-12. ``num_bins="auto"`` chooses the bin
count at :meth:`~Accumulator.compute` and implies the exact mode for every metric.

Examples
--------
>>> import numpy as np, calibkit
>>> from calibkit.streaming import Accumulator
>>> rng = np.random.default_rng(0)
>>> probs = rng.dirichlet(np.ones(5), size=1000)
>>> labels = rng.integers(0, 5, size=1000)
>>> acc = Accumulator("ACE", num_bins=10)
>>> for start in range(0, 1000, 300):
...     _ = acc.update(labels[start:start + 300], probs[start:start + 300])
>>> abs(acc.compute() - calibkit.ace(labels, probs, num_bins=10)) < 1e-12
True
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

from .. import _native, _toplabel
from .._budget import check_bytes, check_tables, held_groups
from .._params import (
    as_bin_counts,
    as_choice,
    as_flag,
    as_int,
    as_num_bins,
    check_table,
    check_weight_total,
)
from .._typing import NumBinsList
from ..binned.auto_bins import auto_num_bins, warn_if_few
from ..binned.bins import CalibrationBins, reduce_bins
from ..binned.space import Evaluation
from ..binned.table import even_boundaries
from ..binned.units import ScoreUnits
from ..errors import (
    IncompatibleAccumulatorError,
    InputTypeError,
    InvalidParameterError,
    ShapeMismatchError,
)
from .batches import (
    add_table,
    as_total,
    batch_weights,
    check_batch,
    matrix_contribution,
    metric_space_of,
    pairs_contribution,
)
from .kept import KeptScores, bin_rows, equal_state
from .sketch import SketchGroups, load_datasketches

__all__ = ["DEFAULT_SKETCH_K", "Accumulator", "IncompatibleAccumulatorError"]

#: KLL ``k`` of ``adaptive="sketch"``: normalized rank error ~0.27 % (single-sided, 99 %).
DEFAULT_SKETCH_K = 1024

_ADAPTIVE_MODES = ("exact", "sketch")


_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run ``method`` holding the accumulator's lock (and, for ``merge`` and ``==``, the other
    accumulator's too, taken in a fixed order so that ``a.merge(b)`` and ``b.merge(a)`` in two
    threads cannot deadlock)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        other = args[0] if args and isinstance(args[0], Accumulator) else None
        locks = sorted({id(x): x._lock for x in (self, other) if x is not None}.items())
        for _, lock in locks:
            lock.acquire()
        try:
            return method(self, *args, **kwargs)
        finally:
            for _, lock in reversed(locks):
                lock.release()

    return cast(_F, run)


class Accumulator:
    """Streaming, mergeable sufficient statistics of one calibration metric or a metric space.

    Parameters
    ----------
    metric : metric or sequence of metrics, optional
        A single metric (a name such as ``"ECE"``, ``"ACE"``, ``"TACE"``, ``"RMSCE"``,
        ``"MCE"``, a canonical name, a paper index 0-31, a :class:`calibkit.space.MetricSpec`,
        a mapping of GCE keywords or a 5-tuple ``(binning, max_prob, class_conditional,
        threshold, norm)``), or a :class:`calibkit.space.MetricSpace` / list of those (a space,
        e.g. ``calibkit.space.metric_space()`` for the paper's 32). Default: ECE, or the metric
        given by ``**gce_params``.
    num_bins : int, sequence of int or "auto", default 15
        Bin count(s). Adaptive state is shared by all bin counts; even binning keeps one small
        table per bin count. ``"auto"``: chosen from the rows seen when the result is asked
        for (see the module docstring: every metric then keeps its exact kept scores, and
        ``adaptive`` must be "exact").
    adaptive : {"exact", "sketch"}, default "exact"
        How adaptive-binning metrics are accumulated (see the module docstring): keep the kept
        scores (exact, memory ~ 4 or 8 bytes per kept score) or two KLL sketches per group
        (approximate, bounded memory).
    sketch_k : int, default 1024
        KLL ``k`` for ``adaptive="sketch"`` (8..65535): rank error ~ :meth:`rank_error`, about
        ``3 * sketch_k`` retained scores per sketch.
    **gce_params
        ``binning``, ``max_prob``, ``class_conditional``, ``threshold``, ``norm`` of a single
        GCE metric (instead of ``metric``).

    Attributes
    ----------
    space : calibkit.space.MetricSpace
    num_bins : tuple of int or "auto"
    n_samples : int or float
        Rows seen so far; with sample weights the total weight (a float once a weight was
        fractional).
    num_classes : int or None
        K, fixed by the first batch.
    dtype : numpy.dtype or None
        Float dtype of ``probs``, fixed by the first batch.

    Notes
    -----
    An accumulator is safe to share between threads: every method holds its lock (a
    re-entrant ``threading.RLock``; :meth:`merge` and ``==`` hold both accumulators' locks), so
    each :meth:`update` and :meth:`merge` is atomic (a concurrent :meth:`compute` sees the state
    before or after it, never half of it), and a failed one leaves the state unchanged. The
    updates of several threads then run one at a time; for parallel speed give each thread its
    own accumulator and :meth:`merge` them at the end.

    Examples
    --------
    >>> import numpy as np, calibkit, pickle
    >>> from calibkit.streaming import Accumulator
    >>> rng = np.random.default_rng(1)
    >>> probs = rng.dirichlet(np.ones(3), size=400).astype(np.float32)
    >>> labels = rng.integers(0, 3, size=400)
    >>> a = Accumulator(["ECE", "SCE", "ACE"], num_bins=(10, 20))
    >>> b = Accumulator(["ECE", "SCE", "ACE"], num_bins=(10, 20))
    >>> _ = a.update(labels[:250], probs[:250])
    >>> _ = b.update(labels[250:], probs[250:])
    >>> table = a.merge(pickle.loads(pickle.dumps(b))).compute()
    >>> bool(abs(table.get("SCE", 20) - calibkit.sce(labels, probs, num_bins=20)) < 1e-12)
    True

    Fractional weights, and a bin count chosen at the end:

    >>> w = rng.uniform(0, 2, size=400)
    >>> c = Accumulator("ACE", num_bins="auto")
    >>> _ = c.update(labels[:100], probs[:100], sample_weight=w[:100])
    >>> _ = c.update(labels[100:], probs[100:], sample_weight=w[100:])
    >>> ref = calibkit.ace(labels, probs, num_bins="auto", sample_weight=w)
    >>> bool(abs(c.compute() - ref) < 1e-12)
    True
    """

    def __init__(self, metric=None, *, num_bins: NumBinsList = 15, adaptive: str = "exact",
                 sketch_k: int = DEFAULT_SKETCH_K, **gce_params) -> None:
        self._lock = threading.RLock()
        space, single_metric = metric_space_of(metric, gce_params)
        auto = isinstance(num_bins, str) and num_bins == "auto"
        bins, single_bins = ("auto", True) if auto else as_bin_counts(num_bins)
        adaptive = as_choice(adaptive, "adaptive", _ADAPTIVE_MODES,
                             " ('exact' keeps the kept scores, 'sketch' uses bounded-memory KLL "
                             "sketches)")
        if auto and adaptive != "exact":
            raise InvalidParameterError(
                "num_bins='auto' keeps the exact kept scores of every metric (the bin count is "
                "chosen at compute() time), so it needs adaptive='exact'; pass adaptive='exact' "
                "or an integer num_bins"
            )
        sketch_k = as_int(sketch_k, "sketch_k (KLL's k)", 8, 65535)
        self.space = space
        #: The bin counts, a tuple of ints, or "auto" (then only read once resolved).
        self.num_bins: Any = bins
        self.adaptive = adaptive
        self.sketch_k = int(sketch_k)
        self._auto = auto
        self._scalar = single_metric and single_bins
        # with "auto" every metric bins kept scores at compute() time, even ones included
        even = [] if auto else [s for s in space if s.binning == "even"]
        adapt = list(space) if auto else [s for s in space if s.binning == "adaptive"]
        if adapt and adaptive == "sketch":
            load_datasketches()  # fail now, with the install hint, rather than at update()
        self._even_keys = sorted({(s.max_prob, s.class_conditional, s.threshold) for s in even})
        if adaptive == "exact":
            kept: dict = {}
            for s in adapt:
                key = (s.max_prob, s.class_conditional)
                kept[key] = min(kept.get(key, s.threshold), s.threshold)
            self._adaptive_keys = sorted((mp, cc, t) for (mp, cc), t in kept.items())
        else:
            self._adaptive_keys = sorted({(s.max_prob, s.class_conditional, s.threshold)
                                          for s in adapt})
        self.n_samples = 0
        self._rows = 0  # rows seen, each once (weights aside): the N of num_bins="auto"
        self.num_classes: int | None = None
        self.dtype: np.dtype | None = None
        self._even: dict = {}
        self._adaptive_state: dict = {}

    # -- configuration -----------------------------------------------------------------------------
    def _config(self) -> tuple:
        return (tuple(self.space), self.num_bins, self.adaptive, self.sketch_k)

    def _allocate(self, k: int, dtype) -> None:
        self.num_classes = int(k)
        self.dtype = np.dtype(dtype)
        for mp, cc, t in self._even_keys:
            g = k if cc else 1
            for b in self.num_bins:
                # Score sums exact (ScoreUnits), so that any batching gives gce's bits.
                self._even[(mp, cc, t, b)] = [np.zeros((g, b + 1), np.int64),
                                              ScoreUnits.zeros((g, b + 1)), np.zeros((g, b + 1))]
        for mp, cc, t in self._adaptive_keys:
            g = k if cc else 1
            self._adaptive_state[(mp, cc, t)] = (
                KeptScores(g, t) if self.adaptive == "exact"
                else SketchGroups(g, self.sketch_k, self.dtype)
            )

    # -- updates -----------------------------------------------------------------------------------
    def _check_like_earlier(self, k: int, dtype, name: str, k_text: str) -> None:
        """Refuses a batch whose class count or float dtype differs from the earlier ones'
        (``name`` is the score argument, ``k_text`` how the batch gave its K)."""
        if self.num_classes is not None and k != self.num_classes:
            raise ShapeMismatchError(
                f"{k_text} but this accumulator was started with K={self.num_classes}; every "
                f"batch must have the same number of classes"
            )
        if self.dtype is not None and dtype != self.dtype:
            raise InputTypeError(
                f"{name} is {dtype} but earlier batches were {self.dtype}; mixing float dtypes "
                f"is refused (results would depend on batching): cast with "
                f"{name}.astype(np.{self.dtype.name})"
            )

    @_locked
    def update(self, labels=None, probs=None, sample_weight=None, *, confidence=None,
               correct=None, predicted=None, num_classes=None) -> Accumulator:
        """Add one batch of predictions.

        Parameters
        ----------
        labels : array_like of shape (n,)
            Integer labels in ``[0, K)``.
        probs : array_like of shape (n, K), (n, 1) or (n,)
            Probabilities (float32 or float64), validated as by :func:`calibkit.gce`. An empty
            batch (n = 0) is allowed and changes nothing but fixes K and the dtype if it is the
            first.
        sample_weight : array_like of shape (n,), optional
            Finite weights >= 0 (checked as by :func:`calibkit.gce`; 0 drops a row, a batch of
            zeros adds nothing), so that the result equals :func:`calibkit.gce` with the
            concatenated weights; integer weights equal repeated rows. Also with top-label
            input. ``adaptive="sketch"`` takes integer weights only. ``n_samples`` adds the
            total weight.
        confidence, correct, predicted, num_classes : array_like of shape (n,) and int, optional
            Top-label input in place of ``labels`` and ``probs`` (see :func:`calibkit.gce`),
            for accumulators of max-prob metrics only (class-conditional ones also need
            ``predicted`` and ``num_classes``). K is ``num_classes``, or, when not given, the K
            of earlier batches (1 for a fresh accumulator); the dtype is that of
            ``confidence``. Results equal the matrix form, batch by batch.

        Returns
        -------
        Accumulator
            ``self``.

        Raises
        ------
        calibkit.errors.ShapeMismatchError
            K differs from the first batch (or the usual shape problems).
        calibkit.errors.InputTypeError
            The float dtype differs from the first batch (float32 vs float64).
        ValueError, TypeError
            Anything :func:`calibkit.gce` rejects. The accumulator is unchanged on any error.
        calibkit.errors.TopLabelInputError
            Top-label input for an accumulator holding an all-probabilities metric (or a
            class-conditional one without ``predicted``).
        """
        pairs = _toplabel.resolve(labels, probs, confidence, correct, predicted, num_classes,
                                  allow_empty=True)
        if pairs is not None:
            return self._update_pairs(pairs, self._weights(sample_weight, pairs.n))
        y, p, k, dtype = check_batch(labels, probs)
        n = 0 if y is None else y.shape[0]
        w = self._weights(sample_weight, n)
        if self.num_classes is None:  # the tables' size is known once K is
            self._check_size(k)
        self._check_like_earlier(k, dtype, "probs", f"probs has K={k} classes")
        if y is None:
            if self.num_classes is None:
                self._allocate(k, dtype)
            return self
        # Compute everything the batch contributes before touching the state. The values
        # (finite, range, row sums, labels) are checked as gce checks them: by the unweighted
        # even tables' own pass, else by that check alone.
        if w is not None or not self._even_keys:
            _native.check_values(y, p)
        if w is not None:
            pos = w > 0  # weight 0 drops a row
            if not pos.all():
                y, p, w = y[pos], np.ascontiguousarray(p[pos]), w[pos]
        even, groups = matrix_contribution(y, p, w, self._even_keys, self.num_bins,
                                           self._adaptive_keys)
        # Commit (nothing below can fail on valid state).
        if self.num_classes is None:
            self._allocate(k, dtype)
        self._commit(even, groups)
        self._rows += n
        self.n_samples += n if w is None else as_total(w.sum())
        return self

    def _check_size(self, k: int) -> None:
        """The table and sketch sizes of K = ``k`` classes against the limits and the memory
        budget (:mod:`calibkit._budget`), before anything is allocated."""
        if not self._auto:
            for s in self.space:
                for b in self.num_bins:
                    check_table(k if s.class_conditional else 1, b)
            check_tables(held_groups(self.space, k), self.num_bins, per_table=False)
        if self.adaptive == "sketch" and self._adaptive_keys:
            groups = sum(k if cc else 1 for _, cc, _ in self._adaptive_keys)
            check_bytes(groups * 2.0 * 3 * self.sketch_k * 8, "sketch_k",
                        f"the sketches ({groups} group(s) x 2 outcomes x about 3 x sketch_k="
                        f"{self.sketch_k} scores x 8 bytes)", "use a smaller sketch_k")

    def _weights(self, sample_weight, n: int):
        """Checked float64 weights of a batch of ``n`` rows (None stays None)."""
        return batch_weights(sample_weight, n, carried=self.n_samples,
                             integer=self.adaptive == "sketch" and bool(self._adaptive_keys))

    def _update_pairs(self, pairs, w=None) -> Accumulator:
        """:meth:`update` with top-label input (:mod:`calibkit._toplabel`) and checked weights."""
        for s in self.space:
            _toplabel.require_top_label(pairs, s.max_prob, s.class_conditional,
                                        f"Accumulator metric {s.name}")
        k = pairs.num_classes or self.num_classes or 1
        dtype = pairs.confidence.dtype
        if self.num_classes is None:
            self._check_size(k)
        self._check_like_earlier(k, dtype, "confidence", f"num_classes={k}")
        if pairs.n == 0:
            if self.num_classes is None:
                self._allocate(k, dtype)
            return self
        # Compute everything the batch contributes before touching the state.
        even, groups = pairs_contribution(pairs, w, self._even_keys, self.num_bins,
                                          self._adaptive_keys, k)
        # Commit (nothing below can fail on valid state).
        if self.num_classes is None:
            self._allocate(k, dtype)
        self._commit(even, groups)
        self._rows += pairs.n
        self.n_samples += pairs.n if w is None else as_total(w.sum())
        return self

    def _commit(self, even: dict, groups: dict) -> None:
        """Add a batch's even tables and kept groups ``{(mp, cc): (t_min, [(s, o, w), ...])}``
        (w None: every weight 1) into the state."""
        for key, parts in even.items():
            tabs = self._even[key]
            for i, part in enumerate(parts):
                tabs[i] = add_table(tabs[i], part)
        for (mp, cc, t), state in self._adaptive_state.items():
            t_min, gl = groups[(mp, cc)]
            for g, item in enumerate(gl):
                s, o = item[0], item[1]
                w = item[2] if len(item) > 2 else None
                if t > t_min:
                    keep = s > np.float64(t)
                    s, o = s[keep], o[keep]
                    w = None if w is None else w[keep]
                if isinstance(state, KeptScores):
                    state.add(g, s, o, w)
                else:
                    if w is not None:  # integer weights (checked): repeated scores
                        reps = w.astype(np.int64)
                        s, o = np.repeat(s, reps), np.repeat(o, reps)
                    state.update(g, s, o)

    @_locked
    def merge(self, other: Accumulator) -> Accumulator:
        """Add the state of ``other`` (built on other data) into this accumulator.

        ``other`` is left unchanged. Both must have been built with the same metrics, bin
        counts, ``adaptive`` mode and ``sketch_k``, and have seen the same K and dtype (an
        accumulator that has seen no batch merges with anything of the same configuration).

        Returns
        -------
        Accumulator
            ``self``.

        Raises
        ------
        IncompatibleAccumulatorError
            Different configuration, K or dtype; this accumulator is unchanged.
        """
        if not isinstance(other, Accumulator):
            raise InputTypeError(
                f"merge: expected a calibkit.streaming.Accumulator, got {type(other).__name__}"
            )
        diffs = []
        if tuple(self.space) != tuple(other.space):
            diffs.append(f"metrics {self.space.names} vs {other.space.names}")
        if self.num_bins != other.num_bins:
            diffs.append(f"num_bins {self.num_bins} vs {other.num_bins}")
        if self.adaptive != other.adaptive:
            diffs.append(f"adaptive {self.adaptive!r} vs {other.adaptive!r}")
        if self.sketch_k != other.sketch_k and self._adaptive_keys and self.adaptive == "sketch":
            diffs.append(f"sketch_k {self.sketch_k} vs {other.sketch_k}")
        if self.num_classes is not None and other.num_classes is not None:
            if self.num_classes != other.num_classes:
                diffs.append(f"K {self.num_classes} vs {other.num_classes}")
            if self.dtype != other.dtype:
                diffs.append(f"dtype {self.dtype} vs {other.dtype}")
        if diffs:
            raise IncompatibleAccumulatorError(
                "merge: the accumulators differ in " + "; ".join(diffs)
                + "; only accumulators built with the same arguments, on data of the same K and "
                "float dtype, can be merged"
            )
        if other.num_classes is None:
            return self
        # The weight rule on the merged total (as on each batch's): finite, before any change.
        check_weight_total(float(self.n_samples) + float(other.n_samples), allow_zero=True,
                           batches=True)
        if other is self:
            other = self.copy()
        if self.num_classes is None and other.num_classes is not None:
            self._allocate(other.num_classes, other.dtype)
        for key, tables in other._even.items():
            mine = self._even[key]
            for i, part in enumerate(tables):
                mine[i] = add_table(mine[i], part)
        for key, state in other._adaptive_state.items():
            mine = self._adaptive_state[key]
            if isinstance(mine, KeptScores):
                mine.extend(state)
            else:
                mine.merge(state)
        self.n_samples += other.n_samples
        self._rows += other._rows
        return self

    @_locked
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        # accumulators pickled before weights and "auto" bins: unweighted, rows = n_samples
        self.__dict__.setdefault("_auto", False)
        self.__dict__.setdefault("_rows", int(self.n_samples))

    @_locked
    def copy(self) -> Accumulator:
        """An independent deep copy."""
        import pickle

        return pickle.loads(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))

    # -- results -----------------------------------------------------------------------------------
    def _kept_tables(self, mp: bool, cc: bool, wanted, bins) -> dict:
        """{(binning, threshold, B): [counts, sum_score, sum_outcome, edges]} of one grouping
        binned from its kept state, for ``(binning, threshold)`` in ``wanted``.

        Exact mode bins the kept scores (with their sample weights, if any), sketch mode the
        sketches' retained items with their integer weights (each stands for ``weight`` equal
        scores), with the binning primitive (:func:`calibkit.binned.table.grouped_bin_stats`).
        """
        g_count = (self.num_classes or 1) if cc else 1  # K is known once rows were seen
        out = {}
        if self.adaptive == "exact":
            state = next(st for (m, c, _), st in self._adaptive_state.items() if (m, c) == (mp, cc))
        for binning, t in sorted(wanted):
            if self.adaptive == "exact":
                rows = state.rows(t)
                weighted = rows[3] is not None
            else:
                rows = self._adaptive_state[(mp, cc, t)].rows()
                weighted = False  # the sketch's weights count scores
            for b, tab in bin_rows(rows, g_count, binning, t, bins, weighted).items():
                out[(binning, t, b)] = tab
        return out

    def _tables(self, specs, bins) -> dict:
        """(binning, max_prob, cc, threshold, B) -> [counts, sum_score, sum_outcome, edges]."""
        out = {}
        wanted: dict = {}
        for s in specs:
            if self._auto or s.binning == "adaptive":
                wanted.setdefault((s.max_prob, s.class_conditional), set()).add(
                    (s.binning, s.threshold))
        for (mp, cc), ts in wanted.items():
            for (binning, t, b), tab in self._kept_tables(mp, cc, ts, bins).items():
                out[(binning, mp, cc, t, b)] = tab
        for key, (c, ss, so) in self._even.items():
            b = key[-1]
            out[("even",) + key] = [c, np.asarray(ss, dtype=np.float64), so,
                                    np.tile(even_boundaries(b), (c.shape[0], 1))]
        return out

    def _auto_bins(self, spec=None) -> int:
        """The ``"auto"`` bin count for the rows seen (:mod:`calibkit.binned.auto_bins`): that of
        :func:`calibkit.gce` for one metric, of :func:`calibkit.evaluate` for a space."""
        k = self.num_classes or 1  # None: no rows yet, and the count is then 1
        if spec is None:
            return auto_num_bins(self._rows, k)
        return auto_num_bins(self._rows, k, max_prob=spec.max_prob,
                             class_conditional=spec.class_conditional)

    def _bin_counts(self) -> tuple:
        """The bin counts of :meth:`compute` (``"auto"`` resolved from the rows seen)."""
        if not self._auto:
            return self.num_bins
        return (self._auto_bins(self.space[0] if len(self.space) == 1 else None),)

    @_locked
    def bins(self, metric=None, num_bins=None) -> CalibrationBins:
        """The per-group, per-bin table of one metric (what a reliability diagram is drawn from).

        Parameters
        ----------
        metric : metric, optional
            One of :attr:`space` (a name, spec, ...); default: the only metric.
        num_bins : int or "auto", optional
            One of :attr:`num_bins`; default: the only bin count. With ``num_bins="auto"``
            accumulators the count is chosen now from the rows seen, as :func:`calibkit.gce`
            does for that metric (and a :class:`~calibkit.errors.FewSamplesWarning` is issued
            when the bins hold too few predictions).

        Returns
        -------
        calibkit.CalibrationBins
            As :func:`calibkit.calibration_bins` would return on all the data seen (estimated
            edges and sums for adaptive metrics in sketch mode; float counts, the total
            weights, once a weighted batch was seen); ``.error(norm)`` is the metric.

        Examples
        --------
        >>> acc = Accumulator("RMSCE", num_bins=2)
        >>> _ = acc.update([0, 1, 1, 0], [[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.3, 0.7]])
        >>> acc.bins().edges.tolist(), acc.bins().counts.tolist()
        ([[0.0, 0.8, 1.0]], [[2, 2]])
        """
        if metric is not None:
            spec = self.space.get(metric)
        elif len(self.space) == 1:
            spec = self.space[0]
        else:
            raise InvalidParameterError(
                f"bins: this accumulator holds {len(self.space)} metrics; name one of "
                f"{self.space.names}")
        if self._auto:
            if num_bins not in (None, "auto"):
                raise InvalidParameterError(
                    f"bins: this accumulator was built with num_bins='auto'; pass no num_bins "
                    f"(or 'auto'), got {num_bins!r}")
            self._require_data()
            num_bins = self._auto_bins(spec)
        else:
            if num_bins is None:
                if len(self.num_bins) != 1:
                    raise InvalidParameterError(f"bins: pass num_bins, one of {self.num_bins}")
                num_bins = self.num_bins[0]
            num_bins = as_num_bins(num_bins)
            if num_bins not in self.num_bins:
                raise InvalidParameterError(
                    f"bins: num_bins={num_bins!r} was not accumulated; use one of {self.num_bins}")
            self._require_data()
        key = (spec.binning, spec.max_prob, spec.class_conditional, spec.threshold, num_bins)
        c, ss, so, edges = (a.copy() for a in self._tables([spec], (num_bins,))[key])
        if self._auto:
            warn_if_few(c)
        assert self.num_classes is not None  # the tables exist: data was seen
        return CalibrationBins(c, ss, so, edges, self.num_classes, spec.binning,
                               spec.class_conditional, spec.max_prob, spec.threshold)

    def _require_data(self) -> None:
        if self.n_samples == 0:
            raise ShapeMismatchError(
                "the accumulator has seen no predictions yet; call update(labels, probs) with a "
                "non-empty batch first"
            )

    @_locked
    def compute(self) -> float | Evaluation:
        """The metric value(s) of everything seen so far.

        Returns
        -------
        float or calibkit.space.Evaluation
            A float when built for one metric and one (int) bin count; otherwise an
            :class:`~calibkit.space.Evaluation` table (``.get(name, num_bins)``,
            ``.to_dict()``, ``.values`` of shape (n_metrics, n_bin_counts)).

        Raises
        ------
        calibkit.errors.ShapeMismatchError
            No rows have been seen yet (like :func:`calibkit.gce` on empty input).
        """
        self._require_data()
        bins = self._bin_counts()
        tables = self._tables(self.space, bins)
        values = np.empty((len(self.space), len(bins)))
        for i, s in enumerate(self.space):
            for j, b in enumerate(bins):
                c, ss, so, _ = tables[(s.binning, s.max_prob, s.class_conditional, s.threshold, b)]
                values[i, j] = reduce_bins(c, ss, so, norm=s.norm,
                                           class_conditional=s.class_conditional)
        if self._auto and self._scalar:
            warn_if_few(c)  # as calibkit.gce(num_bins="auto") warns
        if self._scalar:
            return float(values[0, 0])
        return Evaluation(values, self.space, bins, n_samples=self.n_samples,
                          num_classes=self.num_classes)

    # -- introspection -----------------------------------------------------------------------------
    @property
    @_locked
    def nbytes(self) -> int:
        """Bytes of state held: even-binning tables, kept scores (exact) or sketches (sketch)."""
        total = sum(a.nbytes for tabs in self._even.values() for a in tabs)
        return total + sum(st.nbytes for st in self._adaptive_state.values())

    @_locked
    def rank_error(self, pmf: bool = False) -> float | None:
        """DataSketches' normalized rank error of the sketches (None in exact mode).

        ``pmf=False``: single-sided bound on a rank / quantile query; ``pmf=True``: bound on the
        mass between two split points. Both are the 99th percentile of the maximum error.
        """
        if self.adaptive != "sketch":
            return None
        ds = load_datasketches()
        return float(ds.kll_doubles_sketch.get_normalized_rank_error(self.sketch_k,
                                                                        as_flag(pmf, "pmf")))

    @property
    @_locked
    def is_exact(self) -> bool:
        """True when :meth:`compute` returns exact values (always in exact mode; in sketch mode
        until a sketch compacts)."""
        return not any(isinstance(st, SketchGroups) and st.is_estimation_mode()
                       for st in self._adaptive_state.values())

    @_locked
    def __eq__(self, other) -> bool:
        if not isinstance(other, Accumulator):
            return NotImplemented
        return self._config() == other._config() and equal_state(
            {k: v for k, v in vars(self).items() if k not in ("space", "_lock")},
            {k: v for k, v in vars(other).items() if k not in ("space", "_lock")},
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    @_locked
    def __repr__(self) -> str:
        what = self.space.names[0] if len(self.space) == 1 else f"{len(self.space)} metrics"
        k = "?" if self.num_classes is None else self.num_classes
        bins = self.num_bins if self._auto or len(self.num_bins) > 1 else self.num_bins[0]
        bins = repr(bins) if self._auto else bins
        return (f"Accumulator({what}, num_bins={bins}, adaptive={self.adaptive!r}, "
                f"n_samples={self.n_samples}, K={k}, nbytes={self.nbytes})")
