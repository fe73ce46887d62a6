"""Ctrl-C (SIGINT) at any moment of a ``numcodecs-ext`` command, in a real process: no traceback,
one line on stderr, the process ended by SIGINT (130 in a shell); and ``inspect`` on what an
interrupted ``convert`` or ``migrate`` left says what it is and how to resume.

The signal is sent by the process to itself at a chosen moment (no timing): while a given module
is being imported (an import hook installed by a ``sitecustomize`` on PYTHONPATH), or at the N-th
run a write records in its journal. The command runs as the console script does (a file named
``numcodecs-ext`` calling ``numcodecs_ext.cli.main()``) or as ``python -m numcodecs_ext``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numcodecs_ext
from tests.helpers.convert_driver import write_driver
from tests.helpers.migrate_helpers import build_v2

ROOT = Path(numcodecs_ext.__file__).resolve().parents[1]

_SITECUSTOMIZE = r'''
import os, signal, sys
_target = os.environ.get("SIGINT_AT_IMPORT")
if _target:
    class _Interrupt:
        def find_spec(self, name, path=None, target=None):
            if name == _target:
                sys.meta_path.remove(self)
                os.kill(os.getpid(), signal.SIGINT)
            return None
    sys.meta_path.insert(0, _Interrupt())
'''

#: the console script, as pip writes it, with an optional SIGINT at the N-th journal record
_SCRIPT = r'''import os, signal, sys
at = int(os.environ.get("SIGINT_AT_RECORD", "0"))
if at:
    count = [0]

    def _patch(cls, name):
        original = getattr(cls, name)

        def record(self, *args, **kwargs):
            count[0] += 1
            if count[0] == at:
                os.kill(os.getpid(), signal.SIGINT)
            return original(self, *args, **kwargs)

        setattr(cls, name, record)

    from numcodecs_ext.cf import write
    from numcodecs_ext.store import journal
    write.RUN_BYTES = 4000
    _patch(journal.Journal, "record")
from numcodecs_ext.cli import main
if __name__ == "__main__":
    sys.exit(main())
'''

STARTING = "numcodecs-ext: interrupted while starting; nothing was written"
WORKING = "numcodecs-ext: interrupted; anything being written was left incomplete"


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    (folder / "numcodecs-ext").write_text(_SCRIPT)
    return folder


def _command(bin_dir: Path, how: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    head = [str(bin_dir / "numcodecs-ext")] if how == "script" else ["-m", "numcodecs_ext"]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(bin_dir), str(ROOT)]), **env}
    environ.pop("NUMCODECS_EXT_TRACEBACK", None)
    return subprocess.run([sys.executable, "-W", "error", *head, *args], capture_output=True, text=True,
                          env=environ, cwd=bin_dir.parent, timeout=300, check=False)


def _source(path: Path) -> None:
    netCDF4 = pytest.importorskip("netCDF4")
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("y", 30)
        nc.createDimension("x", 40)
        v = nc.createVariable("t2m", "i2", ("time", "y", "x"), fill_value=np.int16(-32767))
        v.scale_factor, v.add_offset = np.float32(0.01), np.float32(273.15)
        v.set_auto_maskandscale(False)
        v[:] = rng.integers(-3000, 3000, (24, 30, 40)).astype("i2")


def _ended_by_sigint(done: subprocess.CompletedProcess, told: str) -> None:
    assert done.returncode == -signal.SIGINT, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-2000:]
    assert told in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("how", ["script", "m"])
@pytest.mark.parametrize(("module", "command", "told"), [
    ("numcodecs", "info", STARTING),  # the package's first heavy import
    ("zarr", "info", STARTING),
    ("numcodecs_ext.zarr3", "info", STARTING),  # the package registering its codecs
    ("numcodecs_ext.cli.info", "info", STARTING),  # the command's own module, imported by main()
    ("numcodecs_ext.tools.info", "info", STARTING),  # the library module it runs
    ("numcodecs_ext.cf.convert", "convert", STARTING),
    ("xarray", "convert", WORKING),  # imported by convert itself, once it runs
])
def test_ctrl_c_while_importing(bin_dir, tmp_path, how, module, command, told):
    """At each moment of the start, the command ends by SIGINT with one line and no traceback,
    and has written nothing."""
    args = ["info"] if command == "info" else ["convert", str(tmp_path / "in.nc"), str(tmp_path / "out.zarr")]
    if command == "convert":
        _source(tmp_path / "in.nc")
    done = _command(bin_dir, how, *args, SIGINT_AT_IMPORT=module)
    _ended_by_sigint(done, told)
    assert done.stdout == "" and not (tmp_path / "out.zarr").exists()


def test_ctrl_c_during_a_convert_write_then_inspect_and_resume(bin_dir, tmp_path):
    """Ctrl-C while convert writes its runs: SIGINT status, no traceback; inspect names the
    interrupted convert, its source and how far it got (exit 1); the same command resumes, and
    inspect then finds a complete store (exit 0)."""
    src, dst = tmp_path / "in.nc", tmp_path / "out.zarr"
    _source(src)
    args = ["convert", str(src), str(dst), "--chunks", "time=1", "-q"]
    done = _command(bin_dir, "script", *args, SIGINT_AT_RECORD="5")
    _ended_by_sigint(done, WORKING)
    assert not (dst / "zarr.json").exists() and (dst / ".numcodecs-ext-convert").is_dir()

    seen = _command(bin_dir, "m", "inspect", str(dst))
    assert seen.returncode == 1, seen.stderr
    assert "not a zarr store" not in seen.stderr + seen.stdout
    assert (f"an interrupted convert of {src}: " in seen.stdout and " of 24 runs of chunks written, no metadata "
            "yet, so nothing opens; run `numcodecs-ext convert" in seen.stdout), seen.stdout
    assert "again to resume, or delete" in seen.stdout and "Traceback" not in seen.stderr
    report = json.loads(_command(bin_dir, "m", "inspect", str(dst), "--json").stdout)
    (entry,) = report["interrupted"]
    assert (entry["tool"], entry["source"], entry["runs_total"]) == ("convert", str(src), 24)
    assert 1 <= entry["runs_done"] < 24 and report["arrays"] == []  # threads may mark one or two more

    again = _command(bin_dir, "script", *args)
    assert again.returncode == 0, again.stderr[-2000:]
    after = _command(bin_dir, "m", "inspect", str(dst), "--json")
    assert after.returncode == 0, after.stderr
    report = json.loads(after.stdout)
    assert report["interrupted"] == [] and [a["path"] for a in report["arrays"]] == ["t2m"]


def test_ctrl_c_during_a_migrate_write_then_inspect(bin_dir, tmp_path):
    """The same for migrate to a new store: the journal's runs and totals are reported."""
    src, dst = tmp_path / "v2.zarr", tmp_path / "out.zarr"
    build_v2(src, chunks=40)
    args = ["migrate", str(src), str(dst), "--rewrite", "-q"]
    done = _command(bin_dir, "script", *args, SIGINT_AT_RECORD="3", NUMCODECS_EXT_RUN_BYTES="1")
    _ended_by_sigint(done, WORKING)
    assert not (dst / "zarr.json").exists()
    seen = _command(bin_dir, "m", "inspect", str(dst), "--json")
    assert seen.returncode == 1, seen.stderr
    report = json.loads(seen.stdout)
    (entry,) = report["interrupted"]
    assert (entry["tool"], entry["source"]) == ("migrate", str(src))
    assert entry["runs_total"] is not None and entry["runs_done"] < entry["runs_total"]
    assert entry["message"].startswith(f"an interrupted migrate of {src}: ")
    assert report["problems"][0] == {"path": "/", "problem": entry["message"]}


@pytest.mark.parametrize(("mode", "point"), [("chunks", 3), ("commit", 0), ("commit", 1)])
def test_inspect_after_a_killed_convert(tmp_path, mode, point):
    """SIGKILL (no chance to clean up) among the chunks or in the middle of the metadata commit:
    inspect reports the interrupted convert, never 'not a zarr store'."""
    src, dst = tmp_path / "in.nc", tmp_path / "out.zarr"
    _source(src)
    driver = write_driver(tmp_path, run_bytes=4000)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = subprocess.run([sys.executable, str(driver), mode, str(point), str(src), str(dst), "--chunks", "time=1",
                             "-q"], capture_output=True, text=True, env=env, timeout=300, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    seen = subprocess.run([sys.executable, "-m", "numcodecs_ext", "inspect", str(dst)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, check=False)
    assert seen.returncode == 1, seen.stderr
    assert f"an interrupted convert of {src}: " in seen.stdout, seen.stdout
    committed = mode == "commit" and point > 0  # the array's zarr.json written, not the root's
    assert ("its metadata was being written (the root's comes last)" in seen.stdout) == committed, seen.stdout


def _killed_at(tmp_path: Path, k: int, *argv: str) -> int:
    """Run ``numcodecs-ext ARGV`` killed (SIGKILL) at its k-th write operation (0: none); its status."""
    code = ("import sys; from tests.helpers import killpoints; "
            f"sys.exit(killpoints.main({k}, 'count.txt', *sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, env=env, capture_output=True,
                          timeout=300, check=False).returncode


def _inspect(dst: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "numcodecs_ext", "inspect", str(dst)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, check=False)


def test_inspect_after_a_kill_between_the_commit_and_the_journal_removal(tmp_path):
    """The root's metadata written, the journal not yet removed: inspect shows the arrays and
    says that only the journal is left and the same command finishes; which it does."""
    src, dst = tmp_path / "in.nc", tmp_path / "out.zarr"
    _source(src)
    argv = ["convert", str(src), str(dst), "--chunks", "time=6", "-q"]
    assert _killed_at(tmp_path, 0, *argv) == 0
    total = int((tmp_path / "count.txt").read_text())
    low, high = 1, total  # the first write operation after which the root's zarr.json exists
    while low < high:
        middle = (low + high) // 2
        shutil.rmtree(dst, ignore_errors=True)
        assert _killed_at(tmp_path, middle, *argv) == -signal.SIGKILL
        if (dst / "zarr.json").exists():
            high = middle
        else:
            low = middle + 1
    shutil.rmtree(dst, ignore_errors=True)
    assert _killed_at(tmp_path, low, *argv) == -signal.SIGKILL
    assert (dst / "zarr.json").exists() and (dst / ".numcodecs-ext-convert").exists()
    seen = _inspect(dst)
    assert seen.returncode == 1 and "t2m (zarr v3)" in seen.stdout, seen.stdout + seen.stderr
    assert (f"an interrupted convert of {src}: its metadata is all written, but its journal "
            "(.numcodecs-ext-convert) was not removed; run `numcodecs-ext convert") in seen.stdout, seen.stdout
    again = subprocess.run([sys.executable, "-m", "numcodecs_ext", *argv], capture_output=True, text=True,
                           cwd=ROOT, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert _inspect(dst).returncode == 0


@pytest.mark.parametrize("tool", ["convert", "migrate"])
def test_inspect_after_a_kill_at_the_first_write(tmp_path, tool):
    """Killed while writing the journal's first document (only its temporary file is there):
    still an interrupted convert or migrate, and the advice is what the tool then does."""
    dst = tmp_path / "out.zarr"
    if tool == "convert":
        _source(tmp_path / "in.nc")
        argv = ["convert", str(tmp_path / "in.nc"), str(dst), "-q"]
    else:
        build_v2(tmp_path / "v2.zarr")
        argv = ["migrate", str(tmp_path / "v2.zarr"), str(dst), "-q"]
    assert _killed_at(tmp_path, 1, *argv) == -signal.SIGKILL
    assert [p.name.endswith(".partial") for p in dst.rglob("*") if p.is_file()] == [True]
    seen = _inspect(dst)
    assert seen.returncode == 1, seen.stderr
    assert f"an interrupted {tool}" in seen.stdout and "not a zarr store" not in seen.stderr, seen.stdout
    again = subprocess.run([sys.executable, "-m", "numcodecs_ext", *argv], capture_output=True, text=True,
                           cwd=ROOT, timeout=300, check=False)
    if tool == "convert":  # convert refuses such a destination; inspect says to delete it first
        assert again.returncode == 2 and "remove it and run again" in again.stderr, again.stderr
        assert f"delete {dst} and run the command again" in seen.stdout, seen.stdout
    else:  # migrate starts afresh over its own temporary file
        assert again.returncode == 0, again.stderr
        assert "run the same `numcodecs-ext migrate` command again to resume" in seen.stdout, seen.stdout
