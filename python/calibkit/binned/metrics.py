"""The General Calibration Error and the named metrics built on it.

Every function takes ``labels`` first (like scikit-learn and the paper's own library), then
``probs``. Semantics follow ``docs/spec.md`` exactly (the paper's released library, as corrected on
its main branch): see :func:`gce` for the definitions and the README for the differences from
torchmetrics, netcal and scikit-learn.
"""

from __future__ import annotations

import numpy as np

from .. import _native, _toplabel
from .._arraylike import device_path, device_tensor
from .._budget import check_tables
from .._params import as_flag, check_gce_params
from .._typing import NumBins
from .._validate import is_multilabel, validate_inputs

__all__ = ["gce", "ece", "cce", "sce", "ace", "tace", "rmsce", "mce"]


def gce(
    labels=None,
    probs=None,
    *,
    confidence=None,
    correct=None,
    predicted=None,
    num_classes=None,
    binning: str = "even",
    max_prob: bool = True,
    class_conditional: bool = False,
    threshold: float = 0.0,
    norm: str = "l1",
    num_bins: NumBins = 15,
    sample_weight=None,
    debias: bool = False,
) -> float:
    """General Calibration Error (Nixon et al., 2019) for any combination of its properties.

    Parameters
    ----------
    labels : array_like of shape (N,), optional
        True class indices in ``[0, K)``: integers of any width, or floats holding exact
        integers. An (N, K) 0/1 matrix means multilabel (each column its own one-vs-rest
        problem; only ``max_prob=False`` is defined, see :mod:`calibkit.multilabel`).
    probs : array_like of shape (N, K), (N, 1) or (N,), optional
        Predicted probabilities, float32 or float64, rows summing to 1 within 1e-3 and values
        within [0, 1] up to 1e-4. 1-D or (N, 1) input is the binary P(y=1) and becomes
        ``[1 - p, p]``, so max-prob metrics score the top label ``max(p, 1 - p)`` against "the
        predicted class is right" (the paper's reading), not P(y=1) itself: for that use
        :mod:`calibkit.binary` (``calibkit.binary.ece(y_true, y_prob)``), and for
        (confidence, correct) pairs ``confidence=``, ``correct=`` (boolean ``labels`` with a
        1-D ``probs`` below 0.5 warn, :class:`calibkit.BinaryReadingWarning`). K always comes
        from ``probs``.
    confidence : array_like of shape (N,), optional
        Top-label input, in place of ``labels`` and ``probs`` (mixing the two forms is an
        error): each prediction's top-label probability, float32 or float64, finite and within
        [0, 1] up to 1e-4. Only ``max_prob=True`` metrics accept it (others raise
        :class:`calibkit.errors.TopLabelInputError`). The result equals the matrix form, to
        1e-12, for any matrix whose row maxima are ``confidence``, whose first argmaxes are
        ``predicted`` and whose labels make ``correct`` (see ``docs/toplabel-inputs.md``):
        ``confidence > threshold`` is kept, and at threshold 0 every confidence, exact 0.0
        included (in even bin 0); 1.0 gets the extra even bin.
    correct : array_like of shape (N,), optional
        With ``confidence``: whether each prediction was right, boolean or 0/1.
    predicted : array_like of shape (N,), optional
        With ``confidence``: the predicted class of each prediction, integers in
        ``[0, num_classes)``. Needed (with ``num_classes``) by class-conditional metrics.
    num_classes : int, optional
        With ``predicted``: K, the number of classes (class-conditional metrics average over all
        K, predicted or not).
    binning : {"even", "adaptive"}, default "even"
        ``"even"``: B equal-width bins with upper edges ``np.linspace(0, 1, B+1)[1:]``; scores
        equal to 1.0 fall in an extra bin of their own (as in the paper's library and
        torchmetrics). ``"adaptive"``: B equal-mass bins per group, edges at the sorted scores
        of positions ``round_half_even(j * n / B)``; ties on an edge go to the upper bin.
    max_prob : bool, default True
        True: only each row's top probability (argmax, lowest index on ties) with outcome
        "prediction correct". False: every entry of the matrix, with outcome "this column is
        the true label".
    class_conditional : bool, default False
        True: one group per class (the rows predicted as k if ``max_prob``, else column k),
        and the result is the mean over **all K** classes (a class with no kept score counts
        0). False: one pooled group.
    threshold : float in [0, 1), default 0.0
        A score is kept only if ``score > threshold`` (strict; applied after the max-prob
        selection), so with 0.0 exact zeros are dropped; top-label pairs (``confidence=``)
        keep every confidence at threshold 0, exact 0.0 included.
    norm : {"l1", "l2", "max"}, default "l1"
        Per group: l1 ``sum_b w_b |acc_b - conf_b|``; l2 ``sum_b w_b (acc_b - conf_b)^2`` with
        the weight outside the square (the paper's and Hendrycks' RMS form) and one square root
        after the class average; max ``max_b |acc_b - conf_b|`` over non-empty bins. ``w_b`` is
        the bin's share of its group.
    num_bins : int or "auto", default 15
        B, the number of bins (>= 1); "auto" picks it from N and warns
        (:class:`calibkit.errors.FewSamplesWarning`) when bins hold too few predictions (see
        :mod:`calibkit.binned.auto_bins`).
    sample_weight : array_like of shape (N,), optional
        Per-row weights, finite and >= 0 with a finite sum: integer weights give exactly the
        value of repeated rows, 0 drops a row (see :mod:`calibkit.binned.weights`).
    debias : bool, default False
        l2 only: Kumar et al.'s (2019) debiased estimate (:mod:`calibkit.binned.debias`);
        refused for l1 and max.

    Returns
    -------
    float
        The calibration error, in [0, 1].

    Raises
    ------
    calibkit.errors.InvalidProbabilitiesError
        NaN/inf, values outside [0, 1] (e.g. logits: use :func:`calibkit.softmax`), rows not
        summing to 1.
    calibkit.errors.InvalidLabelsError
        Labels that are not integers or are outside ``[0, K)``.
    calibkit.errors.ShapeMismatchError
        Wrong number of dimensions, length mismatch, empty input.
    calibkit.errors.InvalidParameterError
        Unknown binning or norm, threshold outside [0, 1), num_bins not an integer in
        [1, 1000000], a flag that is not ``True``/``False`` (:class:`~calibkit.errors.InvalidFlagError`).
    calibkit.errors.InputTypeError
        Non-numeric input.
    calibkit.errors.TopLabelInputError
        Top-label input with ``max_prob=False``, or a class-conditional metric without
        ``predicted`` and ``num_classes``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> probs = np.array([[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.15, 0.6, 0.25]])
    >>> labels = np.array([0, 1, 1])
    >>> round(calibkit.gce(labels, probs, num_bins=3), 6)
    0.133333

    The same from top-label pairs (row maxima, whether the argmax is the label):

    >>> round(calibkit.gce(confidence=[0.7, 0.5, 0.6], correct=[True, False, True], num_bins=3), 6)
    0.133333
    >>> round(calibkit.gce(confidence=[0.7, 0.5, 0.6], correct=[1, 0, 1], predicted=[0, 0, 1],
    ...                    num_classes=3, class_conditional=True, num_bins=3), 6)
    0.266667
    """
    max_prob = as_flag(max_prob, "max_prob")
    class_conditional = as_flag(class_conditional, "class_conditional")
    if type(probs) is not np.ndarray and device_tensor(probs if confidence is None else confidence):
        value = device_path("gce")(  # computed on the tensors' device (docs/torch.md)
            labels, probs, confidence=confidence, correct=correct, predicted=predicted,
            num_classes=num_classes, binning=binning, max_prob=max_prob,
            class_conditional=class_conditional, threshold=threshold, norm=norm,
            num_bins=num_bins, sample_weight=sample_weight, debias=debias)
        if value is not None:
            return value
    pairs = _toplabel.resolve(labels, probs, confidence, correct, predicted, num_classes)
    if sample_weight is not None or debias is not False or isinstance(num_bins, str):
        # weights, the debiased l2 or "auto" bins: through the table (calibration_bins)
        from .bins import calibration_bins
        from .debias import check_debias

        check_gce_params(binning, norm, threshold, 1)
        debias = check_debias(debias, norm)
        t = calibration_bins(labels, probs, confidence=confidence, correct=correct,
                             predicted=predicted, num_classes=num_classes, binning=binning,
                             max_prob=max_prob, class_conditional=class_conditional,
                             threshold=threshold, num_bins=num_bins, sample_weight=sample_weight)
        return t.error(norm, debias=debias)
    binning, norm, threshold, num_bins = check_gce_params(binning, norm, threshold, num_bins)
    if pairs is not None:
        check_tables(pairs.k if class_conditional else 1, (num_bins,))
        return _toplabel.gce(pairs, binning, max_prob, class_conditional, threshold, norm, num_bins)
    # multilabel: an (N, K) 0/1 label matrix, K > 1 (the fast path skips the check for 1-D arrays)
    if (type(labels) is not np.ndarray or labels.ndim != 1) and is_multilabel(labels, probs):
        from .multilabel import multilabel_gce

        return multilabel_gce(
            labels,
            probs,
            binning=binning,
            max_prob=max_prob,
            class_conditional=class_conditional,
            threshold=threshold,
            norm=norm,
            num_bins=num_bins,
        )
    y, p = validate_inputs(labels, probs)
    check_tables(p.shape[1] if class_conditional else 1, (num_bins,))
    return _native.gce(
        y, p, binning, max_prob, class_conditional, threshold, norm, num_bins
    )


def ece(labels=None, probs=None, *, num_bins: NumBins = 15,
        confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """Expected Calibration Error (Guo et al., 2017; Naeini et al., 2015).

    :func:`gce` with even binning, top-label (``max_prob=True``), pooled over classes,
    threshold 0, l1 norm. ``num_bins`` defaults to 15 (torchmetrics' default; the paper's
    library defaults to 30: pass ``num_bins=30`` or use :mod:`calibkit.compat.uncertainty_metrics`).

    Examples
    --------
    >>> import calibkit
    >>> round(calibkit.ece([0, 1], [[0.9, 0.1], [0.2, 0.8]]), 6)
    0.15

    With only each prediction's confidence and whether it was right (top-label input, see
    :func:`gce`):

    >>> round(calibkit.ece(confidence=[0.9, 0.8], correct=[True, True]), 6)
    0.15
    """
    return gce(labels, probs, binning="even", max_prob=True, class_conditional=False,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=0.0, norm="l1", num_bins=num_bins,
               sample_weight=sample_weight)


def cce(labels=None, probs=None, *, num_bins: NumBins = 15,
        confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """Class-conditional ECE: ECE computed per predicted class, averaged over all K classes.

    :func:`gce` with even binning, ``max_prob=True``, ``class_conditional=True``, threshold 0,
    l1 norm (index 0 of the paper's 32-metric space). Top-label input needs ``predicted=``
    and ``num_classes=`` besides ``confidence=`` and ``correct=``.
    """
    return gce(labels, probs, binning="even", max_prob=True, class_conditional=True,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=0.0, norm="l1", num_bins=num_bins,
               sample_weight=sample_weight)


def sce(labels=None, probs=None, *, num_bins: NumBins = 15,
        confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """Static Calibration Error (Nixon et al.): every class's probabilities, even bins.

    :func:`gce` with even binning, ``max_prob=False``, ``class_conditional=True``, threshold 0,
    l1 norm (index 8).
    Needs every class's probability: top-label input (``confidence=``) raises
    :class:`calibkit.errors.TopLabelInputError`.
    """
    return gce(labels, probs, binning="even", max_prob=False, class_conditional=True,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=0.0, norm="l1", num_bins=num_bins,
               sample_weight=sample_weight)


def ace(labels=None, probs=None, *, num_bins: NumBins = 15,
        confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """Adaptive Calibration Error (Nixon et al.): equal-mass bins per class.

    :func:`gce` with adaptive binning, ``max_prob=False``, ``class_conditional=True``,
    threshold 0, l1 norm (index 24). Bins are weighted by their counts, as the paper's released
    code does (the paper's formula writes a uniform 1/(K R) weight).
    Needs every class's probability: top-label input (``confidence=``) raises
    :class:`calibkit.errors.TopLabelInputError`.
    """
    return gce(labels, probs, binning="adaptive", max_prob=False, class_conditional=True,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=0.0, norm="l1", num_bins=num_bins,
               sample_weight=sample_weight)


def tace(labels=None, probs=None, *, num_bins: NumBins = 15, threshold: float = 0.01,
         confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """Thresholded Adaptive Calibration Error: ACE over scores above ``threshold`` (0.01).

    :func:`gce` with adaptive binning, ``max_prob=False``, ``class_conditional=True``,
    ``threshold=0.01``, l1 norm (index 26).
    Needs every class's probability: top-label input (``confidence=``) raises
    :class:`calibkit.errors.TopLabelInputError`.
    """
    return gce(labels, probs, binning="adaptive", max_prob=False, class_conditional=True,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=threshold, norm="l1", num_bins=num_bins,
               sample_weight=sample_weight)


def rmsce(labels=None, probs=None, *, num_bins: NumBins = 15,
          confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None,
          debias: bool = False) -> float:
    """Root-mean-square calibration error (Hendrycks et al.): top-label, adaptive bins, l2.

    :func:`gce` with adaptive binning, ``max_prob=True``, pooled, threshold 0, l2 norm with the
    weight outside the square (index 21). Unlike ``uncertainty_metrics`` 0.0.81 it honours
    ``num_bins``.
    """
    return gce(labels, probs, binning="adaptive", max_prob=True, class_conditional=False,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=0.0, norm="l2", num_bins=num_bins,
               sample_weight=sample_weight, debias=debias)


def mce(labels=None, probs=None, *, num_bins: NumBins = 15,
        confidence=None, correct=None, predicted=None, num_classes=None, sample_weight=None) -> float:
    """Maximum Calibration Error: the largest ``|accuracy - confidence|`` over non-empty bins.

    :func:`gce` with even binning, ``max_prob=True``, pooled, threshold 0, ``norm="max"``.
    """
    return gce(labels, probs, binning="even", max_prob=True, class_conditional=False,
               confidence=confidence, correct=correct, predicted=predicted,
               num_classes=num_classes,
               threshold=0.0, norm="max", num_bins=num_bins,
               sample_weight=sample_weight)
