"""What every figure shares: a standalone matplotlib Figure, saving, colours."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._params import (
    as_figsize,
    as_image_path,
)
from ..errors import MissingDependencyError

if TYPE_CHECKING:
    pass


SAVE_FORMATS = (".png", ".svg", ".pdf")
ACC_COLOR = "#3465a4"
GAP_COLOR = "#cc0000"
HIST_COLOR = "#777777"
UNDER_COLOR = "#e8a000"


def figure(figsize, nrows=1, height_ratios=None):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised by monkeypatching in tests
        raise MissingDependencyError(
            "calibkit.plots needs matplotlib; install the plotting extra with "
            "`pip install 'calibkit[plots]'` (or `pip install matplotlib`)"
        ) from exc
    fig = Figure(figsize=figsize, layout="constrained")
    if nrows == 1:
        return fig, fig.add_subplot(1, 1, 1)
    axes = fig.subplots(nrows, 1, sharex=True, gridspec_kw={"height_ratios": height_ratios})
    return fig, axes


def save(fig, path, dpi: int = 200):
    if path is None:
        return
    fig.savefig(as_image_path(path, SAVE_FORMATS), dpi=dpi)


def fit_title(title: str, fig, fontsize: float = 11.0) -> str:
    """``title`` wrapped to the figure's width (about 140 / fontsize characters per inch), so
    that a long one (a file's absolute path) stays on the canvas."""
    import textwrap

    width = max(24, int(fig.get_figwidth() * 140 / fontsize))
    return textwrap.fill(str(title), width=width, break_on_hyphens=False)


def check_figsize(figsize):
    return as_figsize(figsize)
