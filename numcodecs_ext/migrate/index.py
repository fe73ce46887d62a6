"""A zarr store listed once: its nodes, each array's chunk keys with their sizes, temporary
files of interrupted writes, and the rest (:func:`index_store`); and the small readers every
migrate step shares (:func:`read_json`, :func:`same_json`, :func:`key_in`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..store.errors import ToolError, UsageError
from ..store.journal import is_journal_key
from ..store.storage import Location

__all__ = ["METADATA", "V2_FILES", "StoreIndex", "index_store", "is_temporary", "key_in", "read_json",
           "require_store_directory", "same_json", "v2_nodes"]

V2_FILES = (".zarray", ".zgroup", ".zattrs", ".zmetadata")
METADATA = (*V2_FILES, "zarr.json")
_TEMPORARY = re.compile(r"\.[0-9a-f]{12,32}\.partial$")


def is_temporary(key: str) -> bool:
    """Whether ``key`` is a temporary file of an interrupted atomic write (ours or zarr's)."""
    return bool(_TEMPORARY.search(key))


def read_json(location: Location, key: str) -> Any:
    """A metadata document's JSON (ToolError naming the document if it is not JSON)."""
    try:
        return json.loads(location.read(key))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ToolError(f"{location.child(key)}: not readable JSON metadata ({e})") from None
    except OSError as e:
        raise ToolError(f"{location.child(key)}: cannot be read ({e.strerror or e})") from None


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are one document as a reader takes it: object keys in any order,
    but ``1``, ``1.0`` and ``true`` differ (xarray decodes an int16 variable with the attribute
    ``scale_factor: 2`` to int64, with ``2.0`` to float64), ``-0.0`` is not ``0.0``, ``NaN`` is
    ``NaN`` (Python's ``==`` says otherwise of each).

    >>> same_json({"a": [1, 2.5], "b": None}, {"b": None, "a": [1, 2.5]}), same_json(1, 1.0), same_json(True, 1)
    (True, False, False)
    >>> same_json(float("nan"), float("nan")), same_json(0.0, -0.0)
    (True, False)
    """
    return _canonical(a) == _canonical(b)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)


def key_in(path: str, name: str) -> str:
    """The key of the document or chunk ``name`` of the node at ``path`` ("" is the root)."""
    return f"{path}/{name}" if path else name


@dataclass
class StoreIndex:
    """One listing of a store: its v2 arrays (path -> ``.zarray``) and groups, the nodes with a
    ``zarr.json``, each array's chunk keys with their sizes, temporary files of interrupted
    writes, and every other key."""

    location: Location
    arrays: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: list[str] = field(default_factory=list)
    v3: set[str] = field(default_factory=set)
    v2_files: dict[str, int] = field(default_factory=dict)
    chunks: dict[str, dict[str, int]] = field(default_factory=dict)
    temporary: list[str] = field(default_factory=list)
    journal: bool = False
    other: list[str] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)


def _is_chunk_key(rest: str, ndim: int, separator: str) -> bool:
    want = max(ndim, 1)
    if separator == "/":
        parts = rest.split("/")
    elif "/" in rest:
        return False
    else:
        parts = rest.split(separator)
    return len(parts) == want and all(p.isdigit() for p in parts)


def _v3_chunk_pattern(metadata: Any) -> tuple[int, str, str] | None:
    """(ndim, separator, prefix) of a v3 array's chunk keys, or None if they cannot be told."""
    try:
        ndim = len(metadata["shape"])
        encoding = metadata.get("chunk_key_encoding") or {"name": "default"}
        separator = (encoding.get("configuration") or {}).get("separator")
        if encoding.get("name") == "v2":
            return ndim, separator or ".", ""
        if encoding.get("name") == "default":
            return ndim, separator or "/", "c"
    except (TypeError, KeyError, AttributeError):
        pass
    return None


def _is_v3_chunk_key(rest: str, ndim: int, separator: str, prefix: str) -> bool:
    if not prefix:
        return _is_chunk_key(rest, ndim, separator)
    if ndim == 0:
        return rest == prefix
    head, sep, tail = rest.partition(separator)
    return head == prefix and bool(sep) and len(tail.split(separator)) == ndim and \
        all(p.isdigit() for p in tail.split(separator))


def index_store(location: Location, *, v2: bool = True, v3_arrays: bool = False) -> StoreIndex:
    """List ``location`` once and sort every key: metadata documents, chunks of each v2 array
    (their ``.zarray`` read to know how its keys look) or, with ``v3_arrays``, of each v3 array
    (``arrays`` then holds their zarr.json), temporary files, the rest."""
    listing = location.walk()
    index = StoreIndex(location, problems=list(listing.problems))
    keys = listing.files
    for key in sorted(keys):
        node, _, name = key.rpartition("/")
        if name == ".zarray" and v2:
            index.arrays[node] = {}
        elif name == ".zgroup" and v2:
            index.groups.append(node)
        elif name == "zarr.json":
            index.v3.add(node)
    patterns: dict[str, tuple[int, str, str]] = {}
    if v3_arrays:
        for node in sorted(index.v3):
            doc = read_json(location, key_in(node, "zarr.json"))
            if isinstance(doc, dict) and doc.get("node_type") == "array":
                index.arrays[node] = doc
                pattern = _v3_chunk_pattern(doc)
                if pattern is not None:
                    patterns[node] = pattern
            elif isinstance(doc, dict) and doc.get("node_type") == "group":
                index.groups.append(node)
    else:
        for path in index.arrays:
            zarray = read_json(location, key_in(path, ".zarray"))
            index.arrays[path] = zarray
            shape = zarray.get("shape") if isinstance(zarray, dict) else None
            separator = (zarray.get("dimension_separator") if isinstance(zarray, dict) else None) or "."
            patterns[path] = (len(shape) if isinstance(shape, list) else 0, separator, "")
    for path in index.arrays:
        index.chunks[path] = {}
    for key, size in keys.items():
        name = key.rpartition("/")[2]
        if name in METADATA:
            if name in V2_FILES:
                index.v2_files[key] = size
            continue
        if is_journal_key(key):
            index.journal = True
            continue
        if is_temporary(key):
            index.temporary.append(key)
            continue
        parts = key.split("/")
        for depth in range(len(parts) - 1, -1, -1):
            node = "/".join(parts[:depth])
            if node in patterns and _is_v3_chunk_key("/".join(parts[depth:]), *patterns[node]):
                index.chunks[node][key] = size
                break
        else:
            index.other.append(key)
    return index


def require_store_directory(location: Location) -> None:
    """UsageError unless ``location`` exists and is a directory (or a prefix in a bucket)."""
    if not location.exists():
        if not location.is_local:
            location.walk()  # a bucket that does not exist is said as such (StoreNotFound)
        raise UsageError(f"{location}: does not exist")
    if not location.isdir():
        raise UsageError(f"{location}: is a file, not a zarr store (a directory)")


def v2_nodes(location: Location) -> StoreIndex:
    """The index of the zarr v2 store at ``location`` (UsageError if there is none)."""
    require_store_directory(location)
    if not (location.isfile(".zarray") or location.isfile(".zgroup")):
        hint = ""
        if location.isfile("zarr.json"):
            hint = " (it has zarr.json: it is zarr v3 already; `numcodecs-ext normalize` works on v3 stores)"
        raise UsageError(f"{location}: not a zarr v2 store (no .zgroup or .zarray at its root){hint}")
    index = index_store(location)
    if "" in index.groups:  # zarr v3 has no implicit groups: every folder above a node is one
        known = set(index.groups) | set(index.arrays)
        for node in list(known):
            parts = node.split("/") if node else []
            for depth in range(1, len(parts)):
                parent = "/".join(parts[:depth])
                if parent not in known:
                    known.add(parent)
                    index.groups.append(parent)
    index.groups.sort()
    return index
