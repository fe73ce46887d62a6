"""``numcodecs-ext convert``: the command line of :func:`numcodecs_ext.cf.convert.convert`."""

from __future__ import annotations

import argparse
import math
import sys

from ..cf.compress import COMPRESSORS, SHUFFLES, Compressor
from ..cf.convert import CHUNK_MIB_RANGE, convert
from ..store.errors import UsageError
from ..store.storage import parse_storage_options
from ..store.verifying import parse_verify
from .options import add_storage_options, add_verify

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[convert.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext convert``."""
    parser.add_argument("src", help="netCDF file (CF-packed variables become spec codecs): a path or a URL "
                                    "(s3://bucket/file.nc, https:// ...), read in ranges")
    parser.add_argument("dst", help="zarr store to create (must not exist): a path or a URL (s3://, gs:// ...)")
    parser.add_argument("--zarr-format", type=int, choices=[2, 3], default=3,
                        help="3 (default): the spec codecs as zarr v3 filters; 2: numcodecs_ext's numcodecs filters, "
                             "for readers of zarr v2 and for what v3 cannot hold (compound types, char variables "
                             "with a _FillValue)")
    parser.add_argument("--chunks", help="DIM=SIZE[,DIM=SIZE...]; other dimensions automatic")
    parser.add_argument("--chunk-mib", default="8", metavar="MIB",
                        help="automatic chunk size in MiB of decoded values (1/64, i.e. 16 KiB, to 1024; default 8)")
    parser.add_argument("--compressor", choices=list(COMPRESSORS), default="blosc",
                        help="blosc (default: zstd inside, level 1, 1 MiB blocks, shuffled), zstd, gzip or none; "
                             "all zarr spec codecs")
    parser.add_argument("--level", type=int, help="compression level (default: blosc 1, zstd 3, gzip 1)")
    parser.add_argument("--shuffle", choices=list(SHUFFLES),
                        help="blosc's shuffle over the stored type (default auto: byte for 2 bytes and more, none "
                             "for 1 byte)")
    add_verify(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no summary")
    add_storage_options(parser)


def parse_chunks(text: str | None) -> dict[str, int] | None:
    """``--chunks time=24,lat=181`` as a mapping; UsageError for anything else.

    >>> parse_chunks("time=24, lat=181")
    {'time': 24, 'lat': 181}
    """
    if text is None:
        return None
    out: dict[str, int] = {}
    for item in text.split(","):
        name, sep, size = (s.strip() for s in item.partition("="))
        if not sep or not name or not size.isdigit() or not 1 <= int(size) <= 2**31:
            raise UsageError(f"--chunks {text!r}: expected DIM=SIZE[,DIM=SIZE...] with whole sizes from 1 to "
                             f"{2**31}, got {item.strip()!r}")
        if name in out:
            raise UsageError(f"--chunks {text!r}: {name} is given twice")
        out[name] = int(size)
    return out


def parse_chunk_mib(text: str) -> int:
    """``--chunk-mib`` as bytes; UsageError outside :data:`CHUNK_MIB_RANGE` (or not a number)."""
    lo, hi = CHUNK_MIB_RANGE
    try:
        mib = float(text)
    except ValueError:
        mib = math.nan
    if not (math.isfinite(mib) and lo <= mib <= hi):
        raise UsageError(f"--chunk-mib {text}: give a size from {lo:g} (16 KiB) to {hi:g} (MiB)")
    return int(mib * (1 << 20))


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext convert``."""
    plan = parse_verify(args.verify)
    chunk_bytes = parse_chunk_mib(args.chunk_mib)
    chunks = parse_chunks(args.chunks)
    compressor = Compressor.parse(args.compressor, level=args.level, shuffle=args.shuffle)
    report = convert(args.src, args.dst, zarr_format=args.zarr_format, chunks=chunks, chunk_bytes=chunk_bytes,
                     compressor=compressor, progress=not args.quiet, verify=plan,
                     storage_options=parse_storage_options(args.storage_options))
    if not args.quiet:
        print(f"{report.src} -> {report.dst} (zarr v{report.zarr_format})")
        print(report)
        if report.resumed:
            print(report.resumed)
        if report.verified:
            print("verified: every value reads back as xarray decodes the netCDF file (packed variables within "
                  "each value's bound)")
        elif plan.mode == "sample":
            print(report.verification)
        else:
            print("not verified (--verify none): nothing was read back")
    elif report.resumed:
        print(f"numcodecs-ext convert: {report.resumed}", file=sys.stderr)
    return 0
