"""cast_value: spec semantics, exact rounding against a Fraction reference, codec layers, zarr."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import ml_dtypes
import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.core.cast_value import ROUNDING_MODES, cast_array, numeric_info
from numcodecs_ext.core.dtypes import parse_dtype

#: every test here runs with the compiled kernels and with numpy's alone
pytestmark = pytest.mark.usefixtures("kernels")

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "int2", "int4", "uint2", "uint4"]
FLOATS = ["float16", "float32", "float64", "bfloat16", "float8_e3m4", "float8_e4m3",
          "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
          "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"]
ALL = INTS + FLOATS

NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


# --- exact reference ------------------------------------------------------------------------


def _round_frac(q: Fraction, rounding: str, neg: bool) -> int:
    """Round a non-negative Fraction magnitude to an integer (sign given separately)."""
    fl = math.floor(q)
    rem = q - fl
    if rem == 0:
        return fl
    if rounding == "towards-zero":
        return fl
    if rounding == "towards-positive":
        return fl if neg else fl + 1
    if rounding == "towards-negative":
        return fl + 1 if neg else fl
    if rem > Fraction(1, 2):
        return fl + 1
    if rem < Fraction(1, 2):
        return fl
    if rounding == "nearest-away":
        return fl + 1
    return fl + (fl & 1)


def ref_round(x: Fraction, tgt: str, rounding: str) -> Fraction:
    """``x`` rounded to ``tgt``'s grid (unbounded exponent range, gradual underflow)."""
    info = numeric_info(parse_dtype(tgt))
    neg = x < 0
    m = -x if neg else x
    if info.is_int:
        r = Fraction(_round_frac(m, rounding, neg))
    else:
        if m == 0:
            return Fraction(0)
        e = m.numerator.bit_length() - m.denominator.bit_length()
        if Fraction(2) ** e > m:
            e -= 1
        k = max(e, info.emin) - (info.precision - 1)
        r = _round_frac(m / Fraction(2) ** k, rounding, neg) * Fraction(2) ** k
    return -r if neg else r


def ref_cast(value: float | int, tgt: str, rounding: str, out_of_range: str | None):
    """Expected float64/int result or the string "error" (no scalar map)."""
    info = numeric_info(parse_dtype(tgt))
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return value if info.has_nan and not info.is_int else "error"
        return value if (not info.is_int and info.has_inf) else "error"
    r = ref_round(Fraction(value), tgt, rounding)
    if info.is_int:
        if info.lo <= r <= info.hi:
            return int(r)
        if out_of_range == "clamp":
            return info.lo if r < info.lo else info.hi
        if out_of_range == "wrap":
            return (int(r) - info.lo) % 2**info.bits + info.lo
        return "error"
    big = Fraction(info.max)
    low_ok = (r >= -big) if info.signed else (r >= Fraction(info.min_pos))
    if r > big or not low_ok or (r == 0 and not info.has_zero):
        if out_of_range == "clamp":
            if r > big:
                return math.inf if info.has_inf else info.max
            return (-math.inf if info.has_inf else -info.max) if info.signed else info.min_pos
        return "error"
    return float(r)


def check_against_reference(values: np.ndarray, tgt: str, rounding: str, oor: str | None) -> None:
    src = values.dtype
    for v in values.reshape(-1):
        py = int(v) if src.kind in "iu" else float(np.asarray(v).astype(np.float64))
        expected = ref_cast(py, tgt, rounding, oor)
        single = np.array([v], dtype=src)
        if expected == "error":
            with pytest.raises(ValueError):
                cast_array(single, parse_dtype(tgt), rounding=rounding, out_of_range=oor)
            continue
        got = cast_array(single, parse_dtype(tgt), rounding=rounding, out_of_range=oor)[0]
        if isinstance(expected, int):
            assert int(got) == expected, (py, tgt, rounding, oor, got)
        else:
            g = float(np.asarray(got).astype(np.float64))
            if math.isnan(expected):
                assert math.isnan(g)
            else:
                assert g == expected, (py, tgt, rounding, oor, g, expected)
                if expected == 0 and numeric_info(parse_dtype(tgt)).has_negzero:
                    assert math.copysign(1, g) == math.copysign(1, py), (py, tgt, g)
    # the whole array at once (the blocked kernels) agrees with element-by-element
    if all(ref_cast(int(v) if src.kind in "iu" else float(np.asarray(v).astype(np.float64)),
                    tgt, rounding, oor) != "error" for v in values.reshape(-1)):
        whole = cast_array(values, parse_dtype(tgt), rounding=rounding, out_of_range=oor)
        singles = [cast_array(np.array([v], dtype=src), parse_dtype(tgt), rounding=rounding,
                              out_of_range=oor) for v in values.reshape(-1)]
        assert whole.tobytes() == np.concatenate(singles).tobytes()


# --- explicit edge vectors -------------------------------------------------------------------


def test_float64_to_float16_single_rounding():
    x = np.array([1.0004882812500002, 65519.99999999999, 65520.0, -0.0, 2.0**-25, 2.0**-25 + 2**-60])
    got = cast_array(x[:2], "float16")
    assert got.tolist() == [1.0009765625, 65504.0]
    with pytest.raises(ValueError, match="outside the finite range"):
        cast_array(x[2:3], "float16")  # 65520 rounds (ties to even) to 65536: out of range
    assert cast_array(x[2:3], "float16", out_of_range="clamp")[0] == np.inf
    z = cast_array(x[3:], "float16")
    assert np.signbit(z[0]) and z[1] == 0 and z[2] == 2.0**-24


def test_big_integers_to_float_exact():
    big = np.array([2**63 - 1, 2**53 + 1, -(2**63), -(2**53) - 1], np.int64)
    down = cast_array(big, "float64", rounding="towards-negative").tolist()
    assert down == [float(2**63 - 1024), float(2**53), -(2.0**63), -(2.0**53) - 2]
    up = cast_array(big, "float64", rounding="towards-positive").tolist()
    assert up == [2.0**63, 2.0**53 + 2, -(2.0**63), -(2.0**53)]
    u = np.array([2**64 - 1], np.uint64)
    assert cast_array(u, "float32", rounding="towards-zero")[0] == np.float32(2**64 - 2**40)
    assert cast_array(u, "float64", rounding="nearest-away")[0] == 2.0**64


def test_nearest_away_no_false_tie():
    x = np.array([0.49999999999999994, -0.49999999999999994, 0.5, -0.5, 1.5, 2.5])
    assert cast_array(x, "int8", rounding="nearest-away").tolist() == [0, 0, 1, -1, 2, 3]
    assert cast_array(x, "int8").tolist() == [0, 0, 0, 0, 2, 2]


def test_spec_out_of_range_examples():
    with pytest.raises(ValueError, match="out_of_range is not set"):
        cast_array(np.array([128.0]), "int8")
    assert cast_array(np.array([128.0]), "int8", out_of_range="clamp")[0] == 127
    assert cast_array(np.array([128.0]), "int8", out_of_range="wrap")[0] == -128
    w = cast_array(np.array([32768, 32769, -32769]), "int16", out_of_range="wrap")
    assert w.tolist() == [-32768, -32767, 32767]


def test_wrap_64bit_targets():
    assert cast_array(np.array([-1.0]), "uint64", out_of_range="wrap")[0] == 2**64 - 1
    assert cast_array(np.array([2.0**64 + 4096]), "uint64", out_of_range="wrap")[0] == 4096
    assert cast_array(np.array([2.0**63]), "int64", out_of_range="wrap")[0] == -(2**63)
    assert cast_array(np.array([2.0**63]), "int64", out_of_range="clamp")[0] == 2**63 - 1
    assert cast_array(np.array([1e30]), "uint64", out_of_range="clamp")[0] == 2**64 - 1
    assert cast_array(np.array([-1], np.int64), "uint64", out_of_range="wrap")[0] == 2**64 - 1
    assert cast_array(np.array([2**64 - 1], np.uint64), "int8", out_of_range="wrap")[0] == -1


def test_nan_and_inf_to_int_need_a_map():
    for v in (np.nan, np.inf, -np.inf):
        for mode in (None, "clamp", "wrap"):
            with pytest.raises(ValueError, match="map it in scalar_map"):
                cast_array(np.array([1.0, v]), "uint8", out_of_range=mode)
    m = [(np.nan, np.uint8(0)), (np.inf, np.uint8(255)), (-np.inf, np.uint8(1))]
    got = cast_array(np.array([np.nan, np.inf, -np.inf, 3.0]), "uint8", scalar_map=m)
    assert got.tolist() == [0, 255, 1, 3]


def test_nan_and_inf_to_formats_without_them():
    for t in ("float4_e2m1fn", "float6_e2m3fn"):
        with pytest.raises(ValueError, match="no NaN"):
            cast_array(np.array([np.nan]), parse_dtype(t), out_of_range="clamp")
    with pytest.raises(ValueError, match="no infinity"):
        cast_array(np.array([np.inf]), parse_dtype("float8_e4m3fnuz"), out_of_range="clamp")
    # NaN is propagated where the target has one
    got = cast_array(np.array([np.nan]), parse_dtype("float8_e4m3fnuz"))
    assert np.isnan(got.astype(np.float64))[0]


def test_negative_zero_kept_and_fnuz_gets_plus_zero():
    z = cast_array(np.array([-0.0]), "float32")
    assert np.signbit(z[0])
    fnuz = cast_array(np.array([-0.0, -1e-30]), parse_dtype("float8_e4m3fnuz"))
    assert fnuz.view(np.uint8).tolist() == [0, 0]  # 0x80 would be NaN


def test_clamp_float_targets():
    assert cast_array(np.array([1e6, -1e6]), "float16", out_of_range="clamp").tolist() == [np.inf, -np.inf]
    e4 = cast_array(np.array([1e6, -1e6]), parse_dtype("float6_e3m2fn"), out_of_range="clamp")
    assert e4.astype(np.float64).tolist() == [28.0, -28.0]
    e8 = cast_array(np.array([0.0, -5.0, 1e300]), parse_dtype("float8_e8m0fnu"), out_of_range="clamp")
    assert e8.astype(np.float64).tolist() == [2.0**-127, 2.0**-127, 2.0**127]


def test_ml_dtypes_rounded_once():
    # ml_dtypes itself goes through float32 and rounds these twice
    assert cast_array(np.array([1 + 2**-8 + 2**-30]), ml_dtypes.bfloat16).astype(float)[0] == 1 + 2**-7
    assert cast_array(np.array([1 + 2**-4 + 2**-40]), ml_dtypes.float8_e4m3).astype(float)[0] == 1.125


def test_int4_wrap_clamp():
    assert cast_array(np.array([300, -3, 7]), ml_dtypes.int4, out_of_range="wrap").astype(int).tolist() == [-4, -3, 7]
    assert cast_array(np.array([7.6, -9.0]), ml_dtypes.int4, out_of_range="clamp").astype(int).tolist() == [7, -8]
    assert cast_array(np.array([5], ml_dtypes.uint4), "int2", out_of_range="wrap").tolist() == [1]


def test_scalar_map_first_wins_no_chaining_and_nan_semantics():
    assert cast_array(np.array([1, 2]), "int8", scalar_map=[(1, 2), (2, 3), (1, 9)]).tolist() == [2, 3]
    payload = np.array([0x7FF8000000000001], np.uint64).view(np.float64)[0]
    neg_nan = np.array([0xFFF8000000000000], np.uint64).view(np.float64)[0]
    x = np.array([np.nan, payload, neg_nan])
    # "NaN" (canonical) matches every NaN; a payload key matches only its bit pattern
    assert cast_array(x, "int8", scalar_map=[(payload, 5), (np.nan, 7)]).tolist() == [7, 5, 7]
    assert cast_array(x, "int8", scalar_map=[(np.nan, 7), (payload, 5)]).tolist() == [7, 7, 7]
    # numerical keys match by value: 0 matches -0.0
    assert cast_array(np.array([-0.0, 0.0]), "int8", scalar_map=[(0.0, 4)]).tolist() == [4, 4]
    # map values keep their bit pattern (a NaN payload survives)
    out = cast_array(np.array([0], np.uint8), "float64", scalar_map=[(0, payload)])
    assert out.view(np.uint64)[0] == 0x7FF8000000000001
    # map before rounding / range: 2.5 -> 7 although it would round to 2; 300 -> 1 without a mode
    assert cast_array(np.array([2.5, 300.0]), "uint8", scalar_map=[(2.5, 7), (300.0, 1)]).tolist() == [7, 1]


@pytest.mark.parametrize("dtype,snan", [("float16", 0x7D00), (">f2", 0x7D00),
                                        ("float32", 0x7F800001), ("float64", 0x7FF0000000000001),
                                        (">f8", 0xFFF0000000000001)])
@pytest.mark.parametrize("n", [5, 50_000])
def test_signalling_nan_is_mapped_like_any_nan(dtype, snan, n):
    """A NaN with the quiet bit clear leaves its neighbours alone (numpy's fmin/fmax return
    it, which once made a whole block take the map value)."""
    native = np.dtype(dtype).newbyteorder("=")
    x = np.resize(np.array([0.625, -np.inf, 2.0, np.nan, 300.0, -3.0], native), n)
    x.view(f"u{native.itemsize}")[3::6] = snan
    x = x.astype(dtype)
    got = cast_array(x, "int16", scalar_map=[(np.nan, 7), (-np.inf, 9)])
    assert got.tolist() == np.resize([1, 9, 2, 7, 300, -3], n).tolist()

@pytest.mark.parametrize("order", ["C", "F"])
def test_layouts_and_shapes(order):
    a = (np.asfortranarray(np.arange(60.0).reshape(3, 4, 5) - 20.5) if order == "F"
         else np.arange(60.0).reshape(3, 4, 5) - 20.5)
    got = cast_array(a, "int8")
    assert got.flags.c_contiguous and np.array_equal(got, np.rint(a).astype(np.int8))
    sw = a.astype(">f8")[:, ::2, 1:]
    assert np.array_equal(cast_array(sw, "int8"), np.rint(a[:, ::2, 1:]).astype(np.int8))
    assert cast_array(np.array(3.5), "int8")[()] == 4 and cast_array(np.array(3.5), "int8").shape == ()
    assert cast_array(np.zeros((0, 3)), "uint8").shape == (0, 3)
    big = np.linspace(-300, 300, 200_001).reshape(-1, 1)[::-1]  # several blocks, negative stride
    assert np.array_equal(cast_array(big, "int16"), np.rint(big).astype(np.int16))


# --- properties against the exact reference ---------------------------------------------------


def _values_for(src: str):
    dt = parse_dtype(src)
    info = numeric_info(dt)
    if info.is_int:
        return st.integers(info.lo, info.hi).map(
            lambda v: np.array(v).astype(dt)[()] if dt.isbuiltin else np.array(v, np.int64).astype(dt)[()])
    if dt == np.float64:
        return st.one_of(st.floats(allow_nan=True, width=64), st.sampled_from(
            [0.49999999999999994, 1.0004882812500002, 65519.99999999999, 2.0**-25, 255.5, -128.5, 2.0**63]))
    nbits = dt.itemsize * 8
    return st.integers(0, 2**nbits - 1).map(lambda b: np.array(b, f"u{dt.itemsize}").view(dt)[()])


@settings(max_examples=60)
@given(st.data())
def test_every_pair_matches_reference(data):
    src = data.draw(st.sampled_from(ALL), label="src")
    tgt = data.draw(st.sampled_from(ALL), label="tgt")
    rounding = data.draw(st.sampled_from(ROUNDING_MODES), label="rounding")
    oor = data.draw(st.sampled_from([None, "clamp"] + (["wrap"] if tgt in INTS else [])), label="oor")
    vals = data.draw(st.lists(_values_for(src), min_size=1, max_size=8), label="values")
    dt = parse_dtype(src)
    if src in ("int2", "int4", "uint2", "uint4"):
        arr = np.array([int(v) for v in vals], np.int64).astype(dt)
    else:
        arr = np.array(vals, dtype=dt)
    if src.startswith(("float6", "float4")):  # only the low bits are meaningful
        arr = arr.astype(np.float64).astype(dt)
    check_against_reference(arr, tgt, rounding, oor)


@pytest.mark.parametrize("tgt", ["float16", "float32", "bfloat16", "float8_e5m2", "float8_e4m3"])
@pytest.mark.parametrize("rounding", ROUNDING_MODES)
@settings(max_examples=30)
@given(x=st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_float64_narrowing_reference(tgt, rounding, x):
    check_against_reference(np.array([x]), tgt, rounding, "clamp")


@pytest.mark.parametrize("tgt", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("rounding", ROUNDING_MODES)
@settings(max_examples=30)
@given(x=st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(2**53 - 5, 2**53 + 5)))
def test_int64_to_float_reference(tgt, rounding, x):
    check_against_reference(np.array([x], np.int64), tgt, rounding, "clamp")


# --- numcodecs codec ------------------------------------------------------------------------


def test_codec_config_and_validation():
    c = CastValue(data_type="<u1", out_of_range="clamp", scalar_map=NAN_MAP, dtype=np.float64)
    assert c.get_config() == {"id": "cast_value", "data_type": "uint8", "out_of_range": "clamp",
                              "scalar_map": NAN_MAP, "dtype": "float64"}
    assert numcodecs.get_codec(json.loads(json.dumps(c.get_config()))) == c
    assert c.v3_configuration() == {"data_type": "uint8", "out_of_range": "clamp", "scalar_map": NAN_MAP}
    with pytest.raises(ValueError, match="rounding='up'.*nearest-even"):
        CastValue(data_type="uint8", rounding="up")
    with pytest.raises(ValueError, match="out_of_range='saturate'.*clamp"):
        CastValue(data_type="uint8", out_of_range="saturate")
    with pytest.raises(ValueError, match="wrap.*integer"):
        CastValue(data_type="float32", out_of_range="wrap")
    with pytest.raises(ValueError, match="Invalid target data type.*complex"):
        CastValue(data_type="complex64")
    with pytest.raises(ValueError, match="bool"):
        CastValue(data_type="uint8", dtype="bool")
    with pytest.raises(ValueError, match="unknown configuration key.*'rounding_mode'"):
        CastValue.from_config({"id": "cast_value", "data_type": "uint8", "rounding_mode": "x"})
    with pytest.raises(ValueError, match="unknown configuration key.*'dtype'"):
        CastValue.from_v3_configuration({"data_type": "uint8", "dtype": "float64"})
    with pytest.raises(ValueError, match=r"scalar_map encode value 300 \(entry 0\)"):
        CastValue(data_type="uint8", scalar_map={"encode": [["NaN", 300]]})
    with pytest.raises(ValueError, match=r"scalar_map decode key .* \(entry 0\)"):
        CastValue(data_type="uint8", scalar_map={"decode": [[2.5, 0]]})
    with pytest.raises(ValueError, match=r"scalar_map encode key .* \(entry 0\)"):
        CastValue(data_type="uint8", scalar_map={"encode": [["NaN", 0]]}, dtype="int16")
    # "+Infinity" is read but written as "Infinity"; hex keys are kept as given
    c2 = CastValue(data_type="uint8", scalar_map={"encode": [["+Infinity", 0], ["0x7ff8000000000001", 1]]})
    assert c2.scalar_map == {"encode": [["Infinity", 0], ["0x7ff8000000000001", 1]]}


def test_codec_fill_value_must_survive():
    c = CastValue(data_type="uint8", scalar_map={"encode": [["NaN", 0]]})
    with pytest.raises(ValueError, match="does not survive"):
        c.resolve_spec((4,), np.dtype("float64"), np.nan)
    with pytest.raises(ValueError, match="does not survive"):
        CastValue(data_type="uint8").resolve_spec((4,), np.dtype("float64"), 2.5)
    with pytest.raises(ValueError, match="does not survive"):
        CastValue(data_type="uint8", out_of_range="clamp").resolve_spec((4,), np.dtype("float64"), 300.0)
    ok = CastValue(data_type="uint8", scalar_map=NAN_MAP)
    shape, dt, fill = ok.resolve_spec((4,), np.dtype("float64"), np.nan)
    assert dt == np.uint8 and fill == 0


def test_codec_standalone_roundtrip_and_bytes():
    c = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_MAP, dtype="float64")
    x = np.array([np.nan, 1.4, 2.5, 300.0])
    enc = c.encode(x)
    assert enc.tolist() == [0, 1, 2, 255]
    dec = c.decode(enc.tobytes())
    assert np.isnan(dec[0]) and dec[1:].tolist() == [1.0, 2.0, 255.0]
    out = np.empty(4)
    c.decode(bytearray(enc.tobytes()), out=out)
    assert out[1:].tolist() == [1.0, 2.0, 255.0]
    with pytest.raises(ValueError, match="needs the decoded dtype"):
        CastValue(data_type="uint8").decode(enc)


# --- zarr -----------------------------------------------------------------------------------


def _pipeline_filters(v2: bool):
    dtype = "float64" if v2 else None  # zarr v2 decodes bytes: every filter needs the dtype
    so = ScaleOffset(offset=-10, scale=0.1, dtype=dtype)
    cv = CastValue(data_type="uint8", rounding="nearest-even", scalar_map=NAN_MAP, dtype=dtype)
    return so, cv


def test_zarr_v2_filters_nan_fill_partial_write():
    so, cv = _pipeline_filters(v2=True)
    a = zarr.create_array(store={}, shape=(10,), chunks=(4,), dtype="float64", fill_value=np.nan,
                          zarr_format=2, filters=[so, cv], compressors=None)
    a[2:5] = [0.0, 10.0, 2540.0]
    got = a[:]
    assert np.isnan(got[[0, 1, 5, 6, 7, 8, 9]]).all()
    assert got[2:5].tolist() == [0.0, 10.0, 2540.0]


def test_fortran_input_matches_c_input():
    rng = np.random.default_rng(1)
    x = rng.uniform(-300, 300, (700, 300))
    x[rng.random(x.shape) < 0.01] = np.nan
    m = [(np.nan, np.int8(-1))]
    single = cast_array(x, "int8", out_of_range="wrap", scalar_map=m)
    assert np.array_equal(cast_array(np.asfortranarray(x), "int8", out_of_range="wrap", scalar_map=m), single)
    with pytest.raises(ValueError, match="no NaN"):
        cast_array(x, "int8")


@pytest.mark.parametrize("key,match", [("abc", "hex bit pattern"), ("0x" + "f" * 17, "64 bits"),
                                       ("1e999", "beyond the range"), ([1], "number or string")])
def test_scalar_map_keys_checked_without_dtype(key, match) -> None:
    with pytest.raises((TypeError, ValueError), match=match):
        CastValue(data_type="uint8", scalar_map={"encode": [[key, 0]]})


@pytest.mark.parametrize("value,dtype,expected", [(255.5, "uint8", 255), (-128.5, "int8", -128),
                                                  (-0.5, "uint8", 0)])
def test_nearest_away_half_just_past_the_range(value, dtype, expected) -> None:
    """255.5 rounds away to 256: out of range (an error), clamped to 255 (never wrapped to 0)."""
    x = np.array([1.0, value, 2.0])
    with pytest.raises(ValueError, match="range"):
        cast_array(x, dtype, rounding="nearest-away")
    got = cast_array(x, dtype, rounding="nearest-away", out_of_range="clamp")
    assert got.tolist() == [1, expected, 2]
