"""Benchmark the binning-free estimators at N top-label predictions, in one process.

* ``calibkit.smece`` vs relplot 1.0.3 ``smECE`` on the same (confidence, correct) pairs
  (target, issue 12: >= 3x faster), also checked equal to 1e-5; and ``smece(labels, probs)``
  from an (N, K) matrix (the top-label pass included).
* ``calibkit.ksce`` vs one ``np.sort`` of the confidences (target: <= 3x), from pairs and from
  the (N, K) matrix.
* ``calibkit.decompose`` (CORP, Brier) vs model-diagnostics 1.5.0 ``decompose`` (information).

Two data sets: a miscalibrated one (searched bandwidth ~0.06, one grid size) and a nearly
calibrated one (bandwidth < 0.01, larger grids). Medians of ``--repeat`` runs; the CPU model is
printed.

Usage::

    python benches/bench_binning_free.py            # N = 1_000_000, K = 10
    python benches/bench_binning_free.py --n 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from _machine import cpu_model

import calibkit


def timed(fn, repeat):
    out, ts = None, []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def data(n, k, seed, miscalibrated):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)).astype(np.float64) * 2.5
    probs = calibkit.softmax(logits)
    # Labels drawn from a sharpened (overconfident model) or the same (calibrated) distribution.
    q = probs ** (1.6 if miscalibrated else 1.0)
    q /= q.sum(axis=1, keepdims=True)
    u = rng.random((n, 1))
    labels = np.minimum((q.cumsum(axis=1) < u).sum(axis=1), k - 1)
    conf = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    return labels, probs, conf, correct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--peer-repeat", type=int, default=2, help="repeats of the slow peer libraries")
    args = ap.parse_args()

    import relplot

    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs); numpy {np.__version__}")
    print(f"N = {args.n} top-label predictions (from an (N, {args.k}) float64 matrix); medians\n")
    for name, mis in (("miscalibrated", True), ("nearly calibrated", False)):
        labels, probs, conf, correct = data(args.n, args.k, 0, mis)
        t_rel, v_rel = timed(lambda: relplot.smECE(conf, correct, return_width=True), args.peer_repeat)
        t_sm, v_sm = timed(lambda: calibkit.smece(confidence=conf, correct=correct, return_bandwidth=True), args.repeat)
        t_smp, _ = timed(lambda: calibkit.smece(labels, probs), args.repeat)
        assert abs(v_rel[0] - v_sm[0]) < 1e-5, (v_rel, v_sm)
        t_sort, _ = timed(lambda: np.sort(conf), args.repeat)
        t_ks, _ = timed(lambda: calibkit.ksce(confidence=conf, correct=correct), args.repeat)
        t_ksp, _ = timed(lambda: calibkit.ksce(labels, probs), args.repeat)
        print(f"[{name}] smECE = {v_sm[0]:.6f} (relplot {v_rel[0]:.6f}), bandwidth {v_sm[1]:.6f}")
        print(f"  relplot smECE            {t_rel * 1e3:9.1f} ms")
        print(f"  calibkit.smece (pairs)   {t_sm * 1e3:9.1f} ms   {t_rel / t_sm:6.1f}x faster than "
              "relplot (target >= 3x)")
        print(f"  calibkit.smece (matrix)  {t_smp * 1e3:9.1f} ms   {t_rel / t_smp:6.1f}x faster than relplot")
        print(f"  np.sort(confidences)     {t_sort * 1e3:9.1f} ms")
        print(f"  calibkit.ksce (pairs)    {t_ks * 1e3:9.1f} ms   {t_ks / t_sort:6.2f}x np.sort (target <= 3x: "
              f"{'met' if t_ks / t_sort <= 3 else 'not met'})")
        print(f"  calibkit.ksce (matrix)   {t_ksp * 1e3:9.1f} ms   {t_ksp / t_sort:6.2f}x np.sort")
        if mis:
            try:
                from model_diagnostics.scoring import SquaredError
                from model_diagnostics.scoring import decompose as md

                t_md, _ = timed(lambda: md(correct, conf, scoring_function=SquaredError()), args.peer_repeat)
            except ImportError:
                t_md = float("nan")
            t_dec, _ = timed(lambda: calibkit.decompose(confidence=conf, correct=correct), args.repeat)
            print(f"  model-diagnostics CORP   {t_md * 1e3:9.1f} ms")
            print(f"  calibkit.decompose       {t_dec * 1e3:9.1f} ms   {t_md / t_dec:6.1f}x faster")
        print()


if __name__ == "__main__":
    main()
