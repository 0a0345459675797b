"""Writing the study's report: report.md, a self-contained report.html, PNG, CSV and JSON.

:func:`write_report` lays out a :class:`~calibkit.analysis.study.StudyResult` in an output folder::

    out/
      report.md          every table and figure, settings and package version
      report.html        the same, self-contained (figures embedded as base64 PNG)
      results.json       every raw number (NaN written as null)
      figures/*.png
      tables/*.csv       one CSV per table, at full precision
      metric_values.csv  long format: model, method, metric, num_bins, value

:func:`write_prediction_report` does the same for one file of predictions (the ``calibkit
report`` command): the named metrics with their settings, the per-bin and per-class tables and a
reliability diagram.
"""

from __future__ import annotations

import base64
import csv
import datetime as _dt
import html
import json
import math
import platform
from pathlib import Path
from typing import Any

import numpy as np

from .._params import as_instance, as_path, renames
from .._validate import validate_inputs
from .binning_free import binning_free_study_tables, binning_free_table
from .tables import Table

__all__ = [
    "write_report",
    "write_prediction_report",
    "named_metric_rows",
    "metric_space_table",
    "per_bin_table",
    "per_class_table",
    "NAMED_METRIC_ORDER",
]

#: The named metrics in print order: (label, name in calibkit.space.NAMED_METRICS, function name).
NAMED_METRIC_ORDER = (
    ("ECE", "ECE", "ece"),
    ("Class-conditional ECE", "CCE", "cce"),
    ("SCE", "SCE", "sce"),
    ("ACE", "ACE", "ace"),
    ("TACE", "TACE", "tace"),
    ("RMSCE", "RMSCE", "rmsce"),
    ("MCE", "MCE", "mce"),
)

_SPEARMAN_NOTE = (
    "Spearman's rho is computed with the standard formula, 1 - 6 sum d^2 / (n (n^2 - 1)) (the "
    "Pearson correlation of the ranks); the paper prints the formula with |d| instead of d^2. "
    "Kendall's tau is SciPy's tau-b."
)


# ----------------------------------------------------------------------------- JSON helpers
def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
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
class _Doc:
    """A report as a list of blocks, rendered to Markdown and to self-contained HTML."""

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
                out += [f"![{caption}]({rel})", "", f"*{caption}*", ""]
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
                path, _, caption = val
                data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
                out.append(
                    f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{e(caption)}</figcaption></figure>"
                )
            elif kind == "kv":
                out.append("<table><tbody>")
                out += [f"<tr><th>{e(str(k))}</th><td style='text-align:left'>{e(str(v))}</td></tr>"
                        for k, v in val]
                out.append("</tbody></table>")
        out.append("</body></html>")
        return "\n".join(out)


def _environment() -> list[tuple[str, Any]]:
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


# ----------------------------------------------------------------------------- single predictions
#: Bootstrap resamples and label redraws behind the report's intervals and p-values.
REPORT_RESAMPLES = 200
#: All-probability metrics over more scores than this get no interval in the report (their
#: per-resample work is N x K; adaptive ones re-sort every resample).
TRUST_MAX_ENTRIES = 2_000_000


def _trust_cells(labels, probs, spec, num_bins, n_resamples, random_state) -> list:
    import calibkit

    if not spec.max_prob and np.size(probs) > TRUST_MAX_ENTRIES:
        return [None, None, None]
    ci = calibkit.confidence_interval(labels, probs, spec, num_bins=num_bins,
                                      n_resamples=n_resamples, random_state=random_state)
    test = calibkit.calibration_test(labels, probs, spec, num_bins=num_bins,
                                     n_resamples=n_resamples, random_state=random_state)
    return [ci.low, ci.high, test.pvalue]


@renames(seed="random_state")
def named_metric_rows(labels, probs, *, num_bins: int = 15, n_resamples: int = 0,
                      random_state: int = 0) -> Table:
    """The named metrics (ECE, class-conditional ECE, SCE, ACE, TACE, RMSCE, MCE) with settings.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    probs : array_like, shape (N, K)
    num_bins : int, default 15
    n_resamples : int, default 0
        When > 0, three more columns: the 90% bootstrap interval of each metric
        (:func:`calibkit.confidence_interval`, basic method) and the p-value of the
        consistency-resampling calibration test (:func:`calibkit.calibration_test`), each with
        this many resamples and ``random_state``.
    random_state : int, default 0
        ``seed=`` before calibkit 0.2 (still accepted with a DeprecationWarning).

    Returns
    -------
    Table
        One row per metric: its value and the five GCE settings plus the bin count.

    Examples
    --------
    >>> import numpy as np
    >>> t = named_metric_rows(np.array([0, 1]), np.array([[0.8, 0.2], [0.3, 0.7]]))
    >>> t.index[:3]
    ['ECE', 'Class-conditional ECE', 'SCE']
    """
    import calibkit

    from ..binned.spec import MetricSpec

    rows = []
    for _label, key, fn in NAMED_METRIC_ORDER:
        spec = MetricSpec.from_name(key)
        value = getattr(calibkit, fn)(labels, probs, num_bins=num_bins)
        rows.append([
            float(value), spec.binning, "top-label" if spec.max_prob else "all",
            "yes" if spec.class_conditional else "no", f"{spec.threshold:g}", spec.norm, int(num_bins),
            "" if spec.index is None else spec.index,
        ])
        if n_resamples:
            rows[-1][1:1] = _trust_cells(labels, probs, spec, num_bins, n_resamples, random_state)
    extra = ["90% low", "90% high", "p (calibrated)"] if n_resamples else []
    note = "Each value equals calibkit.gce(labels, probs, <the settings in its row>)."
    if n_resamples:
        note += (f" Interval: basic bootstrap, {n_resamples} Poisson resamples "
                 f"(calibkit.confidence_interval); p: consistency-resampling test that the model "
                 f"is calibrated (calibkit.calibration_test), {n_resamples} label redraws. Blank: "
                 f"an all-probabilities metric over more than {TRUST_MAX_ENTRIES:,} scores "
                 f"(call those functions directly).")
    return Table(
        name="named_metrics",
        title=f"Named calibration metrics ({num_bins} bins)",
        index=[lab for lab, _, _ in NAMED_METRIC_ORDER],
        columns=["value", *extra, "binning", "scores", "class-conditional", "threshold", "norm",
                 "bins", "paper #"],
        data=rows,
        index_name="metric",
        floatfmt=".6f",
        note=note,
    )


def metric_space_table(labels, probs, *, num_bins: int = 15) -> Table:
    """All 32 metrics of the paper's space at one bin count, with their settings."""
    from ..binned.space import evaluate, metric_space

    sp = metric_space()
    v = evaluate(labels, probs, space=sp, num_bins=(int(num_bins),)).values[:, 0]
    return Table(
        name="metric_space",
        title=f"The 32-metric space of the paper ({num_bins} bins)",
        index=[str(s.index) for s in sp],
        columns=["value", "name", "binning", "scores", "class-conditional", "threshold", "norm"],
        data=[[float(v[i]), s.name if s.alias else "", s.binning, "top-label" if s.max_prob else "all",
               "yes" if s.class_conditional else "no", f"{s.threshold:g}", s.norm] for i, s in enumerate(sp)],
        index_name="#",
        floatfmt=".6f",
    )


def per_bin_table(labels, probs, *, num_bins: int = 15) -> Table:
    """The top-label (ECE) reliability table: one row per non-empty bin.

    Columns: lower and upper edge, count, mean confidence, accuracy, signed gap (confidence -
    accuracy, positive = over-confident: calibkit's one sign, that of ``signed_ece``) and the
    bin's contribution ``n_b / N * |gap|`` to ECE (they sum to ECE).
    """
    import calibkit

    b = calibkit.calibration_bins(labels, probs, num_bins=num_bins)
    counts = np.asarray(b.counts)[0]
    edges = np.asarray(b.edges)[0]
    conf, acc, gap = (np.asarray(a)[0] for a in (b.mean_confidence, b.accuracy, b.signed_gap))
    acc_lo, acc_hi = (np.asarray(a)[0] for a in b.accuracy_interval("clopper-pearson", 0.90))
    n = counts.sum()
    rows, index = [], []
    for j in np.flatnonzero(counts):
        hi = edges[j + 1] if j + 1 < edges.size else 1.0
        rows.append([float(edges[j]), float(hi), int(counts[j]), float(conf[j]), float(acc[j]),
                     float(acc_lo[j]), float(acc_hi[j]),
                     float(gap[j]), float(counts[j] / n * abs(gap[j]))])
        index.append(str(int(j)))
    return Table(
        name="per_bin",
        title=f"Reliability table: top-label confidence in {num_bins} equal-width bins (ECE)",
        index=index,
        columns=["lower", "upper", "count", "mean confidence", "accuracy", "accuracy low (90%)",
                 "accuracy high (90%)", "signed gap", "ECE contribution"],
        data=rows,
        index_name="bin",
        note="Bins are left-closed; a confidence of exactly 1.0 has a bin of its own (see docs/spec.md). "
             "Empty bins are omitted; the ECE contributions sum to ECE. The accuracy interval is "
             "the exact (Clopper-Pearson) 90% interval of each bin's accuracy.",
    )


def per_class_table(labels, probs, *, num_bins: int = 15) -> Table:
    """Per-class view: support, predictions, recall, precision and each class's error under
    class-conditional ECE, SCE and ACE (their class averages are the metrics)."""
    from ..binned.diagnostics import per_class_error

    y, p = validate_inputs(labels, probs)  # binary 1-D probabilities become [1 - p, p]
    k = p.shape[1]
    pred = np.argmax(p, axis=1)
    errs = {m: np.asarray(per_class_error(y, p, m, num_bins=num_bins)) for m in ("CCE", "SCE", "ACE")}
    rows = []
    for c in range(k):
        support = int(np.sum(y == c))
        npred = int(np.sum(pred == c))
        rows.append([
            support, npred,
            float(np.mean(pred[y == c] == c)) if support else float("nan"),
            float(np.mean(y[pred == c] == c)) if npred else float("nan"),
            float(np.mean(p[:, c])), float(errs["CCE"][c]), float(errs["SCE"][c]), float(errs["ACE"][c]),
        ])
    return Table(
        name="per_class",
        title=f"Per-class calibration ({num_bins} bins)",
        index=[str(c) for c in range(k)],
        columns=["support", "predicted", "recall", "precision", "mean probability",
                 "class-conditional ECE", "SCE", "ACE"],
        data=rows,
        index_name="class",
        note="Error columns: the class's term of the class-conditional metric (their mean over "
             "the classes is the metric). n/a = no example of / no prediction for the class.",
    )


def write_prediction_report(predictions, out_dir: str | Path, *, num_bins: int = 15) -> dict:
    """Write the single-file report of the ``calibkit report`` command.

    Parameters
    ----------
    predictions : Predictions
        Labels and scores (see :func:`calibkit.analysis.load_predictions`).
    out_dir : str or Path
        Created if needed. Receives report.md, report.html, results.json, named_metrics.csv,
        metric_space.csv, per_bin.csv, per_class.csv, binning_free.csv, reliability.png and
        corp_reliability.png.
    num_bins : int, default 15

    Returns
    -------
    dict of str -> Path
        Every file written, plus the tables under ``"tables"``.
    """
    from . import figures
    from .data import Predictions

    as_instance(predictions, Predictions, "predictions", "from load_predictions()")
    out = Path(as_path(out_dir, "out_dir"))
    out.mkdir(parents=True, exist_ok=True)
    # titles name the file, not the folders it sits in (the settings table keeps the path given)
    name = Path(predictions.source).name
    y, p = predictions.labels, np.asarray(predictions.probs)
    tables = [named_metric_rows(y, p, num_bins=num_bins, n_resamples=REPORT_RESAMPLES),
              per_bin_table(y, p, num_bins=num_bins),
              per_class_table(y, p, num_bins=num_bins), metric_space_table(y, p, num_bins=num_bins),
              binning_free_table(y, p)]
    files: dict[str, Any] = {}
    for t in tables:
        files[t.name] = out / f"{t.name}.csv"
        t.to_csv(files[t.name])
    files["reliability"] = figures.save(
        figures.reliability_figure(y, p, num_bins=num_bins, title=f"Reliability ({name})"),
        out / "reliability.png",
    )
    from ..plots import corp_reliability_diagram

    files["corp_reliability"] = figures.save(
        corp_reliability_diagram(y, p, n_resamples=100, title=f"CORP reliability ({predictions.source})"),
        out / "corp_reliability.png",
    )
    acc = float(np.mean(np.argmax(p, axis=1) == y))
    doc = _Doc(f"calibkit report: {name}")
    doc.kv([("predictions", predictions.source), ("scores", predictions.kind),
            ("examples", len(y)), ("classes", p.shape[1]), ("accuracy", f"{acc:.4f}"),
            ("bins", num_bins)] + _environment())
    for t in tables:
        doc.table(t, f"{t.name}.csv")
        if t.name == "per_bin":
            doc.figure(files["reliability"], "reliability.png", "Reliability diagram (top-label confidence)")
        if t.name == "binning_free":
            doc.figure(files["corp_reliability"], "corp_reliability.png",
                       "CORP reliability diagram: isotonic recalibration curve with a 90% consistency "
                       "band (outcomes redrawn from the confidences, 100 resamples)")
    files["report.md"] = out / "report.md"
    files["report.md"].write_text(doc.markdown(), encoding="utf-8")
    files["report.html"] = out / "report.html"
    files["report.html"].write_text(doc.html(), encoding="utf-8")
    files["results.json"] = out / "results.json"
    files["results.json"].write_text(json.dumps(_jsonable({
        "source": predictions.source, "kind": predictions.kind, "num_bins": num_bins,
        "accuracy": acc, "environment": dict(_environment()),
        "tables": {t.name: t.to_dict() for t in tables},
    }), indent=1), encoding="utf-8")
    files["tables"] = tables
    return files


# ----------------------------------------------------------------------------- the study report
def _write_long_values(result, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["model", "method_number", "method", "metric_index", "metric", "num_bins", "value"])
        for m in result.models:
            for mi, name in enumerate(["uncalibrated"] + list(m.methods)):
                v = m.uncalibrated if mi == 0 else m.values[mi - 1]
                for j, s in enumerate(m.space):
                    for b, nb in enumerate(m.num_bins):
                        w.writerow([m.name, "" if mi == 0 else mi - 1, name,
                                    s.index if s.index is not None else j, s.name, nb, repr(float(v[j, b]))])


def _results_json(result) -> dict:
    models = []
    for m in result.models:
        models.append({
            "name": m.name,
            "description": m.description,
            "n_validation": m.n_val,
            "n_test": int(m.labels.size),
            "num_classes": int(m.probs["uncalibrated"].shape[1]),
            "methods": list(m.methods),
            "fit_seconds": m.fit_seconds,
            "metrics": [{"index": s.index, "name": s.name, **s.kwargs()} for s in m.space],
            "num_bins": list(m.num_bins),
            "values": m.values,
            "uncalibrated": m.uncalibrated,
            "bin_sensitivity": {"spearman": m.sensitivity_spearman, "kendall": m.sensitivity_kendall,
                                "bin_counts": list(m.sweep_bins)},
            "metric_correlation": {"num_bins": m.report_bins, "spearman": m.corr_spearman,
                                   "kendall": m.corr_kendall},
            "temperature": {"fitted": m.temperature.temperatures, "test_ece": m.temperature.test_ece,
                            "test_rmsce": m.temperature.test_rmsce, "test_self": m.temperature.test_self,
                            "grid": m.temperature.curve_temperatures, "curves": m.temperature.curves},
            "class_conditionality": {
                "rows": ["ECE", "Class-conditional ECE"],
                "columns": list(m.conditionality.probs),
                "values": m.conditionality.values,
            },
            "intervals": None if m.intervals is None else {
                "metric": "ECE", "num_bins": m.report_bins, "confidence": 0.90,
                "methods": list(m.intervals.index),
                **{key: [float(row[j]) for row in m.intervals.data]
                   for j, key in enumerate(("value", "low", "high", "pvalue"))},
                "note": m.intervals.note,
            },
        })
    noise = None
    if result.label_noise is not None:
        noise = {"levels": result.label_noise.levels, "columns": result.label_noise.columns,
                 "settings": result.label_noise.settings}
    return _jsonable({
        "calibkit_version": result.version,
        "settings": result.config.to_dict(),
        "source": result.source,
        "seconds": result.seconds,
        "timings": result.timings,
        "environment": dict(_environment()),
        "models": models,
        "label_noise": noise,
        "tables": {t.name: t.to_dict() for t in result.tables()},
    })


def write_report(result, out_dir: str | Path) -> dict:
    """Write every table, figure and raw number of a study into ``out_dir``.

    Parameters
    ----------
    result : StudyResult
        From :func:`calibkit.analysis.run_study`.
    out_dir : str or Path
        Created if needed; existing files of the same names are overwritten.

    Returns
    -------
    dict
        ``"report.md"``, ``"report.html"``, ``"results.json"``, ``"metric_values.csv"`` -> Path;
        ``"figures"`` and ``"tables"`` -> lists of Paths.

    Examples
    --------
    >>> from calibkit.analysis import StudyConfig, run_study, write_report
    >>> files = write_report(run_study(config=StudyConfig.quick_config()), "out")  # doctest: +SKIP
    """
    from . import figures as F
    from .study import StudyResult

    as_instance(result, StudyResult, "result", "from run_study()")
    out = Path(as_path(out_dir, "out_dir"))
    (out / "figures").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    cfg = result.config
    tables = {t.name: t for t in result.tables()}
    table_files = []
    for t in tables.values():
        path = out / "tables" / f"{t.name}.csv"
        t.to_csv(path)
        table_files.append(path)

    def csv_of(t: Table) -> str:
        return f"tables/{t.name}.csv"

    fig_files: list[Path] = []

    def fig(obj, name: str) -> tuple[Path, str]:
        path = F.save(obj, out / "figures" / f"{name}.png")
        fig_files.append(path)
        return path, f"figures/{name}.png"

    doc = _Doc("calibkit study: measuring calibration")
    doc.p("The analysis of Nixon et al., \"Measuring Calibration in Deep Learning\", run by calibkit "
          "on the predictions below. Every number is also in results.json and the CSV files.")
    doc.h(1, "Settings")
    doc.kv([("source", result.source), ("metric space", f"the paper's {len(result.space)} metrics"),
            ("bin counts (sweep)", ", ".join(map(str, cfg.num_bins))),
            ("bin count of the headline tables", cfg.report_bins),
            ("random_state (--seed)", cfg.random_state),
            ("quick mode", cfg.quick), ("label noise", cfg.label_noise),
            ("run time", f"{result.seconds:.1f} s")] + _environment())
    doc.h(1, "Recalibration methods")
    doc.p("The eight methods of the paper, fitted on the validation split and applied to the test "
          "split; the number is the paper's method number used in the rank-order tables.")
    for m in result.models:
        t = m.methods_table()
        doc.table(t, csv_of(t))
        if m.intervals is not None:
            doc.table(m.intervals, csv_of(m.intervals))
        rel = F.reliability_figure(m.labels, m.probs["uncalibrated"], num_bins=m.report_bins,
                                   title=f"{m.name}: uncalibrated test predictions")
        rf = fig(rel, f"reliability_{m.name}")
        doc.figure(*rf, f"Reliability diagram of the uncalibrated test predictions ({m.name}).")
    doc.h(1, "Rank order of the methods under each metric")
    doc.p("Which method each of the 32 metrics ranks first to last (lower error = better rank). "
          "Columns are the paper's metric indices (4 = ECE, 0 = class-conditional ECE, 8 = SCE, "
          "24 = ACE, 26 = TACE, 21 = RMSCE). Tables at the other bin counts are in tables/.")
    for m in result.models:
        for t in (m.rank_order(), m.first_counts()):
            doc.table(t, csv_of(t))
    doc.h(1, "Agreement between metrics")
    doc.p("Rank correlation between the orderings of the methods given by every pair of metrics. "
          + _SPEARMAN_NOTE)
    for m in result.models:
        c = m.corr_spearman[np.triu_indices_from(m.corr_spearman, k=1)]
        doc.p(f"{m.name}: mean Spearman rho over metric pairs {np.nanmean(c):.4f}; "
              f"{int(np.sum(np.isnan(c)))} undefined pairs. Full matrices: "
              f"{csv_of(m.correlation_table('spearman'))}, {csv_of(m.correlation_table('kendall'))}.")
        heat = F.correlation_heatmap(
            m.corr_spearman, F.short_metric_labels(m.space),
            title=f"Spearman rho between metric orderings ({m.name}, {m.report_bins} bins)")
        f = fig(heat, f"metric_correlation_{m.name}")
        doc.figure(*f, f"Rank correlation between the 32 metrics' orderings of the methods ({m.name}).")
    doc.h(1, "Binning-free estimators")
    doc.p("Smooth ECE (Blasiok & Nakkiran 2023), the KS calibration error (Gupta et al. 2021) and "
          "the CORP Brier decomposition (Dimitriadis et al. 2021) need no bins. The second table "
          "of each model: Spearman rho between each binned metric's ordering of the methods and "
          "the ordering by smooth ECE and by KS.")
    for m in result.models:
        for t in binning_free_study_tables(m):
            doc.table(t, csv_of(t))
    doc.h(1, "Sensitivity to the number of bins")
    doc.p("For each metric, the methods are ordered at every bin count of the sweep and the rank "
          "correlation is averaged over all pairs of bin counts; the table averages that over the "
          "metrics sharing each property value (the paper's rank-correlation table).")
    t = result.bin_sensitivity_table()
    doc.table(t, csv_of(t))
    bars = F.bin_sensitivity_figure(
        {m.name: m.sensitivity_spearman for m in result.models}, result.models[0].metric_labels(),
        [s.binning for s in result.space],
        title="Bin sensitivity per metric (mean Spearman rho across bin-count pairs)")
    f = fig(bars, "bin_sensitivity")
    doc.figure(*f, "Bin sensitivity of each metric; per-metric numbers in "
                   "tables/bin_sensitivity_per_metric_*.csv.")
    doc.h(1, "Optimising temperature for each metric")
    doc.p("A temperature is fitted on validation to minimise each metric, then the test split is "
          "scored with ECE (and RMSCE, the paper's control). Rows average over the metrics with the "
          "property value (the paper's optimisation table).")
    t = result.temperature_table()
    doc.table(t, csv_of(t))
    for m in result.models:
        tr = m.temperature
        named = [k for _, k, _ in NAMED_METRIC_ORDER[:6]]
        tfig, _ = F.temperature_figure(
            m.labels, m.logits, tr.curve_temperatures, named, num_bins=m.report_bins,
            title=f"Calibration error vs temperature ({m.name}, test, {m.report_bins} bins)")
        f = fig(tfig, f"temperature_curves_{m.name}")
        doc.figure(*f, f"Calibration error vs temperature on the test split ({m.name}); each curve's "
                       "minimum is marked, the NLL on the right axis. All 32 curves: results.json.")
        doc.p(f"Per-metric temperatures: {csv_of(tr.per_metric_table())}.")
    doc.h(1, "Class conditionality")
    for m in result.models:
        t = m.conditionality.table()
        doc.table(t, csv_of(t))
    if result.label_noise is not None:
        doc.h(1, "Label noise")
        ln = result.label_noise
        t = ln.table()
        doc.table(t, csv_of(t))
        f = fig(F.label_noise_figure(ln.levels, ln.columns, threshold=ln.settings["importance_threshold"]),
                "label_noise")
        doc.figure(*f, "Calibration errors, the fraction of important predictions ECE ignores, and "
                       "accuracy / mean max confidence as label noise grows.")
    doc.h(1, "Files")
    doc.p("results.json (every raw number, NaN as null), metric_values.csv (every metric x bin count "
          "x method, long format), tables/*.csv (every table at full precision), figures/*.png.")

    files: dict[str, Any] = {"figures": fig_files, "tables": table_files}
    files["metric_values.csv"] = out / "metric_values.csv"
    _write_long_values(result, files["metric_values.csv"])
    files["results.json"] = out / "results.json"
    files["results.json"].write_text(json.dumps(_results_json(result), indent=1), encoding="utf-8")
    files["report.md"] = out / "report.md"
    files["report.md"].write_text(doc.markdown(), encoding="utf-8")
    files["report.html"] = out / "report.html"
    files["report.html"].write_text(doc.html(), encoding="utf-8")
    return files
