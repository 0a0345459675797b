"""Real records and synthetic cases shared by the binning-free estimator tests."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_shared

import calibkit

#: Real records with full probability matrices (top-label pairs derived from them).
REAL = [
    "kangsepp__densenet40_c10.npz",
    "label_errors__20news.npz",
    "label_errors__mnist.npz",
    "netcal__lenet-5-cifar-100.npz",
    "verified_calibration__cifar10_vgg.npz",
    "label_errors__imdb.npz",
]
HOLLANCE = "hollance__ImageNet_pytorch-image-models__resnet34.npz"


def real(name):
    """(labels, probs) of a shared record (skips with a reason when absent)."""
    d = load_shared(name)
    p = calibkit.softmax(d["logits"]) if "logits" in d else d["probs"]
    return d["labels"], p


def toplabel(labels, probs):
    """Top-label (confidence, correct) by plain NumPy (argmax: lowest index on ties)."""
    p = np.asarray(probs, dtype=np.float64)
    return p.max(axis=1), (p.argmax(axis=1) == labels).astype(np.float64)


def synthetic(seed, n=3000, k=5, *, ties=False, saturated=False):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.4), size=n)
    if ties:
        # Exact ties: multiples of 1/20 (the same integer gives the same float).
        q = np.floor(p * 20)
        q[np.arange(n), q.argmax(axis=1)] += 20 - q.sum(axis=1)
        p = q / 20
    if saturated:
        hot = rng.random(n) < 0.2
        p[hot] = np.eye(k)[rng.integers(0, k, hot.sum())]
    labels = np.array([rng.choice(k, p=row) for row in p ** 1.5 / (p ** 1.5).sum(1, keepdims=True)])
    return labels, p


SYNTH = [
    pytest.param(dict(seed=0), id="plain"),
    pytest.param(dict(seed=1, ties=True), id="ties"),
    pytest.param(dict(seed=2, saturated=True), id="saturated"),
    pytest.param(dict(seed=3, ties=True, saturated=True, k=2), id="binary-ties-saturated"),
]
