"""Migrating a zarr v2 store of about 1 GB: time, throughput and peak memory of every write path.

Builds a zarr v2 store of float32 temperatures packed with numcodecs FixedScaleOffset (uint16)
and zstd (1 MiB chunks of float32), then runs, each in a fresh process:

* ``migrate SRC DST`` (chunks copied, every run read back under the v3 metadata and compared),
  with runs of 4 MiB of values (the default) and of 32 MiB (``NUMCODECS_EXT_RUN_BYTES``);
* ``migrate SRC DST --rewrite`` (decoded, encoded again through the spec codecs, compared);
* ``migrate SRC --in-place`` (every chunk read under both metadata versions, then zarr.json);
* ``normalize`` of a v3 copy that still names ``numcodecs.fixedscaleoffset``.

It prints wall time, MB/s of stored bytes, and peak RSS. The anchors, measured in the same run:
reading the whole v2 store once through zarr (the least any verification can cost: it reads
both sides), and the RSS of a process that has only imported zarr and numcodecs_ext. Memory
must not grow with the store (a run of chunks at a time): the "RSS above import" column stays
at a few runs (4 MiB of values each) whatever the size.

Usage: ``python benchmarks/bench_migrate.py [GB_STORED ...]`` (default about 1 GB stored);
``run(quick=True)`` (``benchmarks/run.py --quick``) uses a 50 MB store.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import zarr

from _util import PEAK

CHUNK = (256, 1024)  # 1 MiB of float32
STORED_PER_DECODED = 0.42  # what FixedScaleOffset(uint16) + zstd leaves of this field


def build(path: Path, stored_gb: float) -> int:
    """A v2 store of about ``stored_gb`` stored; returns its decoded size in bytes."""
    rows = max(1, int(stored_gb / STORED_PER_DECODED * 1e9 / 4 / CHUNK[1]) // CHUNK[0]) * CHUNK[0]
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



RUN = PEAK + """
import json, sys, time
import zarr, numcodecs_ext.migrate, numcodecs_ext.migrate.normalize
from numcodecs_ext.cli import main
t0 = time.perf_counter()
status = main(sys.argv[1:])
t1 = time.perf_counter()
print(json.dumps({"status": status, "seconds": t1 - t0, "rss_mb": peak_mb()}))
"""

IMPORTED = PEAK + """
import json
import zarr, numcodecs_ext, numcodecs_ext.migrate, numcodecs_ext.migrate.normalize, numcodecs_ext.cli
print(json.dumps({"rss_mb": peak_mb()}))
"""

READ = """
import resource, sys, time, warnings
import zarr
warnings.simplefilter("ignore")
z = zarr.open_array(sys.argv[1], mode="r", zarr_format=2)
t0 = time.perf_counter()
for start in range(0, z.shape[0], z.chunks[0] * 4):  # 4 MiB at a time, as the tools read
    z[start:start + z.chunks[0] * 4]
print(time.perf_counter() - t0)
"""


def _child(code: str, *argv: str, env: dict[str, str] | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True,
                         text=True, env={**os.environ, **(env or {})}).stdout
    return json.loads(out.strip().splitlines()[-1])


def _stored(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(stored_gb: float, where: Path) -> list[tuple[str, float, float, float]]:
    """(path, seconds, MB/s of stored bytes, peak RSS MB) of every write path, and the anchors."""
    src = where / "v2.zarr"
    decoded = build(src, stored_gb)
    stored = _stored(src)
    read = float(subprocess.run([sys.executable, "-c", READ, str(src)], check=True,
                                capture_output=True, text=True).stdout)
    baseline = _child(IMPORTED)["rss_mb"]
    rows = [("read the v2 store once (anchor)", read, stored / 1e6 / read, float("nan"))]
    for label, argv in (("migrate (copy + verify)", ["migrate", str(src), str(where / "copy.zarr"), "-q"]),
                        ("migrate --rewrite", ["migrate", str(src), str(where / "rw.zarr"), "--rewrite", "-q"])):
        r = _child(RUN, *argv)
        assert r["status"] == 0, label
        rows.append((label, r["seconds"], stored / 1e6 / r["seconds"], r["rss_mb"]))
    shutil.rmtree(where / "rw.zarr")
    r = _child(RUN, "migrate", str(src), str(where / "small.zarr"), "-q",
               env={"NUMCODECS_EXT_RUN_BYTES": str(32 << 20)})
    assert r["status"] == 0
    rows.append(("migrate, runs of 32 MiB", r["seconds"], stored / 1e6 / r["seconds"], r["rss_mb"]))
    shutil.rmtree(where / "small.zarr")
    r = _child(RUN, "migrate", str(src), "--in-place", "-q")
    assert r["status"] == 0
    rows.append(("migrate --in-place", r["seconds"], stored / 1e6 / r["seconds"], r["rss_mb"]))
    # a v3 store that still names numcodecs.fixedscaleoffset: the copy, renamed back
    meta_path = where / "copy.zarr" / "zarr.json"
    meta = json.loads(meta_path.read_text())
    meta["codecs"] = [{"name": "numcodecs.fixedscaleoffset", "configuration": {
        "offset": 250, "scale": 100, "dtype": "<f4", "astype": "<u2"}}, *meta["codecs"][3:]]
    meta_path.write_text(json.dumps(meta))
    r = _child(RUN, "normalize", str(where / "copy.zarr"), "-q")
    assert r["status"] == 0
    rows.append(("normalize", r["seconds"], stored / 1e6 / r["seconds"], r["rss_mb"]))
    print(f"  store: {decoded / 1e9:.2f} GB of float32, {stored / 1e9:.2f} GB stored, "
          f"{decoded // (CHUNK[0] * CHUNK[1] * 4)} chunks of 1 MiB; a process with zarr and "
          f"numcodecs_ext imported: {baseline:.0f} MB RSS")
    print(f"  {'':34} {'s':>7} {'MB/s':>7} {'x read once':>12} {'peak RSS MB':>12} {'above import':>13}")
    for label, seconds, mbps, rss in rows:
        ratio = seconds / read
        rss_text = f"{rss:12.0f} {rss - baseline:13.0f}" if rss == rss else f"{'':12} {'':13}"
        print(f"  {label:34} {seconds:7.1f} {mbps:7.0f} {ratio:12.2f} {rss_text}")
    return rows


def run(quick: bool = False, sizes: list[float] | None = None) -> None:
    """The benchmark runner's entry point: about 1 GB stored, or 50 MB with ``quick``."""
    print("bench_migrate: zarr v2 -> v3, FixedScaleOffset(uint16) + zstd, every write path "
          "(each in a fresh process)")
    for gb in sizes or ([0.05] if quick else [1.0]):
        with tempfile.TemporaryDirectory(dir=".") as tmp:
            measure(gb, Path(tmp))


def main(argv: list[str]) -> int:
    run(sizes=[float(a) for a in argv] or None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
