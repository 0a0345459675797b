"""The ``calibkit`` command.

``calibkit``
    Train a small softmax regression on scikit-learn's digits and print the named calibration
    metrics and the paper's 32-metric table for its test predictions (a few seconds).
``calibkit report PREDICTIONS``
    Named metrics with their settings, per-bin and per-class tables and a reliability diagram for
    one file of predictions (.npz, .npy or .csv).
``calibkit study``
    The paper's whole analysis (eight recalibration methods, 32 metrics x bin counts, rank
    orders, rank correlations, bin sensitivity, temperature optimisation, class conditionality,
    label noise) on the bundled default or on your validation / test logits; writes report.md,
    report.html, figures, CSV and JSON.

Exit status: 0 on success, 2 on a usage error or unusable input (the message on stderr names the
problem), 1 on an unexpected internal error.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "build_parser"]

_EPILOG = """\
examples:
  calibkit                                   # metrics of a small model trained on digits
  calibkit report preds.npz                  # arrays 'logits' or 'probs', and 'labels'
  calibkit report scores.npy --labels y.npy --logits
  calibkit report preds.csv --label-column target
  calibkit report out.npz --scores-key arr_0 --labels-key arr_1 --logits
  calibkit report hollance__ImageNet_torchvision__resnet101.npz   # labels, pred, confidence
  calibkit study --quick --out study-out     # the whole analysis, reduced setting
  calibkit study --test ../shared/data/kangsepp__densenet40_c10.npz --out densenet
  calibkit study --val val.npz --test test.npz --seed 1

exit status: 0 success; 2 bad arguments or unusable input files (message on stderr).
"""


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _seed(text: str) -> int:
    """A seed of the analysis, by its one rule (``calibkit._params.as_study_seed``)."""
    from ._params import MAX_SEED, as_study_seed
    from .errors import CalibkitError

    try:
        return as_study_seed(int(text))
    except (ValueError, CalibkitError):
        raise argparse.ArgumentTypeError(f"expected an integer in [0, {MAX_SEED}], got {text!r}") from None


def _fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {v}")
    return v


def _threshold(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}") from None
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {v}")
    return v


def _add_kind(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--logits", dest="kind", action="store_const", const="logits",
                   help="the scores are logits (softmax is applied); default: read from the array, "
                        "file or column name ('logits' / 'probs')")
    g.add_argument("--probs", dest="kind", action="store_const", const="probs",
                   help="the scores are probabilities (rows summing to 1)")


def _add_common(p: argparse.ArgumentParser, *, seed: bool = True) -> None:
    if seed:
        p.add_argument("--seed", type=_seed, default=0, metavar="N",
                       help="random seed: data split, model training, recalibration methods, label "
                            "noise (default: 0); the same seed reproduces the same numbers. The "
                            "Python API calls it random_state= (StudyConfig, default_models, ...)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no informational messages (results are still printed)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``calibkit`` command (all options documented in ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="calibkit",
        description=textwrap.fill(
            "Measure calibration the way Nixon et al. ('Measuring Calibration in Deep Learning') "
            "do. Without a subcommand: train a small softmax regression on scikit-learn's digits "
            "and print the named metrics (ECE, class-conditional ECE, SCE, ACE, TACE, RMSCE, MCE) "
            "and the 32-metric table for its test predictions."
        , width=78),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", choices=["softmax-regression", "mlp"], default="softmax-regression",
                        help="default job only: which small model to train on digits "
                             "(default: softmax-regression)")
    parser.add_argument("--num-bins", type=_positive_int, default=15, metavar="B",
                        help="default job only: number of bins of every metric (default: 15)")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"calibkit {__version__}",
                        help="print the version and exit")
    _add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="{report,study}")

    rp = sub.add_parser(
        "report",
        help="metrics, per-bin and per-class tables and a reliability diagram for one predictions file",
        description=textwrap.fill(
            "Print the named calibration metrics with their settings for one file of predictions "
            "and write the per-bin (reliability) and per-class tables, the 32-metric table and a "
            "reliability diagram (report.md, report.html, CSV, JSON, PNG) to --out."
        , width=78),
        epilog=(
            "file formats:\n"
            "  .npz  arrays 'logits' or 'probs' (N, K) and 'labels' (N,), or name them with\n"
            "        --scores-key / --labels-key (numpy.savez(f, scores, y): arr_0, arr_1 are\n"
            "        found as a pair); --split val reads 'val_logits'/'val_probs', 'val_labels'\n"
            "  .npy  the scores; labels from --labels or a sibling file (logits.npy ->\n"
            "        labels.npy, x.npy -> x_labels.npy, or labels.npy)\n"
            "  .csv  one row per example, header optional, comma-separated (';', tab, '|' are\n"
            "        recognised and said): a label column ('label', 'y', 'target', ... or\n"
            "        --label-column; else the first column) and score columns (--score-columns;\n"
            "        else all the others). Class names as labels are mapped to the score\n"
            "        columns named after them (the mapping is printed).\n"
            "  top-label files (.npz or .csv): 'confidence' + 'correct' (0/1, true/false), or\n"
            "        'labels' + 'pred' + 'confidence' (model-zoo records): the top-label\n"
            "        metrics (ECE, RMSCE, MCE, top-label adaptive ECE; class-conditional ECE when\n"
            "        'pred' is there); SCE, ACE and TACE need the full probability matrix.\n"
            "kind of scores: --logits / --probs (for whichever array or columns are read);\n"
            "  else the array, file or column name ('logit' / 'prob' in it); else the values\n"
            "  (valid probabilities are read as such, anything else asks for --logits).\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rp.add_argument("predictions", metavar="PREDICTIONS",
                    help="the predictions file: .npz, .npy or .csv (see below)")
    rp.add_argument("--labels", metavar="FILE", default=None,
                    help="labels file (.npy or one-column .csv) for .npy scores")
    _add_kind(rp)
    rp.add_argument("--split", choices=["test", "val"], default="test",
                    help="which split of an .npz to read: plain arrays (test, default) or val_* arrays")
    rp.add_argument("--label-column", metavar="COL", default=None,
                    help="CSV only: name or 0-based position of the label column")
    rp.add_argument("--score-columns", metavar="COLS", default=None,
                    help="CSV only: the score columns, names or 0-based positions separated by "
                         "commas (default: every column but the label column)")
    rp.add_argument("--scores-key", metavar="NAME", default=None,
                    help=".npz only: the array holding the scores (logits or probabilities)")
    rp.add_argument("--labels-key", metavar="NAME", default=None,
                    help=".npz only: the array holding the labels (class indices)")
    rp.add_argument("--num-classes", type=_positive_int, default=None, metavar="K",
                    help="top-label files only: number of classes for class-conditional ECE "
                         "(default: largest class index + 1)")
    rp.add_argument("--num-bins", type=_positive_int, default=15, metavar="B",
                    help="number of bins of every metric and of the tables (default: 15)")
    rp.add_argument("--out", metavar="DIR", default="calibkit-report",
                    help="folder for the tables, figure and report (default: ./calibkit-report)")
    _add_common(rp, seed=False)

    sp = sub.add_parser(
        "study",
        help="the paper's whole analysis on the bundled default or your validation/test logits",
        description=textwrap.fill(
            "Run the paper's analysis: fit the eight recalibration methods on the validation "
            "split and apply them to the test split; compute all 32 metrics at every bin count; "
            "rank-order tables; Spearman / Kendall rank correlation between metric orderings; bin "
            "sensitivity by property; temperature optimised for each metric and scored with ECE; "
            "histogram binning vs class-conditional histogram binning; label noise. Without "
            "--test it runs on small models trained on scikit-learn's digits. Writes report.md, "
            "report.html, figures/*.png, tables/*.csv, metric_values.csv and results.json to --out."
        , width=78),
        epilog=(
            "input: --test FILE alone reads both splits from one .npz holding logits/labels and\n"
            "val_logits/val_labels (e.g. kangsepp__densenet40_c10.npz); otherwise give --val and\n"
            "--test (any format of 'calibkit report'). Probabilities are accepted: the scaling\n"
            "methods then work on their logarithm.\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("--val", metavar="FILE", default=None,
                    help="validation predictions (the recalibration methods are fitted on them)")
    sp.add_argument("--test", metavar="FILE", default=None,
                    help="test predictions (scored); may also hold the val_* arrays")
    sp.add_argument("--val-labels", metavar="FILE", default=None, help="labels for .npy --val scores")
    sp.add_argument("--test-labels", metavar="FILE", default=None, help="labels for .npy --test scores")
    _add_kind(sp)
    sp.add_argument("--name", default=None, help="model name used in the report (default: the file name)")
    sp.add_argument("--out", metavar="DIR", default="calibkit-study",
                    help="folder for everything the study writes (default: ./calibkit-study)")
    sp.add_argument("--quick", action="store_true",
                    help="reduced setting for CI: bin counts 10/30/50, 3 noise levels, 21 "
                         "temperatures, 2 Nelder-Mead starts per temperature fit, only the softmax "
                         "regression on the default data")
    sp.add_argument("--num-bins", type=_positive_int, nargs="+", default=None, metavar="B",
                    help="bin counts of the sweep (default: 10 20 30 40 50; --quick: 10 30 50)")
    sp.add_argument("--report-bins", type=_positive_int, default=15, metavar="B",
                    help="bin count of the headline tables (rank order, correlations, temperature, "
                         "class conditionality, label noise; default: 15)")
    ln = sp.add_mutually_exclusive_group()
    ln.add_argument("--label-noise", dest="label_noise", action="store_true", default=None,
                    help="run the label-noise experiment (digits softmax regression) even with --test")
    ln.add_argument("--no-label-noise", dest="label_noise", action="store_false",
                    help="skip the label-noise experiment")
    sp.add_argument("--noise-levels", type=_positive_int, default=None, metavar="N",
                    help="number of label-noise levels from 0 to --max-noise (default: 11; --quick: 3)")
    sp.add_argument("--max-noise", type=_fraction, default=0.05, metavar="P",
                    help="highest label-noise level, a fraction of training labels (default: 0.05)")
    sp.add_argument("--importance-threshold", type=_threshold, default=0.1, metavar="P",
                    help="probability above which a prediction is 'important' in the label-noise "
                         "experiment (default: 0.1)")
    _add_common(sp)
    return parser


def _progress_enabled(args) -> bool:
    return not args.quiet and sys.stderr.isatty()


def _info(args, msg: str) -> None:
    if not args.quiet:
        print(msg, file=sys.stderr)


def _cmd_default(args) -> int:
    from .analysis.digits import default_models
    from .analysis.report import metric_space_table, named_metric_rows

    t0 = time.perf_counter()
    model = default_models(args.seed, [args.model])[0]
    y, p = model.test.labels, model.test.probs
    acc = float((p.argmax(axis=1) == y).mean())
    print(f"{model.description}: {len(y)} test digits, accuracy {acc:.4f}\n")
    print(named_metric_rows(y, p, num_bins=args.num_bins).to_text())
    print()
    print(f"The paper's 32-metric space ({args.num_bins} bins; index = 16*adaptive + 8*all probs + "
          "4*unconditional + 2*threshold 0.01 + l2):")
    print(metric_space_table(y, p, num_bins=args.num_bins).to_text())
    _info(args, f"\n({time.perf_counter() - t0:.1f} s; 'calibkit study' runs the paper's whole "
                "analysis, 'calibkit --help' lists everything)")
    return 0


def _cmd_report(args) -> int:
    import numpy as np

    from .analysis.report import write_prediction_report
    from .io.predictions import TopLabelPredictions, read_predictions

    t0 = time.perf_counter()
    pred, notes = read_predictions(
        args.predictions, kind=args.kind, labels=args.labels, split=args.split,
        label_column=args.label_column, score_columns=args.score_columns,
        scores_key=args.scores_key, labels_key=args.labels_key, num_classes=args.num_classes,
        top_label=True)
    for note in notes:
        _info(args, f"note: {note}")
    if isinstance(pred, TopLabelPredictions):
        return _report_toplabel(args, pred, t0)
    files = write_prediction_report(pred, args.out, num_bins=args.num_bins)
    tables = {t.name: t for t in files["tables"]}
    p = pred.probs
    acc = float(np.mean(np.argmax(p, axis=1) == pred.labels))
    print(f"{pred.source}: {len(pred)} examples, {pred.num_classes} classes, {pred.kind}, "
          f"accuracy {acc:.4f}\n")
    print(tables["named_metrics"].title)
    print(tables["named_metrics"].to_text())
    print()
    print(tables["binning_free"].title)
    print(tables["binning_free"].to_text())
    _info(args, f"\nwrote {args.out}/: report.md, report.html, results.json, "
                "named_metrics.csv, per_bin.csv, per_class.csv, metric_space.csv, binning_free.csv, "
                f"reliability.png, corp_reliability.png ({time.perf_counter() - t0:.1f} s)")
    return 0


def _report_toplabel(args, top, t0: float) -> int:
    """``calibkit report`` on a top-label file: the metrics its (confidence, correct) allow."""
    import json
    from pathlib import Path

    table = toplabel_metric_rows(top, num_bins=args.num_bins)
    acc = float(top.correct.mean())
    classes = f", {top.num_classes} classes" if top.num_classes else ""
    print(f"{top.source}: {len(top)} predictions (top-label confidence and correctness{classes}), "
          f"accuracy {acc:.4f}\n")
    print(table.title)
    print(table.to_text())
    missing = list(FULL_MATRIX_METRICS)
    if top.predicted is None:
        missing.insert(0, "class-conditional ECE (needs the predicted classes: a 'pred' column)")
    print(f"\nNot computable from top-label data: {', '.join(missing)}: they need every class's "
          "probability (the full (N, K) matrix).")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "named_metrics.csv")
    (out / "results.json").write_text(json.dumps({
        "source": Path(top.source).name, "input": "top-label", "num_bins": args.num_bins,
        "accuracy": acc, "num_classes": top.num_classes, "not_computable": missing,
        "tables": {"named_metrics": table.to_dict()},
    }, indent=1), encoding="utf-8")
    written = ["named_metrics.csv", "results.json"]
    try:
        from .analysis import figures
        from .plots import reliability_diagram

        fig = reliability_diagram(confidence=top.confidence, correct=top.correct,
                                  num_bins=args.num_bins,
                                  title=f"Reliability ({Path(top.source).name})")
        figures.save(fig, out / "reliability.png")
        written.append("reliability.png")
    except ImportError:
        _info(args, "note: matplotlib is not installed: no reliability.png")
    _info(args, f"\nwrote {args.out}/: {', '.join(written)} ({time.perf_counter() - t0:.1f} s)")
    return 0


#: Metrics that need every class's probability (not computable from top-label files).
FULL_MATRIX_METRICS = ("SCE", "ACE", "TACE")


def toplabel_metric_rows(top, *, num_bins: int = 15):
    """The top-label metrics of a top-label file (a
    :class:`calibkit.io.toplabel.TopLabelPredictions`), as a
    :class:`calibkit.analysis.tables.Table`.

    Computed through calibkit's top-label API (``confidence=``, ``correct=``, ``predicted=``,
    ``num_classes=``); class-conditional ECE only when the predictions are known.
    """
    import calibkit

    from .analysis.tables import Table

    base: dict[str, Any] = {"confidence": top.confidence, "correct": top.correct,
                            "num_bins": num_bins}
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


def _cmd_study(args) -> int:
    from .analysis.data import load_val_test
    from .analysis.report import write_report
    from .analysis.study import StudyConfig, run_study

    t0 = time.perf_counter()
    if args.val is not None and args.test is None:
        raise _UsageError("--val needs --test (the split the recalibrated outputs are scored on)")
    overrides = {"random_state": args.seed, "report_bins": args.report_bins, "max_noise": args.max_noise,
                 "importance_threshold": args.importance_threshold, "label_noise": args.label_noise}
    if args.num_bins is not None:
        overrides["num_bins"] = tuple(args.num_bins)
    if args.noise_levels is not None:
        overrides["noise_levels"] = args.noise_levels
    try:
        cfg = StudyConfig.quick_config(**overrides) if args.quick else StudyConfig(**overrides)
    except ValueError as exc:
        raise _UsageError(str(exc)) from exc
    models = None
    if args.test is not None:
        from .io import PredictionFileError

        try:
            models = load_val_test(args.val, args.test, kind=args.kind,
                                   val_labels=args.val_labels, test_labels=args.test_labels,
                                   name=args.name)
        except PredictionFileError as exc:  # the study's flags for labels files
            raise PredictionFileError(str(exc).replace(
                "pass --labels FILE", "pass --test-labels FILE (or --val-labels FILE)")) from exc
        if models.test.kind == "probs":
            _info(args, "note: probabilities given; the scaling methods work on their logarithm "
                        "(softmax maps it back to the same probabilities)")
    _info(args, "running the study" + (" (quick)" if cfg.quick else "") + " ...")
    result = run_study(models, cfg, progress=_progress_enabled(args))
    files = write_report(result, args.out)
    for t in [m.methods_table() for m in result.models] + [result.bin_sensitivity_table()]:
        print(t.title)
        print(t.to_text())
        print()
    for m in result.models:  # computed once by run_study, also in the written report
        t = m.intervals
        print(t.title)
        print(t.to_text())
        print()
    _info(args, f"study finished in {time.perf_counter() - t0:.1f} s; wrote {files['report.md']}, "
                f"{files['report.html']}, {files['results.json']}, {len(files['figures'])} figures and "
                f"{len(files['tables'])} tables under {args.out}/")
    return 0


#: Python phrasings in library messages -> what a shell user types.
_SHELL_WORDS = (
    ("(calibkit.softmax(logits) for logits)", "(pass --logits if these are logits)"),
    ("convert them with calibkit.softmax(logits) first", "pass --logits if they are logits"),
    ("pass --logits (kind='logits') if", "pass --logits if"),
    ("--probs (kind='probs')", "--probs"),
    ("calibkit.softmax(logits)", "--logits"),
    (", or a 0/1 label matrix for multilabel data", ""),
    (" (labels=...)", ""),
    ("labels=...", "--labels FILE"),
    ("? Labels come first: f(labels, probs))", "?)"),
)


def shell_message(msg: str) -> str:
    """A library error message worded for the command line (flags, not Python calls)."""
    for old, new in _SHELL_WORDS:
        msg = msg.replace(old, new)
    return msg


class _UsageError(ValueError):
    """A problem with the command-line arguments themselves."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``calibkit`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Examples
    --------
    >>> main(["--help"])  # doctest: +SKIP
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, message already printed)
        return int(exc.code) if isinstance(exc.code, int) else 2

    from .errors import CalibkitError

    handlers = {None: _cmd_default, "report": _cmd_report, "study": _cmd_study}
    try:
        return handlers[args.command](args)
    except (CalibkitError, _UsageError) as exc:  # PredictionFileError is a CalibkitError
        print(f"calibkit: error: {shell_message(str(exc))}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"calibkit: error: a dependency is missing ({exc}); install the extras with "
              "`pip install calibkit[study]`", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. an --out directory that cannot be made or written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"calibkit: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("calibkit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
