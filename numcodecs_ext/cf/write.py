"""convert's write: chunks in *runs* (whole chunks of one array, about :data:`RUN_BYTES` of
values each), written and read back as tasks on the user's dask scheduler (or on threads here),
each run recorded in a journal once its chunks are in place; the metadata committed only after
every run is written and verified. A run of the same command over an interrupted one resumes it.

The order:

1. Every metadata document is worked out first, in memory (xarray's ``to_zarr(compute=False)``
   into a store in memory, the packings declared, the metadata consolidated): the stamp of the
   journal covers the source and these documents, so a changed source or other options never
   resume an old journal.
2. The journal's stamp is written (:mod:`numcodecs_ext.store.journal`); a journal of something
   else is discarded first (its marks, then its chunks, then its stamp), or, if there is one of
   this very conversion, the runs it marked are skipped.
3. The small variables xarray writes at once (index coordinates, scalars) are copied in; the
   group's structure (variables, dimensions, types, attributes) is compared with the source.
4. The runs: each task writes its chunks through a :class:`~numcodecs_ext.store.staging.StagedStore`
   holding the stored-type metadata, reads back the chunks the verification plan asks for
   through one holding the final metadata, and marks its run in the journal. A variable of
   numbers (copied or packed) is proved in the task that writes it, against the values it read
   from the source once (:func:`~numcodecs_ext.cf.tasks.prove_run`: netCDF-C's lock is held only for that read); the
   others (times, text, compound types, variables stored decoded) are read back through xarray
   on both sides once every run is written, as are each proved variable's first, last and first
   chunk with missing values (:func:`_probes`).
5. The commit (arrays first, the root last), then the journal is removed.

A failed verification removes everything written. Any other failure or an interruption keeps
the chunks and the journal: the same command resumes.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import math
import re
import uuid
from dataclasses import dataclass
from typing import Any


from ..store.errors import ToolError, UsageError, VerificationError
from ..store.verifying import VerifyPlan
from ..store.journal import CONVERT_JOURNAL, Journal, digest, is_journal_key
from .plan import GroupPlan, declare_packing
from .tasks import Done, Job, Run, describe_run, do_run, prove_in_tasks, store_over
from .verify import BLOCK_BYTES, blocks, check_block, check_structure, opened

#: the temporary files of an atomic write (ours: ``.name.<12 hex>.partial``; zarr's LocalStore:
#: ``name.<32 hex>.partial``), left behind by a kill in the middle of one
_TEMPORARY = re.compile(r"\.[0-9a-f]{12,32}\.partial$")

__all__ = ["RUN_BYTES", "Outcome", "write_verify_commit"]

#: the values one task writes (whole chunks, at least one): the unit of resuming
RUN_BYTES = BLOCK_BYTES


@dataclass
class Outcome:
    """What a write did: chunks in all and read back, runs in all and resumed, and how."""

    chunks: int = 0
    checked: int = 0
    runs: int = 0
    resumed_runs: int = 0
    resumed_chunks: int = 0
    started_over: str | None = None
    finished: bool = False  # every run was done by an earlier, interrupted run

    def resumed(self) -> str | None:
        """The summary's words about resuming, or None."""
        if self.started_over:
            return self.started_over
        if not self.resumed_runs:
            return None
        return (f"resumed an interrupted conversion: {self.resumed_chunks:,} of {self.chunks:,} chunks "
                f"({self.resumed_runs:,} of {self.runs:,} runs) were already written by it and were kept; "
                "the rest was written now")


def write_verify_commit(source: Any, engine: str, loc: Any, existed: bool, plans: list[GroupPlan],
                        zarr_format: int, differences: dict[str, float], *, progress: bool,
                        verify: VerifyPlan, stamp: dict[str, Any], resume: str = "") -> Outcome:
    """Write, verify and commit (the module's steps); ``stamp`` describes the source and
    options; ``resume``: ``loc`` holds a journal beside nothing that opens (``"partial"``) or
    beside a complete store (``"complete"``: resumed only if the stamps are equal).
    ``differences`` receives each inexact packing's largest difference."""
    try:
        int_docs, final_docs, eager = _metadata(plans, zarr_format)
    except (UsageError, ToolError):
        raise
    except (ValueError, TypeError, KeyError) as e:  # xarray cannot encode a variable for zarr
        name = _unwritable(plans, zarr_format)
        what = f"variable {name!r}" if name else "the file"
        raise ToolError(f"{what}: xarray cannot write it to zarr v{zarr_format} ({type(e).__name__}: {e}); "
                        f"drop it or try --zarr-format {5 - zarr_format}; nothing was written") from None
    _check_before_writing(source, engine, plans, final_docs, eager, loc, resume)
    stamp = dict(stamp, metadata=_digest(int_docs, final_docs), run_bytes=RUN_BYTES)
    journal = Journal(loc, CONVERT_JOURNAL)
    outcome = Outcome()
    records: dict[int, dict[str, Any]] = {}
    present: set[str] = set()
    started = bool(resume)  # a journal there already: what it holds is never removed but to start over
    same = bool(resume) and journal.load() and journal.matches(digest(stamp))
    if resume == "complete" and not same:  # someone's complete store: never touched
        raise UsageError(f"{loc.display}: exists; convert writes a new store (remove it or choose another name)")
    if loc.is_shared:  # the workers will write: an address that cannot work is said before anything is written
        from ..store.parallel import check_scheduler_address

        check_scheduler_address()
    try:
        if resume:
            if same:
                records = {i: r for i, r in journal.records().items() if r.get("state") in ("written", "verified")}
                listing = set(loc.walk().files)
                for key in sorted(k for k in listing if _TEMPORARY.search(k)):
                    loc.remove(key)  # a write the kill cut short (zarr's or ours): never part of the store
                present = {k for k in listing if not _TEMPORARY.search(k)} if records else set()
            else:
                outcome.started_over = (f"{loc.display} held an interrupted conversion of another source or with "
                                        "other options: it was removed and the conversion started over")
                _start_over(loc, journal)
        journal.create(digest(stamp), source=str(stamp.get("source", {}).get("path", "")), about=stamp)
        started = True
        for key, data in eager.items():
            loc.write(key, data)
        job = Job(source, engine, store_over(loc, int_docs), store_over(loc, final_docs, read_only=True), journal,
                   zarr_format)
        if records:
            records = _still_there(plans, records, present, zarr_format)
        runs, eager_checks = _runs(plans, verify, records, outcome, differences)
        if verify.enabled:
            prove_in_tasks(source, engine, plans, runs)
        journal.set_runs_total(len(runs))
        todo = [r for r in runs if r.data is not None or r.checks]
        outcome.finished = not todo
        _run_all(job, todo, runs, loc, differences, outcome, progress)
        if verify.enabled:  # after the runs: opening the result decodes its index coordinates, which runs write
            _check_here(job, plans, eager_checks, differences, outcome)
        store_over(loc, final_docs).commit()
        journal.committed()
        return outcome
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        from ..store.parallel import fails_again

        # a resume is offered only where one can succeed: not after a verification that failed,
        # nor after values that cannot be decoded (the rerun would read them again)
        if started and not isinstance(e, VerificationError) and not fails_again(e):
            left = (f"{loc.display} keeps what was written and checked so far, and a journal of it (the root's "
                    "metadata is written last: nothing opens as complete): run the same command again to resume, "
                    "or remove it.")
        else:
            left = _clean_up(loc, existed)
        if isinstance(e, (ToolError, UsageError)):  # (UsageError: a bucket that went, access denied)
            raise type(e)(f"{e}\n{left}") from None
        raise ToolError(f"writing {loc.display} failed ({type(e).__name__}: {e})\n{left}") from e


def _metadata(plans: list[GroupPlan], zarr_format: int) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, bytes]]:
    """The metadata documents in the stored types (what the tasks write through), the final
    ones (packings declared, consolidated), and the chunks xarray writes at once (variables not
    in dask: index coordinates, scalars), all made in memory."""
    import zarr

    from ..store.staging import StagedStore, is_metadata_key
    from ..store.storage import Location

    memory = Location.parse(f"memory://numcodecs-ext-convert-{uuid.uuid4().hex}")
    try:
        staged = StagedStore(memory)
        for i, plan in enumerate(plans):
            plan.dataset.to_zarr(staged, group=plan.group, mode="w-" if i == 0 else "a", zarr_format=zarr_format,
                                 encoding=plan.encoding, consolidated=False, write_empty_chunks=True, compute=False)
        int_docs = dict(staged.staged)
        for plan in plans:
            prefix = "" if plan.group is None else plan.group + "/"
            for name, vp in plan.variables.items():
                if vp.packing is not None:
                    declare_packing(staged.staged, prefix + name, vp.packing, zarr_format)
        zarr.consolidate_metadata(staged, zarr_format=zarr_format)
        final_docs = dict(staged.staged)
        keys = [k for k in memory.walk().files if not is_metadata_key(k)] if memory.exists() else []
        eager = {k: memory.read(k) for k in keys}
    finally:
        if memory.exists():
            memory.remove_tree()
    return int_docs, final_docs, eager


def _unwritable(plans: list[GroupPlan], zarr_format: int) -> str | None:
    """The first variable xarray cannot turn into zarr metadata on its own (None: none alone)."""
    import warnings

    import xarray as xr
    import zarr

    for plan in plans:
        for name, vp in plan.variables.items():
            one = xr.Dataset({name: plan.dataset.variables[name]})
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    one.to_zarr(zarr.storage.MemoryStore(), zarr_format=zarr_format, consolidated=False,
                                encoding={name: plan.encoding.get(name, {})}, compute=False)
            except Exception:  # noqa: BLE001 - this one fails
                return vp.name
    return None


def _check_before_writing(source: Any, engine: str, plans: list[GroupPlan], docs: dict[str, bytes],
                          eager: dict[str, bytes], loc: Any, resume: str) -> None:
    """Open the result as it will be (its metadata and the chunks xarray writes at once, in
    memory; times not decoded, which needs their values) and compare its structure with the
    source's, before anything is written: what xarray
    cannot read back, or reads back otherwise, is refused here, naming the variable."""
    import xarray as xr

    from ..store.staging import StagedStore
    from ..store.storage import Location

    memory = Location.parse(f"memory://numcodecs-ext-precheck-{uuid.uuid4().hex}")
    left = (f"; nothing was written ({loc.display} holds an earlier attempt: remove it)" if resume
            else "; nothing was written")
    try:
        for key, data in eager.items():
            memory.write(key, data)
        store = StagedStore(memory, read_only=True, _staged=dict(docs))
        for plan in plans:
            try:
                with opened(source, engine, store, plan.group, decode_times=False) as sides:  # no data here
                    check_structure(sides, plan)
            except (ToolError, UsageError) as e:
                raise type(e)(f"{e}{left}") from None
            except Exception as e:  # noqa: BLE001 - xarray cannot open the result: find the variable
                name = _culprit(xr, store, plan)
                what = f"variable {name!r}" if name else ("the root group" if plan.group is None
                                                          else f"group {plan.group!r}")
                raise ToolError(f"{what}: xarray could not read it back from zarr ({type(e).__name__}: {e}); "
                                f"drop it from the file or try --zarr-format {5 - plan.zarr_format}{left}") from None
    finally:
        if memory.exists():
            memory.remove_tree()


def _culprit(xr: Any, store: Any, plan: GroupPlan) -> str | None:
    """The first variable of ``plan`` that xarray cannot open alone: the group read with only
    that variable's metadata (xarray opens every array of a group, whichever it is asked for)."""
    import warnings

    from ..store.staging import StagedStore

    prefix = "" if plan.group is None else plan.group + "/"
    names = list(plan.variables)
    for name in names:
        others = tuple(prefix + n + "/" for n in names if n != name)
        docs = {k: v for k, v in store.staged.items() if not k.startswith(others)}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                xr.open_zarr(StagedStore(store.location, read_only=True, _staged=docs), group=plan.group,
                             consolidated=False, chunks=None, decode_times=False, decode_timedelta=False).close()
        except Exception:  # noqa: BLE001 - this one fails
            return plan.variables[name].name
    return None


def _digest(*documents: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for docs in documents:
        for key in sorted(docs):
            h.update(key.encode() + b"\0" + docs[key] + b"\0")
    return h.hexdigest()


def _start_over(loc: Any, journal: Journal) -> None:
    """Discard an interrupted conversion of something else: its marks first (so that no kill
    on the way leaves a mark without its chunks), then everything but the stamp, then the stamp."""
    journal.forget()
    for key in loc.walk().files:
        if not is_journal_key(key):
            loc.remove(key)


def _runs(plans: list[GroupPlan], verify: VerifyPlan, records: dict[int, dict[str, Any]], outcome: Outcome,
          differences: dict[str, float]) -> tuple[list[Run], dict[tuple[str | None, str], list[tuple[slice, ...]]]]:
    """Every variable's runs (those in dask), with what each must write and read back given the
    journal's ``records``; and, for the others, the regions to read back here."""
    runs: list[Run] = []
    eager: dict[tuple[str | None, str], list[tuple[slice, ...]]] = {}
    for plan in plans:
        for name, vp in plan.variables.items():
            var = plan.dataset.variables[name]
            itemsize = vp.itemsize or (vp.dtype.itemsize if vp.dtype.kind != "O" else 8)
            chunks = list(blocks(var.shape, vp.chunks, itemsize, target=1))
            outcome.chunks += len(chunks)
            chosen = verify.choose(chunks, key=vp.name)
            if var.chunks is None:
                eager[(plan.group, name)] = chosen
                continue
            for region in blocks(var.shape, vp.chunks, itemsize, target=RUN_BYTES):
                inside = [c for c in chunks if _within(c, region)]
                wanted = [c for c in chosen if _within(c, region)]
                run = Run(len(runs), plan.group, name, vp, region, len(inside),
                           math.prod(s.stop - s.start for s in region) * itemsize)
                runs.append(run)
                outcome.runs += 1
                record = records.get(run.index)
                if record is not None:
                    outcome.resumed_runs += 1
                    outcome.resumed_chunks += run.nchunks
                    if record["state"] == "verified" or not (wanted or verify.complete):
                        outcome.checked += int(record.get("checked", 0))
                        if vp.packing is not None and not vp.packing.exact and record.get("checked"):
                            differences[vp.name] = max(differences.get(vp.name, 0.0), float(record.get("worst", 0)))
                        continue
                    # written by the interrupted run but not read back, and now wanted: read back only
                else:
                    run.data = var[region]
                if verify.complete:
                    run.checks, run.checked = [region], run.nchunks
                else:
                    run.checks, run.checked = wanted, len(wanted)
    return runs, eager


def _still_there(plans: list[GroupPlan], records: dict[int, dict[str, Any]], present: set[str],
                 zarr_format: int) -> dict[int, dict[str, Any]]:
    """The journal's records whose chunk objects are all still in the destination (a run whose
    chunk vanished since is written again, whatever its mark says)."""
    kept = dict(records)
    for run in _runs(plans, VerifyPlan("none"), {}, Outcome(), {})[0]:
        if run.index not in kept:
            continue
        prefix = run.name if run.group is None else f"{run.group}/{run.name}"
        ranges = [range(s.start // c, -(-s.stop // c)) for s, c in zip(run.region, run.vp.chunks)]
        for index in itertools.product(*ranges):
            key = (f"{prefix}/c/" + "/".join(map(str, index)) if zarr_format == 3
                   else f"{prefix}/" + ".".join(map(str, index)))
            if key not in present:
                del kept[run.index]
                break
    return kept


def _within(chunk: tuple[slice, ...], region: tuple[slice, ...]) -> bool:
    return all(r.start <= c.start < r.stop for c, r in zip(chunk, region))


def _check_here(job: Job, plans: list[GroupPlan], eager: dict[tuple[str | None, str], list[tuple[slice, ...]]],
                differences: dict[str, float], outcome: Outcome) -> None:
    """Every group's structure, and the values of the variables written at once, compared here
    (before the runs: a mismatch of structure ends the run early)."""
    for plan in plans:
        with opened(job.source, job.engine, job.read_store, plan.group) as sides:
            check_structure(sides, plan)
            for (group, name), regions in eager.items():
                if group != plan.group:
                    continue
                vp = plan.variables[name]
                worst = max([check_block(sides, vp, name, r) for r in regions], default=0.0)
                outcome.checked += len(regions)
                if vp.packing is not None and not vp.packing.exact and regions:
                    differences[vp.name] = max(differences.get(vp.name, 0.0), worst)


def _run_all(job: Job, todo: list[Run], every: list[Run], loc: Any, differences: dict[str, float],
             outcome: Outcome, progress: bool) -> None:
    """The runs as tasks (:func:`~numcodecs_ext.store.parallel.run_chunkwise`): on the user's
    dask scheduler where the destination is one the workers reach, else here. A run written now
    whose variable is proved in the task (``run.raw``) is compared there, as it is written; the
    others are read back through xarray once every run is written, as are the probes
    (:func:`_probes`) of the variables proved in the tasks."""
    from ..store.parallel import run_chunkwise

    if not todo:
        return
    # every run written before any is read back through xarray: opening the result decodes its
    # index coordinates (times), so those must be there whichever run reads
    writes = [dataclasses.replace(r, checks=[], checked=0) if r.raw is None else r for r in todo if r.data is not None]
    reads = [dataclasses.replace(r, data=None) for r in todo if r.checks and (r.raw is None or r.data is None)]
    found: dict[int, Done] = {}
    if writes:
        done = run_chunkwise(functools.partial(do_run, job), writes, label="converting",
                             nbytes=[r.nbytes for r in writes], nchunks=[r.nchunks for r in writes],
                             progress=progress, local_only=not loc.is_shared, describe=describe_run)
        found = {r.index: d for r, d in zip(writes, done) if r.raw is not None and r.checks}
        _count([r for r in writes if r.index in found], [found[r.index] for r in writes if r.index in found],
               differences, outcome)
    reads += _probes(every, found)
    if reads:
        done = run_chunkwise(functools.partial(do_run, job), reads, label="reading back",
                             nbytes=[r.nbytes for r in reads], nchunks=[r.nchunks for r in reads],
                             progress=progress, local_only=not loc.is_shared, describe=describe_run)
        _count(reads, done, differences, outcome)


def _count(runs: list[Run], done: list[Done], differences: dict[str, float], outcome: Outcome) -> None:
    for run, d in zip(runs, done):
        if not run.probe:
            outcome.checked += run.checked
        vp = run.vp
        if vp.packing is not None and not vp.packing.exact and run.checks:
            differences[vp.name] = max(differences.get(vp.name, 0.0), d.worst)


def _probes(runs: list[Run], found: dict[int, Done]) -> list[Run]:
    """The xarray-level comparison of the variables proved in the tasks: for each, the first and
    the last chunk it checks (its edges: a partial chunk at the end of every axis) and the first
    with missing values that a task found, read through xarray on both sides as
    :func:`~numcodecs_ext.cf.verify.check_block` reads them (CF decoding, attributes and dtypes
    are compared for every variable before the commit)."""
    chosen: dict[tuple[str | None, str], list[tuple[Run, tuple[slice, ...]]]] = {}
    for run in runs:
        if run.raw is None or not run.checks:
            continue
        picks = chosen.setdefault((run.group, run.name), [])
        if not picks:
            picks.append((run, run.checks[0]))
        last = (run, run.checks[-1])
        if len(picks) < 2:
            picks.append(last)
        else:
            picks[1] = last
        d = found.get(run.index)
        if d is not None and d.missing is not None and len(picks) < 3:
            picks.append((run, d.missing))
    probes = []
    for picks in chosen.values():
        seen: list[tuple[slice, ...]] = []
        for run, region in picks:
            if region in seen:
                continue
            seen.append(region)
            nbytes = math.prod(s.stop - s.start for s in region) * (run.nbytes // max(1, math.prod(
                s.stop - s.start for s in run.region)))
            probes.append(dataclasses.replace(run, data=None, checks=[region], checked=1, nbytes=nbytes, nchunks=1,
                                              raw=None, probe=True))
    return probes


def _clean_up(loc: Any, existed: bool) -> str:
    """Remove the chunks a failed run wrote; what is left, in words."""
    try:
        if existed:  # it was an empty directory: everything in it is ours
            for entry in loc.fs.ls(loc.root, detail=False):
                loc.fs.rm(entry, recursive=True)
            return f"{loc.display} is empty again, as it was before."
        if loc.exists():
            loc.fs.rm(loc.root, recursive=True)
        return f"nothing was left at {loc.display}."
    except OSError as e:
        return (f"{loc.display} holds chunk objects and no metadata, which open as nothing; they could not "
                f"be removed ({e}): remove {loc.display} before running again.")
