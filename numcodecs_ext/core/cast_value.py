"""Value conversion between numeric data types, as the zarr ``cast_value`` codec defines it.

Pure numpy (plus ml_dtypes for the narrow types); knows nothing about numcodecs or zarr.

Every element is converted with a *single* correct rounding, whatever the source and target:
float64 to float16 is rounded once (not through float32), 64-bit integers above 2**53 are rounded
exactly, and the narrow ml_dtypes floats (bfloat16, float8/6/4) are rounded here rather than by
ml_dtypes, whose conversions from float64 go through float32 and so round twice.

The order of the spec is kept for every element: (1) the scalar map, (2) exact representation,
(3) rounding, then the out-of-range rule. NaN and infinities going to a type that cannot hold them
are errors unless the scalar map maps them, even with ``clamp`` or ``wrap``.

Scalar-map matching: a key that is a NaN with the dtype's canonical NaN bit pattern (what the JSON
string ``"NaN"`` decodes to) matches *every* NaN, whatever its sign or payload; a NaN key with any
other bit pattern (written in JSON as hex, e.g. ``"0x7fc00001"``) matches exactly that bit pattern;
every other key matches by numerical equality (so ``0`` matches both ``+0.0`` and ``-0.0``).
Entries are matched against the input only (they never chain) and the first matching entry wins.

The work is done in cache-sized blocks, so the only array as large as the data is the output
(:mod:`.cast_plan`; the rounding kernels are :mod:`.cast_rounding`'s).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _native, codetable
from .cast_plan import CastPlan
from .cast_rounding import OUT_OF_RANGE_MODES, ROUNDING_MODES, CastError, is_exact_cast
from .dtypes import NumericInfo, numeric_info
from .scalar_map import PreparedMap, cache_key, prepared

__all__ = [
    "CastError",
    "OUT_OF_RANGE_MODES",
    "ROUNDING_MODES",
    "NumericInfo",
    "cast_array",
    "cast_plan",
    "cast_scalar",
    "is_exact_cast",
    "numeric_info",
    "reserved_codes",
]


def reserved_codes(decode_map: Sequence[tuple[Any, Any]], coded: Any, decoded: Any,
                   rounding: str, out_of_range: str | None) -> list[tuple[Any, Any]]:
    """The entries ``(code, value)`` of a decode map (``coded`` -> ``decoded`` dtype) that read
    ``code`` as something other than its plain cast to ``decoded`` would: codes that only an
    input the encode map claims may produce (see :class:`~.scalar_map.PreparedMap`).

    >>> reserved_codes([(1000, 0), (7, 7)], "uint16", "uint16", "nearest-even", None)
    [(1000, 0)]
    >>> reserved_codes([(0, np.nan)], "uint8", "float64", "nearest-even", None)
    [(0, nan)]
    """
    src, tgt = numeric_info(np.dtype(coded)), numeric_info(np.dtype(decoded))
    prepared_map = prepared(decode_map, src, tgt)
    out = []
    for entry in prepared_map.entries:  # (the first of repeated keys: the one that applies)
        key, value = prepared_map.pairs[entry.index]
        raw_key = getattr(key, "value", key)
        value_bits = entry.value_bits
        try:
            plain = cast_array(np.asarray(raw_key, src.dtype), tgt.dtype, rounding=rounding,
                               out_of_range=out_of_range)
        except ValueError:  # the code has no plain reading: the map alone gives it one
            out.append((key, value))
            continue
        mapped = value_bits.view(tgt.dtype)
        with np.errstate(invalid="ignore"):
            same = bool(plain == mapped) or bool(np.isnan(np.asarray(plain, np.float64))
                                                 and np.isnan(np.asarray(mapped, np.float64)))
        if not same:
            out.append((key, value))
    return out


def cast_array(
    arr: np.ndarray,
    dtype: Any,
    *,
    rounding: str = "nearest-even",
    out_of_range: str | None = None,
    scalar_map: Sequence[tuple[Any, Any]] = (),
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Convert the values of ``arr`` to ``dtype`` as the ``cast_value`` codec specifies.

    Parameters
    ----------
    arr : numpy.ndarray
        Input of any integer or real float dtype, any byte order, layout or shape (0-d too).
    dtype : dtype-like
        Target data type.
    rounding : str
        One of :data:`ROUNDING_MODES`.
    out_of_range : {"clamp", "wrap", None}
        What to do with values beyond the target's range; ``None`` makes them an error.
    scalar_map : sequence of (key, value)
        Keys are scalars of ``arr.dtype``, values scalars of ``dtype``; see the module docstring
        for how keys match. The first matching entry wins.
    out : numpy.ndarray, optional
        C-contiguous native array of ``dtype`` and ``arr.shape`` to write into.

    Returns
    -------
    numpy.ndarray
        C-contiguous array of ``dtype`` with ``arr``'s shape.

    Raises
    ------
    ValueError
        A value that neither the map, exact representation nor rounding + ``out_of_range`` can
        convert (the message names it), or an invalid mode.

    Examples
    --------
    >>> x = np.array([np.nan, 0.4, 2.5, 254.6, 300.0])
    >>> cast_array(x, "uint8", out_of_range="clamp", scalar_map=[(np.nan, np.uint8(0))])
    array([  0,   0,   2, 255, 255], dtype=uint8)
    >>> cast_array(np.array([1.0004882812500002]), "float16")[0]
    np.float16(1.001)
    """
    arr = np.asarray(arr)
    tgt = numeric_info(np.dtype(dtype))
    src = numeric_info(arr.dtype)
    cast = cast_plan(src, tgt, rounding, out_of_range, scalar_map)
    if out is None:
        out = np.empty(arr.shape, tgt.dtype)
    elif out.shape != arr.shape or out.dtype != tgt.dtype or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous {tgt.name} array of shape {arr.shape}, got "
            f"{out.dtype} {out.shape}"
        )
    if not (cast.exact and not cast.entries) and _table_cast(arr, cast, scalar_map, out):
        return out
    return cast.run(arr, out)


def cast_plan(src: NumericInfo, tgt: NumericInfo, rounding: str, out_of_range: str | None,
              scalar_map: Sequence[tuple[Any, Any]] = ()) -> CastPlan:
    """The conversion plan for this configuration, made once and shared by every call and
    thread: cached on the map when it is a :class:`~.scalar_map.PreparedMap` (what the codecs
    pass), else by the configuration when there is no map; a plain sequence gets a new plan."""
    if isinstance(scalar_map, PreparedMap) and scalar_map.src.dtype == src.dtype:
        key = (tgt.dtype, rounding, out_of_range)
        plan = scalar_map.plans.get(key)
        if plan is None:
            plan = scalar_map.plans[key] = CastPlan(src, tgt, rounding, out_of_range, scalar_map)
        return plan
    if not scalar_map:
        return _unmapped_plan(src, tgt, rounding, out_of_range)
    return CastPlan(src, tgt, rounding, out_of_range, scalar_map)


@functools.lru_cache(maxsize=512)
def _unmapped_plan(src: NumericInfo, tgt: NumericInfo, rounding: str, out_of_range: str | None
                   ) -> CastPlan:
    return CastPlan(src, tgt, rounding, out_of_range, ())


def _table_cast(arr: np.ndarray, cast: CastPlan, scalar_map: Sequence[tuple[Any, Any]],
                out: np.ndarray) -> bool:
    """Cast one- or two-byte codes by looking up the exact cast of every possible code (see
    :mod:`.codetable`); False where that does not apply. Only with the compiled look-up: numpy's
    own gather is slower than the blocked cast."""
    if (_native.kernels() is None or not codetable.codes_of(arr.dtype)
            or cast.tgt.dtype.itemsize not in (1, 2, 4, 8)):
        return False
    kw = {"rounding": cast.rounding, "out_of_range": cast.mode, "scalar_map": cast.map}
    map_key = cache_key(scalar_map)
    if map_key is None:
        return False
    key = ("cast", arr.dtype, cast.tgt.dtype, cast.rounding, cast.mode, map_key)

    def build() -> np.ndarray | None:
        try:
            return cast_array(codetable.domain(arr.dtype), cast.tgt.dtype, **kw)
        except ValueError:  # some code cannot be cast: the blocked cast raises if it is present
            return None

    table = codetable.lookup(key, arr, build)
    return table is not None and codetable.take(arr, table, out.reshape(-1))


def cast_scalar(value: Any, src_dtype: Any, dtype: Any, **kwargs: Any) -> np.generic:
    """Cast one scalar exactly as :func:`cast_array` casts elements (used for fill values).

    Examples
    --------
    >>> cast_scalar(np.nan, "float64", "uint8", scalar_map=[(np.nan, 0)])
    np.uint8(0)
    """
    a = np.array(value, dtype=np.dtype(src_dtype))
    return cast_array(a, dtype, **kwargs)[()]
