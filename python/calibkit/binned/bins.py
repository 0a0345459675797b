"""Per-group, per-bin tables: what reliability diagrams and per-class diagnostics are drawn from."""

from __future__ import annotations

import numpy as np

from .. import _native, _toplabel
from .._budget import check_tables
from .._params import NORMS, RANGE_TOL, as_choice, as_flag, check_gce_params
from .._typing import NumBins
from .._validate import is_multilabel, validate_inputs
from ..errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from .table import CalibrationBins, reduce_table
from .units import ScoreUnits

__all__ = ["CalibrationBins", "calibration_bins", "reduce_bins"]

# The table is defined in the leaf module calibkit.binned.table (shared with calibkit.multilabel
# without an import cycle); this is its public home.
CalibrationBins.__module__ = __name__


def calibration_bins(
    labels=None,
    probs=None,
    *,
    confidence=None,
    correct=None,
    predicted=None,
    num_classes=None,
    binning: str = "even",
    max_prob: bool = True,
    class_conditional: bool = False,
    threshold: float = 0.0,
    num_bins: NumBins = 15,
    sample_weight=None,
) -> CalibrationBins:
    """The per-group, per-bin table behind a metric and its reliability diagram.

    Same arguments and semantics as :func:`calibkit.gce` (without ``norm``);
    ``calibration_bins(...).error(norm)`` equals ``gce(..., norm=norm)``. Top-label input
    (``confidence=``, ``correct=``, and ``predicted=``, ``num_classes=`` for class-conditional
    tables) gives the table of any matrix with those row maxima and predictions; K is then
    ``num_classes`` (1 when not given).
    With ``sample_weight`` the counts and sums are weighted (counts become float64 total
    weights); ``num_bins="auto"`` as for :func:`calibkit.gce`.

    Returns
    -------
    CalibrationBins

    Examples
    --------
    >>> import calibkit
    >>> t = calibkit.calibration_bins([0, 1, 1], [[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]], num_bins=2)
    >>> t.counts.tolist()
    [[0, 3, 0]]
    >>> round(t.error(), 6)
    0.3
    >>> calibkit.calibration_bins(confidence=[0.7, 0.6, 0.8], correct=[1, 1, 1], num_bins=2).counts.tolist()
    [[0, 3, 0]]
    """
    max_prob = as_flag(max_prob, "max_prob")
    class_conditional = as_flag(class_conditional, "class_conditional")
    pairs = _toplabel.resolve(labels, probs, confidence, correct, predicted, num_classes)
    auto = isinstance(num_bins, str)
    if auto:
        from .auto_bins import resolve_auto

        num_bins = resolve_auto(num_bins, labels, probs, pairs, max_prob=max_prob,
                                class_conditional=class_conditional)
    binning, _, threshold, num_bins = check_gce_params(binning, "l1", threshold, num_bins)
    if sample_weight is not None:
        from .weights import weighted_bins

        if pairs is not None:
            _toplabel.require_top_label(pairs, max_prob, class_conditional, "calibration_bins")
        t = weighted_bins(labels, probs, sample_weight, binning=binning, max_prob=max_prob,
                          class_conditional=class_conditional, threshold=threshold,
                          num_bins=num_bins, pairs=pairs)
    else:
        t = _unweighted(labels, probs, pairs, binning, max_prob, class_conditional, threshold,
                        num_bins)
    if auto:
        from .auto_bins import warn_if_few

        warn_if_few(t.counts)
    return t


def _unweighted(labels, probs, pairs, binning, max_prob, class_conditional, threshold,
                num_bins) -> CalibrationBins:
    """The table of :func:`calibration_bins` without weights (checked keywords)."""
    if pairs is not None:
        check_tables(pairs.k if class_conditional else 1, (num_bins,))
        counts, ss, so, edges, u = _toplabel.bin_stats(pairs, binning, max_prob,
                                                       class_conditional, threshold, num_bins,
                                                       units=True)
        return CalibrationBins(counts, ss, so, edges, pairs.k, binning, bool(class_conditional),
                               True, threshold, u)
    if is_multilabel(labels, probs):
        from .multilabel import multilabel_bins

        return multilabel_bins(labels, probs, binning=binning, max_prob=max_prob,
                               class_conditional=class_conditional, threshold=threshold,
                               num_bins=num_bins)
    y, p = validate_inputs(labels, probs)
    check_tables(p.shape[1] if class_conditional else 1, (num_bins,))
    counts, ss, so, edges, u = _native.bin_stats(
        y, p, binning, max_prob, class_conditional, threshold, num_bins, units=True
    )
    return CalibrationBins(counts, ss, so, edges, p.shape[1], binning, class_conditional,
                           max_prob, threshold, None if u is None else ScoreUnits(u))


def _as_table(x, name: str, negative: bool = False) -> np.ndarray:
    """A table of bin statistics as float64, refusing NaN, infinities and (unless ``negative``:
    score sums, checked against the counts by :func:`reduce_bins`) negative entries."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"{name} must hold real numbers: {exc}") from None
    bad = ~np.isfinite(a) | ((a < 0) & (not negative))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidParameterError(
            f"{name}[{', '.join(map(str, idx))}] is {float(a[idx])!r}: counts and sums of bin "
            "statistics must be finite and non-negative (are the tables from calibration_bins or "
            "an Accumulator?)"
        )
    return a


def reduce_bins(counts, sum_score, sum_outcome, *, norm: str = "l1",
                class_conditional: bool = False) -> float:
    """The metric from per-(group, bin) sufficient statistics.

    Parameters
    ----------
    counts, sum_score, sum_outcome : array_like of shape (G, nb)
        Count, score sum and outcome sum per bin (as in :class:`CalibrationBins`).
    norm : {"l1", "l2", "max"}, default "l1"
    class_conditional : bool, default False
        True: mean over all G groups (empty ones count 0). False: G must be 1.

    Returns
    -------
    float

    Raises
    ------
    calibkit.errors.InvalidParameterError
        A negative, NaN or infinite count or sum, or sums that no scores in [0, 1] with 0/1
        outcomes could give (a score or outcome sum above its count).
    calibkit.errors.ShapeMismatchError
        The three tables differ in shape, are not 2-D, or a pooled table has several groups.

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.reduce_bins([[2, 2]], [[0.6, 1.8]], [[0.0, 2.0]]), 6)
    0.2
    """
    norm = as_choice(norm, "norm", NORMS)
    class_conditional = as_flag(class_conditional, "class_conditional")
    c, ss, so = (_as_table(x, name, name == "sum_score")
                 for x, name in ((counts, "counts"), (sum_score, "sum_score"),
                                 (sum_outcome, "sum_outcome")))
    if c.ndim != 2 or c.shape != ss.shape or c.shape != so.shape:
        raise ShapeMismatchError(
            f"counts, sum_score and sum_outcome must share one 2-D shape (G, nb); got "
            f"{c.shape}, {ss.shape}, {so.shape}"
        )
    slack = 1e-9 * np.maximum(c, 1.0)  # float sums of scores up to 1 + RANGE_TOL
    under = ss < -(c * RANGE_TOL + slack)  # top-label pairs keep scores down to -RANGE_TOL
    if under.any():
        g, b = (int(i) for i in np.argwhere(under)[0])
        raise InvalidParameterError(
            f"sum_score[{g}, {b}] is {float(ss[g, b])!r}: a bin's sum of scores (each in [0, 1] "
            f"up to {RANGE_TOL:g}) cannot be below -{RANGE_TOL:g} x its count "
            f"{float(c[g, b])!r}")
    for name, s in (("sum_score", ss), ("sum_outcome", so)):
        over = s > c * (1.0 + RANGE_TOL) + slack
        if over.any():
            g, b = (int(i) for i in np.argwhere(over)[0])
            raise InvalidParameterError(
                f"{name}[{g}, {b}] is {float(s[g, b])!r} but counts[{g}, {b}] is "
                f"{float(c[g, b])!r}: a bin's "
                f"sum of scores or outcomes (each in [0, 1]) cannot exceed its count"
            )
    if not class_conditional and c.shape[0] != 1:
        raise ShapeMismatchError(
            f"a pooled (not class-conditional) table has one group, got {c.shape[0]}"
        )
    return reduce_table(c, ss, so, norm, class_conditional)
