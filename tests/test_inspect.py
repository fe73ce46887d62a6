"""``numcodecs-ext inspect`` on real stores: ours, zarr's built-ins, zarr v2, xarray, broken ones."""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.tools.inspect import inspect_store
from numcodecs_ext.zarr3 import BitRound, CastValue, PackBits, ScaleOffset


def _json(capsys, *args):
    assert main(["inspect", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _chunk_files(path):
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name not in ("zarr.json", ".zarray", ".zattrs"))


def test_v3_store_with_our_codecs_and_shards(tmp_path, capsys):
    root = zarr.open_group(tmp_path / "s.zarr", mode="w", zarr_format=3)
    root.attrs["title"] = "x"
    a = root.create_array("t", shape=(40, 30), chunks=(10, 30), dtype="float32", fill_value=np.nan,
                          filters=[ScaleOffset(offset=270, scale=100),
                                   CastValue(data_type="int16", scalar_map={"encode": [["NaN", -32768]],
                                                                             "decode": [[-32768, "NaN"]]})],
                          dimension_names=["y", "x"])
    a[:] = np.linspace(260, 300, 1200, dtype="float32").reshape(40, 30)
    b = root.create_array("sub/bits", shape=(64,), chunks=(8,), shards=(32,), dtype="uint16", fill_value=0,
                          filters=[BitRound(keepbits=4)], serializer=PackBits(last_bit=11))
    b[:32] = np.arange(32, dtype="uint16") * 100
    report = _json(capsys, tmp_path / "s.zarr")
    assert {g["path"] for g in report["groups"]} == {"/", "sub"} and report["problems"] == []
    t, bits = sorted(report["arrays"], key=lambda r: r["path"])[::-1]
    assert t["path"] == "t" and t["shape"] == [40, 30] and t["chunks"] == [10, 30] and t["shards"] is None
    assert t["dimension_names"] == ["y", "x"] and t["fill_value"] == "NaN"
    assert [(c["name"], c["role"]) for c in t["codecs"]] == [
        ("scale_offset", "filter"), ("cast_value", "filter"), ("bytes", "serializer"), ("zstd", "compressor")]
    assert t["codecs"][0]["words"] == "stores (x - 270) * 100; reads x / 100 + 270"
    assert t["codecs"][0]["zarr_uses"] == "numcodecs_ext.zarr3.scale_offset.ScaleOffset"
    assert "numcodecs_ext" in t["codecs"][0]["readers"]
    assert t["cf"] == {"scale_factor": pytest.approx(0.01), "add_offset": 270.0, "_FillValue": -32768}
    assert t["stored_bytes"] == _chunk_files(tmp_path / "s.zarr" / "t") and t["chunk_files"] == t["chunk_grid"] == 4
    assert t["decoded_bytes"] == 1200 * 4 and t["ratio"] == pytest.approx(4800 / t["stored_bytes"])
    if zarr.__version__.startswith("3.1."):
        assert t["needs_numcodecs_ext"] == ["cast_value", "scale_offset"]
    else:  # zarr >= 3.2 has its own
        assert t["needs_numcodecs_ext"] == []
    assert bits["path"] == "sub/bits" and bits["shards"] == [32] and bits["chunks"] == [8]
    assert bits["chunk_files"] == 1 and bits["chunk_grid"] == 2  # one shard written of two
    roles = [(c["name"], c["role"]) for c in bits["codecs"]]
    # zarr puts the filters inside the shards
    assert roles[:3] == [("sharding_indexed", "serializer"), ("bitround", "inner filter"),
                         ("packbits", "inner serializer")]
    assert "bits 0..11" in bits["codecs"][2]["words"] and "keeps 4" in bits["codecs"][1]["words"]
    assert set(bits["needs_numcodecs_ext"]) == {"bitround", "packbits"}
    text = main(["inspect", str(tmp_path / "s.zarr")]) == 0 and capsys.readouterr().out
    assert "stores (x - 270) * 100" in text and "shards (32,)" in text and "as CF attributes" in text


def test_zarr_builtins_and_v2_stores(tmp_path, capsys):
    builtin = zarr.create_array(tmp_path / "b.zarr", shape=(6, 4), chunks=(3, 4), dtype="<i4",
                                filters=[zarr.codecs.TransposeCodec(order=[1, 0])], fill_value=0)
    builtin[:] = 1
    (a,) = _json(capsys, tmp_path / "b.zarr")["arrays"]
    assert a["path"] == "/" and [c["name"] for c in a["codecs"]] == ["transpose", "bytes", "zstd"]
    assert a["needs_numcodecs_ext"] == [] and "zarr-python" in a["codecs"][0]["readers"]
    v2 = zarr.create_array(tmp_path / "v2.zarr", shape=(100,), chunks=(30,), dtype="f8", zarr_format=2,
                           filters=[numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="f8", astype="i2")],
                           compressors=numcodecs.Blosc(cname="zstd", clevel=3), fill_value=0, order="F")
    v2[:] = np.linspace(0, 20, 100)
    (a,) = _json(capsys, tmp_path / "v2.zarr")["arrays"]
    assert a["zarr_format"] == 2 and a["data_type"] == "<f8" and a["chunk_grid"] == a["chunk_files"] == 4
    assert [(c["name"], c["role"], c["readers"]) for c in a["codecs"]] == [
        ("fixedscaleoffset", "filter", ["numcodecs"]), ("blosc", "compressor", ["numcodecs"])]
    assert "wraps silently" in a["codecs"][0]["words"] and a["order"] == "F"


def test_xarray_v2_group_dimension_names_and_fsspec_url(tmp_path, capsys):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("fsspec")
    ds = xr.Dataset({"v": (("time", "x"), np.zeros((3, 2)))}, coords={"x": [1, 2]})
    ds.to_zarr(tmp_path / "x.zarr", zarr_format=2, consolidated=True)
    report = _json(capsys, f"file://{tmp_path / 'x.zarr'}")
    assert {a["path"] for a in report["arrays"]} == {"v", "x"} and report["problems"] == []


def test_broken_and_foreign_metadata_is_reported_not_raised(tmp_path, capsys):
    root = tmp_path / "bad.zarr"
    zarr.create_array(root / "ok", shape=(4,), dtype="i1", fill_value=0)[:] = 1
    zarr.create_array(root / "garbage", shape=(4,), dtype="i1", fill_value=0)
    (root / "garbage" / "zarr.json").write_text("{not json")
    foreign = zarr.create_array(root / "foreign", shape=(4,), dtype="i1", fill_value=0)
    meta = json.loads((root / "foreign" / "zarr.json").read_text())
    meta["codecs"].insert(0, {"name": "acme.magic", "configuration": {"level": 9}})
    (root / "foreign" / "zarr.json").write_text(json.dumps(meta))
    (root / "noshape").mkdir()
    (root / "noshape" / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "array"}))
    assert foreign is not None
    assert main(["inspect", str(root), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    problems = {p["path"]: p["problem"] for p in report["problems"]}
    assert problems["garbage/zarr.json"].startswith("not JSON (")
    assert problems["noshape/zarr.json"] == "shape is null: expected a list of integers >= 0"
    (f,) = [a for a in report["arrays"] if a["path"] == "foreign"]
    assert f["codecs"][0]["words"] == "level=9" and f["codecs"][0]["readers"] == []
    assert f["unreadable_here"] == ["acme.magic"]
    assert main(["inspect", str(root)]) == 1
    text = capsys.readouterr().out
    assert "NOT readable in this environment" in text and "problem at garbage/zarr.json" in text
    (tmp_path / "empty").mkdir()
    for path, message in [(tmp_path / "empty", "empty: not a zarr store (no zarr.json, .zarray or .zgroup in it)"),
                          (tmp_path / "nope", "nope: does not exist")]:
        assert main(["inspect", str(path)]) == 2
        assert message in capsys.readouterr().err
    with pytest.raises(ValueError, match="not a zarr store"):
        inspect_store(tmp_path / "empty")
