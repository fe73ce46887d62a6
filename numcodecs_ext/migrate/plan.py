"""The zarr v3 metadata for a zarr v2 array or group, worked out from its ``.zarray`` /
``.zgroup`` and ``.zattrs`` before anything is written.

Chunks keep their keys (the v3 ``v2`` chunk key encoding) and their bytes wherever the v3
codecs decode them to the same values: ``order: "F"`` becomes a ``transpose``, numcodecs
``FixedScaleOffset`` / ``AsType`` filters the spec codecs (:mod:`.filters`), other filters zarr's
``numcodecs.<id>`` adapter names, the compressor its v3 codec, and the bytes codec takes the
byte order the filters leave. xarray's ``_ARRAY_DIMENSIONS`` attribute becomes
``dimension_names``, and, since xarray masks a v2 array's fill value but reads a v3 array's
missing-value marker from the ``_FillValue`` attribute, the fill value of such an array becomes
that attribute too.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .filters import NotExpressible, adapter_codec, filter_codecs

__all__ = ["ArrayPlan", "GroupPlan", "array_metadata", "compressor_codec", "read_json"]

V2_FILES = (".zarray", ".zgroup", ".zattrs", ".zmetadata")
_BLOSC_SHUFFLE = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}
_DIMENSIONS = "_ARRAY_DIMENSIONS"


def read_json(path: Path) -> Any:
    """A metadata file's JSON (ValueError naming the file if it is not JSON)."""
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not readable JSON metadata ({e})") from e


@dataclass
class GroupPlan:
    """A group: where it is and its v3 ``zarr.json``."""

    path: str
    metadata: dict[str, Any]


@dataclass
class ArrayPlan:
    """An array: its v3 ``zarr.json``, whether the chunks are kept as they are, and why not."""

    path: str
    metadata: dict[str, Any]
    codecs_before: list[str]
    chunk_files: list[Path] = field(default_factory=list)
    itemsize: int = 1  # of the decoded values
    rewrite: str | None = None  # why the chunks must be decoded and encoded again
    read_only: str | None = None  # why zarr will refuse writes to the migrated array

    @property
    def nbytes(self) -> int:
        return sum(f.stat().st_size for f in self.chunk_files)

    def describe(self) -> str:
        after = [c["name"] for c in self.metadata["codecs"]]
        how = f"rewrite chunks ({self.rewrite})" if self.rewrite else "keep chunks"
        text = (f"{self.path or '/'}: {self.metadata['data_type']} {self.metadata['shape']}, "
                f"{len(self.chunk_files)} chunks, {how}\n"
                f"    v2 {' -> '.join(self.codecs_before) or '(no codecs)'}\n"
                f"    v3 {' -> '.join(after)}")
        if self.read_only:
            text += f"\n    reads as before; writes will be refused: {self.read_only}"
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


def _zdtype_json(zarray: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(data_type JSON, fill_value JSON, fill value scalar) for zarr v3, through zarr's own data
    type machinery."""
    from zarr.core.dtype import get_data_type_from_json

    zdtype = get_data_type_from_json({"name": zarray["dtype"], "object_codec_id": None}, zarr_format=2)
    fill = zarray.get("fill_value")
    scalar = zdtype.default_scalar() if fill is None else zdtype.from_json_scalar(fill, zarr_format=2)
    return zdtype.to_json(zarr_format=3), zdtype.to_json_scalar(scalar, zarr_format=3), scalar


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


def _chunk_files(directory: Path, ndim: int, separator: str) -> list[Path]:
    """The array's chunk files: names of ``ndim`` integers joined by ``separator`` (``"0"`` for
    0-d arrays); child groups and arrays are not chunks."""
    found = []
    want = max(ndim, 1)
    for path in sorted(directory.rglob("*")):
        if not path.is_file():
            continue
        key = path.relative_to(directory).as_posix()
        parts = key.split("/") if separator == "/" else ([key] if "/" in key else key.split("."))
        if len(parts) == want and all(p.isdigit() for p in parts):
            found.append(path)
    return found


def array_metadata(root: Path, path: str, *, match: str = "decode", wrap: bool = False,
                   keep_numcodecs: bool = False) -> ArrayPlan:
    """The plan for the v2 array at ``root / path`` (NotExpressible or ValueError if it cannot
    be migrated, saying why)."""
    directory = root / path
    zarray = read_json(directory / ".zarray")
    attrs = read_json(directory / ".zattrs") if (directory / ".zattrs").exists() else {}
    where = f"array {path or '/'}"
    try:
        dtype = np.dtype(zarray["dtype"])
        shape, chunks = list(zarray["shape"]), list(zarray["chunks"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"{where}: .zarray lacks a valid {e}") from e
    if dtype.kind not in "biufcmM" or dtype.fields is not None:
        raise NotExpressible(f"{where}: data type {zarray['dtype']!r} is not migrated (numeric, "
                             "bool and datetime types only)")
    data_type, fill_value, fill_scalar = _zdtype_json(zarray)
    separator = zarray.get("dimension_separator", ".")
    codecs: list[dict[str, Any]] = []
    before = []
    if zarray.get("order", "C") == "F" and len(shape) > 1:
        codecs.append({"name": "transpose", "configuration": {"order": list(range(len(shape)))[::-1]}})
        before.append("order F")
    current = dtype
    for config in zarray.get("filters") or []:
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
        codecs.extend(mapped)
    codecs.append(_bytes_codec(current))
    compressor = zarray.get("compressor")
    if compressor:
        before.append(str(compressor.get("id")))
        codecs.append(compressor_codec(compressor, current.itemsize))
    attributes = {k: v for k, v in attrs.items() if k != _DIMENSIONS}
    if _DIMENSIONS in attrs and zarray.get("fill_value") is not None and "_FillValue" not in attrs:
        # xarray masks a v2 array's fill value, but reads a v3 array's from this attribute
        xarray_fill = _xarray_fill_value(fill_scalar, dtype)
        if xarray_fill is not None:
            attributes["_FillValue"] = xarray_fill
    metadata: dict[str, Any] = {
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "v2", "configuration": {"separator": separator}},
        "fill_value": fill_value, "codecs": codecs, "attributes": attributes,
    }
    names = attrs.get(_DIMENSIONS)
    if isinstance(names, list) and len(names) == len(shape):
        metadata["dimension_names"] = names
    return ArrayPlan(path, metadata, before, _chunk_files(directory, len(shape), separator),
                     itemsize=dtype.itemsize)


def group_metadata(root: Path, path: str) -> GroupPlan:
    directory = root / path
    attrs = read_json(directory / ".zattrs") if (directory / ".zattrs").exists() else {}
    return GroupPlan(path, {"zarr_format": 3, "node_type": "group", "attributes": attrs})
