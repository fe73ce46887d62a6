"""What a target names: a local path, an fsspec URL or a zarr store object, as the backend, root,
display form, URL and read-only reason a :class:`~numcodecs_ext.store.storage.Location` is
made of (:func:`open_target`).

URLs are checked here before any filesystem sees them: a scheme's missing package, an unknown
scheme, a bucket name left out, credentials in a URL that cannot carry them are each said as a
UsageError naming the location by its display form (credentials removed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .backends import FsspecBackend, LocalBackend
from .base import LISTING_CACHES, object_store_defaults, protocols
from .errors import UsageError
from .faults import redact, url_secrets, url_userinfo
from .options import check_storage_options
from .zarrstores import ZarrStoreBackend

__all__ = ["OPENED_READ_ONLY", "READ_ONLY_FILESYSTEM", "WRITABLE", "Target", "open_target", "split_store_path"]

_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
             "abfss": "adlfs", "adl": "adlfs", "http": "aiohttp and requests", "https": "aiohttp and requests"}


# schemes whose URLs never carry credentials: a user:password@ there is a mistake to refuse
_NO_USERINFO = {"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "memory"}

#: why a location is read-only, as :attr:`Location.read_only` says it
OPENED_READ_ONLY = "the store was opened read-only (read_only=True)"
READ_ONLY_FILESYSTEM = "the filesystem is read-only"
#: the way out for each reason
WRITABLE = {
    OPENED_READ_ONLY: "Open the store with read_only=False, or give its path or URL",
    READ_ONLY_FILESYSTEM: "Give a writable store: a local path, or s3://, gs://, az:// ...",
}


class Target(NamedTuple):
    """What a Location is made of (its constructor's arguments, in order)."""

    backend: Any
    root: str
    display: str
    url: str | None = None
    read_only: str | None = None


def open_target(target: Any, storage_options: Mapping[str, Any] | None = None) -> Target:
    """The :class:`Target` of a local path, an fsspec URL or a zarr store object (a StorePath,
    a Group or an Array is the caller's: :func:`split_store_path`). UsageError names an unknown
    scheme or the package a scheme needs."""
    store = _from_zarr(target)
    if store is not None:
        return store
    if isinstance(target, os.PathLike) or (isinstance(target, str) and "://" not in target
                                            and "::" not in target):
        return _local(target)
    if not isinstance(target, str):
        raise UsageError(f"a {type(target).__name__} is not a path, URL or zarr store")
    return _from_url(target, storage_options)


def _local(target: Any, read_only: str | None = None) -> Target:
    path = os.path.abspath(os.path.expanduser(os.fspath(target)))
    return Target(LocalBackend(), path, redact(os.fspath(target)), None, read_only)


def _from_url(target: str, storage_options: Mapping[str, Any] | None) -> Target:
    options = dict(storage_options or {})
    if storage_options is not None:
        check_storage_options(options)
    target = _lower_schemes(target)
    display = redact(target, options)
    scheme = target.split("://", 1)[0].split("::")[-1]
    outer = target.split("::")[-1]
    outer_scheme, _, rest = outer.partition("://")
    if outer_scheme in LISTING_CACHES and not rest.strip("/").split("/", 1)[0]:
        raise UsageError(f"{display}: a bucket name is needed ({outer_scheme}://BUCKET/path)")
    if url_userinfo(target) and scheme in _NO_USERINFO:
        raise UsageError(f"{display}: {scheme}:// URLs cannot carry credentials (user:password@); "
                         "give them through the standard configuration (AWS_* variables, fsspec's "
                         "configuration) or --storage-options")
    for endpoint in (options.get("endpoint_url"), (options.get("client_kwargs") or {}).get("endpoint_url")):
        if isinstance(endpoint, str) and url_userinfo(endpoint):
            raise UsageError(f"{display}: the endpoint URL {redact(endpoint, options)} cannot carry "
                             "credentials (user:password@); give them as key/secret in --storage-options "
                             "or through the AWS_* variables")
    if scheme in ("http", "https") and url_secrets(target):
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
        return Target(LocalBackend(), os.path.abspath(root), display)
    return Target(FsspecBackend(fs, options), root.rstrip("/") or root, display, target, _fs_read_only(fs))


def _lower_schemes(target: str) -> str:
    """``target`` with its URL schemes in lower case (schemes are case-insensitive: S3://b/x is
    s3://b/x), chained URLs (``zip::S3://...``) too; the rest as it is.

    >>> _lower_schemes("Zip::S3://Bucket/Key.zip")
    'zip::s3://Bucket/Key.zip'
    """
    return re.sub(r"(^|::)([A-Za-z][A-Za-z0-9+.-]*)(?=::|://)", lambda m: m[1] + m[2].lower(), target)


def _basic_auth(url: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """An http(s) URL's ``user:password@`` moved into a basic-auth header of the client, so
    that no URL the libraries handle (and log, at debug level) carries it."""
    import base64
    from urllib.parse import unquote

    userinfo = url_userinfo(url)[0]
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    client_kwargs = dict(options.get("client_kwargs", {}))
    client_kwargs["headers"] = {**client_kwargs.get("headers", {}), "Authorization": f"Basic {token}"}
    return url.replace(f"://{userinfo}@", "://", 1), {**options, "client_kwargs": client_kwargs}


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


def split_store_path(target: Any) -> tuple[Any, str] | None:
    """``(store, path)`` of a zarr StorePath, or of a Group or Array (sync or async: the store
    path it was opened on; opened with mode="r", its store is read-only, and so is the
    Location); None for anything else."""
    try:
        from zarr import Array, AsyncArray, AsyncGroup, Group
        from zarr.storage import StorePath
    except ImportError:  # pragma: no cover - zarr is a dependency
        return None
    if isinstance(target, (Array, Group, AsyncArray, AsyncGroup)):
        target = target.store_path
    return (target.store, target.path) if isinstance(target, StorePath) else None


def _from_zarr(target: Any) -> Target | None:
    """The Target of a zarr store object, None for anything else."""
    try:
        from zarr.abc.store import Store
        from zarr.storage import FsspecStore, LocalStore
    except ImportError:  # pragma: no cover - zarr is a dependency
        return None
    if not isinstance(target, Store):
        return None
    if isinstance(target, LocalStore):
        return _local(str(target.root), _store_read_only(target))
    if isinstance(target, FsspecStore):
        import fsspec

        fs = getattr(target.fs, "sync_fs", None)
        options = dict(getattr(target.fs, "storage_options", {}) or {})
        options.pop("asynchronous", None)
        protocol = protocols(target.fs)[0]
        if "file" in protocols(target.fs):  # a local folder (its path is absolute: kept so)
            return _local(target.path, _store_read_only(target))
        if fs is None:
            fs = fsspec.filesystem(protocol, **options)
        path = target.path.rstrip("/")
        url = f"{protocol}://{path.lstrip('/')}" if protocol != "memory" else f"memory://{path}"
        return Target(FsspecBackend(fs, options), path, redact(url, options), url,
                      _store_read_only(target) or _fs_read_only(fs))
    return Target(ZarrStoreBackend(target), "", redact(str(target)), None, _store_read_only(target))
