"""convert proves each run in the task that writes it: the stored bytes read back and decoded,
compared with the source's values that task holds (issue 34). Faults are injected into our own
write step (the store then holds something other than what the task read from the source)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import zarr

from tests.helpers.cf_files import write_variable
from numcodecs_ext.cf.convert import convert
from numcodecs_ext.store.errors import VerificationError

CASES = {
    "packed": (np.arange(-600, 600, dtype="int16").reshape(12, 100),
               {"scale_factor": np.float32(0.1), "add_offset": np.float32(5), "_FillValue": np.int16(-600)}),
    "exact packing": (np.arange(-600, 600, dtype="int16").reshape(12, 100),
                      {"scale_factor": np.float32(0.25), "_FillValue": np.int16(-600)}),
    "copied floats": (np.where(np.arange(1200) % 7 == 0, np.nan, np.arange(1200)).astype("float32").reshape(12, 100),
                      {"units": "m"}),
    "copied integers with a fill": (np.arange(1200, dtype="int32").reshape(12, 100), {"_FillValue": np.int32(3)}),
}


def _tamper(monkeypatch, where: tuple[int, int]) -> None:
    """After a run is written, one stored value at ``where`` changed in the store (the values
    the task holds stay the source's)."""
    write = importlib.import_module("numcodecs_ext.cf.tasks")
    original = write._write_run

    def tampered(job, run):
        values = original(job, run)
        rows, cols = run.region
        if values is not None and rows.start <= where[0] < rows.stop:
            array = zarr.open_array(job.write_store, path=run.name, mode="r+", zarr_format=job.zarr_format)
            stored = array[where]
            array[where] = stored + 1 if stored.dtype.kind != "f" else np.float32(12345)
        return values

    monkeypatch.setattr(write, "_write_run", tampered)


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_a_stored_value_that_is_not_the_source_s_is_caught_where_it_is(tmp_path, monkeypatch, case, zarr_format):
    data, attrs = CASES[case]
    src, dst = tmp_path / "v.nc", tmp_path / "v.zarr"
    write_variable(src, "NETCDF4", data, attrs)
    _tamper(monkeypatch, (7, 3))
    with pytest.raises(VerificationError, match=r"variable 'v' at \(7, 3\): .* in the store"):
        convert(src, dst, zarr_format=zarr_format, chunks={"d0": 2})
    assert not dst.exists()


def test_with_verify_none_nothing_is_proved_and_the_summary_says_so(tmp_path, monkeypatch):
    """The same fault with ``--verify none``: it stays in the store, and nothing claims it was checked."""
    data, attrs = CASES["packed"]
    src, dst = tmp_path / "v.nc", tmp_path / "v.zarr"
    write_variable(src, "NETCDF4", data, attrs)
    _tamper(monkeypatch, (7, 3))
    report = convert(src, dst, chunks={"d0": 2}, verify="none")
    assert not report.verified and report.verification == "not verified"
    decoded = np.float32(attrs["add_offset"] + data[7, 3] * attrs["scale_factor"])
    assert abs(zarr.open_array(dst / "v", mode="r")[7, 3] - decoded) > 0.05


@pytest.mark.parametrize("case", list(CASES))
def test_every_value_proved_in_the_task_reads_as_the_source(tmp_path, case):
    """Without a fault, the proof passes and the store reads as xarray reads the file (an
    inexact packing within a few units in the last place)."""
    import xarray as xr

    data, attrs = CASES[case]
    src, dst = tmp_path / "v.nc", tmp_path / "v.zarr"
    write_variable(src, "NETCDF4", data, attrs)
    report = convert(src, dst, chunks={"d0": 5})
    assert report.verified
    with xr.open_dataset(src) as a, xr.open_zarr(dst) as b:
        if case == "packed":
            np.testing.assert_allclose(a["v"].values, b["v"].values, rtol=0, atol=1e-5)
        else:
            np.testing.assert_array_equal(a["v"].values, b["v"].values)
