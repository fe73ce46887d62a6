"""Choosing a packing: ``scale_offset`` + ``cast_value`` for floats stored as small integers, with
a guaranteed maximum error.

Given the data (or only its range) and either an absolute tolerance or an integer type,
:func:`choose_packing` returns the offset, scale, integer type and NaN code, and the largest
error any value in the range can get, **including the float rounding** of the codecs' own
arithmetic: the spec computes ``(x - offset) * scale`` and ``q / scale + offset`` in the data's
float type. Every packing returned has been run through the real codecs at both ends of the
range, both ways (the codes fit the integer type, and they decode to finite values: decoding
never overflows), with its NaN code and its fill value; since each step of the arithmetic is
monotonic, every value between the ends does the same.

The bound. With ``u`` the unit roundoff of the float type, ``M`` the largest ``|x - offset|``,
``Q`` the largest code magnitude and ``Y`` the largest decoded magnitude, every value decodes
within::

    0.5 / scale + u * (2 M + Q / scale + Y)   (+ half the smallest subnormal, if 1 / scale is one)

of itself: half a step from rounding to a code, plus one rounding in each of the four operations
(the cast of a code back to the float type is exact: the code is the rounded float
``(x - offset) * scale``, so it is either that float itself or below ``2**(p - 1)``). Each
rounding term is left out where its operation is exact, which the search arranges where it
helps: a power-of-two ``scale`` multiplies and divides exactly, an offset of 0 (or one within a
factor of two of every value: Sterbenz's lemma) subtracts exactly, and an offset of 0 adds
exactly. Where the values themselves are no finer than the step (a float32 near 1e6 is a
multiple of 0.0625), such a packing is **lossless**: ``max_error`` is 0. So a packing is found
wherever an integer type can hold one, and when none can the error says which limits are in the
way (the float type's largest scale, the number of codes, the float rounding itself).

``tests/cf/test_suggest.py`` checks the bound against the real codecs, exhaustively over every code
of the 8- and 16-bit types; ``tests/codecs/test_packing.py`` with hypothesis over random ranges of every
float type (tiny, subnormal, up to the float maximum, constant), tolerances and NaN flags,
through the numcodecs codecs and zarr v3 arrays. The search itself is in ``cf/search.py``, the
types it returns in ``cf/packed.py``.

Pure numpy over the codec classes; no xarray.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.dtypes import show
from .blocks import data_range as _data_range_of
from .packed import FLOAT_TYPES, INTEGER_TYPES, DataRange, Packing, as_data_range, is_real
from .search import Floats, finest, float_range, meeting, why_not, why_tolerance

__all__ = ["FLOAT_TYPES", "INTEGER_TYPES", "DataRange", "Packing", "as_data_range", "choose_packing",
           "data_range"]

def data_range(data: Any, **kwargs: Any) -> DataRange:
    """The range of ``data`` (numpy, zarr, dask, an xarray variable or anything with ``shape``,
    ``dtype`` and slicing), read in blocks of bounded size aligned to its chunks, so that arrays
    larger than memory stream through (see :func:`numcodecs_ext.cf.blocks.data_range`).

    >>> data_range(np.array([3.0, np.nan, -1.5]))
    DataRange(min=-1.5, max=3.0, has_nan=True, count=3)
    """
    lo, hi, has_nan, count = _data_range_of(data, **kwargs)
    return DataRange(lo, hi, has_nan, count)


_range_of = data_range  # (choose_packing's data_range argument hides the function)


def choose_packing(data: Any = None, *, data_range: DataRange | Sequence[float] | None = None,
                   tolerance: float | None = None, dtype: str | None = None,
                   nan: bool | str = "auto", float_dtype: Any = None) -> Packing:
    """The packing of ``data`` (or of ``data_range``) that meets ``tolerance`` with the smallest
    integer type, or the finest one in the integer type ``dtype``.

    Parameters
    ----------
    data : array-like, optional
        The values (numpy, zarr, dask ...); read once, in bounded blocks, for their range.
    data_range : DataRange or (min, max), optional
        Instead of ``data``: the range the values will have.
    tolerance : float, optional
        The largest absolute error allowed. The scale is then the coarsest that meets it
        (fewer distinct codes compress better), in the smallest type that holds the range.
    dtype : str, optional
        Instead of ``tolerance``: the integer type (one of :data:`INTEGER_TYPES`); the packing
        with the smallest guaranteed error in it.
    nan : "auto", True or False
        Reserve a code for NaN: "auto" does where the data holds NaN, or where only a range is
        given (it cannot tell).
    float_dtype : optional
        The unpacked float type (default: the data's, else float32).

    Raises
    ------
    ValueError
        An invalid argument, or no packing meets the tolerance (the message says which limit is
        in the way and what comes closest).

    Examples
    --------
    >>> p = choose_packing(np.array([250.0, 310.0, np.nan], "float32"), tolerance=0.01)
    >>> p.packed, p.nan_code, p.max_error <= 0.01
    (dtype('int16'), -32768, True)
    >>> choose_packing(data_range=(-1.0, 1.0), dtype="int8", nan=False).max_error < 1 / 127
    True
    >>> choose_packing(data_range=(1e6, 1e6 + 3), tolerance=1e-3, float_dtype="float32").lossless
    True
    """
    if (tolerance is None) == (dtype is None):
        raise ValueError("give exactly one of tolerance (the largest error allowed) or dtype "
                         f"(one of {', '.join(INTEGER_TYPES)})")
    if (data is None) == (data_range is None):
        raise ValueError("give exactly one of data or data_range")
    if isinstance(nan, np.bool_):
        nan = bool(nan)
    if not (nan == "auto" or nan is True or nan is False):
        raise ValueError(f"nan={show(nan)} is not valid; use 'auto', True or False")
    floats = _float_type(data, float_dtype)
    if dtype is not None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name not in INTEGER_TYPES:
            raise ValueError(f"dtype={show(dtype)} is not valid; use one of {', '.join(INTEGER_TYPES)}")
    else:
        if not is_real(tolerance) or not math.isfinite(float(tolerance)) or float(tolerance) <= 0:
            raise ValueError(f"tolerance={show(tolerance)} is not valid; give a finite number above 0")
    r = as_data_range(data_range) if data_range is not None else _range_of(data)
    reserve = (bool(r.has_nan) or r.has_nan is None) if nan == "auto" else bool(nan)
    if r.has_nan and not reserve:
        raise ValueError("the data holds NaN but nan=False: NaN needs a code (nan=True or 'auto')")

    f = Floats.of(floats)
    lo, hi = float_range(f, r)
    if dtype is not None:
        packed = np.dtype(dtype)
        p = finest(f, packed, r, lo, hi, reserve)
        if p is None:
            raise ValueError(f"the range [{lo:g}, {hi:g}] of {floats.name} values cannot be packed into "
                             f"{packed.name}: {why_not(f, packed, lo, hi, reserve)}")
        return p
    tol = float(tolerance)  # type: ignore[arg-type]
    best = None
    for name in INTEGER_TYPES:
        packed = np.dtype(name)
        fine = finest(f, packed, r, lo, hi, reserve)
        if fine is None:
            continue
        if best is None or fine.max_error < best.max_error:
            best = fine
        if fine.max_error > tol:
            continue
        found = meeting(f, packed, r, lo, hi, reserve, tol, fine)
        if found is not None:
            return found
    raise ValueError(f"no integer type meets tolerance={tol:g} for {floats.name} values in "
                     f"[{lo:g}, {hi:g}]: {why_tolerance(f, lo, hi, tol, reserve, best)}")


def _float_type(data: Any, float_dtype: Any) -> np.dtype:
    if float_dtype is not None:
        try:
            floats = np.dtype(float_dtype)
        except TypeError:
            floats = None
    else:
        given = getattr(data, "dtype", None)
        try:
            given = np.dtype(given) if given is not None else None
        except TypeError:
            given = None
        floats = given if given is not None and given.name in FLOAT_TYPES else np.dtype("float32")
    if floats is None or floats.name not in FLOAT_TYPES:
        shown = float_dtype.__name__ if isinstance(float_dtype, type) else show(float_dtype)
        raise ValueError(f"float_dtype={shown}"
                         f" is not valid; use one of {', '.join(FLOAT_TYPES)}")
    return floats
