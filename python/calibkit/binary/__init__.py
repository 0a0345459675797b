"""Binary classifiers as scikit-learn users hold them: the calibration of P(y = pos_label).

``y_true`` holds 0/1, booleans, -1/1 or two class names (then ``pos_label`` is required), and
``y_prob`` is P(y = pos_label), e.g. ``predict_proba(X)[:, 1]``; exact 0.0 and 1.0 are kept.
Each function is a reading of the one engine on the pairs ``(y_prob, y_true == pos_label)``
(see docs/binary.md): it is **not** what ``calibkit.ece(labels, p)`` computes from a 1-D ``p``,
which is the paper's top-label ECE of the matrix ``[1 - p, p]``.

Metrics (:mod:`~calibkit.binary.metrics`): :func:`ece`, :func:`mce`, :func:`rmsce`,
:func:`adaptive_ece`, :func:`smece`, :func:`ksce`, :func:`decompose`, :func:`calibration_bins`.
Uncertainty (:mod:`~calibkit.binary.trust`): :func:`confidence_interval`,
:func:`calibration_test`, :func:`ece_sweep`. Tests and summaries: :func:`logistic_calibration`,
:func:`spiegelhalter_test`, :func:`ks_test`, :func:`kuiper_test`, :func:`hosmer_lemeshow`,
:func:`calibration_index` (ICI). Curves: :func:`calibration_curve`, :class:`CalibrationDisplay`.

scikit-learn scorers: every metric takes ``(y_true, y_prob)`` first, so
``make_scorer(calibkit.binary.ece, response_method="predict_proba", greater_is_better=False)``
works (scikit-learn passes the positive column; give ``pos_label=`` to ``make_scorer`` for class
names); :func:`scorer` (``calibkit.binary.scorer("ece")``) makes it.

>>> import calibkit
>>> round(calibkit.binary.ece([0, 1, 1, 0], [0.0, 1.0, 0.8, 0.3], num_bins=5), 6)
0.125
"""

from .curve import calibration_curve
from .display import CalibrationDisplay
from .goodness_of_fit import hosmer_lemeshow, ks_test, kuiper_test, spiegelhalter_test
from .ici import calibration_index
from .logistic import logistic_calibration
from .metrics import (
    adaptive_ece,
    calibration_bins,
    decompose,
    ece,
    ksce,
    mce,
    rmsce,
    smece,
)
from .results import BinaryTestResult, CalibrationIndex, LogisticCalibration
from .scoring import scorer
from .trust import calibration_test, confidence_interval, ece_sweep

__all__ = [
    "ece",
    "mce",
    "rmsce",
    "adaptive_ece",
    "smece",
    "ksce",
    "decompose",
    "calibration_bins",
    "confidence_interval",
    "calibration_test",
    "ece_sweep",
    "calibration_curve",
    "CalibrationDisplay",
    "logistic_calibration",
    "spiegelhalter_test",
    "ks_test",
    "kuiper_test",
    "hosmer_lemeshow",
    "calibration_index",
    "scorer",
    "BinaryTestResult",
    "LogisticCalibration",
    "CalibrationIndex",
]
