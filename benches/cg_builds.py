"""A/B two builds of the native module by simulated counts instead of time: instructions and
cache misses per call under valgrind's cachegrind, one thread.

Wall-clock A/B runs on a shared 2-CPU machine vary by 10-25% from run to run (docs/performance.md,
2026-11-28), so a change of a few percent cannot be resolved by timing. Cachegrind's counts are
deterministic: each case runs in two child processes under cachegrind, calling the native
function once and twice, and the difference is one call's counts (data generation, imports and
first-call set-up cancel). Printed per build: instructions (Ir), simulated first-level data
misses (D1, a 32 KiB 8-way cache), last-level misses (LL, a 1 MiB 16-way cache: this machine's
private L2 per core) and simulated branch mispredictions (Bm, conditional and indirect), an
estimate ``Ir + 10 * D1 + 60 * LL + 15 * Bm`` and new / old of each.

The model knows nothing of store-to-load forwarding, memory-level parallelism, prefetching or
the vector units' throughput, its branch predictor is not the CPU's, and valgrind counts each
byte of a ``rep stosb`` (a large ``memset``) as an instruction, so a change that drops some
zeroing looks cheaper than it is: read it beside ``ab_builds.py`` and fresh-process timings,
not instead of them. (A gathering loop that appended each wanted value through a branch, in
place of a branch-free write of every value, estimated 0.90x and timed 1.15x slower,
2026-11-28.) Both builds must take the native call signatures of ``ab_builds.py``'s cases.

Keep a copy of the old build first (``cp python/calibkit/_native.abi3.so /tmp/old.so``), build
the new one (``cargo build --release --features python --lib``), then::

    python benches/cg_builds.py /tmp/old.so target/release/libcalibkit.so ACE5,POOLA5 50000x100 float32

Needs ``valgrind`` on the PATH. A (50k, 100) call takes 20-60 s under cachegrind; two child
processes run at a time. Use inputs of a million entries or more: on small ones the difference
of the two runs is within the noise of the interpreter's own work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _machine import cpu_model

HERE = Path(__file__).resolve().parent
EVENTS = ("Ir", "D1", "LL", "Bm")
CACHES = ("--D1=32768,8,64", "--LL=1048576,16,64")


def child(so: str, case: str, n: int, k: int, dt: str, calls: int) -> None:
    """Runs ``case`` ``calls`` times with the build at ``so`` (under cachegrind)."""
    from ab_builds import CALLS, inputs, load

    m = load(so, "cg")
    y, p, pr = inputs(n, k, dt)
    for _ in range(calls):
        CALLS[case](m, y, p, pr)


def summary(path: str) -> dict[str, int]:
    """Ir, D1 misses and LL misses of a whole cachegrind run, from its output file."""
    events: list[str] = []
    totals: list[int] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                totals = [int(v) for v in line.split()[1:]]
    e = dict(zip(events, totals, strict=True))
    return {"Ir": e["Ir"], "D1": e["D1mr"] + e["D1mw"], "LL": e["DLmr"] + e["DLmw"],
            "Bm": e["Bcm"] + e["Bim"]}


def run(so: str, case: str, n: int, k: int, dt: str, calls: int, tmp: str) -> dict[str, int]:
    """The counts of a child process calling ``case`` ``calls`` times."""
    out = os.path.join(tmp, f"cg.{abs(hash((so, case, n, k, dt, calls)))}.out")
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--branch-sim=yes", *CACHES,
           f"--cachegrind-out-file={out}", sys.executable, __file__, "--child", so, case,
           str(n), str(k), dt, str(calls)]
    # One hash seed: Python's own work (imports, dicts) is then the same in every child.
    env = dict(os.environ, RAYON_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=HERE)
    if r.returncode != 0:
        raise SystemExit(f"cachegrind run failed ({' '.join(cmd)}):\n{r.stderr[-2000:]}")
    return summary(out)


def per_call(so: str, case: str, n: int, k: int, dt: str, tmp: str, pool) -> dict[str, int]:
    """One call's counts: a run of two calls less a run of one."""
    one, two = pool.map(lambda c: run(so, case, n, k, dt, c, tmp), (1, 2))
    return {e: two[e] - one[e] for e in EVENTS}


def estimate(c: dict[str, int]) -> float:
    return c["Ir"] + 10 * c["D1"] + 60 * c["LL"] + 15 * c["Bm"]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        so, case, n, k, dt, calls = sys.argv[2:8]
        child(so, case, int(n), int(k), dt, int(calls))
        return
    from ab_builds import check_cases, parser

    ap = parser(__doc__)
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        ap.error("valgrind is not on the PATH; install it (e.g. apt-get install valgrind) or time "
                 "the builds with benches/ab_builds.py")
    cases = check_cases(ap, a.cases)
    builds = {"old": os.path.abspath(a.old), "new": os.path.abspath(a.new)}
    for key, so in builds.items():
        if not os.path.isfile(so):
            ap.error(f"{key} build {so!r} does not exist")
    print(f"CPU: {cpu_model()}; cachegrind {' '.join(CACHES)}, one thread; "
          f"est = Ir + 10 D1 + 60 LL + 15 Bm (counts per call, in millions)")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(2) as pool:
        for shape in a.shapes.split(","):
            n, k = map(int, shape.split("x"))
            for dt in a.dtypes.split(","):
                for case in cases:
                    c = {key: per_call(so, case, n, k, dt, tmp, pool) for key, so in builds.items()}
                    cols = [f"{e} {c['old'][e] / 1e6:9.2f} -> {c['new'][e] / 1e6:9.2f} "
                            f"({c['new'][e] / max(c['old'][e], 1):.3f})" for e in EVENTS]
                    ratio = estimate(c["new"]) / max(estimate(c["old"]), 1)
                    print(f"{case:7s} ({n}, {k}) {dt}: " + "; ".join(cols)
                          + f"; est new/old {ratio:.3f}", flush=True)


if __name__ == "__main__":
    main()
