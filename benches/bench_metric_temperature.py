"""MetricTemperatureScaling (ECE) fit time against TemperatureScaling's (NLL), interleaved.

Each round fits both once on the same synthetic overconfident logits (``bench_recalibration``'s
data); the best round of each is kept (the machines are shared and noisy) and the ratio is
printed with the CPU model. Issue 14's target: at most 10x at (N, K) = (50k, 100).

    python benches/bench_metric_temperature.py [--n 50000] [--k 100] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

from _machine import cpu_model
from bench_recalibration import synthetic

from calibkit.recalibration import MetricTemperatureScaling, TemperatureScaling


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    z, y = synthetic(args.n, args.k)
    best = {"TemperatureScaling": float("inf"), "MetricTemperatureScaling": float("inf")}
    for _ in range(args.rounds):
        for name, cls in (("TemperatureScaling", TemperatureScaling),
                          ("MetricTemperatureScaling", MetricTemperatureScaling)):
            est = cls(input="logits")
            t = time.perf_counter()
            est.fit(z, y)
            best[name] = min(best[name], time.perf_counter() - t)
            if name == "MetricTemperatureScaling":
                m = est
    ratio = best["MetricTemperatureScaling"] / best["TemperatureScaling"]
    print(f"CPU: {cpu_model()}; (N, K) = ({args.n}, {args.k}); best of {args.rounds}, interleaved")
    for name, t in best.items():
        print(f"{name:26} {t * 1e3:8.1f} ms")
    print(f"ratio {ratio:.1f}x (target <= 10x: {'met' if ratio <= 10 else 'not met'}); "
          f"{len(m.curve_)} loss evaluations, "
          f"T = {m.temperature_:.5f}, ECE = {m.loss_:.6f}")


if __name__ == "__main__":
    main()
