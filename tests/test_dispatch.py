"""Every SIMD level gives bitwise the same metric values and the same errors.

``CALIBKIT_SIMD`` (read once per process, see ``rust/kernels/core/simd.rs``) caps the instruction set
the Rust kernels dispatch on: ``portable``, ``avx2`` or ``avx512``. Each level runs in its own
subprocess (and the portable one also on one thread); ECE, class-conditional ECE, SCE, ACE, TACE,
RMSCE, the top-label pair input and ``evaluate`` must agree bitwise (float.hex), on short and
long rows, float32 and float64, inputs large enough to be split over threads, ties, rows at
exactly 1, and inputs that fail a check (same error class and message).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _softmax_rows import PROGRAM_HEADER

from calibkit import _native

_PROGRAM = PROGRAM_HEADER + r"""
import json
import numpy as np
import calibkit
from calibkit import _native

from _softmax_rows import data as _rows

def data(n, k, dtype, seed):
    return _rows(n, k, dtype, seed, exact_ones=True)

def hexes(v):
    return [float(x).hex() for x in np.ravel(np.asarray(v, dtype=np.float64))]

def outcome(f):
    try:
        return hexes(f())
    except Exception as e:  # the error class and message must agree too
        return f"{type(e).__name__}: {e}"

out = {"level": _native.simd_level()}
single = {
    "ece": calibkit.ece, "sce": calibkit.sce, "ace": calibkit.ace, "tace": calibkit.tace,
    "rmsce": calibkit.rmsce,
    "cce": lambda y, p: calibkit.gce(y, p, binning="even", max_prob=True, class_conditional=True,
                                     threshold=0.0, norm="l1", num_bins=15),
}
for n, k in [(3000, 3), (40000, 10), (3000, 17), (2000, 64), (600, 1000), (70, 1001)]:
    for dtype in (np.float64, np.float32):
        y, p = data(n, k, dtype, n + k)
        key = f"{n}x{k} {np.dtype(dtype).name}"
        for name, f in single.items():
            out[f"{key} {name}"] = outcome(lambda: f(y, p))
        out[f"{key} evaluate"] = outcome(
            lambda: calibkit.evaluate(y, p, num_bins=[1, 15, 50]).values)
        conf = p.max(1)
        correct = (p.argmax(1) == y).astype(np.uint8)
        out[f"{key} pairs"] = outcome(lambda: calibkit.ece(confidence=conf, correct=correct))
        bad = p.copy()
        bad[n // 2, k // 2] = np.nan
        out[f"{key} nan"] = outcome(lambda: calibkit.ece(y, bad))
        off = p.copy()
        off[n // 3, 0] += 0.01
        out[f"{key} sum"] = outcome(lambda: calibkit.sce(y, off))
print(json.dumps(out))
"""


def _run(level: str | None, threads: str = "2") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CALIBKIT_SIMD"}
    env["RAYON_NUM_THREADS"] = threads
    if level is not None:
        env["CALIBKIT_SIMD"] = level
    r = subprocess.run([sys.executable, "-c", _PROGRAM], capture_output=True, text=True, env=env,
                       check=True)
    return json.loads(r.stdout)


_ORDER = ["portable", "avx2", "avx512"]


@pytest.fixture(scope="module")
def runs():
    return {
        "default": _run(None),
        "portable": _run("portable"),
        "portable, 1 thread": _run("portable", threads="1"),
        "avx2": _run("avx2"),
        "avx512": _run("avx512"),
    }


def test_the_cap_selects_the_level(runs):
    detected = runs["default"]["level"]
    assert detected in _ORDER
    for level in _ORDER:
        # A cap above what the CPU has leaves the CPU's level.
        want = _ORDER[min(_ORDER.index(level), _ORDER.index(detected))]
        assert runs[level]["level"] == want, level
    assert runs["portable, 1 thread"]["level"] == "portable"


def test_every_level_gives_bitwise_the_same_values(runs):
    want = runs["portable"]
    assert len(want) > 100
    for name, got in runs.items():
        diff = [k for k in want if k != "level" and got[k] != want[k]]
        assert not diff, f"{name} differs from the portable path at {diff[:5]}"
    # The checks did run: the bad inputs raised, and the valid ones gave numbers.
    assert all(isinstance(v, str) for k, v in want.items() if k.endswith((" nan", " sum")))
    assert all(isinstance(v, list) for k, v in want.items() if k.endswith((" ece", " evaluate")))


def test_the_native_level_is_a_known_name():
    assert _native.simd_level() in _ORDER
