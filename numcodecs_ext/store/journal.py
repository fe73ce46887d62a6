"""The journal of a resumable write: what an unfinished ``convert`` or ``migrate`` has finished,
kept under its destination so that running the same command again resumes it.

One format for both tools. A journal is a prefix of the destination (:data:`CONVERT_JOURNAL`,
:data:`MIGRATE_JOURNAL`), no zarr node (it never makes anything open), holding

* ``stamp.json``, written before any chunk: the format, a **digest** of everything the run will
  write (the source as it is, the options, the metadata it will commit: :func:`digest`), the
  source (for messages), how many runs there are, and what the tool keeps beside
  (``about``). A run resumes only a journal of its own digest; any other (another source,
  other options, an older format of journal) is started over.
* ``runs/<i>`` (``runs/<group>/<i>`` for a group of runs, such as one array's), one small object
  per finished run, written by whoever finished it (a dask task, the driver): its record.

Every object is written whole (:meth:`~numcodecs_ext.store.storage.Location.write`: a rename on
a local disk, one PUT on object stores), so a kill at any moment leaves a journal that claims no
more than the destination holds. The journal goes once the metadata is committed
(:meth:`Journal.committed`): a store with metadata and no journal is complete.

Examples
--------
>>> import tempfile
>>> from numcodecs_ext.store.storage import Location
>>> loc = Location.parse(tempfile.mkdtemp())
>>> j = Journal(loc, CONVERT_JOURNAL)
>>> j.load()
False
>>> j.create(digest({"source": "a.nc"}), source="a.nc")
>>> j.record(3, state="verified")
>>> again = Journal(loc, CONVERT_JOURNAL)
>>> again.load(), again.matches(digest({"source": "a.nc"})), again.records()
(True, True, {3: {'state': 'verified'}})
>>> again.create(digest({"source": "b.nc"}))   # another plan: nothing of the old one is kept
>>> again.records()
{}
>>> again.committed(); sorted(loc.walk().files)
[]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .faults import ObjectNotFound
from .storage import Location

__all__ = ["CONVERT_JOURNAL", "MIGRATE_JOURNAL", "Journal", "digest", "is_journal_key", "journal_tool",
           "run_digest", "source_stamps"]

#: convert's journal (a prefix of the destination)
CONVERT_JOURNAL = ".numcodecs-ext-convert"
#: migrate's journal (a prefix of the destination)
MIGRATE_JOURNAL = ".numcodecs-ext-migrate"
#: the one document migrate's journal was before this format (found at a resume: resumes nothing)
OLD_MIGRATE_JOURNAL = ".numcodecs-ext-migrate.json"
FORMAT = "numcodecs-ext journal 2"
HEAD = "stamp.json"
RUNS = "runs"

_OLD_MIGRATE = re.compile(r"\.?" + re.escape(OLD_MIGRATE_JOURNAL) + r"\.[0-9a-f]{12,32}\.partial")
_TOOLS = {CONVERT_JOURNAL: "convert", MIGRATE_JOURNAL: "migrate"}


def journal_tool(key: str) -> str | None:
    """``"convert"`` or ``"migrate"`` if ``key`` (relative to the store) belongs to that tool's
    journal (of this format or an older one), including the temporary file of a journal write
    that an interruption cut short; else None.

    >>> journal_tool(".numcodecs-ext-convert/runs/3"), journal_tool("a/c/0")
    ('convert', None)
    >>> journal_tool(".numcodecs-ext-migrate/stamp.json"), journal_tool(".numcodecs-ext-migrate.json")
    ('migrate', 'migrate')
    """
    name = key.split("/", 1)[0]
    if name in _TOOLS and (key == name or key.startswith(name + "/")):
        return _TOOLS[name]
    if key == OLD_MIGRATE_JOURNAL or _OLD_MIGRATE.fullmatch(key):
        return "migrate"
    return None


def is_journal_key(key: str) -> bool:
    """Whether ``key`` (relative to the store) belongs to convert's or migrate's journal."""
    return journal_tool(key) is not None


def digest(parts: Any) -> str:
    """A digest of a JSON-able description of what a run will write (its journal's key).

    >>> digest({"b": 1, "a": [2]}) == digest({"a": [2], "b": 1})
    True
    """
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def run_digest(sizes: Mapping[str, int] | Iterable[tuple[str, int]]) -> str:
    """A digest of the chunk keys and sizes of one run in the destination.

    >>> run_digest({"t/0.0": 10, "t/0.1": 12})
    'ad2dd5e0f4542fff'
    """
    items = sorted(sizes.items() if isinstance(sizes, Mapping) else sizes)
    h = hashlib.sha256()
    for key, size in items:
        h.update(f"{key}\0{size}\n".encode())
    return h.hexdigest()[:16]


#: object details, from fsspec's listings, that change whenever an object is written again
#: (the first one present is the stamp): S3 / Azure ETags, GCS generations, modification times
_STAMP_KEYS = ("ETag", "etag", "generation", "md5Hash", "VersionId", "LastModified",
               "last_modified", "mtime", "updated", "created")


def source_stamps(location: Location, keys: Iterable[str]) -> str | None:
    """A digest of what changes whenever one of ``keys`` (objects of ``location``) is written
    again, even with the same size: on a local disk each file's modification and change times
    and inode; on object stores its ETag, generation or modification time. None if the
    filesystem tells none of these (a resumed run then trusts no chunk). Streams: memory does
    not grow with the number of keys on a local disk.

    >>> import tempfile
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
    if location.fs is None:  # a zarr store object: it tells no stamps
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


class Journal:
    """The journal ``name`` (:data:`CONVERT_JOURNAL`, :data:`MIGRATE_JOURNAL`) of a write into
    ``location``. It pickles (dask tasks record their runs).

    Its stamp, as :meth:`load` read it or :meth:`create` wrote it: ``digest`` (None: no journal,
    or one of an older format, which resumes nothing), ``source``, ``runs_total`` and ``about``
    (what the tool keeps beside, e.g. migrate's sampling seed)."""

    def __init__(self, location: Location, name: str) -> None:
        self.location = location
        self.name = name
        self.digest: str | None = None
        self.source = ""
        self.runs_total: int | None = None
        self.about: dict[str, Any] = {}

    # -- the stamp ---------------------------------------------------------------------------

    def load(self, *, strict: bool = False) -> bool:
        """Read the stamp: whether a journal is there. One of an older format (convert's stamp
        of before, migrate's one document) is there with ``digest`` None: it resumes nothing.
        One that cannot be read: ValueError where ``strict``, else as none at all."""
        self.digest, self.source, self.runs_total, self.about = None, "", None, {}
        old = OLD_MIGRATE_JOURNAL if self.name == MIGRATE_JOURNAL else None
        raw = self._read(f"{self.name}/{HEAD}")
        if raw is None and old is not None:
            raw = self._read(old)
        if raw is None:
            return False
        try:
            stamp = json.loads(raw)
            if not isinstance(stamp, dict):
                raise ValueError(f"a JSON {type(stamp).__name__}, not an object")
        except (ValueError, RecursionError) as e:
            if strict:
                raise ValueError(f"not a journal ({e})") from None
            return False
        if stamp.get("format") == FORMAT:
            self.digest = str(stamp.get("digest"))
            self.source = str(stamp.get("source") or "")
            total = stamp.get("runs_total")
            self.runs_total = total if isinstance(total, int) else None
            self.about = stamp.get("about") if isinstance(stamp.get("about"), dict) else {}
        return True

    def matches(self, digest: str) -> bool:
        """Whether the stamp :meth:`load` read is of a run that writes what ``digest`` covers."""
        return self.digest is not None and self.digest == digest

    def create(self, digest: str, *, source: str = "", about: Mapping[str, Any] | None = None,
               runs_total: int | None = None) -> None:
        """Begin the journal of a run that writes what ``digest`` covers, before anything of it
        is written. A journal there of this very digest keeps its runs (the run resumes); any
        other (another digest, an older format) has its runs forgotten first."""
        there = Journal(self.location, self.name)
        if not there.load() or not there.matches(digest):
            self.forget()
        self.digest, self.source, self.runs_total = digest, source, runs_total
        self.about = dict(about or {})
        self.save()
        if self.name == MIGRATE_JOURNAL and self.location.exists(OLD_MIGRATE_JOURNAL):
            self.location.remove(OLD_MIGRATE_JOURNAL)

    def save(self) -> None:
        """Write the stamp as it is now (whole: atomically)."""
        stamp = {"format": FORMAT, "digest": self.digest, "source": self.source,
                 "runs_total": self.runs_total, "about": self.about}
        self.location.write(f"{self.name}/{HEAD}", json.dumps(stamp, sort_keys=True, indent=1).encode())

    def set_runs_total(self, runs: int) -> None:
        """Record how many runs the write has (what inspect tells of an interrupted one)."""
        self.runs_total = int(runs)
        self.save()

    # -- the runs ----------------------------------------------------------------------------

    def record(self, run: int, group: str = "", **fields: Any) -> None:
        """Record run ``run`` (of ``group``) as finished, with ``fields`` (JSON-able): after
        everything it wrote is in place."""
        self.location.write(self._run_key(group, run), json.dumps({**fields, "group": group}).encode())

    def records(self, group: str = "") -> dict[int, dict[str, Any]]:
        """``{run: its fields}`` of the runs of ``group`` recorded so far (a record that cannot
        be read is left out: that run is done again)."""
        return self.all_records(group).get(group, {})

    def all_records(self, group: str | None = None) -> dict[str, dict[int, dict[str, Any]]]:
        """``{group: {run: its fields}}`` of every run recorded so far (of ``group`` only,
        unless None)."""
        prefix = f"{self.name}/{RUNS}" if group is None else self._group_prefix(group)
        try:
            if not self.location.exists(prefix):
                return {}
            keys = [k for k in self.location.walk(prefix).files if k.rpartition("/")[2].isdigit()]
        except ObjectNotFound:
            return {}
        if group is not None:
            keys = [k for k in keys if "/" not in k.removeprefix(prefix + "/")]
        out: dict[str, dict[int, dict[str, Any]]] = {}
        for key, value in self.location.read_many(keys).items():
            if isinstance(value, BaseException):
                continue
            try:
                record = json.loads(value)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, dict) or not isinstance(record.get("group", ""), str):
                continue
            found = record.pop("group", "")
            if key.rpartition("/")[0] == self._group_prefix(found):  # (a record moved elsewhere: not trusted)
                out.setdefault(found, {})[int(key.rpartition("/")[2])] = record
        return out

    def forget(self, group: str | None = None) -> None:
        """Remove the records of ``group``'s runs (of every run where None): before what they
        describe is removed or written again."""
        if group is None or group:
            self.location.remove_tree(f"{self.name}/{RUNS}" if group is None else self._group_prefix(group))
            return
        for run in self.records(""):  # the group "": its objects lie beside the other groups' folders
            self.location.remove(self._run_key("", run))

    def _group_prefix(self, group: str) -> str:
        if not group:
            return f"{self.name}/{RUNS}"
        # a group's name (an array's path) may hold "/" or anything: its objects go by its digest
        return f"{self.name}/{RUNS}/g{hashlib.sha256(group.encode()).hexdigest()[:16]}"

    def _run_key(self, group: str, run: int) -> str:
        return f"{self._group_prefix(group)}/{int(run)}"

    # -- the end -----------------------------------------------------------------------------

    def committed(self) -> None:
        """The metadata is all written: the journal goes, its runs first and its stamp last (a
        kill on the way leaves a stamp beside a complete store: the same command finishes)."""
        self.forget()
        self.remove()

    def remove(self) -> None:
        """Remove the journal, whatever is left of it (of an older format too)."""
        self.location.remove_tree(self.name)
        if self.name == MIGRATE_JOURNAL and self.location.exists(OLD_MIGRATE_JOURNAL):
            self.location.remove(OLD_MIGRATE_JOURNAL)

    def _read(self, key: str) -> bytes | None:
        try:
            return self.location.read(key)
        except ObjectNotFound:
            return None

    def __repr__(self) -> str:
        return f"Journal({self.location.display!r}, {self.name!r})"
