"""calibkit.io: the one reader of prediction files, shared by the command line and the analysis,
and checking values by the library's own input rules."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import calibkit
import calibkit.io.predictions as io_predictions
from calibkit.analysis import load_predictions, load_val_test
from calibkit.cli import main
from calibkit.io import PredictionFileError, read_predictions

RNG = np.random.default_rng(11)
N, K = 60, 3
LABELS = RNG.integers(0, K, size=N)
LOGITS = RNG.normal(size=(N, K)) * 2
PACKAGE = Path(calibkit.__file__).resolve().parent


class _Stop(PredictionFileError):
    pass


def test_cli_and_analysis_read_through_the_same_function(tmp_path, monkeypatch, capsys):
    f = tmp_path / "m.npz"
    np.savez(f, logits=LOGITS, labels=LABELS, val_logits=LOGITS[:20], val_labels=LABELS[:20])
    calls = []

    def spy(path, **options):
        calls.append((Path(path), options))
        raise _Stop(f"{path}: read by the spy")

    monkeypatch.setattr(io_predictions, "read_predictions", spy)
    assert main(["report", str(f), "--logits", "--out", str(tmp_path / "r")]) == 2
    assert "read by the spy" in capsys.readouterr().err
    assert calls[-1][1]["kind"] == "logits" and calls[-1][1]["top_label"] is True
    assert main(["study", "--test", str(f), "--out", str(tmp_path / "s")]) == 2
    assert "read by the spy" in capsys.readouterr().err
    with pytest.raises(_Stop):
        load_predictions(f, kind="logits")
    assert calls[-1][1]["kind"] == "logits" and not calls[-1][1].get("top_label", False)
    with pytest.raises(_Stop):
        load_val_test(test=f)
    assert [c[0] for c in calls] == [f] * 4


def test_load_predictions_takes_the_commands_options(tmp_path):
    """The analysis reads everything the command reads: keys, score columns, other delimiters."""
    f = tmp_path / "named.npz"
    np.savez(f, z=LOGITS, truth=LABELS, other=LABELS)
    p = load_predictions(f, scores_key="z", labels_key="truth", kind="logits")
    assert np.array_equal(p.scores, LOGITS) and np.array_equal(p.labels, LABELS)
    g = tmp_path / "semi.csv"
    g.write_text("id;target;la;lb;lc\n" + "\n".join(
        f"{i};{y};" + ";".join(repr(float(v)) for v in r) for i, (y, r) in enumerate(zip(LABELS, LOGITS))))
    q = load_predictions(g, label_column="target", score_columns="la,lb,lc", kind="logits")
    assert np.array_equal(q.labels, LABELS) and np.allclose(q.scores, LOGITS)
    pred, notes = read_predictions(g, label_column="target", score_columns="la,lb,lc",
                                   kind="logits")
    assert notes == ["read as semicolon-separated values"]


def test_the_kind_by_values_is_the_metric_functions_rule(tmp_path):
    """Scores are read as probabilities by their values exactly when calibkit.ece accepts them
    (the same kernel pass), at the edges of both tolerances."""
    base = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    cases = {
        "inside": base,
        "range edge": np.array([[0.60005, 0.4, -0.00005], [0.2, 0.2, 0.6]]),  # |x| <= 1e-4 out
        "sum edge": np.array([[0.4995, 0.5, 0.0], [0.2, 0.2, 0.6]]),  # |sum - 1| = 5e-4
        # 1.001005: numpy's allclose (atol 1e-3 plus rtol 1e-5) once took it for probabilities,
        # and the value -5e-5 above was once too far below 0 (1e-6)
        "sum over": np.array([[0.6, 0.3, 0.101005], [0.2, 0.2, 0.6]]),
    }
    for name, s in cases.items():
        try:
            calibkit.ece([0, 2], s)
            ok = True
        except calibkit.InvalidProbabilitiesError:
            ok = False
        f = tmp_path / f"{name.replace(' ', '_')}.npy"
        np.save(f, s)
        np.save(tmp_path / f"{f.stem}_labels.npy", np.array([0, 2]))
        if ok:
            assert load_predictions(f).kind == "probs", name
        else:
            with pytest.raises(PredictionFileError, match="pass --logits"):
                load_predictions(f)


def test_values_are_checked_by_the_library_rules(tmp_path):
    f = tmp_path / "a.npz"
    np.savez(f, probs=np.array([[0.6, 0.4], [0.499, 0.5]]), labels=[0, 1])
    with pytest.raises(PredictionFileError) as info:
        load_predictions(f)
    # the kernel's message, which states the accepted interval and the float64 sum exactly
    assert "invalid probabilities: row 1 of probs sums to 0.999" in str(info.value)
    assert "|sum - 1| <= 1e-3" in str(info.value)
    g = tmp_path / "b.npz"
    np.savez(g, logits=LOGITS, labels=np.where(np.arange(N) == 4, 3, LABELS))
    with pytest.raises(PredictionFileError, match=r"label 3 at row 4 is out of range: labels must "
                                                  r"hold class indices in \[0, 3\)"):
        load_predictions(g)
    # bools are class indices 0/1 as everywhere in calibkit; an (N, 1) column is the labels
    h = tmp_path / "c.npz"
    np.savez(h, logits=LOGITS[:, :2], labels=(LABELS % 2 == 1)[:, None])
    assert np.array_equal(load_predictions(h).labels, LABELS % 2)


def test_top_label_files_follow_the_top_label_rules(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("confidence,correct\n0.9,1\n1.5,0\n")
    with pytest.raises(PredictionFileError, match=r"confidence\[1\] is 1.5"):
        read_predictions(f, top_label=True)
    g = tmp_path / "z.csv"
    g.write_text("labels,pred,confidence\n0,1,0.9\n2,3,0.8\n")
    # named by the flag, not by the API's argument names (issue 26, item 10)
    with pytest.raises(PredictionFileError, match=r"--num-classes 3: 'pred' holds class 3 \(row 1\)"):
        read_predictions(g, top_label=True, num_classes=3)
    top, notes = read_predictions(g, top_label=True)
    assert top.num_classes == 4 and "4 classes assumed" in notes[-1]
    # without top_label (the analysis), such a file is not a matrix of scores
    with pytest.raises(PredictionFileError):
        load_predictions(g)


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [a.name for a in node.names]


def test_no_private_helper_crosses_between_io_and_analysis():
    """calibkit.io imports nothing of calibkit.analysis; the analysis and the command line use
    only io's public names."""
    for path in (PACKAGE / "io").glob("*.py"):
        for _level, module, _ in _imports(path):
            assert "analysis" not in module and "cli" not in module, (path, module)
    for path in [*(PACKAGE / "analysis").glob("*.py"), *(PACKAGE / "cli").glob("*.py")]:
        for _level, module, names in _imports(path):
            if module.startswith("io") or ".io" in f".{module}":
                assert not any(n.startswith("_") for n in names), (path, module, names)


def _probs(n=8, k=10, seed=0):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k), size=n), rng.integers(0, k, n)


def test_a_labels_csv_is_read_by_its_label_column_not_by_position(tmp_path):
    p, y = _probs()
    np.save(tmp_path / "s.npy", p)
    (tmp_path / "named.csv").write_text(
        "id,label\n" + "".join(f"{i},{v}\n" for i, v in enumerate(y)))
    got, _ = read_predictions(tmp_path / "s.npy", labels=tmp_path / "named.csv")
    np.testing.assert_array_equal(got.labels, y)  # not the ids 0..7
    (tmp_path / "one.csv").write_text("".join(f"{v}\n" for v in y))
    np.testing.assert_array_equal(
        read_predictions(tmp_path / "s.npy", labels=tmp_path / "one.csv")[0].labels, y)
    (tmp_path / "unnamed.csv").write_text(
        "a,b\n" + "".join(f"{i},{v}\n" for i, v in enumerate(y)))
    with pytest.raises(PredictionFileError, match="headed by a label name"):
        read_predictions(tmp_path / "s.npy", labels=tmp_path / "unnamed.csv")


def test_a_full_matrix_file_with_a_confidence_array_is_a_full_matrix(tmp_path):
    p, y = _probs(n=30, k=3)
    np.savez(tmp_path / "m.npz", logits=np.log(p), labels=y, confidence=p.max(1))
    got, _ = read_predictions(tmp_path / "m.npz", top_label=True)
    np.testing.assert_array_equal(got.labels, y)
    assert got.probs.shape == (30, 3)


@pytest.mark.parametrize("arrays, message", [
    ({"confidence": np.array(["a", "b"]), "correct": np.array([1, 0])}, "must hold numbers"),
    ({"confidence": np.full((3, 2), 0.6), "correct": np.ones((3, 2))}, "1-D"),
    ({"confidence": np.zeros(0), "pred": np.zeros(0, int), "labels": np.zeros(0, int)},
     "no predictions"),
    ({"confidence": np.array([0.5, 0.9]), "pred": np.array([0, 1])}, "neither 'correct' nor"),
])
def test_bad_top_label_files_are_prediction_file_errors(tmp_path, arrays, message):
    np.savez(tmp_path / "t.npz", **arrays)
    with pytest.raises(PredictionFileError, match=message):
        read_predictions(tmp_path / "t.npz", top_label=True)
