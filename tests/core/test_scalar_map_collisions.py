"""scalar_map collisions and signalling-NaN keys (issue 23, item 8).

A value that no encode entry claims must not land on a code that the decode map reads back as
something else: it could not round-trip (the spec's own uint16 example read 1000 back as 0, the
usual NaN code read a clamped or rounded value back as NaN). Encoding refuses it, naming the
value and the map entry, in every path: the numpy kernels, the compiled loop, the code table,
the fused scale_offset + cast_value pass, zarr v2 filters and zarr v3 arrays.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import zarr

from numcodecs_ext import CastValue, ScaleOffset
from numcodecs_ext.core import fused
from numcodecs_ext.core.cast_value import reserved_codes
from numcodecs_ext.zarr3 import CastValue as V3CastValue
from numcodecs_ext.zarr3 import ScaleOffset as V3ScaleOffset

NAN_0 = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}
SPEC = {"encode": [[0, 1000]], "decode": [[1000, 0]]}


def test_the_spec_example_refuses_a_value_on_the_fill_code(kernels) -> None:
    codec = CastValue(data_type="uint16", scalar_map=SPEC, dtype="uint16")
    ok = np.array([0, 5, 999, 1001, 65535], np.uint16)
    assert codec.encode(ok).tolist() == [1000, 5, 999, 1001, 65535]
    assert codec.decode(codec.encode(ok)).tolist() == ok.tolist()
    with pytest.raises(ValueError, match=r"cannot encode 1000: .* entry \[1000, 0\] reads back as 0"):
        codec.encode(np.array([0, 1000, 5], np.uint16))


@pytest.mark.parametrize("values,value", [
    ([np.nan, -3.0, 1.0], "-3"),       # clamped onto the NaN code
    ([np.nan, 0.4, 1.0], "0.4"),       # rounded onto it
    ([np.nan, 0.0, 1.0], "0"),         # exactly it
])
def test_a_value_landing_on_the_nan_code_is_refused(kernels, values, value) -> None:
    codec = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_0, dtype="float64")
    with pytest.raises(ValueError, match=rf"cannot encode {value}: .*becomes 0, .*\[0, NaN\]"):
        codec.encode(np.array(values))
    assert codec.encode(np.array([np.nan, 0.6, 300.0])).tolist() == [0, 1, 255]


def test_large_arrays_find_the_one_collision(kernels) -> None:
    codec = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_0, dtype="float64")
    x = np.full(300_001, 7.0)
    x[::5] = np.nan
    assert codec.encode(x)[:6].tolist() == [0, 7, 7, 7, 7, 0]
    x[250_003] = -1e9
    with pytest.raises(ValueError, match="cannot encode -1000000000"):
        codec.encode(x)
    for view in (x[::-1], np.asfortranarray(x.reshape(-1, 1)), x.reshape(-1, 1)[1::2]):
        with pytest.raises(ValueError, match="would not round-trip"):
            codec.encode(view)
    swapped = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_0, dtype=">f8")
    with pytest.raises(ValueError, match="would not round-trip"):
        swapped.encode(x.astype(">f8"))


def test_fused_pass_refuses_as_the_two_steps_do(kernels) -> None:
    so = ScaleOffset(offset=-10, scale=0.1, dtype="float64")
    cv = CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_0, dtype="float64")
    args = cv.cast_arguments(np.dtype("float64"), "encode")
    good = np.array([np.nan, 0.0, 10.0, 2540.0, 1e9])
    assert fused.encode(good, np.float64(-10), np.float64(0.1), **args).tolist() == [0, 1, 2, 255, 255]
    for bad in ([np.nan, -10.0], [np.nan, -100.0], [-14.0]):
        x = np.array(bad)
        with pytest.raises(ValueError, match="would not round-trip") as two:
            cv.encode(so.encode(x))
        with pytest.raises(ValueError, match="would not round-trip") as one:
            fused.encode(x, np.float64(-10), np.float64(0.1), **args)
        assert str(one.value) == str(two.value)


@pytest.mark.parametrize("fused_pair", [True, False])
def test_zarr_v3_array_refuses_and_keeps_what_it_had(kernels, fused_pair) -> None:
    filters = [V3ScaleOffset(offset=-10, scale=0.1),
               V3CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_0)]
    if not fused_pair:  # the two codecs apart: another codec between them
        filters.insert(1, V3CastValue(data_type="float64"))
    a = zarr.create_array({}, shape=(6,), chunks=(3,), dtype="float64", fill_value=np.nan,
                          filters=filters, compressors=None)
    a[:] = [np.nan, 0.0, 10.0, 2540.0, 1e9, np.nan]
    with pytest.raises(ValueError, match="would not round-trip"):
        a[3:] = [-10.0, 5.0, 5.0]
    np.testing.assert_array_equal(a[:], [np.nan, 0.0, 10.0, 2540.0, 2540.0, np.nan])


def test_zarr_v2_filters_refuse() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note on numcodecs filters in v2
        a = zarr.create_array({}, shape=(4,), chunks=(4,), dtype="float64", fill_value=np.nan,
                              zarr_format=2, compressors=None,
                              filters=[CastValue(data_type="uint8", out_of_range="clamp",
                                                 scalar_map=NAN_0, dtype="float64")])
        a[:] = [np.nan, 1.0, 2.0, 3.0]
        with pytest.raises(ValueError, match="would not round-trip"):
            a[:] = [np.nan, -1.0, 2.0, 3.0]


def test_code_table_path_refuses(kernels) -> None:
    """uint16 -> uint8 goes through the table of every code's cast; a colliding code has no table
    entry, so the general pass raises when the code is present, and only then."""
    codec = CastValue(data_type="uint8", out_of_range="clamp",
                      scalar_map={"encode": [[65535, 255]], "decode": [[255, 65535]]}, dtype="uint16")
    for _ in range(70):  # the table is built once a configuration has run enough
        assert codec.encode(np.array([0, 1, 254, 65535], np.uint16)).tolist() == [0, 1, 254, 255]
    with pytest.raises(ValueError, match=r"cannot encode 300: .*\[255, 65535\]"):
        codec.encode(np.array([0, 300], np.uint16))
    with pytest.raises(ValueError, match=r"cannot encode 255: .*\[255, 65535\]"):
        codec.encode(np.array([255], np.uint16))


def test_entries_that_read_a_code_as_its_own_value_reserve_nothing(kernels) -> None:
    assert reserved_codes([(7, 7), (8, 9)], "uint8", "uint16", "nearest-even", None) == [(8, 9)]
    codec = CastValue(data_type="uint8", scalar_map={"decode": [[7, 7]]}, dtype="uint16")
    assert codec.encode(np.array([7, 8], np.uint16)).tolist() == [7, 8]


def test_an_encode_entry_may_produce_a_reserved_code(kernels) -> None:
    """Mapping a value onto the code on purpose is the map's business: only unmapped values are
    refused."""
    codec = CastValue(data_type="uint8", scalar_map={"encode": [["NaN", 0], [-1.0, 0]],
                                                     "decode": [[0, "NaN"]]}, dtype="float32")
    assert codec.encode(np.array([np.nan, -1.0, 3.0], np.float32)).tolist() == [0, 0, 3]


def test_large_maps_reserve_through_their_table(kernels) -> None:
    decode = [[k, "NaN" if k == 0 else k + 1000] for k in range(20)]  # > 8 entries: sorted table
    codec = CastValue(data_type="uint16", scalar_map={"encode": [["NaN", 0]], "decode": decode},
                      dtype="float32")
    assert codec.encode(np.array([np.nan, 25.0], np.float32)).tolist() == [0, 25]
    with pytest.raises(ValueError, match=r"cannot encode 13: .*\[13, 1013\]"):
        codec.encode(np.array([np.nan, 13.0], np.float32))


def test_nan_decode_key_on_a_float_target(kernels) -> None:
    """A float target whose decode map reads NaN as 0: an unmapped NaN would come back as 0."""
    codec = CastValue(data_type="float32", scalar_map={"decode": [["NaN", 0]]}, dtype="float64")
    with pytest.raises(ValueError, match=r"cannot encode NaN: .*\[NaN, 0\]"):
        codec.encode(np.array([1.0, np.nan]))
    mapped = CastValue(data_type="float32", scalar_map={"encode": [["NaN", "NaN"]],
                                                        "decode": [["NaN", 0]]}, dtype="float64")
    assert mapped.encode(np.array([1.0, np.nan])).tobytes() == np.array([1.0, np.nan], "f4").tobytes()


SNAN32, SNAN64, SNAN16 = "0x7f800001", "0x7ff0000000000001", "0x7c01"


@pytest.mark.parametrize("dtype,key", [("float32", SNAN32), ("float64", SNAN64), ("float16", SNAN16)])
def test_signalling_nan_keys_raise_no_floating_point_warning(dtype, key) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        codec = CastValue(data_type="uint8", scalar_map={"encode": [[key, 7]], "decode": [[7, key]]},
                          dtype=dtype)
        bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
        x = np.array([1, 0, 2], dtype)
        x.view(bits)[1] = int(key, 16)
        enc = codec.encode(x)
        assert enc.tolist() == [1, 7, 2]
        assert codec.decode(enc).view(bits).tolist() == x.view(bits).tolist()
        a = zarr.create_array({}, shape=(3,), dtype=dtype, fill_value=x[1], compressors=None,
                              filters=[V3CastValue(data_type="float64")])
        assert a[:].view(bits).tolist() == [int(key, 16)] * 3
