"""Writing a migration to a new store: chunks first, verified run by run, metadata last.

For each array, run by run (:mod:`.runs`): the chunk files are copied byte for byte (or, where
they cannot be kept, the values are decoded from the source and written through the new
metadata with zarr), then the run is read back from the destination under its new metadata,
staged in memory (:class:`~numcodecs_ext.store.staging.StagedStore`), and compared bit for bit
with the source. An array whose copied chunks read differently is rewritten instead. Only when
every run of every array is verified are the ``zarr.json`` documents written, arrays first,
groups from the deepest up, the root last. A journal (:mod:`numcodecs_ext.store.journal`) records the verified
runs, so the same command resumes an interrupted migration.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..store.errors import ToolError, UsageError, VerificationError
from ..store.progress import Progress
from ..store.staging import StagedStore, commit_order, is_metadata_key
from ..store.storage import Location
from ..store.verifying import VerifyPlan, parse_verify
from ..store.journal import MIGRATE_JOURNAL as JOURNAL, digest as plan_digest, is_journal_key, run_digest, source_stamps
from .plan import ArrayPlan
from .index import index_store, is_temporary
from .prove import MigrationReport, metadata_document, rewrite_reason, open_source, source_view, write_refused
from .runs import MigrationJournal as Journal, View, chunk_coords, quiet, run_count, values_in
from .tasks import Pair, Runner, WriteRun, chosen_for, compare_arrays, run_regions, write_run
from .text import counted, error, region

__all__ = ["prepare_destination", "run_plan", "write_store"]


class RunPlan:
    """What a journal's plan must equal for its runs to be trusted: ``digest`` covers every
    planned document, the options, and the source's chunks (keys, sizes and stamps);
    ``stamped``: the source told a stamp for every chunk (without, nothing is resumed)."""

    def __init__(self, digest: str, stamped: bool) -> None:
        self.digest = digest
        self.stamped = stamped


def run_plan(report: MigrationReport, src: Location, *, rewrite_all: bool, verify: VerifyPlan | bool) -> RunPlan:
    """The plan of a migration of ``src`` to a new store, as its journal records it."""
    stamps = source_stamps(src, (k for a in report.arrays for k in a.chunks))
    parts = {"arrays": [[a.path, a.metadata, sorted(a.chunks.items())] for a in report.arrays],
             "groups": [[g.path, g.metadata] for g in report.groups],
             "rewrite": rewrite_all, "verify": _verify_text(as_plan(verify)),
             "stamps": stamps}
    return RunPlan(plan_digest(parts), stamps is not None)


def _documents(report: MigrationReport) -> dict[str, bytes]:
    docs = {a.key: metadata_document(a.metadata) for a in report.arrays}
    docs.update({g.key: metadata_document(g.metadata) for g in report.groups})
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
        journal = Journal.read(dst)
    except (ValueError, OSError) as e:
        raise UsageError(f"{dst}: holds an unreadable migration journal {JOURNAL} ({e}); nothing "
                         f"there opens as complete: remove {dst} and run again") from None
    planned = {a.path: a for a in report.arrays}
    docs = _documents(report)
    strays = []
    for key in listing:
        if is_journal_key(key) or is_temporary(key):
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
        raise UsageError(f"{dst}: holds an interrupted migration, and also {counted(len(strays), 'file')} no "
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


def _verify_text(check: VerifyPlan) -> Any:
    # (True / False: what journals of full and none runs have always recorded)
    return {"full": True, "none": False}.get(check.mode, f"sample:{check.count}")


def _run_keys(plan: ArrayPlan, sel: tuple[slice, ...]) -> list[str]:
    """The v2-encoded keys of the chunks of a run (the chunk keys a migration keeps)."""
    prefix = f"{plan.path}/" if plan.path else ""
    separator = plan.metadata["chunk_key_encoding"]["configuration"]["separator"]
    return [prefix + (separator.join(map(str, c)) if c else "0") for c in chunk_coords(sel, plan.chunk_shape)]


def write_store(report: MigrationReport, src: Location, dst: Location, *, rewrite_all: bool = False,
                verify: VerifyPlan | bool = True, progress: bool = False) -> None:
    """Copy or rewrite every array of ``report`` from ``src`` to ``dst`` as tasks on the user's
    dask scheduler (or threads here), verify each run (``verify``: every chunk, a sample, or
    none), then write the metadata; resumes an interrupted run of the same plan."""
    check = as_plan(verify)
    plan = run_plan(report, src, rewrite_all=rewrite_all, verify=check)
    state = prepare_destination(dst, report, plan=plan, source=src)
    journal = state.journal or Journal(dst, plan=plan.digest, source=src.display, seed=check.seed)
    resuming = state.journal is not None
    if resuming and check.mode == "sample" and journal.seed is not None:
        check = replace(check, seed=journal.seed)  # the chunks the interrupted run chose
    report.verify = check
    if state.message:
        report.notes.append(state.message)
    docs = _documents(report)
    total = sum(p.decoded_bytes for p in report.arrays)
    runs_done = 0
    # the scheduler is found (a configured one that cannot be reached refused) before anything
    # is written
    with Runner(src, dst) as runner, Progress(total, "migrate", enabled=progress,
                                               chunks=sum(_grid_size(a) for a in report.arrays)) as bar:
        state.clear_stale()
        journal.totals = {a.path: run_count(a.shape, a.chunk_shape, itemsize=a.itemsize)
                          for a in report.arrays}
        journal.save()  # before any chunk: the destination is ours, and resumable
        for array in report.arrays:
            mode = "rewrite" if (array.rewrite or rewrite_all) else "keep"
            if resuming and journal.modes.get(array.path) == "rewrite":
                mode = "rewrite"
            if journal.modes.get(array.path) != mode:
                journal.forget(array.path)
            journal.modes[array.path] = mode
            while True:
                done = _Done()
                why = _array(array, mode, src, dst, docs, state.listing, journal, report, bar, check,
                             runner, done)
                if why is None:
                    runs_done += done.resumed
                    report.chunks_checked += done.checked
                    report.chunks_total += done.total
                    break
                bar.advance(-done.bytes, chunks=-done.chunks)  # (done again below)
                # the copied chunks read differently under the new metadata: rewrite them
                array.rewrite = why
                refused = array.read_only or _refused(src, array)
                if refused:
                    raise ToolError(f"array {array.name} must be rewritten ({why}), but zarr refuses "
                                    f"to write it through the new metadata: {refused}. {dst} holds "
                                    "only chunks: nothing there opens as an array or group")
                mode = journal.modes[array.path] = "rewrite"
                journal.forget(array.path)
                journal.save()
            journal.save()
    report.runs_resumed = runs_done
    if resuming and runs_done:
        done_text = {"full": "written and verified", "none": "written"}.get(
            check.mode, "written (and, where the sample chose a chunk, verified)")
        were = "was" if runs_done == 1 else "were"
        report.resumed = (f"resumed the interrupted migration in {dst}: "
                          f"{counted(runs_done, 'run of chunks', 'runs of chunks')} it "
                          f"had {done_text} {were} still there and {were} kept; everything else was "
                          f"{done_text} now")
    staged = StagedStore(dst, _staged=dict(docs))
    staged.commit()  # flush the chunks, then arrays, groups deepest first, the root last
    for key in state.listing:
        if is_temporary(key):
            dst.remove(key)
    journal.committed()
    report.verified = check.complete


def as_plan(verify: VerifyPlan | bool | str | None) -> VerifyPlan:
    """``verify`` as a plan: a plan or its text (full, sample:N, none), or True / False."""
    if isinstance(verify, bool):
        return parse_verify("full" if verify else "none")
    return parse_verify(verify)


def _grid_size(array: ArrayPlan) -> int:
    return math.prod(math.ceil(s / c) for s, c in zip(array.shape, array.chunk_shape)) if array.shape else 1


class _Done:
    """What one pass over an array did: runs resumed, bytes and chunks advanced on the bar,
    chunks compared of those it holds."""

    def __init__(self) -> None:
        self.resumed = self.bytes = self.chunks = self.checked = self.total = 0


def _refused(src: Location, array: ArrayPlan) -> str | None:
    from .prove import first_chunk

    sel = first_chunk(array)
    with quiet():
        try:
            values = open_source(src, array)[sel]
        except Exception as e:  # noqa: BLE001
            return f"zarr cannot read the v2 array ({error(e)})"
    return write_refused(array.metadata, values, sel)


def _array(array: ArrayPlan, mode: str, src: Location, dst: Location, docs: dict[str, bytes],
           listing: dict[str, int], journal: Journal, report: MigrationReport, bar: Progress,
           check: VerifyPlan, runner: Runner, done: _Done) -> str | None:
    """Write and verify every run of one array (a bounded number in flight), each run recorded
    in the journal as it ends: None, or, when kept chunks read differently, why."""
    recorded = journal.runs.get(array.path, {})
    chosen, done.total = chosen_for(check, array)
    source = source_view(src, array)

    def tasks() -> Iterator[tuple[WriteRun, int, int]]:
        for number, sel, regions, n in run_regions(array.shape, array.chunk_shape, array.itemsize, chosen):
            keys = _run_keys(array, sel)
            step = values_in(sel) * array.itemsize
            if number in recorded:
                now = run_digest({k: listing[k] for k in keys if k in listing})
                if now == recorded[number]:
                    done.resumed += 1
                    done.checked += sum(1 for r in regions for _ in chunk_coords(r, array.chunk_shape))
                    done.bytes += step
                    done.chunks += n
                    bar.advance(step, chunks=n)
                    continue
            copy = tuple(k for k in keys if k in array.chunks) if mode == "keep" else ()
            remove = tuple(k for k in keys if k not in array.chunks and k in listing) if mode == "keep" else ()
            yield (WriteRun(array.path, array.name, number, mode, source, dst, array.key, docs[array.key],
                            sel, tuple(keys), copy, remove, regions, runner.token), step, n)

    todo = list(tasks())

    def record(i: int, result: Any) -> None:  # in the driver, as each run ends
        task, step, n = todo[i]
        done.checked += result.checked
        if result.why is not None:
            raise _Differs(result.why)
        if mode == "keep":
            sizes = {k: array.chunks[k] for k in task.copy}
            report.bytes_copied += sum(sizes.values())
        else:
            sizes = result.sizes
            report.chunks_rewritten += len(task.keys)
        for key in task.keys:
            listing.pop(key, None)
            if key in sizes:
                listing[key] = sizes[key]
        journal.done(array.path, task.number, run_digest(sizes))
        done.bytes += step
        done.chunks += n
        bar.advance(step, chunks=n)

    try:
        runner.map(write_run, [t for t, _, _ in todo], label="rewrite" if mode == "rewrite" else "copy",
                   nbytes=[b for _, b, _ in todo], nchunks=[n for _, _, n in todo],
                   describe=lambda t: f"array {t.name} at {region(t.sel)}", on_done=record)
    except _Differs as e:  # kept chunks read differently: the rest of the array is not wanted
        return rewrite_reason(array, e.why)
    return None


class _Differs(Exception):
    """A run of kept chunks reads differently (ends the array's runs)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def verify_stores(src: Location, dst: Location, report: MigrationReport, *, progress: bool = False,
                  verify: VerifyPlan | bool | str = True) -> None:
    """Read every array of ``report`` from the v2 store ``src`` and the v3 store ``dst`` (its
    written metadata), a run at a time on the user's scheduler, and raise VerificationError at
    the first difference."""
    check = as_plan(verify)
    pairs = []
    for plan in report.arrays:
        open_source(src, plan)
        try:
            View(dst, plan.path, 3).open()
        except Exception as e:  # noqa: BLE001
            raise VerificationError(f"array {plan.name}: {dst} has no readable v3 array there "
                                    f"({error(e)})") from None
        pairs.append(Pair(plan.path, plan.name, source_view(src, plan), View(dst, plan.path, 3), plan.shape,
                          plan.chunk_shape, plan.itemsize, chosen_for(check, plan)[0]))
    total = sum(p.decoded_bytes for p in report.arrays)
    with Runner(src, dst) as runner, Progress(total, "verify", enabled=progress) as bar:
        outcomes = compare_arrays(pairs, runner, bar)
    for plan in report.arrays:
        out = outcomes[plan.path]
        if out.failed:
            raise ToolError(out.failed)
        if out.why is not None:
            raise VerificationError(f"array {plan.name}: the v3 store does not read as the "
                                    f"v2 store {out.why}")
        report.chunks_checked += out.checked
        report.chunks_total += chosen_for(check, plan)[1]
    report.verify = check
