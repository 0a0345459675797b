"""Top-label metrics of long rows against one ``np.sum`` over the matrix, interleaved.

Each round times np.sum, then every metric once, and the best of the rounds is kept for each
(the machines are shared and noisy; interleaving exposes every candidate to the same load, and
the best run is the least disturbed). Ratios and the CPU model are printed. Run it once with the
default threads and once with ``RAYON_NUM_THREADS=1``.

    python benches/bench_toplabel.py                        # (50000, 1000) float64
    python benches/bench_toplabel.py --shape 50000x1000 --dtype float32 --rounds 15
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _machine import cpu_model
from bench_metrics import METRICS, make_data

import calibkit


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="50000x1000")
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--metrics", nargs="*", default=["ece", "cce", "rmsce", "sce", "tace", "ace"])
    args = ap.parse_args(argv)
    n, k = map(int, args.shape.split("x"))
    y, p = make_data(n, k, np.dtype(args.dtype))
    calls = {"np.sum": lambda: np.sum(p)}
    for m in args.metrics:
        calls[m] = (lambda kw: lambda: calibkit.gce(y, p, num_bins=15, **kw))(METRICS[m])
    best = {name: float("inf") for name in calls}
    for f in calls.values():
        f()  # warm-up
    for _ in range(args.rounds):
        for name, f in calls.items():
            t = time.perf_counter()
            f()
            best[name] = min(best[name], time.perf_counter() - t)
    threads = os.environ.get("RAYON_NUM_THREADS", "default")
    print(f"CPU: {cpu_model()}; ({n}, {k}) {args.dtype}; threads: {threads}; best of {args.rounds}, interleaved")
    for name, t in best.items():
        print(f"{name:8} {t * 1e3:9.2f} ms  {t / best['np.sum']:6.2f}x np.sum")


if __name__ == "__main__":
    main()
