"""Small helpers shared by the analysis modules."""

from __future__ import annotations

import inspect

import numpy as np

from ..errors import InputTypeError

__all__ = ["as_floats", "make_estimator", "recalibration_inputs"]


def make_estimator(factory, **kwargs):
    """Call ``factory`` with the keywords it accepts (all of them if it takes ``**kwargs``).

    The recalibration classes share ``input=`` but only the stochastic ones take
    ``random_state=``; this passes each what it understands.

    Examples
    --------
    >>> make_estimator(lambda *, input: input, input="logits", random_state=0)
    'logits'
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return factory(**kwargs)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return factory(**kwargs)
    return factory(**{k: v for k, v in kwargs.items() if k in params})


def recalibration_inputs(val, test):
    """``(X_val, X_test, input)`` for fitting on ``val`` and predicting on ``test``.

    Both splits must be given to an estimator in the same space: logits when both are logits,
    otherwise the probabilities of both (the estimators convert them as they need).
    """
    if val.kind == "logits" and test.kind == "logits":
        return val.scores, test.scores, "logits"
    import numpy as np

    return np.asarray(val.probs), np.asarray(test.probs), "probs"


def as_floats(values, name: str) -> np.ndarray:
    """``values`` as a float64 array, or an InputTypeError naming ``name`` (strings, objects).

    Examples
    --------
    >>> as_floats([1, 2], "x").dtype
    dtype('float64')
    """
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputTypeError(f"{name} must hold real numbers: {exc}") from None
