"""``numcodecs-ext suggest``: the command line of :func:`numcodecs_ext.cf.suggest.suggest`."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import PurePosixPath
from typing import Any

from ..cf.blocks import SAMPLE_BYTES
from ..cf.packing import INTEGER_TYPES, DataRange
from ..cf.suggest import result_json, suggest
from ..store.errors import ToolError, UsageError
from ..store.storage import parse_storage_options
from .options import add_storage_options

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[suggest.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext suggest``."""
    parser.add_argument("src", help="zarr store (v2 or v3) or netCDF file: a local path or an fsspec URL "
                                    "(s3://bucket/data.nc, gs://, https:// ...)")
    parser.add_argument("--array", help="only this array (default: every float array)")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--tolerance", type=float, help="the largest absolute error allowed")
    how.add_argument("--dtype", choices=INTEGER_TYPES, help="only this integer type")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    add_storage_options(parser)




def _print_text(results: dict[str, dict[str, Any]]) -> None:
    for name, res in results.items():
        if "error" in res:
            print(f"{name}: cannot suggest a packing: {res['error']}\n")
            continue
        r: DataRange = res["range"]
        nan = ", with NaN" if r.has_nan else ""
        print(f"{name}: {res['dtype']} in [{r.min:.6g}, {r.max:.6g}]{nan}, {r.count} values")
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
            store = f"{PurePosixPath(name).name.removesuffix('.zarr')}_packed.zarr"
            print("\n  to write it so:\n    "
                  + choice.code(store, res["shape"], res["chunks"]).replace("\n", "\n    "))
        print()
    print(f"max error: guaranteed for every value in the range (float rounding included; 0: "
          f"lossless); measured and ratio: on a sample of up to {SAMPLE_BYTES >> 20} MB "
          "(float bytes / packed + zstd bytes)")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext suggest``: results on stdout; exit 1 if no packing meets
    ``--tolerance`` for some array."""
    tolerance = args.tolerance
    if tolerance is not None and not (math.isfinite(tolerance) and tolerance > 0):
        raise UsageError(f"--tolerance {tolerance:g} is not valid; give a finite number above 0 "
                         "(the largest absolute error allowed)")
    results = suggest(args.src, array=args.array, tolerance=tolerance, dtype=args.dtype,
                      progress=not (args.quiet or args.json),
                      storage_options=parse_storage_options(args.storage_options))
    if args.json:
        print(json.dumps({name: result_json(res) for name, res in results.items()}, indent=2))
    else:
        _print_text(results)
    failed = [name for name, res in results.items() if "error" in res]
    missed = [name for name, res in results.items()
              if "error" not in res and tolerance is not None and res["choice"] is None]
    problems = []
    if failed:
        problems.append("no packing for " + "; ".join(f"{name}: {results[name]['error']}" for name in failed))
    if missed:
        problems.append(f"no packing meets --tolerance {tolerance:g} for {', '.join(missed)} (see why above)")
    if problems:
        raise ToolError("; ".join(problems))
    return 0
