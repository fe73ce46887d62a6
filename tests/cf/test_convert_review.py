"""A hostile review of convert (issue 31): what xarray cannot decode in the source is refused
before anything is written, naming the variable, with a way out and no resume offered that
could never succeed; what is kept reads back as xarray reads the source."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")
pytest.importorskip("zarr")

from numcodecs_ext.cf import convert  # noqa: E402
from numcodecs_ext.tools.errors import ToolError  # noqa: E402


def _encoding_on(path, kind: str) -> None:
    """A variable ``v`` with ``_Encoding`` where xarray's decoding cannot apply it: on numbers,
    or on netCDF-4 strings (already text), each of which xarray fails to decode."""
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("x", 2)
        if kind == "float":
            v = nc.createVariable("v", "f4", ("x",))
            v[:] = [1, 2]
        else:
            v = nc.createVariable("v", str, ("x",))
            v[0], v[1] = "a", "b"
        v.setncattr("_Encoding", "utf-8")
        nc.createVariable("w", "i2", ("x",))[:] = [3, 4]


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("kind", ["float", "string"])
def test_a_variable_xarray_cannot_decode_is_refused_before_writing(tmp_path, kind, zarr_format):
    src, dst = tmp_path / "s.nc", tmp_path / "d.zarr"
    _encoding_on(src, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception):  # noqa: B017, PT011 - xarray's own failure, whatever it is
            xr.open_dataset(src).load()
    with pytest.raises(ToolError) as e:
        convert(src, dst, zarr_format=zarr_format, progress=False)
    msg = str(e.value)
    assert "variable 'v'" in msg and "cannot decode" in msg and "ncks -x -v v" in msg, msg
    assert "nothing was written" in msg and "resume" not in msg, msg
    assert not dst.exists()


def test_a_char_variable_with_encoding_still_converts(tmp_path):
    src, dst = tmp_path / "s.nc", tmp_path / "d.zarr"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("x", 2)
        nc.createDimension("n", 3)
        v = nc.createVariable("v", "S1", ("x", "n"))
        v[:] = np.array([[b"a", b"b", b""], [b"\xc3", b"\xa9", b""]], "S1")
        v.setncattr("_Encoding", "utf-8")
    convert(src, dst, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.testing.assert_identical(xr.open_dataset(src).load(), xr.open_zarr(dst, consolidated=False).load())
