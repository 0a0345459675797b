"""The report of one file of predictions (``calibkit report``): the named metrics with their
settings, intervals and p-values, the per-bin and per-class tables, the 32-metric table, the
binning-free estimators and the reliability figures, for a full score matrix or a top-label
file alike (:func:`write_prediction_report`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from .._params import as_choice, as_instance, as_path, renames
from .._validate import validate_inputs
from .binning_free import binning_free_table
from .document import Document, environment, jsonable
from .tables import Table
from .trust_table import INTERVAL_COLUMNS, interval_cells, interval_note

__all__ = [
    "write_prediction_report",
    "named_metric_rows",
    "toplabel_metric_rows",
    "metric_space_table",
    "per_bin_table",
    "per_class_table",
    "toplabel_missing",
    "not_computable_line",
    "NAMED_METRIC_ORDER",
    "FULL_MATRIX_METRICS",
    "REPORT_RESAMPLES",
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


# ----------------------------------------------------------------------------- single predictions
#: Bootstrap resamples and label redraws behind the report's intervals and p-values.
REPORT_RESAMPLES = 200
#: All-probability metrics over more scores than this get no interval in the report (their
#: per-resample work is N x K; adaptive ones re-sort every resample).
TRUST_MAX_ENTRIES = 2_000_000
#: Metrics that need every class's probability (not computable from top-label files).
FULL_MATRIX_METRICS = ("SCE", "ACE", "TACE")


def _trust_cells(data: dict, spec, num_bins, n_resamples, random_state, progress) -> list:
    """The interval columns after ``value`` (:data:`INTERVAL_COLUMNS`) of one metric."""
    import calibkit

    if not spec.max_prob and np.size(data.get("probs", ())) > TRUST_MAX_ENTRIES:
        return [None, None, None, None]
    ci = calibkit.confidence_interval(**data, metric=spec, num_bins=num_bins,
                                      n_resamples=n_resamples, random_state=random_state,
                                      progress=progress)
    test = calibkit.calibration_test(**data, metric=spec, num_bins=num_bins,
                                     n_resamples=n_resamples, random_state=random_state,
                                     progress=progress)
    return interval_cells(ci, test)[1:]


def _metric_table(metrics, *, num_bins, n_resamples, random_state, progress, title, note,
                  paper_column=True) -> Table:
    """The named-metric table of one set of predictions: a row per (label, spec, value,
    data), its settings, and with ``n_resamples`` the interval columns."""
    rows = []
    for _label, spec, value, data in metrics:
        row = [float(value), spec.binning, "top-label" if spec.max_prob else "all",
               "yes" if spec.class_conditional else "no", f"{spec.threshold:g}", spec.norm,
               int(num_bins)]
        if paper_column:
            row.append("" if spec.index is None else spec.index)
        if n_resamples:
            row[1:1] = _trust_cells(data, spec, num_bins, n_resamples, random_state, progress)
        rows.append(row)
    if n_resamples:
        note += (" " + interval_note(n_resamples, random_state) + f" Blank: an all-probabilities "
                 f"metric over more than {TRUST_MAX_ENTRIES:,} scores (call those functions "
                 f"directly).")
    return Table(
        name="named_metrics",
        title=title,
        index=[m[0] for m in metrics],
        columns=[*(INTERVAL_COLUMNS if n_resamples else ("value",)), "binning", "scores",
                 "class-conditional", "threshold", "norm", "bins"]
        + (["paper #"] if paper_column else []),
        data=rows,
        index_name="metric",
        floatfmt=".6f",
        note=note,
    )


@renames(seed="random_state")
def named_metric_rows(labels, probs, *, num_bins: int = 15, n_resamples: int = 0,
                      random_state: int = 0, progress=False) -> Table:
    """The named metrics (ECE, class-conditional ECE, SCE, ACE, TACE, RMSCE, MCE) with settings.

    Parameters
    ----------
    labels : array_like of int, shape (N,)
    probs : array_like, shape (N, K)
    num_bins : int, default 15
    n_resamples : int, default 0
        When > 0, four more columns (:data:`calibkit.analysis.trust_table.INTERVAL_COLUMNS`):
        each metric's bias-corrected estimate with its 90% bootstrap interval around it
        (:func:`calibkit.confidence_interval`, basic method) and the p-value of the
        consistency-resampling calibration test (:func:`calibkit.calibration_test`), each with
        this many resamples and ``random_state``.
    random_state : int, default 0
        ``seed=`` before calibkit 0.2 (still accepted with a DeprecationWarning).
    progress : bool or None, default False
        Progress bars of the resamplings (:mod:`calibkit._progress`).

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

    data = {"labels": labels, "probs": probs}
    metrics = [(label, MetricSpec.from_name(key),
                getattr(calibkit, fn)(labels, probs, num_bins=num_bins), data)
               for label, key, fn in NAMED_METRIC_ORDER]
    return _metric_table(
        metrics, num_bins=num_bins, n_resamples=n_resamples, random_state=random_state,
        progress=progress, title=f"Named calibration metrics ({num_bins} bins)",
        note="Each value equals calibkit.gce(labels, probs, <the settings in its row>).")


def toplabel_metric_rows(top, *, num_bins: int = 15, n_resamples: int = 0,
                         random_state: int = 0, progress=False) -> Table:
    """The top-label metrics of a top-label file (a
    :class:`calibkit.io.toplabel.TopLabelPredictions`): ECE, class-conditional ECE (when the
    predicted classes are known), RMSCE, MCE and top-label adaptive ECE, with the same interval
    columns as :func:`named_metric_rows`.

    Computed through calibkit's top-label API (``confidence=``, ``correct=``, ``predicted=``,
    ``num_classes=``).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.io import TopLabelPredictions
    >>> top = TopLabelPredictions(np.array([0.9, 0.6, 0.8]), np.array([True, False, True]),
    ...                           None, None, "t.csv")
    >>> toplabel_metric_rows(top).index
    ['ECE', 'RMSCE', 'MCE', 'Top-label adaptive ECE']
    """
    import calibkit

    from ..binned.spec import MetricSpec

    base = {"confidence": top.confidence, "correct": top.correct}
    cc = dict(base, predicted=top.predicted, num_classes=top.num_classes)
    metrics = [("ECE", MetricSpec.from_name("ECE"), calibkit.ece(**base, num_bins=num_bins), base)]
    if top.predicted is not None and top.num_classes is not None:
        metrics.append(("Class-conditional ECE", MetricSpec.from_name("CCE"),
                        calibkit.cce(**cc, num_bins=num_bins), cc))
    adaptive = MetricSpec("adaptive", True, False, 0.0, "l1")
    metrics += [
        ("RMSCE", MetricSpec.from_name("RMSCE"), calibkit.rmsce(**base, num_bins=num_bins), base),
        ("MCE", MetricSpec.from_name("MCE"), calibkit.mce(**base, num_bins=num_bins), base),
        ("Top-label adaptive ECE", adaptive,
         calibkit.gce(**base, binning="adaptive", num_bins=num_bins), base),
    ]
    return _metric_table(
        metrics, num_bins=num_bins, n_resamples=n_resamples, random_state=random_state,
        progress=progress, title=f"Top-label calibration metrics ({num_bins} bins)",
        note="Each value equals calibkit.gce(confidence=..., correct=..., <the settings in its "
             "row>).", paper_column=False)


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


def per_bin_table(labels=None, probs=None, *, num_bins: int = 15, confidence=None,
                  correct=None) -> Table:
    """The top-label (ECE) reliability table: one row per non-empty bin.

    Columns: lower and upper edge, count, mean confidence, accuracy, signed gap (confidence -
    accuracy, positive = over-confident: calibkit's one sign, that of ``signed_ece``) and the
    bin's contribution ``n_b / N * |gap|`` to ECE (they sum to ECE). Top-label input
    (``confidence=``, ``correct=``) in place of ``labels`` and ``probs``, as for
    :func:`calibkit.calibration_bins`.
    """
    import calibkit

    b = calibkit.calibration_bins(labels, probs, num_bins=num_bins, confidence=confidence,
                                  correct=correct)
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


def write_prediction_report(predictions, out_dir: str | Path, *, num_bins: int = 15,
                            random_state: int = 0, figure_format: str = "png",
                            progress=False) -> dict:
    """Write the single-file report of the ``calibkit report`` command, for a full score
    matrix or a top-label file alike.

    Parameters
    ----------
    predictions : Predictions or TopLabelPredictions
        Labels and scores (see :func:`calibkit.io.read_predictions`), or one confidence per
        prediction and whether it was right (a top-label file).
    out_dir : str or Path
        Created if needed. Receives report.md, report.html, results.json, named_metrics.csv,
        per_bin.csv, binning_free.csv (and for a matrix per_class.csv and metric_space.csv),
        and the figures reliability and corp_reliability.
    num_bins : int, default 15
    random_state : int, default 0
        Seed of the intervals' resamples and the tests' label redraws (``--seed``).
    figure_format : {"png", "pdf", "svg"}, default "png"
        PNG at 300 dpi; PDF and SVG are vector figures.
    progress : bool or None, default False
        Progress bars of the resamplings (:mod:`calibkit._progress`).

    Returns
    -------
    dict of str -> Path
        Every file written, plus the tables under ``"tables"`` and the accuracy (a float)
        under ``"accuracy"``.
    """
    from . import figures
    from .data import Predictions

    top = _as_toplabel(predictions)
    if top is None:
        as_instance(predictions, Predictions, "predictions",
                    "from read_predictions() (Predictions or TopLabelPredictions)")
    fmt = as_choice(figure_format, "figure_format", figures.FORMATS)
    out = Path(as_path(out_dir, "out_dir"))
    out.mkdir(parents=True, exist_ok=True)
    # titles name the file, not the folders it sits in (the settings table keeps the path given)
    name = Path(predictions.source).name
    trust = {"num_bins": num_bins, "n_resamples": REPORT_RESAMPLES, "random_state": random_state,
             "progress": progress}
    if top is None:
        y, p = predictions.labels, np.asarray(predictions.probs)
        data: dict[str, Any] = {"labels": y, "probs": p}
        tables = [named_metric_rows(y, p, **trust), per_bin_table(y, p, num_bins=num_bins),
                  per_class_table(y, p, num_bins=num_bins),
                  metric_space_table(y, p, num_bins=num_bins), binning_free_table(y, p)]
        acc = float(np.mean(np.argmax(p, axis=1) == y))
        settings = [("predictions", predictions.source), ("scores", predictions.kind),
                    ("examples", len(y)), ("classes", p.shape[1])]
        missing: list[str] = []
    else:
        data = {"confidence": top.confidence, "correct": top.correct}
        tables = [toplabel_metric_rows(top, **trust), per_bin_table(**data, num_bins=num_bins),
                  binning_free_table(**data)]
        acc = float(np.mean(top.correct))
        settings = [("predictions", predictions.source),
                    ("scores", "top-label confidence and correctness"),
                    ("examples", len(top)), ("classes", top.num_classes or "not given")]
        missing = toplabel_missing(top)
    files: dict[str, Any] = {}
    for t in tables:
        files[t.name] = out / f"{t.name}.csv"
        t.to_csv(files[t.name])
    rel = f"reliability.{fmt}"
    files["reliability"] = figures.save(
        figures.reliability_figure(**data, num_bins=num_bins, title=f"Reliability ({name})"),
        out / rel)
    from ..plots import corp_reliability_diagram

    corp = f"corp_reliability.{fmt}"
    files["corp_reliability"] = figures.save(
        corp_reliability_diagram(**data, n_resamples=100, title=f"CORP reliability ({name})"),
        out / corp)
    doc = Document(f"calibkit report: {name}")
    doc.kv(settings + [("accuracy", f"{acc:.4f}"), ("bins", num_bins),
                       ("random_state (--seed)", random_state)] + environment())
    if missing:
        doc.p(not_computable_line(missing))
    for t in tables:
        doc.table(t, f"{t.name}.csv")
        if t.name == "per_bin":
            doc.figure(files["reliability"], rel, "Reliability diagram (top-label confidence)")
        if t.name == "binning_free":
            doc.figure(files["corp_reliability"], corp,
                       "CORP reliability diagram: isotonic recalibration curve with a 90% consistency "
                       "band (outcomes redrawn from the confidences, 100 resamples)")
    files["report.md"] = out / "report.md"
    files["report.md"].write_text(doc.markdown(), encoding="utf-8")
    files["report.html"] = out / "report.html"
    files["report.html"].write_text(doc.html(), encoding="utf-8")
    files["results.json"] = out / "results.json"
    files["results.json"].write_text(json.dumps(jsonable({
        "source": predictions.source, "input": "matrix" if top is None else "top-label",
        "kind": getattr(predictions, "kind", None), "num_bins": num_bins,
        "random_state": random_state, "accuracy": acc, "not_computable": missing,
        "environment": dict(environment()),
        "tables": {t.name: t.to_dict() for t in tables},
    }), indent=1), encoding="utf-8")
    files["tables"] = tables
    files["accuracy"] = acc
    return files


def _as_toplabel(predictions):
    from ..io import TopLabelPredictions

    return predictions if isinstance(predictions, TopLabelPredictions) else None


def toplabel_missing(top) -> list[str]:
    """What a top-label file cannot give: the metrics that need the full matrix."""
    missing = list(FULL_MATRIX_METRICS)
    if top.predicted is None:
        missing.insert(0, "class-conditional ECE (needs the predicted classes: a 'pred' column)")
    return missing


def not_computable_line(missing) -> str:
    """The line saying which metrics a top-label file cannot give, and why."""
    return (f"Not computable from top-label data: {', '.join(missing)}: they need every class's "
            "probability (the full (N, K) matrix).")
