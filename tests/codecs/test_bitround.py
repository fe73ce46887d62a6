"""bitround: the spec's sample tables, zarrs' integer rounding, numcodecs' float bytes, the edges."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

from numcodecs_ext import BitRound, zarr3
from numcodecs_ext.core.bitround import bitround, plan
from tests.helpers import examples

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "interop" / "zarr-extensions-bitround"

# the spec's sample tables (zarr-extensions codecs/bitround/sample_data/README.md), keepbits 3
F32_IN = np.array([0.0, 0.1, 1.2, 12.3, 123.4, 1234.5, np.nan, np.inf, -np.inf], dtype="float32")
F32_OUT = ["0_00000000_00000000000000000000000", "0_01111011_10100000000000000000000",
           "0_01111111_01000000000000000000000", "0_10000010_10000000000000000000000",
           "0_10000101_11100000000000000000000", "0_10001001_01000000000000000000000",
           "0_11111111_10000000000000000000000", "0_11111111_00000000000000000000000",
           "1_11111111_00000000000000000000000"]
U8_IN = np.array([0, 1, 10, 11, 100, 123, 200, 208, 209, 255], dtype="uint8")
U8_OUT = np.array([0, 1, 10, 12, 96, 128, 192, 192, 224, 224], dtype="uint8")


def _bits(s: str) -> int:
    return int(s.replace("_", ""), 2)


def zarrs_int(x: int, keepbits: int, width: int, signed: bool = False, nat: bool = False) -> int:
    """zarrs' round_bits<N> for integers, written out in Python (the reference), with our two
    changes: a non-negative signed value saturates below the sign bit (zarrs flips its sign),
    and (``nat``: datetime64/timedelta64) no value but NaT itself rounds to NaT (zarrs lets it):
    it takes the next value up with ``keepbits`` significant bits."""
    maxbits = x.bit_length()
    if keepbits >= maxbits or (nat and x == 1 << (width - 1)):
        return x
    maskbits = maxbits - keepbits
    mask = (((1 << width) - 1) >> maskbits) << maskbits
    top = (1 << (width - 1)) - 1 if signed and x <= (1 << (width - 1)) - 1 else (1 << width) - 1
    r = min(x + ((x >> maskbits) & 1) + (1 << (maskbits - 1)) - 1, top) & mask
    if nat and r == 1 << (width - 1) and x != r:
        r = (r + (1 << maskbits)) % (1 << width)
    return r


def test_spec_sample_tables(kernels: str) -> None:
    assert bitround(F32_IN, 3).view("uint32").tolist() == [_bits(s) for s in F32_OUT]
    np.testing.assert_array_equal(bitround(U8_IN, 3), U8_OUT)


@pytest.mark.parametrize("name, original, rounded", [
    ("bitround_float32.zarr", F32_IN, np.array([_bits(s) for s in F32_OUT], "uint32").view("float32")),
    ("bitround_uint8.zarr", U8_IN, U8_OUT),
])
def test_spec_sample_arrays_read_and_rewritten_identically(tmp_path: Path, name: str,
                                                           original: np.ndarray,
                                                           rounded: np.ndarray) -> None:
    """The arrays zarrs wrote for the spec read back as its table says, and writing the
    original values with our codec gives the very same chunk."""
    z = zarr.open_array(str(SAMPLES / name), mode="r")
    np.testing.assert_array_equal(z[:].view(f"u{z.dtype.itemsize}"), rounded.view(f"u{z.dtype.itemsize}"))
    meta = json.loads((SAMPLES / name / "zarr.json").read_text())
    ours = zarr.create_array(str(tmp_path / name), shape=z.shape, chunks=z.chunks, dtype=z.dtype,
                             fill_value=meta["fill_value"], filters=[zarr3.BitRound(keepbits=3)],
                             compressors=None)
    ours[:] = original
    assert (tmp_path / name / "c" / "0").read_bytes() == (SAMPLES / name / "c" / "0").read_bytes()
    assert json.loads((tmp_path / name / "zarr.json").read_text())["codecs"][0] == meta["codecs"][0]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16"])
def test_integers_exhaustively_as_zarrs(kernels: str, dtype: str) -> None:
    dt = np.dtype(dtype)
    width = dt.itemsize * 8
    u = np.arange(2**width, dtype=f"u{dt.itemsize}")
    for keepbits in range(0, width + 2):
        got = bitround(u.view(dt), keepbits).view(u.dtype)
        want = np.array([zarrs_int(int(x), keepbits, width, dt.kind == "i") for x in u], dtype=u.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype} keepbits={keepbits}")
    if dt.kind == "i":  # rounding never changes a sign
        for keepbits in range(1, width + 1):
            got = bitround(u.view(dt), keepbits)
            np.testing.assert_array_equal(np.sign(got), np.sign(u.view(dt)))


@pytest.mark.parametrize("dtype", ["uint32", "int32", "uint64", "int64", "datetime64[s]",
                                   "timedelta64[ns]"])
def test_wide_integers_as_zarrs(kernels: str, dtype: str) -> None:
    dt = np.dtype(dtype)
    width = dt.itemsize * 8
    rng = np.random.default_rng(1)
    u = rng.integers(0, 2**width - 1, 3000, dtype="uint64", endpoint=True).astype(f"u{dt.itemsize}")
    edges = [0, 1, 2, 3, 2**(width - 1) - 1, 2**(width - 1), 2**width - 1, 2**width - 2]
    u = np.concatenate([u, np.array(edges, dtype=u.dtype), rng.integers(0, 2**16, 500).astype(u.dtype)])
    for keepbits in (0, 1, 2, 3, 8, 17, width - 1, width, 100):
        got = bitround(u.view(dt), keepbits).view(u.dtype)
        want = np.array([zarrs_int(int(x), keepbits, width, dt.kind != "u", dt.kind in "mM")
                         for x in u], dtype=u.dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype} keepbits={keepbits}")


@pytest.mark.parametrize("dtype", ["datetime64[ns]", "timedelta64[s]"])
def test_no_value_rounds_into_nat(kernels: str, dtype: str) -> None:
    """NaT is int64's smallest pattern: negative values rounded to few bits reach it in zarrs
    (1960-01-01 with keepbits 1, or the smallest value after NaT with any keepbits)."""
    rng = np.random.default_rng(5)
    i64 = np.iinfo("int64")
    edges = [i64.min, i64.min + 1, i64.min + 2, -(2**62), -1, 0, 1, i64.max,
             np.datetime64("1960-01-01", "ns").astype("int64")]
    x = np.concatenate([np.array(edges, "int64"), rng.integers(i64.min, 0, 2000, dtype="int64")])
    a = x.view(dtype)
    for keepbits in range(0, 66):
        got = bitround(a, keepbits)
        assert np.array_equal(np.isnat(got), np.isnat(a)), f"keepbits={keepbits}"
    assert bitround(np.array(["1960-01-01"], "datetime64[ns]"), 1)[0] == np.datetime64(0, "ns")
    assert bitround(np.array([i64.min + 1], "int64").view(dtype), 5).view("int64")[0] == i64.min + 2**59
    assert bitround(np.array([i64.min + 1], "int64"), 5)[0] == i64.min  # plain int64: as zarrs


def test_keepbits_zero_as_numcodecs_and_zarrs(kernels: str) -> None:
    """The spec's schema allows keepbits 0 (only the leading bit stays): floats round to a
    power of two, as numcodecs' BitRound and zarrs do."""
    a = np.array([1.0, 1.4, 1.5, 1.6, 2.9, 3.0, 0.7, -5.0, 1e-40], "float32")
    assert bitround(a, 0).tolist() == np.asarray(numcodecs.BitRound(0).encode(a.copy())).view("float32").tolist()
    assert bitround(a, 0).tolist()[:6] == [1.0, 1.0, 2.0, 2.0, 2.0, 2.0]  # ties: even exponent
    assert bitround(np.array([4, 5, 6, 255], "uint8"), 0).tolist() == [0, 8, 8, 0]  # zarrs: saturates, masks
    assert BitRound(keepbits=0).get_config() == {"id": "numcodecs_ext.bitround", "keepbits": 0}


@pytest.mark.parametrize("name", ["bitround", "numcodecs.bitround"])
def test_keepbits_zero_written_elsewhere_opens(tmp_path: Path, name: str) -> None:
    """A store another implementation (numcodecs' BitRound through zarr's adapter, zarrs)
    wrote with keepbits 0 opens and reads, and we write the same chunk."""
    data = np.array([0.3, 1.4, 2.9, -7.0, 100.0, 0.0], "float32")
    chunk = np.asarray(numcodecs.BitRound(0).encode(data.copy())).view("float32")
    path = tmp_path / "k0.zarr"
    (path / "c").mkdir(parents=True)
    meta = {"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [6]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0.0, "attributes": {},
            "codecs": [{"name": name, "configuration": {"keepbits": 0}},
                       {"name": "bytes", "configuration": {"endian": "little"}}]}
    (path / "zarr.json").write_text(json.dumps(meta))
    (path / "c" / "0").write_bytes(chunk.astype("<f4").tobytes())
    z = zarr.open_array(str(path), mode="r+")
    np.testing.assert_array_equal(z[:], chunk)
    z[:] = data
    assert (path / "c" / "0").read_bytes() == chunk.astype("<f4").tobytes()


def test_out_must_be_native_and_same_shape(kernels: str) -> None:
    a = np.array([1.2, 3.4], ">f4")
    with pytest.raises(ValueError, match="native dtype"):
        bitround(a, 3, out=a)
    with pytest.raises(ValueError, match="shape"):
        bitround(a, 3, out=np.empty(3, "float32"))
    assert bitround(a, 3, out=np.empty(2, "float32")).tolist() == bitround(a.astype("f4"), 3).tolist()


def test_nat_and_integer_extremes_never_wrap(kernels: str) -> None:
    nat = np.array(["NaT", "2020-01-01"], dtype="datetime64[ns]")
    assert np.isnat(bitround(nat, 1)[0])
    assert bitround(np.array([255], "uint8"), 1)[0] == 128  # saturates, never wraps to 0
    assert bitround(np.array([np.iinfo("int64").max], "int64"), 1)[0] == 2**62  # stays positive
    assert bitround(np.array([127, 96, 95], "int8"), 1).tolist() == [64, 64, 64]  # zarrs: -128, -128
    assert bitround(np.array([-1], "int8"), 1)[0] == -128  # zarrs: the unsigned pattern


@pytest.mark.parametrize("dtype, mantissa", [("float16", 10), ("float32", 23), ("float64", 52)])
def test_float_bytes_identical_to_numcodecs(kernels: str, dtype: str, mantissa: int) -> None:
    """Every finite value that does not round to infinity: numcodecs' BitRound, byte for byte."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(7)
    u = rng.integers(0, 2**(8 * dt.itemsize) - 1, 20000, dtype="uint64", endpoint=True)
    a = u.astype(f"u{dt.itemsize}").view(dt)
    a = np.concatenate([a, np.array([0, -0.0, np.finfo(dt).tiny, np.finfo(dt).smallest_subnormal,
                                     np.finfo(dt).max, -np.finfo(dt).max, np.inf, -np.inf], dt)])
    for keepbits in range(0, mantissa + 1):
        ref = np.asarray(numcodecs.BitRound(keepbits).encode(a.copy())).view(dt)
        got = bitround(a, keepbits)
        same = ~np.isnan(a) & (np.isfinite(ref) | np.isinf(a))
        np.testing.assert_array_equal(got[same].view(f"u{dt.itemsize}"),
                                      ref[same].view(f"u{dt.itemsize}"), err_msg=f"keepbits={keepbits}")
        # where numcodecs differs: NaNs stay the very same NaN, finite values stay finite
        nan = np.isnan(a)
        np.testing.assert_array_equal(got[nan].view(f"u{dt.itemsize}"), a[nan].view(f"u{dt.itemsize}"))
        assert np.isfinite(got[np.isfinite(a)]).all()


def test_what_numcodecs_gets_wrong_and_we_do_not(kernels: str) -> None:
    bad = np.array([0x7F800001, 0x7FFFFFFF, 0xFFC00001, 0x7F7FFFFF], "uint32").view("float32")
    ref = np.asarray(numcodecs.BitRound(3).encode(bad.copy())).view("float32")
    assert np.isinf(ref[0]) and ref[1] == 0 and np.isinf(ref[3])  # NaN -> inf, NaN -> -0.0, max -> inf
    got = bitround(bad, 3)
    np.testing.assert_array_equal(got[:3].view("uint32"), bad[:3].view("uint32"))
    assert got[3] == np.float32(np.ldexp(np.float32(15 / 8), 127))  # largest finite with 3 bits


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(["float16", "float32", "float64"]), st.integers(1, 60),
       st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=50))
def test_float_error_bound(kernels: str, dtype: str, keepbits: int, values: list[float]) -> None:
    """Round to nearest: relative error at most 2**-(keepbits+1); 2**-keepbits where a value
    next to the largest finite one is truncated to stay finite."""
    with np.errstate(over="ignore"):
        a = np.array(values, dtype=dtype)
    got = bitround(a, keepbits)
    fin = np.isfinite(a)
    keep = min(keepbits, np.finfo(dtype).nmant)
    exp = np.maximum(np.frexp(a[fin].astype("float64"))[1], np.finfo(dtype).minexp + 1)
    bound = np.ldexp(1.0, exp - keep - 2)  # half a unit in the kept last place (subnormals: of the smallest normal)
    err = np.abs(got[fin].astype("float64") - a[fin].astype("float64"))
    assert (err <= 2 * bound).all() and np.isfinite(got[fin]).all()
    near_top = np.abs(a[fin]) < np.ldexp(1.0, np.finfo(dtype).maxexp - 1)
    assert (err[near_top] <= bound[near_top]).all()
    assert np.array_equal(np.isnan(got), np.isnan(a)) and np.array_equal(got[np.isinf(a)], a[np.isinf(a)])


def test_complex_bfloat16_layouts_and_shapes(kernels: str) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    c = (np.array([1.2, 12.3]) + 1j * np.array([123.4, -0.1])).astype("complex64")
    got = bitround(c, 3)
    np.testing.assert_array_equal(got.real, bitround(c.real.copy(), 3))
    np.testing.assert_array_equal(got.imag, bitround(c.imag.copy(), 3))
    b = np.array([1.2, 1234.5], dtype=ml_dtypes.bfloat16)
    np.testing.assert_array_equal(bitround(b, 3).view("uint16") & 0x0F, [0, 0])  # 4 low bits gone
    assert plan(np.dtype(ml_dtypes.bfloat16)).mantissa == 7
    a = np.arange(1, 61, dtype="float64").reshape(3, 4, 5) * 1.1
    want = bitround(a, 4)
    for view in (np.asfortranarray(a), a[:, ::2], a.astype(">f8"), a.transpose(2, 0, 1)):
        got = bitround(view, 4)
        assert got.dtype == np.dtype("float64") and got.shape == view.shape
        np.testing.assert_array_equal(got, bitround(np.ascontiguousarray(view, "f8"), 4))
    assert bitround(np.asfortranarray(a), 4).flags.f_contiguous
    np.testing.assert_array_equal(bitround(a[:, ::2], 4), want[:, ::2])
    assert bitround(np.array(1.2, "float32"), 3).shape == ()
    assert bitround(np.zeros((0, 3), "int16"), 3).shape == (0, 3)
    inplace = a.copy()
    assert bitround(inplace, 4, out=inplace) is inplace and np.array_equal(inplace, want)


def test_configuration_is_validated() -> None:
    for bad in (-1, True, 1.5, "3", None, 2**32):
        with pytest.raises(ValueError, match="keepbits"):
            BitRound(keepbits=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown configuration key"):
        numcodecs.get_codec({"id": "numcodecs_ext.bitround", "keepbits": 3, "keep": 1})
    with pytest.raises(ValueError, match="missing required"):
        numcodecs.get_codec({"id": "numcodecs_ext.bitround"})
    for dtype in ("bool", "U3", "int4"):
        with pytest.raises((ValueError, TypeError), match="bitround"):
            BitRound(keepbits=3).encode(np.zeros(3, dtype=dtype) if dtype != "int4"
                                        else np.zeros(3, "int8").astype(pytest.importorskip("ml_dtypes").int4))
    with pytest.raises(ValueError, match="dtype"):
        BitRound(keepbits=3, dtype="bool")
    with pytest.raises(ValueError, match="keepbits"):
        zarr3.BitRound.from_dict({"name": "bitround", "configuration": {"keepbits": -1}})
    with pytest.raises(ValueError, match="missing required"):
        zarr3.BitRound.from_dict({"name": "bitround", "configuration": {}})
    with pytest.raises(ValueError, match="unknown configuration key"):
        zarr3.BitRound.from_dict({"name": "bitround", "configuration": {"keepbits": 3, "x": 1}})


def test_numcodecs_codec_contract() -> None:
    codec = numcodecs.get_codec({"id": "numcodecs_ext.bitround", "keepbits": 5})
    assert isinstance(codec, BitRound) and codec == BitRound(keepbits=5)
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert numcodecs.get_codec({"id": "bitround", "keepbits": 5}).__class__ is not BitRound
    a = np.linspace(-3, 3, 40, dtype="float32").reshape(5, 8)
    enc = codec.encode(a)
    assert enc.dtype == a.dtype and np.array_equal(codec.decode(enc), enc)
    raw = BitRound(keepbits=5, dtype="float32")
    np.testing.assert_array_equal(raw.encode(a.tobytes()), enc.reshape(-1))
    np.testing.assert_array_equal(raw.decode(enc.tobytes()), enc.reshape(-1))
    out = np.empty_like(a)
    assert codec.decode(enc, out=out) is out and np.array_equal(out, enc)
    ba = bytearray(a.nbytes)
    codec.decode(enc, out=ba)
    assert bytes(ba) == enc.tobytes()
    swapped = codec.encode(a.astype(">f4"))
    assert swapped.dtype == np.dtype(">f4") and np.array_equal(swapped, enc)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_in_zarr_arrays_and_shards(tmp_path: Path, zarr_format: int) -> None:
    data = np.linspace(0, 1000, 24 * 30, dtype="float64").reshape(24, 30)
    data[0, :5] = np.nan
    kwargs: dict = {"zarr_format": zarr_format, "fill_value": float("nan")}
    if zarr_format == 2:
        kwargs["filters"] = [BitRound(keepbits=7)]
    else:
        kwargs["filters"] = [zarr3.BitRound(keepbits=7)]
        kwargs["shards"] = (12, 30)
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=data.shape, chunks=(6, 10), dtype="float64",
                          **kwargs)
    z[:] = data
    back = zarr.open_array(str(tmp_path / "a.zarr"))[:]
    np.testing.assert_array_equal(back, bitround(data, 7))
    rel = np.abs(back - data)[1:] / np.abs(data)[1:].clip(1e-300)
    assert np.nanmax(rel[np.isfinite(rel)]) <= 2.0 ** -8


def test_fill_value_goes_through_the_codec(tmp_path: Path) -> None:
    """The fill value is rounded like the data (zarrs); to write, it must not change."""
    codec = zarr3.BitRound(keepbits=3).codec
    assert codec.resolve_spec((2,), np.dtype("uint8"), 209, strict=False)[2] == 224
    assert np.isnan(codec.resolve_spec((2,), np.dtype("float32"), np.nan)[2])
    z = zarr.create_array(str(tmp_path / "f.zarr"), shape=(4,), chunks=(2,), dtype="uint8",
                          fill_value=209, filters=[zarr3.BitRound(keepbits=3)])
    with pytest.raises(ValueError, match="fill value 209 does not survive.* such as 224"):
        z[:1] = [11]
    assert zarr.open_array(str(tmp_path / "f.zarr"))[:].tolist() == [209] * 4  # still opens
    z = zarr.create_array(str(tmp_path / "g.zarr"), shape=(4,), chunks=(2,), dtype="uint8",
                          fill_value=224, filters=[zarr3.BitRound(keepbits=3)])
    z[:1] = [11]
    np.testing.assert_array_equal(z[:], [12, 224, 224, 224])


INT_STORE = """{"zarr_format": 3, "node_type": "array", "shape": [10], "data_type": "int16",
 "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [10]}},
 "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
 "fill_value": 0, "codecs": [{"name": "numcodecs.bitround", "configuration": {"keepbits": 3}},
 {"name": "bytes", "configuration": {"endian": "little"}}]}"""


def test_numcodecs_alias_reads_integers_in_a_fresh_process(tmp_path: Path) -> None:
    """zarr's own numcodecs.bitround adapter reads this integer array (as zarrs wrote it) as
    zeros; with numcodecs_ext installed, a process that never imports it reads the values."""
    store = tmp_path / "ints.zarr"
    (store / "c").mkdir(parents=True)
    (store / "zarr.json").write_text(INT_STORE)
    values = np.array([0, 1, 10, 12, 96, 128, 192, -32768, -8192, -1], "<i2")
    (store / "c" / "0").write_bytes(values.tobytes())
    code = ("import sys, zarr, numpy as np; a = zarr.open_array(sys.argv[1]); print(a[:].tolist()); "
            "a[:] = np.array([11, 100, 209, 255, -1, 0, 0, 0, 0, 0], 'int16'); print(a[:].tolist())")
    out = subprocess.run([sys.executable, "-W", "error", "-c", code, str(store)], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert json.loads(out[0]) == values.tolist()
    assert json.loads(out[1])[:5] == [12, 96, 224, 256, -8192]
    assert json.loads((store / "zarr.json").read_text())["codecs"][0]["name"] == "numcodecs.bitround"


def test_zarr_v3_names_and_json() -> None:
    codec = zarr3.BitRound.from_dict({"name": "numcodecs.bitround", "configuration": {"keepbits": 4}})
    assert codec.to_dict() == {"name": "numcodecs.bitround", "configuration": {"keepbits": 4}}
    assert codec.keepbits == 4 and repr(codec) == "BitRound(keepbits=4, name='numcodecs.bitround')"
    assert zarr3.BitRound(keepbits=4).to_dict()["name"] == "bitround"
    from zarr.registry import get_codec_class

    assert get_codec_class("bitround") is zarr3.BitRound
    assert get_codec_class("numcodecs.bitround") is zarr3.BitRound
