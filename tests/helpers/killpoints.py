"""SIGKILL at the k-th write operation of a process: the kill points of the crash-safety tests.

Every operation that changes a file counts: opening a file for writing (the process is killed
after writing half of the first buffer, or at once where the bytes go by sendfile), and
os.replace / os.rename / os.unlink / os.remove / os.rmdir (killed before the call). Counting
only (``k = 0``) gives the number of kill points of a run.

Used as ``python -c "from tests.helpers import killpoints; killpoints.main(K, COUNTFILE, ARGV...)"``: arms the
counter, runs ``numcodecs-ext ARGV`` and writes the number of operations to COUNTFILE if it was
not killed.
"""

from __future__ import annotations

import builtins
import io
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator

_lock = threading.Lock()
_state = {"count": 0, "kill": 0}
_real = {"open": builtins.open, "io_open": io.open, "replace": os.replace, "rename": os.rename,
         "unlink": os.unlink, "remove": os.remove, "rmdir": os.rmdir}


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _tick() -> bool:
    """Count one operation; True if this is the one to die at."""
    with _lock:
        _state["count"] += 1
        return _state["count"] == _state["kill"]


class _HalfWriter:
    """A file that dies after writing half of the first buffer given to it."""

    def __init__(self, f: Any) -> None:
        self._f = f

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self._f.write(view[: len(view) // 2])
        self._f.flush()
        _die()
        return 0  # pragma: no cover

    def __getattr__(self, name: str) -> Any:
        if name == "fileno":  # sendfile would bypass write(): die before it starts
            _die()
        return getattr(self._f, name)

    def __enter__(self) -> _HalfWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._f.__exit__(*exc)


def _writes(mode: str) -> bool:
    return any(c in mode for c in "wax+")


def _open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    f = _real["open"](file, mode, *args, **kwargs)
    if isinstance(file, int) or not _writes(mode):
        return f
    if _tick():
        return _HalfWriter(f)
    return f


def _wrap(name: str) -> Any:
    real = _real[name]

    def op(*args: Any, **kwargs: Any) -> Any:
        if _tick():
            _die()
        return real(*args, **kwargs)

    return op


@contextmanager
def armed(kill: int = 0) -> Iterator[dict[str, int]]:
    """Count (and at ``kill`` > 0, die at) write operations inside the block."""
    _state.update(count=0, kill=kill)
    builtins.open = io.open = _open  # type: ignore[assignment]
    for name in ("replace", "rename", "unlink", "remove", "rmdir"):
        setattr(os, name, _wrap(name))
    try:
        yield _state
    finally:
        builtins.open, io.open = _real["open"], _real["io_open"]
        for name in ("replace", "rename", "unlink", "remove", "rmdir"):
            setattr(os, name, _real[name])


def main(kill: int, countfile: str, *argv: str) -> int:
    from numcodecs_ext.cli import main as cli

    with armed(kill) as state:
        status = cli(list(argv))
    with _real["open"](countfile, "w") as f:
        f.write(str(state["count"]))
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(int(sys.argv[1]), sys.argv[2], *sys.argv[3:]))
