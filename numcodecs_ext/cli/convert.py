"""``numcodecs-ext convert``: the command line of :func:`numcodecs_ext.cf.convert.convert`."""

from __future__ import annotations

import argparse
import sys

from ..cf.compress import COMPRESSORS, SHUFFLES, Compressor
from ..cf.convert import convert, parse_chunk_mib, parse_chunks
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
                        help="blosc (default: zstd inside, level 7, shuffled), zstd, gzip or none; "
                             "all zarr spec codecs")
    parser.add_argument("--level", type=int, help="compression level (default: blosc 7, zstd 3, gzip 1)")
    parser.add_argument("--shuffle", choices=list(SHUFFLES),
                        help="blosc's shuffle over the stored type (default auto: byte for 2 bytes and more, none "
                             "for 1 byte)")
    add_verify(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bars, no summary")
    add_storage_options(parser)


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
