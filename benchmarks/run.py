"""Run every benchmark module (benchmarks/bench_*.py) and print ratios against the anchors.

Anchors are measured in the same run on the same machine; an anchor that is not installed is
skipped with a note. Usage: ``python benchmarks/run.py [NAME ...]`` (e.g. ``transpose``).
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main(names: list[str]) -> int:
    modules = sorted(p.stem for p in HERE.glob("bench_*.py"))
    if names:
        modules = [m for m in modules if m.removeprefix("bench_") in names]
    t0 = time.perf_counter()
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            print(f"{name}: skipped ({exc})")
            continue
        module.run()
        print()
    print(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
