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
from tests.helpers import examples


def _json(capsys, *args):
    assert main(["inspect", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _chunk_files(path):
    return sum(p.stat().st_size for p in path.rglob("*")
               if p.is_file() and p.name not in ("zarr.json", ".zarray", ".zattrs"))


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


# -- paths that are not stores, said in words, exit status 2 -------------------------------------


def _inspect(capsys, *args):
    status = main(["inspect", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_paths_that_are_not_stores(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("hi")
    (tmp_path / "empty").mkdir()
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "dangling").symlink_to("nothere")
    cases = {
        "nonexist.zarr": "nonexist.zarr: does not exist",
        "afile": "afile: is a file, not a zarr store (a zarr store is a directory, a .zip file or a URL)",
        "afile/x.zarr": "afile/x.zarr: does not exist (a part of the path is a file, not a directory)",
        "empty": "empty: not a zarr store (no zarr.json, .zarray or .zgroup in it)",
        "loop": "loop: a loop of symbolic links",
        "dangling": "dangling: a symbolic link to 'nothere', which does not exist",
        "": "an empty path: give the path or URL of a store or file",
        "nosuchscheme://bucket/x": "nosuchscheme://bucket/x: unknown URL scheme 'nosuchscheme'",
        "zip://::missing.zip": "zip://::missing.zip: No such file or directory",
        "memory://nothing/here": "memory://nothing/here: does not exist",
    }
    for target, message in cases.items():
        status, out, err = _inspect(capsys, target)
        assert (status, out) == (2, ""), (target, err)
        assert err.startswith("numcodecs-ext inspect: ") and message in err, (target, err)
    with pytest.raises(ValueError, match="does not exist"):
        inspect_store("nonexist.zarr")


def test_url_scheme_without_its_package_names_the_package(capsys):
    import importlib.util

    from numcodecs_ext.store.targets import _PACKAGES

    missing = [(scheme, package) for scheme, package in _PACKAGES.items()
               if importlib.util.find_spec(package.split(" ")[0]) is None]
    if not missing:
        pytest.skip("every fsspec backend named in storage._PACKAGES is installed here")
    scheme, package = missing[0]
    status, _, err = _inspect(capsys, f"{scheme}://bucket/store.zarr")
    assert status == 2 and f"pip install {package.split(' ')[0]}" in err, err


def test_links_inside_a_store_are_reported_not_followed_forever(tmp_path, capsys):
    root = tmp_path / "s.zarr"
    zarr.create_array(root / "a", shape=(4,), chunks=(2,), dtype="i2", fill_value=0)[:] = 1
    zarr.open_group(root, mode="a")
    (root / "a" / "loop").symlink_to("..")  # a directory link back up: a loop
    (root / "a" / "c" / "dangling").symlink_to("nowhere")
    (root / "self").symlink_to(root)
    status, out, _ = _inspect(capsys, root, "--json")
    report = json.loads(out)
    assert status == 1 and [a["path"] for a in report["arrays"]] == ["a"]
    problems = {p["path"]: p["problem"] for p in report["problems"]}
    assert problems["a/c/dangling"] == "a dangling link"
    assert "a loop" in problems["a/loop"] and "a loop" in problems["self"]
    assert report["arrays"][0]["chunk_files"] == 2  # the chunks are counted once


def test_a_zip_store(tmp_path, capsys):
    from zarr.storage import ZipStore

    store = ZipStore(tmp_path / "s.zip", mode="w")
    zarr.open_group(store, mode="w").create_array("t", shape=(10,), chunks=(5,), dtype="f4", fill_value=0)[:] = 1
    store.close()
    status, out, _ = _inspect(capsys, tmp_path / "s.zip", "--json")
    report = json.loads(out)
    assert status == 0 and report["store"] == str(tmp_path / "s.zip")
    (a,) = report["arrays"]
    assert a["path"] == "t" and a["chunk_files"] == 2 and a["shape"] == [10]


def test_a_store_migrated_in_place_shows_both_views(tmp_path, capsys):
    src = tmp_path / "v2.zarr"
    v2 = zarr.create_array(src, shape=(100,), chunks=(30,), dtype="f8", zarr_format=2, fill_value=0,
                           filters=[numcodecs.FixedScaleOffset(offset=10, scale=100, dtype="f8", astype="i4")])
    v2[:] = np.linspace(0, 20, 100)
    assert main(["migrate", str(src), "--in-place", "-q"]) == 0
    capsys.readouterr()
    assert (src / "zarr.json").exists() and (src / ".zarray").exists()
    status, out, _ = _inspect(capsys, src, "--json")
    report = json.loads(out)
    assert status == 0 and report["both_formats"] == ["/"]
    assert [(a["path"], a["zarr_format"], a["formats"]) for a in report["arrays"]] == [
        ("/", 3, [3, 2]), ("/", 2, [3, 2])]
    v3view, v2view = report["arrays"]
    assert [c["name"] for c in v3view["codecs"]][:2] == ["scale_offset", "cast_value"]
    assert [c["name"] for c in v2view["codecs"]] == ["fixedscaleoffset", "zstd"]
    assert v3view["stored_bytes"] == v2view["stored_bytes"] > 0
    assert report["finish"] == f"numcodecs-ext migrate {src} --in-place --finish"
    status, text, _ = _inspect(capsys, src)
    assert "(zarr v3 view; the v2 view follows)" in text and "(zarr v2 view of the same array)" in text
    assert "store " + str(src) + ": 1 array(s), 0 group(s)" in text
    assert f"`numcodecs-ext migrate {src} --in-place --finish` finishes the migration" in text
    # views that disagree are a problem
    meta = json.loads((src / "zarr.json").read_text())
    meta["shape"] = [99]
    (src / "zarr.json").write_text(json.dumps(meta))
    status, out, _ = _inspect(capsys, src, "--json")
    (problem,) = json.loads(out)["problems"]
    assert status == 1 and problem == {"path": "/", "problem": "the zarr v3 and zarr v2 metadata disagree: "
                                       "shape (99,) in zarr.json, (100,) in .zarray"}


def test_leftovers_of_interrupted_writes_are_noted_not_counted(tmp_path, capsys):
    z = zarr.create_array(tmp_path / "s.zarr", shape=(4,), chunks=(2,), dtype="i2", fill_value=0)
    z[:] = 1
    (tmp_path / "s.zarr" / "c" / ".0.0123456789ab.partial").write_bytes(b"x" * 1000)
    report = inspect_store(tmp_path / "s.zarr")
    assert report["arrays"][0]["chunk_files"] == 2 and report["problems"] == []
    assert report["notes"] == ["1 temporary file(s) of an interrupted write (*.partial), e.g. "
                               "c/.0.0123456789ab.partial: not part of any array; safe to delete"]


def test_default_packbits_is_described_as_written(tmp_path, capsys):
    z = zarr.create_array(tmp_path / "m.zarr", shape=(1000,), chunks=(1000,), dtype="bool",
                          serializer=PackBits(), compressors=None, fill_value=False)
    z[:] = np.arange(1000) % 3 == 0
    (a,) = inspect_store(tmp_path / "m.zarr")["arrays"]
    assert a["stored_bytes"] == 125  # 1000 bits, no padding byte
    assert a["codecs"][0]["words"] == "packs every bit of each value, least significant first; no padding byte"
    z = zarr.create_array(tmp_path / "p.zarr", shape=(1000,), chunks=(1000,), dtype="bool",
                          serializer=PackBits(padding_encoding="first_byte"), compressors=None, fill_value=False)
    z[:] = True
    (a,) = inspect_store(tmp_path / "p.zarr")["arrays"]
    assert a["stored_bytes"] == 126
    assert a["codecs"][0]["words"].endswith("; a first byte holding the number of padding bits")


# -- metadata of every wrong shape: described or reported, never raised ---------------------------

_V3_ARRAY = {"zarr_format": 3, "node_type": "array", "shape": [6, 4], "data_type": "float32",
             "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 4]}},
             "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
             "fill_value": "NaN", "attributes": {}, "dimension_names": ["y", "x"],
             "codecs": [{"name": "scale_offset", "configuration": {"offset": 1, "scale": 10}},
                        {"name": "cast_value", "configuration": {"data_type": "int16"}},
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 4], "codecs": [
                            {"name": "bytes"}], "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}]}
_V2_ARRAY = {"zarr_format": 2, "shape": [6, 4], "chunks": [3, 4], "dtype": "<f4", "fill_value": 0.0,
             "order": "C", "filters": [{"id": "fixedscaleoffset", "offset": 1, "scale": 10, "dtype": "<f4",
                                        "astype": "<i2"}], "compressor": {"id": "zstd", "level": 1},
             "dimension_separator": "."}
_WRONG = [None, 5, -1, 2**70, 1.5, float("nan"), "x", "", True, [], [None], [-3], [1, "a"], {}, {"name": 5},
          [[1]], {"a": {"b": []}}, [{}], [{"name": None}], [{"id": 5}], "0x7fc00000", ["y", 5], [2**64]]


def _check_survives(tmp_path, document, meta) -> dict:
    import shutil

    root = tmp_path / "fz.zarr"
    shutil.rmtree(root, ignore_errors=True)
    (root / "c").mkdir(parents=True)
    (root / "c" / "0").write_bytes(b"\0" * 8)
    (root / document).write_text(json.dumps(meta))
    report = inspect_store(root)  # never raises on metadata
    from numcodecs_ext.tools.inspect import format_report

    format_report(report)
    json.dumps(report, default=str)
    return report


@pytest.mark.parametrize(("document", "valid"), [("zarr.json", _V3_ARRAY), (".zarray", _V2_ARRAY)])
def test_every_field_of_wrong_type_is_reported_never_raised(tmp_path, document, valid):
    assert _check_survives(tmp_path, document, valid)["problems"] == []
    for key in valid:
        for wrong in _WRONG:
            meta = dict(valid, **{key: wrong})
            report = _check_survives(tmp_path, document, meta)
            if key in ("shape", "data_type", "dtype", "chunks", "codecs", "node_type", "dimension_names",
                       "chunk_grid", "chunk_key_encoding", "order") and wrong in (5, "x", {"name": 5}, 2**70):
                if key in ("data_type", "dtype") and wrong == "x":  # a name: maybe a type known elsewhere
                    assert report["arrays"][0]["unreadable_here"][0] == "data type x"
                else:
                    assert report["problems"], (key, wrong)
        meta = {k: v for k, v in valid.items() if k != key}  # the field missing
        _check_survives(tmp_path, document, meta)
    for wrong in _WRONG:  # inside the codecs, the grid, the sharding configuration
        for path in (("codecs", 0, "configuration"), ("codecs", 3, "configuration", "chunk_shape"),
                     ("codecs", 3, "configuration", "codecs"), ("codecs", 3, "configuration", "index_codecs"),
                     ("chunk_grid", "configuration"), ("chunk_grid", "configuration", "chunk_shape"),
                     ("filters", 0, "scale"), ("filters",), ("compressor",)):
            meta = json.loads(json.dumps(valid))
            target = meta
            try:
                for step in path[:-1]:
                    target = target[step]
                target[path[-1]] = wrong
            except (KeyError, IndexError, TypeError):
                continue
            _check_survives(tmp_path, document, meta)


def test_dimension_names_of_the_wrong_type(tmp_path, capsys):
    meta = dict(_V3_ARRAY, dimension_names=5)
    report = _check_survives(tmp_path, "zarr.json", meta)
    assert report["problems"] == [{"path": "zarr.json", "problem": "dimension_names is 5: expected a list of names "
                                                                  "(strings or null)"}]
    (a,) = report["arrays"]
    assert a["dimension_names"] is None and a["shape"] == [6, 4]  # the rest is still described
    assert main(["inspect", str(tmp_path / "fz.zarr")]) == 1
    assert "problem at zarr.json: dimension_names is 5" in capsys.readouterr().out


def test_documents_that_are_not_json_objects(tmp_path):
    for text in ("", "[]", "5", "null", '"zarr"', "{" * 100000, "\xff\xfe", '{"zarr_format": 3}',
                 '{"zarr_format": 3, "node_type": "array"}', '{"zarr_format": 2, "node_type": "group"}'):
        root = tmp_path / "t.zarr"
        root.mkdir(exist_ok=True)
        (root / "zarr.json").write_bytes(text.encode("utf-8", "surrogateescape"))
        report = inspect_store(root)
        assert report["problems"] and report["problems"][0]["path"] == "zarr.json", text[:20]


def _json_values():
    from hypothesis import strategies as st

    scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=8)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.sampled_from(["name", "configuration", "id", "chunk_shape", "codecs",
                                                           "separator", "data_type", "x"]), inner, max_size=4),
                        max_leaves=12)


def test_random_metadata_is_described_or_reported(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    @settings(max_examples=examples(300, 40), deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.sampled_from([("zarr.json", _V3_ARRAY), (".zarray", _V2_ARRAY)]), st.data())
    def check(case, data):
        document, valid = case
        meta = json.loads(json.dumps(valid))
        for _ in range(data.draw(st.integers(1, 3))):  # replace one to three values anywhere
            target, key = meta, None
            while True:
                keys = list(target) if isinstance(target, dict) else list(range(len(target)))
                if not keys:
                    break
                key = data.draw(st.sampled_from(keys))
                if not isinstance(target[key], (dict, list)) or not target[key] or data.draw(st.booleans()):
                    break
                target = target[key]
            if key is not None:
                target[key] = data.draw(_json_values())
        _check_survives(tmp_path, document, meta)

    check()


def test_an_object_store_url(capsys):
    """memory:// stands in for s3:// (fsspec's own in-memory filesystem): listing and the metadata
    read in one batch, broken documents reported per path."""
    import fsspec
    from zarr.storage import FsspecStore

    g = zarr.open_group("memory://inspect-test.zarr", mode="w")
    for i in range(3):
        g.create_array(f"a{i}", shape=(10,), chunks=(5,), dtype="f4", fill_value=0)[:] = i + 1
    fsspec.filesystem("memory").pipe("/inspect-test.zarr/bad/zarr.json", b"{not json")
    report = inspect_store("memory://inspect-test.zarr")
    assert [a["path"] for a in report["arrays"]] == ["a0", "a1", "a2"]
    assert all(a["chunk_files"] == 2 for a in report["arrays"])
    assert [p["path"] for p in report["problems"]] == ["bad/zarr.json"]
    assert len(inspect_store(FsspecStore.from_url("memory://inspect-test.zarr"))["arrays"]) == 3
    fsspec.filesystem("memory").rm("/inspect-test.zarr", recursive=True)


# -- over http(s), where a listing gives no sizes (review3) ---------------------------------------


@pytest.fixture
def http_root(tmp_path):
    """A folder served over http on 127.0.0.1 (Python's http.server: index pages without sizes)."""
    import functools
    import http.server
    import threading

    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_inspect_over_http_says_sizes_are_unknown(http_root, capsys):
    """An http index page lists names, not sizes: inspect says the stored size is unknown (null
    in JSON, "size unknown" in words), never 0 B; the chunk files are still counted."""
    import shutil
    from pathlib import Path

    root, url = http_root
    shutil.copytree(Path(__file__).resolve().parents[2] / "fixtures" / "zarr" / "scale_offset_cast_value_v2.zarr",
                    root / "s.zarr")
    local = inspect_store(str(root / "s.zarr"))
    remote = inspect_store(f"{url}/s.zarr")
    for here, there in zip(local["arrays"], remote["arrays"]):
        assert here["stored_bytes"] > 0 and there["stored_bytes"] is None and there["ratio"] is None
        assert there["chunk_files"] == here["chunk_files"] > 0
    assert main(["inspect", f"{url}/s.zarr", "-q"]) == 0
    out = capsys.readouterr().out
    assert "size unknown" in out and "stored 0 B" not in out, out
