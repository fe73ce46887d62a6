"""Stores as other producers write them (fixtures/producers/): numcodecs_ext reads them exactly,
writes the same chunks from the same metadata, and ``numcodecs-ext inspect`` explains them."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr

import numcodecs_ext  # noqa: F401 - our codecs are zarr's defaults for these names
from numcodecs_ext.tools.deviations import find_deviations
from numcodecs_ext.tools.inspect import format_report, inspect_store

# zarr 3.1 warns whenever one of its numcodecs.* adapters (VirtualiZarr's shuffle, zlib) is built
pytestmark = pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3")
ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "producers"
ARRAYS = {  # fixture -> path of the array inside its store
    "virtualizarr-hdf-cf": "",
    "eopf-s2-geozarr": "measurements/reflectance/r10m/b02",
    "spec-uint16-fill-map": "",
}


def _open(name: str) -> zarr.Array:
    return zarr.open_array(str(ROOT / name / "store.zarr"), path=ARRAYS[name], mode="r")


def _meta(name: str) -> dict:
    return json.loads((ROOT / name / "store.zarr" / ARRAYS[name] / "zarr.json").read_text())


def test_every_fixture_has_its_provenance() -> None:
    assert sorted(p.name for p in ROOT.iterdir() if p.is_dir()) == sorted(ARRAYS)
    for name in ARRAYS:
        readme = (ROOT / name / "README.md").read_text()
        assert "commit" in readme and (ROOT / name / "make.py").is_file()


@pytest.mark.parametrize("name", list(ARRAYS))
def test_ours_reads_it_exactly(name: str) -> None:
    a = _open(name)
    expected = np.load(ROOT / name / "expected.npy")
    got = a[...]
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
    box = tuple(slice(n // 3, n) for n in a.shape)  # ends inside edge chunks (and edge shards)
    assert a[box].tobytes() == expected[box].tobytes()
    for codec in a.metadata.codecs:  # ours did the work, not zarr's built-ins
        inner = getattr(codec, "codecs", (codec,))
        names = {type(c).__module__.split(".")[0] for c in inner
                 if type(c).__name__ in ("ScaleOffset", "CastValue")}
        assert names <= {"numcodecs_ext"}


def _payloads(store: Path, meta: dict) -> dict[str, bytes]:
    """Every chunk (inner chunk of shards) before its bytes -> bytes codecs."""
    codecs, sharded = meta["codecs"], meta["codecs"][0]["name"] == "sharding_indexed"
    if sharded:
        config = meta["codecs"][0]["configuration"]
        codecs = config["codecs"]
        n = np.prod(np.array(meta["chunk_grid"]["configuration"]["chunk_shape"]) // config["chunk_shape"])
    out = {}
    for path in sorted(p for p in store.rglob("*") if p.is_file() and p.name != "zarr.json"):
        raw = path.read_bytes()
        pieces = {path.relative_to(store).as_posix(): raw}
        if sharded:
            index = np.frombuffer(raw[-(16 * int(n) + 4):-4], "<u8").reshape(-1, 2)
            pieces = {f"{path.relative_to(store).as_posix()}#{i}": raw[int(o):int(o + size)]
                      for i, (o, size) in enumerate(index) if o != 2**64 - 1}
        for key, piece in pieces.items():
            for c in reversed([c for c in codecs if c["name"] not in ("scale_offset", "cast_value", "bytes")]):
                if c["name"] == "numcodecs.zlib":
                    piece = zlib.decompress(piece)
                elif c["name"] == "numcodecs.shuffle":
                    piece = bytes(numcodecs.Shuffle(**c["configuration"]).decode(piece))
                elif c["name"] == "blosc":
                    piece = bytes(numcodecs.Blosc().decode(piece))
                else:
                    raise AssertionError(f"no decoder here for {c['name']}")
            out[key] = piece
    return out


@pytest.mark.parametrize("name", list(ARRAYS))
def test_ours_writes_the_same_chunks(name: str, tmp_path: Path) -> None:
    """The same values written by numcodecs_ext from the producer's own zarr.json give the same
    chunks (compressed ones compared after their compressor, whose bytes depend on its version)."""
    meta = _meta(name)
    store = tmp_path / "ours.zarr"
    store.mkdir()
    (store / "zarr.json").write_text(json.dumps(meta))
    zarr.open_array(str(store), mode="r+")[...] = np.load(ROOT / name / "expected.npy")
    theirs = _payloads(ROOT / name / "store.zarr" / ARRAYS[name], meta)
    mine = _payloads(store, meta)
    assert mine == theirs
    if not any(c["name"] not in ("scale_offset", "cast_value", "bytes") for c in meta["codecs"]):
        assert {k: (store / k).read_bytes() for k in theirs} == {
            k: (ROOT / name / "store.zarr" / k).read_bytes() for k in theirs}


def _report(name: str) -> tuple[dict, str]:
    report = inspect_store(ROOT / name / "store.zarr")
    (array,) = [a for a in report["arrays"] if a["path"] == (ARRAYS[name] or "/")]
    assert report["problems"] == []
    return array, format_report(report)


def test_inspect_explains_virtualizarr() -> None:
    array, text = _report("virtualizarr-hdf-cf")
    assert [c["name"] for c in array["codecs"]] == [
        "scale_offset", "cast_value", "bytes", "numcodecs.shuffle", "numcodecs.zlib"]
    assert array["cf"] == {"scale_factor": pytest.approx(0.01), "add_offset": 273.15}
    assert "stores (x - 273.15) * 100.0; reads x / 100.0 + 273.15" in text
    assert "stored as int16, rounding nearest-even, out of range: an error" in text
    assert "as CF attributes: scale_factor=0.01, add_offset=273.15" in text
    assert array["reader_warnings"] == [] and "reader warning" not in text
    assert array["chunk_files"] == array["chunk_grid"] == 6


def test_inspect_explains_eopf() -> None:
    array, text = _report("eopf-s2-geozarr")
    assert array["chunks"] == [6, 6] and array["shards"] == [30, 18] and array["fill_value"] == "NaN"
    assert [(c["name"], c["role"]) for c in array["codecs"][:3]] == [
        ("sharding_indexed", "serializer"), ("scale_offset", "inner filter"), ("cast_value", "inner filter")]
    assert "stores (x + 0.1) * 10000.0; reads x / 10000.0 - 0.1" in text
    assert "stored as uint16, rounding nearest-even, out of range: an error, NaN stored as 0, 0 read as NaN" in text
    assert "chunks (6, 6) in shards (30, 18)" in text
    assert array["reader_warnings"] == []


def test_inspect_explains_the_spec_example() -> None:
    array, text = _report("spec-uint16-fill-map")
    assert [c["name"] for c in array["codecs"]] == ["cast_value", "scale_offset", "cast_value", "bytes"]
    assert "0 stored as 1000, 1000 read as 0" in text and "stores x - 1000; reads x + 1000" in text
    assert "stored as uint8" in text
    (w,) = array["reader_warnings"]  # zarrita.js <= 0.7.5 casts the unscaled fill: it cannot open it
    assert w.startswith("zarrita.js <= 0.7.5, fill value 0 (reaching this cast_value as 1000 instead of 0)")


def test_the_spec_example_as_printed_meets_the_short_hand_deviation() -> None:
    """The README writes the serializer as "bytes": readers that follow zarr v3.0 (zarr-python up to
    3.4.2 at least) refuse that, and deviations.py says so."""
    meta = _meta("spec-uint16-fill-map")
    meta["codecs"][-1] = "bytes"
    assert [f.deviation.id for f in find_deviations(meta)] == ["codec-name-shorthand", "zarrita-fill-not-scaled"]


def test_producers_layouts_survive_a_copy(tmp_path: Path) -> None:
    """A store copied elsewhere (as users do) still reads the same: nothing depends on its path."""
    shutil.copytree(ROOT / "eopf-s2-geozarr" / "store.zarr", tmp_path / "s.zarr")
    got = zarr.open_array(str(tmp_path / "s.zarr"), path=ARRAYS["eopf-s2-geozarr"], mode="r")[...]
    assert got.tobytes() == np.load(ROOT / "eopf-s2-geozarr" / "expected.npy").tobytes()
