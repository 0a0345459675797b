"""Every keyword-argument check of calibkit and its message, written once.

The array half of input checking (``labels``, ``probs``) lives in :mod:`calibkit._validate`;
this module holds the other half: flags, bin counts, thresholds, norms and binnings, plain
integers and reals, and the limits and tolerances, which are read from the Rust core so that
Python and Rust can never disagree. Every public entry point (``gce`` and the named metrics,
``calibration_bins``, ``evaluate``, ``Accumulator``, ``calibkit.dask``, the recalibrators,
diagnostics, analysis, compat, plots) coerces its keywords through these functions, so one
wrong argument gives the same error class and the same text wherever it is passed.

Rules:

* a flag is ``True``/``False`` or a NumPy bool, nothing else (``"False"`` or ``0`` would be
  silently truthy or falsy through ``bool()``);
* an integer is any :class:`numbers.Integral` (Python or NumPy ints) but never a bool;
* a bin count is such an integer in ``[1, MAX_BINS]``, and a (groups x bins) table must fit in
  ``MAX_TABLE_CELLS`` cells, on every path that allocates one (the kernel checks its own);
* weights (``sample_weight``, and ``weights`` of the bin-table helpers) are finite and >= 0
  (0 drops a row), their sum is finite (it normalises every weighted bin, curve and test), and
  unless a caller accumulates batches, not all 0;
* a seed of the analysis is an integer in ``[0, MAX_SEED]`` (:func:`as_study_seed`); a
  resampling method's seed is None or an integer >= 0 (:func:`as_seed`); a recalibrator's
  ``random_state`` is scikit-learn's (:func:`as_random_state`); every public seed keyword is
  called ``random_state``;
* the level of an interval or band is ``confidence_level``, strictly between 0 and 1
  (:func:`as_confidence_level`); ``confidence=`` only ever means top-label confidences;
* a renamed keyword keeps its old name for one release with a DeprecationWarning, and both
  names given is an error (:func:`renamed`, :func:`renames`);
* a message quotes the value it got through :func:`shown` (NumPy scalars as plain numbers);
* every error is an :class:`~calibkit.errors.InvalidParameterError` (a ``ValueError``) that
  names the argument, says what it got and what is accepted; a wrong *type* raises its
  subclass :class:`~calibkit.errors.ParameterTypeError`, which is also an
  :class:`~calibkit.errors.InputTypeError` (a ``TypeError``).

Examples
--------
>>> from calibkit._params import as_flag, as_num_bins
>>> as_flag(True, "max_prob"), as_num_bins(15)
(True, 15)
>>> as_flag("False", "max_prob")
Traceback (most recent call last):
...
calibkit.errors.InvalidFlagError: max_prob must be True or False (a bool), got 'False' of type str
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

import numpy as np

from . import _native
from .errors import (
    InputTypeError,
    InvalidFlagError,
    InvalidParameterError,
    ParameterTypeError,
    ShapeMismatchError,
)

__all__ = [
    "BINNINGS",
    "NORMS",
    "RANGE_TOL",
    "ROW_SUM_TOL",
    "MAX_BINS",
    "MAX_TABLE_CELLS",
    "as_flag",
    "as_choice",
    "as_int",
    "as_real",
    "as_threshold",
    "as_num_bins",
    "as_num_classes",
    "as_bin_counts",
    "check_table",
    "check_gce_params",
    "check_weights",
    "check_weight_total",
    "MAX_SEED",
    "as_study_seed",
    "MAX_RESAMPLES",
    "as_seed",
    "as_resamples",
    "as_random_state",
    "as_confidence_level",
    "as_range",
    "as_figsize",
    "as_image_path",
    "as_path",
    "as_instance",
    "as_list",
    "as_names",
    "RENAMED_SINCE",
    "renamed",
    "renames",
    "shown",
]

BINNINGS = ("even", "adaptive")
NORMS = ("l1", "l2", "max")
#: Probabilities may leave [0, 1] by this much (float rounding in softmax outputs): the kernel's.
RANGE_TOL: float = float(_native.RANGE_TOL)
#: Each row of ``probs`` must sum to 1 within this absolute tolerance: the kernel's.
ROW_SUM_TOL: float = float(_native.ROW_SUM_TOL)
#: Largest accepted ``num_bins``: the kernel's.
MAX_BINS: int = int(_native.MAX_BINS)
#: Largest (groups x (bins + 1)) table any path may allocate: the kernel's.
MAX_TABLE_CELLS: int = int(_native.MAX_TABLE_CELLS)


#: Largest seed of the analysis (digits split, model training, recalibration, label noise): the
#: top of scikit-learn's ``random_state`` range, which those seeds reach.
MAX_SEED: int = 2**32 - 1


def as_study_seed(value, name: str = "seed") -> int:
    """A seed of the analysis: an integer in ``[0, MAX_SEED]`` (scikit-learn refuses others, in
    its own words, deep inside a study)."""
    return as_int(value, name, 0, MAX_SEED)


def shown(value) -> str:
    """How an error message shows the value it got: NumPy scalars as their plain Python value
    (``2.5``, not ``np.float64(2.5)``; the type is named separately where it matters). Every
    message that quotes a value, parameter or array entry, goes through this."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def as_flag(value, name: str) -> bool:
    """``value`` as a bool; only ``True``/``False`` and NumPy bools are accepted."""
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise InvalidFlagError(
        f"{name} must be True or False (a bool), got {shown(value)} of type {type(value).__name__}"
    )


def as_choice(value, name: str, choices, hint: str = "") -> str:
    """``value`` if it is one of the strings ``choices`` (``hint`` explains them in the error)."""
    if isinstance(value, str) and value in choices:
        return value
    raise InvalidParameterError(f"{name} must be one of {tuple(choices)}{hint}, got {shown(value)}")


def as_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int (any integer type, not bool) within ``[minimum, maximum]``."""
    if not _is_int(value):
        raise ParameterTypeError(
            f"{name} must be an integer, got {shown(value)} of type {type(value).__name__}"
        )
    v = int(value)
    if (minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        lo = "-inf" if minimum is None else minimum
        hi = "inf" if maximum is None else maximum
        raise InvalidParameterError(f"{name} must be an integer in [{lo}, {hi}], got {v}")
    return v


def _float(value, name: str, expected: str, *, with_type: bool = False) -> float:
    """``value`` as a float: a real number and not a bool, else ParameterTypeError; an integer
    beyond float64 is an InvalidParameterError (``expected`` says what is wanted)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        of_type = f" of type {type(value).__name__}" if with_type else ""
        raise ParameterTypeError(f"{name} must be {expected}, got {shown(value)}{of_type}")
    try:
        return float(value)
    except OverflowError:
        raise InvalidParameterError(
            f"{name} must be {expected}, got an integer too large for a float"
        ) from None


def as_real(value, name: str, *, low=None, high=None, low_open: bool = False,
            high_open: bool = False) -> float:
    """``value`` as a finite float within the given bounds (a bool is not a number here)."""
    v = _float(value, name, "a finite number")
    if not math.isfinite(v):
        raise InvalidParameterError(f"{name} must be a finite number, got {shown(value)}")
    if low is not None and (v < low or (low_open and v == low)):
        raise InvalidParameterError(f"{name} must be {'>' if low_open else '>='} {low}, got {shown(v)}")
    if high is not None and (v > high or (high_open and v == high)):
        raise InvalidParameterError(
            f"{name} must be {'<' if high_open else '<='} {high}, got {shown(v)}")
    return v


def as_threshold(value, name: str = "threshold") -> float:
    """A score threshold: a number in [0, 1) (scores ``<= threshold`` are dropped)."""
    t = _float(value, name, "a number in [0, 1)")
    if not 0.0 <= t < 1.0:
        raise InvalidParameterError(
            f"{name} must be in [0, 1) (scores <= {name} are dropped), got {shown(value)}"
        )
    return t


def _count(value, name: str, what: str, limit: int, too_many) -> int:
    """A count: an integer (any integer type, not bool) in ``[1, limit]``. ``what`` follows
    "a positive integer" in the type error; ``too_many(v)`` says why ``v`` exceeds the limit."""
    if not _is_int(value):
        raise ParameterTypeError(
            f"{name} must be a positive integer{what}, got {shown(value)} of type {type(value).__name__}"
        )
    v = int(value)
    if v < 1:
        raise InvalidParameterError(f"{name} must be a positive integer (>= 1), got {v}")
    if v > limit:
        raise InvalidParameterError(too_many(v))
    return v


def as_num_bins(value, name: str = "num_bins") -> int:
    """One bin count: an integer (any integer type, not bool) in ``[1, MAX_BINS]``."""
    return _count(value, name, "", MAX_BINS, lambda b: (
        f"{name} must be at most {MAX_BINS} (got {b}); calibration estimates need many "
        "points per bin, so use far fewer bins"))


def as_num_classes(value, name: str = "num_classes") -> int:
    """A class count K given beside top-label input: an integer (not bool) in
    ``[1, MAX_TABLE_CELLS]`` (a class-conditional table has at least one cell per class)."""
    return _count(value, name, " (K, the number of classes)", MAX_TABLE_CELLS, lambda k: (
        f"{name} is {k}, more than the {MAX_TABLE_CELLS} cells a per-(class, bin) table "
        "may have; pass the real number of classes"))


def as_bin_counts(value, name: str = "num_bins") -> tuple[tuple[int, ...], bool]:
    """``(bin counts, single)`` from one bin count or a sequence of distinct ones.

    ``single`` is True when ``value`` was one integer (so results are scalars, not tables).
    """
    if isinstance(value, (numbers.Number, np.bool_)) or (
            isinstance(value, np.ndarray) and value.ndim == 0):  # one count, or one bad scalar
        return (as_num_bins(value, name),), True
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ParameterTypeError(
            f"{name} must be a positive integer or a sequence of them such as (10, 20, 30), "
            f"got {shown(value)} of type {type(value).__name__}"
        )
    items = tuple(value)
    if not items:
        raise InvalidParameterError(f"{name} must hold at least one bin count, e.g. (15,)")
    out = tuple(as_num_bins(b, name) for b in items)
    if len(set(out)) != len(out):
        raise InvalidParameterError(f"{name} repeats a bin count ({out}); give each bin count once")
    return out, False


def check_table(groups: int, num_bins: int, name: str = "num_bins") -> None:
    """Refuse a per-(group, bin) table larger than ``MAX_TABLE_CELLS`` (counting a spare bin)."""
    cells = int(groups) * (int(num_bins) + 1)
    if cells > MAX_TABLE_CELLS:
        raise InvalidParameterError(
            f"{name}={num_bins} with {groups} score groups needs a table of {cells} cells "
            f"(limit {MAX_TABLE_CELLS}); use fewer bins"
        )


def check_gce_params(binning, norm, threshold, num_bins) -> tuple[str, str, float, int]:
    """Validate the GCE keywords; returns them normalised (threshold a float, num_bins an int)."""
    if (
        type(threshold) is float
        and type(num_bins) is int
        and type(binning) is str
        and type(norm) is str
        and binning in BINNINGS
        and norm in NORMS
        and 0.0 <= threshold < 1.0
        and 1 <= num_bins <= MAX_BINS
    ):
        return binning, norm, threshold, num_bins
    return (as_choice(binning, "binning", BINNINGS), as_choice(norm, "norm", NORMS),
            as_threshold(threshold), as_num_bins(num_bins))


def check_weights(w: np.ndarray, name: str = "sample_weight", *, allow_all_zero: bool = False,
                  carried: float = 0.0) -> np.ndarray:
    """The one rule for weights, on a float64 1-D array already of the caller's shape.

    Every weight is finite and >= 0 (0 drops a row), and their total, with the weight
    ``carried`` from earlier batches of a stream, passes :func:`check_weight_total`. Returns
    ``w``.
    """
    bad = ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidParameterError(f"{name}[{i}] is {w[i]}: weights must be finite and >= 0 (0 drops a row)")
    if w.size or carried:
        with np.errstate(over="ignore"):
            total = float(np.sum(w)) + float(carried)
        check_weight_total(total, name, allow_zero=allow_all_zero, batches=bool(carried))
    return w


def check_weight_total(total: float, name: str = "sample_weight", *, allow_zero: bool = False,
                       batches: bool = False) -> None:
    """The total of valid weights is finite (a sum that overflows would turn every weighted
    mean into NaN) and, unless ``allow_zero`` (one batch of a stream, checked again as a
    whole), positive. ``batches``: the total includes earlier batches (the message says so)."""
    if not math.isfinite(total):
        earlier = " with the weights of earlier batches" if batches else ""
        raise InvalidParameterError(
            f"the sum of {name}{earlier} exceeds the largest float64 (about 1.8e308); "
            f"scale the weights down"
        )
    if not allow_zero and not total > 0:
        raise InvalidParameterError(f"{name} is zero everywhere: at least one row needs a positive weight")


#: Largest accepted ``n_resamples`` (each resample is one pass over the rows).
MAX_RESAMPLES = 1_000_000


def as_seed(value, name: str = "random_state") -> int:
    """The 64-bit seed of a resampling method (intervals, calibration test): ``value`` itself
    (an integer in ``[0, 2**64)``; a larger one would wrap onto another seed's resamples), or
    fresh OS entropy when None.

    The same seed gives the same resamples for any thread count: the draws are keyed by
    (seed, resample, row) in a counter-based generator (``rust/kernels/weighted/resample.rs``).
    """
    if value is None:
        entropy = np.random.SeedSequence().entropy  # an int when no entropy is passed in
        assert isinstance(entropy, int)
        return entropy & (2**64 - 1)
    if not _is_int(value):
        raise ParameterTypeError(
            f"{name} must be None or an integer >= 0, got {shown(value)} of type {type(value).__name__}"
        )
    if not 0 <= value < 2**64:
        raise InvalidParameterError(
            f"{name} must be None or an integer in [0, 2**64) (a 64-bit seed), got {shown(value)}")
    return int(value)


def as_resamples(value, name: str = "n_resamples") -> int:
    """A resample count: an integer in ``[1, MAX_RESAMPLES]``."""
    return as_int(value, name, 1, MAX_RESAMPLES)


def as_random_state(value, name: str = "random_state") -> np.random.Generator:
    """scikit-learn's ``random_state``: None (fresh entropy), an integer >= 0, a NumPy
    ``Generator`` (used as is) or a legacy ``RandomState`` (seeds a new Generator), as a
    :class:`numpy.random.Generator`."""
    if value is None:
        return np.random.default_rng()
    if isinstance(value, np.random.Generator):
        return value
    if isinstance(value, np.random.RandomState):
        return np.random.default_rng(value.randint(0, 2**31 - 1))
    if _is_int(value):
        if value < 0:
            raise InvalidParameterError(f"{name} must be >= 0, got {shown(value)}")
        return np.random.default_rng(int(value))
    raise InvalidParameterError(
        f"{name} must be None, a non-negative int, a numpy Generator or RandomState, "
        f"got {shown(value)}"
    )


def as_confidence_level(value, name: str = "confidence_level") -> float:
    """The level of an interval or band (scipy's ``confidence_level``): a number strictly
    between 0 and 1."""
    v = _float(value, name, "a number strictly between 0 and 1 (e.g. 0.90)", with_type=True)
    if not 0.0 < v < 1.0:
        raise InvalidParameterError(
            f"{name} must be a number strictly between 0 and 1 (e.g. 0.90), got {shown(value)}"
        )
    return v


def as_range(value, name: str) -> tuple[float, float]:
    """A ``(low, high)`` range around 1 (a temperature range): finite, ``0 < low < 1 < high``."""
    try:
        lo, hi = value
        lo, hi = float(lo), float(hi)
    except (TypeError, ValueError):
        raise InvalidParameterError(
            f"{name} must be a pair (low, high) of positive numbers, got {value!r}"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < 1.0 < hi):
        raise InvalidParameterError(
            f"{name} must satisfy 0 < low < 1 < high (T = 1 must be inside), got {value!r}"
        )
    return lo, hi


def as_figsize(value, name: str = "figsize") -> tuple[float, float]:
    """A figure size: a pair ``(width, height)`` of positive inches."""
    try:
        w, h = value
        ok = float(w) > 0 and float(h) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidParameterError(f"{name}: expected (width, height) in inches, got {value!r}")
    return float(w), float(h)


def as_image_path(value, formats, name: str = "path"):
    """A path to save a figure to: a ``str`` or ``os.PathLike`` (:func:`as_path`) whose suffix
    is one of ``formats`` (``(".png", ".svg", ".pdf")``); returned unchanged."""
    import os

    as_path(value, name)
    suffix = os.path.splitext(os.fspath(value))[1].lower()
    if suffix not in formats:
        raise InvalidParameterError(
            f"{name}: cannot tell the image format from {os.fspath(value)!r}; end it with one of "
            f"{tuple(formats)}"
        )
    return value


def as_path(value, name: str = "path"):
    """A file or folder path: a ``str`` or ``os.PathLike``, returned unchanged."""
    import os

    if not isinstance(value, (str, os.PathLike)):
        raise InputTypeError(f"{name}: expected a file path (str or Path), got {type(value).__name__}")
    return value


def as_instance(value, cls, name: str, hint: str = ""):
    """``value`` if it is a ``cls`` (a result or input object of calibkit; ``hint`` says where
    one comes from), else :class:`~calibkit.errors.InputTypeError`."""
    if not isinstance(value, cls):
        where = f" ({hint})" if hint else ""
        raise InputTypeError(
            f"{name}: expected a {cls.__name__}{where}, got {type(value).__name__}"
        )
    return value


def as_list(value, name: str, what: str) -> list:
    """A sequence keyword (``what`` says of what, for the message) as a list: any iterable but a
    string, bytes or a mapping."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ParameterTypeError(
            f"{name}: expected a sequence of {what}, got {shown(value)} of type {type(value).__name__}"
        )
    return list(value)


def as_names(value, count: int, name: str = "class_names") -> list[str]:
    """One name per class: a sequence (not a string) of ``count`` values, shown as text."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ParameterTypeError(
            f"{name}: expected a sequence of {count} names (one per class), got {shown(value)} "
            f"of type {type(value).__name__}"
        )
    names = [str(v) for v in value]
    if len(names) != count:
        raise ShapeMismatchError(f"{name}: got {len(names)} names for {count} classes; give one per class")
    return names


#: The release in which the keywords renamed by issue 30 (one vocabulary) got their new names;
#: the old names are removed in the release after it.
RENAMED_SINCE = "0.2"


def renamed(kwargs: dict, old: str, new: str, *, since: str = RENAMED_SINCE, where: str = "",
            stacklevel: int = 3) -> dict:
    """Move the deprecated keyword ``old`` of ``kwargs`` (the keywords a caller passed) to its
    new name ``new``, in place, and return ``kwargs``.

    The one rule for renamed keywords: the old name keeps working for one release, with a
    :class:`DeprecationWarning` naming both names; passing both is an
    :class:`~calibkit.errors.InvalidParameterError` naming both (``n_bins=5, num_bins=7``
    would otherwise silently pick one). ``where`` names the function or class in the messages;
    ``stacklevel`` points the warning at the caller's line (3: the caller of the function that
    calls this one). Nothing happens when ``old`` was not passed. :func:`renames` applies it
    to a function's keywords.
    """
    if old not in kwargs:
        return kwargs
    at = f"{where}: " if where else ""
    if new in kwargs:
        raise InvalidParameterError(
            f"{at}both {old}= and {new}= given; {old} is the deprecated name of {new} "
            f"(since calibkit {since}): pass only {new}="
        )
    import warnings

    warnings.warn(
        f"{at}{old}= is deprecated since calibkit {since} and will be removed in the next "
        f"release; use {new}= instead",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    kwargs[new] = kwargs.pop(old)
    return kwargs


_F = TypeVar("_F", bound=Callable[..., Any])


def renames(since: str = RENAMED_SINCE, **old_to_new: str) -> Callable[[_F], _F]:
    """Decorator: the function (or ``__init__``) also accepts the old keyword names
    ``old_to_new`` for one release, by :func:`renamed` (a DeprecationWarning; both names
    given is an error). Its signature (``inspect.signature``, scikit-learn's ``get_params``)
    shows the new names only.

    >>> @renames(n_bins="num_bins")
    ... def f(*, num_bins=15):
    ...     return num_bins
    >>> f(num_bins=7)
    7
    >>> f(n_bins=5, num_bins=7)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.errors.InvalidParameterError: f: both n_bins= and num_bins= given; ... pass only num_bins=
    """
    import functools
    import inspect

    def decorate(fn: _F) -> _F:
        owner = fn.__qualname__.removesuffix(".__init__")
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if args and new in signature.bind_partial(*args).arguments:
                        kwargs[new] = None  # given by position: "both names given"
                    renamed(kwargs, old, new, since=since, where=owner, stacklevel=3)
            return fn(*args, **kwargs)

        wrapper.__renamed__ = dict(old_to_new)  # type: ignore[attr-defined]
        return cast(_F, wrapper)

    return decorate
