"""numcodecs FixedScaleOffset and AsType as spec codecs: proven against numcodecs itself, over
every code of the 8- and 16-bit stored types and over values that wrap."""

from __future__ import annotations

import warnings

import numcodecs
import numpy as np
import pytest

from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.migrate.filters import NotExpressible, filter_codecs

CLASSES = {"scale_offset": ScaleOffset, "cast_value": CastValue}
CONFIGS = [(1000, 10), (0.5, 3.3), (-273.15, 0.01), (12.25, 1 / 7), (0, 1), (1e6, 1e-3)]
STORED = ["|u1", "|i1", "<u2", "<i2", ">u2", ">i2"]


def _chain(codecs: list[dict], dtype: np.dtype, shape: tuple[int, ...]) -> list[tuple]:
    out = []
    for c in codecs:
        codec = CLASSES[c["name"]].from_v3_configuration(c.get("configuration", {}))
        out.append((codec, dtype))
        _, dtype, _ = codec.resolve_spec(shape, dtype, None, strict=False)
    return out


def chain_decode(codecs: list[dict], codes: np.ndarray, dtype: str) -> np.ndarray:
    x = codes.astype(codes.dtype.newbyteorder("="))
    for codec, dt in reversed(_chain(codecs, np.dtype(dtype), codes.shape)):
        x = codec.decode_chunk(x, codes.shape, dt)
    return x


def chain_encode(codecs: list[dict], x: np.ndarray) -> np.ndarray:
    for codec, _ in _chain(codecs, x.dtype, x.shape):
        x = codec.encode_chunk(x)
    return x


def _every_code(stored: str) -> np.ndarray:
    dt = np.dtype(stored)
    return np.arange(2 ** (8 * dt.itemsize), dtype=f"u{dt.itemsize}").view(dt.newbyteorder("=")).astype(dt)


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
    return a.view(f"u{a.itemsize}")


@pytest.mark.parametrize("data", ["<f8", "<f4", "<f2", ">f4"])
@pytest.mark.parametrize("stored", STORED)
def test_fixed_scale_offset_decodes_every_code_bit_for_bit(data: str, stored: str) -> None:
    for offset, scale in CONFIGS:
        config = {"id": "fixedscaleoffset", "offset": offset, "scale": scale, "dtype": data, "astype": stored}
        codes = _every_code(stored)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # float16 overflows to infinity
            want = numcodecs.get_codec(config).decode(codes.copy())
        codecs, out = filter_codecs(config, data)
        assert out == np.dtype(stored)
        got = chain_decode(codecs, codes, data)
        assert np.array_equal(_bits(got), _bits(want)), (offset, scale)


@pytest.mark.parametrize("stored", STORED + ["<u4", "<i4"])
def test_float64_encodes_every_value_identically_wrap_included(stored: str) -> None:
    """float64: the same codes as numcodecs, including the values numpy's astype wraps (within
    the range where numpy's float to integer cast is defined)."""
    rng = np.random.default_rng(3)
    dt = np.dtype(stored)
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    span = float(hi) - float(lo) + 1
    for offset, scale in CONFIGS:
        config = {"id": "fixedscaleoffset", "offset": offset, "scale": scale, "dtype": "<f8", "astype": stored}
        codes = rng.uniform(lo - 3 * span, hi + 3 * span, 20000)  # a quarter in range, the rest wraps
        codes = codes[np.abs(codes) < 2**31]
        ties = np.floor(codes[:2000]) + 0.5  # round half to even, as np.around
        x = np.concatenate([codes, ties]) / scale + offset
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy notes the casts that wrap
            want = numcodecs.get_codec(config).encode(x.copy())
        got = chain_encode(filter_codecs(config, "<f8")[0], x)
        assert np.array_equal(_bits(got), _bits(want)), (offset, scale)


@pytest.mark.parametrize("data", ["<f4", "<f2"])
def test_narrow_floats_encode_identically_with_match_encode(data: str) -> None:
    rng = np.random.default_rng(4)
    for offset, scale in [(1000, 10), (0.5, 3.3), (12.25, 0.25)]:
        config = {"id": "fixedscaleoffset", "offset": offset, "scale": scale, "dtype": data, "astype": "<u2"}
        top = 65535 / scale + offset if data == "<f4" else min(65504, 6000 / scale + offset)
        x = rng.uniform(offset, top, 20000).astype(data)
        want = numcodecs.get_codec(config).encode(x.copy())
        codecs, _ = filter_codecs(config, data, match="encode")
        assert [c["name"] for c in codecs] == ["scale_offset", "cast_value"]
        assert np.array_equal(chain_encode(codecs, x), want)


def test_nan_is_refused_where_numcodecs_writes_an_arbitrary_code() -> None:
    config = {"id": "fixedscaleoffset", "offset": 0, "scale": 10, "dtype": "<f8", "astype": "<u2"}
    with pytest.raises(ValueError, match="NaN"):
        chain_encode(filter_codecs(config, "<f8")[0], np.array([1.0, np.nan]))


def test_integer_data_with_unit_scale() -> None:
    config = {"id": "fixedscaleoffset", "offset": 1000, "scale": 1, "dtype": "<i4", "astype": "<i2"}
    codecs, out = filter_codecs(config, "<i4")
    codes = _every_code("<i2")
    assert np.array_equal(chain_decode(codecs, codes, "<i4"), numcodecs.get_codec(config).decode(codes))
    x = np.array([1000, 1001, 0, 40000, -32768 + 1000], "<i4")
    assert np.array_equal(chain_encode(codecs, x), numcodecs.get_codec(config).encode(x))
    with pytest.raises(NotExpressible, match="scale 1"):
        filter_codecs({**config, "scale": 2}, "<i4")


@pytest.mark.parametrize("decoded, encoded", [
    ("<f8", "<f4"), ("<f4", "<f2"), ("<f8", "<f2"), ("<i4", "<i2"), ("<i8", "|u1"), ("<u2", "|i1"),
    ("<f8", "<i2"), ("<f4", "|u1"), ("<i2", "<f4"), ("|u1", "<f2"), ("<i4", "<f8")])
def test_astype_both_ways(decoded: str, encoded: str) -> None:
    config = {"id": "astype", "encode_dtype": encoded, "decode_dtype": decoded}
    codecs, out = filter_codecs(config, decoded)
    assert out == np.dtype(encoded)
    ref = numcodecs.get_codec(config)
    rng = np.random.default_rng(5)
    d = np.dtype(decoded)
    if d.kind == "f":
        x = rng.standard_normal(5000) * (300 if np.dtype(encoded).kind == "f" else 100)
        x = np.concatenate([x, [0.5, -0.5, 1.5, -2.5, 0.0, -0.0, 1e300, -1e300, np.inf, -np.inf, np.nan]])
    else:
        info = np.iinfo(d)
        x = rng.integers(info.min, info.max, 5000, dtype=d, endpoint=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy notes overflow and wrapping
        x = x.astype(decoded)
        if np.dtype(encoded).kind != "f":  # (NaN and infinity: numcodecs writes arbitrary codes)
            x = x[np.isfinite(x)]
        want = ref.encode(x.copy())
    got = chain_encode(codecs, x)
    assert np.array_equal(_bits(got), _bits(want))
    back = ref.decode(want.copy())
    assert np.array_equal(_bits(chain_decode(codecs, np.asarray(want), decoded)), _bits(back))


def test_what_cannot_be_expressed_says_why() -> None:
    for config, dtype, match in [
        ({"id": "fixedscaleoffset", "offset": 0, "scale": 1, "dtype": "<f8", "astype": "<f4"}, "<f8", "integer"),
        ({"id": "fixedscaleoffset", "offset": 0, "scale": 0, "dtype": "<f8", "astype": "<u2"}, "<f8", "non-zero"),
        ({"id": "fixedscaleoffset", "offset": 0, "scale": 1, "dtype": "<f8", "astype": "<u2"}, "<f4", "reinterpret"),
        ({"id": "astype", "encode_dtype": "<i4", "decode_dtype": "<f4"}, "<f4", "cannot hold"),
        ({"id": "astype", "encode_dtype": "<U3", "decode_dtype": "<f4"}, "<f4", "integer and float"),
    ]:
        with pytest.raises(NotExpressible, match=match):
            filter_codecs(config, dtype)
    with pytest.raises(ValueError, match="match"):
        filter_codecs({"id": "astype"}, "<f4", match="both")
