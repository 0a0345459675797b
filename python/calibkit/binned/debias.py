"""The debiased squared calibration error (Kumar, Liang & Ma 2019, "Verified uncertainty
calibration", Section 5).

The plug-in squared gap of a bin is biased upward: with ``n_b`` predictions,
``E[(acc_b - conf_b)^2] = (true gap)^2 + Var(acc_b)``, and ``Var(acc_b)`` is estimated
without bias by ``acc_b (1 - acc_b) / (n_b - 1)``. Per group:

    E^2 = sum_b w_b [ (acc_b - conf_b)^2 - acc_b (1 - acc_b) / (n_b - 1) ]

Rules (those of verified_calibration's ``unbiased_square_ce``):

* a bin with fewer than 2 predictions (``n_b < 2``, so no variance estimate) contributes 0, but
  still counts in the weights ``w_b = n_b / n`` of the other bins;
* a single bin's term may be negative (it is unbiased, not clipped); a negative *group* total is
  clipped to 0 before the class average and the square root (an error cannot be negative).

Only the l2 norm has this correction; l1 and max have no unbiased plug-in correction of this
form, and :func:`debiased_l2` is refused for them by the callers.

Weighted bins: ``n_b`` is the bin's total weight (exact for integer weights).
"""

from __future__ import annotations

import numpy as np

from .._params import as_flag
from ..errors import InvalidParameterError

__all__ = ["debiased_l2", "check_debias"]


def check_debias(debias, norm: str) -> bool:
    """``debias`` as a bool (:func:`calibkit._params.as_flag`); InvalidParameterError for
    non-l2 norms."""
    debias = as_flag(debias, "debias")
    if debias and norm != "l2":
        raise InvalidParameterError(
            f"debias=True is defined only for the l2 norm (Kumar et al. 2019 subtract the binomial "
            f"variance from each squared gap); got norm={norm!r}. Use norm='l2' (e.g. RMSCE), or "
            f"calibkit.confidence_interval for an l1 or max metric's uncertainty"
        )
    return bool(debias)


def debiased_l2(counts, sum_score, sum_outcome, class_conditional: bool) -> float:
    """The debiased l2 error from per-(group, bin) statistics (see the module doc).

    Examples
    --------
    >>> round(debiased_l2([[4, 4]], [[1.2, 2.8]], [[1, 3]], False), 6)
    0.0
    """
    c = np.asarray(counts, dtype=np.float64)
    ss = np.asarray(sum_score, dtype=np.float64)
    so = np.asarray(sum_outcome, dtype=np.float64)
    n = c.sum(axis=1, keepdims=True)
    big = c >= 2
    safe = np.where(big, c, 2.0)
    acc = so / safe
    term = np.where(big, (acc - ss / safe) ** 2 - acc * (1.0 - acc) / (safe - 1.0), 0.0)
    w = np.where(n > 0, c / np.where(n > 0, n, 1.0), 0.0)
    per_group = np.maximum((w * term).sum(axis=1), 0.0)
    v = per_group.mean() if class_conditional else per_group[0]
    return float(np.sqrt(v))
