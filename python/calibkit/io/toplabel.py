"""Top-label prediction files: one confidence per prediction and whether it was right.

The layouts (``.npz`` arrays or CSV columns, names in any case): ``confidence`` plus
``correct`` (0/1 or true/false), or ``labels`` + ``pred`` (or ``predicted``) + ``confidence``
(the model-zoo layout). Only the top-label metrics can be computed from them. The values are
checked by calibkit's top-label input rules (:mod:`calibkit._toplabel` and the pair kernels'
checks), each problem a :class:`~calibkit.io.formats.PredictionFileError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _native, _toplabel
from .._params import shown
from .._validate import as_labels
from ..errors import CalibkitError
from .formats import fail

__all__ = ["TopLabelPredictions", "toplabel_record"]

_TRUE = {"1", "true", "t", "yes", "y", "1.0"}
_FALSE = {"0", "false", "f", "no", "n", "0.0"}


@dataclass
class TopLabelPredictions:
    """One confidence per prediction and whether it was right (a top-label file).

    Attributes
    ----------
    confidence : numpy.ndarray of float64, shape (N,)
    correct : numpy.ndarray of bool, shape (N,)
    predicted : numpy.ndarray of int64, shape (N,), or None
    num_classes : int or None
        From ``--num-classes``, else ``max(labels, predicted) + 1`` when both are present.
    source : str
    notes : list of str
        What was inferred (printed by the command).
    """

    confidence: np.ndarray
    correct: np.ndarray
    predicted: np.ndarray | None
    num_classes: int | None
    source: str
    notes: list = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.confidence.shape[0])


def _one_d(values, name: str, source: str) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise fail(source, f"{name!r} must be one value per prediction (1-D), got shape {a.shape}")
    return a


def _as_float(values, name: str, source: str) -> np.ndarray:
    """Numbers (or CSV text holding numbers) as float64."""
    a = _one_d(values, name, source)
    try:
        return a.astype(np.float64)
    except (TypeError, ValueError):
        bad = next(i for i, v in enumerate(a) if not _is_float(v))
        raise fail(source, f"{name!r} must hold numbers (row {bad} has {str(a[bad])!r})") from None


def _is_float(v) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _as_bool(values, name: str, source: str) -> np.ndarray:
    """0/1, booleans or the words true/false (CSV text) as booleans."""
    a = _one_d(values, name, source)
    if a.dtype.kind == "b":
        return a
    if a.dtype.kind in "iuf":
        if not np.all(np.isin(a, (0, 1))):
            bad = int(np.flatnonzero(~np.isin(a, (0, 1)))[0])
            raise fail(source, f"{name!r} must be 0/1 or true/false (row {bad} has {shown(a[bad])})")
        return a.astype(bool)
    out = []
    for i, v in enumerate(a):
        t = str(v).strip().lower()
        if t in _TRUE:
            out.append(True)
        elif t in _FALSE:
            out.append(False)
        else:
            raise fail(source, f"{name!r} must be 0/1 or true/false (row {i} has {str(v)!r})")
    return np.array(out, dtype=bool)


def _as_index(values, name: str, source: str) -> np.ndarray:
    """Class indices (numbers, or CSV text holding numbers) by calibkit's label rule."""
    a = _one_d(values, name, source)
    if a.dtype.kind in "USO":  # CSV text
        try:
            a = a.astype(np.float64)
        except ValueError:
            pass
    try:
        return as_labels(a, name)
    except CalibkitError as exc:
        raise fail(source, str(exc)) from exc


def toplabel_record(cols: dict, source: str, num_classes: int | None) -> TopLabelPredictions | None:
    """A top-label record from named columns/arrays, or None when the layout is not top-label
    (no ``confidence``, or a ``confidence`` beside a label column but neither ``correct`` nor a
    predicted class: a full-matrix file with an extra column)."""
    names = {k.lower(): k for k in cols}
    if "confidence" not in names:
        return None
    pred_key = names.get("pred") or names.get("predicted") or names.get("prediction")
    label_key = next((names[k] for k in ("labels", "label", "y", "target") if k in names), None)
    if "correct" not in names and pred_key is None:
        if label_key is not None:
            return None
        raise fail(source, "has 'confidence' but neither 'correct' nor labels + 'pred': a "
                           "top-label file needs confidence,correct or labels,pred,confidence")
    conf = _as_float(cols[names["confidence"]], names["confidence"], source)
    if conf.size == 0:
        raise fail(source, "holds no predictions ('confidence' is empty)")
    notes = []
    predicted = None if pred_key is None else _as_index(cols[pred_key], pred_key, source)
    if "correct" in names:
        correct = _as_bool(cols[names["correct"]], names["correct"], source)
    elif label_key is not None:
        y = _as_index(cols[label_key], label_key, source)
        assert predicted is not None
        if y.shape != predicted.shape:
            raise fail(source, f"{label_key!r} and {pred_key!r} have different lengths")
        correct = y == predicted
        notes.append(f"correct = ({label_key} == {pred_key})")
    else:
        raise fail(source, f"has 'confidence' and {pred_key!r} but neither 'correct' nor a "
                           f"labels column: a top-label file needs confidence,correct or "
                           f"labels,pred,confidence")
    if predicted is not None and num_classes is not None and predicted.size:
        for key, idx in ((pred_key, predicted), (label_key, None)):
            if key is None:
                continue
            v = idx if idx is not None else _as_index(cols[key], key, source)
            row = int(np.argmax(v))
            if int(v[row]) >= num_classes:
                raise fail(source, f"--num-classes {num_classes}: {key!r} holds class "
                                   f"{int(v[row])} (row {row}); the number of classes must exceed "
                                   "every class index (leave --num-classes out to take the "
                                   "largest index + 1)")
    if predicted is not None and num_classes is None and predicted.size:
        top = int(predicted.max())
        if label_key is not None:
            top = max(top, int(_as_index(cols[label_key], label_key, source).max()))
        num_classes = top + 1
        notes.append(f"{num_classes} classes assumed (largest class index + 1; set --num-classes)")
    try:  # the top-label input rules of every metric (shapes, then the pair kernels' checks)
        pairs = _toplabel.resolve(None, None, conf, correct, predicted,
                                  None if predicted is None else num_classes)
        assert pairs is not None
        _native.check_pairs(*pairs.native_args())
    except CalibkitError as exc:
        raise fail(source, str(exc)) from exc
    return TopLabelPredictions(conf, correct, predicted, num_classes, source, notes)
