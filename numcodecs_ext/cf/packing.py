"""Choosing a packing: ``scale_offset`` + ``cast_value`` for floats stored as small integers, with
a guaranteed maximum error.

Given the data (or only its range) and either an absolute tolerance or an integer type,
:func:`choose_packing` returns the offset, scale, integer type and NaN code, and the largest
error any value in the range can get, **including the float rounding** of the codecs' own
arithmetic (the spec computes ``(x - offset) * scale`` and ``q / scale + offset`` in the data's
float type, which for float32 adds a few ulp of the largest magnitude involved). With ``u`` the
unit roundoff of that type, ``M`` the largest ``|x - offset|``, ``X`` the largest ``|x|`` and
``Q`` the largest code magnitude, every value decodes within::

    0.5 / scale + 1.01 * u * (2 * M + Q / scale + X + 1 / scale)

of itself (rounding to the nearest code, plus one rounding in each of the four operations).
``tests/test_suggest.py`` checks it against the real codecs, exhaustively over every code of
the 8- and 16-bit types.

Pure numpy over the codec classes; no xarray.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtypes import dtype_name

__all__ = ["FLOAT_TYPES", "INTEGER_TYPES", "DataRange", "Packing", "choose_packing", "data_range"]

#: packed types, smallest first
INTEGER_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32")
#: the unpacked types a packing is for
FLOAT_TYPES = ("float16", "float32", "float64")
#: elements read at a time by :func:`data_range`
_SLAB = 8 << 20


@dataclass(frozen=True)
class DataRange:
    """The finite range of some data, whether it holds NaN (None: unknown), how many values."""

    min: float
    max: float
    has_nan: bool | None = None
    count: int | None = None


def data_range(data: Any) -> DataRange:
    """The range of ``data`` (numpy, zarr, dask or anything with ``shape`` and slicing), read a
    block of at most 8 Mi elements at a time so that arrays larger than memory stream through.

    >>> data_range(np.array([3.0, np.nan, -1.5]))
    DataRange(min=-1.5, max=3.0, has_nan=True, count=3)
    """
    shape = tuple(getattr(data, "shape", np.shape(data)))
    if not shape:
        slabs: Any = [np.asarray(data).reshape(1)]
    else:
        block = _block(shape)
        grid = [math.ceil(n / b) for n, b in zip(shape, block)]
        slabs = (np.asarray(data[tuple(slice(i * b, (i + 1) * b) for i, b in zip(index, block))])
                 for index in np.ndindex(*grid))
    lo, hi, nan, count = math.inf, -math.inf, False, 0
    for slab in slabs:
        a = np.asarray(slab)
        if a.dtype.kind not in "fiu":
            raise ValueError(f"data of type {a.dtype} cannot be packed: floats (or integers) only")
        count += a.size
        if a.dtype.kind == "f":
            finite = np.isfinite(a)
            if not finite.all():
                if np.isinf(a).any():
                    raise ValueError("the data holds ±Infinity, which no integer code can stand for "
                                     "(map it to NaN or to a finite value first)")
                nan = True
                a = a[finite]
        if a.size:
            lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
    if count == 0:
        raise ValueError("the data is empty: there is no range to pack")
    if lo > hi:
        raise ValueError("the data holds only NaN: there is no range to pack")
    return DataRange(lo, hi, nan, count)


def _block(shape: tuple[int, ...]) -> list[int]:
    """A block shape of at most :data:`_SLAB` elements: whole trailing axes where they fit, the
    leading ones cut (a single huge row is read in pieces too)."""
    block = list(shape)
    for axis in range(len(block)):
        size = math.prod(block)
        if size <= _SLAB:
            break
        rest = size // max(block[axis], 1)
        block[axis] = max(1, _SLAB // max(rest, 1))
    return [max(1, b) for b in block]


_range_of = data_range  # (choose_packing's data_range argument hides the function)


@dataclass(frozen=True)
class Packing:
    """Floats of ``dtype`` stored as ``packed`` integers: ``code = round((x - offset) * scale)``,
    NaN as ``nan_code``; every value in ``range`` decodes within ``max_error``."""

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
        """The array's fill value: NaN where a code stands for it, else the offset."""
        return math.nan if self.nan_code is not None else self.offset

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
        return (f"import zarr\nfrom numcodecs_ext.zarr3 import CastValue, ScaleOffset\n\n"
                f"z = zarr.create_array({store!r}, shape={tuple(shape)!r}, "
                f"chunks={tuple(chunks or shape)!r}, dtype=\"{self.dtype.name}\",\n"
                f"                      fill_value={fill},\n"
                f"                      filters=[ScaleOffset(offset={self.offset!r}, scale={self.scale!r}),\n"
                f"                               CastValue({cast})])")

    def __str__(self) -> str:
        nan = f", NaN as {self.nan_code}" if self.nan_code is not None else ""
        return (f"{self.dtype.name} as {self.packed.name}: offset {self.offset:.10g}, scale "
                f"{self.scale:.10g}{nan}; max error {self.max_error:.3g}")


def _check_range(r: DataRange) -> None:
    for name, v in (("min", r.min), ("max", r.max)):
        if not isinstance(v, (int, float, np.number)) or not math.isfinite(float(v)):
            raise ValueError(f"data_range {name}={v!r} is not valid; give a finite number "
                             "(±Infinity and NaN cannot be packed)")
    if float(r.min) > float(r.max):
        raise ValueError(f"data_range min={r.min!r} is above max={r.max!r}")


def _bound(lo: float, hi: float, offset: float, scale: float, qmax: int, u: float) -> float:
    m = max(abs(lo - offset), abs(hi - offset))
    x = max(abs(lo), abs(hi))
    return 0.5 / scale + 1.01 * u * (2 * m + qmax / scale + x + 1 / scale)


def _codes(packed: np.dtype, nan: bool) -> tuple[int, int, int | None]:
    """(first usable code, last usable code, NaN code) of ``packed``."""
    info = np.iinfo(packed)
    if not nan:
        return int(info.min), int(info.max), None
    if packed.kind == "u":
        return 0, int(info.max) - 1, int(info.max)
    return int(info.min) + 1, int(info.max), int(info.min)


def _encode_endpoints(p: Packing) -> np.ndarray:
    codecs = p.filters()
    x = np.array([p.range.min, p.range.max], dtype=p.dtype)
    return codecs[1].encode(codecs[0].encode(x))


def _make(floats: np.dtype, packed: np.dtype, r: DataRange, nan: bool, scale: float | None) -> Packing | None:
    """The packing of ``r`` into ``packed`` with ``scale`` (None: the finest that fits), or None
    if the range does not fit. Signed types centre the codes on 0 and unsigned ones start at 0,
    which keeps the magnitudes (and so the float rounding) small."""
    lo, hi = float(r.min), float(r.max)
    first, last, nan_code = _codes(packed, nan)
    ftype = floats.type
    u = float(np.finfo(floats).eps) / 2
    limit = 2 ** (np.finfo(floats).nmant + 1)  # more codes than this are not all floats of the type
    if hi == lo:
        scale = 1.0
    elif scale is None:
        scale = min(last - first, limit) / (hi - lo)
    for _ in range(60):  # float rounding may push an endpoint one code out: shrink the scale
        scale = float(ftype(scale))
        if not math.isfinite(scale) or scale <= 0:
            return None
        needed = math.ceil((hi - lo) * scale)
        cap = min(last - first, limit)
        if needed > cap + 2:
            return None  # far too fine for this type
        if needed > cap:  # one or two codes over, from rounding the scale: shrink it
            scale *= 1 - 2 * u * 8
            continue
        c0 = first if packed.kind == "u" else max(first, min(-(needed // 2), last - needed))
        offset = float(ftype(lo - c0 / scale))
        if not math.isfinite(offset):
            return None
        qmax = max(abs(c0), abs(c0 + needed))
        # constant data at the offset itself: code 0, decoded exactly
        bound = 0.0 if hi == lo == offset and c0 == 0 else _bound(lo, hi, offset, scale, qmax, u)
        p = Packing(floats, packed, offset, scale, nan_code, bound, r)
        try:
            with np.errstate(all="ignore"):
                q = _encode_endpoints(p)
        except ValueError:
            q = None
        if q is not None and first <= int(q[0]) and int(q[1]) <= last:
            return p
        if hi == lo:
            return None
        scale *= 1 - 2 * u * 8
    return None


def choose_packing(data: Any = None, *, data_range: DataRange | None = None,
                   tolerance: float | None = None, dtype: str | None = None,
                   nan: bool | str = "auto", float_dtype: Any = None) -> Packing:
    """The packing of ``data`` (or of ``data_range``) that meets ``tolerance`` with the smallest
    integer type, or the finest one in the integer type ``dtype``.

    Parameters
    ----------
    data : array-like, optional
        The values (numpy, zarr, dask ...); read once for their range.
    data_range : DataRange, optional
        Instead of ``data``: the range the values will have.
    tolerance : float, optional
        The largest absolute error allowed. The scale is then the coarsest that meets it
        (fewer distinct codes compress better), in the smallest type that holds the range.
    dtype : str, optional
        Instead of ``tolerance``: the integer type (one of :data:`INTEGER_TYPES`), whose whole
        range is used.
    nan : "auto", True or False
        Reserve a code for NaN: "auto" does where the data holds NaN, or where only a range is
        given (it cannot tell).
    float_dtype : optional
        The unpacked float type (default: the data's, else float32).

    Examples
    --------
    >>> p = choose_packing(np.array([250.0, 310.0, np.nan], "float32"), tolerance=0.01)
    >>> p.packed, p.nan_code, p.max_error <= 0.01
    (dtype('int16'), -32768, True)
    >>> choose_packing(data_range=DataRange(-1.0, 1.0), dtype="int8", nan=False).scale
    127.5
    """
    if (tolerance is None) == (dtype is None):
        raise ValueError("give exactly one of tolerance (the largest error allowed) or dtype "
                         f"(one of {', '.join(INTEGER_TYPES)})")
    if (data is None) == (data_range is None):
        raise ValueError("give exactly one of data or data_range")
    if nan not in ("auto", True, False):
        raise ValueError(f"nan={nan!r} is not valid; use 'auto', True or False")
    r = data_range if data_range is not None else _range_of(data)
    _check_range(r)
    if float_dtype is not None:
        floats = np.dtype(float_dtype)
    else:
        given = getattr(data, "dtype", None)
        floats = np.dtype(given) if given is not None and np.dtype(given).kind == "f" else np.dtype("float32")
    if floats.name not in FLOAT_TYPES:
        raise ValueError(f"float_dtype={floats.name!r} is not valid; use one of {', '.join(FLOAT_TYPES)}")
    reserve = bool(r.has_nan) or r.has_nan is None if nan == "auto" else bool(nan)
    if r.has_nan and not reserve:
        raise ValueError("the data holds NaN but nan=False: NaN needs a code (nan=True or 'auto')")
    if dtype is not None:
        if dtype not in INTEGER_TYPES:
            raise ValueError(f"dtype={dtype!r} is not valid; use one of {', '.join(INTEGER_TYPES)}")
        packed = np.dtype(dtype)
        p = _make(floats, packed, r, reserve, None)
        if p is None:
            raise ValueError(f"the range [{r.min}, {r.max}] cannot be packed into {dtype}")
        return p
    if not isinstance(tolerance, (int, float, np.number)) or not math.isfinite(float(tolerance)) \
            or float(tolerance) <= 0:
        raise ValueError(f"tolerance={tolerance!r} is not valid; give a finite number above 0")
    tol = float(tolerance)
    best = None
    for name in INTEGER_TYPES:
        packed = np.dtype(name)
        finest = _make(floats, packed, r, reserve, None)
        if finest is None:
            continue
        best = finest if best is None or finest.max_error < best.max_error else best
        if finest.max_error > tol:
            continue
        # the coarsest scale that still meets the tolerance (fewer codes compress better)
        scale = 0.5 / tol
        for _ in range(2000):
            if scale >= finest.scale:
                return finest
            candidate = _make(floats, packed, r, reserve, scale)
            if candidate is not None and candidate.max_error <= tol:
                return candidate
            scale *= 1.001
        return finest
    hint = f"; the best is {best.max_error:.3g} with {best.packed.name}" if best is not None else ""
    raise ValueError(f"no integer type meets tolerance={tol:g} for {floats.name} values in "
                     f"[{r.min}, {r.max}]{hint}")
