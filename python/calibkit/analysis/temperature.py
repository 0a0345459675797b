"""Optimising the temperature for each calibration metric (the paper's optimisation table).

For every metric of the space, a temperature is fitted on the validation split by minimising
that metric (:class:`calibkit.recalibration.MetricTemperatureScaling`), applied to the test
split, and the result is scored with ECE (and, as the paper's control, RMSCE). Averaging those
ECEs over the metrics that share a property value gives the paper's "optimizing for calibration
error" table: it shows how much ECE rewards being optimised for metrics that resemble it.

:func:`temperature_curves` computes every metric of the space over a grid of temperatures (the
paper's Figure 1, right: calibration error vs temperature).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidParameterError

from ._util import make_estimator, recalibration_inputs
from .data import ModelSplits
from .properties import group_by_property
from .tables import Table

__all__ = [
    "TemperatureResult",
    "temperature_curves",
    "optimise_temperature_per_metric",
    "temperature_table",
    "DEFAULT_TEMPERATURES",
]

#: Default temperature grid for the curves: 61 log-spaced values from 0.1 to 10.
DEFAULT_TEMPERATURES = np.geomspace(0.1, 10.0, 61)


def temperature_curves(
    labels, logits, temperatures: Sequence[float] = DEFAULT_TEMPERATURES, space=None, num_bins: int = 15
) -> np.ndarray:
    """Every metric of ``space`` at each temperature: ``metric(labels, softmax(logits / T))``.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    logits : array_like, shape (N, K)
    temperatures : sequence of float > 0, default 61 values from 0.1 to 10 (log-spaced)
    space : MetricSpace or sequence of metrics, optional
        Default: the paper's 32.
    num_bins : int, default 15

    Returns
    -------
    numpy.ndarray of shape (n_temperatures, n_metrics)

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(200, 3)) * 3; y = rng.integers(0, 3, 200)
    >>> temperature_curves(y, z, [0.5, 1.0, 2.0], space=["ECE", "ACE"]).shape
    (3, 2)
    """
    from calibkit import softmax
    from calibkit.space import evaluate, metric_space

    t = np.asarray(temperatures, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InvalidParameterError(f"temperatures: expected positive finite numbers (got {temperatures!r})")
    z = np.asarray(logits, dtype=np.float64)
    sp = metric_space() if space is None else space
    rows = [evaluate(labels, softmax(z / ti, axis=1), space=sp, num_bins=(int(num_bins),)).values[:, 0]
            for ti in t]
    return np.vstack(rows)


@dataclass
class TemperatureResult:
    """Temperatures fitted per metric and the test errors they give.

    Attributes
    ----------
    space : MetricSpace
        The metrics optimised.
    temperatures : numpy.ndarray (M,)
        Fitted temperature for each metric (on the validation split).
    test_ece : numpy.ndarray (M,)
        ECE on the test split after scaling by that temperature.
    test_rmsce : numpy.ndarray (M,)
        RMSCE (the paper's control calibration error) on the test split.
    test_self : numpy.ndarray (M,)
        Each metric's own value on the test split at its temperature.
    curve_temperatures : numpy.ndarray (T,)
    curves : numpy.ndarray (T, M)
        Each metric on the test split over the temperature grid.
    model : str
    settings : dict
    """

    space: Any
    temperatures: np.ndarray
    test_ece: np.ndarray
    test_rmsce: np.ndarray
    test_self: np.ndarray
    curve_temperatures: np.ndarray
    curves: np.ndarray
    model: str = ""
    settings: dict = field(default_factory=dict)

    def per_metric_table(self) -> Table:
        """One row per metric: fitted temperature, test ECE, test RMSCE, its own test value."""
        return Table(
            name=f"temperature_per_metric_{self.model}" if self.model else "temperature_per_metric",
            title=f"Temperature optimised for each metric ({self.model})",
            index=[str(s.index if s.index is not None else i) for i, s in enumerate(self.space)],
            columns=["metric", "temperature", "test ECE", "test RMSCE", "test value of the metric"],
            data=[
                [s.name, self.temperatures[i], self.test_ece[i], self.test_rmsce[i], self.test_self[i]]
                for i, s in enumerate(self.space)
            ],
            index_name="#",
        )


def optimise_temperature_per_metric(
    model: ModelSplits,
    *,
    space=None,
    num_bins: int = 15,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    random_state: int | None = 0,
    n_starts: int | None = None,
    progress: Callable | None = None,
) -> TemperatureResult:
    """Fit one temperature per metric on validation; score the test split with ECE and RMSCE.

    Parameters
    ----------
    model : ModelSplits
        Validation logits (temperature fitted there) and test logits (scored).
    space : MetricSpace, optional
        Default: the paper's 32 metrics.
    num_bins : int, default 15
        Bins of the optimised metric and of the ECE / RMSCE scores.
    temperatures : sequence of float, default :data:`DEFAULT_TEMPERATURES`
        Grid for the error-vs-temperature curves.
    random_state : int or None, default 0
    n_starts : int, optional
        Nelder-Mead starts of each fit (default: the estimator's, 5); fewer is faster.
    progress : callable, optional
        Called after each metric.

    Returns
    -------
    TemperatureResult

    Examples
    --------
    >>> from calibkit.analysis.digits import default_models
    >>> m = default_models(0, ["softmax-regression"])[0]
    >>> r = optimise_temperature_per_metric(m, space=["ECE", "ACE"])
    >>> r.temperatures.shape
    (2,)
    """
    import calibkit
    from calibkit.recalibration import MetricTemperatureScaling
    from calibkit.space import MetricSpace, metric_space

    if space is None:
        sp = metric_space()
    else:
        sp = space if isinstance(space, MetricSpace) else MetricSpace(space)
    val, test = model.val, model.test
    temps, ece, rmsce, own = [], [], [], []
    for spec in sp:
        xv, xt, kind = recalibration_inputs(val, test)
        extra = {} if n_starts is None else {"n_starts": int(n_starts)}
        est = make_estimator(
            MetricTemperatureScaling, **spec.kwargs(), num_bins=int(num_bins), input=kind,
            random_state=random_state, **extra,
        )
        est.fit(xv, val.labels)
        p = np.asarray(est.predict_proba(xt), dtype=np.float64)
        temps.append(float(est.temperature_))
        ece.append(calibkit.ece(test.labels, p, num_bins=num_bins))
        rmsce.append(calibkit.rmsce(test.labels, p, num_bins=num_bins))
        own.append(calibkit.gce(test.labels, p, **spec.kwargs(), num_bins=num_bins))
        if progress is not None:
            progress()
    t = np.asarray(temperatures, dtype=np.float64)
    curves = temperature_curves(test.labels, test.logits, t, space=sp, num_bins=num_bins)
    return TemperatureResult(
        space=sp,
        temperatures=np.asarray(temps),
        test_ece=np.asarray(ece),
        test_rmsce=np.asarray(rmsce),
        test_self=np.asarray(own),
        curve_temperatures=t,
        curves=curves,
        model=model.name,
        settings={"num_bins": int(num_bins), "random_state": random_state, "n_starts": n_starts},
    )


def temperature_table(
    results: Sequence[TemperatureResult], *, name: str = "temperature_by_property"
) -> Table:
    """The paper's optimisation table: mean test ECE (and RMSCE control) by property value.

    Parameters
    ----------
    results : sequence of TemperatureResult
        One per model / data set (a column pair each), all over the same space.

    Returns
    -------
    Table
        Rows: property values; columns ``"<model> ECE"`` and ``"<model> RMSCE (control)"``.

    Examples
    --------
    >>> from calibkit.analysis.digits import default_models
    >>> m = default_models(0, ["softmax-regression"])[0]
    >>> r = optimise_temperature_per_metric(m)  # doctest: +SKIP
    >>> temperature_table([r]).columns  # doctest: +SKIP
    ['softmax-regression ECE', 'softmax-regression RMSCE (control)']
    """
    if not results:
        raise InvalidParameterError("temperature_table: need at least one TemperatureResult")
    space = results[0].space
    cols = {}
    for r in results:
        if list(r.space) != list(space):
            raise InvalidParameterError("temperature_table: all results must use the same metric space")
        cols[f"{r.model} ECE"] = r.test_ece
        cols[f"{r.model} RMSCE (control)"] = r.test_rmsce
    nb = results[0].settings.get("num_bins", 15)
    return group_by_property(
        cols,
        space,
        name=name,
        title=f"Optimising temperature for each metric, evaluated with ECE ({nb} bins)",
        note=(
            "Each row: mean test ECE after temperature scaling fitted (on validation) to minimise "
            "each metric with that property. The RMSCE columns are the paper's control "
            "calibration error."
        ),
    )
