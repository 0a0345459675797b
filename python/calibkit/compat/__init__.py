"""Drop-in replacements for the APIs of other calibration libraries.

Each submodule mirrors one library's signatures on top of calibkit's fast kernels, so an
existing script changes only its import line:

* :mod:`calibkit.compat.uncertainty_metrics`: Google's ``uncertainty_metrics`` NumPy API
  (``gce``, ``ece``, ``sce``, ``ace``, ``tace``, ``rmsce``, ``compute_all_metrics``), e.g.
  ``import calibkit.compat.uncertainty_metrics as um``.

Submodules are imported on demand; importing :mod:`calibkit.compat` itself loads nothing.
"""

from __future__ import annotations

__all__: list[str] = []
