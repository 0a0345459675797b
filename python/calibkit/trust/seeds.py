"""Seeds and resample counts of the resampling methods, checked in one place."""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidParameterError

__all__ = ["as_seed", "as_resamples"]

#: Largest accepted ``n_resamples`` (each resample is one pass over the rows).
MAX_RESAMPLES = 1_000_000


def as_seed(seed) -> int:
    """A 64-bit seed: ``seed`` itself (an int >= 0), or fresh OS entropy when None.

    The same seed gives the same resamples for any thread count: the draws are keyed by
    (seed, resample, row) in a counter-based generator (``rust/kernels/resample.rs``).
    """
    if seed is None:
        return int(np.random.SeedSequence().entropy) & (2**64 - 1)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidParameterError(f"seed must be None or an integer >= 0, got {seed!r}")
    return int(seed) & (2**64 - 1)


def as_resamples(n_resamples) -> int:
    """``n_resamples`` as an int in [1, MAX_RESAMPLES], else InvalidParameterError."""
    if isinstance(n_resamples, (bool, np.bool_)) or not isinstance(n_resamples, numbers.Integral) \
            or not 1 <= n_resamples <= MAX_RESAMPLES:
        raise InvalidParameterError(
            f"n_resamples must be an integer in [1, {MAX_RESAMPLES}], got {n_resamples!r}"
        )
    return int(n_resamples)
