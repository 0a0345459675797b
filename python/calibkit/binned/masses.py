"""Over- and under-confident mass of a table of bins (see :mod:`calibkit.trust.signed`).

A leaf: imports NumPy only, so :class:`calibkit.CalibrationBins` can use it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["confidence_masses"]


def confidence_masses(counts, sum_score, sum_outcome, class_conditional: bool) -> tuple[float, float]:
    """``(over, under)`` from per-(group, bin) statistics (see the module doc)."""
    c = np.asarray(counts, dtype=np.float64)
    safe = np.maximum(c, np.finfo(np.float64).tiny)
    d = np.where(c > 0, np.asarray(sum_score) / safe - np.asarray(sum_outcome) / safe, 0.0)
    n = c.sum(axis=1, keepdims=True)
    w = np.where(n > 0, c / np.where(n > 0, n, 1.0), 0.0)
    over = (w * np.maximum(d, 0.0)).sum(axis=1)
    under = (w * np.maximum(-d, 0.0)).sum(axis=1)
    if class_conditional:
        return float(over.mean()), float(under.mean())
    return float(over[0]), float(under[0])
