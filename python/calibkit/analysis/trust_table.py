"""The trust columns of the reports' tables, written once: each metric's bias-corrected estimate
with its bootstrap interval (which contains it), the plug-in value beside them, and the
calibration test's p-value (see :mod:`calibkit.trust`)."""

from __future__ import annotations

from .._params import renames
from .tables import Table

__all__ = ["interval_table", "INTERVAL_COLUMNS", "interval_cells", "interval_note"]

#: The columns of a metric with its interval: the plug-in value (what ``calibkit.gce``
#: returns), the bias-corrected estimate the interval is centred on, the interval beside it, and
#: the test's p-value.
INTERVAL_COLUMNS = ("value", "bias-corrected", "90% low", "90% high", "p (calibrated)")


def interval_cells(ci, test) -> list[float]:
    """The :data:`INTERVAL_COLUMNS` cells of a :class:`calibkit.ConfidenceInterval` and a
    :class:`calibkit.CalibrationTestResult`."""
    return [ci.value, ci.estimate, ci.low, ci.high, test.pvalue]


def interval_note(n_resamples: int, random_state) -> str:
    """The one line saying what the interval columns are."""
    return (f"value: the plug-in metric (calibkit.gce), biased upward; bias-corrected: 2 x value "
            f"- median of {n_resamples} Poisson bootstrap resamples, the centre of the 90% basic "
            f"bootstrap interval beside it, which always contains it "
            f"(calibkit.confidence_interval, random_state {random_state}); p: test that the model "
            f"is calibrated (calibkit.calibration_test, {n_resamples} label redraws).")


@renames(seed="random_state")
def interval_table(labels, probs_by_method: dict, *, metric="ECE", num_bins: int = 15,
                   n_resamples: int = 200, random_state: int = 0, title: str | None = None,
                   name: str = "intervals", progress=False) -> Table:
    """One row per method: the metric's plug-in value, its bias-corrected estimate with the 90%
    basic bootstrap interval around it, and the calibration test's p-value
    (:data:`INTERVAL_COLUMNS`).

    ``name`` is the table's file name (``tables/<name>.csv`` in a study report);
    ``random_state`` seeds both resamplings (``seed=`` before calibkit 0.2, still accepted
    with a DeprecationWarning); ``progress`` as for :func:`calibkit.confidence_interval`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), size=300)
    >>> y = rng.integers(0, 3, 300)
    >>> t = interval_table(y, {"model": p}, n_resamples=50)
    >>> t.columns
    ['value', 'bias-corrected', '90% low', '90% high', 'p (calibrated)']
    >>> low, high = t.cell("model", "90% low"), t.cell("model", "90% high")
    >>> bool(low <= t.cell("model", "bias-corrected") <= high)
    True
    """
    import calibkit

    if not probs_by_method:
        raise calibkit.errors.InvalidParameterError(
            "probs_by_method is empty: pass a dict of method name -> (N, K) probabilities")
    rows, index = [], []
    for method, p in probs_by_method.items():
        ci = calibkit.confidence_interval(labels, p, metric, num_bins=num_bins,
                                          n_resamples=n_resamples, random_state=random_state,
                                          progress=progress)
        test = calibkit.calibration_test(labels, p, metric, num_bins=num_bins,
                                         n_resamples=n_resamples, random_state=random_state,
                                         progress=progress)
        rows.append(interval_cells(ci, test))
        index.append(str(method))
    return Table(
        name=name,
        title=title or f"{ci.metric} ({num_bins} bins) with its 90% interval and calibration test",
        index=index,
        columns=list(INTERVAL_COLUMNS),
        data=rows,
        index_name="method",
        floatfmt=".4f",
        note=interval_note(n_resamples, random_state),
    )
