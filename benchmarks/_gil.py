"""How long an operation holds the GIL, and how often it gives it up: the measures that predict
many-core scaling on a machine with few cores (while one thread holds the GIL, no other runs
Python: Amdahl's serial part).

Two ways to measure:

* **accounted** (exact): ``_gilcount.c``, loaded with ``LD_PRELOAD``, watches the interpreter take
  and drop the GIL and sums the time this thread holds it, with no other thread running; or, for
  a whole multi-threaded run (:func:`serial`), the time every thread holds it, which is the
  run's serial part. Needs Linux, a C compiler and a shared libpython; :func:`preload` compiles
  it and re-runs the script under it. On a shared machine it is repeatable to a few percent.
* **observed** (anywhere): a competing pure-Python thread notes every stall in its own progress.
  Its floor is a scheduler wake-up per hand-off (20-150 µs on virtual machines), so it is noisy;
  it is used only where the accounted way is not available.

Both run the operation in a loop and report medians. The operation's own Python (setup,
validation, the return path) is what they charge: after a large chunk it runs from cold caches,
so each line costs far more than in a micro-benchmark.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "_gilcount.c"
_MARK = "NUMCODECS_EXT_GILCOUNT"


def preload(argv: list[str]) -> None:
    """Re-execute this script with the GIL accountant preloaded, if it can be built and is not
    loaded yet (else return and let :func:`measure` fall back to observing)."""
    if os.environ.get(_MARK) or sys.platform != "linux" or not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    library = Path(tempfile.gettempdir()) / f"numcodecs_ext_gilcount_{digest}.so"
    if not library.exists():
        partial = library.with_suffix(f".{os.getpid()}.so")
        built = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(partial), str(SOURCE),
                                "-ldl"], capture_output=True)
        if built.returncode:
            return
        partial.replace(library)
    env = dict(os.environ, **{_MARK: str(library)})
    env["LD_PRELOAD"] = " ".join(filter(None, [str(library), os.environ.get("LD_PRELOAD")]))
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *argv], env)


class _Accountant:
    def __init__(self, path: str) -> None:
        self.lib = ctypes.PyDLL(path)  # (called with the GIL held: no hand-off of its own)
        self.lib.gilcount_stop.argtypes = [ctypes.POINTER(ctypes.c_uint64)] * 2
        self.releases, self.held = ctypes.c_uint64(), ctypes.c_uint64()
        self.lib.gilcount_start(0)
        time.sleep(0)  # the first release names the GIL's condition variable
        self.stop()
        if not self.lib.gilcount_ready():
            raise OSError("the GIL accountant saw no release")

    def stop(self) -> tuple[float, int]:
        self.lib.gilcount_stop(ctypes.byref(self.releases), ctypes.byref(self.held))
        return self.held.value * 1e-9, self.releases.value

    def measure(self, fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
        fn()
        held, releases = [], []
        for _ in range(repeat):
            self.lib.gilcount_start(0)
            fn()
            h, r = self.stop()
            held.append(h)
            releases.append(r)
        return statistics.median(held), statistics.median(releases)

    def pair(self, a: Callable[[], Any], b: Callable[[], Any],
             repeat: int) -> tuple[tuple[float, float], tuple[float, float]]:
        """:meth:`measure` of ``a`` and ``b`` in alternation (the machine's drift hits both)."""
        a()
        b()
        runs: list[list[tuple[float, int]]] = [[], []]
        for _ in range(repeat):
            for i, fn in enumerate((a, b)):
                self.lib.gilcount_start(0)
                fn()
                runs[i].append(self.stop())
        return tuple(  # type: ignore[return-value]
            (statistics.median(h for h, _ in r), statistics.median(n for _, n in r)) for r in runs)

    def serial(self, fn: Callable[[], Any]) -> tuple[float, int]:
        self.lib.gilcount_start(1)
        fn()
        return self.stop()


def _accountant() -> _Accountant | None:
    path = os.environ.get(_MARK)
    if not path or path not in os.environ.get("LD_PRELOAD", ""):
        return None
    try:
        return _Accountant(path)
    except OSError:
        return None


_ACCOUNTANT = _accountant()
#: how :func:`measure` measures: "accounted" or "observed"
METHOD = "accounted" if _ACCOUNTANT is not None else "observed"


def measure(fn: Callable[[], Any], repeat: int = 21) -> tuple[float, float]:
    """Median seconds per call that ``fn`` holds the GIL, and the median number of times it
    gives the GIL up (accounted) or takes it back from another thread (observed)."""
    if _ACCOUNTANT is not None:
        return _ACCOUNTANT.measure(fn, repeat)
    return observed(fn, repeat)


def measure_pair(a: Callable[[], Any], b: Callable[[], Any],
                 repeat: int = 41) -> tuple[tuple[float, float], tuple[float, float]]:
    """:func:`measure` of ``a`` and of ``b``, accounted in alternation where possible."""
    if _ACCOUNTANT is not None:
        return _ACCOUNTANT.pair(a, b, repeat)
    return observed(a, repeat // 2), observed(b, repeat // 2)


def serial(fn: Callable[[], Any]) -> tuple[float, int] | None:
    """Seconds the GIL was held by any thread while ``fn`` ran, and the releases: the part of a
    multi-threaded run (zarr's event loop and workers) that cannot run in parallel. None where
    only observing is available."""
    return _ACCOUNTANT.serial(fn) if _ACCOUNTANT is not None else None


def observed(fn: Callable[[], Any], repeat: int = 21, gap: float = 5e-6) -> tuple[float, float]:
    """The GIL time and hand-offs of ``fn`` as a competing thread sees them.

    A pure-Python thread notes every gap in its own progress longer than ``gap``: while it is
    stopped, the only other Python thread (the one running ``fn``) holds the GIL. The operating
    system also stops it now and then (timer ticks, other processes): each call is paired with a
    quiet window of the same length right after it, whose gaps are subtracted.
    """
    gaps: list[tuple[float, float]] = []
    stop = threading.Event()

    def spin() -> None:
        clock, note = time.perf_counter, gaps.append
        last = clock()
        while not stop.is_set():
            now = clock()
            if now - last > gap:
                note((last, now))
            last = now

    def spans_in(t0: float, t1: float, first: int) -> tuple[float, int]:
        spans = [(max(a, t0), min(b, t1)) for a, b in gaps[first:]]
        spans = [(a, b) for a, b in spans if b > a]
        return sum(b - a for a, b in spans), len(spans)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the spinner hands the GIL over at once when fn wants it
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        time.sleep(0.02)
        fn()
        held, handoffs = [], []
        for _ in range(repeat):
            time.sleep(0.002)
            first, t0 = len(gaps), time.perf_counter()
            fn()
            t1 = time.perf_counter()
            time.sleep(0.002)  # the spinner notes the gap that ends when the call returns
            busy, count = spans_in(t0, t1, first)
            # a quiet window as long as the call (less the hand-offs of sleep's call and return)
            first, q0 = len(gaps), time.perf_counter()
            time.sleep(t1 - t0)
            q1 = time.perf_counter()
            time.sleep(0.002)
            quiet, quiet_count = spans_in(q0, q1, first)
            held.append(busy - quiet)
            handoffs.append(count - max(0, quiet_count - 2))
        return max(0.0, statistics.median(held)), max(0.0, statistics.median(handoffs))
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)
