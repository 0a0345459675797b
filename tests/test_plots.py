"""Figures render (Agg) to valid PNG / SVG files and show what they claim."""

from __future__ import annotations

import struct
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import requires

matplotlib = requires("matplotlib")
matplotlib.use("Agg")

import calibkit  # noqa: E402
from calibkit import plots  # noqa: E402
from calibkit.analysis.temperature import error_vs_temperature  # noqa: E402
from calibkit.binned.diagnostics import per_class_error  # noqa: E402
from calibkit.errors import (  # noqa: E402
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    ShapeMismatchError,
)
from calibkit.space import evaluate  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def logits_case(seed=0, n=800, k=5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, size=n)
    logits = rng.normal(size=(n, k)) * 2.0
    logits[np.arange(n), labels] += 2.5  # informative but over-confident
    return labels, logits


def probs_case(seed=0, n=800, k=5):
    labels, logits = logits_case(seed, n, k)
    probs = calibkit.softmax(logits * 1.5)
    probs[:20] = np.eye(k)[labels[:20]]  # exact ones: even binning's extra bin
    return labels, probs


def assert_png(path, min_bytes=8_000):
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > min_bytes
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert width > 300 and height > 300


def assert_svg(path, min_bytes=8_000):
    data = path.read_bytes()
    assert len(data) > min_bytes
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")


def render_both(fig_fn, tmp_path, stem):
    png, svg = tmp_path / f"{stem}.png", tmp_path / f"{stem}.svg"
    fig = fig_fn(png)
    fig.savefig(svg)
    assert_png(png)
    assert_svg(svg)
    return fig


# --- reliability diagram -------------------------------------------------------------------


@pytest.mark.parametrize("binning", ["even", "adaptive"])
def test_reliability_diagram_renders(binning, tmp_path):
    from matplotlib.figure import Figure

    labels, probs = probs_case()
    fig = render_both(
        lambda p: plots.reliability_diagram(labels, probs, binning=binning, num_bins=10, path=p),
        tmp_path, f"rd_{binning}",
    )
    assert isinstance(fig, Figure)
    ax, hx = fig.axes
    table = calibkit.calibration_bins(labels, probs, binning=binning, num_bins=10)
    nonempty = int((table.counts[0] > 0).sum())
    # accuracy bars + gap bars in the top panel, count bars in the strip
    assert len(ax.patches) == 2 * nonempty
    assert len(hx.patches) == nonempty
    heights = sorted(p.get_height() for p in hx.patches)
    assert heights == sorted(table.counts[0][table.counts[0] > 0].tolist())
    assert ax.get_xlabel() == "" and hx.get_xlabel() == "confidence"
    assert ax.get_ylabel() == "accuracy" and hx.get_ylabel() == "count"
    assert ax.get_legend() is not None
    texts = " ".join(t.get_text() for t in ax.texts)
    err = calibkit.gce(labels, probs, binning=binning, num_bins=10)
    assert f"= {err:.4f}" in texts
    if binning == "even":
        assert "ECE" in texts and "scores = 1.0" in texts  # the extra bin is shown


def test_reliability_diagram_class_and_multilabel_views(tmp_path):
    labels, probs = probs_case(1)
    fig = plots.reliability_diagram(labels, probs, max_prob=False, class_index=2, num_bins=8,
                                    path=tmp_path / "c2.png")
    assert_png(tmp_path / "c2.png")
    assert "class 2" in fig.axes[0].get_title()
    per = per_class_error(labels, probs, "SCE", num_bins=8)
    assert f"= {per[2]:.4f}" in " ".join(t.get_text() for t in fig.axes[0].texts)
    rng = np.random.default_rng(2)
    mp = rng.uniform(size=(300, 4))
    ml = (rng.uniform(size=(300, 4)) < mp).astype(int)
    fig = plots.reliability_diagram(ml, mp, max_prob=False, num_bins=10,
                                    path=tmp_path / "ml.svg")
    assert_svg(tmp_path / "ml.svg")
    assert fig.axes[1].get_xlabel() == "predicted probability"


def test_reliability_diagram_errors(tmp_path):
    labels, probs = probs_case(3, n=100)
    with pytest.raises(InvalidParameterError, match="class_index"):
        plots.reliability_diagram(labels, probs, class_index=5)
    with pytest.raises(InputTypeError, match="class_index"):
        plots.reliability_diagram(labels, probs, class_index=1.5)
    soft = calibkit.softmax(logits_case(3, n=100)[1])  # no exact ones
    with pytest.raises(InvalidParameterError, match="nothing to draw"):
        plots.reliability_diagram(labels, soft, threshold=0.9999999)
    with pytest.raises(InvalidParameterError, match="image format"):
        plots.reliability_diagram(labels, probs, path=tmp_path / "x.jpeg")
    with pytest.raises(InvalidParameterError, match="figsize"):
        plots.reliability_diagram(labels, probs, figsize=(0, 3))
    with pytest.raises(InvalidParameterError, match="binning"):
        plots.reliability_diagram(labels, probs, binning="quantile")


def test_missing_matplotlib_names_the_extra(monkeypatch):
    labels, probs = probs_case(3, n=100)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"calibkit\[plots\]"):
        plots.reliability_diagram(labels, probs)


# --- per-class error bars ------------------------------------------------------------------


def test_per_class_error_plot(tmp_path):
    labels, probs = probs_case(4, k=7)
    names = [f"c{i}" for i in range(7)]
    fig = render_both(
        lambda p: plots.plot_per_class_error(labels, probs, "ACE", num_bins=10,
                                             class_names=names, path=p),
        tmp_path, "per_class",
    )
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    per = per_class_error(labels, probs, "ACE", num_bins=10)
    np.testing.assert_allclose(heights, np.sort(per)[::-1])
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == [names[i] for i in np.argsort(-per, kind="stable")]
    assert "ACE" in ax.get_ylabel()
    mean_line = ax.lines[0].get_ydata()[0]
    assert mean_line == pytest.approx(calibkit.ace(labels, probs, num_bins=10), abs=1e-12)
    with pytest.raises(ShapeMismatchError, match="class_names"):
        plots.plot_per_class_error(labels, probs, class_names=["a", "b"])
    with pytest.raises(InvalidParameterError, match="class-conditional"):
        plots.plot_per_class_error(labels, probs, "ECE")


# --- metric vs bins ------------------------------------------------------------------------


def test_metric_vs_bins_plot(tmp_path):
    labels, probs = probs_case(5)
    ev = evaluate(labels, probs)
    fig = render_both(lambda p: plots.plot_metric_vs_bins(ev, path=p), tmp_path, "vs_bins")
    ax = fig.axes[0]
    names = [line.get_label() for line in ax.lines]
    assert names == ["ECE", "CCE", "SCE", "ACE", "TACE", "RMSCE"]
    np.testing.assert_array_equal(ax.lines[3].get_ydata(), ev.get("ACE"))
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [10, 15, 20, 30, 40, 50])
    assert ax.get_xlabel() == "number of bins"
    fig = plots.plot_metric_vs_bins(ev, ["SCE", 31], logy=True)
    assert len(fig.axes[0].lines) == 2 and fig.axes[0].get_yscale() == "log"
    with pytest.raises(InputTypeError, match="Evaluation"):
        plots.plot_metric_vs_bins(ev.values)
    with pytest.raises(InvalidParameterError, match="not in this space"):
        plots.plot_metric_vs_bins(evaluate(labels, probs, space=["ECE"]), ["ACE"])


# --- calibration error vs temperature ------------------------------------------------------


def test_error_vs_temperature_values():
    labels, logits = logits_case(6)
    temps = [0.5, 1.0, 1.7, 3.0]
    curves = error_vs_temperature(labels, logits, temps, ["ECE", "SCE", "TACE"],
                                        num_bins=12)
    assert curves.values.shape == (3, 4) and curves.metrics == ("ECE", "SCE", "TACE")
    for j, t in enumerate(temps):
        p = calibkit.softmax(logits / t)
        assert curves.values[0, j] == pytest.approx(calibkit.ece(labels, p, num_bins=12),
                                                    abs=1e-12)
        assert curves.values[2, j] == pytest.approx(calibkit.tace(labels, p, num_bins=12),
                                                    abs=1e-12)
        nll = -np.mean(np.log(p[np.arange(len(labels)), labels]))
        assert curves.nll[j] == pytest.approx(nll, rel=1e-10)
    assert curves.best_temperature() == temps[int(np.argmin(curves.nll))]
    assert curves.best_temperature("SCE") == temps[int(np.argmin(curves.values[1]))]
    assert list(curves.to_dict()) == ["temperature", "nll", "ECE", "SCE", "TACE"]
    with pytest.raises(InvalidParameterError, match="not computed"):
        curves.best_temperature("ACE")


@pytest.mark.realdata
def test_error_vs_temperature_real_logits(tmp_path):
    from conftest import load_shared

    d = load_shared("kangsepp__densenet40_c10.npz")
    temps = np.geomspace(0.5, 5.0, 12)
    curves = error_vs_temperature(d["labels"], d["logits"], temps)
    # the over-confident DenseNet is best calibrated above T = 1 by every metric
    assert all(curves.best_temperature(m) > 1.0 for m in curves.metrics)
    fig = plots.plot_error_vs_temperature(curves, path=tmp_path / "temp.png")
    assert_png(tmp_path / "temp.png")
    assert fig.axes[0].get_xscale() == "log"


def test_error_vs_temperature_plot_and_errors(tmp_path):
    labels, logits = logits_case(7, n=300)
    curves = error_vs_temperature(labels, logits, np.linspace(0.5, 3, 8))
    fig = render_both(lambda p: plots.plot_error_vs_temperature(curves, path=p), tmp_path,
                      "temperature")
    ax, nx = fig.axes
    assert ax.get_xlabel() == "temperature T" and ax.get_ylabel() == "calibration error"
    assert nx.get_ylabel() == "negative log-likelihood"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    # each curve's label says where its minimum is (issue 26, item 7)
    assert [t.split(":")[0] for t in legend[:4]] == ["ECE", "SCE", "ACE", "TACE"]
    assert all("min at T = " in t for t in legend[:4]) and legend[4].startswith("NLL")
    fig = plots.plot_error_vs_temperature(curves, show_nll=False)
    assert len(fig.axes) == 1
    for bad in ([], [1.0, 0.0], [1.0, -2.0], [np.nan]):
        with pytest.raises(InvalidParameterError, match="temperature"):
            error_vs_temperature(labels, logits, bad)
    with pytest.raises(ShapeMismatchError, match="logits"):
        error_vs_temperature(labels, logits[:, 0], [1.0])
    with pytest.raises(ShapeMismatchError, match="labels"):
        error_vs_temperature(labels[:-1], logits, [1.0])
    with pytest.raises(InvalidLabelsError, match="labels"):
        error_vs_temperature(labels + 10, logits, [1.0])
    with pytest.raises(InputTypeError, match="TemperatureCurves"):
        plots.plot_error_vs_temperature(curves.values)


# --- figure layout (issue 13): rendered, measured, and looked at --------------------------------

CIFAR10 = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck"]


def _bbox(fig, artist):
    # Draw only a figure changed since its last draw: a full draw per box made one test of
    # 80 boxes take 20 s.
    if fig.stale and hasattr(fig.canvas, "draw"):
        fig.canvas.draw()
    return artist.get_window_extent(renderer=fig.canvas.get_renderer())


def _inside(inner, outer, tol=1.0):
    return (inner.x0 >= outer.x0 - tol and inner.x1 <= outer.x1 + tol
            and inner.y0 >= outer.y0 - tol and inner.y1 <= outer.y1 + tol)


def _agg(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig


def test_per_class_plot_with_ten_names_fits(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(10), size=2000)
    labels = rng.integers(0, 10, size=2000)
    fig = _agg(plots.plot_per_class_error(labels, probs, "ACE", class_names=CIFAR10,
                                          path=tmp_path / "per_class.png"))
    assert_png(tmp_path / "per_class.png")
    ax = fig.axes[0]
    figbox = fig.bbox
    title = ax.title
    assert _inside(_bbox(fig, title), figbox), "title cut"
    assert "ACE" in title.get_text() or "adaptive" in title.get_text()
    ticks = [t for t in ax.get_xticklabels() if t.get_text()]
    assert [t.get_text() for t in ticks] == [CIFAR10[i] for i in np.argsort(
        -per_class_error(labels, probs, "ACE"), kind="stable")]
    boxes = [_bbox(fig, t) for t in ticks]
    for b in boxes:
        assert _inside(b, figbox)
    rot = ticks[0].get_rotation()
    if rot == 0:
        for a, b in zip(boxes, boxes[1:]):
            assert not a.overlaps(b), "tick labels overlap"
    else:  # slanted lines of text: the gap between neighbours, across the text, exceeds its height
        xs = [ax.transData.transform((x, 0))[0] for x in ax.get_xticks()]
        height = ticks[0].get_fontsize() * fig.dpi / 72
        assert min(np.diff(xs)) * np.sin(np.radians(rot)) > 1.1 * height, "tick labels overlap"


def test_reliability_subtitle_states_threshold_and_fits(tmp_path):
    labels, probs = probs_case(5)
    for figsize in ((6.0, 6.5), (4.0, 4.5)):
        fig = _agg(plots.reliability_diagram(labels, probs, max_prob=False, threshold=0.01,
                                             figsize=figsize, path=tmp_path / "rd.png"))
        ax = fig.axes[0]
        (sub,) = ax.texts
        assert "threshold 0.01" in sub.get_text()
        err = calibkit.gce(labels, probs, max_prob=False, class_conditional=False,
                           threshold=0.01)
        assert f"= {err:.4f}" in sub.get_text()
        assert _inside(_bbox(fig, sub), fig.bbox), f"subtitle clipped at {figsize}"
        assert _inside(_bbox(fig, ax.title), fig.bbox)
        assert not _bbox(fig, sub).overlaps(_bbox(fig, ax.title))
        legend = _bbox(fig, ax.get_legend())
        assert _inside(legend, fig.bbox), f"legend cut at {figsize}"
        for bar in ax.patches:  # the legend sits above accuracy 1: it covers no bar
            assert not legend.overlaps(_bbox(fig, bar)), f"legend over a bar at {figsize}"


def test_under_confident_gap_leaves_the_accuracy_bar_readable():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(2000, 5)) * 2.5
    labels = np.where(rng.uniform(size=2000) < 0.8, logits.argmax(1), rng.integers(0, 5, 2000))
    probs = calibkit.softmax(logits / 3)  # under-confident: accuracy above confidence
    fig = plots.reliability_diagram(labels, probs, num_bins=10)
    ax = fig.axes[0]
    t = calibkit.calibration_bins(labels, probs, num_bins=10)
    filled = t.counts[0] > 0
    acc = t.sum_outcome[0][filled] / t.counts[0][filled]
    conf = t.sum_score[0][filled] / t.counts[0][filled]
    bars = ax.containers[0]  # the accuracy bars, drawn first
    np.testing.assert_allclose([p.get_height() for p in bars], acc, atol=1e-12)
    under = [c for c in ax.containers if c.get_label().startswith("gap: under")]
    assert under, "no under-confident gap drawn"
    for p in under[0]:
        assert not p.get_fill()  # hatching only: the bar's colour shows through
    tops = sorted(p.get_y() + p.get_height() for p in under[0])
    np.testing.assert_allclose(tops, np.sort(acc[conf < acc]), atol=1e-12)
    over = [c for c in ax.containers if c.get_label().startswith("gap: over")]
    for p in (over[0] if over else []):
        assert p.get_y() == pytest.approx(acc[np.isclose(acc, p.get_y())][0])  # above the bar


def test_temperature_legend_covers_no_curve():
    labels, logits = logits_case(7, n=400)
    curves = error_vs_temperature(labels, logits, np.geomspace(0.3, 5, 12),
                                  ["ECE", "ACE", "SCE", "TACE", "RMSCE", "MCE"])
    fig = _agg(plots.plot_error_vs_temperature(curves))
    ax = fig.axes[0]
    legend = _bbox(fig, ax.get_legend())
    assert not legend.overlaps(ax.get_window_extent()), "legend over the plot area"
    assert _inside(legend, fig.bbox)
    labels_x = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert all("times" not in s and "^" not in s for s in labels_x)  # plain numbers


def test_heatmap_is_labelled_with_short_metric_names():
    from calibkit.analysis import figures
    from calibkit.space import metric_space

    space = metric_space()
    labels = figures.short_metric_labels(space)
    assert labels[4] == "4 ECE" and labels[21] == "21 RMSCE" and labels[26] == "26 TACE"
    assert len(set(labels)) == 32 and max(map(len, labels)) <= 20
    corr = np.corrcoef(np.random.default_rng(0).normal(size=(32, 10)))
    fig = _agg(figures.correlation_heatmap(corr, labels, title="rho"))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == labels
    assert "E/A" in ax.get_xlabel()  # the key of the abbreviations
    # each label spells its metric's properties
    for s, lab in zip(space, labels):
        if not s.alias:
            assert lab.split()[1] == ("E" if s.binning == "even" else "A")
            assert ("t" in lab.split()) == (s.threshold > 0) and lab.endswith(s.norm)


def test_gitignore_covers_the_default_output_folders():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / ".gitignore").read_text().split()
    assert "/calibkit-study/" in text and "/calibkit-report/" in text
