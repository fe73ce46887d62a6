"""convert's compressors on realistic CF-packed fields: store size against the netCDF file, write
and read speed, against the netCDF file's own zlib level 1 + shuffle as the anchor.

Fields: a smooth temperature field plus noise packed as int16 (``scale_factor`` 0.01 K), and a
cloud fraction packed as uint8 (``scale_factor`` 1/250), written as netCDF-4 with zlib level 1 and
netCDF's shuffle, chunked one time step per chunk, as archives are. Each compressor converts the
file (``numcodecs-ext convert``, no verification, 8 MiB chunks) and the store is read back
through zarr (decoded floats, as xarray users get them); the anchor reads the same floats from
the netCDF file through xarray. ``numcodecs.shuffle + zstd`` is shown for reference only: it is not
a zarr spec codec, so zarrs and other implementations do not all read it.

Then, outside quick mode, the peak memory (RSS) of converting a ~1 GB netCDF file in a fresh
process, against the file size and the chunk size.

Usage: ``python benchmarks/bench_convert.py [--quick]``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

CANDIDATES = [
    ("blosc zstd 1, 1 MiB blocks, auto shuffle (default)", {"name": "blosc", "level": 1}),
    ("blosc zstd 7, blosc's blocks (the default before)", {"name": "blosc", "level": 7, "blocksize": 0}),
    ("blosc zstd 3, 1 MiB blocks, auto shuffle", {"name": "blosc", "level": 3}),
    ("blosc zstd 1, blosc's blocks, byte shuffle", {"name": "blosc", "level": 1, "shuffle": "byte", "blocksize": 0}),
    ("blosc zstd 1, 1 MiB blocks + bitshuffle", {"name": "blosc", "level": 1, "shuffle": "bit"}),
    ("blosc lz4 5 + byte shuffle", {"name": "blosc", "level": 5, "shuffle": "byte", "cname": "lz4"}),
    ("zstd 1 (no shuffle)", {"name": "zstd", "level": 1}),
    ("zstd 3 (no shuffle; zarr's default)", {"name": "zstd", "level": 3}),
    ("gzip 1 (no shuffle)", {"name": "gzip", "level": 1}),
]


def make_netcdf(path: Path, shape: tuple[int, int, int], seed: int = 0) -> int:
    """The two packed fields as netCDF-4, zlib 1 + shuffle; returns the decoded float32 bytes."""
    import xarray as xr

    nt, ny, nx = shape
    rng = np.random.default_rng(seed)
    y = np.linspace(-np.pi / 2, np.pi / 2, ny)[:, None]
    x = np.linspace(0, 2 * np.pi, nx)[None, :]
    base = 273.15 + 30 * np.cos(y) + 5 * np.sin(3 * x) * np.cos(2 * y)
    t2m = np.empty(shape, "int16")
    tcc = np.empty(shape, "uint8")
    for i in range(nt):
        field = base + 2 * np.sin(i / 4 + x) + rng.normal(0, 0.5, (ny, nx))
        t2m[i] = np.round((field - 273.15) / 0.01).astype("int16")
        cloud = np.clip(0.5 + 0.4 * np.sin(3 * y + i / 5) * np.cos(2 * x) + rng.normal(0, 0.05, (ny, nx)), 0, 1)
        tcc[i] = np.round(cloud * 250).astype("uint8")
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m, {"scale_factor": np.float32(0.01), "add_offset": np.float32(273.15),
                                               "units": "K"}),
         "tcc": (("time", "lat", "lon"), tcc, {"scale_factor": np.float32(1 / 250), "units": "1"})},
        coords={"time": np.arange(nt, dtype="f8"), "lat": np.linspace(-90, 90, ny), "lon": np.linspace(0, 360, nx)})
    enc = {v: {"zlib": True, "complevel": 1, "shuffle": True, "chunksizes": (1, ny, nx)} for v in ("t2m", "tcc")}
    ds.to_netcdf(path, format="NETCDF4", encoding=enc)
    return nt * ny * nx * 4 * 2


def _read_netcdf(path: Path) -> None:
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_dataset(path) as ds:
            ds.t2m.values, ds.tcc.values  # noqa: B018 - the read is the point


def _read_store(path: Path) -> None:
    import zarr

    for name in ("t2m", "tcc"):
        zarr.open_array(path / name, mode="r")[...]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _paired(fn, anchor, repeat: int = 3) -> tuple[float, float]:
    """Best times of ``fn`` and of the ``anchor``, timed in alternation (a shared machine's load
    falls on both alike)."""
    a, b = [], []
    for _ in range(repeat):
        for f, record in ((fn, a), (anchor, b)):
            t0 = time.perf_counter()
            f()
            record.append(time.perf_counter() - t0)
    return min(a), min(b)


def _shuffle_zstd(src: Path, dst: Path) -> None:
    """The reference outside the spec: our packing codecs, then numcodecs.shuffle and zstd."""
    import xarray as xr
    import zarr

    try:
        from zarr.codecs.numcodecs import Shuffle
    except ImportError:  # zarr < 3.1.3
        from numcodecs.zarr3 import Shuffle

    from numcodecs_ext.cf import zarr_encoding

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(src)
        enc = zarr_encoding(ds)
        for name, itemsize in (("t2m", 2), ("tcc", 1)):
            enc[name]["compressors"] = [Shuffle(elementsize=itemsize), zarr.codecs.ZstdCodec(level=3)]
            enc[name]["chunks"] = (max(1, (8 << 20) // (ds[name].shape[1] * ds[name].shape[2] * 4)),
                                   *ds[name].shape[1:])
        ds.to_zarr(dst, encoding=enc, zarr_format=3, consolidated=False)


def compressor_table(shape: tuple[int, int, int], repeat: int) -> list[tuple[str, float, float, float]]:
    from numcodecs_ext.cf.compress import Compressor
    from numcodecs_ext.cf.convert import convert

    work = Path(tempfile.mkdtemp(prefix="bench_convert_"))
    try:
        src = work / "fields.nc"
        decoded = make_netcdf(src, shape)
        nc_size = src.stat().st_size
        nc_read = _best(lambda: _read_netcdf(src), repeat)
        print(f"  fields {shape} int16 + uint8: {decoded / 1e6:.0f} MB decoded, netCDF (zlib 1 + shuffle) "
              f"{nc_size / 1e6:.1f} MB, read {decoded / nc_read / 1e6:.0f} MB/s")
        print(f"  {'compressor':40} {'size/netCDF':>11} {'write MB/s':>10} {'read MB/s':>9} {'read vs netCDF':>14}"
              "  (netCDF read again beside each)")
        rows = []
        for label, spec in CANDIDATES:
            name = spec.pop("name")
            comp = Compressor.parse(name, **spec)
            spec["name"] = name
            writes = []
            for i in range(repeat):
                dst = work / f"c{i}.zarr"
                t0 = time.perf_counter()
                convert(src, dst, compressor=comp, verify=False)
                writes.append(time.perf_counter() - t0)
                if i < repeat - 1:
                    shutil.rmtree(dst)
            read, nc_read = _paired(lambda: _read_store(dst), lambda: _read_netcdf(src), repeat)
            rows.append((label, _size(dst) / nc_size, decoded / min(writes) / 1e6, decoded / read / 1e6))
            shutil.rmtree(dst)
            print(f"  {label:40} {rows[-1][1]:11.2f} {rows[-1][2]:10.0f} {rows[-1][3]:9.0f} "
                  f"{nc_read / read:13.2f}x")
        dst = work / "shuffle.zarr"
        t0 = time.perf_counter()
        _shuffle_zstd(src, dst)
        write = time.perf_counter() - t0
        read, nc_read = _paired(lambda: _read_store(dst), lambda: _read_netcdf(src), repeat)
        print(f"  {'numcodecs.shuffle + zstd 3 (not spec)':40} {_size(dst) / nc_size:11.2f} "
              f"{decoded / write / 1e6:10.0f} {decoded / read / 1e6:9.0f} {nc_read / read:13.2f}x")
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


RSS = """
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from numcodecs_ext.cf.convert import convert
t0 = time.perf_counter()
convert(sys.argv[1], sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - t0,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

BASELINE = """
import json, resource, warnings
warnings.simplefilter("ignore")
import xarray, zarr, dask, netCDF4, numcodecs_ext.cf.convert
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peak_memory(shape: tuple[int, int, int]) -> None:
    """Peak RSS of convert (with verification) on a file of ``shape``, in a fresh process."""
    work = Path(tempfile.mkdtemp(prefix="bench_convert_rss_"))
    try:
        src = work / "big.nc"
        decoded = make_netcdf(src, shape)
        base = json.loads(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True, text=True,
                                         check=True).stdout)
        done = subprocess.run([sys.executable, "-c", RSS, str(src), str(work / "big.zarr")], capture_output=True,
                              text=True, check=True)
        out = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  convert + verify of {decoded / 1e9:.2f} GB decoded ({src.stat().st_size / 1e9:.2f} GB netCDF): "
              f"{out['seconds']:.0f} s, peak RSS {out['rss_mb']:.0f} MB (imports alone {base['rss_mb']:.0f} MB; "
              f"8 MiB chunks)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(quick: bool = False) -> None:
    print("convert: compressors on CF-packed int16 + uint8 fields (netCDF zlib 1 + shuffle as the anchor)")
    compressor_table((8, 181, 360) if quick else (48, 721, 1440), repeat=1 if quick else 3)
    if not quick:
        print("convert: peak memory")
        peak_memory((256, 721, 1440))


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
