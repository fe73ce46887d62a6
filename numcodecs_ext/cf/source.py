"""What ``convert`` checks about its source before reading it: that the path is a netCDF file,
which format it is, and that it is as long as its header says.

netCDF-C reads past the end of a truncated classic file as zeros (or fill values), so a file cut
short in a download converts without an error and "verifies" against the same zeros. The classic
formats (CDF-1 classic, CDF-2 64-bit offset, CDF-5 64-bit data) give every variable's shape and
where its data begins in the header: :func:`netcdf3_required_size` works out the size the data
needs, and :func:`check_source` refuses a shorter file. HDF5-based files (netCDF-4) carry their end
of file address, which the HDF5 library checks itself on opening.

Examples
--------
>>> import os, tempfile, numpy as np, xarray as xr
>>> d = tempfile.mkdtemp(); path = os.path.join(d, "t.nc")
>>> xr.Dataset({"v": ("x", np.arange(1000, dtype="int16"))}).to_netcdf(path, format="NETCDF3_64BIT")
>>> check_source(path).format
'NETCDF3_64BIT_OFFSET'
>>> _ = os.truncate(path, os.path.getsize(path) - 100)
>>> try:
...     check_source(path)
... except ToolError as e:
...     print(str(e).split(": ", 1)[1])
its header says its data ends at byte 2084, but the file has 1984 bytes (netCDF readers would return zeros for the rest)
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

from ..store.errors import ToolError, UsageError
from ..store.storage import Location

__all__ = ["Source", "check_source", "netcdf3_required_size"]

_HDF5 = b"\x89HDF\r\n\x1a\n"
_CLASSIC = {1: "NETCDF3_CLASSIC", 2: "NETCDF3_64BIT_OFFSET", 5: "NETCDF3_64BIT_DATA"}
#: nc_type -> size in bytes (1 byte ... 6 double; 7-11 only in CDF-5)
_TYPE_SIZE = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}
_STREAMING = {0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF}


@dataclass(frozen=True)
class Source:
    """A checked source file: its path (the display form of a URL), size and format
    (``NETCDF3_CLASSIC``, ``NETCDF3_64BIT_OFFSET``, ``NETCDF3_64BIT_DATA`` or ``HDF5``, which
    covers NETCDF4, NETCDF4_CLASSIC and plain HDF5 files); ``location`` for a file in object
    storage (None on a local disk)."""

    path: str
    size: int
    format: str
    location: Any = None

    @property
    def remote(self) -> bool:
        return self.location is not None

    def target(self) -> Any:
        """What xarray (and h5netcdf) open: the local path, or a new file object over the remote
        file, read in ranges (:func:`numcodecs_ext.cf.remote.open_remote`)."""
        if self.location is None:
            return self.path
        from .remote import open_remote

        return open_remote(self.location)

    def __str__(self) -> str:
        return self.path


def check_source(path: Any, *, storage_options: Any = None) -> Source:
    """Check that ``path`` is a readable netCDF (or HDF5) file of the length its header implies.

    ``path`` is a local path or a URL (``s3://bucket/file.nc``, ``https://`` ...; read through
    fsspec with ``storage_options``, its header in ranged reads).

    Raises
    ------
    UsageError
        The path does not exist, is a directory, cannot be read, or is not a netCDF/HDF5 file.
    ToolError
        The file is a netCDF file but shorter than its header says (truncated), or its header
        is cut or corrupt.
    """
    location = Location.parse(path, storage_options=storage_options)  # an empty path, an unknown
    # scheme, a missing package: said here
    if not location.is_local:
        return _check_remote(location)
    shown = location.root  # absolute, ~ expanded: dask workers may run in another directory
    if not os.path.lexists(shown):
        raise UsageError(f"{shown}: does not exist")
    if not os.path.exists(shown):
        raise UsageError(f"{shown}: a link that leads nowhere (its target does not exist, or links loop)")
    if os.path.isdir(shown):
        raise UsageError(f"{shown}: is a directory, not a netCDF file")
    if not os.path.isfile(shown):
        raise UsageError(f"{shown}: is not a regular file (a netCDF file is needed)")
    try:
        size = os.path.getsize(shown)
        with open(shown, "rb") as f:
            head = f.read(8)
            kind = _sniff(f, head, size)
            if kind is None:
                raise UsageError(f"{shown}: not a netCDF file (it starts with {head[:4]!r}; netCDF files "
                                 "start with b'CDF' or the HDF5 signature)")
            if kind != "HDF5":
                f.seek(0)
                required = netcdf3_required_size(f, size)
    except OSError as e:
        raise UsageError(f"{shown}: cannot be read ({e.strerror or e})") from None
    if kind != "HDF5" and required is not None and required > size:
        raise ToolError(f"{shown} is truncated: its header says its data ends at byte {required}, but the "
                        f"file has {size} bytes (netCDF readers would return zeros for the rest)")
    return Source(shown, size, kind)


def _check_remote(location: Location) -> Source:
    """:func:`check_source` for a file in object storage (ranged reads of its header)."""
    from .remote import open_remote

    shown = location.display
    if location.fs is None:
        raise UsageError(f"{shown}: a netCDF file is read from a path or URL, not from a zarr store")
    if not location.isfile():
        location.walk()  # a bucket that does not exist is said as such (StoreNotFound)
        if location.isdir():
            raise UsageError(f"{shown}: is a directory (a prefix of objects), not a netCDF file")
        raise UsageError(f"{shown}: does not exist")
    size = location.size("")
    f = open_remote(location)
    try:
        try:
            head = f.read(8)
            kind = _sniff(f, head, size)
            if kind is None:
                raise UsageError(f"{shown}: not a netCDF file (it starts with {head[:4]!r}; netCDF files "
                                 "start with b'CDF' or the HDF5 signature)")
            required = None
            if kind != "HDF5":
                f.seek(0)
                required = netcdf3_required_size(f, size)
        except (UsageError, ToolError):
            raise
        except Exception as e:  # noqa: BLE001 - the storage library's errors, said the tools' way
            raise location.fault(e, "", "read") from None
    finally:
        f.close()
    if required is not None and required > size:
        raise ToolError(f"{shown} is truncated: its header says its data ends at byte {required}, but the "
                        f"file has {size} bytes (netCDF readers would return zeros for the rest)")
    return Source(shown, size, kind, location)


def _sniff(f: Any, head: bytes, size: int) -> str | None:
    if head[:3] == b"CDF" and len(head) >= 4 and head[3] in _CLASSIC:
        return _CLASSIC[head[3]]
    # HDF5's signature is at 0 or, after a user block, at 512, 1024, 2048 ...
    offset = 0
    while offset + 8 <= min(size, 1 << 20):
        f.seek(offset)
        if f.read(8) == _HDF5:
            return "HDF5"
        offset = 512 if offset == 0 else offset * 2
    return None


class _Reader:
    """Big-endian reads over a classic netCDF header; running past the end is a cut header."""

    def __init__(self, f: Any, size: int, version: int) -> None:
        self.f, self.size, self.version = f, size, version

    def take(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise ToolError(f"the header ends early (at byte {self.f.tell()} of {self.size}): the file is "
                            "truncated or not a netCDF file")
        return data

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def non_neg(self) -> int:
        """A count: 4 bytes, 8 in CDF-5."""
        return struct.unpack(">Q", self.take(8))[0] if self.version == 5 else struct.unpack(">I", self.take(4))[0]

    def offset(self) -> int:
        return struct.unpack(">Q", self.take(8))[0] if self.version in (2, 5) else struct.unpack(">I", self.take(4))[0]

    def name(self) -> str:
        n = self.non_neg()
        self._check_length(n, 1)
        raw = self.take(n)
        self.take(-n % 4)
        return raw.decode("utf-8", "replace")

    def _check_length(self, count: int, itemsize: int) -> None:
        if count * itemsize > self.size:
            raise ToolError(f"the header declares {count} items at byte {self.f.tell()}, more than the file "
                            f"holds ({self.size} bytes): it is corrupt")

    def list_header(self, tag: int) -> int:
        found, count = self.int32(), self.non_neg()
        if found == 0 and count == 0:
            return 0
        if found != tag:
            raise ToolError(f"corrupt header: expected tag {tag} at byte {self.f.tell() - 8}, found {found}")
        return count

    def skip_attributes(self) -> None:
        for _ in range(self.list_header(0x0C)):
            self.name()
            nc_type = self.int32()
            if nc_type not in _TYPE_SIZE:
                raise ToolError(f"corrupt header: unknown attribute type {nc_type} at byte {self.f.tell() - 4}")
            n = self.non_neg()
            self._check_length(n, _TYPE_SIZE[nc_type])
            nbytes = n * _TYPE_SIZE[nc_type]
            self.take(nbytes + (-nbytes % 4))


def netcdf3_required_size(f: Any, size: int) -> int | None:
    """The smallest size a classic-format netCDF file (CDF-1, -2, -5) must have to hold the data
    its header describes, from the open binary file ``f``; None for a streamed file (its record
    count is left open). Raises ToolError for a cut or corrupt header."""
    magic = f.read(4)
    if magic[:3] != b"CDF" or len(magic) < 4 or magic[3] not in _CLASSIC:
        raise ToolError("not a classic netCDF header")
    r = _Reader(f, size, magic[3])
    numrecs = r.non_neg()
    dims = []
    for _ in range(r.list_header(0x0A)):
        r.name()
        dims.append(r.non_neg())
    r.skip_attributes()
    fixed_end = f.tell()
    record_vars = []
    for _ in range(r.list_header(0x0B)):
        r.name()
        ndims = r.non_neg()
        r._check_length(ndims, 4)
        ids = [r.non_neg() for _ in range(ndims)]
        r.skip_attributes()
        nc_type = r.int32()
        if nc_type not in _TYPE_SIZE or any(i >= len(dims) for i in ids):
            raise ToolError(f"corrupt header: variable type {nc_type} or dimension ids {ids} are not valid")
        r.non_neg()  # vsize: rounded, and capped for variables over 4 GiB; the shape says it exactly
        begin = r.offset()
        is_record = bool(ids) and dims[ids[0]] == 0
        shape = [dims[i] for i in (ids[1:] if is_record else ids)]
        nbytes = _TYPE_SIZE[nc_type]
        for n in shape:
            nbytes *= n
        if is_record:
            record_vars.append((begin, nbytes))
        elif nbytes:
            fixed_end = max(fixed_end, begin + nbytes)
    if numrecs in _STREAMING:
        return None
    end = fixed_end
    if record_vars and numrecs:
        # one record holds every record variable, each padded to 4 bytes, except a lone one
        recsize = record_vars[0][1] if len(record_vars) == 1 else sum(n + (-n % 4) for _, n in record_vars)
        end = max([end] + [begin + (numrecs - 1) * recsize + n for begin, n in record_vars if n])
    return end
