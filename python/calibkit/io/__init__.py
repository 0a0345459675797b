"""Reading prediction files as users hold them: the one reader, used by the command line
(``calibkit report``, ``calibkit study``) and by :mod:`calibkit.analysis`.

- :mod:`~calibkit.io.formats` -- what ``.npz``, ``.npy`` and CSV files hold, read without
  pickle;
- :mod:`~calibkit.io.columns` -- which CSV columns are the labels, the scores and an index;
- :mod:`~calibkit.io.predictions` -- :func:`read_predictions` (which arrays or columns are the
  scores and the labels, their kind, their values by calibkit's input rules),
  :func:`load_predictions` and the :class:`Predictions` record;
- :mod:`~calibkit.io.toplabel` -- top-label files (``confidence`` and ``correct``).
"""

from __future__ import annotations

from .formats import PredictionFileError
from .predictions import (
    Predictions,
    check_predictions,
    has_val_split,
    load_predictions,
    read_predictions,
)
from .toplabel import TopLabelPredictions

__all__ = [
    "PredictionFileError",
    "Predictions",
    "TopLabelPredictions",
    "check_predictions",
    "has_val_split",
    "load_predictions",
    "read_predictions",
]
