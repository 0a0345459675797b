"""Speed of the named metrics against baselines measured in the same process.

For each (N, K, dtype) it times: one ``np.sum`` over the array (the memory-read floor),
calibkit's ECE, class-conditional ECE, SCE, ACE, TACE and RMSCE, a vectorised NumPy baseline for
ECE / SCE / ACE, the pure-NumPy reference (``calibkit.reference``) and the paper's own library
(``uncertainty_metrics`` 0.0.81, imported directly from its numpy module). Ratios are printed
because the machines are shared and noisy; absolute times drift.

    python benches/bench_metrics.py                      # the issue's shapes
    python benches/bench_metrics.py --shapes 10000x10 --repeat 50
    python benches/bench_metrics.py --no-peers           # calibkit and np.sum only

Slow peers are sampled (one call) and skipped where a single call would take minutes
(``--max-peer-seconds``).
"""

from __future__ import annotations

import argparse

import numpy as np
from _machine import cpu_model, median_time

import calibkit
from calibkit import reference

METRICS = {
    "ece": dict(binning="even", max_prob=True, class_conditional=False, threshold=0.0, norm="l1"),
    "cce": dict(binning="even", max_prob=True, class_conditional=True, threshold=0.0, norm="l1"),
    "sce": dict(binning="even", max_prob=False, class_conditional=True, threshold=0.0, norm="l1"),
    "ace": dict(binning="adaptive", max_prob=False, class_conditional=True, threshold=0.0, norm="l1"),
    "tace": dict(binning="adaptive", max_prob=False, class_conditional=True, threshold=0.01, norm="l1"),
    "rmsce": dict(binning="adaptive", max_prob=True, class_conditional=False, threshold=0.0, norm="l2"),
}
# Each row's cost of the peers' slowest calls, in seconds per million entries (measured), used
# to skip calls that would exceed --max-peer-seconds.
PEER_COST = {"um": {"cce": 0.7, "ace": 0.06, "tace": 0.06, "sce": 0.03}, "reference": {"ace": 0.05, "tace": 0.05}}


def timeit(f, repeat: int) -> float:
    return median_time(f, repeat, warm=True)


def make_data(n: int, k: int, dtype, seed: int = 0):
    rng = np.random.default_rng(seed)
    p = np.empty((n, k), dtype=dtype)
    y = np.empty(n, dtype=np.int64)
    step = max(1, 2_000_000 // k)
    for s in range(0, n, step):
        z = rng.normal(size=(min(step, n - s), k)) * 2.5
        z[np.arange(z.shape[0]), rng.integers(0, k, z.shape[0])] += 4.0
        e = np.exp(z - z.max(1, keepdims=True))
        p[s:s + step] = e / e.sum(1, keepdims=True)
        y[s:s + step] = np.where(rng.uniform(size=z.shape[0]) < 0.7, p[s:s + step].argmax(1),
                                 rng.integers(0, k, z.shape[0]))
    return y, p


# --- vectorised NumPy baselines (what a careful user would write) ---------------------------

def numpy_ece(y, p, b=15):
    conf = p.max(1).astype(np.float64)
    correct = p.argmax(1) == y
    idx = np.searchsorted(np.linspace(0, 1, b + 1)[1:], conf, side="right")
    keep = conf > 0
    n = np.bincount(idx[keep], minlength=b + 1)
    s = np.bincount(idx[keep], conf[keep], minlength=b + 1)
    o = np.bincount(idx[keep], correct[keep], minlength=b + 1)
    nz = n > 0
    return float(np.sum(np.abs(o[nz] - s[nz])) / keep.sum())


def numpy_sce(y, p, b=15):
    n, k = p.shape
    s = p.astype(np.float64, copy=False)
    idx = np.searchsorted(np.linspace(0, 1, b + 1)[1:], s, side="right")
    cell = (np.arange(k)[None, :] * (b + 1) + idx).ravel()
    keep = s.ravel() > 0
    cnt = np.bincount(cell[keep], minlength=k * (b + 1)).reshape(k, b + 1)
    ssum = np.bincount(cell[keep], s.ravel()[keep], minlength=k * (b + 1)).reshape(k, b + 1)
    lab_cell = y * (b + 1) + idx[np.arange(n), y]
    lab_keep = s[np.arange(n), y] > 0
    osum = np.bincount(lab_cell[lab_keep], minlength=k * (b + 1)).reshape(k, b + 1)
    tot = cnt.sum(1)
    per = np.abs(osum - ssum).sum(1) / np.maximum(tot, 1)
    return float(per.mean())


def numpy_ace(y, p, b=15):
    n, k = p.shape
    errs = []
    for c in range(k):
        col = p[:, c].astype(np.float64)
        keep = col > 0
        v = col[keep]
        o = (y[keep] == c).astype(np.float64)
        if v.size == 0:
            errs.append(0.0)
            continue
        order = np.argsort(v, kind="stable")
        v, o = v[order], o[order]
        pos = np.minimum(np.round(np.linspace(0, v.size, b, endpoint=False)).astype(int), v.size - 1)
        idx = np.searchsorted(v[pos[1:]], v, side="right")
        errs.append(np.abs(np.bincount(idx, o, minlength=b) - np.bincount(idx, v, minlength=b)).sum() / v.size)
    return float(np.mean(errs))


NUMPY = {"ece": numpy_ece, "sce": numpy_sce, "ace": numpy_ace}

# Issue 29 item 5's ACE targets, at the shape it measured: at most 7x one np.sum, and at least
# 20x faster than uncertainty_metrics.
ISSUE29_SHAPE = (50000, 1000)
ACE_SUM_TARGET = 7.0
ACE_UM_TARGET = 20.0


def met(ok: bool) -> str:
    return "met" if ok else "not met"


def issue29_ace(ace: dict) -> str:
    """The line that sets ACE's measured ratios beside issue 29's targets."""
    line = (f"issue 29 item 5: ace {ace['sum']:.2f}x np.sum (target <= {ACE_SUM_TARGET:g}x: "
            f"{met(ace['sum'] <= ACE_SUM_TARGET)})")
    if "um" in ace:
        line += (f"; {ace['um']:.1f}x faster than uncertainty_metrics (target >= "
                 f"{ACE_UM_TARGET:g}x: {met(ace['um'] >= ACE_UM_TARGET)})")
    return line


def um_call(name, y, p, b=15):
    import importlib

    # The package namespace shadows the module with a function of the same name.
    um = importlib.import_module("uncertainty_metrics.numpy.general_calibration_error")

    kw = METRICS[name]
    return um.gce(y, p, binning_scheme=kw["binning"], max_prob=kw["max_prob"],
                  class_conditional=kw["class_conditional"], norm=kw["norm"],
                  threshold=kw["threshold"], num_bins=b)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", nargs="*", default=["10000x10", "50000x100", "50000x1000", "1000000x10"])
    ap.add_argument("--dtypes", nargs="*", default=["float32", "float64"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-peers", action="store_true", help="time calibkit and np.sum only")
    ap.add_argument("--max-peer-seconds", type=float, default=20.0)
    args = ap.parse_args(argv)
    print(f"CPU: {cpu_model()}; calibkit {calibkit.__version__} from {calibkit.__file__}")

    for shape in args.shapes:
        n, k = (int(v) for v in shape.split("x"))
        for dt in args.dtypes:
            y, p = make_data(n, k, np.dtype(dt))
            entries = n * k / 1e6
            rep = args.repeat if n * k <= 5_000_000 else max(3, args.repeat // 2)
            floor = timeit(lambda: np.sum(p), max(rep, 5))
            am = timeit(lambda: np.argmax(p, axis=1), rep)
            print(f"\n(N, K) = ({n}, {k}) {dt}: np.sum {floor * 1e3:.2f} ms, np.argmax(axis=1) {am * 1e3:.2f} ms")
            print(f"  {'metric':6} {'calibkit':>11} {'x np.sum':>9} | {'numpy vec':>10} {'speedup':>8} | "
                  f"{'reference':>10} {'speedup':>8} | {'unc.metrics':>11} {'speedup':>8}")
            ace = {}  # ACE's ratios, for issue 29's targets
            for name, kw in METRICS.items():
                f = getattr(calibkit, name)
                r = rep if n * k <= 1_000_000 else max(3, rep)
                t = timeit(lambda: f(y, p), r * (20 if n * k <= 200_000 else 1))
                row = f"  {name:6} {t * 1e3:9.3f}ms {t / floor:8.2f}x |"
                if name == "ace":
                    ace["sum"] = t / floor
                cols = []
                if not args.no_peers:
                    if name in NUMPY:
                        tv = timeit(lambda: NUMPY[name](y, p), 1)
                        cols.append(f" {tv * 1e3:8.1f}ms {tv / t:7.1f}x |")
                    else:
                        cols.append(f" {'-':>10} {'-':>8} |")
                    for peer, call in (("reference", lambda: reference.gce(y, p, num_bins=15, **kw)),
                                       ("um", lambda: um_call(name, y, p))):
                        est = PEER_COST.get(peer, {}).get(name, 0.01) * entries
                        if est > args.max_peer_seconds:
                            cols.append(f" {'skipped':>10} {f'(~{est:.0f}s)':>8} |")
                            continue
                        tp = timeit(call, 1 if n * k > 1_000_000 else 2)
                        cols.append(f" {tp * 1e3:9.1f}ms {tp / t:7.1f}x |")
                        if name == "ace" and peer == "um":
                            ace["um"] = tp / t
                print(row + "".join(cols))
            if (n, k) == ISSUE29_SHAPE:
                print("  " + issue29_ace(ace))
            if n == 10000 and k == 10:
                t = timeit(lambda: calibkit.ece(y, p), 2000)
                print(f"  ece per call at (10k, 10): {t * 1e6:.1f} us (target < 50 us)")


if __name__ == "__main__":
    main()
