"""migrate's --rewrite, its verification, normalize's proof and --finish's proof as tasks on a
real dask LocalCluster (worker processes): found through the Client of the calling process, on
1 and 2 workers, and a worker killed (SIGKILL) mid-run, after which the run completes (dask runs
the dead worker's tasks again: they are idempotent) or ends in an error with nothing that opens
as complete; metadata is written only after every run is verified."""

from __future__ import annotations

import os
import warnings

import numcodecs
import numpy as np
import pytest
import zarr
from tests.helpers.cluster_tasks import kill_worker_when
from tests.helpers.migrate_helpers import check_complete_or_absent, fso

from numcodecs_ext.migrate import finish_in_place, migrate, migrate_in_place, verify
from numcodecs_ext.store.errors import ToolError

distributed = pytest.importorskip("distributed")


@pytest.fixture(autouse=True, scope="module")
def _by_value():
    """Workers cannot import the tests folder: this module's worker plugin travels by value."""
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _cluster(n: int):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0")


def _tasks_done(dask_worker) -> int:
    return int(dask_worker.state.executed_count)


def _store(path, chunks: int = 60) -> dict[str, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(str(path), mode="w", zarr_format=2)
        t = g.create_array("t", shape=(chunks * 8, 50), chunks=(8, 50), dtype="<f4", fill_value=250.0,
                           filters=[fso()], compressors=numcodecs.Zstd(level=1))
        t[:] = (250 + np.random.default_rng(1).random((chunks * 8, 50)) * 60).astype("<f4")
        return {"t": zarr.open_array(str(path / "t"), mode="r", zarr_format=2)[...]}


@pytest.fixture
def one_chunk_runs(monkeypatch):
    monkeypatch.setenv("NUMCODECS_EXT_RUN_BYTES", "1")


@pytest.mark.cluster
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.full
def test_rewrite_and_verify_on_the_workers(tmp_path, workers, one_chunk_runs):
    want = _store(tmp_path / "v2.zarr")
    with _cluster(workers) as cluster, distributed.Client(cluster) as client:
        before = sum(client.run(_tasks_done).values())
        report = migrate(tmp_path / "v2.zarr", tmp_path / "rw.zarr", rewrite=True)
        rewritten = sum(client.run(_tasks_done).values())
        checked = verify(tmp_path / "v2.zarr", tmp_path / "rw.zarr")
        verified = sum(client.run(_tasks_done).values())
        kept = migrate(tmp_path / "v2.zarr", tmp_path / "keep.zarr", verify="sample:5")
        sampled = sum(client.run(_tasks_done).values())
    assert report.verified and report.chunks_rewritten == 60 and report.chunks_checked == 60
    assert rewritten - before >= 60  # one task per run, on the workers
    assert verified - rewritten >= 60 and checked.chunks_checked == 60
    assert sampled - verified >= 60 and kept.chunks_checked == 5  # copied everything, compared 5
    for name in ("rw.zarr", "keep.zarr"):
        assert check_complete_or_absent(tmp_path / name, want) == "complete"


@pytest.mark.cluster
def test_in_place_and_finish_prove_on_the_workers(tmp_path, one_chunk_runs):
    want = _store(tmp_path / "v2.zarr", chunks=30)
    with _cluster(2) as cluster, distributed.Client(cluster) as client:
        before = sum(client.run(_tasks_done).values())
        migrate_in_place(tmp_path / "v2.zarr")
        proved = sum(client.run(_tasks_done).values())
        report = finish_in_place(tmp_path / "v2.zarr")
        finished = sum(client.run(_tasks_done).values())
    assert proved - before >= 30 and finished - proved >= 30 and report.chunks_checked == 30
    assert not (tmp_path / "v2.zarr" / ".zgroup").exists()
    assert check_complete_or_absent(tmp_path / "v2.zarr", want) == "complete"


@pytest.mark.cluster
@pytest.mark.full
def test_a_worker_killed_mid_rewrite(tmp_path, one_chunk_runs):
    """SIGKILL to a worker while chunks are being rewritten: the run completes verified (its
    tasks ran again elsewhere), or fails clearly; at no moment does the destination open as
    complete before every run is verified."""
    want = _store(tmp_path / "v2.zarr", chunks=200)
    out = tmp_path / "out.zarr"
    seen_early: list[str] = []
    with _cluster(2) as cluster, distributed.Client(cluster) as client:
        pids = list(client.run(os.getpid).values())

        def metadata_so_early() -> None:
            if (out / "zarr.json").exists() or (out / "t" / "zarr.json").exists():
                seen_early.append("metadata before the kill")

        killer, killed = kill_worker_when(
            pids[0], lambda: (out / "t").exists() and sum(1 for _ in (out / "t").iterdir()) >= 20, metadata_so_early)
        try:
            report = migrate(tmp_path / "v2.zarr", out, rewrite=True)
        except ToolError:
            assert check_complete_or_absent(out, want) in ("absent", "partial")
            assert not (out / "zarr.json").exists()
            return
        finally:
            killer.join(timeout=130)
        assert killed, "the worker was not killed while chunks were written"
        assert pids[0] not in client.run(os.getpid).values()
    assert not seen_early
    assert report.verified and report.chunks_rewritten >= 200
    assert check_complete_or_absent(out, want) == "complete"


@pytest.mark.cluster
@pytest.mark.full
def test_workers_dying_every_time_leave_nothing_complete(tmp_path, one_chunk_runs):
    """Every worker that runs a rewrite task dies (a crash in a library, out of memory ...):
    a clear ToolError after dask's allowed failures, and nothing that opens."""
    import dask

    want = _store(tmp_path / "v2.zarr", chunks=10)
    out = tmp_path / "out.zarr"
    with (dask.config.set({"distributed.scheduler.allowed-failures": 0}), _cluster(1) as cluster,
          distributed.Client(cluster) as client):
        client.register_plugin(_KillOnRewrite())
        with pytest.raises(ToolError, match="the workers running it died"):
            migrate(tmp_path / "v2.zarr", out, rewrite=True)
    assert check_complete_or_absent(out, want) == "absent"
    assert not (out / "zarr.json").exists()


class _KillOnRewrite(distributed.diagnostics.plugin.WorkerPlugin):
    """Kills its worker when it starts a migrate rewrite task."""

    def transition(self, key, start, finish, **kwargs):
        if finish == "executing" and str(key).startswith("rewrite-"):
            os._exit(1)
