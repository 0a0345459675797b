"""The paper's analyses, usable without the command line.

- :mod:`~calibkit.analysis.data` -- a model's validation and test splits, read from .npz / .npy /
  .csv by :mod:`calibkit.io` (the reader the command line uses too);
- :mod:`~calibkit.analysis.digits` -- the bundled default: small models on scikit-learn's digits;
- :mod:`~calibkit.analysis.ranking` -- rank-order tables, Spearman's rho and Kendall's tau between
  metric orderings, bin sensitivity;
- :mod:`~calibkit.analysis.temperature` -- a temperature optimised for each metric, scored with ECE;
- :mod:`~calibkit.analysis.conditionality` -- histogram binning vs class-conditional histogram
  binning under ECE and class-conditional ECE;
- :mod:`~calibkit.analysis.label_noise` -- retraining at increasing label noise;
- :mod:`~calibkit.analysis.binning_free` -- smooth ECE, KS and CORP in the reports, and their
  agreement with the binned metrics;
- :mod:`~calibkit.analysis.study` -- the whole pipeline (:func:`run_study`);
- :mod:`~calibkit.analysis.report` -- report.md / report.html / PNG / CSV / JSON.

scikit-learn (default data), matplotlib (figures) and tqdm (progress bar) are needed only by the
parts that use them: install ``calibkit[study]``.

Examples
--------
>>> from calibkit.analysis import spearman_rho, rank_order_table
>>> spearman_rho([0.1, 0.2, 0.3], [0.3, 0.2, 0.1])
-1.0
"""

from __future__ import annotations

from .binning_free import binning_free_study_tables, binning_free_table
from .conditionality import ConditionalityResult, class_conditionality
from .data import ModelSplits, PredictionFileError, Predictions, load_predictions, load_val_test
from .digits import DEFAULT_MODELS, DigitsSplit, default_models, load_digits_split
from .label_noise import LabelNoiseResult, label_noise_study, noise_levels, noisy_labels
from .properties import PropertyGroup, group_by_property, property_groups
from .ranking import (
    bin_sensitivity,
    bin_sensitivity_table,
    kendall_tau,
    metric_rank_correlations,
    rank_correlation,
    rank_methods,
    rank_order,
    rank_order_table,
    spearman_rho,
)
from .report import named_metric_rows, write_prediction_report, write_report
from .study import ModelStudy, StudyConfig, StudyResult, evaluate_methods, run_study
from .tables import Table
from .temperature import (
    TemperatureCurves,
    TemperatureResult,
    error_vs_temperature,
    optimise_temperature_per_metric,
    temperature_curves,
    temperature_table,
)

__all__ = [
    "Table",
    "PredictionFileError",
    "Predictions",
    "ModelSplits",
    "DigitsSplit",
    "DEFAULT_MODELS",
    "load_predictions",
    "load_val_test",
    "load_digits_split",
    "default_models",
    "spearman_rho",
    "kendall_tau",
    "rank_correlation",
    "rank_methods",
    "rank_order",
    "rank_order_table",
    "metric_rank_correlations",
    "bin_sensitivity",
    "bin_sensitivity_table",
    "PropertyGroup",
    "property_groups",
    "group_by_property",
    "TemperatureResult",
    "TemperatureCurves",
    "error_vs_temperature",
    "temperature_curves",
    "optimise_temperature_per_metric",
    "temperature_table",
    "ConditionalityResult",
    "class_conditionality",
    "LabelNoiseResult",
    "label_noise_study",
    "noise_levels",
    "noisy_labels",
    "StudyConfig",
    "ModelStudy",
    "StudyResult",
    "run_study",
    "evaluate_methods",
    "write_report",
    "write_prediction_report",
    "named_metric_rows",
    "binning_free_table",
    "binning_free_study_tables",
]
