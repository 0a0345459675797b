"""Bootstrap confidence intervals for any calibration metric.

A bootstrap resample is a vector of per-row multiplicities (weights). They come from a
counter-based generator keyed by (seed, resample, row) (``rust/kernels/resample.rs``), so the
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

from dataclasses import dataclass, field

import numpy as np

from .. import _native
from ..errors import InputTypeError, InvalidParameterError, NumericalError
from ..binned.spec import MetricSpec
from .._toplabel import resolve
from ..binned.auto_bins import resolve_auto
from ..binned.bin_intervals import check_confidence
from .cells import pair_cells, row_cells
from .seeds import as_resamples, as_seed

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
    confidence : float
    method : str
    n_resamples : int
    metric : str
    resamples : ndarray of shape (R,) or None
        The metric on each resample when ``return_resamples=True``.
    """

    value: float
    low: float
    high: float
    std: float
    confidence: float
    method: str
    n_resamples: int
    metric: str
    resamples: np.ndarray | None = field(default=None, repr=False)

    def __iter__(self):
        """``low, high = ci``."""
        return iter((self.low, self.high))


def _metric_of(metric):
    """(spec, None) for a metric of the space, (None, callable) for a callable."""
    if callable(metric) and not isinstance(metric, MetricSpec):
        import inspect

        try:
            params = inspect.signature(metric).parameters
        except (TypeError, ValueError):  # builtins without a signature: trust the call
            return None, metric
        if "sample_weight" not in params and not any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            raise InputTypeError(
                f"metric: the callable {getattr(metric, '__name__', metric)!r} must accept a "
                f"sample_weight= keyword (each bootstrap resample passes its row weights); "
                f"wrap it, e.g. lambda y, p, sample_weight=None: f(y, p, sample_weight=sample_weight)"
            )
        return None, metric
    return MetricSpec.coerce(metric), None


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


def confidence_interval(labels=None, probs=None, metric="ECE", *, num_bins=15,
                        confidence: float = 0.90, n_resamples: int = 1000,
                        method: str = "basic", seed=None, sample_weight=None,
                        weights: str = "poisson", return_resamples: bool = False,
                        top_confidence=None, correct=None, predicted=None,
                        num_classes=None) -> ConfidenceInterval:
    """Bootstrap confidence interval of a calibration metric.

    Parameters
    ----------
    labels : array_like of shape (N,)
    probs : array_like of shape (N, K), (N, 1) or (N,)
    metric : str, int, MetricSpec or callable, default "ECE"
        A metric of the space (name, paper index 0-31, :class:`calibkit.MetricSpec`), or any
        callable ``metric(labels, probs, sample_weight=w)`` returning a float (e.g. a
        binning-free estimator); the callable is called once per resample, and resamples where
        it is not finite (or that drew no row at all) are left out of the interval and
        ``std``. A metric of the space is finite on every resample; if huge sample weights
        overflow one, it is a :class:`calibkit.NumericalError`.
    num_bins : int or "auto", default 15
        Ignored for a callable.
    confidence : float in (0, 1), default 0.90
    n_resamples : int, default 1000
    method : {"basic", "percentile"}, default "basic"
        See the module doc for why "basic" is the default for upward-biased metrics.
    seed : int or None
        Same seed, same interval (for any thread count).
    sample_weight : array_like of shape (N,), optional
        Per-row weights (finite, >= 0): each resample's multiplicities multiply them.
    weights : {"poisson", "multinomial"}, default "poisson"
        How rows are reweighted per resample.
    return_resamples : bool, default False
        Keep the resampled values in ``.resamples``.

    top_confidence, correct, predicted, num_classes : array_like of shape (N,) and int, optional
        Top-label input in place of ``labels`` and ``probs`` (see :func:`calibkit.gce`, where
        the confidences are ``confidence=``; here ``confidence=`` is the interval's level, so
        they are ``top_confidence=``). Only max-prob metrics; a callable is then called as
        ``metric(confidence=..., correct=..., sample_weight=...)``.
    Returns
    -------
    ConfidenceInterval

    Examples
    --------
    >>> import numpy as np, calibkit
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 5000)
    >>> y = (rng.uniform(size=5000) < p - 0.05).astype(int)   # over-confident by 0.05
    >>> ci = calibkit.confidence_interval(y, p, num_bins=10, n_resamples=500, seed=0)
    >>> bool(ci.low < 0.05 < ci.high), ci.method
    (True, 'basic')
    """
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidParameterError(f"method must be one of {METHODS}, got {method!r}")
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise InvalidParameterError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    if not isinstance(return_resamples, (bool, np.bool_)):
        raise InputTypeError(f"return_resamples must be True or False, got {return_resamples!r}")
    conf = check_confidence(confidence)
    r = as_resamples(n_resamples)
    s = as_seed(seed)
    spec, fn = _metric_of(metric)
    pairs = resolve(labels, probs, top_confidence, correct, predicted, num_classes)
    if fn is not None:
        if pairs is not None:  # the callable takes the pairs as confidence=, correct=, ...
            fn = _pairs_callable(fn, top_confidence, correct, predicted, num_classes)
            labels = np.zeros(pairs.n)
        t, star, name = _callable_resamples(fn, labels, probs, sample_weight, weights, s, r)
    else:
        if isinstance(num_bins, str):
            num_bins = resolve_auto(num_bins, labels, probs, pairs, max_prob=spec.max_prob,
                                    class_conditional=spec.class_conditional)
        rc = (pair_cells(pairs, spec, num_bins) if pairs is not None
              else row_cells(labels, probs, spec, num_bins))
        t, star = _space_resamples(spec, rc, sample_weight, weights, s, r)
        name = spec.name
        _require_finite(star, name, sample_weight)
    low, high = _interval(t, star, conf, method)
    # A callable may be undefined on some resamples: like the interval, the spread is that of
    # the finite ones.
    fin = star[np.isfinite(star)]
    std = float(np.std(fin, ddof=1)) if fin.size > 1 else (0.0 if fin.size else float("nan"))
    return ConfidenceInterval(float(t), low, high, std, conf, method, r, name,
                              star if return_resamples else None)


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


def _pairs_callable(fn, confidence, correct, predicted, num_classes):
    """``fn`` called on top-label pairs: ``fn(confidence=..., correct=..., sample_weight=...)``
    (with ``predicted=``/``num_classes=`` when given), whatever rows the bootstrap passes."""
    extra = {} if predicted is None else {"predicted": predicted, "num_classes": num_classes}

    def on_pairs(_labels, _probs, sample_weight=None):
        return fn(confidence=confidence, correct=correct, sample_weight=sample_weight, **extra)

    on_pairs.__name__ = getattr(fn, "__name__", "metric")
    return on_pairs


def _space_resamples(spec, rc, sample_weight, weights, seed, r):
    n = rc.hit.shape[0]
    sw = _check_weights(sample_weight, n)
    if spec.binning == "even":
        if sw is None:
            t = rc.bins.error(spec.norm)
        else:
            from .cells import weighted_stats

            t = weighted_stats(rc, sw).error(spec.norm)
        star = _native.resample_bootstrap(rc.cell, rc.score, rc.hit, sw, rc.groups, rc.nb,
                                          spec.norm, spec.class_conditional, weights, seed, r)
        return t, star
    from .cells import triples

    tr = triples(rc)
    t = tr.error(tr.weight_of(sw), spec.norm)
    star = _native.resample_bootstrap_grouped(
        tr.group, np.ascontiguousarray(tr.score, dtype=np.float64), tr.outcome, tr.row, sw, n,
        tr.num_groups, spec.binning, tr.num_bins, spec.norm, spec.class_conditional, weights,
        seed, r)
    return t, star


def _callable_resamples(fn, labels, probs, sample_weight, weights, seed, r):
    n = int(np.shape(labels)[0]) if np.ndim(labels) else 0
    if n == 0:
        raise InvalidParameterError("labels is empty; pass at least one prediction")
    sw = _check_weights(sample_weight, n)
    t = float(fn(labels, probs) if sw is None else fn(labels, probs, sample_weight=sw))
    star = np.empty(r)
    for r0 in range(0, r, _BLOCK):
        w = _native.bootstrap_weights(weights, seed, r0, min(_BLOCK, r - r0), n)
        for j in range(w.shape[0]):
            wj = w[j] if sw is None else w[j] * sw
            # A resample that drew no row (likely only for a handful of rows) is undefined, not
            # an error of the caller's weights: left out, like any non-finite resample.
            star[r0 + j] = float(fn(labels, probs, sample_weight=wj)) if wj.any() else np.nan
    return t, star, getattr(fn, "__name__", "metric")
