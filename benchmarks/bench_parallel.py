"""Chunk-wise work on a dask LocalCluster of 1 and 2 worker processes: verify-like and
rewrite-like jobs through numcodecs_ext.store.parallel, throughput and peak memory per worker.

* verify: each task decodes a run of chunks from two zfp-encoded stores (our zarr v3 ``zfp``
  serializer) and compares them value for value, as ``--verify full`` does after a copy.
* rewrite: each task decodes a run of chunks (zfp) and encodes them again at another precision
  into a staged destination (chunks written, metadata held back), as ``migrate --rewrite`` does.

Both are CPU-bound (zfp in C), so going from 1 to 2 worker processes should approach 2x
(goal: >= 1.7x) on a machine whose two cores are free. The anchor is the same job run serially
in this process, with no dask at all. Memory: each worker's peak RSS (``ru_maxrss``) and its
RSS before the work, asked of the workers themselves; with a bounded number of tasks in flight
the peak must not grow with the store (run with two store sizes to see it).

The machine's load average is printed before and after: on a shared machine the ratio is only
as good as the cores that were free; the spread over repetitions is printed too.

The same for ``numcodecs_ext.migrate`` itself (:func:`measure_migrate`): ``migrate --rewrite``
(decode FixedScaleOffset + zstd, encode through the spec codecs, read back and compare, a task
per run of 4 MiB) and ``verify`` of the result, on the same two clusters, found the way a user's
would be (``dask.config.set(scheduler=client)``); the anchor is the same call on dask's
synchronous scheduler in this process.

Usage: ``python benchmarks/bench_parallel.py [--quick]``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np

CHUNK = (256, 1024)  # 1 MiB of float32
RUN_CHUNKS = 4  # chunks per task: 4 MiB of float32


def _data(rows: int) -> np.ndarray:
    y = np.linspace(0, 12, rows, dtype="f8")[:, None]
    x = np.linspace(0, 6, CHUNK[1], dtype="f8")[None, :]
    noise = np.random.default_rng(0).standard_normal((rows, CHUNK[1])) * 0.3
    return (270 + 20 * np.sin(y) * np.cos(x) + noise).astype("f4")


def build(directory: str, mib: int) -> tuple[str, str, int]:
    """Two identical zfp-encoded arrays (source and its "copy") of ``mib`` MiB of float32."""
    import zarr

    from numcodecs_ext.zarr3.zfp import Zfp

    rows = mib * 2**20 // 4 // CHUNK[1] // CHUNK[0] * CHUNK[0]
    data = _data(rows)
    paths = []
    for name in ("src.zarr", "copy.zarr"):
        path = os.path.join(directory, name)
        z = zarr.create_array(path, shape=data.shape, chunks=CHUNK, dtype="f4", fill_value=0,
                              serializer=Zfp(mode="fixed_precision", precision=20), compressors=None)
        z[:] = data
        paths.append(path)
    return paths[0], paths[1], data.nbytes


def _regions(shape: tuple[int, ...]) -> list[tuple[slice, slice]]:
    rows = shape[0]
    step = CHUNK[0] * RUN_CHUNKS
    return [(slice(r, min(r + step, rows)), slice(0, shape[1])) for r in range(0, rows, step)]


def verify_run(run: tuple[str, str, tuple[slice, slice]]) -> tuple[bool, int]:
    """Decode one run from both stores, compare (a verify task)."""
    import zarr

    a_path, b_path, region = run
    a = zarr.open_array(a_path, mode="r")[region]
    b = zarr.open_array(b_path, mode="r")[region]
    return bool(np.array_equal(a, b)), int(a.nbytes)


def rewrite_run(run: tuple[str, Any, tuple[slice, slice]]) -> int:
    """Decode one run and encode it again into the staged destination (a rewrite task)."""
    import zarr

    src_path, staged, region = run
    data = zarr.open_array(src_path, mode="r")[region]
    zarr.open_array(staged, mode="r+")[region] = data
    return int(data.nbytes)


def _worker_memory(reset: bool = False) -> dict[str, float]:
    """This process's RSS and peak RSS (VmHWM: of this program image, unlike ``ru_maxrss``,
    which a spawned worker inherits from the process that forked it); ``reset`` starts a new
    peak (Linux: 5 to /proc/self/clear_refs)."""
    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                status[key] = int(value.split()[0]) / 1024
    if reset:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    return {"rss_mib": status["VmRSS"], "peak_mib": status["VmHWM"]}


def _reset_peak() -> dict[str, float]:
    return _worker_memory(reset=True)


def _cpu() -> float:
    """CPU seconds this process has used (every thread)."""
    t = os.times()
    return t.user + t.system


def _timed(client: Any, fn: Any) -> tuple[float, list[float], float]:
    """Wall seconds of ``fn()``, CPU seconds each worker spent in it, and CPU seconds of this
    process (client and scheduler) in it."""
    workers0, here0 = client.run(_cpu), _cpu()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    workers1, here1 = client.run(_cpu), _cpu()
    return wall, [workers1[w] - workers0[w] for w in workers0], here1 - here0


def _staged(directory: str, name: str, shape: tuple[int, ...]) -> Any:
    import zarr

    from numcodecs_ext.store.staging import StagedStore
    from numcodecs_ext.zarr3.zfp import Zfp

    staged = StagedStore(os.path.join(directory, name))
    zarr.create_array(staged, shape=shape, chunks=CHUNK, dtype="f4", fill_value=0,
                      serializer=Zfp(mode="fixed_precision", precision=16), compressors=None)
    return staged


def measure(mib: int, repeat: int) -> None:
    import cloudpickle
    import distributed
    import zarr

    from numcodecs_ext.store.parallel import run_chunkwise

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    with tempfile.TemporaryDirectory() as directory:
        src, copy, nbytes = build(directory, mib)
        shape = zarr.open_array(src, mode="r").shape
        regions = _regions(shape)
        verify_runs = [(src, copy, r) for r in regions]
        mb = nbytes / 1e6
        print(f"  store: {mb:.0f} MB of float32, {len(regions) * RUN_CHUNKS} chunks of 1 MiB, "
              f"{len(regions)} tasks of {RUN_CHUNKS} chunks")

        # the anchor: the same jobs serially in this process, no dask
        with zarr.config.set({"threading.max_workers": 1}):
            t0 = time.perf_counter()
            for run in verify_runs:
                verify_run(run)
            serial_verify = time.perf_counter() - t0
            staged = _staged(directory, "serial.zarr", shape)
            t0 = time.perf_counter()
            for r in regions:
                rewrite_run((src, staged, r))
            serial_rewrite = time.perf_counter() - t0
        print(f"  anchor, serial in this process: verify {2 * mb / serial_verify:6.0f} MB/s decoded, "
              f"rewrite {mb / serial_rewrite:6.0f} MB/s")

        env = {"ZARR_THREADING__MAX_WORKERS": "1", "OMP_NUM_THREADS": "1",  # one core per worker
               "DASK_LOGGING__DISTRIBUTED": "warning"}
        times: dict[tuple[str, int], list[float]] = {}
        cpus: dict[tuple[str, int], list[tuple[list[float], float]]] = {}
        memory: dict[int, list[dict[str, float]]] = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clusters = {n: distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                    dashboard_address=":0", env=env) for n in (1, 2)}
        clients = {n: distributed.Client(c, set_as_default=False) for n, c in clusters.items()}
        try:
            for n in (1, 2):  # warm-up: imports, first zfp session
                run_chunkwise(verify_run, verify_runs[:4], client=clients[n], progress=False)
            before = {n: list(clients[n].run(_reset_peak).values()) for n in (1, 2)}
            for _ in range(repeat):
                for n in (1, 2):  # interleaved, so that the machine's load hits both alike
                    ok: list[Any] = []
                    wall, workers, here = _timed(clients[n], lambda ok=ok, n=n: ok.extend(run_chunkwise(
                        verify_run, verify_runs, client=clients[n], progress=False, label="verify")))
                    assert all(same for same, _ in ok)
                    times.setdefault(("verify", n), []).append(wall)
                    cpus.setdefault(("verify", n), []).append((workers, here))
                    staged = _staged(directory, f"dst{n}.zarr", shape)
                    wall, workers, here = _timed(clients[n], lambda n=n, staged=staged: run_chunkwise(
                        rewrite_run, [(src, staged, r) for r in regions], client=clients[n],
                        progress=False, label="rewrite"))
                    times.setdefault(("rewrite", n), []).append(wall)
                    cpus.setdefault(("rewrite", n), []).append((workers, here))
            for n in (1, 2):
                memory[n] = list(clients[n].run(_worker_memory).values())
        finally:
            for c in clients.values():
                c.close()
            for c in clusters.values():
                c.close()
        for job, decoded in (("verify", 2 * mb), ("rewrite", mb)):
            rates = {n: [decoded / t for t in times[(job, n)]] for n in (1, 2)}
            ratios = [b / a for a, b in zip(rates[1], rates[2])]
            print(f"  {job:8} 1 worker {statistics.median(rates[1]):6.0f} MB/s "
                  f"({min(rates[1]):.0f}-{max(rates[1]):.0f}), 2 workers {statistics.median(rates[2]):6.0f} MB/s "
                  f"({min(rates[2]):.0f}-{max(rates[2]):.0f});  2 vs 1: {statistics.median(ratios):.2f}x "
                  f"(runs {min(ratios):.2f}-{max(ratios):.2f}x)")
            # What free cores would give: the 1-worker run's CPU time against the busiest worker
            # of the 2-worker run (the work split and any per-task overhead included).
            one = [sum(w) for w, _ in cpus[(job, 1)]]
            two = [max(w) for w, _ in cpus[(job, 2)]]
            split = [min(w) / max(w) for w, _ in cpus[(job, 2)]]
            # this process (client and LocalCluster's scheduler): mostly a constant background
            # (heartbeats, monitors), so per second of run rather than per task
            here = statistics.median(h / t for (_, h), t in zip(cpus[(job, 2)], times[(job, 2)])) * 100
            print(f"  {'':8} on free cores (CPU seconds, not wall): "
                  f"2 vs 1 {statistics.median(one) / statistics.median(two):.2f}x; "
                  f"CPU per MB {1e3 * statistics.median(one) / decoded:.1f} ms (1 worker) vs "
                  f"{1e3 * statistics.median(sum(w) for w, _ in cpus[(job, 2)]) / decoded:.1f} ms (2 workers); "
                  f"work split {statistics.median(split):.2f}; client+scheduler {here:.0f}% of a core")
        for n in (1, 2):
            for i, (b, a) in enumerate(zip(before[n], memory[n])):
                print(f"  {n}-worker cluster, worker {i}: RSS {b['rss_mib']:.0f} MiB before the work "
                      f"(imports done), peak {a['peak_mib']:.0f} MiB during it (+{a['peak_mib'] - b['rss_mib']:.0f})")


def _v2_store(directory: str, mib: int) -> tuple[str, int]:
    """A zarr v2 store of float32 packed into uint16 (FixedScaleOffset) with zstd, 1 MiB chunks."""
    import numcodecs
    import zarr

    rows = mib * 2**20 // 4 // CHUNK[1] // CHUNK[0] * CHUNK[0]
    data = _data(rows)
    path = os.path.join(directory, "v2.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(path, shape=data.shape, chunks=CHUNK, dtype="<f4", fill_value=250.0, zarr_format=2,
                              compressors=numcodecs.Zstd(level=1),
                              filters=[numcodecs.FixedScaleOffset(offset=250, scale=100, dtype="<f4", astype="<u2")])
        z[:] = data
    return path, data.nbytes


def measure_migrate(mib: int, repeat: int) -> None:
    import shutil

    import dask
    import distributed

    from numcodecs_ext.migrate import migrate, verify

    with tempfile.TemporaryDirectory() as directory:
        src, nbytes = _v2_store(directory, mib)
        mb = nbytes / 1e6
        print(f"  migrate: v2 store of {mb:.0f} MB of float32 (uint16 + zstd), {mib} chunks of 1 MiB")

        def rewrite(name: str) -> None:
            dst = os.path.join(directory, name)
            shutil.rmtree(dst, ignore_errors=True)
            assert migrate(src, dst, rewrite=True).verified

        def check(name: str) -> None:
            verify(src, os.path.join(directory, name))

        times: dict[tuple[str, Any], list[float]] = {}
        with dask.config.set(scheduler="synchronous"):
            for job, fn in (("rewrite", rewrite), ("verify", check)):
                t0 = time.perf_counter()
                fn("anchor.zarr")
                times[(job, 0)] = [time.perf_counter() - t0]
        env = {"ZARR_THREADING__MAX_WORKERS": "1", "OMP_NUM_THREADS": "1",
               "DASK_LOGGING__DISTRIBUTED": "warning"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clusters = {n: distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                    dashboard_address=":0", env=env) for n in (1, 2)}
        clients = {n: distributed.Client(c, set_as_default=False) for n, c in clusters.items()}
        try:
            for n in (1, 2):  # warm-up
                with dask.config.set(scheduler=clients[n]):
                    rewrite(f"warm{n}.zarr")
            before = {n: list(clients[n].run(_reset_peak).values()) for n in (1, 2)}
            for _ in range(repeat):
                for n in (1, 2):
                    with dask.config.set(scheduler=clients[n]):
                        for job, fn in (("rewrite", rewrite), ("verify", check)):
                            t0 = time.perf_counter()
                            fn(f"dst{n}.zarr")
                            times.setdefault((job, n), []).append(time.perf_counter() - t0)
            memory = {n: list(clients[n].run(_worker_memory).values()) for n in (1, 2)}
        finally:
            for c in clients.values():
                c.close()
            for c in clusters.values():
                c.close()
        for job, decoded in (("rewrite", mb), ("verify", 2 * mb)):
            rates = {n: [decoded / t for t in times[(job, n)]] for n in (0, 1, 2)}
            ratios = [b / a for a, b in zip(rates[1], rates[2])]
            print(f"  migrate {job:8} serial here {rates[0][0]:5.0f} MB/s; 1 worker "
                  f"{statistics.median(rates[1]):5.0f} MB/s, 2 workers {statistics.median(rates[2]):5.0f} MB/s; "
                  f"2 vs 1: {statistics.median(ratios):.2f}x (runs {min(ratios):.2f}-{max(ratios):.2f}x)")
        for n in (1, 2):
            for i, (b, a) in enumerate(zip(before[n], memory[n])):
                print(f"  migrate, {n}-worker cluster, worker {i}: RSS {b['rss_mib']:.0f} MiB before, "
                      f"peak {a['peak_mib']:.0f} MiB during (+{a['peak_mib'] - b['rss_mib']:.0f})")


def run(quick: bool = False) -> None:
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")  # no cluster chatter
    print("parallel: chunk-wise verify and rewrite on a LocalCluster, 1 vs 2 worker processes")
    print(f"  load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"(cores: {os.cpu_count()})")
    sizes = [32] if quick else [128, 256]
    for mib in sizes:
        measure(mib, repeat=2 if quick else 3)
    for mib in sizes:
        measure_migrate(mib, repeat=2 if quick else 3)
    print(f"  load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
