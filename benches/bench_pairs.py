"""ECE of top-label (confidence, correct) pairs against one ``np.sum`` over the confidences.

The issue's target: ECE of 10M pairs costs at most 2x one ``np.sum`` over the confidences (the
memory-read floor of the input), with no probability matrix built. Both are timed in the same
process, best of several runs (the machines are shared and noisy; the best run is the least
disturbed one), and the ratio is printed with the CPU model from /proc/cpuinfo.

    python benches/bench_pairs.py                  # 10M pairs, float64 and float32, bool correct
    python benches/bench_pairs.py --n 1000000 --repeat 20
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import calibkit
from _machine import cpu_model


def best(f, repeat: int) -> float:
    f()  # warm-up
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--num-bins", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    conf64 = rng.uniform(0.1, 1.0, size=args.n)
    correct = rng.uniform(size=args.n) < conf64
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs visible); N = {args.n:,}, "
          f"{args.num_bins} bins, best of {args.repeat}")
    print(f"{'dtype':8} {'np.sum(conf)':>14} {'calibkit.ece':>14} {'ratio':>7}")
    for dtype in (np.float64, np.float32):
        conf = conf64.astype(dtype)
        t_sum = best(lambda: np.sum(conf), args.repeat)
        t_ece = best(lambda: calibkit.ece(confidence=conf, correct=correct,
                                          num_bins=args.num_bins), args.repeat)
        print(f"{np.dtype(dtype).name:8} {t_sum * 1e3:11.2f} ms {t_ece * 1e3:11.2f} ms "
              f"{t_ece / t_sum:6.2f}x")
    print("target: ratio <= 2.00x (float64 is the issue's case)")


if __name__ == "__main__":
    main()
