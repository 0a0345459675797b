"""Benchmark the trust layer: bootstrap intervals and the calibration test.

Targets (issue 11), measured in one process on the same data:
  * 1000 bootstrap resamples of ECE at (10k, 10) cost at most 2000 single ``calibkit.ece``
    calls' time (the ratio printed is resample time / one ece call);
  * 1000 resamples of ECE at (50k, 1000) float64 in at most 3 s (the whole
    ``calibkit.confidence_interval`` call: validation, per-row cells, resampling).
  * 1000 bootstrap resamples of ACE or TACE at (10k, 100) cost at most 300 single ``gce``
    calls of the same metric (issue 29; one sort per group, each resample a pass over weights).
Also printed: the calibration test (1000 label redraws) at the same sizes, and the CPU model.

Usage::

    python benches/bench_trust.py
    python benches/bench_trust.py --quick
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _machine import cpu_model
from _machine import median_time as _time

import calibkit


def _data(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 3.0
    p = calibkit.softmax(logits)
    y = np.array([rng.choice(k, p=row) for row in p[: min(n, 2000)]])
    y = np.resize(y, n)
    return y.astype(np.int64), np.ascontiguousarray(p, dtype=np.float64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args(argv)
    rep = 3 if args.quick else 5
    print(f"CPU: {cpu_model()}; {os.cpu_count()} logical CPUs; RAYON_NUM_THREADS="
          f"{os.environ.get('RAYON_NUM_THREADS', '(all)')}")

    y, p = _data(10_000, 10)
    t_ece = _time(lambda: calibkit.ece(y, p), 200 if not args.quick else 50)
    t_ci = _time(lambda: calibkit.confidence_interval(y, p, n_resamples=1000, random_state=1), rep)
    t_test = _time(lambda: calibkit.calibration_test(y, p, n_resamples=1000, random_state=1), rep)
    print(f"(10000, 10) float64: one ece {t_ece * 1e6:.1f} us")
    print(f"  confidence_interval, 1000 resamples: {t_ci * 1e3:.1f} ms = "
          f"{t_ci / t_ece:.0f} ece calls (target <= 2000)")
    print(f"  calibration_test, 1000 redraws:      {t_test * 1e3:.1f} ms = "
          f"{t_test / t_ece:.0f} ece calls")

    y, p = _data(10_000, 100)
    for name in ("ACE", "TACE"):
        spec = calibkit.metric_space()[name]
        kw = dict(binning=spec.binning, max_prob=spec.max_prob,
                  class_conditional=spec.class_conditional, threshold=spec.threshold)
        t_one = _time(lambda: calibkit.gce(y, p, **kw), 20 if not args.quick else 5)
        t_ci = _time(lambda: calibkit.confidence_interval(y, p, name, n_resamples=1000,
                                                          random_state=1), 1 if args.quick else 3)
        print(f"(10000, 100) float64 {name}: one call {t_one * 1e3:.2f} ms; 1000 resamples "
              f"{t_ci:.2f} s = {t_ci / t_one:.0f} single calls (issue 29 item 1, target <= 300: "
              f"{'met' if t_ci / t_one <= 300 else 'not met'})")

    y, p = _data(50_000, 1000)
    t_ece = _time(lambda: calibkit.ece(y, p), rep)
    t_ci = _time(lambda: calibkit.confidence_interval(y, p, n_resamples=1000, random_state=1), rep)
    t_test = _time(lambda: calibkit.calibration_test(y, p, n_resamples=1000, random_state=1), rep)
    print(f"(50000, 1000) float64: one ece {t_ece * 1e3:.1f} ms")
    print(f"  confidence_interval, 1000 resamples: {t_ci:.2f} s (target <= 3 s) = "
          f"{t_ci / t_ece:.0f} ece calls")
    print(f"  calibration_test, 1000 redraws:      {t_test:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
