"""Metric curves: per-class errors, error against the bin count, error against temperature."""

from __future__ import annotations

import numbers
import textwrap

import numpy as np

from .._params import (
    as_flag,
    as_list,
    as_names,
)
from ..binned.space import Evaluation
from ..binned.spec import MetricSpec
from ..errors import InputTypeError, InvalidParameterError
from .figure import ACC_COLOR, GAP_COLOR, check_figsize, figure, fit_title, save

__all__ = ["plot_per_class_error", "plot_metric_vs_bins", "plot_error_vs_temperature"]


def plot_per_class_error(
    labels,
    probs,
    metric="ACE",
    *,
    num_bins: int = 15,
    class_names=None,
    sort: bool = True,
    title: str | None = None,
    figsize=None,
    path=None,
):
    """Bar chart of the calibration error of each class (the paper's Figure 1 left).

    Parameters
    ----------
    labels : array_like of shape (N,) or (N, K)
    probs : array_like of shape (N, K)
    metric : str, int or MetricSpec, default "ACE"
        A class-conditional metric (see :func:`calibkit.diagnostics.per_class_error`).
    num_bins : int, default 15
    class_names : sequence of str, optional
        Tick labels (shown when K <= 40).
    sort : bool, default True
        Order the bars from the largest error to the smallest.
    title : str, optional
    figsize : (float, float), optional
        Default grows with K.
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.plots import plot_per_class_error
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(5), size=500)
    >>> fig = plot_per_class_error(rng.integers(0, 5, size=500), probs, "SCE", num_bins=10)
    >>> len(fig.axes[0].patches)
    5
    """
    from ..binned.diagnostics import per_class_error

    spec = MetricSpec.coerce(metric)
    errors = per_class_error(labels, probs, spec, num_bins=num_bins)
    k = errors.size
    if class_names is None:
        names = [str(i) for i in range(k)]
    else:
        names = as_names(class_names, k)
    sort = as_flag(sort, "sort")
    order = np.argsort(-errors, kind="stable") if sort else np.arange(k)
    if figsize is None:
        figsize = (min(max(4.5, 0.22 * k + 2.0), 10.0), 3.6)
    fig, ax = figure(check_figsize(figsize))
    x = np.arange(k)
    ax.bar(x, errors[order], width=0.8, color=ACC_COLOR, edgecolor="white", linewidth=0.5)
    overall = float(np.sqrt(np.mean(errors ** 2)) if spec.norm == "l2" else errors.mean())
    ax.axhline(overall, color=GAP_COLOR, lw=1.2, ls="--",
               label=f"{spec.name} = {overall:.4f} (class average)")
    if k <= 40:
        ticks = [names[i] for i in order]
        # horizontal only when every label fits in its slot (about 11 characters of 8-pt text
        # per inch of axes); else slanted, or vertical for many classes
        slot_chars = 0.8 * figsize[0] * 11 / k
        longest = max(len(t) for t in ticks)
        if longest <= slot_chars:
            ax.set_xticks(x, ticks, fontsize=8)
        elif k <= 20:
            ax.set_xticks(x, ticks, fontsize=8, rotation=40, ha="right",
                          rotation_mode="anchor")
        else:
            ax.set_xticks(x, ticks, fontsize=8, rotation=90)
    else:
        ax.set_xticks([])
    ax.set_xlim(-0.6, k - 0.4)
    ax.set_xlabel("class" + (" (sorted by error)" if sort else ""))
    ax.set_ylabel(f"per-class {spec.name}" if spec.alias else "per-class calibration error")
    ax.grid(axis="y", alpha=0.25, lw=0.6)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    title = title or f"Per-class calibration error ({spec.describe()}, {num_bins} bins)"
    # wrapped to the figure's width (about 13 characters of 10-pt text per inch)
    ax.set_title(textwrap.fill(title, width=max(30, int(figsize[0] * 13))), fontsize=10)
    save(fig, path)
    return fig


# --- metric vs number of bins --------------------------------------------------------------

_PREFERRED = ("ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE", "MCE")


def plot_metric_vs_bins(evaluation: Evaluation, metrics=None, *, logy: bool = False,
                        title: str | None = None, figsize=(5.5, 3.8), path=None):
    """Metric value against the number of bins, one line per metric, from an Evaluation.

    Parameters
    ----------
    evaluation : Evaluation
        From :func:`calibkit.evaluate`.
    metrics : sequence of metric keys, optional
        Names, positions or specs of ``evaluation.space``. Default: the named metrics present
        (ECE, SCE, ACE, TACE, RMSCE, ...), else the first 8 metrics.
    logy : bool, default False
    title : str, optional
    figsize : (float, float), default (5.5, 3.8)
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> from calibkit.plots import plot_metric_vs_bins
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(4), size=400)
    >>> ev = calibkit.evaluate(rng.integers(0, 4, size=400), probs)
    >>> fig = plot_metric_vs_bins(ev, ["ECE", "ACE"])
    >>> len(fig.axes[0].lines)
    2
    """
    if not isinstance(evaluation, Evaluation):
        raise InputTypeError(
            f"evaluation: expected a calibkit Evaluation (from calibkit.evaluate), got "
            f"{type(evaluation).__name__}"
        )
    if metrics is None:
        rows = [evaluation.space.position(n) for n in _PREFERRED if n in evaluation.space]
        if not rows:
            rows = list(range(min(8, len(evaluation.space))))
    else:
        if isinstance(metrics, (str, MetricSpec)) or isinstance(metrics, numbers.Integral):
            metrics = [metrics]
        rows = [evaluation.space.position(m)
                for m in as_list(metrics, "metrics", "metric names, positions or specs")]
        if not rows:
            raise InvalidParameterError("metrics: choose at least one metric to plot")
    fig, ax = figure(check_figsize(figsize))
    x = np.asarray(evaluation.num_bins)
    order = np.argsort(x)
    markers = "osD^v<>pXh*"
    for i, r in enumerate(rows):
        ax.plot(x[order], evaluation.values[r][order], marker=markers[i % len(markers)], ms=4,
                lw=1.4, label=evaluation.space[r].name)
    ax.set_xlabel("number of bins")
    ax.set_ylabel("calibration error")
    if as_flag(logy, "logy"):
        ax.set_yscale("log")
    ax.set_xticks(x[order])
    ax.grid(alpha=0.25, lw=0.6)
    ax.legend(fontsize=7 if len(rows) > 8 else 8, frameon=False, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    ax.set_title(title or "Calibration error vs number of bins", fontsize=11)
    save(fig, path)
    return fig


# --- error vs temperature ------------------------------------------------------------------
# The curves are computed by calibkit.analysis.temperature.error_vs_temperature; plots only draw.


#: Marker shapes of the curves' minima, in curve order.
_MARKERS = "osD^vP"


def plot_error_vs_temperature(curves, *, show_nll: bool = True,
                              title: str | None = None, figsize=(6.0, 4.0), path=None):
    """Plot temperature curves; each curve's minimum is marked (hollow markers of distinct
    shapes, its temperature in the legend), and a minimum at the edge of the grid is said in a
    note (the best temperature may lie outside the grid).

    Parameters
    ----------
    curves : calibkit.analysis.temperature.TemperatureCurves
        From :func:`calibkit.analysis.temperature.error_vs_temperature`.
    show_nll : bool, default True
        Draw the NLL on a second y-axis, with its minimising temperature as a vertical line.
    title : str, optional
    figsize : (float, float), default (6.0, 4.0)
    path : str or Path, optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.analysis.temperature import error_vs_temperature
    >>> from calibkit.plots import plot_error_vs_temperature
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(300, 3)) * 3
    >>> curves = error_vs_temperature(rng.integers(0, 3, size=300), logits, [0.5, 1, 2])
    >>> fig = plot_error_vs_temperature(curves)
    >>> fig.axes[0].get_xlabel()
    'temperature T'
    """
    if not all(hasattr(curves, a) for a in ("temperatures", "metrics", "values", "nll")):
        raise InputTypeError(
            f"curves: expected TemperatureCurves (from error_vs_temperature), got "
            f"{type(curves).__name__}"
        )
    fig, ax = figure(check_figsize(figsize))
    t = curves.temperatures
    order = np.argsort(t)
    ts = t[order]
    edge = []
    for i, name in enumerate(curves.metrics):
        v = curves.values[i][order]
        m = int(np.argmin(v))
        at_edge = ts.size > 2 and m in (0, ts.size - 1)
        if at_edge:
            edge.append(name)
        label = f"{name}: min at T = {ts[m]:.3g}{' (grid edge)' if at_edge else ''}"
        (line,) = ax.plot(ts, v, lw=1.6, label=label)
        # hollow markers of distinct shapes and sizes: minima at the same T stay readable
        ax.plot(ts[m], v[m], _MARKERS[i % len(_MARKERS)], ms=9 - 1.0 * (i % 5), mfc="none",
                mew=1.5, color=line.get_color(), zorder=3)
    note = None
    if edge:  # said under the plot with the legend, where it hides no curve
        note = textwrap.fill(
            f"Minimum at the edge of the temperature grid [{ts[0]:.3g}, {ts[-1]:.3g}] for "
            f"{', '.join(edge)}: the best temperature may lie outside the grid.",
            width=max(40, int(fig.get_figwidth() * 14)))
    ax.set_xlabel("temperature T")
    ax.set_ylabel("calibration error")
    if t.min() > 0 and t.max() / t.min() > 8:
        ax.set_xscale("log")
    ax.grid(alpha=0.25, lw=0.6)
    handles, labels = ax.get_legend_handles_labels()
    if as_flag(show_nll, "show_nll"):
        nx = ax.twinx()
        (nl,) = nx.plot(t[order], curves.nll[order], color="black", lw=1.4, ls=":",
                        label="NLL (right axis)")
        best = curves.best_temperature()
        nx.axvline(best, color="black", lw=0.8, ls="--", alpha=0.6)
        nx.set_ylabel("negative log-likelihood")
        handles.append(nl)
        labels.append(f"NLL (right axis), min at T = {best:.3g}")
    if ax.get_xscale() == "log":  # plain numbers, not 3x10^-1, and no crowded minor labels
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    # below the plot, so that no curve is hidden behind it
    leg = ax.legend(handles, labels, fontsize=8, frameon=False, loc="upper center",
                    bbox_to_anchor=(0.5, -0.16), ncol=min(2, len(labels)), title=note,
                    title_fontsize=8)
    if note is not None:
        leg.get_title().set_color("#a00000")
    ax.set_title(fit_title(title or f"Calibration error vs temperature ({curves.num_bins} bins)",
                           fig), fontsize=11)
    save(fig, path)
    return fig
