"""The paper's 32-metric space and :func:`evaluate` (every metric at every bin count at once).

This is the module users import as ``calibkit.space``. A calibration metric of the General
Calibration Error family is fixed by five choices (:class:`MetricSpec`, defined in
:mod:`calibkit.binned.spec`): the binning scheme, whether only the top-label probability is
scored (``max_prob``), whether the error is computed per class and averaged
(``class_conditional``), the score threshold and the norm. The paper's appendix ("Calibration
Metric Labeling") enumerates the 2 x 2 x 2 x 2 x 2 = 32 combinations with thresholds {0, 0.01}
and norms {l1, l2}; :func:`metric_space` reproduces that numbering exactly::

    index = 16*[adaptive] + 8*[not max_prob] + 4*[not class_conditional]
            + 2*[threshold == 0.01] + [norm == "l2"]

so that index 0 is class-conditional ECE, 4 is ECE, 8 is SCE, 21 is RMSCE, 24 is ACE and 26 is
TACE (docs/spec.md).

:func:`evaluate` computes every (metric, bin count) pair of a space in one call of the Rust
kernel (``calibkit._native.evaluate``): it validates the input once, computes each row's
prediction once for all top-label metrics, and bins each distinct score grouping once for all
requested bin counts; each norm is then a reduction of the same per-bin table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import _native, _toplabel
from .._arraylike import device_path, device_tensor
from .._budget import check_tables
from .._params import as_bin_counts, as_flag, as_num_bins, check_gce_params
from .._typing import NumBinsList
from .._validate import is_multilabel, validate_inputs
from ..errors import (
    InternalError,
    InvalidParameterError,
    MissingDependencyError,
    ShapeMismatchError,
)
from .multilabel import multilabel_values
from .spec import (
    DEFAULT_NUM_BINS,
    NAMED_METRICS,
    PAPER_NUM_BINS,
    PAPER_THRESHOLDS,
    MetricSpace,
    MetricSpec,
    _as_space,
    metric_space,
)

if TYPE_CHECKING:
    import pandas as pd

    from ..binfree.estimators import BinningFree

__all__ = ["MetricSpec", "MetricSpace", "Evaluation", "metric_space", "evaluate",
           "multilabel_evaluate", "NAMED_METRICS", "PAPER_THRESHOLDS", "DEFAULT_NUM_BINS",
           "PAPER_NUM_BINS"]


def _as_num_bins(num_bins) -> tuple[int, ...]:
    return as_bin_counts(num_bins)[0]


class Evaluation:
    """A table of calibration errors: one row per metric, one column per bin count.

    Returned by :func:`evaluate`; not usually built by hand.

    Attributes
    ----------
    values : numpy.ndarray of shape (n_metrics, n_bins), float64, read-only
    space : MetricSpace
    num_bins : tuple of int
    n_samples, num_classes : int or None
        Shape of the evaluated probabilities (None when unknown).
    multilabel : bool
        True when the labels were an (N, K) 0/1 matrix.
    top_label_only : bool
        True when computed from top-label input (``confidence=``, ``correct=``): the space
        then holds only max-prob metrics (the others need every class's probability).
    binary_1d : bool
        True when ``probs`` was 1-D (or (N, 1)): the binary P(y=1), read as the matrix
        ``[1 - p, p]`` whose top label the max-prob metrics score; the repr says so
        (:mod:`calibkit.binary` scores P(y=1) itself).

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(4), size=500)
    >>> labels = rng.integers(0, 4, size=500)
    >>> ev = calibkit.evaluate(labels, probs, num_bins=(10, 15))
    >>> ev.values.shape
    (32, 2)
    >>> bool(ev.get("ECE", 15) == calibkit.ece(labels, probs, num_bins=15))
    True
    """

    def __init__(self, values, space: MetricSpace, num_bins, *, n_samples=None,
                 num_classes=None, multilabel: bool = False, top_label_only: bool = False,
                 binary_1d: bool = False) -> None:
        space = _as_space(space)
        num_bins = _as_num_bins(num_bins)
        v = np.array(values, dtype=np.float64, copy=True)
        if v.shape != (len(space), len(num_bins)):
            raise ShapeMismatchError(
                f"values: expected shape {(len(space), len(num_bins))} for {len(space)} metrics "
                f"x {len(num_bins)} bin counts, got {v.shape}"
            )
        v.setflags(write=False)
        self.values = v
        self.space = space
        self.num_bins = num_bins
        self.n_samples = n_samples
        self.num_classes = num_classes
        self.multilabel = multilabel
        self.top_label_only = bool(top_label_only)
        self.binary_1d = bool(binary_1d)
        #: The binning-free estimators (:class:`calibkit.BinningFree`) when
        #: ``evaluate(..., binning_free=True)`` computed them, else None.
        self.binning_free: BinningFree | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_metrics, n_bins)``."""
        return self.values.shape

    @property
    def names(self) -> tuple[str, ...]:
        """Metric names, one per row."""
        return self.space.names

    def _col(self, num_bins) -> int:
        num_bins = as_num_bins(num_bins)
        try:
            return self.num_bins.index(num_bins)
        except ValueError:
            raise InvalidParameterError(
                f"num_bins: {num_bins} was not evaluated; available bin counts are "
                f"{self.num_bins}"
            ) from None

    def get(self, metric, num_bins: int | None = None) -> float | np.ndarray:
        """One value, or one metric across all bin counts.

        Parameters
        ----------
        metric : str, int or MetricSpec
            A name (``"ECE"``, a canonical name), a position in :attr:`space` (for the default
            paper space, the paper's index) or a spec.
        num_bins : int, optional
            One of :attr:`num_bins`. When omitted, the metric's row (float64 array over
            :attr:`num_bins`) is returned, or the single value if only one bin count was used.

        Returns
        -------
        float or numpy.ndarray of shape (n_bins,)
        """
        row = self.space.position(metric)
        if num_bins is None:
            if len(self.num_bins) == 1:
                return float(self.values[row, 0])
            return self.values[row].copy()
        return float(self.values[row, self._col(num_bins)])

    def column(self, num_bins: int) -> np.ndarray:
        """Every metric at one bin count, shape (n_metrics,)."""
        return self.values[:, self._col(num_bins)].copy()

    def to_dict(self) -> dict[str, dict[int, float]]:
        """``{metric name: {num_bins: value}}`` in space order."""
        return {
            s.name: {b: float(self.values[i, j]) for j, b in enumerate(self.num_bins)}
            for i, s in enumerate(self.space)
        }

    def to_pandas(self, long: bool = False) -> pd.DataFrame:
        """The table as a pandas DataFrame (requires pandas).

        Parameters
        ----------
        long : bool, default False
            False: index = metric names ("metric"), columns = bin counts ("num_bins").
            True: one row per (metric, bin count) with columns metric, index (paper index or
            <NA>), binning, max_prob, class_conditional, threshold, norm, num_bins, value.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - exercised via monkeypatch in tests
            raise MissingDependencyError(
                "Evaluation.to_pandas() needs pandas; install it with `pip install pandas` "
                "or use Evaluation.to_dict()"
            ) from exc
        if not as_flag(long, "long"):
            return pd.DataFrame(np.array(self.values), index=pd.Index(self.names, name="metric"),
                                columns=pd.Index(self.num_bins, name="num_bins"))
        rows = [
            {"metric": s.name, "index": s.index, **s.kwargs(), "num_bins": b,
             "value": float(self.values[i, j])}
            for i, s in enumerate(self.space)
            for j, b in enumerate(self.num_bins)
        ]
        df = pd.DataFrame(rows)
        df["index"] = df["index"].astype("Int64")
        return df

    def __repr__(self) -> str:
        shape = ""
        if self.n_samples is not None and self.num_classes is not None:
            kind = "multilabel " if self.multilabel else ""
            shape = f", {kind}N={self.n_samples}, K={self.num_classes}"
        head = f"Evaluation({len(self.space)} metrics x {len(self.num_bins)} bin counts{shape})"
        if self.top_label_only:
            head += "\n  (top-label input: max-prob metrics only; the others need the full matrix)"
        if getattr(self, "binary_1d", False):  # (absent from pickles of earlier versions)
            head += ("\n  (1-D probs p read as [1 - p, p]: max-prob metrics score the top label "
                     "max(p, 1 - p); calibkit.binary scores P(y = 1) itself)")
        width = max(max(len(n) for n in self.names), len("metric"))
        cols = [f"B={b}" for b in self.num_bins]
        cw = max(10, *(len(c) for c in cols))
        lines = [head, f"  {'#':>3}  {'metric':<{width}}  " + "  ".join(f"{c:>{cw}}" for c in cols)]
        for i, name in enumerate(self.names):
            vals = "  ".join(f"{v:>{cw}.6f}" for v in self.values[i])
            lines.append(f"  {i:>3}  {name:<{width}}  {vals}")
        return "\n".join(lines)

    def __eq__(self, other):
        if not isinstance(other, Evaluation):
            return NotImplemented
        return (
            self.space == other.space
            and self.num_bins == other.num_bins
            and np.array_equal(self.values, other.values)
        )

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable


def evaluate(labels=None, probs=None, space=None, num_bins: NumBinsList = DEFAULT_NUM_BINS, *,
             confidence=None, correct=None, predicted=None, num_classes=None,
             sample_weight=None, binning_free: bool = False) -> Evaluation:
    """Every metric of a space at every bin count, in one pass of the Rust kernel.

    Each group of scores is sorted (adaptive) or histogrammed (even) once and shared by all
    metrics and bin counts that use it, so the 32 x 5 table of the paper costs a few
    single-metric calls. Every value is the corresponding single
    ``calibkit.gce(labels, probs, **spec.kwargs(), num_bins=b)`` bit for bit, with or without
    ``sample_weight`` (tests/test_paths.py).

    Parameters
    ----------
    labels : array_like of shape (N,) or (N, K)
        Integer labels in [0, K); an (N, K) 0/1 matrix means multilabel (each column its own
        one-vs-rest problem, see :mod:`calibkit.multilabel`).
    probs : array_like of shape (N, K), (N,) or (N, 1)
        Probabilities (rows summing to 1 unless multilabel); 1-D means binary P(y=1).
    space : MetricSpace, sequence of metrics, or a single metric, optional
        Default: the paper's 32 metrics (:func:`metric_space`); for multilabel labels the
        default is the 16 metrics with ``max_prob=False`` (the top-label ones do not apply).
    num_bins : int, sequence of int or "auto", default (10, 15, 20, 30, 40, 50)
        Bin counts, each a positive int, no repeats; "auto": the one count of
        :func:`calibkit.binned.auto_bins.auto_num_bins` for N rows.
    confidence, correct, predicted, num_classes : array_like of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs`` (see :func:`calibkit.gce`). Only
        max-prob metrics can be computed from it. With the default space, the result holds
        the paper's max-prob metrics that the input allows: the 16 with ``max_prob=True``
        when ``predicted`` and ``num_classes`` are given, else the 8 pooled ones; its
        ``top_label_only`` is True and its repr says so. An explicit space holding an
        all-probabilities metric (or a class-conditional one without ``predicted``) raises
        :class:`calibkit.errors.TopLabelInputError` naming them.
    sample_weight : array_like of shape (N,), optional
        Per-row weights (finite, >= 0; see :func:`calibkit.gce`); each value then equals
        ``calibkit.gce(..., sample_weight=sample_weight)``.
    binning_free : bool, default False
        Also compute the binning-free estimators (top-label smooth ECE, KS error and CORP
        decomposition, :func:`calibkit.binning_free`) of the same predictions, as the
        result's ``binning_free`` attribute (None otherwise).

    Returns
    -------
    Evaluation
        ``.values`` has shape (len(space), len(num_bins)).

    Raises
    ------
    ValueError, TypeError
        Invalid labels / probabilities (as for :func:`calibkit.gce`), an empty space, an
        unknown metric name, or bad bin counts.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(1)
    >>> probs = rng.dirichlet(np.ones(3), size=200)
    >>> labels = rng.integers(0, 3, size=200)
    >>> ev = calibkit.evaluate(labels, probs, space=["ECE", "ACE"], num_bins=(5, 10))
    >>> ev.values.shape
    (2, 2)
    >>> top = calibkit.evaluate(confidence=probs.max(axis=1), correct=probs.argmax(axis=1) == labels)
    >>> len(top.space), top.top_label_only, top.space[0].name
    (8, True, 'ECE')
    """
    binning_free = as_flag(binning_free, "binning_free")
    if type(probs) is not np.ndarray and device_tensor(probs if confidence is None else confidence):
        got = device_path("evaluate")(  # computed on the tensors' device (docs/torch.md)
            labels, probs, space, num_bins, confidence=confidence, correct=correct,
            predicted=predicted, num_classes=num_classes, sample_weight=sample_weight,
            binning_free=binning_free)
        if got is not None:
            return got
    ev = _evaluate(labels, probs, space, num_bins, confidence, correct, predicted, num_classes,
                   sample_weight)
    if binning_free:
        if ev.multilabel:
            raise InvalidParameterError(
                "binning_free=True: the binning-free estimators are top-label; pass 1-D class "
                "labels (or confidence=, correct=), not a multilabel label matrix")
        from ..binfree.estimators import binning_free as _binning_free

        ev.binning_free = _binning_free(labels, probs, sample_weight=sample_weight,
                                        confidence=confidence, correct=correct)
    return ev


def _evaluate(labels, probs, space, num_bins, confidence, correct, predicted, num_classes,
              sample_weight) -> Evaluation:
    """:func:`evaluate` without the binning-free estimators."""
    pairs = _toplabel.resolve(labels, probs, confidence, correct, predicted, num_classes)
    if pairs is not None:
        return _evaluate_pairs(pairs, space, num_bins, sample_weight)
    if is_multilabel(labels, probs):
        if sample_weight is not None:
            raise InvalidParameterError(
                "sample_weight is not supported for multilabel (N, K) label matrices yet"
            )
        return multilabel_evaluate(labels, probs, space=space, num_bins=num_bins)
    space = _as_space(space)
    if isinstance(num_bins, str) and num_bins == "auto":
        from .auto_bins import resolve_num_bins

        num_bins = resolve_num_bins(num_bins, labels, probs)
    bins = _as_num_bins(num_bins)
    for spec in space:
        for b in bins:
            check_gce_params(spec.binning, spec.norm, spec.threshold, b)
    lab, pr = validate_inputs(labels, probs)
    check_space_tables(space, bins, pr.shape[1])
    if sample_weight is not None:
        from .weights import weighted_evaluate

        values = weighted_evaluate(lab, pr, space, bins, sample_weight)
    else:
        values = np.asarray(
            _native.evaluate(lab, pr, space.to_tuples(), list(bins)), dtype=np.float64
        )
    if values.shape != (len(space), len(bins)):  # pragma: no cover - guards the kernel contract
        raise InternalError(
            f"calibkit._native.evaluate returned shape {values.shape}, expected "
            f"{(len(space), len(bins))}; please report this bug"
        )
    return Evaluation(
        values, space, bins, n_samples=pr.shape[0], num_classes=pr.shape[1], multilabel=False,
        binary_1d=pr.shape[1] == 2 and (np.ndim(probs) == 1 or np.shape(probs)[-1:] == (1,)),
    )


def check_space_tables(space, bins, k: int) -> None:
    """The memory budget of :func:`evaluate`'s tables: every bin count's table of a grouping
    is held at once, with K groups for a class-conditional metric
    (:func:`calibkit._budget.check_tables`)."""
    check_tables(k if any(s.class_conditional for s in space) else 1, bins)


def _evaluate_pairs(pairs, space, num_bins, sample_weight=None) -> Evaluation:
    """:func:`evaluate` of top-label input (see its ``confidence`` parameter)."""
    space = _toplabel.toplabel_space(space, pairs.predicted is not None)
    if isinstance(num_bins, str):
        from .auto_bins import resolve_auto

        num_bins = resolve_auto(num_bins, None, None, pairs)
    bins = _as_num_bins(num_bins)
    for spec in space:
        for b in bins:
            check_gce_params(spec.binning, spec.norm, spec.threshold, b)
    check_space_tables(space, bins, pairs.k)
    if sample_weight is None:
        values = _toplabel.evaluate(pairs, space.to_tuples(), list(bins))
    else:  # one weighted table per (grouping, bin count), every norm reduced from it
        from .weights import as_sample_weight, pair_triples

        w = as_sample_weight(sample_weight, pairs.n)
        values = np.empty((len(space), len(bins)))
        tables = {}
        for i, spec in enumerate(space):
            for j, b in enumerate(bins):
                key = (spec.binning, spec.class_conditional, spec.threshold, b)
                if key not in tables:
                    tr = pair_triples(pairs, binning=spec.binning,
                                      class_conditional=spec.class_conditional,
                                      threshold=spec.threshold, num_bins=b)
                    tables[key] = tr.bins(tr.weight_of(w))
                values[i, j] = tables[key].error(spec.norm)
    return Evaluation(values, space, bins, n_samples=pairs.n, num_classes=pairs.num_classes,
                      top_label_only=True)


def multilabel_evaluate(label_matrix, probs, space=None, num_bins=DEFAULT_NUM_BINS):
    """Every metric of a space at every bin count for multilabel predictions.

    The multilabel counterpart of :func:`evaluate` (which dispatches here when the labels are
    2-D); the values come from :func:`calibkit.multilabel.multilabel_values`.

    Parameters
    ----------
    label_matrix : array_like of shape (N, K)
    probs : array_like of shape (N, K)
    space : MetricSpace or sequence of metrics, optional
        Default: the 16 metrics of the paper's space with ``max_prob=False``. A space holding a
        top-label metric is refused with :class:`calibkit.multilabel.MultilabelError`.
    num_bins : int or sequence of int, default (10, 15, 20, 30, 40, 50)

    Returns
    -------
    Evaluation
        With ``multilabel=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.evaluation import multilabel_evaluate
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=(100, 3)); y = (rng.uniform(size=(100, 3)) < p).astype(int)
    >>> multilabel_evaluate(y, p, space=["SCE", "ACE"], num_bins=10).values.shape
    (2, 1)
    """
    space = metric_space(max_prob=False) if space is None else _as_space(space)
    bins = _as_num_bins(num_bins)
    values = multilabel_values(label_matrix, probs, space, bins)
    n, k = np.shape(label_matrix)
    return Evaluation(values, space, bins, n_samples=n, num_classes=k, multilabel=True)
