"""convert with a relative (or ``~``) source path on a dask LocalCluster whose workers run in
another directory: the source is made absolute before any task is sent, as the destination is,
so the workers find it; and a file with variable-length strings (which the source's opening keeps
lazy through a store class of ours) is read by the workers too."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")
distributed = pytest.importorskip("distributed")

from numcodecs_ext.cf import convert  # noqa: E402


def _cluster():
    return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0")


def _tasks_done(dask_worker) -> int:
    return int(dask_worker.state.executed_count)


def _file(path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", 64)
        t = nc.createVariable("t", "f4", ("time",))
        t[:] = np.arange(64, dtype="f4")
        s = nc.createVariable("label", str, ("time",))
        s[:] = np.array([f"label {i} " * (i % 7 + 1) for i in range(64)], dtype=object)


def _check(out, src) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with xr.open_zarr(out) as got, xr.open_dataset(src) as want:
            np.testing.assert_array_equal(got["t"].values, want["t"].values)
            assert [str(x) for x in got["label"].values] == [str(x) for x in want["label"].values]


@pytest.mark.cluster
def test_a_relative_source_on_workers_in_another_directory(tmp_path, monkeypatch):
    from numcodecs_ext.cf import write

    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    _file(here / "s.nc")
    monkeypatch.chdir(here)
    monkeypatch.setattr(write, "RUN_BYTES", 1)  # a task per chunk
    with _cluster() as cluster, distributed.Client(cluster) as client:
        client.run(os.chdir, str(elsewhere))
        assert set(client.run(os.getcwd).values()) == {str(elsewhere)}
        before = sum(client.run(_tasks_done).values())
        report = convert("s.nc", "out.zarr", chunks={"time": 16})
        after = sum(client.run(_tasks_done).values())
    assert report.verified and after - before >= 8  # 4 chunks of each variable, written by the worker
    assert not (elsewhere / "out.zarr").exists()
    _check(here / "out.zarr", here / "s.nc")


def test_a_source_under_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _file(tmp_path / "s.nc")
    report = convert("~/s.nc", tmp_path / "out.zarr")
    assert report.verified and report.src == str(tmp_path / "s.nc")
    _check(tmp_path / "out.zarr", tmp_path / "s.nc")


def test_a_source_through_a_relative_symlink(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    _file(tmp_path / "data" / "s.nc")
    (tmp_path / "link.nc").symlink_to(os.path.join("data", "s.nc"))
    monkeypatch.chdir(tmp_path)
    report = convert("link.nc", "out.zarr")
    assert report.verified
    _check(tmp_path / "out.zarr", tmp_path / "data" / "s.nc")
