"""Decoding one- or two-byte codes through a table of the exact result of every possible code.

A uint8, int16, float16, bfloat16 or float8 array has at most 65536 distinct elements. Decoding
it (cast_value, or cast_value then scale_offset) can therefore compute the result of every
possible code once, with the reference kernels, and then look each element up: the result is the
reference result by construction, and the look-up is one pass at memory speed with the compiled
kernels (:mod:`._native`). Tables are cached by everything they depend on (zarr decodes chunk
after chunk with the same configuration); where some code would raise, there is no table and
the reference kernels run, so errors come from the same place as ever.

Pure numpy; knows nothing about numcodecs or zarr.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

from . import _native
from .blocks import scratch

__all__ = ["MIN_ELEMENTS_PER_CODE", "cached", "domain", "exactly", "lookup", "take", "unsigned"]

T = TypeVar("T")

#: a table is built only for arrays with this many elements per possible code (building one for
#: two-byte codes takes about a millisecond, as long as decoding a million elements); a cached
#: table is used for arrays of any size
MIN_ELEMENTS_PER_CODE = 16
#: tables kept (a two-byte table of float64 is 512 KiB)
MAX_TABLES = 64

_CACHE: dict[Hashable, Any] = {}
#: ... or once this many arrays were decoded under one key: small chunks pay about 20 µs each
#: in set-up without a table, so a table pays for itself after about as many as this
MIN_CALLS = 64
#: (elements, arrays) decoded so far without a table, per key: many small chunks of one
#: configuration earn a table as one large chunk does (approximate: a race only delays it)
_SEEN: dict[Hashable, tuple[int, int]] = {}
_LOCK = threading.Lock()
_MISSING = object()
#: the unsigned integer dtype of each item size (built once: a dtype from a string is slow)
_UINT = {n: np.dtype(f"u{n}") for n in (1, 2, 4, 8)}


def codes_of(dtype: np.dtype) -> int:
    """How many possible codes ``dtype`` has (0 if it is too wide for a table)."""
    return 1 << (8 * dtype.itemsize) if dtype.itemsize <= 2 else 0


def domain(dtype: Any) -> np.ndarray:
    """Every possible element of ``dtype`` (one or two bytes), element ``k`` being the one whose
    bytes, read as a native unsigned integer, are ``k``: the index a table is looked up by.

    Examples
    --------
    >>> domain(np.dtype("int8"))[[0, 127, 128, 255]]
    array([   0,  127, -128,   -1], dtype=int8)
    """
    dtype = np.dtype(dtype)
    return np.arange(codes_of(dtype), dtype=f"u{dtype.itemsize}").view(dtype)


def exactly(value: Any) -> tuple[Any, ...]:
    """A hashable key for a numeric scalar that tells apart every bit pattern (0.0 from -0.0,
    NaN payloads); TypeError for object scalars."""
    a = np.asarray(value)
    if a.dtype.hasobject:
        raise TypeError("not a numeric scalar")
    return (a.dtype, a.tobytes())


def lookup(key: Hashable, arr: np.ndarray, build: Callable[[], T]) -> T | None:
    """The cached ``build()`` for ``key``; built (and cached) only once the arrays looked up
    under ``key`` have had at least :data:`MIN_ELEMENTS_PER_CODE` elements per possible code
    in all, or were :data:`MIN_CALLS` arrays, else None."""
    found = _CACHE.get(key, _MISSING)  # (a dict look-up is atomic: no lock on the hot path)
    if found is not _MISSING:
        return found
    elements, calls = _SEEN.get(key, (0, 0))
    elements, calls = elements + arr.size, calls + 1
    if elements < MIN_ELEMENTS_PER_CODE * codes_of(arr.dtype) and calls < MIN_CALLS:
        if len(_SEEN) >= 4 * MAX_TABLES:
            _SEEN.clear()
        _SEEN[key] = (elements, calls)
        return None
    with _LOCK:
        if len(_CACHE) >= MAX_TABLES:
            _CACHE.clear()
        _CACHE[key] = None  # while building: no table (build() may cast through this module)
        _SEEN.pop(key, None)
    try:
        value = build()
    except BaseException:
        _CACHE.pop(key, None)
        raise
    _CACHE[key] = value
    return value


def cached(key: Hashable) -> Any:
    """What :func:`lookup` built for ``key``, or None (nothing is counted or built)."""
    return _CACHE.get(key)


def unsigned(itemsize: int) -> np.dtype:
    """The unsigned integer dtype of ``itemsize`` (1, 2, 4 or 8) bytes."""
    return _UINT[itemsize]


def take(arr: np.ndarray, table: np.ndarray, flat: np.ndarray) -> bool:
    """``flat[:] = table[code of each element of arr, in C order]`` with the compiled kernel;
    False (nothing written) if the compiled kernels are not available.

    ``table`` is indexed as :func:`domain` orders the codes; ``flat`` is 1-D, C-contiguous, of
    ``table``'s dtype (1, 2, 4 or 8 bytes an item).
    """
    kernels = _native.kernels()
    if kernels is None or table.dtype.itemsize not in (1, 2, 4, 8) or not flat.flags.aligned:
        return False  # (the compiled look-up writes aligned items only)
    # as plain unsigned integers: the buffer protocol cannot describe the ml_dtypes types
    size, item = arr.dtype.itemsize, table.dtype.itemsize
    bits, table_bits, out_bits = _UINT[size], table.view(_UINT[item]), flat.view(_UINT[item])
    if not (arr.flags.c_contiguous and arr.flags.aligned):  # one copy of the codes, then one call
        copy = scratch("codes", arr.size, arr.dtype).reshape(arr.shape)
        np.copyto(copy, arr)
        arr = copy
    kernels.take(arr.reshape(-1).view(bits), table_bits, out_bits, size, item)
    return True
