"""convert on a real S3 API (moto's server on 127.0.0.1) and on a dask LocalCluster: a netCDF file
in a bucket converted into a bucket, from the command line; the faults users meet (no bucket,
access denied, a server that stops mid-run) end with a clear message and the contract's exit
status, and nothing that opens; on 1 and 2 worker processes, with a worker killed mid-run, the
result is complete and verified or absent."""

from __future__ import annotations

import os
import signal
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from tests.helpers.cluster_tasks import kill_worker_when
from tests.tools.test_tools_s3 import FEW_ATTEMPTS, assert_clean, cli

from numcodecs_ext.cf import convert
from numcodecs_ext.store.storage import StoreNotFound


def _packed(path: Path, rows: int = 96) -> xr.Dataset:
    """A CF-packed netCDF-4 file (int16 with scale_factor/add_offset and a _FillValue), its
    decoded dataset returned."""
    rng = np.random.default_rng(3)
    t = (270 + 20 * rng.random((rows, 40, 50))).astype("f4")
    t[0, 0, :3] = np.nan
    ds = xr.Dataset({"t2m": (("time", "y", "x"), t, {"units": "K"})},
                    coords={"time": np.arange(rows, dtype="i4")})
    ds.to_netcdf(path, engine="netcdf4", encoding={"t2m": {
        "dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0, "_FillValue": -32768, "zlib": True}})
    return xr.open_dataset(path).load()


def _open_result(url_or_path: str, **storage_options) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(url_or_path, consolidated=False, storage_options=storage_options or None).load()


def _claims_nothing(s3, prefix: str) -> None:
    """No metadata document below ``prefix``: nothing there opens as an array or group."""
    keys = s3.keys(prefix)
    assert not [k for k in keys if k.rpartition("/")[2] in ("zarr.json", ".zarray", ".zgroup", ".zmetadata")], keys


# -- S3 ---------------------------------------------------------------------------------------------


@pytest.mark.full
def test_netcdf_in_a_bucket_to_a_bucket(s3, tmp_path):
    """The main path, from the command line: the source read in ranges from the bucket, the
    store written to the bucket, verified; xarray reads it as it decodes the file; inspect and
    suggest on the result."""
    want = _packed(tmp_path / "t.nc")
    s3.put("in/t.nc", (tmp_path / "t.nc").read_bytes())
    result = cli("convert", s3.url("in/t.nc"), s3.url("out/t.zarr"), "-q")
    assert result.returncode == 0, result.stderr
    got = _open_result(s3.url("out/t.zarr"))
    np.testing.assert_allclose(got["t2m"].values, want["t2m"].values, rtol=0, atol=0.006)
    assert np.isnan(got["t2m"].values[0, 0, :3]).all()
    meta = s3.get("out/t.zarr/t2m/zarr.json")
    assert b"scale_offset" in meta and b"cast_value" in meta
    ranged = [r for r in s3.requests() if r.kind == "GET" and r.key == "in/t.nc"]
    assert ranged and all(r.range for r in ranged)
    shown = cli("inspect", s3.url("out/t.zarr"))
    assert shown.returncode == 0 and "scale_offset" in shown.stdout, shown.stderr
    suggested = cli("suggest", s3.url("in/t.nc"), "--tolerance", "0.01", "-q")
    assert suggested.returncode == 0 and "t2m" in suggested.stdout, suggested.stderr


def test_from_python_with_a_store_object(s3, tmp_path):
    """Python callers give a zarr store object as the destination."""
    want = _packed(tmp_path / "t.nc", rows=8)
    store = zarr.storage.FsspecStore.from_url(s3.url("obj/t.zarr"), read_only=False)
    report = convert(tmp_path / "t.nc", store)
    assert report.verified
    np.testing.assert_allclose(_open_result(s3.url("obj/t.zarr"))["t2m"].values, want["t2m"].values, atol=0.006)


@pytest.mark.parametrize("which", ["src", "dst"])
@pytest.mark.full
def test_missing_bucket(s3, tmp_path, which):
    _packed(tmp_path / "t.nc", rows=4)
    s3.put("t.nc", (tmp_path / "t.nc").read_bytes())
    src = s3.url("t.nc") if which == "dst" else f"s3://no-such-{s3.name}/t.nc"
    dst = s3.url("t.zarr") if which == "src" else f"s3://no-such-{s3.name}/t.zarr"
    assert_clean(cli("convert", src, dst, "-q"), 2, f"the bucket 'no-such-{s3.name}' does not exist")
    with pytest.raises(StoreNotFound):
        convert(src, dst)


def test_missing_source_object(s3):
    assert_clean(cli("convert", s3.url("nothing.nc"), s3.url("t.zarr"), "-q"), 2, "does not exist")


@pytest.mark.full
def test_access_denied_writing(guarded_server, tmp_path, monkeypatch):
    """A user who may read but not write: exit 2, access denied, no credential shown, nothing
    written."""
    server, bucket, keys = guarded_server
    _packed(tmp_path / "t.nc", rows=4)
    server.require_auth(False)
    bucket.put("t.nc", (tmp_path / "t.nc").read_bytes())
    server.require_auth(True)
    key, secret = keys["reader"]
    for name, value in (("AWS_ACCESS_KEY_ID", key), ("AWS_SECRET_ACCESS_KEY", secret),
                        ("AWS_ENDPOINT_URL", server.endpoint)):
        monkeypatch.setenv(name, value)
    result = cli("convert", bucket.url("t.nc"), bucket.url("out.zarr"), "-q", env=FEW_ATTEMPTS)
    assert_clean(result, 2, "access denied")
    assert secret not in result.stderr and key not in result.stderr
    server.require_auth(False)
    assert not bucket.keys("out.zarr")


def _convert_while_the_server_stops(s3, tmp_path: Path, rows: int, requests: int, chunks: str):
    """A packed file of ``rows`` put in the bucket, then converted into ``out.zarr`` while the
    server stops answering after ``requests`` requests: its decoding, and the run's result."""
    want = _packed(tmp_path / "t.nc", rows=rows)
    s3.put("t.nc", (tmp_path / "t.nc").read_bytes())
    s3.proxy.reset()
    s3.proxy.cut_after(requests)
    try:
        result = cli("convert", s3.url("t.nc"), s3.url("out.zarr"), "-q", "--chunks", chunks, env=FEW_ATTEMPTS)
    finally:
        s3.proxy.cut_after(None)
    return want, result


@pytest.mark.full
def test_server_stops_mid_run(s3, tmp_path):
    """The server stops answering after some chunks were written: exit 1 with a clear message;
    the destination holds no metadata (nothing opens), whatever chunks reached it."""
    _, result = _convert_while_the_server_stops(s3, tmp_path, rows=96, requests=40, chunks="time=2")
    assert_clean(result, 1, "cannot be reached")
    _claims_nothing(s3, "out.zarr")


# -- a dask LocalCluster ----------------------------------------------------------------------------


def _cluster(n: int):
    import distributed

    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")


@pytest.mark.cluster
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.full
def test_on_the_default_client(tmp_path, workers, monkeypatch):
    """A distributed.Client in the calling process: the chunks are written and read back by
    the workers (other processes), a run of chunks per task, and the result verifies."""
    import distributed

    from numcodecs_ext.cf import write

    monkeypatch.setattr(write, "RUN_BYTES", 4 * 40 * 50 * 4)  # one chunk of t2m per task
    want = _packed(tmp_path / "t.nc")
    with _cluster(workers) as cluster, distributed.Client(cluster) as client:
        before = sum(client.run(_tasks_done).values())
        report = convert(tmp_path / "t.nc", tmp_path / "t.zarr", chunks={"time": 4})
        after = sum(client.run(_tasks_done).values())
    assert report.verified and after - before >= 24  # 96 / 4 chunks of t2m, written by the workers
    np.testing.assert_allclose(_open_result(str(tmp_path / "t.zarr"))["t2m"].values, want["t2m"].values, atol=0.006)


def _tasks_done(dask_worker) -> int:
    """Tasks this worker has run (``client.run`` passes the worker)."""
    return int(dask_worker.state.executed_count)


@pytest.mark.cluster
@pytest.mark.full
def test_a_worker_killed_mid_run(tmp_path):
    """A worker process is killed (SIGKILL) while the chunks are written: dask runs its tasks
    again on a new worker; the result is complete and verified, or there is an error and
    nothing that opens."""
    import distributed

    from numcodecs_ext.store.errors import ToolError

    want = _packed(tmp_path / "t.nc", rows=240)
    out = tmp_path / "t.zarr"
    with _cluster(2) as cluster, distributed.Client(cluster) as client:
        pids = list(client.run(os.getpid).values())
        chunks = out / "t2m" / "c"
        killer, killed = kill_worker_when(pids[0], lambda: chunks.exists() and sum(1 for _ in chunks.rglob("*")) >= 10)
        try:
            report = convert(tmp_path / "t.nc", out, chunks={"time": 2})
        except ToolError:
            assert not (out / "zarr.json").exists() and not (out / "t2m" / "zarr.json").exists()
            return
        finally:
            killer.join(timeout=130)
        assert killed, "the worker was not killed while chunks were written"
        assert pids[0] not in client.run(os.getpid).values()  # a new worker took its place
    assert report.verified
    np.testing.assert_allclose(_open_result(str(out))["t2m"].values, want["t2m"].values, atol=0.006)


@pytest.mark.cluster
@pytest.mark.full
def test_a_sample_read_back_on_the_cluster(tmp_path, monkeypatch):
    """--verify sample:N on a cluster: the chosen chunks are read back by the tasks on the
    workers (each journal mark is written by the task that read its chunks back), the report
    says it sampled and how much."""
    import distributed

    from numcodecs_ext.cf import write
    from numcodecs_ext.store import journal

    monkeypatch.setattr(write, "RUN_BYTES", 4 * 40 * 50 * 4)
    marks: list[tuple[int, int]] = []
    original = journal.Journal.record
    _packed(tmp_path / "t.nc")
    with _cluster(2) as cluster, distributed.Client(cluster) as client:
        monkeypatch.setattr(journal.Journal, "record", lambda self, *a, **k: (marks.append(a), original(self, *a, **k)))
        report = convert(tmp_path / "t.nc", tmp_path / "t.zarr", chunks={"time": 4}, verify="sample:3")
        pids = set(client.run(os.getpid).values())
    assert not marks, "the runs were marked in this process, not on the workers"
    assert pids and os.getpid() not in pids
    assert not report.verified
    # 3 of the 24 chunks of t2m (on the workers) and of time (an index coordinate, read back here)
    assert report.verification.startswith("sampled: 6 of 48 chunks"), report.verification


# -- resuming in a bucket ---------------------------------------------------------------------------


def _driver(tmp_path: Path) -> Path:
    from tests.cf.test_convert_resume import _driver

    return _driver(tmp_path)


def _objects(s3, prefix: str) -> dict[str, bytes]:
    return {k[len(prefix):]: s3.get(k) for k in s3.keys(prefix)}


@pytest.mark.full
def test_killed_in_a_bucket_then_the_same_command_resumes(s3, tmp_path):
    """SIGKILL after some runs were marked, the store in a bucket: the same command resumes (and
    says so), the result equals an uninterrupted conversion object for object, the journal is
    gone."""
    import subprocess
    import sys

    _packed(tmp_path / "t.nc", rows=24)
    s3.put("in/t.nc", (tmp_path / "t.nc").read_bytes())
    driver = _driver(tmp_path)

    def run(mode: str, n: int, dst: str, *extra: str):
        return subprocess.run([sys.executable, str(driver), mode, str(n), s3.url("in/t.nc"), s3.url(dst),
                               "--chunks", "time=1", *extra], capture_output=True, text=True, timeout=300,
                              env={**os.environ, **FEW_ATTEMPTS}, check=False)

    done = run("none", 0, "full.zarr", "-q")
    assert done.returncode == 0, done.stderr
    killed = run("marks", 4, "out.zarr", "-q")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    _claims_nothing(s3, "out.zarr")
    marked = [k for k in s3.keys("out.zarr/.numcodecs-ext-convert/runs/")]
    assert 1 <= len(marked) <= 4
    again = run("none", 0, "out.zarr")
    assert again.returncode == 0, again.stderr
    assert f"({len(marked)} of " in again.stdout and "already written by it and were kept" in again.stdout
    full, out = _objects(s3, "full.zarr/"), _objects(s3, "out.zarr/")
    assert sorted(full) == sorted(out) and all(full[k] == out[k] for k in full)
    assert not any(k.startswith(".numcodecs-ext-convert") for k in out)


@pytest.mark.full
def test_a_server_that_stops_then_comes_back_resumes(s3, tmp_path):
    """The server stops answering mid-run: exit 1, nothing opens, the message says the same
    command resumes; it does once the server is back, keeping what was marked."""
    want, result = _convert_while_the_server_stops(s3, tmp_path, rows=48, requests=120, chunks="time=1")
    assert_clean(result, 1, "cannot be reached")
    assert "run the same command again to resume" in result.stderr
    _claims_nothing(s3, "out.zarr")
    again = cli("convert", s3.url("t.nc"), s3.url("out.zarr"), "--chunks", "time=1")
    assert again.returncode == 0, again.stderr
    got = _open_result(s3.url("out.zarr"))
    np.testing.assert_allclose(got["t2m"].values, want["t2m"].values, rtol=0, atol=0.006)
    assert not s3.keys("out.zarr/.numcodecs-ext-convert")
