"""The driver the convert kill and resume tests run in a subprocess: ``numcodecs-ext convert``
that kills its own process (SIGKILL) before the N-th chunk object it stores (``chunks``), the
N-th metadata document it writes (``commit``; the journal's documents count too) or the N-th
journal mark (``marks``). At exit it prints ``points=N`` on stderr: how many points it passed."""

from __future__ import annotations

from pathlib import Path

_DRIVER = r'''
import os, signal, sys
mode, n = sys.argv[1], int(sys.argv[2])
count = [0]

def tick():
    count[0] += 1
    if count[0] > n:
        os.kill(os.getpid(), signal.SIGKILL)

import atexit
atexit.register(lambda: print(f"points={count[0]}", file=sys.stderr))
{prelude}
if mode == "marks":
    from numcodecs_ext.store import journal
    original = journal.Journal.record

    def mark(self, *args, **kwargs):
        tick()
        return original(self, *args, **kwargs)

    journal.Journal.record = mark
elif mode == "chunks":
    import zarr.storage
    original = zarr.storage.LocalStore.set

    async def set(self, key, value, *args, **kwargs):
        tick()
        return await original(self, key, value, *args, **kwargs)

    zarr.storage.LocalStore.set = set
elif mode == "commit":
    from numcodecs_ext.store import storage
    original = storage.Location.write

    def write_(self, key, data):
        if key.rpartition("/")[2] in ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"):
            tick()
        return original(self, key, data)

    storage.Location.write = write_
from numcodecs_ext.cli import main
sys.exit(main(["convert", *sys.argv[3:]]))
'''


def write_driver(folder: Path, run_bytes: int | None = None) -> Path:
    """The driver script, written into ``folder``; run it as ``python driver.py MODE N ARGS...``
    (ARGS: convert's). ``run_bytes`` makes runs that small, so a conversion has many."""
    prelude = "" if run_bytes is None else f"from numcodecs_ext.cf import write\nwrite.RUN_BYTES = {int(run_bytes)}"
    path = Path(folder) / "driver.py"
    path.write_text(_DRIVER.replace("{prelude}", prelude))
    return path
