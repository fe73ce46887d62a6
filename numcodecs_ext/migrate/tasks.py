"""The chunk-wise work of migrate and normalize as dask tasks: comparing two ways of reading an
array (every verification and proof), and writing a run of a migration to a new store.

A task is plain, picklable data (:class:`~numcodecs_ext.migrate.runs.View` objects, regions,
chunk keys) and idempotent: comparing reads only, and copying or rewriting a run writes the same
chunk objects whenever it runs again, so a task whose worker died is simply run again by dask.
No task writes metadata: the driver writes it, last, once every run is verified.

:class:`Runner` finds the scheduler once per command (a ``distributed.Client`` in the process,
dask's configuration, ``DASK_SCHEDULER_ADDRESS``: :func:`~numcodecs_ext.store.parallel.find_scheduler`;
else threads here) and hands the tasks to :func:`~numcodecs_ext.store.parallel.run_chunkwise`
in batches, so that the driver records each batch (the migration journal, progress) as it ends,
and memory stays a few runs per worker and a batch of small results in the driver.

What ``--verify sample:N`` reads: :func:`sampled_chunks` picks N of an array's stored chunks
(all of the chunk grid where none is stored) with :meth:`VerifyPlan.choose`'s seeded choice,
and each run compares only the chosen chunks in it.

Examples
--------
>>> from numcodecs_ext.store.verifying import VerifyPlan, parse_verify
>>> plan = VerifyPlan("sample", 2, seed=7)
>>> picked = sampled_chunks(plan, "t", [3, 4], [1, 2], ["t/0.0", "t/1.1", "t/2.0", "t/2.1"], ".", "t/")
>>> len(picked), set(picked) <= {(0, 0), (1, 1), (2, 0), (2, 1)}, picked == sorted(picked)
(2, True, True)
>>> _pick(plan, 4, "t") == [["t/0.0", "t/1.1", "t/2.0", "t/2.1"].index(k) for k in plan.choose(
...     ["t/0.0", "t/1.1", "t/2.0", "t/2.1"], key="t")]     # VerifyPlan.choose's own choice
True
>>> sampled_chunks(parse_verify("full"), "t", [3, 4], [1, 2], [], ".", "t/") is None
True
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.errors import ToolError
from ..store.staging import StagedStore, is_metadata_key, shared_reads
from ..store.storage import Location
from ..store.verifying import VerifyPlan
from .readback import prove_stored
from .rewrite import store_run
from .runs import View, built_once, chunk_coords, compare_run, read_reusing, quiet, run_shape, runs, values_in
from .text import error, region

__all__ = ["Compare", "Outcome", "Pair", "Recording", "Runner", "WriteRun", "chosen_for", "compare_arrays",
           "sampled_chunks", "write_run"]

#: runs handed to the scheduler at a time, per thread of the cluster (the driver records a batch
#: when it ends: the journal, the progress bar)
BATCH_PER_THREAD = 8


# -- where the tasks run ---------------------------------------------------------------------------


class Runner:
    """The scheduler of one command: ``with Runner(src, dst) as r: r.map(func, tasks)``. Work on
    a location other processes cannot see (a store in this process's memory) stays here."""

    def __init__(self, *locations: Location) -> None:
        self.shared = all(loc.is_shared for loc in locations)
        self.token = uuid.uuid4().hex  # one command's tasks: the worker cache of opened arrays
        self._stack = ExitStack()
        self.where: Any = None

    def __enter__(self) -> Runner:
        from ..store.parallel import Scheduler, find_scheduler

        if self.shared:
            self.where = self._stack.enter_context(find_scheduler())
        else:
            import os

            self.where = Scheduler(threads=os.cpu_count() or 1)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    @property
    def threads(self) -> int:
        return self.where.total_threads()

    @property
    def batch(self) -> int:
        return max(16, BATCH_PER_THREAD * self.threads)

    def map(self, func: Callable[[Any], Any], tasks: Sequence[Any], *, label: str,
            nbytes: Sequence[int] | None = None, nchunks: Sequence[int] | None = None,
            describe: Callable[[Any], str] = str, on_done: Callable[[int, Any], None] | None = None) -> list[Any]:
        """``[func(t) for t in tasks]`` on the scheduler (no bar of its own: the caller's bar
        advances as batches end, or as ``on_done`` is called with each task's index and result)."""
        from ..store.parallel import run_chunkwise

        if self.where.distributed:
            return run_chunkwise(func, tasks, label=label, nbytes=nbytes, nchunks=nchunks, progress=False,
                                 client=self.where.client, describe=describe, on_done=on_done)
        return run_chunkwise(func, tasks, label=label, nbytes=nbytes, nchunks=nchunks, progress=False,
                             scheduler="threads" if self.where.threads > 1 else "synchronous",
                             local_only=not self.shared, describe=describe, on_done=on_done)

    def batches(self, tasks: Iterable[Any]) -> Iterator[list[Any]]:
        batch: list[Any] = []
        for task in tasks:
            batch.append(task)
            if len(batch) >= self.batch:
                yield batch
                batch = []
        if batch:
            yield batch


# -- arrays opened once per worker and command -------------------------------------------------------

def _view_key(view: View, token: str) -> tuple[Any, ...]:
    return (token, view.location.identity, view.path, view.zarr_format, tuple(sorted(view.staged.items())))


def open_view(view: View, token: str) -> Any:
    """``view.open()``, once per process and command (``token``) for read-only views: a run's
    task then costs no metadata request."""
    if view.writable:
        return view.open()
    return built_once(("view", *_view_key(view, token)), view.open)


# -- which chunks a sample reads ----------------------------------------------------------------------


def _pick(plan: VerifyPlan, total: int, key: str) -> list[int]:
    """``plan.choose(range(total), key=key)`` without listing the range (a grid may have
    millions of chunks): the same indices, by the same seeded draw."""
    import random

    if total <= plan.count:
        return list(range(total))
    rng = random.Random(f"{plan.seed}/{key}")
    return sorted(rng.sample(range(total), plan.count))


def sampled_chunks(plan: VerifyPlan, name: str, shape: Sequence[int], chunks: Sequence[int],
                   stored: Iterable[str], separator: str, prefix: str) -> list[tuple[int, ...]] | None:
    """The grid coordinates of the chunks ``plan`` checks in an array (None: every chunk; []:
    none): ``plan.count`` of its ``stored`` chunk keys (``prefix`` + coordinates joined by
    ``separator``) chosen at random, or of its whole grid where it has none stored."""
    if plan.mode == "full":
        return None
    if plan.mode == "none":
        return []
    keys = sorted(stored)
    if keys:
        ndim = len(shape)
        out = []
        for i in _pick(plan, len(keys), name):
            rest = keys[i][len(prefix):]
            out.append(tuple(int(p) for p in rest.split(separator)) if ndim else ())
        return sorted(out)
    grid = [math.ceil(s / c) if c else 0 for s, c in zip(shape, chunks)]
    total = math.prod(grid) if shape else 1
    return sorted(tuple(int(i) for i in np.unravel_index(n, grid)) if shape else ()
                  for n in _pick(plan, total, name))


def chosen_for(check: VerifyPlan, array: Any) -> tuple[list[tuple[int, ...]] | None, int]:
    """(the chunks ``check`` compares in ``array``, an ArrayPlan: see :func:`sampled_chunks`;
    the chunks a sample chooses from: its stored chunks, or its grid where none is stored)."""
    encoding = array.metadata.get("chunk_key_encoding") or {"name": "default"}
    separator = (encoding.get("configuration") or {}).get("separator")
    prefix = f"{array.path}/" if array.path else ""
    if encoding.get("name") == "v2":
        separator = separator or "."
    else:
        separator = separator or "/"
        prefix += "c" + separator if array.shape else "c"
    chosen = sampled_chunks(check, array.name, array.shape, array.chunk_shape, array.chunks, separator, prefix)
    grid = math.prod(math.ceil(s / c) if c else 0 for s, c in zip(array.shape, array.chunk_shape))
    return chosen, len(array.chunks) or grid


def chunk_region(coords: tuple[int, ...], chunks: Sequence[int], shape: Sequence[int]) -> tuple[slice, ...]:
    return tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(coords, chunks, shape))


def run_regions(shape: list[int], chunks: list[int], itemsize: int, chosen: list[tuple[int, ...]] | None
                ) -> Iterator[tuple[int, tuple[slice, ...], tuple[tuple[slice, ...], ...], int]]:
    """(number, run, regions compared in it, chunks in the run) for every run of an array:
    the run itself (``chosen`` None), or the chosen chunks that lie in it."""
    if chosen is None:
        for number, sel in runs(shape, chunks, itemsize=itemsize):
            yield number, sel, (sel,), sum(1 for _ in chunk_coords(sel, chunks))
        return
    per: list[int] = []
    if shape:
        grid = [math.ceil(s / c) if c else 0 for s, c in zip(shape, chunks)]
        per = run_shape(grid, math.prod(chunks) * itemsize)
    by_run: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
    for c in chosen:
        by_run.setdefault(tuple(i // p for i, p in zip(c, per)), []).append(c)
    for number, sel in runs(shape, chunks, itemsize=itemsize):
        at = tuple(s.start // (p * c) for s, p, c in zip(sel, per, chunks))
        mine = by_run.get(at, [])
        yield (number, sel, tuple(chunk_region(c, chunks, shape) for c in mine),
               sum(1 for _ in chunk_coords(sel, chunks)))


# -- comparing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Compare:
    """Read ``regions`` of one array through ``source`` and ``target`` and compare them."""

    array: str  # the array's path (its results are gathered by it)
    name: str
    source: View
    target: View
    regions: tuple[tuple[slice, ...], ...]
    token: str = ""
    codes: View | None = None  # the stored integers (see ``mapped``)
    mapped: tuple[int, ...] = ()  # stored codes whose values only the target can represent


@dataclass
class Outcome:
    """How one array compared: ``why`` it first differs (None: the same), ``failed``: the
    source itself cannot be read (a broken store), ``checked``: chunks compared."""

    why: str | None = None
    failed: str | None = None
    checked: int = 0
    done: bool = False
    mapped: int = 0  # values that differ where the stored code is one of ``Compare.mapped``


def _unmapped(source: Any, target: Any, codes: Any, sel: tuple[slice, ...], mapped: tuple[int, ...]) -> int | None:
    """How many values of ``sel`` differ between source and target, if every one of them is
    stored as a code in ``mapped`` (None if some other value differs)."""
    from .runs import as_bits

    with quiet():
        want, got = np.asarray(source[sel]), np.asarray(target[sel])
        stored = np.asarray(codes[sel])
    if want.shape != got.shape or want.dtype.kind in "OT" or stored.shape != want.shape:
        return None
    size = max(want.itemsize, 1)
    differ = (as_bits(want).reshape(-1, size) != as_bits(got.astype(want.dtype)).reshape(-1, size)).any(axis=1)
    allowed = np.isin(stored.reshape(-1), np.array(mapped, dtype=stored.dtype))
    return int(differ.sum()) if not (differ & ~allowed).any() else None


def compare(task: Compare) -> tuple[str | None, str | None, int, int]:
    """(how the target differs, or None; why the source cannot be read, or None; chunks read;
    values accepted as differing where the stored code is one of ``task.mapped``)."""
    try:
        source = open_view(task.source, task.token)
    except Exception as e:  # noqa: BLE001 - the store is broken
        return None, f"array {task.name}: zarr cannot open it ({error(e)})", 0, 0
    try:
        target = open_view(task.target, task.token)
    except Exception as e:  # noqa: BLE001 - zarr cannot read the chunks this way
        return f"zarr cannot read them under the new metadata ({error(e)})", None, 0, 0
    checked = accepted = 0
    chunks = list(source.chunks)
    # the same stored chunks under two metadata versions (in place, normalize): each object read once
    same = task.source.location.identity == task.target.location.identity
    for sel in task.regions:
        try:
            with shared_reads(task.source.location) if same else nullcontext():
                why = compare_run(source, target, sel, name=task.name)
        except ToolError as e:
            return None, str(e), checked, accepted
        checked += sum(1 for _ in chunk_coords(sel, chunks))
        if why is not None and task.codes is not None:
            try:
                n = _unmapped(source, target, open_view(task.codes, task.token), sel, task.mapped)
            except Exception:  # noqa: BLE001 - the codes cannot be read: the difference stands
                n = None
            if n is not None:
                accepted += n
                continue
        if why is not None:
            return why, None, checked, accepted
    return None, None, checked, accepted


@dataclass
class Pair:
    """One array to compare: its path and name, the two views, its shape, chunks, item size and
    the chunks to check (None: all)."""

    array: str
    name: str
    source: View
    target: View
    shape: list[int]
    chunks: list[int]
    itemsize: int
    chosen: list[tuple[int, ...]] | None = None
    codes: View | None = None
    mapped: tuple[int, ...] = ()


def compare_arrays(pairs: Sequence[Pair], runner: Runner, bar: Any, *, label: str = "verify") -> dict[str, Outcome]:
    """Compare every array of ``pairs`` run by run on the runner's scheduler; an array's
    remaining runs are skipped once it differs. The bar advances by decoded bytes and chunks
    (out of every chunk of the arrays, unless the caller gave it a chunk total)."""
    outcomes = {p.array: Outcome() for p in pairs}
    if getattr(bar, "chunks_total", 0) is None:
        bar.chunks_total = sum(math.prod(-(-s // (c or 1)) for s, c in zip(p.shape, p.chunks)) for p in pairs)

    def tasks() -> Iterator[tuple[Compare, int, int]]:
        for p in pairs:
            for _, sel, regions, n in run_regions(p.shape, p.chunks, p.itemsize, p.chosen):
                if outcomes[p.array].done:
                    break
                yield (Compare(p.array, p.name, p.source, p.target, regions, runner.token, p.codes, p.mapped),
                       values_in(sel) * p.itemsize, n)

    for batch in runner.batches(tasks()):
        batch = [b for b in batch if not outcomes[b[0].array].done]
        if not batch:
            continue
        todo = [b for b in batch if b[0].regions]
        results = runner.map(compare, [t for t, _, _ in todo], label=label,
                             nbytes=[b for _, b, _ in todo], nchunks=[n for _, _, n in todo],
                             describe=lambda t: f"array {t.name}")
        got = {id(t): r for (t, _, _), r in zip(todo, results)}
        for task, nbytes, n in batch:
            out = outcomes[task.array]
            if out.done:
                continue
            why, failed, checked, accepted = got.get(id(task), (None, None, 0, 0))
            out.checked += checked
            out.mapped += accepted
            if why is not None or failed is not None:
                out.why, out.failed, out.done = why, failed, True
                continue
            bar.advance(nbytes, chunks=n)
    return outcomes


# -- writing a run of a migration to a new store -----------------------------------------------------


class Recording(StagedStore):
    """A StagedStore that remembers the size of every chunk it writes (None: deleted)."""

    def __init__(self, location: Any, *, sizes: dict[str, int | None] | None = None, **kwargs: Any) -> None:
        super().__init__(location, **kwargs)
        self.sizes: dict[str, int | None] = {} if sizes is None else sizes

    def _with_store(self, store: Any) -> Recording:
        return type(self)(self.location, sizes=self.sizes, _staged=self.staged, _store=store)

    async def set(self, key: str, value: Any) -> None:
        await super().set(key, value)
        if not is_metadata_key(key):
            self.sizes[key] = len(value)

    async def delete(self, key: str) -> None:
        await super().delete(key)
        self.sizes[key] = None



@dataclass(frozen=True)
class WriteRun:
    """Copy (``mode`` "keep": the chunk objects, byte for byte) or rewrite (decode from
    ``source``, encode through the staged metadata ``doc``) one run of an array into ``dst``,
    then compare ``regions`` of it with the source."""

    array: str
    name: str
    number: int
    mode: str
    source: View
    dst: Location
    doc_key: str
    doc: bytes
    sel: tuple[slice, ...]
    keys: tuple[str, ...]  # the run's chunk keys
    copy: tuple[str, ...] = ()  # keep: the stored ones, copied
    remove: tuple[str, ...] = ()  # keep: chunks an earlier plan left where the source has none
    regions: tuple[tuple[slice, ...], ...] = ()
    token: str = ""


@dataclass
class WriteResult:
    number: int
    sizes: dict[str, int] = field(default_factory=dict)  # the run's chunks in dst now
    why: str | None = None  # keep: the copied chunks read differently (rewrite the array)
    checked: int = 0


def write_run(task: WriteRun) -> WriteResult:
    """Write and verify one run (idempotent: it writes the same objects whenever it runs)."""
    from ..store.errors import VerificationError

    result = WriteResult(task.number)
    source = open_view(task.source, task.token)
    chunks = list(source.chunks)
    if task.mode == "keep":
        task.source.location.copy_many(list(task.copy), task.dst)
        for key in task.remove:
            if task.dst.exists(key):
                task.dst.remove(key)
        target = open_view(View(task.dst, task.array, 3, {task.doc_key: task.doc}), task.token)
        for sel in task.regions:
            why = compare_run(source, target, sel, name=task.name)
            result.checked += sum(1 for _ in chunk_coords(sel, chunks))
            if why is not None:
                result.why = why
                return result
        return result
    staged = Recording(task.dst, _staged={task.doc_key: task.doc})
    metadata = (task.token, task.doc_key, task.doc)  # (names the new metadata in this process)
    import zarr

    with quiet():
        writer = zarr.open_array(staged, path=task.array, mode="r+", zarr_format=3)
        try:  # (into this thread's buffer: the values are done with when the task ends)
            values = read_reusing(source, task.sel, "source")
        except Exception as e:  # noqa: BLE001 - a broken source
            raise ToolError(f"array {task.name}: zarr cannot read the source at "
                            f"{region(task.sel)}: {error(e)}") from None
        if isinstance(values, np.ndarray) and values.dtype != writer.dtype and values.dtype.names:
            # zarr 3.1 stores a structured value of another byte order as its raw bytes (a big-
            # endian field read back byte-swapped): numpy converts field by field
            values = values.astype(writer.dtype)
        try:  # (whole chunks encoded here, as zarr's write would; zarr's write where it cannot be)
            if not store_run(staged, task.array, writer, task.sel, values, key=metadata):
                # (a copy: zarr may hand the store views of the values, and some stores keep the
                # object they are given, while this thread reads its next run into the buffer)
                writer[task.sel] = np.array(values, copy=True) if isinstance(values, np.ndarray) else values
        except Exception as e:  # noqa: BLE001 - refused by the new codecs
            raise ToolError(f"array {task.name}: zarr refuses to write {region(task.sel)} "
                            f"through the new metadata: {error(e)}. {task.dst} holds only "
                            "chunks: nothing there opens as an array or group") from None
    values = np.asarray(values)
    for sel in task.regions:
        local = tuple(slice(a.start - s.start, a.stop - s.start) for a, s in zip(sel, task.sel))
        want = values[local] if sel else values
        # the stored objects read back and decoded as zarr decodes them; zarr's own read where
        # that cannot be done, or where anything differs (it says where and how)
        proved = prove_stored(task.dst, task.array, writer, sel, want, key=metadata)
        why = None if proved else compare_run(source, writer, sel, name=task.name, values=want)
        result.checked += sum(1 for _ in chunk_coords(sel, chunks))
        if why is not None:
            raise VerificationError(
                f"array {task.name}: rewritten through the new metadata, it does not read "
                f"as the source {why}. {task.dst} holds only chunks: nothing there opens as an "
                "array or group")
    for key in task.keys:
        if key in staged.sizes:
            size = staged.sizes[key]
            if size is not None:
                result.sizes[key] = size
        elif task.dst.exists(key):
            result.sizes[key] = task.dst.size(key)
    return result
