"""Reliability diagrams: binned (:func:`reliability_diagram`) and CORP (:func:`corp_reliability_diagram`)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .._params import (
    as_choice,
    as_confidence_level,
    as_flag,
    as_int,
    as_random_state,
    as_resamples,
    renames,
)
from .._validate import is_multilabel
from ..binned.spec import MetricSpec
from ..binned.table import reduce_table
from ..errors import InvalidParameterError

if TYPE_CHECKING:
    from ..binned.table import CalibrationBins

from .figure import (
    ACC_COLOR,
    GAP_COLOR,
    HIST_COLOR,
    UNDER_COLOR,
    check_figsize,
    figure,
    fit_title,
    save,
)

__all__ = ["reliability_diagram", "corp_reliability_diagram"]


# --- reliability diagram -------------------------------------------------------------------


@renames(interval_level="confidence_level")
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
    confidence_level: float = 0.90,
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
    confidence_level : float, default 0.90
        Level of the error bars (scipy's name; ``confidence=`` is the top-label input).
        ``interval_level=``, its name before calibkit 0.2, still works with a
        DeprecationWarning.

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
    figsize = check_figsize(figsize)
    error_bars = as_flag(error_bars, "error_bars")
    if error_bars:
        interval = as_choice(interval, "interval", ("clopper-pearson", "wilson", "jeffreys"))
        confidence_level = as_confidence_level(confidence_level)
    cc = class_index is not None
    top = {"confidence": confidence, "correct": correct, "predicted": predicted,
           "num_classes": num_classes}
    is_top = any(v is not None for v in top.values())
    if isinstance(num_bins, str):
        from ..binned.auto_bins import auto_num_bins, resolve_num_bins

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
    bins_fn: Callable[..., CalibrationBins]
    if is_top:  # top-label input (calibkit._toplabel)
        from ..binned.bins import calibration_bins

        def top_bins(labels, probs, **kw) -> CalibrationBins:
            return calibration_bins(labels, probs, **top, **kw)

        bins_fn = top_bins
    elif is_multilabel(labels, probs):  # (also refuses swapped arguments, by name)
        from ..binned.multilabel import multilabel_bins as bins_fn
    else:
        from ..binned.bins import calibration_bins as bins_fn
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
    err = reduce_table(table.counts[g:g + 1], table.sum_score[g:g + 1],
                       table.sum_outcome[g:g + 1], "l1", False)

    left = edges[:-1].copy()
    width = np.diff(edges)
    extra = binning == "even" and width[-1] == 0.0  # the [1.0, 1.0] bin of exact ones
    extra_w = 0.35 / num_bins
    if extra:
        width[-1] = extra_w
    # an empty adaptive group has NaN inner edges, but then nothing is drawn anyway

    fig, (ax, hx) = figure(figsize, nrows=2, height_ratios=(3.2, 1.0))
    if extra:  # the extra bin of scores exactly 1.0 sits just right of 1, apart from bin B-1
        left[-1] = 1.0 + 0.25 * extra_w
    ax.bar(left[filled], acc[filled], width=width[filled], align="edge", color=ACC_COLOR,
           alpha=0.85, edgecolor="white", linewidth=0.8, label="accuracy", zorder=2)
    # The signed gap, mean confidence - accuracy (calibkit's one sign, that of signed_ece and
    # CalibrationBins.signed_gap). Over-confident bins (gap >= 0): a translucent red box on top
    # of the accuracy bar. Under-confident bins: the gap lies inside the bar, so it is drawn as
    # hatching only (no fill), leaving the bar's colour and height, which is the accuracy,
    # readable.
    signed_gap = conf - acc
    over = filled & (signed_gap >= 0)
    under = filled & (signed_gap < 0)
    if over.any():
        ax.bar(left[over], signed_gap[over], bottom=acc[over], width=width[over],
               align="edge", color=GAP_COLOR, alpha=0.3, edgecolor=GAP_COLOR, hatch="//",
               linewidth=0.6, label="gap: over-confident", zorder=3)
    if under.any():
        ax.bar(left[under], -signed_gap[under], bottom=conf[under], width=width[under],
               align="edge", fill=False, edgecolor=UNDER_COLOR, hatch="\\\\", linewidth=0.6,
               label="gap: under-confident", zorder=3)
    ax.plot([0, 1], [0, 1], ls="--", color="#222222", lw=1.0, label="perfect calibration",
            zorder=4)
    ax.plot(conf[filled], acc[filled], "o", ms=3.5, color="black", zorder=5,
            label="(mean confidence, accuracy)")
    if error_bars:
        lo_i, hi_i = (a[g] for a in table.accuracy_interval(method=interval,
                                                             confidence_level=confidence_level))
        yerr = np.vstack([acc - lo_i, hi_i - acc])[:, filled]
        ax.errorbar(conf[filled], acc[filled], yerr=np.maximum(yerr, 0.0), fmt="none",
                    ecolor="black", elinewidth=0.9, capsize=2.0, alpha=0.75, zorder=5,
                    label=f"{confidence_level:.0%} interval ({interval})")
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
    ax.set_title(fit_title(title, fig), fontsize=11, pad=8 + 12 * len(sub_lines))
    ax.text(0.5, 1.012, sub, transform=ax.transAxes, ha="center", va="bottom", fontsize=8,
            color="#333333")

    hx.bar(left[filled], counts[filled], width=width[filled], align="edge", color=HIST_COLOR,
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
    save(fig, path)
    return fig


# --- per-class error bars ------------------------------------------------------------------


# --- CORP reliability diagram --------------------------------------------------------------

_BANDS = ("consistency", "confidence")


@renames(level="confidence_level", seed="random_state")
def corp_reliability_diagram(
    labels=None,
    probs=None,
    *,
    max_prob: bool = True,
    band: str = "consistency",
    n_resamples: int = 200,
    confidence_level: float = 0.9,
    random_state: int | None = 0,
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

    The band is pointwise, at level ``confidence_level``, from ``n_resamples`` resamples in which the
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
    confidence_level : float in (0, 1), default 0.9
        The band's level (scipy's name; ``level=`` before calibkit 0.2, still accepted with a
        DeprecationWarning).
    random_state : None, int, numpy Generator or RandomState, default 0
        Seed of the resampling, as in scikit-learn (the same int draws the same band).
        ``seed=`` before calibkit 0.2 (still accepted with a DeprecationWarning).
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
    from ..binfree.common import groups
    from ..binfree.decompose import decompose, recalibrate

    figsize = check_figsize(figsize)
    band = as_choice(band, "band", _BANDS)
    n_resamples = as_resamples(n_resamples)
    level = as_confidence_level(confidence_level)
    rng = as_random_state(random_state)
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
    p_draw = x if band == "consistency" else r
    sims = np.empty((int(n_resamples), at.size))
    for b in range(int(n_resamples)):
        y_star = (rng.random(x.size) < p_draw).astype(np.float64)
        sims[b] = recalibrate(x, y_star, w)[at]
    lo, hi = np.quantile(sims, [(1 - level) / 2, (1 + level) / 2], axis=0)

    fig, (ax, hx) = figure(figsize, nrows=2, height_ratios=(3.2, 1.0))
    pct = f"{100 * level:g}%"
    ax.fill_between(xs[last], lo, hi, step="post", color=ACC_COLOR, alpha=0.25, lw=0,
                    label=f"{pct} {band} band ({n_resamples} resamples)")
    ax.plot([0, 1], [0, 1], ls="--", color="#222222", lw=1.0, label="perfect calibration")
    ax.step(xs, r[order], where="post", color=GAP_COLOR, lw=1.6, label="CORP (isotonic) curve")
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    ax.set_ylabel("CORP recalibrated probability")
    ax.grid(alpha=0.25, lw=0.6)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    sub = (f"Brier {dec.score:.4f} = MCB {dec.miscalibration:.4f} - DSC {dec.discrimination:.4f}"
           f" + UNC {dec.uncertainty:.4f}   N = {x.size}")
    ax.set_title(fit_title(title if title is not None else "CORP reliability diagram (top-label)",
                           fig), fontsize=11, pad=16)
    ax.text(0.5, 1.012, sub, transform=ax.transAxes, ha="center", va="bottom", fontsize=7.5,
            color="#333333")
    heights, _, _ = hx.hist(x, bins=50, range=(0, 1), weights=w, color=HIST_COLOR, edgecolor="white",
                            linewidth=0.5)
    if heights.max() > 0.5 * heights.sum():  # one bar dominates (confident models): log counts
        hx.set_yscale("log")
    hx.set_ylabel("count")
    hx.set_xlabel("confidence (forecast)")
    hx.grid(axis="y", alpha=0.25, lw=0.6)
    save(fig, path)
    return fig
