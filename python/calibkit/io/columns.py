"""Which CSV columns are the labels, the scores and an index: a label column by its flag, its
header name (:data:`~calibkit.io.formats.LABEL_NAMES`) or its place (first); score columns by
their flag, or every other column but index and id columns, which are left out by name
(:data:`INDEX_NAMES`) and refused by value (consecutive integers); class names in the label
column matched to score columns of the same names. Used by :mod:`calibkit.io.predictions`'s
CSV reader; every problem is a :class:`~calibkit.io.formats.PredictionFileError` naming the
flag that fixes it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .formats import LABEL_NAMES, fail

__all__ = ["INDEX_NAMES", "choose_columns", "class_name_indices", "column_index", "is_index_name"]


def choose_columns(header: list[str] | None, rows: list[list[str]], label_column, score_columns,
                   path: Path, notes: list) -> tuple[int, list[int]]:
    """The label column and the score columns of a CSV (``label_column`` and
    ``score_columns`` as the flags give them, or None); a note for index columns left out."""
    width = len(rows[0])
    if label_column is not None:
        j = column_index(label_column, header, width, path, "--label-column", "label")
    elif header is not None and any(h.lower() in LABEL_NAMES for h in header):
        j = next(i for i, h in enumerate(header) if h.lower() in LABEL_NAMES)
    else:
        j = 0
    if score_columns is not None:
        score_cols = [column_index(s, header, width, path, "--score-columns", "score")
                      for s in _column_list(score_columns)]
        if j in score_cols:
            raise fail(path, "--score-columns includes the label column")
        return j, score_cols
    index = ([] if header is None else
             [i for i in range(width) if i != j and is_index_name(header[i])])
    score_cols = [i for i in range(width) if i != j and i not in index]
    if index and header is not None:
        shown = ", ".join(repr(header[i]) if header[i] else f"column {i} (no name)"
                          for i in index)
        notes.append(f"{shown} read as an index or id column and left out of the scores "
                     "(--score-columns chooses them)")
    _refuse_index_values(rows, header, j, score_cols, path, label_column is not None)
    if not score_cols:
        raise fail(path, "no score columns left besides the label and index columns; "
                         "choose them with --score-columns")
    return j, score_cols


def column_index(spec, header: list[str] | None, width: int, path: Path, flag: str,
                 what: str) -> int:
    """The 0-based position of column ``spec`` (a header name, else a position, negative ones
    from the end); ``flag`` and ``what`` ("label", "score") name it in messages."""
    spec = str(spec).strip()
    if header is not None and spec in header:
        return header.index(spec)
    if spec.lstrip("-").isdigit():
        j = int(spec)
        if not -width <= j < width:
            raise fail(path, f"{flag} {spec}: {what} column {j} does not exist ({width} columns, "
                             f"positions 0..{width - 1})")
        return j % width
    cols = ", ".join(header) if header else "no header: use 0-based positions"
    raise fail(path, f"{flag} {spec}: no column of that name (no column named {spec!r}; "
                     f"columns: {cols})")


#: Header names of index and id columns (case-insensitive; also pandas' unnamed index, whose
#: header is empty or ``Unnamed: 0``).
INDEX_NAMES = ("", "id", "ids", "index", "idx", "row", "row_id", "sample", "sample_id",
               "example", "example_id", "image", "image_id", "uid", "key")


def is_index_name(name: str) -> bool:
    """Whether a CSV header names an index or id column (:data:`INDEX_NAMES`)."""
    n = str(name).strip().lower()
    return n in INDEX_NAMES or n.startswith("unnamed:")


def _column_list(spec) -> list[str]:
    """A column list: names or positions separated by commas (or given as a sequence)."""
    if isinstance(spec, (list, tuple)):
        return [str(c) for c in spec]
    return [c for c in str(spec).split(",") if c.strip()]


def _counts_rows(column: list[str]) -> bool:
    """Whether a column holds consecutive integers (0, 1, 2, ... or any start): an index or
    an id, never probabilities, and never labels of N >= 3 rows in order."""
    if len(column) < 3:
        return False
    try:
        v = np.array([float(c) for c in column])
    except ValueError:
        return False
    return bool(np.all(v == np.round(v)) and np.all(np.diff(v) == 1.0))


def _refuse_index_values(rows, header, j, score_cols, path, label_given) -> None:
    """An unnamed index or id column (consecutive integers) is refused rather than read as a
    class score or as the labels, naming the flags that choose the columns."""
    width = len(rows[0])

    def name(c):
        return repr(header[c]) if header else f"column {c}"

    def fix(*skip):
        cols = [str(i) for i in range(width) if i not in skip]
        shown = ",".join(cols) if len(cols) <= 6 else ",".join(cols[:3]) + ",...," + cols[-1]
        return f"choose the score columns with --score-columns (e.g. --score-columns {shown})"

    for c in score_cols:
        if _counts_rows([r[c] for r in rows]):
            raise fail(path, f"{name(c)} holds consecutive integers ({rows[0][c]}, {rows[1][c]}, "
                             f"{rows[2][c]}, ...): an index or id column, not class scores; "
                             + fix(j, c))
    labels = [r[j] for r in rows]
    if (not label_given and _counts_rows(labels)
            and float(labels[-1]) >= max(len(score_cols), 2)):
        raise fail(path, f"{name(j)}, read as the labels, holds consecutive integers "
                         f"({rows[0][j]}, {rows[1][j]}, {rows[2][j]}, ...): an index or id column; "
                         "name the label column with --label-column and " + fix(j)[7:])


_PREFIXES = ("p_", "prob_", "probs_", "logit_", "logits_", "p(", "score_")


def _strip(name: str) -> str:
    n = name.strip()
    for p in _PREFIXES:
        if n.lower().startswith(p):
            n = n[len(p):]
            return n[:-1] if p == "p(" and n.endswith(")") else n
    return n


def class_name_indices(values, header, score_cols, j, path, notes) -> np.ndarray:
    """Class names in the label column -> indices of the score columns of the same names (the
    mapping is appended to ``notes``), or an error saying how to name the columns."""
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
    raise fail(path, f"label column {col!r} holds class names ({shown}), and the score columns "
                     "are not named after them. Name each score column after its class (header "
                     "e.g. label," + ",".join(str(c) for c in classes[:3]) + "), or write the "
                     "labels as class indices 0..K-1 in the order of the score columns")
