"""Where a tool reads and writes: a local path, an fsspec URL or a zarr store object, as one
:class:`Location`.

Every store tool (``convert``, ``migrate``, ``normalize``, ``suggest``, ``inspect``) does its I/O
through a Location, so that what it promises holds wherever the data lives:

* ``write`` replaces an object whole: on a local disk through a temporary file and an atomic
  rename (an interrupted write leaves the old object or none, never half of one); on object
  stores one PUT, which is atomic there.
* ``flush`` makes what was written durable before the metadata that claims it is written.
* ``walk`` lists every object with its size; on a local disk it follows directory links once,
  so a link loop cannot make it run forever, and reports dangling links instead of failing.
* ``copy_to`` copies server-side where both ends are one filesystem (S3 ``CopyObject``).
* ``overlaps`` says whether two locations share any object, links resolved, so that a tool
  can refuse to write into its own source.

Credentials come from the usual places (``AWS_*`` variables, fsspec's configuration) or
``storage_options``; they never appear in :attr:`Location.display` or in an error message.

Examples
--------
>>> import tempfile
>>> loc = Location.parse(tempfile.mkdtemp())
>>> loc.write("a/zarr.json", b"{}")
>>> loc.read("a/zarr.json"), sorted(loc.walk().files)
(b'{}', ['a/zarr.json'])
>>> loc.child("a").overlaps(loc), Location.parse("memory://elsewhere").overlaps(loc)
(True, False)
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import UsageError

__all__ = ["Listing", "Location"]

_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
             "abfss": "adlfs", "adl": "adlfs", "http": "aiohttp and requests", "https": "aiohttp and requests"}


def _strip_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part."""
    return re.sub(r"(?<=://)[^/@]*@", "", url)


@dataclass
class Listing:
    """Every object under a location: ``{relative key: size}``, and what could not be listed."""

    files: dict[str, int] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, eq=False)
class Location:
    """A place in a filesystem (``fs``, an fsspec filesystem) at ``root``; ``display`` is how
    messages name it (credentials removed)."""

    fs: Any
    root: str
    display: str
    url: str
    storage_options: Mapping[str, Any] = field(default_factory=dict, repr=False)

    # -- making one ---------------------------------------------------------------------------

    @classmethod
    def parse(cls, target: Any, *, storage_options: Mapping[str, Any] | None = None) -> Location:
        """A Location for ``target``: a local path, an fsspec URL (``s3://``, ``gs://``,
        ``az://``, ``memory://``, ``https://`` ...), a zarr ``LocalStore``/``FsspecStore``, or a
        Location. UsageError names an unknown scheme or the package a scheme needs."""
        if isinstance(target, Location):
            return target
        options = dict(storage_options or {})
        if isinstance(target, str) and not target.strip():
            raise UsageError("an empty path: give the path or URL of a store or file")
        store = _from_zarr_store(target)
        if store is not None:
            return store
        if isinstance(target, os.PathLike) or (isinstance(target, str) and "://" not in target
                                                and "::" not in target):
            from fsspec.implementations.local import LocalFileSystem

            path = os.path.abspath(os.path.expanduser(os.fspath(target)))
            return cls(LocalFileSystem(), path, os.fspath(target), path, options)
        if not isinstance(target, str):
            raise UsageError(f"{type(target).__name__} is not a path, URL or zarr store")
        display = _strip_credentials(target)
        scheme = target.split("://", 1)[0].split("::")[-1].lower()
        try:
            from fsspec.core import url_to_fs

            fs, root = url_to_fs(target, **options)
        except ImportError as e:
            package = _PACKAGES.get(scheme) or getattr(e, "name", None)
            if package:
                raise UsageError(f"{display}: {scheme}:// URLs need {package} "
                                 f"(pip install {package.split(' and ')[0]}): {e}") from None
            raise UsageError(f"{display}: {scheme}:// URLs need a package that is not installed: {e}") from None
        except ValueError as e:
            if "Protocol not known" in str(e):
                raise UsageError(f"{display}: unknown URL scheme {scheme!r}; use a local path or an "
                                 "fsspec URL such as s3://, gs://, az://, memory://") from None
            raise UsageError(f"{display}: {e}") from None
        except FileNotFoundError as e:
            raise UsageError(f"{display}: {e.strerror or 'no such file'}"
                             + (f": {e.filename}" if e.filename else "")) from None
        except OSError as e:
            raise UsageError(f"{display}: {e}") from None
        except Exception as e:  # noqa: BLE001 - fsspec backends raise anything on a URL they cannot take
            raise UsageError(f"{display}: not a usable URL ({type(e).__name__}: {e})") from None
        return cls(fs, root.rstrip("/") or root, display, target, options)

    def child(self, key: str) -> Location:
        """The location ``key`` below this one."""
        key = key.strip("/")
        if not key:
            return self
        return Location(self.fs, self._path(key), f"{self.display.rstrip('/')}/{key}",
                        f"{self.url.rstrip('/')}/{key}", self.storage_options)

    # -- facts --------------------------------------------------------------------------------

    @property
    def is_local(self) -> bool:
        return "file" in _protocols(self.fs)

    def _path(self, key: str = "") -> str:
        key = key.strip("/")
        if not key:
            return self.root
        return f"{self.root.rstrip('/')}/{key}" if self.root not in ("", "/") else f"{self.root}{key}"

    def exists(self, key: str = "") -> bool:
        return bool(self.fs.exists(self._path(key)))

    def isdir(self, key: str = "") -> bool:
        return bool(self.fs.isdir(self._path(key)))

    def isfile(self, key: str = "") -> bool:
        return bool(self.fs.isfile(self._path(key)))

    def size(self, key: str) -> int:
        return int(self.fs.size(self._path(key)))

    def resolved(self) -> str:
        """The root with links resolved (local), to compare locations."""
        return os.path.realpath(self.root) if self.is_local else self.root.rstrip("/")

    def overlaps(self, other: Location) -> bool:
        """Whether one location lies within the other (or they are the same), links resolved."""
        if _protocols(self.fs) != _protocols(other.fs):
            return False
        a, b = self.resolved().rstrip("/") + "/", other.resolved().rstrip("/") + "/"
        return a.startswith(b) or b.startswith(a)

    # -- reading ------------------------------------------------------------------------------

    def read(self, key: str) -> bytes:
        return bytes(self.fs.cat_file(self._path(key)))

    def walk(self, key: str = "") -> Listing:
        """Every object below ``key`` with its size, keys relative to this location."""
        if self.is_local:
            return _walk_local(Path(self._path(key)), Path(self.root))
        listing = Listing()
        base = self.root.rstrip("/")
        try:
            found = self.fs.find(self._path(key), detail=True)
        except FileNotFoundError:
            return listing
        for path, info in found.items():
            if info.get("type", "file") != "file":
                continue
            rel = path[len(base):].lstrip("/") if path.startswith(base) else path
            listing.files[rel] = int(info.get("size") or 0)
        return listing

    # -- writing ------------------------------------------------------------------------------

    def write(self, key: str, data: bytes) -> None:
        """Put ``data`` at ``key`` whole: the object is replaced atomically (a local temporary
        file renamed over it; one PUT on object stores)."""
        path = self._path(key)
        if not self.is_local:
            self.fs.pipe_file(path, bytes(data))
            return
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

    def copy_to(self, key: str, other: Location, other_key: str) -> None:
        """Copy the object ``key`` to ``other_key`` of ``other``, whole (as :meth:`write`):
        server-side where both are one filesystem, else through this process."""
        if self.is_local and other.is_local:
            target = other._path(other_key)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            tmp = f"{target}.{uuid.uuid4().hex[:12]}.partial"
            try:
                shutil.copyfile(self._path(key), tmp)
                os.replace(tmp, target)
            except BaseException:
                if os.path.lexists(tmp):
                    os.unlink(tmp)
                raise
        elif self.fs is other.fs:
            self.fs.copy(self._path(key), other._path(other_key))
        else:
            other.write(other_key, self.read(key))

    def remove(self, key: str) -> None:
        path = self._path(key)
        if self.fs.exists(path):
            self.fs.rm_file(path)

    def flush(self) -> None:
        """Make everything written so far durable before metadata claims it (local disks: the
        kernel's buffers to disk; an object store has nothing buffered once a PUT returned)."""
        if self.is_local and hasattr(os, "sync"):
            os.sync()

    # -- zarr ---------------------------------------------------------------------------------

    def zarr_store(self, *, read_only: bool = True) -> Any:
        """A zarr store over this location (zarr's LocalStore or FsspecStore)."""
        from zarr.storage import FsspecStore, LocalStore

        if self.is_local:
            return LocalStore(self.root, read_only=read_only)
        return FsspecStore.from_url(self.url, storage_options=dict(self.storage_options) or None,
                                    read_only=read_only)

    def __str__(self) -> str:
        return self.display


def _protocols(fs: Any) -> tuple[str, ...]:
    protocol = fs.protocol
    return tuple(protocol) if isinstance(protocol, (tuple, list)) else (protocol,)


def _from_zarr_store(target: Any) -> Location | None:
    """A Location for zarr's LocalStore or FsspecStore, None for anything else; other store
    objects are refused with what to pass instead."""
    try:
        from zarr.abc.store import Store
        from zarr.storage import FsspecStore, LocalStore
    except ImportError:  # pragma: no cover - zarr is a dependency
        return None
    if not isinstance(target, Store):
        return None
    if isinstance(target, LocalStore):
        return Location.parse(str(target.root))
    if isinstance(target, FsspecStore):
        import fsspec

        options = dict(getattr(target.fs, "storage_options", {}) or {})
        options.pop("asynchronous", None)
        protocol = _protocols(target.fs)[0]
        fs = fsspec.filesystem(protocol, **options)
        path = target.path.rstrip("/")
        url = f"{protocol}://{path.lstrip('/')}" if protocol != "memory" else f"memory://{path}"
        return Location(fs, path, _strip_credentials(url), url, options)
    raise UsageError(f"a {type(target).__name__} cannot be used here: pass a local path, an fsspec "
                     "URL, or a zarr LocalStore/FsspecStore")


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
