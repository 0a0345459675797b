"""Loading a model's predictions from files (the bundled default lives in :mod:`.digits`).

File formats read by :func:`load_predictions` (and by the ``calibkit`` command):

``.npz``
    Arrays ``logits`` or ``probs`` (N, K) and ``labels`` (N,). The validation split of the same
    file, when present, is ``val_logits`` / ``val_probs`` with ``val_labels`` (the layout of
    ``kangsepp__densenet40_c10.npz``); ``test_`` prefixed names are accepted for the test split.
    Whether the scores are logits or probabilities is read from the array name unless stated
    (``kind=`` / ``--logits`` / ``--probs``); an array with another name is used when it is the
    only candidate and the kind is stated.
``.npy``
    One array of scores per file. The labels come from ``labels=`` (``--labels``) or else from a
    sibling file: the scores' name with ``logits``/``probs`` replaced by ``labels``
    (``val_logits.npy`` -> ``val_labels.npy``), then ``<name>_labels.npy``, then ``labels.npy``.
    The kind comes from the file name (``logit`` or ``prob`` in it) unless stated; failing both,
    scores that are valid probabilities are read as probabilities and anything else is refused
    with a request to state ``--logits``.
``.csv``
    One row per example: the label column and one score column per class. A header row is
    optional. The label column is ``label_column=`` when given (name or 0-based position), else
    the column named ``label``, ``labels``, ``y``, ``target``, ``true_label`` or ``class``, else the
    first column. Score columns named ``logit*`` mean logits, ``p*``/``prob*`` probabilities.

Every problem (missing file, no usable arrays, wrong shapes, NaN or inf, non-integer labels,
labels outside ``[0, K)``, invalid probabilities) raises :class:`PredictionFileError` naming the
file, the array and the fix.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._params import shown
from ..errors import CalibkitError, InvalidParameterError

__all__ = [
    "PredictionFileError",
    "Predictions",
    "ModelSplits",
    "load_predictions",
    "load_val_test",
    "check_predictions",
]

_LABEL_COLUMN_NAMES = ("label", "labels", "y", "target", "true_label", "class")


class PredictionFileError(CalibkitError, ValueError):
    """A predictions file could not be used; the message names the file, the array and the fix."""


# ---------------------------------------------------------------------------- containers
@dataclass(frozen=True)
class Predictions:
    """A model's scores on one split with the true labels.

    Parameters
    ----------
    labels : numpy.ndarray of int64, shape (N,)
        True classes in ``[0, K)``.
    scores : numpy.ndarray of shape (N, K)
        Logits or probabilities, as ``kind`` says (1-D or (N, 1) probabilities mean binary
        P(y = 1)).
    kind : {"logits", "probs"}
    source : str
        Where they came from (file and array names), used in messages and reports.

    Examples
    --------
    >>> import numpy as np
    >>> p = Predictions(np.array([0, 1]), np.array([[2.0, 0.0], [0.0, 1.0]]), "logits")
    >>> p.num_classes, p.probs.shape
    (2, (2, 2))
    """

    labels: np.ndarray
    scores: np.ndarray
    kind: str
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("logits", "probs"):
            raise InvalidParameterError(f"Predictions: kind must be 'logits' or 'probs' (got {self.kind!r})")

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    @property
    def num_classes(self) -> int:
        """K (2 for 1-D binary probabilities)."""
        s = self.scores
        return 2 if s.ndim == 1 or s.shape[1] == 1 else int(s.shape[1])

    @property
    def probs(self) -> np.ndarray:
        """Probabilities, shape (N, K): the softmax of the logits, or the scores themselves
        (binary 1-D / (N, 1) scores become the two columns ``[1 - p, p]``)."""
        if self.kind == "logits":
            from .._softmax import softmax

            return softmax(self.scores, axis=1)
        s = self.scores
        if s.ndim == 1 or s.shape[1] == 1:
            p = s.reshape(-1)
            return np.stack([1.0 - p, p], axis=1)
        return s

    @property
    def logits(self) -> np.ndarray:
        """Logits, shape (N, K). For probabilities: their logarithm, floored at the smallest
        normal float32 (about -87) as :mod:`calibkit.recalibration` does; softmax maps it back
        to the same probabilities (up to that floor)."""
        if self.kind == "logits":
            return self.scores
        p = np.asarray(self.probs, dtype=np.float64)
        return np.log(np.clip(p, float(np.finfo(np.float32).tiny), None))


@dataclass(frozen=True)
class ModelSplits:
    """One model's outputs on a validation split (to fit recalibration) and a test split.

    Attributes
    ----------
    name : str
        Short name used in tables, file names and reports.
    val, test : Predictions
    description : str
        One line on where the outputs come from.
    """

    name: str
    val: Predictions
    test: Predictions
    description: str = ""


# ---------------------------------------------------------------------------- checks
def _fail(source: str, msg: str) -> PredictionFileError:
    return PredictionFileError(f"{source}: {msg}")


def _check_labels(labels: Any, n: int | None, source: str) -> np.ndarray:
    y = np.asarray(labels)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise _fail(source, f"labels must be a 1-D array of class indices (got shape {y.shape})")
    if y.dtype.kind == "b" or y.dtype.kind not in "iuf":
        raise _fail(
            source,
            f"labels must be integer class indices (got dtype {y.dtype}); convert class names to "
            "0..K-1 first",
        )
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise _fail(source, f"labels contain NaN or inf (first at row {bad})")
        if not np.all(y == np.round(y)):
            bad = int(np.flatnonzero(y != np.round(y))[0])
            raise _fail(
                source, f"labels must be whole numbers (row {bad} has {shown(y[bad])}); give class indices"
            )
    if n is not None and y.shape[0] != n:
        raise _fail(
            source,
            f"{y.shape[0]} labels for {n} rows of scores; the two arrays must have one entry per "
            "example",
        )
    return y.astype(np.int64)


def _looks_like_probs(s: np.ndarray) -> bool:
    if s.ndim == 1 or (s.ndim == 2 and s.shape[1] == 1):
        return bool(np.all((s >= 0) & (s <= 1)))
    return bool(
        np.all((s >= -1e-6) & (s <= 1 + 1e-6)) and np.allclose(s.sum(axis=1), 1.0, atol=1e-3)
    )


def check_predictions(labels: Any, scores: Any, kind: str | None, source: str) -> Predictions:
    """Validate loaded arrays and wrap them in :class:`Predictions`.

    Parameters
    ----------
    labels : array_like, shape (N,)
    scores : array_like, shape (N, K)
    kind : {"logits", "probs"} or None
        None: probabilities if the values are valid probabilities, else an error asking for it.
    source : str
        Named in every error message.

    Raises
    ------
    PredictionFileError
        Naming the problem: wrong shape, non-numeric, NaN/inf, labels not integers or outside
        ``[0, K)``, probabilities outside [0, 1] or rows not summing to 1.
    """
    s = np.asarray(scores)
    if s.dtype.kind not in "iuf" or s.dtype.kind == "b":
        raise _fail(source, f"scores must be numeric (got dtype {s.dtype})")
    s = s.astype(np.float32 if s.dtype == np.float32 else np.float64, copy=False)
    if s.ndim not in (1, 2):
        raise _fail(source, f"scores must be a 2-D array (examples, classes) (got shape {s.shape})")
    if s.shape[0] == 0:
        raise _fail(source, "no examples (the scores array has 0 rows)")
    if not np.all(np.isfinite(s)):
        bad = np.argwhere(~np.isfinite(s))[0]
        what = "NaN" if np.isnan(s[tuple(bad)]) else "inf"
        count = int(np.sum(~np.isfinite(s)))
        raise _fail(
            source,
            f"scores contain {count} NaN/inf value(s) (first: {what} at row {int(bad[0])}); "
            "remove those rows or fix the model outputs",
        )
    if kind is None:
        if not _looks_like_probs(s):
            raise _fail(
                source,
                "the scores are not probabilities (values outside [0, 1] or rows not summing to "
                "1) and their kind is not stated; pass --logits (kind='logits') if they are logits",
            )
        kind = "probs"
    if kind not in ("logits", "probs"):
        raise InvalidParameterError(f"kind must be 'logits', 'probs' or None (got {kind!r})")
    if kind == "logits" and (s.ndim != 2 or s.shape[1] < 2):
        raise _fail(source, f"logits must have shape (N, K) with K >= 2 classes (got {s.shape})")
    y = _check_labels(labels, s.shape[0], source)
    k = 2 if s.ndim == 1 or s.shape[1] == 1 else s.shape[1]
    if y.min() < 0 or y.max() >= k:
        bad = int(np.flatnonzero((y < 0) | (y >= k))[0])
        raise _fail(
            source,
            f"label {int(y[bad])} at row {bad} is out of range: labels must be in [0, {k}) for "
            f"scores with {k} classes",
        )
    pred = Predictions(y, s, kind, source)
    if kind == "probs":
        # The core checks every value (range, row sums, with its documented tolerances) in the
        # same Rust pass that computes a metric: one cheap ECE call runs all of them.
        from ..binned.metrics import gce

        try:
            gce(y, s, num_bins=1)
        except (ValueError, TypeError) as exc:
            raise _fail(source, f"invalid probabilities: {exc}") from exc
    return pred


# ---------------------------------------------------------------------------- readers
def _kind_from_name(name: str) -> str | None:
    n = name.lower()
    if "logit" in n:
        return "logits"
    if "prob" in n:
        return "probs"
    return None


def _load_npz(path: Path, kind: str | None, split: str) -> Predictions:
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"PK\x03\x04":
        raise _fail(str(path), "not a readable .npz archive (no zip header); save it with numpy.savez")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except ValueError as exc:
        raise _fail(str(path), f"cannot read the .npz without pickle ({exc}); save plain arrays") from exc
    except Exception as exc:  # zipfile.BadZipFile, EOFError, OSError
        raise _fail(str(path), f"not a readable .npz archive ({type(exc).__name__}: {exc})") from exc
    prefixes = ["val_"] if split == "val" else ["", "test_"]
    found = ", ".join(sorted(arrays)) or "none"
    for pre in prefixes:
        lab = f"{pre}labels"
        cands = [f"{pre}logits", f"{pre}probs"] if kind != "probs" else [f"{pre}probs"]
        if kind == "logits":
            cands = [f"{pre}logits"]
        name = next((c for c in cands if c in arrays), None)
        if name is not None:
            if lab not in arrays:
                raise _fail(str(path), f"has {name!r} but no {lab!r} array (arrays found: {found})")
            return check_predictions(
                arrays[lab], arrays[name], kind or _kind_from_name(name), f"{path}[{name}]"
            )
    if split == "test":
        others = [k for k in arrays if k != "labels" and not k.startswith("val_")
                  and _kind_from_name(k) in (None, kind)]
        if "labels" in arrays and len(others) == 1 and kind is not None:
            return check_predictions(arrays["labels"], arrays[others[0]], kind, f"{path}[{others[0]}]")
    want = "val_logits or val_probs with val_labels" if split == "val" else "logits or probs with labels"
    if kind is not None:
        want = f"{'val_' if split == 'val' else ''}{kind} with {'val_' if split == 'val' else ''}labels"
    raise _fail(str(path), f"no usable arrays: expected {want} (arrays found: {found})")


def _npy_label_candidates(path: Path) -> list[Path]:
    stem = path.stem
    out = []
    for word in ("logits", "probs", "logit", "prob"):
        if word in stem:
            out.append(path.with_name(stem.replace(word, "labels") + ".npy"))
            break
    out.append(path.with_name(f"{stem}_labels.npy"))
    out.append(path.with_name("labels.npy"))
    return [p for p in out if p != path]


def _load_npy_array(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:
        raise _fail(str(path), f"not a readable .npy array ({type(exc).__name__}: {exc})") from exc


def _load_npy(path: Path, kind: str | None, labels: str | Path | None) -> Predictions:
    scores = _load_npy_array(path)
    if labels is None:
        cands = _npy_label_candidates(path)
        lpath = next((p for p in cands if p.exists()), None)
        if lpath is None:
            raise _fail(
                str(path),
                "no labels: pass --labels FILE (labels=...) or put them next to it as "
                + " or ".join(p.name for p in cands),
            )
    else:
        lpath = Path(labels)
        if not lpath.exists():
            raise _fail(str(lpath), "labels file not found")
    if lpath.suffix.lower() == ".npy":
        y = _load_npy_array(lpath)
    else:
        y = _read_csv_matrix(lpath)[1]
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
    return check_predictions(y, scores, kind or _kind_from_name(path.stem), f"{path} (labels {lpath.name})")


def _read_csv_matrix(path: Path) -> tuple[list[str] | None, np.ndarray]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = [r for r in csv.reader(fh) if r and any(c.strip() for c in r)]
    except UnicodeDecodeError as exc:
        raise _fail(str(path), "not a text CSV file (cannot decode as UTF-8)") from exc
    if not rows:
        raise _fail(str(path), "the CSV file is empty")

    def numeric(row):
        try:
            [float(c) for c in row]
            return True
        except ValueError:
            return False

    header = None
    if not numeric(rows[0]):
        header = [c.strip() for c in rows[0]]
        rows = rows[1:]
    if not rows:
        raise _fail(str(path), "the CSV file has a header but no data rows")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise _fail(str(path), f"data row {i + 1} has {len(r)} fields, the first has {width}")
        if not numeric(r):
            raise _fail(str(path), f"data row {i + 1} has a non-numeric field: {r}")
    if header is not None and len(header) != width:
        raise _fail(str(path), f"the header has {len(header)} columns but the rows have {width}")
    return header, np.array([[float(c) for c in r] for r in rows], dtype=np.float64)


def _load_csv(path: Path, kind: str | None, label_column: str | int | None) -> Predictions:
    header, m = _read_csv_matrix(path)
    if m.shape[1] < 2:
        raise _fail(str(path), "needs a label column and at least one score column")
    if label_column is not None:
        if isinstance(label_column, str) and not label_column.lstrip("-").isdigit():
            if header is None or label_column not in header:
                raise _fail(
                    str(path),
                    f"no column named {label_column!r} (columns: {', '.join(header or []) or 'no header'})",
                )
            j = header.index(label_column)
        else:
            j = int(label_column)
            if not -m.shape[1] <= j < m.shape[1]:
                raise _fail(str(path), f"label column {j} does not exist ({m.shape[1]} columns)")
            j %= m.shape[1]
    elif header is not None and any(h.lower() in _LABEL_COLUMN_NAMES for h in header):
        j = next(i for i, h in enumerate(header) if h.lower() in _LABEL_COLUMN_NAMES)
    else:
        j = 0
    score_cols = [i for i in range(m.shape[1]) if i != j]
    if kind is None and header is not None:
        names = [header[i].lower() for i in score_cols]
        if all(n.startswith("logit") for n in names):
            kind = "logits"
        elif all(n.startswith("p") for n in names):
            kind = "probs"
    return check_predictions(m[:, j], m[:, score_cols], kind, str(path))


def load_predictions(
    path: str | Path,
    *,
    kind: str | None = None,
    labels: str | Path | None = None,
    split: str = "test",
    label_column: str | int | None = None,
) -> Predictions:
    """Read one split of a model's predictions from ``.npz``, ``.npy`` or ``.csv``.

    Parameters
    ----------
    path : str or Path
        The file (see the module docstring for each format's layout).
    kind : {"logits", "probs"}, optional
        What the scores are; default: read from the array / file / column name.
    labels : str or Path, optional
        For ``.npy`` scores: the labels file (``.npy`` or a one-column CSV).
    split : {"test", "val"}, default "test"
        For ``.npz``: read ``val_*`` arrays for ``"val"``.
    label_column : str or int, optional
        For CSV: the label column's name or 0-based position.

    Returns
    -------
    Predictions

    Raises
    ------
    PredictionFileError
        When the file is missing, unreadable, or holds unusable arrays (the message says which).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "p.npz")
    >>> np.savez(f, logits=np.array([[2.0, 0.0], [0.0, 1.0]]), labels=np.array([0, 1]))
    >>> load_predictions(f).kind
    'logits'
    """
    p = Path(path)
    if split not in ("test", "val"):
        raise InvalidParameterError(f"split must be 'test' or 'val' (got {split!r})")
    if kind not in (None, "logits", "probs"):
        raise InvalidParameterError(f"kind must be 'logits', 'probs' or None (got {kind!r})")
    if not p.exists():
        raise _fail(str(p), "file not found")
    if p.is_dir():
        raise _fail(str(p), "is a directory, expected a .npz, .npy or .csv file")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        return _load_npz(p, kind, split)
    if split == "val":
        raise _fail(str(p), "a separate validation split can only be read from .npz (val_* arrays)")
    if suffix == ".npy":
        return _load_npy(p, kind, labels)
    if suffix in (".csv", ".txt", ".tsv"):
        return _load_csv(p, kind, label_column)
    raise _fail(str(p), f"unknown file type {p.suffix!r}: use .npz, .npy or .csv")


def _has_val_arrays(path: Path) -> bool:
    if path.suffix.lower() != ".npz" or not path.exists():
        return False
    try:
        with np.load(path, allow_pickle=False) as f:
            return "val_labels" in f.files and ("val_logits" in f.files or "val_probs" in f.files)
    except Exception:
        return False


def load_val_test(
    val: str | Path | None = None,
    test: str | Path | None = None,
    *,
    kind: str | None = None,
    val_labels: str | Path | None = None,
    test_labels: str | Path | None = None,
    name: str | None = None,
) -> ModelSplits:
    """Read a validation and a test split, from two files or one ``.npz`` holding both.

    Parameters
    ----------
    val, test : str or Path
        The files. When ``val`` is omitted (or is the same ``.npz`` as ``test``), the validation
        split is read from the ``val_*`` arrays of ``test``.
    kind : {"logits", "probs"}, optional
    val_labels, test_labels : str or Path, optional
        Labels files for ``.npy`` scores.
    name : str, optional
        Model name (default: the test file's stem).

    Returns
    -------
    ModelSplits

    Raises
    ------
    PredictionFileError
        Missing files, no validation split, different numbers of classes in the two splits.

    Examples
    --------
    >>> splits = load_val_test(test="../shared/data/kangsepp__densenet40_c10.npz")  # doctest: +SKIP
    >>> len(splits.val), len(splits.test)  # doctest: +SKIP
    (5000, 10000)
    """
    if test is None:
        raise PredictionFileError("no test predictions given: pass --test FILE")
    tpath = Path(test)
    same = val is not None and Path(val).resolve() == tpath.resolve() if tpath.exists() else False
    test_pred = load_predictions(tpath, kind=kind, labels=test_labels)
    if val is None or same:
        if not _has_val_arrays(tpath):
            raise _fail(
                str(tpath),
                "no validation split: pass --val FILE, or store val_logits (or val_probs) and "
                "val_labels in the same .npz",
            )
        val_pred = load_predictions(tpath, kind=kind, split="val")
    else:
        vpath = Path(val)
        vsplit = "val" if _has_val_arrays(vpath) else "test"
        val_pred = load_predictions(vpath, kind=kind, labels=val_labels, split=vsplit)
    if val_pred.num_classes != test_pred.num_classes:
        raise PredictionFileError(
            f"the validation split has {val_pred.num_classes} classes ({val_pred.source}) but the "
            f"test split has {test_pred.num_classes} ({test_pred.source})"
        )
    return ModelSplits(
        name=name or tpath.stem,
        val=val_pred,
        test=test_pred,
        description=f"validation: {val_pred.source}; test: {test_pred.source}",
    )
