"""Numerically stable softmax and log-softmax over the class axis."""

from __future__ import annotations

import numpy as np

__all__ = ["softmax", "log_softmax"]


def _as_logits(logits) -> np.ndarray:
    z = np.asarray(logits)
    if z.dtype != np.float32:
        z = z.astype(np.float64)
    if not np.all(np.isfinite(z)):
        raise ValueError("logits: contains NaN or infinite values; remove or replace them first")
    return z


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
    z = _as_logits(logits)
    m = np.max(z, axis=axis, keepdims=True)
    shifted = z - m
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
    z = _as_logits(logits)
    e = np.exp(z - np.max(z, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
