"""A small, dependency-free table type for the study's results.

Every table the study produces (rank-order table, property-grouped means, class-conditionality,
label noise, ...) is a :class:`Table`: a title, row labels, column labels and a 2-D block of
cells (numbers or strings). It renders to Markdown, HTML and CSV and converts to a
:class:`pandas.DataFrame` when pandas is installed, so the analysis itself needs only NumPy.
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ShapeMismatchError

__all__ = ["Table"]


def _format_cell(value: Any, floatfmt: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "n/a"
        return format(v, floatfmt)
    return str(value)


def _json_cell(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        v = float(value)
        return None if not math.isfinite(v) else v
    return value


@dataclass
class Table:
    """A titled 2-D table with row and column labels.

    Parameters
    ----------
    name : str
        Short file-safe identifier, used for the CSV file name (``<name>.csv``).
    title : str
        Human-readable caption shown in the reports.
    index : sequence of str
        Row labels, length R.
    columns : sequence of str
        Column labels, length C.
    data : sequence of sequences or numpy.ndarray, shape (R, C)
        The cells: numbers (formatted with ``floatfmt``), strings or ``None`` (blank).
    index_name : str, default ""
        Header of the row-label column.
    floatfmt : str, default ".4f"
        :func:`format` spec used for floating-point cells in Markdown and HTML (CSV and JSON keep
        full precision).
    note : str, default ""
        A sentence printed under the table in the reports (how to read it).

    Examples
    --------
    >>> from calibkit.analysis import Table
    >>> t = Table("demo", "Demo", ["a", "b"], ["x"], [[0.5], [0.25]])
    >>> print(t.to_markdown())
    | | x |
    |---|---|
    | a | 0.5000 |
    | b | 0.2500 |
    """

    name: str
    title: str
    index: Sequence[str]
    columns: Sequence[str]
    data: Any
    index_name: str = ""
    floatfmt: str = ".4f"
    note: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = [str(i) for i in self.index]
        self.columns = [str(c) for c in self.columns]
        rows = [list(r) for r in (self.data.tolist() if isinstance(self.data, np.ndarray) else self.data)]
        if len(rows) != len(self.index):
            raise ShapeMismatchError(
                f"Table {self.name!r}: data has {len(rows)} rows but index has {len(self.index)} labels"
            )
        for i, r in enumerate(rows):
            if len(r) != len(self.columns):
                raise ShapeMismatchError(
                    f"Table {self.name!r}: row {i} has {len(r)} cells but there are "
                    f"{len(self.columns)} columns"
                )
        self.data = rows

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return len(self.index), len(self.columns)

    def cell(self, row: str, column: str) -> Any:
        """The cell at row label ``row`` and column label ``column``."""
        return self.data[self.index.index(str(row))][self.columns.index(str(column))]

    def column(self, column: str) -> list:
        """All cells of one column, top to bottom."""
        j = self.columns.index(str(column))
        return [r[j] for r in self.data]

    def values(self) -> np.ndarray:
        """The cells as a float array (non-numeric cells become NaN)."""
        out = np.full(self.shape, np.nan)
        for i, r in enumerate(self.data):
            for j, v in enumerate(r):
                if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                    out[i, j] = float(v)
        return out

    # ------------------------------------------------------------------ renderers
    def to_markdown(self) -> str:
        """GitHub-flavoured Markdown (no caption)."""
        header = "| " + " | ".join([self.index_name] + list(self.columns)) + " |"
        header = header.replace("|  |", "| |", 1)
        sep = "|" + "---|" * (len(self.columns) + 1)
        lines = [header, sep]
        for label, row in zip(self.index, self.data):
            cells = [_format_cell(v, self.floatfmt) for v in row]
            lines.append("| " + " | ".join([label] + cells) + " |")
        return "\n".join(lines)

    def to_html(self) -> str:
        """An HTML ``<table>`` with a ``<caption>``."""
        e = html.escape
        out = [f'<table id="{e(self.name)}">', f"<caption>{e(self.title)}</caption>", "<thead><tr>"]
        out.append(f"<th>{e(self.index_name)}</th>")
        out.extend(f"<th>{e(c)}</th>" for c in self.columns)
        out.append("</tr></thead><tbody>")
        for label, row in zip(self.index, self.data):
            out.append("<tr><th>" + e(label) + "</th>")
            out.extend(f"<td>{e(_format_cell(v, self.floatfmt))}</td>" for v in row)
            out.append("</tr>")
        out.append("</tbody></table>")
        return "".join(out)

    def to_csv(self, path: str | Path | None = None) -> str:
        """CSV text at full precision (``repr`` of floats); written to ``path`` when given."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([self.index_name or "row"] + list(self.columns))
        for label, row in zip(self.index, self.data):
            cells = []
            for v in row:
                jv = _json_cell(v)
                cells.append("" if jv is None else (repr(jv) if isinstance(jv, float) else jv))
            w.writerow([label] + cells)
        text = buf.getvalue()
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def to_dict(self) -> dict:
        """JSON-ready dict: title, index, columns, data (NaN/inf become ``None``), note."""
        return {
            "name": self.name,
            "title": self.title,
            "index_name": self.index_name,
            "index": list(self.index),
            "columns": list(self.columns),
            "data": [[_json_cell(v) for v in r] for r in self.data],
            "note": self.note,
        }

    def to_pandas(self):
        """A :class:`pandas.DataFrame` (requires pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is present in the test env
            raise MissingDependencyError("Table.to_pandas() needs pandas: pip install pandas") from exc
        df = pd.DataFrame(self.data, index=list(self.index), columns=list(self.columns))
        df.index.name = self.index_name or None
        return df

    def to_text(self) -> str:
        """Plain aligned text for a terminal (numbers right-aligned)."""
        head = [self.index_name] + list(self.columns)
        body = [[label] + [_format_cell(v, self.floatfmt) for v in row]
                for label, row in zip(self.index, self.data)]
        widths = [max(len(r[j]) for r in [head] + body) for j in range(len(head))]

        def line(r):
            first = r[0].ljust(widths[0])
            return "  ".join([first] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]).rstrip()

        return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in body])

    def __repr__(self) -> str:
        return f"{self.title}\n{self.to_markdown()}"
