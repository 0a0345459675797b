"""Optimising the temperature for each calibration metric (the paper's optimisation table).

For every metric of the space, a temperature is fitted on the validation split by minimising
that metric (:class:`calibkit.recalibration.MetricTemperatureScaling`), applied to the test
split, and the result is scored with ECE (and, as the paper's control, RMSCE). Averaging those
ECEs over the metrics that share a property value gives the paper's "optimizing for calibration
error" table: it shows how much ECE rewards being optimised for metrics that resemble it.

:func:`temperature_curves` computes every metric of the space over a grid of temperatures, and
:func:`error_vs_temperature` the same with the NLL beside it, as :class:`TemperatureCurves`
(the paper's Figure 1, right: calibration error vs temperature), which
:func:`calibkit.plots.plot_error_vs_temperature` draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._params import as_instance, as_int, as_list, as_num_bins
from .._softmax import log_softmax, softmax
from .._validate import as_array, as_labels, length_mismatch_error
from ..binned.space import evaluate
from ..binned.spec import MetricSpace, MetricSpec, as_space
from ..errors import InvalidLabelsError, InvalidParameterError, ShapeMismatchError
from ._util import make_estimator, recalibration_inputs
from .data import ModelSplits
from .properties import group_by_property
from .tables import Table

__all__ = [
    "TemperatureResult",
    "TemperatureCurves",
    "error_vs_temperature",
    "temperature_curves",
    "optimise_temperature_per_metric",
    "temperature_table",
    "DEFAULT_TEMPERATURES",
]

#: Default temperature grid for the curves: 61 log-spaced values from 0.1 to 10.
DEFAULT_TEMPERATURES = np.geomspace(0.1, 10.0, 61)


def _temperatures(temperatures) -> np.ndarray:
    """A 1-D float64 array of positive, finite temperatures (calibkit errors otherwise)."""
    try:
        t = np.asarray(temperatures, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"temperatures: expected positive finite numbers, got {temperatures!r}") from None
    if t.ndim > 1:
        raise ShapeMismatchError("temperatures: expected a 1-D sequence of temperatures")
    t = t.reshape(-1)
    if t.size == 0:
        raise InvalidParameterError("temperatures: give at least one temperature")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InvalidParameterError(
            f"temperatures: every temperature must be positive and finite, got {t.tolist()}"
        )
    return t


def _logits_and_labels(labels, logits) -> tuple[np.ndarray, np.ndarray]:
    """float64 (N, K >= 2) logits and int64 labels in [0, K)."""
    z = as_array(logits, "logits", "an array of shape (N, K)")
    if z.ndim != 2 or z.shape[1] < 2:
        raise ShapeMismatchError(
            f"logits: expected shape (N, K) with K >= 2, got {z.shape}; for a binary logit "
            f"z pass np.stack([np.zeros_like(z), z], axis=1)"
        )
    y = as_labels(labels)
    if y.shape[0] != z.shape[0]:
        raise length_mismatch_error(y.shape[0], z.shape[0], "logits")
    if y.size and (y.min() < 0 or y.max() >= z.shape[1]):
        raise InvalidLabelsError(
            f"labels: must be class indices in [0, {z.shape[1]}) for K = {z.shape[1]}"
        )
    return y, z


def temperature_curves(
    labels, logits, temperatures: Sequence[float] | np.ndarray = DEFAULT_TEMPERATURES, space=None,
    num_bins: int = 15
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
    t = _temperatures(temperatures)
    y, z = _logits_and_labels(labels, logits)
    z = z.astype(np.float64)
    sp, _ = as_space(space)
    b = as_num_bins(num_bins)
    rows = [evaluate(y, softmax(z / ti, axis=1), space=sp, num_bins=(b,)).values[:, 0]
            for ti in t]
    return np.vstack(rows)


@dataclass(frozen=True)
class TemperatureCurves:
    """Calibration error of several metrics, and the NLL, over softmax temperatures.

    Attributes
    ----------
    temperatures : numpy.ndarray of shape (T,)
    metrics : tuple of str
    values : numpy.ndarray of shape (len(metrics), T)
        ``values[m, t] = calibkit.gce(labels, softmax(logits / temperatures[t]), **metric m)``.
    nll : numpy.ndarray of shape (T,)
        Mean negative log-likelihood of the true labels at each temperature.
    num_bins : int
    """

    temperatures: np.ndarray
    metrics: tuple
    values: np.ndarray
    nll: np.ndarray
    num_bins: int

    def best_temperature(self, metric=None) -> float:
        """The temperature (of the grid) minimising ``metric``, or the NLL when None."""
        if metric is None:
            return float(self.temperatures[int(np.argmin(self.nll))])
        name = MetricSpec.coerce(metric).name
        if name not in self.metrics:
            raise InvalidParameterError(
                f"metric: {name} was not computed; available: {self.metrics}"
            )
        row = self.values[self.metrics.index(name)]
        return float(self.temperatures[int(np.argmin(row))])

    def to_dict(self) -> dict:
        """``{"temperature": [...], "nll": [...], <metric>: [...], ...}``."""
        out = {"temperature": self.temperatures.tolist(), "nll": self.nll.tolist()}
        out.update({m: self.values[i].tolist() for i, m in enumerate(self.metrics)})
        return out


def error_vs_temperature(labels, logits, temperatures,
                         metrics=("ECE", "SCE", "ACE", "TACE"), *,
                         num_bins: int = 15) -> TemperatureCurves:
    """Calibration error of each metric on ``softmax(logits / T)`` for every temperature T.

    The paper's Figure 1 right: the temperature minimising a calibration metric differs from
    the one minimising the NLL, and between metrics. The errors are :func:`temperature_curves`
    (one :func:`calibkit.evaluate` per temperature); the NLL is computed beside them. Draw the
    result with :func:`calibkit.plots.plot_error_vs_temperature`.

    Parameters
    ----------
    labels : array_like of shape (N,)
    logits : array_like of shape (N, K)
        Unnormalised scores (K >= 2).
    temperatures : array_like of shape (T,)
        Positive, finite temperatures (e.g. ``np.geomspace(0.5, 4, 30)``).
    metrics : metric or sequence of metrics, default ("ECE", "SCE", "ACE", "TACE")
        Names, paper indices or :class:`~calibkit.space.MetricSpec`.
    num_bins : int, default 15

    Returns
    -------
    TemperatureCurves

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.analysis.temperature import error_vs_temperature
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(500, 4)) * 3
    >>> labels = rng.integers(0, 4, size=500)
    >>> curves = error_vs_temperature(labels, logits, [0.5, 1.0, 2.0], ["ECE", "ACE"])
    >>> curves.values.shape
    (2, 3)
    """
    t = _temperatures(temperatures)
    y, z = _logits_and_labels(labels, logits)
    z = z.astype(np.float64)
    space, _ = as_space(metrics)
    b = as_num_bins(num_bins)
    values = temperature_curves(y, z, t, space, b).T
    rows = np.arange(z.shape[0])
    nll = np.array([-float(np.mean(log_softmax(z / temp)[rows, y])) for temp in t])
    return TemperatureCurves(t, space.names, values, nll, b)


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
    temperatures: Sequence[float] | np.ndarray = DEFAULT_TEMPERATURES,
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

    from ..binned.spec import metric_space
    from ..recalibration import MetricTemperatureScaling

    as_instance(model, ModelSplits, "model", "from default_models() or load_val_test()")
    if space is None:
        sp = metric_space()
    else:
        sp = space if isinstance(space, MetricSpace) else MetricSpace(space)
    val, test = model.val, model.test
    temps, ece, rmsce, own = [], [], [], []
    for spec in sp:
        xv, xt, kind = recalibration_inputs(val, test)
        extra = {} if n_starts is None else {"n_starts": as_int(n_starts, "n_starts", 1)}
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
    results = [as_instance(r, TemperatureResult, "results[i]", "from optimise_temperature_per_metric()")
               for r in as_list(results, "results", "TemperatureResult objects")]
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
