"""Temperature optimised per metric and error-vs-temperature curves (calibkit.analysis.temperature)."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.analysis import (
    ModelSplits,
    Predictions,
    optimise_temperature_per_metric,
    temperature_curves,
    temperature_table,
)
from calibkit.space import MetricSpace, metric_space


def _synthetic(seed=0, n_val=400, n_test=500, k=5, scale=3.0) -> ModelSplits:
    rng = np.random.default_rng(seed)

    def split(n):
        y = rng.integers(0, k, size=n)
        z = scale * (1.5 * np.eye(k)[y] + rng.normal(size=(n, k)))  # overconfident logits
        return Predictions(y, z, "logits", "synthetic")

    return ModelSplits("synthetic", split(n_val), split(n_test), "overconfident Gaussian logits")


MODEL = _synthetic()


def test_temperature_curves_equal_direct_gce():
    temps = [0.5, 1.0, 3.0]
    space = metric_space()
    c = temperature_curves(MODEL.test.labels, MODEL.test.logits, temps, space=space, num_bins=12)
    assert c.shape == (3, 32)
    for ti, t in enumerate(temps):
        p = calibkit.softmax(MODEL.test.logits / t)
        for j in (0, 4, 9, 21, 24, 26, 31):
            assert c[ti, j] == pytest.approx(
                calibkit.gce(MODEL.test.labels, p, **space[j].kwargs(), num_bins=12), abs=1e-12
            )


@pytest.mark.parametrize("bad", [[], [0.0, 1.0], [-1.0], [np.inf], [[1.0, 2.0]]])
def test_temperature_curves_bad_temperatures(bad):
    with pytest.raises(ValueError, match="temperatures"):
        temperature_curves(MODEL.test.labels, MODEL.test.logits, bad)


def test_optimise_temperature_per_metric_scores_the_scaled_test_split():
    space = MetricSpace(["ECE", "ACE", "RMSCE", "SCE"])
    r = optimise_temperature_per_metric(MODEL, space=space, num_bins=10, temperatures=[0.5, 1, 2, 4])
    assert r.temperatures.shape == (4,) and np.all(r.temperatures > 0)
    assert r.curves.shape == (4, 4)
    val, test = MODEL.val, MODEL.test
    for j, spec in enumerate(space):
        t = r.temperatures[j]
        p = calibkit.softmax(test.logits / t)
        assert r.test_ece[j] == pytest.approx(calibkit.ece(test.labels, p, num_bins=10), abs=1e-9)
        assert r.test_rmsce[j] == pytest.approx(calibkit.rmsce(test.labels, p, num_bins=10), abs=1e-9)
        assert r.test_self[j] == pytest.approx(
            calibkit.gce(test.labels, p, **spec.kwargs(), num_bins=10), abs=1e-9)
        # the fitted temperature does at least as well on validation as leaving the model alone
        def own(T, spec=spec):
            return calibkit.gce(val.labels, calibkit.softmax(val.logits / T), **spec.kwargs(), num_bins=10)

        assert own(t) <= own(1.0) + 1e-12
    # the logits are overconfident: minimising ECE must soften them
    assert r.temperatures[0] > 1.0
    t = r.per_metric_table()
    assert t.column("metric") == ["ECE", "ACE", "RMSCE", "SCE"]


def test_temperature_table_groups_by_property():
    space = metric_space()
    r = optimise_temperature_per_metric(MODEL, space=space, num_bins=10, temperatures=[1.0, 2.0])
    t = temperature_table([r])
    assert t.columns == ["synthetic ECE", "synthetic RMSCE (control)"]
    assert t.cell("Even binning scheme", "synthetic ECE") == pytest.approx(r.test_ece[:16].mean())
    assert t.cell("L2 norm", "synthetic RMSCE (control)") == pytest.approx(r.test_rmsce[1::2].mean())
    with pytest.raises(ValueError, match="at least one"):
        temperature_table([])
