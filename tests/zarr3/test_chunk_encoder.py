"""The chunk encoder stores exactly the bytes zarr's write stores, chunk by chunk, or declines.

(No gzip here: its header holds the time of the compression, to the second.)"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, TransposeCodec, ZstdCodec

from numcodecs_ext import zarr3
from numcodecs_ext.zarr3.chunk_encoder import chunk_encoder

RNG = np.random.default_rng(5)
NAN_U8 = {"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}


def _normal(dtype):
    return lambda n: RNG.normal(0, 30, n).astype(dtype)


CASES = {  # name: (dtype, create_array keywords, values(n), fill value)
    "fso chain, zstd": ("float32", {
        "filters": [zarr3.CastValue(data_type="float64", out_of_range="clamp"),
                    zarr3.ScaleOffset(offset=250, scale=100), zarr3.CastValue(data_type="uint16")],
        "compressors": [ZstdCodec(level=1)]}, lambda n: (250 + RNG.uniform(0, 600, n)).astype("f4"), 250.0),
    "so+cv NaN map, big, blosc": ("float64", {
        "filters": [zarr3.ScaleOffset(offset=-3.5, scale=7),
                    zarr3.CastValue(data_type="uint8", out_of_range="clamp", scalar_map=NAN_U8)],
        "serializer": BytesCodec(endian="big"), "compressors": [BloscCodec(cname="zstd", clevel=1)]},
        lambda n: np.where(RNG.random(n) < 0.2, np.nan, RNG.uniform(-3, 30, n)), np.nan),
    "adapters, blosc lz4+crc32c": ("float32", {
        "filters": [zarr3.NumcodecsScaleOffset(offset=1, scale=4), zarr3.NumcodecsCastValue(data_type="int16")],
        "compressors": [BloscCodec(cname="lz4", shuffle="bitshuffle"), Crc32cCodec()]}, _normal("float32"), 1.0),
    "transpose + bitround": ("float32", {
        "filters": [TransposeCodec(order=(1, 0)), zarr3.BitRound(keepbits=7)],
        "compressors": [ZstdCodec(level=3)]}, _normal("float32"), 0.0),
    "our transpose, reshape": ("int16", {
        "filters": [zarr3.Transpose(order=[1, 0]), zarr3.Reshape(shape=[-1])]},
        lambda n: RNG.integers(-999, 999, n).astype("i2"), -1),
    "zfp": ("float64", {"serializer": zarr3.Zfp(mode="fixed_accuracy", tolerance=0.01)},
            _normal("float64"), 0.0),
    "packbits bool": ("bool", {"serializer": zarr3.PackBits(), "compressors": [ZstdCodec(level=1)]},
                      lambda n: RNG.random(n) < 0.5, False),
    "complex, big": ("complex64", {"serializer": BytesCodec(endian="big")},
                     lambda n: (RNG.normal(size=n) + 1j * RNG.normal(size=n)).astype("c8"), 0j),
    "uint64 extremes": ("uint64", {}, lambda n: RNG.choice(np.array([0, 1, 2**64 - 1], "u8"), n), 2**64 - 1),
    "datetime NaT": ("datetime64[s]", {}, lambda n: np.where(RNG.random(n) < 0.3, np.datetime64("NaT", "s"),
                                                             np.datetime64("2020-01-01") + RNG.integers(0, 9, n)),
                     np.datetime64("NaT", "s")),
    "bfloat16 NaN": (ml_dtypes.bfloat16, {"compressors": [ZstdCodec(level=1)]},
                     lambda n: np.where(RNG.random(n) < 0.3, np.nan, RNG.normal(0, 3, n)), 1.0),
    "structured": ([("a", "<i2"), ("b", "<f4")], {"compressors": [ZstdCodec(level=1)]},
                   lambda n: np.array([(i % 3, i / 4) for i in range(n)], [("a", "<i2"), ("b", "<f4")]),
                   np.zeros((), [("a", "<i2"), ("b", "<f4")])[()]),
}


def _chunks(arr):
    grid = [-(-n // c) for n, c in zip(arr.shape, arr.chunks)]
    return [tuple(i) for i in np.ndindex(*grid)]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("shape,empty", [((37, 11), False), ((12, 9), True)])
@pytest.mark.parametrize("write_empty", [False, True])
@pytest.mark.filterwarnings("ignore:The data type")  # (zarr: structured types have no v3 spec yet)
def test_stores_what_zarr_stores(tmp_path, case, shape, empty, write_empty):
    dtype, kwargs, make, fill = CASES[case]
    arr = zarr.create_array(tmp_path / "a.zarr", shape=shape, chunks=(4, 5), dtype=dtype, fill_value=fill,
                            config={"write_empty_chunks": write_empty}, **kwargs)
    values = make(int(np.prod(shape))).reshape(shape).astype(dtype)
    if empty:  # chunks of the fill value only, whole and at the edge, and one of -0.0 where it is 0.0
        values[:4, :5] = fill
        values[8:, 5:] = fill
        if np.dtype(dtype).kind in "fc" and fill == 0:
            values[4:8, :5] = -0.0
    arr[...] = values
    encoder = chunk_encoder(arr.metadata, arr.config)
    assert encoder is not None
    absent = 0
    for coords in _chunks(arr):
        sel = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(coords, arr.chunks, shape))
        chunk = values[sel]
        if chunk.shape != encoder.chunk_shape:
            chunk = encoder.padded(chunk)
        got = encoder.encode(chunk)
        path = tmp_path / "a.zarr" / arr.metadata.encode_chunk_key(coords)
        if got is None:
            absent += 1
            assert not path.exists(), coords
        else:
            assert got.to_bytes() == path.read_bytes(), coords
    if write_empty:
        assert absent == 0
    elif empty:
        assert absent > 0  # the empty-chunk rule ran


def test_the_callers_values_are_never_written(tmp_path):
    arr = zarr.create_array(tmp_path / "w.zarr", shape=(8,), chunks=(8,), dtype="float64",
                            filters=[zarr3.ScaleOffset(offset=1, scale=10), zarr3.CastValue(data_type="int32")])
    encoder = chunk_encoder(arr.metadata, arr.config)
    values = np.linspace(0, 7, 8)
    before = values.copy()
    encoder.encode(values)
    np.testing.assert_array_equal(values, before)


def test_refusals_are_the_codecs(tmp_path):
    arr = zarr.create_array(tmp_path / "r.zarr", shape=(4,), chunks=(4,), dtype="float32",
                            filters=[zarr3.CastValue(data_type="uint8")])
    encoder = chunk_encoder(arr.metadata, arr.config)
    with pytest.raises(Exception, match="256|range"):
        encoder.encode(np.array([1, 2, 256, 3], "f4"))
    with pytest.raises(ValueError, match="a chunk of"):
        encoder.encode(np.zeros(3, "f4"))


@pytest.mark.parametrize("kind", ["sharding", "0-d", "string"])
def test_declines_what_zarr_writes_otherwise(tmp_path, kind):
    if kind == "sharding":
        arr = zarr.create_array(tmp_path / "d.zarr", shape=(8, 8), chunks=(4, 4), shards=(8, 8), dtype="f4")
    elif kind == "0-d":
        arr = zarr.create_array(tmp_path / "d.zarr", shape=(), dtype="f4")
    else:
        arr = zarr.create_array(tmp_path / "d.zarr", shape=(4,), chunks=(2,), dtype=str)
    assert chunk_encoder(arr.metadata, arr.config) is None


def test_the_bytes_never_share_memory_with_the_chunk(tmp_path):
    # (a chain of no copying codec: zarr's bytes codec returns a view of a C-contiguous chunk)
    arr = zarr.create_array(tmp_path / "v.zarr", shape=(8,), chunks=(8,), dtype="float64", compressors=None)
    encoder = chunk_encoder(arr.metadata, arr.config)
    values = np.linspace(0, 7, 8)
    data = encoder.encode(values)
    assert not np.shares_memory(data.as_numpy_array(), values)
    values[:] = -1  # the caller reuses its buffer
    assert np.frombuffer(data.to_bytes(), "<f8").tolist() == list(np.linspace(0, 7, 8))
