"""Hostile inputs for the device kernels (issue 35 review): results bit for bit as the CPU path's.

The array-API stand-in and the codec round trip come from tests/zarr3/test_array_api.py.
"""

from __future__ import annotations

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
    data = np.array([[1.5, -0.0, 3e38, 1e-45]], "float32")
    cpu_result, dev_result = round_trip(zarr3.ScaleOffset(offset=2, scale=0.5), data)
    assert_same(cpu_result, dev_result)
    assert DeviceNDBuffer.host_copies == 0
