"""Run every benchmark and print ratios against the anchors, each measured in the same run.

Usage: ``python benchmarks/run.py [--quick] [--list] [NAME ...]``

* every benchmark (``bench_*.py``, ``scaling.py``, ``cf_difference.py``), or those named
  (``transpose``, ``bits``, ``scaling`` ...);
* ``--quick``: each on small sizes, to check that every benchmark still runs (under two minutes on
  a 2-core machine; CI runs it). Its figures are not the documented ones.

Each benchmark module has ``run(quick: bool = False)`` and runs in a process of its own, so that
one that fails (an exception, a crash, a missing function) is reported and the others still run;
the runner ends with a table of what ran, how long it took and what failed, and exits 1 if
anything failed. An anchor that is not installed is skipped by its benchmark with a note.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXTRA = ["scaling", "cf_difference"]  # benchmarks not named bench_*

ENTRY = """
import inspect, sys
sys.path.insert(0, {here!r})
import {module} as m
run = getattr(m, "run", None)
if run is None or "quick" not in inspect.signature(run).parameters:
    sys.exit("benchmarks/{module}.py has no run(quick: bool = False): the runner's entry point")
run(quick={quick})
"""


def benchmarks() -> list[str]:
    """Every benchmark module, in the order they run."""
    return sorted(p.stem for p in HERE.glob("bench_*.py")) + [m for m in EXTRA if (HERE / f"{m}.py").exists()]


def _short(module: str) -> str:
    return module.removeprefix("bench_")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these (e.g. transpose bits scaling)")
    parser.add_argument("--quick", action="store_true", help="every benchmark on small sizes (checks they run)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    args = parser.parse_args(argv)
    modules = benchmarks()
    if args.list:
        print("\n".join(_short(m) for m in modules))
        return 0
    unknown = [n for n in args.names if n not in {_short(m) for m in modules}]
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}; the benchmarks are: {', '.join(map(_short, modules))}")
    if args.names:
        modules = [m for m in modules if _short(m) in args.names]
    results: list[tuple[str, float, int]] = []
    t_all = time.perf_counter()
    for module in modules:
        print(f"=== {_short(module)}{' (quick)' if args.quick else ''}", flush=True)
        t0 = time.perf_counter()
        code = ENTRY.format(here=str(HERE), module=module, quick=args.quick)
        status = subprocess.run([sys.executable, "-c", code], cwd=HERE.parent, check=False).returncode
        results.append((module, time.perf_counter() - t0, status))
        if status:
            print(f"=== {_short(module)}: FAILED (exit status {status})", flush=True)
        print(flush=True)
    total = time.perf_counter() - t_all
    print(f"{'benchmark':16} {'seconds':>8}  result")
    for module, seconds, status in results:
        print(f"{_short(module):16} {seconds:8.1f}  {'ok' if status == 0 else f'FAILED (exit status {status})'}")
    failed = [m for m, _, s in results if s]
    print(f"{len(results)} benchmarks in {total:.0f} s" + (f"; {len(failed)} failed: "
                                                           f"{', '.join(map(_short, failed))}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
