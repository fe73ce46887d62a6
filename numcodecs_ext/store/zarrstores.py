"""The backend of a Location over a zarr store object (``MemoryStore``, ``ZipStore``,
``ObjectStore`` ...), through zarr's public asynchronous Store API."""

from __future__ import annotations

import contextlib
import functools
import os
import re
from typing import Any

from .base import UNKNOWN, Listing, attempt, relative, run_sync

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

    def identity(self) -> tuple[Any, ...] | None:
        """(family, place): a store of the family "file" (a ZipStore, obstore's LocalStore) or
        "s3" (obstore's S3Store) is compared with local paths and s3:// URLs; a place of
        :data:`UNKNOWN` (an endpoint that cannot be read) overlaps whatever its path may
        overlap. None when the tools cannot tell where the store keeps its objects."""
        return self._place[0]

    def resolve(self, root: str) -> str:
        base, key = self._place[1], root.strip("/")
        return f"{base.rstrip('/')}/{key}" if key else base

    @functools.cached_property
    def _place(self) -> tuple[tuple[Any, ...] | None, str]:
        from zarr.storage import MemoryStore, ZipStore

        store = _unwrapped(self.store)
        if isinstance(store, ZipStore):
            return ("file",), os.path.realpath(store.path)
        if isinstance(store, MemoryStore):
            # read-only views of a MemoryStore share its dict: they overlap
            return ("zarr-memory", id(getattr(store, "_store_dict", store))), "/"
        inner = getattr(store, "store", None) if type(store).__name__ == "ObjectStore" else None
        if inner is None:
            return None, "/"
        kind = type(inner).__name__
        prefix = getattr(inner, "prefix", None)  # obstore's documented accessor
        if kind == "LocalStore":
            return ("file",), os.path.realpath(os.fspath(prefix)) if prefix is not None else "/"
        if kind == "MemoryStore":
            return ("obstore-memory", id(inner)), "/"
        if kind == "HTTPStore":  # read-only, and never a local path or a bucket
            return ("http", UNKNOWN), "/"
        family = {"S3Store": "s3", "GCSStore": "gs", "AzureStore": "abfs"}.get(kind)
        if family is None:
            return None, "/"
        config = _config(inner)
        bucket = (config or {}).get("bucket") or (config or {}).get("container_name") or _repr_bucket(inner)
        if not bucket:
            return None, "/"
        endpoint: Any = UNKNOWN
        if config is not None:
            endpoint = config.get("endpoint") or config.get("aws_endpoint")
            if family == "s3" and not endpoint:
                endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            endpoint = endpoint.rstrip("/") if endpoint else None
            if family != "s3":
                endpoint = UNKNOWN  # gcsfs/adlfs name their endpoints otherwise: not comparable
        path = f"{bucket}/{str(prefix or '').strip('/')}".rstrip("/")
        return (family, endpoint), path

    def _run(self, coro: Any) -> Any:
        async def opened() -> Any:
            # a store is opened before use, as zarr opens it (ZipStore reads its directory then)
            ensure_open = getattr(self.store, "_ensure_open", None)
            if ensure_open is not None and not getattr(self.store, "_is_open", True):
                await ensure_open()
            return await coro

        return run_sync(opened())

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
            rel = relative(key, base)
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
        return {s: e for s, d in pairs if (e := attempt(self.copy, s, d)) is not None}

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
            try:
                store = store.with_read_only(True)
            except NotImplementedError:  # a ZipStore opened for appending: seen read-only
                from .prefixed import ReadOnlyView

                store = ReadOnlyView(store)
        if root.strip("/"):
            from .prefixed import PrefixedStore

            return PrefixedStore(store, root.strip("/"))
        return store

    def reduce(self) -> tuple[Any, ...]:
        # a MemoryStore arrives as a copy: not shared (see ``shared``)
        return (ZarrStoreBackend, (self.store,))


def _unwrapped(store: Any) -> Any:
    """The store a zarr WrapperStore (LoggingStore ...) wraps, all the way down."""
    try:
        from zarr.storage import WrapperStore
    except ImportError:  # pragma: no cover - older zarr
        return store
    while isinstance(store, WrapperStore):
        store = store._store  # zarr keeps it there, with no public accessor
    return store


def _config(inner: Any) -> dict[str, Any] | None:
    """obstore's ``config`` of a store, or None where obstore cannot give it: obstore 0.12
    panics on some configurations (``allow_http=True`` given as a keyword), and Rust prints the
    panic and its backtrace on stderr, which is silenced here (the tools say what they do)."""
    import sys

    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to protect
        saved = None
    try:
        if saved is not None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            os.close(devnull)
        return dict(inner.config)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 - pyo3's PanicException is a BaseException
        return None
    finally:
        if saved is not None:
            os.dup2(saved, 2)
            os.close(saved)


def _repr_bucket(inner: Any) -> str | None:
    """The bucket that obstore's repr names (``S3Store(bucket="b", prefix="p")``), read when
    its ``config`` cannot be."""
    m = re.search(r'(?:bucket|container(?:_name)?)="([^"]+)"', repr(inner))
    return m[1] if m else None

