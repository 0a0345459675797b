"""Rank orderings of recalibration methods and rank correlations between metrics.

The paper asks: do different calibration metrics agree about which recalibration method is best?
Each metric orders the methods by their calibration error (lower error = better rank); this
module builds the paper's rank-order table from those orderings, measures how much two orderings
agree (Spearman's rho, Kendall's tau), and how much one metric's ordering moves when only its
number of bins changes (the bin-sensitivity analysis).

On Spearman's rho. The paper prints the rank correlation as
``rho = 1 - 6 * sum(|d|) / (n (n^2 - 1))`` with the *absolute* rank difference ``|d|``. The
standard formula squares it: ``rho = 1 - 6 * sum(d^2) / (n (n^2 - 1))``, which is the Pearson
correlation of the ranks (and lies in [-1, 1]; the |d| form does not). calibkit uses the standard
one throughout; ``formula="paper"`` in :func:`spearman_rho` gives the printed form for
reproducing published numbers. Kendall's tau is SciPy's tau-b.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from ..errors import InvalidParameterError, ShapeMismatchError
from ._util import as_floats
from .properties import group_by_property
from .tables import Table

__all__ = [
    "spearman_rho",
    "kendall_tau",
    "rank_correlation",
    "rank_methods",
    "rank_order",
    "rank_order_table",
    "metric_rank_correlations",
    "bin_sensitivity",
    "bin_sensitivity_table",
    "ordinal",
]

_ORDINALS = ["First", "Second", "Third", "Fourth", "Fifth", "Sixth", "Seventh", "Eighth", "Ninth", "Tenth"]


def ordinal(i: int) -> str:
    """'First', 'Second', ... for 1-based ``i`` (``'11th'`` beyond ten)."""
    if 1 <= i <= len(_ORDINALS):
        return _ORDINALS[i - 1]
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def _pair(x, y, fname: str) -> tuple[np.ndarray, np.ndarray]:
    a = as_floats(x, f"{fname}: x")
    b = as_floats(y, f"{fname}: y")
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeMismatchError(f"{fname}: x and y must be 1-D (got shapes {a.shape} and {b.shape})")
    if a.shape != b.shape:
        raise ShapeMismatchError(
            f"{fname}: x and y must rank the same items (got lengths {a.size} and {b.size})"
        )
    if a.size < 2:
        raise InvalidParameterError(f"{fname}: need at least 2 items to correlate two orderings (got {a.size})")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InvalidParameterError(f"{fname}: x and y must be finite (found NaN or inf); drop those items first")
    return a, b


def spearman_rho(x, y, *, formula: str = "standard") -> float:
    """Spearman's rank correlation between two orderings of the same items.

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Scores (e.g. calibration errors of n methods under two metrics) or rankings; both are
        turned into ranks (ties get their average rank), so any monotone transform gives the same
        result.
    formula : {"standard", "paper"}, default "standard"
        ``"standard"``: ``1 - 6 sum d^2 / (n (n^2 - 1))`` with d the rank differences, which is
        the Pearson correlation of the ranks; with tied values the Pearson form is used (it is
        what the d^2 formula reduces to without ties, and matches :func:`scipy.stats.spearmanr`).
        ``"paper"``: the form printed in Nixon et al., ``1 - 6 sum |d| / (n (n^2 - 1))``, kept only
        to reproduce published numbers (it is not bounded below by -1).

    Returns
    -------
    float
        In [-1, 1] for the standard formula; NaN when one ordering is constant (all tied), where
        the correlation is undefined.

    Examples
    --------
    >>> spearman_rho([0.1, 0.2, 0.3, 0.4], [1, 2, 4, 3])
    0.8
    >>> spearman_rho([0.1, 0.2, 0.3, 0.4], [1, 2, 4, 3], formula="paper")
    0.8
    """
    a, b = _pair(x, y, "spearman_rho")
    ra, rb = stats.rankdata(a), stats.rankdata(b)
    n = a.size
    if formula == "paper":
        return float(1.0 - 6.0 * np.sum(np.abs(ra - rb)) / (n * (n * n - 1)))
    if formula != "standard":
        raise InvalidParameterError(f"spearman_rho: formula must be 'standard' or 'paper' (got {formula!r})")
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return float("nan")
    if np.unique(ra).size == n and np.unique(rb).size == n:
        d = ra - rb
        return float(1.0 - 6.0 * np.dot(d, d) / (n * (n * n - 1)))
    ca, cb = ra - ra.mean(), rb - rb.mean()
    return float(np.dot(ca, cb) / np.sqrt(np.dot(ca, ca) * np.dot(cb, cb)))


def kendall_tau(x, y) -> float:
    """Kendall's tau-b between two orderings (via :func:`scipy.stats.kendalltau`).

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Scores or rankings of the same n items.

    Returns
    -------
    float
        In [-1, 1]; NaN when one ordering is constant.

    Examples
    --------
    >>> round(kendall_tau([1, 2, 3, 4], [1, 2, 4, 3]), 4)
    0.6667
    """
    a, b = _pair(x, y, "kendall_tau")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(stats.kendalltau(a, b).statistic)


def rank_correlation(x, y, method: str = "spearman") -> float:
    """Spearman's rho (standard formula) or Kendall's tau-b between two orderings.

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Scores or rankings of the same n items.
    method : {"spearman", "kendall"}, default "spearman"

    Returns
    -------
    float

    Examples
    --------
    >>> rank_correlation([1, 2, 3], [3, 2, 1], "kendall")
    -1.0
    """
    if method == "spearman":
        return spearman_rho(x, y)
    if method == "kendall":
        return kendall_tau(x, y)
    raise InvalidParameterError(f"rank_correlation: method must be 'spearman' or 'kendall' (got {method!r})")


def rank_order(errors) -> np.ndarray:
    """Item positions from best (lowest error) to worst.

    Ties keep their input order (the earlier item ranks first), so the result is deterministic.

    Parameters
    ----------
    errors : array_like of shape (n,)

    Returns
    -------
    numpy.ndarray of int, shape (n,)
        ``order[0]`` is the item with the lowest error.

    Examples
    --------
    >>> rank_order([0.3, 0.1, 0.2]).tolist()
    [1, 2, 0]
    """
    e = as_floats(errors, "rank_order: errors")
    if e.ndim != 1:
        raise ShapeMismatchError(f"rank_order: errors must be 1-D (got shape {e.shape})")
    if np.any(np.isnan(e)):
        raise InvalidParameterError("rank_order: errors contain NaN; a calibration error must be a number")
    return np.argsort(e, kind="stable")


def rank_methods(errors) -> np.ndarray:
    """1-based rank of each item: 1 = lowest error (ties broken by input order).

    Parameters
    ----------
    errors : array_like of shape (n,)

    Returns
    -------
    numpy.ndarray of int, shape (n,)

    Examples
    --------
    >>> rank_methods([0.3, 0.1, 0.2]).tolist()
    [3, 1, 2]
    """
    order = rank_order(errors)
    ranks = np.empty(order.size, dtype=np.int64)
    ranks[order] = np.arange(1, order.size + 1)
    return ranks


def _corr_matrix(x: np.ndarray, method: str) -> np.ndarray:
    """Rank correlation between every pair of columns of ``x`` (n items, m orderings), at once.

    Spearman: the Pearson correlation of the average ranks (what :func:`spearman_rho` computes).
    Kendall: tau-b in closed form from the pairwise signs, ``sum(s_a s_b) / sqrt(#untied_a
    #untied_b)`` over item pairs (what :func:`scipy.stats.kendalltau` computes; the tests check
    both against SciPy). NaN where a column is constant.
    """
    if method not in ("spearman", "kendall"):
        raise InvalidParameterError(f"method must be 'spearman' or 'kendall' (got {method!r})")
    if x.shape[0] < 2:
        raise InvalidParameterError(f"need at least 2 items to correlate orderings (got {x.shape[0]})")
    if not np.all(np.isfinite(x)):
        raise InvalidParameterError("values must be finite (found NaN or inf); drop those items first")
    if method == "spearman":
        r = stats.rankdata(x, axis=0)
        c = r - r.mean(axis=0)
    else:
        i, j = np.triu_indices(x.shape[0], k=1)
        c = np.sign(x[i] - x[j])
    num = c.T @ c
    ss = np.diag(num).copy()
    den = np.sqrt(np.outer(ss, ss))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return np.clip(out, -1.0, 1.0)


def _values_2d(values, fname: str) -> np.ndarray:
    v = as_floats(values, f"{fname}: values")
    if v.ndim != 2:
        raise ShapeMismatchError(f"{fname}: values must be 2-D (n_methods, n_metrics) (got shape {v.shape})")
    return v


def rank_order_table(
    values,
    method_labels: Sequence[Any] | None = None,
    metric_labels: Sequence[Any] | None = None,
    *,
    name: str = "rank_order",
    title: str = "Rank order of the recalibration methods under each metric",
) -> Table:
    """The paper's rank-order table: which method each metric ranks first, second, ...

    Parameters
    ----------
    values : array_like of shape (n_methods, n_metrics)
        ``values[i, j]`` = calibration error of method i's outputs under metric j.
    method_labels : sequence, optional
        What to write in the cells for each method (default: the method's position 0..n-1, the
        paper's numbering when methods are given in ``PAPER_METHODS`` order).
    metric_labels : sequence, optional
        Column labels (default: metric positions 0..n_metrics-1, the paper's metric indices).
    name, title : str
        Passed to :class:`Table`.

    Returns
    -------
    Table
        Rows "Ranked First" .. (one per method), columns the metrics; cell (r, j) is the label of
        the method with the r-th lowest error under metric j.

    Examples
    --------
    >>> t = rank_order_table([[0.3, 0.1], [0.1, 0.2], [0.2, 0.3]])
    >>> t.column("0"), t.column("1")
    ([1, 2, 0], [0, 1, 2])
    """
    v = _values_2d(values, "rank_order_table")
    n_methods, n_metrics = v.shape
    method_labels = list(range(n_methods)) if method_labels is None else list(method_labels)
    metric_labels = list(range(n_metrics)) if metric_labels is None else list(metric_labels)
    if len(method_labels) != n_methods or len(metric_labels) != n_metrics:
        raise InvalidParameterError(
            f"rank_order_table: {len(method_labels)} method labels and {len(metric_labels)} metric "
            f"labels for values of shape {v.shape}"
        )
    orders = [rank_order(v[:, j]) for j in range(n_metrics)]
    data = [[method_labels[orders[j][r]] for j in range(n_metrics)] for r in range(n_methods)]
    return Table(
        name=name,
        title=title,
        index=[f"Ranked {ordinal(r + 1)}" for r in range(n_methods)],
        columns=[str(m) for m in metric_labels],
        data=data,
        index_name="Rank order",
        note="Lower calibration error = better rank; ties keep the method order.",
    )


def metric_rank_correlations(values, method: str = "spearman") -> np.ndarray:
    """Rank correlation between every pair of metrics' orderings of the same methods.

    Parameters
    ----------
    values : array_like of shape (n_methods, n_metrics)
        Calibration error of each method under each metric.
    method : {"spearman", "kendall"}, default "spearman"

    Returns
    -------
    numpy.ndarray of shape (n_metrics, n_metrics)
        Symmetric; 1 on the diagonal for non-constant columns; NaN where an ordering is constant.

    Examples
    --------
    >>> metric_rank_correlations([[1, 3], [2, 2], [3, 1]]).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    v = _values_2d(values, "metric_rank_correlations")
    try:
        return _corr_matrix(v, method)
    except ValueError as exc:
        raise InvalidParameterError(f"metric_rank_correlations: {exc}") from None


def bin_sensitivity(values, method: str = "spearman") -> np.ndarray:
    """Mean rank correlation of each metric's ordering across every pair of bin counts.

    For one metric, the methods are ordered once per bin count; the rank correlation is computed
    for every unordered pair of bin counts (10 pairs for 10, 20, 30, 40, 50) and averaged. A
    value near 1 means the metric's verdict does not depend on the number of bins.

    Parameters
    ----------
    values : array_like of shape (n_methods, n_metrics, n_bins)
        Calibration error of each method, under each metric, at each bin count.
    method : {"spearman", "kendall"}, default "spearman"

    Returns
    -------
    numpy.ndarray of shape (n_metrics,)
        The mean over the bin-count pairs where the correlation is defined (pairs where one
        ordering is constant are left out); NaN when none is.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.array([[[1, 1]], [[2, 3]], [[3, 2]]], dtype=float)   # 3 methods, 1 metric, 2 bins
    >>> bin_sensitivity(v).tolist()
    [0.5]
    """
    v = as_floats(values, "values")
    if v.ndim != 3:
        raise InvalidParameterError(
            f"bin_sensitivity: values must be 3-D (n_methods, n_metrics, n_bins) (got shape {v.shape})"
        )
    if v.shape[2] < 2:
        raise InvalidParameterError(
            f"bin_sensitivity: need at least 2 bin counts to compare (got {v.shape[2]})"
        )
    out = np.full(v.shape[1], np.nan)
    iu = np.triu_indices(v.shape[2], k=1)  # every unordered pair of bin counts
    for j in range(v.shape[1]):
        try:
            r = _corr_matrix(v[:, j, :], method)[iu]
        except ValueError as exc:
            raise InvalidParameterError(f"bin_sensitivity: {exc}") from None
        r = r[~np.isnan(r)]
        if r.size:
            out[j] = r.mean()
    return out


def bin_sensitivity_table(
    values,
    space: Sequence[Any],
    *,
    name: str = "bin_sensitivity",
    title: str = "Bin sensitivity: mean rank correlation across bin counts, by property",
) -> Table:
    """The paper's rank-correlation table: bin sensitivity averaged over each property value.

    Parameters
    ----------
    values : array_like of shape (n_methods, n_metrics, n_bins)
        As for :func:`bin_sensitivity`.
    space : sequence of MetricSpec, length n_metrics
        The metrics, for grouping by property.

    Returns
    -------
    Table
        Rows: property values (Even / Adaptive binning scheme, Max probs True / False, ...).
        Columns: ``Spearman`` (standard formula) and ``Kendall`` (tau-b).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.space import metric_space
    >>> v = np.random.default_rng(0).random((8, 32, 5))
    >>> bin_sensitivity_table(v, metric_space()).shape
    (10, 2)
    """
    rho = bin_sensitivity(values, "spearman")
    tau = bin_sensitivity(values, "kendall")
    return group_by_property(
        {"Spearman": rho, "Kendall": tau},
        space,
        name=name,
        title=title,
        note=(
            "Mean over the metrics with the property of the mean rank correlation between the "
            "method orderings at every pair of bin counts (1 = the ordering never changes). "
            "Spearman uses the standard formula with squared rank differences (the paper prints "
            "|d|)."
        ),
    )
