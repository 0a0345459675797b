"""Smooth ECE (Blasiok & Nakkiran, 2023), number for number as relplot 1.0.3's ``smECE``.

The estimator (relplot's ``smooth_ece`` with its reflected Gaussian kernel):

1. Grid: ``M = max(2000, round(20 / sigma)) // 2 + 1`` points on [0, 1]. Each prediction's
   residual ``r = s - o`` (score minus outcome) and its weight are spread over the two nearest
   grid points by linear interpolation (Rust, :func:`calibkit._native.smooth_grid`).
2. Kernel: a Gaussian of width ``sigma`` sampled at ``linspace(0, 1, M) - 0.5``, convolved with
   the grid reflected at 0 and 1 (``[flip(v)[:-1], v, flip(v)[1:]]``).
3. Evaluation: both smoothed grids linearly interpolated at ``T = max(round(10 / sigma), 200)``
   points ``t`` of ``linspace(0, 1, T)``; ``dens(t) = smoothed mass + 1e-4``;
   ``smECE_sigma = sum_t |smoothed residual(t)| / sum_t dens(t)``.
4. Bandwidth (relplot's ``search_param``): ``sigma = 1`` if ``1 < smECE_1``; otherwise 10
   bisection steps on [0, 1] towards the fixed point ``sigma = smECE_sigma``: a midpoint is
   "small enough" when ``sigma < 0.001`` or ``sigma < smECE_sigma``. The result is
   ``smECE_sigma`` at the final upper end of the interval that failed the test (``start``).

Only step 1 reads the N predictions, once per distinct grid size (one size for every
``sigma >= 0.01``); the bandwidth search reruns only steps 2-3 on the grid.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np

from .. import _native
from .._budget import check_grid
from ..errors import NumericalError
from .common import groups, positive_float

__all__ = ["smece"]

#: relplot 1.0.3 constants (kernels.py, metrics.py, config.py).
_DENS_EPS = 1e-4
_MIN_EVAL = 200
_SEARCH_EPS = 1e-3
_SEARCH_STEPS = 10
#: Grids above this size are convolved by FFT (scipy) instead of np.convolve.
_FFT_ABOVE = 1001


def _grid_size(sigma: float) -> int:
    return max(2000, round(20 / sigma)) // 2 + 1


def _kernel(m: int, sigma: float) -> np.ndarray:
    t = np.linspace(0, 1, m)
    res = np.exp(-(t - 0.5) * (t - 0.5) / (2 * sigma**2))
    res /= np.sqrt(2 * np.pi) * sigma
    return res


def _reflect_convolve(grids: np.ndarray, ker: np.ndarray) -> np.ndarray:
    """relplot's ReflectedGaussianKernel.convolve, for each row of ``grids`` (2, M)."""
    m = grids.shape[1]
    ext = np.concatenate([grids[:, ::-1][:, :-1], grids, grids[:, ::-1][:, 1:]], axis=1)
    lo, hi = m // 2, m // 2 + m
    if m <= _FFT_ABOVE:
        return np.stack([np.convolve(e, ker, "valid")[lo:hi] for e in ext])
    from scipy.signal import fftconvolve

    return fftconvolve(ext, ker[None, :], mode="valid", axes=1)[:, lo:hi]


def _interpolate(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """relplot's kernels.interpolate, rows of ``y`` at once."""
    n = y.shape[-1]
    size = 1 / (n - 1)
    inds = (t * (n - 1)).astype(int).clip(0, n - 2)
    frac = (t - inds * size) / size
    return y[..., inds] * (1 - frac) + y[..., inds + 1] * frac


class _Group:
    """One (scores, outcomes, weights) group with its grids cached per grid size."""

    def __init__(self, scores, outcomes, weights):
        self.scores = scores
        r = scores - outcomes
        self.values = r if weights is None else r * weights
        self.weights = weights
        self._grids: dict[int, np.ndarray] = {}

    def at(self, sigma: float) -> float:
        m = _grid_size(sigma)
        g = self._grids.get(m)
        if g is None:
            g = np.stack(_native.smooth_grid(self.scores, self.values, self.weights, m))
            self._grids[m] = g
        smoothed = _reflect_convolve(g, _kernel(m, sigma))
        t = np.linspace(0, 1, max(round(10 / sigma), _MIN_EVAL))
        ys, dens = _interpolate(t, smoothed)
        dens = dens + _DENS_EPS
        rs = ys / dens
        return float(np.sum(np.abs(rs) * dens) / np.sum(dens))

    def search(self) -> float:
        """relplot's ``search_param(check_smooth_ece, start=1, refine=10)``."""

        def ok(alpha):
            return alpha < _SEARCH_EPS or alpha < self.at(alpha)

        if ok(1):
            return 1.0
        start, end = 1.0, 0.0
        for _ in range(_SEARCH_STEPS):
            mid = (start + end) / 2
            if ok(mid):
                end = mid
            else:
                start = mid
        return start


@overload
def smece(labels=..., probs=..., *, max_prob: bool = ..., bandwidth: float | None = ...,
          sample_weight=..., confidence=..., correct=...,
          return_bandwidth: Literal[False] = ...) -> float: ...
@overload
def smece(labels=..., probs=..., *, max_prob: bool = ..., bandwidth: float | None = ...,
          sample_weight=..., confidence=..., correct=...,
          return_bandwidth: Literal[True]) -> tuple[float, float | np.ndarray]: ...
@overload
def smece(labels=..., probs=..., *, max_prob: bool = ..., bandwidth: float | None = ...,
          sample_weight=..., confidence=..., correct=...,
          return_bandwidth: bool) -> float | tuple[float, float | np.ndarray]: ...
def smece(
    labels=None,
    probs=None,
    *,
    max_prob: bool = True,
    bandwidth: float | None = None,
    sample_weight=None,
    confidence=None,
    correct=None,
    return_bandwidth: bool = False,
) -> float | tuple[float, float | np.ndarray]:
    """Smooth ECE (Blasiok & Nakkiran, 2023) with relplot's automatic bandwidth.

    The kernel-smoothed calibration error: residuals ``score - outcome`` are smoothed with a
    Gaussian kernel reflected at 0 and 1, and their absolute value is averaged against the
    smoothed density of the scores. With the automatic bandwidth it equals relplot 1.0.3's
    ``smECE(confidences, outcomes)`` (its discretisation and bandwidth search are part of the
    definition); see ``docs/binning-free.md``.

    Parameters
    ----------
    labels : array_like of shape (N,), optional
        True class indices in ``[0, K)``.
    probs : array_like of shape (N, K), (N, 1) or (N,), optional
        Predicted probabilities, validated as for :func:`calibkit.gce`.
    max_prob : bool, default True
        True: top-label (confidence of the argmax, outcome "prediction correct"). False:
        classwise: the smooth ECE of every column k against ``labels == k`` (one-vs-rest,
        each with its own bandwidth), averaged over the K classes.
    bandwidth : float > 0, optional
        A fixed kernel width sigma instead of the automatic one (relplot's ``smECE_sigma``).
    sample_weight : array_like of shape (N,), optional
        Non-negative finite weights; integer weights act as repeated rows (they weight the grid
        mass and residuals).
    confidence, correct : array_like of shape (N,), optional
        Top-label pairs given directly instead of ``labels, probs``: confidences in [0, 1] and
        0/1 (or bool) correctness.
    return_bandwidth : bool, default False
        Also return the bandwidth used (for ``max_prob=False`` the array of K bandwidths).

    Returns
    -------
    float, or (float, bandwidth) with ``return_bandwidth=True``

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> probs = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    >>> labels = np.array([0, 1, 1, 0])
    >>> round(calibkit.smece(labels, probs), 4)
    0.1377
    >>> round(calibkit.smece(labels, probs, bandwidth=0.1), 4)
    0.1812
    """
    if bandwidth is not None:
        bandwidth = positive_float(bandwidth, "bandwidth")
        check_grid(max(2000.0, 20.0 / bandwidth) / 2 + 1)  # _grid_size, before any rounding
    gs, w = groups(labels, probs, max_prob=max_prob, confidence=confidence, correct=correct,
                   sample_weight=sample_weight, what="smece")
    values, sigmas = [], []
    # Overflow is possible only under weights near the top of float64, and checked below.
    with np.errstate(over="ignore", invalid="ignore"):
        for scores, outcomes in gs:
            g = _Group(scores, outcomes, w)
            sigma = bandwidth if bandwidth is not None else g.search()
            values.append(g.at(sigma))
            sigmas.append(sigma)
        value = float(np.mean(values))
    if not math.isfinite(value):
        # Only weights near the top of the float64 range get here (the grids' mass is their
        # sum): an error, never a NaN.
        raise NumericalError(
            f"smece left the float64 range: the smoothed grids overflowed with sample_weight "
            f"summing to {float(np.sum(w)):.4g}; scale the weights down"
            if w is not None else "smece left the float64 range"
        )
    if not return_bandwidth:
        return value
    return value, (sigmas[0] if len(sigmas) == 1 and max_prob else np.asarray(sigmas))
