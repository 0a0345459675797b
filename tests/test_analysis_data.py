"""Loading predictions (.npz / .npy / .csv), their error messages, and the bundled digits models."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit
from calibkit.analysis import (
    PredictionFileError,
    Predictions,
    default_models,
    load_digits_split,
    load_predictions,
    load_val_test,
)
from calibkit.analysis.digits import model_logits, train_mlp, train_softmax_regression

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(40, 4)) * 2
LABELS = RNG.integers(0, 4, size=40)
PROBS = calibkit.softmax(LOGITS)


# ----------------------------------------------------------------------------- npz
def test_npz_logits_and_probs(tmp_path):
    f = tmp_path / "a.npz"
    np.savez(f, logits=LOGITS, labels=LABELS)
    p = load_predictions(f)
    assert p.kind == "logits" and np.array_equal(p.labels, LABELS)
    assert np.allclose(p.probs, PROBS)
    g = tmp_path / "b.npz"
    np.savez(g, probs=PROBS, labels=LABELS)
    q = load_predictions(g)
    assert q.kind == "probs" and np.array_equal(q.probs, PROBS)
    # the log of probabilities are logits of the same probabilities
    assert np.allclose(calibkit.softmax(q.logits), PROBS)


def test_npz_val_split_and_test_prefix(tmp_path):
    f = tmp_path / "c.npz"
    np.savez(f, test_logits=LOGITS, test_labels=LABELS, val_logits=LOGITS[:10], val_labels=LABELS[:10])
    assert len(load_predictions(f)) == 40
    assert len(load_predictions(f, split="val")) == 10


def test_npz_stated_kind_with_other_array_name(tmp_path):
    f = tmp_path / "d.npz"
    np.savez(f, scores=LOGITS, labels=LABELS)
    assert load_predictions(f, kind="logits").kind == "logits"
    # positional reading (numpy.savez's arrays) takes 'scores', then refuses to guess its kind
    with pytest.raises(PredictionFileError, match=r"no array is named logits or probs \(arrays "
                                                  r"found: labels, scores\).*pass --logits"):
        load_predictions(f)


def test_npz_stated_kind_must_fit_the_values(tmp_path):
    """kind= applies to whichever array is read (as the command's --logits does), but
    probabilities stated to be logits are refused, by the recalibrators' rule
    (calibkit._validate.check_scores)."""
    f = tmp_path / "e.npz"
    np.savez(f, probs=PROBS, labels=LABELS)
    with pytest.raises(PredictionFileError, match="looks like probabilities .* declared as logits"):
        load_predictions(f, kind="logits")
    g = tmp_path / "f.npz"
    np.savez(g, probs=LOGITS, labels=LABELS)  # logits saved under the name probs
    assert load_predictions(g, kind="logits").kind == "logits"


# ----------------------------------------------------------------------------- npy
def test_npy_sibling_and_explicit_labels(tmp_path):
    np.save(tmp_path / "val_logits.npy", LOGITS)
    np.save(tmp_path / "val_labels.npy", LABELS)
    p = load_predictions(tmp_path / "val_logits.npy")
    assert p.kind == "logits" and np.array_equal(p.labels, LABELS)
    np.save(tmp_path / "scores.npy", PROBS)
    np.save(tmp_path / "y.npy", LABELS)
    q = load_predictions(tmp_path / "scores.npy", labels=tmp_path / "y.npy")
    assert q.kind == "probs"  # valid probabilities, no name hint
    np.save(tmp_path / "raw.npy", LOGITS)
    np.save(tmp_path / "raw_labels.npy", LABELS)
    with pytest.raises(PredictionFileError, match="pass --logits"):
        load_predictions(tmp_path / "raw.npy")
    assert load_predictions(tmp_path / "raw.npy", kind="logits").kind == "logits"


def test_npy_without_labels(tmp_path):
    np.save(tmp_path / "p.npy", PROBS)
    with pytest.raises(PredictionFileError, match="no labels: pass --labels"):
        load_predictions(tmp_path / "p.npy")
    with pytest.raises(PredictionFileError, match="labels file not found"):
        load_predictions(tmp_path / "p.npy", labels=tmp_path / "nope.npy")


# ----------------------------------------------------------------------------- csv
def test_csv_with_header_and_label_name(tmp_path):
    f = tmp_path / "p.csv"
    rows = ["p0,p1,p2,p3,label"] + [
        ",".join(repr(float(v)) for v in r) + f",{y}" for r, y in zip(PROBS, LABELS)
    ]
    f.write_text("\n".join(rows) + "\n")
    p = load_predictions(f)
    assert p.kind == "probs" and np.array_equal(p.labels, LABELS) and np.allclose(p.scores, PROBS)


def test_csv_logit_columns_label_column_and_headerless(tmp_path):
    f = tmp_path / "l.csv"
    rows = ["target,logit_a,logit_b,logit_c,logit_d"] + [
        f"{y}," + ",".join(repr(float(v)) for v in r) for r, y in zip(LOGITS, LABELS)
    ]
    f.write_text("\n".join(rows))
    p = load_predictions(f)
    assert p.kind == "logits" and np.allclose(p.scores, LOGITS)
    assert np.array_equal(load_predictions(f, label_column="target").labels, LABELS)
    g = tmp_path / "n.csv"
    g.write_text("\n".join(f"{y}," + ",".join(repr(float(v)) for v in r) for r, y in zip(PROBS, LABELS)))
    q = load_predictions(g)  # headerless: the first column holds the labels
    assert np.array_equal(q.labels, LABELS) and q.kind == "probs"
    h = tmp_path / "last.csv"
    h.write_text("\n".join(",".join(repr(float(v)) for v in r) + f",{y}" for r, y in zip(PROBS, LABELS)))
    assert np.array_equal(load_predictions(h, label_column=-1).labels, LABELS)
    assert np.array_equal(load_predictions(h, label_column="4").labels, LABELS)


@pytest.mark.parametrize(
    "text,kwargs,match",
    [
        ("", {}, "empty"),
        ("label,p0,p1\n", {}, "no data rows"),
        ("label,p0,p1\n0,0.5,0.5\n1,0.5\n", {}, "row 2 has 2 fields"),
        ("label,p0,p1\n0,0.5,abc\n", {}, "non-numeric"),
        ("label,p0,p1\n0,0.5,0.5\n", {"label_column": "y"}, "no column named 'y'"),
        ("label,p0,p1\n0,0.5,0.5\n", {"label_column": 7}, "label column 7 does not exist"),
        ("label\n0\n", {}, "label column and at least one score column"),
        ("label,p0,p1\n0.5,0.5,0.5\n", {}, r"labels\[0\] is 0\.5, not an integer"),
    ],
)
def test_csv_errors(tmp_path, text, kwargs, match):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    with pytest.raises(PredictionFileError, match=match):
        load_predictions(f, **kwargs)


# ----------------------------------------------------------------------------- common errors
def test_missing_directory_and_suffix(tmp_path):
    with pytest.raises(PredictionFileError, match="file not found"):
        load_predictions(tmp_path / "missing.npz")
    with pytest.raises(PredictionFileError, match="is a directory"):
        load_predictions(tmp_path)
    (tmp_path / "x.parquet").write_text("x")
    with pytest.raises(PredictionFileError, match="unknown file type '.parquet'"):
        load_predictions(tmp_path / "x.parquet")
    (tmp_path / "broken.npz").write_bytes(b"not a zip")
    with pytest.raises(PredictionFileError, match="not a readable .npz"):
        load_predictions(tmp_path / "broken.npz")
    (tmp_path / "broken.npy").write_bytes(b"not an array")
    with pytest.raises(PredictionFileError, match="not a readable .npy"):
        load_predictions(tmp_path / "broken.npy", labels=tmp_path / "broken.npy")


def _npz(tmp_path, **arrays):
    f = tmp_path / "t.npz"
    np.savez(f, **arrays)
    return f


@pytest.mark.parametrize(
    "arrays,match",
    [
        ({"logits": LOGITS}, "has 'logits' but no 'labels'"),
        ({"labels": LABELS}, "no usable arrays"),
        ({"logits": LOGITS, "labels": LABELS[:-1]}, "39 labels for 40 rows"),
        ({"logits": LOGITS, "labels": np.where(LABELS == 0, 7, LABELS)},
         "label 7 at row .* out of range.*\\[0, 4\\)"),
        ({"logits": LOGITS, "labels": -np.ones(40, int)}, "label -1 at row 0 is out of range"),
        ({"logits": np.where(np.arange(40)[:, None] == 5, np.nan, LOGITS), "labels": LABELS},
         "NaN/inf.*row 5"),
        ({"logits": LOGITS, "labels": LABELS + 0.5}, r"labels\[0\] is \d\.5, not an integer"),
        ({"logits": LOGITS, "labels": LABELS.astype(str)}, "labels hold class names"),
        ({"logits": LOGITS[:, :1], "labels": LABELS}, "K >= 2"),
        ({"logits": LOGITS[None], "labels": LABELS}, "2-D array"),
        ({"logits": LOGITS[:0], "labels": LABELS[:0]}, "no examples"),
        ({"probs": PROBS * 1.5, "labels": LABELS}, "invalid probabilities"),
        ({"probs": np.where(np.arange(40)[:, None] == 2, np.inf, PROBS), "labels": LABELS}, "inf at row 2"),
    ],
)
def test_bad_arrays_name_the_problem(tmp_path, arrays, match):
    f = _npz(tmp_path, **arrays)
    with pytest.raises(PredictionFileError, match=match) as info:
        load_predictions(f)
    assert str(f) in str(info.value)


def test_pickled_npz_is_refused(tmp_path):
    f = _npz(tmp_path, logits=np.array([object()], dtype=object), labels=LABELS)
    with pytest.raises(PredictionFileError, match="without pickle"):
        load_predictions(f)


def test_bad_keyword_values(tmp_path):
    f = _npz(tmp_path, logits=LOGITS, labels=LABELS)
    with pytest.raises(ValueError, match="split"):
        load_predictions(f, split="train")
    with pytest.raises(ValueError, match="kind"):
        load_predictions(f, kind="scores")


# ----------------------------------------------------------------------------- val + test
def test_load_val_test_one_file_and_two_files(tmp_path):
    both = _npz(tmp_path, logits=LOGITS, labels=LABELS, val_logits=LOGITS[:20], val_labels=LABELS[:20])
    s = load_val_test(test=both)
    assert (len(s.val), len(s.test)) == (20, 40) and s.name == "t"
    s2 = load_val_test(both, both)  # the same file for both: val_* arrays for validation
    assert len(s2.val) == 20
    v = tmp_path / "v.npz"
    np.savez(v, probs=PROBS[:15], labels=LABELS[:15])
    s3 = load_val_test(v, both, name="m")
    assert (len(s3.val), s3.val.kind, s3.name) == (15, "probs", "m")


def test_load_val_test_errors(tmp_path):
    only_test = _npz(tmp_path, logits=LOGITS, labels=LABELS)
    with pytest.raises(PredictionFileError, match="no validation split"):
        load_val_test(test=only_test)
    with pytest.raises(PredictionFileError, match="pass --test"):
        load_val_test(val=only_test)
    v3 = tmp_path / "v3.npz"
    np.savez(v3, logits=LOGITS[:, :3], labels=LABELS % 3)
    with pytest.raises(PredictionFileError, match="3 classes .* test split has 4"):
        load_val_test(v3, only_test)


@pytest.mark.realdata
def test_shared_densenet_file():
    from conftest import shared_data_path

    s = load_val_test(test=shared_data_path("kangsepp__densenet40_c10.npz"))
    assert (len(s.val), len(s.test), s.test.num_classes) == (5000, 10000, 10)
    assert s.test.kind == "logits"


# ----------------------------------------------------------------------------- default models
def test_digits_split_is_seeded_and_stratified():
    a, b, c = load_digits_split(0), load_digits_split(0), load_digits_split(1)
    assert np.array_equal(a.X_test, b.X_test) and not np.array_equal(a.X_test, c.X_test)
    assert (len(a.y_fit), len(a.y_val), len(a.y_test)) == (898, 449, 450)
    assert set(np.unique(a.y_val)) == set(range(10))
    assert a.X_fit.max() <= 1.0


def test_default_models_reproducible_and_accurate():
    d = load_digits_split(0)
    m1 = default_models(0, split=d)
    m2 = default_models(0, split=d)
    assert [m.name for m in m1] == ["softmax-regression", "mlp"]
    for a, b in zip(m1, m2):
        assert np.array_equal(a.test.logits, b.test.logits)
        assert a.test.kind == "logits" and a.test.logits.shape == (450, 10)
        assert np.mean(a.test.probs.argmax(1) == a.test.labels) > 0.9
    with pytest.raises(ValueError, match="unknown default model"):
        default_models(0, ["resnet"], split=d)


def test_model_logits_are_the_presoftmax_scores():
    d = load_digits_split(0)
    for model in (train_softmax_regression(d.X_fit, d.y_fit), train_mlp(d.X_fit, d.y_fit, max_iter=50)):
        z = model_logits(model, d.X_val)
        assert np.allclose(calibkit.softmax(z), model.predict_proba(d.X_val), atol=1e-10)


def test_predictions_binary_probs():
    p = Predictions(np.array([0, 1, 1]), np.array([0.2, 0.9, 0.6]), "probs")
    assert p.num_classes == 2
    assert np.allclose(p.probs, [[0.8, 0.2], [0.1, 0.9], [0.4, 0.6]])
    with pytest.raises(ValueError, match="kind"):
        Predictions(np.array([0]), np.array([[1.0]]), "scores")
