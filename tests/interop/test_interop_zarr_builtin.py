"""Interoperability with zarr-python's own ``scale_offset`` / ``cast_value`` (zarr >= 3.2).

Where zarr follows the spec, chunks must be byte-identical and each implementation must read what
the other wrote. Each place where zarr 3.4.2 deviates from the spec is pinned by an explicit test
that asserts the difference (so a zarr fix shows up here as a failure to update, not silently).
Skipped where zarr has no built-ins (Python 3.11, zarr 3.1.x) or without cast-value-rs.
"""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest
import zarr

pytest.importorskip("zarr.codecs.scale_offset", reason="zarr has no built-in scale_offset")
pytest.importorskip("zarr.codecs.cast_value", reason="zarr has no built-in cast_value")
pytest.importorskip("cast_value_rs", reason="zarr's cast_value needs cast-value-rs")

import numcodecs_ext  # noqa: E402,F401  (registers our classes; entry points would too)

IMPLS = {
    "ours": {"codecs.cast_value": "numcodecs_ext.zarr3.cast_value.CastValue",
             "codecs.scale_offset": "numcodecs_ext.zarr3.scale_offset.ScaleOffset"},
    "zarr": {"codecs.cast_value": "zarr.codecs.cast_value.CastValue",
             "codecs.scale_offset": "zarr.codecs.scale_offset.ScaleOffset"},
}
NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}


@contextlib.contextmanager
def impl(name: str):
    with zarr.config.set(IMPLS[name]):
        yield


def write(name: str, codecs: list, dtype: str, fill, data: np.ndarray, chunks=(4,)) -> dict:
    store: dict = {}
    with impl(name):
        a = zarr.create_array(store=store, shape=data.shape, chunks=chunks, dtype=dtype,
                              fill_value=fill, filters=codecs, compressors=None,
                              serializer={"name": "bytes", "configuration": {"endian": "little"}})
        a[...] = data
    return store


def read(name: str, store: dict) -> np.ndarray:
    with impl(name):
        return zarr.open_array(store=store, mode="r")[...]


def chunks_of(store: dict) -> dict:
    return {k: v.to_bytes() for k, v in store.items() if k != "zarr.json"}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()


def check_both_ways(codecs: list, dtype: str, fill, data: np.ndarray) -> dict:
    ours = write("ours", codecs, dtype, fill, data)
    theirs = write("zarr", codecs, dtype, fill, data)
    assert chunks_of(ours) == chunks_of(theirs)
    m_ours = json.loads(ours["zarr.json"].to_bytes())["codecs"]
    m_theirs = json.loads(theirs["zarr.json"].to_bytes())["codecs"]
    assert m_ours == m_theirs
    for store in (ours, theirs):
        assert same(read("ours", store), read("zarr", store))
    return ours


# --- the spec examples ------------------------------------------------------------------------


def test_spec_scale_offset_float32_example():
    data = np.linspace(-3, 200, 10, dtype=np.float32)
    check_both_ways([{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}}],
                    "float32", 5.0, data)


def test_spec_uint16_range_reduction_example():
    data = np.arange(1000, 1010, dtype=np.uint16)
    codecs = [{"name": "scale_offset", "configuration": {"offset": 1000}},
              {"name": "cast_value", "configuration": {"data_type": "uint8"}}]
    store = check_both_ways(codecs, "uint16", 1000, data)
    assert chunks_of(store)["c/0"] == bytes([0, 1, 2, 3])


def test_spec_float64_to_uint8_nan_example():
    data = np.array([np.nan, 0.0, 10.0, 2540.0, 1234.56, np.nan, 5.0, 0.04, 7.0, np.nan])
    codecs = [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
              {"name": "cast_value", "configuration": {
                  "data_type": "uint8", "rounding": "nearest-even", "scalar_map": NAN_MAP}}]
    store = check_both_ways(codecs, "float64", "NaN", data)
    assert chunks_of(store)["c/0"] == bytes([0, 1, 2, 255])


def test_spec_cast_value_numpy_compat_example():
    data = np.array([1.9, -1.9, 300.7, np.nan, 12.0, 255.99, 256.0, -0.0])
    codecs = [{"name": "cast_value", "configuration": {
        "data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
        "scalar_map": {"encode": [["NaN", 0], ["Infinity", 0], ["-Infinity", 0]]}}}]
    ours = write("ours", codecs, "float64", 0.0, data)
    theirs = write("zarr", codecs, "float64", 0.0, data)
    assert chunks_of(ours) == chunks_of(theirs)
    assert chunks_of(ours)["c/0"] == bytes([1, 255, 44, 0])


@pytest.mark.parametrize("rounding", ["nearest-even", "towards-zero", "towards-positive",
                                      "towards-negative", "nearest-away"])
@pytest.mark.parametrize("oor", [None, "clamp", "wrap"])
def test_float_to_int_modes_agree(rounding, oor):
    data = np.array([-3.5, -2.5, -0.5, 0.5, 1.5, 2.5, 126.5, 126.49, -127.4, 3.7])
    if oor is not None:
        data = np.concatenate([data, [200.0, -300.25]])
    cfg = {"data_type": "int8"}
    if rounding != "nearest-even":
        cfg["rounding"] = rounding
    if oor:
        cfg["out_of_range"] = oor
    check_both_ways([{"name": "cast_value", "configuration": cfg}], "float64", 0.0, data)


@pytest.mark.parametrize("src,tgt", [("int32", "int8"), ("uint16", "uint8"), ("int8", "float32"),
                                     ("float32", "float64"), ("float64", "float32"),
                                     ("uint8", "float64")])
def test_simple_pairs_agree(src, tgt):
    data = np.arange(10).astype(src)
    check_both_ways([{"name": "cast_value", "configuration": {"data_type": tgt}}], src, 0, data)


# --- pinned deviations of zarr 3.4.2 ------------------------------------------------------------


def _zarr_cast(data, tgt, **cfg):
    from zarr.codecs.cast_value import CastValue as ZarrCastValue

    codec = ZarrCastValue(data_type=tgt, **cfg)
    return codec._do_cast(data, target_dtype=np.dtype(tgt), scalar_map=codec._get_scalar_map("encode"))


def _our_cast(data, tgt, **cfg):
    from numcodecs_ext.codecs.cast_value import CastValue

    return CastValue(data_type=tgt, **cfg).encode_chunk(data)


def test_deviation_float64_to_float16_double_rounding():
    # zarr (cast-value-rs) rounds through float32: 1.0004882812500002 -> 1.0 instead of 1.0009765625
    x = np.array([1.0004882812500002])
    assert _zarr_cast(x, "float16")[0] == 1.0
    assert _our_cast(x, "float16")[0] == 1.0009765625


def test_deviation_float16_overflow_near_max():
    # 65519.99999999999 rounds (once) to 65504; zarr rounds to float32 65520.0 first, then fails
    x = np.array([65519.99999999999])
    with pytest.raises(Exception):
        _zarr_cast(x, "float16")
    assert _our_cast(x, "float16")[0] == 65504.0


def test_deviation_scale_offset_int64_overflow_wraps():
    from zarr.codecs.scale_offset import _encode

    x = np.array([2**63 - 1], np.int64)
    assert _encode(x, np.int64(-1), np.int64(1))[0] == -(2**63)  # zarr: silent wrap
    from numcodecs_ext.core.scale_offset import encode

    with pytest.raises(ValueError, match="outside the range"):
        encode(x, -1)


def test_deviation_duplicate_keys_last_wins():
    x = np.array([np.nan])
    smap = {"encode": [["NaN", 1], ["NaN", 2]]}
    assert _zarr_cast(x, "uint8", scalar_map=smap)[0] == 2  # zarr: the last entry
    assert _our_cast(x, "uint8", scalar_map=smap)[0] == 1  # spec: the first occurrence


def test_deviation_fill_value_survival_unchecked():
    codecs = [{"name": "cast_value", "configuration": {
        "data_type": "uint8", "scalar_map": {"encode": [["NaN", 0]]}}}]
    data = np.array([1.0, 2.0, 3.0, 4.0])
    theirs = write("zarr", codecs, "float64", "NaN", data)  # zarr accepts it
    assert chunks_of(theirs)["c/0"] == bytes([1, 2, 3, 4])
    with pytest.raises(ValueError, match="does not survive"):
        write("ours", codecs, "float64", "NaN", data)


def test_deviation_scale_offset_after_cast_value_rejected():
    codecs = [{"name": "cast_value", "configuration": {"data_type": "int16"}},
              {"name": "scale_offset", "configuration": {"offset": 2, "scale": 3}}]
    data = np.arange(4.0)
    ours = write("ours", codecs, "float64", 2.0, data)
    assert same(read("ours", ours), data)
    with pytest.raises(Exception):  # zarr validates scale_offset against float64 ... or int16
        theirs = write("zarr", codecs, "float64", 2.0, data)
        assert same(read("zarr", theirs), data)
        raise AssertionError("zarr accepted it: update this pin")


def test_deviation_invalid_rounding_accepted_at_construction():
    from zarr.codecs.cast_value import CastValue as ZarrCastValue

    from numcodecs_ext.codecs.cast_value import CastValue

    ZarrCastValue(data_type="uint8", rounding="sideways")  # zarr: no error until used
    with pytest.raises(ValueError, match="rounding='sideways'"):
        CastValue(data_type="uint8", rounding="sideways")


def test_deviation_hex_nan_key():
    x = np.array([np.nan, 1.0])
    smap = {"encode": [["0x7ff8000000000000", 7]]}
    with pytest.raises(Exception):
        _zarr_cast(x, "uint8", scalar_map=smap)  # zarr: float("0x7ff8...") fails
    assert _our_cast(x, "uint8", scalar_map=smap).tolist() == [7, 1]


def test_deviation_scale_offset_float_overflow():
    from zarr.codecs.scale_offset import _encode

    x = np.array([1e308])
    with np.errstate(over="ignore"):
        assert _encode(x, np.float64(0), np.float64(10))[0] == np.inf  # zarr: silent infinity
    from numcodecs_ext.core.scale_offset import encode

    with pytest.raises(ValueError, match="overflows"):
        encode(x, 0, 10)
