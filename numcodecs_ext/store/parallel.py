"""Chunk-wise work on the scheduler the user configured: a dask distributed cluster, or this
process.

The store tools split their heavy phases (writing converted chunks, rewriting migrated chunks,
verifying) into *runs*: small picklable descriptors of a few chunks each. :func:`run_chunkwise`
maps a function over them

* on dask distributed when the user set it up the usual way: a ``distributed.Client`` in the
  calling process (the default client), ``dask.config.set(scheduler=client)``, or a scheduler
  address in dask's configuration (``DASK_SCHEDULER_ADDRESS`` / ``scheduler-address``), which
  is how a command-line run finds a cluster;
* otherwise in this process, on a pool of threads (the codecs release the GIL), or one after
  another when dask's configuration says ``scheduler="synchronous"``.

Whatever the number of runs, only a bounded number of tasks is in flight (twice the threads
of the cluster by default), so memory per worker stays a few runs' worth on a store of any size,
and results are gathered as they arrive. Progress (chunks and bytes done across the cluster) is
the tools' one bar (:mod:`numcodecs_ext.store.progress`).

Tasks must be idempotent: dask runs a task again when the worker running it dies (a chunk
written twice is the same chunk). A task that raises, or that kills its worker every time
(dask gives up after ``distributed.scheduler.allowed-failures`` deaths), ends the run with a
:class:`~numcodecs_ext.store.errors.ToolError` naming the run; the tasks still waiting are
cancelled.

Examples
--------
>>> run_chunkwise(abs, [-1, 2, -3], label="abs", progress=False, scheduler="synchronous")
[1, 2, 3]
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import ToolError, UsageError
from .faults import redact, url_secrets, url_userinfo
from .progress import Progress

__all__ = ["Scheduler", "find_scheduler", "run_chunkwise"]

T = TypeVar("T")
R = TypeVar("R")

_SYNCHRONOUS = {"sync", "synchronous", "single-threaded"}
_RESUBMIT = 3  # a task the scheduler cancelled is submitted again this many times


@dataclass
class Scheduler:
    """Where the work runs: ``client`` (a distributed.Client) or this process with ``threads``
    threads (1: one after another in the calling thread)."""

    client: Any = None
    threads: int = 1
    owned: bool = False  # a client this module connected (and closes)

    @property
    def distributed(self) -> bool:
        return self.client is not None

    def total_threads(self) -> int:
        if self.client is None:
            return self.threads
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:  # noqa: BLE001 - a scheduler without workers yet: dask will wait for some
            return 1

    def describe(self) -> str:
        if self.client is None:
            return f"this process, {self.threads} thread{'s' * (self.threads != 1)}"
        workers = self.client.nthreads()
        return (f"dask distributed at {self.client.scheduler.address}: {len(workers)} workers, "
                f"{sum(workers.values())} threads")


def _dask_config(key: str) -> Any:
    try:
        import dask
    except ImportError:
        return None
    return dask.config.get(key, None)


@contextlib.contextmanager
def find_scheduler(client: Any = None, *, scheduler: str | None = None,
                   threads: int | None = None) -> Iterator[Scheduler]:
    """The scheduler to run on, in this order: ``client``; ``scheduler`` (``"threads"``,
    ``"synchronous"``); dask's configured scheduler (a Client set with
    ``dask.config.set(scheduler=client)``, or a local one by name); the default
    ``distributed.Client`` of this process; dask's ``scheduler-address``
    (``DASK_SCHEDULER_ADDRESS``), connected here and closed at the end; else this process
    with ``threads`` threads (dask's ``num_workers``, else the number of CPUs).

    An address that cannot work (malformed, ``user:password@`` in it, an unknown scheme,
    ``tls://`` without dask's TLS configuration, ``inproc://`` of another process, a host:port
    that refuses or does not answer within dask's connect timeout) is a UsageError before any
    client is made, with the address shown without credentials. A scheduler with no workers
    gets a note on stderr, and the work waits for workers to join, as dask's own computations
    do (an adaptive cluster starts its workers when work arrives; a bound on the wait would
    fail those). The connected client names the scheduler's dashboard only if it answers."""
    if client is not None:
        yield Scheduler(client=client)
        return
    configured = scheduler if scheduler is not None else _dask_config("scheduler")
    n = threads or _dask_config("num_workers") or os.cpu_count() or 1
    if configured is not None and not isinstance(configured, str):
        if hasattr(configured, "submit") and hasattr(configured, "nthreads"):
            yield Scheduler(client=configured)
            return
        configured = None
    if isinstance(configured, str) and configured not in ("distributed", "dask.distributed"):
        if configured in _SYNCHRONOUS:
            yield Scheduler(threads=1)
        elif configured in ("threads", "threading", "processes", "multiprocessing"):
            yield Scheduler(threads=int(n))
        else:
            raise UsageError(f"dask scheduler {configured!r} is not one the tools can run on; use a "
                             "distributed.Client, 'threads' or 'synchronous'")
        return
    try:
        import distributed
    except ImportError:
        distributed = None
    if distributed is not None:
        try:
            yield Scheduler(client=distributed.default_client())
            return
        except ValueError:  # no client in this process
            pass
    address = _dask_config("scheduler-address")
    if address:
        address = str(address)
        if distributed is None:
            raise UsageError(f"a dask scheduler address is configured ({_shown(address)}), but "
                             "dask.distributed is not installed (pip install distributed)")
        timeout = _dask_config("distributed.comm.timeouts.connect") or 30
        _check_address(address, timeout)
        try:
            connected = _client_class(distributed)(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            raise UsageError(f"cannot connect to the dask scheduler at {_shown(address)} "
                             f"({_SOURCE}): {redact(str(e), secrets=url_secrets(address))}") from None
        try:
            _say_when_no_workers(connected, address)
            yield Scheduler(client=connected, owned=True)
        finally:
            connected.close()
        return
    yield Scheduler(threads=int(n))


_SOURCE = "DASK_SCHEDULER_ADDRESS / dask's scheduler-address"


def _shown(address: str) -> str:
    """A scheduler address as messages show it (no user:password@)."""
    return redact(address)


def check_scheduler_address() -> None:
    """UsageError now, before any work, for a configured ``scheduler-address``
    (``DASK_SCHEDULER_ADDRESS``) that cannot work; connects no client (a scheduler without
    workers is fine: the work waits for them)."""
    address = _dask_config("scheduler-address")
    if address:
        _check_address(str(address), _dask_config("distributed.comm.timeouts.connect") or 30)


def _check_address(address: str, timeout: Any) -> None:
    """UsageError, before any client is made, for an address that cannot name a reachable
    scheduler: malformed, credentials in it, an unknown scheme, tls:// without dask's TLS
    configuration, inproc:// of another process, or a host:port that refuses or does not
    answer a connection (a distributed.Client left to find that out keeps the process
    alive long after the error)."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import get_backend

    shown = _shown(address)
    if url_userinfo(address):
        raise UsageError(f"the dask scheduler address {shown} carries credentials (user:password@), which "
                         f"dask does not take ({_SOURCE}); give scheme://host:port, and TLS settings for "
                         "a secured scheduler")
    try:
        scheme, where = parse_address(address, strict=False)
        get_backend(scheme)
        if scheme == "inproc":
            parts = where.split("/")
            if len(parts) != 3 or parts[1] != str(os.getpid()):
                raise ValueError("an inproc:// address reaches a scheduler of this process only; "
                                 "give the tcp:// address of the scheduler")
            return
        host, port = parse_host_port(where)
    except ValueError as e:
        raise UsageError(f"the dask scheduler address {shown} is not usable ({_SOURCE}): "
                         f"{redact(str(e))}; give scheme://host:port, e.g. tcp://10.0.0.5:8786") from None
    if scheme in ("tls", "wss"):
        from distributed.security import Security

        if Security().get_connection_args("client").get("ssl_context") is None:
            raise UsageError(f"the dask scheduler address {shown} is {scheme}://, but dask has no TLS "
                             "configuration (distributed.comm.tls.* : ca-file, client.cert, client.key); "
                             "give those, or the scheduler's tcp:// address")
    if scheme not in ("tcp", "tls", "ws", "wss"):
        return
    from dask.utils import parse_timedelta

    try:
        seconds = float(parse_timedelta(timeout, default="seconds") or 30)
    except (TypeError, ValueError, KeyError):
        seconds = 30.0
    try:
        socket.create_connection((host, port), timeout=seconds).close()
    except OSError as e:
        raise UsageError(f"cannot connect to the dask scheduler at {shown} ({_SOURCE}): "
                         f"{e.strerror or type(e).__name__}") from None


def _client_class(distributed: Any) -> type:
    """distributed.Client whose ``dashboard_link`` is a link that answers, else None: a
    scheduler may name a dashboard that is not there (no bokeh on it, its port taken by another
    process's, a host not reachable from here); the tools do not advertise one that is not."""

    class Client(distributed.Client):
        @property
        def dashboard_link(self) -> str | None:
            try:
                link = super().dashboard_link
            except Exception:  # noqa: BLE001 - no dashboard service: KeyError; any other: none to show
                return None
            return link if link and _answers(link) else None

    return Client


def _answers(link: str, seconds: float = 2.0) -> bool:
    """Whether the dashboard at ``link`` answers an HTTP request with its status page."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(link, method="HEAD"), timeout=seconds) as reply:
            return 200 <= reply.status < 400
    except urllib.error.HTTPError as e:
        return e.code == 405  # a server there that takes GET only
    except (OSError, ValueError):
        return False


def _say_when_no_workers(client: Any, address: str) -> None:
    """A note on stderr when the scheduler has no workers: the work is submitted and waits for
    workers to join, as dask's own computations do (an adaptive cluster starts them on
    demand), but a user waiting in front of a silent command learns why."""
    import sys

    try:
        workers = client.scheduler_info().get("workers", {})
    except Exception:  # noqa: BLE001 - the note is a courtesy; the work itself reports failures
        return
    if not workers:
        print(f"note: the dask scheduler at {_shown(address)} has no workers yet; the work waits until "
              f"workers join (start some with `dask worker {_shown(address)}`, or unset "
              "DASK_SCHEDULER_ADDRESS to work in this process)", file=sys.stderr, flush=True)


def run_chunkwise(func: Callable[[T], R], runs: Sequence[T], *, label: str = "work",
                  nbytes: Sequence[int] | None = None, nchunks: Sequence[int] | None = None,
                  progress: bool = True, client: Any = None, scheduler: str | None = None,
                  local_only: bool = False, in_flight: int | None = None,
                  describe: Callable[[T], str] = str, on_done: Callable[[int, R], None] | None = None) -> list[R]:
    """``[func(run) for run in runs]``, run as tasks on the configured scheduler
    (:func:`find_scheduler`), a bounded number at a time; results in the order of ``runs``.

    Parameters
    ----------
    func
        A picklable function of one run (a module-level function or ``functools.partial``).
        It must be idempotent: a task whose worker died runs again.
    runs
        Small picklable descriptors (a few chunks each).
    label
        Names the work on the progress bar, in dask's dashboard and in error messages.
    nbytes, nchunks
        Bytes and chunks of each run, for the progress bar (chunks default to one per run).
    local_only
        Run in this process whatever is configured (e.g. a store in this process's memory,
        which workers cannot reach).
    in_flight
        Tasks submitted and not finished at any time (default: twice the cluster's threads).
    describe
        How an error message names a run.
    on_done
        Called here with each run's index and result as it ends, in the order they end (a
        journal recorded run by run: no batch waits for its slowest task while workers idle).
        What it raises ends the work: the tasks not started are cancelled, and those running
        end before it is raised here.
    """
    runs = list(runs)
    sizes = list(nbytes) if nbytes is not None else [0] * len(runs)
    counts = list(nchunks) if nchunks is not None else [1] * len(runs)
    if len(sizes) != len(runs) or len(counts) != len(runs):
        raise ValueError("run_chunkwise: nbytes and nchunks need one entry per run")
    with contextlib.ExitStack() as stack:
        where = (Scheduler(threads=1 if scheduler in _SYNCHRONOUS else (os.cpu_count() or 1))
                 if local_only else stack.enter_context(find_scheduler(client, scheduler=scheduler)))
        limit = max(1, in_flight or 2 * where.total_threads())
        bar = stack.enter_context(Progress(sum(sizes), label, chunks=sum(counts), enabled=progress))
        if where.distributed:
            return _on_cluster(where.client, func, runs, sizes, counts, label, limit, bar, describe, on_done)
        return _here(func, runs, sizes, counts, label, where.threads, limit, bar, describe, on_done)


def _failure(label: str, what: str, e: BaseException) -> BaseException:
    if isinstance(e, (ToolError, UsageError)):
        return e
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    failure = ToolError(f"{label}: {what} failed ({type(e).__name__}{': ' + text if text else ''})")
    # what failed, kept for the caller (a cluster's error is raised "from None"): see fails_again
    failure.original = e  # type: ignore[attr-defined]
    return failure


#: errors in decoding values: the same values fail the same way however often they are read
_DATA_ERRORS = (UnicodeError, OverflowError)


def fails_again(e: BaseException | None) -> bool:
    """Whether ``e`` (or what it wraps) came from decoding the values themselves, so that running
    the same work again can only fail the same way (a resume would loop); an I/O error, a worker
    lost or a timeout may not."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, _DATA_ERRORS):
            return True
        e = getattr(e, "original", None) or e.__cause__ or e.__context__
    return False


def _here(func: Callable[[T], R], runs: list[T], sizes: list[int], counts: list[int], label: str,
          threads: int, limit: int, bar: Progress, describe: Callable[[T], str],
          on_done: Callable[[int, R], None] | None = None) -> list[R]:
    results: list[Any] = [None] * len(runs)
    if threads <= 1:
        for i, run in enumerate(runs):
            try:
                results[i] = func(run)
            except Exception as e:
                raise _failure(label, describe(run), e) from e
            bar.advance(sizes[i], counts[i])
            if on_done is not None:
                on_done(i, results[i])
        return results
    with concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=f"numcodecs-ext-{label}") as pool:
        pending: dict[concurrent.futures.Future[Any], int] = {}
        following = iter(range(len(runs)))
        try:
            for i in following:
                pending[pool.submit(func, runs[i])] = i
                if len(pending) >= limit:
                    break
            while pending:
                done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    i = pending.pop(future)
                    error = future.exception()
                    if error is not None and not isinstance(error, Exception):
                        raise error  # an interrupt (KeyboardInterrupt, SystemExit ...): as it is
                    if error is not None:
                        raise _failure(label, describe(runs[i]), error) from error
                    results[i] = future.result()
                    bar.advance(sizes[i], counts[i])
                    if on_done is not None:
                        on_done(i, results[i])
                    nxt = next(following, None)
                    if nxt is not None:
                        pending[pool.submit(func, runs[nxt])] = nxt
        finally:
            for future in pending:
                future.cancel()
    return results


def _on_cluster(client: Any, func: Callable[[T], R], runs: list[T], sizes: list[int], counts: list[int],
                label: str, limit: int, bar: Progress, describe: Callable[[T], str],
                on_done: Callable[[int, R], None] | None = None) -> list[R]:
    from distributed import as_completed
    from distributed import wait as distributed_wait

    token = uuid.uuid4().hex[:8]
    results: list[Any] = [None] * len(runs)
    index: dict[str, int] = {}
    stream = as_completed(loop=client.loop)
    following = iter(range(len(runs)))

    again: dict[int, int] = {}

    def submit(i: int) -> None:
        attempt = again.get(i, 0)
        future = client.submit(func, runs[i], key=f"{label}-{token}-{i}-{attempt}", pure=False)
        index[future.key] = i
        stream.add(future)

    try:
        for i in following:
            submit(i)
            if len(index) >= limit:
                break
        for future in stream:
            i = index.pop(future.key)
            if future.status in ("lost", "pending"):  # its result died with a worker: recomputed
                index[future.key] = i
                stream.add(future)
                continue
            if future.status == "cancelled" and again.get(i, 0) < _RESUBMIT:
                # dropped by the scheduler (e.g. while workers died): run it again, it is idempotent
                again[i] = again.get(i, 0) + 1
                submit(i)
                continue
            if future.status != "finished":
                error = future.exception() if future.status == "error" else None
                raise _cluster_failure(label, describe(runs[i]), error) from None
            results[i] = future.result()
            future.release()
            bar.advance(sizes[i], counts[i])
            if on_done is not None:
                try:
                    on_done(i, results[i])
                except BaseException:
                    # a running task cannot be cancelled: the caller goes on only once those in
                    # flight have ended (what it does next may write where they write)
                    with contextlib.suppress(Exception):
                        distributed_wait(list(stream.futures))
                    raise
            nxt = next(following, None)
            if nxt is not None:
                submit(nxt)
    except BaseException:  # a failure, or an interrupt: the waiting tasks are not wanted
        with contextlib.suppress(Exception):
            client.cancel(list(stream.futures))
        raise
    return results


def _cluster_failure(label: str, what: str, error: BaseException | None) -> BaseException:
    if error is None:
        return ToolError(f"{label}: {what} was cancelled {_RESUBMIT + 1} times by the dask scheduler "
                         "(workers leaving the cluster?)")
    if type(error).__name__ == "KilledWorker":
        allowed = _dask_config("distributed.scheduler.allowed-failures")
        return ToolError(f"{label}: {what}: the workers running it died, "
                         f"{allowed + 1 if allowed is not None else 'several'} "
                         "times (dask's distributed.scheduler.allowed-failures): out of memory, or a crash "
                         "in a library?")
    return _failure(label, what, error)
