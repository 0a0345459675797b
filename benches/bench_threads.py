"""Thread scaling of the kernels (issue 29 item 2): each metric at 1, 2, 4, ... threads.

Every thread count runs in a fresh subprocess with ``RAYON_NUM_THREADS`` set (rayon reads it
once per process), on the same seeded data: (N, K) softmax rows in float64 and float32, and
10M (confidence, correct) pairs. Printed per metric: the median time, the speedup over one
thread, the input read per second, and the target: at 16 threads at least 8x the one-thread
speed, or the machine's memory bandwidth (compare the GB/s column with ``np.sum``'s line, a
single-threaded read of the same array, and with the machine's rated bandwidth).

Usage::

    python benches/bench_threads.py                       # 1, 2, 4, 8, 16 threads (capped at the CPUs)
    python benches/bench_threads.py --threads 1,2 --n 20000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from _machine import cpu_model, median_time


def _data(n: int, k: int, dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, k)) * 3
    p = np.exp(x - x.max(1, keepdims=True))
    p = (p / p.sum(1, keepdims=True)).astype(dtype)
    return rng.integers(0, k, n), p


def child(n: int, k: int, pairs: int, repeat: int) -> dict:
    """Times every metric in this process (its thread count fixed by the environment)."""
    import calibkit

    out: dict = {}
    for dt in ("float64", "float32"):
        y, p = _data(n, k, dt)
        calls = {
            "ECE": lambda: calibkit.ece(y, p),
            "SCE": lambda: calibkit.sce(y, p),
            "ACE": lambda: calibkit.ace(y, p),
            "TACE": lambda: calibkit.tace(y, p),
            "evaluate": lambda: calibkit.evaluate(y, p),
            "np.sum": lambda: np.sum(p),
        }
        for name, fn in calls.items():
            out[f"{name} {dt}"] = (median_time(fn, repeat, warm=True), p.nbytes)
    rng = np.random.default_rng(1)
    conf = rng.uniform(0.2, 1.0, pairs)
    ok = rng.uniform(size=pairs) < conf
    out["pairs ECE float64"] = (median_time(lambda: calibkit.ece(confidence=conf, correct=ok), repeat, warm=True),
                                conf.nbytes + ok.nbytes)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default=None, help="comma-separated thread counts")
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=1_000)
    ap.add_argument("--pairs", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.n, a.k, a.pairs, a.repeat)))
        return 0
    cpus = os.cpu_count() or 1
    try:
        counts = ([int(t) for t in a.threads.split(",")] if a.threads
                  else [t for t in (1, 2, 4, 8, 16) if t <= cpus])
    except ValueError:
        ap.error(f"--threads must be comma-separated whole numbers, got {a.threads!r}")
    if not counts or min(counts) < 1:
        ap.error("--threads: every thread count must be at least 1")
    if a.repeat < 1 or a.n < 1 or a.k < 2 or a.pairs < 1:
        ap.error("--repeat, --n and --pairs must be at least 1 and --k at least 2")
    print(f"CPU: {cpu_model()}; {cpus} logical CPUs; (N, K) = ({a.n}, {a.k}); "
          f"{a.pairs:,} pairs; median of {a.repeat}")
    results = {}
    for t in counts:
        env = dict(os.environ, RAYON_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS="1")
        cmd = [sys.executable, __file__, "--child", "--n", str(a.n), "--k", str(a.k),
               "--pairs", str(a.pairs), "--repeat", str(a.repeat)]
        res = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            sys.stderr.write(res.stderr)
            print(f"bench_threads: the run at {t} threads failed (exit {res.returncode})",
                  file=sys.stderr)
            return 1
        results[t] = json.loads(res.stdout.strip().splitlines()[-1])
    base = counts[0]
    top = counts[-1]
    print(f"{'metric':22s}" + "".join(f"{t:>4d} thr (ms)" for t in counts)
          + f"   speedup {top}/{base}   GB/s at {top}   target")
    for key in results[base]:
        times = [results[t][key][0] for t in counts]
        nbytes = results[base][key][1]
        speedup = times[0] / times[-1]
        gbs = nbytes / times[-1] / 1e9
        if key.startswith("np.sum"):
            target = "(single-threaded read floor)"
        elif top >= 16 and base == 1:
            target = f">= 8x: {'met' if speedup >= 8 else 'not met (see GB/s)'}"
        else:
            target = "(8x at 16 threads: needs a 16-core host)"
        print(f"{key:22s}" + "".join(f"{x * 1e3:13.2f}" for x in times)
              + f"   {speedup:10.2f}x   {gbs:8.1f}   {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
