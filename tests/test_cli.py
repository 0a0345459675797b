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
    cases["wrong arrays"] = (f, "pass --scores-key NAME")
    f = tmp_path / "nolabels.npz"
    np.savez(f, logits=LOGITS)
    cases["no labels"] = (f, "pass --labels-key NAME")
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
    f = tmp_path / "empty.npz"
    np.savez(f)
    cases["archive of nothing"] = (f, "the .npz archive holds no arrays")
    return cases


@pytest.mark.parametrize("case", ["missing file", "wrong arrays", "no labels", "label out of range",
                                  "NaN", "length mismatch", "probabilities not summing to 1",
                                  "archive of nothing"])
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


# ----------------------------------------------------------------------------- inputs (issue 13)
import csv as _csv  # noqa: E402

from calibkit import reference  # noqa: E402

_PYTHON_WORDS = ("kind=", "labels=", "calibkit.", "softmax(", "Traceback")


def _metric(out_dir: Path, name: str = "ECE") -> float:
    with open(out_dir / "named_metrics.csv", newline="") as fh:
        rows = {r[0]: r for r in _csv.reader(fh)}
    return float(rows[name][1])


def _report(tmp_path, *args) -> tuple[int, str, str, Path]:
    out = tmp_path / f"o{len(list(tmp_path.iterdir()))}"
    import io
    from contextlib import redirect_stderr, redirect_stdout

    so, se = io.StringIO(), io.StringIO()
    with redirect_stdout(so), redirect_stderr(se):
        code = main(["report", *map(str, args), "--out", str(out)])
    return code, so.getvalue(), se.getvalue(), out


def _write_csv(path: Path, header, rows, delim=","):
    with open(path, "w") as fh:
        if header:
            fh.write(delim.join(header) + "\n")
        for r in rows:
            fh.write(delim.join(str(v) for v in r) + "\n")


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"calibkit {calibkit.__version__}"


def test_study_whose_validation_split_misses_a_class_exits_2(tmp_path, capsys):
    """A method that cannot be fitted on the validation split (a class absent) is an input
    error naming the method and the model (exit 2), not a traceback."""
    f = tmp_path / "m.npz"
    np.savez(f, logits=LOGITS, labels=LABELS, val_logits=LOGITS[:3], val_labels=np.zeros(3, int))
    assert main(["study", "--test", str(f), "--out", str(tmp_path / "o"), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error: recalibration method ") and "never contains class" in err
    assert "Traceback" not in err


def test_an_output_directory_that_cannot_be_made_exits_2(tmp_path, capsys):
    f = tmp_path / "preds.npz"
    np.savez(f, logits=LOGITS, labels=LABELS)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "report"
    assert main(["report", str(f), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"calibkit: error: {blocker}") and "Errno" not in err, err


@pytest.mark.parametrize("seed", ["-1", str(2**32), "abc"])
def test_a_seed_out_of_range_is_a_usage_error(capsys, seed):
    """--seed -1 reached scikit-learn, whose own error escaped as a traceback."""
    assert main(["--seed", seed, "-q"]) == 2
    err = capsys.readouterr().err
    assert "argument --seed: expected an integer in [0, 4294967295]" in err and "Traceback" not in err


def test_analysis_seeds_follow_one_rule():
    """Every seed of the analysis is checked where it is given, naming it: scikit-learn's or
    NumPy's own errors ('expected non-negative integer') escaped before."""
    from calibkit import analysis as A
    from calibkit.errors import CalibkitError

    d = A.load_digits_split(0)
    for call in (lambda: A.load_digits_split(-1), lambda: A.default_models(-1, ["softmax-regression"]),
                 lambda: A.default_models(-1, ["softmax-regression"], split=d),
                 lambda: A.StudyConfig(random_state=2**32),
                 lambda: A.noisy_labels(LABELS, 0.1, K, random_state=-1)):
        with pytest.raises(CalibkitError,
                           match=r"random_state must be an integer in \[0, 4294967295\], got"):
            call()


def test_npz_keys_and_unnamed_pairs(tmp_path):
    want = reference.ece(LABELS, calibkit.softmax(LOGITS))
    f = tmp_path / "pair.npz"
    np.savez(f, LOGITS, LABELS)  # arr_0, arr_1
    code, _, err, out = _report(tmp_path, f, "--logits")
    assert code == 0 and "'arr_0'" in err and "--scores-key" in err
    assert _metric(out) == pytest.approx(want, abs=1e-12)
    f = tmp_path / "named.npz"
    np.savez(f, z=LOGITS, truth=LABELS, other=LABELS)
    code, _, err, _ = _report(tmp_path, f)
    assert code == 2 and "pass --scores-key NAME" in err
    code, _, err, out = _report(tmp_path, f, "--scores-key", "z", "--labels-key", "truth", "--logits")
    assert code == 0 and _metric(out) == pytest.approx(want, abs=1e-12)
    code, _, err, _ = _report(tmp_path, f, "--scores-key", "nope")
    assert code == 2 and "--scores-key nope: no such array (arrays: other, truth, z)" in err


def test_split_val_never_reads_the_test_arrays(tmp_path):
    """--split val on a file without val_* arrays is an error, not a report of the test split
    (a named or unnamed pair was taken for it)."""
    val = LOGITS[: N // 2]
    for name, arrays in [("named.npz", {"logits": LOGITS, "labels": LABELS}),
                         ("pair.npz", {"arr_0": LOGITS, "arr_1": LABELS})]:
        f = tmp_path / name
        np.savez(f, **arrays)
        code, _, err, _ = _report(tmp_path, f, "--split", "val")
        assert code == 2 and "--split val reads val_logits or val_probs, and val_labels" in err, err
    f = tmp_path / "both.npz"
    np.savez(f, logits=LOGITS, labels=LABELS, val_logits=val, val_labels=LABELS[: N // 2])
    code, _, _, out = _report(tmp_path, f, "--split", "val")
    assert code == 0
    assert _metric(out) == pytest.approx(reference.ece(LABELS[: N // 2], calibkit.softmax(val)), abs=1e-12)


def test_logits_flag_applies_to_whichever_array(tmp_path):
    f = tmp_path / "mislabelled.npz"
    np.savez(f, probs=LOGITS, labels=LABELS)  # logits saved under the name probs
    code, _, err, _ = _report(tmp_path, f)
    assert code == 2 and "pass --logits" in err and "the name 'probs'" in err
    assert not any(w in err for w in _PYTHON_WORDS), err
    code, _, _, out = _report(tmp_path, f, "--logits")
    assert code == 0
    assert _metric(out) == pytest.approx(reference.ece(LABELS, calibkit.softmax(LOGITS)), abs=1e-12)


def test_kind_is_detected_the_same_way_for_every_format(tmp_path):
    k = LOGITS.shape[1]
    unnamed = {
        "npz": lambda d: np.savez(d / "a.npz", scores=LOGITS, labels=LABELS) or d / "a.npz",
        "npy": lambda d: (np.save(d / "scores.npy", LOGITS), np.save(d / "labels.npy", LABELS))
        and d / "scores.npy",
        "csv": lambda d: _write_csv(d / "a.csv", ["label"] + [f"s{j}" for j in range(k)],
                                    [[y, *z] for y, z in zip(LABELS, LOGITS)]) or d / "a.csv",
    }
    named = {
        "npz": lambda d: np.savez(d / "b.npz", logits=LOGITS, labels=LABELS) or d / "b.npz",
        "npy": lambda d: (np.save(d / "logits.npy", LOGITS), np.save(d / "labels.npy", LABELS))
        and d / "logits.npy",
        "csv": lambda d: _write_csv(d / "b.csv", ["label"] + [f"logit_{j}" for j in range(k)],
                                    [[y, *z] for y, z in zip(LABELS, LOGITS)]) or d / "b.csv",
    }
    errors = set()
    for fmt in unnamed:
        d = tmp_path / f"u_{fmt}"
        d.mkdir()
        code, _, err, _ = _report(tmp_path, unnamed[fmt](d))
        assert code == 2, fmt
        errors.add(err.split("the scores are not probabilities", 1)[-1])
        code, _, _, out = _report(tmp_path, unnamed[fmt](d), "--logits")
        assert code == 0 and _metric(out) == pytest.approx(
            reference.ece(LABELS, calibkit.softmax(LOGITS)), abs=1e-9), fmt
        d = tmp_path / f"n_{fmt}"
        d.mkdir()
        code, _, _, out = _report(tmp_path, named[fmt](d))
        assert code == 0 and _metric(out) == pytest.approx(
            reference.ece(LABELS, calibkit.softmax(LOGITS)), abs=1e-9), fmt
    assert len(errors) == 1, errors  # one rule, one message
    assert "pass --logits" in errors.pop()


def test_csv_with_other_delimiters(tmp_path):
    p = calibkit.softmax(LOGITS)
    rows = [[y, *(f"{v:.17g}" for v in r)] for y, r in zip(LABELS, p)]
    header = ["label", "p0", "p1", "p2", "p3"]
    _write_csv(tmp_path / "comma.csv", header, rows)
    _write_csv(tmp_path / "semi.csv", header, rows, ";")
    _write_csv(tmp_path / "tab.csv", header, rows, "\t")
    c1, _, _, o1 = _report(tmp_path, tmp_path / "comma.csv")
    c2, _, e2, o2 = _report(tmp_path, tmp_path / "semi.csv")
    c3, _, e3, o3 = _report(tmp_path, tmp_path / "tab.csv")
    assert c1 == c2 == c3 == 0
    assert "semicolon-separated" in e2 and "tab-separated" in e3
    assert _metric(o1) == _metric(o2) == _metric(o3) == pytest.approx(
        reference.ece(LABELS, p), abs=1e-12)
    # space-separated is not recognised: refused, saying what is expected
    _write_csv(tmp_path / "space.csv", header, rows, " ")
    code, _, err, _ = _report(tmp_path, tmp_path / "space.csv")
    assert code == 2 and "expected comma-separated" in err


def test_csv_score_columns_by_name_or_position(tmp_path):
    rows = [[i, y, *z, 7] for i, (y, z) in enumerate(zip(LABELS, LOGITS))]
    header = ["id", "target", "la", "lb", "lc", "ld", "extra"]
    _write_csv(tmp_path / "c.csv", header, rows)
    want = reference.ece(LABELS, calibkit.softmax(LOGITS))
    code, _, _, out = _report(tmp_path, tmp_path / "c.csv", "--score-columns", "la,lb,lc,ld",
                              "--logits")
    assert code == 0 and _metric(out) == pytest.approx(want, abs=1e-9)
    code, _, _, out = _report(tmp_path, tmp_path / "c.csv", "--label-column", "1",
                              "--score-columns", "2,3,4,5", "--logits")
    assert code == 0 and _metric(out) == pytest.approx(want, abs=1e-9)
    code, _, err, _ = _report(tmp_path, tmp_path / "c.csv", "--score-columns", "zz", "--logits")
    assert code == 2 and "--score-columns zz: no column of that name" in err


def test_csv_class_names_mapped_or_refused(tmp_path):
    names = np.array(["cat", "dog", "emu", "owl"])
    p = calibkit.softmax(LOGITS)
    order = [2, 0, 3, 1]  # score columns in another order than sorted names
    header = ["animal", *names[order]]
    rows = [[names[y], *(f"{v:.17g}" for v in r[order])] for y, r in zip(LABELS, p)]
    _write_csv(tmp_path / "names.csv", header, rows)
    code, _, err, out = _report(tmp_path, tmp_path / "names.csv", "--label-column", "animal")
    assert code == 0
    assert "class names mapped to score columns: emu=0, cat=1, owl=2, dog=3" in err
    assert _metric(out) == pytest.approx(reference.ece(LABELS, p), abs=1e-12)
    _write_csv(tmp_path / "bad.csv", ["animal", "s0", "s1", "s2", "s3"],
               [[names[y], *r] for y, r in zip(LABELS, p)])
    code, _, err, _ = _report(tmp_path, tmp_path / "bad.csv", "--label-column", "animal")
    assert code == 2 and "holds class names" in err and "Name each score column" in err


def test_errors_speak_shell(tmp_path):
    f = tmp_path / "p.npz"
    np.savez(f, probs=calibkit.softmax(LOGITS) * 0.5, labels=LABELS)
    g = tmp_path / "x.npz"
    np.savez(f if False else g, probs=LOGITS * 10, labels=LABELS)
    for path in (f, g):
        code, _, err, _ = _report(tmp_path, path)
        assert code == 2 and "--logits" in err
        assert not any(w in err for w in _PYTHON_WORDS), err


def _toplabel_case(k=5, n=400, seed=3):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    pred = np.where(rng.uniform(size=n) < 0.6, labels, rng.integers(0, k, n))
    conf = rng.uniform(1.0 / k + 0.01, 1.0, n)
    conf[:5] = 1.0
    # a matrix with these top-label confidences and predictions: the independent oracle
    probs = np.full((n, k), 0.0)
    probs[:] = ((1 - conf) / (k - 1))[:, None]
    probs[np.arange(n), pred] = conf
    return labels, pred, conf, probs


def test_report_reads_model_zoo_and_confidence_files(tmp_path):
    labels, pred, conf, probs = _toplabel_case()
    np.savez(tmp_path / "zoo.npz", labels=labels, pred=pred.astype(np.int16), confidence=conf)
    code, so, _, out = _report(tmp_path, tmp_path / "zoo.npz", "--num-classes", 5)
    assert code == 0
    for name, fn in (("ECE", reference.ece), ("Class-conditional ECE", reference.cce),
                     ("RMSCE", reference.rmsce), ("MCE", reference.mce)):
        assert _metric(out, name) == pytest.approx(fn(labels, probs), abs=1e-12), name
    assert _metric(out, "Top-label adaptive ECE") == pytest.approx(
        reference.gce(labels, probs, binning="adaptive", max_prob=True, class_conditional=False,
                      threshold=0.0, norm="l1", num_bins=15), abs=1e-12)
    assert "Not computable from top-label data: SCE, ACE, TACE" in so
    assert (out / "reliability.png").exists() and (out / "results.json").exists()
    # CSV with confidence + correct (true/false words)
    _write_csv(tmp_path / "c.csv", ["confidence", "correct"],
               [[f"{c:.17g}", "true" if ok else "false"] for c, ok in zip(conf, pred == labels)])
    code, so, _, out = _report(tmp_path, tmp_path / "c.csv")
    assert code == 0
    assert _metric(out) == pytest.approx(reference.ece(labels, probs), abs=1e-12)
    assert "class-conditional ECE (needs the predicted classes" in so
    np.savez(tmp_path / "c2.npz", confidence=conf, correct=np.where(np.arange(conf.size) == 1, 2, 1))
    code, _, err, _ = _report(tmp_path, tmp_path / "c2.npz")
    assert code == 2 and "'correct' must be 0/1 or true/false (row 1 has 2)" in err, err
    # CSV in the model-zoo layout
    _write_csv(tmp_path / "z.csv", ["labels", "pred", "confidence"],
               [[y, q, f"{c:.17g}"] for y, q, c in zip(labels, pred, conf)])
    code, so, err, out = _report(tmp_path, tmp_path / "z.csv")
    assert code == 0 and "5 classes assumed" in err
    assert _metric(out, "Class-conditional ECE") == pytest.approx(reference.cce(labels, probs),
                                                                  abs=1e-12)


def test_report_on_a_real_model_zoo_record(tmp_path):
    from conftest import shared_data_path

    path = shared_data_path("hollance__ImageNet_torchvision__resnet101.npz")
    code, so, _, out = _report(tmp_path, path)
    assert code == 0
    with np.load(path) as f:
        conf, correct = f["confidence"].astype(float), f["labels"] == f["pred"]
    # ECE by a direct NumPy computation (15 even bins; a score of exactly 1.0 has a bin of its own)
    b = np.searchsorted(np.linspace(0, 1, 16)[1:], conf, side="right")
    keep = conf > 0
    ece = 0.0
    for j in np.unique(b[keep]):
        m = keep & (b == j)
        ece += m.sum() / keep.sum() * abs(correct[m].mean() - conf[m].mean())
    assert _metric(out) == pytest.approx(ece, abs=1e-12)
    assert "50000 predictions" in so and "1000 classes" in so


def test_report_title_names_the_file_not_its_folders(tmp_path):
    f = (tmp_path / "deep" / "folder" / "preds.npz").resolve()
    f.parent.mkdir(parents=True)
    np.savez(f, logits=LOGITS, labels=LABELS)
    code, _, err, out = _report(tmp_path, f)
    assert code == 0
    first = (out / "report.md").read_text().splitlines()[0]
    assert first == "# calibkit report: preds.npz[logits]"
    assert str(f.parent) not in first
    # the run time is printed after everything is written, and counts the writing
    assert err.rstrip().endswith(" s)") and "reliability.png" in err


def test_study_errors_name_the_study_flags(tmp_path, capsys):
    np.save(tmp_path / "z.npy", LOGITS)
    assert main(["study", "--test", str(tmp_path / "z.npy"), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert "pass --test-labels FILE" in err
    assert not any(w in err for w in _PYTHON_WORDS), err
