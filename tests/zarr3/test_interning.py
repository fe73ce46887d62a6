"""One codec object per configuration: zarr parses zarr.json's codec entries at every open, and
the chunk work keeps what it worked out (per-chunk functions, resolved specs) on that object."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import zarr

from numcodecs_ext.zarr3 import CastValue, ScaleOffset


def _open_codecs(store):
    return zarr.open_array(store, mode="r").metadata.codecs


def test_the_same_configuration_opens_as_the_same_objects(tmp_path):
    arr = zarr.create_array(tmp_path / "a.zarr", shape=(10,), chunks=(5,), dtype="float32", fill_value=0.0,
                            filters=[ScaleOffset(offset=1.5, scale=10), CastValue(data_type="int16")])
    arr[:] = np.arange(10, dtype="f4")
    first, second = _open_codecs(tmp_path / "a.zarr"), _open_codecs(tmp_path / "a.zarr")
    assert first[0] is second[0] and first[1] is second[1]
    other = ScaleOffset.from_dict({"name": "scale_offset", "configuration": {"offset": 2.5, "scale": 10}})
    assert other is not first[0] and other != first[0]
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "a.zarr", mode="r")[:], np.arange(10, dtype="f4"))


def test_interned_codecs_pickle_and_compare_as_before():
    a = CastValue.from_dict({"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp"}})
    b = CastValue.from_dict({"configuration": {"out_of_range": "clamp", "data_type": "uint8"}, "name": "cast_value"})
    assert a is b
    back = pickle.loads(pickle.dumps(a))
    assert back == a and back.to_dict() == a.to_dict()


def test_a_refused_fill_value_is_refused_at_every_write(tmp_path):
    """A spec resolved once is kept; a fill value the codec cannot carry is not, and is refused
    at each write, not only the first."""
    arr = zarr.create_array(tmp_path / "b.zarr", shape=(4,), chunks=(2,), dtype="float32", fill_value=1e6,
                            filters=[CastValue(data_type="int8")])
    for _ in range(2):
        with pytest.raises(Exception, match="fill value"):
            arr[:] = np.zeros(4, "f4")


def test_invalid_entries_are_still_refused_each_time():
    for _ in range(2):
        with pytest.raises(ValueError, match="scale"):
            ScaleOffset.from_dict({"name": "scale_offset", "configuration": {"scale": "x"}})


def test_encode_in_place_only_on_a_temporary_of_ours(tmp_path):
    """scale_offset after a cast_value to float64 encodes the cast's temporary in place: the
    bytes are those of the codecs one after the other, and the caller's array is never written,
    whether scale_offset comes first or second."""
    values = (250 + np.random.default_rng(1).random((300, 64)) * 600).astype("f4")
    kept = values.copy()
    chain = [CastValue(data_type="float64", out_of_range="clamp"), ScaleOffset(offset=250, scale=100),
             CastValue(data_type="uint16")]
    arr = zarr.create_array(tmp_path / "c.zarr", shape=values.shape, chunks=(128, 64), dtype="f4", filters=chain,
                            compressors=[], fill_value=250.0)
    arr[:] = values
    assert np.array_equal(values.view("u4"), kept.view("u4"))
    for i in range(3):  # each stored chunk is the three codecs applied one after the other
        part = np.zeros((128, 64), "f4") + np.float32(250)
        block = values[i * 128:(i + 1) * 128]
        part[:block.shape[0]] = block
        expected = part.astype("f8")
        expected = np.rint((expected - 250) * 100).astype("<u2")
        assert (tmp_path / "c.zarr" / "c" / str(i) / "0").read_bytes() == expected.tobytes()
    first = np.ascontiguousarray(values.astype("f8"))
    kept64 = first.copy()
    direct = zarr.create_array(tmp_path / "d.zarr", shape=first.shape, chunks=first.shape, dtype="f8",
                               filters=chain[1:], compressors=[], fill_value=250.0)
    direct[:] = first  # scale_offset first: the caller's float64 array, never written
    assert np.array_equal(first.view("u8"), kept64.view("u8"))


@pytest.mark.filterwarnings("ignore:Combining a `sharding_indexed` codec")
def test_one_byte_types_of_the_same_bytes_keep_their_own_fill_values(tmp_path):
    """Codecs are shared between arrays; what they keep per fill value is kept per dtype, and
    every one-byte ml_dtypes type has the same ``.str``: a float4 fill value of byte 0x02 (1.0)
    must not become a float8 array's fill value of byte 0x02 (0.0039)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from packaging.version import Version
    from zarr.codecs import BytesCodec, ShardingCodec

    if Version(zarr.__version__) < Version("3.2"):
        pytest.skip("zarr 3.1 does not shard ml_dtypes' one-byte types")

    from numcodecs_ext.zarr3.dtypes import register_zarr_dtypes

    register_zarr_dtypes()
    f8 = ml_dtypes.float8_e4m3

    def make(name, dtype, fill):
        try:
            return zarr.create_array(tmp_path / name, shape=(8,), chunks=(4,), shards=(8,), dtype=dtype,
                                     fill_value=fill, filters=[CastValue(data_type="float32")],
                                     serializer=ShardingCodec(chunk_shape=(4,), codecs=[BytesCodec()]),
                                     compressors=None, config={"write_empty_chunks": False})
        except Exception as e:  # noqa: BLE001 - zarr 3.1 has no such types
            pytest.skip(f"zarr cannot create a {dtype} array here: {e}")

    make("b", "float4_e2m1fn", 1.0)
    make("a", "float8_e4m3", np.array([2], np.uint8).view(f8)[0])
    b = zarr.open_array(tmp_path / "b", mode="r+")  # (opened: one codec object for both arrays)
    b[:] = np.zeros(8, ml_dtypes.float4_e2m1fn)
    a = zarr.open_array(tmp_path / "a", mode="r+")
    values = np.array([1, 1, 1, 1, 5, 5, 5, 5], f8)  # the first shard chunk is the fill value: not stored
    a[:] = values
    assert np.array_equal(zarr.open_array(tmp_path / "a", mode="r")[:].view("u1"), values.view("u1"))
