"""Cache-friendly NumPy kernels behind the scaling methods: softmax cross-entropy and gradients.

All loops run over blocks of rows small enough to stay in cache, so each pass reads the data
once instead of once per elementwise operation. The heavy elementwise work can run in float32
(``np.exp`` is several times faster there); every total is accumulated in float64 and
parameters stay float64.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "row_block",
    "scaled_softmax",
    "temperature_pass",
    "vector_pass",
    "xent_grad_inplace",
]


def row_block(n_cols: int, itemsize: int = 8, target_bytes: int = 1 << 18) -> int:
    """Rows per block so that a block of ``n_cols`` columns is about ``target_bytes``."""
    return max(16, target_bytes // max(1, n_cols * itemsize))


def temperature_pass(D: np.ndarray, dy: np.ndarray, beta: float, *, derivatives: bool = True):
    """Mean NLL of ``softmax(beta * D)`` and its first two derivatives in ``beta``.

    Parameters
    ----------
    D : ndarray of shape (N, K), float32 or float64
        Scores shifted so that each row's maximum is 0 (all entries <= 0).
    dy : ndarray of shape (N,), float64
        ``D[i, y_i]``, the shifted score of each row's true class.
    beta : float
        Inverse temperature, > 0.
    derivatives : bool, default True
        Also return the derivative and the second derivative.

    Returns
    -------
    (f, g, h) : floats
        ``f = mean_i(logsumexp(beta D_i) - beta dy_i)``, ``g = df/dbeta = mean_i(E_p[D_i] - dy_i)``,
        ``h = d2f/dbeta2 = mean_i(Var_p[D_i]) >= 0`` (``g``, ``h`` are NaN when not requested).
    """
    n, k = D.shape
    dt = D.dtype
    step = row_block(k, D.itemsize)
    buf = np.empty((min(step, n), k), dtype=dt)
    f = g = h = 0.0
    b = dt.type(beta)
    for s in range(0, n, step):
        d = D[s : s + step]
        e = buf[: d.shape[0]]
        np.multiply(d, b, out=e)
        np.exp(e, out=e)
        s0 = e.sum(axis=1).astype(np.float64)
        # the max entry contributes exp(0) = 1, so s0 >= 1: the log is always finite
        f += float(np.log(s0).sum())
        if derivatives:
            m1 = np.einsum("ij,ij->i", e, d).astype(np.float64) / s0
            e *= d
            m2 = np.einsum("ij,ij->i", e, d).astype(np.float64) / s0
            g += float(m1.sum())
            h += float(np.maximum(m2 - m1 * m1, 0.0).sum())
    dsum = float(dy.sum())
    f = (f - beta * dsum) / n
    if not derivatives:
        return f, float("nan"), float("nan")
    return f, (g - dsum) / n, h / n


def xent_grad_inplace(A: np.ndarray, y: np.ndarray, scale: float) -> float:
    """Softmax cross-entropy of the rows of ``A``; overwrites ``A`` with its gradient.

    Parameters
    ----------
    A : ndarray of shape (N, K), float32 or float64, C-contiguous, modified in place
        Logits. On return ``A[i] = scale * (softmax(A_i) - onehot(y_i))``.
    y : ndarray of shape (N,), int64
        True classes.
    scale : float
        Multiplier of the gradient (``1/N`` for a mean loss).

    Returns
    -------
    float
        ``sum_i (logsumexp(A_i) - A[i, y_i])`` accumulated in float64 (not scaled).
    """
    n, k = A.shape
    step = row_block(k, A.itemsize)
    total = 0.0
    sc = A.dtype.type(scale)
    for s in range(0, n, step):
        a = A[s : s + step]
        rows = np.arange(a.shape[0])
        yc = y[s : s + step]
        m = a.max(axis=1)
        a -= m[:, None]
        ay = a[rows, yc].astype(np.float64)
        np.exp(a, out=a)
        s0 = a.sum(axis=1, dtype=np.float64)
        total += float((np.log(s0) - ay).sum())
        a *= (scale / s0).astype(a.dtype)[:, None]
        a[rows, yc] -= sc
    return total


def vector_pass(Z: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray, *, hessian=False):
    """Mean NLL of ``softmax(Z * w + b)``, its gradients in ``w`` and ``b``, and the Hessian.

    Parameters
    ----------
    Z : ndarray of shape (N, K), float32 or float64
    y : ndarray of shape (N,), int64
    w, b : ndarray of shape (K,), float64
    hessian : bool, default False
        Also return the (2K, 2K) Hessian in ``(w, b)`` (one Gram matrix per block of rows:
        ``diag(sum p z^2, sum p) - [p*z, p]^T [p*z, p]``, divided by N).

    Returns
    -------
    (f, gw, gb) or (f, gw, gb, H) : float, ndarray (K,), ndarray (K,)[, ndarray (2K, 2K)]
    """
    n, k = Z.shape
    dt = Z.dtype
    step = row_block(k, Z.itemsize)
    buf = np.empty((min(step, n), k), dtype=dt)
    wd = w.astype(dt)
    bd = b.astype(dt)
    total = 0.0
    gw = np.zeros(k)
    gb = np.zeros(k)
    if hessian:
        C = np.empty((min(step, n), 2 * k), dtype=dt)
        G = np.zeros((2 * k, 2 * k))
        dpz2 = np.zeros(k)
        dpz = np.zeros(k)
        dp = np.zeros(k)
    ones = np.ones(min(step, n), dtype=dt)
    for s in range(0, n, step):
        z = Z[s : s + step]
        m = z.shape[0]
        a = buf[:m]
        np.multiply(z, wd, out=a)
        a += bd
        ys = y[s : s + step]
        total += xent_grad_inplace(a, ys, 1.0)  # a = softmax - onehot
        gb += (ones[:m] @ a).astype(np.float64)
        gw += np.einsum("ij,ij->j", a, z).astype(np.float64)
        if hessian:
            c = C[:m]
            a[np.arange(m), ys] += 1  # back to the probabilities
            np.multiply(a, z, out=c[:, :k])
            c[:, k:] = a
            G += (c.T @ c).astype(np.float64)
            dp += (ones[:m] @ a).astype(np.float64)
            dpz += (ones[:m] @ c[:, :k]).astype(np.float64)
            np.multiply(c[:, :k], z, out=a)
            dpz2 += (ones[:m] @ a).astype(np.float64)
    out = (total / n, gw / n, gb / n)
    if not hessian:
        return out
    H = -G
    idx = np.arange(k)
    H[idx, idx] += dpz2
    H[idx, idx + k] += dpz
    H[idx + k, idx] += dpz
    H[idx + k, idx + k] += dp
    return (*out, H / n)


def scaled_softmax(Z: np.ndarray, beta: float, out: np.ndarray | None = None) -> np.ndarray:
    """``softmax(beta * Z)`` row by row block, in float64, into ``out`` (allocated if None).

    Parameters
    ----------
    Z : ndarray of shape (N, K), float64, C-contiguous
    beta : float
    out : ndarray of shape (N, K), float64, optional

    Returns
    -------
    ndarray of shape (N, K): rows sum to 1.
    """
    n, k = Z.shape
    if out is None:
        out = np.empty((n, k), dtype=np.float64)
    step = row_block(k, 8)
    for s in range(0, n, step):
        a = out[s : s + step]
        np.multiply(Z[s : s + step], beta, out=a)
        a -= a.max(axis=1, keepdims=True)
        np.exp(a, out=a)
        a /= a.sum(axis=1, keepdims=True)
    return out
