"""Reading an array run by run, and proving that two ways of reading it give the same values.

A *run* is a block of whole chunks of at most :data:`BLOCK_BYTES` (4 MiB) of decoded values (a
single chunk where one chunk is larger) and at most :data:`MAX_CHUNKS` chunks: zarr decodes the
chunks of one run in parallel, and memory stays bounded by a run whatever the array's size. Runs are
numbered in C order; the same array shape, chunk shape and item size always give the same runs, so a
run's number can be recorded and resumed.

A :class:`View` says how to open an array: where (a :class:`~numcodecs_ext.store.storage.Location`),
which node, which zarr format, and metadata documents that stand in for the stored ones
(through :class:`~numcodecs_ext.store.staging.StagedStore`: the candidate metadata of a
migration is read over the real chunks without being written). A View is plain data, so the
work on each run can be handed to another process as it is.

Examples
--------
>>> # 96-byte chunks, two per run
>>> list(runs([10, 6], [4, 3], itemsize=8, budget=200))  # doctest: +NORMALIZE_WHITESPACE
[(0, (slice(0, 4, None), slice(0, 6, None))), (1, (slice(4, 8, None), slice(0, 6, None))),
 (2, (slice(8, 10, None), slice(0, 6, None)))]
>>> list(runs([], [], itemsize=8))                        # a 0-d array is one run
[(0, ())]
>>> same_values(np.array([np.nan, -0.0]), np.array([np.nan, 0.0]))
False
"""

from __future__ import annotations

import itertools
import json
import math
import os
import threading
import warnings
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.blocks import scratch
from ..store.journal import MIGRATE_JOURNAL, Journal
from ..store.storage import Location
from .text import error, number, region

__all__ = ["BLOCK_BYTES", "MAX_CHUNKS", "MigrationJournal", "View", "chunk_coords", "compare_run", "differences",
           "quiet", "runs", "same_values"]

#: chunks read at a time, at most: zarr holds a task (some kilobytes) per chunk of a read, so
#: 4 MiB of tiny chunks would take gigabytes (measured: 100,000 one-byte chunks in one run,
#: 320 MB peak; in runs of 1,024 chunks, 89 MB and as fast)
MAX_CHUNKS = 1024

#: bytes of decoded values read at a time (zarr decodes the chunks of one read in parallel); the
#: environment variable NUMCODECS_EXT_RUN_BYTES sets another bound (memory per run, and how much
#: an interrupted run redoes). Measured (benchmarks/bench_migrate.py, 1 MiB chunks, 2 cores):
#: 4 MiB runs are as fast as any, 32 MiB ones half as fast and 60 MB larger.
BLOCK_BYTES = 4 << 20


def block_bytes() -> int:
    """:data:`BLOCK_BYTES`, or the environment's ``NUMCODECS_EXT_RUN_BYTES`` (at least 1)."""
    value = os.environ.get("NUMCODECS_EXT_RUN_BYTES")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            from ..store.errors import UsageError

            raise UsageError(f"NUMCODECS_EXT_RUN_BYTES={value!r}: give a number of bytes, such as "
                             f"{BLOCK_BYTES}") from None
    return BLOCK_BYTES


@contextmanager
def quiet() -> Iterator[None]:
    """A context in which zarr's notes on v2 stores, numcodecs codecs and stores holding both
    metadata versions stay silent (the tools say what matters in their own words)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@dataclass(frozen=True, eq=False)
class View:
    """One array as zarr reads it: ``location`` / ``path`` in ``zarr_format``, with ``staged``
    metadata documents (key relative to the location -> bytes) served instead of the stored
    ones. ``writable`` opens it for writing chunks (metadata still only staged)."""

    location: Location
    path: str
    zarr_format: int
    staged: Mapping[str, bytes] = field(default_factory=dict)
    writable: bool = False

    def store(self) -> Any:
        """The zarr store to open it from."""
        from ..store.staging import LocationStore, StagedStore

        if not self.staged and not self.writable:
            # the tools' errors (a service gone, access denied ...), never the library's own
            return LocationStore(self.location)

        return StagedStore(self.location, read_only=not self.writable, _staged=dict(self.staged))

    def open(self) -> Any:
        """The zarr array (raises whatever zarr raises when it cannot open it)."""
        import zarr

        with quiet():
            return zarr.open_array(self.store(), path=self.path, mode="r+" if self.writable else "r",
                                   zarr_format=self.zarr_format)

    @property
    def name(self) -> str:
        return self.path or "/"


def run_shape(grid: list[int], chunk_bytes: int, budget: int | None = None) -> list[int]:
    """Chunks per run along each axis: whole chunks, the last axes first, at most ``budget``
    bytes (one chunk if a chunk is larger) and :data:`MAX_CHUNKS` chunks."""
    per = [1] * len(grid)
    room = max(1, min((budget or block_bytes()) // max(chunk_bytes, 1), MAX_CHUNKS))
    for axis in reversed(range(len(grid))):
        take = max(1, min(grid[axis], room))
        per[axis] = take
        room = max(1, room // take)
    return per


def runs(shape: list[int], chunks: list[int], *, itemsize: int,
         budget: int | None = None) -> Iterator[tuple[int, tuple[slice, ...]]]:
    """(run number, selection) for every run of the array, in C order."""
    if not shape:
        yield 0, ()
        return
    grid = [math.ceil(s / c) if c else 0 for s, c in zip(shape, chunks)]
    per = run_shape(grid, math.prod(chunks) * itemsize, budget)
    counts = [math.ceil(g / p) for g, p in zip(grid, per)]
    for number_, index in enumerate(np.ndindex(*counts)):
        yield number_, tuple(slice(i * p * c, min((i + 1) * p * c, s))
                             for i, p, c, s in zip(index, per, chunks, shape))


def run_count(shape: list[int], chunks: list[int], *, itemsize: int, budget: int | None = None) -> int:
    if not shape:
        return 1
    grid = [math.ceil(s / c) if c else 0 for s, c in zip(shape, chunks)]
    per = run_shape(grid, math.prod(chunks) * itemsize, budget)
    return math.prod(math.ceil(g / p) for g, p in zip(grid, per))


def chunk_coords(sel: tuple[slice, ...], chunks: list[int]) -> Iterator[tuple[int, ...]]:
    """The grid coordinates of the chunks a chunk-aligned selection covers."""
    if not sel:
        yield ()
        return
    ranges = [range(s.start // c, math.ceil(s.stop / c)) for s, c in zip(sel, chunks)]
    yield from itertools.product(*ranges)


def stored_chunks(metadata: Any, path: str, sel: tuple[slice, ...], chunks: tuple[int, ...]
                  ) -> Iterator[tuple[str, tuple[slice, ...]]]:
    """(object key, its part of the run relative to ``sel``) for every chunk of the chunk-aligned
    run ``sel`` of the zarr array at ``path`` (``metadata``: its own; ``chunks``: its chunk shape)."""
    prefix = f"{path}/" if path else ""
    for c in chunk_coords(sel, list(chunks)):
        yield (prefix + metadata.encode_chunk_key(c),
               tuple(slice(i * n - s.start, min((i + 1) * n, s.stop) - s.start) for i, n, s in zip(c, chunks, sel)))


def values_in(sel: tuple[slice, ...]) -> int:
    return math.prod(s.stop - s.start for s in sel) if sel else 1


def as_bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _variable(a: np.ndarray) -> bool:
    """Whether ``a`` holds variable-length values (strings, bytes): compared value by value."""
    return a.dtype.kind in "OT"


def _equal_items(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which values of two arrays of variable-length values are equal, of the same type."""
    return np.fromiter((x == y and type(x) is type(y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist())),
                       bool, count=a.size)


def _same_type(a: np.ndarray, b: np.ndarray) -> bool:
    if _variable(a) or _variable(b):
        return a.dtype == b.dtype
    return a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=")


def same_values(a: Any, b: Any) -> bool:
    """Equal shapes, equal data types (byte order aside) and equal values bit for bit: NaN
    payloads and -0.0 included, NaT equal to NaT; strings and bytes of variable length equal
    value for value."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not _same_type(a, b):
        return False
    if _variable(a):
        return bool(_equal_items(a, b).all())
    return bool(np.array_equal(as_bits(a), as_bits(b)))


def differences(want: Any, got: Any) -> str:
    """How ``got`` differs from ``want``, in words: how many values, and the first of them."""
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape:
        return f"shape {list(got.shape)} instead of {list(want.shape)}"
    if not _same_type(want, got):
        return f"data type {got.dtype.name} instead of {want.dtype.name}"
    if _variable(want):
        differ = np.flatnonzero(~_equal_items(want, got))
    else:
        size = max(want.itemsize, 1)
        differ = np.flatnonzero((as_bits(want).reshape(-1, size) != as_bits(got).reshape(-1, size)).any(axis=1))
    first = np.unravel_index(int(differ[0]), want.shape) if want.shape else ()
    where = "[" + ", ".join(str(int(i)) for i in first) + "]"
    return (f"{len(differ)} of {want.size} values differ, the first at {where}: "
            f"{number(want[first])} reads as {number(got[first])}")


def _chunk_sels(sel: tuple[slice, ...], chunks: list[int]) -> Iterator[tuple[slice, ...]]:
    for c in chunk_coords(sel, chunks):
        yield tuple(slice(i * n, min((i + 1) * n, s.stop)) for i, n, s in zip(c, chunks, sel))


def _first_bad_chunk(source: Any, target: Any, sel: tuple[slice, ...],
                     values: np.ndarray) -> tuple[tuple[slice, ...], str]:
    """The first chunk of the run ``sel`` where ``target`` does not read as ``values`` (the
    source's values of the run), and how."""
    chunks = list(source.chunks)
    for sub in _chunk_sels(sel, chunks):
        local = tuple(slice(a.start - s.start, a.stop - s.start) for a, s in zip(sub, sel))
        want = values[local] if sel else values
        try:
            got = target[sub]
        except Exception as e:  # noqa: BLE001 - reported in words
            return sub, f"zarr cannot read it under the new metadata: {error(e)}"
        if not same_values(want, got):
            return sub, differences(want, got)
    return sel, "the run as a whole reads differently"


_BUILT: dict[Hashable, Any] = {}
_BUILT_LOCK = threading.Lock()
_NOTHING = object()


def built_once(key: Hashable, build: Callable[[], Any]) -> Any:
    """``build()``, once per ``key`` in a process (of the last 32 keys): what a task works out
    from an array's metadata (its chunk encoder or decoder: None where it has none), which
    every task of the array would otherwise work out again."""
    with _BUILT_LOCK:
        found = _BUILT.get(key)
    if found is None:
        found = build()
        found = _NOTHING if found is None else found
        with _BUILT_LOCK:
            if len(_BUILT) >= 32:
                _BUILT.pop(next(iter(_BUILT)))
            _BUILT[key] = found
    return None if found is _NOTHING else found


def read_reusing(array: Any, sel: tuple[slice, ...], slot: str = "target") -> Any:
    """``array[sel]`` of a zarr array of fixed-size items, read into this thread's buffer
    ``slot`` (:func:`~numcodecs_ext.core.blocks.scratch`: the values are good until this
    thread's next read into the slot): a run read into new memory each time costs a page fault per 4 KiB,
    as much as its decoding."""
    import zarr
    from zarr.buffer import default_buffer_prototype

    dtype = getattr(array, "dtype", None)
    if not isinstance(array, zarr.Array) or not isinstance(dtype, np.dtype) or dtype.hasobject or not sel or any(
            not isinstance(s, slice) or s.step not in (None, 1) for s in sel) or len(sel) != len(array.shape):
        return array[sel]
    shape = tuple(len(range(*s.indices(n))) for s, n in zip(sel, array.shape))
    out = scratch(f"migrate.read.{slot}", math.prod(shape), dtype).reshape(shape)
    array.get_basic_selection(sel, out=default_buffer_prototype().nd_buffer.from_numpy_array(out))
    return out


def compare_run(source: Any, target: Any, sel: tuple[slice, ...], *, name: str,
                values: np.ndarray | None = None) -> str | None:
    """Why ``target`` (a zarr array) does not read the run ``sel`` as ``source`` does, or None:
    "at [region] (the first chunk that differs): how". ``values`` are the source's values there
    if already read. A source that cannot be read is an error (raised: the store is broken); a
    target that cannot be read is a difference."""
    from ..store.errors import ToolError

    with quiet():
        if values is None:
            try:
                values = np.asarray(source[sel])
            except Exception as e:  # noqa: BLE001 - a broken source is said in words
                where, _ = sel, None
                for sub in _chunk_sels(sel, list(source.chunks)):
                    try:
                        source[sub]
                    except Exception:  # noqa: BLE001
                        where = sub
                        break
                raise ToolError(f"array {name}: zarr cannot read the source at {region(where)}: "
                                f"{error(e)}") from None
        try:
            got = read_reusing(target, sel)
        except Exception:  # noqa: BLE001 - any failure: the two do not read the same
            got = None
        if got is not None and same_values(values, got):
            return None
        where, how = _first_bad_chunk(source, target, sel, np.asarray(values))
    return f"at {region(where)}: {how}"


class MigrationJournal(Journal):
    """migrate's journal (:mod:`numcodecs_ext.store.journal`, :data:`MIGRATE_JOURNAL`): ``plan``
    (its digest), the source, ``seed`` (``--verify sample:N``'s: a resumed run checks the same
    chunks), each array's ``modes`` ("keep" or "rewrite") and ``totals`` (its runs, for inspect),
    and each array's verified runs ``runs`` ``{array: {run number: run digest}}`` (a record per
    run, of the array's group)."""

    def __init__(self, location: Location, *, plan: str | None = None, source: str = "",
                 seed: int | None = None) -> None:
        super().__init__(location, MIGRATE_JOURNAL)
        self.digest, self.source = plan, source
        self.about = {"seed": seed, "modes": {}, "totals": {}}
        self.runs: dict[str, dict[int, str]] = {}
        self._begun = False
        self._saved: str | None = None  # the stamp as last written (its modes must hold before a run's record)

    @classmethod
    def read(cls, location: Location) -> MigrationJournal:
        """The journal in ``location`` (ValueError if it cannot be read; one of an older format
        has no ``plan``: it resumes nothing)."""
        journal = cls(location)
        if not journal.load(strict=True):
            raise ValueError("not there")
        about, seed = journal.about, journal.about.get("seed")
        journal.about = {"seed": int(seed) if isinstance(seed, int) else None,
                         "modes": {str(k): str(v) for k, v in dict(about.get("modes") or {}).items()},
                         "totals": {str(k): int(v) for k, v in dict(about.get("totals") or {}).items()}}
        if journal.digest is not None:
            journal.runs = {array: {n: str(r.get("digest")) for n, r in records.items()}
                            for array, records in journal.all_records().items()}
        return journal

    @property
    def plan(self) -> str | None:
        return self.digest

    @property
    def seed(self) -> int | None:
        return self.about["seed"]

    @property
    def modes(self) -> dict[str, str]:
        return self.about["modes"]

    @property
    def totals(self) -> dict[str, int]:
        return self.about["totals"]

    @totals.setter
    def totals(self, totals: dict[str, int]) -> None:
        self.about["totals"] = dict(totals)
        self.runs_total = sum(totals.values())

    def done(self, array: str, run: int, digest: str) -> None:
        """Run ``run`` of ``array`` is written and verified; ``digest``: its chunks' keys and
        sizes in the destination (:func:`~numcodecs_ext.store.journal.run_digest`). The stamp is
        written first where it changed (an array's mode): a resumed run trusts a record only
        under the mode it was made in."""
        if self._saved != json.dumps(self.about, sort_keys=True):
            self.save()
        self.record(run, array, digest=digest)
        self.runs.setdefault(array, {})[run] = digest

    def forget(self, group: str | None = None) -> None:
        super().forget(group)
        if group is None:
            self.runs.clear()
        else:
            self.runs.pop(group, None)

    def save(self) -> None:
        """Write the journal's stamp: the first time as :meth:`create` (the runs of a journal of
        another plan there are forgotten; those of this plan kept), then as it is now."""
        if self._begun:
            super().save()
        else:
            self._begun = True
            self.create(str(self.digest), source=self.source, about=self.about, runs_total=self.runs_total)
        self._saved = json.dumps(self.about, sort_keys=True)
