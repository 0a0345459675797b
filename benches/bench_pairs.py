"""ECE of top-label (confidence, correct) pairs against one ``np.sum`` over the confidences.

The issue's target: ECE of 10M pairs costs at most 2x one ``np.sum`` over the confidences (the
memory-read floor of the input), with no probability matrix built. Both are timed in the same
process, back to back, best of ``--repeat`` runs (the machines are shared and noisy; the best
run is the least disturbed one), in ``--rounds`` rounds whose ratios are printed with their
range, beside the CPU model from /proc/cpuinfo.

Two ratios per round: wall clock (the target; calibkit uses every core, ``np.sum`` one), and
CPU work (process CPU time of calibkit, summed over its threads, over that of ``np.sum``). On a
machine busy with other work the second threads' wall time suffers first; the work ratio does
not, and on an idle machine the wall ratio is about the work ratio over the number of cores.

    python benches/bench_pairs.py                  # 10M pairs, float64 and float32, bool correct
    python benches/bench_pairs.py --n 1000000 --repeat 20 --rounds 3
    python benches/bench_pairs.py --data calibrated  # most confidences in the top bin
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from _machine import cpu_model

import calibkit


def best(f, repeat: int) -> tuple[float, float]:
    """(best wall time, best process CPU time) of `repeat` calls after a warm-up."""
    f()  # warm-up
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        f()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def span(v: list[float]) -> str:
    return f"{min(v):5.2f}x / {statistics.median(v):5.2f}x / {max(v):5.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--num-bins", type=int, default=15)
    ap.add_argument("--data", choices=["uniform", "calibrated"], default="uniform")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    if args.data == "uniform":
        conf64 = rng.uniform(0.1, 1.0, size=args.n)
    else:  # a confident, calibrated model: most pairs in the top bin
        conf64 = np.minimum(rng.beta(30.0, 1.0, size=args.n), 1.0)
    correct = rng.uniform(size=args.n) < conf64
    threads = os.environ.get("RAYON_NUM_THREADS", f"{os.cpu_count()} (all)")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs visible, calibkit threads: "
          f"{threads}); N = {args.n:,} {args.data} pairs, {args.num_bins} bins, best of "
          f"{args.repeat}, {args.rounds} rounds")
    print(f"{'dtype':8} {'np.sum(conf)':>13} {'calibkit.ece':>13} {'wall ratio':>11} {'CPU-work ratio':>15}")
    for dtype in (np.float64, np.float32):
        conf = conf64.astype(dtype)
        walls, works = [], []
        for _ in range(args.rounds):
            t_sum, c_sum = best(lambda: np.sum(conf), args.repeat)
            t_ece, c_ece = best(lambda: calibkit.ece(confidence=conf, correct=correct,
                                                     num_bins=args.num_bins), args.repeat)
            walls.append(t_ece / t_sum)
            works.append(c_ece / max(c_sum, 1e-9))
            print(f"{np.dtype(dtype).name:8} {t_sum * 1e3:10.2f} ms {t_ece * 1e3:10.2f} ms "
                  f"{t_ece / t_sum:10.2f}x {works[-1]:14.2f}x")
        print(f"{np.dtype(dtype).name:8} ratio min / median / max: wall {span(walls)}; "
              f"CPU work {span(works)}")
    print("target: wall ratio <= 2.00x (float64 is the issue's case)")


if __name__ == "__main__":
    main()
