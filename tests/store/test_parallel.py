"""run_chunkwise: in this process, and on a real dask LocalCluster (worker processes), with a
bounded number of tasks in flight, failures said clearly, and workers that die mid-run."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading

from tests.helpers import cluster_tasks
import dask
import distributed
import numpy as np
import pytest
import zarr

from numcodecs_ext.store.errors import ToolError
from numcodecs_ext.store.parallel import find_scheduler, run_chunkwise
from numcodecs_ext.store.staging import StagedStore
from numcodecs_ext.store.storage import Location, ObjectNotFound
from tests.helpers import ROOT


@pytest.fixture(autouse=True, scope="module")
def _tasks_by_value():
    """Workers cannot import the tests folder: its task functions travel by value."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(cluster_tasks)
    yield
    cloudpickle.unregister_pickle_by_value(cluster_tasks)


# -- in this process ------------------------------------------------------------------------------


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_here_in_order_with_progress(scheduler, capsys):
    got = run_chunkwise(cluster_tasks.square, list(range(50)), label="sq", nbytes=[8] * 50,
                        scheduler=scheduler, in_flight=3)
    assert got == [i * i for i in range(50)]
    assert "50/50 chunks" in capsys.readouterr().err


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_on_done_sees_each_result_as_it_ends_and_can_stop_the_rest(scheduler):
    seen: list[tuple[int, int]] = []
    got = run_chunkwise(cluster_tasks.square, list(range(40)), progress=False, scheduler=scheduler,
                        in_flight=4, on_done=lambda i, r: seen.append((i, r)))
    assert sorted(seen) == [(i, i * i) for i in range(40)] and got == [i * i for i in range(40)]

    class Stop(Exception):
        pass

    def stop_at_5(i: int, result: int) -> None:
        seen.append((i, result))
        if i == 5:
            raise Stop

    seen.clear()
    with pytest.raises(Stop):
        run_chunkwise(cluster_tasks.square, list(range(1000)), progress=False, scheduler=scheduler, in_flight=4,
                      on_done=stop_at_5)
    assert (5, 25) in seen and len(seen) < 20  # the rest was not run


def test_here_without_dask_configuration():
    with dask.config.set(scheduler=None), find_scheduler() as where:
        assert not where.distributed and where.threads >= 1
        assert where.describe().startswith("this process")


def test_here_failure_names_the_run():
    with pytest.raises(ToolError, match=r"^verify: chunk 7 failed \(ValueError: chunk 7 is corrupt\)$"):
        run_chunkwise(cluster_tasks.fail_at, [(i, 7) for i in range(20)], label="verify", progress=False,
                      scheduler="threads", describe=lambda run: f"chunk {run[0]}")


def test_tool_errors_pass_unchanged(tmp_path):
    """A task raising the tools' own error (here a chunk that is not there) ends the run with
    that error, message and class unchanged."""
    loc = Location.parse(tmp_path)
    with pytest.raises(ObjectNotFound, match="c/3: no such object"):
        run_chunkwise(loc.read, ["c/3"], progress=False, scheduler="threads")


def test_here_bounded_in_flight():
    """Never more runs started than the bound, though there are many."""
    running, most, lock = [0], [0], threading.Lock()

    def work(i: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.002)
        with lock:
            running[0] -= 1
        return i

    assert run_chunkwise(work, list(range(200)), progress=False, scheduler="threads", in_flight=2) == list(range(200))
    assert 1 <= most[0] <= 2


def test_unknown_dask_scheduler_refused():
    from numcodecs_ext.store.errors import UsageError

    with pytest.raises(UsageError, match="dask scheduler 'nosuch'"):
        run_chunkwise(abs, [1], scheduler="nosuch", progress=False)


# -- on a LocalCluster ----------------------------------------------------------------------------


def _cluster(n: int, **kwargs):
    return distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                    dashboard_address=":0", **kwargs)


@pytest.fixture(scope="module")
def cluster2():
    with _cluster(2) as cluster:
        yield cluster


def _array(tmp_path, shape=(8, 8), chunks=(2, 4)) -> str:
    path = str(tmp_path / "a.zarr")
    z = zarr.create_array(path, shape=shape, chunks=chunks, dtype="f4", fill_value=0, compressors=None)
    z[:] = np.arange(np.prod(shape), dtype="f8").reshape(shape)
    return path


def _grid(path: str) -> list[tuple[int, ...]]:
    z = zarr.open_array(path, mode="r")
    return [tuple(c) for c in np.ndindex(*z.cdata_shape)]


@pytest.mark.cluster
@pytest.mark.parametrize("workers", [1, 2])
def test_verify_on_the_default_client(workers, tmp_path):
    """A Client in the calling process is used without being named; results (per-chunk
    verification outcomes) come back in order; a corrupt chunk is reported, not hidden."""
    path = _array(tmp_path)
    with open(os.path.join(path, "c", "1", "1"), "r+b") as f:  # a chunk whose bytes lie
        f.write(b"\x00" * 4)
    with _cluster(workers) as cluster, distributed.Client(cluster) as client:
        with find_scheduler() as where:
            assert where.client is client and f"{workers} workers" in where.describe()
        runs = [(path, c) for c in _grid(path)]
        got = run_chunkwise(cluster_tasks.verify_chunk, runs, label="verify", progress=False)
        assert [r[0] for r in got] == [c for _, c in runs]
        assert {r[0] for r in got if not r[1]} == {(1, 1)}
        places = run_chunkwise(cluster_tasks.where, list(range(8)), progress=False)
        assert {pid for pid, _ in places} != {os.getpid()} and all(address for _, address in places)
        assert len({a for _, a in places}) <= workers


@pytest.mark.cluster
def test_bounded_tasks_in_the_scheduler(cluster2):
    """However many runs, the scheduler holds a bounded number of this run's tasks."""
    with distributed.Client(cluster2) as client:
        label = "bounded"
        seen = run_chunkwise(cluster_tasks.tasks_in_scheduler, [(label, i) for i in range(40)],
                             label=label, client=client, in_flight=4, progress=False)
        assert max(seen) <= 4 + 2, seen  # the bound, and released tasks not yet forgotten


@pytest.mark.cluster
def test_on_done_on_a_cluster_streams_results_and_a_raise_cancels_the_rest(cluster2):
    with distributed.Client(cluster2) as client:
        seen: list[int] = []
        got = run_chunkwise(cluster_tasks.square, list(range(30)), client=client, in_flight=4, progress=False,
                            on_done=lambda i, r: seen.append(r))
        assert sorted(seen) == sorted(got) == [i * i for i in range(30)]

        def stop(i: int, result: int) -> None:
            seen.append(i)
            if len(seen) == 3:
                raise KeyError("enough")

        seen.clear()
        with pytest.raises(KeyError, match="enough"):
            run_chunkwise(cluster_tasks.square, list(range(500)), client=client, in_flight=4, progress=False,
                          on_done=stop)
        assert len(seen) == 3


@pytest.mark.cluster
def test_a_raise_in_on_done_returns_only_after_the_running_tasks_end(cluster2, tmp_path):
    """dask cannot stop a running task: the caller must not go on (migrate switches an array to
    a rewrite) while a task of the work it ended still writes."""
    def stop(i: int, result: int) -> None:
        raise KeyError("differs")

    runs = [(str(tmp_path), 0, 0.1), (str(tmp_path), 1, 1.5)]
    with distributed.Client(cluster2) as client, pytest.raises(KeyError, match="differs"):
        run_chunkwise(cluster_tasks.sleep_then_touch, runs, client=client, in_flight=2, progress=False,
                      on_done=stop)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wrote-0", "wrote-1"]


@pytest.mark.cluster
def test_scheduler_address_for_the_command_line(cluster2):
    """A command-line run finds the cluster through DASK_SCHEDULER_ADDRESS and runs its tasks
    on the cluster's workers."""
    code = ("import cloudpickle\nfrom tests.helpers import cluster_tasks\n"
            "cloudpickle.register_pickle_by_value(cluster_tasks)\n"
            "from numcodecs_ext.store.parallel import run_chunkwise, find_scheduler\n"
            "with find_scheduler() as w: print(w.describe())\n"
            "print(sorted({pid for pid, _ in run_chunkwise(cluster_tasks.where, range(6), progress=False)}))\n")
    env = {**os.environ, "DASK_SCHEDULER_ADDRESS": cluster2.scheduler_address,
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith(f"dask distributed at {cluster2.scheduler_address}: 2 workers")
    with distributed.Client(cluster2) as client:
        worker_pids = set(client.run(os.getpid).values())
    assert set(eval(out[1])) <= worker_pids and str(os.getpid()) not in out[1]


@pytest.mark.cluster
def test_worker_killed_once_the_run_completes(cluster2, tmp_path):
    """A worker dies while running one task; dask runs it again elsewhere (tasks are
    idempotent) and the run completes with every result right."""
    marker = str(tmp_path / "killed")
    with distributed.Client(cluster2) as client:
        got = run_chunkwise(cluster_tasks.kill_once, [(marker, i, 5) for i in range(12)], client=client,
                            progress=False)
        assert os.path.exists(marker), "the worker really died"
        assert got == [i * i for i in range(12)]
        client.wait_for_workers(2, timeout=120)


@pytest.mark.cluster
def test_worker_killed_every_time_fails_clearly():
    """A task that kills every worker that runs it ends the run with a clear ToolError."""
    # the culprit, or a task that shared its worker when it died
    with (dask.config.set({"distributed.scheduler.allowed-failures": 1}), _cluster(2) as cluster,
          distributed.Client(cluster) as client,
          pytest.raises(ToolError, match=r"^rewrite: chunk \d: the workers running it died, 2 times")):
        run_chunkwise(cluster_tasks.kill_always, [(i, 3) for i in range(8)], client=client,
                      label="rewrite", progress=False, describe=lambda run: f"chunk {run[0]}")


@pytest.mark.cluster
def test_task_error_on_the_cluster(cluster2):
    with (distributed.Client(cluster2) as client,
          pytest.raises(ToolError, match=r"^verify: \(4, 4\) failed \(ValueError: chunk 4 is corrupt\)$")):
        run_chunkwise(cluster_tasks.fail_at, [(i, 4) for i in range(30)], client=client, label="verify",
                      progress=False)


@pytest.mark.cluster
def test_rewrite_survives_a_dead_worker(cluster2, tmp_path, capsys):
    """A rewrite through a staged store, its worker killed after writing a chunk: the chunk is
    written again, the commit comes last, and the destination reads as the source."""
    source = _array(tmp_path, shape=(6, 6), chunks=(2, 2))
    dst = Location.parse(tmp_path / "dst.zarr")
    staged = StagedStore(dst)
    zarr.create_array(staged, shape=(6, 6), chunks=(2, 2), dtype="f4", fill_value=0)
    marker = str(tmp_path / "killed")
    runs = [(source, staged, c, marker) for c in _grid(source)]
    with distributed.Client(cluster2) as client:
        sizes = run_chunkwise(cluster_tasks.rewrite_chunk, runs, client=client, label="rewrite",
                              nbytes=[16] * len(runs))
    assert os.path.exists(marker) and sum(sizes) == 36
    assert "9/9 chunks" in capsys.readouterr().err  # progress across the cluster
    assert not dst.isfile("zarr.json")
    staged.commit()
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "dst.zarr"), mode="r")[:],
                                  zarr.open_array(source, mode="r")[:])


def test_local_only_for_stores_in_memory():
    """A MemoryStore lives in this process: its work stays here even with a cluster configured."""
    store = zarr.storage.MemoryStore()
    loc = Location.parse(store)
    loc.write("k", b"1")
    assert not loc.is_shared
    got = run_chunkwise(functools.partial(Location.read, loc), ["k", "k"], local_only=True, progress=False)
    assert got == [b"1", b"1"]


# -- scheduler addresses a command line is given (review3) ----------------------------------------

_NC = str(ROOT / "fixtures" / "netcdf" / "euro_air_temp.nc")


def _convert(out: str, address: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DASK_SCHEDULER_ADDRESS": address, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "3s"}
    return subprocess.run([sys.executable, "-m", "numcodecs_ext.cli", "convert", _NC, out, "-q"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize(("address", "says"), [
    ("garbage", "not usable"),
    pytest.param("tcp://127.0.0.1", "not usable", marks=pytest.mark.full),
    pytest.param("nosuch://127.0.0.1:1", "not usable", marks=pytest.mark.full),
    pytest.param("inproc://x", "not usable", marks=pytest.mark.full),
    pytest.param("inproc://10.0.0.1/1/1", "not usable", marks=pytest.mark.full),
    ("tls://127.0.0.1:1", "TLS"),
    pytest.param("tcp://127.0.0.1:1", "cannot connect", marks=pytest.mark.full),
    ("tcp://user:pw5ecret@127.0.0.1:1", "credentials"),
    pytest.param("tcp://:pw5ecret@127.0.0.1:1", "credentials", marks=pytest.mark.full),
])
def test_a_scheduler_address_that_cannot_work_is_a_usage_error(tmp_path, address, says):
    """Exit 2 naming the dask scheduler and what is wrong, the password never printed, no
    destination left behind; the process ends with its message (no client left connecting)."""
    result = _convert(str(tmp_path / "o.zarr"), address)
    where = f"status {result.returncode}: {result.stderr[-1500:]}"
    assert result.returncode == 2, where
    assert "dask scheduler" in result.stderr and says in result.stderr, where
    assert "pw5ecret" not in result.stderr + result.stdout, where
    assert "Traceback" not in result.stderr and "unexpected" not in result.stderr, where
    assert not (tmp_path / "o.zarr").exists()


def test_find_scheduler_refuses_a_malformed_address():
    from numcodecs_ext.store.errors import UsageError

    with dask.config.set({"scheduler-address": "tcp://u:pw5ecret@host"}), \
            pytest.raises(UsageError, match=r"tcp://host.*credentials") as e:
        with find_scheduler():
            pass
    assert "pw5ecret" not in str(e.value)


def _line_with(proc: subprocess.Popen, text: str, safety: float = 240) -> str:
    """The first line of ``proc``'s stderr holding ``text`` (the lines before it kept); a
    safety net ends the wait (the test fails on what was read, not on a time)."""
    import select

    seen = []
    while True:
        ready, _, _ = select.select([proc.stderr], [], [], safety)
        line = proc.stderr.readline() if ready else ""
        if not line:
            raise AssertionError(f"no line with {text!r} on stderr; it said: {''.join(seen)}")
        if text in line:
            return line
        seen.append(line)


@pytest.mark.cluster
def test_a_scheduler_without_workers_is_said_and_waited_for(tmp_path):
    """convert on a scheduler with no workers says so on stderr (even with -q: it explains the
    wait), waits, as dask's computations do, and completes once a worker joins."""
    with _cluster(0) as cluster:
        env = {**os.environ, "DASK_SCHEDULER_ADDRESS": cluster.scheduler_address}
        proc = subprocess.Popen([sys.executable, "-m", "numcodecs_ext.cli", "convert", _NC,
                                 str(tmp_path / "o.zarr"), "-q"], env=env, stderr=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            first = _line_with(proc, "has no workers")
            assert cluster.scheduler_address in first, first
            assert proc.poll() is None, "it waits for workers"
            cluster.scale(1)
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, first + err
    assert (tmp_path / "o.zarr" / "zarr.json").exists()


def test_a_dashboard_link_is_given_only_when_it_answers():
    """The client connected for DASK_SCHEDULER_ADDRESS advertises the scheduler's dashboard
    only while it answers (write progress names it on stderr)."""
    import urllib.request

    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            dask.config.set({"scheduler-address": cluster.scheduler_address}):
        with find_scheduler() as where:
            link = where.client.dashboard_link
            assert link and urllib.request.urlopen(link, timeout=30).status == 200
        cluster.scheduler.http_server.stop()  # the dashboard goes away; the scheduler stays
        with find_scheduler() as where:
            assert where.client.dashboard_link is None
