"""Known deviations of the other implementations, pinned so that they flip.

Each test asserts what another implementation does TODAY where it departs from the spec sentence
quoted in its docstring (zarr-developers/zarr-extensions ``codecs/<name>/README.md`` at commit
4da7b37a84f76e660902f6d3de3eaef0e0febae6, or the zarr v3.1 core spec), and that
``numcodecs_ext/tools/deviations.py`` (what ``numcodecs-ext inspect`` warns about, and what the
interop job accepts as known) lists it for the version installed. When the implementation is fixed,
or a version outside the listed range is installed, the test fails: update deviations.py and
docs/interop.md.

No numcodecs_ext import here: CI runs this file in the interop job's environment, which holds the
other implementations and not numcodecs_ext (``.ci/run`` sets NUMCODECS_EXT_REQUIRE_OTHERS=1 there,
so a missing implementation fails instead of skipping). Elsewhere each test skips, naming what is
missing; the zarr-python ones also run in the Python 3.12 test environment (zarr >= 3.2 with
cast-value-rs), where they select zarr's own codec classes explicitly.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import interop_others as io

DEV = io._deviations()


def skip(message: str) -> None:
    """Skip, except in the interop job, where every pin must run."""
    if os.environ.get("NUMCODECS_EXT_REQUIRE_OTHERS"):
        pytest.fail(f"not run in the interop job: {message}")
    pytest.skip(message)


def need(module: str, why: str = "") -> Any:
    """Import ``module``, or skip (fail in the interop job) naming what is missing."""
    if importlib.util.find_spec(module) is None:
        skip(f"{module} is not installed{why} (the interop job in .ci/run installs it)")
    return importlib.import_module(module)


def listed(dev_id: str, impl: io.Impl) -> None:
    """deviations.py lists ``dev_id`` for this implementation's installed version."""
    d = DEV.DEVIATIONS[dev_id]
    assert any(DEV.affects(d, family, version) for family, version, _ in impl.families()), (
        f"{dev_id}: deviations.py does not list {impl.label()} as affected: update its versions")


@pytest.fixture(params=["zarrista", "zarrs-python"])
def zarrs(request: pytest.FixtureRequest) -> io.Impl:
    """zarrs (Rust) through each binding on PyPI."""
    if request.param == "zarrista":
        need("zarrista")
        return io.Zarrista()
    need("zarrs", " (zarrs-python)")
    return io.ZarrsPython()


@contextlib.contextmanager
def refused(pattern: str):
    """Expect an exception whose text, or that of an exception it was raised from, matches
    ``pattern`` (zarrs-python's UnsupportedMetadataError carries zarrs' message in its cause)."""
    with pytest.raises(Exception) as info:  # noqa: B017, PT011 - any error, the text decides
        yield
    texts, exc = [], info.value
    while exc is not None:
        texts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    assert re.search(pattern, "\n".join(texts)), texts


def _store(path: Path, case: io.Case, chunks: dict[str, bytes]) -> Path:
    """A store written by hand: the case's metadata and the given chunk bytes."""
    path.mkdir(parents=True)
    (path / "zarr.json").write_text(json.dumps(case.metadata()))
    for key, raw in chunks.items():
        (path / key).parent.mkdir(parents=True, exist_ok=True)
        (path / key).write_bytes(raw)
    return path


def _case(dtype: str, shape: tuple, chunks: tuple, fill: Any, serializer: dict | None = None,
          filters: tuple = ()) -> io.Case:
    return io.Case("pin", "pin", dtype, shape, chunks, fill, lambda rng: None,
                   serializer=serializer or io.BYTES, filters=filters)


# --- zarrs 0.23: packbits -------------------------------------------------------------------


def test_zarrs_packbits_partial_decode_ignores_first_bit(zarrs: io.Impl, tmp_path: Path) -> None:
    """Spec (packbits): "To decode an element of the array, the `b` encoded bits are first
    shifted to `first_bit`." zarrs' partial decoder (reads of part of a chunk, and the edge
    chunks of a whole-array read) skips the shift: uint8 bits 2..5 read 20 as 5."""
    case = _case("uint8", (10, 7), (4, 4), 0, io._c("packbits", first_bit=2, last_bit=5))
    zarrs.write(tmp_path / "a.zarr", case, np.full((10, 7), 20, np.uint8))
    got = zarrs.read(tmp_path / "a.zarr", case, None)
    assert (got[:8, :4] == 20).all()  # whole chunks: right
    assert (got[8:, :] == 5).all() and (got[:, 4:] == 5).all()  # edge chunks: 20 >> 2
    assert (zarrs.read(tmp_path / "a.zarr", case, (slice(1, 3), slice(1, 3))) == 5).all()
    listed("packbits-partial-first-bit", zarrs)


def test_zarrs_packbits_sign_extension_stops_at_the_byte(zarrs: io.Impl, tmp_path: Path) -> None:
    """Spec (packbits): "Depending on the data type, the value is then: sign-extended (for signed
    integer data types) [...] up to `N` bits." zarrs extends the sign only to the end of the
    byte that holds last_bit: int16 bits 0..5 read -32 as 224, int32 bits 0..11 -2048 as 63488."""
    case = _case("int16", (4,), (4,), 0, io._c("packbits", first_bit=0, last_bit=5))
    zarrs.write(tmp_path / "a.zarr", case, np.array([-32, -1, 5, 31], np.int16))
    assert zarrs.read(tmp_path / "a.zarr", case, None).tolist() == [224, 255, 5, 31]
    case32 = _case("int32", (2,), (2,), 0, io._c("packbits", last_bit=11))
    zarrs.write(tmp_path / "b.zarr", case32, np.array([-2048, 7], np.int32))
    assert zarrs.read(tmp_path / "b.zarr", case32, None).tolist() == [63488, 7]
    listed("packbits-sign-extension", zarrs)


def test_zarrs_packbits_full_width_loses_the_padding_byte(zarrs: io.Impl, tmp_path: Path) -> None:
    """Spec (packbits): "If `padding_encoding` is `"first_byte"`, a single byte specifying the
    number of padding bits that were added is prepended to the encoded byte sequence." For types
    kept at full width zarrs writes no such byte, and refuses chunks that have it."""
    case = _case("uint8", (3,), (3,), 0, io._c("packbits", padding_encoding="first_byte"))
    zarrs.write(tmp_path / "a.zarr", case, np.array([1, 2, 3], np.uint8))
    assert (tmp_path / "a.zarr" / "c" / "0").read_bytes() == b"\x01\x02\x03"  # spec: 00 01 02 03
    spec = _store(tmp_path / "b.zarr", case, {"c/0": b"\x00\x01\x02\x03"})
    with refused("size of a decoded chunk is 4, expected 3"):
        zarrs.read(spec, case, None)
    listed("packbits-full-width-padding", zarrs)


# --- zarrs 0.23: reshape --------------------------------------------------------------------


def test_zarrs_reshape_refuses_sizes_before_a_group(zarrs: io.Impl, tmp_path: Path) -> None:
    """Spec (reshape): "Each element `shape[i]` must be one of: a positive integer `size` [...];
    an array of integers `input_dims` [...]; the special value `-1`". [2, -1, [1]] on 4x3 chunks
    is valid (output 2x2x3), but zarrs counts each size or -1 as an input dimension and refuses it."""
    case = _case("int32", (4, 3), (4, 3), 0, filters=(io._c("reshape", shape=[2, -1, [1]]),))
    data = np.arange(12, dtype=np.int32).reshape(4, 3)
    with refused("ReshapeCodecConfiguration"):
        zarrs.write(tmp_path / "a.zarr", case, data)
    spec = _store(tmp_path / "b.zarr", case, {"c/0/0": data.tobytes()})
    with refused("ReshapeCodecConfiguration"):
        zarrs.read(spec, case, None)
    listed("reshape-sizes-before-group", zarrs)


def test_zarrs_python_reshape_has_no_partial_decoder(tmp_path: Path) -> None:
    """New in this trial. Spec (reshape): "Implementations should, when possible, construct a
    virtual view rather than copy the array." The spec sets no limit on which part of an array a
    reader may ask for, but zarrs 0.23.8 (zarrs-python 0.2.3) cannot read part of a chunk through
    reshape, nor so the edge chunks of a whole-array read; zarrs 0.23.13 (zarrista 0.1.0) can."""
    need("zarrs", " (zarrs-python)")
    impl = io.ZarrsPython()
    case = _case("int16", (6, 8), (4, 6), 0, filters=(io._c("reshape", shape=[-1]),))
    data = np.arange(48, dtype=np.int16).reshape(6, 8)
    chunks = {}
    for i in range(2):
        for j in range(2):
            block = np.zeros((4, 6), np.int16)
            part = data[4 * i:4 * i + 4, 6 * j:6 * j + 6]
            block[:part.shape[0], :part.shape[1]] = part
            chunks[f"c/{i}/{j}"] = block.tobytes()
    store = _store(tmp_path / "a.zarr", case, chunks)
    with refused("partial decoding with the reshape codec is not yet supported"):
        impl.read(store, case, None)
    listed("reshape-partial-decode", impl)
    if importlib.util.find_spec("zarrista") is not None:  # the newer zarrs reads it
        assert io.Zarrista().read(store, case, None).tolist() == data.tolist()


# --- zarr-python 3.4.2 ------------------------------------------------------------------------


@contextlib.contextmanager
def zarr_builtins():
    """zarr-python's own classes for these codec names (numcodecs_ext, if installed, is zarr's
    default for them)."""
    zarr = need("zarr")
    from zarr.registry import fully_qualified_name

    names = {"transpose": "zarr.codecs.transpose:TransposeCodec",
             "cast_value": "zarr.codecs.cast_value:CastValue",
             "scale_offset": "zarr.codecs.scale_offset:ScaleOffset",
             "numcodecs.bitround": "zarr.codecs.numcodecs:BitRound"}
    chosen = dict(zarr.config.get("codecs", {}))  # names contain dots: set the whole mapping
    zarr_pins = {k: v for d in zarr.config.defaults for k, v in (d.get("codecs") or {}).items()
                 if str(v).startswith("zarr.")}  # zarr's own defaults (its registry keys)
    for name, path in names.items():
        module, _, attr = path.partition(":")
        try:
            chosen[name] = zarr_pins.get(name) or fully_qualified_name(
                getattr(importlib.import_module(module), attr))
        except (ImportError, AttributeError):
            continue
    with zarr.config.set({"codecs": chosen}):
        yield zarr


def _zarr_cast_value() -> None:
    need("zarr")
    if importlib.util.find_spec("zarr.codecs.cast_value") is None:
        skip("zarr < 3.2 has no cast_value")
    need("cast_value_rs", " (zarr's cast_value needs it)")


def test_zarr_cast_value_float64_to_float16_rounds_twice() -> None:
    """Spec (cast_value): '"nearest-even": Round to the nearest representable value, with ties
    rounded to the value whose least significant digit is even (IEEE 754 roundTiesToEven).'
    zarr 3.4.2 (cast-value-rs) rounds float64 -> float32 -> float16: 1.0004882812500002 (just
    above the tie 1 + 2^-11) is written as 1.0 instead of 1.0009765625, and 65519.99999999999
    (below the tie with infinity) fails instead of giving 65504."""
    _zarr_cast_value()
    with zarr_builtins() as zarr:
        store: dict = {}
        a = zarr.create_array(store=store, shape=(2,), chunks=(2,), dtype="float64", fill_value=0.0,
                              filters=[{"name": "cast_value", "configuration": {"data_type": "float16"}}],
                              compressors=None)
        a[...] = np.array([1.0004882812500002, 65504.0])
        assert np.frombuffer(store["c/0"].to_bytes(), "<f2").tolist() == [1.0, 65504.0]
        with pytest.raises(Exception):  # noqa: B017 - whatever cast-value-rs raises
            a[...] = np.array([65519.99999999999, 0.0])
    listed("cast-value-float16-double-rounding", io.ZarrPython())


def test_zarr_cast_value_hex_scalar_map_key() -> None:
    """Spec (cast_value): "Input scalars are encoded to JSON using the Zarr V3 fill value encoding
    for the input data type" -- which includes the hexadecimal form of floats. zarr 3.4.2 cannot
    parse "0x7ff8000000000000" (the canonical NaN) in a scalar_map."""
    _zarr_cast_value()
    with zarr_builtins() as zarr, pytest.raises(ValueError, match="could not convert string to float"):
        zarr.create_array(store={}, shape=(2,), chunks=(2,), dtype="float64", fill_value=0.0,
                          filters=[{"name": "cast_value", "configuration": {
                              "data_type": "uint8", "scalar_map": {"encode": [["0x7ff8000000000000", 7]]}}}],
                          compressors=None)
    listed("cast-value-hex-scalar-map", io.ZarrPython())


@pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr version 3")  # zarr 3.1
def test_zarr_numcodecs_bitround_reads_integers_as_floats(tmp_path: Path) -> None:
    """Spec (bitround): "For integer values, the codec rounds from the most significant set bit."
    and `numcodecs.bitround` is its alias. zarr-python's numcodecs adapter takes integers for
    floats: the int16 chunk zarrs writes for [32, 96, -8192] reads as [0, 0, -512]."""
    case = _case("int16", (3,), (3,), 0, filters=(io._c("numcodecs.bitround", keepbits=3),))
    data = np.array([32, 96, -8192], np.int16)
    written = data.astype("<i2").tobytes()  # keepbits 3 keeps these values as they are
    if importlib.util.find_spec("zarrista") is not None:  # what zarrs really writes
        io.Zarrista().write(tmp_path / "z.zarr", case, data)
        assert (tmp_path / "z.zarr" / "c" / "0").read_bytes() == written
    store = _store(tmp_path / "a.zarr", case, {"c/0": written})
    with zarr_builtins() as zarr:
        a = zarr.open_array(str(store), mode="r")
        used = type(a.metadata.codecs[0]).__module__
        if not used.startswith("zarr."):  # zarr 3.1 does not let the config pick it over ours
            skip(f"zarr {zarr.__version__} uses {used} here, not its numcodecs adapter")
        assert a[...].tolist() == [0, 0, -512]
    listed("numcodecs-bitround-integers", io.ZarrPython())


def test_zarr_transpose_after_reshape_is_refused(tmp_path: Path) -> None:
    """New in this trial. Spec (transpose, zarr v3 core codecs): "order: [...] a permutation of
    0, 1, ..., n-1, where n is the number of dimensions in the decoded chunk representation
    provided as input to this codec." zarr-python checks `order` against the array's dimensions,
    so a transpose after a reshape (as the reshape spec suggests) cannot be opened."""
    need("zarr")
    io._register_placeholders()  # a reshape class for zarr to parse with, where none is installed
    case = _case("float32", (4, 6, 10), (2, 3, 10), 0.0,
                 filters=(io._c("reshape", shape=[[0, 1], [2]]), io._c("transpose", order=[1, 0])))
    store = _store(tmp_path / "a.zarr", case, {})
    with zarr_builtins() as zarr, pytest.raises(ValueError, match="`order` tuple must have as many entries"):
        zarr.open_array(str(store), mode="r")
    listed("transpose-after-reshape", io.ZarrPython())


def test_zarr_refuses_codec_short_hand_names(tmp_path: Path) -> None:
    """New in this trial. zarr v3.1 core spec: "Instead of extension objects, short-hand names MAY
    be used if no configuration metadata is required. They are equivalent to extension objects
    with just a `name` key." zarrs writes them (zarrista: a packbits codec without configuration
    is stored as "packbits"), the codec specs' examples use "bytes"; zarr-python cannot parse them."""
    zarr = need("zarr")
    meta = _case("uint8", (3,), (3,), 0).metadata()
    meta["codecs"] = ["bytes"]
    (tmp_path / "a.zarr").mkdir()
    (tmp_path / "a.zarr" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(TypeError, match="Expected dict, got <class 'str'>"):
        zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    listed("codec-name-shorthand", io.ZarrPython())
    if importlib.util.find_spec("zarrista") is not None:
        case = _case("uint8", (3,), (3,), 0, io._c("packbits"))
        io.Zarrista().write(tmp_path / "z.zarr", case, np.arange(3, dtype=np.uint8))
        assert json.loads((tmp_path / "z.zarr" / "zarr.json").read_text())["codecs"] == ["packbits"]


# --- imagecodecs --------------------------------------------------------------------------------


def test_imagecodecs_zfp_expert_mode_takes_no_negative_minexp() -> None:
    """New in this trial (imagecodecs is no zarr implementation, so this is not in deviations.py).
    zfp spec: expert mode's `minexp` is a "signed integer" (zfp's default is -1074), but
    imagecodecs.zfp_encode converts it to an unsigned int: any negative minexp raises. Its bundled
    libzfp takes it (tests/interop/interop_others.py calls it directly for these streams)."""
    imagecodecs = need("imagecodecs")
    x = np.linspace(0, 1, 16).reshape(4, 4)
    with pytest.raises(OverflowError, match="negative"):
        imagecodecs.zfp_encode(x, (16, 3000, 22, -40), mode=imagecodecs.ZFP.MODE.EXPERT, header=False)
    assert len(imagecodecs.zfp_encode(x, (16, 3000, 22, 0), mode=imagecodecs.ZFP.MODE.EXPERT, header=False))


def test_imagecodecs_writes_magic_and_mode_without_header() -> None:
    """imagecodecs.zfp_encode(header=False) still writes zfp's 32-bit magic and its mode word (12
    bits here), so its stream is the zarr `zfp` codec's only after those 44 bits; the interop job
    compares the bits after them."""
    imagecodecs = need("imagecodecs")
    raw = bytes(imagecodecs.zfp_encode(np.zeros((4, 4)), mode=imagecodecs.ZFP.MODE.REVERSIBLE, header=False))
    assert raw[:3] == b"zfp"
    zfp = io._LibZfp()
    assert len(zfp.header_bits(np.zeros((4, 4)), {"mode": "reversible"})) == 44
