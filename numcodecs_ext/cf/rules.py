"""How xarray's CF decoding reads a variable's attributes, as pure numpy rules.

xarray (``xarray.coding.variables``: ``CFMaskCoder``, ``CFScaleOffsetCoder``,
``_choose_float_dtype``) decodes a stored variable in this order:

1. ``_Unsigned = "true"`` on a signed integer type reads the bits as the unsigned type (and its
   ``_FillValue`` the same way); ``"false"`` on an unsigned type reads them as signed.
2. ``_FillValue`` and ``missing_value`` (each a scalar or a list) are the fill values; NaN or
   missing entries are ignored, and an integer variable's attribute that holds nothing else is
   dropped. Where any remain, the data is cast to the *mask type* and every element that
   compares equal to one of them becomes NaN (or NaT). The comparison is numpy's, in the mask
   type: a fill value that no code of the stored type can equal (NaN, a fraction, a value beyond
   the type's range) marks nothing, though it still makes the result float.
3. ``scale_factor`` and ``add_offset`` decode ``q * scale_factor + add_offset`` in the float type
   that :func:`decoded_dtype` gives.

This module states those rules once so that :mod:`numcodecs_ext.cf.attrs` (the codecs),
:func:`~numcodecs_ext.cf.zarr_encoding` and ``convert`` map a variable exactly as xarray reads
it; the tests check them against xarray's own decoding of real files. numpy only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = [
    "TIME_UNITS",
    "decoded_dtype",
    "fill_values",
    "is_time_like",
    "mask_dtype",
    "missing_codes",
    "scalar_attr",
    "stored_dtype",
]

#: the units that make a variable a timedelta for xarray (``"days since ..."`` makes a datetime)
TIME_UNITS = ("days", "hours", "minutes", "seconds", "milliseconds", "microseconds", "nanoseconds")

_SINCE = re.compile(r"(.+) since (.+)")  # xarray's _unpack_netcdf_time_units


def scalar_attr(attrs: Mapping[str, Any], key: str) -> Any:
    """``attrs[key]`` as one numpy scalar of its own type (a 1-element array, as netCDF stores
    every attribute, gives its element), or None when absent.

    >>> scalar_attr({"scale_factor": np.array([0.5], "f4")}, "scale_factor")
    np.float32(0.5)
    >>> scalar_attr({"scale_factor": 0.5}, "scale_factor")
    np.float64(0.5)
    """
    value = attrs.get(key)
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"CF attribute {key}={show_attribute(value)}: expected a single number, got {arr.size} values")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"CF attribute {key}={show_attribute(value)}: expected a number, got {_kind(arr.dtype)}")
    return arr.reshape(()).dtype.type(arr.reshape(())[()])


def stored_dtype(dtype: Any, attrs: Mapping[str, Any]) -> np.dtype:
    """The integer type xarray reads the stored bits as: ``_Unsigned`` applied.

    >>> stored_dtype("int8", {"_Unsigned": "true"}), stored_dtype("uint16", {"_Unsigned": "false"})
    (dtype('uint8'), dtype('int16'))
    """
    dtype = np.dtype(dtype)
    unsigned = attrs.get("_Unsigned")
    if unsigned is None or dtype.kind not in "iu":
        return dtype
    flag = str(unsigned)
    if dtype.kind == "i" and flag == "true":
        return np.dtype(f"u{dtype.itemsize}")
    if dtype.kind == "u" and flag == "false":
        return np.dtype(f"i{dtype.itemsize}")
    return dtype


def _attr_type(value: Any) -> np.dtype:
    """numpy's dtype of an attribute value as xarray sees it (``type(value)``)."""
    return np.dtype(type(value)) if not isinstance(value, np.ndarray) else value.dtype


def decoded_dtype(dtype: Any, attrs: Mapping[str, Any]) -> np.dtype:
    """The dtype xarray's ``_choose_float_dtype`` gives a variable of ``dtype`` (``_Unsigned``
    applied) with ``scale_factor``/``add_offset`` in ``attrs``.

    Both of one float type: that type (float64 for 32-bit integers); an ``add_offset`` alone or
    of another type: float64; a ``scale_factor`` alone: its own type (which may not be a float).
    Neither: float32 for float types up to 32 bits and integers up to 16 bits, else float64.

    >>> decoded_dtype("int16", {"scale_factor": np.float32(0.01), "add_offset": np.float32(0)})
    dtype('float32')
    >>> decoded_dtype("int32", {"scale_factor": np.float32(0.01), "add_offset": np.float32(0)})
    dtype('float64')
    >>> decoded_dtype("int16", {"scale_factor": np.int16(2)})
    dtype('int16')
    """
    dtype = np.dtype(dtype)
    sf, ao = scalar_attr(attrs, "scale_factor"), scalar_attr(attrs, "add_offset")
    if sf is not None or ao is not None:
        if sf is not None and ao is not None:
            t_sf, t_ao = _attr_type(sf), _attr_type(ao)
            if t_sf == t_ao and t_sf in (np.dtype("float32"), np.dtype("float64")):
                if dtype.itemsize == 4 and dtype.kind in "iu":
                    return np.dtype("float64")
                return t_sf
        if ao is not None:
            return np.dtype("float64")
        return _attr_type(sf)
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return np.dtype("float32")
    if dtype.kind in "iu" and dtype.itemsize <= 2:
        return np.dtype("float32")
    return np.dtype("float64")


def is_time_like(attrs: Mapping[str, Any]) -> str | None:
    """``"datetime"`` for units ``"<unit> since <date>"``, ``"timedelta"`` for a bare time unit
    (``"days"``), else None: the variables xarray decodes as times.

    >>> is_time_like({"units": "hours since 1900-01-01"}), is_time_like({"units": "days"})
    ('datetime', 'timedelta')
    >>> is_time_like({"units": "days accumulated"}) is None, is_time_like({"units": "days since"}) is None
    (True, True)
    """
    units = attrs.get("units")
    if units is None:
        return None
    units = str(units)
    if "since" in units:
        return "datetime" if _SINCE.match(units) else None
    return "timedelta" if units in TIME_UNITS else None


def fill_values(attrs: Mapping[str, Any], stored: np.dtype) -> tuple[list[Any], list[str]]:
    """The fill values xarray masks with, as it holds them, and notes on what it ignores.

    ``stored`` is the dtype before ``_Unsigned``. Each value keeps its own type (numpy's
    comparison in :func:`missing_codes` depends on it); ``_Unsigned`` turns the ``_FillValue``
    (not ``missing_value``) into the new type's value with the same bits.
    """
    stored = np.dtype(stored)
    values: list[Any] = []
    notes: list[str] = []
    unsigned = None if attrs.get("_Unsigned") is None else str(attrs.get("_Unsigned"))
    for key in ("missing_value", "_FillValue"):
        raw = attrs.get(key)
        if raw is None:
            continue
        kept = [v for v in np.ravel(np.asarray(raw)) if not _isnull(v)]
        if not kept:
            notes.append(f"{key}={show_attribute(raw)} marks nothing missing: it is not a number (xarray ignores it)")
            if stored.kind in "iu":
                continue
        if key == "_FillValue" and unsigned is not None and stored.kind in "iu" and kept:
            kept = [_unsigned_fill(x, stored, unsigned) for x in kept]
        values.extend(kept)
    return values, notes


def _unsigned_fill(value: Any, stored: np.dtype, unsigned: str) -> Any:
    """xarray's ``_convert_unsigned_fill_value`` for a ``_FillValue``."""
    try:
        with np.errstate(all="ignore"):
            if stored.kind == "i" and unsigned == "true":
                return np.array(value, dtype=stored).view(f"u{stored.itemsize}").item()
            if stored.kind == "u" and unsigned == "false":
                return np.dtype(f"i{stored.itemsize}").type(value)
    except (OverflowError, ValueError, TypeError):  # xarray fails to open such a file
        pass
    return value


def mask_dtype(stored: Any, attrs: Mapping[str, Any], *, decode_times: bool = True) -> np.dtype:
    """The type xarray casts the data to before comparing it with the fill values.

    ``stored`` is the dtype after ``_Unsigned``. Packed variables: :func:`decoded_dtype`; times
    (integers, decoded): int64; others: numpy's promotion to a type that holds NaN (float32 for
    integers up to 16 bits, float64 for wider ones, floats unchanged).
    """
    stored = np.dtype(stored)
    if "scale_factor" in attrs or "add_offset" in attrs:
        return decoded_dtype(stored, attrs)
    if decode_times and is_time_like(attrs) and stored.kind in "iu":
        return np.dtype("int64")
    if stored.kind in "iu":
        return np.dtype("float32" if stored.itemsize <= 2 else "float64")
    if stored.kind == "b":
        return np.dtype("object")
    return stored


def missing_codes(stored: Any, fills: list[Any], compare: np.dtype) -> list[Any]:
    """Every value of the ``stored`` type that xarray's mask turns into NaN: those whose cast to
    ``compare`` equals a fill value under numpy's comparison. Exact: every code of 8- and 16-bit
    integer types is tried; for wider integers and floats, each fill value's neighbourhood (all
    the codes a lossy cast can merge into it).

    >>> missing_codes("int16", [np.float64(np.nan), 40000], np.dtype("float32"))
    []
    >>> missing_codes("uint8", [np.int8(-1), np.uint8(255)], np.dtype("float32"))
    [255]
    """
    stored = np.dtype(stored)
    if not fills:
        return []
    if stored.kind in "iu" and stored.itemsize <= 2:
        info = np.iinfo(stored)
        candidates = np.arange(info.min, info.max + 1).astype(stored)
    else:
        candidates = _neighbourhood(stored, fills, compare)
    if candidates.size == 0:
        return []
    with np.errstate(all="ignore"):
        cast = candidates.astype(compare)
        hit = np.zeros(candidates.shape, bool)
        for fv in fills:
            try:
                hit |= np.asarray(cast == fv, dtype=bool)
            except (TypeError, OverflowError):  # a value numpy cannot compare: never equal
                continue
    return [c.item() for c in candidates[hit]]


def _neighbourhood(stored: np.dtype, fills: list[Any], compare: np.dtype) -> np.ndarray:
    """The values of ``stored`` near each fill value that a cast to ``compare`` can make equal to it."""
    out = []
    for fv in fills:
        try:
            f = float(fv)
        except (TypeError, ValueError, OverflowError):
            continue
        if not np.isfinite(f):
            continue
        if stored.kind == "f":
            with np.errstate(all="ignore"):
                x = stored.type(fv)
            if np.isfinite(x):
                out.append(np.array([np.nextafter(x, -np.inf, dtype=stored), x,
                                     np.nextafter(x, np.inf, dtype=stored)], dtype=stored))
            continue
        info = np.iinfo(stored)
        centre = int(fv) if isinstance(fv, (int, np.integer)) else int(round(f))
        bits = info.bits
        mantissa = np.finfo(compare).nmant + 1 if compare.kind == "f" else 64
        width = 2 ** max(bits - mantissa + 1, 1)
        lo, hi = max(info.min, centre - width), min(info.max, centre + width)
        if lo <= hi:
            out.append(np.arange(lo, hi + 1, dtype=object).astype(stored))
    return np.unique(np.concatenate(out)) if out else np.array([], dtype=stored)


def _isnull(v: Any) -> bool:
    if v is None:
        return True
    try:
        return bool(np.isnan(v))
    except (TypeError, ValueError):
        return False


def _kind(dtype: np.dtype) -> str:
    return {"U": "text", "S": "bytes", "O": "an object", "b": "a boolean"}.get(dtype.kind, str(dtype))


def show_attribute(value: Any) -> str:
    """An attribute value for a message: no numpy reprs."""
    arr = np.asarray(value)
    if arr.dtype.kind in "US":
        return repr(value if not isinstance(value, bytes) else value.decode("utf-8", "replace"))
    if arr.ndim == 0:
        v = arr[()]
        return f"{v.item()!r} ({arr.dtype})" if hasattr(v, "item") else repr(v)
    return f"{arr.tolist()!r} ({arr.dtype})"
