"""Bootstrap confidence intervals for any calibration metric.

A bootstrap resample is a vector of per-row multiplicities (weights). They come from a
counter-based generator keyed by (seed, resample, row) (``rust/kernels/weighted/resample.rs``), so the
same seed gives the same interval for any thread count. Default weights are Poisson(1) per row
(the "Poisson bootstrap", Hanley & MacGibbon 2006; Chamandy et al. 2012), which needs no
coordination between rows; ``weights="multinomial"`` gives the classical bootstrap (N rows drawn
with replacement).

How the metric is recomputed per resample:

* even binning: each kept score's bin is computed once (:mod:`calibkit.trust.cells`); a
  resample is then a weighted bincount over the rows, and 1000 resamples run in Rust across
  threads with the GIL released;
* adaptive binning: the edges move with the weights, so each resample recomputes the weighted
  equal-mass bins of the shared (group, score, outcome) triples with the weighted kernel
  primitive, resamples spread over threads in Rust with the GIL released;
* any callable ``metric(labels, probs, sample_weight=w)``: called once per resample with the
  resample's weights.

Methods (``alpha = 1 - confidence``, ``q`` the quantiles of the resampled values T*, T the
estimate on the data):

* ``"percentile"``: ``[q(alpha/2), q(1 - alpha/2)]``.
* ``"basic"`` (reverse percentile, Davison & Hinkley 1997, eq. 5.6):
  ``[2T - q(1 - alpha/2), 2T - q(alpha/2)]``, clipped to [0, 1].

The default is ``"basic"``. Binned calibration errors are biased upward (a calibrated model
scores > 0 on a finite sample; the noise in each bin's gap only adds), and the bootstrap
reproduces that bias a second time: T* sits above T roughly as T sits above the true value.
The percentile interval is centred on T*, so it moves *further* up, away from the true value;
the basic interval reflects the bootstrap distribution around T, moving the interval down by
the estimated bias, which is the direction that covers. The coverage test in
``tests/test_intervals.py`` measures both.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from .. import _native
from .._budget import BOOTSTRAP_CELL_BYTES, check_resamples
from .._params import (
    as_choice,
    as_confidence_level,
    as_flag,
    as_resamples,
    as_seed,
    renamed,
)
from .._progress import Progress
from .._toplabel import resolve
from .._typing import NumBins
from .._validate import length_mismatch_error
from ..binned.auto_bins import resolve_auto
from ..errors import InvalidParameterError, NumericalError
from .cells import pair_cells, row_cells, triples
from .statistic import metric_of, observed, pairs_callable

__all__ = ["confidence_interval", "ConfidenceInterval", "METHODS"]

METHODS = ("basic", "percentile")
WEIGHTS = ("poisson", "multinomial")
#: Resamples whose weights are generated at once on the generic paths (memory: BLOCK x N floats).
_BLOCK = 64


@dataclass(frozen=True)
class ConfidenceInterval:
    """Outcome of :func:`confidence_interval`.

    Attributes
    ----------
    value : float
        The metric on the data.
    low, high : float
        The interval's ends.
    std : float
        Standard deviation of the finite resampled values (the bootstrap standard error).
    confidence_level : float
        The interval's level (``.confidence``, its name before calibkit 0.2, still reads it,
        with a DeprecationWarning).
    method : str
    n_resamples : int
    metric : str
    resamples : ndarray of shape (R,) or None
        The metric on each resample when ``return_resamples=True``.
    estimate : float
        The point the interval goes with, always within ``[low, high]``: for ``"basic"`` the
        bias-corrected estimate ``2 value - median(resamples)`` (clipped to [0, 1]); for
        ``"percentile"`` the median of the resamples. ``value`` is the plug-in estimate (what
        :func:`calibkit.gce` returns), which a basic interval of an upward-biased metric may
        lie above: print ``estimate`` with the interval and ``value`` beside it.
    """

    value: float
    low: float
    high: float
    std: float
    confidence_level: float
    method: str
    n_resamples: int
    metric: str
    resamples: np.ndarray | None = field(default=None, repr=False)
    estimate: float = float("nan")

    def __repr__(self) -> str:
        what = ("bias-corrected" if self.method == "basic" else "median of resamples")
        return (f"ConfidenceInterval({self.metric} {what} {self.estimate:.6g}, "
                f"{self.confidence_level:.0%} {self.method} bootstrap interval "
                f"[{self.low:.6g}, {self.high:.6g}] ({self.n_resamples} resamples), "
                f"plug-in value {self.value:.6g}, std {self.std:.3g})")

    def __iter__(self):
        """``low, high = ci``."""
        return iter((self.low, self.high))

    @property
    def confidence(self) -> float:
        """Deprecated (since calibkit 0.2): the interval's level, now :attr:`confidence_level`
        (``confidence`` only ever means top-label confidences)."""
        import warnings

        warnings.warn(
            "ConfidenceInterval.confidence is deprecated since calibkit 0.2 and will be removed "
            "in the next release; use ConfidenceInterval.confidence_level",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.confidence_level


def _is_level(value) -> bool:
    """Whether ``confidence=`` holds an interval level (a real scalar: the old meaning) rather
    than top-label confidences (an array of shape (N,), which a scalar never is)."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "fiu"
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


#: The keywords :func:`confidence_interval` renamed in calibkit 0.2 (old: new).
_RENAMED = {"confidence": "confidence_level", "top_confidence": "confidence",
            "seed": "random_state"}


_F = TypeVar("_F", bound=Callable[..., Any])


def _old_names(fn: _F) -> _F:
    """``confidence_interval``'s old keywords, for one release (:func:`calibkit._params.renamed`):
    ``confidence=<a number>`` was the level (now ``confidence_level=``), ``top_confidence=``
    the top-label confidences (now ``confidence=``, as in every function), ``seed=`` the seed
    (now ``random_state=``). The level moves first, so an old call giving both
    ``top_confidence=`` and ``confidence=0.9`` still works."""

    @functools.wraps(fn)
    def confidence_interval(*args, **kwargs):
        if _is_level(kwargs.get("confidence")):
            renamed(kwargs, "confidence", "confidence_level", where="confidence_interval")
        renamed(kwargs, "top_confidence", "confidence", where="confidence_interval")
        renamed(kwargs, "seed", "random_state", where="confidence_interval")
        return fn(*args, **kwargs)

    confidence_interval.__renamed__ = dict(_RENAMED)  # type: ignore[attr-defined]
    return confidence_interval  # type: ignore[return-value]  # fn's signature, old names aside


def _check_weights(sample_weight, n: int):
    if sample_weight is None:
        return None
    from ..binned.weights import as_sample_weight

    return as_sample_weight(sample_weight, n)


def _interval(t: float, star: np.ndarray, confidence: float, method: str) -> tuple[float, float]:
    alpha = 1.0 - confidence
    ok = star[np.isfinite(star)]
    if ok.size == 0:
        return float("nan"), float("nan")
    lo_q, hi_q = np.quantile(ok, [alpha / 2.0, 1.0 - alpha / 2.0])
    if method == "percentile":
        return float(lo_q), float(hi_q)
    # every metric of the space lies in [0, 1]; the reflection may leave it
    return float(min(max(2.0 * t - hi_q, 0.0), 1.0)), float(min(max(2.0 * t - lo_q, 0.0), 1.0))


@_old_names
def confidence_interval(labels=None, probs=None, metric="ECE", *, num_bins: NumBins = 15,
                        confidence_level: float = 0.90, n_resamples: int = 1000,
                        method: str = "basic", random_state=None, sample_weight=None,
                        weights: str = "poisson", return_resamples: bool = False,
                        confidence=None, correct=None, predicted=None,
                        num_classes=None, progress=None) -> ConfidenceInterval:
    """Bootstrap confidence interval of a calibration metric.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K), (N, 1) or (N,)
    metric : str, int, MetricSpec or callable, default "ECE"
        A metric of the space (name, paper index 0-31, :class:`calibkit.MetricSpec`), a
        binning-free estimator by name (``"smece"``: :func:`calibkit.smece`, ``"ksce"``:
        :func:`calibkit.ksce`; resampled as a callable, ``num_bins`` ignored), or any
        callable ``metric(labels, probs, sample_weight=w)`` returning a float (e.g. a
        binning-free estimator); the callable is called once per resample, and resamples where
        it is not finite (or that drew no row at all) are left out of the interval and
        ``std``. A metric of the space is finite on every resample; if huge sample weights
        overflow one, it is a :class:`calibkit.NumericalError`.
    num_bins : int or "auto", default 15
        Ignored for a callable.
    confidence_level : float in (0, 1), default 0.90
        The interval's level (scipy's name). Before calibkit 0.2 it was ``confidence=``; a
        number given as ``confidence=`` is still read as the level, with a DeprecationWarning.
    n_resamples : int, default 1000
    method : {"basic", "percentile"}, default "basic"
        See the module doc for why "basic" is the default for upward-biased metrics.
    random_state : int or None
        Seed of the resampling (an integer >= 0; None draws a fresh one): same seed, same
        interval, for any thread count. ``seed=``, its name before calibkit 0.2, still works
        with a DeprecationWarning.
    sample_weight : array_like of shape (N,), optional
        Per-row weights (finite, >= 0): each resample's multiplicities multiply them.
    weights : {"poisson", "multinomial"}, default "poisson"
        How rows are reweighted per resample.
    return_resamples : bool, default False
        Keep the resampled values in ``.resamples``.

    confidence, correct, predicted, num_classes : array_like of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs``, as in :func:`calibkit.gce`. Only
        max-prob metrics; a callable is then called as
        ``metric(confidence=..., correct=..., sample_weight=...)``. Before calibkit 0.2 the
        confidences were ``top_confidence=`` (still accepted, with a DeprecationWarning).
    progress : bool or None, default None
        A progress bar on stderr (:mod:`calibkit._progress`): None = when stderr is a terminal
        and the resampling runs over a second, True = always, False = never.

    Returns
    -------
    ConfidenceInterval

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 5000)
    >>> y = (rng.uniform(size=5000) < p - 0.05).astype(int)   # over-confident by 0.05
    >>> ci = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=500, random_state=0)
    >>> bool(ci.low < 0.05 < ci.high), ci.method
    (True, 'basic')
    >>> bool(ci.low <= ci.estimate <= ci.high)   # the bias-corrected estimate; ci.value: plug-in
    True
    """
    method = as_choice(method, "method", METHODS)
    weights = as_choice(weights, "weights", WEIGHTS)
    return_resamples = as_flag(return_resamples, "return_resamples")
    conf = as_confidence_level(confidence_level)
    r = as_resamples(n_resamples)
    s = as_seed(random_state)
    spec, fn = metric_of(metric, "each bootstrap resample passes its row weights")
    pairs = resolve(labels, probs, confidence, correct, predicted, num_classes)
    if fn is not None:
        if pairs is not None:  # the callable takes the pairs as confidence=, correct=, ...
            on_pairs = pairs_callable(fn, confidence, predicted, num_classes)

            def fn(_labels, _probs, sample_weight=None):
                return on_pairs(correct, sample_weight=sample_weight)

            fn.__name__ = on_pairs.__name__
            labels = np.zeros(pairs.n)
        with Progress(r, "bootstrap", progress, unit="resamples") as bar:
            t, star, name = _callable_resamples(fn, labels, probs, sample_weight, weights, s, r,
                                                bar)
    else:
        assert spec is not None  # metric_of gives a spec or a callable
        if isinstance(num_bins, str):
            num_bins = resolve_auto(num_bins, labels, probs, pairs, max_prob=spec.max_prob,
                                    class_conditional=spec.class_conditional)
        rc = (pair_cells(pairs, spec, num_bins) if pairs is not None
              else row_cells(labels, probs, spec, num_bins))
        with Progress(r, f"{spec.name} bootstrap", progress, unit="resamples") as bar:
            t, star = _space_resamples(spec, rc, sample_weight, weights, s, r, bar)
        name = spec.name
        _require_finite(star, name, sample_weight)
    low, high = _interval(t, star, conf, method)
    # A callable may be undefined on some resamples: like the interval, the spread is that of
    # the finite ones.
    fin = star[np.isfinite(star)]
    std = float(np.std(fin, ddof=1)) if fin.size > 1 else (0.0 if fin.size else float("nan"))
    return ConfidenceInterval(float(t), low, high, std, conf, method, r, name,
                              star if return_resamples else None,
                              _estimate(float(t), star, method))


def _estimate(t: float, star: np.ndarray, method: str) -> float:
    """The point an interval goes with (:attr:`ConfidenceInterval.estimate`): the basic
    method reflects the median resample around ``t`` as it reflects the quantiles, so the
    estimate lies within the interval; the percentile method's is the median itself."""
    ok = star[np.isfinite(star)]
    if ok.size == 0:
        return float("nan")
    med = float(np.median(ok))
    return med if method == "percentile" else float(min(max(2.0 * t - med, 0.0), 1.0))


def _require_finite(star: np.ndarray, name: str, sample_weight) -> None:
    """The metrics of the space are finite on every resample of valid input, unless the
    weights overflow (a row's weight times its multiplicity): an error then, not an interval
    silently computed from the other resamples."""
    bad = int(np.count_nonzero(~np.isfinite(star)))
    if bad:
        why = "" if sample_weight is None else (
            f": each resample multiplies sample_weight (summing to "
            f"{float(np.sum(np.asarray(sample_weight, dtype=np.float64))):.4g}) by its rows' "
            f"multiplicities, which overflowed float64; scale the weights down")
        raise NumericalError(f"{bad} of {star.size} bootstrap resamples of {name} are not finite{why}")


#: Resamples per native call of the adaptive bootstrap while a progress bar is shown (the
#: groups are sorted once, before the first block: a block costs only its resamples). A
#: multiple of the kernel's tasks of 8 resamples, 16 of them, so that a block does not end
#: with threads idle (at (50k, 1000), blocks of 50 took 34 s against 30 s without a bar, once).
PROGRESS_CHUNK = 128


def _space_resamples(spec, rc, sample_weight, weights, seed, r, bar=None):
    check_resamples(rc.groups * rc.nb, r, BOOTSTRAP_CELL_BYTES)
    n = rc.hit.shape[0]
    sw = _check_weights(sample_weight, n)
    if spec.binning == "even":
        if sw is None:
            t = rc.bins.error(spec.norm)
        else:  # a row's weight once per score it keeps (the triples' own rule)
            tr = triples(rc)
            t = tr.error(tr.weight_of(sw), spec.norm)
        star = _native.resample_bootstrap(rc.cell, rc.score, rc.hit, sw, rc.groups, rc.nb,
                                          spec.norm, spec.class_conditional, weights, seed, r)
        if bar is not None:
            bar.update(r)
        return t, star
    # The value is the metric of the data: unweighted, the table gce reduces (rc.bins), so
    # the interval's value is gce's bits; weighted, the weighted table of the cells' triples.
    if sw is None:
        t = rc.bins.error(spec.norm)
    else:
        tr = triples(rc)
        t = tr.error(tr.weight_of(sw), spec.norm)
    # the kept entries sorted once, from the cells (the triples' order, without forming them)
    boot = _native.AdaptiveBootstrap(rc.cell, rc.score, rc.hit, rc.groups, rc.nb)

    def block(first: int, count: int) -> np.ndarray:
        # resamples first..first+count: the draws are keyed by (seed, resample, row), so blocks
        # give the bits of one call (tests/test_adaptive_resampling.py)
        return boot.resample(sw, rc.num_bins, spec.norm, spec.class_conditional, weights, seed,
                             count, first)

    if bar is None or not bar.enabled:
        star = block(0, r)
    else:  # a bar with a count: the resamples in blocks
        parts = []
        for first in range(0, r, PROGRESS_CHUNK):
            parts.append(block(first, min(PROGRESS_CHUNK, r - first)))
            bar.update(parts[-1].size)
        star = np.concatenate(parts) if parts else np.empty(0)
    if bar is not None and not bar.enabled:
        bar.update(r)
    return t, star


def _callable_resamples(fn, labels, probs, sample_weight, weights, seed, r, bar=None):
    n = int(np.shape(labels)[0]) if np.ndim(labels) else 0
    if n == 0:
        raise InvalidParameterError("labels is empty; pass at least one prediction")
    if probs is not None:  # (pairs pass probs=None): resample weights are per row of both
        rows = int(np.shape(probs)[0]) if np.ndim(probs) else 0
        if rows != n:
            raise length_mismatch_error(n, rows)
    sw = _check_weights(sample_weight, n)
    t = observed(fn(labels, probs) if sw is None else fn(labels, probs, sample_weight=sw),
                 getattr(fn, "__name__", "metric"))
    star = np.empty(r)
    for r0 in range(0, r, _BLOCK):
        w = _native.bootstrap_weights(weights, seed, r0, min(_BLOCK, r - r0), n)
        for j in range(w.shape[0]):
            with np.errstate(over="ignore"):  # an overflow is refused just below, by name
                wj = w[j] if sw is None else w[j] * sw
                if sw is not None and not np.isfinite(np.sum(wj)):
                    raise NumericalError(
                        f"bootstrap resample {r0 + j} of {getattr(fn, '__name__', 'metric')} "
                        f"multiplies sample_weight (summing to {float(np.sum(sw)):.4g}) by its "
                        "rows' multiplicities, which overflowed float64; scale the weights down")
            # A resample that drew no row (likely only for a handful of rows) is undefined, not
            # an error of the caller's weights: left out, like any non-finite resample.
            star[r0 + j] = float(fn(labels, probs, sample_weight=wj)) if wj.any() else np.nan
        if bar is not None:
            bar.update(w.shape[0])
    return t, star, getattr(fn, "__name__", "metric")
