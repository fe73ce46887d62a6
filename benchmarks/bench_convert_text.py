"""convert's peak memory on text: a netCDF-4 file with one variable-length string variable of
~400-character strings (200,000 of them: a 72 MB file), converted with verification in a fresh
process. xarray reads such strings as fixed-width ``<U`` (4 bytes per character), so chunks and
runs sized at 8 bytes per string held the whole variable at once (2.4 GB at 200k strings); chunks
sized by the strings' real length keep it to a few runs of about 8 MiB whatever the length.

Usage: ``python benchmarks/bench_convert_text.py [--quick]`` (quick: 20,000 strings).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from _util import PEAK


CONVERT = PEAK + """
import json, sys, time, warnings
warnings.simplefilter("ignore")
from numcodecs_ext.cf.convert import convert
t0 = time.perf_counter()
report = convert(sys.argv[1], sys.argv[2])
assert report.verified
print(json.dumps({"seconds": time.perf_counter() - t0, "rss_mb": peak_mb()}))
"""

IMPORTED = PEAK + """
import json, warnings
warnings.simplefilter("ignore")
import xarray, zarr, dask, netCDF4, numcodecs_ext.cf.convert
print(json.dumps({"rss_mb": peak_mb()}))
"""

#: the goal of issue 31 for 200,000 strings
GOAL_MB = 600


def make_strings(path: Path, count: int, length: int = 400, seed: int = 0) -> None:
    """``count`` strings of ``length`` ± 10% random letters in one vlen-string variable."""
    import netCDF4

    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz ", dtype="S1")
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("record", count)
        var = nc.createVariable("text", str, ("record",))
        step = 10_000
        for start in range(0, count, step):
            n = min(step, count - start)
            lengths = rng.integers(int(length * 0.9), int(length * 1.1) + 1, n)
            values = np.array([rng.choice(letters, k).tobytes().decode() for k in lengths], dtype=object)
            var[start:start + n] = values


def peak_memory(count: int) -> dict[str, float]:
    """Peak RSS of ``convert`` (with verification) of ``count`` strings, in a fresh process."""
    work = Path(tempfile.mkdtemp(prefix="bench_convert_text_"))
    try:
        src = work / "text.nc"
        make_strings(src, count)
        base = json.loads(subprocess.run([sys.executable, "-c", IMPORTED], capture_output=True, text=True,
                                         check=True).stdout.strip().splitlines()[-1])
        done = subprocess.run([sys.executable, "-c", CONVERT, str(src), str(work / "text.zarr")],
                              capture_output=True, text=True, check=True)
        out = json.loads(done.stdout.strip().splitlines()[-1])
        return {"strings": count, "file_mb": src.stat().st_size / 1e6, "seconds": out["seconds"],
                "rss_mb": out["rss_mb"], "imports_mb": base["rss_mb"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(quick: bool = False) -> None:
    count = 20_000 if quick else 200_000
    r = peak_memory(count)
    print(f"convert: peak memory on text ({r['strings']:,} strings of ~400 characters, a {r['file_mb']:.0f} MB "
          f"netCDF file)")
    print(f"  convert + verify: {r['seconds']:.1f} s, peak RSS {r['rss_mb']:.0f} MB (imports alone "
          f"{r['imports_mb']:.0f} MB; goal at 200,000 strings: at most {GOAL_MB} MB)")


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
