"""Isotonic regression recalibration, one-vs-rest per class, renormalised."""

from __future__ import annotations

import numpy as np

from ._base import RecalibratorBase, renormalise

__all__ = ["IsotonicRegression", "isotonic_fit_1d"]


def _unique_groups(xs: np.ndarray, eps: float) -> np.ndarray:
    """Start indices of the groups scikit-learn's ``_make_unique`` forms on sorted ``xs``.

    A new group starts at the first value ``x`` with ``x - anchor >= eps``, where the anchor
    is the group's first value. Consecutive gaps ``>= eps`` always start a group; runs of
    smaller gaps are resolved anchor by anchor only where their span reaches ``eps``.
    """
    n = xs.size
    definite = np.flatnonzero(xs[1:] - xs[:-1] >= eps) + 1
    seg_starts = np.concatenate([[0], definite])
    seg_ends = np.concatenate([definite, [n]])  # exclusive
    # segments whose whole span stays below eps are one group each
    wide = np.flatnonzero(xs[seg_ends - 1] - xs[seg_starts] >= eps)
    if wide.size == 0:
        return seg_starts
    extra = []
    for i in wide:
        s, e = int(seg_starts[i]), int(seg_ends[i])
        anchor = s
        while True:
            rest = np.flatnonzero(xs[anchor + 1 : e] - xs[anchor] >= eps)
            if rest.size == 0:
                break
            anchor = anchor + 1 + int(rest[0])
            extra.append(anchor)
    return np.sort(np.concatenate([seg_starts, np.asarray(extra, dtype=np.int64)]))


def _pav_and_trim(ux, uy, counts):
    """PAV on the merged points, then drop interior points that do not shape the interpolant."""
    from scipy.optimize import isotonic_regression

    if ux.size == 1:
        return ux, uy
    yfit = np.asarray(isotonic_regression(uy, weights=counts, increasing=True).x)
    keep = np.ones(yfit.size, dtype=bool)
    keep[1:-1] = (yfit[1:-1] != yfit[:-2]) | (yfit[1:-1] != yfit[2:])
    return ux[keep], yfit[keep]


RESOLUTION = float(np.finfo(np.float64).resolution)


def isotonic_fit_1d(x: np.ndarray, t: np.ndarray, order: np.ndarray | None = None):
    """Increasing isotonic regression of targets ``t`` on scores ``x``, as scikit-learn fits it.

    Follows :class:`sklearn.isotonic.IsotonicRegression` (``increasing=True``, unit weights):
    sort by ``x``, merge values closer than ``finfo(float64).resolution`` to their group's first
    value (targets averaged), pool adjacent violators (:func:`scipy.optimize.isotonic_regression`),
    and drop interior points that do not change the piecewise-linear interpolant.

    Parameters
    ----------
    x : ndarray of shape (N,), float64
    t : ndarray of shape (N,), float64 targets (0/1 for calibration)
    order : ndarray of shape (N,), optional
        ``argsort(x)`` if already known.

    Returns
    -------
    (x_thresholds, y_thresholds) : ndarrays, increasing ``x``; predict with
    ``np.interp(np.clip(x_new, x_thr[0], x_thr[-1]), x_thr, y_thr)``.

    Examples
    --------
    >>> import numpy as np
    >>> isotonic_fit_1d(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.0, 1.0, 0.0, 1.0]))
    (array([0.1, 0.2, 0.3, 0.4]), array([0. , 0.5, 0.5, 1. ]))
    """
    if order is None:
        order = np.argsort(x, kind="stable")
    xs = x[order]
    ts = t[order]
    starts = _unique_groups(xs, RESOLUTION)
    counts = np.diff(np.append(starts, xs.size)).astype(np.float64)
    return _pav_and_trim(xs[starts], np.add.reduceat(ts, starts) / counts, counts)


def _isotonic_binary_sorted(xs: np.ndarray, pos: np.ndarray):
    """:func:`isotonic_fit_1d` for 0/1 targets from the sorted scores ``xs`` and the sorted
    scores ``pos`` of the positive rows (no argsort of the full column needed)."""
    starts = _unique_groups(xs, RESOLUTION)
    counts = np.diff(np.append(starts, xs.size)).astype(np.float64)
    ux = xs[starts]
    # each positive belongs to the last group starting at or below it (groups never split ties)
    npos = np.bincount(np.searchsorted(ux, pos, side="right") - 1, minlength=ux.size)
    return _pav_and_trim(ux, npos / counts, counts)


class IsotonicRegression(RecalibratorBase):
    """Isotonic regression (Zadrozny & Elkan, 2002), one-vs-rest per class, then renormalised.

    For each class k, fits the non-decreasing piecewise-linear map from ``p_k`` to the
    indicator ``y == k`` that minimises squared error (pool adjacent violators), exactly as
    :class:`sklearn.isotonic.IsotonicRegression` with ``out_of_bounds="clip"`` does (tested
    against it); the K recalibrated scores of a row are then divided by their sum.

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required). Logits are turned into probabilities with
        :func:`calibkit.softmax` first.

    Attributes
    ----------
    x_thresholds_ : list of K ndarrays
        Knots of each class's map (increasing scores).
    y_thresholds_ : list of K ndarrays
        Values of each class's map at its knots.

    Notes
    -----
    * Scores outside a class's fitted range are clipped to it (the end values extend flat).
    * A row whose K mapped scores are all 0 keeps its input probabilities (documented
      fallback: renormalising would divide by zero).
    * Every class must occur in the fitting labels (fit raises ``InvalidLabelsError``
      otherwise: the class's map would be identically 0).
    * Isotonic maps are step-like: they can give exact 0 or 1 probabilities, so the test NLL
      can be infinite even when calibration error drops; judge it by calibration metrics.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import IsotonicRegression
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 1000)
    >>> logits = 5.0 * (np.eye(3)[y] + rng.normal(size=(1000, 3)))
    >>> iso = IsotonicRegression(input="logits").fit(logits, y)
    >>> np.allclose(iso.predict_proba(logits).sum(axis=1), 1.0)
    True
    """

    _space = "probs"

    def __init__(self, *, input: str) -> None:
        self.input = input

    def _fit(self, P, y):
        n, k = P.shape
        S = np.sort(np.ascontiguousarray(P.T), axis=1)  # one vectorised sort for all classes
        x_true = P[np.arange(n), y]
        by_class = np.argsort(y, kind="stable")
        bounds = np.searchsorted(y[by_class], np.arange(k + 1))
        xs, ys = [], []
        for c in range(k):
            pos = np.sort(x_true[by_class[bounds[c] : bounds[c + 1]]])
            xt, yt = _isotonic_binary_sorted(S[c], pos)
            xs.append(xt)
            ys.append(yt)
        self.x_thresholds_ = xs
        self.y_thresholds_ = ys

    def _map(self, P):
        Q = np.empty_like(P)
        for c in range(P.shape[1]):
            xt, yt = self.x_thresholds_[c], self.y_thresholds_[c]
            if xt.size == 1:
                Q[:, c] = yt[0]
            else:
                Q[:, c] = np.interp(P[:, c], xt, yt)  # clamps outside [xt[0], xt[-1]]
        return Q

    def _predict_proba(self, P):
        return renormalise(self._map(P), P)

    def predict_scores(self, X) -> np.ndarray:
        """The per-class isotonic maps before renormalisation, shape (N, K)."""
        return self._map(self._prepare_predict(X))
