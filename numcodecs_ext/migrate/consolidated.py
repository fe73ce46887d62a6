"""Consolidated metadata across a migration: a zarr v2 group that had it (``.zmetadata``, which
xarray reads first and warns about when missing) gets zarr v3's, inline in its ``zarr.json``, as
``zarr.consolidate_metadata`` writes it; it is part of that document, so it is written last with
it, and never claims nodes that are not yet written."""

from __future__ import annotations

import json
from typing import Any

from .index import key_in, same_json

__all__ = ["consolidate", "stale_entries", "v2_consolidated_disagrees"]

def consolidate(nodes: dict[str, dict[str, Any]], group: str) -> dict[str, Any]:
    """The ``consolidated_metadata`` zarr writes into the ``zarr.json`` of ``group`` over the
    nodes ``{path: zarr.json metadata}`` (those below ``group`` are used), worked out in memory by
    ``zarr.consolidate_metadata`` itself."""
    import warnings

    import zarr
    from zarr.buffer import default_buffer_prototype
    from zarr.storage import MemoryStore

    prototype = default_buffer_prototype()
    below = {p: {k: v for k, v in m.items() if k != "consolidated_metadata"} for p, m in nodes.items()
             if p == group or not group or p.startswith(group + "/")}
    contents = {key_in(p, "zarr.json"): prototype.buffer.from_bytes(json.dumps(m).encode())
                for p, m in below.items()}
    store = MemoryStore(contents)  # (zarr keeps and writes this very dict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note that v3 consolidation is not in the spec yet
        zarr.consolidate_metadata(store, path=group or None, zarr_format=3)
    written = json.loads(contents[key_in(group, "zarr.json")].to_bytes())
    return written["consolidated_metadata"]


def stale_entries(group_doc: Any, group: str, nodes: dict[str, Any]) -> list[str]:
    """The nodes whose entry in ``group_doc``'s consolidated metadata is not what zarr would
    consolidate from their ``zarr.json`` now (``nodes``: path -> metadata), or that are missing
    from one of the two."""
    entries = ((group_doc.get("consolidated_metadata") or {}).get("metadata")
               if isinstance(group_doc, dict) else None)
    if not isinstance(entries, dict):
        return []
    try:
        now = consolidate({p: m for p, m in nodes.items() if isinstance(m, dict)}, group)["metadata"]
    except Exception:  # noqa: BLE001 - zarr cannot consolidate them: every entry is in doubt
        return sorted(key_in(group, rel) for rel in entries) or [group or "/"]
    return sorted(key_in(group, rel) for rel in set(entries) | set(now)
                  if not same_json(entries.get(rel), now.get(rel)))


def v2_consolidated_disagrees(location: Any, index: Any) -> list[str]:
    """The v2 documents (``.zarray``, ``.zattrs``, ``.zgroup``) that a ``.zmetadata`` of the
    indexed store says otherwise than the document itself, lists without it, or lists and the
    store does not have."""
    from .index import read_json

    out = []
    for key in sorted(index.v2_files):
        group, _, name = key.rpartition("/")
        if name != ".zmetadata":
            continue
        consolidated = read_json(location, key)
        entries = consolidated.get("metadata") if isinstance(consolidated, dict) else None
        if not isinstance(entries, dict):
            out.append(key)
            continue
        below = {k for k in index.v2_files if k.rpartition("/")[2] != ".zmetadata"
                 and (not group or k.startswith(group + "/"))}
        for doc in sorted(below | {key_in(group, rel) for rel in entries}):
            rel = doc[len(group) + 1:] if group else doc
            stored = read_json(location, doc) if doc in index.v2_files else \
                ({} if doc.endswith(".zattrs") else None)  # (no .zattrs: no attributes)
            if not same_json(_plain(entries.get(rel)), _plain(stored)):
                out.append(doc)
    return out


def _plain(doc: Any) -> Any:
    # (zarr-python 3 adds an empty consolidated_metadata to the entries of v2 subgroups)
    return {k: v for k, v in doc.items() if k != "consolidated_metadata"} if isinstance(doc, dict) else doc
