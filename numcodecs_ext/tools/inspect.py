"""Look inside a zarr store: every array's shape, dtype, chunks, codecs in words, who reads them.

For each array of a zarr v2 or v3 store (a local directory, a ``.zip`` file, or any fsspec URL
such as ``s3://``): shape, data type, chunk and shard shapes, the codec chain with each codec's
parameters in words and which implementations read it (numcodecs_ext, zarr-python, zarrs), the
stored and decoded sizes, and whether numcodecs_ext is needed to read it. Only metadata is read
(plus the sizes of the chunk files), so foreign codecs are described too. Broken metadata, links
that dangle or loop, and leftovers of interrupted writes are reported, never raised. A store that
``numcodecs-ext migrate --in-place`` left with both zarr v3 and zarr v2 metadata is shown in both
views. ``--json`` prints the same for scripts. On object stores it reads one listing (a request
per 1,000 objects) and the metadata documents, with credentials and endpoint from the standard
configuration (``AWS_*`` variables including ``AWS_ENDPOINT_URL``) or ``--storage-options``.

Examples::

    numcodecs-ext inspect era5.zarr
    numcodecs-ext inspect s3://bucket/store.zarr --json
    numcodecs-ext inspect s3://public-bucket/store.zarr --storage-options '{"anon": true}'
"""

from __future__ import annotations

import errno
import json
import os
import zipfile
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from .arrays import MetadataError, array_entry, short, views_disagree
from .describe import number_text
from ..store.errors import ToolError, UsageError
from .leftovers import describe, is_journal_key
from ..store.storage import (
    Listing,
    Location,
    StorageError,
)

__all__ = ["FINISH_IN_PLACE", "format_report", "inspect_store"]

#: the command that ends a ``migrate --in-place`` migration (removes the v2 metadata)
FINISH_IN_PLACE = "numcodecs-ext migrate {store} --in-place --finish"

_V3, _V2_ARRAY, _V2_GROUP = "zarr.json", ".zarray", ".zgroup"
_NODE_FILES = (_V3, _V2_ARRAY, _V2_GROUP)
_META = {_V3, _V2_ARRAY, _V2_GROUP, ".zattrs", ".zmetadata"}


class StoreError(UsageError):
    """The target is not a zarr store (kept for callers of earlier versions; a UsageError)."""


# -- the store's files ----------------------------------------------------------------------------


def _open(target: Any, storage_options: Mapping[str, Any] | None) -> tuple[Location, Listing | None]:
    """The Location of ``target`` and, on object stores, its listing (a store is a prefix with
    objects below it: listing it is the one request that says so); refusing what cannot be a
    store with what is wrong."""
    loc = Location.parse(target, storage_options=storage_options)
    if loc.is_local:
        _check_local(loc)
    elif loc.kind == "fsspec" and not loc.root.startswith("/"):
        listing = _listing(loc)
        if listing.files:
            return loc, listing
    # a missing bucket or denied access is the tools' own error (exit 2), a service that does
    # not answer a StorageError (exit 1): raised as they are
    exists, isdir = loc.exists(), loc.isdir()
    if not exists:
        raise UsageError(f"{loc.display}: does not exist")
    if isdir:
        return loc, None
    if loc.is_local and zipfile.is_zipfile(loc.root):  # a zarr ZipStore
        zipped = Location.parse(f"zip://::{loc.root}")
        zipped.display = loc.display
        return zipped, None
    if loc.is_local:
        raise UsageError(f"{loc.display}: is a file, not a zarr store (a zarr store is a directory, "
                         "a .zip file or a URL)")
    zipped = f"; a zipped store there is read as zip::{loc.display}" if loc.root.lower().endswith(".zip") else ""
    raise UsageError(f"{loc.display}: is an object, not a zarr store (a zarr store in a bucket is a prefix "
                     f"with zarr.json, .zarray or .zgroup below it){zipped}")


def _check_local(loc: Location) -> None:
    """What is wrong with a local path that cannot be a store, in words (UsageError)."""
    try:
        os.stat(loc.root)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{loc.display}: a loop of symbolic links") from None
        if e.errno == errno.ENOTDIR:
            raise UsageError(f"{loc.display}: does not exist (a part of the path is a file, not a "
                             "directory)") from None
        if e.errno == errno.ENOENT and os.path.islink(loc.root):
            raise UsageError(f"{loc.display}: a symbolic link to {os.readlink(loc.root)!r}, which does "
                             "not exist") from None
        if e.errno == errno.ENOENT:
            raise UsageError(f"{loc.display}: does not exist") from None
        raise ToolError(f"{loc.display}: cannot be read ({_why(e)})") from None


def _why(e: BaseException) -> str:
    text = getattr(e, "strerror", None) or str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _listing(loc: Location) -> Listing:
    try:
        return loc.walk()
    except (UsageError, StorageError):  # the tools' own errors (no bucket, denied, unreachable)
        raise
    except Exception as e:  # noqa: BLE001 - any filesystem backend: say what it said
        raise ToolError(f"{loc.display}: cannot be listed ({_why(e)})") from None


#: metadata documents read per request batch (concurrent requests on object stores)
_BATCH = 256


def _read_all(loc: Location, keys: list[str]) -> dict[str, bytes | BaseException]:
    """Every metadata document, in batches of concurrent requests on object stores (one after
    another on a local disk); a document that cannot be read maps to its error. A service that
    stops answering ends the run (Unreachable), rather than being reported per document."""
    from ..store.storage import Unreachable

    out: dict[str, bytes | BaseException] = {}
    for start in range(0, len(keys), _BATCH):
        got = loc.read_many(keys[start:start + _BATCH])
        for value in got.values():
            if isinstance(value, (Unreachable, UsageError)):
                raise value
        out.update(got)
    return out


@dataclass
class _Node:
    path: str  # "" for the root
    documents: list[str] = field(default_factory=list)  # zarr.json / .zarray / .zgroup found
    chunk_bytes: int | None = 0  # None: a chunk file's size is unknown (the listing lacked it)
    chunk_files: int = 0


def _nodes(files: Mapping[str, int], unsized: Set[str] = frozenset()) -> tuple[dict[str, _Node], list[str]]:
    """The nodes (arrays and groups) of a listing, each with the bytes and number of the chunk
    files below it that belong to no deeper node; and the leftovers of interrupted writes.

    One pass over the files, each file's ancestors looked up in a dict: linear in the number of
    files (times the depth of the hierarchy), whatever the number of arrays.
    """
    nodes: dict[str, _Node] = {}
    for rel in files:
        parent, _, name = rel.rpartition("/")
        if name in _NODE_FILES:
            nodes.setdefault(parent, _Node(parent)).documents.append(name)
    leftovers = []
    for rel, size in files.items():
        parent, _, name = rel.rpartition("/")
        if name in _META:
            continue
        if name.endswith(".partial"):
            leftovers.append(rel)
            continue
        while True:
            node = nodes.get(parent)
            if node is not None:
                if rel in unsized or node.chunk_bytes is None:
                    node.chunk_bytes = None
                else:
                    node.chunk_bytes += size
                node.chunk_files += 1
                break
            if not parent:
                break
            parent = parent.rpartition("/")[0]
    return nodes, sorted(leftovers)


# -- the store ------------------------------------------------------------------------------------


def inspect_store(store: Any, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Describe every array and group of the zarr store ``store``.

    Only metadata is read: one listing of the store (on S3 one request per 1,000 objects, with
    their sizes) and every metadata document (concurrent requests); no chunk.

    Parameters
    ----------
    store
        A local directory or ``.zip`` file, an fsspec URL (``s3://``, ``gs://``, ``az://``,
        ``memory://``, ``zip://::file.zip`` ...), any zarr store object (``LocalStore``,
        ``FsspecStore``, ``MemoryStore``, ``ObjectStore`` ...), or a
        :class:`~numcodecs_ext.store.storage.Location`.
    storage_options
        Passed to fsspec for URLs (credentials, endpoint ...); otherwise credentials come from
        the standard configuration (``AWS_*`` variables, fsspec's configuration).

    Returns
    -------
    dict
        ``{"store", "arrays", "groups", "problems", "notes", "both_formats", "finish"}``: each array
        a dict (see ``numcodecs-ext inspect --json``); metadata that cannot be read or does not
        follow the spec, links that dangle or loop, under ``problems`` (path and what is wrong),
        never raised. A node with both zarr v3 and zarr v2 metadata (a ``migrate --in-place``
        result) appears once per format, its path listed in ``both_formats``, and ``finish`` is
        the command that removes the v2 metadata. A destination an interrupted ``convert`` or
        ``migrate`` left (its journal is there) is described under ``interrupted`` (the tool,
        its source, the runs of chunks done and planned, what to do) and as a problem, whether
        or not any of its metadata was written yet.

    Raises
    ------
    UsageError
        ``store`` does not exist, is a file that is not a zip archive, is a directory without
        zarr metadata or the journal of an interrupted write, or is a URL of an unknown scheme or
        one whose package is missing; its bucket does not exist or access is denied
        (:class:`~numcodecs_ext.store.storage.StoreNotFound`,
        :class:`~numcodecs_ext.store.storage.AccessDenied`).
    ToolError
        The store cannot be listed (permissions, network:
        :class:`~numcodecs_ext.store.storage.StorageError`).

    Examples
    --------
    >>> import tempfile, zarr
    >>> path = tempfile.mkdtemp() + "/s.zarr"
    >>> _ = zarr.create_array(path, shape=(4, 6), chunks=(2, 6), dtype="int16", fill_value=0)
    >>> report = inspect_store(path)
    >>> [(a["path"], a["shape"], a["chunks"], [c["name"] for c in a["codecs"]]) for a in report["arrays"]]
    [('/', [4, 6], [2, 6], ['bytes', 'zstd'])]
    >>> inspect_store(path + "/nothing")
    Traceback (most recent call last):
    ...
    numcodecs_ext.store.errors.UsageError: .../s.zarr/nothing: does not exist
    """
    loc, listing = _open(store, storage_options)
    listing = listing or _listing(loc)
    files = {k: v for k, v in listing.files.items() if not is_journal_key(k)}
    nodes, leftovers = _nodes(files, listing.unsized)
    problems = [{"path": path, "problem": why} for path, why in listing.problems]
    interrupted = []
    if len(files) < len(listing.files):  # convert's or migrate's journal: an interrupted write
        interrupted = describe(loc, listing.files,
                               committed="all" if "" in nodes else "some" if nodes else "none")
        problems = [{"path": "/", "problem": i["message"]} for i in interrupted] + problems
    if not nodes and interrupted:
        chunks = [k for k in files if not k.endswith(".partial")]
        return {"store": loc.display, "arrays": [], "groups": [], "problems": problems,
                "notes": _leftover_notes(leftovers) + ([f"{len(chunks)} chunk file(s) "
                                                        f"({_size(sum(files[k] for k in chunks))}) "
                                                        "without metadata"] if chunks else []),
                "both_formats": [], "finish": None, "interrupted": interrupted}
    if not nodes:
        if problems:
            raise ToolError(f"{loc.display}: no zarr metadata could be read: "
                            + "; ".join(f"{p['path']}: {p['problem']}" for p in problems))
        raise UsageError(f"{loc.display}: not a zarr store (no zarr.json, .zarray or .zgroup in it)")
    keys = [f"{n.path}/{d}" if n.path else d for n in nodes.values() for d in n.documents]
    documents = _read_all(loc, keys)
    out: dict[str, Any] = {"store": loc.display, "arrays": [], "groups": [], "problems": problems,
                           "notes": [], "both_formats": [], "finish": None, "interrupted": interrupted}
    for node in sorted(nodes.values(), key=lambda n: (n.path.count("/") if n.path else -1, n.path)):
        node.documents.sort(key=_NODE_FILES.index)  # zarr.json first: what zarr opens
        views: dict[str, dict[str, Any]] = {}
        for document in node.documents:
            key = f"{node.path}/{document}" if node.path else document
            try:
                raw = documents[key]
                if isinstance(raw, BaseException):
                    raise MetadataError(f"cannot be read ({_why(raw)})")
                try:
                    meta = json.loads(raw)
                except (ValueError, RecursionError) as e:
                    raise MetadataError(f"not JSON ({e})") from None
                if not isinstance(meta, dict):
                    raise MetadataError(f"not a JSON object but {type(meta).__name__}")
                kind = _node_type(document, meta)
                if kind == "group":
                    out["groups"].append({"path": node.path or "/", "zarr_format": 3 if document == _V3 else 2,
                                          "formats": sorted({3 if d == _V3 else 2 for d in node.documents},
                                                            reverse=True)})
                else:
                    issues: list[str] = []
                    views[document] = array_entry(
                        node.path, document, meta, stored_bytes=node.chunk_bytes, chunk_files=node.chunk_files,
                        formats=sorted({3 if d == _V3 else 2 for d in node.documents}, reverse=True), issues=issues)
                    out["arrays"].append(views[document])
                    out["problems"].extend({"path": key, "problem": i} for i in issues)
            except MetadataError as e:
                out["problems"].append({"path": key, "problem": str(e)})
            except Exception as e:  # noqa: BLE001 - foreign metadata: described, never raised
                out["problems"].append({"path": key, "problem": f"metadata not understood: {_why(e)}"})
        if _V3 in node.documents and len(node.documents) > 1:
            out["both_formats"].append(node.path or "/")
            if _V3 in views and _V2_ARRAY in views:
                disagreement = views_disagree(views[_V3], views[_V2_ARRAY])
                if disagreement:
                    out["problems"].append({"path": node.path or "/",
                                            "problem": f"the zarr v3 and zarr v2 metadata disagree: {disagreement}"})
    if out["both_formats"]:
        out["finish"] = FINISH_IN_PLACE.format(store=_quote(loc.display))
        out["notes"].append(
            f"{len(out['both_formats'])} node(s) hold zarr v3 metadata (zarr.json) beside zarr v2 metadata "
            "(.zarray/.zgroup), as `numcodecs-ext migrate --in-place` leaves a store: zarr-python and xarray "
            "open them as zarr v3 (and warn about the v2 metadata on every open); zarr v2 readers still see "
            f"the v2 view. Once the v3 view reads as it should, `{out['finish']}` finishes the migration "
            "(removes the v2 metadata).")
    out["notes"].extend(_leftover_notes(leftovers))
    return out


def _leftover_notes(leftovers: list[str]) -> list[str]:
    if not leftovers:
        return []
    return [f"{len(leftovers)} temporary file(s) of an interrupted write (*.partial), e.g. {leftovers[0]}: "
            "not part of any array; safe to delete"]


def _node_type(document: str, meta: dict[str, Any]) -> str:
    if document == _V2_GROUP:
        return "group"
    if document == _V2_ARRAY:
        return "array"
    kind = meta.get("node_type")
    if kind not in ("array", "group"):
        raise MetadataError(f"node_type is {short(kind)}: expected \"array\" or \"group\"")
    if meta.get("zarr_format") != 3:
        raise MetadataError(f"zarr_format is {short(meta.get('zarr_format'))} in a zarr.json: expected 3")
    return kind


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


# -- text -----------------------------------------------------------------------------------------


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024 or unit == "EiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return ""  # pragma: no cover


def _fill_text(value: Any) -> str:
    """A fill value as a number reads (``NaN``, ``-1.5``), other values as their JSON."""
    if value in ("NaN", "Infinity", "-Infinity") or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return number_text(value)
    return short(value)


def format_report(report: dict[str, Any]) -> str:
    """The human-readable form of :func:`inspect_store`'s result."""
    paths = {a["path"] for a in report["arrays"]}
    groups = {g["path"] for g in report["groups"]}
    lines = [f"store {report['store']}: {len(paths)} array(s), {len(groups)} group(s)"]
    for a in report["arrays"]:
        dims = f", dimensions ({', '.join(map(str, a['dimension_names']))})" if a.get("dimension_names") else ""
        shards = f" in shards {tuple(a['shards'])}" if a["shards"] else ""
        chunks = f"chunks {tuple(a['chunks'])}" if a["chunks"] is not None else "an irregular chunk grid"
        view = ""
        if len(a.get("formats", ())) > 1:
            view = (" view; the v2 view follows" if a["zarr_format"] == 3
                    else " view of the same array")
        lines.append("")
        lines.append(f"{a['path']} (zarr v{a['zarr_format']}{view}): {a['data_type']}, shape {tuple(a['shape'])}, "
                     f"{chunks}{shards}{dims}")
        ratio = f", ratio {a['ratio']:.2f}x" if a["ratio"] else ""
        grid = a["chunk_grid"] if a["chunk_grid"] is not None else "?"
        files = f"{a['chunk_files']} of {grid} {'shard' if a['shards'] else 'chunk'} files"
        stored = (f"stored in {files} (size unknown: the listing gives no sizes)" if a["stored_bytes"] is None
                  else f"stored {_size(a['stored_bytes'])} in {files}")
        lines.append(f"  {stored}; decoded {_size(a['decoded_bytes'])}{ratio}; "
                     f"fill value {_fill_text(a['fill_value'])}" + (f"; order {a['order']}" if a.get("order") else ""))
        for c in a["codecs"]:
            who = ", ".join(c["readers"]) or "no known reader"
            lines.append(f"  {c['role']:>16}  {c['name']:<16} {c['words']}  [read by: {who}]")
        if a.get("cf"):
            lines.append("  as CF attributes: " + ", ".join(f"{k}={v}" for k, v in a["cf"].items()))
        if a["needs_numcodecs_ext"]:
            import zarr

            lines.append(f"  zarr-python {zarr.__version__} needs numcodecs_ext for: "
                         f"{', '.join(a['needs_numcodecs_ext'])}")
        if a["unreadable_here"]:
            lines.append(f"  NOT readable in this environment (no implementation of "
                         f"{', '.join(a['unreadable_here'])})")
        for w in a.get("reader_warnings") or []:
            lines.append(f"  reader warning: {w}")
    for note in report.get("notes", []):
        lines.append(f"\nnote: {note}")
    for p in report["problems"]:
        lines.append(f"\nproblem at {p['path']}: {p['problem']}")
    return "\n".join(lines)
