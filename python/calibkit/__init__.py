"""calibkit: measure and fix the calibration of probabilistic classifiers.

Implements "Measuring Calibration in Deep Learning" (Nixon et al.): the General Calibration
Error over its whole parameter space, with the heavy lifting in Rust.
"""

# No `from __future__ import annotations` here: it would leave a stray name `annotations` in
# dir(calibkit) (tests/test_api_inputs.py checks there is none).
from ._budget import memory_budget, set_memory_budget
from ._softmax import log_softmax, softmax
from .binned.bins import CalibrationBins, calibration_bins, reduce_bins
from .binned.metrics import ace, cce, ece, gce, mce, rmsce, sce, tace
from .errors import (
    CalibkitError,
    InputTypeError,
    InvalidFlagError,
    InvalidLabelsError,
    InvalidParameterError,
    InvalidProbabilitiesError,
    InvalidScoresError,
    MemoryBudgetError,
    MissingDependencyError,
    NotFittedError,
    NumericalError,
    ParameterTypeError,
    SelectionError,
    ShapeMismatchError,
    TopLabelInputError,
)

from .binned.spec import MetricSpace, MetricSpec, metric_space  # isort: skip (before .space)
from .binned.space import Evaluation, evaluate  # isort: skip
from .scale.streaming import Accumulator, IncompatibleAccumulatorError  # isort: skip
from .binfree.decompose import Decomposition, decompose
from .binfree.estimators import BinningFree, binning_free
from .binfree.ks import ksce
from .binfree.smooth import smece

from .errors import BinaryReadingWarning, FewSamplesWarning  # isort: skip
from .trust.calibration_test import CalibrationTestResult, calibration_test  # isort: skip
from .trust.intervals import ConfidenceInterval, confidence_interval  # isort: skip
from .trust.signed import signed_ece  # isort: skip
from .trust.sweep import SweepResult, ece_sweep  # isort: skip

from . import _paths  # isort: skip

__version__ = "0.1.0"

_paths.install()


def __getattr__(name: str):
    """``calibkit.plots``, ``calibkit.dask``, ... imported on first use (PEP 562)."""
    if name in _paths.SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _paths.SUBMODULES)


__all__ = [
    "__version__",
    "gce",
    "ece",
    "cce",
    "sce",
    "ace",
    "tace",
    "rmsce",
    "mce",
    "smece",
    "ksce",
    "decompose",
    "Decomposition",
    "binning_free",
    "BinningFree",
    "evaluate",
    "metric_space",
    "MetricSpec",
    "MetricSpace",
    "Evaluation",
    "Accumulator",
    "IncompatibleAccumulatorError",
    "calibration_bins",
    "CalibrationBins",
    "reduce_bins",
    "softmax",
    "log_softmax",
    "CalibkitError",
    "InvalidProbabilitiesError",
    "InvalidLabelsError",
    "ShapeMismatchError",
    "InvalidParameterError",
    "InputTypeError",
    "ParameterTypeError",
    "InvalidFlagError",
    "InvalidScoresError",
    "NumericalError",
    "TopLabelInputError",
    "NotFittedError",
    "MissingDependencyError",
    "MemoryBudgetError",
    "memory_budget",
    "set_memory_budget",
    "SelectionError",
    "FewSamplesWarning",
    "BinaryReadingWarning",
    "confidence_interval",
    "ConfidenceInterval",
    "calibration_test",
    "CalibrationTestResult",
    "signed_ece",
    "ece_sweep",
    "SweepResult",
]
