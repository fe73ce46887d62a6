"""Suggest how to store float arrays as small integers: scale_offset + cast_value, per integer type.

For every float array of a zarr store (v2 or v3) or netCDF file, the range is read block by
block (bounded blocks aligned to the stored chunks: memory stays flat whatever the array's size
or shape), then for each integer type the packing with the smallest guaranteed error is shown,
with the error measured and the compression ratio on a sample (4 MB of the array in all, a few
chunk-aligned blocks spread through it: the floats' bytes over the bytes once packed and
zstd-compressed). With ``--tolerance`` the coarsest packing that meets it in the smallest type is
marked, and the Python that creates such an array is printed, with chunks taken from the
source's own chunking (its netCDF/HDF5 or zarr chunks where they are of a sensible size, else
about 8 MB with the trailing dimensions whole).

Examples::

    numcodecs-ext suggest era5.zarr --tolerance 0.01
    numcodecs-ext suggest data.nc --array t2m --dtype int16 --json
    numcodecs-ext suggest s3://bucket/era5.nc --tolerance 0.01
"""

from __future__ import annotations

import contextlib
import math
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from ..store.errors import ToolError, UsageError
from .blocks import SAMPLE_BYTES, chunks_of, propose_chunks, sample
from .blocks import data_range as _stream_range
from ..core.dtypes import show
from .packing import FLOAT_TYPES, INTEGER_TYPES, DataRange, Packing, choose_packing

__all__ = ["result_json", "row_json", "suggest", "suggest_array"]


def _measure(packing: Packing, pieces: list[np.ndarray]) -> tuple[float, float]:
    """(largest error, compression ratio: float bytes over packed + zstd bytes) of ``packing``
    on the sample ``pieces`` (each compressed on its own, as chunks are)."""
    import numcodecs

    so, cv = packing.filters()
    zstd = numcodecs.Zstd(level=3)
    err, raw, stored = 0.0, 0, 0
    for piece in pieces:
        x = np.ascontiguousarray(piece, dtype=packing.dtype)
        codes = cv.encode(so.encode(x))
        back = so.decode(cv.decode(codes))
        nan = np.isnan(x)
        if not np.array_equal(nan, np.isnan(back)):
            raise ToolError(f"the packing {packing} does not keep NaN where the data has it")
        if not nan.all():
            finite = ~nan
            err = max(err, float(np.max(np.abs(back[finite].astype(np.float64) - x[finite].astype(np.float64)))))
        raw += x.nbytes
        stored += len(zstd.encode(np.ascontiguousarray(codes).tobytes()))
    if err > packing.max_error:  # never report a guarantee the data itself contradicts
        raise ToolError(f"the packing {packing} measured an error of {err:.3g} on the data, above "
                        "its guarantee: this is a bug in numcodecs_ext, please report it")
    return err, raw / max(1, stored)


def _check_tolerance(tolerance: Any) -> float | None:
    if tolerance is None:
        return None
    if isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, (int, float, np.integer,
                                                                           np.floating)):
        raise UsageError(f"tolerance {show(tolerance)} is not a number; give the largest absolute "
                         "error allowed")
    t = float(tolerance)
    if not math.isfinite(t) or t <= 0:
        raise UsageError(f"tolerance {t!r} is not valid; give a finite number above 0 (the largest "
                         "absolute error allowed)")
    return t


def _check_dtype(dtype: Any) -> str | None:
    if dtype is not None and dtype not in INTEGER_TYPES:
        raise UsageError(f"dtype {show(dtype)} is not valid; use one of {', '.join(INTEGER_TYPES)}")
    return dtype


def suggest_array(array: Any, *, tolerance: float | None = None, dtype: str | None = None,
                  on_bytes: Callable[[int], None] | None = None) -> dict[str, Any]:
    """The range of ``array`` and a row per integer type (or only ``dtype``): packing, guaranteed
    and measured error, compression ratio on a sample; ``choice``: what ``tolerance`` or ``dtype``
    picks (None if nothing meets the tolerance, with ``why``); ``chunks``: the chunks proposed for
    a packed copy.

    ``array`` is anything with ``shape``, ``dtype`` and slicing (numpy, zarr, dask, an xarray
    variable); it is read in bounded blocks aligned to its chunks, and ``on_bytes`` is told how
    many bytes each block had.
    """
    tolerance = _check_tolerance(tolerance)
    dtype = _check_dtype(dtype)
    floats = np.dtype(array.dtype)
    if floats.name not in FLOAT_TYPES:
        raise UsageError(f"the array is {floats}: suggest packs {', '.join(FLOAT_TYPES)} arrays")
    shape = tuple(int(n) for n in array.shape)
    if math.prod(shape) >= 2**63:  # beyond what numpy (and any store) can address
        raise ToolError(f"the array claims {math.prod(shape)} values (shape {shape}): more than can "
                        "be addressed, let alone read; its metadata cannot be right")
    reader = _Counting(array, on_bytes) if on_bytes is not None else array
    lo, hi, has_nan, count = _stream_range(reader)
    r = DataRange(lo, hi, has_nan, count)
    pieces = sample(array, budget=SAMPLE_BYTES)
    rows: list[dict[str, Any]] = []
    for name in ([dtype] if dtype else INTEGER_TYPES):
        try:
            p = choose_packing(data_range=r, dtype=name, nan="auto", float_dtype=floats)
        except ValueError as e:
            rows.append({"dtype": name, "error": str(e)})
            continue
        measured, ratio = _measure(p, pieces)
        rows.append({"dtype": name, "packing": p, "max_error": p.max_error,
                     "measured_error": measured, "ratio": ratio})
    shape = tuple(int(n) for n in array.shape)
    result: dict[str, Any] = {"range": r, "rows": rows, "choice": None, "why": None,
                              "chunks": propose_chunks(shape, floats.itemsize, chunks_of(array)),
                              "shape": shape, "dtype": floats}
    choice = None
    if tolerance is not None:
        try:
            choice = choose_packing(data_range=r, tolerance=tolerance, float_dtype=floats)
        except ValueError as e:
            result["why"] = str(e)
    elif dtype is not None and "packing" in rows[0]:
        choice = rows[0]["packing"]
    if choice is not None:
        measured, ratio = _measure(choice, pieces)
        label = f"{choice.packed.name} (tolerance)" if tolerance is not None else choice.packed.name
        if tolerance is not None:
            rows.append({"dtype": label, "packing": choice, "max_error": choice.max_error,
                         "measured_error": measured, "ratio": ratio, "chosen": True})
        else:
            rows[0]["chosen"] = True
        result["choice"] = choice
    return result


class _Counting:
    """An array whose block reads are reported (bytes) to a callback: the progress bar."""

    def __init__(self, array: Any, on_bytes: Callable[[int], None]) -> None:
        self._array, self._on_bytes = array, on_bytes
        self.shape, self.dtype = array.shape, array.dtype
        self.chunks = chunks_of(array)

    def __getitem__(self, key: Any) -> np.ndarray:
        out = np.asarray(self._array[key])
        self._on_bytes(out.nbytes)
        return out


# -- sources ----------------------------------------------------------------------------------


class _Variable:
    """A netCDF variable as xarray decodes it (CF scale/offset and fill applied), read lazily:
    only the slices asked for are read, in the file's chunks (``chunks``)."""

    def __init__(self, variable: Any) -> None:
        self._variable = variable
        self.shape = tuple(int(n) for n in variable.shape)
        self.dtype = np.dtype(variable.dtype)
        self.chunks = chunks_of(variable)

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self._variable[key].values)


@contextmanager
def open_arrays(src: Any, name: str | None = None, *,
                storage_options: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """``{name: array}`` of the float arrays of ``src`` (a zarr store or netCDF file: a path, a
    URL such as ``s3://bucket/file.nc``, or a zarr store object), or only ``name``; the arrays
    read lazily, in blocks (a remote netCDF file in ranges, never downloaded whole).

    UsageError when ``src`` does not exist or is neither, when ``name`` is not one of its arrays
    or not a float array, and when it has no float arrays.
    """
    from ..store.storage import Location
    from .remote import netcdf_groups, open_netcdf

    loc = Location.parse(src, storage_options=storage_options)
    if not loc.exists():
        loc.walk()  # a bucket that does not exist is said as such (StoreNotFound)
        raise UsageError(f"{loc.display} does not exist")
    if loc.isfile() and loc.is_local and zipfile.is_zipfile(loc.root):  # a zarr ZipStore
        zipped = Location.parse(f"zip://::{loc.root}")
        zipped.display = loc.display
        yield _select(_zarr_arrays(zipped), name, loc.display)
        return
    if loc.isfile():
        with contextlib.ExitStack() as opened:
            arrays = {}
            for group in [None, *netcdf_groups(loc)]:  # variables in groups by their path, as in zarr
                ds = opened.enter_context(open_netcdf(loc, group=group, mask_and_scale=True, cache=False))
                arrays.update({f"{group}/{k}" if group else str(k): _Variable(ds.variables[k])
                               for k in ds.data_vars})
            yield _select(arrays, name, loc.display)
        return
    yield _select(_zarr_arrays(loc), name, loc.display)


def _zarr_arrays(loc: Any) -> dict[str, Any]:
    import zarr

    from ..store.staging import LocationStore
    from ..store.storage import StorageError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            node = zarr.open(store=LocationStore(loc), mode="r")
        except (StorageError, UsageError):  # the store's own errors: no bucket, denied, unreachable
            raise
        except Exception as e:  # noqa: BLE001 - whatever zarr says: not a store, said plainly
            raise UsageError(f"{loc.display} is not a zarr store or netCDF file ({e})") from None
        if hasattr(node, "shape"):
            return {PurePosixPath(loc.root).name or loc.display: node}
        try:
            return {path: a for path, a in node.members(max_depth=None) if hasattr(a, "shape")}
        except (StorageError, UsageError):
            raise
        except Exception as e:  # noqa: BLE001
            raise ToolError(f"{loc.display}: the zarr hierarchy cannot be read ({e})") from None


def _select(arrays: dict[str, Any], name: str | None, display: str) -> dict[str, Any]:
    floats = {k: a for k, a in arrays.items() if np.dtype(a.dtype).name in FLOAT_TYPES}
    if name is not None:
        if name not in arrays:
            raise UsageError(f"no array {name!r} in {display}; it has {', '.join(sorted(arrays)) or 'none'}")
        if name not in floats:
            raise UsageError(f"array {name!r} is {np.dtype(arrays[name].dtype)}: only float arrays "
                             f"({', '.join(FLOAT_TYPES)}) are packed")
        return {name: floats[name]}
    if not floats:
        found = ", ".join(f"{k} ({np.dtype(a.dtype)})" for k, a in sorted(arrays.items())) or "no arrays"
        raise UsageError(f"{display} has no float arrays to pack ({', '.join(FLOAT_TYPES)}); it has {found}")
    return floats


def suggest(src: Any, *, array: str | None = None, tolerance: float | None = None,
            dtype: str | None = None, progress: bool = False,
            storage_options: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """:func:`suggest_array` for every float array of ``src`` (or only ``array``):
    ``{name: result}``; an array whose data cannot be packed or read has ``{"error": why}``
    instead, and the others are still done. A progress bar (stderr) follows the bytes read if
    ``progress``.

    ``src`` is a zarr store or netCDF file: a local path, an fsspec URL (``s3://``, ``gs://``,
    ``https://`` ...; ``storage_options`` for its filesystem, else the standard configuration
    such as the ``AWS_*`` variables), or a zarr store object.

    UsageError (a ValueError) for a ``src`` that does not exist or holds no float arrays, an
    unknown ``array``, an invalid ``tolerance`` or ``dtype``, a bucket that does not exist or
    access that is denied. A storage service that stops answering ends the run
    (:class:`~numcodecs_ext.store.storage.Unreachable`, a ToolError).
    """
    tolerance = _check_tolerance(tolerance)
    dtype = _check_dtype(dtype)
    from ..store.progress import Progress
    from ..store.storage import Unreachable

    with _quiet_about_the_file(), open_arrays(src, array, storage_options=storage_options) as arrays:
        total = sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize for a in arrays.values())
        results = {}
        with Progress(total, "range", enabled=progress) as bar:
            for name, a in arrays.items():
                try:
                    results[name] = suggest_array(a, tolerance=tolerance, dtype=dtype,
                                                  on_bytes=lambda n: bar.advance(n))
                except (UsageError, Unreachable):  # denied, no bucket, a service gone: not per array
                    raise
                except (ValueError, ToolError) as e:  # the data: empty, only NaN, ±Infinity
                    results[name] = {"error": str(e)}
                except (OSError, RuntimeError, KeyError) as e:  # a chunk or file that cannot be read
                    if isinstance(e, (RecursionError, NotImplementedError)):
                        raise
                    results[name] = {"error": f"the data cannot be read ({type(e).__name__}: {e})"}
    return results


@contextmanager
def _quiet_about_the_file() -> Iterator[None]:
    """xarray's notes on a netCDF file's own attributes (several fill values, repeated dimension
    names), given when it opens and again when it reads: suggest reads the values as xarray
    decodes them, which is what the notes say."""
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xr.SerializationWarning)
        warnings.filterwarnings("ignore", "Duplicate dimension names", UserWarning)
        yield


# -- results as JSON ---------------------------------------------------------------------------


def row_json(row: dict[str, Any]) -> dict[str, Any]:
    p = row.get("packing")
    if p is None:
        return {"dtype": row["dtype"], "error": row["error"]}
    return {"dtype": p.packed.name, "offset": p.offset, "scale": p.scale, "nan_code": p.nan_code,
            "max_error": p.max_error, "measured_error": row["measured_error"],
            "ratio": row["ratio"], "chosen": bool(row.get("chosen")), "codecs": p.codecs()}


def result_json(res: dict[str, Any]) -> dict[str, Any]:
    if "error" in res:
        return {"error": res["error"]}
    return {"range": asdict(res["range"]), "rows": [row_json(r) for r in res["rows"]],
            "chunks": list(res["chunks"]), "why": res.get("why")}
