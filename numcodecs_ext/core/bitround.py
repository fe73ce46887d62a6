"""Bit rounding (zarr v3 ``bitround``): keep ``keepbits`` significant bits, round to nearest even.

Floats keep ``keepbits`` bits of the mantissa (sign and exponent stay); integers keep
``keepbits`` bits counted from the most significant set bit of their bit pattern, as zarrs (the
reference implementation) does: the pattern is read as unsigned (a negative integer's top bit is
set, so it keeps its top ``keepbits`` bits), and rounding that would carry past the top of the
type stops at the largest value instead (saturating, never wrapping).

Where we differ from numcodecs' ``BitRound`` and from zarrs (identical bytes everywhere else):

* A non-negative signed integer never rounds into the sign bit: it saturates at the type's
  maximum before the low bits are cleared, as zarrs does at the top of unsigned types (zarrs
  turns int8 127 with keepbits 1 into -128; we give 64).
* NaNs are returned unchanged. The others round their payload bits, which turns some NaNs into
  infinities (``0x7f800001``) or into -0.0 (``0x7fffffff``).
* A datetime64 or timedelta64 value never becomes NaT (the smallest int64, which rounding a
  negative value to few bits can reach): it takes the next value up with ``keepbits``
  significant bits instead (zarrs would return NaT).
* A finite value never becomes infinite: where rounding up would reach infinity, the value is
  truncated to the largest finite value with ``keepbits`` bits instead.

``keepbits`` 0 keeps only the leading bit (floats become powers of two), as in zarrs and
numcodecs; ``keepbits`` at or beyond the precision of the type (the mantissa bits, or the integer width)
changes nothing, as in zarrs; the spec sets no upper bound.

Examples
--------
>>> import numpy as np
>>> bitround(np.array([0.1, 1.2, 12.3, 123.4, 1234.5], dtype="float32"), 3).tolist()
[0.1015625, 1.25, 12.0, 120.0, 1280.0]
>>> bitround(np.array([11, 100, 123, 208, 209, 255], dtype="uint8"), 3)
array([ 12,  96, 128, 192, 224, 224], dtype=uint8)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _native, device
from .buffers import typed
from .chunk_paths import ChunkPaths, fill_key
from .dtypes import dtype_name, show
from .errors import ConfigurationError
from .scalar_json import scalar_to_json

__all__ = ["BitRoundChunks", "BitroundPlan", "bitround", "plan"]

_UINT = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


@dataclass(frozen=True)
class BitroundPlan:
    """How to round one data type: the unsigned view of each component and, for floats, the
    number of explicit mantissa bits (``None`` for integers)."""

    dtype: np.dtype
    unsigned: np.dtype
    mantissa: int | None

    @property
    def precision(self) -> int:
        """keepbits at or above this change nothing."""
        return self.mantissa if self.mantissa is not None else self.unsigned.itemsize * 8


def _float_mantissa(dtype: np.dtype) -> int | None:
    if dtype.kind == "f" and dtype.itemsize in (2, 4, 8):
        return int(np.finfo(dtype).nmant)
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - ml_dtypes is optional
        return None
    if dtype == np.dtype(ml_dtypes.bfloat16):
        return 7
    return None


@functools.lru_cache(maxsize=64)
def plan(dtype: np.dtype) -> BitroundPlan:
    """The rounding plan for ``dtype`` (native byte order), or TypeError naming what is supported.

    >>> plan(np.dtype("complex64"))
    BitroundPlan(dtype=dtype('complex64'), unsigned=dtype('uint32'), mantissa=23)
    """
    dt = np.dtype(dtype).newbyteorder("=")
    if dt.kind == "c" and dt.itemsize in (8, 16):
        component = np.dtype(f"f{dt.itemsize // 2}")
        return BitroundPlan(dt, _UINT[component.itemsize], _float_mantissa(component))
    mantissa = _float_mantissa(dt)
    if mantissa is not None:
        return BitroundPlan(dt, _UINT[dt.itemsize], mantissa)
    if dt.kind in "iumM" and dt.itemsize in _UINT and not _is_sub_byte(dt):
        return BitroundPlan(dt, _UINT[dt.itemsize], None)
    raise TypeError(
        f"bitround does not support data type {_name(dt)}; valid: float16, bfloat16, float32, "
        "float64, complex64, complex128, int8..int64, uint8..uint64, datetime64, timedelta64"
    )


def _is_sub_byte(dt: np.dtype) -> bool:
    return dt.kind not in "iumM" or dt.type.__module__.startswith("ml_dtypes")


def _name(dt: np.dtype) -> str:
    try:
        return dtype_name(dt)
    except (ValueError, TypeError):
        return str(dt)


def _round_float(u: np.ndarray, keepbits: int, mantissa: int) -> np.ndarray:
    width = u.dtype.itemsize * 8
    t = u.dtype.type
    drop = mantissa - keepbits
    mask = t(((1 << width) - 1) ^ ((1 << drop) - 1))
    exponent = t(((1 << (width - 1)) - 1) ^ ((1 << mantissa) - 1))
    special = (u & exponent) == exponent  # inf and NaN: returned as they are
    r = (u >> t(drop)) & t(1)
    r += t((1 << (drop - 1)) - 1)
    r += u  # no wrap: only NaN patterns are close enough to the top to carry out of the type
    r &= mask
    overflow = (r & exponent) == exponent  # a finite value rounded to infinity: truncate it
    overflow &= ~special
    np.copyto(r, u & mask, where=overflow)
    np.copyto(r, u, where=special)
    return r


def _round_int(u: np.ndarray, keepbits: int, signed: int) -> np.ndarray:
    width = u.dtype.itemsize * 8
    t = u.dtype.type
    below = u.copy()  # every bit below the most significant set bit, set
    shift = 1
    while shift < width:
        below |= below >> t(shift)
        shift *= 2
    below >>= t(keepbits)  # the bits to round away
    kept_lsb = (below << t(1)) & ~below  # the lowest kept bit (0 when nothing is dropped)
    r = below >> t(1)
    r += (u & kept_lsb) != 0
    r += u
    np.copyto(r, t((1 << width) - 1), where=r < u)  # saturate, as zarrs does
    if signed:  # a positive value never rounds into the sign bit (zarrs lets it)
        top = t((1 << (width - 1)) - 1)
        np.copyto(r, top, where=(u <= top) & (r > top))
    r &= ~below
    if signed == 2:  # datetime64/timedelta64: another value never rounds into NaT
        nat = t(1 << (width - 1))
        np.add(r, below + t(1), out=r, where=(r == nat) & (u != nat))
        np.copyto(r, nat, where=u == nat)  # NaT stays NaT, even with keepbits 0
    return r


def bitround(arr: np.ndarray, keepbits: int, out: np.ndarray | None = None) -> np.ndarray:
    """``arr`` with every value rounded to ``keepbits`` significant bits (see the module).

    Parameters
    ----------
    arr : numpy.ndarray
        Any supported dtype (either byte order), shape and memory layout.
    keepbits : int
        At least 0 (0 keeps only the leading bit: floats round to a power of two).
    out : numpy.ndarray, optional
        Where to write the result (same shape, native dtype); may be ``arr`` itself.

    Returns
    -------
    numpy.ndarray
        Native byte order, same shape and memory layout as ``arr``.
    """
    if keepbits < 0:
        raise ValueError(f"bitround: keepbits={keepbits} must be at least 0")
    p = plan(arr.dtype)
    if out is None:
        out = np.empty_like(arr, dtype=p.dtype)
    elif out.dtype != p.dtype or out.shape != arr.shape:
        raise ValueError(
            f"bitround: out must have the shape {arr.shape} and the native dtype {p.dtype.str!r}, "
            f"got shape {out.shape} and dtype {out.dtype.str!r}"
        )
    if out is not arr:
        np.copyto(out, arr, casting="equiv")
    if keepbits >= p.precision or out.size == 0:
        return out
    flat = out.reshape(-1) if out.flags.c_contiguous else out.ravel(order="K")
    if not np.shares_memory(flat, out):  # a non-contiguous out: round a copy, then write it
        rounded = bitround(np.ascontiguousarray(out), keepbits)
        np.copyto(out, rounded)
        return out
    u = flat.view(p.unsigned)
    signed = 2 if p.dtype.kind in "mM" else int(p.dtype.kind == "i")
    k = _native.kernels()
    if k is not None and u.flags.aligned and u.flags.writeable:
        k.bitround(u, u.itemsize, keepbits, p.mantissa or 0, signed)
    elif p.mantissa is not None:
        u[...] = _round_float(u, keepbits, p.mantissa)
    else:
        u[...] = _round_int(u, keepbits, signed)
    return out


#: the codec the refusals of a data type name (the numcodecs id, as they always said)
_CODEC_ID = "numcodecs_ext.bitround"


def _fill_json(value: Any, dtype: np.dtype) -> Any:
    """A scalar as fill-value JSON (datetimes as numpy prints them)."""
    try:
        return scalar_to_json(value, dtype)
    except ValueError:
        return str(value)


@dataclass(frozen=True)
class BitRoundChunks:
    """The chunk work of one ``bitround`` configuration (the numcodecs and zarr v3 classes
    both run it): element-wise rounding to ``keepbits``; decoding is the identity.

    >>> work = BitRoundChunks(3)
    >>> work.encode_chunk(np.array([11, 209, 255], dtype="uint8")).tolist()
    [12, 224, 224]
    """

    keepbits: int
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    @staticmethod
    def dtype_plan(dtype: np.dtype) -> BitroundPlan:
        """:func:`plan`, refusing an unsupported data type as the codec's configuration error."""
        try:
            return plan(dtype)
        except TypeError as e:
            raise ConfigurationError(_CODEC_ID, str(e)) from None

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Same shape and dtype; the fill value rounded like the data (as zarrs does).

        To write chunks (``strict``), the fill value must come through unchanged: otherwise the
        unwritten part of a partly written chunk would read back as the rounded value while
        missing chunks read as the fill value itself.
        """
        dt = self.dtype_plan(dtype).dtype
        if fill_value is None:
            return tuple(shape), dt, None
        fill = np.array(fill_value, dtype=dt)
        rounded = bitround(fill, self.keepbits)
        if strict and rounded.tobytes() != fill.tobytes():
            before, after = _fill_json(fill[()], dt), _fill_json(rounded[()], dt)
            raise ConfigurationError(
                "bitround", f"the array's fill value {show(before)} does not survive rounding to "
                f"keepbits={self.keepbits} (it becomes {show(after)}, which unwritten parts of chunks would "
                f"read as); use a fill value such as {show(after)}"
            )
        return tuple(shape), dt, rounded[()]

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        arr = np.asarray(arr)
        self.dtype_plan(arr.dtype)
        return bitround(arr, self.keepbits)

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return typed(np.asarray(arr), np.dtype(dtype), tuple(shape))

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` on the array's own device (its array API namespace ``xp``), or None."""
        dt = device.numpy_dtype(xp, arr.dtype)
        if dt is None:
            return None
        p = self.dtype_plan(dt)
        return device.bitround(xp, arr, dt, self.keepbits, p.mantissa, p.precision)

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None: then the caller decodes a host copy."""
        ok = device.numpy_dtype(xp, arr.dtype) == dtype and tuple(arr.shape) == tuple(shape)
        return arr if ok else None  # decoding is the identity
