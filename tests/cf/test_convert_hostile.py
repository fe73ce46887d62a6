"""convert on a catalogue of hostile inputs: every one ends with a message and the documented exit
status (1: the work failed, 2: the command cannot run as given), never a traceback, never an
"unexpected" error, never a numpy repr, and never a store left behind that opens."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers.cf_files import write_strings, write_variable
from numcodecs_ext.cli import main

pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")


def _good(path):
    write_variable(path, "NETCDF4", np.arange(100, dtype="int16").reshape(10, 10),
                   {"scale_factor": np.float32(0.5), "_FillValue": np.int16(-1)}, dims=("y", "x"))
    return path


def _catalogue(tmp):
    """(name, argv, expected exit status, a word the message must hold)."""
    good = _good(tmp / "good.nc")
    out = str(tmp / "out.zarr")
    (tmp / "dir.nc").mkdir()
    (tmp / "empty.nc").write_bytes(b"")
    (tmp / "text.nc").write_text("just text\n" * 10)
    (tmp / "random.nc").write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype="uint8").tobytes())
    (tmp / "badheader.nc").write_bytes(b"CDF\x01" + b"\xff" * 60)
    (tmp / "badhdf.nc").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 500)
    os.symlink(tmp / "nowhere.nc", tmp / "dangling.nc")
    os.symlink(tmp / "loop.nc", tmp / "loop.nc")
    cut = tmp / "cut.nc"
    write_variable(cut, "NETCDF3_CLASSIC", np.arange(5000, dtype="int16"), {"scale_factor": np.float32(0.5)})
    os.truncate(cut, os.path.getsize(cut) - 7)
    (tmp / "full.zarr").mkdir()
    (tmp / "full.zarr" / "zarr.json").write_text("{}")
    (tmp / "afile").write_text("x")
    strings = write_strings(tmp / "strings.nc")
    compound = tmp / "compound.nc"
    with netCDF4.Dataset(compound, "w") as nc:
        nc.createDimension("x", 2)
        t = nc.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        nc.createVariable("c", t, ("x",))[:] = np.array([(1, 2.0), (3, 4.0)], dtype=t.dtype)
    badattr = tmp / "badattr.nc"
    write_variable(badattr, "NETCDF4", np.arange(4, dtype="int16"), {"scale_factor": "0.1"})
    nothing = tmp / "nothing.nc"
    with netCDF4.Dataset(nothing, "w") as nc:
        nc.title = "no variables"
    return [
        ("missing source", [str(tmp / "missing.nc"), out], 2, "does not exist"),
        ("source is a directory", [str(tmp / "dir.nc"), out], 2, "is a directory, not a netCDF file"),
        ("source is a store", [str(tmp / "full.zarr"), out], 2, "is a directory"),
        ("empty source", [str(tmp / "empty.nc"), out], 2, "not a netCDF file"),
        ("text source", [str(tmp / "text.nc"), out], 2, "not a netCDF file"),
        ("random bytes", [str(tmp / "random.nc"), out], 2, "not a netCDF file"),
        ("corrupt classic header", [str(tmp / "badheader.nc"), out], 1, "header"),
        ("corrupt HDF5", [str(tmp / "badhdf.nc"), out], 1, "badhdf.nc"),
        ("dangling link", [str(tmp / "dangling.nc"), out], 2, "leads nowhere"),
        ("link loop", [str(tmp / "loop.nc"), out], 2, "leads nowhere"),
        ("truncated by 7 bytes", [str(cut), out], 1, "truncated"),
        ("source URL of an unknown scheme", ["nosuchscheme://bucket/x.nc", out], 2, "unknown URL scheme"),
        ("destination exists", [str(good), str(tmp / "full.zarr")], 2, "exists"),
        ("destination is a file", [str(good), str(tmp / "afile")], 2, "is a file"),
        ("destination under a file", [str(good), str(tmp / "afile" / "x.zarr")], 2, "is a file"),
        ("destination is the source", [str(good), str(good)], 2, "overlaps"),
        ("destination holds the source", [str(good), str(tmp)], 2, "overlaps"),
        ("unknown URL scheme", [str(good), "nosuch://x/y.zarr"], 2, "nosuch"),
        ("chunk-mib 0", [str(good), out, "--chunk-mib", "0"], 2, "--chunk-mib"),
        ("chunk-mib -5", [str(good), out, "--chunk-mib", "-5"], 2, "--chunk-mib"),
        ("chunk-mib nan", [str(good), out, "--chunk-mib", "nan"], 2, "--chunk-mib"),
        ("chunk-mib inf", [str(good), out, "--chunk-mib", "inf"], 2, "--chunk-mib"),
        ("chunk-mib -inf", [str(good), out, "--chunk-mib=-inf"], 2, "--chunk-mib"),
        ("chunk-mib 1e300", [str(good), out, "--chunk-mib", "1e300"], 2, "--chunk-mib"),
        ("chunks unknown dim", [str(good), out, "--chunks", "nosuchdim=5"], 2, "dimensions are x, y"),
        ("chunks negative", [str(good), out, "--chunks", "x=-1"], 2, "--chunks"),
        ("chunks huge", [str(good), out, "--chunks", "x=99999999999"], 2, "--chunks"),
        ("chunks empty", [str(good), out, "--chunks", ""], 2, "--chunks"),
        ("zarr format 4", [str(good), out, "--zarr-format", "4"], 2, "invalid choice"),
        ("level for none", [str(good), out, "--compressor", "none", "--level", "1"], 2, "no level"),
        ("gzip level 10", [str(good), out, "--compressor", "gzip", "--level", "10"], 2, "gzip levels"),
        ("zstd shuffle", [str(good), out, "--compressor", "zstd", "--shuffle", "bit"], 2, "only blosc"),
        ("compound type in v3", [str(compound), out], 1, "compound (structured) type"),
        ("text scale_factor", [str(badattr), out], 1, "expected a number, got text"),
        ("strings convert", [str(strings), str(tmp / "strings.zarr")], 0, ""),
        ("no variables", [str(nothing), str(tmp / "nothing.zarr")], 0, ""),
        ("memory destination", [str(good), "memory://cf-hostile/out.zarr"], 0, ""),
    ]


def test_every_hostile_input_ends_with_a_message_and_its_exit_status(tmp_path, capsys):
    for name, argv, status, word in _catalogue(tmp_path):
        try:
            got = main(["convert", *argv, "-q"])
        except SystemExit as e:  # argparse's own usage errors
            got = e.code
        err = capsys.readouterr().err
        assert got == status, (name, got, err)
        assert "Traceback" not in err and "unexpected" not in err and "np." not in err, (name, err)
        assert word in err, (name, err)
        if status:
            assert not (tmp_path / "out.zarr").exists(), name


def test_a_subprocess_never_prints_a_traceback(tmp_path):
    cases = _catalogue(tmp_path)
    for name, argv, status, word in [c for c in cases if c[2]][:6]:
        done = subprocess.run([sys.executable, "-W", "error", "-m", "numcodecs_ext", "convert", *argv, "-q"],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == status, (name, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.startswith("numcodecs-ext convert: "), name
