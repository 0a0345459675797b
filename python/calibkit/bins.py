"""Per-group, per-bin tables: what reliability diagrams and per-class diagnostics are drawn from."""

from __future__ import annotations

import numpy as np

from . import _native
from ._binstats import CalibrationBins, reduce_table
from ._validate import check_gce_params, validate_inputs
from .errors import InvalidParameterError, ShapeMismatchError

__all__ = ["CalibrationBins", "calibration_bins", "reduce_bins"]

# The table is defined in the leaf module calibkit._binstats (shared with calibkit.multilabel
# without an import cycle); this is its public home.
CalibrationBins.__module__ = __name__


def calibration_bins(
    labels,
    probs,
    *,
    binning: str = "even",
    max_prob: bool = True,
    class_conditional: bool = False,
    threshold: float = 0.0,
    num_bins: int = 15,
    sample_weight=None,
) -> CalibrationBins:
    """The per-group, per-bin table behind a metric and its reliability diagram.

    Same arguments and semantics as :func:`calibkit.gce` (without ``norm``);
    ``calibration_bins(...).error(norm)`` equals ``gce(..., norm=norm)``. With
    ``sample_weight`` the counts and sums are weighted (counts become float64 total weights);
    ``num_bins="auto"`` as for :func:`calibkit.gce`.

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
    """
    if sample_weight is not None or isinstance(num_bins, str):
        from .trust.options import bins_with_options

        return bins_with_options(labels, probs, binning=binning, max_prob=max_prob,
                                 class_conditional=class_conditional, threshold=threshold,
                                 num_bins=num_bins, sample_weight=sample_weight)
    binning, _, threshold, num_bins = check_gce_params(binning, "l1", threshold, num_bins)
    if np.ndim(labels) == 2:
        from .multilabel import multilabel_bins

        return multilabel_bins(labels, probs, binning=binning, max_prob=max_prob,
                               class_conditional=class_conditional, threshold=threshold,
                               num_bins=num_bins)
    y, p = validate_inputs(labels, probs)
    counts, ss, so, edges = _native.bin_stats(
        y, p, binning, bool(max_prob), bool(class_conditional), threshold, num_bins
    )
    return CalibrationBins(counts, ss, so, edges, p.shape[1], binning, bool(class_conditional),
                           bool(max_prob), threshold)


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
    """
    if norm not in ("l1", "l2", "max"):
        raise InvalidParameterError(f"norm must be one of ('l1', 'l2', 'max'), got {norm!r}")
    c = np.asarray(counts, dtype=np.float64)
    ss = np.asarray(sum_score, dtype=np.float64)
    so = np.asarray(sum_outcome, dtype=np.float64)
    if c.ndim != 2 or c.shape != ss.shape or c.shape != so.shape:
        raise ShapeMismatchError(
            f"counts, sum_score and sum_outcome must share one 2-D shape (G, nb); got "
            f"{c.shape}, {ss.shape}, {so.shape}"
        )
    if not class_conditional and c.shape[0] != 1:
        raise ShapeMismatchError(
            f"a pooled (not class-conditional) table has one group, got {c.shape[0]}"
        )
    return reduce_table(c, ss, so, norm, class_conditional)
