"""All binning-free estimators of one set of predictions at once (the companion of
:func:`calibkit.evaluate`, which covers the binned metrics)."""

from __future__ import annotations

from dataclasses import dataclass

from .common import groups
from .decompose import Decomposition, decompose
from .ks import ksce
from .smooth import smece

__all__ = ["binning_free", "BinningFree"]


@dataclass(frozen=True)
class BinningFree:
    """Smooth ECE (with its bandwidth), KS error and the CORP Brier decomposition."""

    smece: float
    smece_bandwidth: float
    ksce: float
    corp: Decomposition

    def as_dict(self) -> dict:
        d = {"smECE": self.smece, "smECE bandwidth": self.smece_bandwidth, "KS": self.ksce}
        d.update({f"CORP {k}": v for k, v in self.corp.as_dict().items()})
        return d


def binning_free(labels=None, probs=None, *, sample_weight=None, confidence=None, correct=None,
                 scoring="brier") -> BinningFree:
    """Top-label smooth ECE, KS calibration error and CORP decomposition in one call.

    The inputs are validated once; see :func:`calibkit.smece`, :func:`calibkit.ksce` and
    :func:`calibkit.decompose` for the definitions.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    >>> r = calibkit.binning_free(np.array([0, 1, 1, 0]), probs)
    >>> round(r.ksce, 3), round(r.corp.miscalibration, 4)
    (0.175, 0.0583)
    """
    [(conf, ok)], w = groups(
        labels, probs, max_prob=True, confidence=confidence, correct=correct, sample_weight=sample_weight
    )
    sm, bw = smece(confidence=conf, correct=ok, sample_weight=w, return_bandwidth=True)
    return BinningFree(
        smece=sm,
        smece_bandwidth=float(bw),
        ksce=ksce(confidence=conf, correct=ok, sample_weight=w),
        corp=decompose(confidence=conf, correct=ok, sample_weight=w, scoring=scoring),
    )
