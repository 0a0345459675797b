"""The statistic a resampling method recomputes: a metric of the space, a binning-free
estimator named by a string, or any callable taking ``sample_weight=``.

:func:`calibkit.confidence_interval` (bootstrap) and :func:`calibkit.calibration_test`
(consistency resampling) read their ``metric=`` argument here, so both accept the same forms.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from ..binned.spec import MetricSpec
from ..errors import InputTypeError, NumericalError

__all__ = ["BINNING_FREE", "metric_of", "pairs_callable", "observed"]

#: The binning-free estimators ``metric=`` may name (any case): each is a callable that takes
#: ``sample_weight=``, resampled like any callable.
BINNING_FREE = ("smece", "ksce")


def metric_of(metric, why: str) -> tuple[MetricSpec | None, Callable[..., Any] | None]:
    """``(spec, None)`` for a metric of the space, ``(None, callable)`` for a callable or a
    named binning-free estimator. ``why`` says, in the error for a callable without a
    ``sample_weight=`` keyword, what the method passes there."""
    if callable(metric) and not isinstance(metric, MetricSpec):
        try:
            params = inspect.signature(metric).parameters
        except (TypeError, ValueError):  # builtins without a signature: trust the call
            return None, metric
        if "sample_weight" not in params and not any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            raise InputTypeError(
                f"metric: the callable {getattr(metric, '__name__', metric)!r} must accept a "
                f"sample_weight= keyword ({why}); wrap it, e.g. "
                f"lambda y, p, sample_weight=None: f(y, p, sample_weight=sample_weight)"
            )
        return None, metric
    if isinstance(metric, str) and metric.lower() in BINNING_FREE:
        from ..binfree.ks import ksce
        from ..binfree.smooth import smece

        named: dict[str, Callable[..., Any]] = {"smece": smece, "ksce": ksce}
        return None, named[metric.lower()]
    return MetricSpec.coerce(metric), None


def pairs_callable(fn, confidence, predicted, num_classes) -> Callable[..., float]:
    """``fn`` on top-label pairs: ``call(correct, sample_weight=None)`` calls
    ``fn(confidence=..., correct=correct, sample_weight=...)``, with ``predicted=`` and
    ``num_classes=`` when given and ``fn`` takes them (``smece`` and ``ksce`` do not: they are
    pooled top-label estimators)."""
    extra = {} if predicted is None else {"predicted": predicted, "num_classes": num_classes}
    if extra:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):  # no signature: pass everything
            params = None
        if params is not None and not any(p.kind is inspect.Parameter.VAR_KEYWORD
                                          for p in params.values()):
            extra = {k: v for k, v in extra.items() if k in params}

    def call(correct, sample_weight=None) -> float:
        return fn(confidence=confidence, correct=correct, sample_weight=sample_weight, **extra)

    call.__name__ = getattr(fn, "__name__", "metric")
    return call


def observed(value, name: str) -> float:
    """The statistic on the data as a float: a callable that returns something else, or a
    value that is not finite, is an error (the resamples would have nothing to compare with)."""
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InputTypeError(
            f"metric: the callable {name!r} returned {value!r} on the data, not a number"
        ) from None
    if not math.isfinite(t):
        raise NumericalError(
            f"metric: the callable {name!r} is {t} on the data (not finite), so there is no "
            f"statistic to resample; check the inputs it is given"
        )
    return t
