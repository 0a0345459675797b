"""Reading the predictions file of ``calibkit report`` the way a shell user expects.

What the command reads (``calibkit report --help`` shows the same):

``.npz``
    The scores are the array named by ``--scores-key``, else ``logits`` / ``probs`` (``val_*``
    with ``--split val``; ``test_*`` accepted), else the only 2-D array when there are exactly
    two arrays (``numpy.savez(f, scores, y)`` gives ``arr_0`` and ``arr_1``). The labels are
    ``--labels-key``, else ``labels``, else the other array of such a pair.
``.npy``
    The scores; the labels from ``--labels FILE`` or a sibling file (``logits.npy`` ->
    ``labels.npy``, ``x.npy`` -> ``x_labels.npy``, or ``labels.npy``).
``.csv``
    One row per example; comma-separated (``;``, tab and ``|`` are recognised too, and said);
    header optional. The label column is ``--label-column`` (name or 0-based position), else
    a column named ``label``/``labels``/``y``/``target``/``true_label``/``class``, else the
    first. The score columns are ``--score-columns`` (names or positions, comma-separated),
    else every other column. Class names in the label column are mapped to the score columns
    of the same names (the mapping is printed) or refused with the fix.
Top-label files (``.npz`` or ``.csv``)
    ``confidence`` plus ``correct`` (0/1 or true/false), or ``labels`` + ``pred`` (or
    ``predicted``) + ``confidence`` (the model-zoo layout): only the top-label metrics can be
    computed; :class:`TopLabelPredictions` holds them.

The kind of the scores is decided the same way for every format: ``--logits`` / ``--probs``
when given (they apply to whichever array or columns were chosen); else the name of the array
(``.npz`` key, ``.npy`` file name, CSV score-column names) containing ``logit`` or ``prob``;
else the values (valid probabilities are read as probabilities; anything else is refused with
a request for ``--logits``).

Every problem raises :class:`calibkit.analysis.data.PredictionFileError` whose message names
the file and the command-line flag that fixes it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._params import shown
from ..analysis.data import (
    PredictionFileError,
    Predictions,
    _looks_like_probs,
    _npy_label_candidates,
    check_predictions,
)

__all__ = ["TopLabelPredictions", "read_predictions", "toplabel_metric_rows",
           "FULL_MATRIX_METRICS", "shell_message"]

_LABEL_NAMES = ("label", "labels", "y", "target", "true_label", "class")
_DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
_TRUE = {"1", "true", "t", "yes", "y", "1.0"}
_FALSE = {"0", "false", "f", "no", "n", "0.0"}

#: Metrics that need every class's probability (not computable from top-label files).
FULL_MATRIX_METRICS = ("SCE", "ACE", "TACE")


@dataclass
class TopLabelPredictions:
    """One confidence per prediction and whether it was right (a top-label file).

    Attributes
    ----------
    confidence : numpy.ndarray of float64, shape (N,)
    correct : numpy.ndarray of bool, shape (N,)
    predicted : numpy.ndarray of int64, shape (N,), or None
    num_classes : int or None
        From ``--num-classes``, else ``max(labels, predicted) + 1`` when both are present.
    source : str
    notes : list of str
        What was inferred (printed by the command).
    """

    confidence: np.ndarray
    correct: np.ndarray
    predicted: np.ndarray | None
    num_classes: int | None
    source: str
    notes: list = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.confidence.shape[0])


def _fail(source, msg: str) -> PredictionFileError:
    return PredictionFileError(f"{source}: {msg}")


def _kind_from_names(names) -> str | None:
    low = [str(n).lower() for n in names]
    if low and all("logit" in n for n in low):
        return "logits"
    if low and all("prob" in n or n.startswith("p") for n in low):
        return "probs"
    return None


def _decide_kind(flag: str | None, names, scores: np.ndarray, source: str) -> tuple[str, str]:
    """(kind, how it was decided): the flag, else the names, else the values."""
    if flag is not None:
        return flag, f"--{flag}"
    by_name = _kind_from_names(names)
    if by_name is not None:
        return by_name, f"the name{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}"
    s = np.asarray(scores)
    if s.dtype.kind in "iuf" and s.size and np.all(np.isfinite(s)) and _looks_like_probs(s):
        return "probs", "the values (valid probabilities)"
    raise _fail(source, "the scores are not probabilities (values outside [0, 1] or rows not "
                        "summing to 1) and nothing says what they are: pass --logits if they "
                        "are logits (or --probs to have them checked as probabilities)")


# ------------------------------------------------------------------------------------ top-label
def _as_bool(values, name: str, source: str) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype.kind == "b":
        return a.reshape(-1)
    if a.dtype.kind in "iuf":
        a = a.reshape(-1)
        if not np.all(np.isin(a, (0, 1))):
            bad = int(np.flatnonzero(~np.isin(a, (0, 1)))[0])
            raise _fail(source, f"{name!r} must be 0/1 or true/false (row {bad} has {shown(a[bad])})")
        return a.astype(bool)
    out = []
    for i, v in enumerate(a.reshape(-1)):
        t = str(v).strip().lower()
        if t in _TRUE:
            out.append(True)
        elif t in _FALSE:
            out.append(False)
        else:
            raise _fail(source, f"{name!r} must be 0/1 or true/false (row {i} has {v!r})")
    return np.array(out, dtype=bool)


def _as_index(values, name: str, source: str) -> np.ndarray:
    a = np.asarray(values).reshape(-1)
    if a.dtype.kind in "USO":  # CSV text
        try:
            a = a.astype(np.float64)
        except ValueError:
            pass
    if a.dtype.kind not in "iuf" or a.dtype.kind == "b":
        raise _fail(source, f"{name!r} must hold class indices 0..K-1 (got {a.dtype} values)")
    if a.dtype.kind == "f" and not np.all(a == np.round(a)):
        raise _fail(source, f"{name!r} must hold whole-number class indices")
    return a.astype(np.int64)


def _toplabel(cols: dict, source: str, num_classes: int | None) -> TopLabelPredictions | None:
    """A top-label record from named columns/arrays, or None when the layout is not top-label."""
    names = {k.lower(): k for k in cols}
    if "confidence" not in names:
        return None
    conf = np.asarray(cols[names["confidence"]], dtype=np.float64).reshape(-1)
    pred_key = names.get("pred") or names.get("predicted") or names.get("prediction")
    label_key = next((names[k] for k in ("labels", "label", "y", "target") if k in names), None)
    notes = []
    if "correct" in names:
        correct = _as_bool(cols[names["correct"]], names["correct"], source)
    elif pred_key is not None and label_key is not None:
        y = _as_index(cols[label_key], label_key, source)
        pred_arr = _as_index(cols[pred_key], pred_key, source)
        if y.shape != pred_arr.shape:
            raise _fail(source, f"{label_key!r} and {pred_key!r} have different lengths")
        correct = y == pred_arr
        notes.append(f"correct = ({label_key} == {pred_key})")
    else:
        raise _fail(source, "has 'confidence' but neither 'correct' nor labels + 'pred': a "
                            "top-label file needs confidence,correct or labels,pred,confidence")
    predicted = None if pred_key is None else _as_index(cols[pred_key], pred_key, source)
    if predicted is not None and num_classes is None:
        top = int(predicted.max())
        if label_key is not None:
            top = max(top, int(_as_index(cols[label_key], label_key, source).max()))
        num_classes = top + 1
        notes.append(f"{num_classes} classes assumed (largest class index + 1; set --num-classes)")
    if conf.shape != correct.shape:
        raise _fail(source, f"'confidence' has {conf.shape[0]} rows but 'correct' {correct.shape[0]}")
    if not np.all(np.isfinite(conf)):
        raise _fail(source, "'confidence' holds NaN or inf values")
    return TopLabelPredictions(conf, correct, predicted, num_classes, source, notes)


# ------------------------------------------------------------------------------------ .npz
def _read_npz(path: Path, a):
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head == b"PK\x05\x06":  # a zip archive's end record first: an archive of nothing
        raise _fail(path, "the .npz archive holds no arrays (save the scores and labels in it, "
                          "e.g. numpy.savez(path, probs=probs, labels=labels))")
    if head != b"PK\x03\x04":
        raise _fail(path, "not a readable .npz archive (save it with numpy.savez)")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except Exception as exc:
        raise _fail(path, f"not a readable .npz archive without pickle ({type(exc).__name__}: "
                          f"{exc}); save plain numeric arrays") from exc
    found = ", ".join(sorted(arrays)) or "none"
    pre = "val_" if a.split == "val" else ""

    def pick(key, flag):
        if key not in arrays:
            raise _fail(path, f"{flag} {key}: no such array (arrays: {found})")
        return arrays[key]

    if a.scores_key is None and a.labels_key is None and a.split == "test":
        top = _toplabel(arrays, str(path), a.num_classes)
        if top is not None and not any(k in arrays for k in ("probs", "logits")):
            return top, top.notes
    notes = []
    if a.scores_key is not None:
        skey = a.scores_key
        pick(skey, "--scores-key")
    else:
        skey = next((k for k in (f"{pre}logits", f"{pre}probs") if k in arrays), None)
        if skey is None and a.split == "test":
            skey = next((k for k in ("test_logits", "test_probs") if k in arrays), None)
    if a.labels_key is not None:
        lkey = a.labels_key
        pick(lkey, "--labels-key")
    else:
        lkey = next((k for k in (f"{pre}labels", "test_labels") if k in arrays
                     and (k != "test_labels" or a.split == "test")), None)
    if a.split == "val" and (skey is None or lkey is None):
        # never the test arrays (or an unnamed pair) in place of the split asked for
        raise _fail(path, f"--split val reads val_logits or val_probs, and val_labels: not all in "
                          f"this file (arrays: {found}); pass --scores-key/--labels-key NAME to "
                          f"choose, or drop --split val")
    if (skey is None or lkey is None) and len(arrays) == 2:
        # an unnamed pair (numpy.savez(f, scores, y)): the 2-D array is the scores
        (k1, v1), (k2, v2) = arrays.items()
        if v1.ndim < v2.ndim:
            (k1, v1), (k2, v2) = (k2, v2), (k1, v1)
        if v1.ndim == 2 and v2.ndim == 1:
            skey = skey or k1
            lkey = lkey or k2
            notes.append(f"scores from array {skey!r}, labels from {lkey!r} "
                         "(set --scores-key / --labels-key to choose)")
    if skey is None:
        raise _fail(path, f"which array holds the scores? arrays: {found}; pass --scores-key NAME "
                          "(the (N, K) logits or probabilities)")
    if lkey is None:
        raise _fail(path, f"which array holds the labels? arrays: {found}; pass --labels-key NAME "
                          "(the (N,) class indices)")
    scores = arrays[skey]
    kind, how = _decide_kind(a.kind, [skey], scores, f"{path}[{skey}]")
    return _check(arrays[lkey], scores, kind, f"{path}[{skey}]", how), notes


def _check(labels, scores, kind: str, source: str, how: str) -> Predictions:
    try:
        return check_predictions(labels, scores, kind, source)
    except PredictionFileError as exc:
        msg = str(exc)
        if kind == "probs" and "invalid probabilities" in msg:
            msg += f" (read as probabilities because of {how})"
        raise PredictionFileError(msg) from exc


# ------------------------------------------------------------------------------------ .npy
def _read_npy(path: Path, a):
    try:
        scores = np.load(path, allow_pickle=False)
    except Exception as exc:
        raise _fail(path, f"not a readable .npy array ({type(exc).__name__}: {exc})") from exc
    if a.labels is None:
        cands = _npy_label_candidates(path)
        lpath = next((p for p in cands if p.exists()), None)
        if lpath is None:
            raise _fail(path, "no labels: pass --labels FILE or put them next to it as "
                              + " or ".join(p.name for p in cands))
    else:
        lpath = Path(a.labels)
        if not lpath.exists():
            raise _fail(lpath, "--labels: file not found")
    if lpath.suffix.lower() == ".npy":
        y = np.load(lpath, allow_pickle=False)
    else:
        header, rows, _ = _read_csv_rows(lpath)
        y = np.array([r[0] for r in rows])
    kind, how = _decide_kind(a.kind, [path.stem], scores, str(path))
    return _check(y, scores, kind, f"{path} (labels {lpath.name})", how), []


# ------------------------------------------------------------------------------------ .csv
def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _read_csv_rows(path: Path) -> tuple[list[str] | None, list[list[str]], str]:
    """(header or None, data rows as strings, delimiter)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(path, "not a text CSV file (cannot decode as UTF-8)") from exc
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise _fail(path, "the CSV file is empty")
    first = lines[0]
    counts = {d: first.count(d) for d in _DELIMITERS}
    delim = "," if counts[","] else max(counts, key=counts.get)
    if counts[delim] == 0:
        delim = ","  # one column
    rows = [[c.strip() for c in r] for r in csv.reader(lines, delimiter=delim)]
    header = None
    if not all(_is_number(c) for c in rows[0]):
        header, rows = rows[0], rows[1:]
    if not rows:
        raise _fail(path, "the CSV file has a header but no data rows")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise _fail(path, f"data row {i + 1} has {len(r)} fields, the first has {width} "
                              f"(expected {_DELIMITERS[delim]}-separated values)")
    if header is not None and len(header) != width:
        raise _fail(path, f"the header has {len(header)} columns but the rows have {width}")
    return header, rows, delim


def _column_index(spec: str, header: list[str] | None, width: int, path: Path, flag: str) -> int:
    spec = spec.strip()
    if header is not None and spec in header:
        return header.index(spec)
    if spec.lstrip("-").isdigit():
        j = int(spec)
        if not -width <= j < width:
            raise _fail(path, f"{flag} {spec}: no such column ({width} columns, positions 0.."
                              f"{width - 1})")
        return j % width
    cols = ", ".join(header) if header else "no header: use 0-based positions"
    raise _fail(path, f"{flag} {spec}: no column of that name (columns: {cols})")


def _read_csv(path: Path, a):
    header, rows, delim = _read_csv_rows(path)
    notes = [] if delim == "," else [f"read as {_DELIMITERS[delim]}-separated values"]
    width = len(rows[0])
    if header is not None and a.score_columns is None and a.label_column is None:
        cols = {h: [r[j] for r in rows] for j, h in enumerate(header)}
        top = _toplabel(cols, str(path), a.num_classes)
        if top is not None:
            return top, notes + top.notes
    if width < 2:
        raise _fail(path, "needs a label column and at least one score column (expected "
                          "comma-separated values: label,score_0,score_1,...)")
    if a.label_column is not None:
        j = _column_index(str(a.label_column), header, width, path, "--label-column")
    elif header is not None and any(h.lower() in _LABEL_NAMES for h in header):
        j = next(i for i, h in enumerate(header) if h.lower() in _LABEL_NAMES)
    else:
        j = 0
    if a.score_columns is not None:
        score_cols = [_column_index(s, header, width, path, "--score-columns")
                      for s in str(a.score_columns).split(",") if s.strip()]
        if j in score_cols:
            raise _fail(path, "--score-columns includes the label column")
    else:
        score_cols = [i for i in range(width) if i != j]
    for i, r in enumerate(rows):
        for c in score_cols:
            if not _is_number(r[c]):
                name = header[c] if header else f"column {c}"
                hint = ""
                if any(d in r[c] for d in _DELIMITERS if d != delim):
                    hint = f" (expected {_DELIMITERS[delim]}-separated values)"
                raise _fail(path, f"data row {i + 1}, score column {name!r}: {r[c]!r} is not a "
                                  f"number{hint}; choose the score columns with --score-columns")
    scores = np.array([[float(r[c]) for c in score_cols] for r in rows], dtype=np.float64)
    raw_labels = [r[j] for r in rows]
    if all(_is_number(v) for v in raw_labels):
        y = np.array([float(v) for v in raw_labels])
    else:
        y = _map_class_names(raw_labels, header, score_cols, j, path, notes)
    names = [header[c] for c in score_cols] if header else []
    kind, how = _decide_kind(a.kind, names, scores, str(path))
    return _check(y, scores, kind, str(path), how), notes


_PREFIXES = ("p_", "prob_", "probs_", "logit_", "logits_", "p(", "score_")


def _strip(name: str) -> str:
    n = name.strip()
    for p in _PREFIXES:
        if n.lower().startswith(p):
            n = n[len(p):]
            return n[:-1] if p == "p(" and n.endswith(")") else n
    return n


def _map_class_names(values, header, score_cols, j, path, notes) -> np.ndarray:
    """Class names in the label column -> indices of the score columns of the same names."""
    classes = sorted(set(values))
    col = header[j] if header else f"column {j}"
    if header is not None:
        names = [_strip(header[c]) for c in score_cols]
        if all(c in names for c in classes) and len(set(names)) == len(names):
            mapping = {c: names.index(c) for c in names}
            notes.append("class names mapped to score columns: "
                         + ", ".join(f"{c}={mapping[c]}" for c in names))
            return np.array([mapping[v] for v in values], dtype=np.int64)
    shown = ", ".join(repr(c) for c in classes[:5]) + (", ..." if len(classes) > 5 else "")
    raise _fail(path, f"label column {col!r} holds class names ({shown}), and the score columns "
                      "are not named after them. Name each score column after its class (header "
                      "e.g. label," + ",".join(str(c) for c in classes[:3]) + "), or write the "
                      "labels as class indices 0..K-1 in the order of the score columns")


# ------------------------------------------------------------------------------------ entry
def read_predictions(path, args) -> tuple[Predictions | TopLabelPredictions, list[str]]:
    """Read ``path`` with the ``calibkit report`` options in ``args`` (see the module doc).

    ``args`` needs the attributes ``kind``, ``labels``, ``split``, ``label_column``,
    ``score_columns``, ``scores_key``, ``labels_key`` and ``num_classes`` (None when unset).
    Returns the predictions and the notes (list of str): what was inferred, for the command to
    print.
    """
    p = Path(path)
    if not p.exists():
        raise _fail(p, "file not found")
    if p.is_dir():
        raise _fail(p, "is a directory, expected a .npz, .npy or .csv file")
    suffix = p.suffix.lower()
    if suffix != ".npz" and (args.scores_key or args.labels_key):
        raise _fail(p, "--scores-key / --labels-key are for .npz files")
    if suffix not in (".csv", ".txt", ".tsv") and (args.score_columns or args.label_column):
        raise _fail(p, "--score-columns / --label-column are for CSV files")
    if suffix == ".npz":
        return _read_npz(p, args)
    if args.split == "val":
        raise _fail(p, "--split val reads the val_* arrays of an .npz file")
    if suffix == ".npy":
        return _read_npy(p, args)
    if suffix in (".csv", ".txt", ".tsv"):
        return _read_csv(p, args)
    raise _fail(p, f"unknown file type {p.suffix!r}: use .npz, .npy or .csv")


def toplabel_metric_rows(top: TopLabelPredictions, *, num_bins: int = 15):
    """The top-label metrics of a top-label file, as a :class:`calibkit.analysis.tables.Table`.

    Computed through calibkit's top-label API (``confidence=``, ``correct=``, ``predicted=``,
    ``num_classes=``); class-conditional ECE only when the predictions are known.
    """
    import calibkit
    from ..analysis.tables import Table

    base = {"confidence": top.confidence, "correct": top.correct, "num_bins": num_bins}
    rows, index = [], []

    def add(label, value, binning, cc, norm):
        index.append(label)
        rows.append([float(value), binning, "top-label", "yes" if cc else "no", "0", norm, num_bins])

    add("ECE", calibkit.ece(**base), "even", False, "l1")
    if top.predicted is not None and top.num_classes is not None:
        add("Class-conditional ECE", calibkit.cce(**base, predicted=top.predicted,
                                                  num_classes=top.num_classes), "even", True, "l1")
    add("RMSCE", calibkit.rmsce(**base), "adaptive", False, "l2")
    add("MCE", calibkit.mce(**base), "even", False, "max")
    add("Top-label adaptive ECE", calibkit.gce(**base, binning="adaptive"), "adaptive", False, "l1")
    return Table(
        name="named_metrics",
        title=f"Top-label calibration metrics ({num_bins} bins)",
        index=index,
        columns=["value", "binning", "scores", "class-conditional", "threshold", "norm", "bins"],
        data=rows,
        index_name="metric",
        floatfmt=".6f",
    )


#: Python phrasings in library messages -> what a shell user types.
_SHELL_WORDS = (
    ("(calibkit.softmax(logits) for logits)", "(pass --logits if these are logits)"),
    ("convert them with calibkit.softmax(logits) first", "pass --logits if they are logits"),
    ("pass --logits (kind='logits') if", "pass --logits if"),
    ("calibkit.softmax(logits)", "--logits"),
    (", or a 0/1 label matrix for multilabel data", ""),
    (" (labels=...)", ""),
    ("labels=...", "--labels FILE"),
)


def shell_message(msg: str) -> str:
    """A library error message worded for the command line (flags, not Python calls)."""
    for old, new in _SHELL_WORDS:
        msg = msg.replace(old, new)
    return msg
