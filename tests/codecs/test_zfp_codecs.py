"""The numcodecs ``zfp`` codec and the zarr v3 ``zfp`` / ``zarrs.zfp`` / ``numcodecs.zfp`` codecs."""

from __future__ import annotations

import array
import json
import pickle
import shutil
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.storage

from numcodecs_ext.codecs.zfp import Zfp
from numcodecs_ext.core.zfp import compress
from numcodecs_ext.zarr3.zfp import NumcodecsZfp, Zfp as ZfpV3

# 112 chunks zarrs (the reference implementation) wrote: fixtures/interop/zarrs-zfp-reversible/README.md
INTEROP = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "zarrs-zfp-reversible" / "chunks"

CONFIGS = [
    {"mode": "reversible"},
    {"mode": "fixed_accuracy", "tolerance": 0.01},
    {"mode": "fixed_rate", "rate": 16},
    {"mode": "fixed_precision", "precision": 20},
    {"mode": "expert", "minbits": 1, "maxbits": 4000, "maxprec": 24, "minexp": -20},
]


def smooth(shape, dtype="float32"):
    n = int(np.prod(shape))
    return (np.sin(np.linspace(0, 20, n)) * 100).reshape(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# numcodecs codec


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["mode"])
def test_numcodecs_config_round_trip(cfg: dict) -> None:
    codec = Zfp(**cfg)
    config = codec.get_config()
    assert config == {"id": "zfp", **cfg}
    again = numcodecs.get_codec(json.loads(json.dumps(config)))
    assert again == codec and hash(again) == hash(codec)
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert repr(codec).startswith("Zfp(mode=")
    assert codec.v3_configuration() == cfg
    assert Zfp.from_v3_configuration(cfg) == codec


def test_alias_id_accepted() -> None:
    codec = numcodecs.get_codec({"id": "zarrs.zfp", "mode": "fixed_rate", "rate": 4})
    assert isinstance(codec, Zfp) and codec.get_config()["id"] == "zfp"


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mode": "fixed_rate"}, "needs the key"),
        ({"mode": "reversible", "tolerance": 0.1}, "does not take"),
        ({"mode": "fixed_precision", "precision": 99}, "out of range"),
        ({"mode": "nope"}, "not a zfp mode"),
        ({"mode": "reversible", "shape": [1, 2, 3, 4, 5]}, "at most 4"),
        ({"mode": "reversible", "shape": "34"}, "shape"),
        ({"mode": "reversible", "dtype": "complex64"}, "cannot compress data type"),
        ({"mode": "fixed_accuracy", "tolerance": 1, "dtype": "int16"}, "floating-point"),
    ],
)
def test_numcodecs_validation(kwargs: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        Zfp(**kwargs)


def test_from_config_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match="unknown configuration key"):
        Zfp.from_config({"id": "zfp", "mode": "reversible", "level": 3})
    with pytest.raises(ValueError, match="unknown configuration key.*'shape'"):
        Zfp.from_v3_configuration({"mode": "reversible", "shape": [3]})


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["mode"])
def test_numcodecs_encode_decode_buffers(cfg: dict) -> None:
    a = smooth((6, 7), "float64")
    codec = Zfp(**cfg)
    enc = codec.encode(a)
    assert enc == compress(a, **cfg)
    ref = Zfp(**cfg, shape=[6, 7], dtype="float64").decode(enc)
    assert ref.shape == (6, 7)
    for buf in (enc, bytearray(enc), array.array("b", enc), np.frombuffer(enc, np.uint8)):
        out = np.empty((6, 7))
        assert codec.decode(buf, out=out) is out
        assert np.array_equal(out, ref)
    # out as raw bytes, with shape/dtype from the configuration
    raw = np.empty(6 * 7 * 8, dtype=np.uint8)
    Zfp(**cfg, shape=[6, 7], dtype="float64").decode(enc, out=raw)
    assert np.array_equal(raw.view("f8").reshape(6, 7), ref)
    # non-contiguous out
    big = np.zeros((12, 7))
    codec.decode(enc, out=big[::2])
    assert np.array_equal(big[::2], ref)


def test_numcodecs_decode_without_shape_explains() -> None:
    codec = Zfp(mode="reversible")
    with pytest.raises(ValueError, match="no header.*out=.*shape and dtype"):
        codec.decode(codec.encode(np.zeros(4)))
    with pytest.raises(ValueError, match="out has 3 elements"):
        Zfp(mode="reversible", shape=[4], dtype="float64").decode(codec.encode(np.zeros(4)), out=np.zeros(3))


def test_numcodecs_encode_raw_buffer_with_config() -> None:
    a = smooth((4, 5), "int16")
    codec = Zfp(mode="reversible", shape=[4, 5], dtype="int16")
    assert codec.encode(a.tobytes()) == compress(a, "reversible")
    assert np.array_equal(codec.decode(codec.encode(a)), a)
    with pytest.raises(ValueError, match="configured dtype="):
        codec.encode(a.astype("int32"))
    with pytest.raises(ValueError, match="configured shape="):
        codec.encode(np.zeros(3, "int16"))


def test_resolve_spec() -> None:
    codec = Zfp(mode="fixed_accuracy", tolerance=0.1)
    assert codec.resolve_spec((4, 4), np.dtype("f4"), np.float32(0)) == ((4, 4), np.dtype("f4"), 0)
    with pytest.raises(TypeError, match="floating-point"):
        codec.resolve_spec((4, 4), np.dtype("i4"), np.int32(0))
    with pytest.raises(ValueError, match="at most 4"):
        codec.resolve_spec((1,) * 5, np.dtype("f4"), np.float32(0))


# ---------------------------------------------------------------------------------------------
# zarr v3


@pytest.mark.parametrize("name", ["zfp", "zarrs.zfp", "numcodecs.zfp"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["mode"])
def test_zarr_v3_array(tmp_path: Path, name: str, cfg: dict) -> None:
    serializer = NumcodecsZfp(**{"codec": Zfp(**cfg)}) if name == "numcodecs.zfp" else ZfpV3(name=name, **cfg)
    a = smooth((10, 9, 6), "float32")
    store = zarr.storage.LocalStore(tmp_path / "a.zarr")
    z = zarr.create_array(store, shape=a.shape, chunks=(4, 4, 3), dtype="float32", serializer=serializer,
                          compressors=None, fill_value=0)
    z[:] = a
    meta = json.loads((tmp_path / "a.zarr" / "zarr.json").read_text())
    assert meta["codecs"] == [{"name": name, "configuration": cfg}]
    # chunk bytes are exactly the core's (edge chunks are padded to the chunk shape by zarr)
    chunk = (tmp_path / "a.zarr" / "c" / "0" / "0" / "0").read_bytes()
    assert chunk == compress(a[:4, :4, :3], **cfg)
    back = zarr.open_array(zarr.storage.LocalStore(tmp_path / "a.zarr"), mode="r")
    b = back[:]
    if cfg["mode"] == "reversible":
        assert np.array_equal(b, a)
    else:
        assert np.abs(b - a).max() < 1.0


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint32", "int64", "uint64", "float64", "float16"])
def test_zarr_v3_dtypes(dtype: str) -> None:
    a = np.abs(smooth((9, 11), "float64")).astype(dtype)
    z = zarr.create_array({}, shape=a.shape, chunks=(4, 4), dtype=dtype, serializer=ZfpV3(mode="reversible"),
                          compressors=None)
    z[:] = a
    assert np.array_equal(z[:], a)


def test_zarr_v3_refuses_fixed_accuracy_for_ints() -> None:
    # zarr >= 3.2 resolves the codec metadata at creation, older versions at the first write
    with pytest.raises(TypeError, match="floating-point"):
        z = zarr.create_array({}, shape=(4,), chunks=(4,), dtype="int32",
                              serializer=ZfpV3(mode="fixed_accuracy", tolerance=1), compressors=None)
        z[:] = np.arange(4)


def test_zarr_v3_lossy_refuses_nan() -> None:
    z = zarr.create_array({}, shape=(4,), chunks=(4,), dtype="float32",
                          serializer=ZfpV3(mode="fixed_rate", rate=8), compressors=None)
    with pytest.raises(ValueError, match="non-finite"):
        z[:] = np.array([1, np.nan, 2, 3])


def test_v3_to_dict_and_from_dict() -> None:
    c = ZfpV3.from_dict({"name": "zarrs.zfp", "configuration": {"mode": "fixed_rate", "rate": 2.5}})
    assert c.to_dict() == {"name": "zarrs.zfp", "configuration": {"mode": "fixed_rate", "rate": 2.5}}
    assert ZfpV3(mode="reversible").to_dict() == {"name": "zfp", "configuration": {"mode": "reversible"}}
    with pytest.raises(ValueError, match="unknown configuration key"):
        ZfpV3.from_dict({"name": "zfp", "configuration": {"mode": "reversible", "dtype": "f4"}})
    with pytest.raises(ValueError, match="does not take"):
        ZfpV3.from_dict({"name": "zfp", "configuration": {"mode": "reversible", "rate": 3}})
    n = NumcodecsZfp.from_dict({"name": "numcodecs.zfp", "configuration": {"mode": "reversible"}})
    assert n.to_dict() == {"name": "numcodecs.zfp", "configuration": {"mode": "reversible"}}


def _interop_groups() -> dict[str, list[Path]]:
    groups: dict[str, list[Path]] = {}
    for p in sorted(INTEROP.iterdir()):
        groups.setdefault(p.name.rsplit("__", 1)[0], []).append(p)
    return groups


@pytest.mark.parametrize("group", sorted(k for k in _interop_groups() if "datetime" not in k and "timedelta" not in k))
@pytest.mark.parametrize("name", ["zfp", "zarrs.zfp"])
def test_zarr_reads_a_zarrs_array(tmp_path: Path, group: str, name: str) -> None:
    """Assemble zarrs' 8 chunks of one 8x24 array into a store and read it with zarr-python."""
    folders = _interop_groups()[group]
    cfg = json.loads((folders[0] / "config.json").read_text())
    root = tmp_path / "z.zarr"
    (root / "c").mkdir(parents=True)
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [8, 24], "data_type": cfg["data_type"],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": cfg["chunk_shape"]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": cfg["fill_value"], "codecs": [{"name": name, "configuration": {"mode": "reversible"}}],
        "attributes": {},
    }
    (root / "zarr.json").write_text(json.dumps(meta))
    expected = np.empty((8, 24), dtype=np.load(folders[0] / "decoded.npy").dtype)
    for f in folders:
        i, j = map(int, f.name.rsplit("__c", 1)[1].split("_"))
        (root / "c" / str(i)).mkdir(exist_ok=True)
        shutil.copy(f / "encoded.bin", root / "c" / str(i) / str(j))
        expected[i * 4:(i + 1) * 4, j * 6:(j + 1) * 6] = np.load(f / "decoded.npy")
    got = zarr.open_array(zarr.storage.LocalStore(root), mode="r")[:]
    assert got.tobytes() == expected.tobytes()
    # and writing it back gives zarrs' bytes
    out = tmp_path / "w.zarr"
    w = zarr.create_array(zarr.storage.LocalStore(out), shape=(8, 24), chunks=(4, 6), dtype=got.dtype,
                          serializer=ZfpV3(name=name, mode="reversible"), compressors=None,
                          fill_value=np.zeros((), got.dtype)[()])
    w[:] = got
    for f in folders:
        i, j = map(int, f.name.rsplit("__c", 1)[1].split("_"))
        assert (out / "c" / str(i) / str(j)).read_bytes() == (f / "encoded.bin").read_bytes()


# ---------------------------------------------------------------------------------------------
# zarr v2


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c["mode"])
def test_zarr_v2_compressor(tmp_path: Path, cfg: dict) -> None:
    a = smooth((10, 12), "float64")
    codec = Zfp(**cfg, shape=[4, 6], dtype="float64")
    store = zarr.storage.LocalStore(tmp_path / "v2.zarr")
    z = zarr.create_array(store, shape=a.shape, chunks=(4, 6), dtype="float64", zarr_format=2,
                          compressors=codec, filters=None, fill_value=0)
    z[:] = a
    zarray = json.loads((tmp_path / "v2.zarr" / ".zarray").read_text())
    assert zarray["compressor"] == codec.get_config()
    back = zarr.open_array(zarr.storage.LocalStore(tmp_path / "v2.zarr"), mode="r")[:]
    if cfg["mode"] == "reversible":
        assert np.array_equal(back, a)
    else:
        assert np.abs(back - a).max() < 1.0


@pytest.mark.parametrize("configured", [None, "float32", ">f4"])
def test_decode_into_byte_swapped_out(configured) -> None:
    """out= of the other byte order receives the values, never native bytes reinterpreted."""
    data = np.arange(12, dtype="float32").reshape(3, 4)
    enc = Zfp(mode="reversible").encode(data)
    codec = Zfp(mode="reversible", dtype=configured, shape=[3, 4]) if configured else Zfp(mode="reversible")
    out = np.empty((3, 4), dtype=">f4")
    assert codec.decode(enc, out=out) is out
    assert np.array_equal(out, data)


def test_big_endian_dtype_config_round_trips() -> None:
    codec = Zfp(mode="reversible", dtype=">f8", shape=[5])
    assert codec.get_config()["dtype"] == ">f8"
    data = np.linspace(0, 1, 5).astype(">f8")
    decoded = codec.decode(codec.encode(data))
    assert decoded.dtype == np.dtype(">f8") and np.array_equal(decoded, data)
    with pytest.raises(ValueError, match="byte order"):
        Zfp(mode="reversible", dtype="float64", shape=[5]).encode(data)
