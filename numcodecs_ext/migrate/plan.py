"""The zarr v3 metadata for a zarr v2 array or group, worked out from its ``.zarray`` /
``.zgroup`` and ``.zattrs`` before anything is written.

Chunks keep their keys (the v3 ``v2`` chunk key encoding) and their bytes wherever the v3
codecs decode them to the same values: ``order: "F"`` becomes a ``transpose``, numcodecs
``FixedScaleOffset`` / ``AsType`` filters the spec codecs (:mod:`.filters`), other filters zarr's
``numcodecs.<id>`` adapter names, the compressor its v3 codec, and the bytes codec takes the
byte order the filters leave. xarray's ``_ARRAY_DIMENSIONS`` attribute becomes
``dimension_names``, and, since xarray masks a v2 array's fill value but reads a v3 array's
missing-value marker from the ``_FillValue`` attribute, the fill value of such an array becomes
that attribute too (text: ``missing_value``, since xarray reads no text ``_FillValue`` in v3).

The store is listed once (:func:`index_store`): every node, and every chunk key with its size,
assigned to its array in one pass over the listing.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..store.errors import ToolError
from ..store.storage import Location
from .index import StoreIndex, key_in, read_json
from .filters import NotExpressible, adapter_codec, filter_codecs, works_on_bytes
from .text import counted

__all__ = ["ArrayPlan", "GroupPlan", "array_metadata", "compressor_codec", "group_metadata", "v2_reading"]

_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
_DIMENSIONS = "_ARRAY_DIMENSIONS"
#: object codecs of zarr v2 that are zarr v3 array -> bytes codecs of the same name and bytes
_OBJECT_CODECS = ("vlen-utf8", "vlen-bytes")


@dataclass
class GroupPlan:
    """A group: where it is and its v3 ``zarr.json``."""

    path: str
    metadata: dict[str, Any]

    @property
    def key(self) -> str:
        return key_in(self.path, "zarr.json")


@dataclass
class ArrayPlan:
    """An array: its v3 ``zarr.json``, its stored chunks (store key -> size), whether the chunks
    are kept as they are, and why not."""

    path: str
    metadata: dict[str, Any]
    codecs_before: list[str]
    chunks: dict[str, int] = field(default_factory=dict)
    dtype: np.dtype = field(default_factory=lambda: np.dtype("u1"))  # of the decoded values
    rewrite: str | None = None  # why the chunks must be decoded and encoded again
    read_only: str | None = None  # why zarr will refuse writes to the migrated array
    notes: list[str] = field(default_factory=list)  # codes given to NaN or the fill value ...
    zarray: dict[str, Any] | None = None  # the v2 metadata it comes from, if any
    #: v2 documents read instead of the stored ones, where zarr cannot open the stored one
    #: (see :func:`v2_reading`)
    source_staged: dict[str, bytes] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return key_in(self.path, "zarr.json")

    @property
    def name(self) -> str:
        return self.path or "/"

    @property
    def nbytes(self) -> int:
        return sum(self.chunks.values())

    @property
    def itemsize(self) -> int:
        """Bytes per value, for the size of runs (variable-length values: a generous guess)."""
        return max(self.dtype.itemsize, 64) if self.dtype.kind in "OT" else self.dtype.itemsize

    @property
    def shape(self) -> list[int]:
        return list(self.metadata["shape"])

    @property
    def chunk_shape(self) -> list[int]:
        return list(self.metadata["chunk_grid"]["configuration"]["chunk_shape"])

    @property
    def decoded_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.itemsize if self.shape else self.itemsize

    def describe(self) -> str:
        after = [c["name"] for c in self.metadata["codecs"]]
        how = f"rewrite chunks ({self.rewrite})" if self.rewrite else "keep chunks"
        data_type = self.metadata["data_type"]
        if isinstance(data_type, dict):
            config = data_type.get("configuration") or {}
            data_type = f"{data_type.get('name')} ({', '.join(f'{k} {v}' for k, v in config.items())})"
        text = (f"{self.name}: {data_type} {self.metadata['shape']}, "
                f"{counted(len(self.chunks), 'chunk')}, {how}\n"
                f"    v2 {' -> '.join(self.codecs_before) or '(no codecs)'}\n"
                f"    v3 {' -> '.join(after)}")
        for note in self.notes:
            text += f"\n    {note}"
        if self.read_only:
            text += f"\n    read-only: {self.read_only}"
        return text


def compressor_codec(config: dict[str, Any], itemsize: int) -> dict[str, Any]:
    """A numcodecs compressor as its zarr v3 codec (blosc, zstd and gzip natively, others under
    zarr's ``numcodecs.<id>`` adapter names).

    >>> compressor_codec({"id": "zstd", "level": 3}, 4)
    {'name': 'zstd', 'configuration': {'level': 3, 'checksum': False}}
    """
    cid = config.get("id")
    if cid == "blosc":
        shuffle = int(config.get("shuffle", 1))
        if shuffle == -1:  # numcodecs' AUTOSHUFFLE, as numcodecs resolves it
            shuffle = 2 if itemsize == 1 else 1
        return {"name": "blosc", "configuration": {
            "typesize": itemsize, "cname": config.get("cname", "lz4"),
            "clevel": int(config.get("clevel", 5)), "shuffle": _BLOSC_SHUFFLE[shuffle],
            "blocksize": int(config.get("blocksize", 0))}}
    if cid == "zstd":
        return {"name": "zstd", "configuration": {"level": int(config.get("level", 0)),
                                                  "checksum": bool(config.get("checksum", False))}}
    if cid == "gzip":
        return {"name": "gzip", "configuration": {"level": int(config.get("level", 1))}}
    return adapter_codec(config)


def _bytes_codec(dtype: np.dtype) -> dict[str, Any]:
    if dtype.itemsize == 1:
        return {"name": "bytes"}
    big = dtype.byteorder == ">" or (dtype.byteorder == "=" and sys.byteorder == "big")
    return {"name": "bytes", "configuration": {"endian": "big" if big else "little"}}


def _no_bytes_fill(zarray: Any) -> bool:
    """Whether ``zarray`` is a vlen-bytes array whose fill value is no bytes value (zarr-python 2
    wrote 0, its default: it read unwritten elements as the integer 0; zarr-python 3 cannot
    open such an array)."""
    if not isinstance(zarray, dict) or zarray.get("dtype") != "|O":
        return False
    filters = zarray.get("filters") or []
    first = filters[0] if filters and isinstance(filters[0], dict) else {}
    fill = zarray.get("fill_value")
    return first.get("id") == "vlen-bytes" and fill is not None and not isinstance(fill, str)


def v2_reading(zarray: Any, path: str) -> dict[str, bytes]:
    """The v2 documents zarr reads the array at ``path`` through instead of its own: {} where
    zarr opens it as it is; a vlen-bytes array whose fill value is no bytes value
    (:func:`_no_bytes_fill`) is read with no fill value (unwritten elements: empty bytes)."""
    if not _no_bytes_fill(zarray):
        return {}
    return {key_in(path, ".zarray"): json.dumps({**zarray, "fill_value": None}).encode()}


def _zdtype_json(zarray: dict[str, Any], notes: list[str],
                 object_codec: str | None = None) -> tuple[Any, Any, Any]:
    """(data_type JSON, fill_value JSON, fill value scalar) for zarr v3, through zarr's own data
    type machinery; what zarr warns about the type goes to ``notes``."""
    import warnings

    from zarr.dtype import data_type_registry

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zdtype = data_type_registry.match_json({"name": zarray["dtype"], "object_codec_id": object_codec},
                                               zarr_format=2)
        fill = zarray.get("fill_value")
        if _no_bytes_fill(zarray):
            notes.append(f"the fill value {json.dumps(fill)} is no bytes value (zarr-python 2's default; it read "
                         "unwritten elements as the integer 0, xarray as missing): they read as empty "
                         "bytes, the v3 fill value")
            fill = None
        scalar = zdtype.default_scalar() if fill is None else zdtype.from_json_scalar(fill, zarr_format=2)
        out = zdtype.to_json(zarr_format=3), zdtype.to_json_scalar(scalar, zarr_format=3), scalar
    if any("does not have a Zarr V3 specification" in str(w.message) for w in caught):
        notes.append(f"zarr's v3 data type for {zarray['dtype']} has no published specification "
                     "yet: other zarr implementations may not read it")
    return out


def _v2_dtype(spec: Any, where: str) -> np.dtype:
    """The numpy type of a ``.zarray`` ``dtype``: a type string, or a structured type as zarr v2
    writes it, a list of ``[name, type]`` lists (which numpy takes only as tuples)."""
    def numpy_form(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        out = []
        for entry in value:
            if not isinstance(entry, list) or len(entry) not in (2, 3):
                return value  # (numpy says what is wrong)
            name, kind, *shape = entry
            out.append((name, numpy_form(kind), *(tuple(s) if isinstance(s, list) else s for s in shape)))
        return out

    try:
        return np.dtype(numpy_form(spec))
    except (TypeError, ValueError) as e:
        raise ToolError(f"{where}: .zarray has the data type {spec!r}, which is no numpy type "
                        f"({e})") from None


def _xarray_fill_value(value: Any, dtype: np.dtype) -> Any:
    """The ``_FillValue`` attribute as xarray writes it in zarr v3 (floats as the base64 of a
    little-endian float64), or None where xarray has no such form here."""
    if dtype.kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    if dtype.kind in "iu":
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return None


def _attributes(location: Location, path: str, index: StoreIndex) -> dict[str, Any]:
    key = key_in(path, ".zattrs")
    if key not in index.v2_files:
        return {}
    attrs = read_json(location, key)
    if not isinstance(attrs, dict):
        raise ToolError(f"{location.child(key)}: attributes must be a JSON object")
    return attrs


def array_metadata(index: StoreIndex, path: str, *, match: str = "decode", wrap: bool = False,
                   keep_numcodecs: bool = False) -> ArrayPlan:
    """The plan for the v2 array at ``path`` of the indexed store (NotExpressible or ToolError
    if it cannot be migrated, saying why)."""
    zarray = index.arrays[path]
    where = f"array {path or '/'}"
    if not isinstance(zarray, dict):
        raise ToolError(f"{where}: .zarray is not a JSON object")
    attrs = _attributes(index.location, path, index)
    try:
        shape, chunks = [int(s) for s in zarray["shape"]], [int(c) for c in zarray["chunks"]]
    except KeyError as e:
        raise ToolError(f"{where}: .zarray lacks {e}") from None
    except (TypeError, ValueError):
        raise ToolError(f"{where}: .zarray has shape {zarray.get('shape')!r} and chunks "
                        f"{zarray.get('chunks')!r}: lists of whole numbers are needed") from None
    if "dtype" not in zarray:
        raise ToolError(f"{where}: .zarray lacks 'dtype'")
    dtype = _v2_dtype(zarray["dtype"], where)
    if len(shape) != len(chunks) or any(s < 0 for s in shape) or any(c < 1 for c in chunks):
        raise ToolError(f"{where}: .zarray has shape {shape} and chunks {chunks}, which do not "
                        "describe a chunk grid")
    filters = list(zarray.get("filters") or [])
    # an object array's first filter turns its values into bytes: zarr v3's array -> bytes codec
    object_codec = None
    if dtype.kind == "O":
        object_codec = (filters[0] if filters and isinstance(filters[0], dict) else {}).get("id")
        if object_codec not in _OBJECT_CODECS:
            raise NotExpressible(f"{where}: data type {zarray['dtype']} (Python objects through "
                                 f"{object_codec}) has no zarr v3 form; move the array out of the store "
                                 "to migrate the rest, or keep it as zarr v2")
        filters = filters[1:]
    notes: list[str] = []
    try:
        data_type, fill_value, fill_scalar = _zdtype_json(zarray, notes, object_codec)
    except (ValueError, TypeError, KeyError) as e:
        raise NotExpressible(f"{where}: zarr has no v3 form of data type {zarray['dtype']} with "
                             f"fill value {zarray.get('fill_value')} ({e})") from None
    separator = zarray.get("dimension_separator") or "."
    if separator not in (".", "/"):
        raise ToolError(f"{where}: dimension_separator {separator!r} is neither '.' nor '/'")
    codecs: list[dict[str, Any]] = []
    before = []
    if zarray.get("order", "C") == "F" and len(shape) > 1:
        codecs.append({"name": "transpose", "configuration": {"order": list(range(len(shape)))[::-1]}})
        before.append("order F")
    current = dtype
    on_bytes: list[dict[str, Any]] = []  # filters that zarr v3 runs after the bytes codec
    if object_codec is not None:
        before.append(object_codec)
    for config in filters:
        if not isinstance(config, dict):
            raise ToolError(f"{where}: .zarray has a filter that is not a JSON object: {config!r}")
        before.append(str(config.get("id")))
        try:
            mapped, current = filter_codecs(config, current, match=match, wrap=wrap)
        except NotExpressible as e:
            if not keep_numcodecs:
                raise NotExpressible(f"{where}: {e} (--keep-numcodecs keeps it under zarr's "
                                     f"numcodecs.{config.get('id')} adapter name instead)") from None
            mapped = [adapter_codec(config)]
            out_key = {"fixedscaleoffset": "astype", "astype": "encode_dtype"}.get(config.get("id"))
            current = np.dtype(config[out_key]) if out_key else current
        for codec in mapped:
            if works_on_bytes(codec):
                on_bytes.append(codec)
            elif on_bytes or object_codec is not None:
                makes_bytes = (on_bytes[-1]["name"] if on_bytes else object_codec).removeprefix("numcodecs.")
                raise NotExpressible(f"{where}: the filter {config.get('id')} comes after {makes_bytes}, "
                                     "which works on bytes: zarr v3 runs every array filter before "
                                     "the codec that makes bytes, so no v3 codec chain reads these chunks")
            else:
                codecs.append(codec)
    codecs.append({"name": object_codec} if object_codec is not None else _bytes_codec(current))
    codecs.extend(on_bytes)
    compressor = zarray.get("compressor")
    if compressor:
        before.append(str(compressor.get("id")))
        # (the values of an object array reach the compressor as bytes: numcodecs' typesize 1)
        codecs.append(compressor_codec(compressor, 1 if object_codec else current.itemsize))
    attributes = {k: v for k, v in attrs.items() if k != _DIMENSIONS}
    if _DIMENSIONS in attrs and zarray.get("fill_value") is not None and "_FillValue" not in attrs:
        # xarray masks a v2 array's fill value, but reads a v3 array's from this attribute
        xarray_fill = _xarray_fill_value(fill_scalar, dtype)
        if xarray_fill is not None:
            attributes["_FillValue"] = xarray_fill
        elif (object_codec == "vlen-utf8" or dtype.kind == "U") and "missing_value" not in attrs:
            # xarray cannot read a text _FillValue in zarr v3, but masks text missing_value alike
            attributes["missing_value"] = fill_value
    metadata: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": separator}},
        "fill_value": fill_value, "codecs": codecs, "attributes": attributes,
    }
    names = attrs.get(_DIMENSIONS)
    if isinstance(names, list) and len(names) == len(shape) and all(isinstance(n, str) for n in names):
        metadata["dimension_names"] = names
    if (object_codec == "vlen-bytes" or dtype.kind == "S") and zarray.get("fill_value") is not None \
            and _DIMENSIONS in attrs and not _no_bytes_fill(zarray):
        notes.append("xarray read the fill value of this v2 array as missing; it has no form for a "
                     "bytes fill value in zarr v3, so it reads the fill value itself")
    return ArrayPlan(path, metadata, before, index.chunks.get(path, {}), dtype=dtype, zarray=zarray,
                     notes=notes, source_staged=v2_reading(zarray, path))


def group_metadata(index: StoreIndex, path: str) -> GroupPlan:
    return GroupPlan(path, {"zarr_format": 3, "node_type": "group",
                            "attributes": _attributes(index.location, path, index)})


