"""The trust keywords of :func:`calibkit.gce` and :func:`calibkit.calibration_bins`:
``sample_weight=``, ``debias=`` and ``num_bins="auto"`` (one place for all entry points).
"""

from __future__ import annotations

import numpy as np

from .._validate import check_gce_params
from ..errors import InvalidParameterError
from .auto_bins import resolve_num_bins, warn_if_few
from .debias import check_debias

__all__ = ["bins_with_options", "gce_with_options"]


def bins_with_options(labels, probs, *, binning, max_prob, class_conditional, threshold,
                      num_bins, sample_weight=None):
    """The table of :func:`calibkit.calibration_bins` with sample weights and/or "auto" bins."""
    auto = isinstance(num_bins, str)
    if auto and num_bins != "auto":
        raise InvalidParameterError(f"num_bins must be a positive integer or 'auto', got {num_bins!r}")
    num_bins = resolve_num_bins(num_bins, labels, probs, max_prob=bool(max_prob),
                                class_conditional=bool(class_conditional))
    binning, _, threshold, num_bins = check_gce_params(binning, "l1", threshold, num_bins)
    if sample_weight is not None:
        if np.ndim(labels) == 2:
            raise InvalidParameterError(
                "sample_weight is not supported for multilabel (N, K) label matrices yet; pass "
                "1-D class labels, or compute each column with calibkit.gce(..., sample_weight=)"
            )
        from .weights import weighted_bins

        t = weighted_bins(labels, probs, sample_weight, binning=binning, max_prob=max_prob,
                          class_conditional=class_conditional, threshold=threshold,
                          num_bins=num_bins)
    else:
        from ..bins import calibration_bins

        t = calibration_bins(labels, probs, binning=binning, max_prob=max_prob,
                             class_conditional=class_conditional, threshold=threshold,
                             num_bins=num_bins)
    if auto:
        warn_if_few(t.counts)
    return t


def gce_with_options(labels, probs, *, binning, max_prob, class_conditional, threshold, norm,
                     num_bins, sample_weight=None, debias=False) -> float:
    """:func:`calibkit.gce` with sample weights, ``debias`` and/or "auto" bins."""
    check_gce_params(binning, norm, threshold, 1)
    debias = check_debias(debias, norm)
    t = bins_with_options(labels, probs, binning=binning, max_prob=max_prob,
                          class_conditional=class_conditional, threshold=threshold,
                          num_bins=num_bins, sample_weight=sample_weight)
    return t.error(norm, debias=debias)
