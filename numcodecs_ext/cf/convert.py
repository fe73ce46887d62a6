"""Convert a netCDF file into a zarr store whose CF-packed variables use the spec codecs.

Every variable, coordinate, group and attribute is copied. A packed variable (``scale_factor`` /
``add_offset`` on an integer type) becomes a float zarr array with the filters ``[scale_offset,
cast_value]`` over the file's own integers, so any zarr reader gets the unpacked values (missing
ones as NaN) without CF decoding; times, counts and flags stay integers with their CF attributes.
Data streams chunk by chunk; metadata is written last, only after the result has been read back
and compared with xarray's decoding of the file, value for value. An interrupted or failed run
leaves no store that opens.

Examples::

    numcodecs-ext convert era5.nc era5.zarr
    numcodecs-ext convert era5.nc era5.zarr --chunks time=24,latitude=181 --zarr-format 2
    numcodecs-ext convert era5.nc era5.zarr --compressor zstd --level 5
    numcodecs-ext convert s3://bucket/era5.nc s3://bucket/era5.zarr
    numcodecs-ext convert era5.nc era5.zarr --verify sample:10

An interrupted conversion (killed, a server gone) keeps its chunks and a journal of them under the
destination (a journal); the same command run again resumes it, skipping
what was written and verified, and says so.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..store.errors import ToolError, UsageError
from ..store.storage import StorageError
from ..store.verifying import VerifyPlan, parse_verify
from .handles import open_source, shared_file
from .compress import DEFAULT, Compressor
from .plan import GroupPlan, VariablePlan, auto_chunks, plan_group
from .remote import H5NETCDF_OPTIONS, walk_groups
from .representable import refuse_ragged
from .source import Source, check_source
from .write import write_verify_commit

__all__ = ["CHUNK_MIB_RANGE", "ConvertReport", "auto_chunks", "convert"]

#: chunk_bytes (--chunk-mib), in MiB: from 1/64 MiB (16 KiB) to 1 GiB
CHUNK_MIB_RANGE = (1 / 64, 1024.0)
#: more chunks than this in one conversion is refused (the task graph alone would need GBs)
MAX_CHUNKS = 2_000_000


@dataclass
class ConvertReport:
    """What :func:`convert` did: each variable's route, codecs and notes, sizes, differences."""

    src: str = ""
    dst: str = ""
    zarr_format: int = 3
    compressor: Compressor = DEFAULT
    variables: dict[str, VariablePlan] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # about groups: "group: note"
    max_difference: dict[str, float] = field(default_factory=dict)
    source_bytes: int = 0
    store_bytes: int = 0
    verified: bool = False
    verification: str = ""
    resumed: str | None = None

    @property
    def packed(self) -> dict[str, Any]:
        """``{name: CFPacking}`` of the packed variables."""
        return {n: v.packing for n, v in self.variables.items() if v.route == "packed"}

    @property
    def plain(self) -> list[str]:
        """The variables copied as they are (or as xarray decodes them)."""
        return [n for n, v in self.variables.items() if v.route != "packed"]

    def __str__(self) -> str:
        lines = []
        for name, v in self.variables.items():
            squeeze = self.compressor.describe(v.stored.itemsize) if v.stored.kind in "biufmM" else "zarr's default"
            if v.route == "packed":
                diff = self.max_difference.get(name)
                extra = "" if diff is None else f"; max |zarr - CF| = {diff:.3g}"
                lines.append(f"  {name}: {v.stored} -> {v.dtype}, packed: {v.packing.describe()} -> {squeeze}{extra}")
            elif v.route == "as is":
                stored = "str" if v.stored.kind in "OT" else v.stored  # variable-length text
                lines.append(f"  {name}: {stored}, copied with its CF attributes -> {squeeze}")
            else:
                lines.append(f"  {name}: {v.dtype}, stored decoded -> {squeeze}")
            lines.extend(f"      note: {n}" for n in v.notes)
        lines.extend(f"  note: {n}" for n in self.notes)
        if self.source_bytes and self.store_bytes:
            lines.append(f"  size: {_mb(self.store_bytes)} in the store, {_mb(self.source_bytes)} in the netCDF file "
                         f"(ratio {self.store_bytes / self.source_bytes:.2f})")
        return "\n".join(lines)


def _mb(n: int) -> str:
    """A byte count for the summary: bytes, MB or GB."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    return f"{n / 1e6:.3g} MB" if n >= 1e5 else f"{n} bytes"


def _check_arguments(zarr_format: Any, chunks: Mapping[str, Any] | None, chunk_bytes: Any) -> None:
    if zarr_format not in (2, 3) or isinstance(zarr_format, bool):
        raise UsageError(f"zarr_format={zarr_format!r}: valid values are 2 and 3")
    lo, hi = (int(x * (1 << 20)) for x in CHUNK_MIB_RANGE)
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or not lo <= chunk_bytes <= hi:
        raise UsageError(f"chunk_bytes={chunk_bytes!r}: give {lo} to {hi} bytes (--chunk-mib "
                         f"{CHUNK_MIB_RANGE[0]:g} to {CHUNK_MIB_RANGE[1]:g})")
    for dim, size in (chunks or {}).items():
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 2**31:
            raise UsageError(f"chunks {dim}={size!r} (--chunks): sizes are whole numbers from 1 to {2**31}")


def convert(
    src: str | os.PathLike,
    dst: Any,
    *,
    zarr_format: int = 3,
    chunks: Mapping[str, int] | None = None,
    chunk_bytes: int = 8 << 20,
    compressor: Compressor | None = None,
    progress: bool = False,
    verify: bool | str | VerifyPlan = "full",
    engine: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> ConvertReport:
    """Convert the netCDF file ``src`` into a new zarr store ``dst``.

    Parameters
    ----------
    src : path or URL
        A netCDF file (local, or in object storage: read in ranged requests): NETCDF3 classic,
        64-bit offset or 64-bit data, NETCDF4 or NETCDF4_CLASSIC, or an HDF5 file (read through
        netCDF4, or h5netcdf where netCDF4 is missing).
    dst : path, URL or zarr store
        The zarr store to create; it must not exist (or be an empty directory), nor overlap ``src``.
    zarr_format : {3, 2}
        3: spec codecs as zarr v3 filters; 2: numcodecs_ext's numcodecs filters.
    chunks : mapping of str to int, optional
        Chunk size per dimension name (each must be a dimension of the file); others automatic.
    chunk_bytes : int
        The size automatic chunks aim at (default 8 MiB of decoded values), trailing dimensions
        kept whole: 16 KiB to 1 GiB.
    compressor : Compressor, optional
        Default: blosc (zstd inside, level 1, 1 MiB blocks) with a byte shuffle over the stored type (none for
        one-byte types).
    progress : bool
        Progress bars on stderr.
    verify : {"full", "sample:N", "none"} or VerifyPlan
        Read the result back and compare it with xarray's decoding of ``src`` (see
        :mod:`numcodecs_ext.cf.verify`) before writing any metadata: every chunk (``"full"``, the
        default; True), ``N`` chunks per array chosen at random (``"sample:N"``: the report says
        it sampled, ``verified`` stays False), or nothing (``"none"``; False).
    engine : str, optional
        The xarray engine that reads ``src`` (default: netcdf4, else h5netcdf or scipy).
    storage_options : mapping, optional
        For ``src`` and ``dst`` URLs (fsspec: credentials, endpoint ...); otherwise the standard
        configuration (``AWS_*`` variables including ``AWS_ENDPOINT_URL``, fsspec's files).

    Returns
    -------
    ConvertReport

    Raises
    ------
    UsageError
        A bad argument, a ``src`` that is not a netCDF file, a ``dst`` that exists or overlaps.
    ToolError
        ``src`` cannot be read (truncated, corrupt), or the result does not verify
        (:class:`~numcodecs_ext.store.errors.VerificationError`). Nothing that opens is left.
    """
    _check_arguments(zarr_format, chunks, chunk_bytes)
    checking = parse_verify({True: "full", False: "none"}[verify] if isinstance(verify, bool) else verify)
    compressor = compressor or DEFAULT
    source = check_source(src, storage_options=storage_options)
    try:
        import xarray  # noqa: F401
    except ImportError:
        raise UsageError('convert needs xarray and netCDF4: pip install "numcodecs_ext[xarray]"') from None
    from ..store.storage import Location

    from ..store.staging import refuse_zip_destination

    refuse_zip_destination(dst)
    loc = Location.parse(dst, storage_options=storage_options)
    loc.refuse_writes("convert writes the new store there")
    existed, resume = _check_destination(loc, source)
    engine = engine or _engine(source)
    report = ConvertReport(source.path, loc.display, zarr_format, compressor, source_bytes=source.size)
    opened: list[Any] = []
    try:
        with _quiet_warnings():
            plans = _plan(source, engine, chunks, chunk_bytes, compressor, zarr_format, opened)
            for plan in plans:
                report.variables.update({v.name: v for v in plan.variables.values()})
                where = "the root group" if plan.group is None else f"group {plan.group!r}"
                report.notes.extend(f"{where}: {n}" for n in plan.notes)
            stamp = {"version": 1, "source": _source_stamp(source), "engine": engine, "zarr_format": zarr_format}
            outcome = write_verify_commit(source, engine, loc, existed, plans, zarr_format, report.max_difference,
                                          progress=progress, verify=checking, stamp=stamp, resume=resume)
        report.verified = checking.complete
        report.verification = checking.summary(outcome.checked, outcome.chunks)
        report.resumed = outcome.resumed()
    except Exception as e:
        if source.remote:  # the storage client's error while a reader read the source: said so
            from .remote import storage_fault

            fault = storage_fault(source.location, e)
            if fault is not None and fault is not e:
                raise fault from None
        raise
    finally:
        for ds in opened:
            ds.close()
    report.store_bytes = sum(loc.walk().files.values()) if loc.kind != "zarr" else 0
    return report


def _source_stamp(source: Source) -> dict[str, Any]:
    """What identifies the source's contents without reading them: its size and modification
    time (local), or its ETag and last-modified time (object stores)."""
    if not source.remote:
        st = os.stat(source.path)
        return {"path": os.path.abspath(source.path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    loc = source.location
    try:
        info = loc.fs.info(loc.root)
    except Exception as e:  # noqa: BLE001 - said the tools' way
        raise loc.fault(e, "", "find the size of") from None
    keep = ("size", "ETag", "etag", "LastModified", "last_modified", "mtime", "md5_checksum", "generation")
    return {"path": source.path, **{k: str(info[k]) for k in keep if info.get(k) is not None}}


def _check_destination(loc: Any, source: Source) -> tuple[bool, str]:
    """UsageError unless ``loc`` is new, an empty directory, or holds the journal of an
    interrupted conversion (and no complete store of another), away from the source; whether it
    existed, and ``"partial"`` or ``"complete"`` for a journal beside no store or a complete
    one (committed, the journal not yet removed: resumed only by the very same conversion)."""
    src_loc = source.location or type(loc).parse(source.path)
    if loc.overlaps(src_loc):
        raise UsageError(f"{loc.display}: overlaps the source {source.path}; write the store elsewhere")
    obstacle = loc.obstacle()
    if obstacle is not None:
        raise UsageError(f"{loc.display}: cannot be created, {obstacle} is a file")
    try:
        if not loc.exists():
            if not loc.is_local:
                loc.walk()  # a bucket that does not exist is said as such (StoreNotFound)
            return False, ""
        if not loc.isdir():
            raise UsageError(f"{loc.display}: exists and is a file; convert writes a new store")
        listing = loc.walk()
    except (UsageError, StorageError):  # no bucket, access denied (2); a service gone (1)
        raise
    except OSError as e:
        raise UsageError(f"{loc.display}: cannot be used ({e})") from None
    if not listing.files and not listing.problems:
        return True, ""
    from ..store.staging import is_metadata_key
    from ..store.journal import CONVERT_JOURNAL, Journal, is_journal_key

    if any(is_journal_key(k) for k in listing.files) and Journal(loc, CONVERT_JOURNAL).load():
        complete = any(k in ("zarr.json", ".zgroup", ".zmetadata") for k in listing.files)
        return True, "complete" if complete else "partial"

    if listing.files and not any(is_metadata_key(k) for k in listing.files):
        raise UsageError(f"{loc.display}: exists and holds only chunks, no metadata (an interrupted "
                         "conversion: nothing in it opens); remove it and run again")
    raise UsageError(f"{loc.display}: exists; convert writes a new store (remove it or choose another name)")


def _engine(source: Source) -> str:
    """netCDF4 where it reads the file; h5netcdf for HDF5 files netCDF-C does not open (or
    without netCDF4); scipy for classic files without either."""
    import importlib.util

    if source.remote:  # a file object: h5netcdf (HDF5) or scipy (netCDF-3) read those
        from .remote import remote_engine

        return remote_engine(source.location, source.format)
    have = {m: importlib.util.find_spec(m) is not None for m in ("netCDF4", "h5netcdf", "scipy")}
    if have["netCDF4"]:
        if source.format != "HDF5" or not have["h5netcdf"]:
            return "netcdf4"
        try:
            with warnings.catch_warnings():  # netCDF4's notes on the file: said by _groups
                warnings.simplefilter("ignore", UserWarning)
                with shared_file(source.path):
                    return "netcdf4"
        except OSError:
            return "h5netcdf"
    if source.format == "HDF5" and have["h5netcdf"]:
        return "h5netcdf"
    if source.format in ("NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET") and have["scipy"]:
        return "scipy"
    raise UsageError(f"{source.path}: reading {source.format} files needs netCDF4: "
                     'pip install "numcodecs_ext[xarray]"')


@contextmanager
def _quiet_warnings() -> Any:
    """xarray's notes about a file's attributes (it reads them anyway; the report says what they
    mean) and zarr's about consolidated metadata in v3."""
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xr.SerializationWarning)
        warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
        warnings.filterwarnings("ignore", ".*does not have a Zarr V3 specification")  # said in the notes
        warnings.filterwarnings("ignore", ".*(decode_timedelta|timedelta).*", FutureWarning)
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        warnings.filterwarnings("ignore", "Duplicate dimension names", UserWarning)  # handled: see plan
        warnings.filterwarnings("ignore", "WARNING: unsupported", UserWarning)  # netCDF4's: a type it skips
        yield


def _groups(source: Source, engine: str) -> list[str | None]:
    """The file's groups, root first (None), as paths ``a``, ``a/b``."""
    out: list[str | None] = [None]
    src = source.target()
    if engine == "netcdf4":
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with shared_file(src) as nc:
                skipped = [m for m in (re.search(r"variable '(.*)' has (unsupported .*datatype)", str(w.message))
                                       for w in said) if m]
                if skipped:  # netCDF4-python leaves such a variable out: converting would lose it
                    name, why = skipped[0].groups()
                    raise ToolError(f"variable {name!r} has an {why.replace('unsupported', 'unsupported netCDF4')}"
                                    f" (e.g. a vlen of compounds), so convert would leave it out: drop it first "
                                    f"(ncks -x -v {name}), then convert")
                refuse_ragged(nc)
                out += walk_groups(nc, lambda g: g.path)
    elif engine == "h5netcdf":
        import h5netcdf

        with h5netcdf.File(src, "r", **H5NETCDF_OPTIONS) as f:
            refuse_ragged(f)
            out += walk_groups(f, lambda g: g.name)
    return out


def _open(source: Source, engine: str, group: str | None, raw: bool) -> Any:
    kwargs: dict[str, Any] = ({"mask_and_scale": False, "decode_times": False, "decode_timedelta": False,
                             "concat_characters": False} if raw else {})
    if engine == "h5netcdf":
        kwargs.update(H5NETCDF_OPTIONS)
    try:
        return open_source(source.target(), engine, group, chunks=None, **kwargs)
    except Exception as e:  # noqa: BLE001 - whatever xarray raises, it cannot read the file
        if source.remote:
            from .remote import storage_fault

            fault = storage_fault(source.location, e)
            if fault is not None:
                raise fault from None
        where = f" (group {group})" if group else ""
        raise ToolError(f"{source.path}{where}: xarray cannot read it ({type(e).__name__}: {e})") from None


def _plan(source: Source, engine: str, chunks: Mapping[str, int] | None, chunk_bytes: int,
          compressor: Compressor, zarr_format: int, opened: list[Any]) -> list[GroupPlan]:
    """Every group's plan, worked out (and every chunk argument checked) before writing; the
    datasets it opens are appended to ``opened`` (the caller closes them)."""
    try:
        groups = _groups(source, engine)
    except (UsageError, ToolError):
        raise
    except (OSError, ValueError, RuntimeError) as e:
        raise ToolError(f"{source.path}: cannot be read ({e})") from None
    for group in groups:
        opened.append(_open(source, engine, group, True))
        opened.append(_open(source, engine, group, False))
    dims = {str(d) for ds in opened for d in ds.dims}
    unknown = sorted(set(chunks or {}) - dims)
    if unknown:
        raise UsageError(f"chunks {', '.join(unknown)} (--chunks): not a dimension of {source.path}; its dimensions "
                         f"are {', '.join(sorted(dims)) or '(none)'}")
    plans = [plan_group(opened[2 * i], opened[2 * i + 1], g, chunks=chunks, chunk_bytes=chunk_bytes,
                        compressor=compressor, zarr_format=zarr_format) for i, g in enumerate(groups)]
    count = sum(math.prod(math.ceil(n / c) for n, c in zip(v.dataset[name].shape, p.chunks))
                for v in plans for name, p in v.variables.items() if p.chunks)
    if count > MAX_CHUNKS:
        raise UsageError(f"these chunks make {count} chunks in all (at most {MAX_CHUNKS}); choose larger "
                         "chunks (chunks, chunk_bytes; --chunks, --chunk-mib)")
    return plans
