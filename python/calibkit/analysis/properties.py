"""Grouping per-metric results by the five GCE properties, as the paper's tables do.

The paper summarises a per-metric quantity (a mean rank correlation, the ECE reached when
optimising temperature for that metric, ...) by averaging it over all metrics that share one
property value: "Even Binning Scheme", "Adaptive Binning Scheme", "Max Probs True", ... Each row
of such a table averages half of the 32-metric space.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._params import as_list
from ..errors import InputTypeError, InvalidParameterError
from ._util import as_floats
from .tables import Table

__all__ = ["PropertyGroup", "property_groups", "group_by_property", "PROPERTIES"]

#: The five properties in the paper's order, as MetricSpec attribute names.
PROPERTIES = ("binning", "max_prob", "class_conditional", "threshold", "norm")

_ORDER: dict[str, list[Any]] = {
    "binning": ["even", "adaptive"],
    "max_prob": [True, False],
    "class_conditional": [True, False],
    "norm": ["l1", "l2", "max"],
}


def _label(prop: str, value: Any) -> str:
    if prop == "binning":
        return f"{str(value).capitalize()} binning scheme"
    if prop == "max_prob":
        return f"Max probs {bool(value)}"
    if prop == "class_conditional":
        return "Class conditional" if value else "Class unconditional"
    if prop == "threshold":
        return "Unthresholded" if float(value) == 0.0 else f"Thresholded ({float(value):g})"
    if prop == "norm":
        return f"{str(value).upper()} norm"
    return f"{prop} = {value}"


@dataclass(frozen=True)
class PropertyGroup:
    """One property value and the metric positions that have it.

    Attributes
    ----------
    prop : str
        The property: one of :data:`PROPERTIES`.
    value : object
        Its value (``"even"``, ``True``, ``0.01``, ``"l2"``, ...).
    label : str
        The row label used in tables, in the paper's wording.
    members : tuple of int
        Positions (0-based, in the space's order) of the metrics that have this value.
    """

    prop: str
    value: Any
    label: str
    members: tuple[int, ...]


def _specs(space) -> list:
    """The metrics of ``space`` as a list, each with the five properties as attributes."""
    specs = as_list(space, "space", "metric specs (e.g. calibkit.metric_space())")
    for s in specs:
        missing = [p for p in PROPERTIES if not hasattr(s, p)]
        if missing:
            raise InputTypeError(
                f"space: {s!r} is not a metric spec (it has no {', '.join(missing)}); pass "
                "MetricSpecs, e.g. calibkit.metric_space()"
            )
    return specs


def property_groups(space: Sequence[Any]) -> list[PropertyGroup]:
    """Every (property, value) pair present in ``space``, in the paper's row order.

    Parameters
    ----------
    space : sequence of MetricSpec
        Objects with attributes ``binning``, ``max_prob``, ``class_conditional``, ``threshold``
        and ``norm`` (e.g. :func:`calibkit.metric_space`). Properties that take a single value
        across the space are left out (there is nothing to compare).

    Returns
    -------
    list of PropertyGroup
        For the paper's 32-metric space: 10 groups of 16 metrics (even/adaptive, max probs
        True/False, class conditional/unconditional, thresholded/unthresholded, L1/L2).

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> sp = [S(binning=b, max_prob=True, class_conditional=False, threshold=0.0, norm="l1")
    ...       for b in ("even", "adaptive")]
    >>> [(g.label, g.members) for g in property_groups(sp)]
    [('Even binning scheme', (0,)), ('Adaptive binning scheme', (1,))]
    """
    specs = _specs(space)
    groups: list[PropertyGroup] = []
    for prop in PROPERTIES:
        vals = [getattr(s, prop) for s in specs]
        if prop == "threshold":
            distinct = sorted({float(v) for v in vals}, key=lambda v: (v == 0.0, v))
        else:
            seen: list[Any] = []
            for v in vals:
                if v not in seen:
                    seen.append(v)
            order = _ORDER.get(prop, [])
            distinct = sorted(seen, key=lambda v: (order.index(v) if v in order else len(order), str(v)))
        if len(distinct) < 2:
            continue
        for value in distinct:
            members = tuple(
                i for i, v in enumerate(vals) if (float(v) == value if prop == "threshold" else v == value)
            )
            groups.append(PropertyGroup(prop, value, _label(prop, value), members))
    return groups


def group_by_property(
    per_metric: dict[str, Any] | Sequence[float] | np.ndarray,
    space: Sequence[Any],
    *,
    name: str = "by_property",
    title: str = "Mean over the metrics with each property value",
    floatfmt: str = ".4f",
    note: str = "",
) -> Table:
    """Average per-metric numbers over every property value (the paper's table layout).

    Parameters
    ----------
    per_metric : array_like of shape (M,) or dict of column name -> array_like (M,)
        One number per metric of ``space`` (one column), or several named columns (for example one
        per data set or one per statistic). NaN entries (undefined values) are left out of the
        mean; a group whose members are all NaN gives NaN.
    space : sequence of MetricSpec, length M
        The metrics the numbers belong to, in the same order.
    name, title, floatfmt, note
        Passed to :class:`Table`.

    Returns
    -------
    Table
        One row per property value (see :func:`property_groups`), one column per input column.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> sp = [S(binning=b, max_prob=True, class_conditional=False, threshold=0.0, norm=n)
    ...       for b in ("even", "adaptive") for n in ("l1", "l2")]
    >>> t = group_by_property([1.0, 2.0, 3.0, 4.0], sp)
    >>> t.cell("Adaptive binning scheme", "value"), t.cell("L2 norm", "value")
    (3.5, 3.0)
    """
    if not isinstance(per_metric, dict):
        per_metric = {"value": per_metric}
    specs = _specs(space)
    cols = {}
    for key, arr in per_metric.items():
        a = as_floats(arr, f"per_metric[{key!r}]")
        if a.shape != (len(specs),):
            raise InvalidParameterError(
                f"group_by_property: column {key!r} has shape {a.shape}, expected ({len(specs)},) "
                "- one number per metric of the space"
            )
        cols[key] = a
    groups = property_groups(specs)
    data = []
    for g in groups:
        row = []
        for a in cols.values():
            sel = a[list(g.members)]
            sel = sel[~np.isnan(sel)]
            row.append(float(sel.mean()) if sel.size else float("nan"))
        data.append(row)
    return Table(
        name=name,
        title=title,
        index=[g.label for g in groups],
        columns=list(cols.keys()),
        data=data,
        index_name="Property",
        floatfmt=floatfmt,
        note=note,
    )
