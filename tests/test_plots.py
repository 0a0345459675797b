"""Figures render (Agg) to valid PNG / SVG files and show what they claim."""

from __future__ import annotations

import struct
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import calibkit  # noqa: E402
from calibkit import plots  # noqa: E402
from calibkit.errors import (  # noqa: E402
    InputTypeError,
    InvalidLabelsError,
    InvalidParameterError,
    ShapeMismatchError,
)
from calibkit.diagnostics import per_class_error  # noqa: E402
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
    curves = plots.error_vs_temperature(labels, logits, temps, ["ECE", "SCE", "TACE"],
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
    curves = plots.error_vs_temperature(d["labels"], d["logits"], temps)
    # the over-confident DenseNet is best calibrated above T = 1 by every metric
    assert all(curves.best_temperature(m) > 1.0 for m in curves.metrics)
    fig = plots.plot_error_vs_temperature(curves, path=tmp_path / "temp.png")
    assert_png(tmp_path / "temp.png")
    assert fig.axes[0].get_xscale() == "log"


def test_error_vs_temperature_plot_and_errors(tmp_path):
    labels, logits = logits_case(7, n=300)
    curves = plots.error_vs_temperature(labels, logits, np.linspace(0.5, 3, 8))
    fig = render_both(lambda p: plots.plot_error_vs_temperature(curves, path=p), tmp_path,
                      "temperature")
    ax, nx = fig.axes
    assert ax.get_xlabel() == "temperature T" and ax.get_ylabel() == "calibration error"
    assert nx.get_ylabel() == "negative log-likelihood"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:4] == ["ECE", "SCE", "ACE", "TACE"] and legend[4].startswith("NLL")
    fig = plots.plot_error_vs_temperature(curves, show_nll=False)
    assert len(fig.axes) == 1
    for bad in ([], [1.0, 0.0], [1.0, -2.0], [np.nan]):
        with pytest.raises(InvalidParameterError, match="temperature"):
            plots.error_vs_temperature(labels, logits, bad)
    with pytest.raises(ShapeMismatchError, match="logits"):
        plots.error_vs_temperature(labels, logits[:, 0], [1.0])
    with pytest.raises(ShapeMismatchError, match="labels"):
        plots.error_vs_temperature(labels[:-1], logits, [1.0])
    with pytest.raises(InvalidLabelsError, match="labels"):
        plots.error_vs_temperature(labels + 10, logits, [1.0])
    with pytest.raises(InputTypeError, match="TemperatureCurves"):
        plots.plot_error_vs_temperature(curves.values)
