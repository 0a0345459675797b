"""The ``calibkit`` command: help, the default job, ``report``, ``study`` and bad input (exit 2)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import calibkit
from calibkit.cli import build_parser, main
from calibkit.space import evaluate

RNG = np.random.default_rng(7)
N, K = 300, 4
LABELS = RNG.integers(0, K, size=N)
LOGITS = 3.0 * np.eye(K)[LABELS] + RNG.normal(size=(N, K)) * 1.5


def _subparsers(parser):
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a.choices
    return {}


# ----------------------------------------------------------------------------- help
@pytest.mark.parametrize("argv", [["--help"], ["report", "--help"], ["study", "--help"]])
def test_help_explains_every_option(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    parser = build_parser()
    if argv[0] != "--help":
        parser = _subparsers(parser)[argv[0]]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name in action.choices:
                assert name in out
            continue
        assert action.help, f"option {action.option_strings or action.dest} has no help text"
        for opt in action.option_strings:
            assert opt in out, f"{opt} missing from {' '.join(argv)}"
    assert "usage: calibkit" in out


def test_usage_error_exits_2(capsys):
    assert main(["report"]) == 2  # missing PREDICTIONS
    assert "PREDICTIONS" in capsys.readouterr().err
    assert main(["study", "--num-bins", "0"]) == 2
    assert "positive integer" in capsys.readouterr().err
    assert main(["study", "--max-noise", "2"]) == 2
    assert main(["report", "x.npz", "--logits", "--probs"]) == 2
    assert main(["study", "--importance-threshold", "1"]) == 2
    assert "[0, 1)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- default job
def test_default_job_prints_named_metrics_and_space(capsys):
    from calibkit.analysis import default_models

    assert main(["--quiet"]) == 0
    out = capsys.readouterr().out
    m = default_models(0, ["softmax-regression"])[0]
    y, p = m.test.labels, m.test.probs
    lines = {ln.split("  ")[0].strip(): ln for ln in out.splitlines()}
    for label, fn in [("ECE", calibkit.ece), ("Class-conditional ECE", calibkit.cce),
                      ("SCE", calibkit.sce), ("ACE", calibkit.ace), ("TACE", calibkit.tace),
                      ("RMSCE", calibkit.rmsce), ("MCE", calibkit.mce)]:
        assert label in lines, f"{label} not printed"
        assert f"{fn(y, p, num_bins=15):.6f}" in lines[label]
    ev = evaluate(y, p, num_bins=(15,))
    rows = [ln.split() for ln in out.splitlines()]
    space_rows = {r[0]: r for r in rows if r and r[0].isdigit() and len(r) >= 6}
    assert len(space_rows) == 32
    for i in (0, 13, 26, 31):
        assert space_rows[str(i)][1] == f"{ev.values[i, 0]:.6f}"


# ----------------------------------------------------------------------------- report
def test_report_on_npz(tmp_path, capsys):
    f = tmp_path / "preds.npz"
    np.savez(f, logits=LOGITS, labels=LABELS)
    out_dir = tmp_path / "rep"
    assert main(["report", str(f), "--out", str(out_dir), "--num-bins", "10"]) == 0
    out = capsys.readouterr().out
    p = calibkit.softmax(LOGITS)
    assert f"{calibkit.ece(LABELS, p, num_bins=10):.6f}" in out
    assert "threshold" in out and "adaptive" in out  # settings printed with the metrics
    for name in ("report.md", "report.html", "results.json", "named_metrics.csv", "per_bin.csv",
                 "per_class.csv", "metric_space.csv", "reliability.png"):
        assert (out_dir / name).stat().st_size > 0, name
    assert (out_dir / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = json.loads((out_dir / "results.json").read_text())
    per_bin = res["tables"]["per_bin"]
    contrib = [row[-1] for row in per_bin["data"]]
    assert sum(contrib) == pytest.approx(calibkit.ece(LABELS, p, num_bins=10), abs=1e-12)
    per_class = res["tables"]["per_class"]
    cce_terms = [row[per_class["columns"].index("class-conditional ECE")] for row in per_class["data"]]
    assert np.mean(cce_terms) == pytest.approx(calibkit.cce(LABELS, p, num_bins=10), abs=1e-12)
    assert "data:image/png;base64," in (out_dir / "report.html").read_text()


def test_report_on_npy_and_csv(tmp_path, capsys):
    p = calibkit.softmax(LOGITS)
    np.save(tmp_path / "scores.npy", LOGITS)
    np.save(tmp_path / "y.npy", LABELS)
    assert main(["report", str(tmp_path / "scores.npy"), "--labels", str(tmp_path / "y.npy"),
                 "--logits", "--out", str(tmp_path / "a"), "-q"]) == 0
    assert f"{calibkit.sce(LABELS, p):.6f}" in capsys.readouterr().out
    csv = tmp_path / "p.csv"
    csv.write_text("y," + ",".join(f"p{k}" for k in range(K)) + "\n" + "\n".join(
        f"{y}," + ",".join(repr(float(v)) for v in row) for y, row in zip(LABELS, p)))
    assert main(["report", str(csv), "--out", str(tmp_path / "b"), "-q"]) == 0
    assert f"{calibkit.ace(LABELS, p):.6f}" in capsys.readouterr().out


def _bad_files(tmp_path: Path) -> dict:
    cases = {}
    cases["missing file"] = (tmp_path / "nope.npz", "file not found")
    f = tmp_path / "noarrays.npz"
    np.savez(f, scores=LOGITS)
    cases["wrong arrays"] = (f, "no usable arrays")
    f = tmp_path / "nolabels.npz"
    np.savez(f, logits=LOGITS)
    cases["no labels"] = (f, "no 'labels' array")
    f = tmp_path / "range.npz"
    np.savez(f, logits=LOGITS, labels=np.where(np.arange(N) == 3, K, LABELS))
    cases["label out of range"] = (f, f"label {K} at row 3 is out of range")
    f = tmp_path / "nan.npz"
    bad = LOGITS.copy()
    bad[7, 1] = np.nan
    np.savez(f, logits=bad, labels=LABELS)
    cases["NaN"] = (f, "NaN")
    f = tmp_path / "len.npz"
    np.savez(f, logits=LOGITS, labels=LABELS[:-2])
    cases["length mismatch"] = (f, f"{N - 2} labels for {N} rows")
    f = tmp_path / "probs.npz"
    np.savez(f, probs=calibkit.softmax(LOGITS) * 0.5, labels=LABELS)
    cases["probabilities not summing to 1"] = (f, "invalid probabilities")
    return cases


@pytest.mark.parametrize("case", ["missing file", "wrong arrays", "no labels", "label out of range",
                                  "NaN", "length mismatch", "probabilities not summing to 1"])
def test_report_bad_input_exits_2(tmp_path, capsys, case):
    path, message = _bad_files(tmp_path)[case]
    assert main(["report", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error: ")
    assert message in err and str(path) in err
    assert not (tmp_path / "o" / "report.md").exists()


@pytest.mark.parametrize("case", ["missing file", "label out of range", "NaN"])
def test_study_bad_input_exits_2(tmp_path, capsys, case):
    path, message = _bad_files(tmp_path)[case]
    assert main(["study", "--test", str(path), "--val", str(path), "--out", str(tmp_path / "o")]) == 2
    assert message in capsys.readouterr().err


def test_study_argument_errors(tmp_path, capsys):
    f = tmp_path / "t.npz"
    np.savez(f, logits=LOGITS, labels=LABELS)
    assert main(["study", "--val", str(f)]) == 2
    assert "--val needs --test" in capsys.readouterr().err
    assert main(["study", "--test", str(f)]) == 2  # no val_* arrays and no --val
    assert "no validation split" in capsys.readouterr().err
    assert main(["study", "--num-bins", "10", "--test", str(f)]) == 2
    assert "at least two distinct" in capsys.readouterr().err


def test_subprocess_python_m_calibkit(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([sys.executable, "-m", "calibkit", "report", str(tmp_path / "absent.npz")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "absent.npz: file not found" in r.stderr
    assert r.stdout == ""
    h = subprocess.run([sys.executable, "-m", "calibkit", "--help"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert h.returncode == 0 and "study" in h.stdout and "report" in h.stdout


# ----------------------------------------------------------------------------- study
def test_study_on_user_logits_via_cli(tmp_path, capsys):
    f = tmp_path / "model.npz"
    n_val = 200
    np.savez(f, logits=LOGITS, labels=LABELS, val_logits=LOGITS[:n_val] * 1.1, val_labels=LABELS[:n_val])
    out = tmp_path / "study"
    argv = ["study", "--test", str(f), "--out", str(out), "--quick", "-q", "--num-bins", "10", "20"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Bin sensitivity" in printed
    res = json.loads((out / "results.json").read_text())
    assert res["settings"]["num_bins"] == [10, 20] and res["settings"]["label_noise"] is False
    assert res["label_noise"] is None
    m = res["models"][0]
    assert m["name"] == "model" and m["n_test"] == N and m["n_validation"] == n_val
    # the uncalibrated column is the test logits' softmax, metric 4 = ECE at 15 bins
    j = m["num_bins"].index(15)
    assert m["uncalibrated"][4][j] == pytest.approx(
        calibkit.ece(LABELS, calibkit.softmax(LOGITS), num_bins=15), abs=1e-12)
    assert (out / "report.html").stat().st_size > 0


@pytest.mark.realdata
@pytest.mark.slow
def test_study_on_densenet_logits(tmp_path, capsys):
    from conftest import shared_data_path

    path = shared_data_path("kangsepp__densenet40_c10.npz")
    out = tmp_path / "densenet"
    assert main(["study", "--test", str(path), "--out", str(out), "--quick", "-q"]) == 0
    res = json.loads((out / "results.json").read_text())
    m = res["models"][0]
    assert (m["n_validation"], m["n_test"], m["num_classes"]) == (5000, 10000, 10)
    with np.load(path) as d:
        probs = calibkit.softmax(d["logits"])
        labels = d["labels"]
    j = m["num_bins"].index(15)
    assert m["uncalibrated"][24][j] == pytest.approx(calibkit.ace(labels, probs, num_bins=15), abs=1e-12)
    assert len(list((out / "figures").glob("*.png"))) >= 4


@pytest.mark.realdata
def test_report_on_densenet_logits(tmp_path, capsys):
    from conftest import shared_data_path

    path = shared_data_path("kangsepp__densenet40_c10.npz")
    assert main(["report", str(path), "--out", str(tmp_path / "r"), "-q"]) == 0
    with np.load(path) as d:
        ece = calibkit.ece(d["labels"], calibkit.softmax(d["logits"]))
    assert f"{ece:.6f}" in capsys.readouterr().out
