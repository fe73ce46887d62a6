"""Device kernels of the numerical codecs: transpose, reshape, scale_offset, bitround and
cast_value, each bit-identical to its CPU path or declining to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..dtypes import NumericInfo, numeric_info
from .namespace import any_true, copied, declines, FLUSHED, is_dtype, subnormal, view, xp_dtype

__all__ = ["bitround", "cast", "reshape", "scale_offset", "transpose"]


# --- shape codecs ---------------------------------------------------------------------------------

@declines
def transpose(xp: Any, arr: Any, order: Sequence[int]) -> Any:
    """``arr`` with its axes permuted (a view where the library gives one, as zarr's does)."""
    return xp.permute_dims(arr, tuple(order))


@declines
def reshape(xp: Any, arr: Any, shape: Sequence[int]) -> Any:
    """``arr`` in C order with the given shape."""
    return xp.reshape(arr, tuple(int(s) for s in shape))


# --- scale_offset -----------------------------------------------------------------------------------

@declines
def scale_offset(xp: Any, arr: Any, dtype: np.dtype, off: Any, sc: Any, direction: str,
                 bounds: tuple[int, int] | None = None) -> Any:
    """``(x - off) * sc`` (encode) or ``x / sc + off`` (decode) in ``dtype``, as
    :mod:`numcodecs_ext.core.scale_offset` computes it; ``off``/``sc`` as its
    ``check_parameters`` gives them, ``bounds`` the admissible integer inputs."""
    if not is_dtype(xp, arr, dtype):
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
        if check is not None and any_true(xp, check):
            return None  # the CPU path names the value
        if direction == "encode":
            res = arr - off if off else copied(xp, arr)
            res = res * sc if sc != 1 else res
        else:
            if sc not in (1, -1):
                if any_true(xp, xp.remainder(arr, sc) != 0):
                    return None
            res = xp.floor_divide(arr, sc) if sc != 1 else copied(xp, arr)
            res = res + off if off else res
        return res if res.dtype == arr.dtype else None  # (a library that promotes: decline)
    if dtype.type not in (np.float16, np.float32, np.float64):
        return None
    if subnormal(xp, arr, dtype):
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
    if dtype.type in FLUSHED:  # a subnormal step or result a device may have made zero
        bad = bad | flushed
    if any_true(xp, bad):
        return None
    if res.dtype != arr.dtype:
        return None
    # A NaN input gives, on the CPU, its own sign and payload with the quiet bit set (IEEE 754
    # arithmetic quiets a signalling NaN); a GPU may give its canonical NaN instead.
    nan = xp.isnan(arr)
    if getattr(arr, "view", None) is None:  # no bit reinterpretation: only NaN-free chunks
        return None if any_true(xp, nan) else res
    udt = np.dtype(f"u{dtype.itemsize}")
    quiet = view(view(arr, udt) | (1 << (np.finfo(dtype).nmant - 1)), dtype)
    return xp.where(nan, quiet, res)


# --- bitround ----------------------------------------------------------------------------------

@declines
def bitround(xp: Any, arr: Any, dtype: np.dtype, keepbits: int, mantissa: int | None,
             precision: int) -> Any:
    """``arr`` rounded to ``keepbits`` significant bits, bit for bit as
    :func:`numcodecs_ext.core.bitround.bitround` (float and integer dtypes of the standard)."""
    if not is_dtype(xp, arr, dtype) or dtype.kind not in "iuf":
        return None
    if keepbits >= precision:
        return copied(xp, arr)
    udt = np.dtype(f"u{dtype.itemsize}")
    u = view(arr, udt)
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
    return view(r, dtype) if r.dtype == u.dtype else None


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


@declines
def cast(xp: Any, arr: Any, src_dtype: np.dtype, dtype: np.dtype, *, rounding: str,
         out_of_range: str | None, scalar_map: Any, exact: bool) -> Any:
    """``arr`` converted as :func:`numcodecs_ext.core.cast_value.cast_array` converts it, for
    the data types of the standard: exact conversions, float -> integer (every rounding,
    ``clamp``), integer -> integer (``clamp``), and nearest-even float narrowing and integer
    -> float32/float64; the scalar map's numerical and ``"NaN"`` keys. ``exact``: every value
    of ``src_dtype`` converts exactly. Out-of-range values under ``wrap``, NaN to a float
    target and everything else decline."""
    if not is_dtype(xp, arr, src_dtype):
        return None
    src, tgt = numeric_info(src_dtype), numeric_info(dtype)
    txp = xp_dtype(xp, tgt.dtype)
    if not hasattr(scalar_map, "entries") and len(scalar_map):
        return None  # a plain sequence: only prepared maps are read here
    entries = list(getattr(scalar_map, "entries", ()))
    masks = _claims(xp, arr, entries)
    values = [_value(e, tgt) for e in entries]
    claimed = None
    for m in masks:
        claimed = m if claimed is None else claimed | m
    unclaimed = (lambda m: m) if claimed is None else (lambda m: m & ~claimed)

    if not tgt.is_int and not src.is_int and any_true(xp, unclaimed(xp.isnan(arr))):
        return None  # a device may give a NaN other bits
    if not src.is_int and subnormal(xp, arr, src.dtype):
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
        if oor is not None and any_true(xp, unclaimed(oor)):
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
        if any_true(xp, unclaimed(~xp.isfinite(r))):
            return None  # NaN or infinity unmapped: the CPU path's error
        oor = (r < lo_f) | (r > hi_f)
        if any_true(xp, unclaimed(oor)):
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
            if tgt.dtype.type in FLUSHED:  # a subnormal result, which a device may flush
                bad = bad | ((w != 0) & (xp.abs(w) < float(np.finfo(tgt.dtype).tiny)))
            if any_true(xp, bad):
                return None
            out = xp.astype(w, txp)
    else:
        return None
    reserved = getattr(scalar_map, "reserved", None)
    if reserved is not None:  # codes only a mapped input may produce
        codes = _claims(xp, out, reserved.entries)
        for code in codes:
            if any_true(xp, unclaimed(code)):
                return None
    for mask, value in reversed(list(zip(masks, values))):  # the first entry wins
        out = xp.where(mask, xp.full_like(out, value), out)
    return out if out.dtype == txp else None
