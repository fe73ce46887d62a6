"""One array's metadata, checked field by field and described: the array entries of
``numcodecs-ext inspect``.

Works from the metadata JSON alone (a zarr v3 ``zarr.json`` or a zarr v2 ``.zarray``): shape, data
type, chunks and shards, the codec chain with each codec in words and who reads it, the sizes, and
the CF attributes a ``scale_offset`` + ``cast_value`` chain stands for. A field that is not what
the zarr spec says is a :class:`MetadataError` when the array cannot be described without it, or
an issue beside a description otherwise; nothing here raises anything else on foreign metadata.

Examples
--------
>>> meta = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "int8",
...         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
...         "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
...         "codecs": [{"name": "bytes"}], "dimension_names": 5}
>>> issues = []
>>> entry = array_entry("a", "zarr.json", meta, stored_bytes=4, chunk_files=2, formats=[3], issues=issues)
>>> entry["chunks"], entry["chunk_grid"], [c["name"] for c in entry["codecs"]], entry["ratio"]
([2], 2, ['bytes'], 1.0)
>>> issues
['dimension_names is 5: expected a list of names (strings or null)']
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from .describe import describe_codec, readers, zarr_implementation

__all__ = ["MetadataError", "array_entry", "short", "views_disagree"]


class MetadataError(ValueError):
    """A metadata field that is not what the zarr spec says it is (the array cannot be described)."""


def short(v: Any, limit: int = 60) -> str:
    """``v`` as JSON (a string as its repr), cut to ``limit`` characters, for messages."""
    text = json.dumps(v, default=repr) if not isinstance(v, str) else repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- fields --------------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shape(v: Any, what: str, *, positive: bool = False) -> list[int]:
    if not isinstance(v, list) or not all(_is_int(n) and n >= (1 if positive else 0) for n in v):
        need = "positive integers" if positive else "integers >= 0"
        raise MetadataError(f"{what} is {short(v)}: expected a list of {need}")
    return v


def _codec_list(v: Any, what: str) -> list[dict[str, Any]]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise MetadataError(f"{what} is {short(v)}: expected a list of codecs")
    for c in v:
        if not isinstance(c, dict):
            raise MetadataError(f"{what} holds {short(c)}: expected a codec object")
    return v


def _v3_codec(c: dict[str, Any]) -> dict[str, Any]:
    name, config = c.get("name"), c.get("configuration", {})
    if not isinstance(name, str):
        raise MetadataError(f"a codec's name is {short(name)}: expected a string")
    if config is not None and not isinstance(config, dict):
        raise MetadataError(f"codec {name!r}: configuration is {short(config)}: expected an object")
    return {"name": name, "configuration": config or {}}


def _v2_codec(c: dict[str, Any], what: str) -> dict[str, Any]:
    if not isinstance(c.get("id"), str):
        raise MetadataError(f"{what} {short(c)} has no string 'id'")
    return c


# -- one array ------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _itemsize(dtype_json: str) -> int | None:
    from ..core.dtypes import v3_dtype_from_json

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


def _reader_warnings(meta: dict[str, Any]) -> list[str]:
    """Known deviations of other readers for this metadata (:mod:`.deviations`)."""
    from .deviations import reader_warnings

    try:
        return reader_warnings(meta)
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        return []


def _dimension_names(v: Any, ndim: int, issues: list[str]) -> list[str | None] | None:
    if v is None:
        return None
    if not isinstance(v, list) or not all(n is None or isinstance(n, str) for n in v):
        issues.append(f"dimension_names is {short(v)}: expected a list of names (strings or null)")
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
        issues.append(f"chunk_key_encoding is {short(encoding)}: expected "
                      '{"name": "default" or "v2", "configuration": {"separator": "/" or "."}}')
    if isinstance(dtype, str):
        from ..core.dtypes import supported_dtype_names
        from ..core.scalar_json import scalar_from_json

        if dtype in supported_dtype_names():
            try:
                scalar_from_json(meta.get("fill_value"), dtype, what="fill_value")
            except Exception as e:  # noqa: BLE001 - reported
                issues.append(f"fill_value {short(meta.get('fill_value'))} is not a {dtype}: {e}")
    attributes = meta.get("attributes", {})
    if not isinstance(attributes, dict):
        issues.append(f"attributes is {short(attributes)}: expected an object")


def array_entry(path: str, document: str, meta: dict[str, Any], *, stored_bytes: int | None, chunk_files: int,
                formats: list[int], issues: list[str]) -> dict[str, Any]:
    """The entry of the array at ``path`` (``""`` for the root) whose metadata document
    ``document`` (``"zarr.json"`` or ``".zarray"``) holds ``meta``; ``stored_bytes`` and
    ``chunk_files`` are what lies in its chunk files (``stored_bytes`` None: unknown), ``formats``
    the zarr formats whose metadata the node has. MetadataError for metadata so far from the spec
    that the array cannot be described; wrong fields that leave the rest meaningful are appended to
    ``issues``."""
    v3 = document == "zarr.json"
    shape = _shape(meta.get("shape"), "shape")
    if v3:
        dtype = meta.get("data_type")
        if not isinstance(dtype, (str, dict)) or (isinstance(dtype, dict) and (
                not isinstance(dtype.get("name"), str)
                or not isinstance(dtype.get("configuration", {}), dict))):
            raise MetadataError(f"data_type is {short(dtype)}: expected a name or an object "
                       '{"name": ..., "configuration": {...}}')
        grid = meta.get("chunk_grid")
        config = grid.get("configuration") if isinstance(grid, dict) else None
        if not isinstance(grid, dict) or grid.get("name") != "regular" or not isinstance(config, dict):
            if isinstance(grid, dict) and isinstance(grid.get("name"), str) and grid.get("name") != "regular":
                chunks = None  # another grid (rectilinear ...): described as it is, not an error
            else:
                raise MetadataError(f"chunk_grid is {short(grid)}: expected "
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
            raise MetadataError(f"dtype is {short(dtype)}: expected a numpy type string or a list of fields")
        chunks = _shape(meta.get("chunks"), "chunks", positive=True)
        integer = isinstance(dtype, str) and dtype[1:2] in ("i", "u")
        filters = _codec_list(meta.get("filters"), "filters")
        codecs = [_codec_entry(_v2_codec(f, "a filter"), "filter", False, integer) for f in filters]
        compressor = meta.get("compressor")
        if compressor is not None:
            if not isinstance(compressor, dict):
                raise MetadataError(f"compressor is {short(compressor)}: expected a codec object or null")
            codecs.append(_codec_entry(_v2_codec(compressor, "the compressor"), "compressor", False, integer))
        shard = None
        dims = None
        order = meta.get("order")
        if order not in ("C", "F"):
            issues.append(f"order is {short(order)}: expected \"C\" or \"F\"")
            order = None
    if chunks is not None and len(chunks) != len(shape):
        raise MetadataError(f"chunks {tuple(chunks)} have {len(chunks)} dimensions, "
                            f"the shape {tuple(shape)} {len(shape)}")
    dtype_words = dtype if isinstance(dtype, str) else json.dumps(dtype)
    itemsize = _itemsize(json.dumps(dtype))
    decoded = None if itemsize is None else math.prod(shape) * itemsize
    chunk_grid = None if chunks is None else math.prod(-(-s // c) for s, c in zip(shape, chunks))
    ours_only = [c["name"] for c in codecs if "numcodecs_ext" in c["readers"]
                 and not any(r.startswith(("zarr-python", "numcodecs")) and r != "numcodecs_ext" for r in c["readers"])]
    unreadable = [c["name"] for c in codecs if v3 and c.get("zarr_uses") is None]
    if itemsize is None:
        unreadable.insert(0, f"data type {dtype_words}")
    stored = stored_bytes
    return {
        "path": path or "/", "zarr_format": 3 if v3 else 2, "shape": shape, "data_type": dtype_words,
        "chunks": shard["chunk_shape"] if shard else chunks, "shards": chunks if shard else None,
        "order": order, "dimension_names": dims,
        "fill_value": meta.get("fill_value"), "codecs": codecs,
        "stored_bytes": stored, "chunk_files": chunk_files, "chunk_grid": chunk_grid,
        "decoded_bytes": decoded, "ratio": (decoded / stored) if decoded and stored else None,
        "needs_numcodecs_ext": sorted(set(ours_only)),
        "unreadable_here": unreadable,
        "cf": _cf_words(dtype, codecs) if v3 else None,
        "reader_warnings": _reader_warnings(meta) if v3 else [],
        "formats": formats,
    }


def views_disagree(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """What the v3 and v2 metadata of one array disagree on (None: they agree)."""
    if a["shape"] != b["shape"]:
        return f"shape {tuple(a['shape'])} in zarr.json, {tuple(b['shape'])} in .zarray"
    if a["chunks"] != b["chunks"] and a["shards"] != b["chunks"]:
        return f"chunks {tuple(a['chunks'] or ())} in zarr.json, {tuple(b['chunks'] or ())} in .zarray"
    if a["decoded_bytes"] != b["decoded_bytes"]:
        return f"data type {a['data_type']} in zarr.json, {b['data_type']} in .zarray"
    return None
