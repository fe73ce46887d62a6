"""Migrating a multi-GB zarr v2 store: time, throughput and peak memory (the memory must not grow
with the store: chunks are copied one at a time and verification reads one chunk at a time).

Builds a zarr v2 store of float32 temperatures packed with numcodecs FixedScaleOffset (uint16)
and zstd, then runs ``numcodecs-ext migrate`` in a fresh process per store size, reporting
wall time, MB/s of stored bytes and peak RSS. As the anchor in the same run, the cost of reading
the whole v2 store once through zarr.

Usage: ``python benchmarks/bench_migrate.py [GB ...]`` (default: 0.5 and 2 GB of float32).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import zarr

CHUNK = (256, 1024)  # 1 MiB of float32


def build(path: Path, gigabytes: float) -> int:
    rows = int(gigabytes * 1e9 / 4 / CHUNK[1]) // CHUNK[0] * CHUNK[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(str(path), shape=(rows, CHUNK[1]), chunks=CHUNK, dtype="<f4",
                              zarr_format=2, fill_value=250.0, compressors=numcodecs.Zstd(level=1),
                              filters=[numcodecs.FixedScaleOffset(offset=250, scale=100, dtype="<f4",
                                                                  astype="<u2")])
        rng = np.random.default_rng(0)
        y = np.linspace(0, 6, CHUNK[0])[:, None]
        x = np.linspace(0, 6, CHUNK[1])[None, :]
        base = (270 + 20 * np.sin(y) * np.cos(x)).astype("<f4")
        block = 64 * CHUNK[0]
        for start in range(0, rows, block):
            n = min(block, rows - start)
            noise = rng.standard_normal((n, CHUNK[1])).astype("<f4") * 0.5
            z[start:start + n] = np.tile(base, (n // CHUNK[0], 1)) + noise
    return rows * CHUNK[1] * 4


RUN = """
import json, resource, sys, time
from numcodecs_ext.migrate import migrate
t0 = time.perf_counter()
report = migrate(sys.argv[1], sys.argv[2], verify_result=False, progress=False)
t1 = time.perf_counter()
from numcodecs_ext.migrate import verify
verify(sys.argv[1], sys.argv[2], report)
t2 = time.perf_counter()
print(json.dumps({"migrate": t1 - t0, "verify": t2 - t1, "copied": report.bytes_copied,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

READ = """
import resource, sys, time, warnings
import zarr
warnings.simplefilter("ignore")
z = zarr.open_array(sys.argv[1], mode="r", zarr_format=2)
t0 = time.perf_counter()
for start in range(0, z.shape[0], z.chunks[0] * 16):
    z[start:start + z.chunks[0] * 16]
print(time.perf_counter() - t0)
"""


def main(argv: list[str]) -> int:
    sizes = [float(a) for a in argv] or [0.5, 2.0]
    print(f"{'float32 GB':>10} {'stored GB':>10} {'migrate s':>10} {'MB/s':>7} {'verify s':>9} "
          f"{'read v2 once s':>15} {'peak RSS MB':>12}")
    for gb in sizes:
        with tempfile.TemporaryDirectory(dir=".") as tmp:
            src, dst = Path(tmp) / "v2.zarr", Path(tmp) / "v3.zarr"
            raw = build(src, gb)
            read = float(subprocess.run([sys.executable, "-c", READ, str(src)], check=True,
                                        capture_output=True, text=True).stdout)
            out = subprocess.run([sys.executable, "-c", RUN, str(src), str(dst)], check=True,
                                 capture_output=True, text=True).stdout
            result = json.loads(out)
            stored = result["copied"] / 1e9
            print(f"{raw / 1e9:10.2f} {stored:10.2f} {result['migrate']:10.1f} "
                  f"{result['copied'] / 1e6 / result['migrate']:7.0f} {result['verify']:9.1f} "
                  f"{read:15.1f} {result['rss_mb']:12.0f}")
            shutil.rmtree(src, ignore_errors=True)
    return 0


def run(quick: bool = False) -> None:
    """The runner's entry point (``benchmarks/run.py``); ``quick``: one 0.05 GB store."""
    status = main(["0.05"] if quick else [])
    if status:
        raise SystemExit(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
