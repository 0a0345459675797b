"""The calibration of P(y = pos_label): binary metrics with scikit-learn's argument names.

Each function reads ``y_true``, ``y_prob`` and ``pos_label`` once
(:func:`calibkit.binary._labels.binary_inputs`) and hands the engine the pairs
``confidence = y_prob``, ``correct = (y_true == pos_label)``: the score is the probability of
the positive class itself (not the top label of ``[1 - p, p]``, which is what a 1-D ``probs``
means in :func:`calibkit.ece`), and exact 0.0 and 1.0 are kept.

Even bins are the textbook ones: B bins of width 1/B, left-closed, **the last bin closed**
(``[1 - 1/B, 1]``), as torchmetrics' ``binary_calibration_error`` and scikit-learn's
``calibration_curve`` bin: the engine's table (where a score of exactly 1.0 has a bin of its
own, docs/spec.md) with that extra bin added into bin B - 1 (:func:`calibration_bins`), then
reduced by the one reduction (:meth:`calibkit.CalibrationBins.error`). Adaptive bins are the
engine's (no extra bin there).
"""

from __future__ import annotations

import numpy as np

from .._typing import NumBins
from ..binfree.decompose import Decomposition
from ..binfree.decompose import decompose as _decompose
from ..binfree.ks import ksce as _ksce
from ..binfree.smooth import smece as _smece
from ..binned.bins import CalibrationBins
from ..binned.bins import calibration_bins as _calibration_bins
from ._labels import binary_inputs

__all__ = ["calibration_bins", "ece", "mce", "rmsce", "adaptive_ece", "smece", "ksce",
           "decompose", "closed_last_bin", "pair_error", "BINNED"]


def closed_last_bin(table: CalibrationBins) -> CalibrationBins:
    """An even table with the engine's extra bin (scores of exactly 1.0) added into the last
    bin, which becomes ``[1 - 1/B, 1]``; adaptive tables are returned unchanged.

    Counts, score sums and outcome sums are added (1.0 + a sum of scores, exact for counts and
    outcomes), so ``closed_last_bin(t).error()`` is the textbook ECE of the same scores.
    """
    if table.binning != "even":
        return table

    def merged(a):
        a = np.asarray(a)
        out = a[:, :-1].copy()
        out[:, -1] = out[:, -1] + a[:, -1]
        return out

    return CalibrationBins(merged(table.counts), merged(table.sum_score),
                           merged(table.sum_outcome), np.asarray(table.edges)[:, :-1].copy(),
                           table.num_classes, table.binning, table.class_conditional,
                           table.max_prob, table.threshold)


def calibration_bins(y_true, y_prob, *, pos_label=None, binning: str = "even",
                     num_bins: NumBins = 15, sample_weight=None) -> CalibrationBins:
    """The binned table of P(y = pos_label): one group, ``num_bins`` bins.

    Parameters
    ----------
    y_true : array_like of shape (N,)
        Labels: 0/1, booleans, -1/1, or two class names (then ``pos_label`` is required).
        A pandas Series or one-column DataFrame is accepted.
    y_prob : array_like of shape (N,) or (N, 1)
        P(y = pos_label), e.g. ``predict_proba(X)[:, 1]``, float, within [0, 1]; exact 0.0 and
        1.0 are kept.
    pos_label : int, bool or str, optional
        The positive class; default 1 for 0/1, -1/1 and boolean labels.
    binning : {"even", "adaptive"}, default "even"
        Even: ``num_bins`` equal-width bins, left-closed, the last bin closed. Adaptive:
        equal-mass bins (docs/spec.md).
    num_bins : int or "auto", default 15
    sample_weight : array_like of shape (N,), optional
        Non-negative weights (counts become total weights).

    Returns
    -------
    calibkit.CalibrationBins
        Shape (1, num_bins): ``counts``, ``mean_confidence`` (mean P(y = 1)), ``accuracy``
        (observed frequency of the positive class), ``edges``.

    Examples
    --------
    >>> import calibkit
    >>> t = calibkit.binary.calibration_bins([0, 1, 1, 1], [0.0, 0.6, 1.0, 1.0], num_bins=2)
    >>> t.counts.tolist(), t.accuracy.tolist()
    ([[1, 3]], [[0.0, 1.0]])
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    t = _calibration_bins(**b.pairs, binning=binning, num_bins=num_bins,
                          sample_weight=sample_weight)
    return closed_last_bin(t)


#: The binned binary metrics: name -> (binning, norm).
BINNED = {"ece": ("even", "l1"), "mce": ("even", "max"), "rmsce": ("adaptive", "l2"),
          "adaptive_ece": ("adaptive", "l1")}


def pair_error(confidence, correct, name: str, num_bins, sample_weight=None) -> float:
    """The binned metric ``name`` (a key of :data:`BINNED`) of checked pairs: the engine's table,
    its extra bin closed into the last (:func:`closed_last_bin`), the one reduction."""
    binning, norm = BINNED[name]
    t = _calibration_bins(confidence=confidence, correct=correct, binning=binning,
                          num_bins=num_bins, sample_weight=sample_weight)
    return closed_last_bin(t).error(norm)


def _error(y_true, y_prob, pos_label, name, num_bins, sample_weight) -> float:
    b = binary_inputs(y_true, y_prob, pos_label)
    return pair_error(b.prob, b.positive, name, num_bins, sample_weight)


def ece(y_true, y_prob, *, pos_label=None, num_bins: NumBins = 15, sample_weight=None) -> float:
    """Expected calibration error of P(y = pos_label): even bins, l1.

    ``sum_b (n_b / N) |mean(y == pos_label in b) - mean(y_prob in b)|`` over ``num_bins``
    equal-width bins, left-closed with the last bin closed (torchmetrics'
    ``binary_calibration_error(norm="l1")``). Arguments as :func:`calibration_bins`; usable as
    ``sklearn.metrics.make_scorer(calibkit.binary.ece, response_method="predict_proba",
    greater_is_better=False)``.

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.binary.ece([0, 1, 1, 0], [0.0, 1.0, 0.8, 0.3], num_bins=5), 6)
    0.125
    >>> round(calibkit.binary.ece(["ham", "spam"], [0.2, 0.9], pos_label="spam", num_bins=5), 6)
    0.15
    """
    return _error(y_true, y_prob, pos_label, "ece", num_bins, sample_weight)


def mce(y_true, y_prob, *, pos_label=None, num_bins: NumBins = 15, sample_weight=None) -> float:
    """Maximum calibration error of P(y = pos_label): the largest bin gap (even bins, last
    closed; torchmetrics' ``norm="max"``). Arguments as :func:`calibration_bins`.

    Examples
    --------
    >>> import calibkit
    >>> calibkit.binary.mce([0, 1, 1, 0], [0.0, 1.0, 0.75, 0.375], num_bins=5)
    0.375
    """
    return _error(y_true, y_prob, pos_label, "mce", num_bins, sample_weight)


def rmsce(y_true, y_prob, *, pos_label=None, num_bins: NumBins = 15,
          sample_weight=None) -> float:
    """Root-mean-square calibration error of P(y = pos_label): equal-mass bins, l2 with the
    weight outside the square (:func:`calibkit.rmsce`'s definition on the positive class).

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.binary.rmsce([0, 1, 1, 0], [0.0, 1.0, 0.8, 0.3], num_bins=2), 6)
    0.127475
    """
    return _error(y_true, y_prob, pos_label, "rmsce", num_bins, sample_weight)


def adaptive_ece(y_true, y_prob, *, pos_label=None, num_bins: NumBins = 15,
                 sample_weight=None) -> float:
    """Adaptive (equal-mass) ECE of P(y = pos_label): adaptive bins, l1.

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.binary.adaptive_ece([0, 1, 1, 0], [0.0, 1.0, 0.8, 0.3], num_bins=2), 6)
    0.125
    """
    return _error(y_true, y_prob, pos_label, "adaptive_ece", num_bins, sample_weight)


def smece(y_true, y_prob, *, pos_label=None, bandwidth: float | None = None,
          sample_weight=None) -> float:
    """Smooth ECE (Blasiok & Nakkiran) of P(y = pos_label): :func:`calibkit.smece` of the pairs
    (``y_prob``, ``y_true == pos_label``).

    Examples
    --------
    >>> import calibkit
    >>> 0 <= calibkit.binary.smece([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]) <= 1
    True
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    return float(_smece(**b.pairs, bandwidth=bandwidth, sample_weight=sample_weight))


def ksce(y_true, y_prob, *, pos_label=None, sample_weight=None) -> float:
    """Kolmogorov-Smirnov calibration error (Gupta et al.) of P(y = pos_label):
    ``max_j |sum_{i <= j} (p_i - y_i)| / N`` over the scores sorted (:func:`calibkit.ksce`).

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.binary.ksce([0, 1, 1, 0], [0.0, 1.0, 0.8, 0.3]), 6)
    0.075
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    return _ksce(**b.pairs, sample_weight=sample_weight)


def decompose(y_true, y_prob, *, pos_label=None, scoring: str = "brier",
              sample_weight=None) -> Decomposition:
    """CORP decomposition (Dimitriadis, Gneiting & Jordan 2021) of the score of P(y = 1):
    ``score = miscalibration - discrimination + uncertainty``, by isotonic regression of the
    outcome on ``y_prob`` (model-diagnostics' ``decompose`` on the same vector).

    Examples
    --------
    >>> import calibkit
    >>> d = calibkit.binary.decompose([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3])
    >>> round(d.score, 4), round(d.miscalibration, 4)
    (0.0375, 0.0375)
    """
    b = binary_inputs(y_true, y_prob, pos_label)
    return _decompose(**b.pairs, scoring=scoring, sample_weight=sample_weight)
