"""numcodecs_ext.tools.deviations: which configurations meet a known deviation of another reader,
and ``numcodecs-ext inspect`` naming the readers and versions."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cli import main
from numcodecs_ext.tools import deviations
from numcodecs_ext.tools.deviations import DEVIATIONS, affects, find_deviations, reader_warnings, zfp_fixed_rate_bits
from numcodecs_ext.zarr3 import PackBits

ROOT = Path(__file__).resolve().parents[2]


def meta(codecs: list, dtype: str = "float64", chunks: list | None = None, shape: list | None = None) -> dict:
    chunks = chunks or [8, 8]
    return {"zarr_format": 3, "node_type": "array", "shape": shape or [16] * len(chunks),
            "data_type": dtype, "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "codecs": codecs}


def ids(m: dict) -> list[str]:
    return [f.deviation.id for f in find_deviations(m)]


def pb(dtype: str, **config) -> dict:
    return meta([{"name": "packbits", "configuration": config}], dtype)


@pytest.mark.parametrize(("dtype", "config", "expected"), [
    ("uint8", {"first_bit": 2, "last_bit": 5}, ["packbits-partial-first-bit"]),
    ("int16", {"first_bit": 0, "last_bit": 5}, ["packbits-sign-extension"]),
    ("int16", {"first_bit": 2, "last_bit": 5}, ["packbits-partial-first-bit", "packbits-sign-extension"]),
    ("int32", {"last_bit": 11}, ["packbits-sign-extension"]),
    ("int16", {"last_bit": 11}, []),  # the byte of bit 11 ends at bit 15: zarrs gets it right
    ("int8", {"last_bit": 3}, []),
    ("uint16", {"last_bit": 11}, []),  # unsigned: zero extension is right
    ("uint8", {"padding_encoding": "first_byte"}, ["packbits-full-width-padding"]),
    ("int16", {"last_bit": 15, "padding_encoding": "last_byte"}, ["packbits-full-width-padding"]),
    ("uint8", {"padding_encoding": "none"}, []),
    ("uint8", {}, []),
    ("bool", {"padding_encoding": "first_byte"}, []),  # 1 bit: zarrs writes its padding byte
    ("uint16", {"last_bit": 11, "padding_encoding": "first_byte"}, []),
    ("complex64", {"first_bit": 16, "last_bit": 31}, ["packbits-partial-first-bit"]),
    ("int4", {"padding_encoding": "first_byte"}, []),
])
def test_packbits(dtype: str, config: dict, expected: list[str]) -> None:
    assert ids(pb(dtype, **config)) == expected


@pytest.mark.parametrize(("shape", "refused"), [
    ([2, -1, [1]], True), ([2, 2, [1]], True), ([1, 4, [1]], True), ([2, 2, [1, 2]], True),
    ([[0], -1, [1]], True),  # zarrs counts the -1 as an input dimension too
    ([4, [1]], False), ([-1, [1]], False), ([[0, 1], -1], False), ([2, 2, 3], False),
    ([-1], False), ([2, 6], False), ([[0], [1], -1], False), ([2, [1], -1], False),
])
def test_reshape(shape: list, refused: bool) -> None:
    found = ids(meta([{"name": "reshape", "configuration": {"shape": shape}}, {"name": "bytes"}],
                     chunks=[4, 3, 2]))
    assert ("reshape-sizes-before-group" in found) == refused
    assert "reshape-partial-decode" in found  # zarrs <= 0.23.8 reads no part of a reshaped chunk


def test_cast_value() -> None:
    f16 = {"name": "cast_value", "configuration": {"data_type": "float16"}}
    assert ids(meta([f16])) == ["cast-value-float16-double-rounding"]
    assert ids(meta([f16], "float32")) == []  # float32 -> float16 rounds once anyway
    hex_key = {"name": "cast_value", "configuration": {"data_type": "uint8", "scalar_map": {
        "encode": [["0x7ff8000000000000", 0]], "decode": [[0, "NaN"]]}}}
    assert ids(meta([hex_key])) == ["cast-value-hex-scalar-map"]
    hex_value = {"name": "cast_value", "configuration": {"data_type": "uint8", "scalar_map": {
        "decode": [[0, "-0x7ff8000000000000"]]}}}
    assert ids(meta([hex_value])) == ["cast-value-hex-scalar-map"]
    plain = {"name": "cast_value", "configuration": {"data_type": "uint8", "scalar_map": {
        "encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}
    assert ids(meta([plain])) == []


def test_bitround_names_and_the_data_type_each_codec_sees() -> None:
    nb = {"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}
    assert ids(meta([nb], "int16")) == ["numcodecs-bitround-integers"]
    assert ids(meta([nb], "float32")) == []
    assert ids(meta([{"name": "bitround", "configuration": {"keepbits": 3}}], "int16")) == []
    # the type bitround receives: a cast_value before it turns floats into integers
    cast = {"name": "cast_value", "configuration": {"data_type": "int16"}}
    assert ids(meta([cast, nb], "float64")) == ["numcodecs-bitround-integers"]
    assert ids(meta([{"name": "cast_value", "configuration": {"data_type": "float32"}}, nb], "int32")) == []


def test_inner_codecs_of_shards_and_short_hand_names() -> None:
    shard = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 4], "codecs": [{"name": "packbits", "configuration": {"first_bit": 1}}],
        "index_codecs": ["bytes", {"name": "crc32c"}]}}
    found = find_deviations(meta([shard], "uint8"))
    assert [f.deviation.id for f in found] == ["codec-name-shorthand", "packbits-partial-first-bit"]
    assert found[0].where == "codecs[0] sharding_indexed > index_codecs[0]"
    assert "sharding_indexed > codecs[0] packbits" in found[1].where
    assert ids(meta(["bytes", "zstd"], "uint8")) == ["codec-name-shorthand"]
    assert "'bytes', 'zstd'" in find_deviations(meta(["bytes", "zstd"], "uint8"))[0].detail


def test_transpose_after_reshape() -> None:
    codecs = [{"name": "reshape", "configuration": {"shape": [[0, 1], [2]]}},
              {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}]
    assert "transpose-after-reshape" in ids(meta(codecs, chunks=[2, 3, 10]))
    plain = [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}]
    assert ids(meta(plain)) == []


def test_nothing_for_ordinary_arrays_and_foreign_metadata() -> None:
    ordinary = [{"name": "scale_offset", "configuration": {"offset": 5, "scale": 0.1}},
                {"name": "cast_value", "configuration": {"data_type": "int16"}},
                {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}]
    assert reader_warnings(meta(ordinary)) == []
    for odd in ({}, {"codecs": None}, {"codecs": [None, 3, {"name": "packbits", "configuration": []}]},
                {"codecs": [{"name": "packbits", "configuration": {"first_bit": "x"}}], "data_type": "uint8"},
                {"codecs": [{"name": "reshape", "configuration": {"shape": "x"}}]},
                {"data_type": {"name": "int16"}, "codecs": [{"name": "zfp", "configuration": {"mode": "fixed_rate"}}]}):
        reader_warnings(odd)  # foreign metadata never raises


def test_messages_name_readers_versions_and_what_to_do() -> None:
    (w,) = reader_warnings(pb("uint8", first_bit=2, last_bit=5))
    assert w.startswith("zarrs <= 0.23 (zarrs-python <= 0.2.3, zarrista <= 0.1.0), packbits first_bit=2 at codecs[0]")
    assert "20 reads as 5" in w and "What to do: keep first_bit at 0" in w
    (w,) = reader_warnings(meta([{"name": "cast_value", "configuration": {"data_type": "float16"}}]))
    assert w.startswith("zarr-python 3.2-3.4.2 when writing, cast_value float64 -> float16")
    (w,) = reader_warnings(meta([{"name": "numcodecs.bitround", "configuration": {"keepbits": 3}}], "int16"))
    assert "[32, 96, -8192] reads as [0, 0, -512]" in w and 'keep the spec name "bitround"' in w


@pytest.mark.parametrize(("dims", "per_value"), [(1, 128.0), (2, 32.0), (3, None), (4, 2.0)])
def test_zfp_fixed_rate_bits(dims: int, per_value: float | None) -> None:
    zfp = {"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 8}}
    found = reader_warnings(meta([zfp], "float32", chunks=[64] * dims))
    if per_value is None:  # 3-D: the rate is what it says
        assert found == []
    else:
        (w,) = found
        assert f"these {dims}-D chunks store {per_value:g} bits per value" in w
        assert f"({512} bits per block of {4 ** dims} values)" in w


def test_zfp_fixed_rate_bits_follow_the_chunk_zfp_receives() -> None:
    zfp = {"name": "zfp", "configuration": {"mode": "fixed_rate", "rate": 4}}
    shard = {"name": "sharding_indexed", "configuration": {"chunk_shape": [16, 16], "codecs": [zfp]}}
    (w,) = reader_warnings(meta([shard], "float64", chunks=[64, 64]))
    assert "2-D chunks store 16 bits per value" in w
    flat = [{"name": "reshape", "configuration": {"shape": [-1]}}, zfp]
    w = reader_warnings(meta(flat, "float64", chunks=[8, 8]))[-1]
    assert "1-D chunks store 64 bits per value" in w
    assert zfp_fixed_rate_bits(0.01, "float64", 3) == (12, 12 / 64)  # zfp's minimum for doubles
    assert zfp_fixed_rate_bits(0.01, "float32", 1) == (9, 9 / 4)
    assert zfp_fixed_rate_bits(0.01, "int32", 2) == (1, 1 / 16)


def test_affects_versions() -> None:
    d = DEVIATIONS["reshape-partial-decode"]
    assert affects(d, "zarrs", "0.23.8") and not affects(d, "zarrs", "0.23.13")
    d = DEVIATIONS["cast-value-hex-scalar-map"]
    assert affects(d, "zarr-python", "3.2.1") and affects(d, "zarr-python", "3.4.2")
    assert not affects(d, "zarr-python", "3.1.6") and not affects(d, "zarr-python", "3.5.0")
    assert not affects(d, "zarrs", "0.23.8")


def test_one_place_every_deviation_documented_and_pinned() -> None:
    """Each entry is on the docs page, pinned by a flip test, and quotes its spec sentence."""
    page = (ROOT / "docs" / "interop.md").read_text()
    pins = "".join((ROOT / "tests" / "interop" / name).read_text()
                   for name in ("test_deviations_others.py", "test_deviations_zarrita.py"))
    for dev_id, d in DEVIATIONS.items():
        assert f"`{dev_id}`" in page, f"docs/interop.md does not list {dev_id}"
        assert f'"{dev_id}"' in pins, f"no test in test_deviations_others.py or _zarrita.py pins {dev_id}"
        assert d.spec and d.advice and d.effect and d.who


def test_standard_library_only() -> None:
    """The interop job loads the module by path where numcodecs_ext is not installed."""
    tree = ast.parse(Path(deviations.__file__).read_text())
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert all(n.level == 0 for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}


# --- inspect ----------------------------------------------------------------------------------


def test_inspect_warns_with_readers_and_versions(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = zarr.open_group(str(tmp_path / "s.zarr"), mode="w", zarr_format=3)
    a = root.create_array("codes", shape=(10, 7), chunks=(4, 4), dtype="uint8", fill_value=0,
                          serializer=PackBits(first_bit=2, last_bit=5), compressors=None)
    a[...] = np.full((10, 7), 20, np.uint8)
    root.create_array("plain", shape=(4,), chunks=(2,), dtype="uint8")
    assert main(["inspect", str(tmp_path / "s.zarr"), "--json"]) == 0
    arrays = {x["path"]: x for x in json.loads(capsys.readouterr().out)["arrays"]}
    (w,) = arrays["codes"]["reader_warnings"]
    assert "zarrs <= 0.23" in w and "first_bit=2" in w
    assert arrays["plain"]["reader_warnings"] == []
    assert main(["inspect", str(tmp_path / "s.zarr")]) == 0
    text = capsys.readouterr().out
    assert text.count("reader warning: ") == 1 and "reader warning: zarrs <= 0.23 (zarrs-python" in text


def test_inspect_v2_arrays_have_no_reader_warnings(tmp_path: Path) -> None:
    from numcodecs_ext.tools.inspect import inspect_store

    z = zarr.create_array(str(tmp_path / "v2.zarr"), shape=(4,), chunks=(2,), dtype="i2", zarr_format=2)
    z[:] = 1
    (a,) = inspect_store(tmp_path / "v2.zarr")["arrays"]
    assert a["reader_warnings"] == []
