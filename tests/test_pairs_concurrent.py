"""Top-label pairs written by another thread during a call give a value or a calibkit error.

The pooled pair path (``ece``/``mce``/``rmsce`` with ``confidence=`` and ``correct=`` only) reads
each confidence twice (once for its slot, once for its sum), and each outcome byte twice: a
value changed between the reads must still land inside the table and give some number, or a
refusal (a calibkit error), never a panic, a hang or a message on stderr.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_concurrent_modification import Writer, calls_while_written

import calibkit

CALLS = {
    "ece": lambda c, ok: calibkit.ece(confidence=c, correct=ok),
    "mce": lambda c, ok: calibkit.mce(confidence=c, correct=ok, num_bins=49),
    "threshold": lambda c, ok: float(np.sum(calibkit.calibration_bins(
        confidence=c, correct=ok, threshold=0.3, num_bins=10).counts)),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("target", ["confidence", "correct"])
def test_concurrent_writes_to_pairs_give_a_value_or_a_calibkit_error(name, dtype, target, capfd):
    rng = np.random.default_rng(7)
    n = 300_000
    conf = rng.uniform(0.0, 1.0, n).astype(dtype)
    ok = (rng.uniform(size=n) < conf).astype(np.uint8)
    if target == "confidence":
        writer = Writer(conf, seed=1)
    else:  # outcome bytes: the writer's NaN/huge/negative values become 0, 1 or other bytes
        ok_f = ok.astype(np.float64)
        writer = _ByteWriter(ok, ok_f)
    outcomes = calls_while_written(writer, lambda: CALLS[name](conf, ok), 20)
    assert sum(outcomes.values()) == 20
    out, err = capfd.readouterr()
    assert err == "", err


class _ByteWriter(Writer):
    """Writes 0, 1, 2 and 255 into the outcome bytes, and puts them back."""

    def __init__(self, ok: np.ndarray, ok_f: np.ndarray):
        super().__init__(ok_f, seed=2)
        self.bytes = ok

    def run(self) -> None:
        flat, n, rng = self.bytes, self.bytes.size, self.rng
        orig = flat.copy()
        while not self.stop.is_set():
            a = int(rng.integers(0, n - 1))
            b = min(n, a + int(rng.integers(1, n // 4)))
            flat[a:b] = rng.choice(np.array([0, 1, 2, 255], dtype=np.uint8))
            if rng.random() < 0.5:
                np.copyto(flat, orig)
