"""Bit packing (zarr v3 ``packbits``): store each value in just the bits it needs.

Each component of a value (two for complex types) is read as its N-bit little-endian pattern and
bits ``first_bit`` .. ``last_bit`` are kept. The kept bits of all values, in C order, form one bit
sequence, each component least significant bit first, padded with zeros to whole bytes; bit ``t``
of the sequence goes to bit ``t % 8`` of byte ``t // 8``. Decoding shifts the bits back to
``first_bit`` and sign-extends signed integers (``int2`` .. ``int64``, datetimes) from
``last_bit``; every other type is zero-extended. ``padding_encoding`` adds a byte holding the
number of padding bits before (``"first_byte"``) or after (``"last_byte"``) the packed bits.

``bit_order="big"`` (not in the spec) fills each byte from its most significant bit instead; with
bool data and ``padding_encoding="first_byte"`` that is the layout of numcodecs' ``PackBits``.

Examples
--------
>>> import numpy as np
>>> pack(np.array([1, 2, 3], dtype="uint8"), last_bit=1).tobytes().hex()
'39'
>>> unpack(b"\\x39", "uint8", 3, last_bit=1)
array([1, 2, 3], dtype=uint8)
>>> bits = {"first_bit": 1, "last_bit": 3, "padding_encoding": "first_byte"}
>>> enc = pack(np.array([-6, 5], dtype="int8"), **bits)
>>> enc, unpack(enc, "int8", **bits)
(array([ 2, 21], dtype=uint8), array([-6,  4], dtype=int8))
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from .dtypes import dtype_name, numeric_info, parse_dtype

__all__ = ["PADDING_ENCODINGS", "check_bits", "component_bits", "pack", "packed_size", "unpack"]

PADDING_ENCODINGS = ("none", "first_byte", "last_byte")
_SUB_BYTE_FLOATS = {"float4_e2m1fn": 4, "float6_e2m3fn": 6, "float6_e3m2fn": 6}
_SUPPORTED = (
    "bool, int2..int64, uint2..uint64, float4..64, bfloat16, complex, datetime64/timedelta64"
)
_REVERSED = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)
_BLOCK = 1 << 18  # values per block: temporaries stay in cache, numpy's call overhead small
_BIT_BLOCK = 1 << 15  # the bit-matrix path takes a byte per bit


class _Layout(NamedTuple):
    dtype: np.dtype  # native byte order
    name: str
    bits: int  # N, bits per component
    components: int
    signed: bool
    sub_int: bool  # int2/int4/uint2/uint4: converted with astype, not viewed
    container: np.dtype  # unsigned integer holding one component


def _layout(dtype: Any) -> _Layout:
    try:
        dt = parse_dtype(dtype)  # zarr v3 names ("int4", "bfloat16") and numpy spellings
    except ValueError:  # not a zarr v3 type (datetimes, strings, ...), or not a type at all
        try:
            dt = None if dtype is None else np.dtype(dtype)
        except TypeError:
            dt = None
    if dt is None:
        raise TypeError(f"packbits: {dtype!r} is not a data type; supported: {_SUPPORTED}")
    return _layout_of(dt if dt.byteorder in "=|" else dt.newbyteorder("="))


@functools.cache
def _layout_of(dt: np.dtype) -> _Layout:
    components, signed, sub_int = 1, False, False
    if dt.kind == "b":
        bits = 1
    elif dt.kind in "iumM":
        bits, signed = 8 * dt.itemsize, dt.kind != "u"
    elif dt.type in (np.float16, np.float32, np.float64, np.complex64, np.complex128):
        components = 2 if dt.kind == "c" else 1
        bits = 8 * dt.itemsize // components
    else:
        try:
            info = numeric_info(dt) if dt.kind in "Vf" else None  # the ml_dtypes types
        except TypeError:
            info = None
        if info is None:
            raise TypeError(f"packbits does not support data type {dt}; supported: {_SUPPORTED}")
        sub_int, signed = info.is_int, info.kind == "int"
        bits = info.bits if sub_int else _SUB_BYTE_FLOATS.get(dt.name, info.bits)
    try:
        name = dtype_name(dt)
    except ValueError:  # datetimes, and float8 types zarr has no name for
        name = str(dt)
    container = np.dtype(f"u{max(bits, 8) // 8}")
    return _Layout(dt, name, bits, components, signed, sub_int, container)


def component_bits(dtype: Any) -> tuple[int, int, bool]:
    """``(N, num_components, signed)``: bits per component, components per value, and whether
    decoding sign-extends. Raises TypeError for data types packbits does not support.

    >>> component_bits("int4"), component_bits("complex64"), component_bits(bool)
    ((4, 1, True), (32, 2, False), (1, 1, False))
    """
    layout = _layout(dtype)
    return layout.bits, layout.components, layout.signed


def check_bits(dtype: Any, first_bit: int | None, last_bit: int | None) -> tuple[int, int]:
    """``first_bit`` and ``last_bit`` resolved for ``dtype`` (defaults: 0 and N - 1).

    >>> check_bits("uint8", None, 3), check_bits("float4_e2m1fn", 1, None)
    ((0, 3), (1, 3))
    >>> check_bits("int4", None, 4)
    Traceback (most recent call last):
    ...
    ValueError: packbits: last_bit=4 is not valid for int4; it must be an integer from 0 to 3
    """
    layout = _layout(dtype)
    n = layout.bits
    resolved = []
    for key, value, default in (("first_bit", first_bit, 0), ("last_bit", last_bit, n - 1)):
        if value is None:
            value = default
        elif isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not 0 <= value < n:
            raise ValueError(f"packbits: {key}={value!r} is not valid for {layout.name}; it must "
                             f"be an integer from 0 to {n - 1}")
        resolved.append(int(value))
    first, last = resolved
    if last < first:
        raise ValueError(f"packbits: last_bit={last} is less than first_bit={first}; last_bit is "
                         f"the inclusive upper end, both from 0 to {n - 1} for {layout.name}")
    return first, last


def _check_options(padding_encoding: str, bit_order: str = "little") -> None:
    if padding_encoding not in PADDING_ENCODINGS:
        raise ValueError(f"packbits: padding_encoding={padding_encoding!r} is not valid; use one "
                         f"of {', '.join(map(repr, PADDING_ENCODINGS))}")
    if bit_order not in ("little", "big"):
        raise ValueError(f"packbits: bit_order={bit_order!r} is not valid; use 'little' or 'big'")


def _check_count(count: Any) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ValueError(f"packbits: count={count!r} must be a non-negative integer")
    return int(count)


def packed_size(count: int, dtype: Any, first_bit: int | None = None, last_bit: int | None = None,
                padding_encoding: str = "none") -> int:
    """The encoded length in bytes of ``count`` values of ``dtype``.

    >>> packed_size(10, "uint8", last_bit=2), packed_size(10, "bool", padding_encoding="first_byte")
    (4, 3)
    """
    first, last = check_bits(dtype, first_bit, last_bit)
    _check_options(padding_encoding)
    bits = _check_count(count) * _layout(dtype).components * (last - first + 1)
    return (bits + 7) // 8 + (padding_encoding != "none")


def pack(arr: Any, first_bit: int | None = None, last_bit: int | None = None,
         padding_encoding: str = "none", bit_order: str = "little") -> np.ndarray:
    """Pack the values of ``arr`` (any shape, memory or byte order; read in C order by value).

    Parameters
    ----------
    arr : array_like
        The values, of any data type :func:`component_bits` accepts.
    first_bit, last_bit : int, optional
        The bits of each component to store (default: all of them).
    padding_encoding : {"none", "first_byte", "last_byte"}
        Where a byte holding the number of padding bits goes, if anywhere.
    bit_order : {"little", "big"}
        ``"big"`` fills each byte from its most significant bit (not in the spec).

    Returns
    -------
    numpy.ndarray
        The encoded bytes, 1-D ``uint8``.

    Examples
    --------
    >>> pack(np.array([True, False, True]), padding_encoding="first_byte", bit_order="big")
    array([  5, 160], dtype=uint8)
    """
    arr = np.asarray(arr)
    layout = _layout(arr.dtype)
    first, last = check_bits(layout.dtype, first_bit, last_bit)
    _check_options(padding_encoding, bit_order)
    flat = arr.astype(layout.dtype, order="C", copy=False).reshape(-1)
    if layout.sub_int:
        codes = flat.astype(np.int8 if layout.signed else np.uint8).view(np.uint8)
    else:  # bits at or above N are never read, so sub-byte floats need no mask here
        codes = flat if flat.dtype == bool else flat.view(layout.container)
    b = last - first + 1
    nbits = codes.size * b
    extra = int(padding_encoding != "none")
    out = np.empty((nbits + 7) // 8 + extra, np.uint8)
    body = out[1:] if padding_encoding == "first_byte" else out[: out.size - extra]
    _pack_codes(codes, first, b, body, bit_order)
    if extra:
        out[0 if padding_encoding == "first_byte" else -1] = -nbits % 8
    return out


def _pack_codes(codes: np.ndarray, first: int, b: int, body: np.ndarray, bit_order: str) -> None:
    """Write bits ``first .. first + b - 1`` of each code into ``body``."""
    m, plan = codes.size, _word_plan(b)
    if b == 1:
        bits = codes if codes.dtype == bool else codes & codes.dtype.type(1 << first)
        body[:] = np.packbits(bits, bitorder=bit_order)  # nonzero packs as 1
        return
    if plan is None:  # one byte per bit: slow, but any width
        for start in range(0, m, _BIT_BLOCK):
            le = codes[start: start + _BIT_BLOCK].astype(codes.dtype.newbyteorder("<"))
            bits = np.unpackbits(le.view(np.uint8), bitorder="little").reshape(le.size, -1)
            block = np.packbits(bits[:, first: first + b], bitorder=bit_order)
            body[start * b // 8: start * b // 8 + block.size] = block
        return
    g, w = plan
    main, size = m - m % g, g * b // 8
    rows = body[: main // g * size].reshape(-1, size)
    for start in range(0, main, _BLOCK):
        block = codes[start: min(main, start + _BLOCK)]
        rows[start // g: (start + block.size) // g] = _squeeze(block, first, b, g, w)
    if main < m:  # the last values do not fill a word: fill it with zeros
        tail = np.zeros(g, codes.dtype)
        tail[: m - main] = codes[main:]
        rest = body[main // g * size:]
        rest[:] = _squeeze(tail, first, b, g, w)[0, : rest.size]
    if bit_order == "big":
        body[:] = _REVERSED[body]


def unpack(data: Any, dtype: Any, count: int | None = None, first_bit: int | None = None,
           last_bit: int | None = None, padding_encoding: str = "none",
           bit_order: str = "little") -> np.ndarray:
    """Decode packed bytes into a new 1-D array of ``count`` values of ``dtype`` (native order).

    Parameters
    ----------
    data
        The encoded bytes: bytes, bytearray, memoryview or a numpy array (read as raw bytes).
    dtype
        The data type of the values (a zarr v3 name or anything :class:`numpy.dtype` accepts).
    count : int, optional
        The number of values; ``data`` must then have exactly :func:`packed_size` bytes, or, for
        types with whole bytes per component (N a multiple of 8), all bits kept and a padding
        byte configured, the same bytes without the padding byte: zarrs (the reference
        implementation) writes plain little-endian values then. Without ``count`` the count is
        read from the padding byte; with ``padding_encoding="none"`` from the length, which
        fixes it only if each value has at least 8 bits.
    first_bit, last_bit, padding_encoding, bit_order
        As given to :func:`pack`.

    Raises
    ------
    ValueError
        If the length, the padding byte or the padding bits are wrong, or the count is unknown.

    Examples
    --------
    >>> unpack(bytes([0x21, 0xD0]), "int4", count=4)
    array([1, 2, 0, -3], dtype=int4)
    >>> unpack(bytes([0x21, 0xD0]), "int4", count=3)
    Traceback (most recent call last):
    ...
    ValueError: packbits: the padding bits of the last byte are not 0 (corrupt data)
    """
    layout = _layout(dtype)
    first, last = check_bits(layout.dtype, first_bit, last_bit)
    _check_options(padding_encoding, bit_order)
    if isinstance(data, np.ndarray):
        buf = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        buf = np.frombuffer(data, dtype=np.uint8)
    b = last - first + 1
    body, count = _split(buf, count, layout.components * b, padding_encoding, bit_order,
                         full_width=layout.bits % 8 == 0 and b == layout.bits)
    codes = _unpack_codes(body, count * layout.components, first, b, layout.signed,
                          layout.container, bit_order)
    if layout.sub_int:
        return codes.view(np.int8 if layout.signed else np.uint8).astype(layout.dtype)
    return codes.view(layout.dtype)


def _split(buf: np.ndarray, count: int | None, k: int, padding_encoding: str, bit_order: str,
           full_width: bool) -> tuple[np.ndarray, int]:
    """Check the length, padding byte and padding bits; return the packed bits and the count."""
    n, extra = buf.size, int(padding_encoding != "none")
    stored = int(buf[0 if padding_encoding == "first_byte" else -1]) if extra and n else None
    if count is not None:
        count = _check_count(count)
        expected = (count * k + 7) // 8 + extra
        if extra and full_width and n == count * k // 8:
            return buf, count  # zarrs' layout: no padding byte
        if n != expected:
            raise ValueError(f"packbits: expected {expected} bytes for {count} values of {k} bits "
                             f"(padding_encoding={padding_encoding!r}), got {n}")
    elif not extra:
        if k < 8:
            raise ValueError(f"packbits: the number of {k}-bit values in {n} bytes is ambiguous "
                             "with padding_encoding='none'; pass the count (the shape)")
        count = 8 * n // k
        if 8 * n - count * k >= 8:
            raise ValueError(f"packbits: {n} bytes hold no whole number of {k}-bit values")
    elif stored is None:
        raise ValueError(f"packbits: empty data has no padding byte ({padding_encoding!r})")
    elif stored > 7 or 8 * (n - 1) < stored or (8 * (n - 1) - stored) % k:
        raise ValueError(f"packbits: padding byte {stored} does not fit {n - 1} bytes of "
                         f"{k}-bit values (corrupt data)")
    else:
        count = (8 * (n - 1) - stored) // k
    pad = -count * k % 8
    if stored is not None and stored != pad:
        raise ValueError(f"packbits: padding byte is {stored}, expected {pad} for {count} values "
                         "(corrupt data)")
    body = buf[1:] if padding_encoding == "first_byte" else buf[: n - extra]
    unused = (0xFF << (8 - pad) & 0xFF) if bit_order == "little" else (1 << pad) - 1
    if pad and int(body[-1]) & unused:
        raise ValueError("packbits: the padding bits of the last byte are not 0 (corrupt data)")
    return body, count


def _unpack_codes(body: np.ndarray, m: int, first: int, b: int, signed: bool,
                  container: np.dtype, bit_order: str) -> np.ndarray:
    """A new array of ``m`` decoded components as ``container`` integers."""
    width, le, plan = 8 * container.itemsize, container.newbyteorder("<"), _word_plan(b)
    if b == 1:
        bits = np.unpackbits(body, count=m, bitorder=bit_order)
        return _place(bits.astype(container, copy=False), first, b, signed)
    if bit_order == "big" and plan is not None:
        body = _REVERSED[body]
    if b == width:
        return body.view(le).astype(container)
    codes = np.empty(m, container)
    for start in range(0, m, _BLOCK if plan else _BIT_BLOCK):
        stop = min(m, start + (_BLOCK if plan else _BIT_BLOCK))
        chunk = body[start * b // 8: (stop * b + 7) // 8]
        if plan:
            codes[start:stop] = _spread(chunk, stop - start, b, *plan)[: stop - start]
        else:
            bits = np.unpackbits(chunk, count=(stop - start) * b, bitorder=bit_order)
            rows = np.zeros((stop - start, width), np.uint8)
            rows[:, :b] = bits.reshape(-1, b)
            codes[start:stop] = np.packbits(rows.reshape(-1), bitorder="little").view(le)
        _place(codes[start:stop], first, b, signed)  # while the block is in cache
    return codes


def _place(codes: np.ndarray, first: int, b: int, signed: bool) -> np.ndarray:
    """Sign-extend b-bit codes (if ``signed``) and shift them to ``first``, in place."""
    if signed and b < 8 * codes.itemsize:
        sign = 1 << (b - 1)
        codes ^= sign  # in wrapping unsigned arithmetic, (x ^ s) - s extends the sign bit s
        codes -= sign
    if first:
        codes *= 1 << first  # numpy's 8-bit left shift is slow
    return codes


def _word_plan(b: int) -> tuple[int, int] | None:
    """``(g, w)``: g = 8 / gcd(b, 8) values of b bits fill whole bytes; in slots of w bits (8,
    16, 32 or 64) they fit one 64-bit word. None if they do not."""
    w = max(8, 1 << (b - 1).bit_length())
    g = 8 // math.gcd(b, 8)
    return (g, w) if g * w <= 64 else None


def _even(f: int, s: int, total: int) -> int:
    """A mask of bits ``[2*i*s, 2*i*s + f)`` for every i within ``total`` bits."""
    return sum(((1 << f) - 1) << (2 * s * i) for i in range(total // (2 * s)))


def _squeeze(codes: np.ndarray, first: int, b: int, g: int, w: int) -> np.ndarray:
    """Pack words of g codes (in w-bit slots) into rows of g * b / 8 bytes.

    Each step moves every odd field down against its even neighbour, halving the number of
    fields. The masks drop every other bit, including those the shift by ``first`` pulls from
    the next code into the top of a slot.
    """
    if codes.dtype.itemsize * 8 != w:
        codes, first = (codes >> first).astype(f"u{w // 8}"), 0
    v = codes.astype(f"<u{w // 8}", copy=False).view(f"<u{g * w // 8}")
    if first:
        v = v >> first
    s, f = w, b
    while s < g * w:
        even = _even(f, s, g * w)
        t = v >> (s - f)
        t &= even << f
        v = v & even
        v |= t
        s, f = 2 * s, 2 * f
    return v.view(np.uint8).reshape(-1, g * w // 8)[:, : g * b // 8]


def _spread(body: np.ndarray, m: int, b: int, g: int, w: int) -> np.ndarray:
    """The inverse of :func:`_squeeze`: at least m codes in w-bit slots (native byte order)."""
    size, word = g * b // 8, g * w // 8
    full = body.size // size
    rows = np.zeros((-(-m // g), word), np.uint8)
    rows[:full, :size] = body[: full * size].reshape(full, size)
    rows.reshape(-1)[full * word: full * word + body.size - full * size] = body[full * size:]
    v = rows.view(f"<u{word}").reshape(-1)
    s, f = g * w // 2, g * b // 2
    while s >= w:
        even = _even(f, s, g * w)
        t = v << (s - f)
        t &= even << s
        v &= even
        v |= t
        s, f = s // 2, f // 2
    return v.view(f"<u{w // 8}").astype(f"u{w // 8}", copy=False)


def first_unrepresentable(arr: Any, first_bit: int | None = None,
                          last_bit: int | None = None) -> tuple[Any, Any] | None:
    """The first value whose bits above ``last_bit`` are not the extension of bit ``last_bit``
    (sign for signed integers, zero otherwise), with what it would decode to; None if all fit.

    Such a value changes when packed (the spec simply drops those bits); bits below ``first_bit``
    are dropped by design and not reported.

    >>> first_unrepresentable(np.array([1, 20, 3], "uint8"), last_bit=3)
    (20, 4)
    >>> first_unrepresentable(np.array([-8, 7], "int8"), last_bit=3) is None
    True
    """
    a = np.asarray(arr)
    lay = _layout(a.dtype)
    first, last = check_bits(lay.dtype, first_bit, last_bit)
    if last == lay.bits - 1 or a.size == 0:
        return None
    flat = np.ascontiguousarray(a, dtype=lay.dtype).reshape(-1)
    if lay.sub_int:
        codes = flat.astype(np.int8 if lay.signed else np.uint8)
    elif lay.bits < 8:  # sub-byte floats: their code in the low bits of a byte
        codes = flat.view(np.uint8) & np.uint8((1 << lay.bits) - 1)
    else:
        codes = flat.view(f"{'i' if lay.signed else 'u'}{lay.bits // 8}")
    # one reduction pass when everything fits (the usual case); the offender is found only if not
    if lay.signed:
        lo, hi = -(1 << last), (1 << last) - 1
        if int(codes.min()) >= lo and int(codes.max()) <= hi:
            return None
        bad = (codes < lo) | (codes > hi)
    else:
        hi = (1 << (last + 1)) - 1
        if int(codes.max()) <= hi:
            return None
        bad = codes > hi
    hits = np.flatnonzero(bad)
    if hits.size == 0:
        return None
    index = int(hits[0]) // lay.components
    value = flat[index : index + 1]
    decoded = unpack(pack(value, first, last), lay.dtype, 1, first, last)
    return value[0].item(), decoded[0].item()
