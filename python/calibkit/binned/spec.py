"""Metric identities: :class:`MetricSpec`, :class:`MetricSpace`, :func:`metric_space`.

The public face is :mod:`calibkit.space`, which re-exports all of this together with
:func:`calibkit.evaluate`; this module exists so that :mod:`calibkit.evaluation` can depend on
the metric identities without importing :mod:`calibkit.space` (which imports it back).
It is also the one place where a metric argument (a name, a paper index of any integer type,
a :class:`MetricSpec`, a mapping of its fields or a 5-tuple, or a list of those) is turned into
metrics: :func:`as_space` serves ``evaluate``, ``Accumulator``, ``calibkit.dask`` and plots.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._params import as_flag, check_gce_params
from ..errors import InputTypeError, InvalidParameterError

__all__ = ["MetricSpec", "MetricSpace", "metric_space", "as_space",
           "NAMED_METRICS", "PAPER_THRESHOLDS", "DEFAULT_NUM_BINS", "PAPER_NUM_BINS"]

#: The two thresholds of the paper's 32-metric space.
PAPER_THRESHOLDS: tuple[float, float] = (0.0, 0.01)

#: The bin counts :func:`evaluate` uses by default: the paper's bin-count sweep plus 15, the
#: default ``num_bins`` of every metric function (so ``evaluate(y, P).get("ECE", 15)`` works).
DEFAULT_NUM_BINS: tuple[int, ...] = (10, 15, 20, 30, 40, 50)
#: The paper's bin-count sweep (the study's default).
PAPER_NUM_BINS: tuple[int, ...] = (10, 20, 30, 40, 50)

#: Stable names of the well-known metrics -> (binning, max_prob, class_conditional, threshold, norm).
NAMED_METRICS: dict[str, tuple[str, bool, bool, float, str]] = {
    "CCE": ("even", True, True, 0.0, "l1"),  # class-conditional ECE, paper index 0
    "ECE": ("even", True, False, 0.0, "l1"),  # paper index 4
    "SCE": ("even", False, True, 0.0, "l1"),  # paper index 8
    "RMSCE": ("adaptive", True, False, 0.0, "l2"),  # paper index 21
    "ACE": ("adaptive", False, True, 0.0, "l1"),  # paper index 24
    "TACE": ("adaptive", False, True, 0.01, "l1"),  # paper index 26
    "MCE": ("even", True, False, 0.0, "max"),  # maximum calibration error (outside the 32)
}
_ALIAS_OF = {v: k for k, v in NAMED_METRICS.items()}

_CANONICAL_RE = re.compile(
    r"^gce\(\s*(even|adaptive)\s*,\s*(top|all)\s*,\s*(classwise|pooled)\s*,"
    r"\s*([^,()\s]+)\s*,\s*(l1|l2|max)\s*\)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class MetricSpec:
    """One calibration metric of the General Calibration Error family.

    Parameters
    ----------
    binning : {"even", "adaptive"}, default "even"
        Equal-width bins, or bins holding (about) equal numbers of scores.
    max_prob : bool, default True
        Score only each row's top-label probability (True) or every probability (False).
    class_conditional : bool, default False
        Compute the error per class and average over all K classes (True), or pool all scores.
    threshold : float, default 0.0
        Keep only scores strictly above this value (applied after the max-prob selection).
    norm : {"l1", "l2", "max"}, default "l1"
        How bin gaps are combined (l2 takes one square root at the end; see docs/spec.md).

    Attributes
    ----------
    name : str
        The stable short name when the metric has one (``"ECE"``, ``"CCE"``, ``"SCE"``,
        ``"RMSCE"``, ``"ACE"``, ``"TACE"``, ``"MCE"``), else :attr:`canonical_name`.
    canonical_name : str
        ``"gce(binning,top|all,classwise|pooled,threshold,norm)"``, e.g.
        ``"gce(even,top,pooled,0.0,l1)"``; :meth:`from_name` parses it back.
    index : int or None
        Position in the paper's 32-metric space, or None when the threshold is not 0 or 0.01
        or the norm is ``"max"``.

    Examples
    --------
    >>> from calibkit.space import MetricSpec
    >>> spec = MetricSpec("adaptive", False, True, 0.01, "l1")
    >>> spec.name, spec.index
    ('TACE', 26)
    >>> spec.kwargs()
    {'binning': 'adaptive', 'max_prob': False, 'class_conditional': True, 'threshold': 0.01, 'norm': 'l1'}
    """

    binning: str = "even"
    max_prob: bool = True
    class_conditional: bool = False
    threshold: float = 0.0
    norm: str = "l1"

    def __post_init__(self):
        # binning, norm and threshold are checked (and the threshold made a float) by the core
        _, _, t, _ = check_gce_params(self.binning, self.norm, self.threshold, 1)
        object.__setattr__(self, "threshold", t)
        object.__setattr__(self, "max_prob", as_flag(self.max_prob, "max_prob"))
        object.__setattr__(
            self, "class_conditional", as_flag(self.class_conditional, "class_conditional")
        )

    # -- identity -------------------------------------------------------------------------
    def as_tuple(self) -> tuple[str, bool, bool, float, str]:
        """``(binning, max_prob, class_conditional, threshold, norm)``, the native kernel's form."""
        return (self.binning, self.max_prob, self.class_conditional, self.threshold, self.norm)

    def kwargs(self) -> dict:
        """Keyword arguments for :func:`calibkit.gce` (add ``num_bins=`` yourself)."""
        return {
            "binning": self.binning,
            "max_prob": self.max_prob,
            "class_conditional": self.class_conditional,
            "threshold": self.threshold,
            "norm": self.norm,
        }

    @property
    def alias(self) -> str | None:
        """The stable short name (``"ECE"``, ...) or None."""
        return _ALIAS_OF.get(self.as_tuple())

    @property
    def canonical_name(self) -> str:
        """Unambiguous name spelling out all five properties."""
        return (
            f"gce({self.binning},{'top' if self.max_prob else 'all'},"
            f"{'classwise' if self.class_conditional else 'pooled'},"
            f"{self.threshold!r},{self.norm})"
        )

    @property
    def name(self) -> str:
        """The short name if the metric has one, else :attr:`canonical_name`."""
        return self.alias or self.canonical_name

    @property
    def index(self) -> int | None:
        """Index in the paper's 32-metric space (docs/spec.md), or None when outside it."""
        if self.norm == "max" or self.threshold not in PAPER_THRESHOLDS:
            return None
        return (
            16 * (self.binning == "adaptive")
            + 8 * (not self.max_prob)
            + 4 * (not self.class_conditional)
            + 2 * (self.threshold == 0.01)
            + (self.norm == "l2")
        )

    def describe(self) -> str:
        """A one-line human description, e.g. ``"even bins, top-label, pooled, t=0, l1"``."""
        return (
            f"{self.binning} bins, {'top-label' if self.max_prob else 'all probabilities'}, "
            f"{'class-conditional' if self.class_conditional else 'pooled'}, "
            f"threshold {self.threshold:g}, {self.norm}"
        )

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_index(cls, index: int) -> MetricSpec:
        """The metric at ``index`` (0-31) of the paper's space."""
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, numbers.Integral):
            raise InputTypeError(f"index: expected an int in [0, 32), got {index!r}")
        i = int(index)
        if not 0 <= i < 32:
            raise InvalidParameterError(
                f"index: the paper's space numbers its metrics 0..31, got {i}"
            )
        return cls(
            binning="adaptive" if i & 16 else "even",
            max_prob=not i & 8,
            class_conditional=not i & 4,
            threshold=0.01 if i & 2 else 0.0,
            norm="l2" if i & 1 else "l1",
        )

    @classmethod
    def from_name(cls, name: str) -> MetricSpec:
        """Parse a short name (``"ECE"``, case-insensitive) or a :attr:`canonical_name`."""
        if not isinstance(name, str):
            raise InputTypeError(f"name: expected a str, got {type(name).__name__}")
        key = name.strip().upper()
        if key in NAMED_METRICS:
            return cls(*NAMED_METRICS[key])
        m = _CANONICAL_RE.match(name.strip())
        if m is None:
            raise InvalidParameterError(
                f"metric: unknown metric name {name!r}; use one of {sorted(NAMED_METRICS)} or a "
                f"canonical name such as 'gce(adaptive,all,classwise,0.01,l2)'"
            )
        binning, top, cw, thr, norm = m.groups()
        try:
            t = float(thr)
        except ValueError:
            raise InvalidParameterError(
                f"metric: threshold {thr!r} in {name!r} is not a number"
            ) from None
        return cls(binning.lower(), top.lower() == "top", cw.lower() == "classwise", t, norm.lower())

    @classmethod
    def coerce(cls, item) -> MetricSpec:
        """Turn a spec, short/canonical name, paper index, 5-tuple or kwargs mapping into a spec."""
        if isinstance(item, MetricSpec):
            return item
        if isinstance(item, str):
            return cls.from_name(item)
        if isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)):
            return cls.from_index(int(item))
        if isinstance(item, Mapping):
            unknown = set(item) - {"binning", "max_prob", "class_conditional", "threshold", "norm"}
            if unknown:
                raise InvalidParameterError(
                    f"metric: unknown keys {sorted(unknown)}; a metric mapping takes binning, "
                    f"max_prob, class_conditional, threshold and norm"
                )
            return cls(**item)
        if isinstance(item, tuple) and len(item) == 5:
            return cls(*item)
        raise InputTypeError(
            f"metric: cannot make a metric from {item!r} ({type(item).__name__}); pass a "
            f"MetricSpec, a name like 'ECE', a paper index 0-31, a 5-tuple (binning, max_prob, "
            f"class_conditional, threshold, norm) or a mapping of those keys"
        )


class MetricSpace(Sequence):
    """An ordered, duplicate-free collection of :class:`MetricSpec`.

    Parameters
    ----------
    specs : iterable
        Each item a :class:`MetricSpec`, a name (``"ECE"`` or a canonical name), a paper index
        (0-31), a 5-tuple or a mapping of MetricSpec's fields. Must not be empty or repeat a metric.

    Notes
    -----
    Integer keys of :meth:`get` / :meth:`position` are positions *in this space*; for the default
    paper space (:func:`metric_space` with no arguments) they coincide with the paper's indices.
    :meth:`by_paper_index` looks a metric up by its paper index in any space.

    Examples
    --------
    >>> from calibkit.space import MetricSpace
    >>> space = MetricSpace(["ECE", "SCE", {"binning": "even", "norm": "max"}])
    >>> space.names
    ('ECE', 'SCE', 'MCE')
    >>> space.position("sce")
    1
    """

    __slots__ = ("_specs", "_pos")

    def __init__(self, specs: Iterable) -> None:
        if isinstance(specs, (str, MetricSpec, Mapping)) or not isinstance(specs, Iterable):
            raise InputTypeError(
                "specs: expected an iterable of metrics (e.g. ['ECE', 'SCE']), got "
                f"{type(specs).__name__}; wrap a single metric in a list"
            )
        out = tuple(MetricSpec.coerce(s) for s in specs)
        if not out:
            raise InvalidParameterError(
                "space: a metric space needs at least one metric; use metric_space() for the "
                "paper's 32"
            )
        pos: dict[MetricSpec, int] = {}
        for i, s in enumerate(out):
            if s in pos:
                raise InvalidParameterError(
                    f"space: metric {s.name} appears twice (positions {pos[s]} and {i}); each "
                    f"metric may appear once"
                )
            pos[s] = i
        self._specs = out
        self._pos = pos

    def __reduce__(self):
        # explicit, so that every pickle protocol (0 and 1 too) works despite __slots__
        return (MetricSpace, (self._specs,))

    # Sequence protocol
    def __len__(self) -> int:
        return len(self._specs)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return MetricSpace(self._specs[key])
        if isinstance(key, (str, MetricSpec)):
            return self.get(key)
        return self._specs[key]

    def __iter__(self):
        return iter(self._specs)

    def __contains__(self, item) -> bool:
        try:
            return MetricSpec.coerce(item) in self._pos
        except (ValueError, TypeError):
            return False

    def __eq__(self, other) -> bool:
        if isinstance(other, MetricSpace):
            return self._specs == other._specs
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._specs)

    def __add__(self, other) -> MetricSpace:
        return MetricSpace(self._specs + tuple(MetricSpace(other)))

    @property
    def specs(self) -> tuple[MetricSpec, ...]:
        """The metrics, in order."""
        return self._specs

    @property
    def names(self) -> tuple[str, ...]:
        """The metric names (short name if any, else canonical), in order."""
        return tuple(s.name for s in self._specs)

    def position(self, key) -> int:
        """Position of a metric in this space.

        ``key`` is a position (int, negative counts from the end), a :class:`MetricSpec`, or a
        name (short, case-insensitive, or canonical).
        """
        if isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
            n = len(self._specs)
            i = int(key)
            if not -n <= i < n:
                raise InvalidParameterError(
                    f"metric: position {i} is out of range for a space of {n} metrics"
                )
            return i % n
        if isinstance(key, (str, MetricSpec)):
            spec = MetricSpec.coerce(key)
            if spec not in self._pos:
                shown = ", ".join(self.names[:8]) + (", ..." if len(self) > 8 else "")
                raise InvalidParameterError(
                    f"metric: {spec.name} is not in this space of {len(self)} metrics "
                    f"({shown})"
                )
            return self._pos[spec]
        raise InputTypeError(
            f"metric: expected a position, a name or a MetricSpec, got {type(key).__name__}"
        )

    def get(self, key) -> MetricSpec:
        """The :class:`MetricSpec` for a position, name or spec (see :meth:`position`)."""
        return self._specs[self.position(key)]

    def by_paper_index(self, index: int) -> MetricSpec:
        """The metric of this space whose paper index is ``index``."""
        return self.get(MetricSpec.from_index(index))

    def select(self, **fields) -> MetricSpace:
        """The sub-space whose metrics match every given field, e.g. ``select(binning="even")``."""
        allowed = {"binning", "max_prob", "class_conditional", "threshold", "norm"}
        bad = set(fields) - allowed
        if bad:
            raise InvalidParameterError(
                f"select: unknown fields {sorted(bad)}; choose from {sorted(allowed)}"
            )
        kept = [s for s in self._specs if all(getattr(s, k) == v for k, v in fields.items())]
        if not kept:
            raise InvalidParameterError(f"select: no metric of this space matches {fields}")
        return MetricSpace(kept)

    def to_tuples(self) -> list[tuple[str, bool, bool, float, str]]:
        """The specs as the native kernel's tuples."""
        return [s.as_tuple() for s in self._specs]

    def __repr__(self) -> str:
        width = max(len(n) for n in self.names)
        lines = [f"MetricSpace({len(self)} metrics)"]
        for i, s in enumerate(self._specs):
            idx = "" if s.index is None else f"[paper {s.index:2d}] "
            lines.append(f"  {i:3d}  {s.name:<{width}}  {idx}{s.describe()}")
        return "\n".join(lines)


def _tuple_of(value, name: str) -> tuple:
    if isinstance(value, (str, bool, np.bool_, numbers.Real)):
        return (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise InputTypeError(
            f"{name}: expected a value or a sequence of values, got {type(value).__name__}"
        ) from None
    if not out:
        raise InvalidParameterError(f"{name}: must not be empty")
    if len(set(out)) != len(out):
        raise InvalidParameterError(f"{name}: repeats a value ({out}); give each value once")
    return out


def _flags_of(value, name: str) -> tuple:
    """One flag or a sequence of flags, each True/False (calibkit._params.as_flag)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or (
            isinstance(value, np.ndarray) and value.ndim == 0):
        return (as_flag(value, name),)
    return _tuple_of(tuple(as_flag(v, name) for v in value), name)


def metric_space(
    thresholds=PAPER_THRESHOLDS,
    norms=("l1", "l2"),
    binnings=("even", "adaptive"),
    max_prob=(True, False),
    class_conditional=(True, False),
) -> MetricSpace:
    """Enumerate a grid of GCE metrics, by default the paper's 32 in the appendix's order.

    The grid is the product binnings x max_prob x class_conditional x thresholds x norms, the
    last varying fastest. With the defaults, position ``i`` is the paper's metric ``i``:
    ``16*[adaptive] + 8*[not max_prob] + 4*[not class_conditional] + 2*[threshold == 0.01]
    + [l2]`` (0 = CCE, 4 = ECE, 8 = SCE, 21 = RMSCE, 24 = ACE, 26 = TACE).

    Parameters
    ----------
    thresholds : float or sequence of float, default (0.0, 0.01)
    norms : str or sequence of {"l1", "l2", "max"}, default ("l1", "l2")
    binnings : str or sequence of {"even", "adaptive"}, default ("even", "adaptive")
    max_prob : bool or sequence of bool, default (True, False)
    class_conditional : bool or sequence of bool, default (True, False)

    Returns
    -------
    MetricSpace
        For arbitrary lists of metrics build :class:`MetricSpace` directly.

    Examples
    --------
    >>> from calibkit.space import metric_space
    >>> space = metric_space()
    >>> len(space), space[4].name, space[26].name
    (32, 'ECE', 'TACE')
    >>> len(metric_space(thresholds=(0.0, 0.001, 0.01), norms=("l1", "l2", "max")))
    72
    """
    grid = [
        (b, m, c, t, n)
        for b in _tuple_of(binnings, "binnings")
        for m in _flags_of(max_prob, "max_prob")
        for c in _flags_of(class_conditional, "class_conditional")
        for t in _tuple_of(thresholds, "thresholds")
        for n in _tuple_of(norms, "norms")
    ]
    return MetricSpace(MetricSpec(*g) for g in grid)


def _is_single(value) -> bool:
    """True when ``value`` names one metric rather than a collection of them."""
    if isinstance(value, (str, MetricSpec, Mapping)):
        return True
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return True
    return (isinstance(value, tuple) and len(value) == 5 and isinstance(value[0], str)
            and value[0] in ("even", "adaptive"))


def as_space(value, default=None) -> tuple[MetricSpace, bool]:
    """``(space, single)`` from a metric argument; ``single`` when it named one metric.

    ``value`` is a :class:`MetricSpace`, one metric (a name, a paper index of any integer type,
    a :class:`MetricSpec`, a mapping of its fields, a 5-tuple) or an iterable of metrics;
    ``None`` means ``default`` (a space; the paper's 32 when ``default`` is None).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.binned.spec import as_space
    >>> space, single = as_space(np.int64(4))
    >>> space.names, single
    (('ECE',), True)
    """
    if value is None:
        return (metric_space() if default is None else default), False
    if isinstance(value, MetricSpace):
        return value, False
    if _is_single(value):
        return MetricSpace([value]), True
    if not isinstance(value, Iterable):
        raise InputTypeError(
            f"metric: cannot make a metric from {value!r} ({type(value).__name__}); pass a "
            f"name such as 'ECE', a paper index 0-31, a MetricSpec, a mapping of its fields, "
            f"a 5-tuple, or a list of those"
        )
    return MetricSpace(value), False


def _as_space(space) -> MetricSpace:
    return as_space(space)[0]
