"""Look inside a zarr store: every array's shape, dtype, chunks, codecs in words, who reads them.

For each array of a zarr v2 or v3 store (a local directory, a ``.zip`` file, or any fsspec URL
such as ``s3://``): shape, data type, chunk and shard shapes, the codec chain with each codec's
parameters in words and which implementations read it (numcodecs_ext, zarr-python, zarrs), the
stored and decoded sizes, and whether numcodecs_ext is needed to read it. Only metadata is read
(plus the sizes of the chunk files), so foreign codecs are described too. Broken metadata, links
that dangle or loop, and leftovers of interrupted writes are reported, never raised. A store that
``numcodecs-ext migrate --in-place`` left with both zarr v3 and zarr v2 metadata is shown in both
views. ``--json`` prints the same for scripts.

Examples::

    numcodecs-ext inspect era5.zarr
    numcodecs-ext inspect s3://bucket/store.zarr --json
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import functools
import json
import math
import os
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .describe import describe_codec, readers, zarr_implementation
from .errors import ToolError, UsageError
from .storage import Listing, Location

__all__ = ["FINISH_IN_PLACE", "format_report", "inspect_store"]

#: the command that ends a ``migrate --in-place`` migration (removes the v2 metadata)
FINISH_IN_PLACE = "numcodecs-ext migrate {store} --in-place --finish"

_V3, _V2_ARRAY, _V2_GROUP = "zarr.json", ".zarray", ".zgroup"
_NODE_FILES = (_V3, _V2_ARRAY, _V2_GROUP)
_META = {_V3, _V2_ARRAY, _V2_GROUP, ".zattrs", ".zmetadata"}


class StoreError(UsageError):
    """The target is not a zarr store (kept for callers of earlier versions; a UsageError)."""


class _Bad(ValueError):
    """A metadata field that is not what the zarr spec says it is."""


# -- the store's files ----------------------------------------------------------------------------


def _open(target: Any, storage_options: Mapping[str, Any] | None) -> Location:
    """The Location of ``target``, refusing what cannot be a store with what is wrong."""
    loc = Location.parse(target, storage_options=storage_options)
    if loc.is_local:
        _check_local(loc)
    try:
        exists, isdir = loc.exists(), loc.isdir()
    except Exception as e:  # noqa: BLE001 - any filesystem backend: say what it said
        raise ToolError(f"{loc.display}: cannot be read ({_why(e)})") from None
    if not exists:
        raise UsageError(f"{loc.display}: does not exist")
    if isdir:
        return loc
    if loc.is_local and zipfile.is_zipfile(loc.root):  # a zarr ZipStore
        return dataclasses.replace(Location.parse(f"zip://::{loc.root}"), display=loc.display)
    raise UsageError(f"{loc.display}: is a file, not a zarr store (a zarr store is a directory, "
                     "a .zip file or a URL)")


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
    except Exception as e:  # noqa: BLE001 - any filesystem backend: say what it said
        raise ToolError(f"{loc.display}: cannot be listed ({_why(e)})") from None


def _read_all(loc: Location, keys: list[str]) -> dict[str, bytes | BaseException]:
    """Every metadata document at once: one request after another on a local disk, concurrent
    requests (fsspec's ``cat`` of many paths) on object stores."""
    if loc.is_local or len(keys) < 2:
        out: dict[str, bytes | BaseException] = {}
        for key in keys:
            try:
                out[key] = loc.read(key)
            except Exception as e:  # noqa: BLE001 - reported per document
                out[key] = e
        return out
    paths = {loc.child(key).root: key for key in keys}
    try:
        got = loc.fs.cat(list(paths), on_error="return")
    except Exception as e:  # noqa: BLE001 - any filesystem backend: say what it said
        return {key: e for key in keys}
    return {paths[p]: v for p, v in got.items() if p in paths} | {
        k: FileNotFoundError(k) for p, k in paths.items() if p not in got}


@dataclass
class _Node:
    path: str  # "" for the root
    documents: list[str] = field(default_factory=list)  # zarr.json / .zarray / .zgroup found
    chunk_bytes: int = 0
    chunk_files: int = 0


def _nodes(files: Mapping[str, int]) -> tuple[dict[str, _Node], list[str]]:
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
                node.chunk_bytes += size
                node.chunk_files += 1
                break
            if not parent:
                break
            parent = parent.rpartition("/")[0]
    return nodes, sorted(leftovers)


# -- metadata, checked field by field ---------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shape(v: Any, what: str, *, positive: bool = False) -> list[int]:
    if not isinstance(v, list) or not all(_is_int(n) and n >= (1 if positive else 0) for n in v):
        need = "positive integers" if positive else "integers >= 0"
        raise _Bad(f"{what} is {_short(v)}: expected a list of {need}")
    return v


def _short(v: Any, limit: int = 60) -> str:
    text = json.dumps(v, default=repr) if not isinstance(v, str) else repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _codec_list(v: Any, what: str) -> list[dict[str, Any]]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Bad(f"{what} is {_short(v)}: expected a list of codecs")
    for c in v:
        if not isinstance(c, dict):
            raise _Bad(f"{what} holds {_short(c)}: expected a codec object")
    return v


def _v3_codec(c: dict[str, Any]) -> dict[str, Any]:
    name, config = c.get("name"), c.get("configuration", {})
    if not isinstance(name, str):
        raise _Bad(f"a codec's name is {_short(name)}: expected a string")
    if config is not None and not isinstance(config, dict):
        raise _Bad(f"codec {name!r}: configuration is {_short(config)}: expected an object")
    return {"name": name, "configuration": config or {}}


def _v2_codec(c: dict[str, Any], what: str) -> dict[str, Any]:
    if not isinstance(c.get("id"), str):
        raise _Bad(f"{what} {_short(c)} has no string 'id'")
    return c


# -- one array ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _itemsize(dtype_json: str) -> int | None:
    from ..dtypes import v3_dtype_from_json

    dtype = json.loads(dtype_json)
    try:
        return int(v3_dtype_from_json(dtype).itemsize)
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        try:
            import numpy as np

            return int(np.dtype(dtype if not isinstance(dtype, list) else [tuple(f) for f in dtype]).itemsize)
        except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
            return None


@functools.lru_cache(maxsize=None)
def _v2_readers(codec_id: str) -> tuple[str, ...]:
    import numcodecs

    from .._registry import NUMCODECS

    if codec_id in NUMCODECS:
        return ("numcodecs_ext",)
    cls = numcodecs.registry.codec_registry.get(codec_id)
    if cls is None:
        try:
            cls = type(numcodecs.get_codec({"id": codec_id}))  # loads entry points
        except Exception:  # noqa: BLE001 - an unknown id: nobody here reads it
            return ()
    return ("numcodecs" if cls.__module__.startswith("numcodecs.") else cls.__module__.split(".")[0],)


@functools.lru_cache(maxsize=None)
def _is_serializer(name: str) -> bool:
    """Whether the v3 codec ``name`` turns arrays into bytes (zarr's class says; else known names)."""
    try:
        from zarr.abc.codec import ArrayBytesCodec
        from zarr.registry import get_codec_class

        return issubclass(get_codec_class(name), ArrayBytesCodec)
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        return name in _SERIALIZERS


_SERIALIZERS = {"bytes", "endian", "vlen-utf8", "vlen-bytes", "zfp", "zarrs.zfp", "numcodecs.zfp",
                "packbits", "numcodecs.zfpy", "numcodecs.pcodec", "zarrs.vlen", "zarrs.vlen_v2"}

_zarr_uses = functools.lru_cache(maxsize=None)(zarr_implementation)
_readers = functools.lru_cache(maxsize=None)(lambda name, integer: tuple(readers(name, integer_data=integer)))
_describe = functools.lru_cache(maxsize=4096)(lambda text: describe_codec(json.loads(text)))


def _codec_entry(codec: dict[str, Any], role: str, v3: bool, integer_data: bool) -> dict[str, Any]:
    name = codec["name"] if v3 else codec["id"]
    entry: dict[str, Any] = {"name": name, "role": role,
                             "words": _describe(json.dumps(codec, sort_keys=True, default=repr))}
    if v3:
        entry["configuration"] = codec["configuration"]
        entry["zarr_uses"] = _zarr_uses(name)
        entry["readers"] = list(_readers(name, integer_data))
    else:
        entry["configuration"] = {k: v for k, v in codec.items() if k != "id"}
        entry["readers"] = list(_v2_readers(name))
    return entry


def _v3_codecs(codecs: Any, integer_data: bool, what: str = "codecs",
               depth: int = 0) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    out: list[dict[str, Any]] = []
    shard = None
    role = "filter"
    for raw in _codec_list(codecs, what):
        codec = _v3_codec(raw)
        name, config = codec["name"], codec["configuration"]
        if name == "sharding_indexed" and depth < 8:
            inner_shape = _shape(config.get("chunk_shape"), "sharding_indexed chunk_shape", positive=True)
            index = _codec_list(config.get("index_codecs"), "sharding_indexed index_codecs")
            shard = {"chunk_shape": inner_shape,
                     "index_codecs": [_v3_codec(c)["name"] for c in index],
                     "index_location": config.get("index_location", "end")}
            entry = _codec_entry(codec, "serializer", True, integer_data)
            entry["words"] = f"shards of inner chunks {tuple(inner_shape)}"
            out.append(entry)
            inner, _ = _v3_codecs(config.get("codecs"), integer_data, "sharding_indexed codecs", depth + 1)
            for e in inner:
                e["role"] = "inner " + e["role"]
            out.extend(inner)
            role = "compressor"
            continue
        if role == "filter" and _is_serializer(name):
            out.append(_codec_entry(codec, "serializer", True, integer_data))
            role = "compressor"
            continue
        out.append(_codec_entry(codec, role, True, integer_data))
    return out, shard


def _cf_words(data_type: Any, codecs: list[dict[str, Any]]) -> dict[str, Any] | None:
    filters = [c for c in codecs if c["role"] == "filter"]
    if [c["name"] for c in filters] not in (["scale_offset", "cast_value"], ["cast_value"]):
        return None
    try:
        from ..cf.attrs import packing_from_codecs

        attrs = packing_from_codecs(data_type, [{"name": c["name"], "configuration": c["configuration"]}
                                                for c in filters]).attrs()
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        return None
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in attrs.items()}


def _dimension_names(v: Any, ndim: int, issues: list[str]) -> list[str | None] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(n is None or isinstance(n, str) for n in v):
        issues.append(f"dimension_names is {_short(v)}: expected a list of names (strings or null)")
        return None
    if len(v) != ndim:
        issues.append(f"dimension_names has {len(v)} names for {ndim} dimensions")
        return None
    return v


def _check_v3_details(meta: dict[str, Any], dtype: Any, issues: list[str]) -> None:
    """Fields that zarr needs to open the array but that do not stop its description."""
    encoding = meta.get("chunk_key_encoding")
    config = encoding.get("configuration", {}) if isinstance(encoding, dict) else None
    if (not isinstance(encoding, dict) or encoding.get("name") not in ("default", "v2")
            or not isinstance(config, dict) or config.get("separator", "/") not in ("/", ".")):
        issues.append(f"chunk_key_encoding is {_short(encoding)}: expected "
                      '{"name": "default" or "v2", "configuration": {"separator": "/" or "."}}')
    if isinstance(dtype, str):
        from ..dtypes import scalar_from_json, supported_dtype_names

        if dtype in supported_dtype_names():
            try:
                scalar_from_json(meta.get("fill_value"), dtype, what="fill_value")
            except Exception as e:  # noqa: BLE001 - reported
                issues.append(f"fill_value {_short(meta.get('fill_value'))} is not a {dtype}: {e}")
    attributes = meta.get("attributes", {})
    if not isinstance(attributes, dict):
        issues.append(f"attributes is {_short(attributes)}: expected an object")


def _array_info(node: _Node, document: str, meta: dict[str, Any], issues: list[str]) -> dict[str, Any]:
    """One array's entry; _Bad for metadata that does not follow the spec so far that the array
    cannot be described, ``issues`` for fields that are wrong but leave the rest meaningful."""
    v3 = document == _V3
    shape = _shape(meta.get("shape"), "shape")
    if v3:
        dtype = meta.get("data_type")
        if not isinstance(dtype, (str, dict)) or (isinstance(dtype, dict) and (
                not isinstance(dtype.get("name"), str)
                or not isinstance(dtype.get("configuration", {}), dict))):
            raise _Bad(f"data_type is {_short(dtype)}: expected a name or an object "
                       '{"name": ..., "configuration": {...}}')
        grid = meta.get("chunk_grid")
        config = grid.get("configuration") if isinstance(grid, dict) else None
        if not isinstance(grid, dict) or grid.get("name") != "regular" or not isinstance(config, dict):
            if isinstance(grid, dict) and isinstance(grid.get("name"), str) and grid.get("name") != "regular":
                chunks = None  # another grid (rectilinear ...): described as it is, not an error
            else:
                raise _Bad(f"chunk_grid is {_short(grid)}: expected "
                           '{"name": "regular", "configuration": {"chunk_shape": [...]}}')
        else:
            chunks = _shape(config.get("chunk_shape"), "chunk_grid chunk_shape", positive=True)
        integer = isinstance(dtype, str) and "int" in dtype
        codecs, shard = _v3_codecs(meta.get("codecs"), integer)
        dims = _dimension_names(meta.get("dimension_names"), len(shape), issues)
        order = None
        _check_v3_details(meta, dtype, issues)
    else:
        dtype = meta.get("dtype")
        if not isinstance(dtype, (str, list)):
            raise _Bad(f"dtype is {_short(dtype)}: expected a numpy type string or a list of fields")
        chunks = _shape(meta.get("chunks"), "chunks", positive=True)
        integer = isinstance(dtype, str) and dtype[1:2] in ("i", "u")
        filters = _codec_list(meta.get("filters"), "filters")
        codecs = [_codec_entry(_v2_codec(f, "a filter"), "filter", False, integer) for f in filters]
        compressor = meta.get("compressor")
        if compressor is not None:
            if not isinstance(compressor, dict):
                raise _Bad(f"compressor is {_short(compressor)}: expected a codec object or null")
            codecs.append(_codec_entry(_v2_codec(compressor, "the compressor"), "compressor", False, integer))
        shard = None
        dims = None
        order = meta.get("order")
        if order not in ("C", "F"):
            issues.append(f"order is {_short(order)}: expected \"C\" or \"F\"")
            order = None
    if chunks is not None and len(chunks) != len(shape):
        raise _Bad(f"chunks {tuple(chunks)} have {len(chunks)} dimensions, the shape {tuple(shape)} {len(shape)}")
    dtype_words = dtype if isinstance(dtype, str) else json.dumps(dtype)
    itemsize = _itemsize(json.dumps(dtype))
    decoded = None if itemsize is None else math.prod(shape) * itemsize
    chunk_grid = None if chunks is None else math.prod(-(-s // c) for s, c in zip(shape, chunks))
    ours_only = [c["name"] for c in codecs if "numcodecs_ext" in c["readers"]
                 and not any(r.startswith(("zarr-python", "numcodecs")) and r != "numcodecs_ext" for r in c["readers"])]
    unreadable = [c["name"] for c in codecs if v3 and c.get("zarr_uses") is None]
    if itemsize is None:
        unreadable.insert(0, f"data type {dtype_words}")
    stored = node.chunk_bytes
    return {
        "path": node.path or "/", "zarr_format": 3 if v3 else 2, "shape": shape, "data_type": dtype_words,
        "chunks": shard["chunk_shape"] if shard else chunks, "shards": chunks if shard else None,
        "order": order, "dimension_names": dims,
        "fill_value": meta.get("fill_value"), "codecs": codecs,
        "stored_bytes": stored, "chunk_files": node.chunk_files, "chunk_grid": chunk_grid,
        "decoded_bytes": decoded, "ratio": (decoded / stored) if decoded and stored else None,
        "needs_numcodecs_ext": sorted(set(ours_only)),
        "unreadable_here": unreadable,
        "cf": _cf_words(dtype, codecs) if v3 else None,
        "formats": sorted({3 if d == _V3 else 2 for d in node.documents}, reverse=True),
    }


def _views_disagree(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """What the v3 and v2 metadata of one array disagree on (None: they agree)."""
    if a["shape"] != b["shape"]:
        return f"shape {tuple(a['shape'])} in zarr.json, {tuple(b['shape'])} in .zarray"
    if a["chunks"] != b["chunks"] and a["shards"] != b["chunks"]:
        return f"chunks {tuple(a['chunks'] or ())} in zarr.json, {tuple(b['chunks'] or ())} in .zarray"
    if a["decoded_bytes"] != b["decoded_bytes"]:
        return f"data type {a['data_type']} in zarr.json, {b['data_type']} in .zarray"
    return None


# -- the store ------------------------------------------------------------------------------------


def inspect_store(store: Any, *, storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Describe every array and group of the zarr store ``store``.

    Parameters
    ----------
    store
        A local directory or ``.zip`` file, an fsspec URL (``s3://``, ``gs://``, ``memory://``,
        ``zip://::file.zip`` ...), or a zarr ``LocalStore``/``FsspecStore``.
    storage_options
        Passed to fsspec for URLs (credentials, endpoint ...).

    Returns
    -------
    dict
        ``{"store", "arrays", "groups", "problems", "notes", "both_formats", "finish"}``: each array
        a dict (see ``numcodecs-ext inspect --json``); metadata that cannot be read or does not
        follow the spec, links that dangle or loop, under ``problems`` (path and what is wrong),
        never raised. A node with both zarr v3 and zarr v2 metadata (a ``migrate --in-place``
        result) appears once per format, its path listed in ``both_formats``, and ``finish`` is
        the command that removes the v2 metadata.

    Raises
    ------
    UsageError
        ``store`` does not exist, is a file that is not a zip archive, is a directory without
        zarr metadata, or is a URL of an unknown scheme or one whose package is missing.
    ToolError
        The store cannot be listed (permissions, network).

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
    numcodecs_ext.tools.errors.UsageError: .../s.zarr/nothing: does not exist
    """
    loc = _open(store, storage_options)
    listing = _listing(loc)
    nodes, leftovers = _nodes(listing.files)
    problems = [{"path": path, "problem": why} for path, why in listing.problems]
    if not nodes:
        if problems:
            raise ToolError(f"{loc.display}: no zarr metadata could be read: "
                            + "; ".join(f"{p['path']}: {p['problem']}" for p in problems))
        raise UsageError(f"{loc.display}: not a zarr store (no zarr.json, .zarray or .zgroup in it)")
    keys = [f"{n.path}/{d}" if n.path else d for n in nodes.values() for d in n.documents]
    documents = _read_all(loc, keys)
    out: dict[str, Any] = {"store": loc.display, "arrays": [], "groups": [], "problems": problems,
                           "notes": [], "both_formats": [], "finish": None}
    for node in sorted(nodes.values(), key=lambda n: (n.path.count("/") if n.path else -1, n.path)):
        node.documents.sort(key=_NODE_FILES.index)  # zarr.json first: what zarr opens
        views: dict[str, dict[str, Any]] = {}
        for document in node.documents:
            key = f"{node.path}/{document}" if node.path else document
            try:
                raw = documents[key]
                if isinstance(raw, BaseException):
                    raise _Bad(f"cannot be read ({_why(raw)})")
                try:
                    meta = json.loads(raw)
                except (ValueError, RecursionError) as e:
                    raise _Bad(f"not JSON ({e})") from None
                if not isinstance(meta, dict):
                    raise _Bad(f"not a JSON object but {type(meta).__name__}")
                kind = _node_type(document, meta)
                if kind == "group":
                    out["groups"].append({"path": node.path or "/", "zarr_format": 3 if document == _V3 else 2,
                                          "formats": sorted({3 if d == _V3 else 2 for d in node.documents},
                                                            reverse=True)})
                else:
                    issues: list[str] = []
                    views[document] = _array_info(node, document, meta, issues)
                    out["arrays"].append(views[document])
                    out["problems"].extend({"path": key, "problem": i} for i in issues)
            except _Bad as e:
                out["problems"].append({"path": key, "problem": str(e)})
            except Exception as e:  # noqa: BLE001 - foreign metadata: described, never raised
                out["problems"].append({"path": key, "problem": f"metadata not understood: {_why(e)}"})
        if _V3 in node.documents and len(node.documents) > 1:
            out["both_formats"].append(node.path or "/")
            if _V3 in views and _V2_ARRAY in views:
                disagreement = _views_disagree(views[_V3], views[_V2_ARRAY])
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
    if leftovers:
        out["notes"].append(f"{len(leftovers)} temporary file(s) of an interrupted write (*.partial), "
                            f"e.g. {leftovers[0]}: not part of any array; safe to delete")
    return out


def _node_type(document: str, meta: dict[str, Any]) -> str:
    if document == _V2_GROUP:
        return "group"
    if document == _V2_ARRAY:
        return "array"
    kind = meta.get("node_type")
    if kind not in ("array", "group"):
        raise _Bad(f"node_type is {_short(kind)}: expected \"array\" or \"group\"")
    if meta.get("zarr_format") != 3:
        raise _Bad(f"zarr_format is {_short(meta.get('zarr_format'))} in a zarr.json: expected 3")
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
        lines.append(f"  stored {_size(a['stored_bytes'])} in {a['chunk_files']} of {grid} "
                     f"{'shard' if a['shards'] else 'chunk'} files; decoded {_size(a['decoded_bytes'])}{ratio}; "
                     f"fill value {_short(a['fill_value'])}" + (f"; order {a['order']}" if a.get("order") else ""))
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
    for note in report.get("notes", []):
        lines.append(f"\nnote: {note}")
    for p in report["problems"]:
        lines.append(f"\nproblem at {p['path']}: {p['problem']}")
    return "\n".join(lines)


# -- the command ----------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext inspect``."""
    parser.add_argument("store", help="a zarr v2 or v3 store: a local directory or .zip file, or an "
                                      "fsspec URL (s3://, gs://, memory:// ...)")
    parser.add_argument("--json", action="store_true", help="print JSON (for scripts)")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext inspect``: 0, or 1 when the store has problems (they are printed)."""
    report = inspect_store(args.store)
    print(json.dumps(report, indent=2, default=str) if args.json else format_report(report))
    if report["problems"]:
        sys.stdout.flush()
        where = 'under "problems"' if args.json else "listed above"
        print(f"numcodecs-ext inspect: {len(report['problems'])} problem(s) in {report['store']} ({where})",
              file=sys.stderr)
        return 1
    return 0
