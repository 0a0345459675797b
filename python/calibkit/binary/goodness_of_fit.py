"""Tests of "P(y = pos_label) is calibrated" that the binary communities report, each a reading
of the same pairs ``(p, y)`` (``y = 1`` where ``y_true == pos_label``):

* **Spiegelhalter's z** (1986): ``z = sum (y - p)(1 - 2p) / sqrt(sum (1 - 2p)^2 p (1 - p))``,
  standard normal under calibration.
* **Cumulative differences** (Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu, JMLR 2022): with the
  samples sorted by ``p``, ``C_k = (1/n) sum_{i <= k} (y_i - p_i)`` and
  ``sigma = sqrt(sum p (1 - p)) / n``; Kolmogorov-Smirnov ``max_k |C_k| / sigma`` and Kuiper
  ``(max_k C_k - min_k C_k) / sigma``, compared with the distributions of the maximum of
  ``|B|`` and the range of a standard Brownian motion ``B`` on [0, 1]. ``k`` runs over
  ``1..n`` at the last sample of each block of tied scores (so the order inside a tie does not
  matter; MAPIE 1.6 breaks ties by a random jitter of 1e-8 instead). The KS statistic is
  :func:`calibkit.ksce` of the pairs divided by ``sigma``.
* **Hosmer-Lemeshow** (1980): ``H = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / n_g))`` over the
  equal-mass groups of ``p`` (the engine's adaptive bins, ``num_bins=10``: the deciles of risk;
  ``O_g`` the positives, ``E_g`` the sum of ``p``, ``n_g`` the size of group g), chi-squared
  with ``num_bins - 2`` degrees of freedom.

The values are MAPIE 1.6's (``mapie.metrics.calibration``) for Spiegelhalter, KS and Kuiper,
except that Spiegelhalter's p-value is two-sided by default (``alternative="greater"`` gives
MAPIE's one-sided ``1 - Phi(z)``) and the Brownian-motion series are summed to convergence.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from .._params import as_choice, as_num_bins
from ..binfree.ks import ksce as _ksce
from ..binned.bins import calibration_bins as _calibration_bins
from ..errors import NumericalError
from ._labels import Binary, binary_inputs
from .results import BinaryTestResult

__all__ = ["spiegelhalter_test", "ks_test", "kuiper_test", "hosmer_lemeshow",
           "cumulative_differences", "brownian_max_sf", "brownian_range_sf"]


def _pairs(y_true, y_prob, pos_label) -> tuple[Binary, np.ndarray, np.ndarray]:
    b = binary_inputs(y_true, y_prob, pos_label)
    return b, b.prob.astype(np.float64), b.positive.astype(np.float64)


def spiegelhalter_test(y_true, y_prob, *, pos_label=None,
                       alternative: str = "two-sided") -> BinaryTestResult:
    """Spiegelhalter's z-test of calibration.

    Parameters
    ----------
    y_true, y_prob, pos_label
        As :func:`calibkit.binary.ece`.
    alternative : {"two-sided", "greater"}, default "two-sided"
        ``"two-sided"``: ``2 (1 - Phi(|z|))`` (Spiegelhalter 1986, R's ``rms::val.prob``);
        ``"greater"``: ``1 - Phi(z)``, MAPIE's ``spiegelhalter_p_value``.

    Returns
    -------
    BinaryTestResult
        ``statistic`` z and ``pvalue``.

    Examples
    --------
    >>> import calibkit
    >>> r = calibkit.binary.spiegelhalter_test([0, 1, 1, 0, 1], [0.2, 0.7, 0.9, 0.4, 0.6])
    >>> round(r.statistic, 4), round(r.pvalue, 4)
    (-1.1711, 0.2416)
    """
    alternative = as_choice(alternative, "alternative", ("two-sided", "greater"))
    _, p, y = _pairs(y_true, y_prob, pos_label)
    var = np.sum((1 - 2 * p) ** 2 * p * (1 - p))
    if not var > 0:
        raise NumericalError(
            "spiegelhalter_test: every y_prob is 0, 0.5 or 1, so z has no variance; the test "
            "is not defined for these predictions")
    z = float(np.sum((y - p) * (1 - 2 * p)) / np.sqrt(var))
    pvalue = 2 * stats.norm.sf(abs(z)) if alternative == "two-sided" else stats.norm.sf(z)
    return BinaryTestResult(z, float(pvalue), "spiegelhalter")


def _sigma(p: np.ndarray, what: str) -> float:
    sigma = math.sqrt(float(np.sum(p * (1 - p)))) / p.shape[0]
    if not sigma > 0:
        raise NumericalError(
            f"{what}: every y_prob is exactly 0 or 1, so the cumulative differences have no "
            f"spread to scale by; the test is not defined for these predictions")
    return sigma


def cumulative_differences(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``C_k = (1/n) sum_{i <= k} (y_i - p_i)`` over the samples sorted by ``p`` (stable), at
    the last sample of each block of tied scores (see the module docstring)."""
    order = np.argsort(p, kind="stable")
    s = p[order]
    c = np.cumsum(y[order] - s) / p.shape[0]
    last = np.append(s[1:] != s[:-1], True)
    return c[last]


def _series_terms(x: float) -> np.ndarray:
    """``k + 1/2`` for k = 0..K: enough terms that the first one left out is below 1e-19."""
    return np.arange(int(math.ceil(3 * x)) + 12) + 0.5


def brownian_max_sf(x: float) -> float:
    """``P(max_{t in [0,1]} |B_t| > x)`` for a standard Brownian motion (the KS p-value).

    ``1 - (2/pi) sum_k (-1)^k / (k + 1/2) exp(-(k + 1/2)^2 pi^2 / (2 x^2))``.
    """
    if not x > 0:
        return 1.0
    k = _series_terms(x)
    sign = np.where(np.arange(k.size) % 2 == 0, 1.0, -1.0)
    cdf = 2 / math.pi * float(np.sum(sign / k * np.exp(-(k ** 2) * math.pi ** 2 / (2 * x * x))))
    return float(min(1.0, max(0.0, 1.0 - cdf)))


def brownian_range_sf(x: float) -> float:
    """``P(max B - min B > x)`` over ``t in [0, 1]`` for a standard Brownian motion (the Kuiper
    p-value): ``1 - sum_k (8/x^2 + 2/((k + 1/2)^2 pi^2)) exp(-2 (k + 1/2)^2 pi^2 / x^2)``."""
    if not x > 0:
        return 1.0
    k = _series_terms(x)
    terms = (8 / (x * x) + 2 / (k ** 2 * math.pi ** 2)) * np.exp(-2 * k ** 2 * math.pi ** 2 / (x * x))
    return float(min(1.0, max(0.0, 1.0 - float(np.sum(terms)))))


def ks_test(y_true, y_prob, *, pos_label=None) -> BinaryTestResult:
    """Kolmogorov-Smirnov test of calibration by cumulative differences (Arrieta-Ibarra et al.).

    ``statistic = max_k |C_k| / sigma``, ``pvalue = P(max |B| > statistic)`` (see the module
    docstring); the statistic is ``calibkit.ksce`` of the pairs over ``sigma``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000); y = rng.uniform(size=1000) < p
    >>> calibkit.binary.ks_test(y, p).pvalue > 0.05
    True
    >>> calibkit.binary.ks_test(y, p ** 3).pvalue < 1e-6
    True
    """
    b, p, _ = _pairs(y_true, y_prob, pos_label)
    x = _ksce(**b.pairs) / _sigma(p, "ks_test")
    return BinaryTestResult(float(x), brownian_max_sf(x), "kolmogorov-smirnov")


def kuiper_test(y_true, y_prob, *, pos_label=None) -> BinaryTestResult:
    """Kuiper test of calibration by cumulative differences (Arrieta-Ibarra et al.).

    ``statistic = (max_k C_k - min_k C_k) / sigma``, ``pvalue = P(range of B > statistic)``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000); y = rng.uniform(size=1000) < p
    >>> calibkit.binary.kuiper_test(y, p).pvalue > 0.05
    True
    """
    _, p, y = _pairs(y_true, y_prob, pos_label)
    c = cumulative_differences(p, y)
    x = float(c.max() - c.min()) / _sigma(p, "kuiper_test")
    return BinaryTestResult(x, brownian_range_sf(x), "kuiper")


def hosmer_lemeshow(y_true, y_prob, *, pos_label=None, num_bins: int = 10,
                    sample_weight=None) -> BinaryTestResult:
    """Hosmer-Lemeshow goodness-of-fit test on equal-mass groups of ``y_prob``.

    Parameters
    ----------
    y_true, y_prob, pos_label, sample_weight
        As :func:`calibkit.binary.ece` (weights: weighted group sums and weighted
        equal-mass groups).
    num_bins : int, default 10
        Groups g (the deciles of risk); the engine's adaptive bins (docs/spec.md). Empty groups
        (ties) add nothing; a group whose ``E_g (1 - E_g / n_g)`` is 0 adds 0 when
        ``O_g = E_g`` and makes the statistic infinite otherwise.

    Returns
    -------
    BinaryTestResult
        ``statistic`` H, ``pvalue`` from chi-squared with ``df = num_bins - 2``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000); y = rng.uniform(size=1000) < p
    >>> r = calibkit.binary.hosmer_lemeshow(y, p)
    >>> r.df, r.pvalue > 0.05
    (8, True)
    """
    num_bins = as_num_bins(num_bins)
    if num_bins < 3:
        from ..errors import InvalidParameterError

        raise InvalidParameterError(
            f"num_bins must be at least 3 for Hosmer-Lemeshow (num_bins - 2 degrees of "
            f"freedom), got {num_bins}; the usual choice is 10")
    b = binary_inputs(y_true, y_prob, pos_label)
    t = _calibration_bins(**b.pairs, binning="adaptive", num_bins=num_bins,
                          sample_weight=sample_weight)
    n, e, o = (np.asarray(a, dtype=np.float64)[0] for a in (t.counts, t.sum_score, t.sum_outcome))
    keep = n > 0
    n, e, o = n[keep], e[keep], o[keep]
    var = e * (1 - e / n)
    gap = (o - e) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(var > 0, gap / np.where(var > 0, var, 1), np.where(gap > 0, np.inf, 0.0))
    h = float(np.sum(terms))
    df = num_bins - 2
    return BinaryTestResult(h, float(stats.chi2.sf(h, df)), "hosmer-lemeshow", df)
