"""Top-label input: ``confidence=`` and ``correct=`` (and ``predicted=``, ``num_classes=``) in
place of ``(labels, probs)``. Every entry point resolves its arguments here, once.

What the pairs mean (the equality the metrics keep, to 1e-12): pair i is what calibkit's
top-label path derives from row i of a probability matrix ``P`` (N, K) with labels ``y``:

* ``confidence[i] = P[i].max()`` (in P's dtype: float32 stays float32);
* ``predicted[i] = P[i].argmax()``, the **lowest** index among tied maxima;
* ``correct[i] = (y[i] == predicted[i])``;
* ``num_classes = K``.

For any such matrix, every top-label (``max_prob=True``) metric of the pairs equals the matrix
form: ``gce(confidence=c, correct=ok, predicted=pred, num_classes=K, **kw) == gce(y, P, **kw)``.
Nothing else about the rows matters. The rules of docs/spec.md apply to the confidences with one
difference: a confidence is kept if ``confidence > threshold`` (strict), and at ``threshold=0``
(the default) **every** confidence is kept, exact 0.0 included (:func:`kept_rows`). A matrix's
top-label confidence is at least 1/K > 0, so this never changes the equality above; it keeps the
0.0 of a score that is not a row maximum (an LLM that says 0%, a random forest's P(y = 1)).
Under even binning 0.0 falls in bin 0 and a confidence of exactly 1.0 in the extra bin of its
own (index B); a binary 1-D ``probs`` p is the
matrix ``[1 - p, p]``, so its pairs are ``confidence = max(1 - p, p)`` and ``predicted = 1`` only
where ``p > 1 - p``. Pooled metrics (ECE, MCE, RMSCE) need only ``confidence`` and ``correct``;
class-conditional ones (CCE) also ``predicted`` and ``num_classes`` (the average is over all
``num_classes`` classes, predicted or not).

All-probabilities metrics (``max_prob=False``: SCE, ACE, TACE) need every class's probability
and refuse pairs with :class:`calibkit.errors.TopLabelInputError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import _native
from ._params import as_num_classes
from ._validate import as_array, as_labels
from .errors import (
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    ShapeMismatchError,
    TopLabelInputError,
)

__all__ = ["Pairs", "resolve", "is_top_label", "toplabel_space", "require_top_label", "ALL_PROBS_HINT",
           "kept_rows", "rows"]

#: What to pass instead when a metric needs every class's probability.
ALL_PROBS_HINT = (
    "it needs every class's probability, and confidence/correct hold only the top one: pass "
    "labels and the (N, K) probability matrix instead, or use a top-label metric (ECE, CCE, "
    "MCE, RMSCE, or gce with max_prob=True)"
)


@dataclass(frozen=True)
class Pairs:
    """Structurally validated top-label input (values are checked by the Rust pass).

    Attributes
    ----------
    confidence : numpy.ndarray of shape (N,), float32 or float64, contiguous
    correct : numpy.ndarray of shape (N,), uint8 (0/1 unless the kernel refuses it)
    predicted : numpy.ndarray of shape (N,), int64, or None
    num_classes : int or None
    """

    confidence: np.ndarray
    correct: np.ndarray
    predicted: np.ndarray | None
    num_classes: int | None

    @property
    def n(self) -> int:
        return self.confidence.shape[0]

    @property
    def k(self) -> int:
        """K for the kernels: ``num_classes``, or 1 when only pooled metrics are possible."""
        return 1 if self.num_classes is None else self.num_classes

    def native_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
        """The leading arguments of the ``calibkit._native.pairs_*`` functions."""
        return (self.confidence, self.correct, self.predicted, self.k)

    @cached_property
    def has_zero(self) -> bool:
        """Whether a confidence is at or below 0 (one ``min`` pass, done once; only
        :func:`evaluate` needs it, the other paths read it off the kernel's counts). NaN gives
        False (the kernel then refuses it)."""
        return self.confidence.shape[0] > 0 and bool(self.confidence.min() <= 0)


def keep_above(threshold: float) -> float:
    """The pair form's one keep rule as a strict lower bound: a confidence is kept when it is
    above this, i.e. ``confidence > threshold``, and every one at ``threshold == 0`` (exact 0.0
    included; see the module docstring): -inf there. Used by every pair path (:func:`kept_rows`,
    :mod:`calibkit.binned.weights`, resampling, ``calibkit.dask``'s selection kernel)."""
    return -np.inf if threshold == 0.0 else float(threshold)


def kept_rows(confidence: np.ndarray, threshold: float) -> np.ndarray:
    """Indices (int64) of the kept confidences (:func:`keep_above`)."""
    above = keep_above(threshold)
    if above == -np.inf:
        return np.arange(confidence.shape[0], dtype=np.int64)
    return np.flatnonzero(confidence > np.float64(above)).astype(np.int64)


def rows(pairs: Pairs, class_conditional: bool, threshold: float):
    """``(group, score, outcome, row)`` of the kept pairs, values checked by the pair kernel's
    checks: group 0 (or the predicted class), score the confidence (float64, exact widening),
    outcome ``correct`` (float64), row the index of each kept pair."""
    conf = np.ascontiguousarray(pairs.confidence, dtype=np.float64)
    _native.check_pairs(conf, pairs.correct, pairs.predicted, pairs.k)
    row = kept_rows(conf, threshold)
    if class_conditional:
        assert pairs.predicted is not None  # require_top_label: class-conditional pairs have it
        group = np.ascontiguousarray(pairs.predicted[row], dtype=np.int64)
    else:
        group = np.zeros(row.size, dtype=np.int64)
    return group, conf[row], pairs.correct[row].astype(np.float64), row


def _pair_table(pairs: Pairs, binning: str, class_conditional: bool, threshold: float,
                num_bins: int, units: bool = False) -> tuple:
    """The pair table, in the pair kernels' layout, under the pair form's keep rule.

    The kernel keeps ``confidence > threshold``. At threshold 0 the rule keeps every pair, so
    when the kernel's counts fall short of N (a confidence of 0, or below it within the
    tolerance; no extra pass otherwise): even bins add those pairs to bin 0 of their group,
    where the even bin rule puts them, exactly (the bits of a kernel keeping them); adaptive
    bins (edges depend on every kept score) bin the
    kept rows by the one weighted primitive (unit weights). With ``units`` a fifth element
    holds the exact score units (:mod:`calibkit.binned.units`); the pairs added to even bins
    add theirs exactly, so the table is bitwise that of a kernel keeping them."""
    from .binned.table import _wrap_units, grouped_bin_stats

    # the even branch below adds exactly, so it asks the kernel for units in any case
    need = units or (threshold == 0.0 and binning == "even")
    c, s, o, e, *u = _wrap_units(_native.pairs_bin_stats(*pairs.native_args(), binning,
                                                         bool(class_conditional), threshold,
                                                         num_bins, units=need))
    kernel_units = u[0] if u else None
    if threshold != 0.0 or int(c.sum()) == pairs.n:
        return (c, s, o, e, kernel_units) if units else (c, s, o, e)
    if binning == "even":
        # The pairs the kernel dropped, binned by the one primitive (the even bin rule puts
        # them in bin 0) with their exact units, added to the kernel's table exactly: the
        # bits of a kernel that kept them.
        low = np.flatnonzero(pairs.confidence <= 0)
        g = None
        if class_conditional:
            assert pairs.predicted is not None  # require_top_label
            g = pairs.predicted[low]
        lc, ls, lo, _, lu = grouped_bin_stats(
            g, pairs.confidence[low], pairs.correct[low].astype(np.float64), None,
            num_groups=c.shape[0], binning="even", num_bins=num_bins, units=True)
        c = c + lc.astype(c.dtype)
        o = o + lo
        total = None
        if kernel_units is not None and lu is not None:
            total = kernel_units + lu
            s = total.value()
        else:  # a table without units (values the pair checks rule out): float sums
            s = s + ls
        return (c, s, o, e, total) if units else (c, s, o, e)
    from .binned.table import grouped_bin_stats

    group, score, outcome, _ = rows(pairs, class_conditional, threshold)
    c, s, o, e, *u = grouped_bin_stats(group, score, outcome, None,
                                       num_groups=pairs.k if class_conditional else 1,
                                       binning=binning, num_bins=num_bins, units=units)
    e[:, 0] = threshold
    return (c.astype(np.int64), s, o, e, *u)


def _as_confidence(confidence) -> np.ndarray:
    c = as_array(confidence, "confidence", "an array of top-label probabilities")
    if c.dtype.kind not in "fiu":
        raise InputTypeError(
            f"confidence must hold real numbers (each prediction's top-label probability), got "
            f"dtype {c.dtype}; did you swap confidence and correct?"
        )
    if c.ndim != 1:
        raise ShapeMismatchError(
            f"confidence must be 1-D (one top-label probability per prediction), got shape "
            f"{c.shape}; for a probability matrix pass labels and probs instead"
        )
    if c.dtype not in (np.float32, np.float64):
        c = c.astype(np.float64)
    return np.ascontiguousarray(c)


def _as_correct(correct) -> np.ndarray:
    o = as_array(correct, "correct", "an array of booleans or 0/1")
    if o.ndim != 1:
        raise ShapeMismatchError(
            f"correct must be 1-D (whether each prediction was right), got shape {o.shape}"
        )
    if o.dtype.kind == "b":
        return np.ascontiguousarray(o).view(np.uint8)
    if o.dtype.kind not in "fiu":
        raise InputTypeError(f"correct must hold booleans or 0/1, got dtype {o.dtype}")
    if o.dtype.kind in "iu" and o.dtype.itemsize == 1:  # the kernel refuses values other than 0/1
        return np.ascontiguousarray(o).view(np.uint8)
    bad = np.flatnonzero((o != 0) & (o != 1))
    if bad.size:
        i = int(bad[0])
        raise InvalidLabelsError(
            f"correct[{i}] is {o[i].item()!r}: correct must be boolean or 0/1 (1 = the prediction "
            f"was right); for class indices pass predicted= (with num_classes=)"
        )
    return o.astype(np.uint8)


def is_top_label(labels, probs, confidence, correct, predicted=None, num_classes=None) -> bool:
    """Whether a call uses the top-label form; refuses mixed or incomplete forms (no conversion,
    so it also serves lazy arrays)."""
    if (confidence is None and correct is None and predicted is None and num_classes is None
            and labels is not None and probs is not None):
        return False  # the matrix form, decided in a few identity tests
    top = {"confidence": confidence, "correct": correct, "predicted": predicted,
           "num_classes": num_classes}
    given = [name for name, v in top.items() if v is not None]
    if not given:
        if labels is None or probs is None:
            missing = " and ".join(n for n, v in (("labels", labels), ("probs", probs)) if v is None)
            raise InputTypeError(
                f"{missing} missing: pass labels and probs, or confidence= and correct= (one "
                f"top-label probability and one 0/1 outcome per prediction)"
            )
        return False
    matrix = [name for name, v in (("labels", labels), ("probs", probs)) if v is not None]
    if matrix:
        raise InvalidParameterError(
            f"{' and '.join(matrix)} given together with {', '.join(given)}: pass either labels "
            f"and probs, or the top-label form confidence= and correct= (with predicted= and "
            f"num_classes= for class-conditional metrics), not both"
        )
    if confidence is None or correct is None:
        raise InvalidParameterError(
            "the top-label form needs both confidence= (N,) and correct= (N,) "
            f"(got only {', '.join(given)})"
        )
    if (predicted is None) != (num_classes is None):
        have, need = ("predicted", "num_classes") if num_classes is None else ("num_classes", "predicted")
        raise InvalidParameterError(
            f"{have}= needs {need}= too: class-conditional metrics average over all "
            f"num_classes classes, which the predictions alone cannot tell"
        )
    return True


def resolve(labels, probs, confidence, correct, predicted=None, num_classes=None, *,
            allow_empty: bool = False) -> Pairs | None:
    """The top-label :class:`Pairs`, or None when the call uses ``(labels, probs)``.

    Raises a calibkit error when the two forms are mixed, when neither is complete, or when an
    argument is structurally wrong (values are checked by the Rust pass). Empty input is
    refused unless ``allow_empty`` (a streaming batch).
    """
    if not is_top_label(labels, probs, confidence, correct, predicted, num_classes):
        return None
    c = _as_confidence(confidence)
    o = _as_correct(correct)
    p = None if predicted is None else as_labels(predicted, name="predicted")
    k = None if num_classes is None else as_num_classes(num_classes)
    if o.shape[0] != c.shape[0]:
        raise ShapeMismatchError(
            f"correct has {o.shape[0]} entries but confidence has {c.shape[0]}; pass one outcome "
            f"per confidence"
        )
    if p is not None and p.shape[0] != c.shape[0]:
        raise ShapeMismatchError(
            f"predicted has {p.shape[0]} entries but confidence has {c.shape[0]}; pass one "
            f"predicted class per confidence"
        )
    if c.shape[0] == 0 and not allow_empty:
        raise ShapeMismatchError("confidence is empty (0 entries); pass at least one prediction")
    return Pairs(c, o, p, k)


def require_top_label(pairs: Pairs, max_prob: bool, class_conditional: bool,
                      what: str = "this metric") -> None:
    """Refuses a grouping the pairs cannot give, saying why and what to pass instead."""
    if not max_prob:
        raise TopLabelInputError(
            f"{what} with max_prob=False (as SCE, ACE and TACE) cannot use top-label input: "
            f"{ALL_PROBS_HINT}"
        )
    if class_conditional and pairs.predicted is None:
        raise TopLabelInputError(
            f"{what} is class-conditional: pass predicted= (the predicted class of each "
            f"confidence) and num_classes= (K) along with confidence= and correct="
        )


# -- the native calls (one per entry point kind) ---------------------------------------------------
def gce(pairs: Pairs, binning: str, max_prob: bool, class_conditional: bool, threshold: float,
        norm: str, num_bins: int) -> float:
    """:func:`calibkit.gce` of validated-parameter pairs (one pass of the Rust pair kernel)."""
    require_top_label(pairs, max_prob, class_conditional, "gce")
    if threshold == 0.0:  # the table (its counts tell whether the kernel dropped a pair)
        from .binned.table import reduce_table

        c, s, o, _ = _pair_table(pairs, binning, class_conditional, threshold, num_bins)
        return reduce_table(c, s, o, norm, bool(class_conditional))
    return _native.pairs_gce(*pairs.native_args(), binning, bool(class_conditional), threshold,
                             norm, num_bins)


def bin_stats(pairs: Pairs, binning: str, max_prob: bool, class_conditional: bool,
              threshold: float, num_bins: int, units: bool = False) -> tuple:
    """``(counts, sum_score, sum_outcome, edges)`` as ``calibkit._native.bin_stats`` gives them
    (with ``units``, and the exact score units or None)."""
    require_top_label(pairs, max_prob, class_conditional, "calibration_bins")
    return _pair_table(pairs, binning, class_conditional, threshold, num_bins, units)


def evaluate(pairs: Pairs, specs: list, num_bins: list) -> np.ndarray:
    """Values of the (top-label) ``specs`` at each bin count, shape (len(specs), len(num_bins))."""
    if any(float(t) == 0.0 for (_, _, _, t, _) in specs) and pairs.has_zero:
        from .binned.table import reduce_table

        out = np.empty((len(specs), len(num_bins)))
        for i, (binning, _, cc, t, norm) in enumerate(specs):
            for j, b in enumerate(num_bins):
                c, s, o, _ = bin_stats(pairs, binning, True, cc, float(t), int(b))
                out[i, j] = reduce_table(c, s, o, norm, bool(cc))
        return out
    return np.asarray(_native.pairs_evaluate(*pairs.native_args(), specs, num_bins),
                      dtype=np.float64)


def toplabel_space(space, has_predicted: bool):
    """The metric space of an ``evaluate`` call with top-label input (see
    :func:`calibkit.evaluate`): by default the paper's max-prob metrics the input allows."""
    from .binned.spec import _as_space

    if space is None:
        space = _as_space(None).select(max_prob=True)
        if not has_predicted:
            space = space.select(class_conditional=False)
        return space
    space = _as_space(space)
    need_all = [s.name for s in space if not s.max_prob]
    if need_all:
        raise TopLabelInputError(
            f"evaluate: {', '.join(need_all)} cannot use top-label input: {ALL_PROBS_HINT}; "
            f"or leave space=None for every max-prob metric"
        )
    need_pred = [s.name for s in space if s.class_conditional]
    if need_pred and not has_predicted:
        raise TopLabelInputError(
            f"evaluate: {', '.join(need_pred)} are class-conditional: pass predicted= (the "
            f"predicted class of each confidence) and num_classes= (K) along with confidence= "
            f"and correct=, or leave space=None for the pooled max-prob metrics"
        )
    return space
