"""Drop-in replacement for the NumPy GCE API of Google's ``uncertainty_metrics``.

Change one import line and an existing script runs on calibkit's native kernels::

    import calibkit.compat.uncertainty_metrics as um   # was: uncertainty_metrics.numpy ...
    um.ece(labels, probs)                               # num_bins=30, as upstream
    um.gce(labels, probs, "adaptive", False, True, "l1", threshold=0.01)   # TACE

The signatures and defaults are those of ``uncertainty_metrics.numpy.general_calibration_error``
(labels first; ``binning_scheme``, ``max_prob``, ``class_conditional``, ``norm`` positional;
``num_bins=30``; ``threshold=0.0``; ``datapoints_per_bin=None``), plus one keyword-only switch
``legacy_l2``. The l1 results equal ``uncertainty_metrics==0.0.81`` (the PyPI release) to
floating-point rounding (about 1e-15) for every combination of binning, ``max_prob``,
``class_conditional`` and threshold; the test suite checks this on random and real data.

Differences from ``uncertainty_metrics`` 0.0.81
-----------------------------------------------
1. **l2 norm.** 0.0.81 squares the bin weight too: ``sqrt(sum_b (w_b * gap_b) ** 2)`` (and for
   class-conditional metrics ``sqrt(mean_k sum_b (w_kb gap_kb) ** 2)``). That is not the RMS
   calibration error of the paper, of Hendrycks et al., or of upstream's own main branch, which
   all use ``sqrt(sum_b w_b * gap_b ** 2)``. Here the default l2 is the corrected form (calibkit's
   SPEC); pass ``legacy_l2=True`` to get the 0.0.81 numbers exactly.
2. **rmsce.** 0.0.81's ``rmsce(labels, probs, num_bins=30, datapoints_per_bin=100)`` ignores
   ``num_bins`` (it uses ``int(N / 100)`` adaptive bins). Here, as on upstream's main branch,
   ``datapoints_per_bin`` defaults to ``None`` so ``num_bins`` is honoured; with
   ``legacy_l2=True`` a ``None`` ``datapoints_per_bin`` becomes 100, reproducing 0.0.81.
3. **Bad input raises** a specific ``ValueError`` / ``TypeError`` (from :mod:`calibkit.errors`)
   where 0.0.81 silently returns a number or fails obscurely: NaN/inf, probabilities outside
   [0, 1] or rows not summing to 1 (beyond calibkit's documented tolerance), labels out of
   ``[0, K)`` (0.0.81 wraps negative labels through ``np.eye(K)[labels]``), an unknown ``norm``
   (0.0.81 treats anything but ``'l1'`` as its l2), an unknown ``binning_scheme`` (0.0.81 raises
   ``NameError``), ``num_bins < 1``, ``threshold`` outside [0, 1), ``datapoints_per_bin <= 0``
   (0.0.81: ``ZeroDivisionError`` or a negative bin count) and empty input.
4. **datapoints_per_bin larger than N.** 0.0.81 computes ``int(N / datapoints_per_bin) == 0``
   bins, which its code treats as a single bin; here the bin count is ``max(1, int(N / d))``,
   which gives the same numbers. As upstream, ``N`` is the number of rows (not the number of
   scores in a group) and ``datapoints_per_bin`` with ``binning_scheme='even'`` raises.
5. **Extras.** ``norm='max'`` (largest |gap| over non-empty bins) is accepted, and
   ``compute_all_metrics`` takes a keyword-only ``num_bins`` (upstream hard-codes 30).
   Upstream main's ``num_bins=None`` (monotonic sweep) is not supported (0.0.81 lacks it too).
6. **Slightly invalid probabilities.** Values within calibkit's tolerance (1e-4 outside [0, 1],
   row sums within 1e-3 of 1, e.g. the cleanlab imdb outputs that exceed 1 by 1e-5) are used
   as given, with no clipping, exactly as 0.0.81 uses them (a score above 1.0 falls in the even
   binning's extra bin for 1.0). 1-D float32 binary input becomes ``[1 - p, p]`` with ``1 - p``
   computed in float32 on both sides.
7. **Rounding.** 0.0.81 divides by ``count + eps`` to avoid empty bins; calibkit skips empty
   bins (a relative difference of ~1e-16). Sums are accumulated in a different order, so
   results differ in the last few digits (below 1e-12 on every data set in the tests).
8. **Thresholds with float32 input.** Under NumPy 2, 0.0.81 compares float32 scores with the
   threshold rounded to float32; calibkit compares in float64 (``score > threshold`` exactly).
   They differ only for a float32 score equal to ``float32(threshold)`` when that rounds *above*
   ``threshold``; the thresholds 0.0 and 0.01 of the paper are not affected.
9. **Return type.** Every function returns a Python ``float`` (``compute_all_metrics`` a float64
   array of 32 values), never 0.0.81's occasional ``int`` 0.
10. The attributes ``accuracies``, ``confidences`` and ``calibration_errors`` of
    :class:`GeneralCalibrationError` hold the per-bin values of the last non-empty group, as in
    0.0.81 (empty bins hold 0); use :func:`calibkit.calibration_bins` for full tables. Unlike
    0.0.81, ``update_state`` does not overwrite ``num_bins`` when ``datapoints_per_bin`` is set.

Examples
--------
>>> import numpy as np
>>> import calibkit.compat.uncertainty_metrics as um
>>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
>>> labels = np.array([0, 1, 1, 0])
>>> round(um.ece(labels, probs), 6)
0.4
>>> um.compute_all_metrics(labels, probs).shape
(32,)
"""

from __future__ import annotations

import itertools
import numbers

import numpy as np

from .. import calibration_bins as _calibration_bins
from .. import gce as _gce
from .._params import as_flag
from ..errors import InvalidParameterError, ShapeMismatchError

__all__ = [
    "GeneralCalibrationError",
    "gce",
    "general_calibration_error",
    "ece",
    "sce",
    "static_calibration_error",
    "ace",
    "adaptive_calibration_error",
    "tace",
    "thresholded_adaptive_calibration_error",
    "rmsce",
    "root_mean_squared_calibration_error",
    "compute_all_metrics",
]

#: ``datapoints_per_bin`` of 0.0.81's ``rmsce``, used when ``legacy_l2=True``.
LEGACY_RMSCE_DATAPOINTS_PER_BIN = 100


def _num_rows(probs) -> int:
    shape = np.shape(probs)
    if len(shape) == 0:
        raise ShapeMismatchError("probs: got a scalar; pass an array of shape (N, K) or (N,)")
    return int(shape[0])


def _resolve_num_bins(probs, binning_scheme, num_bins, datapoints_per_bin) -> int:
    """Upstream's rule: ``datapoints_per_bin`` overrides ``num_bins`` (adaptive only)."""
    if datapoints_per_bin is None:
        return num_bins
    if isinstance(datapoints_per_bin, bool) or not isinstance(datapoints_per_bin, numbers.Real):
        raise InvalidParameterError(
            f"datapoints_per_bin: expected a positive number or None, got "
            f"{type(datapoints_per_bin).__name__} {datapoints_per_bin!r}"
        )
    per_bin = float(datapoints_per_bin)
    if not (per_bin > 0) or not np.isfinite(per_bin):
        raise InvalidParameterError(
            f"datapoints_per_bin: must be a positive number, got {datapoints_per_bin!r}; "
            "pass e.g. 100, or None to use num_bins"
        )
    if binning_scheme != "adaptive":
        raise InvalidParameterError(
            "datapoints_per_bin: only valid with binning_scheme='adaptive' (as in "
            f"uncertainty_metrics), got binning_scheme={binning_scheme!r}; pass num_bins instead"
        )
    return max(1, int(_num_rows(probs) / per_bin))


def _legacy_l2_from_table(table) -> float:
    """0.0.81's l2: ``sqrt(mean_g sum_b (w_gb * gap_gb) ** 2)`` from a calibration table."""
    counts = np.asarray(table.counts, dtype=np.float64)
    diff = np.asarray(table.sum_outcome) - np.asarray(table.sum_score)
    n_group = counts.sum(axis=1)
    per_group = np.zeros(counts.shape[0])
    nonempty = n_group > 0
    # (w_b * gap_b) = (n_b / n) * (sum_o - sum_s) / n_b = (sum_o - sum_s) / n; empty bins give 0.
    weighted = diff[nonempty] / n_group[nonempty, None]
    per_group[nonempty] = np.sum(weighted * weighted, axis=1)
    return float(np.sqrt(np.mean(per_group)))


def _check_legacy(legacy_l2) -> bool:
    return as_flag(legacy_l2, "legacy_l2")


def gce(
    labels,
    probs,
    binning_scheme,
    max_prob,
    class_conditional,
    norm,
    num_bins=30,
    threshold=0.0,
    datapoints_per_bin=None,
    *,
    legacy_l2=False,
) -> float:
    """General Calibration Error with ``uncertainty_metrics``' signature.

    Parameters
    ----------
    labels : array_like of shape (N,)
        Integer labels in ``[0, K)``.
    probs : array_like of shape (N, K), (N, 1) or (N,)
        Probabilities (rows sum to 1); 1-D or (N, 1) is the binary P(y=1).
    binning_scheme : {"even", "adaptive"}
    max_prob : bool
        Top-label probability only (True) or every class probability (False).
    class_conditional : bool
        Bin each class separately and average over all K classes (True) or pool (False).
    norm : {"l1", "l2", "max"}
    num_bins : int, default 30
    threshold : float, default 0.0
        Keep only scores strictly greater than this.
    datapoints_per_bin : float or None, default None
        Adaptive binning only: use ``max(1, int(N / datapoints_per_bin))`` bins instead of
        ``num_bins``.
    legacy_l2 : bool, default False (keyword only)
        With ``norm='l2'``, reproduce ``uncertainty_metrics`` 0.0.81's
        ``sqrt(sum_b (w_b * gap_b) ** 2)`` instead of the RMS form ``sqrt(sum_b w_b gap_b**2)``.
        Ignored for other norms.

    Returns
    -------
    float

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> probs = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]]
    >>> round(um.gce([0, 1, 1, 0], probs, "even", True, False, "l1"), 6)
    0.4
    """
    legacy = _check_legacy(legacy_l2)
    bins = _resolve_num_bins(probs, binning_scheme, num_bins, datapoints_per_bin)
    if legacy and norm == "l2":
        table = _calibration_bins(
            labels,
            probs,
            binning=binning_scheme,
            max_prob=max_prob,
            class_conditional=class_conditional,
            threshold=threshold,
            num_bins=bins,
        )
        return _legacy_l2_from_table(table)
    return float(
        _gce(
            labels,
            probs,
            binning=binning_scheme,
            max_prob=max_prob,
            class_conditional=class_conditional,
            threshold=threshold,
            norm=norm,
            num_bins=bins,
        )
    )


general_calibration_error = gce


def ece(labels, probs, num_bins=30) -> float:
    """Expected Calibration Error (even bins, top label, pooled, l1), default 30 bins.

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> round(um.ece([0, 1], [[0.9, 0.1], [0.4, 0.6]]), 6)
    0.25
    """
    return gce(labels, probs, "even", True, False, "l1", num_bins=num_bins)


def sce(labels, probs, num_bins=30) -> float:
    """Static Calibration Error (even bins, every class probability, per class, l1).

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> round(um.sce([0, 1], [[0.9, 0.1], [0.4, 0.6]]), 6)
    0.25
    """
    return gce(labels, probs, "even", False, True, "l1", num_bins=num_bins)


static_calibration_error = sce


def ace(labels, probs, num_bins=30) -> float:
    """Adaptive Calibration Error (adaptive bins, every class probability, per class, l1).

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> round(um.ace([0, 1], [[0.9, 0.1], [0.4, 0.6]]), 6)
    0.25
    """
    return gce(labels, probs, "adaptive", False, True, "l1", num_bins=num_bins)


adaptive_calibration_error = ace


def tace(labels, probs, num_bins=30, threshold=0.01) -> float:
    """Thresholded ACE: ACE over the scores strictly greater than ``threshold`` (0.01).

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> round(um.tace([0, 1], [[0.995, 0.005], [0.4, 0.6]]), 6)
    0.30125
    """
    return gce(
        labels, probs, "adaptive", False, True, "l1", num_bins=num_bins, threshold=threshold
    )


thresholded_adaptive_calibration_error = tace


def rmsce(labels, probs, num_bins=30, datapoints_per_bin=None, *, legacy_l2=False) -> float:
    """Root Mean Squared Calibration Error (adaptive bins, top label, pooled, l2).

    Parameters
    ----------
    labels, probs : see :func:`gce`
    num_bins : int, default 30
    datapoints_per_bin : float or None, default None
        If given, ``max(1, int(N / datapoints_per_bin))`` bins replace ``num_bins``. With
        ``legacy_l2=True`` a ``None`` here means 100, as in 0.0.81 (which ignores
        ``num_bins``); pass ``legacy_l2=True`` to reproduce 0.0.81's ``rmsce`` exactly.
    legacy_l2 : bool, default False (keyword only)
        0.0.81's l2 form and default, see the module docstring.

    Returns
    -------
    float

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> round(um.rmsce([0, 1], [[0.9, 0.1], [0.4, 0.6]], num_bins=1), 6)
    0.25
    """
    legacy = _check_legacy(legacy_l2)
    if legacy and datapoints_per_bin is None:
        datapoints_per_bin = LEGACY_RMSCE_DATAPOINTS_PER_BIN
    return gce(
        labels,
        probs,
        "adaptive",
        True,
        False,
        "l2",
        num_bins=num_bins,
        datapoints_per_bin=datapoints_per_bin,
        legacy_l2=legacy,
    )


root_mean_squared_calibration_error = rmsce


def compute_all_metrics(labels, probs, *, num_bins=30, legacy_l2=False) -> np.ndarray:
    """All 32 metrics of the GCE space, in ``uncertainty_metrics``' order.

    The order is ``itertools.product(['even', 'adaptive'], [True, False] (max_prob),
    [True, False] (class_conditional), [0.0, 0.01] (threshold), ['l1', 'l2'])``, i.e. index
    ``16*[adaptive] + 8*[not max_prob] + 4*[not class_conditional] + 2*[threshold] + [l2]``.
    Each of the 16 groupings is binned once and both norms are read from its table.

    Parameters
    ----------
    labels, probs : see :func:`gce`
    num_bins : int, default 30 (keyword only; upstream hard-codes 30)
    legacy_l2 : bool, default False (keyword only)
        Use 0.0.81's l2 form for the 16 l2 entries.

    Returns
    -------
    numpy.ndarray of shape (32,), float64

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> values = um.compute_all_metrics([0, 1], [[0.9, 0.1], [0.4, 0.6]])
    >>> round(float(values[4]), 6)  # ECE
    0.25
    """
    legacy = _check_legacy(legacy_l2)
    values = []
    for binning, max_prob, class_conditional, threshold in itertools.product(
        ["even", "adaptive"], [True, False], [True, False], [0.0, 0.01]
    ):
        table = _calibration_bins(
            labels,
            probs,
            binning=binning,
            max_prob=max_prob,
            class_conditional=class_conditional,
            threshold=threshold,
            num_bins=num_bins,
        )
        values.append(float(table.error("l1")))
        values.append(_legacy_l2_from_table(table) if legacy else float(table.error("l2")))
    return np.array(values, dtype=np.float64)


class GeneralCalibrationError:
    """Object form of :func:`gce`, as ``uncertainty_metrics.numpy.GeneralCalibrationError``.

    ``update_state(labels, probs)`` computes the metric on that batch (replacing any earlier
    value, as upstream does: it does not accumulate) and ``result()`` returns it. For streaming
    accumulation use calibkit's own accumulators.

    Parameters
    ----------
    binning_scheme, max_prob, class_conditional, norm, num_bins, threshold, datapoints_per_bin
        As in :func:`gce`.
    distribution : str or None
        Free-form label kept as an attribute (upstream's metadata field).
    legacy_l2 : bool, default False (keyword only)
        As in :func:`gce`.

    Attributes
    ----------
    calibration_error : float or None
    accuracies, confidences, calibration_errors : numpy.ndarray or None
        Per-bin accuracy, mean confidence and accuracy minus confidence of the last non-empty
        group (0 in empty bins; the even extra bin for 1.0 appears only when used), as upstream.

    Examples
    --------
    >>> import calibkit.compat.uncertainty_metrics as um
    >>> m = um.GeneralCalibrationError("even", True, False, "l1", num_bins=2)
    >>> m.update_state([0, 1], [[0.9, 0.1], [0.4, 0.6]])
    >>> round(m.result(), 6), m.accuracies.tolist()
    (0.25, [0.0, 1.0])
    """

    def __init__(
        self,
        binning_scheme,
        max_prob,
        class_conditional,
        norm,
        num_bins=30,
        threshold=0.0,
        datapoints_per_bin=None,
        distribution=None,
        *,
        legacy_l2=False,
    ):
        self.binning_scheme = binning_scheme
        self.max_prob = max_prob
        self.class_conditional = class_conditional
        self.norm = norm
        self.num_bins = num_bins
        self.threshold = threshold
        self.datapoints_per_bin = datapoints_per_bin
        self.distribution = distribution
        self.legacy_l2 = _check_legacy(legacy_l2)
        self.accuracies = None
        self.confidences = None
        self.calibration_error = None
        self.calibration_errors = None

    def update_state(self, labels, probs) -> None:
        """Compute the metric on ``labels`` / ``probs`` and store it (see :meth:`result`)."""
        bins = _resolve_num_bins(
            probs, self.binning_scheme, self.num_bins, self.datapoints_per_bin
        )
        table = _calibration_bins(
            labels,
            probs,
            binning=self.binning_scheme,
            max_prob=self.max_prob,
            class_conditional=self.class_conditional,
            threshold=self.threshold,
            num_bins=bins,
        )
        if self.legacy_l2 and self.norm == "l2":
            value = _legacy_l2_from_table(table)
        else:
            value = float(
                _gce(
                    labels,
                    probs,
                    binning=self.binning_scheme,
                    max_prob=self.max_prob,
                    class_conditional=self.class_conditional,
                    threshold=self.threshold,
                    norm=self.norm,
                    num_bins=bins,
                )
            )
        counts = np.asarray(table.counts)
        nonempty = np.flatnonzero(counts.sum(axis=1) > 0)
        if len(nonempty):
            g = nonempty[-1]
            c = counts[g].astype(np.float64)
            s = np.asarray(table.sum_score)[g]
            o = np.asarray(table.sum_outcome)[g]
            if self.binning_scheme == "even" and c[-1] == 0:
                c, s, o = c[:-1], s[:-1], o[:-1]  # upstream shows the 1.0 bin only when used
            safe = np.where(c > 0, c, 1.0)
            self.confidences = np.where(c > 0, s / safe, 0.0)
            self.accuracies = np.where(c > 0, o / safe, 0.0)
            self.calibration_errors = self.accuracies - self.confidences
        self.calibration_error = value

    def result(self):
        """The value computed by the last :meth:`update_state` (None before the first)."""
        return self.calibration_error

    def reset_state(self) -> None:
        """Forget the stored value."""
        self.calibration_error = None
