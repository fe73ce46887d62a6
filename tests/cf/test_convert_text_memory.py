"""Text does not make convert's memory grow with the variable: the source's variable-length strings
stay lazy when it is opened (xarray reads every one into fixed-width ``<U`` at each opening, which
cost 2.1 GB on benchmarks/bench_convert_text.py's 200,000 strings; 0.18 GB now), and chunks and
runs are sized by the strings' real width (4 bytes per character as xarray reads them), not 8
bytes per string, so a long text variable is split into many chunks of about the chunk size."""

from __future__ import annotations

import numpy as np
import pytest

netCDF4 = pytest.importorskip("netCDF4")
xr = pytest.importorskip("xarray")

from numcodecs_ext.cf import convert  # noqa: E402
from numcodecs_ext.cf.handles import open_netcdf4  # noqa: E402


def _strings(path, count: int = 4000, length: int = 400) -> list[str]:
    rng = np.random.default_rng(3)
    words = ["".join(rng.choice(list("abcdefgh "), length + int(i % 7))) for i in range(count)]
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("record", count)
        nc.createVariable("text", str, ("record",))[:] = np.array(words, dtype=object)
    return words


def test_opening_the_source_reads_no_string(tmp_path):
    _strings(tmp_path / "s.nc")
    with open_netcdf4(tmp_path / "s.nc") as ds:
        var = ds.variables["text"]
        assert var.dtype.kind == "O" and not var._in_memory  # lazy: nothing read yet
        assert var.encoding["dtype"] is str  # xarray's mark of a vlen string, put back
        assert [str(x) for x in var[:2].values] == [
            str(x) for x in xr.open_dataset(tmp_path / "s.nc")["text"][:2].values]


def test_long_strings_are_chunked_by_their_width(tmp_path):
    words = _strings(tmp_path / "s.nc")
    report = convert(tmp_path / "s.nc", tmp_path / "o.zarr", chunk_bytes=1 << 20)  # 1 MiB chunks
    plan = report.variables["text"]
    assert plan.itemsize >= 4 * 400  # at least xarray's <U width, not 8 bytes per string
    assert plan.chunks[0] * plan.itemsize <= 1 << 20 and plan.chunks[0] < len(words)
    with xr.open_zarr(tmp_path / "o.zarr") as got:
        assert [str(x) for x in got["text"].values] == words
