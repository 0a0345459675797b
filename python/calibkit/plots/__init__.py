"""Publication-quality calibration figures (optional: ``pip install 'calibkit[plots]'``).

- :func:`reliability_diagram` -- accuracy per bin (even or adaptive), the gap to the mean
  confidence shaded, and a strip with the confidence histogram and bin counts;
- :func:`plot_per_class_error` -- per-class error bars of a class-conditional metric (the
  paper's Figure 1 left);
- :func:`plot_metric_vs_bins` -- metric value against the number of bins, from an
  :class:`~calibkit.space.Evaluation`;
- :func:`plot_error_vs_temperature` -- calibration error of several metrics (and the NLL) as
  the softmax temperature changes (the paper's Figure 1 right), drawn from the curves that
  :func:`calibkit.analysis.temperature.error_vs_temperature` computes;
- :func:`corp_reliability_diagram` -- the CORP recalibration curve (isotonic fit) with
  consistency or confidence bands, and its score decomposition.

Modules: ``reliability.py`` (both reliability diagrams), ``curves.py`` (the metric curves),
``figure.py`` (the Figure, saving and colours every figure shares).

This module only draws: every number it shows comes from a calibkit function
(:func:`calibkit.calibration_bins`, :func:`calibkit.diagnostics.per_class_error`, an
:class:`~calibkit.space.Evaluation`, or the temperature curves of :mod:`calibkit.analysis`).

Every plotting function builds a standalone :class:`matplotlib.figure.Figure` (no pyplot
state, no GUI needed), returns it, and saves it when ``path`` is given (format from the suffix:
``.png``, ``.svg`` or ``.pdf``). matplotlib is imported only when a figure is drawn, so
``import calibkit`` never needs it.
"""

from .curves import plot_error_vs_temperature, plot_metric_vs_bins, plot_per_class_error
from .reliability import corp_reliability_diagram, reliability_diagram

__all__ = [
    "reliability_diagram",
    "corp_reliability_diagram",
    "plot_per_class_error",
    "plot_metric_vs_bins",
    "plot_error_vs_temperature",
]
