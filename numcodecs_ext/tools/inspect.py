"""Look inside a zarr store: every array's shape, dtype, chunks, codecs in words, who reads them.

For each array of a zarr v2 or v3 store (a local path, or any fsspec URL when fsspec is
installed): shape, data type, chunk and shard shapes, the codec chain with each codec's parameters
in words and which implementations read it (numcodecs_ext, zarr-python, zarrs), the stored and
decoded sizes, and whether numcodecs_ext is needed to read it. Only metadata is read (plus the sizes
of the chunk files), so foreign codecs are described too. ``--json`` prints the same for scripts.

Examples::

    numcodecs-ext inspect era5.zarr
    numcodecs-ext inspect s3://bucket/store.zarr --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .describe import describe_codec, readers, zarr_implementation
from .deviations import reader_warnings

__all__ = ["inspect_store"]

_META = {"zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata"}


class StoreError(ValueError):
    """The path is not a zarr store (or cannot be read)."""


def _files(root: str) -> tuple[dict[str, int], Any]:
    """Every file under ``root`` as ``{relative path: size}``, and a reader of a relative path."""
    if "://" in root:
        try:
            from fsspec.core import url_to_fs
        except ImportError as exc:
            raise StoreError(f"{root}: URLs need fsspec (pip install fsspec)") from exc
        fs, base = url_to_fs(root)
        if not fs.isdir(base):
            raise StoreError(f"{root}: not a directory-like zarr store")
        found = fs.find(base, detail=True)
        files = {p[len(base):].lstrip("/"): int(info.get("size") or 0) for p, info in found.items()}
        return files, lambda rel: fs.cat_file(f"{base.rstrip('/')}/{rel}")
    base = Path(root)
    if not base.is_dir():
        raise StoreError(f"{root}: no such directory (a zarr store is a directory)")
    files = {}
    for dirpath, _, names in os.walk(base):
        for name in names:
            p = Path(dirpath) / name
            files[p.relative_to(base).as_posix()] = p.stat().st_size
    return files, lambda rel: (base / rel).read_bytes()


def _nodes(files: dict[str, int]) -> Iterator[tuple[str, str]]:
    """``(node path, metadata file)`` for every array and group, v3 metadata first."""
    seen = set()
    for rel in sorted(files, key=lambda r: (r.count("/"), r)):
        parent, _, name = rel.rpartition("/")
        if name in ("zarr.json", ".zarray", ".zgroup") and parent not in seen:
            seen.add(parent)
            yield parent, name


def _chunk_bytes(files: dict[str, int], node: str, nodes: set[str]) -> tuple[int, int]:
    prefix = node + "/" if node else ""
    total = count = 0
    for rel, size in files.items():
        if not rel.startswith(prefix) or rel.rpartition("/")[2] in _META:
            continue
        inner = rel[len(prefix):]
        if any(inner.startswith(n[len(prefix):] + "/") for n in nodes if n != node and n.startswith(prefix)):
            continue  # belongs to a child node
        total += size
        count += 1
    return total, count


def _itemsize(dtype: Any) -> int | None:
    from ..dtypes import v3_dtype_from_json

    try:
        return v3_dtype_from_json(dtype).itemsize
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        try:
            import numpy as np

            return np.dtype(dtype).itemsize
        except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
            return None


def _codec_entry(codec: dict[str, Any], role: str, v3: bool, integer_data: bool) -> dict[str, Any]:
    name = str(codec.get("name") if v3 else codec.get("id"))
    entry: dict[str, Any] = {"name": name, "role": role, "words": describe_codec(codec)}
    if v3:
        entry["configuration"] = codec.get("configuration") or {}
        entry["zarr_uses"] = zarr_implementation(name)
        entry["readers"] = readers(name, integer_data=integer_data)
    else:
        entry["configuration"] = {k: v for k, v in codec.items() if k != "id"}
        entry["readers"] = _v2_readers(name)
    return entry


def _v2_readers(codec_id: str) -> list[str]:
    import numcodecs

    from .._registry import NUMCODECS

    if codec_id in NUMCODECS:
        return ["numcodecs_ext"]
    cls = numcodecs.registry.codec_registry.get(codec_id)
    if cls is None:
        return []
    return ["numcodecs" if cls.__module__.startswith("numcodecs.") else cls.__module__.split(".")[0]]


def _v3_codecs(meta: dict[str, Any], integer_data: bool) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    out: list[dict[str, Any]] = []
    shard = None
    role = "filter"
    for codec in meta.get("codecs") or []:
        name = codec.get("name")
        if name == "sharding_indexed":
            config = codec.get("configuration") or {}
            shard = {"chunk_shape": config.get("chunk_shape"),
                     "index_codecs": [c.get("name") for c in config.get("index_codecs") or []],
                     "index_location": config.get("index_location", "end")}
            entry = _codec_entry(codec, "serializer", True, integer_data)
            entry["words"] = f"shards of inner chunks {config.get('chunk_shape')}"
            out.append(entry)
            inner, _ = _v3_codecs({"codecs": config.get("codecs") or []}, integer_data)
            for e in inner:
                e["role"] = "inner " + e["role"]
            out.extend(inner)
            role = "compressor"
            continue
        if role == "filter" and _is_serializer(str(name)):
            out.append(_codec_entry(codec, "serializer", True, integer_data))
            role = "compressor"
            continue
        out.append(_codec_entry(codec, role, True, integer_data))
    return out, shard


_SERIALIZERS = {"bytes", "endian", "vlen-utf8", "vlen-bytes", "zfp", "zarrs.zfp", "numcodecs.zfp",
                "packbits", "numcodecs.zfpy", "numcodecs.pcodec", "zarrs.vlen", "zarrs.vlen_v2"}


def _is_serializer(name: str) -> bool:
    """Whether the v3 codec ``name`` turns arrays into bytes (zarr's class says; else known names)."""
    try:
        from zarr.abc.codec import ArrayBytesCodec
        from zarr.registry import get_codec_class

        return issubclass(get_codec_class(name), ArrayBytesCodec)
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        return name in _SERIALIZERS


def _cf_words(data_type: Any, codecs: list[dict[str, Any]]) -> dict[str, Any] | None:
    names = [c["name"] for c in codecs if c["role"] == "filter"]
    if names not in (["scale_offset", "cast_value"], ["cast_value"]):
        return None
    try:
        from ..cf.attrs import packing_from_codecs

        attrs = packing_from_codecs(data_type, [{"name": c["name"], "configuration": c["configuration"]}
                                                for c in codecs if c["role"] == "filter"]).attrs()
    except Exception:  # noqa: BLE001 - foreign metadata: described, never raised
        return None
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in attrs.items()}


def _array_info(node: str, kind: str, meta: dict[str, Any], files: dict[str, int], nodes: set[str]) -> dict[str, Any]:
    v3 = kind == "zarr.json"
    shape = [int(n) for n in meta["shape"]]
    dtype = meta["data_type"] if v3 else meta["dtype"]
    dtype_words = dtype if isinstance(dtype, str) else json.dumps(dtype)
    itemsize = _itemsize(dtype)
    integer_data = isinstance(dtype, str) and ("int" in dtype or dtype[1:2] in ("i", "u"))
    if v3:
        chunks = (meta.get("chunk_grid") or {}).get("configuration", {}).get("chunk_shape")
        codecs, shard = _v3_codecs(meta, integer_data)
        dims = meta.get("dimension_names")
    else:
        chunks = meta.get("chunks")
        codecs = [_codec_entry(f, "filter", False, integer_data) for f in meta.get("filters") or []]
        if meta.get("compressor"):
            codecs.append(_codec_entry(meta["compressor"], "compressor", False, integer_data))
        shard = None
        dims = None
    stored, nfiles = _chunk_bytes(files, node, nodes)
    decoded = None if itemsize is None else math.prod(shape) * itemsize
    grid = None if not chunks else math.prod(math.ceil(s / max(1, int(c))) for s, c in zip(shape, chunks))
    ours_only = [c["name"] for c in codecs if "numcodecs_ext" in c["readers"]
                 and not any(r.startswith(("zarr-python", "numcodecs")) and r != "numcodecs_ext" for r in c["readers"])]
    unreadable = [c["name"] for c in codecs if v3 and c.get("zarr_uses") is None]
    return {
        "path": node or "/", "zarr_format": 3 if v3 else 2, "shape": shape, "data_type": dtype_words,
        "chunks": shard["chunk_shape"] if shard else chunks, "shards": chunks if shard else None,
        "order": None if v3 else meta.get("order"), "dimension_names": dims,
        "fill_value": meta.get("fill_value"), "codecs": codecs,
        "stored_bytes": stored, "chunk_files": nfiles, "chunk_grid": grid, "decoded_bytes": decoded,
        "ratio": (decoded / stored) if decoded and stored else None,
        "needs_numcodecs_ext": sorted(set(ours_only)),
        "unreadable_here": unreadable,
        "cf": _cf_words(dtype, codecs) if v3 else None,
        "reader_warnings": reader_warnings(meta) if v3 else [],
    }


def inspect_store(root: str | os.PathLike) -> dict[str, Any]:
    """Describe every array and group of the zarr store at ``root``.

    Returns
    -------
    dict
        ``{"store": root, "arrays": [...], "groups": [...], "problems": [...]}``; each array is a
        dict (see ``numcodecs-ext inspect --json``). Unreadable or foreign metadata is reported
        under ``problems`` with the path, never raised.

    Raises
    ------
    StoreError
        ``root`` is not a directory, or holds no zarr metadata at all.
    """
    root = os.fspath(root)
    files, read = _files(root)
    found = list(_nodes(files))
    if not found:
        raise StoreError(f"{root}: no zarr metadata (zarr.json, .zarray or .zgroup) found: not a zarr store")
    nodes = {n for n, _ in found}
    out: dict[str, Any] = {"store": root, "arrays": [], "groups": [], "problems": []}
    for node, kind in found:
        rel = f"{node}/{kind}" if node else kind
        try:
            meta = json.loads(read(rel))
            if not isinstance(meta, dict):
                raise ValueError("not a JSON object")  # noqa: TRY004
        except Exception as exc:  # noqa: BLE001 - foreign metadata: described, never raised
            out["problems"].append({"path": rel, "problem": f"unreadable metadata: {exc}"})
            continue
        try:
            if kind == ".zgroup" or meta.get("node_type") == "group":
                out["groups"].append({"path": node or "/", "zarr_format": 2 if kind == ".zgroup" else 3})
            elif kind == ".zarray" or meta.get("node_type") == "array":
                out["arrays"].append(_array_info(node, kind, meta, files, nodes))
            else:
                out["problems"].append({"path": rel, "problem": f"unknown node_type {meta.get('node_type')!r}"})
        except Exception as exc:  # noqa: BLE001 - foreign metadata: described, never raised
            out["problems"].append({"path": rel, "problem": f"metadata not understood: {type(exc).__name__}: {exc}"})
    return out


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def format_report(report: dict[str, Any]) -> str:
    """The human-readable form of :func:`inspect_store`'s result."""
    lines = [f"store {report['store']}: {len(report['arrays'])} array(s), {len(report['groups'])} group(s)"]
    for a in report["arrays"]:
        dims = f" dims ({', '.join(map(str, a['dimension_names']))})" if a.get("dimension_names") else ""
        shards = f" in shards {tuple(a['shards'])}" if a["shards"] else ""
        lines.append("")
        lines.append(f"{a['path']} (zarr v{a['zarr_format']}): {a['data_type']}, shape {tuple(a['shape'])}, "
                     f"chunks {tuple(a['chunks'] or ())}{shards}{dims}")
        ratio = f", ratio {a['ratio']:.2f}x" if a["ratio"] else ""
        lines.append(f"  stored {_size(a['stored_bytes'])} in {a['chunk_files']} of {a['chunk_grid']} "
                     f"{'shard' if a['shards'] else 'chunk'} files; decoded {_size(a['decoded_bytes'])}{ratio}; "
                     f"fill value {a['fill_value']!r}" + (f"; order {a['order']}" if a.get("order") else ""))
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
    for p in report["problems"]:
        lines.append(f"\nproblem at {p['path']}: {p['problem']}")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command line of ``numcodecs-ext inspect``."""
    parser.add_argument("store", help="a zarr v2 or v3 store: local directory, or an fsspec URL")
    parser.add_argument("--json", action="store_true", help="print JSON (for scripts)")


def run(args: argparse.Namespace) -> int:
    """Run ``numcodecs-ext inspect``: 0, or 1 when the store cannot be read or has problems."""
    try:
        report = inspect_store(args.store)
    except StoreError as exc:
        print(f"numcodecs-ext inspect: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2, default=str) if args.json else format_report(report))
    return 1 if report["problems"] else 0
