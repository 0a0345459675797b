"""What each ``calibkit`` subcommand does with its parsed (and merged) arguments."""

from __future__ import annotations

import time
from pathlib import Path

from .console import info
from .options import UsageError

__all__ = ["cmd_default", "cmd_report", "cmd_study"]


def _progress(args):
    """The command's progress setting, by the one rule: off with ``-q``, else a bar when
    stderr is a terminal (:mod:`calibkit._progress`)."""
    return False if args.quiet else None


def cmd_default(args) -> int:
    """No subcommand: a small model trained on digits, its named metrics and the 32-metric
    table."""
    from ..analysis.digits import default_models
    from ..analysis.prediction_report import metric_space_table, named_metric_rows

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
    info(args, f"\n({time.perf_counter() - t0:.1f} s; 'calibkit study' runs the paper's whole "
               "analysis, 'calibkit --help' lists everything)")
    return 0


def cmd_report(args) -> int:
    """``calibkit report``: one report for every input form (matrix or top-label file)."""
    from ..analysis.prediction_report import (
        REPORT_RESAMPLES,
        not_computable_line,
        toplabel_missing,
        write_prediction_report,
    )
    from ..analysis.trust_table import interval_note
    from ..io.predictions import TopLabelPredictions, read_predictions

    t0 = time.perf_counter()
    if args.labels_file is not None and args.labels is not None:
        raise UsageError(f"the labels are given twice: {args.labels_file} (second file) and "
                         f"--labels {args.labels}; give one")
    labels = args.labels if args.labels is not None else args.labels_file
    pred, notes = read_predictions(
        args.predictions, kind=args.kind, labels=labels, split=args.split,
        label_column=args.label_column, score_columns=args.score_columns,
        scores_key=args.scores_key, labels_key=args.labels_key, num_classes=args.num_classes,
        top_label=True, renormalize=args.renormalize)
    for note in notes:
        info(args, f"note: {note}")
    files = write_prediction_report(pred, args.out, num_bins=args.num_bins,
                                    random_state=args.seed, figure_format=args.figure_format,
                                    progress=_progress(args))
    tables = {t.name: t for t in files["tables"]}
    acc = files["accuracy"]
    if isinstance(pred, TopLabelPredictions):
        classes = f", {pred.num_classes} classes" if pred.num_classes else ""
        print(f"{pred.source}: {len(pred)} predictions (top-label confidence and "
              f"correctness{classes}), accuracy {acc:.4f}\n")
    else:
        print(f"{pred.source}: {len(pred)} examples, {pred.num_classes} classes, {pred.kind}, "
              f"accuracy {acc:.4f}\n")
    named = tables["named_metrics"]
    print(named.title)
    print(named.to_text())
    print(interval_note(REPORT_RESAMPLES, args.seed))
    print()
    print(tables["binning_free"].title)
    print(tables["binning_free"].to_text())
    if isinstance(pred, TopLabelPredictions):
        print("\n" + not_computable_line(toplabel_missing(pred)))
    written = sorted(p.name for k, p in files.items() if isinstance(p, Path))
    info(args, f"\nwrote {args.out}/: {', '.join(written)} ({time.perf_counter() - t0:.1f} s)")
    return 0


def cmd_study(args) -> int:
    """``calibkit study``: the paper's whole analysis."""
    from ..analysis.data import load_val_test
    from ..analysis.report import write_report
    from ..analysis.study import StudyConfig, run_study
    from ..io import PredictionFileError

    t0 = time.perf_counter()
    if args.val is not None and args.test is None:
        raise UsageError("--val needs --test (the split the recalibrated outputs are scored on)")
    reading = {"label_column": args.label_column, "score_columns": args.score_columns,
               "scores_key": args.scores_key, "labels_key": args.labels_key,
               "renormalize": args.renormalize}
    if args.test is None:
        given = [f"--{k.replace('_', '-')}" for k, v in reading.items() if v not in (None, False)]
        if given:
            raise UsageError(f"{', '.join(given)} say how to read --test/--val files; without "
                             "--test the study runs on the bundled digits models")
    overrides = {"random_state": args.seed, "report_bins": args.report_bins,
                 "max_noise": args.max_noise, "importance_threshold": args.importance_threshold,
                 "label_noise": args.label_noise}
    if args.num_bins is not None:
        overrides["num_bins"] = tuple(args.num_bins)
    if args.noise_levels is not None:
        overrides["noise_levels"] = args.noise_levels
    try:
        cfg = StudyConfig.quick_config(**overrides) if args.quick else StudyConfig(**overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    models = None
    if args.test is not None:
        try:
            models = load_val_test(args.val, args.test, kind=args.kind,
                                   val_labels=args.val_labels, test_labels=args.test_labels,
                                   name=args.name, **reading)
        except PredictionFileError as exc:  # the study's flags for labels files
            raise PredictionFileError(str(exc).replace(
                "pass --labels FILE", "pass --test-labels FILE (or --val-labels FILE)").replace(
                "--labels FILE is for", "--test-labels / --val-labels are for")) from exc
        if models.test.kind == "probs":
            info(args, "note: probabilities given; the scaling methods work on their logarithm "
                       "(softmax maps it back to the same probabilities)")
    info(args, "running the study" + (" (quick)" if cfg.quick else "") + " ...")
    result = run_study(models, cfg, progress=_progress(args))
    files = write_report(result, args.out, figure_format=args.figure_format)
    for t in [m.methods_table() for m in result.models] + [result.bin_sensitivity_table()]:
        print(t.title)
        print(t.to_text())
        print()
    for m in result.models:  # computed once by run_study, also in the written report
        t = m.intervals
        print(t.title)
        print(t.to_text())
        print(t.note)
        print()
    info(args, f"study finished in {time.perf_counter() - t0:.1f} s; wrote {files['report.md']}, "
               f"{files['report.html']}, {files['results.json']}, {len(files['figures'])} figures "
               f"and {len(files['tables'])} tables under {args.out}/")
    return 0
