"""Benchmark: fit time of every recalibration method at (N, K) = (50k, 100).

Synthetic overconfident logits (a correct-class signal plus noise and per-class offsets, scaled
up so the network is overconfident). Every fit is timed (median of ``--repeat`` runs; the slow
ones once unless asked) and printed with two ratios:

* against an in-process baseline, a plain SciPy temperature fit (``minimize_scalar`` bounded on
  ``log T`` of a ``logsumexp`` NLL), so that figures taken on a busy machine stay comparable;
* against the fastest peer figure measured on this kind of machine (netcal / torch-uncertainty;
  see the issue): < 1 means faster than the peer.

Run: ``python benches/bench_recalibration.py [--n 50000] [--k 100] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

PEERS = {  # seconds, fastest peer measured on this kind of machine at (50k, 100)
    "TemperatureScaling": (0.243, "netcal"),
    "VectorScaling": (1.4, "torch-uncertainty"),
    "MatrixScaling": (13.0, "torch-uncertainty"),
    "HistogramBinning": (0.226, "netcal"),
    "HistogramBinning(even)": (0.226, "netcal"),
    "IsotonicRegression": (0.459, "netcal"),
}


def synthetic(n, k, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k)) + 0.5 * rng.normal(size=k)
    z[np.arange(n), y] += 2.5
    return 4.0 * z, y


def scipy_baseline(z, y):
    """The obvious temperature fit: bounded Brent on log T of the mean NLL."""
    from scipy.optimize import minimize_scalar
    from scipy.special import logsumexp

    rows = np.arange(len(y))

    def nll(u):
        a = z / np.exp(u)
        return float(np.mean(logsumexp(a, axis=1) - a[rows, y]))

    res = minimize_scalar(nll, bounds=(np.log(0.01), np.log(100.0)), method="bounded")
    return float(np.exp(res.x))


def timed(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="runs per fast method (median)")
    ap.add_argument("--slow-repeat", type=int, default=1, help="runs per slow method")
    ap.add_argument("--only", nargs="*", default=None, help="subset of method names")
    args = ap.parse_args(argv)

    import calibkit
    from calibkit import recalibration as R

    z, y = synthetic(args.n, args.k)
    p = calibkit.softmax(z)
    print(
        f"recalibration fits at (N, K) = ({args.n}, {args.k}), float64 logits; "
        f"medians of {args.repeat} (slow methods: {args.slow_repeat})"
    )
    t_base, t_scipy = timed(lambda: scipy_baseline(z, y), args.repeat)
    print(
        f"baseline  scipy minimize_scalar NLL temperature fit: {t_base * 1e3:9.1f} ms "
        f"(T = {t_scipy:.5f})"
    )

    methods = [
        ("TemperatureScaling", lambda: R.TemperatureScaling(input="logits"), z, False),
        ("VectorScaling", lambda: R.VectorScaling(input="logits"), z, False),
        ("MatrixScaling", lambda: R.MatrixScaling(input="logits"), z, True),
        ("HistogramBinning", lambda: R.HistogramBinning(input="probs"), p, False),
        (
            "HistogramBinning(even)",
            lambda: R.HistogramBinning(input="probs", binning="even"),
            p,
            False,
        ),
        ("IsotonicRegression", lambda: R.IsotonicRegression(input="probs"), p, False),
        (
            "ClassConditionalHistogramBinning",
            lambda: R.ClassConditionalHistogramBinning(input="probs"),
            p,
            False,
        ),
        (
            "BootstrapHistogramBinning",
            lambda: R.BootstrapHistogramBinning(input="probs", random_state=0),
            p,
            False,
        ),
        ("MetricTemperatureScaling", lambda: R.MetricTemperatureScaling(input="logits"), z, True),
        (
            "NeuralNetworkScaling",
            lambda: R.NeuralNetworkScaling(input="logits", random_state=0),
            z,
            True,
        ),
    ]
    header = f"{'method':34s} {'fit':>10s} {'/baseline':>10s} {'peer':>22s} {'/peer':>7s}  notes"
    print(header)
    print("-" * len(header))
    for name, make, x, slow in methods:
        if args.only and name not in args.only:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t, est = timed(
                lambda make=make, x=x: make().fit(x, y), args.slow_repeat if slow else args.repeat
            )
        notes = []
        if hasattr(est, "n_iter_"):
            notes.append(f"n_iter={est.n_iter_}")
        if hasattr(est, "temperature_"):
            notes.append(f"T={est.temperature_:.4f}")
        if caught:
            notes.append(f"warnings: {[str(w.message)[:40] for w in caught]}")
        peer = PEERS.get(name)
        peer_s = f"{peer[0] * 1e3:8.0f} ms {peer[1]:>11s}" if peer else ""
        ratio = f"{t / peer[0]:7.2f}" if peer else ""
        print(
            f"{name:34s} {t * 1e3:7.0f} ms {t / t_base:10.2f} {peer_s:>22s} {ratio:>7s}  "
            + ", ".join(notes)
        )

    # binary Platt scaling at (N,): for completeness
    yb = (y % 2).astype(int)
    s = z[:, 1] - z[:, 0]
    t, _ = timed(lambda: R.PlattScaling(input="logits").fit(s, yb), args.repeat)
    print(f"{'PlattScaling (binary, N scores)':34s} {t * 1e3:7.0f} ms {t / t_base:10.2f}")


if __name__ == "__main__":
    main()
