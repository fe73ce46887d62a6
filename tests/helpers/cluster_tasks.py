"""Task functions for the dask cluster tests (sent to workers by value: the workers do not have
the tests folder on their path), and :func:`kill_worker_when`, which the tests run in their own
process to kill a worker mid-run."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Callable

import numpy as np


def square(i: int) -> int:
    return i * i


def where(_: Any) -> tuple[int, str | None]:
    """The process a task ran in, and its worker's address (None outside a worker)."""
    try:
        from distributed import get_worker

        address = get_worker().address
    except (ImportError, ValueError):
        address = None
    return os.getpid(), address


def tasks_in_scheduler(run: tuple[str, int]) -> int:
    """How many tasks whose key starts with ``run[0]`` the scheduler holds now."""
    prefix, _ = run
    from distributed import get_client

    time.sleep(0.05)
    return get_client().run_on_scheduler(
        lambda dask_scheduler: sum(1 for k in dask_scheduler.tasks if str(k).startswith(prefix)))


def kill_once(run: tuple[str, int, int]) -> int:
    """Kill the worker the first time run ``kill_at`` runs (a marker file says it happened)."""
    marker, i, kill_at = run
    if i == kill_at:
        _exit_once(marker)
    return i * i


def _exit_once(marker: str) -> None:
    """End this worker process abruptly unless ``marker`` exists (it is created first): the
    first task to get here dies, the ones that run again do not."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(1)


def kill_always(run: tuple[int, int]) -> int:
    i, kill_at = run
    if i == kill_at:
        os._exit(1)
    return i


def fail_at(run: tuple[int, int]) -> int:
    i, bad = run
    if i == bad:
        raise ValueError(f"chunk {i} is corrupt")
    return i


def verify_chunk(run: tuple[str, tuple[int, ...]]) -> tuple[tuple[int, ...], bool, int]:
    """Decode one chunk of the array at ``run[0]`` and compare it with what was written there
    (``np.arange`` of the array's size, in its shape): a verify-like task."""
    import zarr

    path, coords = run
    z = zarr.open_array(path, mode="r")
    region = tuple(slice(c * n, min((c + 1) * n, s)) for c, n, s in zip(coords, z.chunks, z.shape))
    got = z[region]
    expected = np.arange(int(np.prod(z.shape)), dtype="f8").reshape(z.shape)[region].astype(z.dtype)
    return coords, bool(np.array_equal(got, expected)), int(got.nbytes)


def rewrite_chunk(run: tuple[Any, Any, tuple[int, ...], str]) -> int:
    """Copy one chunk from a source array to a staged destination array (its metadata travels
    in the pickled staged store); kill the worker once on the chosen chunk."""
    import zarr

    source, staged, coords, marker = run
    src = zarr.open_array(source, mode="r")
    dst = zarr.open_array(staged, mode="r+")
    region = tuple(slice(c * n, min((c + 1) * n, s)) for c, n, s in zip(coords, src.chunks, src.shape))
    dst[region] = src[region]
    if marker and coords == (1, 1):
        _exit_once(marker)
    return int(np.prod([r.stop - r.start for r in region]))


def kill_worker_when(pid: int, ready: Callable[[], bool], before: Callable[[], None] | None = None,
                     timeout: float = 120) -> tuple[threading.Thread, list[int]]:
    """In the test process: a started thread that kills worker process ``pid`` (SIGKILL) as soon
    as ``ready()`` is true (calling ``before()`` just before), and the list it appends ``pid``
    to once it did; it gives up after ``timeout`` seconds."""
    killed: list[int] = []

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                if before is not None:
                    before()
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.002)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, killed


def sleep_then_touch(run: tuple[str, int, float]) -> int:
    """Sleep, then create a file: a task still running after its caller would have gone on."""
    import time
    from pathlib import Path

    folder, i, seconds = run
    time.sleep(seconds)
    (Path(folder) / f"wrote-{i}").touch()
    return i
