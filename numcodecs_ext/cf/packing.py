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
through the numcodecs codecs and zarr v3 arrays. The search itself is in ``cf/_search.py``.

Pure numpy over the codec classes; no xarray.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codecs._base import show as _show  # (one way to show a value in a message)
from ..core.dtypes import dtype_name
from .blocks import data_range as _data_range_of

__all__ = ["FLOAT_TYPES", "INTEGER_TYPES", "DataRange", "Packing", "as_data_range", "choose_packing",
           "data_range"]

#: packed types, smallest first
INTEGER_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
#: the unpacked types a packing is for
FLOAT_TYPES = ("float16", "float32", "float64")


@dataclass(frozen=True)
class DataRange:
    """The finite range of some data, whether it holds NaN (None: unknown), how many values."""

    min: float
    max: float
    has_nan: bool | None = None
    count: int | None = None


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


def _real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def as_data_range(value: Any) -> DataRange:
    """A :class:`DataRange` from a DataRange or a ``(min, max)`` pair of finite numbers.

    >>> as_data_range((0, 1.5))
    DataRange(min=0.0, max=1.5, has_nan=None, count=None)
    >>> as_data_range("0..1")
    Traceback (most recent call last):
    ...
    ValueError: data_range='0..1' is not valid; give a DataRange or a (min, max) pair of finite numbers
    """
    if isinstance(value, DataRange):
        r = value
    elif isinstance(value, (tuple, list, np.ndarray)) and len(value) == 2 and all(_real(v) for v in value):
        r = DataRange(float(value[0]), float(value[1]))
    else:
        raise ValueError(f"data_range={_show(value)} is not valid; give a DataRange or a (min, max) pair of "
                         "finite numbers")
    for name, v in (("min", r.min), ("max", r.max)):
        if not _real(v) or not math.isfinite(float(v)):
            raise ValueError(f"data_range {name}={_show(v)} is not valid; give a finite number "
                             "(±Infinity and NaN cannot be packed)")
    if float(r.min) > float(r.max):
        raise ValueError(f"data_range min={_show(r.min)} is above max={_show(r.max)}")
    if r.has_nan not in (None, True, False):
        raise ValueError(f"data_range has_nan={_show(r.has_nan)} is not valid; use True, False or None")
    return r


@dataclass(frozen=True)
class Packing:
    """Floats of ``dtype`` stored as ``packed`` integers: ``code = round((x - offset) * scale)``,
    NaN as ``nan_code``; every value in ``range`` decodes within ``max_error`` (0: exactly)."""

    dtype: np.dtype
    packed: np.dtype
    offset: float
    scale: float
    nan_code: int | None
    max_error: float
    range: DataRange

    def _scalar_map(self) -> dict[str, Any] | None:
        if self.nan_code is None:
            return None
        return {"encode": [["NaN", self.nan_code]], "decode": [[self.nan_code, "NaN"]]}

    @property
    def fill_value(self) -> float:
        """The array's fill value: NaN where a code stands for it, else the offset (code 0)."""
        return math.nan if self.nan_code is not None else self.offset

    @property
    def lossless(self) -> bool:
        """Whether every value in the range decodes to itself."""
        return self.max_error == 0

    def codecs(self) -> list[dict[str, Any]]:
        """The zarr v3 filters, as JSON."""
        cast: dict[str, Any] = {"data_type": dtype_name(self.packed)}
        if self.nan_code is not None:
            cast["scalar_map"] = self._scalar_map()
        return [{"name": "scale_offset", "configuration": {"offset": self.offset, "scale": self.scale}},
                {"name": "cast_value", "configuration": cast}]

    def filters(self) -> list[Any]:
        """The same as numcodecs codecs (for zarr v2 ``filters`` and standalone use)."""
        from ..codecs.cast_value import CastValue
        from ..codecs.scale_offset import ScaleOffset

        return [ScaleOffset(offset=self.offset, scale=self.scale, dtype=self.dtype.name),
                CastValue(data_type=self.packed.name, scalar_map=self._scalar_map(),
                          dtype=self.dtype.name)]

    def zarr_filters(self) -> list[Any]:
        """The same as zarr v3 codec objects."""
        from ..zarr3 import CastValue, ScaleOffset

        return [ScaleOffset(offset=self.offset, scale=self.scale),
                CastValue(data_type=self.packed.name, scalar_map=self._scalar_map())]

    def code(self, store: str = "packed.zarr", shape: Sequence[int] = (100,),
             chunks: Sequence[int] | None = None) -> str:
        """Python that creates a zarr v3 array with this packing."""
        cast = f'data_type="{self.packed.name}"'
        if self.nan_code is not None:
            cast += f", scalar_map={self._scalar_map()!r}"
        fill = 'float("nan")' if self.nan_code is not None else repr(self.offset)
        shape = tuple(int(n) for n in shape)
        chunks = tuple(int(c) for c in chunks) if chunks is not None else shape
        return (f"import zarr\nfrom numcodecs_ext.zarr3 import CastValue, ScaleOffset\n\n"
                f"z = zarr.create_array({store!r}, shape={shape!r}, "
                f"chunks={chunks!r}, dtype=\"{self.dtype.name}\",\n"
                f"                      fill_value={fill},\n"
                f"                      filters=[ScaleOffset(offset={self.offset!r}, scale={self.scale!r}),\n"
                f"                               CastValue({cast})])")

    def __str__(self) -> str:
        nan = f", NaN as {self.nan_code}" if self.nan_code is not None else ""
        error = "lossless" if self.lossless else f"max error {self.max_error:.3g}"
        return (f"{self.dtype.name} as {self.packed.name}: offset {self.offset:.10g}, scale "
                f"{self.scale:.10g}{nan}; {error}")


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
        raise ValueError(f"nan={_show(nan)} is not valid; use 'auto', True or False")
    floats = _float_type(data, float_dtype)
    if dtype is not None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
        if name not in INTEGER_TYPES:
            raise ValueError(f"dtype={_show(dtype)} is not valid; use one of {', '.join(INTEGER_TYPES)}")
    else:
        if not _real(tolerance) or not math.isfinite(float(tolerance)) or float(tolerance) <= 0:
            raise ValueError(f"tolerance={_show(tolerance)} is not valid; give a finite number above 0")
    r = as_data_range(data_range) if data_range is not None else _range_of(data)
    reserve = (bool(r.has_nan) or r.has_nan is None) if nan == "auto" else bool(nan)
    if r.has_nan and not reserve:
        raise ValueError("the data holds NaN but nan=False: NaN needs a code (nan=True or 'auto')")
    from ._search import _finest, _float_range, _Floats, _meeting, _why_not, _why_tolerance

    f = _Floats.of(floats)
    lo, hi = _float_range(f, r)
    if dtype is not None:
        packed = np.dtype(dtype)
        p = _finest(f, packed, r, lo, hi, reserve)
        if p is None:
            raise ValueError(f"the range [{lo:g}, {hi:g}] of {floats.name} values cannot be packed into "
                             f"{packed.name}: {_why_not(f, packed, lo, hi, reserve)}")
        return p
    tol = float(tolerance)  # type: ignore[arg-type]
    best = None
    for name in INTEGER_TYPES:
        packed = np.dtype(name)
        finest = _finest(f, packed, r, lo, hi, reserve)
        if finest is None:
            continue
        if best is None or finest.max_error < best.max_error:
            best = finest
        if finest.max_error > tol:
            continue
        found = _meeting(f, packed, r, lo, hi, reserve, tol, finest)
        if found is not None:
            return found
    raise ValueError(f"no integer type meets tolerance={tol:g} for {floats.name} values in "
                     f"[{lo:g}, {hi:g}]: {_why_tolerance(f, lo, hi, tol, reserve, best)}")


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
        shown = float_dtype.__name__ if isinstance(float_dtype, type) else _show(float_dtype)
        raise ValueError(f"float_dtype={shown}"
                         f" is not valid; use one of {', '.join(FLOAT_TYPES)}")
    return floats
