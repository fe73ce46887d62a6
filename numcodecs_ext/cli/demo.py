"""``numcodecs-ext demo`` (and ``numcodecs-ext`` alone): the command line of
:func:`numcodecs_ext.tools.demo.run_demo`."""

from __future__ import annotations

import argparse
import sys

from ..store.errors import UsageError
from ..tools.demo import check_plot_path, local_path, plot_tradeoff, run_demo

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[run_demo.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext demo`` (also what ``numcodecs-ext`` alone runs)."""
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="keep the zarr stores here, one per pipeline (default: a temporary folder)")
    parser.add_argument("--plot", default=None, metavar="FILE.png",
                        help="also draw compression ratio against error for the lossy pipelines "
                             "(needs matplotlib)")
    parser.add_argument("--no-code", action="store_true", help="do not print each pipeline's code")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext demo``: 0 when every pipeline kept its promise, else 1."""
    if args.out is not None:
        args.out = local_path("--out", args.out)
    if args.plot is not None:
        args.plot = local_path("--plot", args.plot)
        check_plot_path(args.plot)
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError('--plot needs matplotlib: pip install "numcodecs_ext[plot]"') from None
    status = run_demo(args.out, args.quiet, show_code=not args.no_code)
    if args.plot is not None:
        points = plot_tradeoff(args.plot, quiet=args.quiet)
        print(f"\nplot of {len(points)} configurations written to {args.plot}")
    return status
