"""scale_offset + cast_value fused into one pass: identical to the two steps."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numcodecs_ext.codecs.cast_value import CastValue
from numcodecs_ext.codecs.scale_offset import ScaleOffset
from numcodecs_ext.core import cast_value, codetable, fused
from numcodecs_ext.core.scale_offset import decode as so_decode

#: every test here runs with the compiled kernels and with numpy's alone
pytestmark = pytest.mark.usefixtures("kernels")

NAN_MAP = {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}

#: (array dtype, offset, scale, CastValue config): float and integer sources, clamp, wrap,
#: maps, a float target with its own rounding, and an ml_dtypes target
CHAINS = [
    ("float64", -10, 0.1, {"data_type": "uint8", "out_of_range": "clamp", "scalar_map": NAN_MAP}),
    ("float32", 3.5, 4, {"data_type": "int16", "rounding": "nearest-away", "out_of_range": "wrap"}),
    ("float64", 1, 1e-3, {"data_type": "float16", "rounding": "towards-zero"}),
    ("float64", 0, 8, {"data_type": "float8_e4m3fnuz", "out_of_range": "clamp",
                       "scalar_map": {"encode": [["Infinity", "0x7f"]]}}),
    ("int32", 1000, 3, {"data_type": "uint16", "out_of_range": "clamp"}),
    ("uint16", 1000, 1, {"data_type": "uint8", "out_of_range": "wrap",
                         "scalar_map": {"encode": [[1255, 7]], "decode": [[7, 1255]]}}),
    ("bfloat16", 2, 0.5, {"data_type": "int8", "rounding": "towards-negative",
                          "out_of_range": "clamp"}),
]


def _two_steps_encode(x, so, cv):
    return cv.encode_chunk(so.encode_chunk(x))


def _two_steps_decode(enc, so, cv, dtype):
    return so.decode(cv.decode_chunk(enc, enc.shape, dtype))  # decode(): never in place


def _error(fn):
    try:
        fn()
    except ValueError as e:
        return str(e)
    return None


def _values(dtype: np.dtype, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
    x = rng.normal(0, 200, n)
    x[rng.random(n) < 0.05] = np.nan
    return x.astype(dtype)


@pytest.mark.parametrize("dtype,offset,scale,config", CHAINS)
@pytest.mark.parametrize("n", [0, 1, 1000, 300_001])  # 300_001: several blocks and a remainder
def test_core_matches_two_steps(dtype, offset, scale, config, n) -> None:
    dt = np.dtype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    so, cv = ScaleOffset(offset=offset, scale=scale), CastValue(**config)
    off, sc = so._parameters(dt)
    x = _values(dt, n, n)
    if dt.kind in "iu" and config["data_type"] == "uint16":  # keep within the encodable range
        x = np.clip(x, -(2**31) // 3 + 1000, 2**31 // 3)
    args = cv.cast_arguments(dt, "encode")
    want_err = _error(lambda: _two_steps_encode(x, so, cv))
    got_err = _error(lambda: fused.encode(x, off, sc, **args))
    assert got_err == want_err
    if want_err is not None:
        return
    enc = fused.encode(x, off, sc, **args)
    assert enc.tobytes() == _two_steps_encode(x, so, cv).tobytes()
    dec = fused.decode(enc, offset=off, scale=sc, **cv.cast_arguments(dt, "decode"))
    assert dec.tobytes() == _two_steps_decode(enc, so, cv, dt).tobytes()


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(0, 70), elements=st.floats(allow_nan=True, allow_infinity=True)),
       rounding=st.sampled_from(cast_value.ROUNDING_MODES),
       mode=st.sampled_from([None, "clamp", "wrap"]))
def test_core_matches_two_steps_any_values(x, rounding, mode) -> None:
    """Errors included: the same message for the same first offending value."""
    so = ScaleOffset(offset=-1.5, scale=3)
    cv = CastValue(data_type="int8", rounding=rounding, out_of_range=mode, scalar_map=NAN_MAP)
    off, sc = so._parameters(x.dtype)
    want = _error(lambda: _two_steps_encode(x, so, cv))
    assert _error(lambda: fused.encode(x, off, sc, **cv.cast_arguments(x.dtype, "encode"))) == want


@settings(max_examples=60, deadline=None)
@given(x=hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(allow_nan=True, allow_infinity=True)),
       rounding=st.sampled_from(cast_value.ROUNDING_MODES),
       mode=st.sampled_from([None, "clamp", "wrap"]), layout=st.sampled_from(["C", "strided", "2-D F"]))
def test_chunk_encoder_gives_encode_bytes(x, rounding, mode, layout) -> None:
    """The per-shape encoder zarr's chunks take: encode()'s bytes, or None where encode() must
    run (an element that is an error, which encode() then raises)."""
    cv = CastValue(data_type="int16", rounding=rounding, out_of_range=mode, scalar_map=NAN_MAP)
    args = cv.cast_arguments(x.dtype, "encode")
    target = args.pop("dtype")
    if layout == "strided":
        x = np.repeat(x, 2)[::2]
    elif layout == "2-D F" and x.size % 2 == 0 and x.size:
        x = np.asfortranarray(x.reshape(2, -1))
    off, sc = np.float64(-1.5), np.float64(3.0)
    fast = fused.chunk_encoder(x.dtype, x.shape, target, off, sc, **args)
    from numcodecs_ext.core import _native

    assert (fast is None) == (_native.kernels() is None)
    if fast is None:
        return
    err = _error(lambda: fused.encode(x, off, sc, target, **args))
    got = fast(x)
    if err is not None or not x.size:
        assert got is None
    else:
        want = fused.encode(x, off, sc, target, **args)
        assert got is not None and got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    with np.errstate(over="ignore"):
        assert fast(x.astype(">f8")) is None and fast(x.astype("float32")) is None


def test_layouts_and_byte_order() -> None:
    # (values at or above the offset: none clamps onto the NaN code 0, which would be refused)
    x = np.abs(_values(np.dtype("float64"), 6 * 7 * 5, 1)).reshape(6, 7, 5)
    so, cv = ScaleOffset(offset=-10, scale=0.1), CastValue(**CHAINS[0][3])
    want = _two_steps_encode(x, so, cv)
    for view in (x.astype(">f8"), np.asfortranarray(x), x[:, ::-1][:, ::-1], x.copy()):
        got = fused.encode(view, np.float64(-10), np.float64(0.1),
                           **cv.cast_arguments(np.dtype("float64"), "encode"))
        assert got.flags.c_contiguous and got.tobytes() == want.tobytes()
    zero_d = fused.encode(np.array(2.0), np.float64(-10), np.float64(0.1), "uint8")
    assert zero_d.shape == () and zero_d[()] == 1


def test_decode_overflow_error_names_the_chunk_index() -> None:
    """Decoding in the output: the value is gone, the error gives its index in the chunk."""
    codes = np.zeros(200_000, np.uint8)
    codes[150_000] = 255
    with pytest.raises(ValueError, match="flat index 150000 .* overflows float32"):
        fused.decode(codes, "float32", np.float32(0), np.float32(1e-38))


# --- decoding one- and two-byte codes through the code table ----------------------------------

#: (codes dtype, decoded dtype, offset, scale, decode scalar_map, table): whether a table plan
#: must be made (when not, the general pass runs)
CODE_CASES = [
    ("uint8", "float64", -10, 0.1, [[0, "NaN"]], True),  # the benchmark's chain
    ("int8", "float32", 0.5, 3, [[-128, "NaN"], [127, "Infinity"], [0, -0.0]], True),
    ("uint16", "float64", 1e5, 1e-3, [[65535, "NaN"]], True),
    (">i2", "float32", -7, 0.37, [], True),
    ("<i2", "float16", 2, 64, [[-32768, "NaN"]], True),
    ("float16", "float64", 0, 10, [["NaN", -1]], True),  # "NaN": every NaN payload
    (">f2", "float16", 1, 2, [], True),
    ("bfloat16", "float32", 2, 1.5, [["0x7fc1", 0]], True),
    ("float8_e5m2", "float64", 0, 3, [], True),
    ("int4", "float32", 0, 0.25, [[-8, "NaN"]], True),
    ("uint8", "float32", 0, 1e-38, [], False),  # 255 / 1e-38 overflows float32: no table
    ("int16", "float16", 0, 1e-3, [], False),  # most int16 / 1e-3 overflow float16
    ("float16", "float16", 1, 0.5, [], False),  # 65504 / 0.5 overflows float16
]


def _code_case(codes_dtype, decoded, offset, scale, scalar_map):
    src = np.dtype(getattr(ml_dtypes, codes_dtype, None) or codes_dtype)
    dt = np.dtype(decoded)
    so = ScaleOffset(offset=offset, scale=scale)
    cv = CastValue(data_type=src.newbyteorder("=").name, scalar_map={"decode": scalar_map})
    off, sc = so._parameters(dt)
    args = cv.cast_arguments(dt, "decode")
    return src, dt, off, sc, args


def _every_code(src: np.dtype, repeat: int, seed: int) -> np.ndarray:
    """Every bit pattern of ``src`` ``repeat`` times, shuffled."""
    n = 1 << (8 * src.itemsize)
    bits = np.tile(np.arange(n, dtype=f"u{src.itemsize}"), repeat)
    np.random.default_rng(seed).shuffle(bits)
    return bits.astype(np.dtype(f"u{src.itemsize}").newbyteorder(
        src.byteorder if src.itemsize > 1 else "=")).view(src)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("case", CODE_CASES, ids=lambda c: f"{c[0]}->{c[1]}")
def test_code_table_decode_is_exact_for_every_code(case) -> None:
    """Every bit pattern, each many times over: the same bits as cast then scale_offset."""
    codes_dtype, decoded, offset, scale, scalar_map, table = case
    src, dt, off, sc, args = _code_case(codes_dtype, decoded, offset, scale, scalar_map)
    codes = _every_code(src, codetable.MIN_ELEMENTS_PER_CODE + 1, seed=len(codes_dtype))
    plan = fused._code_plan(codes, dt, off, sc, args["rounding"], args["out_of_range"],
                            args["scalar_map"])
    assert (plan is not None) == table
    if plan is not None:
        formula = plan.formula
        assert formula.op in (np.multiply, np.divide)
        assert len(formula.exceptions) <= fused.MAX_EXCEPTIONS
    want_err = _error(lambda: so_decode(cast_value.cast_array(codes, **args), off, sc))
    got_err = _error(lambda: fused.decode(codes, offset=off, scale=sc, **args))
    assert (got_err is None) == (want_err is None)  # (the fused pass names the index instead)
    if want_err is None:
        want = so_decode(cast_value.cast_array(codes, **args), off, sc)
        got = fused.decode(codes, offset=off, scale=sc, **args)
        assert got.dtype == dt and _bits(got) == _bits(want)
        # the same codes laid out otherwise: 2-d, Fortran order, reversed strides
        grid = codes[: codes.size // 4 * 4].reshape(4, -1)
        for view in (np.asfortranarray(grid), grid[::-1, ::-1]):
            got = fused.decode(view, offset=off, scale=sc, **args)
            want = so_decode(cast_value.cast_array(view, **args), off, sc)
            assert got.shape == view.shape and _bits(got) == _bits(want)


@pytest.mark.parametrize("case", CODE_CASES, ids=lambda c: f"{c[0]}->{c[1]}")
def test_chunk_decoder_gives_decode_bits(case) -> None:
    """Once a table exists (and the compiled look-up runs), the per-shape decoder zarr's chunks
    take gives decode()'s bits; for any chunk it does not take, it says so (None)."""
    codes_dtype, decoded, offset, scale, scalar_map, table = case
    src, dt, off, sc, args = _code_case(codes_dtype, decoded, offset, scale, scalar_map)
    codes = _every_code(src, codetable.MIN_ELEMENTS_PER_CODE + 1, seed=3)
    cast = {k: v for k, v in args.items() if k != "dtype"}
    if _error(lambda: fused.decode(codes, offset=off, scale=sc, **args)) is not None:
        assert fused.chunk_decoder(src, codes.shape, dt, off, sc, **cast) is None
        return
    grid = codes[: codes.size // 4 * 4].reshape(4, -1)
    fast = fused.chunk_decoder(src, grid.shape, dt, off, sc, **cast)
    from numcodecs_ext.core import _native

    assert (fast is not None) == (table and _native.kernels() is not None)
    if fast is None:
        return
    got = fast(grid)
    want = fused.decode(grid, offset=off, scale=sc, **args)
    assert got.dtype == want.dtype and got.shape == grid.shape and _bits(got) == _bits(want)
    others = [np.asfortranarray(grid), grid[::-1, ::-1], grid[:2], grid[:, :-1]]
    if src.itemsize > 1:  # the other byte order, and codes at an odd address (not aligned)
        others.append(grid.astype(grid.dtype.newbyteorder()))
        odd = np.empty(grid.nbytes + 1, np.uint8)[1:].view(src).reshape(grid.shape)
        odd[...] = grid
        others.append(odd)
    for other in others:
        assert fast(other) is None


def test_code_table_map_entries_and_small_arrays() -> None:
    """Map values are written from the table; arrays too small to repay building a table take
    the general pass and agree, but use a table already built; tables are cached."""
    src, dt, off, sc, args = _code_case("uint8", "float64", -10, 0.1,
                                        [[0, "NaN"], [255, 7.5], [0, 1.0]])
    codes = _every_code(src, 40, seed=1)
    got = fused.decode(codes, offset=off, scale=sc, **args)
    assert np.isnan(got[codes == 0]).all() and (got[codes == 255] == 7.5 / 0.1 - 10).all()
    assert (got[codes == 3] == 3 / 0.1 - 10).all()
    plan = fused._code_plan(codes, dt, off, sc, args["rounding"], None, args["scalar_map"])
    assert sorted((how, key) for how, key, _ in plan.formula.exceptions) == [
        ("bits", 0), ("bits", 255)]
    assert _bits(plan.table) == _bits(so_decode(cast_value.cast_array(
        codetable.domain(src), **args), off, sc))
    small = codes[:100]
    assert fused._code_plan(small, dt, off, sc, args["rounding"], None,
                            args["scalar_map"]) is plan  # cached: used at any size
    assert _bits(fused.decode(small, offset=off, scale=sc, **args)) == _bits(got[:100])
    # a "NaN" key covers all 2046 NaN codes of float16: one selection by isnan, not 2046
    h_src, h_dt, h_off, h_sc, h_args = _code_case("float16", "float64", 0, 10, [["NaN", -1]])
    h_plan = fused._code_plan(_every_code(h_src, 16, 0), h_dt, h_off, h_sc, "nearest-even", None,
                              h_args["scalar_map"])
    assert [(how, float(v)) for how, _, v in h_plan.formula.exceptions] == [("nan", -1 / 10)]
    # a configuration never seen, on an array too small to repay a table: the general pass
    _, n_dt, n_off, n_sc, n_args = _code_case("uint8", "float64", 3, 0.7, [[9, "NaN"]])
    n_small = codes[: codetable.MIN_ELEMENTS_PER_CODE * 256 - 1]
    codetable._SEEN.clear()  # (the other kernels' run of this test counted the same key)
    codetable._CACHE.clear()
    assert fused._code_plan(n_small, n_dt, n_off, n_sc, "nearest-even", None,
                            n_args["scalar_map"]) is None
    want = so_decode(cast_value.cast_array(n_small, **n_args), n_off, n_sc)
    assert _bits(fused.decode(n_small, offset=n_off, scale=n_sc, **n_args)) == _bits(want)
    # ... but many small chunks of one configuration earn a table, as one large chunk does
    tiny = n_small[:64]
    for _ in range(codetable.MIN_CALLS):
        assert _bits(fused.decode(tiny, offset=n_off, scale=n_sc, **n_args)) == _bits(want[:64])
    assert fused._code_plan(tiny, n_dt, n_off, n_sc, "nearest-even", None,
                            n_args["scalar_map"]) is not None
    assert _bits(fused.decode(tiny, offset=n_off, scale=n_sc, **n_args)) == _bits(want[:64])


def test_code_table_errors_come_from_the_general_pass() -> None:
    """No table when some code raises; the error appears only if such a code is present."""
    _, dt, off, sc, args = _code_case("uint8", "float32", 0, 1e-37, [])
    ok = np.tile(np.arange(30, dtype=np.uint8), 500)  # 29 / 1e-37 still fits float32
    assert fused._code_plan(ok, dt, off, sc, "nearest-even", None, []) is None
    assert _bits(fused.decode(ok, offset=off, scale=sc, **args)) == _bits(
        so_decode(cast_value.cast_array(ok, **args), off, sc))
    bad = ok.copy()
    bad[7777] = 255
    with pytest.raises(ValueError, match="flat index 7777 .* overflows float32"):
        fused.decode(bad, offset=off, scale=sc, **args)


@settings(max_examples=40, deadline=None)
@given(offset=st.floats(-1e6, 1e6), scale=st.floats(1e-6, 1e6),
       codes_dtype=st.sampled_from(["uint8", "int8", "float8_e5m2"]),
       decoded=st.sampled_from(["float16", "float32", "float64"]),
       nan_value=st.sampled_from([None, 0, "NaN"]))
def test_code_table_decode_any_parameters(offset, scale, codes_dtype, decoded, nan_value) -> None:
    scalar_map = [] if nan_value is None else [[1, nan_value]]
    try:
        src, _, off, sc, args = _code_case(codes_dtype, decoded, offset, scale, scalar_map)
    except ValueError:  # offset or scale not representable in float16
        return
    codes = _every_code(src, codetable.MIN_ELEMENTS_PER_CODE, seed=0)
    want_err = _error(lambda: so_decode(cast_value.cast_array(codes, **args), off, sc))
    got_err = _error(lambda: fused.decode(codes, offset=off, scale=sc, **args))
    assert (got_err is None) == (want_err is None)
    if want_err is None:
        assert _bits(fused.decode(codes, offset=off, scale=sc, **args)) == _bits(
            so_decode(cast_value.cast_array(codes, **args), off, sc))
