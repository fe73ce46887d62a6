"""A tool run from Python leaves dask's configuration as it found it: convert's tasks once set
``scheduler="synchronous"`` from several threads at once, which left it set for the whole process
(a later migrate then ignored the user's scheduler address, and so would the user's own dask work)."""

from __future__ import annotations

from pathlib import Path

import dask

from numcodecs_ext.cf import convert

NC = Path(__file__).resolve().parents[2] / "fixtures" / "netcdf" / "theta_nodal_xios.nc"


def test_convert_leaves_dask_configuration_unchanged(tmp_path) -> None:
    before = dask.config.get("scheduler", None)
    convert(NC, tmp_path / "out.zarr", progress=False)
    assert dask.config.get("scheduler", None) == before
