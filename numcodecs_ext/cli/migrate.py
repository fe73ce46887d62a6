"""``numcodecs-ext migrate``: the command line of :func:`numcodecs_ext.migrate.migrate`,
:func:`~numcodecs_ext.migrate.migrate_in_place`, :func:`~numcodecs_ext.migrate.finish_in_place`
and :func:`~numcodecs_ext.migrate.plan_migration`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..migrate.options import MigrateOptions, parse_codes
from ..migrate.prove import MigrationReport
from ..migrate.text import counted
from ..migrate.v2 import finish_in_place, migrate, migrate_in_place, plan_migration
from ..store.errors import UsageError
from ..store.storage import Location, parse_storage_options
from ..store.verifying import parse_verify
from .options import add_migrate_options, add_storage_options, add_verify

#: the text of ``--help``: the documentation of the module that does the work
HELP = sys.modules[migrate.__module__].__doc__


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext migrate``."""
    parser.add_argument("src", help="the zarr v2 store: a folder or a URL (s3://, memory:// ...)")
    parser.add_argument("dst", nargs="?",
                        help="the zarr v3 store to make (an interrupted migration there is resumed)")
    parser.add_argument("--in-place", action="store_true",
                        help="add v3 metadata beside the v2 metadata of SRC (chunks untouched)")
    parser.add_argument("--finish", action="store_true",
                        help="after --in-place: check everything again, then remove the v2 metadata")
    parser.add_argument("--dry-run", action="store_true", help="print the plan per array; write nothing")
    add_migrate_options(parser)
    parser.add_argument("--keep-numcodecs", action="store_true",
                        help="keep filters the spec codecs cannot express, as numcodecs.<id> "
                             "(default: refuse)")
    parser.add_argument("--rewrite", action="store_true",
                        help="decode and encode every chunk, even where it could be kept")
    add_verify(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or plan")
    add_storage_options(parser)


def options_from(args: argparse.Namespace, **extra: Any) -> MigrateOptions:
    """The :class:`MigrateOptions` of ``migrate`` or ``normalize``'s arguments (messages name
    the flags)."""
    return MigrateOptions(match=args.match, wrap=args.wrap, verify=parse_verify(args.verify),
                          nan_code=parse_codes(args.nan_code, "--nan-code"),
                          fill_code=parse_codes(args.fill_code, "--fill-code"), progress=not args.quiet,
                          storage_options=parse_storage_options(args.storage_options), **extra)


def _one_store(args: argparse.Namespace, options: MigrateOptions) -> None:
    if args.dst is None:
        return
    where = [Location.parse(p, storage_options=options.storage_options) for p in (args.src, args.dst)]
    if where[0].resolved() != where[1].resolved():
        raise UsageError("give either a destination or --in-place, not both")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext migrate``."""
    options = options_from(args, keep_numcodecs=args.keep_numcodecs, rewrite=args.rewrite)
    if args.finish:
        if options.asks_for_migration:
            raise UsageError("--finish only removes the v2 metadata of a store migrated in place; "
                             "it takes no migration options (--rewrite, --nan-code, --fill-code, "
                             "--wrap, --match, --keep-numcodecs)")
        check = options.verify
        if not check.complete:
            raise UsageError(f"--finish removes the v2 metadata only after proving that the v3 "
                             f"metadata reads every chunk of every array the same: it cannot "
                             f"{'sample' if check.enabled else 'skip'} that (--verify "
                             f"{'sample:' + str(check.count) if check.enabled else 'none'}); "
                             "use --verify full (the default)")
        _one_store(args, options)
        report = finish_in_place(args.src, dry_run=args.dry_run, progress=options.progress,
                                 storage_options=options.storage_options)
    elif args.in_place:
        _one_store(args, options)
        report = (plan_migration(args.src, None, options, in_place=True) if args.dry_run
                  else migrate_in_place(args.src, options))
    elif args.dry_run:
        report = plan_migration(args.src, args.dst, options)
    elif args.dst is None:
        raise UsageError("a destination is needed: `numcodecs-ext migrate SRC DST`, or "
                         "--in-place, or --dry-run to see the plan")
    else:
        report = migrate(args.src, args.dst, options)
    print_report(report, args)
    return 0


def print_report(report: MigrationReport, args: argparse.Namespace) -> None:
    where = args.src if args.in_place or args.finish else (args.dst or args.src)
    if args.finish:
        verb = "would remove" if args.dry_run else "removed"
        if report.finished:
            print(f"{verb} the v2 metadata ({counted(len(report.finished), 'document')}) of {where}"
                  + (" after verifying that its v3 metadata reads every array identically"
                     + (" (but for the values said below)" if report.notes else "")))
            if not args.dry_run:
                print(f"{where} is a zarr v3 store only")
        for note in report.notes:
            print(note)
        return
    if not args.quiet or args.dry_run:
        print(report)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    for plan in report.read_only:
        text = plan.read_only
        option = next((o for o in ("--nan-code", "--fill-code") if o in text), None)
        if option and not args.dry_run:  # written already: the tool that repairs it
            text += f". Now `numcodecs-ext normalize {where} {option} auto` does that"
        print(f"note: array {plan.name} will be read-only: {text}", file=sys.stderr)
    if report.not_copied and not args.in_place:
        shown = ", ".join(report.not_copied[:5]) + (" ..." if len(report.not_copied) > 5 else "")
        one = len(report.not_copied) == 1
        print(f"note: {counted(len(report.not_copied), 'file')} of {args.src} {'is' if one else 'are'} "
              f"no zarr chunk or metadata and {'was' if one else 'were'} not copied: {shown}", file=sys.stderr)
    if args.dry_run:
        check = report.verify
        if check is None or check.complete:
            how = " (every chunk of SRC was read under both metadata versions to decide what is kept)"
        elif check.enabled:
            how = f" (what is kept was decided on a sample: {report.verification()})"
        else:
            how = ""
        print("dry run: nothing written" + how)
        return
    if report.resumed:
        print(report.resumed)
    if report.in_place:
        print(f"added zarr v3 metadata to {where} beside its v2 metadata. zarr and xarray will warn "
              "on every open that both are there; once you are satisfied, "
              f"`numcodecs-ext migrate {args.src} --in-place --finish` removes the v2 metadata")
    if report.verified:
        print("verified: every chunk reads the same values (bit for bit) under the v3 metadata "
              "as under the v2 metadata")
    elif report.verify is not None and report.verify.mode == "sample":
        print(report.verification() + " (--verify sample)")
    else:
        print("not verified (--verify none): the chunks were not read back")
