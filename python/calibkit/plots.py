"""Publication-quality calibration figures (optional: ``pip install 'calibkit[plots]'``).

- :func:`reliability_diagram` -- accuracy per bin (even or adaptive), the gap to the mean
  confidence shaded, and a strip with the confidence histogram and bin counts;
- :func:`plot_per_class_error` -- per-class error bars of a class-conditional metric (the
  paper's Figure 1 left);
- :func:`plot_metric_vs_bins` -- metric value against the number of bins, from an
  :class:`~calibkit.space.Evaluation`;
- :func:`error_vs_temperature` / :func:`plot_error_vs_temperature` -- calibration error of
  several metrics (and the NLL) as the softmax temperature changes (the paper's Figure 1 right).

Every plotting function builds a standalone :class:`matplotlib.figure.Figure` (no pyplot
state, no GUI needed), returns it, and saves it when ``path`` is given (format from the suffix:
``.png``, ``.svg`` or ``.pdf``). matplotlib is imported only when a figure is drawn, so
``import calibkit`` never needs it.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass

import numpy as np

from .errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from .space import Evaluation, MetricSpace, MetricSpec

__all__ = [
    "reliability_diagram",
    "plot_per_class_error",
    "plot_metric_vs_bins",
    "error_vs_temperature",
    "plot_error_vs_temperature",
    "TemperatureCurves",
]

_SAVE_FORMATS = (".png", ".svg", ".pdf")
_ACC_COLOR = "#3465a4"
_GAP_COLOR = "#cc0000"
_HIST_COLOR = "#777777"


def _figure(figsize, nrows=1, height_ratios=None):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in tests
        raise ImportError(
            "calibkit.plots needs matplotlib; install the plotting extra with "
            "`pip install 'calibkit[plots]'` (or `pip install matplotlib`)"
        ) from exc
    fig = Figure(figsize=figsize, layout="constrained")
    if nrows == 1:
        return fig, fig.add_subplot(1, 1, 1)
    axes = fig.subplots(nrows, 1, sharex=True, gridspec_kw={"height_ratios": height_ratios})
    return fig, axes


def _save(fig, path, dpi: int = 200):
    if path is None:
        return
    if not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(f"path: expected a file path (str or Path), got {type(path).__name__}")
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in _SAVE_FORMATS:
        raise InvalidParameterError(
            f"path: cannot tell the image format from {os.fspath(path)!r}; end it with one of "
            f"{_SAVE_FORMATS}"
        )
    fig.savefig(path, dpi=dpi)


def _check_figsize(figsize):
    try:
        w, h = figsize
        ok = float(w) > 0 and float(h) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidParameterError(f"figsize: expected (width, height) in inches, got {figsize!r}")
    return float(w), float(h)


# --- reliability diagram -------------------------------------------------------------------


def reliability_diagram(
    labels,
    probs,
    *,
    binning: str = "even",
    num_bins: int = 15,
    max_prob: bool = True,
    threshold: float = 0.0,
    class_index: int | None = None,
    title: str | None = None,
    figsize=(5.0, 5.6),
    path=None,
    error_bars: bool = True,
    interval: str = "clopper-pearson",
    confidence: float = 0.90,
):
    """Reliability diagram with gap shading, a confidence histogram strip and bin counts.

    Top panel: one bar per non-empty bin spanning the bin's range, its height the bin's
    accuracy (observed frequency); the band between the accuracy and the bin's mean confidence
    is shaded red (the bin's gap, weighted into the metric by its count); the diagonal is
    perfect calibration. Bottom strip: the number of scores per bin, annotated. The panel's
    text gives the metric the bins define (l1; e.g. ECE for the defaults). Even binning's extra
    bin of scores exactly 1.0 (SPEC.md) is drawn as a narrow bar just right of 1.

    Parameters
    ----------
    labels : array_like of shape (N,) or (N, K)
        Class indices, or an (N, K) 0/1 multilabel matrix (then ``max_prob`` must be False).
    probs : array_like of shape (N, K), (N,) or (N, 1)
    binning : {"even", "adaptive"}, default "even"
    num_bins : int or "auto", default 15
    max_prob : bool, default True
        True: the top-label probability of each row (classic ECE diagram). False: every
        probability (pooled), or column ``class_index`` one-vs-rest.
    threshold : float, default 0.0
        Keep scores strictly above it.
    class_index : int, optional
        Draw only class k's group (class-conditional view): the rows predicted as k if
        ``max_prob``, else column k against "label == k".
    title : str, optional
    figsize : (float, float), default (5.0, 5.6)
        Inches.
    path : str or Path, optional
        Save the figure there (``.png``, ``.svg`` or ``.pdf``).
    error_bars : bool, default True
        Draw each bin's accuracy interval (:meth:`calibkit.CalibrationBins.accuracy_interval`)
        as an error bar at the bin's (mean confidence, accuracy) point.
    interval : {"clopper-pearson", "wilson", "jeffreys"}, default "clopper-pearson"
    confidence : float, default 0.90
        Level of the error bars.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.plots import reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(5) * 0.3, size=1000)
    >>> labels = rng.integers(0, 5, size=1000)
    >>> fig = reliability_diagram(labels, probs, num_bins=10)
    >>> fig.axes[0].get_ylabel()
    'accuracy'
    """
    figsize = _check_figsize(figsize)
    cc = class_index is not None
    if isinstance(num_bins, str):
        from .trust.auto_bins import resolve_num_bins

        num_bins = resolve_num_bins(num_bins, labels, probs, max_prob=bool(max_prob),
                                    class_conditional=cc)
        if isinstance(num_bins, str):
            raise InvalidParameterError(f"num_bins: expected a positive int or 'auto', got {num_bins!r}")
    if np.ndim(labels) == 2:
        from .multilabel import multilabel_bins as bins_fn
    else:
        from .bins import calibration_bins as bins_fn
    table = bins_fn(labels, probs, binning=binning, max_prob=max_prob, class_conditional=cc,
                    threshold=threshold, num_bins=num_bins)
    g = 0
    if cc:
        if isinstance(class_index, (bool, np.bool_)) or not isinstance(class_index,
                                                                        numbers.Integral):
            raise InputTypeError(f"class_index: expected an int, got {class_index!r}")
        k = table.counts.shape[0]
        if not 0 <= class_index < k:
            raise InvalidParameterError(
                f"class_index: must be in [0, {k}) for {k} classes, got {class_index}"
            )
        g = int(class_index)
    counts = np.asarray(table.counts[g], dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        raise InvalidParameterError(
            f"threshold: no score is above {threshold} in the selected group; nothing to draw "
            f"(lower the threshold or choose another class_index)"
        )
    edges = np.asarray(table.edges[g], dtype=np.float64)
    filled = counts > 0
    safe = np.maximum(counts, 1)
    acc = np.where(filled, table.sum_outcome[g] / safe, np.nan)
    conf = np.where(filled, table.sum_score[g] / safe, np.nan)
    err = float(np.nansum(counts / total * np.abs(acc - conf)))

    left = edges[:-1].copy()
    width = np.diff(edges)
    extra = binning == "even" and width[-1] == 0.0  # the [1.0, 1.0] bin of exact ones
    extra_w = 0.35 / num_bins
    if extra:
        width[-1] = extra_w
    # an empty adaptive group has NaN inner edges, but then nothing is drawn anyway

    fig, (ax, hx) = _figure(figsize, nrows=2, height_ratios=(3.2, 1.0))
    if extra:  # the extra bin of scores exactly 1.0 sits just right of 1, apart from bin B-1
        left[-1] = 1.0 + 0.25 * extra_w
    ax.bar(left[filled], acc[filled], width=width[filled], align="edge", color=_ACC_COLOR,
           alpha=0.85, edgecolor="white", linewidth=0.8, label="accuracy", zorder=2)
    lo = np.minimum(acc, conf)[filled]
    ax.bar(left[filled], np.abs(acc - conf)[filled], bottom=lo, width=width[filled],
           align="edge", color=_GAP_COLOR, alpha=0.3, edgecolor=_GAP_COLOR, hatch="//",
           linewidth=0.6, label="gap to mean confidence", zorder=3)
    ax.plot([0, 1], [0, 1], ls="--", color="#222222", lw=1.0, label="perfect calibration",
            zorder=4)
    ax.plot(conf[filled], acc[filled], "o", ms=3.5, color="black", zorder=5,
            label="(mean confidence, accuracy)")
    if error_bars:
        if not isinstance(error_bars, (bool, np.bool_)):
            raise InputTypeError(f"error_bars: expected True or False, got {error_bars!r}")
        lo_i, hi_i = (a[g] for a in table.accuracy_interval(method=interval,
                                                             confidence=confidence))
        yerr = np.vstack([acc - lo_i, hi_i - acc])[:, filled]
        ax.errorbar(conf[filled], acc[filled], yerr=np.maximum(yerr, 0.0), fmt="none",
                    ecolor="black", elinewidth=0.9, capsize=2.0, alpha=0.75, zorder=5,
                    label=f"{confidence:.0%} interval ({interval})")
    has_ones = extra and counts[-1] > 0
    right = 1.0 + (1.5 * extra_w if has_ones else 0.0)
    ax.set_xlim(min(0.0, float(np.nanmin(edges[:-1]))), right)
    ax.set_ylim(0.0, 1.02)
    ax.set_ylabel("accuracy")
    ax.grid(alpha=0.25, lw=0.6)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    spec = MetricSpec(binning, bool(max_prob), cc, float(threshold), "l1")
    what = spec.name if spec.alias and not cc else "calibration error (l1)"
    sub = f"{what} = {err:.4f}   N = {total}   {num_bins} {binning} bins"
    if has_ones:
        sub += f"   ({counts[-1]} scores = 1.0: bar right of 1)"
    if title is None:
        scope = "top-label" if max_prob else "all probabilities"
        title = f"Reliability diagram ({scope}" + (f", class {class_index})" if cc else ")")
    ax.set_title(title, fontsize=11, pad=16)
    ax.text(0.5, 1.012, sub, transform=ax.transAxes, ha="center", va="bottom", fontsize=8,
            color="#333333")

    hx.bar(left[filled], counts[filled], width=width[filled], align="edge", color=_HIST_COLOR,
           edgecolor="white", linewidth=0.8)
    hx.set_ylabel("count")
    hx.set_xlabel("confidence" if max_prob else "predicted probability")
    hx.set_ylim(0, counts.max() * 1.4)
    hx.grid(axis="y", alpha=0.25, lw=0.6)
    n_filled = int(filled.sum())
    fs = 7 if n_filled <= 20 else 5.5
    rot = 0 if n_filled <= 12 else 90
    span = right - min(0.0, float(np.nanmin(edges[:-1])))
    skipped = 0
    for x0, w, c in zip(left[filled], width[filled], counts[filled]):
        if w < 0.012 * span and not (has_ones and x0 > 1.0):  # too narrow to label legibly
            skipped += 1
            continue
        hx.annotate(f"{c}", (x0 + w / 2, c), xytext=(0, 1.5), textcoords="offset points",
                    ha="center", va="bottom", fontsize=fs, rotation=rot, color="#222222",
                    annotation_clip=False)
    if skipped:
        hx.text(0.01, 0.95, f"{skipped} narrow bins unlabelled", transform=hx.transAxes,
                ha="left", va="top", fontsize=6.5, color="#555555")
    _save(fig, path)
    return fig


# --- per-class error bars ------------------------------------------------------------------


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
    from .diagnostics import per_class_error

    spec = MetricSpec.coerce(metric)
    errors = per_class_error(labels, probs, spec, num_bins=num_bins)
    k = errors.size
    if class_names is None:
        names = [str(i) for i in range(k)]
    else:
        names = [str(c) for c in class_names]
        if len(names) != k:
            raise ShapeMismatchError(
                f"class_names: got {len(names)} names for {k} classes; give one per class"
            )
    order = np.argsort(-errors, kind="stable") if sort else np.arange(k)
    if figsize is None:
        figsize = (min(max(4.5, 0.22 * k + 2.0), 10.0), 3.6)
    fig, ax = _figure(_check_figsize(figsize))
    x = np.arange(k)
    ax.bar(x, errors[order], width=0.8, color=_ACC_COLOR, edgecolor="white", linewidth=0.5)
    overall = float(np.sqrt(np.mean(errors ** 2)) if spec.norm == "l2" else errors.mean())
    ax.axhline(overall, color=_GAP_COLOR, lw=1.2, ls="--",
               label=f"{spec.name} = {overall:.4f} (class average)")
    if k <= 40:
        ax.set_xticks(x, [names[i] for i in order], rotation=90 if k > 12 else 0, fontsize=8)
    else:
        ax.set_xticks([])
    ax.set_xlim(-0.6, k - 0.4)
    ax.set_xlabel("class" + (" (sorted by error)" if sort else ""))
    ax.set_ylabel(f"per-class {spec.name}" if spec.alias else "per-class calibration error")
    ax.grid(axis="y", alpha=0.25, lw=0.6)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.set_title(title or f"Per-class calibration error ({spec.describe()}, {num_bins} bins)",
                 fontsize=10)
    _save(fig, path)
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
        rows = [evaluation.space.position(m) for m in metrics]
        if not rows:
            raise InvalidParameterError("metrics: choose at least one metric to plot")
    fig, ax = _figure(_check_figsize(figsize))
    x = np.asarray(evaluation.num_bins)
    order = np.argsort(x)
    markers = "osD^v<>pXh*"
    for i, r in enumerate(rows):
        ax.plot(x[order], evaluation.values[r][order], marker=markers[i % len(markers)], ms=4,
                lw=1.4, label=evaluation.space[r].name)
    ax.set_xlabel("number of bins")
    ax.set_ylabel("calibration error")
    if logy:
        ax.set_yscale("log")
    ax.set_xticks(x[order])
    ax.grid(alpha=0.25, lw=0.6)
    ax.legend(fontsize=7 if len(rows) > 8 else 8, frameon=False, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    ax.set_title(title or "Calibration error vs number of bins", fontsize=11)
    _save(fig, path)
    return fig


# --- error vs temperature ------------------------------------------------------------------


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
    the one minimising the NLL, and between metrics. Each value is one
    :func:`calibkit.gce` call.

    Parameters
    ----------
    labels : array_like of shape (N,)
    logits : array_like of shape (N, K)
        Unnormalised scores (K >= 2).
    temperatures : array_like of shape (T,)
        Positive, finite temperatures (e.g. ``np.geomspace(0.5, 4, 30)``).
    metrics : sequence of metric keys, default ("ECE", "SCE", "ACE", "TACE")
        Names, paper indices or :class:`~calibkit.space.MetricSpec`.
    num_bins : int, default 15

    Returns
    -------
    TemperatureCurves

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.plots import error_vs_temperature
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(500, 4)) * 3
    >>> labels = rng.integers(0, 4, size=500)
    >>> curves = error_vs_temperature(labels, logits, [0.5, 1.0, 2.0], ["ECE", "ACE"])
    >>> curves.values.shape
    (2, 3)
    """
    from ._softmax import log_softmax, softmax
    from ._validate import as_labels
    from .errors import InvalidLabelsError
    from .metrics import gce

    space = MetricSpace([metrics] if isinstance(metrics, (str, MetricSpec)) else metrics)
    z = np.asarray(logits)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ShapeMismatchError(
            f"logits: expected shape (N, K) with K >= 2, got {z.shape}; for a binary logit "
            f"z pass np.stack([np.zeros_like(z), z], axis=1)"
        )
    t = np.asarray(temperatures, dtype=np.float64).reshape(-1) if np.ndim(temperatures) <= 1 \
        else None
    if t is None:
        raise ShapeMismatchError("temperatures: expected a 1-D sequence of temperatures")
    if t.size == 0:
        raise InvalidParameterError("temperatures: give at least one temperature")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InvalidParameterError(
            f"temperatures: every temperature must be positive and finite, got {t.tolist()}"
        )
    z = z.astype(np.float64)
    y = as_labels(labels)
    if y.shape[0] != z.shape[0]:
        raise ShapeMismatchError(
            f"labels has {y.shape[0]} entries but logits has {z.shape[0]} rows"
        )
    if y.size and (y.min() < 0 or y.max() >= z.shape[1]):
        raise InvalidLabelsError(
            f"labels: must be class indices in [0, {z.shape[1]}) for K = {z.shape[1]}"
        )
    values = np.empty((len(space), t.size))
    nll = np.empty(t.size)
    rows = np.arange(z.shape[0])
    for j, temp in enumerate(t):
        scaled = z / temp
        nll[j] = -float(np.mean(log_softmax(scaled)[rows, y]))
        probs = softmax(scaled)
        for i, spec in enumerate(space):
            values[i, j] = gce(y, probs, **spec.kwargs(), num_bins=num_bins)
    return TemperatureCurves(t, space.names, values, nll, int(num_bins))


def plot_error_vs_temperature(curves: TemperatureCurves, *, show_nll: bool = True,
                              title: str | None = None, figsize=(6.0, 4.0), path=None):
    """Plot :func:`error_vs_temperature` curves; each curve's minimum is marked.

    Parameters
    ----------
    curves : TemperatureCurves
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
    >>> from calibkit.plots import error_vs_temperature, plot_error_vs_temperature
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(300, 3)) * 3
    >>> curves = error_vs_temperature(rng.integers(0, 3, size=300), logits, [0.5, 1, 2])
    >>> fig = plot_error_vs_temperature(curves)
    >>> fig.axes[0].get_xlabel()
    'temperature T'
    """
    if not isinstance(curves, TemperatureCurves):
        raise InputTypeError(
            f"curves: expected TemperatureCurves (from error_vs_temperature), got "
            f"{type(curves).__name__}"
        )
    fig, ax = _figure(_check_figsize(figsize))
    t = curves.temperatures
    order = np.argsort(t)
    for i, name in enumerate(curves.metrics):
        v = curves.values[i][order]
        (line,) = ax.plot(t[order], v, lw=1.6, label=name)
        m = int(np.argmin(v))
        ax.plot(t[order][m], v[m], "o", ms=5, color=line.get_color(), mec="black", mew=0.6)
    ax.set_xlabel("temperature T")
    ax.set_ylabel("calibration error")
    if t.min() > 0 and t.max() / t.min() > 8:
        ax.set_xscale("log")
    ax.grid(alpha=0.25, lw=0.6)
    handles, labels = ax.get_legend_handles_labels()
    if show_nll:
        nx = ax.twinx()
        (nl,) = nx.plot(t[order], curves.nll[order], color="black", lw=1.4, ls=":",
                        label="NLL (right axis)")
        best = curves.best_temperature()
        nx.axvline(best, color="black", lw=0.8, ls="--", alpha=0.6)
        nx.set_ylabel("negative log-likelihood")
        handles.append(nl)
        labels.append(f"NLL (right axis), min at T = {best:.3g}")
    ax.legend(handles, labels, fontsize=8, frameon=False, loc="upper right")
    ax.set_title(title or f"Calibration error vs temperature ({curves.num_bins} bins)",
                 fontsize=11)
    _save(fig, path)
    return fig
