"""The ``calibkit`` command's arguments: :func:`build_parser` and the value types of its flags."""

from __future__ import annotations

import argparse
import textwrap

__all__ = ["build_parser", "FIGURE_FORMATS", "GLOBAL_OPTIONS"]

#: Figure formats of ``--figure-format`` (PNG at 300 dpi).
FIGURE_FORMATS = ("png", "pdf", "svg")
#: Options given before the subcommand, with their defaults: they apply to every subcommand
#: that uses them (:func:`calibkit.cli.options.merge_globals`).
GLOBAL_OPTIONS = {"num_bins": 15, "seed": 0, "quiet": False}

_EPILOG = """\
examples:
  calibkit                                   # metrics of a small model trained on digits
  calibkit report preds.npz                  # arrays 'logits' or 'probs', and 'labels'
  calibkit report scores.npy y.npy --logits  # scores and labels, two .npy files
  calibkit report preds.csv --label-column target
  calibkit report out.npz --scores-key arr_0 --labels-key arr_1 --logits
  calibkit report hollance__ImageNet_torchvision__resnet101.npz   # labels, pred, confidence
  calibkit study --quick --out study-out     # the whole analysis, reduced setting
  calibkit study --test ../shared/data/kangsepp__densenet40_c10.npz --out densenet
  calibkit study --val val.npz --test test.npz --seed 1
  calibkit --num-bins 10 report preds.csv    # global options work for every subcommand

global options (--num-bins, --seed, -q) may come before or after the subcommand; one given in
both places with different values, or one that a subcommand does not use, is refused.
figures: PNG at 300 dpi by default; --figure-format pdf or svg for vector figures.

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
    from .._params import MAX_SEED, as_study_seed
    from ..errors import CalibkitError

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


def _add_common(p: argparse.ArgumentParser, seed_help: str, dest: str = "") -> None:
    """--seed and -q; ``dest`` prefixes their names (``g_`` for the global ones)."""
    p.add_argument("--seed", type=_seed, default=None, metavar="N", dest=f"{dest}seed",
                   help=f"random seed: {seed_help} (default: 0); the same seed reproduces the same "
                        "numbers. The Python API calls it random_state=")
    p.add_argument("-q", "--quiet", action="store_true", default=None, dest=f"{dest}quiet",
                   help="no progress bar and no informational messages (results and warnings are "
                        "still printed)")


def _add_figures(p: argparse.ArgumentParser) -> None:
    p.add_argument("--figure-format", choices=FIGURE_FORMATS, default="png",
                   help="format of the figures: png (300 dpi, default), pdf or svg (vector, for "
                        "papers); report.html embeds PNG and SVG figures and links PDF ones")


def _add_reading(p: argparse.ArgumentParser) -> None:
    """The flags of the one reader (:func:`calibkit.io.read_predictions`)."""
    p.add_argument("--label-column", metavar="COL", default=None,
                   help="CSV only: name or 0-based position of the label column")
    p.add_argument("--score-columns", metavar="COLS", default=None,
                   help="CSV only: the score columns, names or 0-based positions separated by "
                        "commas (default: every column but the label column and columns named as "
                        "an index or id: id, index, pandas' unnamed index, ...)")
    p.add_argument("--scores-key", metavar="NAME", default=None,
                   help=".npz only: the array holding the scores (logits or probabilities)")
    p.add_argument("--labels-key", metavar="NAME", default=None,
                   help=".npz only: the array holding the labels (class indices)")
    p.add_argument("--renormalize", action="store_true",
                   help="divide each row of probabilities by its sum (probabilities rounded when "
                        "written, rows summing to e.g. 1.01); a note says how far they were off")


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
    parser.add_argument("--model", choices=["softmax-regression", "mlp"], default=None,
                        help="default job only: which small model to train on digits "
                             "(default: softmax-regression)")
    parser.add_argument("--num-bins", type=_positive_int, default=None, metavar="B",
                        dest="g_num_bins",
                        help="number of bins of every metric, for the default job and 'report' "
                             "(default: 15); 'study' takes its bin counts after the subcommand")
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"calibkit {__version__}",
                        help="print the version and exit")
    _add_common(parser, "the default job's data split and model, the intervals and p-values of "
                        "'report', everything random in 'study'", dest="g_")
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
            "  .npy  the scores; labels from a second file (report scores.npy labels.npy),\n"
            "        --labels or a sibling file (logits.npy -> labels.npy, x.npy ->\n"
            "        x_labels.npy, or labels.npy)\n"
            "  .csv  one row per example, header optional, comma-separated (';' with decimal\n"
            "        commas, tab, '|' are recognised and said): a label column ('label', 'y',\n"
            "        'target', ... or --label-column; else the first column) and score columns\n"
            "        (--score-columns; else all the others but index/id columns, which are\n"
            "        left out with a note). Class names as labels are mapped to the score\n"
            "        columns named after them (the mapping is printed).\n"
            "  top-label files (.npz or .csv): 'confidence' + 'correct' (0/1, true/false), or\n"
            "        'labels' + 'pred' + 'confidence' (model-zoo records): the top-label\n"
            "        metrics (ECE, RMSCE, MCE, top-label adaptive ECE; class-conditional ECE when\n"
            "        'pred' is there) with intervals and p-values, smooth ECE, KS and CORP;\n"
            "        SCE, ACE and TACE need the full probability matrix.\n"
            "kind of scores: --logits / --probs (for whichever array or columns are read);\n"
            "  else the array, file or column name ('logit' / 'prob' in it); else the values\n"
            "  (valid probabilities are read as such, anything else asks for --logits;\n"
            "  rounded probabilities ask for --renormalize).\n"
            "intervals: each metric's bias-corrected value with its 90% basic-bootstrap\n"
            "  interval (which contains it), and the plug-in value (calibkit.ece(...)) beside.\n"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rp.add_argument("predictions", metavar="PREDICTIONS",
                    help="the predictions file: .npz, .npy or .csv (see below)")
    rp.add_argument("labels_file", metavar="LABELS", nargs="?", default=None,
                    help="for .npy scores: the labels file (the same as --labels FILE)")
    rp.add_argument("--labels", metavar="FILE", default=None,
                    help="labels file (.npy or one-column .csv) for .npy scores")
    _add_kind(rp)
    rp.add_argument("--split", choices=["test", "val"], default="test",
                    help="which split of an .npz to read: plain arrays (test, default) or val_* arrays")
    _add_reading(rp)
    rp.add_argument("--num-classes", type=_positive_int, default=None, metavar="K",
                    help="top-label files only: number of classes for class-conditional ECE "
                         "(default: largest class index + 1)")
    rp.add_argument("--num-bins", type=_positive_int, default=None, metavar="B",
                    help="number of bins of every metric and of the tables (default: 15)")
    rp.add_argument("--out", metavar="DIR", default="calibkit-report",
                    help="folder for the tables, figures and report (default: ./calibkit-report)")
    _add_figures(rp)
    _add_common(rp, "the bootstrap resamples of the intervals and the label redraws of the "
                    "p-values")

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
            "--test (any format of 'calibkit report', read by the same flags: --scores-key,\n"
            "--labels-key, --label-column, --score-columns, --renormalize apply to both files).\n"
            "Probabilities are accepted: the scaling methods then work on their logarithm.\n"
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
    _add_reading(sp)
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
    _add_figures(sp)
    _add_common(sp, "data split, model training, recalibration methods, label noise, intervals")
    return parser


