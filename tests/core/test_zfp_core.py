"""numcodecs_ext.core.zfp: zarrs' bytes, round trips, edges and errors (real libzfp)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numcodecs_ext.core import _libzfp
from numcodecs_ext.core.zfp import check_config, check_dtype, compress, decompress, max_compressed_size

ml_dtypes = pytest.importorskip("ml_dtypes")

# 112 chunks zarrs (the reference implementation) wrote: fixtures/interop/zarrs-zfp-reversible/README.md
INTEROP = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "zarrs-zfp-reversible" / "chunks"
INTEROP_DIRS = sorted(p.name for p in INTEROP.iterdir())

LOSSY = [
    {"mode": "fixed_accuracy", "tolerance": 1e-3},
    {"mode": "fixed_rate", "rate": 12},
    {"mode": "fixed_precision", "precision": 24},
    {"mode": "expert", "minbits": 1, "maxbits": 16658, "maxprec": 30, "minexp": -30},
]
ALL_MODES = [{"mode": "reversible"}, *LOSSY]
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
SHAPES = [(), (7,), (5, 6), (3, 4, 5), (2, 3, 4, 5), (4, 4, 4, 4)]


def params(cfg: dict) -> tuple[str, dict]:
    cfg = dict(cfg)
    return cfg.pop("mode"), cfg


def sample(dtype: str, shape: tuple[int, ...], seed: int = 0, lossy: bool = False) -> np.ndarray:
    """A smooth field of ``dtype``; 32/64-bit integers span half their range, or with ``lossy``
    a quarter (zfp's lossy modes take int32 values in [-2**30, 2**30), int64 in [-2**62, 2**62))."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(getattr(ml_dtypes, dtype)) if dtype == "bfloat16" else np.dtype(dtype)
    n = math.prod(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        hi = min(int(info.max), 2**31 - 1 if dt.itemsize == 4 else 2**63 - 1)
        lo = max(int(info.min), -(2**31) if dt.itemsize == 4 else -(2**63))
        div = 4 if lossy and dt.itemsize >= 4 else 2
        smooth = np.linspace(lo // div, hi // div, n, dtype=np.float64)
        vals = (smooth + rng.integers(-100, 100, n)).clip(lo, hi)
        return vals.astype(dt).reshape(shape)
    x = np.cumsum(rng.standard_normal(n)).reshape(shape)
    return x.astype(dt)


# ---------------------------------------------------------------------------------------------
# zarrs interop: 112 genuine chunks


def _interop_dtype(cfg: dict) -> np.dtype:
    dt = cfg["data_type"]
    if isinstance(dt, dict):
        unit = dt["configuration"]["unit"]
        return np.dtype({"numpy.datetime64": f"M8[{unit}]", "numpy.timedelta64": f"m8[{unit}]"}[dt["name"]])
    return np.dtype(dt)


@pytest.mark.parametrize("name", INTEROP_DIRS)
def test_zarrs_chunk_decodes_and_reencodes_bit_for_bit(name: str) -> None:
    folder = INTEROP / name
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["codecs"] == [{"name": "zfp", "configuration": {"mode": "reversible"}}]
    expected = np.load(folder / "decoded.npy")
    encoded = (folder / "encoded.bin").read_bytes()
    dtype = _interop_dtype(cfg)
    decoded = decompress(encoded, tuple(cfg["chunk_shape"]), dtype, "reversible")
    assert decoded.dtype == dtype and decoded.shape == expected.shape
    assert decoded.tobytes() == expected.tobytes()
    assert compress(expected.view(dtype), "reversible") == encoded


# ---------------------------------------------------------------------------------------------
# round trips


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_reversible_round_trip_exact(dtype: str, shape: tuple[int, ...]) -> None:
    a = sample(dtype, shape)
    buf = compress(a, "reversible")
    assert len(buf) % 8 == 0
    b = decompress(buf, shape, a.dtype, "reversible")
    assert b.shape == shape and b.dtype == a.dtype
    assert b.tobytes() == a.tobytes()


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("cfg", LOSSY, ids=lambda c: c["mode"])
def test_lossy_float_round_trip(cfg: dict, dtype: str, shape: tuple[int, ...]) -> None:
    a = sample(dtype, shape)
    mode, p = params(cfg)
    b = decompress(compress(a, mode, **p), shape, a.dtype, mode, **p)
    assert b.shape == shape and b.dtype == a.dtype
    err = np.abs(b.astype(np.float64) - a.astype(np.float64)).max() if a.size else 0.0
    scale = max(1.0, float(np.abs(a.astype(np.float64)).max()))
    if mode == "fixed_accuracy":
        # zfp's bound, plus the rounding of float16/bfloat16 back from float32
        slack = 0.0 if dtype in ("float32", "float64") else scale * 2.0**-7
        assert err <= p["tolerance"] + slack
    elif mode == "fixed_rate" and len(shape) == 4:
        assert err <= scale * 0.5  # zarrs' quirk: a 4-D chunk gets rate / 4 bits per value
    else:
        assert err <= scale * 2.0**-6


@pytest.mark.parametrize("shape", SHAPES[1:], ids=str)
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("cfg", LOSSY[1:], ids=lambda c: c["mode"])
def test_lossy_int_round_trip(cfg: dict, dtype: str, shape: tuple[int, ...]) -> None:
    a = sample(dtype, shape, lossy=True)
    mode, p = params(cfg)
    b = decompress(compress(a, mode, **p), shape, a.dtype, mode, **p)
    assert b.shape == shape and b.dtype == a.dtype
    span = float(a.max()) - float(a.min()) + 1
    # zarrs' fixed_rate quirk gives a 4-D chunk only rate / 4 bits per value
    bound = 1.0 if mode == "fixed_rate" and len(shape) == 4 else 0.05
    assert np.abs(b.astype(np.float64) - a.astype(np.float64)).max() <= span * bound


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.int8, np.uint16]),
        shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=7),
        elements={"allow_nan": True, "allow_infinity": True} if False else None,
    )
)
def test_hypothesis_reversible_exact(a: np.ndarray) -> None:
    b = decompress(compress(a, "reversible"), a.shape, a.dtype, "reversible")
    assert b.tobytes() == a.tobytes()


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([np.float32, np.float64]),
        shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6),
        elements=st.floats(-1e6, 1e6, width=32),
    ),
    st.sampled_from([1e-4, 1e-2, 0.5, 10.0]),
)
def test_hypothesis_fixed_accuracy_bound(a: np.ndarray, tol: float) -> None:
    try:
        buf = compress(a, "fixed_accuracy", tolerance=tol)
    except ValueError as e:  # a block of only tiny values: libzfp would return it wrong
        assert "largest magnitude is below" in str(e)
        tiny = 2.0**-98 if a.dtype == np.float32 else 2.0**-962
        assert ((np.abs(a) > 0) & (np.abs(a) < tiny)).any()
        return
    b = decompress(buf, a.shape, a.dtype, "fixed_accuracy", tolerance=tol)
    # zfp cannot beat the precision of its 32/64-bit block-floating-point integers
    floor = float(np.abs(a).max()) * (2.0**-22 if a.dtype == np.float32 else 2.0**-50)
    assert np.abs(b.astype(np.float64) - a).max() <= max(tol, floor)


# ---------------------------------------------------------------------------------------------
# zarrs' exact behaviour


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_fixed_rate_uses_three_dims_like_zarrs(ndim: int) -> None:
    # zarrs: zfp_stream_set_rate(rate, type, 3, 0): 64 * rate bits per block whatever the dims
    shape = (4,) * ndim
    rate = 2
    buf = compress(np.zeros(shape, dtype="float64") + 1.5, "fixed_rate", rate=rate)
    assert len(buf) == 64 * rate // 8  # one block
    shape = (8,) * ndim  # 2**ndim blocks
    buf = compress(np.ones(shape, dtype="float32"), "fixed_rate", rate=rate)
    assert len(buf) == 2**ndim * 64 * rate // 8


def test_fixed_rate_float_minimum_bits_per_block() -> None:
    # zfp raises a float block's budget to 1 + 8 bits; 16 blocks of 9 bits = 144 bits -> 3 words
    buf = compress(np.ones(64, dtype="float32"), "fixed_rate", rate=0.01)
    assert len(buf) == 24


@pytest.mark.parametrize("dtype,bits", [("int8", 8), ("int16", 16), ("uint8", 8), ("uint16", 16)])
def test_promotion_matches_zfp_promote(dtype: str, bits: int) -> None:
    info = np.iinfo(dtype)
    a = np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, info.max - 1, info.max] * 3,
                 dtype=dtype)
    if np.dtype(dtype).kind == "u":
        promoted = (a.astype(np.int32) - (1 << (bits - 1))) << (31 - bits)
    else:
        promoted = a.astype(np.int32) << (31 - bits)
    for cfg in [{"mode": "reversible"}, {"mode": "fixed_precision", "precision": 10}]:
        mode, p = params(cfg)
        keep = slice(None) if mode == "reversible" else a != info.min
        # (a lossy int32 array may not hold -2**30, the promoted minimum of a signed type)
        assert compress(a[keep], mode, **p) == compress(promoted[keep], mode, **p)


@pytest.mark.parametrize(
    "dtype,expected",
    [
        ("int8", [127, -128, 0, 5, -6]),
        ("uint8", [255, 0, 128, 133, 122]),
        ("int16", [32767, -32768, 0, 5, -6]),
        ("uint16", [65535, 0, 32768, 32773, 32762]),
    ],
)
def test_demotion_clamps_like_zfp_demote(dtype: str, expected: list[int]) -> None:
    bits = np.dtype(dtype).itemsize * 8
    s = 31 - bits
    v = np.array([2**31 - 1, -(2**31), 0, (5 << s) + 3, (-6 << s) + 1], dtype=np.int32)
    out = decompress(compress(v, "reversible"), v.shape, dtype, "reversible")
    assert out.tolist() == expected


@pytest.mark.parametrize("dtype,limit", [("uint32", 2**31 - 1), ("uint64", 2**63 - 1)])
def test_uint_encodes_as_signed_and_refuses_clamped_values(dtype: str, limit: int) -> None:
    signed = np.dtype(dtype.replace("u", ""))
    a = np.array([0, 1, limit, 12345], dtype=dtype)
    assert compress(a, "reversible") == compress(a.view(signed), "reversible")
    with pytest.raises(ValueError, match=r"above 2\*\*(31|63) - 1.*zarrs clamps"):
        compress(np.array([0, limit + 1], dtype=dtype), "reversible")
    with pytest.raises(ValueError, match="zarrs clamps"):
        compress(np.array([np.iinfo(dtype).max], dtype=dtype), "fixed_precision", precision=8)


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_uint_decode_maps_negative_to_zero_like_zarrs(dtype: str) -> None:
    signed = np.dtype(dtype.replace("u", ""))
    v = np.array([-5, 7, -1, 0], dtype=signed)
    assert decompress(compress(v, "reversible"), (4,), dtype, "reversible").tolist() == [0, 7, 0, 0]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_fixed_accuracy_refuses_integers(dtype: str) -> None:
    with pytest.raises(TypeError, match="'fixed_accuracy' needs floating-point data"):
        compress(np.zeros(4, dtype=dtype), "fixed_accuracy", tolerance=0.5)
    with pytest.raises(TypeError, match="fixed_accuracy"):
        decompress(b"", (0,), dtype, "fixed_accuracy", tolerance=0.5)


def test_integer_fixed_rate_with_zero_bits_is_refused() -> None:
    with pytest.raises(ValueError, match="0 bits per block"):
        compress(np.zeros(4, dtype="int32"), "fixed_rate", rate=0.005)
    assert len(compress(np.zeros(16, dtype="int32"), "fixed_rate", rate=1 / 64)) == 8


def test_zero_d_is_a_one_element_field() -> None:
    for dt in ["float32", "int16", "uint64"]:
        a = np.array(3, dtype=dt)
        buf = compress(a, "reversible")
        assert buf == compress(a.reshape(1), "reversible")
        b = decompress(buf, (), dt, "reversible")
        assert b.shape == () and b == a


def test_more_than_four_dims_is_an_error() -> None:
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        compress(np.zeros((1, 1, 1, 1, 2), dtype="f4"), "reversible")
    with pytest.raises(ValueError, match="at most 4 dimensions"):
        decompress(b"", (1, 1, 1, 1, 2), "f4", "reversible")


def test_zero_size_arrays() -> None:
    assert compress(np.zeros((0, 3), dtype="f8"), "reversible") == b""
    out = decompress(b"", (0, 3), "f8", "reversible")
    assert out.shape == (0, 3)
    with pytest.raises(ValueError, match="zero-size"):
        decompress(b"\0" * 8, (0, 3), "f8", "reversible")


def test_memory_layout_and_byte_order_do_not_change_bytes() -> None:
    a = sample("float64", (6, 5, 4))
    ref = compress(a, "fixed_precision", precision=20)
    assert compress(np.asfortranarray(a), "fixed_precision", precision=20) == ref
    assert compress(a.astype(">f8"), "fixed_precision", precision=20) == ref
    big = np.empty((12, 5, 4))[::2]
    big[...] = a
    assert compress(big, "fixed_precision", precision=20) == ref
    b = decompress(ref, a.shape, ">f8", "fixed_precision", precision=20)
    assert b.dtype == np.dtype(">f8")
    assert np.array_equal(b, decompress(ref, a.shape, "f8", "fixed_precision", precision=20))


def test_datetime_and_timedelta_as_int64() -> None:
    a = np.array(["2020-01-01", "NaT", "1970-01-01", "2262-04-11"], dtype="M8[s]")
    buf = compress(a, "reversible")
    assert buf == compress(a.view("i8"), "reversible")
    assert np.array_equal(decompress(buf, (4,), "M8[s]", "reversible"), a, equal_nan=True)
    d = np.arange(5).astype("m8[ms]")
    assert np.array_equal(decompress(compress(d, "reversible"), (5,), "m8[ms]", "reversible"), d)


# ---------------------------------------------------------------------------------------------
# non-finite values


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("cfg", LOSSY, ids=lambda c: c["mode"])
def test_lossy_modes_refuse_non_finite(cfg: dict, dtype: str, bad: float) -> None:
    a = sample(dtype, (4, 4))
    a[1, 2] = bad
    mode, p = params(cfg)
    with pytest.raises(ValueError, match="non-finite.*'reversible'"):
        compress(a, mode, **p)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_lossy_modes_accept_huge_finite_values(dtype: str) -> None:
    """The finiteness check sums the values; an overflowing sum of finite values is still fine."""
    big = float(ml_dtypes.finfo(dtype).max) / 4  # summing 16 of these overflows (float32 for 16-bit types)
    a = np.full((4, 4), big).astype(dtype)
    a[::2] = np.asarray(-big / 2).astype(dtype)
    out = decompress(compress(a, "fixed_precision", precision=32), a.shape, dtype, "fixed_precision",
                     precision=32)
    assert np.allclose(out.astype(np.float64), a.astype(np.float64), rtol=1e-2)


@pytest.mark.parametrize("dtype,bits", [("float32", [0x7FC00001, 0xFF800000, 0x7F800000, 0x80000000, 0xFFC12345]),
                                        ("float64", [0x7FF8000000000001, 0xFFF0000000000000, 0x8000000000000000])])
def test_reversible_keeps_non_finite_bit_for_bit(dtype: str, bits: list[int]) -> None:
    u = np.dtype(dtype.replace("float", "uint"))
    a = np.array(bits * 5, dtype=u).view(dtype).reshape(-1)
    b = decompress(compress(a, "reversible"), a.shape, dtype, "reversible")
    assert b.view(u).tolist() == a.view(u).tolist()


def _specials(dtype: str) -> list[float]:
    """The values at every edge of the lossy checks: non-finite, the magnitude limit, the
    tiny-block threshold, subnormals, signed zeros, the extremes."""
    exp, tiny = (1022, 2.0**-962) if dtype == "float64" else (126, 2.0**-98)
    info = np.finfo(dtype)
    edges = [2.0**exp, np.nextafter(np.array(2.0**exp, dtype), 0), tiny,
             np.nextafter(np.array(tiny, dtype), 0), np.nextafter(np.array(tiny, dtype), 1),
             float(info.smallest_subnormal), float(info.tiny), float(info.max), 1.0, 0.0]
    values = [float(v) for v in edges] + [-float(v) for v in edges]
    return values + [math.nan, math.inf, -math.inf]


@given(st.sampled_from(["float32", "float64"]), st.data())
def test_value_checks_same_with_and_without_compiled_kernels(dtype: str, data) -> None:
    """The compiled one-pass scan and the numpy checks refuse exactly the same arrays, with the
    same message, and compress the others to the same bytes: in every layout."""
    from numcodecs_ext.core import _native

    values = data.draw(st.lists(st.sampled_from(_specials(dtype)) | st.floats(-1e3, 1e3, width=32),
                                min_size=1, max_size=40))
    a = np.array(values, dtype)
    layout = data.draw(st.sampled_from(["C", "swapped", "strided"]))
    if layout == "swapped":
        a = a.astype(a.dtype.newbyteorder())
    elif layout == "strided":
        a = np.repeat(a, 2)[::2]
    outcomes = []
    saved = _native.ENABLED
    try:
        for enabled in (True, False):
            _native.ENABLED = enabled
            try:
                outcomes.append(compress(a, "fixed_accuracy", tolerance=1e-3))
            except ValueError as exc:
                outcomes.append(str(exc))
    finally:
        _native.ENABLED = saved
    assert outcomes[0] == outcomes[1]
    if _native._compiled is not None:  # the scan itself, against numpy
        w = np.ascontiguousarray(a, dtype=dtype)
        finite = w[np.isfinite(w)]
        tiny = 2.0**-962 if dtype == "float64" else 2.0**-98
        lo, hi, nonfinite, has_tiny = _native._compiled.scan(w, w.itemsize, tiny)
        assert nonfinite == (finite.size < w.size)
        assert (lo, hi) == ((float(finite.min()), float(finite.max())) if finite.size
                            else (math.inf, -math.inf))
        assert has_tiny == bool(((np.abs(w) > 0) & (np.abs(w) < tiny)).any())


def test_reversible_equivalent_expert_accepts_non_finite() -> None:
    a = np.array([1.0, np.nan, np.inf, 2.0])
    p = dict(minbits=1, maxbits=16658, maxprec=64, minexp=-1075)
    assert compress(a, "expert", **p) == compress(a, "reversible")


# ---------------------------------------------------------------------------------------------
# configuration


@pytest.mark.parametrize(
    "cfg,exc,match",
    [
        ({}, ValueError, "has no 'mode'"),
        ({"mode": "lossless"}, ValueError, "not a zfp mode; valid modes: reversible"),
        ({"mode": 3}, ValueError, "not a zfp mode"),
        ({"mode": "reversible", "rate": 3}, ValueError, "does not take the key.*'rate'.*no parameters"),
        ({"mode": "fixed_rate"}, ValueError, "needs the key.*'rate'"),
        ({"mode": "fixed_rate", "rate": 0}, ValueError, "'rate' = 0 is out of range"),
        ({"mode": "fixed_rate", "rate": -1.5}, ValueError, "out of range"),
        ({"mode": "fixed_rate", "rate": 1e9}, ValueError, "out of range"),
        ({"mode": "fixed_rate", "rate": float("nan")}, ValueError, "must be finite"),
        ({"mode": "fixed_rate", "rate": "8"}, TypeError, "must be a number"),
        ({"mode": "fixed_rate", "rate": True}, TypeError, "must be a number"),
        ({"mode": "fixed_accuracy", "tolerance": -0.1}, ValueError, "'tolerance' = -0.1 is out of range"),
        ({"mode": "fixed_accuracy", "tolerance": float("inf")}, ValueError, "finite"),
        ({"mode": "fixed_accuracy", "tolerance": 0.1, "precision": 3}, ValueError, "does not take"),
        ({"mode": "fixed_precision", "precision": 0}, ValueError, r"out of range; it must be in \[1, 64\]"),
        ({"mode": "fixed_precision", "precision": 65}, ValueError, "out of range"),
        ({"mode": "fixed_precision", "precision": 2.5}, TypeError, "must be an integer"),
        ({"mode": "expert", "minbits": 1, "maxbits": 10, "maxprec": 10}, ValueError, "needs the key.*'minexp'"),
        ({"mode": "expert", "minbits": 20, "maxbits": 10, "maxprec": 10, "minexp": 0}, ValueError, "must not exceed"),
        ({"mode": "expert", "minbits": -1, "maxbits": 10, "maxprec": 10, "minexp": 0}, ValueError, "'minbits' = -1"),
        ({"mode": "expert", "minbits": 0, "maxbits": 2**32, "maxprec": 10, "minexp": 0}, ValueError, "'maxbits'"),
        ({"mode": "expert", "minbits": 0, "maxbits": 10, "maxprec": 0, "minexp": 0}, ValueError, "'maxprec' = 0"),
        ({"mode": "expert", "minbits": 0, "maxbits": 10, "maxprec": 65, "minexp": 0}, ValueError, "'maxprec'"),
        ({"mode": "expert", "minbits": 0, "maxbits": 10, "maxprec": 8, "minexp": 2**31}, ValueError, "'minexp'"),
        ({"mode": "expert", "minbits": 0, "maxbits": 0, "maxprec": 8, "minexp": 0}, ValueError, "'maxbits' = 0"),
    ],
)
def test_config_errors(cfg: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        check_config(cfg)


def test_config_normalized() -> None:
    assert check_config({"mode": "reversible"}) == {"mode": "reversible"}
    assert check_config({"mode": "fixed_accuracy", "tolerance": 0}) == {"mode": "fixed_accuracy", "tolerance": 0}
    assert check_config({"mode": "fixed_precision", "precision": 12.0}) == {"mode": "fixed_precision", "precision": 12}
    assert list(check_config({"minexp": -3, "maxprec": 4, "maxbits": 100, "minbits": 0, "mode": "expert"})) == [
        "mode", "minbits", "maxbits", "maxprec", "minexp"]


@pytest.mark.parametrize(
    "dtype,minexp,needed", [("float32", 0, 9), ("float64", 0, 12), ("float32", -1075, 15), ("float64", -1075, 19),
                            ("int32", -1075, 5), ("int64", -1075, 6)]
)
def test_expert_maxbits_below_block_header_is_refused(dtype: str, minexp: int, needed: int) -> None:
    # libzfp reads the block header regardless of maxbits; a smaller budget would underflow
    p = dict(minbits=0, maxbits=needed - 1, maxprec=32, minexp=minexp)
    with pytest.raises(ValueError, match=f"at least {needed} bits"):
        check_dtype(dtype, "expert", **p)
    p["maxbits"] = needed
    check_dtype(dtype, "expert", **p)
    a = sample(dtype, (5, 5), lossy=True)
    if minexp < -1074:  # the reversible coder under a bit budget returns garbage: not written
        with pytest.raises(ValueError, match="reversible coder"):
            compress(a, "expert", **p)
        return
    b = decompress(compress(a, "expert", **p), a.shape, dtype, "expert", **p)
    assert b.shape == a.shape


@pytest.mark.parametrize("dtype", ["bool", "complex64", "U3", "float8_e4m3fn", "O"])
def test_unsupported_dtypes(dtype: str) -> None:
    dt = np.dtype(getattr(ml_dtypes, dtype)) if dtype.startswith("float8") else np.dtype(dtype)
    with pytest.raises(TypeError, match="zfp cannot compress data type"):
        check_dtype(dt, "reversible")


# ---------------------------------------------------------------------------------------------
# decoding errors


@pytest.mark.parametrize("cfg", ALL_MODES, ids=lambda c: c["mode"])
def test_every_truncation_is_an_error(cfg: dict) -> None:
    mode, p = params(cfg)
    a = sample("float64", (6, 7))
    buf = compress(a, mode, **p)
    for n in range(len(buf)):
        with pytest.raises(ValueError, match="truncated|corrupt"):
            decompress(buf[:n], a.shape, a.dtype, mode, **p)


@pytest.mark.parametrize("cfg", ALL_MODES, ids=lambda c: c["mode"])
def test_trailing_bytes_and_oversize_are_errors(cfg: dict) -> None:
    mode, p = params(cfg)
    a = sample("float32", (9,))
    buf = compress(a, mode, **p)
    with pytest.raises(ValueError, match="extra"):
        decompress(buf + bytes(8), a.shape, a.dtype, mode, **p)
    with pytest.raises(ValueError, match="longer than any stream"):
        decompress(buf + bytes(8 * 200), a.shape, a.dtype, mode, **p)


def test_decode_accepts_buffers_and_out() -> None:
    a = sample("int16", (3, 4))
    buf = compress(a, "reversible")
    for b in (buf, bytearray(buf), memoryview(buf), np.frombuffer(buf, np.uint8), np.frombuffer(buf, "u8")):
        assert np.array_equal(decompress(b, a.shape, a.dtype, "reversible"), a)
    out = np.empty(12, dtype="int16")
    res = decompress(buf, a.shape, "int16", "reversible", out=out)
    assert np.shares_memory(res, out) and np.array_equal(res, a)
    with pytest.raises(ValueError, match="out must be"):
        decompress(buf, a.shape, "int16", "reversible", out=np.empty(12, dtype="int32"))


def test_max_compressed_size() -> None:
    a = sample("float32", (10, 10))
    for cfg in ALL_MODES:
        mode, p = params(cfg)
        assert len(compress(a, mode, **p)) <= max_compressed_size(a.shape, a.dtype, mode, **p)


# ---------------------------------------------------------------------------------------------
# threads and library loading


def test_threads_give_identical_bytes() -> None:
    arrays = [sample(dt, (32, 33, 5), seed=i, lossy=True)
              for i, dt in enumerate(["float32", "float64", "int32", "int16"] * 4)]
    cfgs = [{"mode": "reversible"}, {"mode": "fixed_precision", "precision": 16}]
    jobs = [(a, c) for a in arrays for c in cfgs]
    serial = [compress(a, **c) for a, c in jobs]

    def roundtrip(job):
        a, c = job
        enc = compress(a, **c)
        dec = decompress(enc, a.shape, a.dtype, **c)
        return enc, dec

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(roundtrip, jobs * 4))
    for i, (enc, dec) in enumerate(results):
        a, c = jobs[i % len(jobs)]
        assert enc == serial[i % len(jobs)]
        assert dec.shape == a.shape


def test_library_loaded_from_zfpy_wheel_without_importing_zfpy() -> None:
    code = (
        "import sys, numpy as np\n"
        "from numcodecs_ext.core import _libzfp, zfp\n"
        "zfp.compress(np.zeros(4), 'reversible')\n"
        "lib = _libzfp.load()\n"
        "print(lib.path)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != _libzfp.ENV_VAR}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "zfpy" in res.stdout and "libzfp" in res.stdout
    # the wheel's library is found from the distribution's file list, without importing zfpy
    assert any("libzfp" in p for p in _libzfp._zfpy_candidates())


def test_missing_library_fails_only_on_use_with_hint() -> None:
    code = (
        "import numpy as np\n"
        "import numcodecs_ext.core.zfp as z\n"
        "from numcodecs_ext.codecs.zfp import Zfp\n"
        "c = Zfp(mode='reversible')\n"
        "try:\n"
        "    c.encode(np.zeros(4))\n"
        "except ImportError as e:\n"
        "    print('IMPORTERROR', e)\n"
    )
    env = dict(os.environ, **{_libzfp.ENV_VAR: "/nonexistent/libzfp.so"})
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "IMPORTERROR" in res.stdout and "pip install" in res.stdout and "/nonexistent/libzfp.so" in res.stdout


def test_library_checks() -> None:
    lib = _libzfp.load()
    assert lib.word_bits == 64 and lib.codec_version == 5
    assert "zfp version" in lib.version


def test_reversible_keeps_every_nan_payload_of_the_16_bit_floats() -> None:
    """float16 and bfloat16 go through float32; reversible mode gives back every bit pattern
    (ml_dtypes' float32 -> bfloat16 cast would canonicalise NaNs, and warn)."""
    import warnings

    for dt in (np.dtype("float16"), np.dtype(ml_dtypes.bfloat16)):
        codes = np.arange(2**16, dtype=np.uint16).view(dt).reshape(256, 256)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = decompress(compress(codes, "reversible"), codes.shape, dt, "reversible")
        assert out.view(np.uint16).tobytes() == codes.view(np.uint16).tobytes()
