"""Where a tool reads and writes: a local path, an fsspec URL or a zarr store object, as one
:class:`Location`.

Every store tool (``convert``, ``migrate``, ``normalize``, ``suggest``, ``inspect``) does its I/O
through a Location, so that what it promises holds wherever the data lives:

* ``write`` replaces an object whole: on a local disk through a temporary file and an atomic
  rename (an interrupted write leaves the old object or none, never half of one); on object
  stores one PUT (or one completed multipart upload), which is atomic there.
* ``flush`` makes what was written durable before the metadata that claims it is written.
* ``walk`` lists every object with its size; on a local disk it follows directory links once,
  so a link loop cannot make it run forever, and reports dangling links instead of failing.
  On object stores a location is a prefix (there are no directories): ``isdir`` says whether
  any object lies below it.
* ``copy_to`` / ``copy_many`` copy server-side where both ends are one filesystem (S3
  ``CopyObject``: no byte passes through this process).
* ``overlaps`` says whether two locations share any object (links resolved; different
  endpoints never overlap), so that a tool can refuse to write into its own source.

The backends (local disk, any fsspec filesystem, any zarr store object) are in
:mod:`numcodecs_ext.store.backends` and :mod:`numcodecs_ext.store.zarrstores`; what a target
names is told by :mod:`numcodecs_ext.store.targets`, storage options are checked by
:mod:`numcodecs_ext.store.options`.

Credentials come from the usual places (the ``AWS_*`` variables including
``AWS_ENDPOINT_URL``, which botocore reads for s3fs; fsspec's configuration) or
``storage_options`` (the CLI's ``--storage-options JSON``). They never appear in
:attr:`Location.display`, ``repr``, ``str`` or an error message: what fails is said as a
:class:`StorageError` (exit status 1) or, for a bucket that does not exist or access that is
denied, a :class:`StoreNotFound` / :class:`AccessDenied` (usage errors, exit status 2), each
naming the location by its display form. Timeouts and retries are the client's (botocore
retries a refused connection a few times, for seconds, then fails); ``storage_options`` can
change them (``{"config_kwargs": {"connect_timeout": 5, "retries": {"max_attempts": 2}}}``).

Examples
--------
>>> import tempfile
>>> loc = Location.parse(tempfile.mkdtemp())
>>> loc.write("a/zarr.json", b"{}")
>>> loc.read("a/zarr.json"), sorted(loc.walk().files)
(b'{}', ['a/zarr.json'])
>>> loc.child("a").overlaps(loc), Location.parse("memory://elsewhere").overlaps(loc)
(True, False)
>>> Location.parse("https://user:secret@example.org/data.zarr?sig=abc&v=2")
Location('https://example.org/data.zarr?sig=***&v=2')
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .base import UNKNOWN, Listing
from .errors import UsageError
from .faults import (
    AccessDenied,
    ObjectNotFound,
    StorageError,
    StoreNotFound,
    Unreachable,
    fault,
    option_secrets,
    redact,
    url_secrets,
)
from .options import check_storage_options, parse_storage_options
from .targets import WRITABLE, open_target, split_store_path

__all__ = [
    "AccessDenied",
    "Listing",
    "Location",
    "ObjectNotFound",
    "StorageError",
    "StoreNotFound",
    "Unreachable",
    "fault",
    "check_storage_options",
    "parse_storage_options",
    "redact",
]

# -- storage options (parsed and checked in numcodecs_ext.store.options) -------------------------


# -- locations -------------------------------------------------------------------------------------


class Location:
    """A place in a storage backend, at ``root``; ``display`` is how messages name it
    (credentials removed).

    Make one with :meth:`parse`. ``root`` is the backend's own path: an absolute path on a
    local disk, ``bucket/prefix`` for object stores, a key prefix in a zarr store object.
    """

    __slots__ = ("_backend", "_hidden", "_url", "display", "read_only", "root")

    def __init__(self, backend: Any, root: str, display: str, url: str | None = None,
                 read_only: str | None = None) -> None:
        self._backend = backend
        self.root = root
        self._url = url
        #: why nothing may be written here (a store object opened with ``read_only=True``, a
        #: read-only filesystem), or None
        self.read_only = read_only
        #: every credential this location knows of, removed from whatever it says
        self._hidden = tuple(option_secrets(getattr(backend, "options", None)) + url_secrets(url))
        self.display = redact(display, secrets=self._hidden)

    # -- making one ---------------------------------------------------------------------------

    @classmethod
    def parse(cls, target: Any, *, storage_options: Mapping[str, Any] | None = None) -> Location:
        """A Location for ``target``: a local path, an fsspec URL (``s3://``, ``gs://``,
        ``az://``, ``memory://``, ``zip://``, ``https://`` ...), a zarr store object (any:
        ``LocalStore``, ``FsspecStore``, ``MemoryStore``, ``ZipStore``, ``ObjectStore`` ...),
        ``StorePath``, zarr Group or Array (the store path it was opened on), or a Location.
        UsageError names an unknown scheme or the package a scheme needs."""
        if isinstance(target, Location):
            return target
        if isinstance(target, str) and not target.strip():
            raise UsageError("an empty path: give the path or URL of a store or file")
        store_path = split_store_path(target)
        if store_path is not None:
            base = cls.parse(store_path[0])
            return base.child(store_path[1]) if store_path[1] else base
        wrapped = getattr(target, "location", None)  # a store over a Location (staging's LocationStore)
        if isinstance(wrapped, Location) and not isinstance(target, (str, os.PathLike)):
            return wrapped
        return cls(*open_target(target, storage_options))

    def child(self, key: str) -> Location:
        """The location ``key`` below this one."""
        key = key.strip("/")
        if not key:
            return self
        url = f"{self._url.rstrip('/')}/{key}" if self._url is not None else None
        return Location(self._backend, self._backend.join(self.root, key),
                        f"{self.display.rstrip('/')}/{key}", url, self.read_only)

    def refuse_writes(self, what: str) -> None:
        """UsageError, before anything is written, if this location is read-only: ``what``
        says what would have been written (e.g. "migrate --in-place adds zarr.json there")."""
        if self.read_only is None:
            return
        raise UsageError(f"{self.display}: {self.read_only}, and {what}; nothing was written. "
                         + WRITABLE.get(self.read_only, "Give a writable store"))

    @property
    def removes(self) -> bool:
        """Whether objects can be removed here (a zarr ZipStore cannot: ``supports_deletes``)."""
        return bool(getattr(getattr(self._backend, "store", None), "supports_deletes", True))

    def _no_writes(self, what: str) -> None:
        """StorageError if this location is read-only (what every tool checks before it
        writes, with :meth:`refuse_writes`: this is the net under those checks)."""
        if self.read_only is not None:
            raise StorageError(f"{self.display}: {self.read_only}, so {what} was refused. "
                               + WRITABLE.get(self.read_only, "Give a writable store"))

    # -- facts --------------------------------------------------------------------------------

    @property
    def fs(self) -> Any:
        """The fsspec filesystem (None for a zarr store object)."""
        return self._backend.fs

    @property
    def url(self) -> str:
        """A URL or path that opens this location again (it may hold credentials: never show
        it; :attr:`display` is for messages)."""
        if self._url is not None:
            return self._url
        return self.root if self.is_local else self.display

    @property
    def storage_options(self) -> dict[str, Any]:
        return dict(getattr(self._backend, "options", {}))

    @property
    def identity(self) -> tuple[Any, ...]:
        """Equal for two Locations that name the same objects the same way (same kind, URL,
        root and storage options; a zarr store object: the same place where the tools can tell
        it, endpoint included, else that very object), in this process or after pickling (a
        store object whose place is unknown: within one pickle)."""
        where: tuple[Any, ...] = (self.kind, self.url, self.root,
                                  json.dumps(self.storage_options, sort_keys=True, default=str))
        if not self.is_shared:
            return (where, id(self._backend))
        if self.kind == "zarr":
            # a store object's text does not name its endpoint (obstore's S3Store shows bucket
            # and prefix only): two stores on two services would pass for one
            place = self._backend.identity()
            if place is None or UNKNOWN in place:
                return (where, id(self._backend.store))
            return (where, place, self.resolved())
        return where

    @property
    def kind(self) -> str:
        """"local", "fsspec" or "zarr" (a zarr store object)."""
        return self._backend.kind

    @property
    def is_local(self) -> bool:
        return self._backend.kind == "local"

    @property
    def is_shared(self) -> bool:
        """Whether other processes (dask workers) see what is written here: not for in-memory
        stores, which live in one process."""
        return bool(self._backend.shared)

    def _path(self, key: str = "") -> str:
        return self._backend.join(self.root, key)

    def _where(self, key: str = "") -> str:
        key = key.strip("/")
        return f"{self.display.rstrip('/')}/{key}" if key else self.display

    def fault(self, e: BaseException, key: str = "", action: str = "access") -> BaseException:
        """The tools' error (:func:`fault`) for ``e``, raised by a storage library while
        ``action`` on ``key`` of this location: its display form, no credential."""
        return fault(e, self._where(key), action, options=self.storage_options,
                     secrets=self._hidden, bucket=self._bucket())

    @contextlib.contextmanager
    def _faults(self, action: str, key: str = "") -> Iterator[None]:
        try:
            yield
        except Exception as e:  # noqa: BLE001 - every backend's errors, said the tools' way
            raise self.fault(e, key, action) from None

    def _bucket(self) -> str | None:
        if self.kind != "fsspec" or self.root.startswith("/"):
            return None
        return self._backend.resolve(self.root).split("/", 1)[0] or None

    def exists(self, key: str = "") -> bool:
        """Whether an object or, on object stores, any object below the prefix, is there."""
        with self._faults("check", key):
            return self._backend.exists(self._path(key))

    def isdir(self, key: str = "") -> bool:
        """A directory; on object stores a prefix with objects below it."""
        with self._faults("check", key):
            return self._backend.isdir(self._path(key))

    def isfile(self, key: str = "") -> bool:
        with self._faults("check", key):
            return self._backend.isfile(self._path(key))

    def size(self, key: str) -> int:
        with self._faults("find the size of", key):
            return self._backend.size(self._path(key))

    def resolved(self) -> str:
        """The root with links resolved (local), to compare locations."""
        return self._backend.resolve(self.root)

    def obstacle(self) -> str | None:
        """For a location about to be created: a file standing where one of the directories on
        its path must be (local disks; object stores have no directories), or None."""
        if not self.is_local:
            return None
        parent = os.path.dirname(self.root)
        while parent and not os.path.lexists(parent):
            parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
        return parent if parent and not os.path.isdir(parent) else None

    def overlaps(self, other: Location) -> bool:
        """Whether one location lies within the other (or they are the same), links resolved.
        Locations of different kinds of storage (a local disk, a bucket, a store in memory) or on
        different endpoints never overlap.

        UsageError where that cannot be told: a zarr store object whose place the tools cannot
        know (a store class of its own, a wrapper they cannot see through), or an object store
        whose endpoint cannot be read, at a path that may overlap. A tool never assumes that a
        place it cannot know lies elsewhere; the message says to give a path or URL instead.
        """
        mine, theirs = self._backend.identity(), other._backend.identity()
        if mine is None or theirs is None:
            if not _same_store(self._backend, other._backend):
                unknown = self if mine is None else other
                raise UsageError(self._cannot_tell(other, f"{unknown.display} is a store object whose "
                                                          "place the tools cannot know"))
        elif mine[0] != theirs[0]:
            return False
        a, b = self.resolved().rstrip("/") + "/", other.resolved().rstrip("/") + "/"
        if not (a.startswith(b) or b.startswith(a)):
            return False
        if mine == theirs:
            return True
        if UNKNOWN in (mine or ()) or UNKNOWN in (theirs or ()):
            raise UsageError(self._cannot_tell(other, "the endpoint of one of them cannot be read"))
        return False

    def _cannot_tell(self, other: Location, why: str) -> str:
        return (f"cannot tell whether {self.display} overlaps {other.display} ({why}); give the store "
                "as a path or URL instead (e.g. /data/out.zarr or s3://bucket/prefix, with "
                "--storage-options or the AWS_* variables for its endpoint and credentials)")

    # -- reading ------------------------------------------------------------------------------

    def read(self, key: str) -> bytes:
        """The object ``key`` whole (ObjectNotFound if it is not there)."""
        with self._faults("read", key):
            return self._backend.read(self._path(key))

    def read_many(self, keys: Sequence[str]) -> dict[str, bytes | StorageError | UsageError]:
        """``{key: bytes}`` for many objects at once (concurrent requests on object stores);
        an object that cannot be read maps to its error (ObjectNotFound ...), not raised."""
        paths = {self._path(k): k for k in keys}
        with self._faults("read"):
            got = self._backend.read_many(list(paths))
        out: dict[str, Any] = {}
        for path, key in paths.items():
            value = got[path]
            if isinstance(value, BaseException):
                value = self.fault(value, key, "read")
            out[key] = value
        return out

    def walk(self, key: str = "") -> Listing:
        """Every object below ``key`` with its size, keys relative to this location."""
        with self._faults("list", key):
            return self._backend.walk(self._path(key), self.root)

    # -- writing ------------------------------------------------------------------------------

    def write(self, key: str, data: bytes) -> None:
        """Put ``data`` at ``key`` whole: the object is replaced atomically (a local temporary
        file renamed over it; one PUT on object stores)."""
        self._no_writes(f"writing {key}")
        with self._faults("write", key):
            self._backend.write(self._path(key), data)

    def server_side(self, other: Location) -> bool:
        """Whether :meth:`copy_to` ``other`` copies without the bytes passing through this
        process (one filesystem, one set of credentials)."""
        a, b = self._backend, other._backend
        if a is b or (a.kind == b.kind == "local"):
            return True
        return (a.kind == b.kind == "fsspec" and a.fs is b.fs)

    def copy_to(self, key: str, other: Location, other_key: str) -> None:
        """Copy the object ``key`` to ``other_key`` of ``other``, whole (as :meth:`write`):
        server-side where :meth:`server_side`, else through this process."""
        other._no_writes(f"writing {other_key}")
        if self.server_side(other):
            with self._faults("copy", key):
                self._backend.copy(self._path(key), other._path(other_key))
        else:
            other.write(other_key, self.read(key))

    def copy_many(self, keys: Sequence[str], other: Location, other_keys: Sequence[str] | None = None) -> None:
        """Copy many objects to ``other`` (same keys unless ``other_keys``): server-side and
        concurrent where possible. Raises the first failure (StorageError ...) after trying
        them all."""
        other_keys = list(keys) if other_keys is None else list(other_keys)
        if other_keys:
            other._no_writes(f"writing {other_keys[0]}")
        if len(other_keys) != len(keys):
            raise ValueError("copy_many: as many destination keys as keys are needed")
        if not self.server_side(other):
            for key, other_key in zip(keys, other_keys):
                self.copy_to(key, other, other_key)
            return
        pairs = [(self._path(k), other._path(o)) for k, o in zip(keys, other_keys)]
        with self._faults("copy"):
            failed = self._backend.copy_many(pairs)
        if failed:
            back = {p: k for p, k in zip((s for s, _ in pairs), keys)}
            first, error = next(iter(failed.items()))
            raise self.fault(error, back.get(first, first),
                             f"copy ({len(failed)} of {len(pairs)} objects failed)")

    def remove(self, key: str) -> None:
        """Delete the object ``key`` (nothing if it is not there)."""
        self._no_writes(f"removing {key}")
        with self._faults("remove", key):
            self._backend.remove(self._path(key))

    def remove_tree(self, key: str = "") -> None:
        """Delete everything at and below ``key``."""
        self._no_writes(f"removing {key or 'everything'}")
        with self._faults("remove", key):
            self._backend.remove_tree(self._path(key))

    def flush(self) -> None:
        """Make everything written so far durable before metadata claims it (local disks: the
        kernel's buffers to disk; an object store has nothing buffered once a PUT returned)."""
        with self._faults("flush"):
            self._backend.flush()

    # -- zarr ---------------------------------------------------------------------------------

    def zarr_store(self, *, read_only: bool = True) -> Any:
        """A zarr store over this location (LocalStore, FsspecStore, or the store object
        itself, seen from this location's prefix)."""
        if not read_only:
            self.refuse_writes("zarr would write to it")
        with self._faults("open"):
            if self.kind == "fsspec":
                return self._backend.zarr_store(self.root, read_only=read_only, url=self._url)
            return self._backend.zarr_store(self.root, read_only=read_only)

    # -- pickling and showing -----------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        # dask workers rebuild the location (with its storage options: they need them)
        return (_rebuild, (self._backend.reduce(), self.root, self.display, self._url, self.read_only))

    def __repr__(self) -> str:
        return f"Location({self.display!r})"

    def __str__(self) -> str:
        return self.display


def _same_store(a: Any, b: Any) -> bool:
    """Whether two backends are one (or over one zarr store object)."""
    return a is b or (getattr(a, "store", None) is not None and getattr(a, "store", None) is getattr(b, "store", None))


def _rebuild(backend: tuple[Any, ...], root: str, display: str, url: str | None,
             read_only: str | None = None) -> Location:
    make, args = backend
    return Location(make(*args), root, display, url, read_only)
