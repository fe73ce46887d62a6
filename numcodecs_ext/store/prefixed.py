"""A zarr store seen from one of its prefixes, so that a Location below the top of a store
object (``MemoryStore``, ``ZipStore``, ``ObjectStore`` ...) opens in zarr as a store of its own.

Examples
--------
>>> import zarr
>>> keys = {}
>>> whole = zarr.storage.MemoryStore(store_dict=keys)
>>> z = zarr.create_array(PrefixedStore(whole, "a/b"), shape=(2,), dtype="int8", fill_value=0)
>>> sorted(keys)
['a/b/zarr.json']
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from zarr.storage import WrapperStore

__all__ = ["PrefixedStore", "ReadOnlyView"]


class PrefixedStore(WrapperStore):
    """``store`` with every key under ``prefix`` (no leading or trailing slash)."""

    def __init__(self, store: Any, prefix: str) -> None:
        super().__init__(store)
        self.prefix = prefix.strip("/")

    def _with_store(self, store: Any) -> PrefixedStore:
        return type(self)(store, self.prefix)

    def _key(self, key: str) -> str:
        key = key.strip("/")
        return f"{self.prefix}/{key}" if key else self.prefix

    def _dir(self, prefix: str) -> str:
        prefix = prefix.strip("/")
        return f"{self.prefix}/{prefix}/" if prefix else f"{self.prefix}/"

    def _strip(self, key: str) -> str:
        return key[len(self.prefix) + 1:] if key.startswith(self.prefix + "/") else key

    async def get(self, key: str, prototype: Any, byte_range: Any = None) -> Any:
        return await self._store.get(self._key(key), prototype, byte_range)

    async def get_partial_values(self, prototype: Any, key_ranges: Iterable[tuple[str, Any]]) -> list[Any]:
        return await self._store.get_partial_values(
            prototype, [(self._key(k), r) for k, r in key_ranges])

    async def exists(self, key: str) -> bool:
        return await self._store.exists(self._key(key))

    async def set(self, key: str, value: Any) -> None:
        await self._store.set(self._key(key), value)

    async def set_if_not_exists(self, key: str, value: Any) -> None:
        await self._store.set_if_not_exists(self._key(key), value)

    async def _set_many(self, values: Iterable[tuple[str, Any]]) -> None:
        for key, value in values:
            await self.set(key, value)

    async def delete(self, key: str) -> None:
        await self._store.delete(self._key(key))

    async def delete_dir(self, prefix: str) -> None:
        await self._store.delete_dir(self._dir(prefix).rstrip("/"))

    async def is_empty(self, prefix: str) -> bool:
        async for _ in self._store.list_prefix(self._dir(prefix)):
            return False
        return True

    async def clear(self) -> None:
        await self.delete_dir("")

    async def getsize(self, key: str) -> int:
        return await self._store.getsize(self._key(key))

    async def list(self) -> AsyncIterator[str]:
        async for key in self._store.list_prefix(self._dir("")):
            yield self._strip(key)

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        async for key in self._store.list_prefix(f"{self.prefix}/{prefix.lstrip('/')}"):
            yield self._strip(key)

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        async for key in self._store.list_dir(self._dir(prefix).rstrip("/")):
            yield key

    # zarr >= 3.4 reads and writes chunks synchronously where the store can
    def get_sync(self, key: str, *, prototype: Any = None, byte_range: Any = None) -> Any:
        return self._store.get_sync(self._key(key), prototype=prototype, byte_range=byte_range)

    def set_sync(self, key: str, value: Any) -> None:
        self._store.set_sync(self._key(key), value)

    def delete_sync(self, key: str) -> None:
        self._store.delete_sync(self._key(key))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PrefixedStore) and self.prefix == other.prefix
                and self._store == other._store)

    def __hash__(self) -> int:
        return hash((id(self._store), self.prefix))

    def __str__(self) -> str:
        return f"{str(self._store).rstrip('/')}/{self.prefix}"

    def __repr__(self) -> str:
        return f"PrefixedStore({self})"


class ReadOnlyView(WrapperStore):
    """A store that cannot make a read-only copy of itself (a ZipStore opened with mode "a"),
    seen read-only: zarr opens arrays for reading through it."""

    @property
    def read_only(self) -> bool:
        return True

    def with_read_only(self, read_only: bool = False) -> Any:
        return self if read_only else self._store
