"""The same bits whatever the batching (issue 29 item 3): ``Accumulator`` over random
batchings and ``calibkit.dask`` over random chunkings against ``gce`` (via ``evaluate``, which
is bitwise ``gce``), 80 values.

Every table builder keeps exact cell sums in grid units (docs/spec.md, "Cell sums"), and
batch and chunk tables carry them (``CalibrationBins.score_units``), so the values are
``gce``'s bits whatever the cuts. (Before, 20 of these 80 values differed in the last bits.)
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires

import calibkit
from calibkit.streaming import Accumulator

METRICS = ["ECE", "SCE", "ACE", "TACE", "RMSCE"]


def _values():
    dask_array = requires("dask.array")
    import calibkit.dask as cd

    rng = np.random.default_rng(5)
    out = []
    for trial in range(8):
        n, k = int(rng.integers(200, 3000)), int(rng.integers(2, 12))
        p = calibkit.softmax(rng.normal(size=(n, k)) * 2)
        y = rng.integers(0, k, n)
        cuts = np.sort(rng.choice(np.arange(1, n), size=int(rng.integers(1, 6)), replace=False))
        acc = Accumulator(METRICS, num_bins=15)
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, n]):
            acc.update(y[a:b], p[a:b])
        stream = acc.compute()
        chunk = int(rng.integers(100, n))
        dask = cd.evaluate(dask_array.from_array(y, chunks=chunk),
                           dask_array.from_array(p, chunks=(chunk, k)), space=METRICS,
                           num_bins=15)
        for m in METRICS:
            g = calibkit.evaluate(y, p, space=[m], num_bins=15).get(m, 15)
            out.append((f"{trial} {m} stream", stream.get(m, 15), g))
            out.append((f"{trial} {m} dask", dask.get(m, 15), g))
    return out


def test_streaming_and_dask_equal_gce_bitwise_for_any_batching():
    values = _values()
    assert len(values) == 80
    differ = [key for key, v, g in values if v != g]
    assert not differ, f"{len(differ)} of 80 differ: {differ}"


def test_streaming_and_dask_equal_gce_to_rounding_for_any_batching():
    for key, v, g in _values():
        assert v == pytest.approx(g, rel=1e-12, abs=1e-15), key
