"""Per-group, per-bin tables: what reliability diagrams and per-class diagnostics are drawn from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _native
from ._validate import check_gce_params, validate_inputs
from .errors import InvalidParameterError, ShapeMismatchError

__all__ = ["CalibrationBins", "calibration_bins", "reduce_bins"]


@dataclass(frozen=True, eq=False)
class CalibrationBins:
    """Sufficient statistics of one grouping and binning: G groups x nb bins.

    G is K when class-conditional (group k = rows predicted as k for top-label metrics, or
    column k), else 1. nb is ``num_bins + 1`` for even binning (the last bin holds scores
    equal to 1.0, see SPEC) and ``num_bins`` for adaptive binning.

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
        Adaptive: ``threshold, e_1, ..., e_{B-1}, 1.0`` (NaN edges for an empty group); a
        score s is in bin j when ``edges[j] <= s < edges[j+1]`` (left-closed).
    num_classes : int
        K.
    binning : str
    class_conditional : bool
    max_prob : bool
    threshold : float
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

    @property
    def group_sizes(self) -> np.ndarray:
        """Kept scores per group, shape (G,)."""
        return self.counts.sum(axis=1)

    def _mean(self, s: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.counts > 0, s / np.maximum(self.counts, 1), np.nan)

    @property
    def mean_confidence(self) -> np.ndarray:
        """Mean score per bin, NaN for empty bins, shape (G, nb)."""
        return self._mean(self.sum_score)

    @property
    def accuracy(self) -> np.ndarray:
        """Mean outcome per bin, NaN for empty bins, shape (G, nb)."""
        return self._mean(self.sum_outcome)

    @property
    def gap(self) -> np.ndarray:
        """``accuracy - mean_confidence`` per bin, NaN for empty bins, shape (G, nb)."""
        return self.accuracy - self.mean_confidence

    @property
    def weights(self) -> np.ndarray:
        """Each bin's share of its group (0 in empty groups), shape (G, nb)."""
        n = self.group_sizes[:, None]
        return np.where(n > 0, self.counts / np.maximum(n, 1), 0.0)

    def error(self, norm: str = "l1", *, debias: bool = False) -> float:
        """The GCE of this table under ``norm`` ("l1", "l2" or "max").

        ``debias=True`` (l2 only): Kumar et al.'s debiased estimate, see
        :mod:`calibkit.trust.debias`.
        """
        from .trust.debias import check_debias, debiased_l2

        if check_debias(debias, norm):
            return debiased_l2(self.counts, self.sum_score, self.sum_outcome,
                               self.class_conditional)
        return reduce_bins(self.counts, self.sum_score, self.sum_outcome, norm=norm,
                           class_conditional=self.class_conditional)

    def accuracy_interval(self, method: str = "clopper-pearson", confidence: float = 0.90):
        """Confidence interval of each bin's accuracy: ``(low, high)``, each shaped like accuracy.

        ``method``: "clopper-pearson" (exact; 0 and 1 at the ends), "wilson" (score interval,
        no continuity correction) or "jeffreys"; NaN for empty bins. Weighted bins use the
        bin's total weight as the effective count (see :mod:`calibkit.trust.bin_intervals`).

        Examples
        --------
        >>> import calibkit
        >>> t = calibkit.calibration_bins([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.6], num_bins=2)
        >>> t.counts.tolist(), t.sum_outcome.tolist()
        ([[0, 4, 0]], [[0.0, 3.0, 0.0]])
        >>> lo, hi = t.accuracy_interval(confidence=0.9)
        >>> round(float(lo[0, 1]), 4), round(float(hi[0, 1]), 4)
        (0.2486, 0.9873)
        """
        from .trust.bin_intervals import binomial_interval

        return binomial_interval(self.sum_outcome, self.counts, method=method,
                                 confidence=confidence)

    def overconfidence(self) -> float:
        """Over-confident mass ``sum_b w_b max(conf_b - acc_b, 0)`` (class mean if class-conditional).

        ``overconfidence() + underconfidence()`` is the l1 error; their difference is the
        signed error (:func:`calibkit.signed_ece`).
        """
        from .trust.signed import confidence_masses

        return confidence_masses(self.counts, self.sum_score, self.sum_outcome,
                                 self.class_conditional)[0]

    def underconfidence(self) -> float:
        """Under-confident mass ``sum_b w_b max(acc_b - conf_b, 0)`` (class mean if class-conditional)."""
        from .trust.signed import confidence_masses

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

    def to_pandas(self):
        """Long table: one row per (group, bin) with edges, count, confidence, accuracy, gap."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install pandas") from exc
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
                "gap": self.gap.ravel(),
            }
        )


def calibration_bins(
    labels,
    probs,
    *,
    binning: str = "even",
    max_prob: bool = True,
    class_conditional: bool = False,
    threshold: float = 0.0,
    num_bins: int = 15,
) -> CalibrationBins:
    """The per-group, per-bin table behind a metric and its reliability diagram.

    Same arguments and semantics as :func:`calibkit.gce` (without ``norm``);
    ``calibration_bins(...).error(norm)`` equals ``gce(..., norm=norm)``.

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
    n = c.sum(axis=1, keepdims=True)
    safe = np.maximum(c, 1.0)
    gap = np.where(c > 0, so / safe - ss / safe, 0.0)
    w = np.where(n > 0, c / np.maximum(n, 1.0), 0.0)
    if norm == "l1":
        per_group = (w * np.abs(gap)).sum(axis=1)
    elif norm == "l2":
        per_group = (w * gap * gap).sum(axis=1)
    else:
        per_group = np.abs(gap).max(axis=1) if gap.shape[1] else np.zeros(gap.shape[0])
    v = per_group.mean() if class_conditional else per_group[0]
    return float(np.sqrt(v) if norm == "l2" else v)
