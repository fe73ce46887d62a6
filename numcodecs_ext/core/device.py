"""Chunk kernels for arrays that are not numpy arrays (cupy in zarr's GPU mode).

Written against the Python array API standard: the array's own namespace
(``arr.__array_namespace__()``) does the work on the array's device, nothing is converted to
numpy. Bit reinterpretation is not in the standard; bitround uses the array's ``view`` where the
array has one (cupy, numpy) and declines otherwise.

Every function returns the result, or None where it has no kernel for the case at hand or the
data need the CPU path's judgement (a value out of range, an overflow, a NaN whose bits a device
may not keep). The caller then moves the chunk to the host explicitly and runs the CPU path,
which gives the same result or raises the same error. So a device result is bit-identical to the
CPU one, and every error is raised, in its words, by the CPU path. A namespace that lacks a
function used here (an older library) declines the same way.

NaN: arithmetic and conversions on a GPU may give a NaN other bits than the CPU gives; every NaN
result here is either the input's own bits quieted, as IEEE 754 arithmetic on the CPU gives them
(scale_offset, through ``view``; without one a chunk with a NaN declines), or comes from the host
path.

Subnormals: cupy flushes float32 subnormals to zero in arithmetic, comparisons and conversions
(seen on an H200, cupy 14.2); the CPU keeps them. A float32/float64 chunk holding one, or whose
scale_offset step or narrowed cast would give one, declines (read from the bits where the array
has ``view``).

Pure array API plus numpy for the parameters; knows nothing about numcodecs or zarr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .dtypes import NumericInfo, numeric_info

__all__ = ["ModuleNamespace", "bitround", "cast", "namespace", "numpy_dtype", "pack", "reshape", "scale_offset",
           "transpose", "unpack"]

#: the data types of the array API standard that the kernels take
_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")


class ModuleNamespace:
    """A numpy-like library's module as the namespace the kernels use: the few names of the
    standard that such a module spells otherwise are mapped (older cupy has neither
    ``__array_namespace__`` nor ``permute_dims``, ``concat`` or ``astype``)."""

    _ALIASES = {"permute_dims": "transpose", "concat": "concatenate",
                "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}

    def __init__(self, module: Any) -> None:
        self._module = module

    @staticmethod
    def astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
        return x.astype(dtype, copy=copy)

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._module, name, None)
        if found is None and name in self._ALIASES:
            found = getattr(self._module, self._ALIASES[name], None)
        if found is None:
            raise AttributeError(name)
        return found


def namespace(arr: Any) -> Any:
    """The array API namespace of a non-numpy array, or None (a numpy array): the array's
    ``__array_namespace__()``; else ``array_api_compat``'s wrapper where that is installed;
    else, for a cupy array, the cupy module through :class:`ModuleNamespace`. An array none of
    these covers gets None too, and the host path."""
    if isinstance(arr, (np.ndarray, np.generic)):
        return None
    get = getattr(arr, "__array_namespace__", None)
    if get is not None:
        try:
            return get()
        except Exception:  # an API version the library does not offer, for example
            pass
    try:
        import array_api_compat
    except ImportError:  # (optional: not a dependency)
        pass
    else:
        try:
            return array_api_compat.array_namespace(arr)
        except TypeError:
            pass
    root = type(arr).__module__.partition(".")[0]
    if root == "cupy":
        import sys

        return ModuleNamespace(sys.modules["cupy"])
    return None


def numpy_dtype(xp: Any, dtype: Any) -> np.dtype | None:
    """The numpy dtype of a namespace's dtype, or None for one the kernels do not take."""
    for name in _NAMES:
        if getattr(xp, name, None) == dtype:
            return np.dtype(name)
    return None


def _declines(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A function the namespace does not have, or does not take these arguments to, declines,
    as does anything else a library refuses (a device mismatch, an index form): the host path
    is the authority, a kernel only a faster way to its result. (numpy's own namespace warns of
    the overflows the kernels detect and decline for.)"""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        except (AttributeError, IndexError, NotImplementedError, OverflowError, TypeError,
                ValueError):
            return None
    return wrapper


def _xp_dtype(xp: Any, dtype: np.dtype) -> Any:
    if dtype.name not in _NAMES or not dtype.isnative:
        raise NotImplementedError(dtype.name)
    return getattr(xp, dtype.name)


def _is(xp: Any, arr: Any, dtype: np.dtype) -> bool:
    return bool(arr.dtype == _xp_dtype(xp, dtype))


def _any(xp: Any, mask: Any) -> bool:
    return bool(xp.any(mask))


def _copy(xp: Any, arr: Any) -> Any:
    try:
        return xp.asarray(arr, copy=True)
    except TypeError:  # a namespace without asarray(copy=)
        return arr.copy()


#: the float types whose subnormal values devices may flush to zero: cupy does so for float32 in
#: arithmetic, comparisons and conversions (seen on an H200 with cupy 14.2), the CPU never does
_FLUSHED = (np.float32, np.float64)


def _subnormal(xp: Any, arr: Any, dtype: np.dtype) -> bool:
    """Whether a chunk of a :data:`_FLUSHED` type holds a subnormal value (read from its bits
    where the array has ``view``: a flushing device compares them as zero)."""
    if dtype.type not in _FLUSHED:
        return False
    fi = np.finfo(dtype)
    if getattr(arr, "view", None) is not None:
        u = _view(arr, np.dtype(f"u{dtype.itemsize}"))
        frac = (1 << fi.nmant) - 1
        exponent = ((1 << (8 * dtype.itemsize - 1)) - 1) ^ frac
        return _any(xp, ((u & exponent) == 0) & ((u & frac) != 0))
    return _any(xp, (arr != 0) & (xp.abs(arr) < float(fi.tiny)))


# --- shape codecs ---------------------------------------------------------------------------------

@_declines
def transpose(xp: Any, arr: Any, order: Sequence[int]) -> Any:
    """``arr`` with its axes permuted (a view where the library gives one, as zarr's does)."""
    return xp.permute_dims(arr, tuple(order))


@_declines
def reshape(xp: Any, arr: Any, shape: Sequence[int]) -> Any:
    """``arr`` in C order with the given shape."""
    return xp.reshape(arr, tuple(int(s) for s in shape))


# --- scale_offset -----------------------------------------------------------------------------------

@_declines
def scale_offset(xp: Any, arr: Any, dtype: np.dtype, off: Any, sc: Any, direction: str,
                 bounds: tuple[int, int] | None = None) -> Any:
    """``(x - off) * sc`` (encode) or ``x / sc + off`` (decode) in ``dtype``, as
    :mod:`numcodecs_ext.core.scale_offset` computes it; ``off``/``sc`` as its
    ``check_parameters`` gives them, ``bounds`` the admissible integer inputs."""
    if not _is(xp, arr, dtype):
        return None
    info = numeric_info(dtype)
    if info.is_int:
        assert bounds is not None
        lo, hi = bounds
        check = None
        if lo > info.lo:
            check = arr < lo
        if hi < info.hi:
            above = arr > hi
            check = above if check is None else check | above
        if check is not None and _any(xp, check):
            return None  # the CPU path names the value
        if direction == "encode":
            res = arr - off if off else _copy(xp, arr)
            res = res * sc if sc != 1 else res
        else:
            if sc not in (1, -1):
                if _any(xp, xp.remainder(arr, sc) != 0):
                    return None
            res = xp.floor_divide(arr, sc) if sc != 1 else _copy(xp, arr)
            res = res + off if off else res
        return res if res.dtype == arr.dtype else None  # (a library that promotes: decline)
    if dtype.type not in (np.float16, np.float32, np.float64):
        return None
    if _subnormal(xp, arr, dtype):
        return None
    offs, scs = float(off), float(sc)  # exact: the values are of the dtype
    if direction == "encode":
        step = arr - offs
        res = step * scs
        flushed = ((step == 0) & (arr != offs)) | ((res == 0) & (step != 0))
    else:
        step = arr / scs
        res = step + offs
        flushed = ((step == 0) & (arr != 0)) | ((res == 0) & (step != -offs))
    bad = xp.isinf(res) & xp.isfinite(arr)  # an overflow: the CPU path's error
    if dtype.type in _FLUSHED:  # a subnormal step or result a device may have made zero
        bad = bad | flushed
    if _any(xp, bad):
        return None
    if res.dtype != arr.dtype:
        return None
    # A NaN input gives, on the CPU, its own sign and payload with the quiet bit set (IEEE 754
    # arithmetic quiets a signalling NaN); a GPU may give its canonical NaN instead.
    nan = xp.isnan(arr)
    if getattr(arr, "view", None) is None:  # no bit reinterpretation: only NaN-free chunks
        return None if _any(xp, nan) else res
    udt = np.dtype(f"u{dtype.itemsize}")
    quiet = _view(_view(arr, udt) | (1 << (np.finfo(dtype).nmant - 1)), dtype)
    return xp.where(nan, quiet, res)


# --- bitround ----------------------------------------------------------------------------------

def _view(arr: Any, dtype: np.dtype) -> Any:
    view = getattr(arr, "view", None)
    if view is None:
        raise NotImplementedError("no bit reinterpretation")
    return view(dtype)


@_declines
def bitround(xp: Any, arr: Any, dtype: np.dtype, keepbits: int, mantissa: int | None,
             precision: int) -> Any:
    """``arr`` rounded to ``keepbits`` significant bits, bit for bit as
    :func:`numcodecs_ext.core.bitround.bitround` (float and integer dtypes of the standard)."""
    if not _is(xp, arr, dtype) or dtype.kind not in "iuf":
        return None
    if keepbits >= precision:
        return _copy(xp, arr)
    udt = np.dtype(f"u{dtype.itemsize}")
    u = _view(arr, udt)
    width = dtype.itemsize * 8
    if mantissa is not None:
        drop = mantissa - keepbits
        mask = ((1 << width) - 1) ^ ((1 << drop) - 1)
        exponent = ((1 << (width - 1)) - 1) ^ ((1 << mantissa) - 1)
        special = (u & exponent) == exponent
        r = ((u >> drop) & 1) + ((1 << (drop - 1)) - 1)
        r = (r + u) & mask
        overflow = ((r & exponent) == exponent) & ~special
        r = xp.where(overflow, u & mask, r)
        r = xp.where(special, u, r)
    else:
        below = u
        shift = 1
        while shift < width:
            below = below | (below >> shift)
            shift *= 2
        below = below >> keepbits
        kept_lsb = (below << 1) & ~below
        r = (below >> 1) + xp.astype((u & kept_lsb) != 0, u.dtype) + u
        r = xp.where(r < u, (1 << width) - 1, r)
        if dtype.kind == "i":
            top = (1 << (width - 1)) - 1
            r = xp.where((u <= top) & (r > top), top, r)
        r = r & ~below
    return _view(r, dtype) if r.dtype == u.dtype else None


# --- cast_value --------------------------------------------------------------------------------

_ROUND = {"nearest-even": "round", "towards-zero": "trunc", "towards-positive": "ceil",
          "towards-negative": "floor"}


def _round(xp: Any, w: Any, rounding: str) -> Any:
    if rounding == "nearest-away":
        t = xp.trunc(w)
        up = xp.abs(w - t) >= 0.5  # exact: |w - trunc(w)| < 1
        return xp.where(up, t + xp.sign(w), t)
    return getattr(xp, _ROUND[rounding])(w)


def _value(entry: Any, tgt: NumericInfo) -> Any:
    """A map value as a Python scalar of the target, or NotImplementedError for a NaN with
    another bit pattern than the canonical one (a device may not keep it)."""
    value = entry.value_bits.view(tgt.dtype)[()]
    if tgt.is_int:
        return int(value)
    v = float(value)
    if v != v:
        canonical = np.array(np.nan, tgt.dtype).view(entry.value_bits.dtype)[()]
        if entry.value_bits[()] != canonical:
            raise NotImplementedError("a NaN value with a payload")
    return v


def _claims(xp: Any, arr: Any, entries: Sequence[Any]) -> list[Any]:
    """One mask per entry (numerical keys and the every-NaN key; bit-pattern keys decline)."""
    masks = []
    for entry in entries:
        if entry.how == "nan":
            masks.append(xp.isnan(arr))
        elif entry.how == "eq":
            masks.append(arr == entry.key)
        else:
            raise NotImplementedError("a bit-pattern key")
    return masks


@_declines
def cast(xp: Any, arr: Any, src_dtype: np.dtype, dtype: np.dtype, *, rounding: str,
         out_of_range: str | None, scalar_map: Any, exact: bool) -> Any:
    """``arr`` converted as :func:`numcodecs_ext.core.cast_value.cast_array` converts it, for
    the data types of the standard: exact conversions, float -> integer (every rounding,
    ``clamp``), integer -> integer (``clamp``), and nearest-even float narrowing and integer
    -> float32/float64; the scalar map's numerical and ``"NaN"`` keys. ``exact``: every value
    of ``src_dtype`` converts exactly. Out-of-range values under ``wrap``, NaN to a float
    target and everything else decline."""
    if not _is(xp, arr, src_dtype):
        return None
    src, tgt = numeric_info(src_dtype), numeric_info(dtype)
    txp = _xp_dtype(xp, tgt.dtype)
    if not hasattr(scalar_map, "entries") and len(scalar_map):
        return None  # a plain sequence: only prepared maps are read here
    entries = list(getattr(scalar_map, "entries", ()))
    masks = _claims(xp, arr, entries)
    values = [_value(e, tgt) for e in entries]
    claimed = None
    for m in masks:
        claimed = m if claimed is None else claimed | m
    unclaimed = (lambda m: m) if claimed is None else (lambda m: m & ~claimed)

    if not tgt.is_int and not src.is_int and _any(xp, unclaimed(xp.isnan(arr))):
        return None  # a device may give a NaN other bits
    if not src.is_int and _subnormal(xp, arr, src.dtype):
        return None  # a device may flush them to zero
    if exact:
        out = xp.astype(arr, txp)
    elif src.is_int and tgt.is_int:
        oor = None
        if tgt.lo > src.lo:
            oor = arr < tgt.lo
        if tgt.hi < src.hi:
            oor = (arr > tgt.hi) if oor is None else oor | (arr > tgt.hi)
        w = arr
        if oor is not None and _any(xp, unclaimed(oor)):
            if out_of_range != "clamp":
                return None
            w = xp.clip(arr, max(tgt.lo, src.lo), min(tgt.hi, src.hi))
        if claimed is not None:
            w = xp.where(claimed, xp.zeros_like(w), w)
        out = xp.astype(w, txp)
    elif tgt.is_int:  # float -> integer, in float64 as on the CPU
        hi_f = float(tgt.hi)
        if int(hi_f) > tgt.hi:
            hi_f = float(np.nextafter(hi_f, -np.inf))
        lo_f = float(tgt.lo)
        w = xp.astype(arr, xp.float64)
        r = _round(xp, w, rounding)
        if _any(xp, unclaimed(~xp.isfinite(r))):
            return None  # NaN or infinity unmapped: the CPU path's error
        oor = (r < lo_f) | (r > hi_f)
        if _any(xp, unclaimed(oor)):
            if out_of_range != "clamp" or hi_f != tgt.hi:
                return None
            r = xp.clip(r, lo_f, hi_f)
        if claimed is not None:
            r = xp.where(claimed, xp.zeros_like(r), r)
        out = xp.astype(r, txp)
    elif rounding == "nearest-even" and tgt.dtype.type in (np.float16, np.float32, np.float64):
        if src.is_int:
            if tgt.dtype.itemsize < 4:
                return None
            out = xp.astype(arr, txp)  # correctly rounded; far inside the target's range
        else:
            if src.dtype.itemsize == 8 and tgt.dtype.itemsize == 2:
                return None  # some libraries convert float64 -> float16 through float32 (twice rounded)
            with np.errstate(over="ignore"):
                up = float(np.ldexp(1.0, int(np.frexp(tgt.max)[1])))
            thr = tgt.max / 2 + up / 2
            w = arr if claimed is None else xp.where(claimed, xp.zeros_like(arr), arr)
            bad = ~((-thr < w) & (w < thr))  # overflow (or NaN): the CPU path decides
            if tgt.dtype.type in _FLUSHED:  # a subnormal result, which a device may flush
                bad = bad | ((w != 0) & (xp.abs(w) < float(np.finfo(tgt.dtype).tiny)))
            if _any(xp, bad):
                return None
            out = xp.astype(w, txp)
    else:
        return None
    reserved = getattr(scalar_map, "reserved", None)
    if reserved is not None:  # codes only a mapped input may produce
        codes = _claims(xp, out, reserved.entries)
        for code in codes:
            if _any(xp, unclaimed(code)):
                return None
    for mask, value in reversed(list(zip(masks, values))):  # the first entry wins
        out = xp.where(mask, xp.full_like(out, value), out)
    return out if out.dtype == txp else None


# --- packbits ----------------------------------------------------------------------------------

def _arange(xp: Any, n: int, dtype: Any, like: Any) -> Any:
    """``arange(n)`` on ``like``'s device (a library without ``device=``: its current one)."""
    try:
        return xp.arange(n, dtype=dtype, device=like.device)
    except TypeError:
        return xp.arange(n, dtype=dtype)


def _zeros(xp: Any, n: int, dtype: Any, like: Any) -> Any:
    try:
        return xp.zeros((n,), dtype=dtype, device=like.device)
    except TypeError:
        return xp.zeros((n,), dtype=dtype)


def _container(xp: Any, b: int) -> Any:
    return getattr(xp, f"uint{max(8, 1 << (b - 1).bit_length())}")


@_declines
def pack(xp: Any, arr: Any, dtype: np.dtype, first: int, last: int,
         padding_encoding: str) -> Any:
    """:func:`numcodecs_ext.core.packbits.pack` of bool and integer arrays (least significant
    bit first), as a 1-D uint8 array on the device; values that do not fit decline."""
    if not _is(xp, arr, dtype) or dtype.kind not in "biu" or _size(arr) == 0:
        return None
    b = last - first + 1
    width = 1 if dtype.kind == "b" else 8 * dtype.itemsize
    flat = xp.reshape(arr, (-1,))
    if dtype.kind == "b":
        codes = xp.astype(flat, xp.uint8)
    else:
        if last < width - 1:
            if dtype.kind == "i":
                bad = (flat < -(1 << last)) | (flat > (1 << last) - 1)
            else:
                bad = flat > (1 << (last + 1)) - 1
            if _any(xp, bad):
                return None  # the CPU path's error
        if b == width:  # every bit: the two's complement pattern itself
            codes = flat if dtype.kind == "u" else _view(flat, np.dtype(f"u{dtype.itemsize}"))
        else:
            codes = (flat >> first) & ((1 << b) - 1)  # two's complement bits, non-negative
            codes = xp.astype(codes, _container(xp, b))
    shifts = _arange(xp, b, codes.dtype, codes)
    bits = xp.astype((codes[:, None] >> shifts) & 1, xp.uint8)
    bits = xp.reshape(bits, (-1,))
    pad = -bits.shape[0] % 8
    if pad:
        bits = xp.concat([bits, _zeros(xp, pad, xp.uint8, bits)])
    body = xp.sum(xp.reshape(bits, (-1, 8)) << _arange(xp, 8, xp.uint8, bits), axis=1,
                  dtype=xp.uint8)
    if padding_encoding == "none":
        return body
    byte = xp.zeros_like(body[:1]) + pad
    return xp.concat([byte, body] if padding_encoding == "first_byte" else [body, byte])


def _size(arr: Any) -> int:
    n = 1
    for s in arr.shape:
        n *= int(s)
    return n


@_declines
def unpack(xp: Any, data: Any, dtype: np.dtype, count: int, first: int, last: int,
           padding_encoding: str) -> Any:
    """:func:`numcodecs_ext.core.packbits.unpack` of bool and integer arrays on the device (1-D,
    ``count`` values); any length, padding byte or padding bits the CPU path would question
    decline."""
    if dtype.kind not in "biu" or count == 0 or not _is(xp, data, np.dtype("uint8")):
        return None
    b = last - first + 1
    width = 1 if dtype.kind == "b" else 8 * dtype.itemsize
    extra = int(padding_encoding != "none")
    n, pad = int(data.shape[0]), -count * b % 8
    if data.ndim != 1 or n != (count * b + 7) // 8 + extra:
        return None
    if extra:
        body = data[1:] if padding_encoding == "first_byte" else data[: n - 1]
        if int(data[0 if padding_encoding == "first_byte" else n - 1]) != pad:
            return None
    else:
        body = data
    if pad and int(body[-1]) & (0xFF << (8 - pad) & 0xFF):
        return None
    bits = (body[:, None] >> _arange(xp, 8, xp.uint8, body)) & 1
    bits = xp.reshape(bits, (-1,))[: count * b]
    container = _container(xp, b)
    bits = xp.astype(xp.reshape(bits, (count, b)), container)
    codes = xp.sum(bits << _arange(xp, b, container, bits), axis=1, dtype=container)
    target = _xp_dtype(xp, dtype)
    if dtype.kind == "b":
        return codes != 0
    if dtype.kind == "i":
        if b == width:
            return _view(codes, dtype)
        sign = 1 << (b - 1)
        values = xp.astype(codes, target)  # < 2**(b-1) * 2: fits
        values = (values ^ sign) - sign
    else:
        values = xp.astype(codes, target)
    if first:
        values = values * (1 << first)
    return values if values.dtype == target else None
