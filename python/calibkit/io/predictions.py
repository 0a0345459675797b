"""The one reader of prediction files: ``calibkit report`` / ``calibkit study`` and
:mod:`calibkit.analysis` (:func:`load_predictions`, ``load_val_test``) all read through
:func:`read_predictions`.

What it reads (``calibkit report --help`` shows the same; the keyword arguments are the
command's flags):

``.npz``
    The scores are the array named by ``scores_key`` (``--scores-key``), else ``logits`` /
    ``probs`` (``val_*`` with ``split="val"``; ``test_*`` accepted), else the only 2-D array
    when there are exactly two arrays (``numpy.savez(f, scores, y)`` gives ``arr_0`` and
    ``arr_1``). The labels are ``labels_key``, else ``labels``, else the other array of such a
    pair.
``.npy``
    The scores; the labels from ``labels=`` (``--labels FILE``: ``.npy`` or a CSV whose first
    column holds them) or a sibling file (``val_logits.npy`` -> ``val_labels.npy``, ``x.npy``
    -> ``x_labels.npy``, or ``labels.npy``).
``.csv``
    One row per example; comma-separated (``;`` with decimal commas, as spreadsheets write in
    many locales, tab and ``|`` are recognised too, and said); header optional. The label
    column is ``label_column`` (name or 0-based position), else a column named
    ``label``/``labels``/``y``/``target``/``true_label``/``class``, else the first. The score
    columns are ``score_columns`` (names or positions, comma-separated or a list), else every
    other column but index and id columns (``id``, ``index``, pandas' unnamed index, ...:
    :data:`INDEX_NAMES`), which are left out with a note; an unnamed column of consecutive
    integers is refused, naming ``--score-columns``. Class names in the label column are
    mapped to the score columns of the same names (the mapping is a note) or refused with the
    fix.
Top-label files (``.npz`` or ``.csv``, with ``top_label=True``)
    ``confidence`` plus ``correct``, or ``labels`` + ``pred`` + ``confidence`` (the model-zoo
    layout): :class:`~calibkit.io.toplabel.TopLabelPredictions`.

The kind of the scores is decided the same way for every format: ``kind`` (``--logits`` /
``--probs``) when given (it applies to whichever array or columns were chosen); else the name
of the array (``.npz`` key, ``.npy`` file name, CSV score-column names) containing ``logit`` or
``prob``; else the values (valid probabilities are read as probabilities; anything else is
refused with a request for ``--logits``).

Probabilities rounded when written (rows summing to 1.01) are refused with the fix,
``renormalize=True`` (``--renormalize``), which divides each row by its sum (a note says how
far the sums were). Options that do not apply to what a file holds (``labels`` for a CSV or
``.npz``, ``num_classes`` for a full matrix, ``renormalize`` or ``kind`` for a top-label
file) are refused, never ignored.

The values follow calibkit's input rules (:mod:`calibkit._validate`: labels by
``as_labels``, scores by ``check_scores``, the metric kernels' own checks). Every problem
(missing file, no usable arrays, wrong shapes, NaN or inf, labels that are not class indices
in ``[0, K)``, invalid probabilities) raises :class:`PredictionFileError` naming the file, the
array and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._params import as_flag, as_path
from .._softmax import softmax
from .._validate import as_labels, check_scores
from ..errors import CalibkitError, InvalidParameterError, InvalidProbabilitiesError
from .columns import choose_columns, class_name_indices
from .formats import (
    CSV_SUFFIXES,
    DELIMITERS,
    PredictionFileError,
    fail,
    is_number,
    kind_from_names,
    npy_label_candidates,
    read_csv_rows,
    read_labels_file,
    read_npy,
    read_npz,
)
from .toplabel import TopLabelPredictions, toplabel_record

__all__ = [
    "PredictionFileError",
    "Predictions",
    "TopLabelPredictions",
    "check_predictions",
    "read_predictions",
    "load_predictions",
    "has_val_split",
]


# ---------------------------------------------------------------------------- the record
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


# ---------------------------------------------------------------------------- the checks
#: What the reader says to do about probabilities stated to be logits.
_LOGITS_FIX = "pass --probs (kind='probs') to read them as probabilities"


def _looks_like_probs(s: np.ndarray) -> bool:
    """Whether ``s`` passes calibkit's probability checks (those of every metric)."""
    try:
        check_scores(s)
    except CalibkitError:
        return False
    return True


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
        ``[0, K)``, probabilities outside [0, 1] or rows not summing to 1 (the metric
        functions' own checks, :func:`calibkit._validate.check_scores`), probabilities stated
        to be logits.
    """
    s = np.asarray(scores)
    if s.dtype.kind not in "iuf" or s.dtype.kind == "b":
        raise fail(source, f"scores must be numeric (got dtype {s.dtype})")
    s = s.astype(np.float32 if s.dtype == np.float32 else np.float64, copy=False)
    if s.ndim not in (1, 2):
        raise fail(source, f"scores must be a 2-D array (examples, classes) (got shape {s.shape})")
    if s.shape[0] == 0:
        raise fail(source, "no examples (the scores array has 0 rows)")
    if kind is None:
        if not _looks_like_probs(s):
            try:  # a NaN or inf is the problem to name, not the kind
                check_scores(s, "logits", name="the score array")
            except InvalidProbabilitiesError as exc:
                raise fail(source, str(exc)) from exc
            raise fail(
                source,
                "the scores are not probabilities (values outside [0, 1] or rows not summing to "
                "1) and their kind is not stated; pass --logits (kind='logits') if they are logits",
            )
        kind = "probs"
    if kind not in ("logits", "probs"):
        raise InvalidParameterError(f"kind must be 'logits', 'probs' or None (got {kind!r})")
    if kind == "logits" and (s.ndim != 2 or s.shape[1] < 2):
        raise fail(source, f"logits must have shape (N, K) with K >= 2 classes (got {s.shape})")
    k = 2 if s.ndim == 1 or s.shape[1] == 1 else s.shape[1]
    try:
        y = as_labels(labels, "labels")
        if y.shape[0] != s.shape[0]:
            raise fail(source, f"{y.shape[0]} labels for {s.shape[0]} rows of scores; the two "
                               "arrays must have one entry per example")
        as_labels(y, "labels", num_classes=k)
        check_scores(s, kind, name="the score array" if kind == "logits" else "probs",
                     fix=_LOGITS_FIX if kind == "logits" else None)
    except PredictionFileError:
        raise
    except InvalidProbabilitiesError as exc:
        prefix = "invalid probabilities: " if kind == "probs" else ""
        hint = rounding_hint(s) if kind == "probs" else ""
        if hint:  # the kernel's advice (normalise, or --logits) is the hint's, said once
            msg = str(exc)
            cut = msg.find("; pass normalised")
            raise fail(source, f"{prefix}{msg[:cut] if cut > 0 else msg}; {hint}") from exc
        raise fail(source, f"{prefix}{exc}") from exc
    except CalibkitError as exc:
        raise fail(source, str(exc)) from exc
    return Predictions(y, s, kind, source)


def decide_kind(kind: str | None, names, scores: np.ndarray, source: str,
                context: str = "") -> tuple[str, str]:
    """(kind, how it was decided): ``kind`` when stated, else the ``names`` (of the array,
    the file or the score columns), else the values (valid probabilities). ``context`` opens
    the message when none of them tells."""
    if kind is not None:
        return kind, f"--{kind}"
    by_name = kind_from_names(names)
    if by_name is not None:
        return by_name, f"the name{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}"
    s = np.asarray(scores)
    if s.dtype.kind in "iuf" and s.size and _looks_like_probs(s):
        return "probs", "the values (valid probabilities)"
    rounded = rounding_hint(s)
    if rounded:
        raise fail(source, f"{context}the scores are not probabilities: {rounded}")
    raise fail(source, f"{context}the scores are not probabilities (values outside [0, 1] or rows "
                       "not summing to 1) and nothing says what they are: pass --logits if they "
                       "are logits (or --probs to have them checked as probabilities)")


def rounding_hint(scores) -> str:
    """When ``scores`` look like rounded probabilities (every value in [0, 1], every row sum
    positive, some row sum off 1): what they look like and the fix, ``--renormalize``; else
    ``""``."""
    s = np.asarray(scores)
    if s.dtype.kind not in "iuf" or s.ndim != 2 or s.shape[1] < 2 or s.shape[0] == 0:
        return ""
    s = s.astype(np.float64, copy=False)
    if not np.isfinite(s).all() or s.min() < 0.0 or s.max() > 1.0:
        return ""
    sums = s.sum(axis=1)
    if sums.min() <= 0.0:
        return ""
    return (f"every value is in [0, 1] but the rows sum to between {sums.min():.6g} and "
            f"{sums.max():.6g}; if they are rounded probabilities, pass --renormalize "
            "(renormalize=True) to divide each row by its sum, or pass --logits if they are logits")


def renormalized(scores, kind: str | None, source: str, notes: list) -> np.ndarray:
    """Rounded probabilities divided by their row sums (``--renormalize``), with a note of
    how far the sums were from 1; refused for logits or for values that are not
    probabilities."""
    if kind == "logits":
        raise fail(source, "--renormalize is for rounded probabilities, not logits: drop one of "
                           "--renormalize and --logits")
    s = np.asarray(scores)
    if s.dtype.kind not in "iuf" or s.ndim != 2 or s.shape[1] < 2:
        raise fail(source, "--renormalize needs an (N, K) matrix of probabilities with K >= 2 "
                           f"(got shape {s.shape})")
    s = s.astype(np.float64)
    if not np.isfinite(s).all() or s.min() < 0.0 or s.max() > 1.0:
        raise fail(source, "--renormalize is for rounded probabilities (values in [0, 1]); these "
                           "have values outside [0, 1] or NaN/inf: pass --logits if they are logits")
    sums = s.sum(axis=1, keepdims=True)
    if sums.min() <= 0.0:
        row = int(np.argmin(sums[:, 0]))
        raise fail(source, f"--renormalize: row {row} sums to 0; there is no distribution to "
                           "rescale it to")
    notes.append(f"--renormalize: each row divided by its sum (sums were between "
                 f"{sums.min():.6g} and {sums.max():.6g})")
    return s / sums


def _scores(o: _Options, labels, scores, names, source: str, notes: list,
            context: str = "") -> Predictions:
    """The kind of the scores (``--renormalize`` first, which states them probabilities), then
    the checks: what every format does once it has found its scores and labels."""
    kind = o.kind
    if o.renormalize:
        scores, kind = renormalized(scores, o.kind, source, notes), "probs"
    kind, how = decide_kind(kind, names, scores, source, context)
    if o.renormalize:
        how = "--renormalize"
    return _check(labels, scores, kind, source, how)


def _check(labels, scores, kind: str, source: str, how: str) -> Predictions:
    try:
        return check_predictions(labels, scores, kind, source)
    except PredictionFileError as exc:
        msg = str(exc)
        if kind == "probs" and "invalid probabilities" in msg:
            msg += f" (read as probabilities because of {how})"
        raise PredictionFileError(msg) from exc


@dataclass(frozen=True)
class _Options:
    """The reading options (the keyword arguments of :func:`read_predictions`)."""

    kind: str | None = None
    labels: str | Path | None = None
    split: str = "test"
    label_column: str | int | None = None
    score_columns: str | Sequence[str | int] | None = None
    scores_key: str | None = None
    labels_key: str | None = None
    num_classes: int | None = None
    top_label: bool = False
    renormalize: bool = False


# ---------------------------------------------------------------------------- .npz
def _read_npz(path: Path, o: _Options):
    arrays = read_npz(path)
    found = ", ".join(sorted(arrays)) or "none"
    pre = "val_" if o.split == "val" else ""

    def pick(key, flag):
        if key not in arrays:
            raise fail(path, f"{flag} {key}: no such array (arrays: {found})")
        return arrays[key]

    if (o.top_label and o.scores_key is None and o.labels_key is None and o.split == "test"
            and not any(k in arrays for k in ("probs", "logits"))):
        top = toplabel_record(arrays, str(path), o.num_classes)
        if top is not None:
            return top, top.notes
    notes: list[str] = []
    named = True  # the scores array is named as such (by its name or --scores-key)
    skey: str | None
    lkey: str | None
    if o.scores_key is not None:
        skey = o.scores_key
        pick(skey, "--scores-key")
    else:
        skey = next((k for k in (f"{pre}logits", f"{pre}probs") if k in arrays), None)
        if skey is None and o.split == "test":
            skey = next((k for k in ("test_logits", "test_probs") if k in arrays), None)
    if o.labels_key is not None:
        lkey = o.labels_key
        pick(lkey, "--labels-key")
    else:
        lkey = next((k for k in (f"{pre}labels", "test_labels") if k in arrays
                     and (k != "test_labels" or o.split == "test")), None)
    if o.split == "val" and (skey is None or lkey is None):
        # never the test arrays (or an unnamed pair) in place of the split asked for
        raise fail(path, f"--split val reads val_logits or val_probs, and val_labels: not all in "
                         f"this file (arrays: {found}); pass --scores-key/--labels-key NAME to "
                         f"choose, or drop --split val")
    if (skey is None or lkey is None) and len(arrays) == 2:
        # an unnamed pair (numpy.savez(f, scores, y)): the 2-D array is the scores
        (k1, v1), (k2, v2) = arrays.items()
        if v1.ndim < v2.ndim:
            (k1, v1), (k2, v2) = (k2, v2), (k1, v1)
        if v1.ndim == 2 and v2.ndim == 1:
            named = skey is not None
            skey = skey or k1
            lkey = lkey or k2
            notes.append(f"scores from array {skey!r}, labels from {lkey!r} "
                         "(set --scores-key / --labels-key to choose)")
    if skey is None:
        raise fail(path, f"no usable arrays named logits or probs (arrays found: {found}): which "
                         "array holds the scores? pass --scores-key NAME (the (N, K) logits or "
                         "probabilities)")
    if lkey is None:
        raise fail(path, f"has {skey!r} but no {pre + 'labels'!r} array (arrays found: {found}): "
                         "which array holds the labels? pass --labels-key NAME (the (N,) class "
                         "indices)")
    scores = arrays[skey]
    context = "" if named else (
        f"no array is named logits or probs (arrays found: {found}); {skey!r} "
        f"{tuple(scores.shape)} was taken for the scores and {lkey!r} for the labels (as "
        "numpy.savez(f, scores, labels) names them), but ")
    return _scores(o, arrays[lkey], scores, [skey], f"{path}[{skey}]", notes, context), notes


# ---------------------------------------------------------------------------- .npy
def _read_npy(path: Path, o: _Options):
    scores = read_npy(path)
    if o.labels is None:
        cands = npy_label_candidates(path)
        lpath = next((p for p in cands if p.exists()), None)
        if lpath is None:
            raise fail(path, "no labels: pass --labels FILE (labels=...) or put them next to it "
                             "as " + " or ".join(p.name for p in cands))
    else:
        lpath = Path(o.labels)
        if not lpath.exists():
            raise fail(lpath, "labels file not found (--labels)")
    y = read_labels_file(lpath)
    notes: list[str] = []
    return _scores(o, y, scores, [path.stem], f"{path} (labels {lpath.name})", notes), notes


# ---------------------------------------------------------------------------- .csv
def _read_csv(path: Path, o: _Options):
    header, rows, delim, comma = read_csv_rows(path)
    notes = [] if delim == "," else [f"read as {DELIMITERS[delim]}-separated values"
                                     + (" with decimal commas" if comma else "")]
    width = len(rows[0])
    if o.top_label and header is not None and o.score_columns is None and o.label_column is None:
        cols = {h: [r[j] for r in rows] for j, h in enumerate(header)}
        top = toplabel_record(cols, str(path), o.num_classes)
        if top is not None:
            return top, notes + top.notes
    if width < 2:
        raise fail(path, "needs a label column and at least one score column (expected "
                         "comma-separated values: label,score_0,score_1,...)")
    j, score_cols = choose_columns(header, rows, o.label_column, o.score_columns, path, notes)
    for i, r in enumerate(rows):
        for c in score_cols:
            if not is_number(r[c]):
                name = header[c] if header else f"column {c}"
                hint = ""
                if any(d in r[c] for d in DELIMITERS if d != delim):
                    hint = f" (expected {DELIMITERS[delim]}-separated values)"
                raise fail(path, f"data row {i + 1}, score column {name!r}: {r[c]!r} is "
                                 f"non-numeric{hint}; choose the score columns with "
                                 "--score-columns")
    scores = np.array([[float(r[c]) for c in score_cols] for r in rows], dtype=np.float64)
    raw_labels = [r[j] for r in rows]
    if all(is_number(v) for v in raw_labels):
        y = np.array([float(v) for v in raw_labels])
    else:
        y = class_name_indices(raw_labels, header, score_cols, j, path, notes)
    names = [header[c] for c in score_cols] if header else []
    return _scores(o, y, scores, names, str(path), notes), notes


# ---------------------------------------------------------------------------- entry points
def read_predictions(
    path: str | Path,
    *,
    kind: str | None = None,
    labels: str | Path | None = None,
    split: str = "test",
    label_column: str | int | None = None,
    score_columns: str | Sequence[str | int] | None = None,
    scores_key: str | None = None,
    labels_key: str | None = None,
    num_classes: int | None = None,
    top_label: bool = False,
    renormalize: bool = False,
) -> tuple[Predictions | TopLabelPredictions, list[str]]:
    """Read one split of a model's predictions (see the module doc for each format).

    The one reader: ``calibkit report`` calls it with its flags, :func:`load_predictions` and
    ``calibkit.analysis.load_val_test`` (``calibkit study``) through :func:`load_predictions`.

    Parameters
    ----------
    path : str or Path
        A ``.npz``, ``.npy`` or ``.csv`` (``.txt``, ``.tsv``) file.
    kind : {"logits", "probs"}, optional
        What the scores are (``--logits`` / ``--probs``); default: the names, else the values.
    labels : str or Path, optional
        For ``.npy`` scores: the labels file (``.npy``, or a CSV whose first column holds them).
    split : {"test", "val"}, default "test"
        For ``.npz``: ``"val"`` reads the ``val_*`` arrays.
    label_column, score_columns : optional
        For CSV: the label column and the score columns (names or 0-based positions; several
        score columns comma-separated, or a list). Without ``score_columns``, columns named as
        an index or id (``id``, ``index``, pandas' unnamed index, ...) are left out with a note,
        and an unnamed column of consecutive integers is refused.
    scores_key, labels_key : str, optional
        For ``.npz``: the arrays holding the scores and the labels.
    num_classes : int, optional
        K of a top-label file.
    top_label : bool, default False
        Also read top-label files (``confidence`` + ``correct``, or labels + ``pred`` +
        ``confidence``) as :class:`~calibkit.io.toplabel.TopLabelPredictions`.
    renormalize : bool, default False
        Divide each row of probabilities by its sum (``--renormalize``: probabilities rounded
        when written, e.g. rows summing to 1.01); a note says how far the sums were from 1.

    Returns
    -------
    (Predictions or TopLabelPredictions, list of str)
        The predictions and notes on what was inferred (the command prints them).

    Raises
    ------
    PredictionFileError
        When the file is missing, unreadable, or holds unusable arrays (the message says which).
    InvalidParameterError
        A ``split`` or ``kind`` that is not one of the choices.
    """
    if split not in ("test", "val"):
        raise InvalidParameterError(f"split must be 'test' or 'val' (got {split!r})")
    if kind not in (None, "logits", "probs"):
        raise InvalidParameterError(f"kind must be 'logits', 'probs' or None (got {kind!r})")
    o = _Options(kind, labels, split, label_column, score_columns, scores_key, labels_key,
                 num_classes, as_flag(top_label, "top_label"), as_flag(renormalize, "renormalize"))
    p = Path(as_path(path))
    if not p.exists():
        raise fail(p, "file not found")
    if p.is_dir():
        raise fail(p, "is a directory, expected a .npz, .npy or .csv file")
    suffix = p.suffix.lower()
    if suffix != ".npz" and (scores_key or labels_key):
        raise fail(p, "--scores-key / --labels-key are for .npz files")
    if suffix not in CSV_SUFFIXES and (score_columns or label_column is not None):
        raise fail(p, "--score-columns / --label-column are for CSV files")
    if suffix != ".npy" and labels is not None:
        where = "a label column" if suffix in CSV_SUFFIXES else "its labels array"
        raise fail(p, f"--labels FILE is for .npy scores; this file holds {where} (choose it "
                      + ("with --label-column)" if suffix in CSV_SUFFIXES else
                         "with --labels-key)"))
    if suffix == ".npz":
        out = _read_npz(p, o)
    elif split == "val":
        raise fail(p, "--split val reads the val_* arrays of an .npz file (a separate "
                      "validation split can only be read from .npz)")
    elif suffix == ".npy":
        out = _read_npy(p, o)
    elif suffix in CSV_SUFFIXES:
        out = _read_csv(p, o)
    else:
        raise fail(p, f"unknown file type {p.suffix!r}: use .npz, .npy or .csv")
    _refuse_unused(out[0], o, p)
    return out


def _refuse_unused(pred, o: _Options, path: Path) -> None:
    """Options that do not apply to the form the file turned out to hold are refused, not
    ignored."""
    if isinstance(pred, Predictions) and o.num_classes is not None:
        raise fail(path, f"--num-classes {o.num_classes} is for top-label files (labels, pred, "
                         f"confidence); this file holds the full score matrix, whose "
                         f"{pred.num_classes} columns are the classes: drop --num-classes")
    if isinstance(pred, TopLabelPredictions) and o.renormalize:
        raise fail(path, "--renormalize rescales rows of class probabilities; this is a "
                         "top-label file (one confidence per prediction): drop --renormalize")
    if isinstance(pred, TopLabelPredictions) and o.kind is not None:
        raise fail(path, f"--{o.kind} says what a score matrix holds; this is a top-label file "
                         "(one confidence per prediction): drop it")


def load_predictions(
    path: str | Path,
    *,
    kind: str | None = None,
    labels: str | Path | None = None,
    split: str = "test",
    label_column: str | int | None = None,
    score_columns: str | Sequence[str | int] | None = None,
    scores_key: str | None = None,
    labels_key: str | None = None,
    renormalize: bool = False,
) -> Predictions:
    """Read one split of a model's predictions from ``.npz``, ``.npy`` or ``.csv``: the
    (labels, scores) of :func:`read_predictions`, without its notes.

    Parameters
    ----------
    path : str or Path
        The file (see the module docstring for each format's layout).
    kind : {"logits", "probs"}, optional
        What the scores are; default: read from the array / file / column name, else the values.
    labels : str or Path, optional
        For ``.npy`` scores: the labels file (``.npy`` or a one-column CSV).
    split : {"test", "val"}, default "test"
        For ``.npz``: read ``val_*`` arrays for ``"val"``.
    label_column : str or int, optional
        For CSV: the label column's name or 0-based position.
    score_columns, scores_key, labels_key, renormalize : optional
        As for :func:`read_predictions`.

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
    pred, _ = read_predictions(path, kind=kind, labels=labels, split=split,
                               label_column=label_column, score_columns=score_columns,
                               scores_key=scores_key, labels_key=labels_key,
                               renormalize=renormalize)
    assert isinstance(pred, Predictions)  # top_label=False
    return pred


def has_val_split(path: str | Path) -> bool:
    """Whether ``path`` is an ``.npz`` holding a validation split (``val_labels`` with
    ``val_logits`` or ``val_probs``)."""
    path = Path(path)
    if path.suffix.lower() != ".npz" or not path.exists():
        return False
    try:
        with np.load(path, allow_pickle=False) as f:
            return "val_labels" in f.files and ("val_logits" in f.files or "val_probs" in f.files)
    except Exception:
        return False
