"""Neural-network scaling: a small residual MLP on the logits, trained by NLL (NumPy/SciPy only)."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError
from ._base import (
    RandomStateLike,
    RecalibratorBase,
    check_bool,
    check_choice,
    check_float,
    check_int,
    check_random_state,
    limit_blas_threads,
)
from ._kernels import scaled_softmax, xent_grad_inplace
from .scaling import _start_temperature, _work_dtype

__all__ = ["NeuralNetworkScaling"]

ACTIVATIONS = ("tanh", "relu")


class _EarlyStop(Exception):
    pass


class _Net:
    """Parameter packing, forward pass and gradients of ``a*z + W2 act(W1 zs + b1) + b2``."""

    def __init__(self, k, h, activation):
        self.k, self.h, self.act = k, h, activation
        self.shapes = [("a", ()), ("W1", (k, h)), ("b1", (h,)), ("W2", (h, k)), ("b2", (k,))]
        self.size = 1 + k * h + h + h * k + k

    def unpack(self, x):
        out, i = {}, 0
        for name, shape in self.shapes:
            n = int(np.prod(shape)) if shape else 1
            out[name] = x[i : i + n].reshape(shape) if shape else float(x[i])
            i += n
        return out

    def hidden(self, p, Zs, dt):
        H = Zs @ p["W1"].astype(dt)
        H += p["b1"].astype(dt)
        if self.act == "tanh":
            np.tanh(H, out=H)
        else:
            np.maximum(H, 0, out=H)
        return H

    def logits(self, p, Z, Zs, dt):
        H = self.hidden(p, Zs, dt)
        A = H @ p["W2"].astype(dt)
        A += dt.type(p["a"]) * Z
        A += p["b2"].astype(dt)
        return A, H

    def loss_grad(self, x, Z, Zs, y, alpha):
        dt = Z.dtype
        p = self.unpack(x)
        n = Z.shape[0]
        A, H = self.logits(p, Z, Zs, dt)
        f = xent_grad_inplace(A, y, 1.0 / n) / n  # A now holds dL/dlogits
        G = A
        ga = float(np.einsum("ij,ij->", G, Z, dtype=np.float64))
        gW2 = (H.T @ G).astype(np.float64)
        gb2 = G.sum(axis=0, dtype=np.float64)
        dH = G @ p["W2"].T.astype(dt)
        if self.act == "tanh":
            dH *= 1 - H * H
        else:
            dH *= H > 0
        gW1 = (Zs.T @ dH).astype(np.float64)
        gb1 = dH.sum(axis=0, dtype=np.float64)
        W1, W2 = p["W1"], p["W2"]
        f += 0.5 * alpha * (float(np.sum(W1 * W1)) + float(np.sum(W2 * W2))) / n
        gW1 += (alpha / n) * W1
        gW2 += (alpha / n) * W2
        grad = np.concatenate([[ga], gW1.ravel(), gb1, gW2.ravel(), gb2])
        return f, grad

    def nll(self, x, Z, Zs, y):
        A, _ = self.logits(self.unpack(x), Z, Zs, Z.dtype)
        return xent_grad_inplace(A, y, 0.0) / Z.shape[0]


class NeuralNetworkScaling(RecalibratorBase):
    """Neural-network scaling: a one-hidden-layer MLP on the logits, trained by NLL.

    The recalibrated logits are ``a * z + W2 act(W1 zs + b1) + b2``, where ``zs`` is ``z``
    standardised per class with the fitting data's mean and spread. The network starts as
    temperature scaling (``a = 1/T`` from a quick NLL fit, ``W2 = 0``), so training only adds
    what the data supports. Weights are trained by full-batch L-BFGS-B on the mean NLL plus
    ``alpha / (2 N) * (|W1|^2 + |W2|^2)``, with early stopping: a seeded ``validation_fraction``
    of the fitting rows is held out, and training stops once the held-out NLL has not improved
    by ``tol`` for ``n_iter_no_change`` iterations; the parameters with the best held-out NLL
    are kept. NumPy and SciPy only.

    Parameters
    ----------
    input : {"logits", "probs"}
        What ``X`` holds (required). Probabilities become floored log-probabilities.
    hidden_units : int, default 32
        Width of the hidden layer.
    activation : {"tanh", "relu"}, default "tanh"
    alpha : float, default 1e-4
        L2 penalty on the weight matrices (scikit-learn's MLP convention).
    max_iter : int, default 500
        L-BFGS-B iterations.
    early_stopping : bool, default True
        Hold out ``validation_fraction`` of the rows and stop on their NLL. When False, all rows
        train and L-BFGS-B runs to its own tolerance.
    validation_fraction : float, default 0.2
        Share of rows held out (at least one row on each side).
    n_iter_no_change : int, default 10
    tol : float, default 1e-6
        Minimum held-out NLL improvement that counts, and the L-BFGS-B tolerance.
    random_state : None, int, numpy Generator or RandomState, default None
        Seeds the weight initialisation and the held-out split; an int makes fits identical.

    Attributes
    ----------
    coefs_ : dict of ndarrays
        ``a``, ``W1``, ``b1``, ``W2``, ``b2`` in float64.
    validation_loss_ : float
        Best held-out NLL (NaN without early stopping).
    validation_curve_ : ndarray
        Held-out NLL after each iteration.
    converged_ : bool
        True when training stopped on the early-stopping rule or L-BFGS-B's tolerance; False
        when ``max_iter`` ran out.
    n_iter_ : int

    Notes
    -----
    Every class must occur in the fitting labels (``InvalidLabelsError`` otherwise). Inputs of
    more than ``2**20`` entries are processed in float32 with float64 totals.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibration import NeuralNetworkScaling
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 3, 1000)
    >>> logits = 5.0 * (np.eye(3)[y] + rng.normal(size=(1000, 3)))
    >>> nn = NeuralNetworkScaling(input="logits", hidden_units=8, random_state=0).fit(logits, y)
    >>> nn.predict_proba(logits).shape
    (1000, 3)
    """

    _space = "scores"

    def __init__(
        self,
        *,
        input: str,
        hidden_units: int = 32,
        activation: str = "tanh",
        alpha: float = 1e-4,
        max_iter: int = 500,
        early_stopping: bool = True,
        validation_fraction: float = 0.2,
        n_iter_no_change: int = 10,
        tol: float = 1e-6,
        random_state: RandomStateLike = None,
    ) -> None:
        self.input = input
        self.hidden_units = hidden_units
        self.activation = activation
        self.alpha = alpha
        self.max_iter = max_iter
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.random_state = random_state

    def _fit(self, Z, y):
        from scipy.optimize import minimize

        h = check_int("hidden_units", self.hidden_units, 1)
        act = check_choice("activation", self.activation, ACTIVATIONS)
        alpha = check_float("alpha", self.alpha, low=0.0)
        max_iter = check_int("max_iter", self.max_iter, 1)
        early = check_bool("early_stopping", self.early_stopping)
        frac = check_float(
            "validation_fraction",
            self.validation_fraction,
            low=0.0,
            high=1.0,
            low_open=True,
            high_open=True,
        )
        patience = check_int("n_iter_no_change", self.n_iter_no_change, 1)
        tol = check_float("tol", self.tol, low=0.0)
        rng = check_random_state(self.random_state)
        n, k = Z.shape
        dt = np.dtype(_work_dtype(n, k))
        perm = rng.permutation(n)
        if early:
            n_val = round(frac * n)
            if n_val < 1 or n - n_val < 1:
                raise InvalidParameterError(
                    f"NeuralNetworkScaling: {n} fitting rows cannot be split with "
                    f"validation_fraction={frac} into non-empty training and held-out parts; "
                    "pass more rows or early_stopping=False"
                )
            tr, va = np.sort(perm[n_val:]), np.sort(perm[:n_val])
        else:
            tr, va = np.arange(n), np.arange(0)
        m = Z[tr].mean(axis=0)
        s = Z[tr].std(axis=0)
        s[~(s > 1e-12 * max(1.0, float(np.abs(Z[tr]).max())))] = 1.0
        self.input_mean_, self.input_scale_ = m, s
        Ztr = np.ascontiguousarray(Z[tr], dtype=dt)
        Zs_tr = ((Z[tr] - m) / s).astype(dt)
        ytr = y[tr]
        net = _Net(k, h, act)
        limit = np.sqrt(6.0 / (k + h))
        x0 = np.concatenate(
            [
                [1.0 / _start_temperature(Z[tr], ytr)],
                rng.uniform(-limit, limit, size=k * h),
                np.zeros(h),
                np.zeros(h * k),
                np.zeros(k),
            ]
        )
        self.validation_curve_ = []
        state = {"best": np.inf, "x": x0.copy(), "stall": 0, "it": 0}
        if early:
            Zva = np.ascontiguousarray(Z[va], dtype=dt)
            Zs_va = ((Z[va] - m) / s).astype(dt)
            yva = y[va]
            state["best"] = net.nll(x0, Zva, Zs_va, yva)
            self.validation_curve_.append(state["best"])

        def callback(xk, *_):
            state["it"] += 1
            if not early:
                state["x"] = np.array(xk, copy=True)
                return
            v = net.nll(xk, Zva, Zs_va, yva)
            self.validation_curve_.append(v)
            if v < state["best"] - tol:
                state["best"], state["x"], state["stall"] = v, np.array(xk, copy=True), 0
            else:
                state["stall"] += 1
                if state["stall"] >= patience:
                    raise _EarlyStop

        stopped = False
        with limit_blas_threads():
            try:
                res = minimize(
                    net.loss_grad,
                    x0,
                    args=(Ztr, Zs_tr, ytr, alpha),
                    jac=True,
                    method="L-BFGS-B",
                    callback=callback,
                    options={"maxiter": max_iter, "ftol": tol * 1e-3, "gtol": tol},
                )
                if not early:
                    state["x"] = res.x
                lbfgs_done = bool(res.success)
            except _EarlyStop:
                stopped, lbfgs_done = True, False
        self.n_iter_ = int(state["it"])
        self.converged_ = bool(stopped or lbfgs_done)
        self.validation_loss_ = float(state["best"]) if early else float("nan")
        self.validation_curve_ = np.asarray(self.validation_curve_, dtype=np.float64)
        self.coefs_ = net.unpack(np.asarray(state["x"], dtype=np.float64))
        self._net = net
        if not self.converged_:
            import warnings

            from ._base import ConvergenceWarning

            warnings.warn(
                f"NeuralNetworkScaling stopped after max_iter={max_iter} iterations before the "
                "early-stopping rule or the tolerance was met; raise max_iter",
                ConvergenceWarning,
                stacklevel=3,
            )

    def predict_logits(self, X) -> np.ndarray:
        """Recalibrated logits of shape (N, K), float64."""
        return self._logits(self._prepare_predict(X))

    def _logits(self, Z):
        Zs = (Z - self.input_mean_) / self.input_scale_
        A, _ = self._net.logits(self.coefs_, Z, Zs, np.dtype(np.float64))
        return A

    def _predict_proba(self, Z):
        with limit_blas_threads():
            A = np.ascontiguousarray(self._logits(Z), dtype=np.float64)
        return scaled_softmax(A, 1.0, out=A)
