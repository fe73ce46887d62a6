"""What ``convert`` refuses before writing anything: the names and netCDF types a zarr store (as
xarray writes and reads it) cannot hold, each said with the variable, its type and a way out.

The whole class, walked over netCDF's types and names:

* names: a zarr metadata document's name (``zarr.json``, ``.zarray``, ``.zattrs``, ``.zgroup``,
  ``.zmetadata``), ``.`` and ``..``, a name with ``/`` or ``\\`` (a path in a store), and the
  journal's prefix at the root, for variables and groups alike;
* types: variable-length (ragged) arrays, which neither zarr format nor xarray's zarr backend
  holds; compound types in zarr v3 (no structured data type there) and nested compound types in
  zarr v2 (zarr-python has no data type for them); fixed-length bytes (``char``) with a
  ``_FillValue`` in zarr v3, whose fill value xarray cannot read back from zarr v3.

What is kept: enums (their integer codes, as xarray reads them), strings, char arrays, compound
types in zarr v2 (packed: netCDF-4's alignment padding is not data).

>>> from numcodecs_ext.cf.representable import name_problem
>>> name_problem("zarr.json", root=True)
'its name is the name of a zarr metadata document'
>>> name_problem("temperature", root=True) is None
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..store.errors import ToolError

__all__ = ["METADATA_NAMES", "hidden_note", "hidden_on_read", "name_problem", "packed_dtype", "refuse_ragged",
           "refuse_unrepresentable"]

#: the names of the metadata documents of zarr v2 and v3 (an array or group so named is a key clash)
METADATA_NAMES = frozenset({"zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata"})


def name_problem(name: str, *, root: bool) -> str | None:
    """Why ``name`` cannot name an array or group of a store (None: it can)."""
    from ..store.journal import CONVERT_JOURNAL as PREFIX

    if name in METADATA_NAMES:
        return "its name is the name of a zarr metadata document"
    if name in (".", "..", ""):
        return "its name is a relative path in a store"
    if "/" in name or "\\" in name:
        return "its name holds a path separator ('/' or '\\\\')"
    if root and name == PREFIX:
        return "its name is where convert keeps its journal"
    return None


def hidden_on_read(name: str, *, group: bool, zarr_format: int) -> bool:
    """Whether xarray's zarr backend leaves the attribute ``name`` out when it reads a group
    (``group``) or an array of a store of ``zarr_format``: every ``_nc*`` (any case) of a group,
    and in zarr v2 of an array too, with ``_ARRAY_DIMENSIONS`` (it rewrites that one)."""
    if name.lower().startswith("_nc"):
        return group or zarr_format == 2
    return not group and zarr_format == 2 and name == "_ARRAY_DIMENSIONS"


def hidden_note(names: list[str]) -> str:
    """The summary's note on attributes that xarray does not show once in the store."""
    kept = [n for n in names if n != "_ARRAY_DIMENSIONS"]
    notes = []
    if kept:
        notes.append(f"attribute{'s' if len(kept) > 1 else ''} {', '.join(kept)}: kept in the store, where "
                     "xarray's zarr reader hides it (it takes _nc* for NCZarr's own), as after xarray's to_zarr")
    if len(kept) < len(names):
        notes.append("attribute _ARRAY_DIMENSIONS: not kept, zarr v2 holds the dimension names under that name")
    return "; ".join(notes)


def packed_dtype(dtype: np.dtype) -> np.dtype:
    """A compound type without its alignment padding: its fields in order, each at the next byte."""
    return np.dtype([(n, dtype.fields[n][0]) for n in dtype.names])


def refuse_unrepresentable(raw: Any, group: str | None, zarr_format: int) -> None:
    """ToolError for the first name or type of the group ``group`` of the source (``raw``: the
    group opened without masking or character concatenation) that convert cannot write."""
    prefix = "" if group is None else group + "/"
    if group:
        parts = group.split("/")
        for i, part in enumerate(parts):
            why = name_problem(part, root=i == 0)
            if why:
                raise ToolError(f"group {'/'.join(parts[:i + 1])!r}: {why}, which a zarr store cannot hold; "
                                "rename it first (e.g. ncrename -g), then convert again")
    for name, var in raw.variables.items():
        path = prefix + str(name)
        why = name_problem(str(name), root=group is None)
        if why:
            raise ToolError(f"variable {path!r}: {why}, which a zarr store cannot hold; rename it first "
                            f"(e.g. ncrename -v '{name},new_name'), then convert again")
        _refuse_type(path, var, zarr_format)


def _refuse_type(path: str, var: Any, zarr_format: int) -> None:
    dtype = var.dtype
    if dtype.kind == "V" and dtype.names is None:
        raise ToolError(f"variable {path!r} has an opaque type of {dtype.itemsize} bytes, which xarray's zarr "
                        f"backend does not write; drop it (ncks -x -v {path}), then convert")
    if dtype.kind == "V" and any(dtype.fields[n][0].names is not None or dtype.fields[n][0].subdtype is not None
                                 for n in dtype.names):
        raise ToolError(f"variable {path!r} has a compound type with nested or array members ({_fields(dtype)}), "
                        f"which zarr-python stores in no format; drop it (ncks -x -v {path}), then convert")
    if dtype.kind == "V" and zarr_format == 3:
        raise ToolError(f"variable {path!r} has a compound (structured) type ({_fields(dtype)}), "
                        "which zarr v3 does not define: convert with --zarr-format 2, or drop the variable first")
    if dtype.kind == "S" and zarr_format == 3 and "_FillValue" in var.attrs:
        raise ToolError(f"variable {path!r} is char (fixed-length bytes) with a _FillValue, which xarray cannot "
                        "read back from zarr v3: convert with --zarr-format 2, or remove its _FillValue first")


def refuse_ragged(nc: Any) -> None:
    """ToolError for the first variable-length (ragged) variable of the open netCDF4 Dataset (or
    h5netcdf File) ``nc`` or its groups: xarray reads one with its base type as dtype (or fails),
    so only the file's own type tells."""
    todo = [nc]
    while todo:
        g = todo.pop(0)
        todo.extend(g.groups.values())
        for name, var in g.variables.items():
            base = _vlen_base(var)
            if base is not None:
                path = f"{getattr(g, 'path', None) or g.name}/{name}".strip("/")
                raise ToolError(f"variable {path!r} has a variable-length (ragged) type, vlen of {base}: "
                                f"zarr stores no ragged arrays; drop it (ncks -x -v {path}) or pad it, then convert")


def _vlen_base(var: Any) -> Any:
    """The base type of a ragged (vlen, not string) netCDF4 or h5netcdf variable, else None."""
    kind = getattr(var, "datatype", None)
    if type(kind).__module__.startswith("netCDF4") and type(kind).__name__ == "VLType" and kind.dtype is not str:
        return np.dtype(kind.dtype)
    dtype = getattr(var, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "O" and dtype.metadata:
        base = dtype.metadata.get("vlen")  # h5py's mark of a vlen type
        if base is not None and base not in (str, bytes):
            return np.dtype(base)
    return None


def _fields(dtype: np.dtype) -> str:
    """``a: int8, b: float64`` (nested: ``n: {p: int16, q: float32}``)."""
    out = []
    for n in dtype.names:
        sub = dtype.fields[n][0]
        if sub.names is not None:
            out.append(f"{n}: {{{_fields(sub)}}}")
        elif sub.subdtype is not None:
            out.append(f"{n}: {sub.subdtype[0]}{list(sub.subdtype[1])}")
        else:
            out.append(f"{n}: {sub}")
    return ", ".join(out)
