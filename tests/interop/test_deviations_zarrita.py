"""zarrita.js's known deviations, pinned so that they flip (as tests/interop/test_deviations_others.py does
for the Python implementations), and the rules by which deviations.py finds them in metadata.

Each pin reads a store with zarrita.js (through tests/interop/interop_zarrita.mjs under node) and asserts
what it does TODAY where it departs from the spec sentence quoted in the docstring; where zarr-python
is installed, its built-in codecs read the same store as the spec says (and as numcodecs_ext does).
When zarrita.js is fixed, or a version outside the range deviations.py lists is installed, the pin
fails: update numcodecs_ext/tools/deviations.py and docs/interop.md.

The pins need node and ZARRITA_DIR, the folder where .ci/interop-zarrita/ was installed with
``npm ci``; the interop job in .ci/run does that and sets NUMCODECS_EXT_REQUIRE_OTHERS=1, so there
a missing node or zarrita.js fails instead of skipping. No numcodecs_ext import here: that job
runs this file where numcodecs_ext is not installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import interop_others as io
from test_deviations_others import _case, _store, listed, need, skip, zarr_builtins

DEV = io._deviations()


@pytest.fixture(scope="module")
def zarrita() -> Iterator[io.ZarritaJs]:
    try:
        impl = io.ZarritaJs()
    except ImportError as exc:
        skip(f"zarrita.js: {exc} (the interop job in .ci/run installs it)")
    yield impl
    impl.close()


@contextlib.contextmanager
def refused_by_zarrita(pattern: str) -> Iterator[None]:
    with pytest.raises(io.ZarritaError, match=pattern):
        yield


def builtins_read(store: Path) -> np.ndarray | None:
    """The store as zarr-python's built-in codecs read it (None where zarr < 3.2 has no
    scale_offset or cast_value: the pin then rests on zarrita.js's side alone)."""
    need("zarr")
    if importlib.util.find_spec("zarr.codecs.scale_offset") is None \
            or importlib.util.find_spec("cast_value_rs") is None:
        return None
    with zarr_builtins() as zarr:
        return zarr.open_array(str(store), mode="r")[...]


# --- the pins ---------------------------------------------------------------------------------


def test_zarrita_scale_offset_float32_in_float64(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """Spec (scale_offset): "the arithmetic semantics of the input array's data type are used"
    (and offset and scale are scalars of that type). zarrita.js decodes float32 as
    float32(e / 0.1 + 5) in float64 with the float64 0.1: the stored 2.0662989616394043 reads as
    25.66299057006836 instead of float32 arithmetic's 25.662988662719727 (one unit in the last place)."""
    case = _case("float32", (2,), (2,), 5.0, filters=(io._c("scale_offset", offset=5, scale=0.1),))
    stored = np.array([2.0662989616394043, 1.5], np.float32)
    store = _store(tmp_path / "a.zarr", case, {"c/0": stored.tobytes()})
    spec = stored / np.float32(0.1) + np.float32(5)
    assert spec.tolist() == [25.662988662719727, 20.0]
    got = zarrita.read(store, case, None)
    assert got.dtype == np.float32
    assert got.tolist() == [25.66299057006836, 20.0]  # float32(2.0662989616394043 / 0.1 + 5.0)
    theirs = builtins_read(store)
    if theirs is not None:
        assert theirs.tolist() == spec.tolist()
    # what convert writes for CF-packed float32 (offset float32(273.15), scale 100, int16): where
    # a value and the offset cancel, the difference is more than one unit in the last place
    packed = _case("float32", (2,), (2,), 0.0, filters=(
        io._c("scale_offset", offset=float(np.float32(273.15)), scale=100), io._c("cast_value", data_type="int16")))
    store = _store(tmp_path / "b.zarr", packed, {"c/0": np.array([-27315, 0], "<i2").tobytes()})
    got = zarrita.read(store, packed, None)
    assert got.tolist() == [float(np.float32(-27315 / 100 + float(np.float32(273.15)))), float(np.float32(273.15))]
    assert got[0] == np.float32(-6.1035156e-06)  # float32 arithmetic: -273.15f + 273.15f = 0
    theirs = builtins_read(store)
    if theirs is not None:
        assert theirs.tolist() == [0.0, float(np.float32(273.15))]
    listed("zarrita-scale-offset-float64", zarrita)


def test_zarrita_fill_value_skips_scale_offset(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """Spec: the fill value of the encoded representation is the array's fill value encoded by
    each codec in turn. The spec's own uint16 range-reduction example (fill value 1000,
    scale_offset offset 1000, cast_value uint8): zarrita.js casts the unscaled 1000 to uint8 and
    cannot open the array ("Value 1000 out of range [0, 255]"); the scaled fill is 0."""
    case = _case("uint16", (4,), (2,), 1000, filters=(io._c("scale_offset", offset=1000),
                                                      io._c("cast_value", data_type="uint8")))
    store = _store(tmp_path / "a.zarr", case, {"c/0": bytes([0, 255])})  # the second chunk: fill
    with refused_by_zarrita(r"Value 1000 out of range \[0, 255\]"):
        zarrita.read(store, case, None)
    theirs = builtins_read(store)
    if theirs is not None:
        assert theirs.tolist() == [1000, 1255, 1000, 1000]
    # in shards too: zarrita.js gives the inner codecs the array's fill value, unscaled as well
    # (one shard of two inner chunks, the second all fill; an index without checksum, by hand)
    meta = case.metadata() | {"shape": [8], "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}}}
    meta["codecs"] = [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4], "codecs": case.codecs(), "index_codecs": [io.BYTES], "index_location": "end"}}]
    index = np.array([[0, 4], [2**64 - 1, 2**64 - 1]], "<u8").tobytes()
    (tmp_path / "b.zarr" / "c").mkdir(parents=True)
    (tmp_path / "b.zarr" / "zarr.json").write_text(json.dumps(meta))
    (tmp_path / "b.zarr" / "c" / "0").write_bytes(bytes([0, 1, 2, 3]) + index)
    with refused_by_zarrita(r"Value 1000 out of range \[0, 255\]"):
        zarrita.read(tmp_path / "b.zarr", case, None)
    # zarr 3.4.2's built-ins cannot open this one at all (its sharding codec checks the inner
    # codecs with the fill value 0, which scale_offset cannot encode in uint16); numcodecs_ext can
    if importlib.util.find_spec("numcodecs_ext") is not None:
        import zarr
        from zarr.registry import fully_qualified_name

        ours = importlib.import_module("numcodecs_ext.zarr3")
        chosen = {**zarr.config.get("codecs", {}), "scale_offset": fully_qualified_name(ours.ScaleOffset),
                  "cast_value": fully_qualified_name(ours.CastValue)}
        with zarr.config.set({"codecs": chosen}):
            got = zarr.open_array(str(tmp_path / "b.zarr"), mode="r")[...].tolist()
            assert got == [1000, 1001, 1002, 1003] + [1000] * 4
    listed("zarrita-fill-not-scaled", zarrita)


def test_zarrita_applies_only_the_first_transpose(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """Spec (zarr v3 core, codecs): codecs apply in turn, and a transpose permutes the dimensions
    of the chunk it receives. With transposes [1, 0, 2] then [0, 2, 1], zarrita.js reads the
    stored bytes as if the second were not there."""
    first, second = [1, 0, 2], [0, 2, 1]
    case = _case("int32", (2, 3, 4), (2, 3, 4), 0,
                 filters=(io._c("transpose", order=first), io._c("transpose", order=second)))
    data = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    stored = np.ascontiguousarray(data.transpose(first).transpose(second))
    store = _store(tmp_path / "a.zarr", case, {"c/0/0/0": stored.tobytes()})
    got = zarrita.read(store, case, None)
    as_if_first_only = np.frombuffer(stored.tobytes(), np.int32).reshape(
        [data.shape[i] for i in first]).transpose(np.argsort(first))
    assert not np.array_equal(got, data)
    assert got.tolist() == as_if_first_only.tolist()
    need("zarr")
    with zarr_builtins() as zarr:
        assert zarr.open_array(str(store), mode="r")[...].tolist() == data.tolist()
    listed("zarrita-second-transpose", zarrita)


def test_zarrita_refuses_float_casts_with_other_rounding(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """Spec (cast_value): "rounding" is one of five modes for casts "to a lower-precision
    floating-point or integer data type". zarrita.js refuses a float64 array stored as float32
    with rounding "towards-zero" when it opens it, although decoding (float32 -> float64) never
    rounds."""
    case = _case("float64", (2,), (2,), 0.0,
                 filters=(io._c("cast_value", data_type="float32", rounding="towards-zero"),))
    store = _store(tmp_path / "a.zarr", case, {"c/0": np.array([0.5, -1.25], np.float32).tobytes()})
    with refused_by_zarrita('cast_value float -> float only supports "nearest-even" rounding'):
        zarrita.read(store, case, None)
    theirs = builtins_read(store)
    if theirs is not None:
        assert theirs.tolist() == [0.5, -1.25]
    listed("zarrita-float-cast-rounding", zarrita)


def test_zarrita_reads_the_shard_index_at_the_end_only(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """Spec (sharding_indexed): "index_location: Specifies whether the shard index is located at
    the beginning ("start") or end ("end") of the file." zarrita.js reads the last bytes of the
    shard as its index whatever index_location says, and fails on the sizes it finds there."""
    zarr = need("zarr")
    case = io.CASES["sharding-index-start"]
    store = tmp_path / "a.zarr"
    a = zarr.create_array(str(store), shape=(4, 4), dtype="int16", fill_value=0, chunks=(4, 4),
                          serializer={"name": "sharding_indexed", "configuration": {
                              "chunk_shape": [2, 2], "codecs": [io.BYTES],
                              "index_codecs": [io.BYTES, {"name": "crc32c"}], "index_location": "start"}},
                          compressors=None)
    data = np.arange(16, dtype=np.int16).reshape(4, 4)
    a[...] = data
    assert json.loads((store / "zarr.json").read_text())["codecs"][0]["configuration"]["index_location"] == "start"
    with refused_by_zarrita('The value of "size" is out of range'):
        zarrita.read(store, case, None)
    assert zarr.open_array(str(store), mode="r")[...].tolist() == data.tolist()
    listed("zarrita-shard-index-start", zarrita)


def test_zarrita_reads_the_same_store_with_the_index_at_the_end(zarrita: io.ZarritaJs, tmp_path: Path) -> None:
    """The control for the pins above: the same kinds of stores, written the way the advice says,
    read right (so each pin fails for its own reason, not for a broken harness)."""
    zarr = need("zarr")
    store = tmp_path / "a.zarr"
    a = zarr.create_array(str(store), shape=(4, 4), dtype="int16", fill_value=0, chunks=(4, 4),
                          serializer={"name": "sharding_indexed", "configuration": {
                              "chunk_shape": [2, 2], "codecs": [io.BYTES],
                              "index_codecs": [io.BYTES, {"name": "crc32c"}]}}, compressors=None)
    data = np.arange(16, dtype=np.int16).reshape(4, 4)
    a[...] = data
    assert zarrita.read(store, io.CASES["sharding-int16"], None).tolist() == data.tolist()
    one = _case("int32", (2, 3, 4), (2, 3, 4), 0, filters=(io._c("transpose", order=[1, 2, 0]),))
    values = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    one_store = _store(tmp_path / "b.zarr", one, {"c/0/0/0": np.ascontiguousarray(values.transpose(1, 2, 0)).tobytes()})
    assert zarrita.read(one_store, one, None).tolist() == values.tolist()
    plain = _case("float32", (2,), (2,), 5.0, filters=(io._c("scale_offset", offset=5, scale=0.125),))
    plain_store = _store(tmp_path / "c.zarr", plain, {"c/0": np.array([2.0662989616394043, 1.5], np.float32).tobytes()})
    stored = np.array([2.0662989616394043, 1.5], np.float32)
    assert zarrita.read(plain_store, plain, None).tolist() == (stored / np.float32(0.125) + np.float32(5)).tolist()


# --- the rules in deviations.py (no zarrita.js needed) ------------------------------------------


def _meta(codecs: list, dtype: str, fill: object = 0, shape: tuple = (8,)) -> dict:
    return {"shape": list(shape), "data_type": dtype, "fill_value": fill, "codecs": codecs,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shape)}}}


def _zarrita_ids(meta: dict) -> list[str]:
    return [f.deviation.id for f in DEV.find_deviations(meta) if f.deviation.implementation == "zarrita.js"]


@pytest.mark.parametrize(("dtype", "config", "found"), [
    ("float32", {"offset": 5, "scale": 0.1}, True),
    ("float32", {"scale": 0.1}, True),  # 0.1 is no float32: zarrita.js divides by the float64 0.1
    ("float32", {"offset": 0.1}, True),
    ("float32", {"offset": 5, "scale": 4}, True),  # two operations, rounded once in float64
    ("float32", {"offset": 5}, False),  # one exact operand each: float64 then float32 rounds as float32
    ("float32", {"scale": 0.125}, False),
    ("float32", {}, False),
    ("float16", {"scale": 0.1}, True),
    ("float16", {"offset": 100000}, True),  # not a float16 at all
    ("float32", {"offset": "NaN"}, True),  # not a plain number: assumed affected
    ("float64", {"offset": 5, "scale": 0.1}, False),  # float64 arithmetic is the spec's here
    ("int16", {"offset": 5, "scale": 3}, False),
])
def test_rule_scale_offset_float(dtype: str, config: dict, found: bool) -> None:
    meta = _meta([io._c("scale_offset", **config), io.BYTES], dtype, 0.0)
    assert ("zarrita-scale-offset-float64" in _zarrita_ids(meta)) == found


@pytest.mark.parametrize(("fill", "codecs", "found"), [
    (1000, [io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8")], True),
    (0, [io._c("cast_value", data_type="uint16", scalar_map={"encode": [[0, 1000]], "decode": [[1000, 0]]}),
         io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8")], True),
    (1010, [io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8")], True),
    (100, [io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8")], False),  # spec fails too
    (200, [io._c("scale_offset", offset=100), io._c("cast_value", data_type="uint8")], False),  # both fit
    (1000, [io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8", out_of_range="clamp")], False),
    (1000, [io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8",
                                                      scalar_map={"encode": [[1000, 0]]})], False),
    ("NaN", [io._c("scale_offset", offset=-10, scale=0.1), io._c("cast_value", data_type="uint8")], False),
    (1000, [io._c("cast_value", data_type="uint8")], False),  # no scale_offset: nothing skipped
])
def test_rule_fill_value_through_scale_offset(fill: object, codecs: list, found: bool) -> None:
    meta = _meta([*codecs, io.BYTES], "uint16", fill)
    assert ("zarrita-fill-not-scaled" in _zarrita_ids(meta)) == found
    shard = {"name": "sharding_indexed", "configuration": {"chunk_shape": [4], "codecs": [*codecs, io.BYTES]}}
    assert ("zarrita-fill-not-scaled" in _zarrita_ids(_meta([shard], "uint16", fill))) == found


def test_rules_transpose_rounding_and_shard_index() -> None:
    t = lambda *order: io._c("transpose", order=list(order))  # noqa: E731
    assert _zarrita_ids(_meta([t(1, 0, 2), t(0, 2, 1), io.BYTES], "int32", shape=(2, 3, 4))) == \
        ["zarrita-second-transpose"]
    assert _zarrita_ids(_meta([t(1, 0, 2), io.BYTES], "int32", shape=(2, 3, 4))) == []
    inner = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2], "codecs": [t(1, 0), t(1, 0), io.BYTES], "index_location": "start"}}
    found = DEV.find_deviations(_meta([inner], "int16", shape=(4, 4)))
    assert sorted(f.deviation.id for f in found) == ["zarrita-second-transpose", "zarrita-shard-index-start"]
    assert any(f.where == "codecs[0] sharding_indexed > codecs[1] transpose" for f in found)
    end = {"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2], "codecs": [io.BYTES]}}
    assert _zarrita_ids(_meta([end], "int16", shape=(4, 4))) == []
    for rounding, found in (("towards-zero", True), ("nearest-even", False), (None, False)):
        cfg = {"data_type": "float32"} | ({"rounding": rounding} if rounding else {})
        assert (_zarrita_ids(_meta([io._c("cast_value", **cfg), io.BYTES], "float64", 0.0)) != []) == found
    # float -> integer casts with any rounding: zarrita.js takes them
    assert _zarrita_ids(_meta([io._c("cast_value", data_type="int16", rounding="towards-zero"), io.BYTES],
                              "float64", 0.0)) == []


def test_zarrita_warning_names_the_reader_and_what_to_do() -> None:
    (w,) = DEV.reader_warnings(_meta([io._c("scale_offset", offset=1000), io._c("cast_value", data_type="uint8"),
                                      io.BYTES], "uint16", 1000))
    assert w.startswith("zarrita.js <= 0.7.5, fill value 1000 (reaching this cast_value as 1000 instead of 0) "
                        "at codecs[1] cast_value: ")
    assert "What to do:" in w
