"""Hostile inputs for the device kernels (issue 35 review): results bit for bit as the CPU path's.

The array-API stand-in and the codec round trip come from tests/zarr3/test_array_api.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("array_api_strict")

from numcodecs_ext import zarr3  # noqa: E402
from numcodecs_ext.core import device  # noqa: E402
from numcodecs_ext.core import scale_offset as so_core  # noqa: E402
from tests.zarr3.test_array_api import (  # noqa: E402
    DeviceNDBuffer, assert_same, on_device, round_trip, same, to_host, xp)

#: signalling NaNs (both signs, a payload) beside quiet ones with payloads, for each float width
_NAN_BITS = {
    "float16": (0x7C01, 0xFC01, 0x7D23, 0x7E01, 0xFE00),
    "float32": (0x7F800001, 0xFF800001, 0x7FA00123, 0x7FC00001, 0xFFC00000),
    "float64": (0x7FF0000000000001, 0xFFF0000000000001, 0x7FF4000000000123,
                0x7FF8000000000001, 0xFFF8000000000000),
}


def nans(dtype: str) -> np.ndarray:
    d = np.dtype(dtype)
    bits = np.array(_NAN_BITS[dtype], f"u{d.itemsize}").view(d)
    return np.concatenate([bits, np.array([1.5, -0.0], d)])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("direction", ["encode", "decode"])
@pytest.mark.parametrize("off,sc", [(0, 1), (-10, 0.5)])
def test_scale_offset_kernel_quiets_nans_as_the_cpu(dtype: str, direction: str, off: float,
                                                    sc: float) -> None:
    """The CPU's arithmetic quiets a signalling NaN (payload and sign kept); a device result
    that keeps the signalling bits, or gives a canonical NaN, is not the CPU result."""
    v = nans(dtype)
    d = np.dtype(dtype)
    k_off, k_sc = so_core.checked_parameters(d, off, sc)
    cpu = getattr(so_core, direction)(v, off, sc)
    assert not same(cpu, v)  # (the CPU quiets: the case bites)
    got = device.scale_offset(np, v, d, k_off, k_sc, direction, None)  # numpy's namespace has view
    assert got is not None and same(cpu, got)
    if dtype != "float16":  # no bit reinterpretation in the standard: the stand-in declines
        assert device.scale_offset(xp, on_device(v), d, k_off, k_sc, direction, None) is None
        finite = v[~np.isnan(v)]
        r = device.scale_offset(xp, on_device(finite), d, k_off, k_sc, direction, None)
        assert r is not None and same(getattr(so_core, direction)(finite, off, sc), to_host(r))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scale_offset_codec_on_signalling_nans(dtype: str) -> None:
    cpu_result, dev_result = round_trip(zarr3.ScaleOffset(offset=-10, scale=0.5), nans(dtype))
    assert cpu_result[0] == "ok"
    assert_same(cpu_result, dev_result)


def test_scale_offset_codec_without_nans_stays_on_the_device() -> None:
    DeviceNDBuffer.host_copies = 0
    data = np.array([[1.5, -0.0, 3e38, 1e-30]], "float32")
    cpu_result, dev_result = round_trip(zarr3.ScaleOffset(offset=2, scale=0.5), data)
    assert_same(cpu_result, dev_result)
    assert DeviceNDBuffer.host_copies == 0


# --- subnormals: cupy flushes float32 subnormals to zero (arithmetic, comparisons, conversions;
# seen on an H200 with cupy 14.2), which the CPU never does --------------------------------------

def _flush(a: np.ndarray) -> np.ndarray:
    if a.dtype != np.float32:
        return a
    u = a.view(np.uint32)
    return np.where((u & 0x7F800000) == 0, (u & 0x80000000).view(np.float32), a)


class Flushing(np.ndarray):
    """numpy arrays that treat float32 subnormals as cupy does on the device: flushed to (signed)
    zero on the way into and out of every ufunc and float conversion; bits (``view``) as stored."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        plain = [_flush(np.asarray(i).view(np.ndarray)) if isinstance(i, np.ndarray) else i
                 for i in inputs]
        out = getattr(ufunc, method)(*plain, **kwargs)
        return _flush(out).view(Flushing) if isinstance(out, np.ndarray) else out

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        src = _flush(self.view(np.ndarray))
        return _flush(src.astype(dtype, *args, **kwargs)).view(Flushing)


def flushing(a: np.ndarray) -> Flushing:
    return np.array(a).view(Flushing)


def test_the_flushing_stand_in_flushes() -> None:
    x = flushing(np.array([1e-45, -1e-40, 1.0], "float32"))
    assert same(np.asarray((x * 1.0).view(np.ndarray)), np.array([0.0, -0.0, 1.0], "float32"))
    assert np.asarray(x.astype(np.float64)).tolist() == [0.0, -0.0, 1.0]
    assert bool(np.any(x == 0))


SUBNORMAL_F32 = np.array([1e-45, -1e-45, 1e-40, 1.1e-38, 3e-38, 1.5, -0.0, 0.0, 2.5e-38], "float32")


@pytest.mark.parametrize("direction", ["encode", "decode"])
@pytest.mark.parametrize("off,sc", [(0, 1), (0, 0.25), (0, 4), (1e-38, 1), (0, 1e-30)])
def test_scale_offset_kernel_on_a_flushing_device(direction: str, off: float, sc: float) -> None:
    """A subnormal input, step or result: the kernel declines (host path) rather than give the
    flushed zero; otherwise the flushing device's result is the CPU's."""
    d = np.dtype("float32")
    k_off, k_sc = so_core.checked_parameters(d, off, sc)
    for v in (SUBNORMAL_F32, SUBNORMAL_F32[3:], np.array([1.5, 3e-38, -2.0, 0.0], "float32")):
        cpu = getattr(so_core, direction)(v, off, sc)
        got = device.scale_offset(np, flushing(v), d, k_off, k_sc, direction, None)
        if got is not None:
            assert same(cpu, np.asarray(got.view(np.ndarray))), (v, cpu, got)


def test_scale_offset_kernel_on_a_flushing_device_still_runs() -> None:
    v = np.array([1.5, 3e-38, -2.0, 0.0, 100.25], "float32")
    d = np.dtype("float32")
    k_off, k_sc = so_core.checked_parameters(d, -10, 0.5)
    got = device.scale_offset(np, flushing(v), d, k_off, k_sc, "encode", None)
    assert got is not None and same(so_core.encode(v, -10, 0.5), np.asarray(got.view(np.ndarray)))


@pytest.mark.parametrize("rounding", ["nearest-even", "towards-positive", "towards-negative"])
@pytest.mark.parametrize("target", ["float64", "int8", "uint8"])
def test_cast_kernel_from_float32_subnormals_on_a_flushing_device(rounding: str, target: str) -> None:
    from numcodecs_ext.core.cast_value import cast_array, is_exact_cast
    from numcodecs_ext.core.scalar_map import PreparedMap
    from numcodecs_ext.core.dtypes import numeric_info

    sd, td = np.dtype("float32"), np.dtype(target)
    pairs = [] if td.kind == "f" else [(np.array(0.0, sd), np.array(9, td))]
    pm = PreparedMap(pairs, sd, td)
    v = SUBNORMAL_F32
    cpu = cast_array(v, td, rounding=rounding, out_of_range="clamp", scalar_map=pm)
    got = device.cast(np, flushing(v), sd, td, rounding=rounding, out_of_range="clamp", scalar_map=pm,
                      exact=is_exact_cast(numeric_info(sd), numeric_info(td)))
    if got is not None:
        assert same(cpu, np.asarray(got.view(np.ndarray)))


def test_cast_kernel_narrowing_to_float32_subnormals_on_a_flushing_device() -> None:
    from numcodecs_ext.core.cast_value import cast_array
    from numcodecs_ext.core.scalar_map import PreparedMap

    sd, td = np.dtype("float64"), np.dtype("float32")
    v = np.array([1e-40, 1e-45, -3e-39, 1.0, 0.0], sd)
    pm = PreparedMap([], sd, td)
    got = device.cast(np, flushing(v), sd, td, rounding="nearest-even", out_of_range=None,
                      scalar_map=pm, exact=False)
    if got is not None:
        assert same(cast_array(v, td), np.asarray(got.view(np.ndarray)))


def test_cast_kernel_on_a_flushing_device_still_runs() -> None:
    from numcodecs_ext.core.cast_value import cast_array
    from numcodecs_ext.core.scalar_map import PreparedMap

    for sd, td, v in ((np.dtype("float32"), np.dtype("int16"), np.array([1.5, -2.5, 0.0, 3e-38])),
                      (np.dtype("float64"), np.dtype("float32"), np.array([1e-30, -2.5, 0.0, 1e30]))):
        v = v.astype(sd)
        got = device.cast(np, flushing(v), sd, td, rounding="nearest-even", out_of_range="clamp",
                          scalar_map=PreparedMap([], sd, td), exact=False)
        assert got is not None
        assert same(cast_array(v, td, out_of_range="clamp"), np.asarray(got.view(np.ndarray)))
