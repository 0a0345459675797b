"""Private binding of the weighted binning primitive, and the table it fills.

:func:`grouped_bin_stats` turns already-grouped ``(group, score, outcome, weight)`` rows into
per-(group, bin) sufficient statistics with the Rust kernel ``rust/kernels/weighted/grouped.rs``. Every
module that has its scores grouped already (multilabel, streaming's exact mode,
``calibkit.dask`` after selection, the binning recalibrators) bins them here, so that no module
but :mod:`calibkit.reference` restates a binning rule. The rules (see ``docs/weighted-bins.md``):

* even bins (``nb = B + 1``): SPEC's upper edges ``u_j = j / B`` (``u_B = 1``), left-closed,
  the extra bin holding scores ``>= 1``;
* adaptive bins (``nb = B``), weighted equal mass: per group, with ``W`` its total weight and
  its rows sorted by score, the target ``t_j = round_half_even(j * (W / B))`` for
  ``j = 1..B-1``; the upper edge ``e_j`` is the score of the first row whose cumulative weight
  exceeds ``t_j`` (the last row of positive weight if none does). Integer weights give exactly
  the result of repeating each row ``weight`` times (weight 0 drops the row); fractional
  weights use the same definition (a weighted lower quantile at level ``t_j / W``), a group
  whose largest weight is below 1/2 first lifted by the power of two bringing it into
  [1/2, 1) (so that weights normalised to sum to 1 do not round every target to 0).

This module is a leaf (it imports only NumPy, :mod:`calibkit._native`, :mod:`calibkit._params`,
:mod:`calibkit._validate` and :mod:`calibkit.errors`), so that :mod:`calibkit.multilabel` and
:mod:`calibkit.bins` can both use :class:`CalibrationBins` without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import _native
from .._budget import check_tables
from .._params import NORMS, as_choice, as_int, renames
from .._validate import as_array, check_gce_params, check_weights
from ..errors import (
    InputTypeError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    MissingDependencyError,
    ParameterTypeError,
    ShapeMismatchError,
)
from .units import ScoreUnits

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CalibrationBins",
    "adaptive_positions",
    "adaptive_ranks",
    "even_bin_of",
    "even_boundaries",
    "even_edges",
    "as_calibration_bins",
    "grouped_bin_stats",
    "grouped_bin_stats_at",
    "reduce_table",
]


@dataclass(frozen=True, eq=False)
class CalibrationBins:
    """Sufficient statistics of one grouping and binning: G groups x nb bins.

    G is K when class-conditional (group k = rows predicted as k for top-label metrics, or
    column k), else 1. nb is ``num_bins + 1`` for even binning (the last bin holds scores
    equal to 1.0, see docs/spec.md) and ``num_bins`` for adaptive binning.

    Attributes
    ----------
    counts : ndarray of int64, shape (G, nb)
        Kept scores per bin.
    sum_score : ndarray of float64, shape (G, nb)
        Sum of the kept scores per bin.
    sum_outcome : ndarray of float64, shape (G, nb)
        Sum of the outcomes (1 = correct / true class) per bin.
    edges : ndarray of float64, shape (G, nb + 1)
        Bin boundaries. Even: ``0, u_1, ..., u_B = 1.0, 1.0`` (the extra bin is [1, 1]).
        Adaptive: ``threshold, e_1, ..., e_{B-1}, max(1.0, e_{B-1})`` (NaN edges for an empty
        group; scores may exceed 1 by the tolerance, and the top edge follows them so that
        edges never decrease); a score s is in bin j when ``edges[j] <= s < edges[j+1]``
        (left-closed, the last bin closed).
    num_classes : int
        K.
    binning : str
    class_conditional : bool
    max_prob : bool
    threshold : float
    score_units : ScoreUnits or None
        The exact score sums (``sum_score`` is each rounded once; docs/spec.md, "Cell sums"),
        so that tables of disjoint rows add exactly: ``a.score_units + b.score_units`` is the
        table of all the rows bit for bit. None for tables whose sums are not on the unit grid
        (rescaled weights, or built from floats).
    """

    counts: np.ndarray
    sum_score: np.ndarray
    sum_outcome: np.ndarray
    edges: np.ndarray
    num_classes: int
    binning: str
    class_conditional: bool
    max_prob: bool
    threshold: float
    score_units: ScoreUnits | None = field(default=None, repr=False)

    def __post_init__(self):
        # Scores may exceed 1 by RANGE_TOL; an adaptive edge can then lie above 1.0, and the top
        # edge must follow it so that every row of edges is non-decreasing, whatever built the
        # table (kernel, streaming, multilabel).
        e = np.asarray(self.edges, dtype=np.float64)
        if e.ndim == 2 and e.shape[1] >= 2:
            top = np.fmax(e[:, -1], np.fmax.reduce(e[:, :-1], axis=1))
            if not np.array_equal(top, e[:, -1], equal_nan=True):
                e = e.copy()
                e[:, -1] = top
                object.__setattr__(self, "edges", e)

    @property
    def group_sizes(self) -> np.ndarray:
        """Kept scores per group, shape (G,)."""
        return self.counts.sum(axis=1)

    def _mean(self, s: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            # weighted counts may be below 1: divide by the count itself wherever it is > 0
            return np.where(self.counts > 0, s / np.where(self.counts > 0, self.counts, 1), np.nan)

    @property
    def mean_confidence(self) -> np.ndarray:
        """Mean score per bin, NaN for empty bins, shape (G, nb)."""
        return self._mean(self.sum_score)

    @property
    def accuracy(self) -> np.ndarray:
        """Mean outcome per bin, NaN for empty bins, shape (G, nb)."""
        return self._mean(self.sum_outcome)

    @property
    def signed_gap(self) -> np.ndarray:
        """``mean_confidence - accuracy`` per bin, NaN for empty bins, shape (G, nb).

        calibkit's one sign for gaps, that of :func:`calibkit.signed_ece`: positive where the
        model is over-confident (its confidence above its accuracy), negative where it is
        under-confident.
        """
        return self.mean_confidence - self.accuracy

    @property
    def gap(self) -> np.ndarray:
        """Deprecated (since calibkit 0.2): ``accuracy - mean_confidence``, the opposite sign of
        :attr:`signed_gap`; use ``-signed_gap`` for these values."""
        import warnings

        warnings.warn(
            "CalibrationBins.gap is deprecated since calibkit 0.2 and will be removed in the next "
            "release; use CalibrationBins.signed_gap, which is mean_confidence - accuracy "
            "(positive = over-confident, the sign of signed_ece): gap == -signed_gap",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.accuracy - self.mean_confidence

    @property
    def weights(self) -> np.ndarray:
        """Each bin's share of its group (0 in empty groups), shape (G, nb)."""
        n = self.group_sizes[:, None]
        return np.where(n > 0, self.counts / np.where(n > 0, n, 1), 0.0)

    def error(self, norm: str = "l1", *, debias: bool = False) -> float:
        """The GCE of this table under ``norm`` ("l1", "l2" or "max").

        ``debias=True`` (l2 only; refused for l1 and max): Kumar et al.'s (2019) debiased
        estimate, see :mod:`calibkit.binned.debias`.
        """
        norm = as_choice(norm, "norm", NORMS)
        if debias is not False:
            from .debias import check_debias, debiased_l2

            if check_debias(debias, norm):
                return debiased_l2(self.counts, self.sum_score, self.sum_outcome,
                                   self.class_conditional)
        return reduce_table(self.counts, self.sum_score, self.sum_outcome, norm,
                            self.class_conditional)

    @renames(confidence="confidence_level")
    def accuracy_interval(self, method: str = "clopper-pearson",
                          confidence_level: float = 0.90) -> tuple[np.ndarray, np.ndarray]:
        """Confidence interval of each bin's accuracy: ``(low, high)``, each shaped like accuracy.

        ``method``: "clopper-pearson" (exact; 0 and 1 at the ends), "wilson" (score interval,
        no continuity correction) or "jeffreys"; NaN for empty bins. Weighted bins use the
        bin's total weight as the effective count (see :mod:`calibkit.binned.bin_intervals`).
        ``confidence_level`` is the interval's level (``confidence=``, its name before calibkit
        0.2, still works with a DeprecationWarning).

        Examples
        --------
        >>> import calibkit
        >>> t = calibkit.calibration_bins([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.6], num_bins=2)
        >>> t.counts.tolist(), t.sum_outcome.tolist()
        ([[0, 4, 0]], [[0.0, 3.0, 0.0]])
        >>> lo, hi = t.accuracy_interval(confidence_level=0.9)
        >>> round(float(lo[0, 1]), 4), round(float(hi[0, 1]), 4)
        (0.2486, 0.9873)
        """
        from .bin_intervals import binomial_interval

        return binomial_interval(self.sum_outcome, self.counts, method=method,
                                 confidence_level=confidence_level)

    def overconfidence(self) -> float:
        """Over-confident mass ``sum_b w_b max(conf_b - acc_b, 0)`` (class mean if class-conditional).

        ``overconfidence() + underconfidence()`` is the l1 error; their difference is the
        signed error (:func:`calibkit.signed_ece`).
        """
        from .masses import confidence_masses

        return confidence_masses(self.counts, self.sum_score, self.sum_outcome,
                                 self.class_conditional)[0]

    def underconfidence(self) -> float:
        """Under-confident mass ``sum_b w_b max(acc_b - conf_b, 0)`` (class mean if class-conditional)."""
        from .masses import confidence_masses

        return confidence_masses(self.counts, self.sum_score, self.sum_outcome,
                                 self.class_conditional)[1]

    def to_dict(self) -> dict:
        """Plain-Python form (lists), e.g. for JSON."""
        return {
            "counts": self.counts.tolist(),
            "sum_score": self.sum_score.tolist(),
            "sum_outcome": self.sum_outcome.tolist(),
            "edges": self.edges.tolist(),
            "num_classes": self.num_classes,
            "binning": self.binning,
            "class_conditional": self.class_conditional,
            "max_prob": self.max_prob,
            "threshold": self.threshold,
        }

    def to_pandas(self) -> pd.DataFrame:
        """Long table: one row per (group, bin) with edges, count, confidence, accuracy, signed gap.

        Columns: group, bin, lower, upper, count, mean_confidence, accuracy, signed_gap
        (:attr:`signed_gap`, ``mean_confidence - accuracy``). Before calibkit 0.2 the last
        column was ``gap`` (``accuracy - mean_confidence``, the opposite sign); a column cannot
        warn, so it was replaced rather than deprecated.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingDependencyError("to_pandas() needs pandas: pip install pandas") from exc
        g, nb = self.counts.shape
        return pd.DataFrame(
            {
                "group": np.repeat(np.arange(g), nb),
                "bin": np.tile(np.arange(nb), g),
                "lower": self.edges[:, :-1].ravel(),
                "upper": self.edges[:, 1:].ravel(),
                "count": self.counts.ravel(),
                "mean_confidence": self.mean_confidence.ravel(),
                "accuracy": self.accuracy.ravel(),
                "signed_gap": self.signed_gap.ravel(),
            }
        )


def reduce_table(counts, sum_score, sum_outcome, norm: str, class_conditional: bool) -> float:
    """The norm of docs/spec.md of a (G, nb) table of checked statistics (no argument checks).

    Per group the bins are weighted by their share of the group; the mean over all G groups
    (empty ones count 0) when ``class_conditional``, else the single group's value; one square
    root after the mean for ``"l2"``. This is the one reduction, the Rust kernels' own
    (``rust/kernels/core/reduce.rs`` through ``_native.reduce_table``): a table reduced here
    gives the very bits :func:`calibkit.gce` gives for it.

    Examples
    --------
    >>> round(reduce_table(np.array([[2.0, 2.0]]), np.array([[0.4, 1.6]]),
    ...                    np.array([[0.0, 2.0]]), "l1", False), 6)
    0.2
    """
    c, ss, so = (np.ascontiguousarray(a, dtype=np.float64)
                 for a in (counts, sum_score, sum_outcome))
    return _native.reduce_table(c, ss, so, norm, bool(class_conditional))


def _vector(x, name: str, m: int | None) -> np.ndarray:
    a = as_array(x, name, "an array of real numbers")
    if a.dtype.kind not in "biuf":
        raise InputTypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ShapeMismatchError(f"{name} must be 1-D, got shape {a.shape}")
    if m is not None and a.shape[0] != m:
        raise ShapeMismatchError(
            f"{name} has {a.shape[0]} entries but scores has {m}; pass one per score"
        )
    return a


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def grouped_bin_stats(groups, scores, outcomes, weights=None, *, num_groups: int | None = None,
                      binning: str = "even", num_bins: int = 15, units: bool = False):
    """Per-(group, bin) statistics of already-grouped, optionally weighted scores.

    Parameters
    ----------
    groups : array_like of shape (M,), integers in ``[0, num_groups)``, or None
        Group of each score; None puts every score in group 0.
    scores : array_like of shape (M,), finite
        float32 stays float32 (widened exactly to float64 for binning and sums), other real
        dtypes become float64. Scores outside [0, 1] go to the first or last even bin.
    outcomes : array_like of shape (M,), finite (0/1 or bool for calibration)
    weights : array_like of shape (M,), finite and >= 0, or None
        None means every weight is 1, which gives exactly the unweighted statistics. Integer
        weights give exactly the statistics of each row repeated ``weight`` times (0 drops a
        row); see the module docstring for fractional weights.
    num_groups : int, optional
        G; default ``max(groups) + 1`` (1 when ``groups`` is None or empty).
    binning : {"even", "adaptive"}, default "even"
    num_bins : int, default 15
        B, at most ``calibkit._validate.MAX_BINS``; ``G * (B + 1)`` is limited as for the
        metrics (a clear :class:`~calibkit.errors.InvalidParameterError` instead of an
        allocation failure).
    units : bool, default False
        Also return the exact score sums (see Returns).

    Returns
    -------
    counts, sum_score, sum_outcome : numpy.ndarray of shape (G, nb), float64
        Sum of weights, of ``weight * score`` and of ``weight * outcome`` per bin, each exact
        in grid units of 2**-50 and rounded once (docs/spec.md, "Cell sums"); nb = B + 1
        (even) or B (adaptive).
    edges : numpy.ndarray of shape (G, nb + 1), float64
        Even ``0, u_1, ..., u_B = 1, 1``; adaptive ``0, e_1, ..., e_{B-1}, 1`` (NaN inner
        edges for a group of total weight 0).
    units : ScoreUnits or None
        Only with ``units=True``: the exact score sums (:class:`calibkit.binned.units.ScoreUnits`),
        which add exactly to those of other calls; None when the call scaled its values by a
        power of two (the largest weight below 1/2, a total weight beyond about 2**74, or
        scores or outcomes beyond +-2), whose sums are not on the unit-weight grid.

    Raises
    ------
    InputTypeError, ShapeMismatchError
        Non-numeric or non-1-D arrays, or lengths that differ.
    InvalidProbabilitiesError
        Non-finite scores.
    InvalidParameterError
        Bad ``binning``/``num_bins``, too large a table, group ids out of range, non-finite
        outcomes, weights that are negative or not finite.

    Examples
    --------
    >>> import numpy as np
    >>> c, s, o, e = grouped_bin_stats([0, 0, 1, 1], [0.2, 0.6, 0.3, 0.9], [0, 1, 1, 1],
    ...                                [1.0, 2.0, 1.0, 0.0], binning="adaptive", num_bins=2)
    >>> c.tolist(), e.tolist()
    ([[1.0, 2.0], [0.0, 1.0]], [[0.0, 0.6, 1.0], [0.0, 0.3, 1.0]])
    """
    g, s, o, w, num_groups = _rows(groups, scores, outcomes, weights, num_groups)
    return rows_table(g, s, o, w, num_groups, binning, num_bins, units)


def rows_table(g, s, o, w, num_groups: int, binning: str, num_bins: int, units: bool = False):
    """:func:`grouped_bin_stats` of rows already in the kernel's form (int64 ``g``, float64 or
    float32 ``s``, float64 ``o`` and ``w``, contiguous): the rows a metric forms itself
    (:class:`calibkit.binned.weights.Triples`, from validated inputs), which need not be
    scanned again in Python. The kernel still checks every value (groups in range, finite
    scores and outcomes, weights), so a bad row is an error, never a number."""
    binning, _, _, num_bins = check_gce_params(binning, "l1", 0.0, num_bins)
    check_tables(num_groups, (num_bins,))
    out = _native.grouped_bin_stats(g, s, o, w, num_groups, binning, num_bins, units=units)
    return _wrap_units(out)


def grouped_bin_stats_at(groups, scores, outcomes, edges, weights=None, *,
                         num_groups: int | None = None, units: bool = False):
    """:func:`grouped_bin_stats` against given upper edges instead of a binning rule.

    Parameters
    ----------
    groups, scores, outcomes, weights, num_groups, units
        As for :func:`grouped_bin_stats`.
    edges : array_like of shape (G, B - 1)
        Each group's upper edges, non-decreasing, no NaN; a score goes to the number of its
        group's edges ``<=`` it (left-closed bins, ties to the upper bin).

    Returns
    -------
    counts, sum_score, sum_outcome : numpy.ndarray of shape (G, B), float64
    edges : numpy.ndarray of shape (G, B + 1), float64
        ``0, edges..., 1`` per group.

    Examples
    --------
    >>> c, s, o, e = grouped_bin_stats_at(None, [0.2, 0.5, 0.9], [0, 1, 1], [[0.5]])
    >>> c.tolist(), o.tolist()
    ([[1.0, 2.0]], [[0.0, 2.0]])
    """
    g, s, o, w, num_groups = _rows(groups, scores, outcomes, weights, num_groups)
    try:
        e = np.asarray(edges, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"edges must be a (G, B - 1) array of numbers: {exc}") from exc
    if e.ndim != 2 or e.shape[0] != num_groups:
        raise ShapeMismatchError(
            f"edges must have shape ({num_groups}, B - 1), one row per group, got {e.shape}"
        )
    check_gce_params("adaptive", "l1", 0.0, e.shape[1] + 1)
    return _wrap_units(_native.grouped_bin_stats_at(g, s, o, w, num_groups,
                                                    np.ascontiguousarray(e), units=units))


def _wrap_units(out: tuple) -> tuple:
    """A kernel's table tuple with its fifth element (exact units, if asked for) wrapped."""
    if len(out) == 5:
        from .units import ScoreUnits

        return (*out[:4], None if out[4] is None else ScoreUnits(out[4]))
    return out


def _rows(groups, scores, outcomes, weights, num_groups):
    """Validated (groups, scores, outcomes, weights, num_groups) for the kernel."""
    s = _vector(scores, "scores", None)
    m = s.shape[0]
    s = np.ascontiguousarray(s, dtype=np.float32 if s.dtype.kind == "f" and s.itemsize == 4
                             else np.float64)
    if not np.isfinite(s).all():
        i = _first_bad(~np.isfinite(s))
        raise InvalidProbabilitiesError(f"scores[{i}] is {s[i]}: scores must be finite")
    o = np.ascontiguousarray(_vector(outcomes, "outcomes", m), dtype=np.float64)
    if not np.isfinite(o).all():
        i = _first_bad(~np.isfinite(o))
        raise InvalidParameterError(f"outcomes[{i}] is {o[i]}: outcomes must be finite")
    g = None
    if groups is not None:
        g0 = _vector(groups, "groups", m)
        if g0.dtype.kind == "f":
            if not (np.isfinite(g0).all() and (g0 == np.round(g0)).all()):
                raise InputTypeError("groups must hold integer group ids")
        elif g0.dtype.kind == "u" and m and g0.max() > np.iinfo(np.int64).max:
            raise InvalidParameterError("groups holds ids too large to index a group")
        g = np.ascontiguousarray(g0, dtype=np.int64)
    if num_groups is None:
        num_groups = int(g.max()) + 1 if g is not None and m else 1
    if isinstance(num_groups, (bool, np.bool_)) or not isinstance(num_groups, (int, np.integer)):
        raise InputTypeError(f"num_groups must be a positive int, got {num_groups!r}")
    if num_groups < 1:
        raise InvalidParameterError(f"num_groups must be at least 1, got {num_groups}")
    if g is not None and m:
        bad = (g < 0) | (g >= num_groups)
        if bad.any():
            i = _first_bad(bad)
            raise InvalidParameterError(
                f"groups[{i}] is {g[i]}, outside [0, {num_groups}): group ids must index the "
                f"num_groups groups"
            )
    w = None
    if weights is not None:
        w = np.ascontiguousarray(_vector(weights, "weights", m), dtype=np.float64)
        check_weights(w, "weights", allow_all_zero=True)
    return g, s, o, w, int(num_groups)


def as_calibration_bins(stats, *, num_classes: int, binning: str, class_conditional: bool,
                        max_prob: bool, threshold: float) -> CalibrationBins:
    """A :class:`CalibrationBins` from an unweighted :func:`grouped_bin_stats` result.

    Counts become int64 and an adaptive table's lower boundary becomes ``threshold`` (the
    primitive reports 0, not knowing which scores the caller dropped).

    Examples
    --------
    >>> t = as_calibration_bins(grouped_bin_stats(None, [0.3, 0.8], [0, 1], num_bins=2),
    ...                         num_classes=2, binning="even", class_conditional=False,
    ...                         max_prob=False, threshold=0.0)
    >>> t.counts.tolist(), round(t.error(), 6)
    ([[1, 1, 0]], 0.25)
    """
    counts, sum_score, sum_outcome, edges = stats
    if binning == "adaptive":
        edges[:, 0] = threshold
    return CalibrationBins(np.rint(counts).astype(np.int64), sum_score, sum_outcome, edges,
                          int(num_classes), binning, bool(class_conditional), bool(max_prob),
                          float(threshold))


def adaptive_positions(n: int | np.ndarray, num_bins: int) -> np.ndarray:
    """SPEC's 0-based ranks of the ``num_bins - 1`` adaptive upper edges in ``n`` sorted scores.

    The rule lives in the kernel (``rust/kernels/core/edges.rs``); this is for callers that select
    order statistics themselves (``calibkit.dask``, ``calibkit.torch``).

    Parameters
    ----------
    n : int or array of int
        A group's size, or many groups' sizes (then one call of the kernel's rule for all).
    num_bins : int

    Returns
    -------
    numpy.ndarray of int64
        Shape ``(num_bins - 1,)`` for an int ``n`` (empty for ``n = 0``); ``(len(n),
        num_bins - 1)`` for a 1-D integer array, row i for ``n[i]`` (zeros for an empty group).

    Examples
    --------
    >>> adaptive_positions(10, 3).tolist()
    [3, 7]
    >>> adaptive_positions(np.array([10, 4, 0]), 3).tolist()
    [[3, 7], [1, 3], [0, 0]]
    """
    if np.ndim(n) == 0:
        n = n.item() if isinstance(n, np.ndarray) else n
        return _native.adaptive_positions(as_int(n, "n", minimum=0), as_int(num_bins, "num_bins"))
    sizes = np.asarray(n)
    if sizes.ndim != 1 or not (sizes.dtype.kind in "iu" or sizes.size == 0):
        raise ParameterTypeError(
            f"n must be an int or a 1-D array of ints (group sizes), got an array of shape "
            f"{sizes.shape} and dtype {sizes.dtype}")
    return _native.adaptive_positions_of(np.ascontiguousarray(sizes, dtype=np.int64),
                                         as_int(num_bins, "num_bins"))


def even_boundaries(num_bins: int) -> np.ndarray:
    """The even-binning boundaries ``0, u_1, ..., u_B = 1, 1`` of ``num_bins`` bins (B + 2 values).

    Examples
    --------
    >>> even_boundaries(4).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    """
    empty = np.empty(0)
    return grouped_bin_stats(None, empty, empty, binning="even", num_bins=num_bins)[3][0]


def even_edges(num_bins, j) -> np.ndarray:
    """The even edges ``u_j`` of many (bin count, edge index) pairs at once, elementwise: the
    kernels' rule (``rust/kernels/core/edges.rs``) ``u_j = j * (1 / B)`` with ``u_B = 1``, and
    ``-inf`` for ``j <= 0`` (no lower edge, for searches). For callers that need edges of
    thousands of bin counts together (the sweep), where one :func:`even_boundaries` call per
    bin count would be quadratic; ``tests/test_sweep_scaling.py`` holds the two equal, bit for
    bit.

    Examples
    --------
    >>> even_edges(np.array([4, 4, 4]), np.array([0, 1, 4])).tolist()
    [-inf, 0.25, 1.0]
    """
    j = np.asarray(j)
    u = j * (1.0 / np.asarray(num_bins))
    return np.where(j == num_bins, 1.0, np.where(j <= 0, -np.inf, u))


def even_bin_of(x, num_bins) -> np.ndarray:
    """The even bin (0..B, B: the bin of scores >= 1) of scores ``x`` under bin counts
    ``num_bins``, elementwise, as the kernels assign it: the number of upper edges
    :func:`even_edges` at or below ``x``.

    Examples
    --------
    >>> even_bin_of(np.array([0.0, 0.25, 0.999, 1.0]), np.array([4, 4, 4, 4])).tolist()
    [0, 1, 3, 4]
    """
    x = np.asarray(x, dtype=np.float64)
    b = np.asarray(num_bins)
    g = np.clip(np.floor(np.clip(x * b, 0, b)), 0, b).astype(np.int64)
    g = g + (x >= even_edges(b, g + 1)) - (x < even_edges(b, g))
    return np.clip(g, 0, b)


def adaptive_ranks(num_bins, j, total_weight: float) -> np.ndarray:
    """The weighted ranks ``t_j = rint(j * W / B)`` of the adaptive edges (round half to even,
    as the kernels), elementwise over bin counts and edge indices; unweighted, ``W`` is the
    row count and the edge of rank ``t_j`` is the row :func:`adaptive_positions` gives.
    Weighted, ``W`` is the total of the weights as the kernels walk them: lifted by
    ``_native.weight_scale`` of the largest when it is below 1/2 (docs/weighted-bins.md).

    Examples
    --------
    >>> adaptive_ranks(np.array([3, 3]), np.array([1, 2]), 10.0).tolist()
    [3.0, 7.0]
    """
    return np.rint(np.asarray(j) * (total_weight / np.asarray(num_bins)))


def sorted_bin_starts(sorted_scores: np.ndarray, binning: str, num_bins: int) -> np.ndarray:
    """Where each bin of the table begins in ascending float64 scores: ``nb + 1`` indices (the
    last one ``n``), bin ``j`` being ``sorted_scores[starts[j]:starts[j + 1]]``; ``nb`` is
    ``num_bins + 1`` for even bins (the extra bin holds the scores ``>= 1``) and ``num_bins``
    for adaptive bins, as in :class:`CalibrationBins`.

    The kernels' rule, for callers that hold sorted scores (the sweep): bins are left-closed
    and value-defined (equal scores never split). Even: bin ``j`` starts at the first score
    ``>= u_j`` (:func:`even_boundaries`). Adaptive: the upper edges are the scores at SPEC's
    positions (:func:`adaptive_positions`), and a bin starts at the first score equal to its
    lower edge.

    Examples
    --------
    >>> sorted_bin_starts(np.array([0.1, 0.2, 0.2, 0.7, 1.0]), "even", 2).tolist()
    [0, 3, 4, 5]
    >>> sorted_bin_starts(np.array([0.1, 0.2, 0.2, 0.7, 1.0]), "adaptive", 2).tolist()
    [0, 1, 5]
    """
    s = np.asarray(sorted_scores, dtype=np.float64)
    n = s.size
    if binning == "adaptive":
        edges = s[adaptive_positions(n, num_bins)]
    else:
        edges = even_boundaries(num_bins)[1:num_bins + 1]
    cut = np.searchsorted(s, edges, side="left")
    return np.concatenate(([0], cut, [n])).astype(np.int64)
