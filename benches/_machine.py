"""What every benchmark prints beside its ratios: the CPU they were measured on."""

from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name (Linux /proc/cpuinfo; the platform's processor string elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def median_time(fn, repeat: int, *, warm: bool = False) -> float:
    """The median wall time of ``repeat`` calls of ``fn`` (seconds); ``warm``: one untimed
    call first (first-touch pages, the thread pool's start)."""
    import statistics
    import time

    if warm:
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)
