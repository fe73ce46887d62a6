"""scale_offset: exact integer semantics, in-dtype float arithmetic, codec layers, zarr v2/v3."""

from __future__ import annotations

import json

import ml_dtypes
import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.core import scale_offset as core
from numcodecs_ext.core.cast_value import numeric_info
from numcodecs_ext.zarr3.cast_value import CastValue as ZCastValue
from numcodecs_ext.zarr3.cast_value import NumcodecsCastValue
from numcodecs_ext.zarr3.scale_offset import NumcodecsScaleOffset
from numcodecs_ext.zarr3.scale_offset import ScaleOffset as ZScaleOffset

#: every test here runs with the compiled kernels and with numpy's alone
pytestmark = pytest.mark.usefixtures("kernels")


INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


@pytest.fixture
def ours():
    """zarr with our classes pinned for the spec and adapter names (explicitly, whatever the default)."""
    names = {
        "scale_offset": ZScaleOffset, "cast_value": ZCastValue,
        "numcodecs.scale_offset": NumcodecsScaleOffset, "numcodecs.cast_value": NumcodecsCastValue,
    }
    pins = {f"codecs.{n}": f"{c.__module__}.{c.__qualname__}" for n, c in names.items()}
    with zarr.config.set(pins):
        yield


# --- integers: exact ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", INT_DTYPES)
@settings(max_examples=40)
@given(data=st.data())
def test_int_encode_decode_exact(name, data):
    info = numeric_info(np.dtype(name))
    off = data.draw(st.integers(info.lo, info.hi))
    sc = data.draw(st.integers(info.lo, info.hi).filter(lambda v: v != 0))
    xs = data.draw(st.lists(st.integers(info.lo, info.hi), min_size=1, max_size=6))
    arr = np.array(xs, dtype=name)
    ok = all(info.lo <= x - off <= info.hi and info.lo <= (x - off) * sc <= info.hi for x in xs)
    if not ok:
        with pytest.raises(ValueError, match="not representable|outside the range|non-zero remainder"):
            core.encode(arr, off, sc)
        return
    enc = core.encode(arr, off, sc)
    assert enc.dtype == arr.dtype and [int(v) for v in enc] == [(x - off) * sc for x in xs]
    back = core.decode(enc, off, sc)
    assert [int(v) for v in back] == xs


@pytest.mark.parametrize("name", INT_DTYPES)
def test_int_overflow_every_dtype(name):
    info = numeric_info(np.dtype(name))
    if info.lo < 0:
        with pytest.raises(ValueError, match="not representable|outside the range|non-zero remainder"):
            core.encode(np.array([info.hi], name), -1)
    else:
        with pytest.raises(ValueError, match="outside the range"):
            core.encode(np.array([info.hi], name), -1)  # a negative offset is no uint value
    with pytest.raises(ValueError, match="not representable|outside the range|non-zero remainder"):
        core.encode(np.array([info.lo], name), 1)
    with pytest.raises(ValueError, match="not representable|outside the range|non-zero remainder"):
        core.encode(np.array([info.hi], name), 0, 2)
    with pytest.raises(ValueError, match="not an integer"):
        core.decode(np.array([5], name), 0, 2)


def test_int64_uint64_extremes():
    assert core.encode(np.array([2**63 - 1], np.int64), 1)[0] == 2**63 - 2
    with pytest.raises(ValueError, match="for x=9223372036854775807"):
        core.encode(np.array([2**63 - 1], np.int64), -1)  # zarr 3.4.2 wraps to -2**63
    assert core.encode(np.array([2**64 - 1], np.uint64), 5)[0] == 2**64 - 6
    with pytest.raises(ValueError):
        core.decode(np.array([-(2**63)], np.int64), 0, -1)  # 2**63 is not an int64
    assert core.decode(np.array([-6, 6], np.int64), 2**62, -3).tolist() == [2**62 + 2, 2**62 - 2]


def test_uint16_range_reduction_example_and_default_fill():
    x = np.arange(1000, 1256, dtype=np.uint16)
    enc = core.encode(x, 1000)
    assert enc.tolist() == list(range(256))
    with pytest.raises(ValueError, match="fill value"):
        ScaleOffset(offset=1000).resolve_spec((4,), np.dtype("uint16"), 0)


def test_small_ml_ints():
    assert core.encode(np.array([3, -2], ml_dtypes.int4), 1, 2).astype(int).tolist() == [4, -6]
    with pytest.raises(ValueError):
        core.encode(np.array([7], ml_dtypes.int4), -1)


# --- floats ------------------------------------------------------------------------------------


def test_float_stays_in_dtype():
    x = np.array([1.5, 3.25], np.float32)
    enc = core.encode(x, 0.1, 3)
    assert enc.dtype == np.float32
    o, s = np.float32(0.1), np.float32(3)
    assert enc.tobytes() == ((x - o) * s).tobytes()
    assert core.decode(enc, 0.1, 3).tobytes() == ((enc / s) + o).tobytes()
    h = np.array([1.0, 2.0], np.float16)
    assert core.encode(h, 0.5, 3).dtype == np.float16


def test_float_overflow_is_error_nan_passes():
    with pytest.raises(ValueError, match="overflows"):
        core.encode(np.array([1e308]), 0, 10)
    out = core.encode(np.array([np.nan, np.inf, 1.0]), 1, 2)
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == 0


def test_bfloat16_rounds_each_operation_once():
    x = np.array([1.0, 3.0], ml_dtypes.bfloat16)
    got = core.encode(x, 0.5, 3).astype(np.float64)
    assert got.tolist() == [1.5, 7.5]


@pytest.mark.parametrize("order", ["C", "F"])
def test_layouts(order):
    a = np.arange(24.0).reshape(2, 3, 4)
    a = np.asfortranarray(a) if order == "F" else a
    assert np.array_equal(core.encode(a, 1, 2), (a - 1) * 2)
    sw = a.astype(">f8")[:, ::2]
    assert np.array_equal(core.encode(sw, 1, 2), (a[:, ::2] - 1) * 2)
    assert core.encode(np.array(2.0), 1, 2)[()] == 2.0
    assert core.encode(np.zeros((0, 2), np.int64), 1, 2).shape == (0, 2)


# --- codec -------------------------------------------------------------------------------------


def test_codec_config():
    c = ScaleOffset(offset=-10, scale=0.1, dtype="<f8")
    assert c.get_config() == {"id": "scale_offset", "offset": -10, "scale": 0.1, "dtype": "float64"}
    assert numcodecs.get_codec(json.loads(json.dumps(c.get_config()))) == c
    assert ScaleOffset().v3_configuration() == {}
    assert ScaleOffset(offset=np.float32(5)).v3_configuration() == {"offset": 5.0}
    with pytest.raises(ValueError, match="unknown configuration key.*'astype'"):
        ScaleOffset.from_config({"id": "scale_offset", "astype": "u1"})
    with pytest.raises(ValueError, match="scale"):
        ScaleOffset(scale=0)
    with pytest.raises(ValueError, match="complex"):
        ScaleOffset(dtype="complex128")
    with pytest.raises(ValueError, match="offset"):
        ScaleOffset(offset=2.5, dtype="int16")
    with pytest.raises(ValueError, match="codec .scale_offset.: offset"):
        ScaleOffset(offset=[1])
    # NaN and hex parameters are fill-value JSON
    assert ScaleOffset(offset="0x3f800000", dtype="float32").encode(np.array([3.0], np.float32))[0] == 2.0


def test_codec_bytes_decode():
    c = ScaleOffset(offset=-10, scale=0.1, dtype="float64")
    enc = c.encode(np.array([0.0, 100.0]))
    assert c.decode(enc.tobytes()).tolist() == [0.0, 100.0]
    with pytest.raises(ValueError, match="needs the dtype"):
        ScaleOffset(offset=1).decode(enc.tobytes())


# --- zarr v3 ------------------------------------------------------------------------------------

SPEC_EXAMPLE = {
    "data_type": "float64",
    "fill_value": "NaN",
    "codecs": [
        {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
        {"name": "cast_value", "configuration": {
            "data_type": "uint8", "rounding": "nearest-even",
            "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}},
        "bytes",
    ],
}


def _v3_array(codecs, fill, store=None):
    store = {} if store is None else store
    a = zarr.create_array(store=store, shape=(10,), chunks=(4,), dtype="float64", fill_value=fill,
                          filters=codecs, compressors=None)
    return a, store


def test_zarr_v3_spec_names_example(ours):
    a, store = _v3_array([ZScaleOffset(offset=-10, scale=0.1),
                          ZCastValue(data_type="uint8", rounding="nearest-even", scalar_map=NAN_MAP)],
                         np.nan)
    a[2:5] = [0.0, 10.0, 2540.0]
    got = a[:]
    assert np.isnan(got[[0, 1, 5, 9]]).all() and got[2:5].tolist() == [0.0, 10.0, 2540.0]
    meta = json.loads(store["zarr.json"].to_bytes())
    assert meta["codecs"][:2] == [
        {"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
        {"name": "cast_value", "configuration": {"data_type": "uint8", "scalar_map": NAN_MAP}},
    ]
    assert store["c/0"].to_bytes() == bytes([0, 0, 1, 2])  # NaN, NaN, (0+10)*0.1, (10+10)*0.1


def test_zarr_v3_adapter_names_carry_fill(ours):
    a, store = _v3_array([NumcodecsScaleOffset(offset=-10, scale=0.1),
                          NumcodecsCastValue(data_type="uint8", scalar_map=NAN_MAP)], np.nan)
    a[2:5] = [0.0, 10.0, 2540.0]
    got = a[:]
    assert np.isnan(got[[0, 1, 5, 9]]).all() and got[2:5].tolist() == [0.0, 10.0, 2540.0]
    meta = json.loads(store["zarr.json"].to_bytes())
    assert [c["name"] for c in meta["codecs"][:2]] == ["numcodecs.scale_offset", "numcodecs.cast_value"]


def test_zarr_v3_default_scale_offset_has_no_configuration(ours):
    _, store = _v3_array([ZScaleOffset()], 0.0)
    meta = json.loads(store["zarr.json"].to_bytes())
    assert meta["codecs"][0] == {"name": "scale_offset"}


def test_zarr_v3_fill_value_check(ours):
    with pytest.raises(ValueError, match="does not survive"):
        a, _ = _v3_array([ZCastValue(data_type="uint8", scalar_map={"encode": [["NaN", 0]]})], np.nan)
        a[0] = 1.0


def test_zarr_v3_scale_offset_after_cast(ours):
    """Each codec validates against its own input dtype (zarr 3.4.2 rejects this chain)."""
    a, _ = _v3_array([ZCastValue(data_type="int16", out_of_range="clamp"),
                      ZScaleOffset(offset=100, scale=2)], 100.0)
    a[:] = np.arange(10.0) * 10
    assert a[:].tolist() == (np.arange(10.0) * 10).tolist()


# --- zarr v2 filters ---------------------------------------------------------------------------


def test_zarr_v2_filters_nan_fill_partial_write():
    a = zarr.create_array(
        store={}, shape=(10,), chunks=(4,), dtype="float64", fill_value=np.nan, zarr_format=2,
        filters=[ScaleOffset(offset=-10, scale=0.1, dtype="float64"),
                 CastValue(data_type="uint8", scalar_map=NAN_MAP, dtype="float64")],
        compressors=None,
    )
    a[2:5] = [0.0, 10.0, 2540.0]
    got = a[:]
    assert np.isnan(got[[0, 1, 5, 6, 7, 8, 9]]).all()
    assert got[2:5].tolist() == [0.0, 10.0, 2540.0]


def test_in_place_decode_only_for_private_temporaries() -> None:
    """decode_chunk reuses a whole numpy-owned temporary, never a view the caller still sees."""
    c = ScaleOffset(offset=1.0, scale=2.0)
    owned = np.array([2.0, 4.0, 6.0])
    assert c.decode_chunk(owned, (3,), np.dtype("float64")) is not None
    assert owned.tolist() == [2.0, 3.0, 4.0]  # a temporary: decoded in place

    base = np.array([2.0, 4.0, 6.0, 8.0])
    part = base[:3]  # a view of part of an allocation someone else holds
    out = c.decode_chunk(part, (3,), np.dtype("float64"))
    assert out.tolist() == [2.0, 3.0, 4.0] and base.tolist() == [2.0, 4.0, 6.0, 8.0]

    store_bytes = np.frombuffer(bytearray(np.array([2.0, 4.0]).tobytes()), dtype="float64")
    c.decode_chunk(store_bytes, (2,), np.dtype("float64"))
    assert store_bytes.tolist() == [2.0, 4.0]  # memory not allocated by numpy is never written

    whole_view = np.array([2.0, 4.0]).view("float64")  # a view of a whole numpy allocation,
    c.decode_chunk(whole_view, (2,), np.dtype("float64"))  # as a MemoryStore's chunk bytes are
    assert whole_view.tolist() == [2.0, 4.0]


def test_memory_store_chunks_survive_repeated_reads(ours) -> None:
    """A MemoryStore keeps chunk bytes in numpy arrays; decoding must never write into them."""
    from zarr.storage import MemoryStore

    data = np.linspace(-3, 200, 10, dtype="float32")
    z = zarr.create_array(MemoryStore(), shape=(10,), chunks=(4,), dtype="float32",
                          filters=[ZScaleOffset(offset=5, scale=0.1)], compressors=None)
    z[:] = data
    first = z[:]
    assert np.array_equal(first, z[:]) and np.array_equal(z[:], first)
    assert np.allclose(first, data, rtol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    ({"offset": "NaN"}, "finite"), ({"offset": "Infinity"}, "finite"), ({"scale": 1e400}, "finite"),
    ({"scale": "0x0"}, "non-zero"), ({"scale": 0}, "non-zero"), ({"offset": "abc"}, "hex bit pattern"),
    ({"offset": "0x1" + "0" * 16}, "64 bits"),
])
def test_parameters_invalid_for_every_dtype_refused_without_dtype(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        ScaleOffset(**kwargs)


def test_checked_parameters_remembered_by_identity_stay_per_dtype() -> None:
    """The per-object shortcut (a codec passes the same scalars for every chunk) never hands
    one dtype's parameters to another, and a refused parameter is refused every time."""
    from numcodecs_ext.core.scale_offset import checked_parameters

    off, sc = np.float64(300.0), np.float64(0.5)
    for _ in range(2):
        f64 = checked_parameters(np.dtype("float64"), off, sc)
        i16 = checked_parameters(np.dtype("int16"), off, np.float64(1.0))
        assert f64[0].dtype == np.float64 and i16 == (300, 1)  # integers: exact Python ints
        assert checked_parameters(np.dtype("float64"), off, sc) is f64
        with pytest.raises(ValueError, match="non-zero"):
            checked_parameters(np.dtype("float64"), off, np.float64(0.0))
        with pytest.raises(ValueError):
            checked_parameters(np.dtype("int8"), off, sc)  # 300 is no int8
