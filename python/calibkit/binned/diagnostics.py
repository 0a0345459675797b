"""Diagnostics the paper draws: per-class errors, per-class adaptive ranges, what ECE ignores.

- :func:`per_class_error` -- the error of each class for any class-conditional metric (the
  paper's Figure 1 left: per-class ACE of a ResNet-110 on CIFAR-100);
- :func:`adaptive_bin_edges` -- the adaptive bin edges chosen for each class (the "ranges over
  training" figure);
- :func:`ignored_important_fraction` -- the share of confident ("important") probabilities that
  are not the row's top label, which ECE never looks at (the label-noise appendix);
- :func:`ece_pathology_example` -- the appendix's 1,000-prediction example on which ECE is
  about 0.003 although every prediction is badly miscalibrated.
"""

from __future__ import annotations

import numpy as np

from .._params import as_flag, as_int, as_real, as_threshold
from .._validate import as_probs, check_scores
from ..errors import InvalidParameterError
from .spec import MetricSpec
from .table import reduce_table

__all__ = [
    "per_class_error",
    "adaptive_bin_edges",
    "ignored_important_fraction",
    "ece_pathology_example",
]


def _bins(labels, probs, *, binning, max_prob, threshold, num_bins):
    """Class-conditional CalibrationBins; (N, K) 0/1 labels go to the multilabel path."""
    if np.ndim(labels) == 2:
        from .multilabel import multilabel_bins

        return multilabel_bins(
            labels, probs, binning=binning, max_prob=max_prob, class_conditional=True,
            threshold=threshold, num_bins=num_bins,
        )
    from .bins import calibration_bins

    return calibration_bins(
        labels, probs, binning=binning, max_prob=max_prob, class_conditional=True,
        threshold=threshold, num_bins=num_bins,
    )


def per_class_error(labels, probs, metric="ACE", *, num_bins: int = 15) -> np.ndarray:
    """Calibration error of each class under a class-conditional metric.

    For class k the scores of group k (see docs/spec.md: the rows predicted as k for top-label
    metrics, column k for all-probability metrics) are binned and
    ``E_k = sum_b (n_b / n_k) |acc_b - conf_b|`` (l1),
    ``sqrt(sum_b (n_b / n_k) (acc_b - conf_b)^2)`` (l2, a per-class RMS error) or
    ``max_b |acc_b - conf_b|`` over non-empty bins (max). A class whose group keeps no score
    gets 0, as in the class average. Relation to the metric itself:

    - l1 and max: ``gce(...) == per_class_error(...).mean()``;
    - l2: ``gce(...) == sqrt(mean(per_class_error(...) ** 2))`` -- the per-class squared errors
      are averaged, then one square root is taken.

    Parameters
    ----------
    labels : array_like of shape (N,) or (N, K)
        Class indices in [0, K), or an (N, K) 0/1 multilabel matrix.
    probs : array_like of shape (N, K)
        Probabilities (float32 or float64).
    metric : str, int or MetricSpec, default "ACE"
        A class-conditional metric: a name ("ACE", "SCE", "TACE", "CCE", or a canonical name),
        a paper index (0-31) or a :class:`~calibkit.space.MetricSpec`.
    num_bins : int, default 15

    Returns
    -------
    numpy.ndarray of shape (K,), float64

    Raises
    ------
    InvalidParameterError
        ``metric`` is not class-conditional (e.g. "ECE"), or unknown.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> from calibkit.diagnostics import per_class_error
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(5), size=2000)
    >>> labels = rng.integers(0, 5, size=2000)
    >>> errs = per_class_error(labels, probs, "SCE", num_bins=10)
    >>> errs.shape
    (5,)
    >>> bool(np.isclose(errs.mean(), calibkit.sce(labels, probs, num_bins=10)))
    True
    """
    spec = MetricSpec.coerce(metric)
    if not spec.class_conditional:
        raise InvalidParameterError(
            f"metric: per-class errors need a class-conditional metric, but {spec.name} pools "
            f"all classes; use e.g. 'ACE', 'SCE', 'TACE' or 'CCE'"
        )
    b = _bins(labels, probs, binning=spec.binning, max_prob=spec.max_prob,
              threshold=spec.threshold, num_bins=num_bins)
    # each class's error is the one reduction of its own row of the table (an l2 error takes
    # its square root per class)
    return np.array([reduce_table(b.counts[g:g + 1], b.sum_score[g:g + 1],
                                  b.sum_outcome[g:g + 1], spec.norm, False)
                     for g in range(b.counts.shape[0])])


def adaptive_bin_edges(labels, probs, *, num_bins: int = 15, threshold: float = 0.0,
                       include_ends: bool = True) -> np.ndarray:
    """The adaptive bin edges chosen for each class (all-probability, one-vs-rest groups).

    For class k the kept scores ``probs[:, k] > threshold`` are binned by the adaptive rule of docs/spec.md
    (equal mass, see ``docs/weighted-bins.md``), computed by the same kernel as the metrics:
    these are the edges ACE (``threshold=0``) and TACE (``threshold=0.01``) use.
    Tracking them over training epochs gives the paper's "ranges over training" figure.

    Parameters
    ----------
    labels : array_like of shape (N,) or (N, K)
        Class indices, or an (N, K) 0/1 multilabel matrix (the edges do not depend on labels,
        but the input is validated as for the metrics).
    probs : array_like of shape (N, K)
    num_bins : int, default 15
    threshold : float, default 0.0
    include_ends : bool, default True
        True: the full boundaries ``[threshold, e_1, ..., e_{B-1}, 1.0]`` per class, shape
        (K, num_bins + 1), as ``CalibrationBins.edges``; bin j spans ``[row[j], row[j+1])``.
        False: only the num_bins - 1 data-chosen upper edges, shape (K, num_bins - 1).

    Returns
    -------
    numpy.ndarray, float64
        A class that keeps no score above the threshold has NaN inner edges.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.diagnostics import adaptive_bin_edges
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    >>> adaptive_bin_edges([0, 0, 1, 0], probs, num_bins=2)
    array([[0. , 0.8, 1. ],
           [0. , 0.4, 1. ]])
    """
    include_ends = as_flag(include_ends, "include_ends")
    b = _bins(labels, probs, binning="adaptive", max_prob=False, threshold=threshold,
              num_bins=num_bins)
    edges = np.array(b.edges, dtype=np.float64)
    return edges if include_ends else edges[:, 1:-1].copy()


def ignored_important_fraction(probs, threshold: float = 0.1) -> float:
    """Fraction of "important" probabilities that top-label metrics such as ECE never score.

    An entry is *important* when ``probs[i, k] > threshold`` (strict, as for GCE thresholds).
    ECE scores exactly one entry per row: the row's maximum at the predicted class. The result is

        #(important entries that are not their row's maximum) / #(important entries)

    the quantity of the paper's label-noise appendix (it rises as models trained on noisier
    labels spread their probability mass). Tie rule: each row has exactly one maximum entry, the
    predicted class (the lowest column index among equal maxima, as ``argmax``); another entry
    equal to the maximum counts as ignored, because ECE does not score it as its own class.
    When no entry exceeds the threshold the fraction is 0.0 (nothing important was ignored).

    Parameters
    ----------
    probs : array_like of shape (N, K), or (N,) / (N, 1) binary P(y=1)
        Probabilities; rows need not sum to 1, values must be finite and in [0, 1].
    threshold : float, default 0.1
        Confidence above which an entry counts as important, in [0, 1).

    Returns
    -------
    float in [0, 1]

    Examples
    --------
    >>> from calibkit.diagnostics import ignored_important_fraction
    >>> ignored_important_fraction([[0.5, 0.3, 0.2], [0.9, 0.05, 0.05]], threshold=0.1)
    0.5
    """
    t = as_threshold(threshold)
    p = as_probs(probs)
    check_scores(p, row_sums=False)  # the metric functions' value rules, rows need not sum to 1
    important = int(np.count_nonzero(p > t))
    if important == 0:
        return 0.0
    top = p.max(axis=1)  # the value of the row's one maximum entry, whichever class it is
    scored = int(np.count_nonzero(top > t))
    return (important - scored) / important


def ece_pathology_example(*, n_wrong: int = 450, p_wrong: float = 0.52, n_right: int = 550,
                          p_right: float = 0.58) -> tuple[np.ndarray, np.ndarray]:
    """The appendix's binary example on which ECE is ~0.003 despite extreme miscalibration.

    Construction (paper appendix, "Pathologies in Static Binning Schemes"): 1,000 binary
    predictions with top-label confidence either 0.52 or 0.58.

    - ``n_wrong`` = 450 rows ``[p_wrong, 1 - p_wrong] = [0.52, 0.48]`` with label 1: class 0 is
      predicted with confidence 0.52 and every one of them is wrong;
    - ``n_right`` = 550 rows ``[1 - p_right, p_right] = [0.42, 0.58]`` with label 1: class 1 is
      predicted with confidence 0.58 and every one of them is right.

    With 10 even bins both confidences share the bin [0.5, 0.6): its mean confidence is
    0.45 * 0.52 + 0.55 * 0.58 = 0.553 and its accuracy 0.55, so ECE = ``|0.55 - 0.553|`` = 0.003;
    the over-confident and under-confident halves cancel. Class-wise metrics separate the two
    predicted classes and see the miscalibration: class-conditional ECE = (0.52 + 0.42) / 2 =
    0.47 and SCE = 0.465 (10 bins). The cancellation needs a bin holding both 0.52 and 0.58
    (no bin edge in (0.52, 0.58]): it happens with ``num_bins=10`` but not with the default 15
    (edge 0.5333), which separates the two halves; adaptive metrics separate them too.

    Parameters
    ----------
    n_wrong, n_right : int, default 450 and 550
        Numbers of confidently wrong and under-confidently right predictions.
    p_wrong, p_right : float, default 0.52 and 0.58
        Their top-label confidences, each in (0.5, 1].

    Returns
    -------
    labels : numpy.ndarray of shape (n_wrong + n_right,), int64
    probs : numpy.ndarray of shape (n_wrong + n_right, 2), float64

    Examples
    --------
    >>> import calibkit
    >>> from calibkit.diagnostics import ece_pathology_example
    >>> labels, probs = ece_pathology_example()
    >>> round(calibkit.ece(labels, probs, num_bins=10), 6)
    0.003
    >>> round(calibkit.sce(labels, probs, num_bins=10), 6)
    0.465
    """
    n_wrong = as_int(n_wrong, "n_wrong", minimum=0)
    n_right = as_int(n_right, "n_right", minimum=0)
    if n_wrong + n_right == 0:
        raise InvalidParameterError("n_wrong + n_right: the example needs at least one row")
    p_wrong, p_right = (as_real(p, f"{name} (a top-label confidence, unambiguous)", low=0.5,
                                high=1.0, low_open=True)
                        for name, p in (("p_wrong", p_wrong), ("p_right", p_right)))
    wrong = np.tile([float(p_wrong), 1.0 - float(p_wrong)], (int(n_wrong), 1))
    right = np.tile([1.0 - float(p_right), float(p_right)], (int(n_right), 1))
    probs = np.concatenate([wrong, right]).reshape(-1, 2)
    labels = np.ones(int(n_wrong) + int(n_right), dtype=np.int64)
    return labels, probs
