"""The file formats predictions come in: ``.npz`` archives, ``.npy`` arrays and CSV text.

This module reads what a file holds (its arrays, or its header and rows) without pickle, and
names the file and the fix in a :class:`PredictionFileError` for every problem. Which CSV
columns are the scores and the labels is decided by :mod:`calibkit.io.columns`; which arrays,
their kind and their values by :mod:`calibkit.io.predictions`, the one reader the command line
and :mod:`calibkit.analysis` use.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import CalibkitError

__all__ = [
    "PredictionFileError",
    "fail",
    "LABEL_NAMES",
    "DELIMITERS",
    "CSV_SUFFIXES",
    "read_npz",
    "read_npy",
    "npy_label_candidates",
    "read_labels_file",
    "CsvText",
    "read_csv_rows",
    "is_number",
    "kind_from_names",
]

#: Names a CSV label column (or a top-label file's labels) goes by, in order of preference.
LABEL_NAMES = ("label", "labels", "y", "target", "true_label", "class")
#: CSV delimiters recognised, and how messages call them.
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
#: Suffixes read as CSV text.
CSV_SUFFIXES = (".csv", ".txt", ".tsv")


class PredictionFileError(CalibkitError, ValueError):
    """A predictions file could not be used; the message names the file, the array and the fix."""


def fail(source, msg: str) -> PredictionFileError:
    """The error about ``source`` (a path, or a path with the array's name)."""
    return PredictionFileError(f"{source}: {msg}")


# ------------------------------------------------------------------------------------ .npz
def read_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, read without pickle."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head == b"PK\x05\x06":  # a zip archive's end record first: an archive of nothing
        raise fail(path, "the .npz archive holds no arrays (save the scores and labels in it, "
                         "e.g. numpy.savez(path, probs=probs, labels=labels))")
    if head != b"PK\x03\x04":
        raise fail(path, "not a readable .npz archive (save it with numpy.savez)")
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except Exception as exc:  # a pickled array (ValueError), zipfile.BadZipFile, EOFError, OSError
        raise fail(path, f"not a readable .npz archive without pickle ({type(exc).__name__}: "
                         f"{exc}); save plain numeric arrays") from exc


# ------------------------------------------------------------------------------------ .npy
def read_npy(path: Path) -> np.ndarray:
    """The array of an ``.npy`` file, read without pickle."""
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:
        raise fail(path, f"not a readable .npy array ({type(exc).__name__}: {exc})") from exc


def npy_label_candidates(path: Path) -> list[Path]:
    """Where the labels of ``.npy`` scores may be, in order: the scores' name with
    ``logits``/``probs`` replaced by ``labels``, then ``<name>_labels.npy``, then ``labels.npy``."""
    stem = path.stem
    out = []
    for word in ("logits", "probs", "logit", "prob"):
        if word in stem:
            out.append(path.with_name(stem.replace(word, "labels") + ".npy"))
            break
    out.append(path.with_name(f"{stem}_labels.npy"))
    out.append(path.with_name("labels.npy"))
    return [p for p in out if p != path]


def read_labels_file(path: Path) -> np.ndarray:
    """The labels of a labels file: an ``.npy`` array, or a CSV column (numbers as floats,
    anything else as text): the only column, or the one whose header is a label name
    (:data:`LABEL_NAMES`). A CSV of several columns with no such header is refused rather than
    read by position (an ``id,label`` file must not give its ids)."""
    if path.suffix.lower() == ".npy":
        return read_npy(path)
    header, rows, _, _ = read_csv_rows(path)
    j = 0
    if len(rows[0]) > 1:
        named = [i for i, h in enumerate(header or []) if h.lower() in LABEL_NAMES]
        if len(named) != 1:
            raise fail(path, f"a labels file of {len(rows[0])} columns needs exactly one column "
                             f"headed by a label name ({', '.join(LABEL_NAMES)}); got header "
                             f"{header}" if header else
                             f"a labels file of {len(rows[0])} columns needs a header naming the "
                             f"label column ({', '.join(LABEL_NAMES)}), or one column")
        j = named[0]
    column = [r[j] for r in rows]
    if all(is_number(v) for v in column):
        return np.array([float(v) for v in column])
    return np.array(column)


# ------------------------------------------------------------------------------------ .csv
def is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


class CsvText(NamedTuple):
    """What :func:`read_csv_rows` read: the header (or None), the data rows as strings, the
    delimiter, and whether decimal commas were read as decimal points."""

    header: list[str] | None
    rows: list[list[str]]
    delim: str
    decimal_comma: bool


#: A number written with a decimal comma (spreadsheets in many locales: ``0,25``, ``-1,5e-3``).
_DECIMAL_COMMA = re.compile(r"^[+-]?\d*,\d+(?:[eE][+-]?\d+)?$")


def _decimal_commas(rows: list[list[str]]) -> bool:
    """Read decimal commas (``0,25``) as decimal points, in place; whether any was. Only for a
    file separated by something else than commas, and only fields that are numbers once read."""
    found = False
    for r in rows:
        for i, c in enumerate(r):
            if "," in c and _DECIMAL_COMMA.match(c):
                r[i] = c.replace(",", ".")
                found = True
    return found


def _delimiter(first: str) -> str:
    """The delimiter of a CSV file from its first line: the semicolon when it has one (the
    spreadsheet export of locales that write decimal commas), else the comma, else the most
    frequent of tab and ``|``; the comma for a single column."""
    counts = {d: first.count(d) for d in DELIMITERS}
    if counts[";"]:
        return ";"
    if counts[","]:
        return ","
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def read_csv_rows(path: Path) -> CsvText:
    """(header or None, data rows as strings, delimiter, decimal commas read). The delimiter is
    the semicolon when the first line has one, else the comma when it has one, else the most
    frequent of tab and ``|``; with a delimiter other than the comma, decimal commas (``0,25``)
    are read as decimal points. The first row is a header unless every field of it is a
    number."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(path, "not a text CSV file (cannot decode as UTF-8)") from exc
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise fail(path, "the CSV file is empty")
    delim = _delimiter(lines[0])
    rows = [[c.strip() for c in r] for r in csv.reader(lines, delimiter=delim)]
    comma = delim != "," and _decimal_commas(rows)
    header = None
    if not all(is_number(c) for c in rows[0]):
        header, rows = rows[0], rows[1:]
    if not rows:
        raise fail(path, "the CSV file has a header but no data rows")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise fail(path, f"data row {i + 1} has {len(r)} fields, the first has {width} "
                             f"(expected {DELIMITERS[delim]}-separated values)")
    if header is not None and len(header) != width:
        raise fail(path, f"the header has {len(header)} columns but the rows have {width}")
    return CsvText(header, rows, delim, comma)


def kind_from_names(names) -> str | None:
    """``"logits"`` when every name says logit, ``"probs"`` when every name says prob (or
    starts with ``p``: ``p0``, ``p_cat``), else None."""
    low = [str(n).lower() for n in names]
    if low and all("logit" in n for n in low):
        return "logits"
    if low and all("prob" in n or n.startswith("p") for n in low):
        return "probs"
    return None
