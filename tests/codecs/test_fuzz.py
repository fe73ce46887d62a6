"""Property and corruption fuzzing of every codec, through the numcodecs API and zarr v3.

Properties (hypothesis): random shapes (0-d and empty included), every supported dtype, C, F,
strided and byte-swapped input, extreme values. Every encode either refuses with a ValueError
(the documented refusals: out of range, not representable, non-finite in lossy zfp ...) or
decodes back as the README's guarantees table says: exactly, or within the stated bound.

Corruption (a subprocess with an address-space cap, so that a crash or a GiB allocation fails
the test instead of the machine): truncated, extended, bit-flipped and wrongly shaped chunks go
through every decoder; each gives a ValueError or an array of the declared shape and dtype.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from fractions import Fraction
from typing import Any

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

from numcodecs_ext import CastValue, ScaleOffset, Transpose, Zfp
from numcodecs_ext.core import zfp as zfp_core
from tests.helpers import examples

NUMPY_INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
NUMPY_FLOATS = ["float16", "float32", "float64"]
ML = ["bfloat16", "float8_e4m3", "float8_e5m2", "int4", "uint4"]


def _dt(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if name in ML else np.dtype(name)


@st.composite
def arrays(draw, dtypes, max_dims=4, max_side=6, finite=False):
    name = draw(st.sampled_from(dtypes))
    dt = _dt(name)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=max_side))
    if name in ML:  # ml_dtypes: every bit pattern (int4/uint4 keep their low four bits)
        bits = draw(hnp.arrays(np.dtype(f"u{dt.itemsize}"), shape))
        if name in ("int4", "uint4"):
            bits &= 0x0F
            if name == "int4":  # sign-extended, as ml_dtypes stores them
                bits = np.where(bits & 0x08, bits | 0xF0, bits).astype(np.uint8)
        a = bits.view(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = draw(hnp.arrays(dt, shape, elements=st.integers(int(info.min), int(info.max))))
    else:
        a = draw(hnp.arrays(dt, shape, elements=st.floats(
            width=8 * dt.itemsize, allow_nan=not finite, allow_infinity=not finite)))
    return name, a


def layouts(a: np.ndarray, draw_layout: str) -> np.ndarray:
    if draw_layout == "F" and a.ndim >= 2:
        return np.asfortranarray(a)
    if draw_layout == "strided" and a.ndim >= 1:
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if draw_layout == "swapped" and a.dtype.itemsize > 1 and a.dtype.isbuiltin:
        return a.astype(a.dtype.newbyteorder())
    return a


LAYOUT = st.sampled_from(["C", "F", "strided", "swapped"])


def bits_equal(x: np.ndarray, y: np.ndarray) -> bool:
    x, y = np.ascontiguousarray(x), np.ascontiguousarray(y)
    if x.dtype.byteorder not in "=|":
        x = x.astype(x.dtype.newbyteorder("="))
    if y.dtype.byteorder not in "=|":
        y = y.astype(y.dtype.newbyteorder("="))
    return x.shape == y.shape and x.tobytes() == y.tobytes()


# --- transpose: exact, any permutation, any layout -------------------------------------------

@settings(max_examples=examples(150), deadline=None)
@given(arrays(NUMPY_INTS + NUMPY_FLOATS + ["bfloat16"], max_dims=5), st.randoms(), LAYOUT)
def test_transpose_round_trip(drawn, rnd, layout) -> None:
    name, a = drawn
    order = list(range(a.ndim))
    rnd.shuffle(order)
    codec = Transpose(order=order, shape=list(a.shape), dtype=name)
    x = layouts(a, layout)
    if x.ndim >= 2 and x.flags.f_contiguous and not x.flags.c_contiguous:
        with pytest.raises(ValueError, match="Fortran-ordered"):
            codec.encode(x)
        return
    if not x.dtype.isnative:  # a configured dtype fixes the byte order decode() returns
        with pytest.raises(ValueError, match="byte order"):
            codec.encode(x)
        return
    enc = codec.encode(x)
    assert bits_equal(enc, a.transpose(order))
    assert bits_equal(codec.decode(enc), a)
    assert bits_equal(codec.decode(enc.tobytes()), a)


# --- scale_offset: exact for integers, the dtype's own two operations for floats --------------

@settings(max_examples=examples(200), deadline=None)
@given(arrays(NUMPY_INTS + NUMPY_FLOATS), st.data(), LAYOUT)
def test_scale_offset_round_trip(drawn, data, layout) -> None:
    name, a = drawn
    dt = a.dtype
    if dt.kind in "iu":
        info = np.iinfo(dt)
        offset = data.draw(st.integers(int(info.min), int(info.max)))
        scale = data.draw(st.integers(max(int(info.min), -1000), min(int(info.max), 1000)).filter(bool))
    else:
        big = 1e3 if dt.itemsize == 2 else 1e6
        offset = data.draw(st.floats(-big, big, width=8 * dt.itemsize))
        scale = data.draw(st.floats(0.0625, 1e3, width=8 * dt.itemsize)
                          | st.floats(-1e3, -0.0625, width=8 * dt.itemsize))
    codec = ScaleOffset(offset=offset, scale=scale, dtype=name)
    x = layouts(a, layout)
    try:
        enc = codec.encode(x)
    except ValueError as e:
        if "byte order" in str(e):  # a configured dtype fixes the byte order decode() returns
            return
        assert "outside the range" in str(e) or "overflows" in str(e), e
        if dt.kind in "iu":  # integers refuse only when some (x - offset) * scale is out of range
            shifted = [int(v) - offset for v in a.reshape(-1)]
            assert any(not info.min <= v <= info.max for v in shifted) or any(
                not info.min <= v * scale <= info.max for v in shifted)
        return
    dec = codec.decode(np.ascontiguousarray(enc).tobytes())
    if dt.kind in "iu":
        assert bits_equal(dec.reshape(a.shape), a)
    else:
        with np.errstate(all="ignore"):
            ref_enc = np.multiply(np.subtract(a, dt.type(offset), dtype=dt), dt.type(scale), dtype=dt)
            ref_dec = np.add(np.divide(ref_enc, dt.type(scale), dtype=dt), dt.type(offset), dtype=dt)
        assert bits_equal(enc, ref_enc) or np.array_equal(enc, ref_enc, equal_nan=True)
        assert np.array_equal(dec.reshape(a.shape), ref_dec, equal_nan=True)


# --- cast_value: errors only for values the spec says are errors; exact values come back -----

@settings(max_examples=examples(250), deadline=None)
@given(arrays(NUMPY_INTS + NUMPY_FLOATS + ML), st.data(), LAYOUT)
def test_cast_value_round_trip(drawn, data, layout) -> None:
    name, a = drawn
    target = data.draw(st.sampled_from(NUMPY_INTS + NUMPY_FLOATS + ML))
    tdt = _dt(target)
    rounding = data.draw(st.sampled_from(["nearest-even", "towards-zero", "towards-positive",
                                          "towards-negative", "nearest-away"]))
    modes = [None, "clamp"] + (["wrap"] if tdt.kind in "iu" or target in ("int4", "uint4") else [])
    mode = data.draw(st.sampled_from(modes))
    codec = CastValue(data_type=target, rounding=rounding, out_of_range=mode, dtype=name)
    x = layouts(a, layout)
    try:
        enc = codec.encode(x)
    except ValueError as e:
        assert any(s in str(e) for s in ("cannot convert", "byte order")), e
        return
    assert enc.shape == a.shape and enc.dtype == tdt
    try:
        dec = codec.decode(np.ascontiguousarray(enc).tobytes())
    except ValueError as e:  # e.g. a clamped uint64 maximum that the float source cannot hold
        assert "cannot convert" in str(e), e
        return
    dec = dec.reshape(a.shape)
    # elements the target holds exactly (same value back) must come back bit for bit, NaN as NaN
    with np.errstate(all="ignore"):
        wide_a = a.astype(np.float64) if a.dtype.kind not in "iu" else a.astype(object)
        wide_d = dec.astype(np.float64) if dec.dtype.kind not in "iu" else dec.astype(object)
        wide_e = enc.astype(np.float64) if enc.dtype.kind not in "iu" else enc.astype(object)
    for va, vd, ve in zip(np.asarray(wide_a).reshape(-1), np.asarray(wide_d).reshape(-1),
                          np.asarray(wide_e).reshape(-1)):
        if isinstance(va, float) and va != va:
            continue  # NaN: mapped or an error, checked by the cast tests
        if _exact(va) == _exact(ve):  # held exactly by the target: it comes back
            assert _exact(vd) == _exact(va), (va, ve, vd)


def test_exact_comparison_sees_what_float64_hides() -> None:
    assert _exact(np.int64(2**54 - 1)) != _exact(np.float64(2**54))
    assert _exact(np.int64(2**54)) == _exact(np.float64(2**54)) and _exact(-0.0) == _exact(0)
    assert _exact(np.float32(np.inf)) == math.inf


def _exact(v: Any) -> Any:
    """A number compared by value, exactly (int64 2**54 - 1 and float64 2**54 differ; numpy would
    compare them as float64 and find them equal); infinities as they are."""
    v = v.item() if isinstance(v, np.generic) else v
    return v if isinstance(v, float) and not math.isfinite(v) else Fraction(v)


# --- zfp: reversible exact, lossy within its bound or refused --------------------------------

ZFP_MODES = [
    {"mode": "reversible"},
    {"mode": "fixed_accuracy", "tolerance": 1e-2},
    {"mode": "fixed_precision", "precision": 32},
    {"mode": "fixed_rate", "rate": 16},
    {"mode": "expert", "minbits": 0, "maxbits": 16658, "maxprec": 40, "minexp": -30},
]


@settings(max_examples=examples(200), deadline=None)
@given(arrays(NUMPY_INTS + ["float32", "float64", "float16", "bfloat16"], max_side=9),
       st.sampled_from(ZFP_MODES), LAYOUT)
def test_zfp_round_trip(drawn, cfg, layout) -> None:
    name, a = drawn
    if cfg["mode"] == "fixed_accuracy" and a.dtype.kind in "iu":
        return  # refused at construction with the dtype (tested elsewhere)
    codec = Zfp(**cfg, shape=list(a.shape), dtype=name)
    x = layouts(a, layout)
    try:
        enc = codec.encode(x)
    except ValueError as e:
        documented = ("Fortran-ordered", "byte order", "cannot store", "non-finite", "magnitude",
                      "can only encode")
        assert any(s in str(e) for s in documented), e
        return
    dec = codec.decode(enc)
    assert dec.shape == a.shape and dec.dtype == a.dtype
    if cfg["mode"] == "reversible":
        assert bits_equal(dec, a)
        return
    wide_a, wide_d = a.astype(np.float64), dec.astype(np.float64)
    assert np.isfinite(wide_d).all()  # lossy modes only ever see finite values
    if cfg["mode"] == "fixed_accuracy":
        assert np.abs(wide_d - wide_a).max(initial=0) <= accuracy_bound(a, 1e-2)


def accuracy_bound(a: np.ndarray, tolerance: float) -> float:
    """fixed_accuracy's documented bound (README), with the largest block exponent taken over
    the whole array: max(tolerance, (c(d) + 1) * 2**(E - K) + ulp(max)), 1.5x that in 1-D (where
    a tolerance in [2**(E+1), 3 * 2**E) can be exceeded by up to 1.44x), plus the rounding back
    to float16/bfloat16."""
    d = max(1, a.ndim)
    wide = np.abs(a.astype(np.float64))
    top = wide.max(initial=0)
    if top == 0:
        return tolerance
    e = int(np.frexp(top)[1])
    k = 62 if a.dtype == np.float64 else 30
    c = {1: 2, 2: 9, 3: 30, 4: 105}[d]
    ulp = float(np.spacing(np.float32(top))) if a.dtype != np.float64 else float(np.spacing(top))
    bound = max(tolerance, (c + 1) * 2.0 ** (e - k) + ulp) * (1.5 if d == 1 else 1.0)
    if a.dtype.itemsize == 2:  # float16 / bfloat16: decoded float32 rounded to the type
        bound += float(np.spacing(np.float32(top))) * (2**13 if a.dtype == np.float16 else 2**16)
    return bound


# --- corruption: every decoder, in a subprocess with an address-space cap --------------------

CORRUPT = textwrap.dedent(r'''
    import random, resource, sys, warnings
    warnings.simplefilter("error")
    import numpy as np
    from numcodecs_ext import CastValue, ScaleOffset, Transpose, Zfp
    from numcodecs_ext.zarr3 import CastValue as V3Cast, ScaleOffset as V3SO, Transpose as V3T

    # 1 GiB of address space above what the interpreter already uses: a decoder that allocated
    # by what corrupt bytes claim would die here with MemoryError
    soft = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2**30, vm + 2**30))

    rng = random.Random(int(sys.argv[1]))
    x = np.cumsum(np.random.default_rng(1).standard_normal((12, 10)), axis=0) * 10
    cases = [
        (ScaleOffset(offset=3, scale=0.5, dtype="float64"), x),
        (ScaleOffset(offset=7, scale=3, dtype="int32"), (x * 100).astype("int32")),
        (CastValue(data_type="uint8", out_of_range="clamp", dtype="float64",
                   scalar_map={"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}), np.abs(x) + 1),
        (CastValue(data_type="float16", dtype="float64"), x),
        (CastValue(data_type="int8", dtype="float32", rounding="towards-zero", out_of_range="wrap"),
         x.astype("float32")),
        (Transpose(order=[1, 0], shape=[12, 10], dtype="float64"), x),
        (Zfp(mode="fixed_precision", precision=20, shape=[12, 10], dtype="float64"), x),
    ]
    n = errors = 0
    for codec, a in cases:
        enc = np.ascontiguousarray(codec.encode(a)).tobytes()
        variants = [enc[:k] for k in range(0, len(enc), max(1, len(enc) // 40))]
        variants += [enc + rng.randbytes(rng.randrange(1, 64)) for _ in range(20)]
        for _ in range(200):
            b = bytearray(enc)
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(b) * 8)
                b[i // 8] ^= 1 << (i % 8)
            variants.append(bytes(b))
        variants += [b"", b"\xff" * len(enc), rng.randbytes(len(enc) * 3)]
        item = np.asarray(codec.encode(a)).itemsize if codec.elementwise else None
        for buf in variants:
            n += 1
            try:
                out = codec.decode(buf)
            except ValueError:
                errors += 1
                continue
            # element-wise codecs decode the elements there are; the others the configured shape
            expected = len(buf) // item if item else a.size
            assert np.asarray(out).size == expected, (codec, len(buf))
        # zarr v3 chunk decoders with wrong declared shapes
        v3 = {"scale_offset": V3SO, "cast_value": V3Cast, "transpose": V3T}.get(codec.codec_id)
        if v3 is not None:
            for shape in [(12, 10), (10, 12), (120,), (13, 10), (1_000_000, 1_000_000), ()]:
                n += 1
                try:
                    out = codec.decode_chunk(np.frombuffer(enc, np.uint8), shape, a.dtype)
                except ValueError:
                    errors += 1
                    continue
                assert out.size == int(np.prod(shape)), shape
    print(n, errors)
''')


@pytest.mark.parametrize("seed", [1, 2])
def test_corrupt_chunks_every_decoder(seed: int) -> None:
    done = subprocess.run([sys.executable, "-c", CORRUPT, str(seed)], capture_output=True,
                          text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    n, errors = map(int, done.stdout.split())
    assert n >= 1500 and errors > 0


def test_zfp_guarantees_at_the_dtype_extremes() -> None:
    """Lossy zfp refuses exactly what it would return wrong, and keeps every value it takes
    finite and inside the documented bound, at the limits of each type."""
    for dtype in ("int32", "int64", "uint32", "uint64"):
        info = np.iinfo(dtype)
        exp = 30 if np.dtype(dtype).itemsize == 4 else 62
        inside = np.array([max(int(info.min), -(2**exp) + 1), 2**exp - 1] * 8, dtype).reshape(4, 4)
        for cfg in ZFP_MODES[2:]:
            mode, params = cfg["mode"], {k: v for k, v in cfg.items() if k != "mode"}
            out = zfp_core.decompress(zfp_core.compress(inside, mode, **params), inside.shape, dtype,
                                      mode, **params)
            assert np.abs(out.astype(object) - inside.astype(object)).max() < 2 ** (exp - 4)
            for edge in ([2**exp] if dtype.startswith("u") else [-(2**exp), 2**exp, int(info.min)]):
                outside = inside.copy()
                outside[0, 0] = edge
                with pytest.raises(ValueError, match="can only encode"):
                    zfp_core.compress(outside, mode, **params)
    for dtype, exp in (("float32", 126), ("float64", 1022)):
        big = np.array([2.0**exp * (1 - 2.0**-20), -(2.0**exp) * (1 - 2.0**-20)] * 8, dtype).reshape(4, 4)
        for cfg in ZFP_MODES[1:]:
            mode, params = cfg["mode"], {k: v for k, v in cfg.items() if k != "mode"}
            out = zfp_core.decompress(zfp_core.compress(big, mode, **params), big.shape, dtype,
                                      mode, **params)
            assert np.isfinite(out).all()
            with pytest.raises(ValueError, match="magnitude"):
                zfp_core.compress(np.full((4, 4), np.finfo(dtype).max, dtype), mode, **params)
    # float16 through float32: a lossy value never rounds past the largest half to infinity
    half = np.full((4, 4, 4), 65504.0, "float16")
    for rate in (1, 2, 4):
        out = zfp_core.decompress(zfp_core.compress(half, "fixed_rate", rate=rate), half.shape,
                                  "float16", "fixed_rate", rate=rate)
        assert np.isfinite(out).all()


def test_zfp_refuses_what_libzfp_returns_wrong() -> None:
    """Found by adversarial search (tests/.. README guarantees): a checkerboard of -2**30 and
    2**30-1 wraps even at full precision; a float block whose largest magnitude is tiny but not
    zero comes back as -2**(E+1) everywhere; too few bit planes flip integer signs."""
    board = np.array([[-(2**30), 2**30 - 1] * 2, [2**30 - 1, -(2**30)] * 2] * 2, "int32")
    with pytest.raises(ValueError, match="can only encode"):
        zfp_core.compress(board, "fixed_precision", precision=64)
    for dtype, tiny in (("float32", 3e-30), ("float64", 1e-300)):
        block = np.array([tiny, -tiny / 2, tiny / 4, 0], dtype)
        with pytest.raises(ValueError, match="largest magnitude is below"):
            zfp_core.compress(block, "fixed_accuracy", tolerance=0.0)
        mixed = np.array([1.0, tiny, tiny, tiny, 0, 0, 0, 0], dtype)  # a large value: fine
        out = zfp_core.decompress(zfp_core.compress(mixed, "fixed_precision", precision=64),
                                  mixed.shape, dtype, "fixed_precision", precision=64)
        assert np.abs(out - mixed).max() < 1e-6
        zeros = np.zeros((4, 4), dtype)  # all-zero blocks are fine
        assert not zfp_core.decompress(zfp_core.compress(zeros, "fixed_rate", rate=4), zeros.shape,
                                       dtype, "fixed_rate", rate=4).any()
    flips = np.array([-128, -128, 127, 127], "int8")
    for ndim, need in ((1, 4), (2, 6), (3, 8), (4, 10)):
        a = np.resize(flips, (4,) * ndim).astype("int8")
        with pytest.raises(ValueError, match="too few bit planes"):
            zfp_core.compress(a, "fixed_precision", precision=need - 1)
        out = zfp_core.decompress(zfp_core.compress(a, "fixed_precision", precision=need), a.shape,
                                  "int8", "fixed_precision", precision=need)
        assert (np.sign(out.astype(int)) == np.sign(a.astype(int))).all()


def test_review_findings_stay_fixed() -> None:
    """Refusals an adversarial review asked for: each names what works instead."""
    from numcodecs_ext.codecs.cast_value import MAX_MAP_ENTRIES

    # expert's reversible coder under a bit budget turned finite data into NaN
    a = np.zeros((4, 4))
    a[1, 2], a[3, 1], a[3, 2] = -1e200, 1e100, -1.0
    with pytest.raises(ValueError, match="reversible coder"):
        Zfp(mode="expert", minbits=0, maxbits=64, maxprec=64, minexp=-1075).encode(a)
    lossless = Zfp(mode="expert", minbits=0, maxbits=16658, maxprec=64, minexp=-1075)
    assert bits_equal(lossless.decode(lossless.encode(a), out=np.empty_like(a)), a)
    # a rate that makes the stream mostly padding (65x for 1-D float64 at the largest rate)
    with pytest.raises(ValueError, match="mostly padding"):
        Zfp(mode="fixed_rate", rate=260.28125).encode(np.zeros(8))
    Zfp(mode="fixed_rate", rate=260.28125).encode(np.zeros((4, 4, 4)))  # 3-D: 64 bits a value
    # low-precision integer streams others wrote still decode (only encoding refuses them)
    stream = zfp_core.compress(np.arange(16, dtype="int32").reshape(4, 4), "fixed_precision",
                               precision=12)
    zfp_core.check_chunk((4, 4), "int32", "fixed_precision", precision=3)
    assert zfp_core.decompress(stream, (4, 4), "int32", "fixed_precision", precision=12).shape == (4, 4)
    # a hex NaN key matches exactly its bits, even the canonical NaN's
    codec = CastValue(data_type="uint8", dtype="float64", scalar_map={"encode": [
        ["0x7ff8000000000000", 0], ["0x7ff8000000000001", 1], ["0x7ff8000000000002", 2]]})
    nans = np.array([0x7FF8000000000002, 0x7FF8000000000001, 0x7FF8000000000000], np.uint64)
    assert codec.encode(nans.view(np.float64)).tolist() == [2, 1, 0]
    # hex values give every bit of their type
    with pytest.raises(ValueError, match="16 hex digits"):
        ScaleOffset(offset="0x10", dtype="float64")
    # maps are bounded
    with pytest.raises(ValueError, match="at most 65536"):
        CastValue(data_type="uint16", scalar_map={"encode": [[i, 0] for i in range(MAX_MAP_ENTRIES + 1)]})
