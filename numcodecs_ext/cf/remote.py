"""netCDF files wherever they are: a local path, or an object in a bucket (``s3://``, ``gs://``,
``az://``, ``https://`` ...) read in ranges, never downloaded whole.

A local file opens as xarray opens it (netCDF4 first). A remote one is read through its fsspec
file object, in blocks of :data:`BLOCK_BYTES` (at most :data:`BLOCKS` of them held: memory stays
bounded whatever the file's size): HDF5-based files (netCDF-4) by h5netcdf, classic files
(netCDF-3) by scipy, chosen by the file's first bytes. Errors are the tools' own, naming the
file by its display form (never a credential).

Examples
--------
>>> netcdf_format(b"CDF\\x01....") , netcdf_format(b"\\x89HDF\\r\\n\\x1a\\n"), netcdf_format(b"PK\\x03\\x04")
('NETCDF3', 'HDF5', None)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..store.errors import ToolError, UsageError
from ..store.storage import Location, StorageError
from .handles import open_source, shared_file

__all__ = ["BLOCKS", "BLOCK_BYTES", "H5NETCDF_OPTIONS", "netcdf_format", "netcdf_groups", "open_netcdf",
           "open_remote", "read_head"]

#: how h5netcdf is asked to open a file: dimensions without a name (HDF5 files that are not
#: netCDF-4) named as netCDF-C names them, in sorted order, so that a file reads with the same
#: dimension names from a bucket (h5netcdf) as from a local disk (netCDF4)
H5NETCDF_OPTIONS = {"phony_dims": "sort"}

#: bytes fetched per range request from a remote file, and how many such blocks are kept
BLOCK_BYTES = 4 << 20
BLOCKS = 8

_HDF5 = b"\x89HDF\r\n\x1a\n"
_ENGINES = {"HDF5": ("h5netcdf", "h5netcdf"), "NETCDF3": ("scipy", "scipy")}


def netcdf_format(head: bytes) -> str | None:
    """"HDF5" (netCDF-4), "NETCDF3" (classic, 64-bit offset or data) or None, from a file's
    first 8 bytes."""
    if head[:8] == _HDF5:
        return "HDF5"
    if head[:3] == b"CDF" and head[3:4] in (b"\x01", b"\x02", b"\x05"):
        return "NETCDF3"
    return None


def read_head(loc: Location, n: int = 8) -> bytes:
    """The first ``n`` bytes of the file at ``loc`` (one ranged request on object stores)."""
    if loc.is_local:
        try:
            with open(loc.root, "rb") as f:
                return f.read(n)
        except OSError as e:
            raise loc.fault(e, "", "read") from None
    if loc.fs is None:
        raise UsageError(f"{loc.display}: a netCDF file is read from a path or URL, not from a zarr store")
    try:
        return bytes(loc.fs.cat_file(loc.root, start=0, end=n))
    except Exception as e:  # noqa: BLE001 - said the tools' way
        raise loc.fault(e, "", "read") from None


def open_remote(loc: Location) -> Any:
    """A binary file object over the remote file at ``loc``, read in ranged requests of
    :data:`BLOCK_BYTES`, at most :data:`BLOCKS` blocks kept (it pickles: a dask worker reopens
    it)."""
    try:
        return loc.fs.open(loc.root, "rb", block_size=BLOCK_BYTES, cache_type="blockcache",
                           cache_options={"maxblocks": BLOCKS})
    except Exception as e:  # noqa: BLE001 - said the tools' way
        raise loc.fault(e, "", "open") from None


def remote_engine(loc: Location, kind: str) -> str:
    """The xarray engine that reads a remote file of ``kind`` ("HDF5" or a netCDF-3 format);
    UsageError naming the package to install where it is missing."""
    engine, package = _ENGINES["HDF5" if kind == "HDF5" else "NETCDF3"]
    try:
        __import__(package)
    except ImportError:
        raise UsageError(f"{loc.display}: reading a {'netCDF-4' if kind == 'HDF5' else 'netCDF-3'} "
                         f"file from object storage needs {package} (pip install {package})") from None
    return engine


@contextmanager
def open_netcdf(loc: Location, **kwargs: Any) -> Iterator[Any]:
    """The xarray Dataset of the netCDF file at ``loc`` (closed at the end); ``kwargs`` go to
    ``xarray.open_dataset``.

    UsageError for a file that is not netCDF, or a remote file whose reader is not installed;
    ToolError (StorageError ...) for one that cannot be read."""
    try:
        import xarray  # noqa: F401 - the readers below need it
    except ImportError:
        raise UsageError('reading netCDF needs xarray and netCDF4: pip install "numcodecs_ext[xarray]"') from None
    head = read_head(loc)
    kind = netcdf_format(head)
    if kind is None:
        raise UsageError(f"{loc.display}: is a file but not a netCDF file (neither netCDF-3 nor "
                         "HDF5/netCDF-4), nor a zarr store (a directory, a .zip file or a URL)")
    handle = None
    if loc.is_local:
        target: Any = loc.root  # open_source reads it through the shared handle where xarray picks netCDF-C
    else:
        kwargs.setdefault("engine", remote_engine(loc, kind))
        handle = open_remote(loc)
        target = handle
    if kwargs.get("engine") == "h5netcdf":
        kwargs = {**H5NETCDF_OPTIONS, **kwargs}
    try:
        try:
            ds = open_source(target, kwargs.pop("engine", None), kwargs.pop("group", None), **kwargs)
        except (StorageError, UsageError):
            raise
        except (ValueError, OSError, RuntimeError, TypeError) as e:
            if not loc.is_local and _is_storage(e):
                raise loc.fault(e, "", "read") from None
            raise ToolError(f"{loc.display}: the netCDF file cannot be read ({e})") from None
        try:
            yield ds
        finally:
            ds.close()
    finally:
        if handle is not None:
            handle.close()


def netcdf_groups(loc: Location) -> list[str]:
    """The paths (``a``, ``a/b``) of the groups below the root of the netCDF file at ``loc``,
    parents first; none for netCDF-3 files, which have no groups."""
    if netcdf_format(read_head(loc)) != "HDF5":
        return []
    handle = None if loc.is_local else open_remote(loc)
    try:
        try:
            if handle is None and _have("netCDF4"):
                with shared_file(loc.root) as nc:
                    return walk_groups(nc, lambda g: g.path)
            import h5netcdf

            with h5netcdf.File(handle if handle is not None else loc.root, "r", **H5NETCDF_OPTIONS) as f:
                return walk_groups(f, lambda g: g.name)
        except (StorageError, UsageError):
            raise
        except Exception as e:  # noqa: BLE001 - said the tools' way
            if not loc.is_local and _is_storage(e):
                raise loc.fault(e, "", "read") from None
            raise ToolError(f"{loc.display}: the netCDF file's groups cannot be read ({e})") from None
    finally:
        if handle is not None:
            handle.close()


def walk_groups(root: Any, path: Any) -> list[str]:
    """The groups below an open netCDF4 or h5netcdf file ``root``, breadth first, each as
    ``path(group)`` without its leading slash: ``a``, ``b``, ``a/c`` ..."""
    out, todo = [], list(root.groups.values())
    while todo:
        g = todo.pop(0)
        out.append(str(path(g)).strip("/"))
        todo.extend(g.groups.values())
    return out


def _have(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def storage_fault(loc: Location, e: BaseException) -> BaseException | None:
    """The tools' error for ``e`` if the storage client raised it while a reader read the
    remote file at ``loc`` (the service gone, access denied ...), else None."""
    if isinstance(e, (StorageError, UsageError)):
        return e
    return loc.fault(e, "", "read") if _is_storage(e) else None


def _is_storage(e: BaseException) -> bool:
    """Whether an error raised while xarray read a remote file came from the storage client."""
    seen: BaseException | None = e
    while seen is not None:
        module = type(seen).__module__
        if module.split(".")[0] in ("botocore", "aiohttp", "s3fs", "gcsfs", "adlfs", "fsspec"):
            return True
        if isinstance(seen, (ConnectionError, TimeoutError, PermissionError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
