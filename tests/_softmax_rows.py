"""Softmax-like test rows shared by the tests that run calibkit in subprocesses (imported there
by path: see ``PROGRAM_HEADER``)."""

from __future__ import annotations

import os

import numpy as np

#: Prepended to a subprocess program so that it can ``from _softmax_rows import data``.
PROGRAM_HEADER = f"import sys\nsys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})\n"


def data(n: int, k: int, dtype, seed: int, exact_ones: bool = False):
    """(labels, probs) of n rows over k classes: over-confident softmax rows, every 7th row all
    ties of the maximum (1/k) and, with ``exact_ones``, every 11th row from 3 on exactly one-hot."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.5
    z[np.arange(n), rng.integers(0, k, n)] += 3.0
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[::7] = 1.0 / k  # exact ties of the maximum
    if exact_ones:
        p[3::11] = 0.0
        p[3::11, 0] = 1.0  # rows at exactly 1
    return rng.integers(0, k, n), np.ascontiguousarray(p, dtype=dtype)
