"""A/B two builds of the native module in one process: the same calls on the same arrays,
alternating between the builds, min of 15 runs each; prints new / old per case.

Keep a copy of the old build first (``cp python/calibkit/_native.abi3.so /tmp/old.so``), build
the new one (``cargo build --release --features python --lib``), then::

    RAYON_NUM_THREADS=1 python benches/ab_builds.py /tmp/old.so target/release/libcalibkit.so \\
        ECE,SCE,ACE,TACE 10000x10,10000x100 float64,float32

The build loaded first has measured up to 8% faster than the same code loaded second: run
again with the builds swapped and quote the geometric mean of the two new / old ratios.

Cases: ECE, CCECE (class-conditional), SCE, ACE, TACE, topACE (adaptive top-label), EVAL
(``evaluate`` of the 32 metrics), EVAL5, ACE5, TACE5, POOLA5 (pooled ACE), SCE5, TSCE5 (SCE at
threshold 0.01) (``evaluate`` at the five bin counts of ``bench_evaluate.py``), PAIRS, PAIRSCC
(top-label pairs), and the trust kernels
(100 resamples): BOOT, BOOTW (with sample weights), BOOTWM (multinomial), CONS (calibration
test), CONSW on the ECE cells, BOOTSCE, BOOTWSCE, CONSSCE on the SCE cells. Both builds must take the
native call signatures used here (``_native.gce``, ``evaluate``, ``pairs_gce``,
``resample_bootstrap``, ``resample_consistency``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads spin on small machines

import argparse  # noqa: E402
import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _machine import cpu_model  # noqa: E402

SPECS = [(b, mp, cc, t, n) for b in ("even", "adaptive") for mp in (True, False)
         for cc in (True, False) for t in (0.0, 0.01) for n in ("l1", "l2")]

# The bin counts of benches/bench_evaluate.py (the ``*5`` cases: ``evaluate`` at all five).
BINS5 = [10, 20, 30, 40, 50]

CALLS = {
    "ECE": lambda m, y, p, pr: m.gce(y, p, "even", True, False, 0.0, "l1", 15),
    "CCECE": lambda m, y, p, pr: m.gce(y, p, "even", True, True, 0.0, "l1", 15),
    "SCE": lambda m, y, p, pr: m.gce(y, p, "even", False, True, 0.0, "l1", 15),
    "ACE": lambda m, y, p, pr: m.gce(y, p, "adaptive", False, True, 0.0, "l1", 15),
    "TACE": lambda m, y, p, pr: m.gce(y, p, "adaptive", False, True, 0.01, "l1", 15),
    "topACE": lambda m, y, p, pr: m.gce(y, p, "adaptive", True, False, 0.0, "l1", 15),
    "EVAL": lambda m, y, p, pr: m.evaluate(y, p, SPECS, [15]),
    "EVAL5": lambda m, y, p, pr: m.evaluate(y, p, SPECS, BINS5),
    "ACE5": lambda m, y, p, pr: m.evaluate(y, p, [("adaptive", False, True, 0.0, "l1")], BINS5),
    "TACE5": lambda m, y, p, pr: m.evaluate(y, p, [("adaptive", False, True, 0.01, "l1")], BINS5),
    "POOLA5": lambda m, y, p, pr: m.evaluate(y, p, [("adaptive", False, False, 0.0, "l1")], BINS5),
    "SCE5": lambda m, y, p, pr: m.evaluate(y, p, [("even", False, True, 0.0, "l1")], BINS5),
    "TSCE5": lambda m, y, p, pr: m.evaluate(y, p, [("even", False, True, 0.01, "l1")], BINS5),
    "PAIRS": lambda m, y, p, pr: m.pairs_gce(*pr, "even", False, 0.0, "l1", 15),
    "PAIRSCC": lambda m, y, p, pr: m.pairs_gce(*pr, "even", True, 0.0, "l1", 15),
    "BOOT": lambda m, y, p, pr: _trust(m, y, p, False, False),
    "BOOTW": lambda m, y, p, pr: _trust(m, y, p, True, False),
    "BOOTWM": lambda m, y, p, pr: _trust(m, y, p, True, False, scheme="multinomial"),
    "BOOTSCE": lambda m, y, p, pr: _trust(m, y, p, False, False, top=False),
    "BOOTWSCE": lambda m, y, p, pr: _trust(m, y, p, True, False, top=False),
    "CONS": lambda m, y, p, pr: _trust(m, y, p, False, True),
    "CONSW": lambda m, y, p, pr: _trust(m, y, p, True, True),
    "CONSSCE": lambda m, y, p, pr: _trust(m, y, p, False, True, top=False),
}

_CELLS: dict = {}


def _trust(m, y, p, weighted: bool, test: bool, scheme: str = "poisson", top: bool = True):
    """100 bootstrap (or consistency) resamples of ECE (``top=False``: SCE) on the cells
    calibkit builds for (y, p) (built once per input, by the installed calibkit: the same
    cells for both builds)."""
    key = (y.shape[0], p.shape[1], p.dtype.str, weighted, top)  # one input per shape and dtype
    if key not in _CELLS:
        from calibkit.binned.spec import MetricSpec
        from calibkit.trust.cells import row_cells

        w = np.random.default_rng(1).uniform(0.5, 2.0, y.shape[0]) if weighted else None
        spec = MetricSpec("even", top, not top, 0.0, "l1")
        _CELLS[key] = (row_cells(y, p, spec, 15, w), w)
    rc, w = _CELLS[key]
    if test:
        return m.resample_consistency(rc.cell, rc.score, rc.hit, w, rc.groups, rc.nb, "l1",
                                      not top, 7, 100)
    return m.resample_bootstrap(rc.cell, rc.score, rc.hit, w, rc.groups, rc.nb, "l1", not top,
                                scheme, 7, 100)


def load(path: str, name: str):
    """The extension at ``path`` as module ``<name>._native`` (its init symbol's name)."""
    loader = importlib.machinery.ExtensionFileLoader(f"{name}._native", path)
    spec = importlib.util.spec_from_file_location(f"{name}._native", path, loader=loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of an A/B run: two builds, cases, shapes and dtypes (also
    ``cg_builds.py``'s)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("cases", help=",".join(CALLS))
    ap.add_argument("shapes", help="NxK[,NxK...]")
    ap.add_argument("dtypes", nargs="?", default="float64")
    return ap


def check_cases(ap: argparse.ArgumentParser, cases: str) -> list[str]:
    """The comma-separated ``cases``, each a key of ``CALLS``."""
    unknown = sorted(set(cases.split(",")) - set(CALLS))
    if unknown:
        ap.error(f"unknown cases {unknown}; the cases are {','.join(CALLS)}")
    return cases.split(",")


def inputs(n: int, k: int, dt: str):
    """The arrays of one shape and dtype: labels, an (n, k) softmax of scaled normal logits, and
    its top-label pairs (confidence, correct, predicted, k)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, k)) * 3
    p = np.exp(x - x.max(1, keepdims=True))
    p = (p / p.sum(1, keepdims=True)).astype(dt)
    y = rng.integers(0, k, n)
    pred = p.argmax(1)
    pr = (np.ascontiguousarray(p.max(1)), (pred == y).astype(np.uint8), pred.astype(np.int64), k)
    return y, p, pr


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeat", type=int, default=15)
    a = ap.parse_args()
    cases = check_cases(ap, a.cases)
    old, new = load(a.old, "a"), load(a.new, "b")
    print(f"CPU: {cpu_model()}; RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'all')}")
    for shape in a.shapes.split(","):
        n, k = map(int, shape.split("x"))
        for dt in a.dtypes.split(","):
            y, p, pr = inputs(n, k, dt)
            for case in cases:
                f = CALLS[case]
                reps = max(1, int(3e6 // (n * k)))
                best = {"old": np.inf, "new": np.inf}
                for r in range(a.repeat):
                    order = (("old", old), ("new", new)) if r % 2 else (("new", new), ("old", old))
                    for key, m in order:
                        t = time.perf_counter()
                        for _ in range(reps):
                            f(m, y, p, pr)
                        best[key] = min(best[key], (time.perf_counter() - t) / reps)
                same = np.array_equal(f(old, y, p, pr), f(new, y, p, pr))
                print(f"{case:7s} ({n}, {k}) {dt}: old {best['old'] * 1e6:10.1f} us, new "
                      f"{best['new'] * 1e6:10.1f} us, new/old {best['new'] / best['old']:.3f}"
                      f"{'' if same else '  (values differ)'}", flush=True)


if __name__ == "__main__":
    main()
