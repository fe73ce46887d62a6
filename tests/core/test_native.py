"""The compiled kernels against the numpy kernels: the same bits, the same errors, everywhere.

The numpy kernels are the reference (their semantics are pinned by test_cast_value and
test_fused, which run on both). Here every configuration the compiled float -> integer loop
takes is run element by element over adversarial values (ties, range edges, NaN payloads,
infinities, signed zeros, huge values), then on long arrays whose blocks take the vectorised
path, and the compiled look-up over every code of the narrow types.
"""

from __future__ import annotations

import contextlib
import itertools
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numcodecs_ext.core import _native, codetable, fused
from numcodecs_ext.core import scale_offset as so
from numcodecs_ext.core.cast_value import (
    OUT_OF_RANGE_MODES,
    ROUNDING_MODES,
    cast_array,
    numeric_info,
)
from tests.helpers import examples

pytestmark = pytest.mark.usefixtures("compiled")

INT_TARGETS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
MODES = [None, *OUT_OF_RANGE_MODES]


@contextlib.contextmanager
def compiled(on: bool):
    saved = _native.ENABLED
    _native.ENABLED = on
    try:
        yield
    finally:
        _native.ENABLED = saved


def _run(fn, args, kwargs):
    """(result bytes, dtype, shape) or ("error", message)."""
    try:
        r = fn(*args, **kwargs)
    except ValueError as e:
        return ("error", str(e))
    return (np.ascontiguousarray(r).tobytes(), r.dtype, r.shape)


def _both(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with the compiled kernels and without: the same result or error."""
    with compiled(True):
        got = _run(fn, args, kwargs)
    with compiled(False):
        want = _run(fn, args, kwargs)
    assert got == want
    return got


def _edges(src: np.dtype, tgt: np.dtype) -> np.ndarray:
    """Values that probe every branch: ties, range edges, specials, NaN payloads."""
    info = np.iinfo(tgt)
    lo, hi = float(info.min), float(info.max)
    vals = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, 1e-310, -1e-310,
            7.0, 7.25, 7.5, 7.75, -7.25, -7.5, -7.75, lo, hi, lo - 0.5, hi + 0.5, lo - 0.25,
            hi + 0.25, lo - 1, hi + 1, lo - 0.75, hi + 0.75, 2.0**31, -(2.0**31), 2.0**32,
            2.0**53 + 2, 2.0**63, -(2.0**63), 2.0**64, -(2.0**64), 2.0**64 - 2048, 1e300, -1e300,
            3.4e38, np.inf, -np.inf, np.nan]
    with np.errstate(over="ignore"):  # 1e300 becomes inf in float32
        x = np.array(vals, np.float64).astype(src)
    bits = np.dtype(f"u{src.itemsize}")
    payloads = [0x7FF0000000000001, 0xFFF8000000000000, 0x7FF8000000000123] if src.itemsize == 8 \
        else [0x7F800001, 0xFFC00000, 0x7FC00123]
    return np.concatenate([x, np.array(payloads, bits).view(src)])


def _maps(src: np.dtype) -> list[list[tuple[float, int]]]:
    payload = np.array(0x7FF8000000000123 if src.itemsize == 8 else 0x7FC00123,
                       f"u{src.itemsize}").view(src)[()]
    return [[], [(np.nan, 3)], [(payload, 9), (np.nan, 3)], [(7.0, 1), (0.0, 2)],
            [(np.inf, 5), (-np.inf, 6), (np.nan, 3), (300.0, 4)]]


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("tgt", [t if t in ("uint8", "int16", "uint32", "int64", "uint64") else
                                 pytest.param(t, marks=pytest.mark.full) for t in INT_TARGETS])
@pytest.mark.parametrize("affine", [False, True])
def test_float_to_int_every_branch(src, tgt, affine) -> None:
    """Element by element (so every error is seen), every rounding, mode and map."""
    src, tgt = np.dtype(src), np.dtype(tgt)
    x = _edges(src, tgt)
    for rounding, mode, smap in itertools.product(ROUNDING_MODES, MODES, _maps(src)):
        kw = {"rounding": rounding, "out_of_range": mode, "scalar_map": smap}
        for v in x:
            a = np.array([v])
            if affine:
                _both(fused.encode, a, 2.5, 2, tgt, **kw)
            else:
                _both(cast_array, a, tgt, **kw)


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("tgt", INT_TARGETS)
def test_long_arrays_take_the_vector_path(src, tgt) -> None:
    """Long arrays: blocks without specials take the vectorised path, the rest the scalar one,
    and an error found in the middle of an array is reported like the numpy kernels' error."""
    src, tgt = np.dtype(src), np.dtype(tgt)
    rng = np.random.default_rng(0)
    info = np.iinfo(tgt)
    span = min(float(info.max) - float(info.min), 2.0**40)
    x = (rng.uniform(-0.1, 1.1, 20000) * span + float(info.min)).astype(src)
    x[::97] = np.round(x[::97]) + 0.5  # ties
    x[5000:5003] = np.nan  # specials in one block only
    for rounding in ROUNDING_MODES:
        smap = [(np.nan, 1), (float(x[7]), 2)]
        for mode in ("clamp", "wrap"):
            got = _both(cast_array, x, tgt, rounding=rounding, out_of_range=mode,
                        scalar_map=smap)
            assert got[0] != "error"
        inside = np.clip(x, float(info.min) / 2, float(info.max) / 2).astype(src)
        inside[5000:5003] = np.nan
        err = _both(cast_array, inside, tgt, rounding=rounding)
        assert err[0] == "error" and "has no NaN" in err[1]
        got = _both(fused.encode, inside, 0, 1, tgt, rounding=rounding,
                    scalar_map=[(np.nan, 0)])
        assert got[0] != "error"


@pytest.mark.parametrize("tgt", ["int8", "uint8", "int16", "uint16"])
def test_float32_lanes(tgt) -> None:
    """float32 into targets of up to 16 bits runs in float lanes (twice as many per instruction
    as double lanes): the same bits as the numpy kernels for float32 bit patterns of every
    exponent, ties, values around the rounding trick's 2**23, the range edges, and a map key
    (0.1) that becomes its float32 value."""
    tgt = np.dtype(tgt)
    rng = np.random.default_rng(4)
    info = np.iinfo(tgt)
    lo, hi = float(info.min), float(info.max)
    anywhere = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    f = np.float32
    near = [2.0**23 - 1.5, 2.0**23 - 0.5, 2.0**23, 2.0**23 + 1, 2.0**24 - 1, 2.0**24, 2.0**24 + 2,
            lo - 0.5, lo - 1, hi + 0.5, hi + 1, lo + 0.5, hi - 0.5]
    ties = np.arange(-300, 300, dtype=np.float32) + f(0.5)
    edges = np.array(near + [-v for v in near] + [np.nextafter(f(v), f(0)) for v in near]
                     + [np.nextafter(f(v), f(np.inf)) for v in near], np.float32)
    in_range = rng.uniform(lo - 3, hi + 3, 6000).astype(np.float32)
    in_range[::500] = f(0.1)
    x = np.concatenate([in_range, ties, edges])
    x_specials = np.concatenate([x, anywhere])
    for rounding, mode in itertools.product(ROUNDING_MODES, ("clamp", "wrap", None)):
        for smap in ([], [(np.nan, 0)], [(np.nan, 3), (7.0, 1), (0.1, 2)],
                     [(np.inf, 5), (-np.inf, 6), (np.nan, 3)]):
            kw = {"rounding": rounding, "out_of_range": mode, "scalar_map": smap}
            for arr in (x, x_specials):
                _both(cast_array, arr, tgt, **kw)
                _both(fused.encode, arr, f(-12.25), f(3.0), tgt, **kw)


def test_scale_offset_overflow_is_declined_to_the_numpy_error() -> None:
    x = np.full(3000, 1.0)
    x[2222] = 1e308
    err = _both(fused.encode, x, -1e308, 10, "uint8", out_of_range="clamp")
    assert err[0] == "error" and "overflows float64" in err[1]


@pytest.mark.parametrize("layout", ["F", "reversed", "big-endian", "0-d", "unaligned"])
def test_layouts(layout) -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(-20, 300, (60, 70))
    x[3, 4] = np.nan
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "reversed":
        x = x[::-1, ::-2]
    elif layout == "big-endian":
        x = x.astype(">f8")
    elif layout == "0-d":
        x = np.array(12.5)
    else:
        raw = np.zeros(x.size * 8 + 1, np.uint8)[1:]
        x = np.frombuffer(raw, np.float64).reshape(x.shape)
        x[...] = rng.uniform(-20, 300, x.shape)
        assert not x.flags.aligned
    kw = {"out_of_range": "clamp", "scalar_map": [(np.nan, 0)]}
    got = _both(cast_array, x, "uint8", **kw)
    assert got[0] != "error" and got[2] == x.shape
    got = _both(fused.encode, x, -10, 0.5, "int16", **kw)
    assert got[0] != "error" and got[2] == x.shape


@settings(max_examples=examples(150), deadline=None)
@given(x=hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(0, 3000),
                    elements={"allow_nan": True, "allow_infinity": True}),
       tgt=st.sampled_from(INT_TARGETS), rounding=st.sampled_from(ROUNDING_MODES),
       mode=st.sampled_from(MODES), nan_to=st.sampled_from([None, 0, 100]),
       affine=st.sampled_from([None, (0.5, 3.0), (-1e3, 1e-3)]))
def test_any_floats(x, tgt, rounding, mode, nan_to, affine) -> None:
    smap = [] if nan_to is None else [(np.nan, nan_to)]
    kw = {"rounding": rounding, "out_of_range": mode, "scalar_map": smap}
    if affine is None:
        _both(cast_array, x, tgt, **kw)
    else:
        _both(fused.encode, x, affine[0], affine[1], tgt, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("direction", ["encode", "decode"])
def test_scale_offset_float(dtype, direction) -> None:
    """scale_offset alone: signed zeros, subnormals, NaN payloads (signalling too), infinities,
    and overflows, which the numpy kernels report."""
    dt = np.dtype(dtype)
    bits = np.dtype(f"u{dt.itemsize}")
    tiny = np.finfo(dt).smallest_subnormal
    big = np.finfo(dt).max
    x = np.array([0.0, -0.0, 1.0, -2.5, tiny, -tiny, 1e-30, 3e4, np.inf, -np.inf, np.nan,
                  big / 4, -big / 4], dt)
    payloads = np.array([0x7FF0000000000001, 0xFFF8000000000123] if dt.itemsize == 8
                        else [0x7F800001, 0xFFC00123], bits).view(dt)
    x = np.concatenate([x, payloads])
    run = so.encode if direction == "encode" else so.decode
    for off, sc in ((0, 1), (-10, 0.1), (1e-30, 3), (-0.0, -7), (tiny, 1e30), (big / 2, 0.5)):
        for v in x:
            _both(run, np.array([v]), off, sc)  # element by element: each overflow on its own
        _both(run, np.tile(x, 300), off, sc)
        _both(run, np.tile(x[:-2], 300), off, sc)


NARROW = ["uint8", "int8", "uint16", ">i2", "float16", ">f2", "bfloat16", "float8_e4m3fn",
          "float8_e5m2", "int4", "uint4"]


@pytest.mark.parametrize("codes", NARROW)
@pytest.mark.parametrize("tgt", ["float64", "float32", "float16", "bfloat16", "int32"])
def test_code_table_cast_every_code(codes, tgt) -> None:
    """cast_value decoding through the compiled look-up: every code, 16 times, shuffled."""
    src = numeric_info(np.dtype(getattr(ml_dtypes, codes, None) or codes).newbyteorder("="))
    src_dtype = np.dtype(getattr(ml_dtypes, codes, None) or codes)
    tgt = np.dtype(getattr(ml_dtypes, tgt, None) or tgt)
    dom = codetable.domain(src_dtype)
    x = np.tile(dom, codetable.MIN_ELEMENTS_PER_CODE)
    np.random.default_rng(2).shuffle(x)
    smap = [(dom[1], 0)]  # a map: otherwise some of these casts are plain numpy casts
    if tgt.kind in "iu" and not src.is_int:  # the specials need a map to become integers
        smap += [(np.nan, 0)] + ([(np.inf, 1), (-np.inf, 2)] if src.has_inf else [])
    got = _both(cast_array, x, tgt, out_of_range="clamp", scalar_map=smap)
    assert got[0] != "error"
    key = ("cast", x.dtype, tgt, "nearest-even", "clamp",
           tuple((codetable.exactly(k), codetable.exactly(v)) for k, v in smap))
    assert codetable.lookup(key, x[:1], lambda: None) is not None  # the table was used


def test_kernel_arguments_are_checked() -> None:
    k = _native._compiled
    with pytest.raises(ValueError, match="wrong size"):
        k.take(np.zeros(4, np.uint8), np.zeros(255), np.zeros(4), 1, 8)
    with pytest.raises(ValueError, match="code_size"):
        k.take(np.zeros(4, np.uint8), np.zeros(2**24), np.zeros(4), 3, 8)
    with pytest.raises(ValueError, match="equal length"):
        k.f2i(np.zeros(4), np.zeros(3, np.uint8), 8, 1, False, False, 0.0, 1.0, 0, 1,
              *(np.zeros(0, t) for t in (np.uint8, np.float64, np.uint64, np.uint64, np.uint64)))
    with pytest.raises(ValueError, match="unsupported"):
        k.f2i(np.zeros(4), np.zeros(4, np.uint8), 2, 1, False, False, 0.0, 1.0, 0, 1,
              *(np.zeros(0, t) for t in (np.uint8, np.float64, np.uint64, np.uint64, np.uint64)))
    with pytest.raises(TypeError):
        k.f2i(b"\0" * 8, bytes(1), 8, 1, False, False, 0.0, 1.0, 0, 1, b"", b"", b"", b"")


def test_threads_run_in_parallel_and_agree() -> None:
    """The loops release the GIL; results from several threads at once are the same."""
    rng = np.random.default_rng(3)
    xs = [rng.uniform(-10, 2600, 300_000) for _ in range(6)]
    kw = {"out_of_range": "clamp", "scalar_map": [(np.nan, 0)]}
    want = [fused.encode(x, -10, 0.1, "uint8", **kw) for x in xs]
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda x: fused.encode(x, -10, 0.1, "uint8", **kw), xs))
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))


def test_status_names_the_kernels_in_use() -> None:
    assert _native.status() == "compiled kernels in use"
    with compiled(False):
        assert "switched off" in _native.status() and _native.kernels() is None
