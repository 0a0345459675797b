"""Benchmark ``calibkit.ece_sweep`` on the inputs that made the old sweep quadratic (issue 25).

* Monotone data with one swapped pair (N rows, distinct scores, outcomes 0 then 1 with one
  adjacent 0/1 pair swapped in the middle): the sweep runs to about N bins before a bin splits
  the pair, so the old sweep's O(B) per bin count cost O(N^2) (100k rows: 23-36 s, 1M about an
  hour).
* Weighted separable data (outcomes 0 then 1, random weights): the old weighted sweep built a
  full table per bin count (16k rows: 13-39 s).
* Random miscalibrated data (the common case: the sweep stops after a few bins).

The baseline, in the same process on the same data, is the old sweep's loop (one
``sorted_bin_starts`` per bin count, plus the two tables both sweeps build; weighted, one
``calibration_bins`` per bin count), run for
at most ``--budget`` seconds: where it does not finish, its total is extrapolated from the bin
counts it reached (its cost per bin count grows linearly, so the total as the square of the bin
count). ``np.sort`` of the scores is printed as the floor. The CPU model is printed first.

Usage::

    python benches/bench_sweep.py                    # N = 100_000 and 1_000_000
    python benches/bench_sweep.py --n 100000 --budget 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _machine import cpu_model

import calibkit
from calibkit._validate import validate_inputs
from calibkit.binned.groups import score_groups
from calibkit.binned.table import sorted_bin_starts


def _rises(outcomes, counts) -> bool:
    nz = counts > 0
    return bool(np.all(np.diff(outcomes[nz] / counts[nz]) >= 0))


def old_unweighted(y, p, binning, top, budget, half):
    """The sweep before issue 25: O(B) per bin count. Returns (bin count, seconds, finished);
    ``half`` receives (bin count, seconds) at half the budget, for the extrapolation."""
    t0 = time.perf_counter()
    ((s, o),) = score_groups(*validate_inputs(y, p), True, False, 0.0)  # as the old sweep
    order = np.argsort(s, kind="stable")
    s = s[order].astype(np.float64)
    cum = np.concatenate(([0], np.cumsum(o[order], dtype=np.int64)))
    chosen = 1
    for b in range(2, top + 1):
        bounds = sorted_bin_starts(s, binning, b)
        if not _rises(np.diff(cum[bounds]), np.diff(bounds)):
            return chosen, time.perf_counter() - t0, True
        chosen = b
        if not half and time.perf_counter() - t0 > budget / 2:
            half.append((b, time.perf_counter() - t0))
        if time.perf_counter() - t0 > budget:
            return chosen, time.perf_counter() - t0, False
    return chosen, time.perf_counter() - t0, True


def extrapolated(half, b2, t2, target):
    """Total time of the old unweighted sweep to ``target`` bin counts: per bin count it costs
    ``a + c * b`` (a fixed overhead plus the O(b) boundaries), so the time to reach ``b`` is
    ``a * b + c * b^2 / 2``, fitted to the two points measured."""
    (b1, t1), = half
    c = 2 * (t2 / b2 - t1 / b1) / (b2 - b1)
    a = t1 / b1 - c * b1 / 2
    return a * target + c * target**2 / 2


def old_weighted(y, p, w, binning, top, budget):
    """The weighted sweep before issue 25: one table per bin count."""
    t0 = time.perf_counter()
    chosen = 1
    for b in range(2, top + 1):
        t = calibkit.calibration_bins(y, p, binning=binning, num_bins=b, sample_weight=w)
        if not _rises(t.sum_outcome[0], t.counts[0]):
            return chosen, time.perf_counter() - t0, True
        chosen = b
        if time.perf_counter() - t0 > budget:
            return chosen, time.perf_counter() - t0, False
    return chosen, time.perf_counter() - t0, True


def data(kind, n, rng):
    p = np.sort(rng.uniform(0.5, 1.0, n))
    if kind == "random":
        return (rng.uniform(size=n) < p**2).astype(np.int64), p, None
    y = (np.arange(n) >= n // 2).astype(np.int64)
    if kind == "swapped":
        y[n // 2 - 1], y[n // 2] = 1, 0
        return y, p, None
    return y, p, rng.uniform(0.1, 2.0, n)  # weighted separable


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--budget", type=float, default=10.0,
                    help="seconds the old sweep may run per case before it is extrapolated")
    args = ap.parse_args()
    print(f"CPU: {cpu_model()}")
    rng = np.random.default_rng(0)
    for n in args.n:
        for kind in ("swapped", "weighted", "random"):
            y, p, w = data(kind, n, rng)
            t0 = time.perf_counter()
            np.sort(p)
            floor = time.perf_counter() - t0
            for binning in ("adaptive", "even"):
                t0 = time.perf_counter()
                r = calibkit.ece_sweep(y, p, binning=binning, sample_weight=w)
                new = time.perf_counter() - t0
                half: list = []
                if w is None:
                    b, old, done = old_unweighted(y, p, binning, n, args.budget, half)
                else:
                    top = min(n, 1_000_000)
                    b, old, done = old_weighted(y, p, w, binning, top, args.budget)
                if not done:
                    assert b <= r.num_bins
                    # weighted: one O(N) table per bin count, linear; unweighted: fitted
                    old = (old * r.num_bins / b if w is not None or not half
                           else extrapolated(half, b, old, r.num_bins))
                else:
                    assert b == r.num_bins, (b, r.num_bins)
                # both sweeps build the tables at 1 and at the chosen bin count (old: the
                # unweighted loop above skips them; weighted, every table is in its loop)
                if w is None:
                    t0 = time.perf_counter()
                    for nb in {1, r.num_bins}:
                        calibkit.calibration_bins(y, p, binning=binning, num_bins=nb)
                    old += time.perf_counter() - t0
                how = "" if done else f" (extrapolated from b={b})"
                print(f"N={n:>8} {kind:9} {binning:8} bins={r.num_bins:>7}  new {new:8.3f} s  "
                      f"old {old:10.3f} s{how}  old/new {old / new:10.1f}x  "
                      f"new/np.sort {new / floor:6.1f}x")


if __name__ == "__main__":
    main()
