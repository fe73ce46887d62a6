"""Timing helpers shared by the benchmark modules (not a test: nothing here asserts speed)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def best_seconds(fn: Callable[[], object], repeat: int = 5, min_time: float = 0.0) -> float:
    """Median wall time of ``repeat`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved(*fns: Callable[[], object], repeat: int = 7) -> list[float]:
    """Median seconds of each function, timed in alternation so drift on a shared machine
    affects all alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, record in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            record.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def row(name: str, mbps: float, anchor_name: str | None = None, anchor_mbps: float | None = None) -> str:
    if anchor_mbps:
        return f"  {name:52} {mbps:9.0f} MB/s   {mbps / anchor_mbps:5.2f}x {anchor_name} ({anchor_mbps:.0f} MB/s)"
    return f"  {name:52} {mbps:9.0f} MB/s"


#: source of ``peak_mb()`` for the child processes a benchmark measures: the process's own peak
#: RSS from /proc (VmHWM; getrusage's ru_maxrss would include the parent's RSS at fork time)
PEAK = """
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""
