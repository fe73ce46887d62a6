"""What an interrupted migration to a new store had done, so that running it again resumes.

Before it writes any chunk, ``migrate SRC DST`` writes a journal at
``DST/.numcodecs-ext-migrate.json`` naming its plan (a digest of every planned ``zarr.json``, the
options, and the source's chunk keys, sizes and stamps: what tells whether an object changed, see
:func:`source_stamps`). As each run of chunks is written *and verified*, its number goes into the
journal with a digest of the destination's chunk keys and sizes in that run. The journal is
rewritten whole (atomically) now and then, so after a kill it names only runs that were verified.

Running the same command again finds the journal: with the same plan, each run the journal names
whose chunks are still there, with the same keys and sizes, is skipped; every other run is written
and verified again. With another plan (other options, or a source that changed) no run is trusted,
and neither where the source's filesystem gives no stamps. Metadata is written only once every run
is verified, and the journal is removed last: a store with metadata and no journal is complete.

On an object store (S3, GCS, Azure) there is no rename: every save is one atomic whole-object
PUT (:meth:`~numcodecs_ext.store.storage.Location.write`), so a reader finds the previous journal
or the new one, never half of one; its listing gives the chunks' sizes, and the source's
objects are stamped by their ETags or generations.

The journal is no zarr document: it does not make the destination open as an array or group.

Examples
--------
>>> j = Journal(plan="abc", source="v2.zarr")
>>> j.done("t", 3, run_digest({"t/0.0": 10, "t/0.1": 12}))
>>> Journal.from_bytes(j.to_bytes()).runs["t"]
{3: 'ad2dd5e0f4542fff'}
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..tools.leftovers import MIGRATE_JOURNAL

__all__ = ["JOURNAL", "Journal", "plan_digest", "run_digest", "source_stamps"]

JOURNAL = MIGRATE_JOURNAL
FORMAT = "numcodecs-ext migrate journal 1"


def plan_digest(parts: Any) -> str:
    """A digest of a JSON-able description of the plan."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


#: object details, from fsspec's listings, that change whenever an object is written again
#: (the first one present is the stamp): S3 / Azure ETags, GCS generations, modification times
_STAMP_KEYS = ("ETag", "etag", "generation", "md5Hash", "VersionId", "LastModified",
               "last_modified", "mtime", "updated", "created")


def source_stamps(location: Any, keys: Iterable[str]) -> str | None:
    """A digest of what changes whenever one of ``keys`` (objects of ``location``) is written
    again, even with the same size: on a local disk each file's modification and change times
    and inode; on object stores its ETag, generation or modification time. None if the
    filesystem tells none of these (a resumed run then trusts no chunk). Streams: memory does
    not grow with the number of keys on a local disk.

    >>> import tempfile
    >>> from numcodecs_ext.store.storage import Location
    >>> loc = Location.parse(tempfile.mkdtemp())
    >>> loc.write("0", b"abc")
    >>> before = source_stamps(loc, ["0"])
    >>> loc.write("0", b"xyz")                      # same size, other bytes
    >>> before == source_stamps(loc, ["0"]), source_stamps(loc, ["0"]) == source_stamps(loc, ["0"])
    (False, True)
    """
    h = hashlib.sha256()
    if location.is_local:
        for key in sorted(keys):
            try:
                st = os.stat(location.child(key).root)
                stamp = f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
            except OSError:
                stamp = "gone"
            h.update(f"{key}\0{stamp}\n".encode())
        return h.hexdigest()
    if getattr(location, "fs", None) is None:  # a zarr store object: it tells no stamps
        return None
    base = location.root.rstrip("/")
    try:
        found = location.fs.find(base, detail=True)
    except FileNotFoundError:
        found = {}
    infos = {(p[len(base):].lstrip("/") if p.startswith(base) else p): i for p, i in found.items()}
    for key in sorted(keys):
        info = infos.get(key)
        stamp = "gone" if info is None else next(
            (info[k] for k in _STAMP_KEYS if info.get(k) not in (None, "")), None)
        if stamp is None:
            return None
        h.update(f"{key}\0{stamp}\n".encode())
    return h.hexdigest()


def run_digest(sizes: Mapping[str, int] | Iterable[tuple[str, int]]) -> str:
    """A digest of the chunk keys and sizes of one run in the destination."""
    items = sorted(sizes.items() if isinstance(sizes, Mapping) else sizes)
    h = hashlib.sha256()
    for key, size in items:
        h.update(f"{key}\0{size}\n".encode())
    return h.hexdigest()[:16]


@dataclass
class Journal:
    """The journal's content: the plan digest, the source (for messages), each array's mode
    ("keep" or "rewrite") and its verified runs {run number: run digest}."""

    plan: str
    source: str
    seed: int | None = None  # --verify sample:N's seed: a resumed run checks the same chunks
    modes: dict[str, str] = field(default_factory=dict)
    runs: dict[str, dict[int, str]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)  # runs in each array (what inspect reports)
    _written: float = 0.0
    _pending: int = 0

    def done(self, array: str, run: int, digest: str) -> None:
        self.runs.setdefault(array, {})[run] = digest
        self._pending += 1

    def forget(self, array: str) -> None:
        self.runs.pop(array, None)

    def to_bytes(self) -> bytes:
        return json.dumps({"format": FORMAT, "plan": self.plan, "source": self.source,
                           "seed": self.seed, "modes": self.modes, "totals": self.totals,
                           "runs": {a: {str(k): v for k, v in sorted(r.items())} for a, r in self.runs.items()}},
                          separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Journal:
        """The journal in ``data`` (ValueError if it is not one)."""
        try:
            doc = json.loads(data)
            if doc.get("format") != FORMAT:
                raise ValueError(f"format {doc.get('format')!r}")
            seed = doc.get("seed")
            return cls(plan=str(doc["plan"]), source=str(doc.get("source", "")),
                       seed=int(seed) if seed is not None else None,
                       modes={str(k): str(v) for k, v in doc.get("modes", {}).items()},
                       totals={str(k): int(v) for k, v in doc.get("totals", {}).items()},
                       runs={str(a): {int(k): str(v) for k, v in r.items()}
                             for a, r in doc.get("runs", {}).items()})
        except (ValueError, TypeError, KeyError, AttributeError) as e:
            raise ValueError(f"not a migrate journal ({e})") from None

    def save(self, location: Any) -> None:
        location.write(JOURNAL, self.to_bytes())
        self._written = time.monotonic()
        self._pending = 0

    def save_now_and_then(self, location: Any, *, every: int = 64, seconds: float = 10.0) -> None:
        """Save if ``seconds`` passed since the last save, or ``every`` runs were recorded and a
        tenth of that time passed (the journal is rewritten whole: not after every run)."""
        since = time.monotonic() - self._written
        if self._pending and (since >= seconds or (self._pending >= every and since >= seconds / 10)):
            self.save(location)
