"""Publication-quality calibration figures (optional: ``pip install 'calibkit[plots]'``).

- :func:`reliability_diagram` -- accuracy per bin (even or adaptive), the gap to the mean
  confidence shaded, and a strip with the confidence histogram and bin counts;
- :func:`plot_per_class_error` -- per-class error bars of a class-conditional metric (the
  paper's Figure 1 left);
- :func:`plot_metric_vs_bins` -- metric value against the number of bins, from an
  :class:`~calibkit.space.Evaluation`;
- :func:`plot_error_vs_temperature` -- calibration error of several metrics (and the NLL) as
  the softmax temperature changes (the paper's Figure 1 right), drawn from the curves that
  :func:`calibkit.analysis.temperature.error_vs_temperature` computes.

This module only draws: every number it shows comes from a calibkit function
(:func:`calibkit.calibration_bins`, :func:`calibkit.diagnostics.per_class_error`, an
:class:`~calibkit.space.Evaluation`, or the temperature curves of :mod:`calibkit.analysis`).

Every plotting function builds a standalone :class:`matplotlib.figure.Figure` (no pyplot
state, no GUI needed), returns it, and saves it when ``path`` is given (format from the suffix:
``.png``, ``.svg`` or ``.pdf``). matplotlib is imported only when a figure is drawn, so
``import calibkit`` never needs it.
"""

from __future__ import annotations

import numbers
import os
import textwrap

import numpy as np

from ._params import as_flag, as_int
from .binned.spec import MetricSpec
from .errors import InputTypeError, InvalidParameterError, ShapeMismatchError
from .binned.space import Evaluation

__all__ = [
    "reliability_diagram",
    "plot_per_class_error",
    "plot_metric_vs_bins",
    "plot_error_vs_temperature",
]

_SAVE_FORMATS = (".png", ".svg", ".pdf")
_ACC_COLOR = "#3465a4"
_GAP_COLOR = "#cc0000"
_HIST_COLOR = "#777777"
_UNDER_COLOR = "#e8a000"


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
    labels=None,
    probs=None,
    *,
    confidence=None,
    correct=None,
    predicted=None,
    num_classes=None,
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
    interval_level: float = 0.90,
):
    """Reliability diagram with gap shading, a confidence histogram strip and bin counts.

    Top panel: one bar per non-empty bin spanning the bin's range, its height the bin's
    accuracy (observed frequency); the band between the accuracy and the bin's mean confidence
    is shaded red (the bin's gap, weighted into the metric by its count); the diagonal is
    perfect calibration. Bottom strip: the number of scores per bin, annotated. The panel's
    text gives the metric the bins define (l1; e.g. ECE for the defaults). Even binning's extra
    bin of scores exactly 1.0 (docs/spec.md) is drawn as a narrow bar just right of 1.

    Parameters
    ----------
    labels : array_like of shape (N,) or (N, K)
        Class indices, or an (N, K) 0/1 multilabel matrix (then ``max_prob`` must be False).
    probs : array_like of shape (N, K), (N,) or (N, 1)
    confidence, correct, predicted, num_classes : array_like of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs`` (see :func:`calibkit.gce`):
        each prediction's top-label probability and whether it was right (plus the predicted
        class and K for ``class_index``). ``max_prob`` must stay True.
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
    interval_level : float, default 0.90
        Confidence level of the error bars (``confidence=`` is the top-label input).

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
    >>> fig = reliability_diagram(confidence=probs.max(axis=1),
    ...                           correct=probs.argmax(axis=1) == labels, num_bins=10)
    """
    figsize = _check_figsize(figsize)
    cc = class_index is not None
    top = {"confidence": confidence, "correct": correct, "predicted": predicted,
           "num_classes": num_classes}
    is_top = any(v is not None for v in top.values())
    if isinstance(num_bins, str):
        from .binned.auto_bins import auto_num_bins, resolve_num_bins

        if is_top:  # top-label input: N predictions, one group (or num_classes groups)
            if not isinstance(num_bins, str) or num_bins != "auto":
                raise InvalidParameterError(
                    f"num_bins: expected a positive int or 'auto', got {num_bins!r}")
            num_bins = auto_num_bins(int(np.shape(confidence)[0]), int(num_classes or 1),
                                     max_prob=True, class_conditional=cc)
        else:
            num_bins = resolve_num_bins(num_bins, labels, probs, max_prob=bool(max_prob),
                                        class_conditional=cc)
        if isinstance(num_bins, str):
            raise InvalidParameterError(f"num_bins: expected a positive int or 'auto', got {num_bins!r}")
    if is_top:  # top-label input (calibkit._toplabel)
        from .binned.bins import calibration_bins

        def bins_fn(labels, probs, **kw):
            return calibration_bins(labels, probs, **top, **kw)
    elif np.ndim(labels) == 2:
        from .binned.multilabel import multilabel_bins as bins_fn
    else:
        from .binned.bins import calibration_bins as bins_fn
    table = bins_fn(labels, probs, binning=binning, max_prob=max_prob, class_conditional=cc,
                    threshold=threshold, num_bins=num_bins)
    g = 0
    if cc:
        g = as_int(class_index, "class_index (a class of probs)", 0, table.counts.shape[0] - 1)
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
    # The gap between accuracy and mean confidence. Over-confident bins (confidence above
    # accuracy): a translucent red box on top of the accuracy bar. Under-confident bins: the gap
    # lies inside the bar, so it is drawn as hatching only (no fill), leaving the bar's colour and
    # height, which is the accuracy, readable.
    over = filled & (conf >= acc)
    under = filled & (conf < acc)
    if over.any():
        ax.bar(left[over], (conf - acc)[over], bottom=acc[over], width=width[over],
               align="edge", color=_GAP_COLOR, alpha=0.3, edgecolor=_GAP_COLOR, hatch="//",
               linewidth=0.6, label="gap: over-confident", zorder=3)
    if under.any():
        ax.bar(left[under], (acc - conf)[under], bottom=conf[under], width=width[under],
               align="edge", fill=False, edgecolor=_UNDER_COLOR, hatch="\\\\", linewidth=0.6,
               label="gap: under-confident", zorder=3)
    ax.plot([0, 1], [0, 1], ls="--", color="#222222", lw=1.0, label="perfect calibration",
            zorder=4)
    ax.plot(conf[filled], acc[filled], "o", ms=3.5, color="black", zorder=5,
            label="(mean confidence, accuracy)")
    if error_bars:
        if not isinstance(error_bars, (bool, np.bool_)):
            raise InputTypeError(f"error_bars: expected True or False, got {error_bars!r}")
        lo_i, hi_i = (a[g] for a in table.accuracy_interval(method=interval,
                                                             confidence=interval_level))
        yerr = np.vstack([acc - lo_i, hi_i - acc])[:, filled]
        ax.errorbar(conf[filled], acc[filled], yerr=np.maximum(yerr, 0.0), fmt="none",
                    ecolor="black", elinewidth=0.9, capsize=2.0, alpha=0.75, zorder=5,
                    label=f"{interval_level:.0%} interval ({interval})")
    has_ones = extra and counts[-1] > 0
    right = 1.0 + (1.5 * extra_w if has_ones else 0.0)
    ax.set_xlim(min(0.0, float(np.nanmin(edges[:-1]))), right)
    ax.set_ylabel("accuracy")
    ax.grid(alpha=0.25, lw=0.6)
    # The legend sits in headroom above accuracy 1, in two columns, so it never covers a bar.
    handles, labels_ = ax.get_legend_handles_labels()
    ncol = 2 if fig.get_figwidth() >= 5.0 else 1
    rows = -(-len(handles) // ncol)
    axes_h_in = fig.get_figheight() * 0.62 * 3.2 / 4.2  # the top panel's height, roughly
    headroom = (rows * 8.0 * 1.5 / 72 + 0.08) / max(axes_h_in, 0.5)
    ax.set_ylim(0.0, 1.02 + headroom)
    ax.set_yticks(np.linspace(0.0, 1.0, 6))
    ax.legend(handles, labels_, loc="upper center", ncol=ncol, fontsize=7.5, frameon=False,
              columnspacing=1.2, handlelength=1.8)
    spec = MetricSpec(binning, as_flag(max_prob, "max_prob"), cc, float(threshold), "l1")
    what = spec.name if spec.alias and not cc else "calibration error (l1)"
    sub = f"{what} = {err:.4f}   N = {total}   {num_bins} {binning} bins"
    if threshold > 0:
        sub += f"   threshold {threshold:g} (scores <= {threshold:g} dropped)"
    if has_ones:
        sub += f"   ({counts[-1]} scores = 1.0: bar right of 1)"
    # wrapped to the figure's width (about 15 characters of 8-pt text per inch), between its
    # parts where possible
    width_chars = max(30, int(fig.get_figwidth() * 15))
    sub_lines: list[str] = []
    for part in sub.split("   "):
        if sub_lines and len(sub_lines[-1]) + 3 + len(part) <= width_chars:
            sub_lines[-1] += "   " + part
        else:
            sub_lines.extend(textwrap.wrap(part, width=width_chars, break_on_hyphens=False))
    sub = "\n".join(sub_lines)
    if title is None:
        scope = "top-label" if max_prob else "all probabilities"
        title = f"Reliability diagram ({scope}" + (f", class {class_index})" if cc else ")")
    ax.set_title(title, fontsize=11, pad=8 + 12 * len(sub_lines))
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
    from .binned.diagnostics import per_class_error

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
    sort = as_flag(sort, "sort")
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
    if as_flag(logy, "logy"):
        ax.set_yscale("log")
    ax.set_xticks(x[order])
    ax.grid(alpha=0.25, lw=0.6)
    ax.legend(fontsize=7 if len(rows) > 8 else 8, frameon=False, loc="center left",
              bbox_to_anchor=(1.01, 0.5))
    ax.set_title(title or "Calibration error vs number of bins", fontsize=11)
    _save(fig, path)
    return fig


# --- error vs temperature ------------------------------------------------------------------
# The curves are computed by calibkit.analysis.temperature.error_vs_temperature; plots only draw.


def plot_error_vs_temperature(curves, *, show_nll: bool = True,
                              title: str | None = None, figsize=(6.0, 4.0), path=None):
    """Plot temperature curves; each curve's minimum is marked.

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
    ax.legend(handles, labels, fontsize=8, frameon=False, loc="upper center",
              bbox_to_anchor=(0.5, -0.16), ncol=min(4, len(labels)))
    ax.set_title(title or f"Calibration error vs temperature ({curves.num_bins} bins)",
                 fontsize=11)
    _save(fig, path)
    return fig


# --- CORP reliability diagram --------------------------------------------------------------

_BANDS = ("consistency", "confidence")


def corp_reliability_diagram(
    labels=None,
    probs=None,
    *,
    max_prob: bool = True,
    band: str = "consistency",
    n_resamples: int = 200,
    level: float = 0.9,
    seed: int | None = 0,
    sample_weight=None,
    confidence=None,
    correct=None,
    title: str | None = None,
    figsize=(5.0, 5.6),
    path=None,
):
    """CORP reliability diagram (Dimitriadis, Gneiting & Jordan, 2021) with resampling bands.

    Top panel: the CORP recalibration curve, the isotonic (pool-adjacent-violators) regression of
    the outcome on the forecast (a step function; ties pooled), with the diagonal of perfect
    calibration and a shaded band; the panel's text gives the CORP Brier decomposition
    (:func:`calibkit.decompose`). Bottom strip: histogram of the forecasts.

    The band is pointwise, at level ``level``, from ``n_resamples`` resamples in which the
    forecasts are kept and only the outcomes are redrawn, then the isotonic curve is refitted:

    * ``band="consistency"`` (default): outcomes drawn as Bernoulli(forecast), i.e. under the
      hypothesis that the forecasts are calibrated; the band is around the diagonal and shows how
      far a calibrated forecast's CORP curve strays by chance. Where the curve leaves the band
      the miscalibration is unlikely to be noise (the paper's consistency band).
    * ``band="confidence"``: outcomes drawn as Bernoulli(recalibrated forecast); the band is
      around the curve and shows its sampling variability.

    Bands are evaluated at the distinct forecast values (at most 1000 of them, spread by
    quantile, for large inputs). ``sample_weight`` weights the fits (not the draws).

    Parameters
    ----------
    labels, probs : array_like, optional
        As for :func:`calibkit.decompose`.
    max_prob : bool, default True
        True: top-label confidence vs "prediction correct". False is not drawable as one curve:
        pass a single column as binary ``probs`` instead.
    band : {"consistency", "confidence"}, default "consistency"
    n_resamples : int, default 200
    level : float in (0, 1), default 0.9
    seed : int or None, default 0
        Seed of the resampling (the same seed draws the same band).
    sample_weight, confidence, correct : optional
        As for :func:`calibkit.decompose`.
    title : str, optional
    figsize : (float, float), default (5.0, 5.6)
    path : str or Path, optional
        Save the figure there (``.png``, ``.svg`` or ``.pdf``).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.plots import corp_reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.3, 1, 500)
    >>> ok = rng.random(500) < conf ** 2
    >>> fig = corp_reliability_diagram(confidence=conf, correct=ok, n_resamples=50)
    >>> fig.axes[0].get_ylabel()
    'CORP recalibrated probability'
    """
    from .binfree.common import groups
    from ._params import as_choice, as_flag, as_int, as_real
    from .binfree.decompose import decompose, recalibrate

    figsize = _check_figsize(figsize)
    band = as_choice(band, "band", _BANDS)
    n_resamples = as_int(n_resamples, "n_resamples", minimum=1)
    level = as_real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    if not as_flag(max_prob, "max_prob"):
        raise InvalidParameterError(
            "corp_reliability_diagram draws one curve: use max_prob=True, or pass one column "
            "probs[:, k] with labels == k as binary input"
        )
    [(x, y)], w = groups(labels, probs, max_prob=True, confidence=confidence, correct=correct,
                         sample_weight=sample_weight)
    x = np.clip(x, 0.0, 1.0)
    r = recalibrate(x, y, w)
    dec = decompose(confidence=x, correct=y, sample_weight=w)

    order = np.argsort(x, kind="stable")
    xs = x[order]
    last = np.flatnonzero(np.r_[xs[1:] != xs[:-1], True])  # one row per distinct forecast
    if last.size > 1000:
        last = last[np.unique(np.linspace(0, last.size - 1, 1000).round().astype(int))]
    at = order[last]
    rng = np.random.default_rng(seed)
    p_draw = x if band == "consistency" else r
    sims = np.empty((int(n_resamples), at.size))
    for b in range(int(n_resamples)):
        y_star = (rng.random(x.size) < p_draw).astype(np.float64)
        sims[b] = recalibrate(x, y_star, w)[at]
    lo, hi = np.quantile(sims, [(1 - level) / 2, (1 + level) / 2], axis=0)

    fig, (ax, hx) = _figure(figsize, nrows=2, height_ratios=(3.2, 1.0))
    pct = f"{100 * level:g}%"
    ax.fill_between(xs[last], lo, hi, step="post", color=_ACC_COLOR, alpha=0.25, lw=0,
                    label=f"{pct} {band} band ({n_resamples} resamples)")
    ax.plot([0, 1], [0, 1], ls="--", color="#222222", lw=1.0, label="perfect calibration")
    ax.step(xs, r[order], where="post", color=_GAP_COLOR, lw=1.6, label="CORP (isotonic) curve")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_ylabel("CORP recalibrated probability")
    ax.grid(alpha=0.25, lw=0.6)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    sub = (f"Brier {dec.score:.4f} = MCB {dec.miscalibration:.4f} - DSC {dec.discrimination:.4f}"
           f" + UNC {dec.uncertainty:.4f}   N = {x.size}")
    ax.set_title(title if title is not None else "CORP reliability diagram (top-label)", fontsize=11, pad=16)
    ax.text(0.5, 1.012, sub, transform=ax.transAxes, ha="center", va="bottom", fontsize=7.5,
            color="#333333")
    heights, _, _ = hx.hist(x, bins=50, range=(0, 1), weights=w, color=_HIST_COLOR, edgecolor="white",
                            linewidth=0.5)
    if heights.max() > 0.5 * heights.sum():  # one bar dominates (confident models): log counts
        hx.set_yscale("log")
    hx.set_ylabel("count")
    hx.set_xlabel("confidence (forecast)")
    hx.grid(axis="y", alpha=0.25, lw=0.6)
    _save(fig, path)
    return fig
