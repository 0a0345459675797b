"""Input checks of :class:`calibkit.torch.CalibrationError`: tensors stay on their device.

The structural checks (shapes, dtypes, devices) read only tensor metadata. The value checks
(finite, within [0, 1] up to ``RANGE_TOL``, rows summing to 1 up to ``ROW_SUM_TOL``, labels in
``[0, K)``, ``correct`` 0/1, weights finite and >= 0) reduce each batch on the device to its
extremes (one small tensor crosses to the host), judged by ``_validate.surely_valid``,
conservative at the row-sum boundary (the margin of ``row_sum_surely_ok`` in
``rust/kernels/core/validate.rs``: the device sums a row in another order than the kernel);
only a batch it cannot pass is copied to the host and checked by the engine's own checks
(``calibkit._validate``, ``calibkit._native.check_values`` / ``check_pairs``,
``calibkit._params.check_weights``), which raise their usual error and message, or pass it.

What is converted (docs/spec.md's rule, on the device): a tensor that requires grad is
detached (a calibration metric has no gradient); float16, bfloat16, integer and bool scores
become float64; float32 and float64 stay as they are; non-contiguous tensors are read as they
are. NumPy arrays, lists and DLPack objects become tensors on the metric's device. Tensors on
two devices in one call, or on a device other than the metric's, raise
:class:`~calibkit.errors.InputTypeError` saying which and how to fix it.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _native, _toplabel
from .._params import as_num_classes, check_weights
from .._validate import (
    labels_ndim_error,
    length_mismatch_error,
    no_columns_error,
    probs_ndim_error,
    surely_valid,
    validate_inputs,
)
from ..errors import InputTypeError, ShapeMismatchError
from .tables import Scores, use_engine

__all__ = ["as_tensor", "same_device", "matrix_scores", "pair_scores"]

_FLOATS = (torch.float32, torch.float64)


def as_tensor(x, name: str, device: torch.device) -> torch.Tensor:
    """``x`` as a tensor without gradient: a tensor as it is (detached), anything else
    (NumPy, lists, DLPack objects) on ``device``."""
    if isinstance(x, torch.Tensor):
        t = x.detach()
    elif x is None or isinstance(x, (str, bytes)):
        raise InputTypeError(f"{name} must be a tensor or an array, got {type(x).__name__}")
    elif hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        t = torch.from_dlpack(x)
    else:
        try:
            t = torch.as_tensor(np.asarray(x), device=device)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise InputTypeError(f"{name} could not be converted to a tensor: {exc}") from exc
    if t.is_complex():
        raise InputTypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    return t


def same_device(tensors: dict, device: torch.device | None) -> torch.device:
    """The one device of ``tensors`` ({name: tensor or None}), which must be ``device`` when
    given (the metric's), else an :class:`InputTypeError` naming both."""
    devs = {n: t.device for n, t in tensors.items() if t is not None}
    found = sorted({str(d) for d in devs.values()})
    if len(found) > 1:
        where = ", ".join(f"{n} on {d}" for n, d in devs.items())
        raise InputTypeError(
            f"the inputs are on different devices ({where}); move them to one device, e.g. "
            f"target.to(preds.device)"
        )
    dev = next(iter(devs.values()))
    if device is not None and _norm(dev) != _norm(device):
        raise InputTypeError(
            f"the inputs are on {dev} but the metric's state is on {device}; move the metric "
            f"with metric.to({str(dev)!r}) (or the inputs to {device})"
        )
    return dev


def _target_device(device: torch.device | None, *inputs) -> torch.device:
    """Where arrays that are not tensors (NumPy, lists) go: the metric's device, else that of the
    first tensor among ``inputs``, else the CPU."""
    if device is not None:
        return device
    return next((x.device for x in inputs if isinstance(x, torch.Tensor)), torch.device("cpu"))


def _norm(d: torch.device) -> tuple:
    d = torch.device(d)
    idx = d.index
    if d.type == "cuda" and idx is None:
        idx = torch.cuda.current_device() if torch.cuda.is_available() else 0
    return (d.type, idx or 0)


def _float_scores(t: torch.Tensor, name: str) -> torch.Tensor:
    """float32/float64 as they are; other real dtypes (float16, bfloat16, ints, bool) as
    float64, as the engine converts them (complex was refused by :func:`as_tensor`)."""
    if t.dtype in _FLOATS:
        return t
    return t.to(torch.float64)


def _is_integer(dtype: torch.dtype) -> bool:
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def _host(t: torch.Tensor | None):
    return None if t is None else t.cpu().numpy()


def _labels(y: torch.Tensor, name: str) -> torch.Tensor:
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise labels_ndim_error(tuple(y.shape), name)
    if y.dtype == torch.bool or _is_integer(y.dtype):
        return y.to(torch.int64)
    if y.dtype.is_floating_point:
        y64 = y.to(torch.float64)
        if not bool((torch.isfinite(y64) & (y64 == torch.round(y64))).all()):
            from .._validate import as_labels

            as_labels(_host(y64), name)  # raises the engine's message
        return y64.to(torch.int64)
    raise InputTypeError(f"{name} must hold integers, got dtype {y.dtype}")


def _weights(w: torch.Tensor | None, n: int) -> torch.Tensor | None:
    if w is None:
        return None
    if w.ndim != 1 or w.shape[0] != n:
        raise ShapeMismatchError(
            f"sample_weight must have shape ({n},), one weight per row, got {tuple(w.shape)}"
        )
    w = w.to(torch.float64)
    if not bool((torch.isfinite(w) & (w >= 0)).all()) or not bool(torch.isfinite(w.sum())):
        check_weights(_host(w), "sample_weight", allow_all_zero=True)
    return w


def matrix_scores(labels, probs, sample_weight, num_classes: int | None,
                  device: torch.device | None) -> Scores:
    """Checked :class:`~calibkit.torch.tables.Scores` of ``(labels, probs)`` (probs (N, K),
    (N, 1) or (N,) binary P(y=1)), or the engine's error."""
    dev = _target_device(device, probs, labels, sample_weight)
    p = as_tensor(probs, "preds", dev)
    y = as_tensor(labels, "target", dev)
    w = None if sample_weight is None else as_tensor(sample_weight, "sample_weight", dev)
    same_device({"preds": p, "target": y, "sample_weight": w}, device)
    p = _float_scores(p, "preds")
    if p.ndim == 1 or (p.ndim == 2 and p.shape[1] == 1):
        q = p.reshape(-1)
        p = torch.stack([1 - q, q], dim=1)  # 1 - p in the input's dtype, as the engine does
    elif p.ndim != 2:
        raise probs_ndim_error(tuple(p.shape), "preds")
    if p.shape[1] == 0:
        raise no_columns_error("preds")
    y = _labels(y, "target")
    n, k = p.shape
    if y.shape[0] != n:
        raise length_mismatch_error(int(y.shape[0]), n, "preds", "target")
    if num_classes is not None and k != num_classes:
        raise ShapeMismatchError(
            f"preds has K={k} classes but the metric was built with num_classes={num_classes}; "
            f"every batch must have num_classes columns"
        )
    w = _weights(w, n)
    if n and use_engine(p.device):  # the engine's own pass, on the tensors' memory
        _native.check_values(*validate_inputs(_host(y), _host(p)))
    elif n:
        lo, hi = torch.aminmax(p)  # the extremes, compared exactly in float64; NaN fails
        gap = (p.sum(dim=1, dtype=torch.float64) - 1.0).abs().max()
        y_lo, y_hi = torch.aminmax(y)
        lo_, hi_, dev_, ylo_, yhi_ = torch.stack(
            [lo.double(), hi.double(), gap, y_lo.double(), y_hi.double()]).tolist()  # one sync
        if not (surely_valid(lo_, hi_, dev_, k) and ylo_ >= 0 and yhi_ < k):
            yy, pp = validate_inputs(_host(y), _host(p))
            _native.check_values(yy, pp)  # raises the engine's error, or the rows pass
    return Scores.of_matrix(p, y, w)


def pair_scores(confidence, correct, predicted, num_classes, sample_weight,
                device: torch.device | None) -> Scores:
    """Checked top-label :class:`~calibkit.torch.tables.Scores` (``confidence``, ``correct``,
    optional ``predicted`` with ``num_classes``), or the engine's error."""
    dev = _target_device(device, confidence, correct, predicted, sample_weight)
    c = as_tensor(confidence, "confidence", dev)
    o = as_tensor(correct, "correct", dev)
    pr = None if predicted is None else as_tensor(predicted, "predicted", dev)
    w = None if sample_weight is None else as_tensor(sample_weight, "sample_weight", dev)
    same_device({"confidence": c, "correct": o, "predicted": pr, "sample_weight": w}, device)
    if (pr is None) != (num_classes is None):
        _toplabel.is_top_label(None, None, 0, 0, predicted, num_classes)  # raises its message
    k = None if num_classes is None else as_num_classes(num_classes)
    if c.ndim != 1:
        raise ShapeMismatchError(
            f"confidence must be 1-D (one top-label probability per prediction), got shape "
            f"{tuple(c.shape)}; for a probability matrix pass preds and target instead"
        )
    c = _float_scores(c, "confidence")
    n = int(c.shape[0])
    for name, t in (("correct", o), ("predicted", pr)):
        if t is not None and (t.ndim != 1 or t.shape[0] != n):
            raise ShapeMismatchError(
                f"{name} has shape {tuple(t.shape)} but confidence has {n} entries; pass one "
                f"per confidence"
            )
    if pr is not None:
        pr = _labels(pr, "predicted")
    w = _weights(w, n)
    if n and use_engine(c.device):
        _host_pair_check(c, o, pr, k)
    elif n:
        lo, hi = torch.aminmax(c)  # the extremes, compared exactly in float64; NaN fails
        ok = torch.ones((), dtype=torch.bool, device=c.device)
        if o.dtype != torch.bool:
            ok = ok & ((o == 0) | (o == 1)).all()
        if pr is not None and k is not None:
            p_lo, p_hi = torch.aminmax(pr)
            ok = ok & (p_lo >= 0) & (p_hi < k)
        lo_, hi_ = torch.stack([lo.double(), hi.double()]).tolist()
        if not (bool(ok) and surely_valid(lo_, hi_)):
            _host_pair_check(c, o, pr, k)
    return Scores.of_pairs(c, o.to(torch.bool), pr, 1 if k is None else k, w)


def _host_pair_check(c, o, pr, k) -> None:
    """The engine's checks of top-label pairs (``calibkit._toplabel``), on the host: raises its
    error, or the pairs pass."""
    pairs = _toplabel.resolve(None, None, _host(c), _host(o), _host(pr), k, allow_empty=True)
    assert pairs is not None
    _native.check_pairs(np.ascontiguousarray(pairs.confidence, dtype=np.float64), pairs.correct,
                        pairs.predicted, pairs.k)
