"""The trust columns of the CLI's tables: each method's ECE with its bootstrap interval and the
calibration test's p-value (see :mod:`calibkit.trust`)."""

from __future__ import annotations

from .._params import renames
from .tables import Table

__all__ = ["interval_table"]


@renames(seed="random_state")
def interval_table(labels, probs_by_method: dict, *, metric="ECE", num_bins: int = 15,
                   n_resamples: int = 200, random_state: int = 0, title: str | None = None,
                   name: str = "intervals") -> Table:
    """One row per method: the metric, its 90% basic bootstrap interval and the test's p-value.

    ``name`` is the table's file name (``tables/<name>.csv`` in a study report);
    ``random_state`` seeds both resamplings (``seed=`` before calibkit 0.2, still accepted
    with a DeprecationWarning).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(3), size=300)
    >>> y = rng.integers(0, 3, 300)
    >>> t = interval_table(y, {"model": p}, n_resamples=50)
    >>> t.columns
    ['value', '90% low', '90% high', 'p (calibrated)']
    """
    import calibkit

    rows, index = [], []
    for method, p in probs_by_method.items():
        ci = calibkit.confidence_interval(labels, p, metric, num_bins=num_bins,
                                          n_resamples=n_resamples, random_state=random_state)
        test = calibkit.calibration_test(labels, p, metric, num_bins=num_bins,
                                         n_resamples=n_resamples, random_state=random_state)
        rows.append([ci.value, ci.low, ci.high, test.pvalue])
        index.append(str(method))
    return Table(
        name=name,
        title=title or f"{ci.metric} ({num_bins} bins) with its 90% interval and calibration test",
        index=index,
        columns=["value", "90% low", "90% high", "p (calibrated)"],
        data=rows,
        index_name="method",
        floatfmt=".4f",
        note=f"Interval: basic bootstrap, {n_resamples} Poisson resamples "
             f"(calibkit.confidence_interval); p: consistency-resampling test of calibration "
             f"(calibkit.calibration_test), {n_resamples} label redraws, random_state "
             f"{random_state}.",
    )
