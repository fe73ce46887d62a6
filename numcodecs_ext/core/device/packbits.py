"""Device kernels of packbits: bool and integer values packed to bits and back."""

from __future__ import annotations

from typing import Any

import numpy as np

from .namespace import any_true, declines, is_dtype, view, xp_dtype

__all__ = ["pack", "unpack"]


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


@declines
def pack(xp: Any, arr: Any, dtype: np.dtype, first: int, last: int,
         padding_encoding: str) -> Any:
    """:func:`numcodecs_ext.core.packbits.pack` of bool and integer arrays (least significant
    bit first), as a 1-D uint8 array on the device; values that do not fit decline."""
    if not is_dtype(xp, arr, dtype) or dtype.kind not in "biu" or _size(arr) == 0:
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
            if any_true(xp, bad):
                return None  # the CPU path's error
        if b == width:  # every bit: the two's complement pattern itself
            codes = flat if dtype.kind == "u" else view(flat, np.dtype(f"u{dtype.itemsize}"))
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


@declines
def unpack(xp: Any, data: Any, dtype: np.dtype, count: int, first: int, last: int,
           padding_encoding: str) -> Any:
    """:func:`numcodecs_ext.core.packbits.unpack` of bool and integer arrays on the device (1-D,
    ``count`` values); any length, padding byte or padding bits the CPU path would question
    decline."""
    if dtype.kind not in "biu" or count == 0 or not is_dtype(xp, data, np.dtype("uint8")):
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
    target = xp_dtype(xp, dtype)
    if dtype.kind == "b":
        return codes != 0
    if dtype.kind == "i":
        if b == width:
            return view(codes, dtype)
        sign = 1 << (b - 1)
        values = xp.astype(codes, target)  # < 2**(b-1) * 2: fits
        values = (values ^ sign) - sign
    else:
        values = xp.astype(codes, target)
    if first:
        values = values * (1 << first)
    return values if values.dtype == target else None
