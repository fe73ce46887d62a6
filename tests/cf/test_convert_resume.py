"""convert --verify full|sample:N|none, and resuming an interrupted conversion.

The kill tests run ``numcodecs-ext convert`` in a subprocess through a driver that makes runs
small (so a conversion has many of them) and kills the process itself (SIGKILL) before the N-th
journal mark, the N-th chunk, or the N-th metadata document of the commit; then the same command
runs again and must resume (saying so), and the result must read exactly as an uninterrupted
conversion's. A source changed in between, or other options, must start over, never mix.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import FULL
from tests.helpers.convert_driver import write_driver

from numcodecs_ext.cf import convert
from numcodecs_ext.cli import main
from numcodecs_ext.store.errors import UsageError

xr = pytest.importorskip("xarray")
netCDF4 = pytest.importorskip("netCDF4")

JOURNAL = ".numcodecs-ext-convert"
RUN_BYTES = 9600  # two chunks of t2m (time=1) per run: 12 runs, and one of sub/w


def _source(path: Path, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "resume test"
        nc.createDimension("time", None)
        nc.createDimension("y", 30)
        nc.createDimension("x", 40)
        nc.createDimension("empty", 0)
        t = nc.createVariable("time", "i8", ("time",))
        t.units = "hours since 2000-01-01"
        t[:] = np.arange(24)
        v = nc.createVariable("t2m", "i2", ("time", "y", "x"), fill_value=np.int16(-32767))
        v.scale_factor, v.add_offset = np.float32(0.01), np.float32(273.15)
        v.set_auto_maskandscale(False)
        q = rng.integers(-3000, 3000, (24, 30, 40)).astype("i2")
        q[0, 0, :5] = -32767
        v[:] = q
        s = nc.createVariable("scalar", "f8", ())
        s[...] = 2.5
        nc.createVariable("nothing", "f4", ("empty",))
        sub = nc.createGroup("sub")
        w = sub.createVariable("w", "u1", ("time", "x"), fill_value=np.uint8(255))
        w.scale_factor = np.float32(0.5)
        w.set_auto_maskandscale(False)
        w[:] = rng.integers(0, 256, (24, 40)).astype("u1")


def _driver(tmp: Path) -> Path:
    return write_driver(tmp, run_bytes=RUN_BYTES)


def _run(driver: Path, mode: str, n: int, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(driver), mode, str(n), *argv], capture_output=True, text=True,
                          timeout=300, check=False)


def _marks(dst: Path) -> list[Path]:
    """The journal's finished marks, by run number (a kill while another thread writes its mark
    can leave that mark's temporary file, ``.N.<hex>.partial``: no mark)."""
    return sorted((p for p in (dst / JOURNAL / "runs").iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


def _chunk_of(dst: Path, run: int) -> Path:
    """A chunk object of run ``run`` of t2m (runs 0-11 of RUN_BYTES: run i holds times 2i and
    2i + 1; chunks of one time)."""
    assert run < 12, run
    return dst / "t2m" / "c" / str(2 * run + 1) / "0" / "0"


def _contents(dst: Path) -> dict[str, bytes]:
    """Every object of a store, by key (the journal must be gone)."""
    return {p.relative_to(dst).as_posix(): p.read_bytes() for p in sorted(dst.rglob("*")) if p.is_file()}


def _same_store(a: Path, b: Path) -> None:
    """The two stores hold the same objects, byte for byte, and read the same through xarray."""
    ca, cb = _contents(a), _contents(b)
    assert sorted(ca) == sorted(cb)
    assert [k for k in ca if ca[k] != cb[k]] == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for group in (None, "sub"):
            xa, xb = xr.open_zarr(a, group=group).load(), xr.open_zarr(b, group=group).load()
            assert xa.identical(xb)


# -- --verify ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, says", [("sample:0", "N must be a whole number >= 1"),
                                         ("sample:x", "N must be a whole number"),
                                         ("sample:-3", "N must be a whole number"),
                                         ("sample:", "N must be a whole number"),
                                         ("some", "is not valid"), ("", "is not valid"),
                                         ("FULL", "is not valid")])
def test_bad_verify_values_are_usage_errors(tmp_path, capsys, value, says):
    src = tmp_path / "s.nc"
    _source(src)
    assert main(["convert", str(src), str(tmp_path / "o.zarr"), "--verify", value, "-q"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "--verify" in err
    assert not (tmp_path / "o.zarr").exists()
    with pytest.raises(UsageError):
        convert(src, tmp_path / "o.zarr", verify=value)


def test_verify_sample_says_it_sampled_and_never_verified(tmp_path, capsys):
    src = tmp_path / "s.nc"
    _source(src)
    assert main(["convert", str(src), str(tmp_path / "a.zarr"), "--verify", "sample:2", "--chunks", "time=1"]) == 0
    out = capsys.readouterr().out
    assert "sampled: " in out and "the others were not checked" in out
    assert not any(line.startswith("verified") for line in out.splitlines())
    report = convert(src, tmp_path / "b.zarr", verify="sample:2", chunks={"time": 1})
    assert not report.verified and report.verification.startswith("sampled: ")
    # 2 chunks per array of t2m (24 chunks), time (24), sub/w (24); scalar 1 (all of it), 'nothing' has none
    assert report.verification.split(" of ")[0] == "sampled: 7", report.verification
    # N above every array's chunk count: every chunk read back, still said as a sample (that was asked)
    huge = convert(src, tmp_path / "c.zarr", verify="sample:" + "9" * 30, chunks={"time": 1})
    assert huge.verification.startswith("sampled: 73 of 73 chunks")
    none = convert(src, tmp_path / "d.zarr", verify="none")
    assert not none.verified and none.verification == "not verified"
    assert main(["convert", str(src), str(tmp_path / "e.zarr"), "--no-verify"]) == 0
    assert "not verified" in capsys.readouterr().out
    full = convert(src, tmp_path / "f.zarr", verify=True)
    assert full.verified and full.verification == "verified"
    for name in "abcdef":
        assert not (tmp_path / f"{name}.zarr" / JOURNAL).exists()


def test_a_sample_catches_a_wrong_chunk_it_reads(tmp_path, monkeypatch):
    """sample:N with N at the chunk count reads every chunk: a wrong declaration is caught."""
    from dataclasses import replace

    from numcodecs_ext.cf import write as write_module
    from numcodecs_ext.store.errors import VerificationError

    src = tmp_path / "s.nc"
    _source(src)
    declare = write_module.declare_packing

    def wrong(documents, path, packing, zf):
        declare(documents, path, replace(packing, add_offset=packing.unpacked.type(1)), zf)

    monkeypatch.setattr(write_module, "declare_packing", wrong)
    with pytest.raises(VerificationError, match="in the store"):
        convert(src, tmp_path / "o.zarr", verify="sample:1000")
    assert not (tmp_path / "o.zarr").exists()


# -- resuming ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("zarr_format", [3, pytest.param(2, marks=pytest.mark.full)])
def test_killed_anywhere_then_the_same_command_resumes(tmp_path, zarr_format):
    src = tmp_path / "src.nc"
    _source(src)
    driver = _driver(tmp_path)
    common = ["--zarr-format", str(zarr_format), "--chunks", "time=1"]
    full = tmp_path / "full.zarr"
    done = _run(driver, "none", 0, str(src), str(full), *common, "-q")
    assert done.returncode == 0, done.stderr
    points = [("marks", 0), ("marks", 1), ("marks", 6), ("chunks", 20), ("commit", 0), ("commit", 3)]
    if not FULL:  # a kill among the runs and one in the commit
        points = [("marks", 1), ("commit", 3)]
    resumed = []
    for mode, n in points:
        dst = tmp_path / f"{mode}{n}.zarr"
        killed = _run(driver, mode, n, str(src), str(dst), *common, "-q")
        assert killed.returncode == -signal.SIGKILL, (mode, n, killed.returncode, killed.stderr)
        assert (dst / JOURNAL / "stamp.json").exists()
        assert not (dst / "zarr.json").exists() and not (dst / ".zmetadata").exists()
        runs = dst / JOURNAL / "runs"
        marked = sum(1 for p in runs.iterdir() if p.name.isdigit()) if runs.exists() else 0
        assert mode != "marks" or marked <= n  # (tasks run on threads: the one marking when the kill came may not have)
        # what a kill in the middle of an atomic write leaves (zarr's temporary name): removed
        (dst / f"t2m.{'0f' * 16}.partial").write_bytes(b"half a chunk")
        again = _run(driver, "none", 0, str(src), str(dst), *common)
        assert again.returncode == 0, (mode, n, again.stderr)
        assert "Traceback" not in again.stderr
        if marked:
            assert f"({marked} of 13 runs) were already written by it and were kept" in again.stdout, again.stdout
        else:
            assert "resumed" not in again.stdout
        if mode == "commit":
            assert "(13 of 13 runs) were already written" in again.stdout, again.stdout
        assert "verified: every value" in again.stdout
        assert not (dst / JOURNAL).exists()
        _same_store(full, dst)
        resumed.append((mode, n))
    assert len(resumed) == len(points)


@pytest.mark.full
def test_a_changed_source_or_other_options_start_over(tmp_path):
    src = tmp_path / "src.nc"
    _source(src)
    driver = _driver(tmp_path)
    dst = tmp_path / "o.zarr"
    killed = _run(driver, "marks", 10, str(src), str(dst), "--chunks", "time=1", "-q")
    assert killed.returncode == -signal.SIGKILL
    # the source is rewritten with other values (same size): its stamp differs
    before = src.stat().st_size
    _source(src, seed=2)
    os.utime(src, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns + 10**9))
    assert src.stat().st_size == before
    again = _run(driver, "none", 0, str(src), str(dst), "--chunks", "time=1")
    assert again.returncode == 0, again.stderr
    assert "started over" in again.stdout and "resumed an" not in again.stdout
    fresh = tmp_path / "fresh.zarr"
    assert _run(driver, "none", 0, str(src), str(fresh), "--chunks", "time=1", "-q").returncode == 0
    _same_store(fresh, dst)
    # killed again, then run with other chunks: started over, nothing of the old chunking left
    dst2 = tmp_path / "o2.zarr"
    assert _run(driver, "marks", 6, str(src), str(dst2), "--chunks", "time=1", "-q").returncode == -signal.SIGKILL
    other = _run(driver, "none", 0, str(src), str(dst2), "--chunks", "time=4")
    assert other.returncode == 0 and "started over" in other.stdout, other.stderr
    fresh2 = tmp_path / "fresh2.zarr"
    assert _run(driver, "none", 0, str(src), str(fresh2), "--chunks", "time=4", "-q").returncode == 0
    _same_store(fresh2, dst2)


@pytest.mark.full
def test_a_journal_never_opens_someone_elses_store(tmp_path):
    """A complete store with a leftover journal of another conversion is refused and untouched;
    chunks without a journal are refused as before; a journal of the very same conversion
    beside its committed store is finished."""
    src = tmp_path / "src.nc"
    _source(src)
    driver = _driver(tmp_path)
    other = tmp_path / "other.nc"
    _source(other, seed=5)
    dst = tmp_path / "o.zarr"
    assert _run(driver, "none", 0, str(other), str(dst), "-q").returncode == 0
    (dst / JOURNAL).mkdir()
    (dst / JOURNAL / "stamp.json").write_text(json.dumps({"version": 1}))
    before = _contents(dst)
    refused = _run(driver, "none", 0, str(src), str(dst), "-q")
    assert refused.returncode == 2 and "exists" in refused.stderr, refused.stderr
    assert _contents(dst) == before
    # a committed conversion whose journal removal was interrupted: the same command finishes it
    done = tmp_path / "done.zarr"
    killed = _run(driver, "commit", 10**6, str(src), str(done), "--chunks", "time=1", "-q")
    assert killed.returncode == 0
    kept = _contents(done)
    marks = tmp_path / "m.zarr"
    assert _run(driver, "marks", 3, str(src), str(marks), "--chunks", "time=1", "-q").returncode == -signal.SIGKILL
    stamp = (marks / JOURNAL / "stamp.json").read_bytes()
    (done / JOURNAL / "runs").mkdir(parents=True)
    (done / JOURNAL / "stamp.json").write_bytes(stamp)
    finished = _run(driver, "none", 0, str(src), str(done), "--chunks", "time=1")
    assert finished.returncode == 0, finished.stderr
    assert not (done / JOURNAL).exists() and _contents(done) == kept
    # chunks and no journal (not ours, or from before journals): refused as before
    bare = tmp_path / "bare.zarr"
    (bare / "t2m" / "c").mkdir(parents=True)
    (bare / "t2m" / "c" / "0").write_bytes(b"x")
    result = _run(driver, "none", 0, str(src), str(bare), "-q")
    assert result.returncode == 2 and "holds only chunks" in result.stderr


@pytest.mark.full
def test_a_garbled_journal_mark_is_written_again(tmp_path):
    """A mark that does not read as one claims nothing: its run is written again."""
    src = tmp_path / "src.nc"
    _source(src)
    driver = _driver(tmp_path)
    dst = tmp_path / "o.zarr"
    assert _run(driver, "marks", 6, str(src), str(dst), "--chunks", "time=1", "-q").returncode == -signal.SIGKILL
    marks = _marks(dst)
    assert len(marks) >= 3
    marks[0].write_text("{not json")
    marks[1].write_text(json.dumps({"state": "bogus"}))
    again = _run(driver, "none", 0, str(src), str(dst), "--chunks", "time=1")
    assert again.returncode == 0 and f"({len(marks) - 2} of 13 runs) were already written" in again.stdout, \
        again.stdout
    full = tmp_path / "full.zarr"
    assert _run(driver, "none", 0, str(src), str(full), "--chunks", "time=1", "-q").returncode == 0
    _same_store(full, dst)


@pytest.mark.full
def test_runs_written_unchecked_are_read_back_when_resumed_with_full(tmp_path):
    """Killed while converting with --verify none; resumed with full verification: the runs the
    first one wrote are read back now (not taken as verified)."""
    src = tmp_path / "src.nc"
    _source(src)
    driver = _driver(tmp_path)
    dst = tmp_path / "o.zarr"
    killed = _run(driver, "marks", 6, str(src), str(dst), "--chunks", "time=1", "--verify", "none", "-q")
    assert killed.returncode == -signal.SIGKILL
    marks = _marks(dst)
    assert {json.loads(p.read_text())["state"] for p in marks} == {"written"}
    # corrupt a chunk of a run the interrupted conversion marked written: a full verification on
    # resuming must see it (the runs are tasks, marked in the order they end)
    _chunk_of(dst, int(marks[0].name)).write_bytes(b"\0" * 10)
    again = _run(driver, "none", 0, str(src), str(dst), "--chunks", "time=1")
    assert again.returncode == 1, again.stdout + again.stderr
    assert "Traceback" not in again.stderr
    assert not dst.exists() or not (dst / "zarr.json").exists()


@pytest.mark.full
def test_a_run_whose_chunk_vanished_is_written_again(tmp_path):
    """A run marked done whose chunk object was removed since (by anyone): its mark is not
    trusted, the run is written again, and the result is complete."""
    src = tmp_path / "src.nc"
    _source(src)
    driver = _driver(tmp_path)
    dst = tmp_path / "o.zarr"
    assert _run(driver, "marks", 4, str(src), str(dst), "--chunks", "time=1", "-q").returncode == -signal.SIGKILL
    runs = [int(p.name) for p in _marks(dst)]
    marked = len(runs)
    assert marked >= 2
    _chunk_of(dst, runs[0]).unlink()  # of a run that was marked (runs are marked as they end)
    again = _run(driver, "none", 0, str(src), str(dst), "--chunks", "time=1")
    assert again.returncode == 0, again.stderr
    assert f"({marked - 1} of 13 runs) were already written" in again.stdout, again.stdout
    full = tmp_path / "full.zarr"
    assert _run(driver, "none", 0, str(src), str(full), "--chunks", "time=1", "-q").returncode == 0
    _same_store(full, dst)
