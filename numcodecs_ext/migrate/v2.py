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

from typing import Any

from ..store.errors import UsageError
from ..store.storage import Location
from .inplace import add_v3_metadata, remove_v2_metadata
from .options import MigrateOptions
from .index import v2_nodes
from .prove import MigrationReport, check_rewritable, plan_store, prove_on_source
from .write import prepare_destination, run_plan, verify_stores, write_store

__all__ = ["MigrateOptions", "MigrationReport", "finish_in_place", "migrate", "migrate_in_place",
           "plan_migration", "plan_store", "verify"]


def migrate(src: Any, dst: Any = None, options: MigrateOptions | None = None, **keywords: Any) -> MigrationReport:
    """Migrate the zarr v2 store ``src`` to a new zarr v3 store at ``dst``.

    Parameters
    ----------
    src, dst : path, URL, zarr store or Location
        ``dst`` must not exist (or hold an interrupted migration of ``src``, which is resumed)
        and must not overlap ``src``. ``src`` is only read.
    options : MigrateOptions, optional
        How to migrate; its fields may also be given as keywords (``rewrite=True``,
        ``nan_code="auto"``, ``verify="sample:5"`` ...), which replace those of ``options``.
        On object stores chunks kept as they are are copied server-side (S3: one CopyObject
        each).

    Raises
    ------
    UsageError
        Invalid options, a source that is not a zarr v2 store, a destination that overlaps
        the source or holds something else (nothing is written).
    NotExpressible, ToolError, VerificationError
        An array that cannot be migrated, a source that cannot be read, a result that does not
        read as the source (nothing opens as complete at the destination).
    """
    if {"in_place", "finish", "dry_run"} & set(keywords):
        return _deprecated_form(src, dst, options, keywords)
    opts = MigrateOptions.make(options, **keywords)
    if dst is None:
        raise UsageError("dst=None: give the new store's place; migrate_in_place adds the v3 metadata "
                         "to the source instead, plan_migration only plans")
    source, target = _source(src, opts), _target(dst, src, opts)
    target.refuse_writes("migrate writes the new store there")
    report = _plan(source, opts, dry_run=False)
    check_rewritable(source, report)
    write_store(report, source, target, rewrite_all=opts.rewrite, verify=opts.verify, progress=opts.progress)
    return report


def migrate_in_place(src: Any, options: MigrateOptions | None = None, **keywords: Any) -> MigrationReport:
    """Add a ``zarr.json`` beside each node's v2 metadata of ``src``, after proving that every
    array reads the same under it (``options.verify``: every chunk, a sample, or none; the v2
    metadata stays, so nothing is lost if a chunk a sample did not read differs). Refused
    (ToolError) if any array's chunks would need rewriting, and for ``rewrite=True``. On object
    stores only the ``zarr.json`` objects are written. :func:`finish_in_place` later removes the
    v2 metadata. Options and errors as for :func:`migrate`."""
    opts = MigrateOptions.make(options, **keywords)
    source = _source(src, opts)
    _refuse_rewrite_in_place(opts)
    source.refuse_writes("migrate --in-place adds zarr.json documents to it")
    return _in_place(source, opts, dry_run=False)


def finish_in_place(src: Any, *, dry_run: bool = False, progress: bool = False,
                    storage_options: Any = None) -> MigrationReport:
    """For a store migrated in place: prove again that the v3 metadata reads every chunk of
    every array as the v2 metadata does, then remove the v2 metadata (``.zarray``,
    ``.zgroup``, ``.zattrs``, ``.zmetadata``). It proves every chunk, always (the v2 metadata is
    the only other way to read the store) and takes no migration options. ``dry_run``: prove,
    and say what would be removed."""
    source = Location.parse(src, storage_options=storage_options)
    if not dry_run:
        source.refuse_writes("migrate --in-place --finish removes its v2 metadata")
        if not source.removes:
            raise UsageError(f"{source}: this store cannot remove objects (a zip file), and --finish "
                             "removes the v2 metadata; nothing was removed. Unzip it, run --finish on "
                             "the folder, and zip that again")
    return remove_v2_metadata(source, dry_run=dry_run, progress=progress)


def plan_migration(src: Any, dst: Any = None, options: MigrateOptions | None = None, *,
                   in_place: bool = False, **keywords: Any) -> MigrationReport:
    """What :func:`migrate` (to ``dst``, or to no place yet) or, with ``in_place``,
    :func:`migrate_in_place` would do, written nowhere: the plan per array, proven on the
    source (read-only; ``options.verify`` says how much) to say which arrays keep their
    chunks; for a ``dst`` that holds an interrupted run of this migration, a note that it would
    be resumed. Options and errors as for :func:`migrate`."""
    opts = MigrateOptions.make(options, **keywords)
    source = _source(src, opts)
    if in_place:
        if dst is not None and Location.parse(dst, storage_options=opts.storage_options).resolved() \
                != source.resolved():
            raise UsageError("give either a destination or --in-place (in_place=True), not both")
        _refuse_rewrite_in_place(opts)
        return _in_place(source, opts, dry_run=True)
    target = _target(dst, src, opts) if dst is not None else None
    report = _plan(source, opts, dry_run=True)
    check = opts.verify
    if check.enabled:
        prove_on_source(source, report, progress=opts.progress, verify=check)
    else:
        report.verify = check
    if target is not None and target.exists():
        plan = run_plan(report, source, rewrite_all=opts.rewrite, verify=check)
        state = prepare_destination(target, report, source=source, plan=plan)
        if state.journal is not None:
            report.notes.append(f"{target} holds an interrupted run of this migration: it would be resumed")
        elif state.message:
            report.notes.append(state.message)
    return report


def _deprecated_form(src: Any, dst: Any, options: MigrateOptions | None, keywords: dict[str, Any]) -> MigrationReport:
    """numcodecs_ext 0.1's ``migrate(src, dst, in_place=, finish=, dry_run=)``, for one release:
    each form is now a function of its own."""
    import warnings

    in_place, finish, dry_run = (bool(keywords.pop(k, False)) for k in ("in_place", "finish", "dry_run"))
    if finish:
        new = "finish_in_place(src)"
    elif dry_run:
        new = "plan_migration(src, dst)" if not in_place else "plan_migration(src, in_place=True)"
    else:
        new = "migrate_in_place(src)" if in_place else "migrate(src, dst)"
    warnings.warn(f"migrate(in_place=, finish=, dry_run=) is deprecated and goes in the next release; "
                  f"use {new}", DeprecationWarning, stacklevel=3)
    if finish:
        progress, storage_options = keywords.pop("progress", False), keywords.pop("storage_options", None)
        if keywords.pop("verify", "full") not in ("full", None) or keywords or options is not None:
            raise UsageError("finish removes the v2 metadata of a store migrated in place and takes no migration "
                             "options (it proves every chunk)")
        return finish_in_place(src, dry_run=dry_run, progress=progress, storage_options=storage_options)
    if dry_run:
        return plan_migration(src, None if in_place else dst, options, in_place=in_place, **keywords)
    if in_place:
        return migrate_in_place(src, options, **keywords)
    return migrate(src, dst, options, **keywords)


def _source(src: Any, opts: MigrateOptions) -> Location:
    return Location.parse(src, storage_options=opts.storage_options)


def _target(dst: Any, src: Any, opts: MigrateOptions) -> Location:
    """``dst`` as a place for a new store, or a UsageError: a zip file, a place that overlaps
    the source, a file in the way."""
    from ..store.staging import refuse_zip_destination

    refuse_zip_destination(dst)
    source, target = _source(src, opts), Location.parse(dst, storage_options=opts.storage_options)
    if target.overlaps(source):
        raise UsageError(f"{target} overlaps {source} (the same place, one inside the other, or "
                         "reached through a link): migrate never writes into its source; choose "
                         "a destination outside it")
    if target.obstacle() is not None:
        raise UsageError(f"{target}: cannot be created, {target.obstacle()} is a file")
    return target


def _refuse_rewrite_in_place(opts: MigrateOptions) -> None:
    if opts.rewrite:
        raise UsageError("--in-place keeps the chunks as they are; --rewrite needs a new store "
                         "(rewrite=True: use migrate(src, dst))")


def _plan(source: Location, opts: MigrateOptions, *, dry_run: bool, index: Any = None) -> MigrationReport:
    report = plan_store(source, match=opts.match, wrap=opts.wrap, keep_numcodecs=opts.keep_numcodecs,
                        nan_code=opts.nan_code, fill_code=opts.fill_code, progress=opts.progress,
                        index=index or v2_nodes(source))
    report.dry_run = dry_run
    if opts.rewrite:
        for plan in report.arrays:
            plan.rewrite = plan.rewrite or "asked for"
    return report


def _in_place(source: Location, opts: MigrateOptions, *, dry_run: bool) -> MigrationReport:
    index = v2_nodes(source)
    report = _plan(source, opts, dry_run=dry_run, index=index)
    add_v3_metadata(source, index, report, verify=opts.verify, dry_run=dry_run, progress=opts.progress)
    return report


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
