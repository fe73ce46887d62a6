"""The backend of a Location over a zarr store object (``MemoryStore``, ``ZipStore``,
``ObjectStore`` ...), through zarr's public asynchronous Store API."""

from __future__ import annotations

import os
from typing import Any

from .backends import Listing, _attempt, _relative

__all__ = ["ZarrStoreBackend"]


class ZarrStoreBackend:
    """A zarr store object, through zarr's public asynchronous Store API (run on zarr's own
    event loop, where stores that hold a client, such as an aiohttp session, are bound)."""

    kind = "zarr"
    fs = None

    def __init__(self, store: Any) -> None:
        self.store = store

    @staticmethod
    def join(root: str, key: str) -> str:
        key = key.strip("/")
        root = root.strip("/")
        return f"{root}/{key}" if root and key else (root or key)

    @property
    def shared(self) -> bool:
        from zarr.storage import MemoryStore

        return not isinstance(self.store, MemoryStore)

    def identity(self) -> tuple[Any, ...]:
        from zarr.storage import MemoryStore, ZipStore

        store = self.store
        if isinstance(store, ZipStore):
            return ("zip", os.path.realpath(store.path))
        if isinstance(store, MemoryStore):
            # read-only views of a MemoryStore share its dict: they overlap
            return ("zarr-memory", id(getattr(store, "_store_dict", store)))
        s3 = self._s3()
        if s3 is not None:
            return ("s3", s3[0])
        return ("zarr", type(store).__name__, id(getattr(store, "store", store)))

    def _s3(self) -> tuple[str | None, str] | None:
        """(endpoint, "bucket/prefix") of a zarr ObjectStore over obstore's S3Store, so that it
        and an s3:// URL of the same bucket are known to overlap; None for anything else."""
        inner = getattr(self.store, "store", None)
        if type(inner).__name__ != "S3Store":
            return None
        try:
            config = dict(inner.config)
        except BaseException:  # noqa: BLE001 - obstore can panic reading some configurations
            return None
        bucket = config.get("bucket") or config.get("aws_bucket")
        if not bucket:
            return None
        endpoint = (config.get("endpoint") or config.get("aws_endpoint")
                    or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"))
        prefix = str(getattr(inner, "prefix", "") or "").strip("/")
        return (endpoint.rstrip("/") if endpoint else None, f"{bucket}/{prefix}".rstrip("/"))

    def resolve(self, root: str) -> str:
        s3 = self._s3()
        if s3 is not None:
            return f"{s3[1]}/{root.strip('/')}".rstrip("/")
        return "/" + root.strip("/")

    def _run(self, coro: Any) -> Any:
        async def opened() -> Any:
            # a store is opened before use, as zarr opens it (ZipStore reads its directory then)
            ensure_open = getattr(self.store, "_ensure_open", None)
            if ensure_open is not None and not getattr(self.store, "_is_open", True):
                await ensure_open()
            return await coro

        return _sync(opened())

    def _prefix(self, path: str) -> str:
        return f"{path}/" if path else ""

    def exists(self, path: str) -> bool:
        return self.isfile(path) or self.isdir(path)

    def isfile(self, path: str) -> bool:
        return bool(path) and bool(self._run(self.store.exists(path)))

    def isdir(self, path: str) -> bool:
        async def any_key() -> bool:
            async for _ in self.store.list_prefix(self._prefix(path)):
                return True
            return False

        return bool(self._run(any_key()))

    def size(self, path: str) -> int:
        return int(self._run(self.store.getsize(path)))

    async def _get(self, path: str) -> bytes:
        from zarr.buffer import default_buffer_prototype

        value = await self.store.get(path, prototype=default_buffer_prototype())
        if value is None:
            raise FileNotFoundError(2, "No such object", path)
        return value.to_bytes()

    def read(self, path: str) -> bytes:
        return self._run(self._get(path))

    def read_many(self, paths: list[str]) -> dict[str, bytes | BaseException]:
        import asyncio

        async def all_of() -> list[Any]:
            return await asyncio.gather(*(self._get(p) for p in paths), return_exceptions=True)

        return dict(zip(paths, self._run(all_of())))

    def walk(self, start: str, root: str) -> Listing:
        import asyncio

        async def listed() -> dict[str, int]:
            keys = [k async for k in self.store.list_prefix(self._prefix(start))]
            sizes = await asyncio.gather(*(self.store.getsize(k) for k in keys),
                                         return_exceptions=True)
            # a key that vanished between the listing and its size is not listed
            return {k: int(s) for k, s in zip(keys, sizes) if not isinstance(s, BaseException)}

        listing = Listing()
        base = root.strip("/")
        for key, size in sorted(self._run(listed()).items()):
            rel = _relative(key, base)
            if rel:
                listing.files[rel] = size
        return listing

    def write(self, path: str, data: bytes) -> None:
        from zarr.buffer import default_buffer_prototype

        self._run(self.store.set(path, default_buffer_prototype().buffer.from_bytes(bytes(data))))

    def copy(self, src: str, dst: str) -> None:
        inner = getattr(self.store, "store", None)
        if type(self.store).__name__ == "ObjectStore" and hasattr(inner, "copy"):
            inner.copy(src, dst)  # server-side (obstore: S3 CopyObject, GCS/Azure copy)
            return
        self.write(dst, self.read(src))

    def copy_many(self, pairs: list[tuple[str, str]]) -> dict[str, BaseException]:
        return {s: e for s, d in pairs if (e := _attempt(self.copy, s, d)) is not None}

    def remove(self, path: str) -> None:
        if self._run(self.store.exists(path)):
            self._run(self.store.delete(path))

    def remove_tree(self, path: str) -> None:
        self.remove(path)
        self._run(self.store.delete_dir(path))

    def flush(self) -> None:
        """A zarr store has written what ``set`` returned from."""

    def zarr_store(self, root: str, *, read_only: bool) -> Any:
        store = self.store
        if store.read_only != read_only:
            if not read_only:
                from .errors import UsageError

                raise UsageError(f"{store}: this store was opened read-only; pass a writable one")
            store = store.with_read_only(True)
        if root.strip("/"):
            from .prefixed import PrefixedStore

            return PrefixedStore(store, root.strip("/"))
        return store

    def reduce(self) -> tuple[Any, ...]:
        # a MemoryStore arrives as a copy: not shared (see ``shared``)
        return (ZarrStoreBackend, (self.store,))


def _sync(coro: Any) -> Any:
    """Run ``coro`` to its end from synchronous code, on zarr's event loop (the loop zarr's own
    synchronous API uses, so that a store bound to it keeps working)."""
    try:
        from zarr.core.sync import sync
    except ImportError:  # pragma: no cover - a zarr without it: a loop of our own
        import asyncio

        return asyncio.run(coro)
    return sync(coro)
