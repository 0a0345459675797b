"""The CORP score decomposition (Dimitriadis, Gneiting & Jordan, "Stable reliability diagrams
for probabilistic classifiers", PNAS 2021).

For forecasts ``x`` of a binary outcome ``y`` (weights ``w``), with ``S`` a proper score:

* ``r`` = the isotonic (non-decreasing) regression of ``y`` on ``x`` by pool-adjacent-violators
  (Rust, :func:`calibkit._native.isotonic_fit`), rows with equal ``x`` pooled, clipped to
  [0, 1]: the CORP recalibrated forecast;
* ``m`` = the weighted mean outcome (the climatological forecast);
* ``score = mean S(x, y)``, ``MCB = score - mean S(r, y)``, ``DSC = mean S(m, y) - mean S(r, y)``,
  ``UNC = mean S(m, y)``, so that ``score = MCB - DSC + UNC`` (to 1e-12).

Scores: Brier ``S(p, y) = (p - y)^2``; logarithmic ``S(p, y) = -log(max(p_y, 1e-15))`` with
``p_y = p`` if ``y = 1`` else ``1 - p``. The floor 1e-15 only acts on a (near-)certain wrong
forecast, whose log score is otherwise infinite (see ``docs/binning-free.md``).
Forecasts are clipped to [0, 1] first (probabilities may leave it by up to 1e-4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native
from .._params import as_choice
from .common import groups

__all__ = ["decompose", "Decomposition", "SCORINGS", "LOG_FLOOR"]

SCORINGS = ("brier", "log")
#: Smallest probability the log score is evaluated at (a wrong forecast of certainty scores
#: -log(1e-15) = 34.5 instead of infinity).
LOG_FLOOR = 1e-15


@dataclass(frozen=True)
class Decomposition:
    """``score = miscalibration - discrimination + uncertainty`` of one forecast set."""

    miscalibration: float
    discrimination: float
    uncertainty: float
    score: float
    scoring: str

    def as_dict(self) -> dict:
        return {
            "miscalibration": self.miscalibration,
            "discrimination": self.discrimination,
            "uncertainty": self.uncertainty,
            "score": self.score,
        }


def _score(p: np.ndarray, y: np.ndarray, scoring: str) -> np.ndarray:
    if scoring == "brier":
        return (p - y) ** 2
    py = np.where(y == 1, p, 1 - p)
    return -np.log(np.maximum(py, LOG_FLOOR))


def _mean(v: np.ndarray, w) -> float:
    return float(np.mean(v)) if w is None else float(np.dot(w, v) / np.sum(w))


def recalibrate(x: np.ndarray, y: np.ndarray, w=None) -> np.ndarray:
    """CORP recalibrated forecasts: isotonic regression of y on x, ties pooled, in [0, 1]."""
    return np.clip(_native.isotonic_fit(x, y, w), 0.0, 1.0)


def _one(x, y, w, scoring):
    x = np.clip(x, 0.0, 1.0)
    r = recalibrate(x, y, w)
    m = np.full_like(x, _mean(y, w))
    s_x = _mean(_score(x, y, scoring), w)
    s_r = _mean(_score(r, y, scoring), w)
    s_m = _mean(_score(m, y, scoring), w)
    return np.array([s_x - s_r, s_m - s_r, s_m, s_x])


def decompose(
    labels=None,
    probs=None,
    *,
    scoring: str = "brier",
    max_prob: bool = True,
    sample_weight=None,
    confidence=None,
    correct=None,
) -> Decomposition:
    """CORP decomposition of the Brier or log score (Dimitriadis, Gneiting & Jordan, 2021).

    ``score = miscalibration - discrimination + uncertainty``, where miscalibration (MCB) is the
    score lost to the isotonic recalibration of the forecasts, discrimination (DSC) the score
    the recalibrated forecasts gain over the base rate, and uncertainty (UNC) the score of the
    base rate. Equals model-diagnostics' ``decompose`` wherever that returns numbers.

    Parameters
    ----------
    labels : array_like of shape (N,), optional
        True class indices in ``[0, K)``.
    probs : array_like of shape (N, K), (N, 1) or (N,), optional
        Predicted probabilities, validated as for :func:`calibkit.gce`.
    scoring : {"brier", "log"}, default "brier"
        The proper score decomposed. "log" evaluates ``-log(max(p_y, 1e-15))``.
    max_prob : bool, default True
        True: the top-label confidence as forecast of "prediction correct". False: one-vs-rest,
        column k as forecast of ``labels == k``, each decomposed and the four parts summed over
        the K classes (for "brier" the score is then the multiclass Brier score).
    sample_weight : array_like of shape (N,), optional
        Non-negative finite weights (weighted means, weighted PAV); integer weights act as
        repeated rows.
    confidence, correct : array_like of shape (N,), optional
        Top-label pairs given directly instead of ``labels, probs``.

    Returns
    -------
    Decomposition
        Fields ``miscalibration``, ``discrimination``, ``uncertainty``, ``score``, ``scoring``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    >>> labels = np.array([0, 1, 1, 0])
    >>> d = calibkit.decompose(labels, probs)
    >>> round(d.miscalibration, 4), round(d.discrimination, 4), round(d.uncertainty, 4)
    (0.0583, 0.0208, 0.1875)
    >>> round(d.score, 4) == round(d.miscalibration - d.discrimination + d.uncertainty, 4)
    True
    """
    scoring = as_choice(scoring, "scoring", SCORINGS)
    gs, w = groups(labels, probs, max_prob=max_prob, confidence=confidence, correct=correct,
                   sample_weight=sample_weight, what="decompose")
    total = sum(_one(x, y, w, scoring) for x, y in gs)
    mcb, dsc, unc, score = (float(v) for v in total)
    return Decomposition(mcb, dsc, unc, score, scoring)
