"""``numcodecs-ext normalize``: the command line of :func:`numcodecs_ext.migrate.normalize`."""

from __future__ import annotations

import argparse
import sys

from ..migrate.normalize import normalize
from ..migrate.text import counted
from ..store.errors import ToolError
from .migrate import options_from
from .options import add_migrate_options, add_storage_options, add_verify

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[normalize.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext normalize``."""
    parser.add_argument("store", help="zarr v3 store (a local directory or an fsspec URL), changed in place")
    parser.add_argument("--dry-run", action="store_true",
                        help="prove every array and print what would change, write nothing")
    add_migrate_options(parser)
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar, and only the arrays left as they were")
    add_verify(parser, aliases=())
    add_storage_options(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext normalize``: exit 0 when every array that had something to change
    was changed (or there was nothing), 1 when some were left as they were."""
    report = normalize(args.store, options_from(args), dry_run=args.dry_run)
    for plan in report.arrays:
        if not args.quiet or plan.left:
            print(plan.describe())
    verb = "would change" if args.dry_run else "changed"
    changed, left = report.changed, report.left
    if changed:
        print(f"{counted(len(changed), 'array')} {verb} (metadata only; chunks untouched; {report.verification()})")
    elif not left:
        print("nothing to normalize: no array names numcodecs.fixedscaleoffset or numcodecs.astype"
              + ("" if not (args.nan_code or args.fill_code) else ", or needs the code asked for"))
    for note in report.notes:
        print(note)
    for name, why in report.read_only:
        print(f"note: array {name} will be read-only: {why}", file=sys.stderr)
    if left:
        raise ToolError(f"{counted(len(left), 'array')} left as {'it was' if len(left) == 1 else 'they were'}: "
                        + "; ".join(f"{p.name}: {p.left}" for p in left))
    return 0
