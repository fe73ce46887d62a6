"""The compiled zfp session (one C call per chunk) against the ctypes one: same bytes, same
errors, and no way to make it read or write outside its buffers."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from numcodecs_ext.core import _libzfp, _native, _zfpsession
from numcodecs_ext.core.zfp import compress, decompress

pytestmark = pytest.mark.usefixtures("compiled")

MODES = [
    ("reversible", {}),
    ("fixed_accuracy", {"tolerance": 1e-3}),
    ("fixed_rate", {"rate": 12}),
    ("fixed_precision", {"precision": 20}),
    ("expert", {"minbits": 0, "maxbits": 4000, "maxprec": 30, "minexp": -20}),
]
SHAPES = [(), (1,), (7,), (5, 9), (4, 3, 6), (3, 2, 5, 4)]


def _both(fn):
    """``fn()`` with the compiled session, then through ctypes."""
    saved = _native.ENABLED
    outcomes = []
    try:
        for enabled in (True, False):
            _native.ENABLED = enabled
            try:
                outcomes.append(fn())
            except (ValueError, TypeError) as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")
    finally:
        _native.ENABLED = saved
    return outcomes


def _modes_and_dtypes(dtypes: list[str]) -> list:
    """Every mode with every dtype it takes (fixed_accuracy takes floats only)."""
    return [pytest.param(mode, params, dtype, id=f"{mode}-{dtype}") for mode, params in MODES for dtype in dtypes
            if not (mode == "fixed_accuracy" and np.dtype(dtype).kind in "iu")]


@pytest.mark.parametrize("mode,params,dtype",
                         _modes_and_dtypes(["float32", "float64", "int32", "int64", "uint16", "float16"]))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_same_stream_and_values_both_ways(mode: str, params: dict, shape: tuple, dtype: str) -> None:
    rng = np.random.default_rng(sum(shape) + len(dtype))
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    compiled, ctypes_ = _both(lambda: compress(a, mode, **params))
    assert isinstance(compiled, bytes) and compiled == ctypes_
    decoded = _both(lambda: decompress(compiled, shape, dtype, mode, **params))
    assert decoded[0].dtype == np.dtype(dtype) and decoded[0].shape == shape
    np.testing.assert_array_equal(decoded[0], decoded[1])
    if mode == "reversible":
        np.testing.assert_array_equal(decoded[0], a)


@pytest.mark.parametrize("mode,params", MODES[:3], ids=[m for m, _ in MODES[:3]])
def test_corrupt_streams_fail_alike(mode: str, params: dict) -> None:
    a = np.linspace(0, 1, 64 * 64, dtype="float32").reshape(64, 64)
    good = compress(a, mode, **params)
    rng = np.random.default_rng(1)
    cases = [good[:8], good[:-8], good + bytes(8), good[: len(good) // 2 // 8 * 8]]
    for _ in range(20):
        flipped = bytearray(good)
        flipped[int(rng.integers(len(good)))] ^= 1 << int(rng.integers(8))
        cases.append(bytes(flipped))
    for stream in cases:
        outcomes = _both(lambda: decompress(stream, a.shape, "float32", mode, **params))
        if isinstance(outcomes[0], str):
            assert outcomes[0] == outcomes[1]
        else:
            np.testing.assert_array_equal(outcomes[0], outcomes[1])


def test_checks_refuse_the_same_values() -> None:
    """The compiled session checks lossy float values before compressing; the ctypes path checks
    them in numpy. Each refusal, and each tiny value in a block that is fine, agrees."""
    base = np.ones((8, 8), "float32")
    cases = {}
    for name, (index, value) in {
        "nan": ((3, 3), np.nan), "inf": ((0, 0), np.inf), "huge": ((7, 7), 2.0**126),
        "tiny, block fine": ((1, 1), 2.0**-120),
    }.items():
        a = base.copy()
        a[index] = value
        cases[name] = a
    only_tiny = np.zeros((8, 8), "float32")
    only_tiny[:4, :4] = 2.0**-120  # a whole zfp block of tiny values (zfp issue 209)
    cases["tiny block"] = only_tiny
    for name, a in cases.items():
        outcomes = _both(lambda a=a: compress(a, "fixed_accuracy", tolerance=1e-3))
        assert outcomes[0] == outcomes[1], name
        assert isinstance(outcomes[0], bytes) == (name == "tiny, block fine"), name


def _api_and_args(shape: tuple[int, ...] = (4, 4)) -> tuple:
    module = _native._compiled
    lib = _libzfp.load()
    api = module.zfp_api(lib.addresses())
    x, y = reversed(shape)
    return module, api, (3, 0, 2, 0.0, 0, 0, 0, x, y, 1, 1)  # float32, reversible, 2-D


def test_buffers_that_do_not_match_the_field_are_refused() -> None:
    module, api, spec = _api_and_args()
    good = np.zeros((4, 4), "float32")
    scratch = np.empty(4096, np.uint8)
    assert isinstance(module.zfp_encode(api, *spec, good, scratch, 0, 0.0, 0.0), bytes)
    for data in (np.zeros(15, "float32"), np.zeros(17, "float32"), np.zeros((4, 4), "float64")):
        with pytest.raises(ValueError, match="does not match the shape"):
            module.zfp_encode(api, *spec, data, scratch, 0, 0.0, 0.0)
    with pytest.raises(ValueError, match="scratch buffer is too small"):
        module.zfp_encode(api, *spec, good, np.empty(8, np.uint8), 0, 0.0, 0.0)
    stream = module.zfp_encode(api, *spec, good, scratch, 0, 0.0, 0.0)
    out = np.empty((4, 4), "float32")
    with pytest.raises(ValueError, match="padded buffer is too small"):
        module.zfp_decode(api, *spec, stream, np.empty(len(stream), np.uint8), out)
    with pytest.raises(ValueError, match="does not match the shape"):
        module.zfp_decode(api, *spec, stream, scratch, np.empty(15, "float32"))
    with pytest.raises(ValueError, match="ndim must be 1-4"):
        module.zfp_decode(api, 3, 0, 5, 0.0, 0, 0, 0, 4, 4, 1, 1, stream, scratch, out)
    with pytest.raises(ValueError, match="sizes must be positive"):
        module.zfp_max_size(api, 3, 0, 2, 0.0, 0, 0, 0, 0, 4, 1, 1)
    with pytest.raises(TypeError):  # read-only output
        module.zfp_decode(api, *spec, stream, scratch, np.frombuffer(bytes(64), "float32"))
    with pytest.raises(ValueError, match="tuple of 19 addresses"):
        module.zfp_api((1, 2, 3))
    with pytest.raises(ValueError):
        module.zfp_max_size(object(), *spec)  # not the capsule


def test_one_compiled_call_per_chunk_from_many_threads() -> None:
    """Threads share the capsule and nothing else: each gets its own scratch and session."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((64, 48)).astype("float32") for _ in range(8)]
    expected = [compress(a, "fixed_accuracy", tolerance=1e-4) for a in arrays]
    results: list[list[bytes]] = [[] for _ in arrays]

    def work(i: int) -> None:
        for _ in range(20):
            stream = compress(arrays[i], "fixed_accuracy", tolerance=1e-4)
            back = decompress(stream, (64, 48), "float32", "fixed_accuracy", tolerance=1e-4)
            assert np.abs(back - arrays[i]).max() <= 1e-4
            results[i].append(stream)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(arrays))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == [e] * 20 for r, e in zip(results, expected))
    assert _zfpsession.compiled()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "<M8[s]"])
def test_chunk_decoder_is_decompress(dtype: str) -> None:
    """The per-shape decoder codecs use gives decompress's values, and its errors word for word,
    for good, truncated, padded, empty and bit-flipped streams."""
    from numcodecs_ext.core.zfp import chunk_decoder

    mode, params = ("reversible", {}) if np.dtype(dtype).kind in "iuM" else ("fixed_rate", {"rate": 9})
    a = (np.random.default_rng(7).standard_normal((12, 10)) * 50).astype(dtype)
    good = compress(a, mode, **params)
    flipped = bytearray(good)
    flipped[5] ^= 0x10
    decode = chunk_decoder(a.shape, dtype, mode, **params)
    for stream in (good, good[:-8], good[:12], good + bytes(8), b"", bytes(flipped),
                   np.frombuffer(good, np.uint8), memoryview(good)):
        try:
            expected = decompress(stream, a.shape, dtype, mode, **params)
        except ValueError as exc:
            with pytest.raises(ValueError) as got:
                decode(stream)
            assert str(got.value) == str(exc)
        else:
            result = decode(stream)
            assert result.dtype == expected.dtype and result.shape == expected.shape
            np.testing.assert_array_equal(result.view("u1"), expected.view("u1"))


def test_codec_pickles_after_decoding_chunks() -> None:
    import pickle

    from numcodecs_ext.codecs.zfp import Zfp

    codec = Zfp(mode="fixed_accuracy", tolerance=1e-2)
    a = np.linspace(0, 1, 64, dtype="float32").reshape(8, 8)
    stream = codec.encode_chunk(a)
    first = codec.decode_chunk(stream, (8, 8), np.dtype("float32"))
    clone = pickle.loads(pickle.dumps(codec))
    assert clone == codec
    np.testing.assert_array_equal(clone.decode_chunk(stream, (8, 8), np.dtype("float32")), first)


@pytest.mark.parametrize("mode,params,dtype", _modes_and_dtypes(["float32", "float64", ">f4", "int32", "float16"]))
def test_chunk_encoder_is_compress(mode: str, params: dict, dtype: str) -> None:
    """The per-shape encoder codecs use gives compress's bytes and errors, in every layout and
    for the values the lossy checks refuse or look at closely."""
    from numcodecs_ext.core.zfp import chunk_encoder

    base = (np.random.default_rng(5).standard_normal((16, 12)) * 30).astype(dtype)
    encode = chunk_encoder(base.shape, base.dtype, mode, **params)
    cases = [base, np.asfortranarray(base), np.repeat(base, 2, axis=1)[:, ::2]]
    if base.dtype.kind == "f":
        for index, value in (((2, 3), np.nan), ((0, 0), np.inf), ((5, 5), 2.0**-120)):
            bad = base.copy()
            bad[index] = value
            cases.append(bad)
        tiny = np.zeros_like(base)
        tiny[:4, :4] = np.float32(2.0**-120)
        cases.append(tiny)
    for a in cases:
        try:
            expected = compress(a, mode, **params)
        except ValueError as exc:
            with pytest.raises(ValueError) as got:
                encode(a)
            assert str(got.value) == str(exc)
        else:
            assert encode(a) == expected
