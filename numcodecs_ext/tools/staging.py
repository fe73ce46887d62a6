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

from collections.abc import AsyncIterator, Iterable
from typing import Any

from zarr.storage import WrapperStore

from .storage import Location

__all__ = ["METADATA_NAMES", "StagedStore", "commit_order", "is_metadata_key"]

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


class StagedStore(WrapperStore):
    """A zarr store over ``location`` that writes chunks through and holds metadata documents
    in memory until :meth:`commit`.

    Parameters
    ----------
    location : Location
        Where the store lives.
    read_only : bool
        Open the underlying store read-only (metadata can still be staged: a way to read an
        array under metadata that is not written yet).
    """

    def __init__(self, location: Location | Any, *, read_only: bool = False,
                 _staged: dict[str, bytes] | None = None, _store: Any = None) -> None:
        self.location = Location.parse(location)
        super().__init__(_store if _store is not None else self.location.zarr_store(read_only=read_only))
        self.staged: dict[str, bytes] = {} if _staged is None else _staged

    def _with_store(self, store: Any) -> StagedStore:
        return type(self)(self.location, _staged=self.staged, _store=store)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.location.url, dict(self.location.storage_options), self.read_only,
                           dict(self.staged)))

    # -- what zarr calls ----------------------------------------------------------------------

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        if is_metadata_key(key) and key in self.staged:
            data = self.staged[key]
            if byte_range is not None:
                data = _slice(data, byte_range)
            return prototype.buffer.from_bytes(data)
        return await self._store.get(key, prototype, byte_range)

    async def get_partial_values(self, prototype: Any, key_ranges: Iterable[tuple[str, Any]]) -> list[Any]:
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key: str) -> bool:
        return key in self.staged or await self._store.exists(key)

    async def set(self, key: str, value: Any) -> None:
        if is_metadata_key(key):
            self._check_writable()
            self.staged[key] = value.to_bytes()
            return
        await self._store.set(key, value)

    async def set_if_not_exists(self, key: str, value: Any) -> None:
        if not await self.exists(key):
            await self.set(key, value)

    async def _set_many(self, values: Iterable[tuple[str, Any]]) -> None:
        for key, value in values:
            await self.set(key, value)

    async def delete(self, key: str) -> None:
        if key in self.staged:
            del self.staged[key]
            return
        await self._store.delete(key)

    async def delete_dir(self, prefix: str) -> None:
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        for key in [k for k in self.staged if k.startswith(prefix)]:
            del self.staged[key]
        await self._store.delete_dir(prefix.rstrip("/"))

    async def is_empty(self, prefix: str) -> bool:
        start = prefix.rstrip("/") + "/" if prefix else ""
        if any(k.startswith(start) for k in self.staged):
            return False
        return await self._store.is_empty(prefix)

    async def list(self) -> AsyncIterator[str]:
        seen = set()
        async for key in self._store.list():
            seen.add(key)
            yield key
        for key in self.staged:
            if key not in seen:
                yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        seen = set()
        async for key in self._store.list_prefix(prefix):
            seen.add(key)
            yield key
        for key in self.staged:
            if key.startswith(prefix) and key not in seen:
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        start = prefix.rstrip("/") + "/" if prefix else ""
        seen = set()
        async for key in self._store.list_dir(prefix):
            seen.add(key)
            yield key
        for key in self.staged:
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

    def __str__(self) -> str:
        return self.location.display


def _rebuild(url: str, options: dict[str, Any], read_only: bool, staged: dict[str, bytes]) -> StagedStore:
    return StagedStore(Location.parse(url, storage_options=options), read_only=read_only, _staged=staged)


def _slice(data: bytes, byte_range: Any) -> bytes:
    """``data`` cut to zarr's ByteRequest (RangeByteRequest, OffsetByteRequest, SuffixByteRequest)."""
    if hasattr(byte_range, "start") and hasattr(byte_range, "end"):
        return data[byte_range.start:byte_range.end]
    if hasattr(byte_range, "offset"):
        return data[byte_range.offset:]
    if hasattr(byte_range, "suffix"):
        return data[-byte_range.suffix:] if byte_range.suffix else b""
    return data
