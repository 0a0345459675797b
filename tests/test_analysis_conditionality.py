"""Histogram binning vs class-conditional histogram binning (calibkit.analysis.conditionality)."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.analysis import ModelSplits, Predictions, class_conditionality, default_models


def _synthetic(seed=0, n_val=400, n_test=500, k=5, scale=3.0) -> ModelSplits:
    rng = np.random.default_rng(seed)

    def split(n):
        y = rng.integers(0, k, size=n)
        z = scale * (1.5 * np.eye(k)[y] + rng.normal(size=(n, k)))  # overconfident logits
        return Predictions(y, z, "logits", "synthetic")

    return ModelSplits("synthetic", split(n_val), split(n_test), "overconfident Gaussian logits")


MODEL = _synthetic()


def test_class_conditionality_values_are_the_metrics_of_the_outputs():
    r = class_conditionality(MODEL, num_bins=10)
    y = MODEL.test.labels
    assert list(r.probs) == ["Uncalibrated", "Histogram binning", "Class-conditional histogram binning"]
    assert np.allclose(r.probs["Uncalibrated"], MODEL.test.probs)
    for c, name in enumerate(r.probs):
        assert r.values[0, c] == pytest.approx(calibkit.ece(y, r.probs[name], num_bins=10), abs=1e-12)
        assert r.values[1, c] == pytest.approx(calibkit.cce(y, r.probs[name], num_bins=10), abs=1e-12)
    # both binning methods recalibrate: ECE well below the overconfident model's
    assert r.values[0, 1] < r.values[0, 0] and r.values[0, 2] < r.values[0, 0]
    t = r.table()
    assert t.index == ["ECE", "Class-conditional ECE"] and t.shape == (2, 3)
    assert t.cell("ECE", "Uncalibrated") == r.values[0, 0]


def test_class_conditionality_on_digits():
    m = default_models(0, ["softmax-regression"])[0]
    r = class_conditionality(m, num_bins=15)
    assert r.model == "softmax-regression"
    assert r.values[0, 0] == pytest.approx(calibkit.ece(m.test.labels, m.test.probs), abs=1e-12)
    assert np.all((r.values >= 0) & (r.values <= 1))
