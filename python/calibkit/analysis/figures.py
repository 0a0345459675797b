"""The study's figures (matplotlib, Agg backend; imported only when a report is written).

The reliability diagram and the calibration-error-vs-temperature plot come from
:mod:`calibkit.plots`; the figures specific to the study (metric-agreement heat map,
per-metric bin sensitivity, label-noise panels) are drawn here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "correlation_heatmap",
    "short_metric_label",
    "short_metric_labels",
    "bin_sensitivity_figure",
    "label_noise_figure",
    "temperature_figure",
    "reliability_figure",
    "save",
    "FORMATS",
    "PNG_DPI",
]


def _plt():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo"):
        try:
            matplotlib.use("Agg", force=False)
        except Exception:  # pragma: no cover
            pass
    import matplotlib.pyplot as plt

    return plt


#: Figure formats of the reports (``--figure-format``).
FORMATS = ("png", "pdf", "svg")
#: Resolution of PNG figures: print quality (a 5-inch figure is 1500 pixels wide).
PNG_DPI = 300


def save(fig, path: str | Path, dpi: int = PNG_DPI) -> Path:
    """Save ``fig`` to ``path`` in the format its suffix names (PNG at ``dpi``, 300 by default;
    PDF and SVG as vector figures), close it, return the path."""
    plt = _plt()
    path = Path(path)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path


#: How :func:`short_metric_labels` abbreviates the five GCE properties.
SHORT_LABEL_KEY = ("E/A: even/adaptive bins; top/all: top-label/all probabilities; cw/pool: "
                   "class-wise/pooled; t: threshold 0.01; l1/l2/max: norm")


def short_metric_label(spec, position: int | None = None) -> str:
    """A short label for one metric: paper index and its name (``"4 ECE"``) or, for metrics
    without one, its five properties abbreviated (``"13 E top pool l2"``, key in
    :data:`SHORT_LABEL_KEY`).

    Examples
    --------
    >>> from calibkit.space import MetricSpec
    >>> short_metric_label(MetricSpec.from_name("ECE"))
    '4 ECE'
    >>> short_metric_label(MetricSpec("adaptive", False, False, 0.01, "l2"))
    '31 A all pool t l2'
    """
    idx = spec.index if spec.index is not None else position
    head = "" if idx is None else f"{idx} "
    if spec.alias:
        return head + spec.alias
    parts = ["E" if spec.binning == "even" else "A", "top" if spec.max_prob else "all",
             "cw" if spec.class_conditional else "pool"]
    if spec.threshold > 0:
        parts.append("t")
    parts.append(spec.norm)
    return head + " ".join(parts)


def short_metric_labels(space) -> list[str]:
    """:func:`short_metric_label` of every metric of ``space``, in order."""
    return [short_metric_label(s, i) for i, s in enumerate(space)]


def correlation_heatmap(corr: np.ndarray, labels: Sequence[str], *, title: str = ""):
    """Heat map of a (M, M) rank-correlation matrix between metric orderings.

    Parameters
    ----------
    corr : numpy.ndarray, shape (M, M)
        Values in [-1, 1]; NaN cells (undefined correlations) are drawn grey.
    labels : sequence of str, length M
    title : str

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _plt()
    c = np.ma.masked_invalid(np.asarray(corr, dtype=float))
    m = c.shape[0]
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    cmap = plt.get_cmap("RdBu_r").with_extremes(bad="0.8")
    im = ax.imshow(c, cmap=cmap, vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xticks(range(m))
    ax.set_yticks(range(m))
    fs = 7 if m > 16 else 9
    ax.set_xticklabels(labels, fontsize=fs, rotation=90)
    ax.set_yticklabels(labels, fontsize=fs)
    ax.set_xlabel("metric")
    ax.set_ylabel("metric")
    if any(" " in str(lab) for lab in labels):  # short names: say what the abbreviations mean
        ax.set_xlabel("metric (" + SHORT_LABEL_KEY + ")", fontsize=7, wrap=True)
    if title:
        ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="rank correlation")
    return fig


def bin_sensitivity_figure(
    series: dict, labels: Sequence[str], binning: Sequence[str], *, title: str = ""
):
    """Bar chart of each metric's bin sensitivity, bars coloured by binning scheme.

    Parameters
    ----------
    series : dict of str -> numpy.ndarray (M,)
        One panel per entry (e.g. one per model), mean Spearman rho per metric.
    labels : sequence of str, length M
        Metric labels (paper indices).
    binning : sequence of str, length M
        ``"even"`` or ``"adaptive"`` per metric (bar colour).

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _plt()
    n = max(1, len(series))
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.4 + 2.6 * n), squeeze=False, sharex=True)
    finite = [np.asarray(v, dtype=float) for v in series.values()]
    finite = [v[np.isfinite(v)] for v in finite]
    low = min((float(v.min()) for v in finite if v.size), default=0.0)
    # the negative half only when some metric's orderings disagree across bin counts
    ylim = (-1.05, 1.05) if low < 0 else (0.0, 1.05)
    colours = {"even": "tab:orange", "adaptive": "tab:blue"}
    x = np.arange(len(labels))
    for ax, (name, vals) in zip(axes[:, 0], series.items()):
        v = np.asarray(vals, dtype=float)
        ax.bar(x, np.nan_to_num(v, nan=0.0), color=[colours.get(b, "0.5") for b in binning])
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_ylim(*ylim)
        ax.set_ylabel("mean rho")
        ax.set_title(name, fontsize=9, loc="left")
    axes[-1, 0].set_xticks(x)
    axes[-1, 0].set_xticklabels(labels, fontsize=7)
    axes[-1, 0].set_xlabel("metric (paper index)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    axes[0, 0].legend(handles, [f"{k} binning" for k in colours], fontsize=8, ncol=2,
                      loc="lower right", bbox_to_anchor=(1.0, 1.0), frameon=False)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def label_noise_figure(levels, columns: dict, *, threshold: float = 0.1):
    """The paper's label-noise panels: calibration errors, ignored fraction, accuracy/confidence.

    Parameters
    ----------
    levels : array_like (L,)
    columns : dict
        As :attr:`LabelNoiseResult.columns`.
    threshold : float
        The importance threshold (for the axis label).

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _plt()
    x = np.asarray(levels, dtype=float)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for name in ("ECE", "ACE", "SCE"):
        axes[0].plot(x, columns[name], marker="o", ms=3, label=name)
    axes[0].set_ylabel("calibration error")
    axes[0].legend(fontsize=8)
    axes[1].plot(x, columns["ignored important fraction"], marker="o", ms=3, color="tab:red")
    axes[1].set_ylabel(f"fraction of p > {threshold:g} ECE ignores")
    axes[2].plot(x, columns["accuracy"], marker="o", ms=3, label="accuracy")
    axes[2].plot(x, columns["mean max confidence"], marker="o", ms=3, label="mean max confidence")
    axes[2].legend(fontsize=8)
    for ax in axes:
        ax.set_xlabel("label noise (fraction reassigned)")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def temperature_figure(labels, logits, temperatures, metrics: Sequence[str], *, num_bins: int = 15,
                       title: str = ""):
    """Calibration error vs temperature for several metrics (the paper's Figure 1, right), via
    :func:`calibkit.analysis.temperature.error_vs_temperature` and
    :func:`calibkit.plots.plot_error_vs_temperature`.

    Returns
    -------
    (matplotlib.figure.Figure, calibkit.analysis.temperature.TemperatureCurves)
    """
    _plt()
    from ..plots import plot_error_vs_temperature
    from .temperature import error_vs_temperature

    curves = error_vs_temperature(labels, logits, temperatures, metrics, num_bins=num_bins)
    return plot_error_vs_temperature(curves, title=title or None), curves


def reliability_figure(labels=None, probs=None, *, num_bins: int = 15, title: str = "",
                       confidence=None, correct=None):
    """Reliability diagram of top-label confidence, via :func:`calibkit.plots.reliability_diagram`
    (labels and probabilities, or top-label ``confidence=`` and ``correct=``)."""
    _plt()
    from ..plots import reliability_diagram

    return reliability_diagram(labels, probs, num_bins=num_bins, title=title or None,
                               confidence=confidence, correct=correct)
