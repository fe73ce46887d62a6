"""convert killed (SIGKILL) at many points: the source is untouched, and the destination either
opens complete and equal to the source or does not open at all.

A driver runs ``numcodecs-ext convert`` in a subprocess and kills the process itself at a chosen
point: before the N-th chunk object is stored, or before the N-th metadata document of the commit
is written (so partial commits are covered too). More runs are killed from outside after a random
delay. After each kill the test checks the two promises, then that the same command over the
leftovers resumes and completes.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from tests.helpers import FULL
from tests.helpers.convert_driver import write_driver


xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")

def _source(path: Path) -> None:
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "kill test"
        nc.createDimension("time", None)
        nc.createDimension("y", 30)
        nc.createDimension("x", 40)
        t = nc.createVariable("time", "i8", ("time",), fill_value=np.int64(-2**63))
        t.units = "hours since 2000-01-01"
        t[:] = np.arange(24)
        v = nc.createVariable("t2m", "i2", ("time", "y", "x"), fill_value=np.int16(-32767))
        v.scale_factor, v.add_offset = np.float32(0.01), np.float32(273.15)
        v.set_auto_maskandscale(False)
        v[:] = rng.integers(-3000, 3000, (24, 30, 40)).astype("i2")
        sub = nc.createGroup("sub")
        w = sub.createVariable("w", "u1", ("time", "x"), fill_value=np.uint8(255))
        w.scale_factor = np.float32(0.5)
        w.set_auto_maskandscale(False)
        w[:] = rng.integers(0, 256, (24, 40)).astype("u1")


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _opens(dst: Path) -> bool:
    """Whether anything at the root opens as a group, an array or a dataset."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for attempt in (lambda: zarr.open_group(dst, mode="r"), lambda: zarr.open_array(dst, mode="r"),
                        lambda: xr.open_zarr(dst)):
            try:
                attempt()
                return True
            except Exception:  # noqa: BLE001 - any failure to open is what we want
                continue
    return False


def _check_destination(src: Path, dst: Path) -> str:
    """'absent', 'nothing opens' or 'complete'; fails on anything else."""
    if not dst.exists():
        return "absent"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = {None: xr.open_dataset(src), "sub": xr.open_dataset(src, group="sub")}
        raw = {g: xr.open_dataset(src, group=g, mask_and_scale=False, decode_times=False) for g in (None, "sub")}
        # arrays whose metadata was committed before the kill are complete and verified
        for meta in list(dst.rglob("zarr.json")) + list(dst.rglob(".zarray")):
            if meta.name == "zarr.json" and json.loads(meta.read_text()).get("node_type") != "array":
                continue
            rel = meta.parent.relative_to(dst).as_posix()
            group, _, name = rel.rpartition("/")
            got = zarr.open_array(meta.parent, mode="r")[...]
            want = (expected if got.dtype.kind == "f" else raw)[group or None][name].values
            if got.dtype.kind == "f":
                assert np.array_equal(np.isnan(got), np.isnan(want))
                assert np.allclose(got, want, rtol=0, atol=1e-4, equal_nan=True), rel
            else:
                np.testing.assert_array_equal(got, want)
        if not _opens(dst):
            return "nothing opens"
        back = xr.open_zarr(dst)
        for name in expected[None].variables:
            a, b = expected[None][name].values, back[name].values
            assert a.dtype == b.dtype
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f") or np.allclose(a, b, atol=1e-4, equal_nan=True)
        return "complete"


def _run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize("zarr_format", [3, pytest.param(2, marks=pytest.mark.full)])
def test_convert_killed_anywhere_leaves_nothing_that_opens_as_complete(tmp_path, zarr_format):
    src = tmp_path / "src.nc"
    _source(src)
    before = _hash(src)
    driver = write_driver(tmp_path)
    common = ["--zarr-format", str(zarr_format), "--chunks", "time=3", "-q"]
    outcomes = []
    # a complete run, counting the chunk objects and metadata documents it writes
    full = tmp_path / "full.zarr"
    done = _run([sys.executable, str(driver), "chunks", "1000000", str(src), str(full), *common])
    assert done.returncode == 0, done.stderr
    n_chunks = sum(1 for p in full.rglob("*") if p.is_file() and p.name not in
                   ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"))
    n_meta = sum(1 for p in full.rglob("*") if p.name in ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"))
    assert n_chunks > 10 and n_meta >= 4
    n_sets = int(done.stderr.rpartition("points=")[2])  # chunks stored through zarr (index coordinates are not)
    assert 10 < n_sets <= n_chunks
    points = [("chunks", n) for n in sorted({0, 1, 2, n_sets // 3, n_sets // 2, n_sets - 1})]
    points += [("commit", n) for n in range(n_meta)]
    if not FULL:  # one point of each kind: among the chunks, in the middle of the commit
        points = [("chunks", n_sets // 2), ("commit", n_meta // 2)]
    for mode, n in points:
        dst = tmp_path / f"{mode}{n}.zarr"
        done = _run([sys.executable, str(driver), mode, str(n), str(src), str(dst), *common])
        assert done.returncode == -signal.SIGKILL, (mode, n, done.returncode, done.stderr)
        assert _hash(src) == before
        outcomes.append(_check_destination(src, dst))
        assert "Traceback" not in done.stderr
    rng = random.Random(7)
    for i in range(4 if FULL else 1):  # killed from outside, after a random delay
        dst = tmp_path / f"random{i}.zarr"
        proc = subprocess.Popen([sys.executable, "-m", "numcodecs_ext", "convert", str(src), str(dst), *common],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.5, 4.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        assert _hash(src) == before
        outcomes.append(_check_destination(src, dst))
    assert "nothing opens" in outcomes or "absent" in outcomes
    print(f"{len(outcomes)} kill points (zarr v{zarr_format}): {sorted(set(outcomes))}")
    # the same command over the leftovers of a killed run resumes it (tests/cf/test_convert_resume.py
    # kills at every kind of point and compares with an uninterrupted conversion)
    meta_names = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")
    leftovers = [d for d in sorted(tmp_path.glob("chunks*.zarr"))
                 if any(p.is_file() for p in d.rglob("*")) and not any(p.name in meta_names for p in d.rglob("*"))]
    assert leftovers, "no killed run left chunks behind"
    leftover = leftovers[-1]
    again = _run([sys.executable, "-m", "numcodecs_ext", "convert", str(src), str(leftover), *common])
    assert again.returncode == 0, again.stderr
    assert _check_destination(src, leftover) == "complete"
    assert not os.path.exists(leftover / ".numcodecs-ext-convert")
