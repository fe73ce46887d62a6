"""packbits core: hand-computed bytes, a bit-by-bit reference, numcodecs' PackBits, zarrs' layout,
every validation error."""

from __future__ import annotations

import ml_dtypes
import numcodecs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from numcodecs_ext.core import packbits as core
from numcodecs_ext.core.packbits import (
    PADDING_ENCODINGS,
    check_bits,
    component_bits,
    pack,
    packed_size,
    unpack,
)

SUB_INTS = {"int2": 2, "int4": 4, "uint2": 2, "uint4": 4}
SUB_FLOATS = {"float4_e2m1fn": 4, "float6_e2m3fn": 6, "float6_e3m2fn": 6}
FLOAT8 = [n for n in dir(ml_dtypes) if n.startswith("float8_")]
DTYPES = (["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "bfloat16", "complex64", "complex128",
           "datetime64[ns]", "timedelta64[s]"] + list(SUB_INTS) + list(SUB_FLOATS) + FLOAT8)
BIT_ORDERS = ("little", "big")


def dtype_of(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) else np.dtype(name)


def spec_bits(dt: np.dtype) -> tuple[int, int, bool]:
    """(N, components, signed), written out from the spec's table."""
    name = dt.name
    if name in SUB_INTS:
        return SUB_INTS[name], 1, name.startswith("int")
    if name in SUB_FLOATS:
        return SUB_FLOATS[name], 1, False
    if dt == bool:
        return 1, 1, False
    if dt.kind == "c":
        return dt.itemsize * 4, 2, False
    return dt.itemsize * 8, 1, dt.kind in "imM"


def ref_codes(arr: np.ndarray) -> np.ndarray:
    """The N-bit pattern of every component (real before imaginary), as uint64."""
    n, nc, _ = spec_bits(arr.dtype)
    flat = np.ascontiguousarray(arr).reshape(-1)
    if arr.dtype == bool:
        return flat.astype(np.uint64)
    if arr.dtype.name in SUB_INTS:
        return flat.astype(np.int64).view(np.uint64) & np.uint64((1 << n) - 1)
    if arr.dtype.name in SUB_FLOATS:
        return (flat.view(np.uint8) & ((1 << n) - 1)).astype(np.uint64)
    return flat.view(f"u{arr.dtype.itemsize // nc}").astype(np.uint64)


def ref_pack(codes: np.ndarray, first: int, last: int, padding: str, order: str) -> bytes:
    """The spec's bit sequence, one column per bit: bits first..last of each code, LSB first."""
    bits = np.empty((codes.size, last - first + 1), np.uint8)
    for j in range(last - first + 1):
        bits[:, j] = (codes >> np.uint64(first + j)) & np.uint64(1)
    bits = bits.reshape(-1)
    pad = -bits.size % 8
    body = np.packbits(bits, bitorder=order).tobytes()
    return {"none": body, "first_byte": bytes([pad]) + body,
            "last_byte": body + bytes([pad])}[padding]


def ref_decoded(codes: np.ndarray, n: int, first: int, last: int, signed: bool) -> np.ndarray:
    """Patterns after decoding: bits first..last kept in place, sign bits above last if signed."""
    kept = codes & np.uint64(((1 << (last - first + 1)) - 1) << first)
    if signed:
        high = np.uint64(((1 << n) - 1) ^ ((1 << (last + 1)) - 1))
        kept = np.where((kept >> np.uint64(last)) & np.uint64(1), kept | high, kept)
    return kept


def random_array(dt: np.dtype, shape: tuple[int, ...] | int, seed: int) -> np.ndarray:
    """Random bit patterns (every pattern, for floats NaNs with payloads too)."""
    rng = np.random.default_rng(seed)
    count = int(np.prod(shape))
    n, _, _ = spec_bits(dt)
    if dt == bool:
        return rng.integers(0, 2, count).astype(bool).reshape(shape)
    if dt.name in SUB_INTS:
        info = ml_dtypes.iinfo(dt)
        return rng.integers(int(info.min), int(info.max) + 1, count).astype(dt).reshape(shape)
    raw = rng.integers(0, 256, count * dt.itemsize, dtype=np.uint8)
    if dt.name in SUB_FLOATS:
        raw &= (1 << n) - 1
    return raw.view(dt).reshape(shape)


def check_round_trip(arr: np.ndarray, first: int | None, last: int | None, padding: str,
                     order: str) -> None:
    dt = arr.dtype
    n, nc, signed = spec_bits(dt)
    f, l_ = check_bits(dt, first, last)
    codes = ref_codes(arr)
    enc = pack(arr, first, last, padding, order)
    assert enc.dtype == np.uint8 and enc.ndim == 1
    assert enc.tobytes() == ref_pack(codes, f, l_, padding, order)
    assert enc.size == packed_size(arr.size, dt, first, last, padding)
    dec = unpack(enc, dt, arr.size, first, last, padding, order)
    assert dec.dtype == dt and dec.shape == (arr.size,)
    expected = ref_decoded(codes, n, f, l_, signed)
    np.testing.assert_array_equal(ref_codes(dec), expected)
    if dt.name in SUB_FLOATS:  # built from the N-bit code: nothing above it
        assert not (dec.view(np.uint8) >> n).any()
    if (f, l_) == (0, n - 1):  # lossless: every bit pattern comes back
        assert dec.tobytes() == np.ascontiguousarray(arr).tobytes()
    if padding != "none" or nc * (l_ - f + 1) >= 8:  # the count can be read from the bytes
        np.testing.assert_array_equal(ref_codes(unpack(enc, dt, None, first, last, padding, order)),
                                      expected)


# --- hand-computed bytes -----------------------------------------------------------------------

def test_uint8_two_bits():
    enc = pack(np.array([1, 2, 3], dtype="uint8"), last_bit=1)
    assert enc.tolist() == [0b00111001]
    np.testing.assert_array_equal(unpack(enc, "uint8", 3, last_bit=1), [1, 2, 3])
    big = pack(np.array([1, 2, 3], dtype="uint8"), last_bit=1, bit_order="big")
    assert big.tolist() == [0b10011100]


def test_int8_sign_extension_from_last_bit():
    x = np.array([-6, 5], dtype="int8")  # 0b11111010 -> bits 1..3 = 101; 0b00000101 -> 010
    enc = pack(x, first_bit=1, last_bit=3, padding_encoding="first_byte")
    assert enc.tolist() == [2, 0b010101]
    dec = unpack(enc, "int8", first_bit=1, last_bit=3, padding_encoding="first_byte")
    assert dec.tolist() == [-6, 4] and dec.view(np.uint8).tolist() == [0b11111010, 0b00000100]
    # the same bits as uint8 are zero-extended
    assert unpack(enc, "uint8", 2, 1, 3, "first_byte").tolist() == [0b1010, 0b0100]


def test_complex64_exponent_bits():
    x = np.array([1 + 2j, -1 - 2j], dtype="complex64")  # exponents 127 and 128, signs dropped
    enc = pack(x, first_bit=23, last_bit=30)
    assert enc.tolist() == [127, 128, 127, 128]
    dec = unpack(enc, "complex64", 2, first_bit=23, last_bit=30)
    assert dec.tolist() == [1 + 2j, 1 + 2j]


def test_int16_twelve_bits():
    x = np.array([-2048, 2047, -1], dtype="int16")  # 0x800, 0x7ff, 0xfff: 0xfff7ff800 LSB first
    enc = pack(x, last_bit=11, padding_encoding="last_byte")
    assert enc.tolist() == [0x00, 0xF8, 0x7F, 0xFF, 0x0F, 4]
    np.testing.assert_array_equal(unpack(enc, "int16", None, 0, 11, "last_byte"), x)
    np.testing.assert_array_equal(unpack(enc[:-1], "int16", last_bit=11), x)  # 12-bit: count known
    assert unpack(enc, "uint16", 3, 0, 11, "last_byte").tolist() == [0x800, 0x7FF, 0xFFF]


def test_int4_nibbles():
    x = np.array([1, 2, 0, -3], dtype=ml_dtypes.int4)
    assert pack(x).tolist() == [0x21, 0xD0]
    dec = unpack(bytes([0x21, 0xD0]), "int4", 4)
    assert dec.tolist() == [1, 2, 0, -3]
    assert dec.tobytes() == x.tobytes()  # ml_dtypes' own storage of the values
    assert pack(x, last_bit=1).tolist() == [0b01001001]  # 01, 10, 00, 01
    assert unpack(bytes([0b01001001]), "int4", 4, last_bit=1).tolist() == [1, -2, 0, 1]


def test_bool_numcodecs_example():
    x = np.array([True, False, False, True])
    assert pack(x, padding_encoding="first_byte", bit_order="big").tolist() == [4, 144]
    assert pack(x, padding_encoding="first_byte").tolist() == [4, 0b1001]


@pytest.mark.parametrize("name", list(SUB_FLOATS))
def test_every_sub_byte_float_code_round_trips(name):
    dt = dtype_of(name)
    n = SUB_FLOATS[name]
    codes = np.arange(1 << n, dtype=np.uint8)
    x = codes.view(dt)
    enc = pack(x)
    assert enc.tobytes() == ref_pack(codes.astype(np.uint64), 0, n - 1, "none", "little")
    dec = unpack(enc, dt, codes.size)
    assert dec.view(np.uint8).tolist() == codes.tolist()
    neg_zero = dec[1 << (n - 1)].astype(np.float32)
    assert neg_zero == 0 and np.signbit(neg_zero)
    if name == "float4_e2m1fn":
        assert enc.tolist() == [0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE]
        assert dec.astype(np.float32).tolist()[:8] == [0, 0.5, 1, 1.5, 2, 3, 4, 6]


def test_datetime_is_signed_int64():
    x = np.array(["NaT", "1970-01-01T00:00:00.000000001", "1969-12-31T23:59:59.999999999"],
                 dtype="datetime64[ns]")
    dec = unpack(pack(x, last_bit=1), x.dtype, 3, last_bit=1)
    assert dec.view(np.int64).tolist() == [0, 1, -1]
    np.testing.assert_array_equal(unpack(pack(x), x.dtype, 3), x)


# --- the reference, over every data type and option ---------------------------------------------

@given(
    name=st.sampled_from(DTYPES),
    shape=st.sampled_from([(), (0,), (1,), (7,), (3, 5), (2, 3, 4), (33,), (2, 0)]),
    bits=st.tuples(st.integers(0, 63), st.integers(0, 63)),
    full=st.booleans(),
    padding=st.sampled_from(PADDING_ENCODINGS),
    order=st.sampled_from(BIT_ORDERS),
    seed=st.integers(0, 2**32 - 1),
)
def test_round_trip_every_dtype(name, shape, bits, full, padding, order, seed):
    dt = dtype_of(name)
    n = spec_bits(dt)[0]
    first, last = sorted(b % n for b in bits)
    check_round_trip(random_array(dt, shape, seed), None if full else first,
                     None if full else last, padding, order)


@given(
    name=st.sampled_from(["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                          *SUB_INTS]),
    bits=st.tuples(st.integers(0, 63), st.integers(0, 63)),
    data=st.data(),
)
def test_integers_that_fit_round_trip_exactly(name, bits, data):
    dt = dtype_of(name)
    n, _, signed = spec_bits(dt)
    first, last = sorted(b % n for b in bits)
    width = last - first + 1
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    values = [v << first for v in data.draw(st.lists(st.integers(lo, hi), max_size=20))]
    base = np.int8 if name in SUB_INTS else dt
    x = np.array(values, dtype=object).astype(base).astype(dt)
    for padding in PADDING_ENCODINGS:
        dec = unpack(pack(x, first, last, padding), dt, x.size, first, last, padding)
        assert dec.astype(base).tolist() == values


@pytest.mark.parametrize("order", BIT_ORDERS)
@pytest.mark.parametrize("padding", ["none", "first_byte"])
@pytest.mark.parametrize("dtype, first, last", [
    ("uint8", 3, 3), ("uint8", 3, 4), ("int8", 1, 3), ("int8", 0, 3), ("int16", 0, 11),
    ("uint16", 4, 13), ("int32", 8, 23), ("uint32", 3, 22), ("uint16", 2, 10), ("int64", 1, 45),
])
def test_large_arrays_cross_block_boundaries(dtype, first, last, padding, order):
    check_round_trip(random_array(np.dtype(dtype), core._BLOCK + 1003, seed=first + last),
                     first, last, padding, order)


@pytest.mark.parametrize("width", [2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 17, 20, 28, 33])
def test_every_single_bit_goes_to_its_place(width):
    """Each decoded bit is an OR of input bits through fixed shifts and masks, so single-bit
    inputs exercise every bit path of the kernels for this width."""
    dt = np.dtype(f"u{max(8, 1 << (width - 1).bit_length()) // 8}")
    for first in (0, 8 * dt.itemsize - width):
        last = first + width - 1
        for p in range(8 * width):  # 8 values fill whole bytes
            body = np.zeros(width, np.uint8)
            body[p // 8] = 1 << (p % 8)
            expected = np.zeros(8, dt)
            expected[p // width] = dt.type(1) << dt.type(first + p % width)
            np.testing.assert_array_equal(unpack(body, dt, 8, first, last), expected)
        for j in range(8):
            for t in range(8 * dt.itemsize):
                x = np.zeros(8, dt)
                x[j] = dt.type(1) << dt.type(t)
                assert pack(x, first, last).tobytes() == ref_pack(ref_codes(x), first, last,
                                                                   "none", "little")


# --- input layouts ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["int16", "float64", "complex64", "uint32", "timedelta64[ms]"])
def test_memory_and_byte_order_are_read_by_value(name):
    x = random_array(np.dtype(name), (6, 10), seed=3)
    expected = pack(x, last_bit=12)
    for variant in (np.asfortranarray(x), x.astype(x.dtype.newbyteorder()), x.T.copy().T):
        assert pack(variant, last_bit=12).tobytes() == expected.tobytes()
    view = x[1::2, ::3]
    assert pack(view, last_bit=12).tobytes() == pack(view.copy(), last_bit=12).tobytes()
    swapped_view = x.astype(x.dtype.newbyteorder())[::-1, 1::2]
    assert pack(swapped_view).tobytes() == pack(x[::-1, 1::2].copy()).tobytes()
    dec = unpack(pack(np.asfortranarray(x)), name, x.size)
    assert dec.dtype.isnative and dec.tobytes() == x.tobytes()


def test_data_buffers():
    x = np.arange(10, dtype="uint16")
    enc = pack(x, last_bit=9, padding_encoding="first_byte")
    for data in (enc, enc.tobytes(), bytearray(enc.tobytes()), memoryview(enc.tobytes()),
                 enc.reshape(1, -1)):
        np.testing.assert_array_equal(unpack(data, "uint16", last_bit=9,
                                             padding_encoding="first_byte"), x)
    for data, kw in ((enc.tobytes(), {"last_bit": 9, "padding_encoding": "first_byte"}),
                     (x.tobytes(), {}), (x.view(np.uint8), {}),
                     (x.tobytes(), {"padding_encoding": "last_byte", "count": 10})):  # zarrs'
        decoded = unpack(data, "uint16", **kw)
        assert decoded.flags.writeable and decoded.flags.c_contiguous
        assert not np.shares_memory(decoded, x)
        decoded[0] = 7  # a new array, not a view of the (read-only) input


def test_empty_and_zero_d():
    for padding, expected in (("none", b""), ("first_byte", b"\0"), ("last_byte", b"\0")):
        enc = pack(np.zeros(0, ml_dtypes.uint4), padding_encoding=padding)
        assert enc.tobytes() == expected
        assert unpack(enc, "uint4", 0, padding_encoding=padding).shape == (0,)
    assert unpack(b"\0", "uint2", padding_encoding="last_byte").shape == (0,)
    assert unpack(b"", "uint64").shape == (0,)
    x = np.array(-3, dtype="int8")
    enc = pack(x, last_bit=2, padding_encoding="first_byte")
    assert enc.tolist() == [5, 0b101]
    assert unpack(enc, "int8", padding_encoding="first_byte", last_bit=2).tolist() == [-3]


# --- other implementations ---------------------------------------------------------------------

def test_numcodecs_packbits_bytes_for_bool():
    rng = np.random.default_rng(0)
    codec = numcodecs.PackBits()
    for n in range(71):
        x = rng.integers(0, 2, n).astype(bool)
        ours = pack(x, padding_encoding="first_byte", bit_order="big")
        theirs = codec.encode(x)
        assert ours.tobytes() == np.asarray(theirs).tobytes(), n
        np.testing.assert_array_equal(
            unpack(theirs, bool, padding_encoding="first_byte", bit_order="big"), x)
        np.testing.assert_array_equal(np.asarray(codec.decode(ours)), x)
    x = np.ones((3, 5), bool) & (np.arange(15).reshape(3, 5) % 3 == 0)
    assert pack(x, padding_encoding="first_byte", bit_order="big").tobytes() == \
        np.asarray(codec.encode(x)).tobytes()


@pytest.mark.parametrize("name", ["uint8", "int16", "float32", "complex64", "bfloat16",
                                  "float8_e4m3fn", "uint64", "complex128"])
@pytest.mark.parametrize("padding", ["first_byte", "last_byte"])
def test_zarrs_full_width_layout_without_padding_byte(name, padding):
    """zarrs writes plain little-endian values, no padding byte, when every bit is kept."""
    dt = dtype_of(name)
    x = random_array(dt, 9, seed=1)
    plain = x.tobytes() if dt.itemsize == 1 or dt.kind == "V" else x.astype(
        dt.newbyteorder("<")).tobytes()
    assert pack(x, padding_encoding=padding).tobytes() == (
        b"\0" + plain if padding == "first_byte" else plain + b"\0")
    assert unpack(plain, dt, 9, padding_encoding=padding).tobytes() == x.tobytes()
    with pytest.raises(ValueError, match="expected"):  # one byte short of either layout
        unpack(plain[:-1], dt, 9, padding_encoding=padding)


def test_zarrs_layout_only_when_every_bit_is_kept():
    x = np.arange(4, dtype="int16")
    with pytest.raises(ValueError, match="expected 7 bytes"):
        unpack(x.tobytes(), "int16", 4, last_bit=11, padding_encoding="first_byte")
    with pytest.raises(ValueError, match="expected 3 bytes"):  # bool: N = 1, never byte-wide
        unpack(b"\x01\x00", "bool", 16, padding_encoding="first_byte")


# --- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [object, "U3", "S2", "V4", [("a", "i4")], np.longdouble,
                                   ml_dtypes.int1 if hasattr(ml_dtypes, "int1") else "O",
                                   "no-such-type", None])
def test_unsupported_dtype(dtype):
    with pytest.raises(TypeError, match="supported: bool, int2"):
        component_bits(dtype)
    with pytest.raises(TypeError, match="supported"):
        unpack(b"", dtype, 0)
    if dtype not in ("no-such-type", None):
        with pytest.raises(TypeError, match="supported"):
            pack(np.zeros(2, dtype))


def test_component_bits():
    assert component_bits("bool") == (1, 1, False)
    assert component_bits("uint2") == (2, 1, False)
    assert component_bits("float6_e3m2fn") == (6, 1, False)
    assert component_bits(np.dtype(">i2")) == (16, 1, True)
    assert component_bits("complex128") == (64, 2, False)
    assert component_bits("m8[us]") == (64, 1, True)
    assert component_bits("bfloat16") == (16, 1, False)
    assert component_bits(ml_dtypes.float8_e5m2) == (8, 1, False)


@pytest.mark.parametrize("dtype, first, last, match", [
    ("uint8", -1, None, r"first_bit=-1 is not valid for uint8; it must be an integer from 0 to 7"),
    ("uint8", 8, None, r"first_bit=8 .* from 0 to 7"),
    ("uint8", None, 8, r"last_bit=8 .* from 0 to 7"),
    ("int4", None, 4, r"last_bit=4 is not valid for int4; .* from 0 to 3"),
    ("bool", None, 1, r"last_bit=1 .* from 0 to 0"),
    ("complex64", 0, 32, r"last_bit=32 .* from 0 to 31"),
    ("uint16", 5, 4, r"last_bit=4 is less than first_bit=5"),
    ("uint8", 1.0, None, r"first_bit=1.0 is not valid"),
    ("uint8", True, None, r"first_bit=True is not valid"),
    ("datetime64[s]", None, 64, r"last_bit=64 is not valid for datetime64\[s\]"),
])
def test_bad_bits(dtype, first, last, match):
    with pytest.raises(ValueError, match=match):
        check_bits(dtype, first, last)
    with pytest.raises(ValueError, match=match):
        pack(np.zeros(3, dtype_of(dtype)), first, last)
    with pytest.raises(ValueError, match=match):
        unpack(b"\0\0\0\0", dtype, None, first, last, "first_byte")


def test_check_bits_defaults():
    assert check_bits("uint16", None, None) == (0, 15)
    assert check_bits("int4", np.int64(1), None) == (1, 3)
    assert check_bits("float32", 23, 30) == (23, 30)


@pytest.mark.parametrize("padding", PADDING_ENCODINGS)
def test_wrong_length(padding):
    enc = pack(np.arange(5, dtype="uint8"), last_bit=2, padding_encoding=padding)
    for data in (enc[:-1], np.append(enc, np.uint8(0)), b""):
        with pytest.raises(ValueError, match=rf"expected {enc.size} bytes for 5 values of 3 bits "
                                             rf"\(padding_encoding='{padding}'\), got {len(data)}"):
            unpack(data, "uint8", 5, last_bit=2, padding_encoding=padding)


def test_huge_count_fails_before_allocating():
    with pytest.raises(ValueError, match="expected"):
        unpack(b"\0" * 8, "uint64", 10**15)
    with pytest.raises(ValueError, match="expected"):
        unpack(b"\0" * 8, "uint64", 10**15, padding_encoding="first_byte")


@pytest.mark.parametrize("padding", ["first_byte", "last_byte"])
def test_wrong_padding_byte(padding):
    enc = pack(np.arange(5, dtype="uint8"), last_bit=2, padding_encoding=padding)  # 15 bits: pad 1
    at = 0 if padding == "first_byte" else -1
    assert enc[at] == 1
    for stored in (0, 2, 7, 8, 255):
        bad = enc.copy()
        bad[at] = stored
        with pytest.raises(ValueError, match=f"padding byte is {stored}, expected 1"):
            unpack(bad, "uint8", 5, last_bit=2, padding_encoding=padding)
        with pytest.raises(ValueError, match="corrupt"):
            unpack(bad, "uint8", None, last_bit=2, padding_encoding=padding)


@pytest.mark.parametrize("order", BIT_ORDERS)
@pytest.mark.parametrize("padding", PADDING_ENCODINGS)
def test_nonzero_padding_bits(padding, order):
    x = np.arange(5, dtype="uint8")
    enc = pack(x, last_bit=2, padding_encoding=padding, bit_order=order)
    last = -2 if padding == "last_byte" else -1
    np.testing.assert_array_equal(
        unpack(enc, "uint8", 5, last_bit=2, padding_encoding=padding, bit_order=order), x)
    bad = enc.copy()
    bad[last] |= 0x80 if order == "little" else 0x01  # the one padding bit
    with pytest.raises(ValueError, match="padding bits of the last byte are not 0"):
        unpack(bad, "uint8", 5, last_bit=2, padding_encoding=padding, bit_order=order)
    bad = enc.copy()
    bad[last] ^= 0x40 if order == "little" else 0x02  # a data bit: decodes, to another value
    assert unpack(bad, "uint8", 5, last_bit=2, padding_encoding=padding,
                  bit_order=order).tolist() != x.tolist()


def test_count_from_the_bytes():
    with pytest.raises(ValueError, match="ambiguous with padding_encoding='none'; pass the count"):
        unpack(b"\0", "uint8", None, last_bit=3)
    with pytest.raises(ValueError, match="ambiguous"):
        unpack(b"", "bool")
    with pytest.raises(ValueError, match="1 bytes hold no whole number of 12-bit values"):
        unpack(b"\0", "int16", None, last_bit=11)
    assert unpack(b"\0" * 3, "int16", None, last_bit=11).shape == (2,)
    assert unpack(b"\0" * 5, "int16", None, last_bit=11).shape == (3,)  # 36 bits + 4 padding
    with pytest.raises(ValueError, match="empty data has no padding byte"):
        unpack(b"", "uint8", None, padding_encoding="first_byte")
    with pytest.raises(ValueError, match="padding byte 9 does not fit"):
        unpack(b"\x09\0", "uint8", None, last_bit=3, padding_encoding="first_byte")
    with pytest.raises(ValueError, match="padding byte 3 does not fit 1 bytes of 12-bit"):
        unpack(b"\0\x03", "int16", None, last_bit=11, padding_encoding="last_byte")
    with pytest.raises(ValueError, match="padding byte 1 does not fit 0 bytes"):
        unpack(b"\x01", "bool", None, padding_encoding="first_byte")


def test_bad_options():
    x = np.zeros(3, "uint8")
    with pytest.raises(ValueError, match="padding_encoding='start_byte' is not valid"):
        pack(x, padding_encoding="start_byte")
    with pytest.raises(ValueError, match="padding_encoding"):
        packed_size(3, "uint8", padding_encoding="start")
    with pytest.raises(ValueError, match="bit_order='msb' is not valid"):
        unpack(b"\0\0\0", "uint8", 3, bit_order="msb")
    for count in (-1, True, 2.0):
        with pytest.raises(ValueError, match="must be a non-negative integer"):
            unpack(b"\0\0", "uint8", count)
        with pytest.raises(ValueError, match="must be a non-negative integer"):
            packed_size(count, "uint8")


def test_packed_size():
    assert packed_size(0, "uint4") == 0
    assert packed_size(0, "uint4", padding_encoding="last_byte") == 1
    assert packed_size(3, "complex64", first_bit=20, last_bit=22) == 3  # 18 bits
    assert packed_size(np.int64(8), "bool", padding_encoding="first_byte") == 2
    assert packed_size(7, "float6_e2m3fn") == 6
