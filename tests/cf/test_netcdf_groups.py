"""netCDF-4 groups and HDF5 files without dimension names, the same wherever the file is: suggest
finds the float variables of every group (by their path, as in zarr), and a plain HDF5 file
(no dimension names) converts from a bucket with the names h5netcdf gives them in sorted order,
without its warning, the same values as from a local disk."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from tests.tools.test_tools_s3 import cli

from numcodecs_ext.cf.suggest import suggest

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "netcdf"


def _grouped(path: Path) -> None:
    """A float variable in a group and one two groups down; nothing at the root."""
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("x", 60)
        sub = nc.createGroup("sub")
        sub.createVariable("temp", "f4", ("x",))[:] = np.linspace(270, 300, 60)
        deep = sub.createGroup("deep")
        deep.createVariable("p", "f8", ("x",))[:] = np.linspace(0, 1, 60)
        nc.createVariable("count", "i4", ("x",))[:] = np.arange(60)


def test_suggest_finds_the_variables_of_every_group(tmp_path) -> None:
    _grouped(tmp_path / "g.nc")
    results = suggest(tmp_path / "g.nc", tolerance=0.01)
    assert sorted(results) == ["sub/deep/p", "sub/temp"]
    assert results["sub/temp"]["range"].max == 300.0
    only = suggest(tmp_path / "g.nc", array="sub/deep/p", tolerance=0.01)
    assert list(only) == ["sub/deep/p"]
    with pytest.raises(ValueError, match="'count' is int32"):
        suggest(tmp_path / "g.nc", array="count")


def test_suggest_finds_the_groups_in_a_bucket_as_on_disk(s3, tmp_path) -> None:
    _grouped(tmp_path / "g.nc")
    s3.put("g.nc", (tmp_path / "g.nc").read_bytes())
    remote = cli("suggest", s3.url("g.nc"), "--tolerance", "0.01", "--json", "-q")
    local = cli("suggest", str(tmp_path / "g.nc"), "--tolerance", "0.01", "--json", "-q")
    assert remote.returncode == 0 == local.returncode, remote.stderr + local.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)
    assert sorted(json.loads(remote.stdout)) == ["sub/deep/p", "sub/temp"]


def _dims(store: str) -> dict[str, tuple[str, ...]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = xr.open_datatree(store, engine="zarr", consolidated=False)
        return {f"{node.path}/{name}".lstrip("/"): tuple(var.dims)
                for node in tree.subtree for name, var in node.dataset.data_vars.items()}


@pytest.mark.full
def test_a_plain_hdf5_file_from_a_bucket_gets_sorted_dimension_names(s3, tmp_path) -> None:
    """ref_groups.h5 names no dimensions. From a bucket it is read by h5netcdf, asked for the
    sorted names (a file-wide numbering, deterministic), so -q means no warning on stderr; the
    values are those of the same file converted from the local disk (where netCDF-C, which
    numbers nested groups first, names them: README, "What convert writes")."""
    s3.put("in/g.h5", (CORPUS / "ref_groups.h5").read_bytes())
    remote = cli("convert", s3.url("in/g.h5"), str(tmp_path / "remote.zarr"), "-q")
    local = cli("convert", str(CORPUS / "ref_groups.h5"), str(tmp_path / "local.zarr"), "-q")
    assert remote.returncode == 0 == local.returncode, remote.stderr + local.stderr
    assert "phony_dims" not in remote.stderr and "Warning" not in remote.stderr, remote.stderr
    got = _dims(str(tmp_path / "remote.zarr"))
    assert got == {"MyGroup/dset1": ("phony_dim_0", "phony_dim_1"),
                   "MyGroup/Group_A/dset2": ("phony_dim_2", "phony_dim_3")}, got
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group, name in (("MyGroup", "dset1"), ("MyGroup/Group_A", "dset2")):
            a = xr.open_zarr(tmp_path / "remote.zarr", group=group, consolidated=False)[name].values
            b = xr.open_zarr(tmp_path / "local.zarr", group=group, consolidated=False)[name].values
            np.testing.assert_array_equal(a, b)
