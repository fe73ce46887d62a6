"""packbits as a codec: zarr v3 (also in shards), zarr v2, numcodecs' layout, refusals."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext import PackBits, zarr3

ml_dtypes = pytest.importorskip("ml_dtypes")


@pytest.mark.parametrize("dtype, kwargs, values", [
    ("bool", {}, [True, False, True, True, False, False, True, False, True]),
    ("int4", {}, [-8, -1, 0, 7, 3, -5, 2]),
    ("uint2", {"padding_encoding": "first_byte"}, [0, 1, 2, 3, 3, 2]),
    ("float4_e2m1fn", {"padding_encoding": "last_byte"}, [0.0, -0.0, 0.5, 6.0, -6.0, 1.5]),
    ("float6_e3m2fn", {}, [0.0, 28.0, -0.0625, 1.25]),
    ("uint16", {"last_bit": 11}, [0, 4095, 1234, 7]),
    ("int32", {"first_bit": 4, "last_bit": 19}, [16, -16, 2**19 - 16, -(2**19)]),
    ("float32", {"first_bit": 16}, [1.0, -2.5, np.inf, 3.140625]),
    ("complex64", {"padding_encoding": "first_byte"}, [1 + 2j, -3.5j]),
    ("float64", {}, [np.pi, -0.0, np.nan]),
])
def test_zarr_v3_types_round_trip(tmp_path: Path, dtype: str, kwargs: dict, values: list) -> None:
    data = np.array(values, dtype=getattr(ml_dtypes, dtype, dtype))
    z = zarr.create_array(str(tmp_path / "p.zarr"), shape=data.shape, chunks=(4,), dtype=dtype,
                          serializer=zarr3.PackBits(**kwargs), compressors=None)
    z[:] = data
    back = zarr.open_array(str(tmp_path / "p.zarr"))[:]
    assert back.tobytes() == data.tobytes()
    meta = json.loads((tmp_path / "p.zarr" / "zarr.json").read_text())
    assert meta["codecs"] == [{"name": "packbits", **({"configuration": kwargs} if kwargs else {})}]


def test_chunk_bytes_and_sizes(tmp_path: Path) -> None:
    """A bool chunk of 9 values is 2 bytes (+1 padding byte), least significant bit first."""
    z = zarr.create_array(str(tmp_path / "b.zarr"), shape=(9,), chunks=(9,), dtype="bool",
                          serializer=zarr3.PackBits(padding_encoding="first_byte"), compressors=None)
    z[:] = [True, False, False, False, False, False, False, True, True]
    assert (tmp_path / "b.zarr" / "c" / "0").read_bytes() == bytes([7, 0b10000001, 0b1])
    spec = zarr3.PackBits(last_bit=3)
    from zarr.core.array_spec import ArrayConfig, ArraySpec
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.dtype import get_data_type_from_native_dtype

    chunk = ArraySpec(shape=(5, 3), dtype=get_data_type_from_native_dtype(np.dtype("uint8")),
                      fill_value=0, config=ArrayConfig.from_dict({}), prototype=default_buffer_prototype())
    assert spec.compute_encoded_size(15, chunk) == 8  # 15 x 4 bits


def test_sharded_with_fill(tmp_path: Path) -> None:
    data = np.arange(40, dtype="uint8").reshape(8, 5) % 16
    z = zarr.create_array(str(tmp_path / "s.zarr"), shape=(16, 5), chunks=(2, 5), shards=(8, 5),
                          dtype="uint8", fill_value=9, compressors=None,
                          serializer=zarr3.PackBits(last_bit=3, padding_encoding="last_byte"))
    z[:8] = data
    back = zarr.open_array(str(tmp_path / "s.zarr"))[:]
    np.testing.assert_array_equal(back[:8], data)
    assert (back[8:] == 9).all()


def test_values_outside_the_stored_bits_are_refused(tmp_path: Path) -> None:
    """Storing 20 in 4 bits would read back 4: refused, never wrapped silently."""
    z = zarr.create_array(str(tmp_path / "w.zarr"), shape=(3,), dtype="uint8", compressors=None,
                          serializer=zarr3.PackBits(last_bit=3))
    with pytest.raises(ValueError, match="20.*bits 0..3"):
        z[:] = [1, 20, 3]
    signed = PackBits(dtype="int8", last_bit=3, padding_encoding="first_byte")
    signed.encode(np.array([-8, 7], "int8"))
    with pytest.raises(ValueError, match="-9"):
        signed.encode(np.array([-9, 7], "int8"))
    with pytest.raises(ValueError, match="8"):
        signed.encode(np.array([8], "int8"))
    # bits below first_bit are dropped on purpose (a coarser grid), not refused
    low = PackBits(dtype="uint16", first_bit=4, padding_encoding="first_byte")
    assert low.decode(low.encode(np.array([0x1234], "uint16"))).tolist() == [0x1230]
    # floats: the top bits of a float32 kept as bfloat16 would be; dropping the sign is refused
    with pytest.raises(ValueError, match="bits 0..30"):
        PackBits(dtype="float32", last_bit=30, padding_encoding="first_byte").encode(
            np.array([-1.0], "float32"))
    # the fill value must fit too
    z = zarr.create_array(str(tmp_path / "f.zarr"), shape=(3,), dtype="uint8", fill_value=200,
                          compressors=None, serializer=zarr3.PackBits(last_bit=3))
    with pytest.raises(ValueError, match="200"):
        z[:1] = [1]
    # ... and survive the bits dropped below first_bit, or unwritten parts of a chunk would
    # read back as another value (data is rounded down by design; the fill value is refused)
    for dtype, fill, first_bit, back in [("uint8", 3, 2, "0"), ("int16", -1, 1, "-2"),
                                         ("float32", 1.1, 16, "1.09375")]:
        z = zarr.create_array(str(tmp_path / f"low-{dtype}.zarr"), shape=(4,), chunks=(2,),
                              dtype=dtype, fill_value=fill, compressors=None,
                              serializer=zarr3.PackBits(first_bit=first_bit))
        with pytest.raises(ValueError, match=f"first_bit={first_bit}.*{back}"):
            z[:1] = [0]
        assert not (tmp_path / f"low-{dtype}.zarr" / "c").exists()
    ok = zarr.create_array(str(tmp_path / "low-ok.zarr"), shape=(4,), chunks=(2,), dtype="uint8",
                           fill_value=4, compressors=None, serializer=zarr3.PackBits(first_bit=2))
    ok[:1] = [7]
    assert ok[:].tolist() == [4, 4, 4, 4]


def test_schema_spellings_are_read_and_written_as_the_text_says(tmp_path: Path) -> None:
    """The spec's schema says start_bit/end_bit and start_byte/end_byte where its text (and zarrs)
    say first_bit/last_bit and first_byte/last_byte: a store written from the schema opens."""
    codec = zarr3.PackBits.from_dict({"name": "packbits", "configuration": {
        "start_bit": 1, "end_bit": 4, "padding_encoding": "end_byte"}})
    assert codec.to_dict() == {"name": "packbits", "configuration": {
        "padding_encoding": "last_byte", "first_bit": 1, "last_bit": 4}}
    assert zarr3.PackBits.from_dict({"name": "packbits", "configuration": {
        "padding_encoding": "start_byte", "start_bit": None}}).to_dict()["configuration"] == {
        "padding_encoding": "first_byte"}
    with pytest.raises(ValueError, match="two spellings"):
        zarr3.PackBits.from_dict({"name": "packbits", "configuration": {"start_bit": 1, "first_bit": 1}})
    ours = zarr.create_array(str(tmp_path / "a.zarr"), shape=(5,), dtype="uint8", compressors=None,
                             serializer=zarr3.PackBits(first_bit=1, last_bit=4))
    ours[:] = [2, 4, 6, 30, 0]
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    meta["codecs"][0]["configuration"] = {"start_bit": 1, "end_bit": 4}
    (tmp_path / "a.zarr" / "zarr.json").write_text(json.dumps(meta))
    assert zarr.open_array(str(tmp_path / "a.zarr"))[:].tolist() == [2, 4, 6, 30, 0]


def test_bad_configuration() -> None:
    for kwargs, match in [({"padding_encoding": "start_byte"}, "padding_encoding"),
                          ({"first_bit": -1}, "first_bit"), ({"last_bit": 64}, "last_bit"),
                          ({"first_bit": 5, "last_bit": 2}, "less than"), ({"first_bit": True}, "first_bit"),
                          ({"bit_order": "msb"}, "bit_order")]:
        with pytest.raises(ValueError, match=match):
            PackBits(**kwargs)
    with pytest.raises(ValueError, match="unknown configuration key"):
        zarr3.PackBits.from_dict({"name": "packbits", "configuration": {"first_bits": 1}})
    with pytest.raises(ValueError, match="unknown configuration key"):  # numcodecs-only keys
        zarr3.PackBits.from_dict({"name": "packbits", "configuration": {"bit_order": "big"}})
    assert zarr3.PackBits.from_dict({"name": "packbits", "configuration": {"first_bit": None}}).to_dict() \
        == {"name": "packbits"}
    with pytest.raises(ValueError, match="last_bit"):
        zarr.create_array({}, shape=(3,), dtype="uint8", serializer=zarr3.PackBits(last_bit=8))
    with pytest.raises((ValueError, TypeError), match="packbits"):
        zarr.create_array({}, shape=(3,), dtype="U4", serializer=zarr3.PackBits())


def test_numcodecs_layout_and_contract() -> None:
    """bit_order='big' + first_byte: numcodecs' PackBits bytes, both ways."""
    theirs = numcodecs.PackBits()
    ours = numcodecs.get_codec({"id": "numcodecs_ext.packbits", "dtype": "bool", "bit_order": "big",
                                "padding_encoding": "first_byte"})
    assert isinstance(ours, PackBits) and pickle.loads(pickle.dumps(ours)) == ours
    for n in (0, 1, 7, 8, 9, 100):
        flags = np.random.default_rng(n).integers(0, 2, n).astype(bool)
        enc = ours.encode(flags)
        assert bytes(enc) == bytes(theirs.encode(flags))
        np.testing.assert_array_equal(ours.decode(theirs.encode(flags)), flags)
        np.testing.assert_array_equal(theirs.decode(enc), flags)
    spec = PackBits(dtype="bool", padding_encoding="first_byte")
    assert bytes(spec.encode(np.array([True, False]))) == bytes([6, 0b01])  # LSB first
    assert bytes(ours.encode(np.array([True, False]))) == bytes([6, 0b10000000])


def test_numcodecs_decode_needs_what_the_bytes_lack() -> None:
    a = np.array([1, 2, 3, 0, 1], "uint8")
    with pytest.raises(ValueError, match="dtype"):
        PackBits(last_bit=1).encode(a)
    with pytest.raises(ValueError, match="shape"):
        PackBits(last_bit=1, dtype="uint8").encode(a)
    enc = PackBits(last_bit=1, dtype="uint8", shape=[5]).encode(a)
    np.testing.assert_array_equal(PackBits(last_bit=1, dtype="uint8", shape=[5]).decode(enc), a)
    out = np.empty(5, "uint8")
    assert PackBits(last_bit=1).decode(enc, out=out) is out and np.array_equal(out, a)
    codec = PackBits(last_bit=1, dtype="uint8", padding_encoding="last_byte")
    np.testing.assert_array_equal(codec.decode(codec.encode(a)), a)
    for bad in (bytes(codec.encode(a))[:-1], b"", b"\x09"):
        with pytest.raises(ValueError):
            codec.decode(bad)
    with pytest.raises(ValueError, match="Fortran"):
        PackBits(dtype="uint8").encode(np.asfortranarray(np.zeros((2, 3), "uint8")))


def test_zarr_v2_filter(tmp_path: Path) -> None:
    data = (np.arange(60) % 5 == 0).reshape(6, 10)
    z = zarr.create_array(str(tmp_path / "v2.zarr"), shape=data.shape, chunks=(3, 10), dtype="bool",
                          zarr_format=2, compressors=None,
                          filters=[PackBits(dtype="bool", padding_encoding="first_byte")])
    z[:] = data
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "v2.zarr"))[:], data)


def test_zarrs_full_width_layout_reads(tmp_path: Path) -> None:
    """zarrs writes full-width types without the padding byte; such chunks read here too."""
    store = tmp_path / "zarrs.zarr"
    (store / "c").mkdir(parents=True)
    (store / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}]}))
    (store / "c" / "0").write_bytes(np.array([1, 513, 65535], "<u2").tobytes())
    assert zarr.open_array(str(store))[:].tolist() == [1, 513, 65535]


def test_resolved_by_name_in_a_fresh_process(tmp_path: Path) -> None:
    """A process that never imports numcodecs_ext opens packbits/bitround/reshape arrays."""
    path = tmp_path / "fresh.zarr"
    data = np.arange(24, dtype="int16").reshape(2, 3, 4)
    z = zarr.create_array(str(path), shape=data.shape, dtype="int16", compressors=None,
                          filters=[zarr3.Reshape(shape=[[0, 1], -1]), zarr3.BitRound(keepbits=3)],
                          serializer=zarr3.PackBits(last_bit=7))
    z[:] = data
    code = ("import json, sys, zarr; a = zarr.open_array(sys.argv[1]); "
            "print(json.dumps(a[:].tolist()))")
    out = subprocess.run([sys.executable, "-W", "error", "-c", code, str(path)], capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == z[:].tolist() and z[1, 2, 3] == 24  # 23 rounded to 3 bits


def test_wide_values_decode_without_shape() -> None:
    """With padding_encoding 'none', 8 or more bits per value leave no doubt about the count
    (the padding is under 8 bits): no shape needed, as the README says; fewer bits need it."""
    for dtype, last_bit in [("uint16", 11), ("int32", 8), ("int16", 9), ("uint8", 7)]:
        codec = PackBits(dtype=dtype, last_bit=last_bit)
        a = np.arange(7).astype(dtype)
        assert np.array_equal(codec.decode(codec.encode(a)), a), dtype
    with pytest.raises(ValueError, match="shape"):
        PackBits(dtype="uint8", last_bit=2).encode(np.arange(7, dtype="uint8"))
