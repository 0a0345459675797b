"""Temperature scaling: by negative log-likelihood, or by any General Calibration Error variant."""

from __future__ import annotations

import math
import os
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._base import (
    ConvergenceWarning,
    RecalibratorBase,
    check_bool,
    check_float,
    check_int,
    check_range,
)
from ._kernels import row_block, scaled_softmax, temperature_pass

__all__ = ["MetricTemperatureScaling", "TemperatureScaling", "fit_temperature_nll"]

#: Above this many entries (N * K) the Newton iterations run in float32 (float64 totals).
FLOAT32_MIN_ENTRIES = 1 << 20
#: Rows of the deterministic subsample that gives large fits their starting point.
SUBSAMPLE_ROWS = 4096
#: Tolerance on log T of the coarse bracketed search of MetricTemperatureScaling.
COARSE_XATOL = 0.03
#: Its local scan: this many points on each side of the coarse answer, this far apart in log T.
SCAN_POINTS = 4
SCAN_STEP = 0.006
#: Top-label losses of at least this many entries share their rows with a thread pool.
LOSS_THREADS_MIN_ENTRIES = 1 << 20
#: NLL gap (nats) that float32 passes resolve reliably; smaller gaps are settled in float64.
F32_NLL_MARGIN = 2e-5


def _newton(D, dy, lo, hi, *, tol, accept, max_iter, guess=None):
    """Safeguarded Newton iteration for the root of dNLL/dbeta on [lo, hi] (NLL convex in beta).

    Starts at beta = 1; after the first pass it jumps to ``guess`` when that lies inside the
    bracket. Stops when a step is below ``tol * beta``, or when a Newton step is below
    ``accept * beta`` (quadratic convergence makes the stepped-to point accurate to about the
    square of that). Returns ``(beta, f_at_beta, n_passes, converged, at_bound, f_at_1)``; the
    returned f is the quadratic model's value when the last step was not evaluated.
    """
    a, b = lo, hi  # the root of the (increasing) derivative lies in [a, b]
    tried = set()  # bounds already evaluated
    prev_step = 0.0
    beta = 1.0
    f1 = None
    f = float("nan")
    for it in range(1, max_iter + 1):
        f, g, h = temperature_pass(D, dy, beta)
        if beta in (lo, hi):
            tried.add(beta)
        if f1 is None:
            f1 = f
        if g == 0.0:
            return beta, f, it, True, False, f1
        if g > 0.0:
            b = beta
        else:
            a = beta
        if (beta == hi and g < 0.0) or (beta == lo and g > 0.0):
            return beta, f, it, True, True, f1  # the minimum lies beyond the bound
        if h > 0.0:
            new = beta - g / h
        else:  # flat curvature (e.g. separable data): head for the bound the slope points to
            new = math.inf if g < 0.0 else -math.inf
        newton = a < new < b
        if newton and abs(new - beta) <= accept * beta:
            s = new - beta
            return new, f + g * s + 0.5 * h * s * s, it, True, False, f1
        step = new - beta
        if newton and step * prev_step > 0 and abs(step) > 0.5 * abs(prev_step):
            # Newton creeping along an exponential tail (linear, not quadratic, progress):
            # test the bound it is heading for, if that side is not bracketed yet
            if step > 0 and b == hi and hi not in tried:
                new = hi
            elif step < 0 and a == lo and lo not in tried:
                new = lo
        prev_step = step if newton else 0.0
        if it == 1 and guess is not None and a < guess < b:
            new, newton = guess, False
            prev_step = 0.0
        if not (a < new < b):
            if new >= b and b == hi and hi not in tried:
                new = hi
            elif new <= a and a == lo and lo not in tried:
                new = lo
            else:
                new = math.sqrt(a * b)
        if (abs(new - beta) <= tol * beta or (b - a) <= tol * beta) and new not in (lo, hi):
            return beta, f, it, True, False, f1
        beta = new
    return beta, f, max_iter, False, False, f1


def fit_temperature_nll(Z, y, temperature_range=(0.01, 100.0), *, dtype=None, max_iter=100):
    """The temperature minimising the mean NLL of ``softmax(Z / T)`` within a range.

    The NLL is convex in the inverse temperature ``beta = 1/T``, so a Newton iteration on
    ``beta``, safeguarded by bisection within the bounds, finds the global minimum in a few
    passes over the data (each pass gives the value and both derivatives). Large inputs take
    their first guess from a strided subsample of rows.

    Parameters
    ----------
    Z : ndarray of shape (N, K), float64
        Logits (or log-probabilities).
    y : ndarray of shape (N,), int64
        True classes.
    temperature_range : (float, float), default (0.01, 100.0)
        Bounds on T; must contain 1.
    dtype : {None, numpy.float32, numpy.float64}
        Precision of the elementwise passes. None: float32 when ``N * K >= 2**20`` (sums are
        float64; T is then accurate to about 1e-6 relative), else float64.
    max_iter : int, default 100
        Maximum number of passes over the data.

    Returns
    -------
    dict
        ``temperature``, ``nll`` (at the returned T), ``nll_at_1``, ``n_iter`` (full-data
        passes), ``converged``, ``at_bound``. The returned T never has a larger fitting NLL
        than T = 1 (decided in float64 whenever float32 cannot settle it).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 2000)
    >>> Z = 4.0 * (np.eye(3)[y] + rng.normal(size=(2000, 3)))   # overconfident logits
    >>> fit_temperature_nll(Z, y)["temperature"] > 1
    True
    """
    Z = np.asarray(Z, dtype=np.float64)
    n, k = Z.shape
    lo_t, hi_t = temperature_range
    blo, bhi = 1.0 / hi_t, 1.0 / lo_t
    m = Z.max(axis=1, keepdims=True)
    dy = Z[np.arange(n), y] - m[:, 0]
    if dtype is None:
        dtype = np.float32 if n * k >= FLOAT32_MIN_ENTRIES else np.float64
    dtype = np.dtype(dtype)
    guess = None
    if n > 2 * SUBSAMPLE_ROWS:  # cheap, deterministic first guess from a strided subsample
        stride = n // SUBSAMPLE_ROWS
        Ds = Z[::stride] - m[::stride]
        guess = _newton(Ds, dy[::stride].copy(), blo, bhi, tol=1e-8, accept=1e-5, max_iter=100)[0]
    if dtype == np.float64:
        D = Z - m
        beta, f, it, conv, at_bound, f1 = _newton(
            D, dy, blo, bhi, tol=1e-12, accept=1e-6, max_iter=max_iter, guess=guess
        )
        if not f < f1 - 1e-12:  # settle near-ties with the exact value
            f = temperature_pass(D, dy, beta, derivatives=False)[0]
            it += 1
    else:
        D = np.empty((n, k), dtype=dtype)
        np.subtract(Z, m, out=D, casting="same_kind")
        beta, f, it, conv, at_bound, f1 = _newton(
            D, dy, blo, bhi, tol=1e-7, accept=1e-4, max_iter=max_iter, guess=guess
        )
        if not f < f1 - F32_NLL_MARGIN:  # too close to call in float32: decide in float64
            del D
            D = Z - m
            f = temperature_pass(D, dy, beta, derivatives=False)[0]
            f1 = temperature_pass(D, dy, 1.0, derivatives=False)[0]
            it += 2
    if not f <= f1:  # never worse than leaving the model as it is
        beta, f, at_bound = 1.0, f1, False
    temperature = lo_t if beta == bhi else hi_t if beta == blo else 1.0 / beta
    return {
        "temperature": float(temperature),
        "nll": float(f),
        "nll_at_1": float(f1),
        "n_iter": int(it),
        "converged": bool(conv),
        "at_bound": bool(at_bound),
    }


class _TemperatureBase(RecalibratorBase):
    _space = "scores"
    _needs_all_classes = False
    #: The fitted temperature T (set by ``fit``).
    temperature_: float

    def predict_logits(self, X) -> np.ndarray:
        """Recalibrated logits ``Z / T`` (``Z`` = logits, or floored log-probabilities), (N, K)."""
        return self._prepare_predict(X) / self.temperature_

    def _predict_proba(self, Z):
        return scaled_softmax(Z, 1.0 / self.temperature_)


class TemperatureScaling(_TemperatureBase):
    """Temperature scaling (Guo et al., 2017) fitted by negative log-likelihood.

    Divides the logits by one scalar ``T > 0`` chosen to minimise the mean negative
    log-likelihood (NLL) of the fitting data: ``p = softmax(z / T)``. ``T > 1`` softens an
    overconfident model; the predicted class never changes.

    The NLL is convex in ``1/T``; the fit is a bounded, deterministic 1-D optimisation: a Newton
    iteration on ``1/T`` safeguarded by bisection inside ``temperature_range`` (equivalent to a
    bounded search on ``log T``, in a handful of passes over the data). The returned ``T`` never
    gives a larger fitting NLL than ``T = 1``.

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required, no guessing). Logits are used as given; probabilities are
        turned into floored log-probabilities, which give the same result up to the floor.
    temperature_range : (float, float), default (0.01, 100.0)
        Bounds on ``T`` (must contain 1). A ``ConvergenceWarning`` says when the optimum lies
        on a bound.
    max_iter : int, default 100
        Maximum number of passes over the data.

    Attributes
    ----------
    temperature_ : float
        The fitted ``T``.
    nll_ : float
        Mean NLL of the fitting data at ``temperature_``.
    nll_uncalibrated_ : float
        Mean NLL of the fitting data at ``T = 1``.
    converged_ : bool
        Whether the optimality conditions were met within ``max_iter`` passes.
    n_iter_ : int
        Number of passes over the full fitting data.
    n_classes_ : int
        K; ``classes_`` is ``arange(K)``.

    Notes
    -----
    Classes absent from the fitting labels are allowed (``T`` is shared by all classes).
    Inputs of more than ``2**20`` entries are processed in float32 with float64 totals.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 1000)
    >>> logits = 5.0 * (np.eye(3)[y] + rng.normal(size=(1000, 3)))
    >>> ts = TemperatureScaling(input="logits").fit(logits, y)
    >>> bool(ts.temperature_ > 1.0), ts.predict_proba(logits).shape
    (True, (1000, 3))
    """

    def __init__(self, *, input: str,
                 temperature_range: tuple[float, float] = (0.01, 100.0),
                 max_iter: int = 100) -> None:
        self.input = input
        self.temperature_range = temperature_range
        self.max_iter = max_iter

    def _fit(self, Z, y):
        rng = check_range("temperature_range", self.temperature_range)
        max_iter = check_int("max_iter", self.max_iter, 1)
        res = fit_temperature_nll(Z, y, rng, max_iter=max_iter)
        self.temperature_ = res["temperature"]
        self.nll_ = res["nll"]
        self.nll_uncalibrated_ = res["nll_at_1"]
        self.converged_ = res["converged"]
        self.n_iter_ = res["n_iter"]
        if res["at_bound"]:
            warnings.warn(
                f"TemperatureScaling: the NLL keeps decreasing beyond temperature_range "
                f"{rng}; T = {self.temperature_:.4g} is on the bound. Widen temperature_range",
                ConvergenceWarning,
                stacklevel=3,
            )
        elif not self.converged_:
            warnings.warn(
                f"TemperatureScaling did not converge in {max_iter} passes; raise max_iter",
                ConvergenceWarning,
                stacklevel=3,
            )


def _top_label_rows(Z, beta, bm, out, buf):
    """:func:`top_label_scaled` of a range of rows (``bm`` = ``beta * max(Z)`` per row)."""
    n, k = Z.shape
    step = buf.shape[0]
    for s in range(0, n, step):
        z = Z[s : s + step]
        a = buf[: z.shape[0]]
        np.multiply(z, beta, out=a)
        a -= bm[s : s + step, None]
        np.exp(a, out=a)
        np.sum(a, axis=1, out=out[s : s + step])
    np.divide(1.0, out, out=out)


def top_label_scaled(Z, beta, out=None, *, zmax=None, pool=None):
    """Each row's top-label probability of ``softmax(beta * Z)``, bitwise as the matrix gives it.

    :func:`scaled_softmax` computes ``a = beta * Z - max(beta * Z)``, ``exp(a) / sum(exp(a))``
    per row; the maximum of ``beta * Z`` is ``beta * max(Z)`` exactly (``beta > 0`` and
    rounding are monotone), the top entry is ``exp(0) / S = 1 / S``, and ``S`` is the same row
    sum. So only ``S`` is computed, row block by row block (the block stays in cache), and no
    matrix is kept. Rows are independent: with a thread pool, each thread takes one contiguous
    range of rows (NumPy releases the GIL), with bitwise the same result.

    Parameters
    ----------
    Z : ndarray of shape (N, K), float64, C-contiguous
    beta : float
        Inverse temperature, > 0.
    out : ndarray of shape (N,), float64, optional
    zmax : ndarray of shape (N,), optional
        ``Z.max(axis=1)``, if already known.
    pool : concurrent.futures.ThreadPoolExecutor, optional
        Threads to share the rows with (the calling thread takes one range too).

    Returns
    -------
    ndarray of shape (N,)

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration._kernels import scaled_softmax
    >>> Z = np.array([[2.0, 0.5, -1.0], [0.0, 3.0, 3.0]])
    >>> bool(np.array_equal(top_label_scaled(Z, 0.7), scaled_softmax(Z, 0.7).max(axis=1)))
    True
    """
    n, k = Z.shape
    if out is None:
        out = np.empty(n, dtype=np.float64)
    bm = beta * (Z.max(axis=1) if zmax is None else zmax)
    step = row_block(k, 8, 1 << 18)
    parts = 1 if pool is None else min(pool._max_workers + 1, max(1, n // step))
    edges = [n * i // parts for i in range(parts + 1)]

    def run(i):
        r = slice(edges[i], edges[i + 1])
        buf = np.empty((min(step, max(1, edges[i + 1] - edges[i])), k), dtype=np.float64)
        _top_label_rows(Z[r], beta, bm[r], out[r], buf)

    futures = [pool.submit(run, i) for i in range(1, parts)] if parts > 1 else []
    run(0)
    for f in futures:
        f.result()
    return out


class _TopLabelLoss:
    """The GCE of ``softmax(beta * Z)`` for a top-label metric, from (confidence, correct) pairs.

    The prediction (first argmax) of ``softmax(beta * Z)`` is that of ``Z`` unless rounding ties
    an earlier class with the top one; rows where an earlier class is that close to the top
    are found once and re-predicted from their scaled probabilities at each ``beta`` (usually
    there are none). The confidence is :func:`top_label_scaled`. The metric is calibkit's pair
    kernel, so no (N, K) matrix is built per temperature.
    """

    #: Relative closeness of an earlier class to the top logit that may tie after scaling.
    TIE = 1e-9

    def __init__(self, Z, y, kw, beta_max, pool=None):
        n, k = Z.shape
        self.Z, self.y, self.kw, self.k, self.pool = Z, y, kw, k, pool
        self.pred = Z.argmax(axis=1)
        self.zmax = m = Z[np.arange(n), self.pred]
        # an earlier class within TIE of the top one (scaled by the largest beta)
        gap = (m[:, None] - Z) * beta_max <= self.TIE * (1.0 + beta_max * np.abs(m))[:, None]
        earlier = np.arange(k)[None, :] < self.pred[:, None]
        self.near = np.flatnonzero((gap & earlier).any(axis=1))
        self.conf = np.empty(n, dtype=np.float64)

    def __call__(self, beta):
        from .. import gce

        conf = top_label_scaled(self.Z, beta, self.conf, zmax=self.zmax, pool=self.pool)
        pred = self.pred
        if self.near.size:
            pred = pred.copy()
            pred[self.near] = scaled_softmax(self.Z[self.near], beta).argmax(axis=1)
        extra = {"predicted": pred, "num_classes": self.k} if self.kw["class_conditional"] else {}
        return float(gce(confidence=conf, correct=pred == self.y, **extra, **self.kw))


class MetricTemperatureScaling(_TemperatureBase):
    """Temperature scaling that minimises a General Calibration Error variant (default ECE).

    As in the paper's "optimizing for calibration error" experiment, the temperature minimises
    ``calibkit.gce(y, softmax(z / T), binning=..., max_prob=..., class_conditional=...,
    threshold=..., norm=..., num_bins=...)``, so any of the 32 metrics of the paper (and the
    ``"max"`` norm) can be the target. Binned metrics are piecewise constant in ``T``, so the
    search is derivative-free and bracketing, on ``log T``: the loss is evaluated at the start
    temperatures and at ``T = 1``; the best of them and its neighbours (the range's bounds at
    the ends) bracket a bounded Brent search (golden section with parabolic steps,
    ``scipy.optimize.minimize_scalar(method="bounded")``) down to ``xatol``. The best
    temperature seen anywhere is kept; every evaluation is recorded in ``curve_``.

    Top-label metrics (``max_prob=True``) never build the (N, K) probability matrix: each row's
    prediction is computed once, its confidence at each ``T`` from the row's scaled
    log-sum-exp (bitwise the maximum of ``softmax(z / T)``), and the metric by the pair kernel
    (``calibkit.gce(confidence=..., correct=...)``). Other metrics score the scaled matrix.

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required). Probabilities become floored log-probabilities.
    binning, max_prob, class_conditional, threshold, norm, num_bins
        The GCE variant to minimise, as in :func:`calibkit.gce`. Defaults give ECE with 15
        bins.
    temperature_range : (float, float), default (0.05, 20.0)
        Bounds on ``T`` (must contain 1); the search runs on ``log T`` within them.
    n_starts : int, default 5
        Start temperatures, evenly spaced in ``log T`` strictly inside the range: for the
        default range and 5 starts, ``T = e^-2, e^-1, 1, e, e^2`` (scaled to the range's log
        width). ``T = 1`` is always evaluated as well. More starts bracket the optimum more
        tightly (and cost one evaluation each).
    initial_step : float, default 0.1
        Validated but unused (it sized the Nelder-Mead simplex of earlier versions); kept so
        that existing code keeps working.
    max_iter : int, default 100
        Maximum iterations of the bracketed search.
    xatol : float, default 1e-4
        Tolerance of the bracketed search on ``log T``.
    fatol : float, default 1e-7
        Validated but unused (a Nelder-Mead tolerance of earlier versions).

    Attributes
    ----------
    temperature_ : float
        The temperature with the lowest loss among all evaluations (ties: closest to 1).
    loss_ : float
        The GCE at ``temperature_`` on the fitting data.
    loss_uncalibrated_ : float
        The GCE at ``T = 1``.
    curve_ : ndarray of shape (M, 2)
        Every distinct ``(T, loss)`` evaluated, sorted by ``T``: the explored loss curve.
    converged_ : bool
        Whether the bracketed search met its tolerance within ``max_iter`` iterations.
    n_iter_ : int
        Iterations of the bracketed search.

    Notes
    -----
    Needs the native metric kernels (``calibkit.gce``). Classes absent from the fitting labels
    are allowed. The search is deterministic.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import MetricTemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 1000)
    >>> logits = 5.0 * (np.eye(3)[y] + rng.normal(size=(1000, 3)))
    >>> m = MetricTemperatureScaling(input="logits").fit(logits, y)
    >>> bool(m.loss_ <= m.loss_uncalibrated_), m.curve_.shape[1]
    (True, 2)
    """

    # fitted by a calibration error, which sees every row (zeros included) as binned
    _likelihood_fit = False

    def __init__(
        self,
        *,
        input: str,
        binning: str = "even",
        max_prob: bool = True,
        class_conditional: bool = False,
        threshold: float = 0.0,
        norm: str = "l1",
        num_bins: int = 15,
        temperature_range: tuple[float, float] = (0.05, 20.0),
        n_starts: int = 5,
        initial_step: float = 0.1,
        max_iter: int = 100,
        xatol: float = 1e-4,
        fatol: float = 1e-7,
    ) -> None:
        self.input = input
        self.binning = binning
        self.max_prob = max_prob
        self.class_conditional = class_conditional
        self.threshold = threshold
        self.norm = norm
        self.num_bins = num_bins
        self.temperature_range = temperature_range
        self.n_starts = n_starts
        self.initial_step = initial_step
        self.max_iter = max_iter
        self.xatol = xatol
        self.fatol = fatol

    def start_temperatures(self) -> np.ndarray:
        """The Nelder-Mead start temperatures implied by the parameters, shape (n_starts,)."""
        lo, hi = check_range("temperature_range", self.temperature_range)
        n = check_int("n_starts", self.n_starts, 1)
        return np.exp(np.linspace(np.log(lo), np.log(hi), n + 2)[1:-1])

    def _fit(self, Z, y):
        from scipy.optimize import minimize_scalar

        from .. import gce
        from .._validate import check_gce_params

        binning, norm, threshold, num_bins = check_gce_params(
            self.binning, self.norm, self.threshold, self.num_bins
        )
        max_prob = check_bool("max_prob", self.max_prob)
        class_conditional = check_bool("class_conditional", self.class_conditional)
        lo, hi = check_range("temperature_range", self.temperature_range)
        starts = self.start_temperatures()
        check_float("initial_step", self.initial_step, low=0.0, low_open=True)
        max_iter = check_int("max_iter", self.max_iter, 1)
        xatol = check_float("xatol", self.xatol, low=0.0, low_open=True)
        check_float("fatol", self.fatol, low=0.0)
        kw = {
            "binning": binning,
            "max_prob": max_prob,
            "class_conditional": class_conditional,
            "threshold": threshold,
            "norm": norm,
            "num_bins": num_bins,
        }
        ulo, uhi = math.log(lo), math.log(hi)
        seen: dict[float, float] = {}
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        pool = None
        if max_prob and np.isfinite(Z).all():
            threads = os.cpu_count() or 1
            if threads > 1 and Z.size >= LOSS_THREADS_MIN_ENTRIES:
                pool = ThreadPoolExecutor(max_workers=threads - 1)
            metric = _TopLabelLoss(Z, y, kw, 1.0 / lo, pool)
        else:
            buf = np.empty_like(Z)

            def metric(beta):  # the probabilities predict_proba gives at this temperature
                return float(gce(y, scaled_softmax(Z, beta, buf), **kw))

        def loss(u):
            u = float(np.clip(u, ulo, uhi))
            if u not in seen:
                t = min(max(math.exp(u), lo), hi)
                seen[u] = metric(1.0 / t)
            return seen[u]

        def better(u, val, best_u, best_loss):
            return val < best_loss or (val == best_loss and abs(u) < abs(best_u))

        def best_seen():
            best_u, best_loss = 0.0, seen[0.0]
            for u, val in seen.items():
                if better(u, val, best_u, best_loss):
                    best_u, best_loss = u, val
            return best_u, best_loss

        def bracket(u, a, b):
            """The evaluated points (or a, b) next to u."""
            pts = sorted({p for p in seen if a <= p <= b} | {a, b, u})
            i = pts.index(u)
            return pts[max(i - 1, 0)], pts[min(i + 1, len(pts) - 1)]

        try:
            base = loss(0.0)
            for t0 in starts:
                loss(math.log(t0))
            # 1. the best start and its neighbours bracket a coarse Brent search (the loss is
            # V-shaped at this scale) ...
            u, _ = best_seen()
            a, b = bracket(u, ulo, uhi)
            opts = {"xatol": max(xatol, COARSE_XATOL), "maxiter": max_iter}
            coarse = minimize_scalar(loss, bounds=(a, b), method="bounded", options=opts)
            # 2. ... whose answer sits in the noise of a piecewise-constant loss: scan around
            # it, and bracket the final search between the best scanned point's neighbours.
            u, _ = best_seen()
            for j in range(-SCAN_POINTS, SCAN_POINTS + 1):
                loss(u + j * SCAN_STEP)
            u, _ = best_seen()
            a, b = bracket(u, max(ulo, u - SCAN_STEP), min(uhi, u + SCAN_STEP))
            opts = {"xatol": xatol, "maxiter": max_iter}
            res = minimize_scalar(loss, bounds=(a, b), method="bounded", options=opts)
        finally:
            if pool is not None:
                pool.shutdown()
        best_u, best_loss = best_seen()
        us = np.array(sorted(seen))
        ts = np.clip(np.exp(us), lo, hi)
        ts, first = np.unique(ts, return_index=True)  # distinct temperatures, increasing
        self.curve_ = np.column_stack([ts, [seen[u] for u in us[first]]])
        self.temperature_ = float(min(max(math.exp(best_u), lo), hi))
        self.loss_ = best_loss
        self.loss_uncalibrated_ = base
        self.converged_ = bool(res.success)
        self.n_iter_ = int(coarse.nit) + int(res.nit)
