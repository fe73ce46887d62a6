"""Verification at the speed of the copy: ``convert`` and ``migrate --rewrite``, verified (the
default) and with ``--verify none``, against the plain copies that xarray and dask make of the
same data, in one process and on dask LocalClusters of 1, 2, 4 ... N one-thread worker processes
(N: the machine's cores; this 2-core machine measures 1 and 2).

Data: a netCDF-4 file (zlib 1, one time step per chunk) holding an int16-packed field and a
float32 one, and a zarr v2 store of float32 packed by numcodecs FixedScaleOffset (uint16) + zstd
in 1 MiB chunks. MB/s are of decoded values. The anchors:

* convert: ``xr.open_dataset(nc, chunks={"time": 1}).to_zarr(dst, zarr_format=3)``;
* migrate: ``da.store(da.from_zarr(v2), zarr.create_array(v3, ...))`` (the v2 filters as
  the numcodecs codecs zarr wraps, no verification).

Each row's jobs are timed in alternation, best of two, so that a shared machine's load
falls on all of them alike; the ratios are to the row's anchor. The goal (issue 34): verified >=
0.9x the anchor, ``--verify none`` >= 1.2x.

Usage: ``python benchmarks/bench_verify.py [--quick] [MB]`` (default about 256 MB decoded per
job, about the size of issue 34's measurements; ``--quick`` about 8 MB, once).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_migrate import build  # noqa: E402 - the v2 store of bench_migrate

NY, NX = 256, 512  # one time step: 256 KiB of float32 per variable


def make_netcdf(path: Path, mb: float) -> int:
    """The netCDF-4 file: ``t2m`` int16 packed (scale 0.01, offset 273.15, a _FillValue with
    some missing values) and ``prec`` float32 (some NaN), zlib 1, a time step per chunk."""
    import xarray as xr

    nt = max(2, int(mb * 1e6 / (NY * NX * 4 * 2)))
    rng = np.random.default_rng(0)
    y = np.linspace(-np.pi / 2, np.pi / 2, NY)[:, None]
    x = np.linspace(0, 2 * np.pi, NX)[None, :]
    base = 30 * np.cos(y) + 5 * np.sin(3 * x) * np.cos(2 * y)
    t2m = np.empty((nt, NY, NX), "float32")
    prec = np.empty((nt, NY, NX), "float32")
    for i in range(nt):
        t2m[i] = 273.15 + base + 2 * np.sin(i / 4 + x) + rng.normal(0, 0.5, (NY, NX))
        t2m[i, :3, :5] = np.nan  # missing: the _FillValue
        p = np.maximum(0, rng.normal(0, 1, (NY, NX)) * np.cos(y)).astype("float32")
        p[-2:, -7:] = np.nan
        prec[i] = p
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m, {"units": "K"}),
         "prec": (("time", "lat", "lon"), prec, {"units": "mm"})},
        coords={"time": np.arange(nt, dtype="f8"), "lat": np.linspace(-90, 90, NY), "lon": np.linspace(0, 360, NX)})
    enc = {"t2m": {"zlib": True, "complevel": 1, "chunksizes": (1, NY, NX), "scale_factor": np.float32(0.01),
                   "add_offset": np.float32(273.15), "_FillValue": np.int16(-32767), "dtype": "int16"},
           "prec": {"zlib": True, "complevel": 1, "chunksizes": (1, NY, NX)}}
    ds.to_netcdf(path, format="NETCDF4", encoding=enc)
    return nt * NY * NX * 4 * 2


def _quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    def call() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return call


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    return path


def convert_jobs(nc: Path, work: Path) -> list[tuple[str, Callable[[], Any]]]:
    import xarray as xr

    from numcodecs_ext.cf import convert

    def anchor() -> None:
        with xr.open_dataset(nc, chunks={"time": 1}) as ds:
            ds.to_zarr(_fresh(work / "anchor.zarr"), zarr_format=3, consolidated=False)

    return [("convert, verified (full)", _quiet(lambda: convert(nc, _fresh(work / "c.zarr"), verify="full"))),
            ("convert --verify none", _quiet(lambda: convert(nc, _fresh(work / "c.zarr"), verify="none"))),
            ("anchor: xarray open_dataset().to_zarr()", _quiet(anchor))]


def migrate_jobs(v2: Path, work: Path) -> list[tuple[str, Callable[[], Any]]]:
    import dask.array as da
    import zarr
    from zarr.codecs.numcodecs import FixedScaleOffset, Zstd

    from numcodecs_ext.migrate import migrate

    def anchor() -> None:
        src = zarr.open_array(str(v2), mode="r", zarr_format=2)
        f = src.metadata.filters[0].get_config()
        dst = zarr.create_array(str(_fresh(work / "anchor.zarr")), shape=src.shape, chunks=src.chunks,
                                dtype=src.dtype, fill_value=src.fill_value, zarr_format=3,
                                filters=[FixedScaleOffset(offset=f["offset"], scale=f["scale"], dtype=f["dtype"],
                                                          astype=f["astype"])],
                                serializer="auto", compressors=[Zstd(level=1)])
        da.store(da.from_zarr(src), dst, lock=False)

    return [("migrate --rewrite, verified (full)",
             _quiet(lambda: migrate(v2, _fresh(work / "m.zarr"), rewrite=True, verify="full"))),
            ("migrate --rewrite --verify none",
             _quiet(lambda: migrate(v2, _fresh(work / "m.zarr"), rewrite=True, verify="none"))),
            ("anchor: dask da.store(from_zarr(v2), v3 array)", _quiet(anchor))]


def cluster_sizes(cores: int) -> list[int]:
    """The LocalCluster sizes measured: 1, 2, 4 ... up to the machine's cores, and the cores."""
    return sorted({2 ** i for i in range(cores.bit_length()) if 2 ** i <= cores} | {cores})


@contextmanager
def where(workers: int) -> Any:
    """This process (no cluster: threads), or a LocalCluster of ``workers`` one-thread processes."""
    if not workers:
        yield "one process"
        return
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=50) as cluster, Client(cluster):
            yield f"{workers} worker{'s' * (workers > 1)}"


def timed(jobs: list[tuple[str, Callable[[], Any]]], repeat: int) -> list[float]:
    best = [float("inf")] * len(jobs)
    for _ in range(repeat):
        for i, (_, fn) in enumerate(jobs):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def run(quick: bool = False, mb: float | None = None) -> None:
    import os

    mb = mb or (8 if quick else 256)
    repeat = 1 if quick else 2
    work = Path(tempfile.mkdtemp(prefix="bench_verify_", dir="."))
    try:
        nc = work / "fields.nc"
        nc_bytes = make_netcdf(nc, mb)
        v2 = work / "v2.zarr"
        v2_bytes = build(v2, mb * 1e6 * 0.42 / 1e9)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"bench_verify: {os.cpu_count()} CPUs (load {load:.1f}); netCDF {nc_bytes / 1e6:.0f} MB decoded "
              f"(int16-packed + float32, zlib 1, a time step per chunk), v2 store {v2_bytes / 1e6:.0f} MB decoded "
              f"(FixedScaleOffset u16 + zstd, 1 MiB chunks); MB/s of decoded values, best of {repeat}")
        print(f"  {'job':48} {'where':>12} {'MB/s':>7} {'x anchor':>9}")
        for workers in (0, *cluster_sizes(os.cpu_count() or 1)):
            with where(workers) as place:
                for jobs, size in ((convert_jobs(nc, work), nc_bytes), (migrate_jobs(v2, work), v2_bytes)):
                    seconds = timed(jobs, repeat)
                    anchor = seconds[-1]
                    for (label, _), s in zip(jobs, seconds):
                        ratio = f"{anchor / s:8.2f}x" if s is not anchor else f"{'':9}"
                        print(f"  {label:48} {place:>12} {size / s / 1e6:7.0f} {ratio}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--quick"]
    run(quick="--quick" in sys.argv[1:], mb=float(args[0]) if args else None)
