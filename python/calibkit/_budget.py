"""The memory budget: one limit on every allocation whose size a caller's arguments choose.

A few arguments decide how much memory calibkit allocates, whatever the size of the data:
the bin counts (every table has one cell per (group, bin), and :func:`calibkit.evaluate`,
:class:`calibkit.Accumulator` and :mod:`calibkit.dask` hold the tables of every requested bin
count at once), the bandwidth of :func:`calibkit.smece` (its grids have about ``10 /
bandwidth`` points), the number of resamples of an interval or test, and the size of the
sketches of ``Accumulator(adaptive="sketch")``. Each such size is computed here *before*
anything is allocated, and a request above the budget raises
:class:`~calibkit.errors.MemoryBudgetError` naming the argument, the bytes it asks for and the
budget; nothing is allocated and the process is never taken down by a failed allocation.

The budget is :data:`DEFAULT_MEMORY_BUDGET` (1 GiB) unless the environment variable
``CALIBKIT_MEMORY_BUDGET`` (bytes, read when first needed and again after
``set_memory_budget(None)``; suffixes ``K``, ``M``, ``G`` for KiB, MiB, GiB) or
:func:`set_memory_budget` says otherwise. The sizes are estimates of what the
named structures hold at once (:data:`CELL_BYTES` per table cell, and so on), not of every
temporary: the budget bounds what the caller's arguments can make calibkit ask for, it is not a
cap on the process's memory.

Examples
--------
>>> import calibkit
>>> previous = calibkit.set_memory_budget(2**20)   # 1 MiB
>>> calibkit.evaluate([0, 1], [[0.6, 0.4], [0.3, 0.7]], space=["ECE"], num_bins=range(1, 500))
Traceback (most recent call last):
...
calibkit.errors.MemoryBudgetError: num_bins: the tables of these bin counts (1 group(s) x ...
>>> _ = calibkit.set_memory_budget(previous)
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterable

from ._params import MAX_TABLE_CELLS, as_int, check_table
from .errors import InvalidParameterError, MemoryBudgetError

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "ENV_VAR",
    "CELL_BYTES",
    "GRID_POINT_BYTES",
    "BOOTSTRAP_CELL_BYTES",
    "TEST_CELL_BYTES",
    "memory_budget",
    "set_memory_budget",
    "check_bytes",
    "check_tables",
    "check_grid",
    "check_resamples",
    "held_groups",
]

#: The budget when neither the environment nor :func:`set_memory_budget` sets one: 1 GiB.
DEFAULT_MEMORY_BUDGET: int = 1 << 30
#: The environment variable read for the budget (bytes; ``K``/``M``/``G`` suffixes allowed).
ENV_VAR = "CALIBKIT_MEMORY_BUDGET"
#: Bytes of one (group, bin) table cell: count, score sum, outcome sum and edge, float64 each.
CELL_BYTES = 32
#: Bytes per point of a smoothing grid of :func:`calibkit.smece`: two grids, their reflected
#: copies, the kernel and the FFT's complex buffers (float64).
GRID_POINT_BYTES = 128

#: Bytes per table cell of one worker of the bootstrap kernels (eight resamples side by side,
#: count, score sum and outcome sum each) and of the calibration test's (one outcome sum each).
BOOTSTRAP_CELL_BYTES = 8 * 3 * 8
TEST_CELL_BYTES = 8 * 8

_SUFFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_lock = threading.Lock()
_budget: int | None = None  # None: to be read from the environment (or the default)
_set = False  # whether set_memory_budget set the budget (what it returns as "previous")


def _parse(text: str, name: str) -> int:
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    scale = _SUFFIX.get(t[-1:], 1) if t else 1
    try:
        value = float(t[:-1] if scale > 1 else t) * scale
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        raise InvalidParameterError(
            f"{name} must be a number of bytes >= 1 such as 2000000000 or 2G, got {text!r}")
    return int(value)


def memory_budget() -> int:
    """The current memory budget in bytes (see the module docstring).

    Examples
    --------
    >>> import calibkit
    >>> calibkit.memory_budget() > 0
    True
    """
    global _budget
    if _budget is None:  # the environment, read once (again after set_memory_budget(None))
        text = os.environ.get(ENV_VAR)
        value = DEFAULT_MEMORY_BUDGET if text is None else _parse(text, ENV_VAR)
        with _lock:
            _budget = value
    return _budget


def set_memory_budget(nbytes: int | None) -> int | None:
    """Set the memory budget of every calibkit call of this process; returns the previous one.

    Parameters
    ----------
    nbytes : int >= 1, or None
        The largest allocation, in bytes, that a caller's arguments may make calibkit ask for
        (bin counts, smoothing grids, resamples, sketches). None restores the default
        (``CALIBKIT_MEMORY_BUDGET`` if set, read again, else :data:`DEFAULT_MEMORY_BUDGET`,
        1 GiB).

    Returns
    -------
    int or None
        The budget set before (None if it was the default), to restore it later.

    Examples
    --------
    >>> import calibkit
    >>> previous = calibkit.set_memory_budget(4 * 2**30)
    >>> calibkit.memory_budget()
    4294967296
    >>> calibkit.set_memory_budget(previous)
    4294967296
    """
    global _budget, _set
    if nbytes is not None:
        nbytes = as_int(nbytes, "nbytes", 1)
    with _lock:
        previous = _budget if _set else None
        _budget, _set = nbytes, nbytes is not None
    return previous


def _size(nbytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes:.0f} bytes"


def check_bytes(nbytes: float, name: str, what: str | Callable[[], str], fix: str) -> None:
    """Refuse an allocation of ``nbytes`` (a float: products of counts may be huge) above the
    budget: :class:`~calibkit.errors.MemoryBudgetError` says that ``name`` asks for ``what``
    (a string, or a function giving it, called only then) of that size, and how to ``fix`` it."""
    budget = memory_budget()
    if nbytes > budget:
        what = what if isinstance(what, str) else what()
        raise MemoryBudgetError(
            f"{name}: {what} need {_size(nbytes)}, more than calibkit's memory budget of "
            f"{_size(budget)}; {fix}, or raise the budget with "
            f"calibkit.set_memory_budget(nbytes) or the {ENV_VAR} environment variable"
        )


def check_tables(groups: int, bin_counts: Iterable[int], name: str = "num_bins", *,
                 per_table: bool = True) -> None:
    """Refuse tables of ``groups`` groups at every bin count of ``bin_counts``, held at once,
    above the budget (a bin count B has up to B + 1 bins: even bins keep one for scores >= 1).
    ``per_table``: ``groups`` are one table's, whose fixed cell limit
    (:func:`calibkit._params.check_table`) is checked first; False for the groups of several
    tables together."""
    if type(bin_counts) is tuple and len(bin_counts) == 1:  # one table (gce): the quick test
        cells = groups * (bin_counts[0] + 1)
        if cells <= MAX_TABLE_CELLS and cells * CELL_BYTES <= memory_budget():
            return
    bin_counts = tuple(bin_counts)
    if per_table:
        for b in bin_counts:
            check_table(groups, b, name)
    cells = sum(int(b) + 1 for b in bin_counts)
    check_bytes(float(groups) * cells * CELL_BYTES, name,
                lambda: f"the tables of these bin counts ({groups} group(s) x {cells} cells x "
                        f"{CELL_BYTES} bytes)", "ask for fewer or smaller bin counts")


def check_grid(points: float, name: str = "bandwidth") -> None:
    """Refuse a smoothing grid of ``points`` points (a float: may be inf) above the budget."""
    check_bytes(float(points) * GRID_POINT_BYTES, name,
                lambda: f"its smoothing grids ({points:.3g} points x {GRID_POINT_BYTES} bytes)",
                "use a larger bandwidth (the grid has about 10 / bandwidth points)")


def check_resamples(cells: int, n_resamples: int, cell_bytes: int,
                    name: str = "n_resamples") -> None:
    """Refuse bootstrap or test resamples whose tables exceed the budget: the native kernels
    give each worker thread a table of ``cells`` cells of ``cell_bytes`` bytes (eight
    resamples side by side), and keep one float64 per resample."""
    threads = max(1, min(os.cpu_count() or 1, -(-int(n_resamples) // 8)))
    check_bytes(float(cells) * cell_bytes * threads + 8.0 * n_resamples, name,
                lambda: f"the resampled tables ({cells} cells x {cell_bytes} bytes x {threads} "
                f"thread(s)) and {n_resamples} resampled values",
                "use fewer bins (or classes per table) or fewer resamples")


def held_groups(space, k: int) -> int:
    """Groups of the tables a stream (:class:`calibkit.Accumulator`, :mod:`calibkit.dask`)
    holds at once for the metrics ``space`` on K = ``k`` classes: one table per distinct
    grouping (binning, max_prob, class_conditional, threshold), of K groups when
    class-conditional."""
    keys = {(s.binning, s.max_prob, s.class_conditional, s.threshold) for s in space}
    return sum(int(k) if key[2] else 1 for key in keys)
