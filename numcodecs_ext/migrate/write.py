"""Writing a migration to a new store: chunks first, verified run by run, metadata last.

For each array, run by run (:mod:`.runs`): the chunk files are copied byte for byte (or, where
they cannot be kept, the values are decoded from the source and written through the new
metadata with zarr), then the run is read back from the destination under its new metadata,
staged in memory (:class:`~numcodecs_ext.tools.staging.StagedStore`), and compared bit for bit
with the source. An array whose copied chunks read differently is rewritten instead. Only when
every run of every array is verified are the ``zarr.json`` documents written, arrays first,
groups from the deepest up, the root last. A journal (:mod:`.journal`) records the verified
runs, so the same command resumes an interrupted migration.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tools.errors import ToolError, UsageError, VerificationError
from ..tools.progress import Progress
from ..tools.staging import StagedStore, commit_order, is_metadata_key
from ..tools.storage import Location
from .journal import JOURNAL, Journal, plan_digest, run_digest, source_stamps
from .plan import ArrayPlan, index_store, is_temporary
from .prove import MigrationReport, _doc, _rewrite_reason, candidate, open_source, write_refused
from .runs import View, chunk_coords, compare_run, quiet, runs, values_in
from .text import error, region

__all__ = ["prepare_destination", "run_plan", "write_store"]


class _Recording(StagedStore):
    """A StagedStore that remembers the size of every chunk it writes (None: deleted)."""

    def __init__(self, location: Any, *, sizes: dict[str, int | None] | None = None, **kwargs: Any) -> None:
        super().__init__(location, **kwargs)
        self.sizes: dict[str, int | None] = {} if sizes is None else sizes

    def _with_store(self, store: Any) -> _Recording:
        return type(self)(self.location, sizes=self.sizes, _staged=self.staged, _store=store)

    async def set(self, key: str, value: Any) -> None:
        await super().set(key, value)
        if not is_metadata_key(key):
            self.sizes[key] = len(value)

    async def delete(self, key: str) -> None:
        await super().delete(key)
        self.sizes[key] = None


class RunPlan:
    """What a journal's plan must equal for its runs to be trusted: ``digest`` covers every
    planned document, the options, and the source's chunks (keys, sizes and stamps);
    ``stamped``: the source told a stamp for every chunk (without, nothing is resumed)."""

    def __init__(self, digest: str, stamped: bool) -> None:
        self.digest = digest
        self.stamped = stamped


def run_plan(report: MigrationReport, src: Location, *, rewrite_all: bool, verify: bool) -> RunPlan:
    """The plan of a migration of ``src`` to a new store, as its journal records it."""
    stamps = source_stamps(src, (k for a in report.arrays for k in a.chunks))
    parts = {"arrays": [[a.path, a.metadata, sorted(a.chunks.items())] for a in report.arrays],
             "groups": [[g.path, g.metadata] for g in report.groups],
             "rewrite": rewrite_all, "verify": verify,
             "stamps": stamps}
    return RunPlan(plan_digest(parts), stamps is not None)


def _documents(report: MigrationReport) -> dict[str, bytes]:
    docs = {a.key: _doc(a.metadata) for a in report.arrays}
    docs.update({g.key: _doc(g.metadata) for g in report.groups})
    return docs


class Destination:
    """What the destination holds before the run: nothing, or an interrupted migration to resume."""

    def __init__(self, location: Location, listing: dict[str, int], journal: Journal | None,
                 message: str | None, stale: list[str] | None = None) -> None:
        self.location = location
        self.listing = listing
        self.journal = journal
        self.message = message
        self.stale = stale or []  # metadata of another plan, removed (root first) before writing

    def clear_stale(self) -> None:
        """Remove the metadata an interrupted run of another plan wrote: the root first, so that
        nothing claims the old plan at any moment."""
        for key in self.stale:
            self.location.remove(key)
            self.listing.pop(key, None)
        self.stale = []


def prepare_destination(dst: Location, report: MigrationReport, *, plan: RunPlan,
                        source: Location) -> Destination:
    """Look at ``dst`` before writing: absent or empty (a fresh start), or an interrupted run of
    this tool (resumed); anything else is refused with what to do (UsageError). Nothing is
    changed here (a dry run calls it too): what must go is in ``stale``."""
    if not dst.exists():
        _check_creatable(dst)
        return Destination(dst, {}, None, None)
    if not dst.isdir():
        raise UsageError(f"{dst}: exists and is a file; migrate writes a new store (a directory)")
    index = index_store(dst, v2=False)
    listing = dict(index.location.walk().files)
    if all(is_temporary(k) for k in listing) and not index.problems:
        # empty, or only what a run killed while writing its journal left: a fresh start
        return Destination(dst, listing, None, None)
    if not index.journal:
        what = ("a zarr store" if index.v3 else
                "files that no interrupted migration of this tool left (it has no " + JOURNAL + ")")
        raise UsageError(f"{dst}: exists and holds {what}; migrate writes a new store: remove it "
                         "or choose another destination")
    try:
        journal = Journal.from_bytes(dst.read(JOURNAL))
    except (ValueError, OSError) as e:
        raise UsageError(f"{dst}: holds an unreadable migration journal {JOURNAL} ({e}); nothing "
                         f"there opens as complete: remove {dst} and run again") from None
    planned = {a.path: a for a in report.arrays}
    docs = _documents(report)
    strays = []
    for key in listing:
        if key == JOURNAL or is_temporary(key):
            continue
        if is_metadata_key(key):
            if key not in docs:
                strays.append(key)
            continue
        node = _array_of(key, planned)
        if node is None:
            strays.append(key)
    if strays:
        shown = ", ".join(sorted(strays)[:5]) + (" ..." if len(strays) > 5 else "")
        raise UsageError(f"{dst}: holds an interrupted migration, and also {len(strays)} files no "
                         f"planned array or group of {source} has ({shown}): remove {dst} and run "
                         "again, or choose another destination")
    same = journal.plan == plan.digest and plan.stamped
    if not same:
        why = ("other options, or a chunk or the metadata of SRC changed since"
               if journal.plan != plan.digest else
               "SRC's filesystem tells no modification times or ETags, so a chunk changed since "
               "cannot be told apart")
        message = (f"{dst} holds an interrupted migration of another plan ({why}): none of its "
                   "chunks is trusted; every chunk is written and verified again").replace("SRC", str(source))
        journal = None
    else:
        message = None
    written = [k for k in listing if is_metadata_key(k)]
    differ = [k for k in written if same and dst.read(k) != docs.get(k)]
    if differ:
        raise UsageError(f"{dst}: holds metadata that this migration would not write "
                         f"({', '.join(sorted(differ))}): it was changed after the interrupted "
                         f"run; remove {dst} and run again")
    stale = list(reversed(commit_order(written))) if not same else []
    return Destination(dst, listing, journal, message, stale)


def _check_creatable(dst: Location) -> None:
    """UsageError if the local folder ``dst`` (which does not exist) cannot be made: a link to
    nowhere, or a file where one of its parents should be."""
    if not dst.is_local:
        return
    import os

    if os.path.islink(dst.root):
        raise UsageError(f"{dst}: is a link to {os.readlink(dst.root)}, which does not exist; give "
                         "the destination itself, or a folder that does not exist yet")
    parent = os.path.dirname(dst.root)
    while parent and not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise UsageError(f"{dst}: cannot be made: {parent} is a file")


def _array_of(key: str, planned: dict[str, ArrayPlan]) -> ArrayPlan | None:
    parts = key.split("/")
    for depth in range(len(parts) - 1, -1, -1):
        node = "/".join(parts[:depth])
        if node in planned:
            return planned[node]
    return None


def _run_keys(plan: ArrayPlan, sel: tuple[slice, ...], encoding: Any) -> list[str]:
    prefix = f"{plan.path}/" if plan.path else ""
    return [prefix + encoding.encode_chunk_key(c) for c in chunk_coords(sel, plan.chunk_shape)]


def write_store(report: MigrationReport, src: Location, dst: Location, *, rewrite_all: bool = False,
                verify: bool = True, progress: bool = False) -> None:
    """Copy or rewrite every array of ``report`` from ``src`` to ``dst``, verify each run, then
    write the metadata; resumes an interrupted run of the same plan."""
    plan = run_plan(report, src, rewrite_all=rewrite_all, verify=verify)
    state = prepare_destination(dst, report, plan=plan, source=src)
    journal = state.journal or Journal(plan=plan.digest, source=src.display)
    resuming = state.journal is not None
    if state.message:
        report.notes.append(state.message)
    state.clear_stale()
    journal.save(dst)  # before any chunk: the destination is ours, and resumable
    docs = _documents(report)
    staged = _Recording(dst, _staged=dict(docs))
    total = sum(p.decoded_bytes for p in report.arrays)
    runs_done = 0
    with Progress(total, "migrate", enabled=progress) as bar:
        for array in report.arrays:
            mode = "rewrite" if (array.rewrite or rewrite_all) else "keep"
            if resuming and journal.modes.get(array.path) == "rewrite":
                mode = "rewrite"
            if journal.modes.get(array.path) != mode:
                journal.forget(array.path)
            journal.modes[array.path] = mode
            while True:
                resumed, why, advanced = _array(array, mode, src, dst, staged, state.listing,
                                                journal, report, bar, verify)
                if why is None:
                    runs_done += resumed
                    break
                bar.advance(-advanced[0], chunks=-advanced[1])  # (done again below)
                # the copied chunks read differently under the new metadata: rewrite them
                array.rewrite = why
                refused = array.read_only or _refused(src, array)
                if refused:
                    raise ToolError(f"array {array.name} must be rewritten ({why}), but zarr refuses "
                                    f"to write it through the new metadata: {refused}. {dst} holds "
                                    "only chunks: nothing there opens as an array or group")
                mode = journal.modes[array.path] = "rewrite"
                journal.forget(array.path)
                journal.save(dst)
            journal.save(dst)
    report.runs_resumed = runs_done
    if resuming and runs_done:
        done = "written and verified" if verify else "written"
        report.resumed = (f"resumed the interrupted migration in {dst}: {runs_done} runs of chunks it "
                          f"had {done} were still there and were kept; everything else was {done} "
                          "now")
    staged.commit()  # flush the chunks, then arrays, groups deepest first, the root last
    for key in state.listing:
        if is_temporary(key):
            dst.remove(key)
    dst.remove(JOURNAL)
    report.verified = verify


def _refused(src: Location, array: ArrayPlan) -> str | None:
    from .prove import first_chunk

    sel = first_chunk(array)
    with quiet():
        try:
            values = open_source(src, array)[sel]
        except Exception as e:  # noqa: BLE001
            return f"zarr cannot read the v2 array ({error(e)})"
    return write_refused(array.metadata, values, sel)


def _array(array: ArrayPlan, mode: str, src: Location, dst: Location, staged: _Recording,
           listing: dict[str, int], journal: Journal, report: MigrationReport, bar: Progress,
           verify: bool) -> tuple[int, str | None, tuple[int, int]]:
    """Write and verify every run of one array: (runs resumed, None, progress made) or, when
    kept chunks read differently, (.., why, ..)."""
    source = open_source(src, array)
    writer = None
    if mode == "rewrite":
        import zarr

        with quiet():
            writer = zarr.open_array(staged, path=array.path, mode="r+", zarr_format=3)
        reader = writer  # (zarr keeps no chunk in memory: reading it reads the store again)
    else:
        reader = candidate(dst, array).open()
    encoding = reader.metadata.chunk_key_encoding
    recorded = journal.runs.get(array.path, {})
    resumed = 0
    advanced = [0, 0]
    for number, sel in runs(array.shape, array.chunk_shape, itemsize=array.itemsize):
        keys = _run_keys(array, sel, encoding)
        step = values_in(sel) * array.itemsize
        advanced[0] += step
        advanced[1] += len(keys)
        if number in recorded:
            now = run_digest({k: listing[k] for k in keys if k in listing})
            if now == recorded[number]:
                resumed += 1
                bar.advance(step, chunks=len(keys))
                continue
        if mode == "keep":
            sizes = {}
            copied = [key for key in keys if key in array.chunks]
            # server-side where both ends are one filesystem (S3: one CopyObject per chunk,
            # concurrent; no byte passes through this process)
            src.copy_many(copied, dst)
            for key in copied:
                sizes[key] = array.chunks[key]
                report.bytes_copied += array.chunks[key]
            for key in keys:
                if key not in array.chunks and key in listing:  # left by an earlier plan
                    dst.remove(key)
            if verify:
                why = compare_run(source, reader, sel, name=array.name)
                if why is not None:
                    return resumed, _rewrite_reason(array, why), (advanced[0] - step, advanced[1] - len(keys))
        else:
            with quiet():
                try:
                    values = source[sel]
                except Exception as e:  # noqa: BLE001 - a broken source
                    raise ToolError(f"array {array.name}: zarr cannot read the source at "
                                    f"{region(sel)}: {error(e)}") from None
                try:
                    writer[sel] = values
                except Exception as e:  # noqa: BLE001 - refused by the new codecs
                    raise ToolError(f"array {array.name}: zarr refuses to write {region(sel)} "
                                    f"through the new metadata: {error(e)}. {dst} holds only "
                                    "chunks: nothing there opens as an array or group") from None
            report.chunks_rewritten += len(keys)
            if verify:
                why = compare_run(source, reader, sel, name=array.name, values=np.asarray(values))
                if why is not None:
                    raise VerificationError(
                        f"array {array.name}: rewritten through the new metadata, it does not read "
                        f"as the source {why}. {dst} holds only chunks: nothing there opens as an "
                        "array or group")
            sizes = {}
            for key in keys:
                if key in staged.sizes:
                    size = staged.sizes.pop(key)  # (forgotten once used: memory stays flat)
                    if size is not None:
                        sizes[key] = size
                elif dst.exists(key):
                    sizes[key] = dst.size(key)
        for key in keys:
            listing.pop(key, None)
            if key in sizes:
                listing[key] = sizes[key]
        journal.done(array.path, number, run_digest(sizes))
        journal.save_now_and_then(dst)
        bar.advance(step, chunks=len(keys))
    return resumed, None, (advanced[0], advanced[1])


def verify_stores(src: Location, dst: Location, report: MigrationReport, *, progress: bool = False) -> None:
    """Read every array of ``report`` from the v2 store ``src`` and the v3 store ``dst`` (its
    written metadata), a run at a time, and raise VerificationError at the first difference."""
    total = sum(p.decoded_bytes for p in report.arrays)
    with Progress(total, "verify", enabled=progress) as bar:
        for plan in report.arrays:
            source = open_source(src, plan)
            try:
                target = View(dst, plan.path, 3).open()
            except Exception as e:  # noqa: BLE001
                raise VerificationError(f"array {plan.name}: {dst} has no readable v3 array there "
                                        f"({error(e)})") from None
            for _, sel in runs(plan.shape, plan.chunk_shape, itemsize=plan.itemsize):
                why = compare_run(source, target, sel, name=plan.name)
                if why is not None:
                    raise VerificationError(f"array {plan.name}: the v3 store does not read as the "
                                            f"v2 store {why}")
                bar.advance(values_in(sel) * plan.itemsize)
