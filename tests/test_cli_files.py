"""Issue 26: ``calibkit report`` / ``study`` on files as users hold them (pandas, NumPy and a
spreadsheet-style writer), each number equal to the API's on the same arrays."""

from __future__ import annotations

import csv
import io
import json
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit.cli import main
from calibkit.io import PredictionFileError, read_predictions

pd = requires("pandas")

RNG = np.random.default_rng(26)
N, K = 240, 3
LABELS = RNG.integers(0, K, size=N)
LOGITS = 2.5 * np.eye(K)[LABELS] + RNG.normal(size=(N, K)) * 1.5
PROBS = calibkit.softmax(LOGITS)
COLS = [f"p{k}" for k in range(K)]


def _frame() -> pd.DataFrame:
    df = pd.DataFrame(PROBS, columns=COLS)
    df.insert(0, "label", LABELS)
    return df


def _run(*argv) -> tuple[int, str, str]:
    so, se = io.StringIO(), io.StringIO()
    with redirect_stdout(so), redirect_stderr(se):
        code = main([str(a) for a in argv])
    return code, so.getvalue(), se.getvalue()


def _named(out: Path) -> dict:
    with open(out / "named_metrics.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    head = rows[0]
    return {r[0]: dict(zip(head[1:], r[1:])) for r in rows[1:]}


# ----------------------------------------------------------------------------- item 1
@pytest.mark.parametrize("how", ["pandas index", "id column"])
def test_index_and_id_columns_are_not_read_as_scores(tmp_path, how):
    f = tmp_path / "p.csv"
    if how == "pandas index":
        _frame().to_csv(f)  # pandas' default: an unnamed index column first
    else:
        df = _frame()
        df.insert(0, "id", np.arange(1000, 1000 + N))
        df.to_csv(f, index=False)
    code, out, err = _run("report", f, "--out", tmp_path / "o")
    assert code == 0, err
    assert "index or id column" in err and "--score-columns" in err
    got = float(_named(tmp_path / "o")["ECE"]["value"])
    assert got == calibkit.ece(LABELS, PROBS)  # the API's number on the same arrays


def test_an_unnamed_column_of_consecutive_integers_is_refused_naming_score_columns(tmp_path):
    f = tmp_path / "p.csv"
    df = _frame()
    df.insert(1, "n", np.arange(N))  # a name that does not say index
    df.to_csv(f, index=False)
    code, _, err = _run("report", f, "--out", tmp_path / "o")
    assert code == 2 and "consecutive integers" in err and "--score-columns" in err
    assert "--logits" not in err
    code, _, err = _run("report", f, "--score-columns", ",".join(COLS), "--out", tmp_path / "o")
    assert code == 0, err


# ----------------------------------------------------------------------------- item 2
def test_study_reads_numpy_savez_positional_arrays_and_takes_the_reading_flags(tmp_path):
    np.savez(tmp_path / "val.npz", LOGITS[:120], LABELS[:120])
    np.savez(tmp_path / "test.npz", LOGITS[120:], LABELS[120:])
    args = ["study", "--val", tmp_path / "val.npz", "--test", tmp_path / "test.npz", "--quick",
            "--no-label-noise", "-q", "--out", tmp_path / "s"]
    code, _, err = _run(*args)
    assert code == 2 and "no usable arrays" not in err
    assert "arr_0" in err and "--logits" in err  # which array was taken, and the fix
    code, _, err = _run(*args, "--logits", "--scores-key", "arr_0", "--labels-key", "arr_1")
    assert code == 0, err
    # item 8: warnings (a recalibrator that does not converge) as one calibkit line each
    assert ".py:" not in err and all(ln.startswith("calibkit: warning: ")
                                     for ln in err.splitlines() if "Warning" in ln)
    res = json.loads((tmp_path / "s" / "results.json").read_text())
    m = res["models"][0]
    assert m["n_validation"] == 120 and m["n_test"] == N - 120


def test_load_val_test_forwards_the_reading_options(tmp_path):
    from calibkit.analysis import load_val_test

    for name, part in (("v.csv", slice(0, 100)), ("t.csv", slice(100, None))):
        df = pd.DataFrame(PROBS[part], columns=["a", "b", "c"])
        df.insert(0, "truth", LABELS[part])
        df["extra"] = 7.0
        df.to_csv(tmp_path / name, index=False)
    splits = load_val_test(tmp_path / "v.csv", tmp_path / "t.csv", label_column="truth",
                           score_columns="a,b,c")
    np.testing.assert_array_equal(splits.test.labels, LABELS[100:])
    np.testing.assert_allclose(splits.val.scores, PROBS[:100], rtol=1e-15)


# ----------------------------------------------------------------------------- item 3
def test_semicolons_and_decimal_commas_are_read(tmp_path):
    f = tmp_path / "excel.csv"
    _frame().to_csv(f, sep=";", decimal=",", index=False)  # a spreadsheet in many locales
    code, _, err = _run("report", f, "--out", tmp_path / "o")
    assert code == 0, err
    assert "semicolon-separated values with decimal commas" in err
    pred, _ = read_predictions(f)
    np.testing.assert_array_equal(pred.scores, PROBS)  # pandas writes repr-exact floats
    assert float(_named(tmp_path / "o")["ACE"]["value"]) == calibkit.ace(LABELS, PROBS)


def test_rounded_probabilities_are_refused_naming_renormalize_and_accepted_with_it(tmp_path):
    f = tmp_path / "r.csv"
    df = _frame()
    df[COLS] = df[COLS].round(2)
    df.to_csv(f, index=False)
    rounded = df[COLS].to_numpy()
    assert np.abs(rounded.sum(axis=1) - 1).max() > 1e-3  # the trial's file: rows sum to 1.01
    code, _, err = _run("report", f, "--out", tmp_path / "o")
    assert code == 2 and "--renormalize" in err
    code, _, err = _run("report", f, "--renormalize", "--out", tmp_path / "o")
    assert code == 0, err and "--renormalize" in err
    fixed = rounded / rounded.sum(axis=1, keepdims=True)
    assert float(_named(tmp_path / "o")["SCE"]["value"]) == calibkit.sce(LABELS, fixed)
    code, _, err = _run("report", f, "--renormalize", "--logits", "--out", tmp_path / "o")
    assert code == 2 and "--renormalize" in err


# ----------------------------------------------------------------------------- item 4
def test_global_options_apply_to_the_subcommand_or_are_refused(tmp_path):
    f = tmp_path / "p.npz"
    np.savez(f, probs=PROBS, labels=LABELS)
    code, _, err = _run("--num-bins", "10", "--seed", "3", "report", f, "--out", tmp_path / "a")
    assert code == 0, err
    got = _named(tmp_path / "a")
    assert float(got["ECE"]["value"]) == calibkit.ece(LABELS, PROBS, num_bins=10)
    ci = calibkit.confidence_interval(LABELS, PROBS, num_bins=10, n_resamples=200, random_state=3)
    assert float(got["ECE"]["90% low"]) == ci.low and float(got["ECE"]["90% high"]) == ci.high
    code, _, err = _run("--num-bins", "10", "report", f, "--num-bins", "12", "--out", tmp_path / "a")
    assert code == 2 and "twice" in err
    code, _, err = _run("--model", "mlp", "report", f, "--out", tmp_path / "a")
    assert code == 2 and "--model" in err
    code, _, err = _run("--num-bins", "10", "study", "--quick")
    assert code == 2 and "--report-bins" in err


# ----------------------------------------------------------------------------- item 5
def test_top_label_files_get_intervals_pvalues_binning_free_and_the_report(tmp_path):
    conf = PROBS.max(axis=1)
    pred = PROBS.argmax(axis=1)
    f = tmp_path / "zoo.csv"
    pd.DataFrame({"labels": LABELS, "pred": pred, "confidence": conf}).to_csv(f)
    code, out, err = _run("report", f, "--out", tmp_path / "o", "--seed", "1")
    assert code == 0, err
    got = _named(tmp_path / "o")
    correct = pred == LABELS
    ci = calibkit.confidence_interval(confidence=conf, correct=correct, n_resamples=200,
                                      random_state=1)
    test = calibkit.calibration_test(confidence=conf, correct=correct, n_resamples=200,
                                     random_state=1)
    assert float(got["ECE"]["value"]) == calibkit.ece(confidence=conf, correct=correct)
    assert float(got["ECE"]["bias-corrected"]) == ci.estimate
    assert float(got["ECE"]["p (calibrated)"]) == test.pvalue
    assert "smooth ECE" in out and "CORP" in out
    for name in ("report.md", "report.html", "results.json", "binning_free.csv",
                 "corp_reliability.png", "reliability.png"):
        assert (tmp_path / "o" / name).stat().st_size > 0, name
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["input"] == "top-label" and "SCE" in res["not_computable"]
    bf = res["tables"]["binning_free"]
    assert bf["data"][0][0] == calibkit.smece(confidence=conf, correct=correct)


# ----------------------------------------------------------------------------- item 6
def test_every_printed_interval_contains_the_number_printed_with_it(tmp_path):
    f = tmp_path / "p.npz"
    np.savez(f, probs=PROBS, labels=LABELS)
    code, out, _ = _run("report", f, "--out", tmp_path / "o", "-q")
    assert code == 0
    for row in _named(tmp_path / "o").values():
        if row["90% low"]:
            assert float(row["90% low"]) <= float(row["bias-corrected"]) <= float(row["90% high"])
    assert "bias-corrected" in out and "always contains it" in out
    md = (tmp_path / "o" / "report.md").read_text()
    assert "bias-corrected" in md and "always contains it" in md
    ci = calibkit.confidence_interval(LABELS, PROBS, "CCE", n_resamples=200, random_state=0)
    text = repr(ci)
    assert "bias-corrected" in text and "plug-in" in text
    assert ci.low <= ci.estimate <= ci.high


# ----------------------------------------------------------------------------- item 7
@pytest.mark.parametrize("fmt,magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_figure_format_and_print_resolution(tmp_path, fmt, magic):
    requires("matplotlib")
    f = tmp_path / "p.npz"
    np.savez(f, probs=PROBS, labels=LABELS)
    code, _, err = _run("report", f, "--figure-format", fmt, "--out", tmp_path / "o", "-q")
    assert code == 0, err
    fig = tmp_path / "o" / f"reliability.{fmt}"
    assert fig.read_bytes()[:len(magic)] == magic
    if fmt == "png":
        import matplotlib.image as mpimg

        assert mpimg.imread(fig).shape[1] >= 1200  # 300 dpi, not 110 (562 px)
    html = (tmp_path / "o" / "report.html").read_text()
    assert (f"reliability.{fmt}" in html) if fmt == "pdf" else ("base64," in html)


# ----------------------------------------------------------------------------- item 8
def test_a_closed_pipe_ends_quietly(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "p.npz"
    np.savez(f, probs=PROBS, labels=LABELS)
    cmd = (f"{sys.executable} -m calibkit report {f} --out {tmp_path / 'o'} -q | head -1")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert r.stderr == "", r.stderr
    assert r.stdout.count("\n") == 1


def test_warnings_are_one_calibkit_line_each():
    from calibkit.cli.console import one_line_warnings

    se = io.StringIO()
    with redirect_stderr(se), one_line_warnings():
        for _ in range(2):
            warnings.warn("lbfgs failed to converge\n  increase max_iter", RuntimeWarning,
                          stacklevel=1)
    assert se.getvalue() == "calibkit: warning: lbfgs failed to converge increase max_iter\n"


# ----------------------------------------------------------------------------- item 9
def test_progress_follows_the_one_rule():
    from calibkit._progress import Progress, as_progress

    assert as_progress(None) is False  # pytest's stderr is not a terminal
    with pytest.raises(calibkit.InvalidParameterError):
        as_progress("yes")
    se = io.StringIO()
    with redirect_stderr(se):
        calibkit.confidence_interval(LABELS, PROBS, "ACE", n_resamples=20, random_state=0,
                                     progress=False)
    assert se.getvalue() == ""
    out = io.StringIO()
    with Progress(10, "ACE bootstrap", True, stream=out, delay=0.0) as bar:
        bar.update(5)
    assert "ACE bootstrap" in out.getvalue() and "5/10" in out.getvalue()


def test_progress_is_drawn_by_the_api_when_asked(monkeypatch):
    from calibkit import _progress

    monkeypatch.setattr(_progress, "DELAY", 0.0)
    se = io.StringIO()
    with redirect_stderr(se):
        a = calibkit.confidence_interval(LABELS, PROBS, n_resamples=30, random_state=0,
                                         progress=True)
        t = calibkit.calibration_test(LABELS, PROBS, n_resamples=30, random_state=0,
                                      progress=True)
        calibkit.ece_sweep(LABELS, PROBS, sample_weight=np.ones(N), progress=True, max_bins=5)
    text = se.getvalue()
    assert "ECE bootstrap" in text and "ECE calibration test" in text and "ECE sweep" in text
    b = calibkit.confidence_interval(LABELS, PROBS, n_resamples=30, random_state=0)
    assert (a.low, a.high) == (b.low, b.high)  # the bar changes no number
    assert t.pvalue == calibkit.calibration_test(LABELS, PROBS, n_resamples=30,
                                                 random_state=0).pvalue


# ----------------------------------------------------------------------------- item 10
def test_unused_arguments_get_the_subcommands_usage(tmp_path):
    code, _, err = _run("report", "a.npy", "b.npy", "c.npy")
    assert code == 2 and "usage: calibkit report" in err and "LABELS" in err


def test_two_npy_files_and_flags_named_in_messages(tmp_path):
    np.save(tmp_path / "logits.npy", LOGITS)
    np.save(tmp_path / "y.npy", LABELS)
    code, _, err = _run("report", tmp_path / "logits.npy", tmp_path / "y.npy",
                        "--out", tmp_path / "o", "-q")
    assert code == 0, err
    assert float(_named(tmp_path / "o")["ECE"]["value"]) == calibkit.ece(LABELS, PROBS)
    f = tmp_path / "zoo.npz"
    np.savez(f, labels=np.array([0, 394, 5]), pred=np.array([394, 394, 2]),
             confidence=np.array([0.9, 0.8, 0.4]))
    code, _, err = _run("report", f, "--num-classes", "10", "--out", tmp_path / "o")
    assert code == 2 and "--num-classes 10" in err and "predicted[" not in err
    m = tmp_path / "m.npz"
    np.savez(m, probs=PROBS, labels=LABELS)
    code, _, err = _run("report", m, "--num-classes", "10", "--out", tmp_path / "o")
    assert code == 2 and "--num-classes" in err
    c = tmp_path / "c.csv"
    _frame().to_csv(c, index=False)
    code, _, err = _run("report", c, "--labels", tmp_path / "y.npy", "--out", tmp_path / "o")
    assert code == 2 and "--labels" in err and "--label-column" in err
    with pytest.raises(PredictionFileError, match="--renormalize"):
        read_predictions(f, top_label=True, renormalize=True)


def test_figure_layouts_of_item_7():
    requires("matplotlib")
    from calibkit.analysis import figures as F
    from calibkit.analysis.temperature import error_vs_temperature
    from calibkit.plots import corp_reliability_diagram, plot_error_vs_temperature

    fig = F.bin_sensitivity_figure({"one model": np.linspace(0.3, 1.0, 4)}, list("abcd"),
                                   ["even", "even", "adaptive", "adaptive"])
    assert fig.axes[0].get_ylim()[0] == 0.0  # no empty negative half
    assert fig.get_figheight() >= 3.5  # one model is not squashed flat
    fig = F.bin_sensitivity_figure({"m": np.array([-0.5, 0.2, 0.9, 1.0])}, list("abcd"),
                                   ["even"] * 4)
    assert fig.axes[0].get_ylim()[0] < -1.0
    curves = error_vs_temperature(LABELS, LOGITS, [0.1, 0.2, 0.4], ["ECE", "ACE"])
    fig = plot_error_vs_temperature(curves)
    legend = fig.axes[0].get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert any("min at T = 0.4 (grid edge)" in t for t in texts)
    assert "edge of the temperature grid" in legend.get_title().get_text()
    markers = {ln.get_marker() for ln in fig.axes[0].get_lines() if ln.get_marker() != "None"}
    assert len(markers) == 2  # one shape per curve: minima at one T stay distinguishable
    long = "CORP reliability (" + "/very/long/absolute/path" * 6 + "/preds.npz)"
    fig = corp_reliability_diagram(LABELS, PROBS, n_resamples=10, title=long)
    title = fig.axes[0].get_title()
    assert "\n" in title and max(len(line) for line in title.splitlines()) < len(long)
