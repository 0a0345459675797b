"""An input written by another thread during a call gives a value or a calibkit error.

Large inputs (from 32k entries) are read with the GIL released, so another Python thread can
write to the array while a kernel reads it. Kernels whose later passes trust an earlier pass
(counts sizing buffers, a check of the rows) verify it and raise
``calibkit.errors.InputChangedError``; any other disagreement gives some number. Never a Rust
panic (``pyo3_runtime.PanicException``, a BaseException), a hang, an out-of-bounds access or a
message on stderr. A private native function checks the last-resort guard that turns a panic
into ``calibkit.errors.InternalError`` silently.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import calibkit
from calibkit import _native
from calibkit.errors import CalibkitError, InputChangedError, InternalError


def _probs(n: int, k: int, dtype, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    return rng.integers(0, k, n), np.ascontiguousarray(p, dtype=dtype)


CALLS = {
    "ece": lambda y, p: calibkit.ece(y, p),
    "sce": lambda y, p: calibkit.sce(y, p),
    "rmsce": lambda y, p: calibkit.rmsce(y, p),
    "ace": lambda y, p: calibkit.ace(y, p),
    "tace": lambda y, p: calibkit.tace(y, p),
    "pooled_adaptive": lambda y, p: calibkit.gce(
        y, p, binning="adaptive", max_prob=False, class_conditional=False, norm="l1", num_bins=15
    ),
    "calibration_bins": lambda y, p: float(
        np.sum(calibkit.calibration_bins(y, p, num_bins=10).counts)
    ),
    "evaluate": lambda y, p: float(np.nansum(np.asarray(calibkit.evaluate(y, p).values))),
}

# (N, K): short rows (vector scan, K <= 16), long rows, and one column per class block.
CALLS_PER_SHAPE = 25
SHAPES = [(100_000, 4), (10_000, 40), (200_000, 1)]


class Writer(threading.Thread):
    """Writes random values, NaN, huge and negative numbers into `p` until stopped, and puts
    rows back to their original values, in slices large enough that NumPy writes them with the
    GIL released (so the writes overlap the kernel's reads)."""

    def __init__(self, p: np.ndarray, seed: int):
        super().__init__(daemon=True)
        self.p = p.reshape(-1)
        self.orig = self.p.copy()
        self.stop = threading.Event()
        self.rng = np.random.default_rng(seed)

    def run(self) -> None:
        flat, n, rng = self.p, self.p.size, self.rng
        specials = np.array([np.nan, 1e300, -5.0, 0.0, 1.0, 0.5, np.inf, 2.0, 0.999, 1e-30])
        noise = rng.random(n // 4).astype(flat.dtype)
        while not self.stop.is_set():
            a = int(rng.integers(0, n - 1))
            b = min(n, a + int(rng.integers(1, n // 4)))
            kind = rng.integers(0, 4)
            with np.errstate(all="ignore"):
                if kind == 0:
                    flat[a:b] = specials[rng.integers(0, len(specials))]
                elif kind == 1:
                    flat[a:b] = noise[: b - a]
                elif kind == 2:
                    np.multiply(flat[a:b], 1.5, out=flat[a:b])
                else:
                    np.copyto(flat[a:b], self.orig[a:b])
            # Give valid stretches a chance, so that calls also run to the end.
            if rng.random() < 0.5:
                np.copyto(flat, self.orig)


def calls_while_written(writer, call, times: int) -> dict:
    """Runs ``call()`` ``times`` times while ``writer`` (a started-here thread with a ``stop``
    event) writes to its input: each gives a float or a calibkit error that is not an
    InternalError. Returns how many of each."""
    outcomes = {"value": 0, "error": 0}
    writer.start()
    try:
        for _ in range(times):
            try:
                v = call()
            except CalibkitError as e:
                assert not isinstance(e, InternalError), e
                outcomes["error"] += 1
            else:
                assert isinstance(v, float)
                outcomes["value"] += 1
    finally:
        writer.stop.set()
        writer.join()
    return outcomes


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_concurrent_writes_give_a_value_or_a_calibkit_error(name, dtype, capfd):
    call = CALLS[name]
    outcomes = {"value": 0, "error": 0}
    for shape in SHAPES:
        y, p = _probs(*shape, dtype, seed=shape[1])
        assert p.size >= 1 << 15  # the GIL is released
        got = calls_while_written(Writer(p, seed=len(name)), lambda y=y, p=p: call(y, p),
                                  CALLS_PER_SHAPE)
        for key, v in got.items():
            outcomes[key] += v
    assert sum(outcomes.values()) == CALLS_PER_SHAPE * len(SHAPES)
    out, err = capfd.readouterr()
    assert err == "", err


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_input_changed_between_the_passes_is_named(dtype):
    """Rows valid when the histogram pass counted them and changed before the gathering pass:
    the kernels catch it at the latest in the gathering pass (checked in `cargo test` for each
    pass); here, an input that a writer keeps flipping between two valid states must still
    give a value or InputChangedError/InvalidProbabilitiesError."""
    y, p = _probs(20_000, 2, dtype, seed=3)
    a, b = p.copy(), p[:, ::-1].copy()
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            np.copyto(p, a)
            np.copyto(p, b)

    t = threading.Thread(target=flip, daemon=True)
    t.start()
    try:
        for _ in range(20):
            for f in (calibkit.ace, calibkit.sce):
                try:
                    v = f(y, p)
                except (InputChangedError, calibkit.errors.InvalidProbabilitiesError):
                    pass
                else:
                    assert 0.0 <= v <= 1.0
    finally:
        stop.set()
        t.join()


def test_a_panic_becomes_internal_error_silently(capfd):
    with pytest.raises(InternalError, match="please report it"):
        _native._panic_for_tests()
    assert issubclass(InternalError, CalibkitError) and issubclass(InternalError, RuntimeError)
    assert issubclass(InputChangedError, CalibkitError) and issubclass(InputChangedError, ValueError)
    out, err = capfd.readouterr()
    assert err == ""


@pytest.mark.parametrize("name", ["ece", "sce", "ace", "tace", "rmsce", "evaluate"])
def test_concurrent_label_writes_give_a_value_or_a_calibkit_error(name, capfd):
    """Labels written during the call (to other classes, negative or past K: the kernels
    checked them before, and index with them later) never read or write out of bounds."""
    call = CALLS[name]
    y, p = _probs(60_000, 6, np.float64, seed=11)
    y = np.ascontiguousarray(y, dtype=np.int64)
    orig = y.copy()
    stop = threading.Event()

    def write():
        rng = np.random.default_rng(5)
        bad = np.array([-1, 6, 7, 1 << 40, -(1 << 62)], dtype=np.int64)
        while not stop.is_set():
            a = int(rng.integers(0, y.size - 1))
            b = min(y.size, a + int(rng.integers(1, y.size // 2)))
            y[a:b] = bad[rng.integers(0, len(bad))] if rng.random() < 0.5 else rng.integers(0, 6)
            if rng.random() < 0.5:
                np.copyto(y, orig)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    try:
        for _ in range(30):
            try:
                v = call(y, p)
            except CalibkitError as e:
                assert not isinstance(e, InternalError), e
            else:
                assert isinstance(v, float)
    finally:
        stop.set()
        t.join()
    assert capfd.readouterr().err == ""
