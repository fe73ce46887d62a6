"""The table decoder reads stored chunks exactly as zarr reads them, or declines."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, TransposeCodec, ZstdCodec

from numcodecs_ext.zarr3 import CastValue, ScaleOffset
from numcodecs_ext.zarr3.chunk_table import table_decoder

RNG = np.random.default_rng(3)


def _every_chunk(arr):
    grid = [-(-n // c) for n, c in zip(arr.shape, arr.chunks)]
    return [tuple(i) for i in np.ndindex(*grid)]


NAN_I8 = {"encode": [["NaN", -128]], "decode": [[-128, "NaN"]]}
CASES = {  # name: (dtype, filters, compressor, endian, values(shape), fill)
    "so+cv u16": ("float32", [ScaleOffset(offset=250, scale=100), CastValue(data_type="uint16")],
                  ZstdCodec(level=1), "little", lambda n: 250 + RNG.uniform(0, 600, n), 250),
    "cv f64+so+cv u16, big": ("float32", [CastValue(data_type="float64", out_of_range="clamp"),
                                          ScaleOffset(offset=250, scale=100), CastValue(data_type="uint16")],
                              BloscCodec(cname="zstd", clevel=1), "big", lambda n: 250 + RNG.uniform(0, 600, n), 250),
    "so+cv i8 NaN": ("float64", [ScaleOffset(offset=-3.5, scale=7),
                                 CastValue(data_type="int8", out_of_range="clamp", scalar_map=NAN_I8)],
                     GzipCodec(level=1), "little",
                     lambda n: np.where(RNG.random(n) < 0.1, np.nan, RNG.uniform(-21, 14, n)), -3.5),
    "cv f16, big": ("float32", [CastValue(data_type="float16")], Crc32cCodec(), "big",
                    lambda n: RNG.normal(0, 30, n), 0),
    "cv i16": ("int32", [CastValue(data_type="int16", out_of_range="clamp")], ZstdCodec(level=3), "little",
               lambda n: RNG.integers(-40000, 40000, n), 0),
    "cv bf16": ("float32", [CastValue(data_type="bfloat16")], ZstdCodec(level=1), "little",
                lambda n: RNG.normal(0, 30, n), 0),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("shape", [(37, 11), (5,), (8, 8)])
def test_decodes_every_chunk_as_zarr_reads_it(tmp_path, case, shape):
    dtype, filters, compressor, endian, make, fill = CASES[case]
    arr = zarr.create_array(tmp_path / "a.zarr", shape=shape, chunks=tuple(max(1, n // 3) for n in shape),
                            dtype=dtype, filters=filters, serializer=BytesCodec(endian=endian),
                            compressors=[compressor], fill_value=fill, config={"write_empty_chunks": True})
    arr[...] = make(int(np.prod(shape))).reshape(shape).astype(dtype)
    decoder = table_decoder(arr.metadata, arr.dtype)
    assert decoder is not None
    whole = arr[...]
    for coords in _every_chunk(arr):
        data = (tmp_path / "a.zarr" / arr.metadata.encode_chunk_key(coords)).read_bytes()
        chunk = decoder.decode(data)
        sel = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(coords, arr.chunks, shape))
        inside = tuple(slice(0, s.stop - s.start) for s in sel)
        assert chunk.dtype == whole.dtype and chunk.shape == tuple(arr.chunks)
        np.testing.assert_array_equal(chunk[inside].view(f"u{whole.itemsize}"),
                                      whole[sel].view(f"u{whole.itemsize}"))


def test_a_truncated_chunk_is_an_error_not_values(tmp_path):
    arr = zarr.create_array(tmp_path / "t.zarr", shape=(64,), chunks=(64,), dtype="float32",
                            filters=[CastValue(data_type="uint8", out_of_range="clamp")], compressors=[])
    arr[:] = np.arange(64, dtype="f4")
    decoder = table_decoder(arr.metadata, arr.dtype)
    data = (tmp_path / "t.zarr" / "c" / "0").read_bytes()
    with pytest.raises(ValueError, match="decodes to 63 bytes"):
        decoder.decode(data[:-1])


@pytest.mark.parametrize("kind", ["no filters", "wide codes", "transpose", "sharding", "refused code"])
def test_declines_what_it_cannot_decode_exactly(tmp_path, kind):
    kwargs: dict = {"filters": [CastValue(data_type="uint16")]}
    dtype = "float32"
    if kind == "no filters":
        kwargs = {}
    elif kind == "wide codes":
        kwargs = {"filters": [CastValue(data_type="int32")]}
    elif kind == "transpose":
        kwargs = {"filters": [TransposeCodec(order=(1, 0)), CastValue(data_type="uint16")]}
    elif kind == "sharding":
        kwargs["shards"] = (8, 8)
    elif kind == "refused code":  # uint16 -> int8 has codes that decode out of range (an error)
        dtype = "int8"
        kwargs = {"filters": [CastValue(data_type="uint16")], "serializer": BytesCodec(endian="little")}
    arr = zarr.create_array(tmp_path / "d.zarr", shape=(8, 8), chunks=(4, 4), dtype=dtype, **kwargs)
    assert table_decoder(arr.metadata, arr.dtype) is None
