"""numcodecs-ext normalize: proves every chunk before it rewrites, array by array."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.migrate import normalize
from numcodecs_ext.store.errors import UsageError

from tests.helpers.migrate_helpers import chunk_files, hashes, quiet, same

with quiet():
    try:
        from zarr.codecs.numcodecs import AsType as _AsType  # zarr >= 3.2
        from zarr.codecs.numcodecs import FixedScaleOffset as _FixedScaleOffset
    except ImportError:
        from numcodecs.zarr3 import AsType as _AsType
        from numcodecs.zarr3 import FixedScaleOffset as _FixedScaleOffset


def AsType(**kw):  # noqa: N802 - zarr's adapter class, made without its warning
    with quiet():
        return _AsType(**kw)


def FixedScaleOffset(**kw):  # noqa: N802
    with quiet():
        return _FixedScaleOffset(**kw)


def _adapter_array(path: Path, values: np.ndarray, chunks: int, filters: list, fill_value=0, **kw) -> np.ndarray:
    with quiet():
        z = zarr.create_array(str(path), shape=values.shape, chunks=(chunks,) + values.shape[1:],
                              dtype=values.dtype, fill_value=fill_value, filters=filters, **kw)
        z[...] = values
        return z[...]


def _read(path: Path) -> np.ndarray:
    with quiet():
        return zarr.open_array(str(path), mode="r")[...]


def test_normalize_rewrites_adapter_codecs_as_spec_codecs(tmp_path: Path, capsys) -> None:
    path = tmp_path / "n.zarr"
    codecs = [{"name": "numcodecs.fixedscaleoffset",
               "configuration": {"offset": 270, "scale": 100, "dtype": "<f4", "astype": "<u2"}},
              {"name": "bytes", "configuration": {"endian": "little"}}]
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 65535, 48, dtype="<u2")  # (the last chunk is whole on disk)
    path.mkdir()
    (path / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [40], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0, "codecs": codecs, "attributes": {}}))
    (path / "c").mkdir()
    for i in range(3):
        (path / "c" / str(i)).write_bytes(codes[16 * i: 16 * (i + 1)].tobytes())
    before = _read(path)
    chunks = chunk_files(path)
    assert main(["normalize", str(path), "--dry-run", "-q"]) == 0
    assert "1 array would change" in capsys.readouterr().out
    assert json.loads((path / "zarr.json").read_text())["codecs"] == codecs
    report = normalize(path)
    assert [c["name"] for c in report.changed[0].after] == ["cast_value", "scale_offset", "cast_value", "bytes"]
    assert chunk_files(path) == chunks
    assert same(_read(path), before)
    assert normalize(path).arrays == []  # nothing left to do
    assert main(["normalize", str(tmp_path)]) == 2
    assert "not a zarr v3 store" in capsys.readouterr().err
    assert main(["normalize", str(tmp_path / "nonexist.zarr")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_astype_whose_later_chunks_hold_wrapped_codes_is_left_as_it_was(tmp_path: Path, capsys) -> None:
    """AsType(u1 -> i1): numcodecs stored 132 as -124. The first chunk holds small values only;
    a probe of it passes, the later chunks are unreadable without wrapping."""
    path = tmp_path / "a.zarr"
    values = (np.arange(40) * 6).astype("u1")
    before = _adapter_array(path, values, 10, [AsType(encode_dtype="|i1", decode_dtype="|u1")])
    files = hashes(path)
    assert main(["normalize", str(path)]) == 1
    captured = capsys.readouterr()
    assert "left as it was" in captured.out and "1 array left as it was" in captured.err
    assert "at [20:30]" in captured.err and "--wrap" in captured.err
    assert "np." not in captured.err + captured.out and "Traceback" not in captured.err
    assert hashes(path) == files and same(_read(path), before)
    # with numcodecs' wrapping kept, every chunk reads the same: normalized
    assert main(["normalize", str(path), "--wrap", "-q"]) == 0
    assert same(_read(path), before)
    assert json.loads((path / "zarr.json").read_text())["codecs"][0] == {
        "name": "cast_value", "configuration": {"data_type": "int8", "out_of_range": "wrap"}}


@pytest.mark.parametrize("constant", ["first", "none"])
def test_fixedscaleoffset_proven_on_every_chunk(tmp_path: Path, constant: str) -> None:
    """float32 FixedScaleOffset: with --match encode the spec chain decodes 15-18 % of codes an
    ulp away from numcodecs. A constant first chunk happens to agree; the others do not."""
    path = tmp_path / "f.zarr"
    rng = np.random.default_rng(7)
    values = (270 + rng.random(1000) * 60).astype("f4")
    if constant == "first":
        values[:100] = 280.0
    before = _adapter_array(path, values, 100, [FixedScaleOffset(offset=270, scale=100, dtype="<f4", astype="<u2")])
    doc = (path / "zarr.json").read_bytes()
    report = normalize(path, match="encode")
    assert len(report.left) == 1 and not report.changed
    assert "values differ" in report.left[0].left and "--match decode" in report.left[0].left
    assert (path / "zarr.json").read_bytes() == doc and same(_read(path), before)
    assert normalize(path).changed  # numcodecs' decoding: every chunk the same
    assert same(_read(path), before)


def test_per_array_some_normalized_some_left(tmp_path: Path, capsys) -> None:
    root = tmp_path / "g.zarr"
    with quiet():
        zarr.open_group(str(root), mode="w")
    good = _adapter_array(root / "good", np.linspace(250, 300, 30).astype("f8"), 10,
                          [FixedScaleOffset(offset=250, scale=100, dtype="<f8", astype="<u2")])
    bad = _adapter_array(root / "bad", (np.arange(40) * 6).astype("u1"), 10,
                         [AsType(encode_dtype="|i1", decode_dtype="|u1")])
    bad_doc = (root / "bad" / "zarr.json").read_bytes()
    assert main(["normalize", str(root), "-q"]) == 1
    out = capsys.readouterr()
    assert "1 array changed" in out.out and "bad:" in out.err
    assert json.loads((root / "good" / "zarr.json").read_text())["codecs"][0]["name"] == "scale_offset"
    assert (root / "bad" / "zarr.json").read_bytes() == bad_doc
    assert same(_read(root / "good"), good) and same(_read(root / "bad"), bad)


def test_nan_payloads_and_signed_zeros_count(tmp_path: Path) -> None:
    """Values are compared bit for bit: an AsType float64 -> float32 keeps every NaN payload."""
    path = tmp_path / "p.zarr"
    values = np.array([1.5, -0.0, 0.0, np.nan, -np.inf] * 4)
    payload = np.array([0x7FF8000000000001], "<u8").view("<f8")[0]
    values[3] = payload
    before = _adapter_array(path, values, 5, [AsType(encode_dtype="<f8", decode_dtype="<f8")])
    assert normalize(path).changed
    assert same(_read(path), before)


def test_sharded_arrays_and_consolidated_metadata(tmp_path: Path) -> None:
    root = tmp_path / "s.zarr"
    with quiet():
        g = zarr.open_group(str(root), mode="w")
        z = g.create_array("x", shape=(64,), chunks=(8,), shards=(32,), dtype="f8", fill_value=250.0,
                           filters=[FixedScaleOffset(offset=250, scale=10, dtype="<f8", astype="<u2")])
        z[:] = np.linspace(250, 400, 64)
        before = z[:]
        zarr.consolidate_metadata(str(root))
    report = normalize(root)
    assert [a.path for a in report.changed] == ["x"]
    inner = json.loads((root / "x" / "zarr.json").read_text())["codecs"][0]["configuration"]["codecs"]
    assert [c["name"] for c in inner][:2] == ["scale_offset", "cast_value"]
    consolidated = json.loads((root / "zarr.json").read_text())["consolidated_metadata"]["metadata"]["x"]
    assert consolidated["codecs"] == json.loads((root / "x" / "zarr.json").read_text())["codecs"]
    with quiet():
        assert same(zarr.open_group(str(root), mode="r")["x"][:], before)


def test_nan_code_repairs_a_read_only_array(tmp_path: Path, capsys) -> None:
    """An array migrated without a code for NaN reads fine and refuses writes; normalize
    --nan-code gives NaN a free code, proven on every chunk."""
    path = tmp_path / "r.zarr"
    values = np.linspace(250, 300, 40).astype("f4")
    values[5] = np.nan
    meta = {"zarr_format": 3, "node_type": "array", "shape": [40], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "NaN", "codecs": [
                {"name": "cast_value", "configuration": {"data_type": "float64", "out_of_range": "clamp"}},
                {"name": "scale_offset", "configuration": {"offset": 250, "scale": 100}},
                {"name": "cast_value", "configuration": {"data_type": "uint16", "scalar_map": {
                    "encode": [["NaN", 7]], "decode": [[7, "NaN"]]}}},
                {"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {}}
    path.mkdir()
    (path / "zarr.json").write_text(json.dumps(meta))
    with quiet():
        zarr.open_array(str(path), mode="r+")[:] = values  # NaN as code 7
    meta["codecs"][2]["configuration"].pop("scalar_map")  # ... then lost: code 7 now reads 250.07
    (path / "zarr.json").write_text(json.dumps(meta))
    before = _read(path)
    assert np.float32(before[5]) == np.float32(250.07)
    with pytest.raises(ValueError):
        with quiet():
            zarr.open_array(str(path), mode="r+")[0] = 251.0
    assert main(["normalize", str(path), "-q"]) == 0
    assert "read-only" in capsys.readouterr().err
    with pytest.raises(UsageError, match="holds the code 7 .* 65535 is free"):
        normalize(path, nan_code=7)
    report = normalize(path, nan_code="auto")
    assert report.changed and "code 65535" in report.changed[0].notes[0]
    assert same(_read(path), before)
    with quiet():
        a = zarr.open_array(str(path), mode="r+")
        a[0] = 251.0
        a[1] = np.nan
        assert a[0] == np.float32(251.0) and np.isnan(a[1]) and a[5] == before[5]


def _consolidated_store(root: Path) -> dict[str, np.ndarray]:
    with quiet():
        g = zarr.open_group(str(root), mode="w")
        g.create_group("sub")
        out = {}
        for path, offset in (("a", 250), ("sub/b", 260)):
            out[path] = _adapter_array(root / path, np.linspace(offset, offset + 50, 40).astype("f4"), 8,
                                       [FixedScaleOffset(offset=offset, scale=100, dtype="<f4", astype="<u2")],
                                       fill_value=float("nan"))
        g.attrs["title"] = "t"
        zarr.consolidate_metadata(str(root))
    return out


def _consolidated_codecs(root: Path) -> dict[str, list[str]]:
    entries = json.loads((root / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    return {k: [c["name"] for c in v["codecs"]] for k, v in entries.items() if v.get("node_type") == "array"}


def test_an_interrupted_normalize_brings_the_consolidated_metadata_up_to_date(tmp_path: Path, monkeypatch) -> None:
    """Arrays are written first, the groups' consolidated metadata after them: a run stopped
    between the two left consolidated metadata naming the old codecs, and running it again
    found nothing to do, so xarray and open_consolidated kept reading the old codecs."""
    from numcodecs_ext.store.storage import Location

    root = tmp_path / "c.zarr"
    want = _consolidated_store(root)
    real, count = Location.write, {"n": 0}

    class Interrupt(BaseException):
        pass

    def write(self, key, data):
        count["n"] += 1
        if count["n"] > 2:  # both arrays written, the root's consolidated metadata not
            raise Interrupt
        return real(self, key, data)

    monkeypatch.setattr(Location, "write", write)
    with pytest.raises(Interrupt):
        normalize(root, nan_code="auto")
    monkeypatch.undo()
    assert all(c[0] == "numcodecs.fixedscaleoffset" for c in _consolidated_codecs(root).values())
    report = normalize(root, nan_code="auto")
    assert not report.left
    assert _consolidated_codecs(root) == {"a": ["cast_value", "scale_offset", "cast_value", "bytes", "zstd"],
                                          "sub/b": ["cast_value", "scale_offset", "cast_value", "bytes", "zstd"]}
    entries = json.loads((root / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    for path in want:
        assert entries[path] == json.loads((root / path / "zarr.json").read_text())
    with quiet():
        g = zarr.open_consolidated(str(root), mode="r+")
        for path, values in want.items():
            assert same(g[path][:], values)
            g[path][0] = np.nan  # writable through the consolidated metadata too (NaN has its code)


def test_one_array_without_a_free_code_is_left_and_the_others_are_normalized(tmp_path: Path, capsys) -> None:
    root = tmp_path / "g.zarr"
    with quiet():
        zarr.open_group(str(root), mode="w")
    full = np.arange(256, dtype="f4")
    _adapter_array(root / "full", np.concatenate([full, np.full(44, np.nan, "f4")]), 50,
                   [FixedScaleOffset(offset=0, scale=1, dtype="<f4", astype="|u1")], fill_value=float("nan"))
    good = _adapter_array(root / "good", np.linspace(250, 300, 40).astype("f4"), 8,
                          [FixedScaleOffset(offset=250, scale=100, dtype="<f4", astype="<u2")],
                          fill_value=float("nan"))
    full_doc = (root / "full" / "zarr.json").read_bytes()
    assert main(["normalize", str(root), "--nan-code", "auto", "-q"]) == 1
    captured = capsys.readouterr()
    assert "1 array changed" in captured.out
    assert "full: " in captured.err and "none is free for NaN" in captured.err
    assert (root / "full" / "zarr.json").read_bytes() == full_doc
    meta = json.loads((root / "good" / "zarr.json").read_text())
    assert meta["codecs"][2]["configuration"]["scalar_map"] == {"encode": [["NaN", 65535]],
                                                                "decode": [[65535, "NaN"]]}
    assert same(_read(root / "good"), good)


def test_a_sharded_array_gets_its_nan_code_too(tmp_path: Path) -> None:
    """The codes of a sharded array are read through the sharding codec: its inner chain cut
    down to the stored integers (they could not be told apart, and the array was left)."""
    root = tmp_path / "s.zarr"
    values = np.linspace(250, 300, 64).astype("f4")
    values[3] = np.nan
    with quiet():
        z = zarr.create_array(str(root), shape=(64,), chunks=(8,), shards=(32,), dtype="f4",
                              fill_value=float("nan"),
                              filters=[FixedScaleOffset(offset=250, scale=100, dtype="<f4", astype="<u2")])
        z[:40] = values[:40]  # NaN written as numcodecs casts it (code 0 here), the rest missing
        before = z[:]
    codes = np.round((values[36:40] - 250) * 100).astype("u2")  # what the last shard holds
    doc = (root / "zarr.json").read_bytes()
    with pytest.raises(UsageError, match=f"holds the code {codes[-1]} in its stored chunks"):
        normalize(root, nan_code=int(codes[-1]))  # the scan reads every shard
    assert (root / "zarr.json").read_bytes() == doc
    report = normalize(root, nan_code="auto")
    assert not report.left, report.left[0].left if report.left else None
    assert "code 65535" in report.changed[0].notes[0]
    inner = json.loads((root / "zarr.json").read_text())["codecs"][0]["configuration"]["codecs"]
    assert inner[2]["configuration"]["scalar_map"] == {"encode": [["NaN", 65535]], "decode": [[65535, "NaN"]]}
    assert same(_read(root), before)
    with quiet():
        a = zarr.open_array(str(root), mode="r+")
        a[50] = np.nan
        a[51] = 260.0
        assert np.isnan(a[50]) and a[51] == np.float32(260.0) and same(a[:40], before[:40])
