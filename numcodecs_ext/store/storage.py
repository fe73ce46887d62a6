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
:mod:`numcodecs_ext.store.backends`.

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

from .backends import UNKNOWN, FsspecBackend, Listing, LocalBackend, protocols
from .errors import UsageError
from .faults import (
    AccessDenied,
    ObjectNotFound,
    StorageError,
    StoreNotFound,
    Unreachable,
    _secrets,
    _url_secrets,
    _userinfo,
    fault,
    redact,
)
from .zarrstores import ZarrStoreBackend

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

_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
             "abfss": "adlfs", "adl": "adlfs", "http": "aiohttp and requests", "https": "aiohttp and requests"}


# schemes whose URLs never carry credentials: a user:password@ there is a mistake to refuse
_NO_USERINFO = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "memory"}


# -- storage options -------------------------------------------------------------------------------

# Object-store filesystems cache listings per instance. zarr's FsspecStore holds an instance of
# its own, so a listing cached by one goes stale when the other writes (zarr then reads a
# document written a moment ago as missing). The tools keep no listing cache there.
_LISTING_CACHES = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl"}


def object_store_defaults(scheme: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with the tools' defaults for object stores, each unless the options set it:
    no listing cache (see above); on S3, reads of one request each (s3fs >= 2025 asks an
    object's size with a HEAD before every whole-object read, to split large ones into
    concurrent ranges; zarr's chunks are read whole, so that doubles the requests per chunk)."""
    out = dict(options)
    if scheme in _LISTING_CACHES:
        out.setdefault("use_listings_cache", False)
    if scheme in ("s3", "s3a"):
        out.setdefault("max_concurrency", 1)
    return out


def parse_storage_options(text: str | None, *, flag: str = "--storage-options") -> dict[str, Any]:
    """The ``--storage-options JSON`` argument as a dict for fsspec (``{}`` for None/empty).

    UsageError on anything but a JSON object, and on an option of a known name whose value has
    the wrong type (:func:`check_storage_options`). The message never repeats the text (it may
    hold a secret).

    >>> parse_storage_options('{"anon": true}')
    {'anon': True}
    >>> parse_storage_options('{"anon": "yes"}')
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: --storage-options: "anon" must be true or false, not a string
    >>> parse_storage_options('null')
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: --storage-options: a JSON object is needed (e.g. '{"anon": true}'), not null
    """
    if text is None or not str(text).strip():
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{flag}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}); "
                         """give a JSON object, e.g. '{"anon": true}' or '{"profile": "name"}'""") from None
    if not isinstance(options, dict):
        raise UsageError(f"{flag}: a JSON object is needed (e.g. "
                         f"""'{{"anon": true}}'), not {_json_kind(options)}""")
    check_storage_options(options, flag=flag)
    return options


# The types of the storage options fsspec's object-store filesystems (s3fs, gcsfs, adlfs) and
# botocore take, by name; an option of another name is passed on as it is (the filesystem says
# whether it takes it). bool: true/false; "number": an integer or a float (not true/false);
# str / dict: a string / a JSON object; None: null (the filesystem's default).
_BOOL, _NUMBER, _STR, _OBJECT, _NULL = "true or false", "a number", "a string", "a JSON object", "null"
_OPTION_TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("anon", "use_ssl", "use_listings_cache", "skip_instance_cache", "version_aware",
                     "cache_regions", "fixed_upload_size"), (_BOOL,)),
    **dict.fromkeys(("default_block_size", "listings_expiry_time", "max_concurrency", "max_paths",
                     "default_cache_type_size", "timeout"), (_NUMBER, _NULL)),
    **dict.fromkeys(("key", "secret", "profile", "endpoint_url", "region_name", "username", "password",
                     "account_name", "account_key", "sas_token", "connection_string", "session_token",
                     "tenant_id", "client_id", "client_secret", "project", "access"), (_STR, _NULL)),
    "token": (_STR, _OBJECT, _NULL),  # s3fs: a session token; gcsfs: a method, a path or the JSON key
    "requester_pays": (_BOOL, _STR),  # s3fs: true/false; gcsfs: the project to bill
    **dict.fromkeys(("client_kwargs", "config_kwargs", "s3_additional_kwargs", "headers"), (_OBJECT, _NULL)),
}
_NESTED_TYPES: dict[str, dict[str, tuple[str, ...]]] = {
    "client_kwargs": {
        **dict.fromkeys(("endpoint_url", "region_name", "aws_access_key_id", "aws_secret_access_key",
                         "aws_session_token", "api_version"), (_STR, _NULL)),
        "verify": (_BOOL, _STR), "use_ssl": (_BOOL,), "headers": (_OBJECT, _NULL),
    },
    "config_kwargs": {
        **dict.fromkeys(("connect_timeout", "read_timeout", "max_pool_connections"), (_NUMBER, _NULL)),
        **dict.fromkeys(("signature_version", "region_name", "user_agent", "user_agent_extra",
                         "request_checksum_calculation", "response_checksum_validation"), (_STR, _NULL)),
        **dict.fromkeys(("retries", "s3", "proxies", "proxies_config"), (_OBJECT, _NULL)),
        "tcp_keepalive": (_BOOL,),
    },
}
_RETRIES_TYPES = {"max_attempts": (_NUMBER,), "total_max_attempts": (_NUMBER,), "mode": (_STR,)}


def _json_kind(value: Any) -> str:
    """How a JSON value is named in a message (no repr: it may be a secret)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a JSON object"
    if isinstance(value, (list, tuple)):
        return "a JSON array"
    return f"a {type(value).__name__}"


def _is(value: Any, kinds: tuple[str, ...]) -> bool:
    return ((_BOOL in kinds and isinstance(value, bool))
            or (_NUMBER in kinds and isinstance(value, (int, float)) and not isinstance(value, bool))
            or (_STR in kinds and isinstance(value, str))
            or (_OBJECT in kinds and isinstance(value, Mapping))
            or (_NULL in kinds and value is None))


def _check(options: Mapping[str, Any], types: Mapping[str, tuple[str, ...]], flag: str, where: str) -> None:
    for name, kinds in types.items():
        if name in options and not _is(options[name], kinds):
            valid = " or ".join(kinds)
            raise UsageError(f'{flag}: "{where}{name}" must be {valid}, not {_json_kind(options[name])}')
    for name, value in options.items():
        if name in ("max_pool_connections", "max_concurrency", "max_attempts", "total_max_attempts") \
                and _is(value, (_NUMBER,)) and (value != int(value) or value < (0 if "attempts" in name else 1)):
            raise UsageError(f'{flag}: "{where}{name}" must be a whole number of at least '
                             f'{0 if "attempts" in name else 1}')
        if name in ("connect_timeout", "read_timeout", "timeout", "listings_expiry_time") \
                and _is(value, (_NUMBER,)) and not value >= 0:
            raise UsageError(f'{flag}: "{where}{name}" must be a number of seconds, 0 or more')


def check_storage_options(options: Mapping[str, Any], *, flag: str = "storage_options") -> None:
    """UsageError naming the option whose value has the wrong type for the filesystems (e.g.
    ``{"client_kwargs": "x"}``, ``{"key": 123}``, ``{"config_kwargs": {"retries": "x"}}``),
    before any filesystem sees it (they fail later, in ways that do not name it).

    >>> check_storage_options({"client_kwargs": {"endpoint_url": 5}})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: storage_options: "client_kwargs.endpoint_url" must be a string or
    null, not a number
    """
    if not isinstance(options, Mapping):
        raise UsageError(f"{flag}: a mapping of option names to values is needed, not {_json_kind(options)}")
    _check(options, _OPTION_TYPES, flag, "")
    for outer, types in _NESTED_TYPES.items():
        nested = options.get(outer)
        if isinstance(nested, Mapping):
            _check(nested, types, flag, f"{outer}.")
            retries = nested.get("retries") if outer == "config_kwargs" else None
            if isinstance(retries, Mapping):
                _check(retries, _RETRIES_TYPES, flag, "config_kwargs.retries.")


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
        self._hidden = tuple(_secrets(getattr(backend, "options", None)) + _url_secrets(url))
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
        options = dict(storage_options or {})
        if isinstance(target, str) and not target.strip():
            raise UsageError("an empty path: give the path or URL of a store or file")
        store = _from_zarr(target)
        if store is not None:
            return store
        if isinstance(target, os.PathLike) or (isinstance(target, str) and "://" not in target
                                                and "::" not in target):
            path = os.path.abspath(os.path.expanduser(os.fspath(target)))
            return cls(LocalBackend(), path, redact(os.fspath(target)))
        if not isinstance(target, str):
            raise UsageError(f"a {type(target).__name__} is not a path, URL or zarr store")
        if storage_options is not None:
            check_storage_options(options)
        target = _lower_schemes(target)
        display = redact(target, options)
        scheme = target.split("://", 1)[0].split("::")[-1]
        outer = target.split("::")[-1]
        outer_scheme, _, rest = outer.partition("://")
        if outer_scheme in _LISTING_CACHES and not rest.strip("/").split("/", 1)[0]:
            raise UsageError(f"{display}: a bucket name is needed ({outer_scheme}://BUCKET/path)")
        if _userinfo(target) and scheme in _NO_USERINFO:
            raise UsageError(f"{display}: {scheme}:// URLs cannot carry credentials (user:password@); "
                             "give them through the standard configuration (AWS_* variables, fsspec's "
                             "configuration) or --storage-options")
        for endpoint in (options.get("endpoint_url"), (options.get("client_kwargs") or {}).get("endpoint_url")):
            if isinstance(endpoint, str) and _userinfo(endpoint):
                raise UsageError(f"{display}: the endpoint URL {redact(endpoint, options)} cannot carry "
                                 "credentials (user:password@); give them as key/secret in --storage-options "
                                 "or through the AWS_* variables")
        if scheme in ("http", "https") and _url_secrets(target):
            target, options = _basic_auth(target, options)
        try:
            from fsspec.core import url_to_fs

            fs, root = url_to_fs(target, **object_store_defaults(scheme, options))
        except ImportError as e:
            package = _PACKAGES.get(scheme) or getattr(e, "name", None)
            if package:
                raise UsageError(f"{display}: {scheme}:// URLs need {package} "
                                 f"(pip install {package.split(' and ')[0]}): {redact(str(e), options)}") from None
            raise UsageError(f"{display}: {scheme}:// URLs need a package that is not installed: "
                             f"{redact(str(e), options)}") from None
        except ValueError as e:
            if "Protocol not known" in str(e):
                raise UsageError(f"{display}: unknown URL scheme {scheme!r}; use a local path or an "
                                 "fsspec URL such as s3://, gs://, az://, memory://") from None
            raise UsageError(f"{display}: {redact(str(e), options)}") from None
        except TypeError as e:
            raise UsageError(f"{display}: storage options not accepted by the {scheme}:// filesystem "
                             f"({redact(str(e), options)})") from None
        except FileNotFoundError as e:
            raise UsageError(f"{display}: {e.strerror or 'no such file'}"
                             + (f": {redact(str(e.filename), options)}" if e.filename else "")) from None
        except OSError as e:
            raise UsageError(f"{display}: {redact(str(e), options)}") from None
        except Exception as e:  # noqa: BLE001 - fsspec backends raise anything on a URL they cannot take
            raise UsageError(f"{display}: not a usable URL ({type(e).__name__}: "
                             f"{redact(str(e), options)})") from None
        if "file" in protocols(fs) and "::" not in target:
            return cls(LocalBackend(), os.path.abspath(root), display)
        return cls(FsspecBackend(fs, options), root.rstrip("/") or root, display, target, _fs_read_only(fs))

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
                         + _WRITABLE.get(self.read_only, "Give a writable store"))

    @property
    def removes(self) -> bool:
        """Whether objects can be removed here (a zarr ZipStore cannot: ``supports_deletes``)."""
        return bool(getattr(getattr(self._backend, "store", None), "supports_deletes", True))

    def _no_writes(self, what: str) -> None:
        """StorageError if this location is read-only (what every tool checks before it
        writes, with :meth:`refuse_writes`: this is the net under those checks)."""
        if self.read_only is not None:
            raise StorageError(f"{self.display}: {self.read_only}, so {what} was refused. "
                               + _WRITABLE.get(self.read_only, "Give a writable store"))

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
        import json

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


def _lower_schemes(target: str) -> str:
    """``target`` with its URL schemes in lower case (schemes are case-insensitive: S3://b/x is
    s3://b/x), chained URLs (``zip::S3://...``) too; the rest as it is.

    >>> _lower_schemes("Zip::S3://Bucket/Key.zip")
    'zip::s3://Bucket/Key.zip'
    """
    import re

    return re.sub(r"(^|::)([A-Za-z][A-Za-z0-9+.-]*)(?=::|://)", lambda m: m[1] + m[2].lower(), target)


def _same_store(a: Any, b: Any) -> bool:
    """Whether two backends are one (or over one zarr store object)."""
    return a is b or (getattr(a, "store", None) is not None and getattr(a, "store", None) is getattr(b, "store", None))


def _basic_auth(url: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An http(s) URL's ``user:password@`` moved into a basic-auth header of the client, so
    that no URL the libraries handle (and log, at debug level) carries it."""
    import base64
    from urllib.parse import unquote

    userinfo = _userinfo(url)[0]
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    client_kwargs = dict(options.get("client_kwargs", {}))
    client_kwargs["headers"] = {**client_kwargs.get("headers", {}), "Authorization": f"Basic {token}"}
    return url.replace(f"://{userinfo}@", "://", 1), {**options, "client_kwargs": client_kwargs}


def _rebuild(backend: tuple[Any, ...], root: str, display: str, url: str | None,
             read_only: str | None = None) -> Location:
    make, args = backend
    return Location(make(*args), root, display, url, read_only)


#: why a location is read-only, as :attr:`Location.read_only` says it
OPENED_READ_ONLY = "the store was opened read-only (read_only=True)"
READ_ONLY_FILESYSTEM = "the filesystem is read-only"
#: the way out for each reason
_WRITABLE = {
    OPENED_READ_ONLY: "Open the store with read_only=False, or give its path or URL",
    READ_ONLY_FILESYSTEM: "Give a writable store: a local path, or s3://, gs://, az:// ...",
}


def _store_read_only(store: Any) -> str | None:
    """Why nothing may be written to the zarr store object ``store``, or None."""
    if getattr(store, "read_only", False):
        return OPENED_READ_ONLY
    if type(getattr(store, "store", None)).__name__ == "HTTPStore":  # obstore's: reads only
        return READ_ONLY_FILESYSTEM
    return None


def _fs_read_only(fs: Any) -> str | None:
    """Why nothing may be written through the fsspec filesystem ``fs`` (http(s), a zip file
    opened for reading), or None."""
    names = protocols(fs)
    if any(p in ("http", "https") for p in names):
        return READ_ONLY_FILESYSTEM
    if "zip" in names and getattr(fs, "mode", "r") == "r":
        return READ_ONLY_FILESYSTEM
    return None


def _store_path_of(target: Any) -> Any:
    """A zarr Group or Array (sync or async) as the StorePath it was opened on (opened with
    mode="r": its store is read-only, and so is the Location); anything else as it is."""
    try:
        from zarr import Array, Group
        from zarr.core.array import AsyncArray
        from zarr.core.group import AsyncGroup
    except ImportError:  # pragma: no cover - zarr is a dependency
        return target
    return target.store_path if isinstance(target, (Array, Group, AsyncArray, AsyncGroup)) else target


def _from_zarr(target: Any) -> Location | None:
    """A Location for a zarr store object or StorePath, None for anything else."""
    try:
        from zarr.abc.store import Store
        from zarr.storage import FsspecStore, LocalStore, StorePath
    except ImportError:  # pragma: no cover - zarr is a dependency
        return None
    target = _store_path_of(target)
    if isinstance(target, StorePath):
        base = Location.parse(target.store)
        return base.child(target.path) if target.path else base
    if not isinstance(target, Store):
        return None
    from .staging import LocationStore

    if isinstance(target, LocationStore):
        return target.location
    if isinstance(target, LocalStore):
        local = Location.parse(str(target.root))
        local.read_only = _store_read_only(target)
        return local
    if isinstance(target, FsspecStore):
        import fsspec

        fs = getattr(target.fs, "sync_fs", None)
        options = dict(getattr(target.fs, "storage_options", {}) or {})
        options.pop("asynchronous", None)
        protocol = protocols(target.fs)[0]
        if "file" in protocols(target.fs):  # a local folder (its path is absolute: kept so)
            local = Location.parse(target.path)
            local.read_only = _store_read_only(target)
            return local
        if fs is None:
            fs = fsspec.filesystem(protocol, **options)
        path = target.path.rstrip("/")
        url = f"{protocol}://{path.lstrip('/')}" if protocol != "memory" else f"memory://{path}"
        return Location(FsspecBackend(fs, options), path, redact(url, options), url,
                        _store_read_only(target) or _fs_read_only(fs))
    return Location(ZarrStoreBackend(target), "", redact(str(target)), read_only=_store_read_only(target))
