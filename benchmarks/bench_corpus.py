"""``numcodecs-ext convert`` on the corpus of real netCDF files (fixtures/netcdf/): size and time.

Per file: the original size, the converted store's size (all its files), their ratio, the time of
``numcodecs_ext.cf.convert`` (its read-back verification included, as the CLI runs it) and whether it
converted. The anchor, measured in the same run on the same file: xarray's own conversion,
``xr.open_dataset(src, group=g).to_zarr(zarr_format=3)`` per group (CF packing kept as integers and
attributes, consolidated metadata as xarray writes it by default), whose size and time each ratio is
set against. "Of which metadata" counts the store's zarr.json (and v2 .z*) files. Printed as a markdown table; the
store's compressor is zarr-python's default, as convert leaves it.

Usage: ``python benchmarks/bench_corpus.py [--quick]`` (quick: files under 64 kB, one run each).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

CORPUS_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "netcdf"


_METADATA = {"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"}


def _size(path: Path) -> tuple[int, int]:
    """Bytes of all the store's files, and of its metadata files alone."""
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), sum(p.stat().st_size for p in files if p.name in _METADATA)


def _groups(path: Path) -> list[str | None]:
    """The root (None), then every group of the file by its path."""
    from numcodecs_ext.cf.remote import netcdf_groups
    from numcodecs_ext.store.storage import Location

    return [None, *netcdf_groups(Location.parse(str(path)))]


def _convert(src: Path, dst: Path) -> Any:
    from numcodecs_ext import cf

    fn = cf.convert  # the public function (it may come back as its submodule: see tests/cf/test_corpus.py)
    return (fn if callable(fn) else fn.convert)(src, dst)


def _xarray_to_zarr(src: Path, dst: Path) -> None:
    import xarray as xr

    for group in _groups(src):
        with xr.open_dataset(src, group=group) as ds:
            ds.to_zarr(dst, group=group, mode="w-" if group is None else "a", zarr_format=3)


def _timed(fn: Any, src: Path, work: Path, repeat: int) -> tuple[float, tuple[int, int], str, list[str]]:
    """Best seconds of ``repeat`` runs, the store's sizes, the failure (or ""), warnings seen."""
    best, size, error, seen = float("inf"), (0, 0), "", []
    for i in range(repeat):
        dst = work / f"{src.stem}.{fn.__name__}{i}.zarr"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                fn(src, dst)
            except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not stop
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
            else:
                best = min(best, time.perf_counter() - t0)
        seen = sorted({w.category.__name__ for w in caught})
        size = (0, 0) if error else _size(dst)
        shutil.rmtree(dst, ignore_errors=True)
        if error:
            return float("nan"), (0, 0), error, seen
    return best, size, error, seen


def _mb(n: int) -> str:
    return f"{n / 1e6:.3f}" if n else "-"


def run(quick: bool = False) -> list[dict[str, Any]]:
    import xarray as xr  # noqa: F401
    import zarr

    import numcodecs_ext.cf  # noqa: F401 - imports outside the timings

    entries = [e for index in sorted(CORPUS_DIR.glob("corpus*.json")) for e in json.loads(index.read_text())["files"]]
    if quick:
        entries = [e for e in entries if e["size"] < 64_000]
    repeat = 1 if quick else 3
    rows = []
    print(
        f"convert on {len(entries)} real netCDF files (fixtures/netcdf/), best of {repeat}; zarr {zarr.__version__}, "
        f"anchor: xarray's own open_dataset(...).to_zarr(zarr_format=3) per group\n"
    )
    print(
        "| file | format | original MB | converted MB | of which metadata | converted / original | xarray MB "
        "| convert s | xarray s | convert / xarray time | converted |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    total = {"orig": 0, "conv": 0, "meta": 0, "xr": 0, "tc": 0.0, "tx": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for entry in entries:
            src = work / entry["file"]
            shutil.copyfile(CORPUS_DIR / entry["file"], src)
            tc, (conv, meta), error, seen = _timed(_convert, src, work, repeat)
            tx, (xr_size, _), xr_error, _ = _timed(_xarray_to_zarr, src, work, repeat)
            status = "yes" if not error else f"no: {error}"
            if seen and not error:
                status += f" (warns: {', '.join(seen)})"
            orig = entry["size"]
            row = {
                "file": entry["file"],
                "format": entry["format"],
                "original": orig,
                "converted": conv,
                "metadata": meta,
                "xarray": xr_size,
                "convert_s": tc,
                "xarray_s": tx,
                "status": status,
                "xarray_error": xr_error,
            }
            rows.append(row)
            ratio = f"{conv / orig:.2f}" if conv else "-"
            tratio = f"{tc / tx:.1f}" if not error and not xr_error else "-"
            name = entry["file"] if len(entry["file"]) < 40 else entry["file"][:37] + "..."
            anchor = _mb(xr_size) if not xr_error else f"fails: {xr_error}"
            print(
                f"| {name} | {entry['format']} | {_mb(orig)} | {_mb(conv)} | {_mb(meta)} | {ratio} | "
                f"{anchor} | {tc:.2f} | {tx:.2f} | {tratio} | {status} |"
            )
            if not error and not xr_error:
                total["orig"] += orig
                total["conv"] += conv
                total["meta"] += meta
                total["xr"] += xr_size
                total["tc"] += tc
                total["tx"] += tx
            src.unlink()
    done = sum(1 for r in rows if r["status"].startswith("yes"))
    if total["orig"]:
        print(
            f"| all that converted ({done}/{len(rows)}) | | {_mb(total['orig'])} | {_mb(total['conv'])} | "
            f"{_mb(total['meta'])} | "
            f"{total['conv'] / total['orig']:.2f} | {_mb(total['xr'])} | {total['tc']:.2f} | {total['tx']:.2f} | "
            f"{total['tc'] / total['tx']:.1f} | |"
        )
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
