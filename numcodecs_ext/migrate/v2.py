"""Migrate a zarr v2 store to zarr v3, keeping its chunks wherever they read the same.

Every array's v3 metadata is planned first: numcodecs FixedScaleOffset and AsType become the spec
codecs scale_offset and cast_value, `_ARRAY_DIMENSIONS` becomes dimension names, and consolidated
metadata stays consolidated. Chunks are then copied as they are, read back through the new
metadata and compared with the source, value for value; chunks that read differently are
rewritten. The metadata is written last, so an interrupted migration never opens as a store,
and the same command resumes it. The source is only read.

`--in-place` adds the v3 metadata beside the v2 metadata instead (the chunks stay as they are).
Once you are satisfied, `--in-place --finish` checks everything again and removes the v2 metadata.

An array whose fill value is NaN reads as before but refuses writes until NaN has a code:
`--nan-code auto` (after a migration: `numcodecs-ext normalize STORE --nan-code auto`).
`--verify` reads back every chunk by default; `sample:N` and `none` are quicker, and `--finish`
refuses them. A dask scheduler you configured does the work; otherwise threads here do.

Examples::

    numcodecs-ext migrate era5_v2.zarr --dry-run
    numcodecs-ext migrate era5_v2.zarr era5_v3.zarr
    numcodecs-ext migrate era5_v2.zarr era5_v3.zarr --nan-code auto
    numcodecs-ext migrate era5_v2.zarr --in-place            # adds zarr.json beside the v2 metadata
    numcodecs-ext migrate era5_v2.zarr --in-place --finish   # later: removes the v2 metadata
    numcodecs-ext migrate s3://bucket/era5_v2.zarr --in-place   # writes only zarr.json objects
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from ..store.errors import UsageError
from ..store.storage import Location, add_storage_options_argument, parse_storage_options
from ..store.verifying import VerifyPlan, add_verify_argument, parse_verify
from .codes import parse_code_option
from .filters import MATCHES
from .inplace import finish_in_place, migrate_in_place
from .plan import v2_nodes
from .prove import MigrationReport, plan_store, prove_on_source
from .text import counted
from .write import prepare_destination, run_plan, verify_stores, write_store

__all__ = ["MigrationReport", "migrate", "plan_store", "verify"]

def _codes(value: Any, option: str) -> dict[str | None, int | str]:
    """``nan_code=`` / ``fill_code=`` as {array or None: code or "auto"}: an int, "auto", a
    mapping, or the command line's strings."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            out.update({(None if k is None else str(k).strip("/")): c
                        for c in parse_code_option([str(v)], option).values()})
        return out
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        return parse_code_option([str(value)], option)
    return parse_code_option([str(v) for v in value], option)


def migrate(src: Any, dst: Any = None, *, in_place: bool = False, finish: bool = False,
            dry_run: bool = False, match: str = "decode", wrap: bool = False,
            keep_numcodecs: bool = False, rewrite: bool = False, verify: Any = None,
            verify_result: bool | None = None, nan_code: Any = None, fill_code: Any = None,
            progress: bool = False, storage_options: Mapping[str, Any] | None = None) -> MigrationReport:
    """Migrate the zarr v2 store ``src`` to zarr v3 at ``dst`` (or in place).

    Parameters
    ----------
    src, dst : path, URL, zarr store or Location
        ``dst`` must not exist (or hold an interrupted migration of ``src``, which is resumed)
        and must not overlap ``src``. ``src`` is only read, unless ``in_place``.
    in_place : bool
        Add a ``zarr.json`` beside each node's v2 metadata, after proving that every array reads
        the same under it (refused if any array's chunks would need rewriting).
    finish : bool
        For a store migrated in place: prove again that the v3 metadata reads every array as the
        v2 metadata does, then remove the v2 metadata (``.zarray``, ``.zgroup``, ``.zattrs``,
        ``.zmetadata``).
    dry_run : bool
        Plan, and prove on the source (read-only) which arrays keep their chunks; write nothing.
    match, wrap
        See :func:`numcodecs_ext.migrate.filters.filter_codecs`. By default, values written
        later that the stored type cannot hold are refused (numcodecs wrapped them silently);
        stored chunks read the same either way, except chunks that hold wrapped codes, which
        need ``wrap``.
    keep_numcodecs : bool
        Keep filters the spec codecs cannot express under zarr's ``numcodecs.<id>`` names
        instead of refusing.
    rewrite : bool
        Decode and encode every chunk again even where the chunks could be kept.
    verify : "full", "sample:N", "none" or VerifyPlan
        What is read back and compared with the source: every chunk ("full", the default),
        ``N`` chunks per array chosen at random ("sample:N": the report says it sampled, and
        how many chunks of how many it read), or nothing ("none": the report says not
        verified). With ``in_place``, what proves the v3 metadata before the ``zarr.json``
        documents are added (the v2 metadata stays: nothing is lost if a chunk the sample did
        not read differs). ``finish`` removes the only other way to read the store, so it
        proves every chunk, always: it refuses "sample:N" and "none".
    verify_result : bool, optional
        The older form: True is "full", False is "none".
    nan_code, fill_code : int, "auto", {array: int or "auto"}, optional
        Give NaN (or a fill value outside the packing) a stored code of its own, so that arrays
        whose fill value is NaN can be written to; "auto" picks one no stored chunk holds.
    progress : bool
        A progress bar on stderr.
    storage_options : mapping, optional
        For ``src`` and ``dst`` URLs (fsspec: credentials, endpoint ...); otherwise the standard
        configuration (``AWS_*`` variables including ``AWS_ENDPOINT_URL``, fsspec's files). On
        object stores chunks kept as they are are copied server-side (S3: one CopyObject each),
        and ``--in-place`` writes only the ``zarr.json`` objects.

    Raises
    ------
    UsageError
        Invalid arguments, a source that is not a zarr v2 store, a destination that overlaps
        the source or holds something else (nothing is written).
    NotExpressible, ToolError, VerificationError
        An array that cannot be migrated, a source that cannot be read, a result that does not
        read as the source (nothing opens as complete at the destination).
    """
    if match not in MATCHES:
        raise UsageError(f"match={match!r} is not valid; use one of {', '.join(MATCHES)}")
    check = _verify_option(verify, verify_result)
    nan_codes, fill_codes = _codes(nan_code, "--nan-code"), _codes(fill_code, "--fill-code")
    source = Location.parse(src, storage_options=storage_options)
    if dst is not None:
        from ..store.staging import refuse_zip_destination

        refuse_zip_destination(dst)
    target = Location.parse(dst, storage_options=storage_options) if dst is not None else None
    if finish:
        in_place = True
        if rewrite or nan_codes or fill_codes or keep_numcodecs or wrap or match != "decode":
            raise UsageError("--finish only removes the v2 metadata of a store migrated in place; "
                             "it takes no migration options (--rewrite, --nan-code, --fill-code, "
                             "--wrap, --match, --keep-numcodecs)")
        if not check.complete:
            raise UsageError(f"--finish removes the v2 metadata only after proving that the v3 "
                             f"metadata reads every chunk of every array the same: it cannot "
                             f"{'sample' if check.enabled else 'skip'} that (--verify "
                             f"{'sample:' + str(check.count) if check.enabled else 'none'}); "
                             "use --verify full (the default)")
    if in_place:
        if target is not None and target.resolved() != source.resolved():
            raise UsageError("give either a destination or --in-place, not both")
        if rewrite:
            raise UsageError("--in-place keeps the chunks as they are; --rewrite needs a new store")
        if not dry_run:
            source.refuse_writes("migrate --in-place --finish removes its v2 metadata" if finish else
                                 "migrate --in-place adds zarr.json documents to it")
        if finish:
            if not dry_run and not source.removes:
                raise UsageError(f"{source}: this store cannot remove objects (a zip file), and --finish "
                                 "removes the v2 metadata; nothing was removed. Unzip it, run --finish on "
                                 "the folder, and zip that again")
            return finish_in_place(source, dry_run=dry_run, progress=progress)
    elif target is None:
        if not dry_run:
            raise UsageError("a destination is needed: `numcodecs-ext migrate SRC DST`, or "
                             "--in-place, or --dry-run to see the plan")
    elif target.overlaps(source):
        raise UsageError(f"{target} overlaps {source} (the same place, one inside the other, or "
                         "reached through a link): migrate never writes into its source; choose "
                         "a destination outside it")
    elif target.obstacle() is not None:
        raise UsageError(f"{target}: cannot be created, {target.obstacle()} is a file")
    if target is not None and not in_place and not dry_run:
        target.refuse_writes("migrate writes the new store there")
    index = v2_nodes(source)
    report = plan_store(source, match=match, wrap=wrap, keep_numcodecs=keep_numcodecs,
                        nan_code=nan_codes, fill_code=fill_codes, progress=progress, index=index)
    report.dry_run = dry_run
    if in_place:
        migrate_in_place(source, index, report, verify=check, dry_run=dry_run, progress=progress)
        return report
    if rewrite:
        for plan in report.arrays:
            plan.rewrite = plan.rewrite or "asked for"
    if dry_run:
        if check.enabled:
            prove_on_source(source, report, progress=progress, verify=check)
        else:
            report.verify = check
        if target is not None and target.exists():
            plan = run_plan(report, source, rewrite_all=rewrite, verify=check)
            state = prepare_destination(target, report, source=source, plan=plan)
            if state.journal is not None:
                report.notes.append(f"{target} holds an interrupted run of this migration: it "
                                    "would be resumed")
            elif state.message:
                report.notes.append(state.message)
        return report
    from .prove import check_rewritable

    check_rewritable(source, report)
    write_store(report, source, target, rewrite_all=rewrite, verify=check, progress=progress)
    return report


def _verify_option(verify: Any, verify_result: bool | None) -> VerifyPlan:
    """``verify=`` (full, sample:N, none, a VerifyPlan) and its older boolean alias
    ``verify_result=`` as one plan (UsageError if they disagree)."""
    if verify is None:
        return parse_verify("full" if verify_result in (None, True) else "none")
    check = parse_verify(verify)
    if verify_result is not None and bool(verify_result) != check.enabled:
        raise UsageError(f"verify={verify!r} and verify_result={verify_result!r} disagree; give "
                         "verify= alone (full, sample:N or none)")
    return check


def verify(src: Any, dst: Any, report: MigrationReport | None = None, *, progress: bool = False,
           verify: Any = "full") -> MigrationReport:
    """Read every array of the v2 store ``src`` and the v3 store ``dst`` a run at a time (as
    tasks on the user's dask scheduler, if one is configured) and raise
    :class:`~numcodecs_ext.store.errors.VerificationError` at the first difference (values
    compared bit for bit in their own type, NaN payloads included). ``verify="sample:N"`` reads
    N chunks per array chosen at random (``report.verification()`` says how many of how many).
    Returns the report."""
    source, target = Location.parse(src), Location.parse(dst)
    if report is None:
        report = plan_store(source, keep_numcodecs=True)
    verify_stores(source, target, report, progress=progress, verify=verify)
    return report


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
    parser.add_argument("--match", choices=MATCHES, default="decode",
                        help="float FixedScaleOffset: read as numcodecs decoded (default) or as it "
                             "encoded, bit for bit")
    parser.add_argument("--wrap", action="store_true",
                        help="let values the stored integers cannot hold wrap, as numcodecs did "
                             "(default: refuse to write them)")
    parser.add_argument("--keep-numcodecs", action="store_true",
                        help="keep filters the spec codecs cannot express, as numcodecs.<id> "
                             "(default: refuse)")
    parser.add_argument("--nan-code", action="append", metavar="[ARRAY=]N|auto",
                        help="give NaN a stored code, so that arrays with a NaN fill value take "
                             "writes; auto picks a free one; ARRAY= for one array")
    parser.add_argument("--fill-code", action="append", metavar="[ARRAY=]N|auto",
                        help="the same for a fill value outside the packing")
    parser.add_argument("--rewrite", action="store_true",
                        help="decode and encode every chunk, even where it could be kept")
    add_verify_argument(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or plan")
    add_storage_options_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext migrate``."""
    report = migrate(args.src, args.dst, in_place=args.in_place, finish=args.finish,
                     dry_run=args.dry_run, match=args.match, wrap=args.wrap,
                     keep_numcodecs=args.keep_numcodecs, rewrite=args.rewrite,
                     verify=args.verify, nan_code=args.nan_code,
                     fill_code=args.fill_code, progress=not args.quiet,
                     storage_options=parse_storage_options(args.storage_options))
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
