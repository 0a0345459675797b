"""Linear scaling of logits: vector scaling, matrix scaling (multiclass) and Platt scaling (binary).

Each fits ``softmax(A z + b)`` (vector: ``A`` diagonal; matrix: ``A`` full; Platt: a scalar on
the binary logit) by minimising the mean negative log-likelihood of the fitting data, with
analytic gradients and scipy's L-BFGS-B. The temperature methods live in
:mod:`calibkit.recalibration.temperature`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import NumericalError
from ._base import (
    ConvergenceWarning,
    RecalibratorBase,
    check_bool,
    check_float,
    check_int,
    limit_blas_threads,
)
from ._kernels import scaled_softmax, vector_pass, xent_grad_inplace
from .temperature import FLOAT32_MIN_ENTRIES, SUBSAMPLE_ROWS, fit_temperature_nll

__all__ = ["MatrixScaling", "PlattScaling", "VectorScaling"]


#: Scores beyond this magnitude are divided by a power of two before fitting (see _tame).
_HUGE_SCORE = 2.0**64


def _tame(Z):
    """``(Z / c, c)``: huge scores brought to magnitude < 64 by an exact power of two ``c``.

    The linear models are equivariant (``w * (z / c) = (w / c) * z``), so fitting on ``Z / c``
    and dividing the fitted scales by ``c`` is the same model, while the optimiser's sums of
    squares and exponentials stay finite (logits times 1e300 would otherwise overflow them).
    ``c = 1`` (no copy) for ordinary scores.
    """
    m = float(np.max(np.abs(Z))) if Z.size else 0.0
    if m <= _HUGE_SCORE:
        return Z, 1.0
    c = math.ldexp(1.0, math.frexp(m)[1] - 6)
    return Z / c, c


def _work_dtype(n: int, k: int):
    return np.float32 if n * k >= FLOAT32_MIN_ENTRIES else np.float64


def _start_temperature(Z, y) -> float:
    """A cheap NLL temperature from a strided subsample: the scaling methods' starting point."""
    stride = max(1, Z.shape[0] // SUBSAMPLE_ROWS)
    return fit_temperature_nll(Z[::stride], y[::stride], (0.05, 20.0))["temperature"]


def _lbfgs(fun, x0, max_iter, tol, name):
    from scipy.optimize import minimize

    res = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "ftol": tol, "gtol": tol, "maxcor": 20},
    )
    x = res.x
    if not np.all(np.isfinite(x)) or not np.isfinite(res.fun):  # pragma: no cover - defensive
        raise NumericalError(
            f"{name}: the optimiser produced non-finite parameters; check X for extreme "
            "values, or strengthen the regularisation"
        )
    converged = bool(res.success) or res.nit > 0 and "ABNORMAL" in str(res.message).upper()
    if not converged:
        warnings.warn(
            f"{name} did not converge in {max_iter} iterations ({res.message}); raise max_iter "
            "or strengthen the regularisation",
            ConvergenceWarning,
            stacklevel=4,
        )
    return x, float(res.fun), converged, int(res.nit)


def _damped_newton(fgh, f_only, x0, max_iter, tol, name):
    """Newton's method with Armijo backtracking for a smooth convex loss.

    ``fgh(x) -> (f, g, H)``, ``f_only(x) -> f``. Stops when half the Newton decrement
    ``g^T H^-1 g / 2`` (the predicted distance to the minimum) is below ``tol * max(1, |f|)``.
    A tiny ridge handles directions the loss does not see (softmax ignores a common bias
    shift). Returns ``(x, f, converged, n_iter)``.
    """
    x = np.array(x0, dtype=np.float64)
    f, g, H = fgh(x)
    converged = False
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 (read after the loop)
        Hs = 0.5 * (H + H.T)
        ridge = 1e-10 * max(1.0, float(np.abs(np.diag(Hs)).mean()))
        Hs[np.diag_indices_from(Hs)] += ridge
        try:
            step = -np.linalg.solve(Hs, g)
        except np.linalg.LinAlgError:  # pragma: no cover - singular beyond the ridge
            step = -np.linalg.lstsq(Hs, g, rcond=None)[0]
        dec = float(-g @ step)
        scale = max(1.0, abs(f))
        if not np.isfinite(dec) or dec < 0:  # pragma: no cover - not a descent direction
            step, dec = -g, float(g @ g)
        if 0.5 * dec <= tol * scale:
            converged = True
            break
        # try the full step with the next pass itself; backtrack (value-only passes) if the
        # Armijo condition fails there (far from the minimum only)
        fn, gn, Hn = fgh(x + step)
        if not (np.isfinite(fn) and fn <= f - 1e-4 * dec) and dec > 1e-6 * scale:
            t = 0.5
            while t >= 1e-8:
                ft = f_only(x + t * step)
                if np.isfinite(ft) and ft <= f - 1e-4 * t * dec:
                    break
                t *= 0.5
            if t < 1e-8:  # no decrease possible at this precision: we are at the minimum
                converged = 0.5 * dec <= 1e-6 * scale
                break
            fn, gn, Hn = fgh(x + t * step)
            step = t * step
        x = x + step
        f, g, H = fn, gn, Hn
    if not np.all(np.isfinite(x)):  # pragma: no cover - defensive
        raise NumericalError(
            f"{name}: the optimiser produced non-finite parameters; check X for extreme "
            "values, or strengthen the regularisation"
        )
    if not converged:
        warnings.warn(
            f"{name} did not converge in {max_iter} Newton iterations; raise max_iter or "
            "add regularisation",
            ConvergenceWarning,
            stacklevel=4,
        )
    return x, float(f), converged, it


class _LinearBase(RecalibratorBase):
    _space = "scores"

    def _logits(self, Z: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict_logits(self, X) -> np.ndarray:
        """Recalibrated logits ``A z + b`` of shape (N, K)."""
        return self._logits(self._prepare_predict(X))

    def _predict_proba(self, Z):
        with limit_blas_threads():
            A = np.ascontiguousarray(self._logits(Z), dtype=np.float64)
        return scaled_softmax(A, 1.0, out=A)


def _column_scale(Z, dtype):
    """Per-column spread of ``Z`` and the rescaled copy ``Z / s`` in ``dtype`` (preconditioning).

    Only scaling, no centring: centring would couple the biases to the weights and slows
    L-BFGS-B down (measured: about twice the iterations on CIFAR-100 outputs).
    """
    s = Z.std(axis=0)
    s[~(s > 1e-12 * max(1.0, float(np.abs(Z).max())))] = 1.0
    Zs = np.empty(Z.shape, dtype=dtype)
    np.divide(Z, s, out=Zs, casting="same_kind")
    return s, Zs


class VectorScaling(_LinearBase):
    """Vector scaling (Guo et al., 2017): ``p = softmax(w * z + b)``, one scale and bias per class.

    Fitted by mean negative log-likelihood with Newton's method (analytic gradient and the
    exact 2K x 2K Hessian, Armijo backtracking; inputs rescaled per class), starting from the
    temperature-scaling solution ``w = 1/T, b = 0``: a handful of iterations. L2 penalties,
    added to the *summed* NLL (Gaussian priors, so their effect fades as N grows)::

        loss = mean NLL + (reg_weight * sum_k ((w_k - mean(w)) * s_k)**2
                           + reg_bias * sum_k b_k**2) / N

    where ``s_k`` is the standard deviation of input column k on the fitting data, so the
    first term measures how far each class's scale strays from a common temperature, in logit
    units. ``reg_weight`` shrinks towards temperature scaling (all scales equal), not towards
    0; its default 1.0 is a weak prior (standard deviation 0.7 logits) that only matters
    when the fitting data is separable: without it, a class the model never confuses on a
    small fitting set gets an unbounded scale (on 600 digits images, one class's scale ran to
    53 and the held-out NLL tripled). Set both to 0 for the textbook, unregularised method.

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required). Probabilities become floored log-probabilities ``log p``
        (vector scaling on ``log p`` is the diagonal form of Dirichlet calibration).
    reg_weight : float, default 1.0
        Strength of the penalty on the spread of the scales (in logit units).
    reg_bias : float, default 0.0
        Strength of the L2 penalty on the biases.
    max_iter : int, default 100
        Newton iterations.
    tol : float, default 1e-10
        Stop when the predicted distance to the minimum (half the Newton decrement) is below
        ``tol * max(1, loss)``.

    Attributes
    ----------
    coef_ : ndarray of shape (K,)
        The per-class scales ``w``.
    intercept_ : ndarray of shape (K,)
        The biases ``b``, shifted to sum to 0 (softmax ignores a common shift).
    loss_ : float
        The penalised loss at the solution.
    converged_ : bool
    n_iter_ : int
        Newton iterations.

    Notes
    -----
    Every class must occur in the fitting labels (an absent class would push its bias to
    minus infinity): fit raises ``InvalidLabelsError`` otherwise. Inputs of more than ``2**20``
    entries are processed in float32 with float64 totals; BLAS runs single-threaded during
    the fit when ``threadpoolctl`` is installed.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import VectorScaling
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 1000)
    >>> logits = 5.0 * (np.eye(3)[y] + rng.normal(size=(1000, 3)))
    >>> vs = VectorScaling(input="logits").fit(logits, y)
    >>> vs.coef_.shape, vs.predict_proba(logits).shape
    ((3,), (1000, 3))
    """

    def __init__(self, *, input: str, reg_weight: float = 1.0, reg_bias: float = 0.0,
                 max_iter: int = 100, tol: float = 1e-10) -> None:
        self.input = input
        self.reg_weight = reg_weight
        self.reg_bias = reg_bias
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, Z, y):
        lam_w = check_float("reg_weight", self.reg_weight, low=0.0)
        lam_b = check_float("reg_bias", self.reg_bias, low=0.0)
        max_iter = check_int("max_iter", self.max_iter, 1)
        tol = check_float("tol", self.tol, low=0.0, low_open=True)
        Z, c = _tame(Z)
        n, k = Z.shape
        s, Zs = _column_scale(Z, _work_dtype(n, k))
        # spread of the scales in logit units: d = diag(s) (w - mean(w)) = M wt
        M = (s[:, None] * (np.eye(k) - 1.0 / k)) / s[None, :]
        MtM2 = (2.0 * lam_w / n) * (M.T @ M)

        # parameters: wt = w * s, so that w * z + b = wt * (z / s) + b
        def fgh(x, hessian=True):
            wt, b = x[:k], x[k:]
            out = vector_pass(Zs, y, wt, b, hessian=hessian)
            f, gw, gb = out[:3]
            d = M @ wt
            f += (lam_w * float(d @ d) + lam_b * float(b @ b)) / n
            if not hessian:
                return f
            g = np.concatenate([gw + MtM2 @ wt, gb + (2.0 * lam_b / n) * b])
            H = out[3]
            H[:k, :k] += MtM2
            H[k:, k:] += (2.0 * lam_b / n) * np.eye(k)
            return f, g, H

        t0 = _start_temperature(Z, y)
        x0 = np.concatenate([s / t0, np.zeros(k)])
        with limit_blas_threads():
            x, self.loss_, self.converged_, self.n_iter_ = _damped_newton(
                fgh, lambda x: fgh(x, hessian=False), x0, max_iter, tol, "VectorScaling"
            )
        self.coef_ = x[:k] / s / c
        self.intercept_ = x[k:] - x[k:].mean()

    def _logits(self, Z):
        return Z * self.coef_ + self.intercept_


class MatrixScaling(_LinearBase):
    """Matrix scaling (Guo et al., 2017): ``p = softmax(W z + b)`` with a full K x K matrix ``W``.

    Fitted by mean negative log-likelihood with analytic gradients (L-BFGS-B), starting from
    temperature scaling (``W = I/T, b = 0``), with off-diagonal and intercept regularisation
    (ODIR, Kull et al., 2019). The penalty is a Gaussian prior added to the *summed* NLL, with
    each off-diagonal entry measured in units of its input's spread (``s_k`` = standard
    deviation of input column k on the fitting data)::

        loss = mean NLL + (reg_off_diagonal * sum_{j != k} (W_jk s_k)**2
                           + reg_bias * sum_k b_k**2) / N

    so the defaults mean the same thing for any N, K and logit scale. With K^2 + K parameters,
    unregularised matrix scaling overfits badly when K is large relative to N (K = 100 and
    N = 5000 gives 10,100 parameters for 5,000 rows: test NLL explodes); the default prior
    (standard deviation 0.1 per rescaled off-diagonal entry) keeps it stable there and fades
    as N grows. Set both to 0 for the textbook, unregularised method.

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required). Probabilities become floored log-probabilities (matrix
        scaling on ``log p`` is Dirichlet calibration).
    reg_off_diagonal : float, default 50.0
        Precision-like strength of the penalty on the rescaled off-diagonal entries.
    reg_bias : float, default 1.0
        Strength of the L2 penalty on ``b``.
    max_iter : int, default 500
        L-BFGS-B iterations.
    tol : float, default 1e-6
        L-BFGS-B tolerance on the relative loss decrease and the projected gradient.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        ``W``.
    intercept_ : ndarray of shape (K,)
        ``b``, shifted to sum to 0.
    loss_ : float
        The penalised loss at the solution.
    converged_ : bool
    n_iter_ : int

    Notes
    -----
    Every class must occur in the fitting labels (fit raises ``InvalidLabelsError``
    otherwise). Inputs of more than ``2**20`` entries are processed in float32 with float64
    totals; BLAS runs single-threaded during the fit when ``threadpoolctl`` is installed (on a
    busy machine OpenBLAS threads slow the optimiser's 10,000-long vector updates by 10x).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import MatrixScaling
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 1000)
    >>> logits = 5.0 * (np.eye(3)[y] + rng.normal(size=(1000, 3)))
    >>> ms = MatrixScaling(input="logits").fit(logits, y)
    >>> ms.coef_.shape
    (3, 3)
    """

    def __init__(self, *, input: str, reg_off_diagonal: float = 50.0, reg_bias: float = 1.0,
                 max_iter: int = 500, tol: float = 1e-6) -> None:
        self.input = input
        self.reg_off_diagonal = reg_off_diagonal
        self.reg_bias = reg_bias
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, Z, y):
        lam_o = check_float("reg_off_diagonal", self.reg_off_diagonal, low=0.0)
        lam_b = check_float("reg_bias", self.reg_bias, low=0.0)
        max_iter = check_int("max_iter", self.max_iter, 1)
        tol = check_float("tol", self.tol, low=0.0, low_open=True)
        Z, c = _tame(Z)
        n, k = Z.shape
        dt = _work_dtype(n, k)
        s, Zs = _column_scale(Z, dt)
        off = ~np.eye(k, dtype=bool)

        # parameters: Wt = W * s (columns), so that W z + b = Wt (z / s) + b
        def fun(x):
            Wt = x[: k * k].reshape(k, k)
            b = x[k * k :]
            A = Zs @ Wt.T.astype(dt)
            A += b.astype(dt)
            f = xent_grad_inplace(A, y, 1.0 / n) / n
            gW = (A.T @ Zs).astype(np.float64)
            gb = A.sum(axis=0, dtype=np.float64)
            Wo = Wt * off
            f += (lam_o * float(np.sum(Wo * Wo)) + lam_b * float(b @ b)) / n
            gW += (2.0 * lam_o / n) * Wo
            gb += (2.0 * lam_b / n) * b
            return f, np.concatenate([gW.ravel(), gb])

        t0 = _start_temperature(Z, y)
        x0 = np.concatenate([(np.diag(s) / t0).ravel(), np.zeros(k)])
        with limit_blas_threads():
            x, self.loss_, self.converged_, self.n_iter_ = _lbfgs(
                fun, x0, max_iter, tol, "MatrixScaling"
            )
        b = x[k * k :]
        self.coef_ = x[: k * k].reshape(k, k) / s[None, :] / c
        self.intercept_ = b - b.mean()

    def _logits(self, Z):
        return Z @ self.coef_.T + self.intercept_


class PlattScaling(_LinearBase):
    """Platt scaling (Platt, 1999) for binary problems: ``P(y=1) = sigmoid(a s + b)``.

    ``s`` is the binary logit: ``z_1 - z_0`` for two columns of logits, the value itself for a
    1-D logit, or ``log p_1 - log p_0`` (floored) for probabilities. ``a`` and ``b`` minimise the
    mean negative log-likelihood (L-BFGS-B with analytic gradients).

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required): (N, 2) or (N,) / (N, 1) binary scores.
    smooth_targets : bool, default False
        Use Platt's regularised targets ``(N+ + 1) / (N+ + 2)`` and ``1 / (N- + 2)`` instead
        of 1 and 0 (guards against overfitting very small fitting sets).
    max_iter : int, default 200
    tol : float, default 1e-10

    Attributes
    ----------
    coef_ : float
        ``a``.
    intercept_ : float
        ``b``.
    converged_ : bool
    n_iter_ : int

    Notes
    -----
    Raises ``ShapeMismatchError`` for more than two classes (use temperature, vector or matrix
    scaling), and ``InvalidLabelsError`` unless both classes occur in ``y``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import PlattScaling
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 500)
    >>> s = 6.0 * (y - 0.5) + 3.0 * rng.normal(size=500)     # overconfident binary logits
    >>> ps = PlattScaling(input="logits").fit(s, y)
    >>> ps.predict_proba(s).shape
    (500, 2)
    """

    _binary_only = True

    def __init__(self, *, input: str, smooth_targets: bool = False, max_iter: int = 200,
                 tol: float = 1e-10) -> None:
        self.input = input
        self.smooth_targets = smooth_targets
        self.max_iter = max_iter
        self.tol = tol

    def _fit(self, Z, y):
        smooth = check_bool("smooth_targets", self.smooth_targets)
        max_iter = check_int("max_iter", self.max_iter, 1)
        tol = check_float("tol", self.tol, low=0.0, low_open=True)
        Z, c = _tame(Z)
        s = Z[:, 1] - Z[:, 0]
        t = y.astype(np.float64)
        if smooth:
            n_pos = float(t.sum())
            n_neg = t.size - n_pos
            t = np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
        n = s.size

        def fun(x):
            u = x[0] * s + x[1]
            # mean of log(1 + e^u) - t u, computed stably
            f = float(np.mean(np.logaddexp(0.0, u) - t * u))
            r = (_sigmoid(u) - t) / n
            return f, np.array([float(r @ s), float(r.sum())])

        x, _, self.converged_, self.n_iter_ = _lbfgs(
            fun, np.array([1.0, 0.0]), max_iter, tol, "PlattScaling"
        )
        self.coef_ = float(x[0]) / c
        self.intercept_ = float(x[1])

    def _logits(self, Z):
        u = self.coef_ * (Z[:, 1] - Z[:, 0]) + self.intercept_
        return np.column_stack([np.zeros_like(u), u])


def _sigmoid(u):
    out = np.empty_like(u)
    pos = u >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-u[pos]))
    e = np.exp(u[~pos])
    out[~pos] = e / (1.0 + e)
    return out
