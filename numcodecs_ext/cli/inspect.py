"""``numcodecs-ext inspect``: the command line of :func:`numcodecs_ext.tools.inspect.inspect_store`."""

from __future__ import annotations

import argparse
import json
import sys

from ..store.storage import parse_storage_options
from ..tools.inspect import format_report, inspect_store
from .options import add_storage_options

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[inspect_store.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext inspect``."""
    parser.add_argument("store", help="a zarr v2 or v3 store: a local directory or .zip file, or an "
                                      "fsspec URL (s3://, gs://, memory:// ...)")
    parser.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    add_storage_options(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext inspect``: 0, or 1 when the store has problems (they are printed)."""
    report = inspect_store(args.store, storage_options=parse_storage_options(args.storage_options))
    print(json.dumps(report, indent=2, default=str) if args.json else format_report(report))
    if report["problems"]:
        sys.stdout.flush()
        where = 'under "problems"' if args.json else "listed above"
        print(f"numcodecs-ext inspect: {len(report['problems'])} problem(s) in {report['store']} ({where})",
              file=sys.stderr)
        return 1
    return 0
