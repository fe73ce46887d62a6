"""suggest lets none of xarray's notes about a file's attributes through (several fill values,
repeated dimension names): they were printed with a source line, up to three times each. pytest
runs with filterwarnings=error here, so a leaked warning fails the call; the command line's
stderr is checked in a fresh process too."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

netCDF4 = pytest.importorskip("netCDF4")
pytest.importorskip("xarray")

from numcodecs_ext.cf.suggest import suggest  # noqa: E402


def _file(path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("x", 50)
        v = nc.createVariable("t", "f8", ("x",), fill_value=1e30)
        v.missing_value = 1.0000000150474662e30  # another fill value: xarray's SerializationWarning
        v[:] = np.linspace(250, 300, 50)
        w = nc.createVariable("m", "f4", ("x", "x"))  # a repeated dimension: xarray's UserWarning
        w[:] = np.ones((50, 50), "f4")


def test_suggest_warns_of_nothing(tmp_path):
    src = tmp_path / "f.nc"
    _file(src)
    results = suggest(src)
    assert set(results) == {"t", "m"} and "rows" in results["t"]


def test_the_command_line_prints_no_warning(tmp_path):
    src = tmp_path / "f.nc"
    _file(src)
    done = subprocess.run([sys.executable, "-W", "default", "-m", "numcodecs_ext", "suggest", "-q", str(src)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr and "warn" not in done.stderr.lower(), done.stderr
    assert "t: float64" in done.stdout
