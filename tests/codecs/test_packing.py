"""choose_packing attacked: every packing it returns decodes every value of the range within its
guaranteed error, through the real codecs (numcodecs and zarr v3), and decoding never overflows;
inputs fail clearly; a refusal is true."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from numcodecs_ext.cf import DataRange, choose_packing
from numcodecs_ext.cf.packing import FLOAT_TYPES, INTEGER_TYPES, as_data_range

WIDTH = {"float16": 16, "float32": 32, "float64": 64}


def _values_in(p, lo: float, hi: float, rng: np.random.Generator) -> np.ndarray:
    """Values of the float type in [lo, hi]: the ends and their neighbours, random ones, and
    values at, halfway between and next to the codes near both ends and in between."""
    F = p.dtype
    t = F.type
    with np.errstate(all="ignore"):
        xs = [lo, hi, float(np.nextafter(t(lo), t(np.inf))), float(np.nextafter(t(hi), t(-np.inf)))]
        xs += list(lo + (hi / 2 - lo / 2) * 2 * rng.random(100))
        q0, q1 = sorted([(lo - p.offset) * p.scale, (hi - p.offset) * p.scale])
        if math.isfinite(q0) and math.isfinite(q1):
            inside = rng.uniform(q0, q1, 40) if q1 > q0 else np.full(40, q0)  # (0.0 and -0.0 too)
            qs = np.concatenate([np.floor(q0) + np.arange(-2, 4), np.floor(q1) + np.arange(-3, 3),
                                 np.floor(inside)])
            for h in (0.0, 0.5, 0.25):
                xs += list((qs + h) / p.scale + p.offset)
        x = np.array(xs, dtype=np.float64).astype(F)
        x = x[np.isfinite(x) & (x >= t(lo)) & (x <= t(hi))]
        around = np.concatenate([np.nextafter(x, t(np.inf)), np.nextafter(x, t(-np.inf))])
    around = around[(around >= t(lo)) & (around <= t(hi))]
    return np.concatenate([x, around]).astype(F)


def _check(p, lo: float, hi: float, seed: int, through_zarr: bool = False) -> None:
    x = _values_in(p, lo, hi, np.random.default_rng(seed))
    so, cv = p.filters()
    with np.errstate(all="raise"):  # no overflow anywhere, nor a NaN out of a number
        y = so.decode(cv.decode(cv.encode(so.encode(x))))
    assert np.isfinite(y).all(), (p, x[~np.isfinite(y)])
    err = np.abs(y.astype(np.float64) - x.astype(np.float64))
    assert err.max() <= p.max_error, (p, float(err.max()), x[np.argmax(err)])
    if p.lossless:
        assert np.array_equal(y, x)
    if p.nan_code is not None:
        n = np.array([np.nan, lo], p.dtype)
        assert np.isnan(so.decode(cv.decode(cv.encode(so.encode(n))))[0])
    if through_zarr:  # the same through zarr v3 arrays (its chain, fill value check, fused codecs)
        z = zarr.create_array(zarr.storage.MemoryStore(), shape=x.shape, chunks=(max(1, x.size),),
                              dtype=p.dtype, fill_value=p.fill_value, filters=p.zarr_filters())
        z[:] = x
        assert np.array_equal(z[:], y)
        z2 = zarr.create_array(zarr.storage.MemoryStore(), shape=(3,), chunks=(2,), dtype=p.dtype,
                               fill_value=p.fill_value, filters=p.zarr_filters())
        z2[:1] = x[:1]  # the rest reads as the fill value, which went through the codecs
        assert np.array_equal(z2[1:], np.full(2, p.fill_value, p.dtype), equal_nan=True)


@st.composite
def _ranges(draw):
    F = draw(st.sampled_from(FLOAT_TYPES))
    finite = st.floats(width=WIDTH[F], allow_nan=False, allow_infinity=False)
    a = draw(finite)
    kind = draw(st.sampled_from(["any", "narrow", "constant", "tiny"]))
    t = np.dtype(F).type
    if kind == "any":
        b = draw(finite)
    elif kind == "constant":
        b = a
    elif kind == "tiny":  # subnormal and tiny normal values
        tiny = float(np.finfo(F).smallest_normal)
        a = draw(st.floats(-64 * tiny, 64 * tiny, width=WIDTH[F]))
        b = draw(st.floats(-64 * tiny, 64 * tiny, width=WIDTH[F]))
    else:  # a few ulps to a relative 1e-3 away
        with np.errstate(over="ignore"):
            b = t(a)
            for _ in range(draw(st.integers(0, 40))):
                b = np.nextafter(b, t(np.inf))
            b = t(float(b) * (1 + draw(st.sampled_from([0.0, 1e-6, 1e-3]))))
        b = float(b) if np.isfinite(b) else a
    lo, hi = sorted([float(a), float(b)])
    return F, lo, hi


@settings(suppress_health_check=list(HealthCheck), deadline=None)
@given(_ranges(), st.booleans(), st.one_of(
    st.builds(lambda e: {"tolerance": 10.0**e}, st.floats(-330, 308)).filter(
        lambda m: 0 < m["tolerance"] < math.inf),
    st.builds(lambda d: {"dtype": d}, st.sampled_from(INTEGER_TYPES))), st.integers(0, 2**32 - 1))
@example(("float16", 0.0, -0.0), False, {"tolerance": 1.0}, 0)
@example(("float64", -1.7976931348623157e308, 1.7976931348623157e308), True, {"dtype": "uint8"}, 0)
@example(("float32", 0.0, 1e-3), True, {"tolerance": 1e-10}, 0)
def test_every_packing_returned_round_trips_its_range(case, nan, mode, seed) -> None:
    F, lo, hi = case
    try:
        p = choose_packing(data_range=(lo, hi), nan=nan, float_dtype=F, **mode)
    except ValueError as e:
        assert "np." not in str(e)
        if "dtype" in mode:  # only unsigned codes for a range wider than the float type's maximum
            assert mode["dtype"].startswith("u") and hi / 2 - lo / 2 > float(np.finfo(F).max) / 2, str(e)
            assert "wider than the largest" in str(e) and "use a signed type" in str(e)
            return
        # a refusal for a tolerance says which limits are in the way
        assert "no integer type meets" in str(e) and "keeping every value exact needs" in str(e)
        return
    assert p.dtype == np.dtype(F) and (p.nan_code is not None) == nan
    if "tolerance" in mode:
        assert p.max_error <= mode["tolerance"]
    else:
        assert p.packed == np.dtype(mode["dtype"])
    _check(p, lo, hi, seed, through_zarr=seed % 4 == 0)


@pytest.mark.parametrize("F", FLOAT_TYPES)
@pytest.mark.parametrize("packed", INTEGER_TYPES)
@pytest.mark.parametrize("nan", [False, True])
def test_ranges_to_the_float_maximum_decode_without_overflow(F: str, packed: str, nan: bool) -> None:
    top = float(np.finfo(F).max)
    for lo, hi in [(-top, top), (0.0, top), (-top, 0.0), (top * 0.9, top), (-1.0, top)]:
        try:
            p = choose_packing(data_range=(lo, hi), dtype=packed, nan=nan, float_dtype=F)
        except ValueError as e:  # only where the codes cannot be unsigned: x - offset overflows
            assert packed.startswith("u") and lo < 0, (lo, hi, str(e))
            assert "cannot be packed into" in str(e)
            continue
        _check(p, lo, hi, 0, through_zarr=True)


@pytest.mark.parametrize("lo, hi, tol", [(60000.0, 65504.0, 5000.0), (0.0, 65504.0, 60000.0),
                                         (0.0, 65504.0, 1000.0), (0.0, 1.0, 0.9), (-1.0, 1.0, 1.5),
                                         (0.0, 100.0, 99.0), (-65504.0, 65504.0, 1e5)])
def test_float16_with_a_tolerance_near_the_range(lo: float, hi: float, tol: float) -> None:
    # these decoded beyond float16 (or exceeded the range by half of it) before
    p = choose_packing(data_range=(lo, hi), tolerance=tol, float_dtype="float16")
    assert p.max_error <= tol
    _check(p, lo, hi, 1, through_zarr=True)


@pytest.mark.parametrize("F, lo, hi, tol", [
    ("float32", 0.0, 1e-3, 1e-10), ("float32", 0.0, 1e-6, 1e-13), ("float32", 1e-6, 2e-6, 1e-12),
    ("float32", 0.0, 1e-30, 1e-36), ("float64", 0.0, 1e-300, 1e-306), ("float64", 1e-35, 2e-35, 1e-40),
    ("float16", 0.0, 0.01, 2e-5), ("float16", 6.1e-5, 1e-4, 8e-6),
])
def test_tiny_tolerances_on_tiny_data_find_the_packing_that_exists(F: str, lo: float, hi: float,
                                                                   tol: float) -> None:
    # the first two were refused ("no integer type meets tolerance") though packings exist
    p = choose_packing(data_range=(lo, hi), tolerance=tol, float_dtype=F)
    assert p.max_error <= tol
    _check(p, lo, hi, 2, through_zarr=True)


@pytest.mark.parametrize("F, lo, hi, tol", [
    ("float32", 1e-35, 2e-35, 1e-40),  # a step of 2e-40 needs a scale above float32's largest
    ("float32", 3e-45, 3e-43, 1e-46),  # subnormals are multiples of 2**-149: so is no scale
    ("float16", 2.4e-4, 3.7e-4, 6e-8),
])
def test_tiny_tolerances_that_no_packing_meets_are_refused_truly(F: str, lo: float, hi: float,
                                                                 tol: float) -> None:
    with pytest.raises(ValueError, match=f"no integer type meets.*above the largest {F}.*exact needs a "
                                         f"scale of .*, above the largest {F}"):
        choose_packing(data_range=(lo, hi), tolerance=tol, float_dtype=F)


def test_values_coarser_than_the_tolerance_are_kept_exactly() -> None:
    # float32 near 1e6 are 0.0625 apart: tolerance 1e-3 is met by storing them exactly
    p = choose_packing(data_range=(1e6, 1e6 + 3), tolerance=1e-3, float_dtype="float32")
    assert p.lossless and p.packed == np.dtype("int8") and p.scale == 16
    _check(p, 1e6, 1e6 + 3, 5, through_zarr=True)
    assert "lossless" in str(p)
    # float64 beyond 2**53 are integers: a step of 1 is exact
    p = choose_packing(data_range=(2.0**60, 2.0**60 + 2**12 * 100), tolerance=1.0, float_dtype="float64")
    assert p.lossless
    _check(p, 2.0**60, 2.0**60 + 2**12 * 100, 6)


def test_refusals_say_which_limit_is_in_the_way() -> None:
    with pytest.raises(ValueError, match=r"scale of 5e\+110, above the largest float16 \(65504\).*"
                                         r"exact needs a scale of 1.68e\+07, above the largest float16"):
        choose_packing(data_range=(0.0, 1.49e-6), tolerance=1e-111, float_dtype="float16")
    with pytest.raises(ValueError, match=r"need 7.5e\+15 codes, more than the 4294967295 of uint32"):
        choose_packing(data_range=(0.0, 1.5e16), tolerance=1.0, float_dtype="float64")
    # no unsigned codes hold a range around 0 whose width overflows float16
    with pytest.raises(ValueError, match="cannot be packed into uint8"):
        choose_packing(data_range=(-65504.0, 65504.0), dtype="uint8", float_dtype="float16")


@pytest.mark.parametrize("value", [(0.0, 1.0), [0, 1], (np.float32(0), np.int64(1)), np.array([0.0, 1.0]),
                                   DataRange(0.0, 1.0)])
def test_data_range_takes_a_pair_of_numbers(value) -> None:
    p = choose_packing(data_range=value, dtype="uint8")
    assert (p.range.min, p.range.max) == (0.0, 1.0) and p.nan_code == 255  # unknown: NaN reserved
    assert as_data_range(value) == DataRange(0.0, 1.0, p.range.has_nan, p.range.count)


@pytest.mark.parametrize("value, match", [
    ((0.0,), "pair"), ((0.0, 1.0, 2.0), "pair"), ("0,1", "pair"), (5, "pair"), ({"min": 0}, "pair"),
    ((0.0, "1"), "pair"), ((True, 1.0), "pair"), ((0.0, float("nan")), "max=nan"),
    ((float("-inf"), 1.0), "min=-inf"), ((2.0, 1.0), "min=2.0 is above max=1.0"),
    (DataRange(0.0, 1.0, has_nan="yes"), "has_nan"), (DataRange("0", 1.0), "min='0'"),
    ((np.float64(2.0), np.float64(1.0)), "min=2.0 is above max=1.0"),
])
def test_bad_data_ranges_are_refused_clearly(value, match) -> None:
    with pytest.raises(ValueError, match=match) as e:
        choose_packing(data_range=value, tolerance=0.1)
    assert "np." not in str(e.value)


@pytest.mark.parametrize("kwargs, match", [
    ({"tolerance": "0.1"}, "tolerance='0.1'"), ({"tolerance": True}, "tolerance=True"),
    ({"tolerance": -1.0}, "tolerance=-1.0"), ({"tolerance": np.float64("inf")}, "tolerance=inf"),
    ({"tolerance": None, "dtype": None}, "exactly one"), ({"dtype": "int64"}, "dtype='int64'"),
    ({"dtype": 8}, "dtype=8"), ({"dtype": "int8", "nan": "no"}, "nan='no'"),
    ({"dtype": "int8", "float_dtype": "int16"}, "float_dtype='int16'"),
    ({"dtype": "int8", "float_dtype": "bogus"}, "float_dtype='bogus'"),
    ({"dtype": "int8", "float_dtype": "float16"}, "beyond the finite values of float16"),
])
def test_bad_arguments_are_refused_clearly(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match) as e:
        choose_packing(data_range=(0.0, 1e6), **kwargs)
    assert "np." not in str(e.value)


def test_the_bound_is_exact_arithmetic() -> None:
    """Where a packing claims an exact step (offset 0, power-of-two scale), its error is half a
    step exactly, and every value of the range meets it."""
    p = choose_packing(data_range=(0.0, 310.0), tolerance=1e-6, float_dtype="float32", nan=False)
    assert p.offset == 0 and p.scale == 2**19 and Fraction(p.max_error) == Fraction(1, 2**20)
    _check(p, 0.0, 310.0, 7, through_zarr=True)
