"""Numerically stable softmax and log-softmax over the class axis."""

from __future__ import annotations

import numbers

import numpy as np

from ._validate import as_array
from .errors import InputTypeError, InvalidParameterError, InvalidScoresError, ShapeMismatchError

__all__ = ["softmax", "log_softmax"]


def _as_logits(logits, axis) -> tuple[np.ndarray, int]:
    """``(logits as float32/float64, axis as a non-negative int)``; calibkit errors otherwise."""
    z = as_array(logits, "logits", "an array of numbers")
    if z.dtype.kind not in "fiub":
        raise InputTypeError(f"logits must hold real numbers, got dtype {z.dtype}")
    if z.dtype.kind != "f" or z.dtype.itemsize != 4:
        z = z.astype(np.float64)
    elif not z.dtype.isnative:  # big-endian float32 is float32
        z = z.astype(np.float32)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise InvalidParameterError(f"axis must be an integer, got {axis!r}")
    if z.ndim == 0:
        raise ShapeMismatchError("logits is a scalar; pass an array of shape (N, K)")
    if not -z.ndim <= int(axis) < z.ndim:
        raise InvalidParameterError(
            f"axis {int(axis)} is out of range for logits of shape {z.shape}")
    ax = int(axis) % z.ndim
    if z.shape[ax] == 0:
        raise ShapeMismatchError(f"logits has no classes along axis {ax} (shape {z.shape})")
    if not np.all(np.isfinite(z)):
        raise InvalidScoresError(
            "logits: contains NaN or infinite values; remove or replace them first")
    return z, ax


def _shifted(z: np.ndarray, axis: int) -> np.ndarray:
    """``z`` minus its maximum along ``axis`` (finite logits: every entry <= 0). A difference
    beyond the float range (logits +-1e308) is -inf, the correctly rounded result: its
    probability underflows to 0 (and its log to -inf) anyway, so the overflow is no error."""
    with np.errstate(over="ignore"):
        return z - np.max(z, axis=axis, keepdims=True)


def log_softmax(logits, axis: int = -1) -> np.ndarray:
    """Log of the softmax of ``logits`` along ``axis``, computed stably.

    Parameters
    ----------
    logits : array_like of shape (N, K)
        Unnormalised scores. float32 input stays float32; other input becomes float64.
    axis : int, default -1
        The class axis.

    Returns
    -------
    numpy.ndarray of the same shape as ``logits``.

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> np.round(np.exp(calibkit.log_softmax([[0.0, np.log(3.0)]])), 3)
    array([[0.25, 0.75]])
    """
    z, axis = _as_logits(logits, axis)
    shifted = _shifted(z, axis)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def softmax(logits, axis: int = -1) -> np.ndarray:
    """Softmax of ``logits`` along ``axis`` (rows sum to 1), computed stably.

    Use it to turn a network's logits into the probabilities every calibkit metric expects.

    Parameters
    ----------
    logits : array_like of shape (N, K)
        Unnormalised scores. float32 input stays float32; other input becomes float64.
    axis : int, default -1
        The class axis.

    Returns
    -------
    numpy.ndarray of the same shape as ``logits``, each slice along ``axis`` summing to 1.

    Examples
    --------
    >>> import calibkit
    >>> calibkit.softmax([[0.0, 0.0]])
    array([[0.5, 0.5]])
    """
    z, axis = _as_logits(logits, axis)
    e = np.exp(_shifted(z, axis))
    return e / np.sum(e, axis=axis, keepdims=True)
