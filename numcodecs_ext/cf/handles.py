"""One netCDF-C handle per local file per process, and the lock every netCDF-C call holds.

netCDF-C (over HDF5) crashes the process when one file is open through two handles at once and
it holds string variables: the second opening reads the variables' fill values through the first
handle's shared HDF5 file state (``H5F_addr_decode`` in ``H5Dget_create_plist``, a segmentation
fault; Unidata/netcdf4-python#1444, Unidata/netcdf-c#2510, pydata/xarray#9093). The tools open a
source several ways at once (stored and decoded values, every group, the verification's sides),
so every opening here goes through :func:`shared_dataset`: the first opening of a path opens it,
later ones share that handle, and the last closing closes it. On a dask worker the same holds:
the unpickled datasets reopen through :func:`shared_dataset` too.

netCDF-C is not thread-safe either: every call the tools make into it, opening, reading and
closing, holds :data:`NETCDF_LOCK` (xarray's own lock covers xarray's reads, not other openings).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["NETCDF_LOCK", "SharedDataset", "handles_open", "open_netcdf4", "open_source", "shared_dataset",
           "shared_file"]


class _ProcessLock:
    """A re-entrant lock that pickles as the receiving process's own lock (xarray pickles the
    lock of a dataset sent to a dask worker; a thread lock cannot cross processes)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        self._lock.release()

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return (_process_lock, ())


def _process_lock() -> _ProcessLock:
    return NETCDF_LOCK


#: held by every call the tools make into netCDF-C in this process (re-entrant)
NETCDF_LOCK = _ProcessLock()

_OPEN: dict[tuple[Any, ...], list[Any]] = {}  # file -> [its netCDF4.Dataset, how many sharers]
_DROPPED: list[tuple[Any, ...]] = []  # files a sharer let go of while another thread was in netCDF-C


def _key(path: str) -> tuple[Any, ...]:
    """The file at ``path`` as HDF5 tells files apart (its device and inode): a file replaced
    since is another file; the same file under another name (a hard link) or written to in place
    is the same one, whose state HDF5 shares between every opening in the process anyway (a
    second handle on it is what crashes). An inode is not reused while a handle holds it open."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def _let_go(key: tuple[Any, ...]) -> None:
    entry = _OPEN.get(key)
    if entry is not None:
        entry[1] -= 1
        if entry[1] <= 0:
            del _OPEN[key]
            entry[0].close()


def _collect() -> None:
    """Let go for the sharers that could not (call with :data:`NETCDF_LOCK` held)."""
    while _DROPPED:
        _let_go(_DROPPED.pop())


class SharedDataset:
    """A netCDF4.Dataset shared by everything in the process that opened the same file: reads
    go to the one handle; :meth:`close` closes it when nothing else has it open."""

    def __init__(self, path: str) -> None:
        import netCDF4

        with NETCDF_LOCK:
            _collect()
            key = _key(path)
            entry = _OPEN.get(key)
            if entry is None:
                entry = _OPEN[key] = [netCDF4.Dataset(path, "r"), 0]
            entry[1] += 1
        self._key = key
        self._nc: Any = entry[0]

    def __getattr__(self, name: str) -> Any:
        nc = self.__dict__.get("_nc")
        if nc is None:
            raise AttributeError(name)
        return getattr(nc, name)

    def __getitem__(self, key: str) -> Any:
        return self._nc[key]

    def __enter__(self) -> SharedDataset:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the handle; the file is closed when the last sharer lets go. Never waits:
        while another thread is inside netCDF-C (xarray may close a file from any thread, holding
        its own locks), the handle is let go of by the next opening or closing."""
        if self.__dict__.get("_nc") is None:
            return
        self._nc = None
        if NETCDF_LOCK.acquire(blocking=False):
            try:
                _let_go(self._key)
                _collect()
            finally:
                NETCDF_LOCK.release()
        else:
            _DROPPED.append(self._key)

    def __del__(self) -> None:
        # dropped without closing (in whatever thread the garbage collector runs): left to the
        # next opening or closing, which holds the lock
        if self.__dict__.get("_nc") is not None:
            _DROPPED.append(self._key)


def shared_dataset(path: str | os.PathLike[str], mode: str = "r") -> SharedDataset:
    """The netCDF file at ``path`` opened for reading (``mode`` "r", the only one), sharing the
    process's one handle on it.

    >>> import os, tempfile, netCDF4
    >>> p = os.path.join(tempfile.mkdtemp(), "s.nc")
    >>> netCDF4.Dataset(p, "w").close()
    >>> a, b = shared_dataset(p), shared_dataset(p)
    >>> handles_open(p)
    1
    >>> a.close(); b.close(); handles_open(p)
    0
    """
    if mode != "r":
        raise ValueError(f"shared_dataset: mode {mode!r}; the shared handles are for reading ('r')")
    return SharedDataset(os.path.realpath(path))


@contextmanager
def shared_file(path: str | os.PathLike[str]) -> Iterator[SharedDataset]:
    """:func:`shared_dataset` for a ``with`` block, holding :data:`NETCDF_LOCK` throughout."""
    with NETCDF_LOCK:
        nc = shared_dataset(path)
        try:
            yield nc
        finally:
            nc.close()


def handles_open(path: str | os.PathLike[str]) -> int:
    """How many netCDF-C handles this process's tools hold on the file at ``path`` (0 or 1)."""
    with NETCDF_LOCK:
        _collect()
        return int(_key(os.path.realpath(path)) in _OPEN)


def open_netcdf4(path: str | os.PathLike[str], group: str | None = None, **kwargs: Any) -> Any:
    """``xarray.open_dataset(path, group=group, engine="netcdf4", **kwargs)`` through the shared
    handle, every netCDF-C call under :data:`NETCDF_LOCK`. Closing the dataset lets go of the
    handle; a later read opens it again."""
    import xarray as xr
    from xarray.backends import CachingFileManager

    manager = CachingFileManager(shared_dataset, os.path.realpath(path), mode="r", lock=NETCDF_LOCK)
    with NETCDF_LOCK:
        store = _lazy_text_store()(manager, group=group, mode="r", lock=NETCDF_LOCK)
    try:
        with NETCDF_LOCK:  # the opening reads the file's metadata through netCDF-C
            return _open_text_lazily(xr, store, **kwargs)
    except BaseException:
        store.close()
        raise


_LAZY_TEXT = "numcodecs_ext_lazy_text"


def _lazy_text_store() -> type:
    """xarray's NetCDF4DataStore whose variable-length strings stay lazy: xarray turns them into
    fixed-width ``<U`` when it opens a file, reading every string (4 bytes per character of the
    longest) at every opening; with this store they stay str objects, read when their values are
    (:func:`open_netcdf4` puts back the encoding). Made on first use (xarray is imported late);
    found by name when a dataset is unpickled on a dask worker (module ``__getattr__``)."""
    cls = globals().get("LazyTextNetCDF4DataStore")
    if cls is None:
        from xarray.backends import NetCDF4DataStore

        def open_store_variable(self: Any, name: Any, var: Any) -> Any:
            v = NetCDF4DataStore.open_store_variable(self, name, var)
            if v.encoding.get("dtype") is str:  # the mark that makes xarray read them all at once
                del v.encoding["dtype"]
                v.encoding[_LAZY_TEXT] = True
            return v

        cls = type("LazyTextNetCDF4DataStore", (NetCDF4DataStore,),
                   {"open_store_variable": open_store_variable, "__module__": __name__})
        globals()["LazyTextNetCDF4DataStore"] = cls
    return cls


def __getattr__(name: str) -> Any:
    if name == "LazyTextNetCDF4DataStore":
        return _lazy_text_store()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _open_text_lazily(xr: Any, store: Any, **kwargs: Any) -> Any:
    """``xarray.open_dataset(store)`` of a :func:`_lazy_text_store` store, the strings' encoding
    put back as xarray gives it."""
    ds = xr.open_dataset(store, **kwargs)
    for v in ds.variables.values():
        if v.encoding.pop(_LAZY_TEXT, False):
            v.encoding["dtype"] = str
    return ds


def open_source(target: Any, engine: str | None, group: str | None = None, **kwargs: Any) -> Any:
    """``xarray.open_dataset`` of a netCDF source: a local file read by netCDF-C (engine
    ``"netcdf4"``, or None where xarray would choose netCDF-C) through :func:`open_netcdf4`,
    anything else (a file object, h5netcdf, scipy) as xarray opens it."""
    import xarray as xr

    if isinstance(target, (str, os.PathLike)):
        if engine is None and "netcdf4" in xr.backends.list_engines():
            if xr.backends.NetCDF4BackendEntrypoint().guess_can_open(target):
                engine = "netcdf4"  # xarray's own first choice for it
        if engine == "netcdf4":
            return open_netcdf4(target, group, **kwargs)

    return xr.open_dataset(target, group=group, engine=engine, **kwargs)
