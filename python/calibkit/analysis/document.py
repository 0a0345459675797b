"""The reports' documents: Markdown and self-contained HTML from one list of blocks, JSON of
NumPy values, and the environment table every report carries."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
import platform
from pathlib import Path
from typing import Any

import numpy as np

from .tables import Table

__all__ = ["Document", "jsonable", "environment"]


# ----------------------------------------------------------------------------- JSON helpers
def jsonable(x: Any) -> Any:
    """``x`` with NumPy arrays and scalars as Python lists and numbers, NaN and inf as None
    (JSON has no NaN), dict keys as strings; anything else as its ``str``.

    Examples
    --------
    >>> import numpy as np
    >>> jsonable({1: np.array([0.5, np.nan]), "n": np.int64(3)})
    {'1': [0.5, None], 'n': 3}
    """
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    if x is None or isinstance(x, str):
        return x
    return str(x)


# ----------------------------------------------------------------------------- documents
#: How report.html embeds a figure of each format (PDF figures are linked).
_MIME = {".png": "image/png", ".svg": "image/svg+xml"}


class Document:
    """A report as a list of blocks (headings, paragraphs, tables, figures, settings),
    rendered to Markdown (:meth:`markdown`) and to self-contained HTML (:meth:`html`: PNG and
    SVG figures embedded, PDF figures linked).

    Examples
    --------
    >>> doc = Document("a report")
    >>> doc.p("one line")
    >>> doc.markdown().splitlines()[:3]
    ['# a report', '', 'one line']
    """

    def __init__(self, title: str):
        self.title = title
        self.blocks: list[tuple[str, Any]] = []

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", (level, text)))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, t: Table, csv_name: str | None = None) -> None:
        self.blocks.append(("table", (t, csv_name)))

    def figure(self, path: Path, rel: str, caption: str) -> None:
        self.blocks.append(("fig", (path, rel, caption)))

    def kv(self, pairs: list[tuple[str, Any]]) -> None:
        self.blocks.append(("kv", pairs))

    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for kind, val in self.blocks:
            if kind == "h":
                out += [f"{'#' * (val[0] + 1)} {val[1]}", ""]
            elif kind == "p":
                out += [val, ""]
            elif kind == "table":
                t, csv_name = val
                out += [f"**{t.title}**", "", t.to_markdown(), ""]
                if t.note:
                    out += [f"*{t.note}*", ""]
                if csv_name:
                    out += [f"CSV: [`{csv_name}`]({csv_name})", ""]
            elif kind == "fig":
                _, rel, caption = val
                link = "" if rel.endswith(".pdf") else "!"  # a PDF figure is linked
                out += [f"{link}[{caption}]({rel})", "", f"*{caption}*", ""]
            elif kind == "kv":
                out += ["| setting | value |", "|---|---|"]
                out += [f"| {k} | {str(v).replace('|', '/')} |" for k, v in val]
                out.append("")
        return "\n".join(out)

    def html(self) -> str:
        e = html.escape
        css = (
            "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;"
            "margin:2em auto;padding:0 1em;color:#222}table{border-collapse:collapse;margin:.5em 0 "
            "1em;font-size:13px}caption{text-align:left;font-weight:600;padding:.3em 0}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#f4f4f4}"
            "tbody th{text-align:left}.note{color:#555;font-style:italic;font-size:13px}"
            "figure{margin:1em 0}figcaption{color:#555;font-size:13px}img{max-width:100%}"
            ".wide{overflow-x:auto}"
        )
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               f"<title>{e(self.title)}</title><style>{css}</style></head><body>",
               f"<h1>{e(self.title)}</h1>"]
        for kind, val in self.blocks:
            if kind == "h":
                lv = min(val[0] + 1, 6)
                out.append(f"<h{lv}>{e(val[1])}</h{lv}>")
            elif kind == "p":
                out.append(f"<p>{e(val)}</p>")
            elif kind == "table":
                t, csv_name = val
                out.append(f'<div class="wide">{t.to_html()}</div>')
                if t.note:
                    out.append(f'<p class="note">{e(t.note)}</p>')
            elif kind == "fig":
                path, rel, caption = val
                mime = _MIME.get(Path(path).suffix.lower())
                if mime is None:  # a PDF: browsers do not show it inline in <img>; linked
                    out.append(f'<figure><a href="{e(rel)}">{e(rel)}</a>'
                               f"<figcaption>{e(caption)}</figcaption></figure>")
                    continue
                data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
                out.append(
                    f'<figure><img alt="{e(caption)}" src="data:{mime};base64,{data}">'
                    f"<figcaption>{e(caption)}</figcaption></figure>"
                )
            elif kind == "kv":
                out.append("<table><tbody>")
                out += [f"<tr><th>{e(str(k))}</th><td style='text-align:left'>{e(str(v))}</td></tr>"
                        for k, v in val]
                out.append("</tbody></table>")
        out.append("</body></html>")
        return "\n".join(out)


def environment() -> list[tuple[str, Any]]:
    """(setting, value) rows every report carries: calibkit, Python, NumPy, SciPy and
    scikit-learn versions, the platform and when it was written."""
    import scipy

    from .study import package_version

    env = [("calibkit version", package_version()), ("python", platform.python_version()),
           ("numpy", np.__version__), ("scipy", scipy.__version__)]
    try:
        import sklearn

        env.append(("scikit-learn", sklearn.__version__))
    except ImportError:  # pragma: no cover
        pass
    env.append(("platform", platform.platform()))
    env.append(("written", _dt.datetime.now().astimezone().isoformat(timespec="seconds")))
    return env


