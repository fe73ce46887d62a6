"""Suggest how to store float arrays as small integers: scale_offset + cast_value, per integer type.

For every float array of a zarr store (v2 or v3) or netCDF file, the range is read (streaming,
a slab at a time), then for each integer type the finest packing is shown with its guaranteed
maximum error, the error measured and the compression ratio on a sample (a few MB of the array:
the floats' bytes over the bytes once packed and zstd-compressed). With ``--tolerance`` the
packing that meets it in the smallest type is marked, and the Python that creates such an array
is printed.

Examples::

    numcodecs-ext suggest era5.zarr --tolerance 0.01
    numcodecs-ext suggest data.nc --array t2m --dtype int16 --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .packing import INTEGER_TYPES, DataRange, Packing, choose_packing, data_range

__all__ = ["add_arguments", "run", "suggest_array"]

SAMPLE_BYTES = 4 << 20


def _sample(array: Any) -> np.ndarray:
    """About :data:`SAMPLE_BYTES` of the array: its leading rows."""
    shape = tuple(array.shape)
    if not shape:
        return np.asarray(array[()]).reshape(1)
    per_row = max(1, math.prod(shape[1:])) * np.dtype(array.dtype).itemsize
    rows = max(1, SAMPLE_BYTES // per_row)
    return np.asarray(array[:rows])


def _measure(packing: Packing, sample: np.ndarray) -> tuple[float, float]:
    """(largest error, compression ratio: float bytes over packed + zstd bytes) of ``packing``
    on ``sample``."""
    import numcodecs

    so, cv = packing.filters()
    x = np.ascontiguousarray(sample, dtype=packing.dtype)
    codes = cv.encode(so.encode(x))
    back = so.decode(cv.decode(codes))
    finite = ~np.isnan(x)
    err = float(np.max(np.abs(back[finite].astype(np.float64) - x[finite]))) if finite.any() else 0.0
    stored = len(numcodecs.Zstd(level=3).encode(np.ascontiguousarray(codes).tobytes()))
    return err, x.nbytes / max(1, stored)


def suggest_array(array: Any, *, tolerance: float | None = None,
                  dtype: str | None = None) -> dict[str, Any]:
    """The range of ``array`` and a row per integer type (or only ``dtype``): packing, guaranteed
    and measured error, compression ratio on a sample; ``choice``: what ``tolerance`` or
    ``dtype`` picks (None if nothing meets the tolerance)."""
    r = data_range(array)
    floats = np.dtype(array.dtype)
    sample = _sample(array)
    rows = []
    for name in ([dtype] if dtype else INTEGER_TYPES):
        try:
            p = choose_packing(data_range=r, dtype=name, nan="auto", float_dtype=floats)
        except ValueError as e:
            rows.append({"dtype": name, "error": str(e)})
            continue
        measured, ratio = _measure(p, sample)
        rows.append({"dtype": name, "packing": p, "max_error": p.max_error,
                     "measured_error": measured, "ratio": ratio})
    choice = None
    if tolerance is not None:
        try:
            choice = choose_packing(data_range=r, tolerance=tolerance, float_dtype=floats)
        except ValueError as e:
            return {"range": r, "rows": rows, "choice": None, "why": str(e)}
    elif dtype is not None and "packing" in rows[0]:
        choice = rows[0]["packing"]
    if choice is not None:
        measured, ratio = _measure(choice, sample)
        rows.append({"dtype": f"{choice.packed.name} (tolerance)" if tolerance else choice.packed.name,
                     "packing": choice, "max_error": choice.max_error,
                     "measured_error": measured, "ratio": ratio, "chosen": True})
    return {"range": r, "rows": rows, "choice": choice}


def _open(src: str, name: str | None) -> dict[str, Any]:
    """{name: array} of the float arrays in ``src`` (or only ``name``)."""
    path = Path(src)
    if not path.exists():
        raise ValueError(f"{src} does not exist")
    if path.is_file():
        try:
            import xarray as xr
        except ImportError as e:
            raise ValueError('reading netCDF needs xarray: pip install "numcodecs_ext[xarray]"') from e
        ds = xr.open_dataset(path, mask_and_scale=True)
        arrays = {k: v.data for k, v in ds.data_vars.items()}
    else:
        import zarr

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                node = zarr.open(str(path), mode="r")
            except Exception as e:  # noqa: BLE001 - not a store: said plainly
                raise ValueError(f"{src} is not a zarr store or netCDF file ({e})") from None
        if hasattr(node, "shape"):
            arrays = {path.name: node}
        else:
            arrays = {k: a for k, a in node.arrays()}
    if name is not None:
        if name not in arrays:
            raise ValueError(f"no array {name!r} in {src}; it has {', '.join(sorted(arrays)) or 'none'}")
        arrays = {name: arrays[name]}
        if np.dtype(arrays[name].dtype).kind != "f":
            raise ValueError(f"array {name!r} is {np.dtype(arrays[name].dtype)}: only float arrays are packed")
    return {k: a for k, a in arrays.items() if np.dtype(a.dtype).kind == "f"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext suggest``."""
    parser.add_argument("src", help="zarr store (v2 or v3) or netCDF file")
    parser.add_argument("--array", help="only this array (default: every float array)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--tolerance", type=float, help="the largest absolute error allowed")
    how.add_argument("--dtype", choices=INTEGER_TYPES, help="only this integer type")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def _row_json(row: dict[str, Any]) -> dict[str, Any]:
    p = row.get("packing")
    if p is None:
        return {"dtype": row["dtype"], "error": row["error"]}
    return {"dtype": p.packed.name, "offset": p.offset, "scale": p.scale, "nan_code": p.nan_code,
            "max_error": p.max_error, "measured_error": row["measured_error"],
            "ratio": row["ratio"], "chosen": bool(row.get("chosen")), "codecs": p.codecs()}


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext suggest``."""
    if args.tolerance is not None and not (math.isfinite(args.tolerance) and args.tolerance > 0):
        print(f"numcodecs-ext suggest: --tolerance {args.tolerance} is not valid; give a number above 0",
              file=sys.stderr)
        return 2
    try:
        arrays = _open(args.src, args.array)
        if not arrays:
            raise ValueError(f"{args.src} has no float arrays")
        results = {name: suggest_array(a, tolerance=args.tolerance, dtype=args.dtype)
                   for name, a in arrays.items()}
    except (ValueError, OSError) as e:
        print(f"numcodecs-ext suggest: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({name: {"range": vars(res["range"]),
                                 "rows": [_row_json(r) for r in res["rows"]],
                                 "why": res.get("why")} for name, res in results.items()}, indent=2))
        return 0
    for name, res in results.items():
        r: DataRange = res["range"]
        nan = ", with NaN" if r.has_nan else ""
        print(f"{name}: {arrays[name].dtype} in [{r.min:.6g}, {r.max:.6g}]{nan}, {r.count} values")
        print(f"  {'stored as':18} {'offset':>12} {'scale':>12} {'NaN code':>11} {'max error':>10} "
              f"{'measured':>10} {'ratio':>7}")
        for row in res["rows"]:
            p = row.get("packing")
            if p is None:
                print(f"  {row['dtype']:18} {row['error']}")
                continue
            mark = "  <- " if row.get("chosen") else ""
            nan_code = "" if p.nan_code is None else str(p.nan_code)
            print(f"  {row['dtype']:18} {p.offset:12.6g} {p.scale:12.6g} {nan_code:>11} "
                  f"{p.max_error:10.3g} {row['measured_error']:10.3g} {row['ratio']:7.2f}{mark}")
        if res.get("why"):
            print(f"  {res['why']}")
        choice = res["choice"]
        if choice is not None:
            shape = tuple(arrays[name].shape)
            chunks = getattr(arrays[name], "chunks", None)
            chunks = chunks if isinstance(chunks, tuple) and all(isinstance(c, int) for c in chunks) else None
            store = f"{Path(name).name.removesuffix('.zarr')}_packed.zarr"
            print("\n  to write it so:\n    " + choice.code(store, shape, chunks).replace("\n", "\n    "))
        print()
    print("max error: guaranteed for every value in the range (float rounding included); "
          "measured and ratio: on a sample of up to 4 MB (float bytes / packed + zstd bytes)")
    return 0
