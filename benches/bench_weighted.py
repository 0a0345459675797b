"""Benchmark metrics with ``sample_weight`` against the same metrics without.

Weighted tables come from two paths:
- all probabilities (SCE, ACE, TACE and their relatives, by class or pooled): passes over the
  matrix (``rust/kernels/weighted/matrix.rs``, ``matrix_adaptive.rs``; adaptive groups sorted
  once for every bin count of a call), bitwise the table of the path below;
- the top-label metrics: the weighted primitive
  (``rust/kernels/weighted/grouped.rs``) on the metric's kept scores formed as (group, score,
  outcome, row) rows (``rust/kernels/gce/rows.rs``); adaptive bins sort each group by
  (score, row) to place the weighted equal-mass edges.
An unweighted call never forms rows or sorts: it bins the matrix in place (adaptive bins by
histogram selection). So a weighted call costs a multiple of the unweighted one; this prints
that multiple, the weighted SCE and ACE by the rows path (the baselines the matrix passes
replaced, the same values), and the parts of the rows path of a weighted ACE (the rows, the
primitive), and the weighted ``evaluate`` of the whole space at five bin counts against the
unweighted one and (up to 10^7 scores) against its 160 values by single weighted calls, in one
process on the same data, with the CPU model.

There is no target: the ratios are recorded in docs/performance.md ("Weighted single calls" and
the sections after it, the last "Weighted `evaluate`: one matrix call per binning and
threshold").

Usage::

    python benches/bench_weighted.py
    python benches/bench_weighted.py --shapes 10000x100,50000x1000 --repeat 5
"""

from __future__ import annotations

import argparse
import os

import numpy as np
from _machine import cpu_model
from _machine import median_time as _time

import calibkit
from calibkit import _native
from calibkit.binned.weights import form_triples


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="10000x100,50000x1000", help="NxK,NxK...")
    ap.add_argument("--repeat", type=int, default=5, help="calls per timing (median)")
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; {os.cpu_count()} logical CPUs; RAYON_NUM_THREADS="
          f"{os.environ.get('RAYON_NUM_THREADS', '(all)')}")
    for shape in args.shapes.split(","):
        n, k = (int(x) for x in shape.split("x"))
        rng = np.random.default_rng(0)
        p = calibkit.softmax(rng.normal(size=(n, k)) * 3.0)
        y = rng.integers(0, k, n).astype(np.int64)
        sw = rng.integers(1, 4, n).astype(np.float64)  # whole weights, as class balancing
        rep = max(1, args.repeat if n * k <= 10**7 else min(args.repeat, 3))
        print(f"\n({n}, {k}) float64, median of {rep}")
        for name in ("ECE", "SCE", "ACE", "TACE"):
            spec = calibkit.metric_space()[name]
            plain = _time(lambda: calibkit.gce(y, p, **spec.kwargs()), rep)
            weighted = _time(lambda: calibkit.gce(y, p, sample_weight=sw, **spec.kwargs()), rep)
            print(f"  {name:5s} unweighted {plain * 1e3:9.1f} ms   weighted "
                  f"{weighted * 1e3:9.1f} ms   {weighted / plain:6.1f}x")
        # the weighted SCE, ACE and pooled adaptive metric by the rows path (the matrix passes'
        # baselines, same values)
        for name, binning, cc in (("SCE", "even", True), ("ACE", "adaptive", True),
                                  ("pooled adaptive", "adaptive", False)):
            def by_rows(binning=binning, cc=cc):
                tr = form_triples(y, p, binning=binning, max_prob=False, class_conditional=cc,
                                  threshold=0.0, num_bins=15)
                return tr.error(tr.weight_of(sw), "l1")

            def fast(y, p, sample_weight, binning=binning, cc=cc):
                return calibkit.gce(y, p, binning=binning, max_prob=False, class_conditional=cc,
                                    num_bins=15, sample_weight=sample_weight)

            assert by_rows() == fast(y, p, sample_weight=sw)
            t_fast = _time(lambda fast=fast: fast(y, p, sample_weight=sw), rep)
            t_rows_path = _time(by_rows, rep)
            print(f"  {name} weighted by the rows path {t_rows_path * 1e3:.1f} ms: the matrix "
                  f"pass is {t_rows_path / t_fast:.1f}x faster")
        # the parts of a weighted ACE by the rows path: its rows, then the primitive on them
        t_rows = _time(lambda: _native.score_rows(y, p, False, True, 0.0), rep)
        g, s, o, r = _native.score_rows(y, p, False, True, 0.0)
        w = sw[r]
        t_prim = _time(lambda: _native.grouped_bin_stats(g, s, o, w, k, "adaptive", 15), rep)
        print(f"  ACE's parts: rows {t_rows * 1e3:.1f} ms, weighted primitive (sort, edges, "
              f"sums) {t_prim * 1e3:.1f} ms")
        # evaluate: the 32 metrics at five bin counts
        bins = (10, 20, 30, 40, 50)
        ev_rep = 1 if n * k > 10**7 else rep
        t_plain = _time(lambda: calibkit.evaluate(y, p, num_bins=bins), ev_rep)
        ev = calibkit.evaluate(y, p, num_bins=bins, sample_weight=sw)
        t_ev = _time(lambda: calibkit.evaluate(y, p, num_bins=bins, sample_weight=sw), ev_rep)
        line = (f"  evaluate, 160 values: unweighted {t_plain * 1e3:.0f} ms, weighted "
                f"{t_ev * 1e3:.0f} ms ({t_ev / t_plain:.1f}x)")
        if n * k <= 10**7:
            specs = list(calibkit.metric_space())

            def singles():
                return [[calibkit.gce(y, p, **s.kwargs(), num_bins=b, sample_weight=sw)
                         for b in bins] for s in specs]

            assert np.array_equal(np.asarray(singles()), ev.values)
            t_one = _time(singles, 1)
            line += f"; 160 single weighted calls {t_one * 1e3:.0f} ms ({t_one / t_ev:.1f}x slower)"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
