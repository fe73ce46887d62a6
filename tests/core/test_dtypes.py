"""The data-type module: zarr v3 names and fill-value JSON."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from zarr.core.dtype import get_data_type_from_json

from numcodecs_ext.core.dtypes import dtype_kind, dtype_name, int_range, parse_dtype, supported_dtype_names
from numcodecs_ext.core.scalar_json import scalar_from_json, scalar_to_json

CORE = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128"]
ML = ["bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2",
      "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
      "int2", "int4", "uint2", "uint4"]


@pytest.mark.parametrize("name", CORE + ML)
def test_names_round_trip(name) -> None:
    if name in ML:
        pytest.importorskip("ml_dtypes")
    dt = parse_dtype(name)
    assert dtype_name(dt) == name
    assert name in supported_dtype_names()
    if dt.itemsize > 1 and dt.kind in "iufc":
        assert parse_dtype(dt.newbyteorder(">")) == dt


def test_raw_types() -> None:
    assert parse_dtype("r24") == np.dtype("V3")
    assert dtype_name("V3") == "r24"
    assert scalar_from_json([1, 2, 3], "r24").tobytes() == b"\x01\x02\x03"
    assert scalar_to_json(scalar_from_json([1, 2, 3], "r24"), "r24") == [1, 2, 3]
    with pytest.raises(ValueError, match="multiple of 8"):
        parse_dtype("r12")


@pytest.mark.parametrize("bad", ["float128", "int3", "object", "<U4", [("a", "i4")]])
def test_unsupported_dtype_message(bad) -> None:
    with pytest.raises(ValueError, match="not a supported zarr v3 data type; valid names are bool"):
        parse_dtype(bad)


@pytest.mark.parametrize("name,json_value,bits", [
    ("float32", "NaN", 0x7FC00000),
    ("float32", "0x7fc00001", 0x7FC00001),
    ("float32", "0xffc00000", 0xFFC00000),
    ("float64", "NaN", 0x7FF8000000000000),
    ("float16", "NaN", 0x7E00),
    ("float16", "Infinity", 0x7C00),
    ("float16", "+Infinity", 0x7C00),
    ("float16", "-Infinity", 0xFC00),
    ("float64", -0.0, 0x8000000000000000),
])
def test_float_json_bits(name, json_value, bits) -> None:
    value = scalar_from_json(json_value, name)
    dt = parse_dtype(name)
    assert int(np.asarray(value).view(f"u{dt.itemsize}")) == bits


@pytest.mark.parametrize("name,canonical", [("bfloat16", 0x7FC0), ("float8_e4m3", 0x7C), ("float8_e5m2", 0x7E),
                                            ("float8_e4m3fnuz", 0x80), ("float8_e8m0fnu", 0xFF)])
def test_ml_dtypes_nan_is_registered_pattern(name, canonical) -> None:
    pytest.importorskip("ml_dtypes")
    dt = parse_dtype(name)
    value = scalar_from_json("NaN", name)
    assert int(np.asarray(value).view(f"u{dt.itemsize}")) == canonical
    assert scalar_to_json(value, name) == "NaN"


@pytest.mark.parametrize("name,bad", [("float4_e2m1fn", "NaN"), ("float8_e4m3fnuz", "Infinity"),
                                      ("int8", 128), ("uint8", -1), ("int4", 8), ("int32", 1.5),
                                      ("bool", 0), ("float32", "nan"), ("float32", "0x1ffffffff"),
                                      ("complex64", 1.0), ("int64", "1")])
def test_invalid_values(name, bad) -> None:
    if name in ML:
        pytest.importorskip("ml_dtypes")
    with pytest.raises(ValueError, match=repr(bad) if isinstance(bad, str) else str(bad)):
        scalar_from_json(bad, name, what="fill_value")


def test_integers_exact() -> None:
    assert int(scalar_from_json(2**63 - 1, "int64")) == 2**63 - 1
    assert int(scalar_from_json(-(2**63), "int64")) == -(2**63)
    assert int(scalar_from_json(2**64 - 1, "uint64")) == 2**64 - 1
    assert scalar_to_json(np.uint64(2**64 - 1), "uint64") == 2**64 - 1
    assert int_range("int4") == (-8, 7) if "int4" in supported_dtype_names() else True


def test_large_integer_to_float_rounds_once() -> None:
    # 2**60 + 2**36 + 1 lies just above the float32 midpoint 2**60 + 2**36; via float64 it would
    # first round down to the midpoint and then to even (2**60).
    value = scalar_from_json(2**60 + 2**36 + 1, "float32")
    assert float(value) == 2**60 + 2**37


def test_never_writes_plus_infinity() -> None:
    assert scalar_to_json(scalar_from_json("+Infinity", "float32"), "float32") == "Infinity"


@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
@given(bits=st.integers(min_value=0))
@example(bits=0x7F800001)  # a float32 signalling NaN: must not warn when written
def test_float_json_round_trip_is_bit_exact(name, bits) -> None:
    dt = parse_dtype(name)
    bits %= 1 << (8 * dt.itemsize)
    value = np.array(bits, dtype=f"u{dt.itemsize}").view(dt)[()]
    again = scalar_from_json(scalar_to_json(value, name), name)
    assert np.asarray(again).view(f"u{dt.itemsize}") == bits


@pytest.mark.parametrize("name", CORE)
@pytest.mark.parametrize("json_value", [0, 1, -1, 2.5, "NaN", "Infinity", "-Infinity", True, [1.5, "NaN"],
                                        127, 255, 2**31 - 1, 65504, -0.0, "0x7fc00001"])
def test_agrees_with_zarr_core_types(name, json_value) -> None:
    """Where zarr's own dtype machinery accepts a value, ours decodes it to the same bits."""
    zdtype = get_data_type_from_json(name, zarr_format=3)
    try:
        theirs = zdtype.from_json_scalar(json_value, zarr_format=3)
    except (TypeError, ValueError, OverflowError, RuntimeWarning):
        return
    if (isinstance(json_value, str) and json_value.startswith("0x")
            and len(json_value) != 2 + 2 * zdtype.to_native_dtype().itemsize
            // (2 if name.startswith("complex") else 1)):
        # A hex string shorter than the type is, to us, the integer it spells (spec: "the byte
        # representation ... as an unsigned integer"); zarr-python reads it differently.
        return
    if isinstance(theirs, (bool, np.bool_)) != (name == "bool"):
        return
    try:
        ours = scalar_from_json(json_value, name)
    except ValueError:
        # We follow the spec strictly where zarr is lenient: bool fill values must be JSON booleans.
        # Numbers for bool, JSON booleans for numbers, hex wider than the type: all refused.
        assert (name == "bool") != isinstance(json_value, bool) or json_value == "0x7fc00001"
        return
    assert np.asarray(ours).tobytes() == np.asarray(theirs, dtype=parse_dtype(name)).tobytes()
    assert dtype_kind(name) in ("bool", "int", "uint", "float", "complex")
    back = scalar_to_json(ours, name)
    assert np.asarray(scalar_from_json(back, name)).tobytes() == np.asarray(ours).tobytes()
    if isinstance(back, float) and not math.isnan(back):
        assert zdtype.from_json_scalar(back, zarr_format=3) == theirs


@pytest.mark.parametrize("name,value,expected", [
    ("bfloat16", 1 + 2**-8 + 2**-30, 1.0078125),   # ml_dtypes alone rounds via float32 to 1.0
    ("float8_e4m3", 1 + 2**-4 + 2**-30, 1.125),
    ("float32", 3.40282356e38, 3.4028234663852886e38),  # just above the largest: rounds down to it
])
def test_numbers_round_once(name, value, expected) -> None:
    if name in ML:
        pytest.importorskip("ml_dtypes")
    assert float(np.asarray(scalar_from_json(value, name)).astype(np.float64)) == expected


@pytest.mark.parametrize("name,value", [("float8_e4m3fnuz", 1e9), ("float4_e2m1fn", 1e9),
                                        ("float8_e8m0fnu", 0), ("float8_e8m0fnu", -7),
                                        ("float32", 10**400), ("float64", -(10**400)), ("float32", 1e39),
                                        ("float16", 65520), ("bfloat16", 1e39), ("float8_e5m2", 1e300)])
def test_unrepresentable_numbers_refused(name, value) -> None:
    """No silent infinity, NaN or clamp: a finite number must fit the type's finite range."""
    if name in ML:
        pytest.importorskip("ml_dtypes")
    with pytest.raises(ValueError, match="fill_value: .*(not representable|beyond the finite range)"):
        scalar_from_json(value, name, what="fill_value")
