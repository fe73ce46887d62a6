"""A zip file is no destination for the tools (it cannot be read back while it is written, nor an
entry replaced atomically): convert and migrate refuse a ``*.zip`` path and a zarr ZipStore before
writing anything, and say how to make one (write a directory, then zip it)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

from numcodecs_ext.cf import convert
from numcodecs_ext.migrate import migrate
from numcodecs_ext.store.errors import UsageError

NC = Path(__file__).resolve().parents[2] / "fixtures" / "netcdf" / "euro_air_temp.nc"


def _v2(path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(path, shape=(8,), chunks=(4,), dtype="i2", zarr_format=2)[:] = np.arange(8)
    return path


@pytest.mark.parametrize("command", ["convert", "migrate"])
def test_a_zip_path_is_refused_before_anything_is_written(command, tmp_path) -> None:
    src = NC if command == "convert" else _v2(tmp_path / "v2.zarr")
    out = tmp_path / "out.zip"
    r = subprocess.run([sys.executable, "-m", "numcodecs_ext.cli", command, str(src), str(out), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "not a zip file" in r.stderr and "zip -r -0" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_a_zipstore_is_refused_from_python(tmp_path) -> None:
    for run in (lambda z: convert(NC, z, progress=False),
                lambda z: migrate(_v2(tmp_path / "v2.zarr"), z)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store = zarr.storage.ZipStore(tmp_path / "o.zip", mode="w")
            with pytest.raises(UsageError, match="not a zip file"):
                run(store)  # refused before the store is opened (zarr 3.1 cannot close an unopened ZipStore)
        (tmp_path / "o.zip").unlink(missing_ok=True)
