"""``num_bins="auto"``: a bin count from the number of predictions, and a warning when too few.

Rule: ``B = clip(round(n ** (1/3)), 1, 1000)`` with ``n`` the number of rows per score group:
N for pooled metrics, N / K for class-conditional top-label metrics (rows are shared among the
K predicted classes). The cube root is the rate that balances the bias of a binned estimate
(which shrinks like 1/B) against its variance (which grows like B/n) for a smooth calibration
curve, the same trade-off as a histogram's (Scott 1979; Freedman & Diaconis 1981); it puts
``n^(2/3)`` predictions in a typical bin (100 at n = 1000, 2154 at n = 100000).

Warning (:class:`calibkit.errors.FewSamplesWarning`): when the predictions per non-empty bin
average fewer than ``MIN_PER_BIN = 30``. One bin's gap has a standard error of
``sqrt(acc(1-acc)/n_b)``, up to 0.09 at 30 predictions: more than most reported errors, so the
number is then mostly noise (see :func:`calibkit.confidence_interval` and
:func:`calibkit.calibration_test`).
"""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np

from ..errors import FewSamplesWarning

__all__ = ["auto_num_bins", "resolve_num_bins", "warn_if_few", "MIN_PER_BIN"]

#: Fewer kept predictions than this per non-empty bin (on average) triggers FewSamplesWarning.
MIN_PER_BIN = 30
#: Largest bin count the "auto" rule picks.
MAX_AUTO_BINS = 1000


def auto_num_bins(n_rows: int, num_classes: int = 1, *, max_prob: bool = True,
                  class_conditional: bool = False) -> int:
    """The ``"auto"`` bin count for ``n_rows`` predictions (see the module doc).

    Examples
    --------
    >>> auto_num_bins(1000), auto_num_bins(10000), auto_num_bins(10000, 10, class_conditional=True)
    (10, 22, 10)
    """
    n = n_rows / num_classes if (class_conditional and max_prob) else n_rows
    return int(np.clip(round(max(n, 1.0) ** (1.0 / 3.0)), 1, MAX_AUTO_BINS))


def _shape(probs) -> tuple[int, int]:
    shape = np.shape(probs)
    if len(shape) == 1:
        return shape[0], 2
    if len(shape) == 2:
        return shape[0], max(shape[1], 2)
    return (shape[0] if shape else 0), 1


def resolve_num_bins(num_bins, labels, probs, *, max_prob: bool = True,
                     class_conditional: bool = False):
    """``num_bins`` unchanged unless it is the string ``"auto"``, which gives the rule's count."""
    if isinstance(num_bins, str) and num_bins == "auto":
        n, k = _shape(probs)
        return auto_num_bins(n, k, max_prob=max_prob, class_conditional=class_conditional)
    return num_bins


def resolve_auto(num_bins, labels, probs, pairs=None, *, max_prob: bool = True,
                 class_conditional: bool = False) -> int:
    """``num_bins`` when it is ``"auto"``: the rule's count for the rows of ``labels``/``probs``
    or of resolved top-label ``pairs``; any other string is refused."""
    if num_bins != "auto":
        from .._params import as_num_bins

        return as_num_bins(num_bins)  # raises the one bin-count message
    if pairs is not None:
        return auto_num_bins(pairs.n, pairs.k, max_prob=True,
                             class_conditional=bool(class_conditional))
    return resolve_num_bins(num_bins, labels, probs, max_prob=bool(max_prob),
                            class_conditional=bool(class_conditional))


def _caller_level() -> int:
    """``stacklevel`` of the first frame outside calibkit (the user's call)."""
    f: types.FrameType | None = sys._getframe(2)  # the caller of warn_if_few: stacklevel 2
    level = 2
    while f is not None and f.f_globals.get("__name__", "").startswith("calibkit"):
        f = f.f_back
        level += 1
    return level


def warn_if_few(counts, *, stacklevel: int | None = None) -> None:
    """Warn (FewSamplesWarning) when non-empty bins average fewer than MIN_PER_BIN predictions.

    The warning points at the user's line (the first caller outside calibkit) unless
    ``stacklevel`` is given.
    """
    c = np.asarray(counts, dtype=np.float64)
    filled = c[c > 0]
    if filled.size and filled.mean() < MIN_PER_BIN:
        if stacklevel is None:
            stacklevel = _caller_level()
        warnings.warn(
            f"the bins hold {filled.mean():.1f} predictions on average (fewer than "
            f"{MIN_PER_BIN}): the calibration error is then mostly sampling noise; use fewer "
            f"bins, more data, or calibkit.confidence_interval to see the uncertainty",
            FewSamplesWarning, stacklevel=stacklevel,
        )
