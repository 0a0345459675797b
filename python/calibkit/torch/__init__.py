"""calibkit in deep-learning loops: a torchmetrics-style metric for tensors on any device.

* :class:`CalibrationError`: any metric of the paper's space (ECE, ACE, TACE, SCE, RMSCE, CCE,
  MCE, any :class:`calibkit.space.MetricSpec`), several metrics and bin counts at once, as a
  ``torchmetrics.Metric`` (``update``, ``compute``, ``reset``, ``forward``; state synced across
  ``torch.distributed`` ranks), equal to :func:`calibkit.evaluate` of the concatenated batches.
* :func:`evaluate`: the one-shot form (:func:`calibkit.evaluate` computed on the device).
* :mod:`calibkit.torch.tables`: the per-(group, bin) tables of a batch computed with torch ops
  on its device (only the tables cross to the host).

Needs PyTorch (``pip install "calibkit[torch]"``, which also installs torchmetrics; without
torchmetrics the metric follows the same protocol on its own, :mod:`calibkit.torch.protocol`).
See docs/torch.md.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as _exc:  # pragma: no cover - depends on the environment
    from ..errors import MissingDependencyError

    raise MissingDependencyError(
        "calibkit.torch needs PyTorch: pip install 'calibkit[torch]' (or pip install torch)",
        name="torch",
    ) from _exc

from .functional import evaluate
from .metric import CalibrationError
from .tables import Scores, adaptive_table, even_table

__all__ = ["CalibrationError", "evaluate", "Scores", "even_table", "adaptive_table"]
