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
from numcodecs_ext.store.errors import ToolError  # noqa: E402


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
    assert "variable 'v'" in msg and "cannot read its values" in msg and "ncks -x -v v" in msg, msg
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


def test_a_variable_compressed_with_a_filter_hdf5_lacks_is_refused_before_writing(tmp_path):
    """A netCDF-4 variable compressed with zstd, read where HDF5 finds no plugin for it."""
    import os
    import subprocess
    import sys

    if not getattr(netCDF4, "__has_zstandard_support__", False):
        pytest.skip("this netCDF4 cannot write zstd")
    src, dst = tmp_path / "s.nc", tmp_path / "d.zarr"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("x", 100)
        nc.createVariable("v", "f4", ("x",), compression="zstd")[:] = np.arange(100)
        nc.createVariable("w", "i2", ("x",))[:] = 1
    env = dict(os.environ, HDF5_PLUGIN_PATH=str(tmp_path / "no-plugins"))
    r = subprocess.run([sys.executable, "-m", "numcodecs_ext.cli", "convert", "-q", str(src), str(dst)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "variable 'v'" in r.stderr and "plugin" in r.stderr and "nothing was written" in r.stderr, r.stderr
    assert "resume" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not dst.exists()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_values_xarray_cannot_decode_past_the_first_offer_no_resume(tmp_path, zarr_format):
    """A decoding failure that depends on the values (bytes that are no UTF-8 after a first value
    that is) is found while writing, not before: the same command would fail the same way, so no
    resume is offered, and what was written is removed (the check before writing reads one value)."""
    src, dst = tmp_path / "s.nc", tmp_path / "d.zarr"
    with netCDF4.Dataset(src, "w") as nc:
        nc.createDimension("x", 2)
        nc.createDimension("n", 2)
        v = nc.createVariable("v", "S1", ("x", "n"))
        v[:] = np.array([[b"a", b"b"], [b"\xff", b"\xfe"]])
        v.setncattr("_Encoding", "utf-8")
    for attempt in range(2):  # a rerun says the same, never "resume"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (xarray's own warnings about the undecodable source)
            with pytest.raises(ToolError) as err:
                convert(src, dst, zarr_format=zarr_format)
        message = str(err.value)
        assert "'v'" in message and "UnicodeDecodeError" in message, message
        assert "resume" not in message, message
        assert not dst.exists() or not any(dst.iterdir()), sorted(p.name for p in dst.rglob("*"))
