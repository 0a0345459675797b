"""The paper's 32-metric space, custom metric spaces, and :func:`evaluate` (every metric at once).

A calibration metric of the General Calibration Error family is fixed by five choices
(:class:`MetricSpec`): the binning scheme, whether only the top-label probability is scored
(``max_prob``), whether the error is computed per class and averaged (``class_conditional``),
the score threshold and the norm. The paper's appendix ("Calibration Metric Labeling")
enumerates the 2 x 2 x 2 x 2 x 2 = 32 combinations with thresholds {0, 0.01} and norms
{l1, l2}; :func:`metric_space` reproduces that numbering exactly::

    index = 16*[adaptive] + 8*[not max_prob] + 4*[not class_conditional]
            + 2*[threshold == 0.01] + [norm == "l2"]

so that index 0 is class-conditional ECE, 4 is ECE, 8 is SCE, 21 is RMSCE, 24 is ACE and 26 is
TACE (docs/spec.md). :func:`evaluate` computes every (metric, bin count) pair of a space in one
call of the Rust kernel, sharing the sort / histogram of each score group between metrics and
bin counts.

This module only gathers the public names: the metric identities live in
:mod:`calibkit._space` and :func:`evaluate` in :mod:`calibkit.evaluation`, so neither has to
import the other's module back (no import cycle).
"""

from __future__ import annotations

from ._space import (
    DEFAULT_NUM_BINS,
    NAMED_METRICS,
    PAPER_NUM_BINS,
    PAPER_THRESHOLDS,
    MetricSpace,
    MetricSpec,
    metric_space,
)
from .evaluation import Evaluation, evaluate

__all__ = ["MetricSpec", "MetricSpace", "Evaluation", "metric_space", "evaluate",
           "NAMED_METRICS", "PAPER_THRESHOLDS", "DEFAULT_NUM_BINS", "PAPER_NUM_BINS"]
