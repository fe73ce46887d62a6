"""Metadata last: a zarr store whose metadata documents stay in memory until the data is written
and verified.

zarr and xarray write an array's metadata (``zarr.json``, ``.zarray`` ...) before its chunks, so
an interrupted write leaves an array that opens and silently reads the fill value wherever a
chunk is missing. A tool writes through :class:`StagedStore` instead: chunks go to the real
store at once, metadata documents are held back (and read back from memory, so zarr and xarray
work through the staged store as usual, reading included), and :meth:`StagedStore.commit`
writes them only at the end, each one whole (:meth:`Location.write`), after everything they
describe is durable (:meth:`Location.flush`): arrays first, then groups from the deepest up,
the root group last. Whatever an interruption leaves, nothing opens as more than it holds.

The staged documents travel with the store when it is pickled (dask workers write chunks through
copies of it, and only read metadata).

Examples
--------
>>> import tempfile, zarr, numpy as np
>>> loc = Location.parse(tempfile.mkdtemp())
>>> staged = StagedStore(loc)
>>> z = zarr.create_array(staged, shape=(4,), chunks=(2,), dtype="int16", fill_value=0)
>>> z[:] = [1, 2, 3, 4]
>>> sorted(loc.walk().files)             # chunks written, metadata held back
['c/0', 'c/1']
>>> staged.commit()
['zarr.json']
>>> zarr.open_array(loc.root, mode="r")[:]
array([1, 2, 3, 4], dtype=int16)
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from zarr.storage import WrapperStore

from .storage import Location

__all__ = ["METADATA_NAMES", "LocationStore", "StagedStore", "commit_order", "is_metadata_key",
           "refuse_zip_destination", "shared_reads"]

#: (the location's identity, {key: bytes}) while :func:`shared_reads` is in force
_SHARED: contextvars.ContextVar[tuple[tuple[Any, ...], dict[str, bytes]] | None] = contextvars.ContextVar(
    "numcodecs_ext_shared_reads", default=None)


@contextlib.contextmanager
def shared_reads(location: Location) -> Iterator[None]:
    """Within it, in this thread, a chunk object of ``location`` that one :class:`LocationStore`
    reads is fetched once for the next store over the same location that reads it: a run
    compared under two metadata versions of the same stored chunks (an in-place migration,
    normalize) reads each object once, not twice. An object is kept only until that second
    read (at most a run's chunk objects at a time); metadata documents and partial reads are
    never shared. (zarr reads in its own event loop; the context goes with each call.)

    >>> import shutil, tempfile, zarr
    >>> loc = Location.parse(tempfile.mkdtemp())
    >>> zarr.create_array(loc.root, shape=(4,), chunks=(2,), dtype="int8", fill_value=0)[:] = [1, 2, 3, 4]
    >>> a, b = (zarr.open_array(LocationStore(loc), mode="r") for _ in range(2))
    >>> with shared_reads(loc):
    ...     first = a[:]
    ...     shutil.rmtree(f"{loc.root}/c")  # the chunk objects gone: b reads what a fetched
    ...     second = b[:]
    >>> first.tolist(), second.tolist()
    ([1, 2, 3, 4], [1, 2, 3, 4])
    >>> b[:].tolist()  # outside it, b reads the store itself (no chunks now: the fill value)
    [0, 0, 0, 0]
    """
    token = _SHARED.set((location.identity, {}))
    try:
        yield
    finally:
        _SHARED.reset(token)


def refuse_zip_destination(target: Any) -> None:
    """UsageError for a destination the tools cannot write safely: a zarr ``ZipStore``, or a
    local path named ``*.zip`` (which would become a directory of that name). A zip file can
    neither be read back while it is written (verification) nor have an entry replaced
    atomically (metadata last), so the tools write a directory and the user zips it.

    >>> refuse_zip_destination("out.zarr")
    >>> refuse_zip_destination("out.zip")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: out.zip: the tools write a store as a directory (or a prefix in a
    bucket), not a zip file, which cannot be read back while it is written; write out.zarr, then zip it:
    cd out.zarr && zip -r -0 ../out.zip .
    """
    import os

    from zarr.storage import ZipStore

    from .errors import UsageError

    if isinstance(target, ZipStore):
        name = os.fspath(getattr(target, "path", "store.zip"))
    elif isinstance(target, (str, os.PathLike)) and "://" not in os.fspath(target) \
            and os.fspath(target).lower().endswith(".zip") and not os.path.isdir(target):
        name = os.fspath(target)
    else:
        return
    stem = name[:-4] if name.lower().endswith(".zip") else name
    raise UsageError(f"{name}: the tools write a store as a directory (or a prefix in a bucket), not a zip "
                     f"file, which cannot be read back while it is written; write {stem}.zarr, then zip "
                     f"it: cd {stem}.zarr && zip -r -0 ../{os.path.basename(name)} .")

#: the documents zarr v3 and v2 keep per node (and v2's consolidated metadata)
METADATA_NAMES = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")


def is_metadata_key(key: str) -> bool:
    """Whether ``key`` names a metadata document rather than a chunk."""
    return key.rpartition("/")[2] in METADATA_NAMES


def commit_order(keys: Iterable[str], documents: dict[str, bytes] | None = None) -> list[str]:
    """The order in which metadata documents are written so that no node claims what is not
    yet there: arrays before groups, deeper nodes before their parents, the root's documents
    last; within a node attributes before the document that makes it a node, and v2's
    ``.zmetadata`` (which claims the whole tree) at the very end.

    >>> commit_order(["zarr.json", "a/zarr.json", "a/b/.zarray", "a/b/.zattrs", ".zmetadata"])
    ['a/b/.zattrs', 'a/b/.zarray', 'a/zarr.json', 'zarr.json', '.zmetadata']
    """
    within = {".zattrs": 0, ".zarray": 1, ".zgroup": 1, "zarr.json": 1, ".zmetadata": 2}

    def rank(key: str) -> tuple[int, int, int, str]:
        node, _, name = key.rpartition("/")
        depth = node.count("/") + 1 if node else 0
        return (name == ".zmetadata", -depth, within.get(name, 1), key)

    return sorted(keys, key=rank)


class LocationStore(WrapperStore):
    """The zarr store of a :class:`Location` (zarr's LocalStore, FsspecStore, or the store
    object itself) with the tools' errors: whatever the storage library raises while zarr or
    xarray reads or writes through it becomes a StorageError / StoreNotFound / AccessDenied
    naming the object by its display form, never a credential.

    It pickles as its Location (storage options included: dask workers need them to reach the
    store), and shows only the display form.
    """

    def __init__(self, location: Location | Any, *, read_only: bool = True, _store: Any = None) -> None:
        self.location = Location.parse(location)
        super().__init__(_store if _store is not None else self.location.zarr_store(read_only=read_only))

    def _with_store(self, store: Any) -> LocationStore:
        return type(self)(self.location, _store=store)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_location_store, (self.location, self.read_only))

    def _fault(self, e: BaseException, key: str, action: str) -> BaseException:
        return self.location.fault(e, key, action)

    @property
    def _identity(self) -> tuple[Any, ...]:
        """The location's identity, worked out once per store (it is asked at every chunk read
        under :func:`shared_reads`)."""
        found = self.__dict__.get("_identity_cache")
        if found is None:
            found = self.__dict__["_identity_cache"] = self.location.identity
        return found

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        shared = _SHARED.get()
        if shared is not None and byte_range is None and not is_metadata_key(key) \
                and shared[0] == self._identity:
            data = shared[1].pop(key, None)
            if data is not None:  # the other store's read of it: once is enough
                return prototype.buffer.from_bytes(data)
            found = await self._get(key, prototype, byte_range)
            if found is not None:
                shared[1][key] = found.to_bytes()
            return found
        return await self._get(key, prototype, byte_range)

    async def _get(self, key: str, prototype: Any, byte_range: Any) -> Any:
        try:
            return await self._store.get(key, prototype, byte_range)
        except Exception as e:  # noqa: BLE001 - said the tools' way
            raise self._fault(e, key, "read") from None

    async def get_partial_values(self, prototype: Any, key_ranges: Iterable[tuple[str, Any]]) -> list[Any]:
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key: str) -> bool:
        try:
            return await self._store.exists(key)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "check") from None

    async def getsize(self, key: str) -> int:
        try:
            return await self._store.getsize(key)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "find the size of") from None

    async def set(self, key: str, value: Any) -> None:
        try:
            await self._store.set(key, value)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "write") from None

    async def set_if_not_exists(self, key: str, value: Any) -> None:
        if not await self.exists(key):
            await self.set(key, value)

    async def _set_many(self, values: Iterable[tuple[str, Any]]) -> None:
        for key, value in values:
            await self.set(key, value)

    async def delete(self, key: str) -> None:
        try:
            await self._store.delete(key)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "remove") from None

    async def delete_dir(self, prefix: str) -> None:
        try:
            await self._store.delete_dir(prefix)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, prefix, "remove") from None

    async def is_empty(self, prefix: str) -> bool:
        try:
            return await self._store.is_empty(prefix)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, prefix, "list") from None

    async def _listed(self, listing: AsyncIterator[str], prefix: str) -> AsyncIterator[str]:
        try:
            async for key in listing:
                yield key
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, prefix, "list") from None

    def list(self) -> AsyncIterator[str]:
        return self._listed(self._store.list(), "")

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        return self._listed(self._store.list_prefix(prefix), prefix)

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        return self._listed(self._store.list_dir(prefix), prefix)

    # zarr >= 3.4 reads and writes chunks synchronously where the store can
    def get_sync(self, key: str, *, prototype: Any = None, byte_range: Any = None) -> Any:
        try:
            return self._store.get_sync(key, prototype=prototype, byte_range=byte_range)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "read") from None

    def set_sync(self, key: str, value: Any) -> None:
        try:
            self._store.set_sync(key, value)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "write") from None

    def delete_sync(self, key: str) -> None:
        try:
            self._store.delete_sync(key)
        except Exception as e:  # noqa: BLE001
            raise self._fault(e, key, "remove") from None

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._store == other._store  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location.display!r})"

    def __str__(self) -> str:
        return self.location.display


class StagedStore(LocationStore):
    """A zarr store over ``location`` that writes chunks through and holds metadata documents
    in memory until :meth:`commit`.

    Parameters
    ----------
    location : Location
        Where the store lives (a Location, or anything :meth:`Location.parse` takes).
    read_only : bool
        Open the underlying store read-only (metadata can still be staged: a way to read an
        array under metadata that is not written yet).
    """

    def __init__(self, location: Location | Any, *, read_only: bool = False,
                 _staged: dict[str, bytes] | None = None, _store: Any = None) -> None:
        super().__init__(location, read_only=read_only, _store=_store)
        self.staged: dict[str, bytes] = {} if _staged is None else _staged

    def _with_store(self, store: Any) -> StagedStore:
        return type(self)(self.location, _staged=self.staged, _store=store)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.location, self.read_only, dict(self.staged)))

    # -- what zarr calls ----------------------------------------------------------------------

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        if is_metadata_key(key) and key in self.staged:
            data = self.staged[key]
            if byte_range is not None:
                data = _slice(data, byte_range)
            return prototype.buffer.from_bytes(data)
        return await super().get(key, prototype, byte_range)

    async def exists(self, key: str) -> bool:
        return key in self.staged or await super().exists(key)

    async def set(self, key: str, value: Any) -> None:
        if is_metadata_key(key):
            self._check_writable()
            self.staged[key] = value.to_bytes()
            return
        await super().set(key, value)

    async def delete(self, key: str) -> None:
        if key in self.staged:
            del self.staged[key]
            return
        await super().delete(key)

    async def delete_dir(self, prefix: str) -> None:
        start = prefix.rstrip("/") + "/" if prefix else ""
        for key in [k for k in self.staged if k.startswith(start)]:
            del self.staged[key]
        await super().delete_dir(prefix.rstrip("/"))

    async def is_empty(self, prefix: str) -> bool:
        start = prefix.rstrip("/") + "/" if prefix else ""
        if any(k.startswith(start) for k in self.staged):
            return False
        return await super().is_empty(prefix)

    async def list(self) -> AsyncIterator[str]:
        seen = set()
        async for key in super().list():
            seen.add(key)
            yield key
        for key in list(self.staged):
            if key not in seen:
                yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        seen = set()
        async for key in super().list_prefix(prefix):
            seen.add(key)
            yield key
        for key in list(self.staged):
            if key.startswith(prefix) and key not in seen:
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        start = prefix.rstrip("/") + "/" if prefix else ""
        seen = set()
        async for key in super().list_dir(prefix):
            seen.add(key)
            yield key
        for key in list(self.staged):
            if key.startswith(start):
                child = key[len(start):].split("/", 1)[0]
                if child not in seen:
                    seen.add(child)
                    yield child

    # -- the end ------------------------------------------------------------------------------

    def commit(self) -> list[str]:
        """Write the staged documents to the location, in :func:`commit_order`, each whole,
        after making the chunks durable; returns the keys written."""
        order = commit_order(self.staged)
        self.location.flush()
        for key in order:
            self.location.write(key, self.staged[key])
        return order

    def discard(self) -> None:
        """Forget the staged documents (a failed run): the location keeps only chunks, which
        open as nothing."""
        self.staged.clear()

    def __repr__(self) -> str:
        return f"StagedStore({self.location.display!r}, {len(self.staged)} staged)"


def _rebuild_location_store(location: Location, read_only: bool) -> LocationStore:
    return LocationStore(location, read_only=read_only)


def _rebuild(location: Location, read_only: bool, staged: dict[str, bytes]) -> StagedStore:
    return StagedStore(location, read_only=read_only, _staged=staged)


def _slice(data: bytes, byte_range: Any) -> bytes:
    """``data`` cut to zarr's ByteRequest (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)."""
    if hasattr(byte_range, "start") and hasattr(byte_range, "end"):
        return data[byte_range.start:byte_range.end]
    if hasattr(byte_range, "offset"):
        return data[byte_range.offset:]
    if hasattr(byte_range, "suffix"):
        return data[-byte_range.suffix:] if byte_range.suffix else b""
    return data
