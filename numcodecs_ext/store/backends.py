"""The storage systems a :class:`~numcodecs_ext.store.storage.Location` can stand on.

A Location is a root and a display name over one backend; the backend does the I/O, on paths
it forms itself from the root and a key:

* :class:`LocalBackend`: a local disk through ``os`` (atomic writes by temporary file and
  rename, fsync, a walk that survives link loops and dangling links).
* :class:`FsspecBackend`: any fsspec filesystem (``s3://``, ``gs://``, ``az://``,
  ``memory://``, ``zip://``, ``https://`` ...): one request per object written, server-side
  copies where the filesystem offers them, concurrent reads of many objects.
* ``ZarrStoreBackend`` (in :mod:`numcodecs_ext.store.zarrstores`): any zarr store object
  (``MemoryStore``, ``ZipStore``, ``ObjectStore`` ...) through zarr's public Store API.

Backends raise what their library raises; the Location turns that into the tools' errors
(:func:`numcodecs_ext.store.faults.fault`), naming the location by its display form.
"""

from __future__ import annotations

import functools
import inspect
import os
import shutil
import stat
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from .base import Listing, attempt, join_slash, object_store_defaults, protocols, relative, run_sync

__all__ = ["Backend", "FsspecBackend", "LocalBackend"]


class Backend(Protocol):
    """What a Location needs from a storage system. ``path`` arguments are the backend's own
    paths (:meth:`join` of a root and a key)."""

    #: "local", "fsspec" or "zarr"
    kind: str
    #: the fsspec filesystem, None where there is none
    fs: Any

    def join(self, root: str, key: str) -> str: ...
    def identity(self) -> tuple[Any, ...]: ...
    def resolve(self, root: str) -> str: ...
    @property
    def shared(self) -> bool: ...
    def exists(self, path: str) -> bool: ...
    def isdir(self, path: str) -> bool: ...
    def isfile(self, path: str) -> bool: ...
    def size(self, path: str) -> int: ...
    def read(self, path: str) -> bytes: ...
    def read_many(self, paths: list[str]) -> dict[str, bytes | BaseException]: ...
    def walk(self, start: str, root: str) -> Listing: ...
    def write(self, path: str, data: bytes) -> None: ...
    def copy(self, src: str, dst: str) -> None: ...
    def copy_many(self, pairs: list[tuple[str, str]]) -> dict[str, BaseException]: ...
    def remove(self, path: str) -> None: ...
    def remove_tree(self, path: str) -> None: ...
    def flush(self) -> None: ...
    def zarr_store(self, root: str, *, read_only: bool) -> Any: ...


#: asynchronous filesystems for zarr's stores, one per (URL or class, options, event loop): an
#: instance's client session belongs to the loop it first ran on, so a new zarr loop (zarr makes
#: one again after ``zarr.core.sync.cleanup_resources``) needs new instances; fsspec's own
#: instance cache, keyed by thread, would hand back one bound to the closed loop ("Event loop is
#: closed"). Instances stay for the process, as in fsspec's cache.
_ZARR_ASYNC_FS: dict[tuple[Any, str, int], tuple[Any, Any, str]] = {}


def _zarr_async_fs(target: Any, options: Mapping[str, Any]) -> tuple[Any, str]:
    """``(filesystem, path)``: an asynchronous filesystem for ``target`` (a URL, or a
    filesystem class) bound to the event loop zarr runs its coroutines on."""
    import asyncio
    import json

    async def running() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    loop = run_sync(running())
    key = (target, json.dumps(options, sort_keys=True, default=repr), id(loop))
    hit = _ZARR_ASYNC_FS.get(key)
    if hit is None or hit[0] is not loop:
        fresh = {**options, "asynchronous": True, "skip_instance_cache": True}
        if isinstance(target, str):
            from fsspec import url_to_fs

            fs, path = url_to_fs(target, **fresh)
            if not getattr(fs, "async_impl", False):  # memory://, file:// ...: as zarr's from_url does
                from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

                fs = AsyncFileSystemWrapper(fs, asynchronous=True)
        else:
            fs, path = target(**fresh), ""
        hit = _ZARR_ASYNC_FS[key] = (loop, fs, path)
    return hit[1], hit[2]


# -- local disks ---------------------------------------------------------------------------------


class LocalBackend:
    """A local disk."""

    kind = "local"
    shared = True  # other processes on this machine see the same files

    def __init__(self) -> None:
        from fsspec.implementations.local import LocalFileSystem

        self.fs = LocalFileSystem()

    join = staticmethod(join_slash)

    def identity(self) -> tuple[Any, ...]:
        return ("file",)

    def resolve(self, root: str) -> str:
        return os.path.realpath(root)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def read(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def read_many(self, paths: list[str]) -> dict[str, bytes | BaseException]:
        out: dict[str, bytes | BaseException] = {}
        for path in paths:
            try:
                out[path] = self.read(path)
            except OSError as e:
                out[path] = e
        return out

    def walk(self, start: str, root: str) -> Listing:
        return _walk_local(Path(start), Path(root))

    def write(self, path: str, data: bytes) -> None:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.partial")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise

    def copy(self, src: str, dst: str) -> None:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = f"{dst}.{uuid.uuid4().hex[:12]}.partial"
        try:
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise

    def copy_many(self, pairs: list[tuple[str, str]]) -> dict[str, BaseException]:
        failed: dict[str, BaseException] = {}
        for src, dst in pairs:
            try:
                self.copy(src, dst)
            except OSError as e:
                failed[src] = e
        return failed

    def remove(self, path: str) -> None:
        if os.path.lexists(path):
            os.unlink(path)

    def remove_tree(self, path: str) -> None:
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)

    def flush(self) -> None:
        if hasattr(os, "sync"):
            os.sync()

    def zarr_store(self, root: str, *, read_only: bool) -> Any:
        from zarr.storage import LocalStore

        return LocalStore(root, read_only=read_only)

    def reduce(self) -> tuple[Any, ...]:
        return (LocalBackend, ())


def _walk_local(start: Path, root: Path) -> Listing:
    """os.walk following directory links, each directory once (a link loop ends), dangling
    links and unreadable directories reported, not raised."""
    listing = Listing()
    seen: set[tuple[int, int]] = set()
    if not start.exists():
        return listing

    def onerror(e: OSError) -> None:
        listing.problems.append((_rel(Path(e.filename or start), root), e.strerror or str(e)))

    for dirpath, dirnames, filenames in os.walk(start, followlinks=True, onerror=onerror):
        try:
            st = os.stat(dirpath)
        except OSError as e:
            listing.problems.append((_rel(Path(dirpath), root), e.strerror or str(e)))
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            listing.problems.append((_rel(Path(dirpath), root), "a link back into the store (a loop): skipped"))
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames.sort()
        prefix = _rel(Path(dirpath), root)  # (strings per file: pathlib costs more than the stat)
        prefix = "" if prefix == "." else prefix + "/"
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            try:
                info = os.stat(p)
            except OSError as e:
                why = "a dangling link" if os.path.islink(p) else (e.strerror or str(e))
                listing.problems.append((prefix + name, why))
                continue
            if stat.S_ISREG(info.st_mode):
                listing.files[prefix + name] = info.st_size
    return listing


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


# -- fsspec filesystems --------------------------------------------------------------------------


class FsspecBackend:
    """An fsspec filesystem; ``options`` (which may hold credentials, never displayed) rebuild
    it in another process."""

    kind = "fsspec"

    def __init__(self, fs: Any, options: Mapping[str, Any]) -> None:
        self.fs = fs
        self.options = dict(options)

    join = staticmethod(join_slash)

    @property
    def protocol(self) -> str:
        return protocols(self.fs)[0]

    @property
    def shared(self) -> bool:
        """Whether another process sees what this one writes (not fsspec's in-memory
        filesystem, which lives in one process)."""
        return "memory" not in protocols(self.fs)

    def identity(self) -> tuple[Any, ...]:
        """The filesystem's kind and endpoint: locations on different endpoints never share
        an object. Endpoints come from the options or, for S3, the standard variables."""
        names = protocols(self.fs)
        endpoint = _endpoint(self.fs, self.options)
        family = "s3" if {"s3", "s3a"} & set(names) else names[0]
        return (family, endpoint)

    def resolve(self, root: str) -> str:
        return self.fs._strip_protocol(root).rstrip("/") if root else root

    def _fresh(self, path: str) -> None:
        # Another writer (zarr's own FsspecStore holds a separate filesystem instance, other
        # processes) may have changed the listing since it was cached.
        invalidate = getattr(self.fs, "invalidate_cache", None)
        if invalidate is not None:
            invalidate(path)

    def exists(self, path: str) -> bool:
        self._fresh(path)
        return bool(self.fs.exists(path))

    def isdir(self, path: str) -> bool:
        self._fresh(path)
        return bool(self.fs.isdir(path))

    def isfile(self, path: str) -> bool:
        self._fresh(path)
        return bool(self.fs.isfile(path))

    def size(self, path: str) -> int:
        self._fresh(path)
        return int(self.fs.size(path))

    @functools.cached_property
    def _one_request(self) -> dict[str, Any]:
        """What makes ``cat_file`` one GET: s3fs >= 2025 first asks an object's size (a HEAD)
        to split large reads into concurrent ranges, unless ``max_concurrency`` is 1."""
        try:
            accepted = inspect.signature(self.fs.cat_file).parameters
        except (TypeError, ValueError):
            return {}
        return {"max_concurrency": 1} if "max_concurrency" in accepted else {}

    def read(self, path: str) -> bytes:
        return bytes(self.fs.cat_file(path, **self._one_request))

    def read_many(self, paths: list[str]) -> dict[str, bytes | BaseException]:
        if len(paths) < 2:
            return {p: attempt(self.read, p) for p in paths}
        if self._one_request and getattr(self.fs, "async_impl", False):
            return self._read_concurrent(paths)
        got = self.fs.cat(list(paths), on_error="return")
        out: dict[str, bytes | BaseException] = {}
        for path in paths:
            value = got.get(path, got.get(self.fs._strip_protocol(path)))
            if value is None:
                value = FileNotFoundError(2, "No such file or directory", path)
            out[path] = value if isinstance(value, BaseException) else bytes(value)
        return out

    def _read_concurrent(self, paths: list[str]) -> dict[str, bytes | BaseException]:
        """Concurrent single-GET reads on an async filesystem (``cat`` would HEAD each)."""
        import asyncio

        from fsspec.asyn import sync

        async def all_of() -> list[Any]:
            return await asyncio.gather(*(self.fs._cat_file(p, **self._one_request) for p in paths),
                                        return_exceptions=True)

        got = sync(self.fs.loop, all_of)
        return {p: (v if isinstance(v, BaseException) else bytes(v)) for p, v in zip(paths, got)}

    def walk(self, start: str, root: str) -> Listing:
        listing = Listing()
        self._fresh(start)
        try:
            found = self.fs.find(start, detail=True)
        except FileNotFoundError as e:
            if _names_bucket(e):
                raise
            return listing
        for path, info in found.items():
            if info.get("type", "file") != "file":
                continue
            rel = relative(path, self.resolve(root))
            if rel:
                size = info.get("size")
                listing.files[rel] = int(size or 0)
                if size is None:
                    listing.unsized.add(rel)
        return listing

    def write(self, path: str, data: bytes) -> None:
        self.fs.pipe_file(path, bytes(data))

    def copy(self, src: str, dst: str) -> None:
        self.fs.copy(src, dst)

    def copy_many(self, pairs: list[tuple[str, str]]) -> dict[str, BaseException]:
        if not pairs:
            return {}
        if not getattr(self.fs, "async_impl", False) or len(pairs) == 1:
            return {s: e for s, d in pairs if (e := attempt(self.copy, s, d)) is not None}
        return self._copy_objects(pairs)

    def _copy_objects(self, pairs: list[tuple[str, str]], concurrency: int = 64) -> dict[str, BaseException]:
        """Copy each pair with the filesystem's async ``_cp_file`` (fsspec's public async API:
        on S3 a HEAD and one CopyObject, no byte through this process), ``concurrency`` at a
        time. ``fs.copy`` with lists would first expand and list every source: more requests
        per chunk and a listing as large as the store."""
        import asyncio

        from fsspec.asyn import sync

        async def one(gate: asyncio.Semaphore, src: str, dst: str) -> BaseException | None:
            async with gate:
                try:
                    await self.fs._cp_file(src, dst)
                except Exception as e:  # noqa: BLE001 - per object, said the tools' way by the caller
                    return e
            return None

        async def all_of() -> list[BaseException | None]:
            gate = asyncio.Semaphore(concurrency)
            return await asyncio.gather(*(one(gate, s, d) for s, d in pairs))

        got = sync(self.fs.loop, all_of)
        return {s: e for (s, _), e in zip(pairs, got) if e is not None}

    def remove(self, path: str) -> None:
        try:
            self.fs.rm_file(path)
        except FileNotFoundError as e:
            if _names_bucket(e):
                raise

    def remove_tree(self, path: str) -> None:
        self._fresh(path)
        try:
            if self.fs.exists(path):
                self.fs.rm(path, recursive=True)
        except FileNotFoundError as e:
            if _names_bucket(e):
                raise

    def flush(self) -> None:
        """Nothing is buffered once a request returned."""

    def zarr_store(self, root: str, *, read_only: bool, url: str | None = None) -> Any:
        from zarr.storage import FsspecStore

        if url is not None:
            options = object_store_defaults(self.protocol, self.options)
            fs, path = _zarr_async_fs(url, options)
            return FsspecStore(fs, path=path, read_only=read_only)
        fs = self.fs
        if not getattr(fs, "async_impl", False):
            from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

            fs = AsyncFileSystemWrapper(fs, asynchronous=True)
        else:
            fs = _zarr_async_fs(type(fs), dict(self.options))[0]
        return FsspecStore(fs, path=root, read_only=read_only)

    def reduce(self) -> tuple[Any, ...]:
        # the filesystem pickles as its class and arguments (fsspec's own convention)
        return (FsspecBackend, (self.fs, self.options))


def _names_bucket(e: BaseException) -> bool:
    """Whether a FileNotFoundError is about the bucket/container rather than an object."""
    text = str(e).lower()
    return "bucket" in text or "container" in text


def _endpoint(fs: Any, options: Mapping[str, Any]) -> str | None:
    client_kwargs = options.get("client_kwargs") or {}
    for value in (options.get("endpoint_url"), client_kwargs.get("endpoint_url"),
                  getattr(fs, "endpoint_url", None),
                  (getattr(fs, "client_kwargs", None) or {}).get("endpoint_url")):
        if value:
            return str(value).rstrip("/")
    if {"s3", "s3a"} & set(protocols(fs)):
        value = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        return value.rstrip("/") if value else None
    for key in ("account_name", "project", "host"):
        if options.get(key):
            return str(options[key])
    return None
