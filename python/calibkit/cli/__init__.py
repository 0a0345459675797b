"""The ``calibkit`` command.

``calibkit``
    Train a small softmax regression on scikit-learn's digits and print the named calibration
    metrics and the paper's 32-metric table for its test predictions (a few seconds).
``calibkit report PREDICTIONS [LABELS]``
    Named metrics with their settings, intervals and p-values, binning-free estimators,
    per-bin and per-class tables and reliability diagrams for one file of predictions (.npz,
    .npy or .csv; a full score matrix or a top-label file).
``calibkit study``
    The paper's whole analysis (eight recalibration methods, 32 metrics x bin counts, rank
    orders, rank correlations, bin sensitivity, temperature optimisation, class conditionality,
    label noise) on the bundled default or on your validation / test logits; writes report.md,
    report.html, figures, CSV and JSON.

The package: :mod:`~calibkit.cli.parser` (the flags), :mod:`~calibkit.cli.options` (global
options), :mod:`~calibkit.cli.commands` (the subcommands), :mod:`~calibkit.cli.console`
(notes, one-line warnings, library messages worded for the shell, quiet pipes).

Exit status: 0 on success, 2 on a usage error or unusable input (the message on stderr names the
problem), 1 on an unexpected internal error, 141 when the reader of the output went away
(``calibkit report ... | head``; nothing is printed about it).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .console import one_line_warnings, quiet_pipe, shell_message
from .options import UsageError, merge_globals
from .parser import build_parser

__all__ = ["main", "build_parser", "shell_message", "toplabel_metric_rows",
           "FULL_MATRIX_METRICS"]


def __getattr__(name: str):
    """``toplabel_metric_rows`` and ``FULL_MATRIX_METRICS`` live in
    :mod:`calibkit.analysis.prediction_report` (imported on first use: ``import calibkit.cli`` stays
    light)."""
    if name in ("toplabel_metric_rows", "FULL_MATRIX_METRICS"):
        from ..analysis import prediction_report

        return getattr(prediction_report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Exit status when the output's reader went away (128 + SIGPIPE, as a shell reports it).
BROKEN_PIPE = 141


def _parse(parser, argv):
    """Parse ``argv``; arguments nobody takes are refused with the usage of the subcommand
    they were given to (not the top-level usage), and what it takes."""
    import argparse

    args, extra = parser.parse_known_args(argv)
    if extra:
        sub = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and args.command:
                sub = action.choices[args.command]
        hint = ""
        if args.command == "report":
            hint = (" (report takes PREDICTIONS and, for .npy scores, a LABELS file; everything "
                    "else by its flag: see calibkit report --help)")
        sub.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``calibkit`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Examples
    --------
    >>> main(["--help"])  # doctest: +SKIP
    """
    from ..errors import CalibkitError
    from .commands import cmd_default, cmd_report, cmd_study

    parser = build_parser()
    handlers = {None: cmd_default, "report": cmd_report, "study": cmd_study}
    try:
        with quiet_pipe():
            try:
                args = _parse(parser, argv)
            except SystemExit as exc:  # --help (0) or a usage error (2, message printed)
                return int(exc.code) if isinstance(exc.code, int) else 2
            try:
                args = merge_globals(args)
                with one_line_warnings():
                    return handlers[args.command](args)
            except (CalibkitError, UsageError) as exc:  # PredictionFileError is a CalibkitError
                print(f"calibkit: error: {shell_message(str(exc))}", file=sys.stderr)
                return 2
            except ImportError as exc:
                print(f"calibkit: error: a dependency is missing ({exc}); install the extras "
                      "with `pip install calibkit[study]`", file=sys.stderr)
                return 2
            except BrokenPipeError:
                raise
            except OSError as exc:  # e.g. an --out directory that cannot be made or written
                where = f"{exc.filename}: " if exc.filename else ""
                print(f"calibkit: error: {where}{exc.strerror or exc}", file=sys.stderr)
                return 2
            except KeyboardInterrupt:  # pragma: no cover
                print("calibkit: interrupted", file=sys.stderr)
                return 130
    except BrokenPipeError:
        return BROKEN_PIPE
