"""Writing the study's report: report.md, a self-contained report.html, PNG, CSV and JSON.

:func:`write_report` lays out a :class:`~calibkit.analysis.study.StudyResult` in an output folder::

    out/
      report.md          every table and figure, settings and package version
      report.html        the same, self-contained (figures embedded as base64 PNG)
      results.json       every raw number (NaN written as null)
      figures/*.png      (or .pdf / .svg: figure_format=)
      tables/*.csv       one CSV per table, at full precision
      metric_values.csv  long format: model, method, metric, num_bins, value

:func:`write_prediction_report` (:mod:`.prediction_report`, re-exported here) does the same for
one file of predictions (the ``calibkit report`` command); the documents themselves are
:mod:`.document`'s.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from .._params import as_choice, as_instance, as_path
from .binning_free import binning_free_study_tables
from .document import Document, environment, jsonable
from .prediction_report import (
    FULL_MATRIX_METRICS,
    NAMED_METRIC_ORDER,
    metric_space_table,
    named_metric_rows,
    not_computable_line,
    per_bin_table,
    per_class_table,
    toplabel_metric_rows,
    toplabel_missing,
    write_prediction_report,
)
from .tables import Table

__all__ = [
    "write_report",
    "write_prediction_report",
    "named_metric_rows",
    "metric_space_table",
    "per_bin_table",
    "per_class_table",
    "toplabel_metric_rows",
    "toplabel_missing",
    "not_computable_line",
    "NAMED_METRIC_ORDER",
    "FULL_MATRIX_METRICS",
]

_SPEARMAN_NOTE = (
    "Spearman's rho is computed with the standard formula, 1 - 6 sum d^2 / (n (n^2 - 1)) (the "
    "Pearson correlation of the ranks); the paper prints the formula with |d| instead of d^2. "
    "Kendall's tau is SciPy's tau-b."
)


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
                   for j, key in enumerate(("value", "bias_corrected", "low", "high", "pvalue"))},
                "note": m.intervals.note,
            },
        })
    noise = None
    if result.label_noise is not None:
        noise = {"levels": result.label_noise.levels, "columns": result.label_noise.columns,
                 "settings": result.label_noise.settings}
    return jsonable({
        "calibkit_version": result.version,
        "settings": result.config.to_dict(),
        "source": result.source,
        "seconds": result.seconds,
        "timings": result.timings,
        "environment": dict(environment()),
        "models": models,
        "label_noise": noise,
        "tables": {t.name: t.to_dict() for t in result.tables()},
    })


def write_report(result, out_dir: str | Path, *, figure_format: str = "png") -> dict:
    """Write every table, figure and raw number of a study into ``out_dir``.

    Parameters
    ----------
    result : StudyResult
        From :func:`calibkit.analysis.run_study`.
    out_dir : str or Path
        Created if needed; existing files of the same names are overwritten.
    figure_format : {"png", "pdf", "svg"}, default "png"
        PNG at 300 dpi; PDF and SVG are vector figures (``--figure-format``).

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
    fmt = as_choice(figure_format, "figure_format", F.FORMATS)
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
        path = F.save(obj, out / "figures" / f"{name}.{fmt}")
        fig_files.append(path)
        return path, f"figures/{name}.{fmt}"

    doc = Document("calibkit study: measuring calibration")
    doc.p("The analysis of Nixon et al., \"Measuring Calibration in Deep Learning\", run by calibkit "
          "on the predictions below. Every number is also in results.json and the CSV files.")
    doc.h(1, "Settings")
    doc.kv([("source", result.source), ("metric space", f"the paper's {len(result.space)} metrics"),
            ("bin counts (sweep)", ", ".join(map(str, cfg.num_bins))),
            ("bin count of the headline tables", cfg.report_bins),
            ("random_state (--seed)", cfg.random_state),
            ("quick mode", cfg.quick), ("label noise", cfg.label_noise),
            ("run time", f"{result.seconds:.1f} s")] + environment())
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
          f"x method, long format), tables/*.csv (every table at full precision), figures/*.{fmt}.")

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
