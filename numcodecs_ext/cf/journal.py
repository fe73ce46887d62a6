"""convert's journal: what an unfinished conversion has written and verified, kept under the
destination so that running the same command again resumes it.

The journal is a prefix of the destination, :data:`PREFIX`, holding

* ``stamp.json``, written before any chunk: the source (its path, size and modification time or
  ETag), the conversion's options and a digest of the metadata it will commit (chunks, codecs,
  types, attributes). A run resumes only a journal whose stamp equals its own; any other is an
  interrupted conversion of something else, and the run starts over.
* ``plan.json``, written once the runs are planned: how many there are (``{"runs": M,
  "chunks": C}``), so that ``numcodecs-ext inspect`` tells how far an interrupted conversion got.
* ``runs/<i>``, one small object per finished *run* (a block of whole chunks of one array),
  written by the task that wrote it, after its chunks: ``{"state": "written" | "verified",
  "checked": k, "worst": d}``. A run without its object is written again.

Every object is written whole (:meth:`~numcodecs_ext.store.storage.Location.write`), so a kill at
any moment leaves a journal that claims no more than the destination holds. Metadata documents
are written only at the commit, after which the journal is removed: a journal never makes
anything open.

Examples
--------
>>> import tempfile
>>> from numcodecs_ext.store.storage import Location
>>> j = Journal(Location.parse(tempfile.mkdtemp()))
>>> j.stamp() is None
True
>>> j.start({"source": "a.nc"}); j.mark(3, "verified", checked=2)
>>> j.stamp(), j.records()
({'source': 'a.nc'}, {3: {'state': 'verified', 'checked': 2, 'worst': 0.0}})
>>> j.remove(); j.stamp() is None
True
"""

from __future__ import annotations

import json
from typing import Any

from ..tools.leftovers import CONVERT_JOURNAL
from ..store.storage import Location, ObjectNotFound

__all__ = ["PREFIX", "Journal", "is_journal_key"]

#: where the journal lives below the destination (not a zarr node: no metadata document)
PREFIX = CONVERT_JOURNAL


def is_journal_key(key: str) -> bool:
    """Whether ``key`` (relative to the destination) belongs to the journal."""
    return key == PREFIX or key.startswith(PREFIX + "/")


class Journal:
    """The journal of a conversion into ``location`` (it pickles: dask tasks mark their runs)."""

    def __init__(self, location: Location) -> None:
        self.location = location

    def stamp(self) -> dict[str, Any] | None:
        """The stamp of the conversion this journal belongs to; None if there is no journal (or
        its stamp cannot be read as one, which is no journal of ours either)."""
        try:
            data = self.location.read(f"{PREFIX}/stamp.json")
        except ObjectNotFound:
            return None
        try:
            stamp = json.loads(data)
        except ValueError:
            return None
        return stamp if isinstance(stamp, dict) else None

    def start(self, stamp: dict[str, Any]) -> None:
        """Begin a journal (before anything of the conversion is written)."""
        self.location.write(f"{PREFIX}/stamp.json", json.dumps(stamp, sort_keys=True, indent=1).encode())

    def describe(self, plan: dict[str, Any]) -> None:
        """Record what the conversion will write (``{"runs": M, "chunks": C}``), for inspect."""
        self.location.write(f"{PREFIX}/plan.json", json.dumps(plan, sort_keys=True).encode())

    def plan(self) -> dict[str, Any]:
        """What :meth:`describe` recorded (empty if nothing readable was)."""
        try:
            plan = json.loads(self.location.read(f"{PREFIX}/plan.json"))
        except (ObjectNotFound, ValueError):
            return {}
        return plan if isinstance(plan, dict) else {}

    def mark(self, index: int, state: str, *, checked: int = 0, worst: float = 0.0) -> None:
        """Record run ``index`` as ``written`` (its chunks are all in the destination) or
        ``verified`` (and every one of them read back and compared); ``checked`` chunks of it
        were read back, ``worst`` is the largest difference of an inexact packing found there."""
        record = {"state": state, "checked": int(checked), "worst": float(worst)}
        self.location.write(f"{PREFIX}/runs/{int(index)}", json.dumps(record).encode())

    def records(self) -> dict[int, dict[str, Any]]:
        """``{run index: record}`` of the runs marked so far (unreadable marks are left out: those
        runs are done again)."""
        prefix = f"{PREFIX}/runs"
        try:
            if not self.location.exists(prefix):
                return {}
            keys = [k for k in self.location.walk(prefix).files if k.rpartition("/")[2].isdigit()]
        except ObjectNotFound:
            return {}
        out: dict[int, dict[str, Any]] = {}
        for key, value in self.location.read_many(keys).items():
            if isinstance(value, BaseException):
                continue
            try:
                record = json.loads(value)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("state") in ("written", "verified"):
                out[int(key.rpartition("/")[2])] = record
        return out

    def forget_runs(self) -> None:
        """Remove every run's mark (before the chunks they describe are removed)."""
        self.location.remove_tree(f"{PREFIX}/runs")

    def remove(self) -> None:
        """Remove the journal (after the commit)."""
        self.location.remove_tree(PREFIX)
