"""What ``convert`` writes for each variable of a netCDF group, decided before anything is written.

Every variable takes one of three routes, chosen so that xarray decodes the result exactly as it
decodes the source:

``packed``
    An integer (or float) variable with ``scale_factor``/``add_offset`` that the spec codecs can
    decode as xarray does (:func:`~numcodecs_ext.cf.packing_from_attrs`): a float zarr array with
    ``[scale_offset, cast_value]`` over the file's own stored values. It is written as the stored
    type, then declared as the float array (:func:`declare_packing`: the chunk bytes are those the
    codecs produce, so they stay as they are).
``as is``
    Everything else that xarray decodes from attributes: times (``units = "... since ..."``, with
    their ``_FillValue`` giving NaT), counts and flags with ``_FillValue``/``missing_value``,
    floats, strings. Stored values and CF attributes are copied, so the integers stay integers
    and xarray applies the same decoding to the store.
``decoded``
    A packing the codecs cannot state as xarray decodes it (a ``scale_factor`` of an integer type,
    a zero ``scale_factor``, float64 data decoded to float32 ...): the values xarray decodes are
    stored as they are, and the summary says why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.scalar_json import scalar_to_json
from ..store.errors import ToolError, UsageError
from .attrs import CFPacking, packing_from_attrs, unpacked_attrs
from .compress import Compressor
from .representable import hidden_note, hidden_on_read, packed_dtype, refuse_unrepresentable
from .rules import show_attribute, fill_values, stored_dtype

__all__ = ["MAX_CHUNK_BYTES", "GroupPlan", "VariablePlan", "auto_chunks", "declare_packing", "memory_itemsize",
           "plan_group"]

#: the largest chunk convert writes (blosc's limit is 2 GiB; memory holds a few per worker)
MAX_CHUNK_BYTES = 1 << 30


def auto_chunks(shape: tuple[int, ...], itemsize: int, target: int = 8 << 20) -> tuple[int, ...]:
    """Chunks of about ``target`` bytes: trailing dimensions whole, leading ones split.

    Examples
    --------
    >>> auto_chunks((8760, 721, 1440), 4)
    (2, 721, 1440)
    >>> auto_chunks((10, 10), 8), auto_chunks((0, 5), 4)
    ((10, 10), (1, 5))
    """
    chunks = [max(1, n) for n in shape]
    for i in range(len(chunks)):
        if math.prod(chunks[i:]) * itemsize <= target:
            break
        rest = math.prod(chunks[i + 1:]) * itemsize
        if rest >= target:
            chunks[i] = 1
            continue
        chunks[i] = max(1, target // rest)
        break
    return tuple(chunks)


@dataclass
class VariablePlan:
    """One variable's route (``packed``, ``as is`` or ``decoded``), chunks and notes."""

    name: str
    route: str
    dtype: np.dtype
    stored: np.dtype
    chunks: tuple[int, ...] | None
    packing: CFPacking | None = None
    notes: list[str] = field(default_factory=list)
    itemsize: int = 0  # bytes per value in memory (text: xarray's <U of the longest string seen)


@dataclass
class GroupPlan:
    """The dataset to write for one group (``None``: the root) and its ``to_zarr`` encoding."""

    group: str | None
    dataset: Any
    encoding: dict[str, dict[str, Any]]
    variables: dict[str, VariablePlan]
    zarr_format: int = 3
    notes: list[str] = field(default_factory=list)


def plan_group(raw: Any, decoded: Any, group: str | None, *, chunks: Mapping[str, int] | None,
               chunk_bytes: int, compressor: Compressor, zarr_format: int) -> GroupPlan:
    """The plan for one group: ``raw`` is the group opened with ``mask_and_scale=False`` and no
    time decoding, ``decoded`` the same group as xarray decodes it by default (both lazily)."""
    import xarray as xr

    variables: dict[str, Any] = {}
    encoding: dict[str, dict[str, Any]] = {}
    plans: dict[str, VariablePlan] = {}
    prefix = "" if group is None else group + "/"
    refuse_unrepresentable(raw, group, zarr_format)
    for name, var in raw.variables.items():
        dec = decoded.variables[name]
        plan, out = _route(prefix + str(name), var, dec)
        if plan.route != "decoded":  # (that route has tried its decoding)
            _refuse_undecodable(plan.name, dec)
        hidden = [k for k in out.attrs if hidden_on_read(str(k), group=False, zarr_format=zarr_format)]
        if hidden:
            plan.notes.append(hidden_note(hidden))
        if out.dtype.kind == "V":  # a compound type: its fields, without netCDF-4's alignment padding
            out = out.astype(packed_dtype(out.dtype))
        if zarr_format == 3 and out.dtype.kind == "U":
            out = out.astype(object)  # zarr v3's specified "string" type (fixed-width text has none)
        if zarr_format == 3 and out.dtype.kind in "OT" and "_FillValue" in out.attrs:
            out = out.copy(deep=False)
            out.attrs = _text_fill_as_missing(plan.name, dict(out.attrs), plan.notes)
        elif zarr_format == 3 and out.dtype.kind == "S":
            plan.notes.append("fixed-length bytes: zarr v3 specifies no such type; zarr-python stores them "
                              "(null_terminated_bytes), other implementations may not read them "
                              "(--zarr-format 2 has them in its spec)")
        enc: dict[str, Any] = {}
        numeric = plan.dtype.kind in "biufcmM"
        plan.itemsize = itemsize = max(memory_itemsize(var), plan.dtype.itemsize if numeric else 8)
        if out.ndim:
            sizes = auto_chunks(out.shape, itemsize, chunk_bytes)
            sizes = tuple((chunks or {}).get(d, s) for d, s in zip(out.dims, sizes))
            sizes = tuple(min(max(1, n), s) for n, s in zip(out.shape, sizes))
            if len(set(out.dims)) < out.ndim:  # a repeated dimension (a D1 x D1 matrix): one size per name
                per_dim = {d: min(s for d2, s in zip(out.dims, sizes) if d2 == d) for d in out.dims}
                sizes = tuple(per_dim[d] for d in out.dims)
            if math.prod(sizes) * itemsize > MAX_CHUNK_BYTES:
                raise UsageError(f"--chunks: variable {plan.name!r} would get chunks {sizes} of "
                                 f"{math.prod(sizes) * itemsize / 2**20:.0f} MiB; the most is "
                                 f"{MAX_CHUNK_BYTES >> 20} MiB")
            plan.chunks = sizes
            enc["chunks"] = sizes
            if name not in raw.indexes:
                out = out.chunk(dict(zip(out.dims, sizes)))
        if out.dtype.kind in "biufmM":
            enc.update(compressor.encoding(zarr_format, out.dtype.itemsize))
        if plan.route == "packed":
            enc["_FillValue"] = None  # the fill value is the float array's, set by declare_packing
        encoding[str(name)] = enc
        variables[name] = out
        plans[str(name)] = plan
    ds = xr.Dataset(variables, attrs=dict(raw.attrs))
    ds = ds.set_coords([c for c in raw.coords if c in ds.variables])
    hidden = [k for k in raw.attrs if hidden_on_read(str(k), group=True, zarr_format=zarr_format)]
    return GroupPlan(group, ds, encoding, plans, zarr_format, [hidden_note(hidden)] if hidden else [])


def _refuse_undecodable(name: str, dec: Any) -> None:
    """ToolError, before anything is written, for a variable whose values xarray cannot read or
    decode (``_Encoding`` on numbers or on text netCDF already decoded, a compression filter HDF5
    has no plugin for): its first value is read now, as the runs read every one; a failure there
    would fail every rerun too."""
    if dec.size == 0:
        return
    try:
        dec[{d: slice(0, 1) for d in dec.dims}].values  # noqa: B018 - decoding it is the check
    except (OSError, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - whatever the decoding raises, xarray cannot read it
        why = str(e).split("\n")[0][:80]
        way = ("HDF5 has no plugin for its compression filter here: install one (HDF5_PLUGIN_PATH)"
               if "filter" in why.lower() else "fix its CF attributes (e.g. _Encoding)")
        raise ToolError(f"variable {name!r}: xarray cannot read its values ({type(e).__name__}: {why}); {way} or "
                        f"drop it (ncks -x -v {name}), then convert; nothing was written") from None


def memory_itemsize(var: Any, samples: int = 3, count: int = 1000) -> int:
    """The bytes one value of ``var`` takes in memory. Text of variable length: xarray reads it as
    fixed-width ``<U`` (4 bytes per character of the longest string of what it reads), so the
    longest of ``samples`` runs of ``count`` values (start, middle, end), read now, times 4, and
    twice that for the room a longer string elsewhere may need."""
    dtype = var.dtype
    if dtype.kind not in "OT":
        return max(1, dtype.itemsize)
    if var.size == 0:
        return 8
    flat_n = var.shape[0] if var.ndim else 1
    per_row = max(1, math.prod(var.shape[1:])) if var.ndim else 1
    rows = max(1, min(flat_n, -(-count // per_row)))
    longest = 0
    for start in sorted({0, max(0, flat_n // 2 - rows // 2), max(0, flat_n - rows)})[:samples]:
        index = (slice(start, start + rows),) if var.ndim else ()
        values = np.asarray(var[index].values, dtype=object).reshape(-1)
        longest = max([longest] + [len(v) for v in values if isinstance(v, (str, bytes))])
    return max(8, 8 * longest)


def _route(name: str, var: Any, dec: Any) -> tuple[VariablePlan, Any]:
    """The route of one variable and the variable to write."""
    raw_dtype = var.dtype
    attrs = dict(var.attrs)
    scaled = "scale_factor" in attrs or "add_offset" in attrs
    if scaled and raw_dtype.kind in "iuf" and dec.dtype.kind not in "mMO":
        try:
            packing = packing_from_attrs(raw_dtype, attrs, unpacked=dec.dtype if dec.dtype.kind == "f" else None)
        except ValueError as e:
            return _decoded(name, dec, str(e))
        if packing is None or packing.unpacked != dec.dtype:
            return _decoded(name, dec, f"xarray decodes it to {dec.dtype}")
        out = var.astype(packing.packed) if packing.packed != raw_dtype else var
        out = out.copy(deep=False)
        out.attrs = unpacked_attrs(attrs, packing, raw_dtype)
        out.encoding = {}
        plan = VariablePlan(name, "packed", packing.unpacked, packing.packed, None, packing, list(packing.notes))
        return plan, out
    out = var.copy(deep=False)
    out.encoding = {}
    notes: list[str] = []
    out.attrs = _as_is_attrs(attrs, raw_dtype, notes)
    return VariablePlan(name, "as is", dec.dtype, raw_dtype, None, None, notes), out


def _decoded(name: str, dec: Any, why: str) -> tuple[VariablePlan, Any]:
    if dec.dtype.kind not in "biufmM":
        raise ToolError(f"variable {name!r}: {why}; xarray decodes its numbers to {dec.dtype}, which is no "
                        "decoding: fix the attributes (e.g. with ncatted) and convert again")
    try:
        dec[tuple(slice(0, 1) for _ in dec.dims)].values  # noqa: B018 - xarray decodes lazily: try it
    except Exception as e:  # noqa: BLE001 - whatever xarray raises, the file cannot be decoded
        raise ToolError(f"variable {name!r}: xarray cannot decode it ({type(e).__name__}: {e})") from None
    out = dec.copy(deep=False)
    out.encoding = {}
    note = f"stored as xarray decodes it, not packed: {why}"
    return VariablePlan(name, "decoded", dec.dtype, dec.dtype, None, None, [note]), out


def _as_is_attrs(attrs: dict[str, Any], dtype: np.dtype, notes: list[str]) -> dict[str, Any]:
    """A copied variable's attributes, with a ``_FillValue`` that zarr could not hold as the
    array's fill value made harmless in the way xarray reads it: one that is no value at all on
    an integer type (xarray ignores it) is dropped; one no code can equal (a fraction, out of
    range) or one of several values moves to ``missing_value``, where it still makes xarray
    decode to floats and marks the same nothing."""
    out = dict(attrs)
    if "_FillValue" not in out or dtype.kind not in "iu":
        return out
    raw = out["_FillValue"]
    values = [v for v in np.ravel(np.asarray(raw))]
    kept, _ = fill_values({"_FillValue": raw}, dtype)
    if not kept:
        del out["_FillValue"]
        notes.append(f"_FillValue={show_attribute(raw)} is not a value of {dtype}: ignored (as xarray does), "
                     "not copied")
        return out
    if len(values) == 1 and _fits(values[0], dtype):
        out["_FillValue"] = dtype.type(values[0])
        signed = stored_dtype(dtype, attrs)
        if dtype.kind == "u" and signed.kind == "i":
            # xarray reads the _FillValue of an _Unsigned="false" variable as a value of the signed
            # type (a netCDF file's own uint8 128 converts; zarr's JSON 128 overflows int8): the
            # same bits, written as the signed value
            out["_FillValue"] = np.asarray(out["_FillValue"]).view(signed)[()]
        return out
    del out["_FillValue"]
    existing = [] if out.get("missing_value") is None else list(np.ravel(np.asarray(out["missing_value"])))
    out["missing_value"] = np.array(existing + kept, dtype=np.result_type(*[np.asarray(v) for v in existing + kept]))
    notes.append(f"_FillValue={show_attribute(raw)} cannot be the fill value of a {dtype} array: kept as "
                 "missing_value, which xarray reads the same way")
    return out


def _text_fill_as_missing(name: str, attrs: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """A text variable's ``_FillValue`` as ``missing_value`` for zarr v3, whose string type has no
    fill value xarray can write or read as ``_FillValue``; xarray masks ``missing_value`` the same."""
    fill = attrs.pop("_FillValue")
    other = attrs.get("missing_value")
    if other is not None and str(other) != str(fill):
        raise ToolError(f"variable {name!r}: text with _FillValue={str(fill)!r} and missing_value={str(other)!r}, "
                        "which zarr v3's string type cannot hold both: convert with --zarr-format 2")
    attrs["missing_value"] = fill
    notes.append(f"_FillValue={str(fill)!r} kept as missing_value (zarr v3's string type has no fill value "
                 "xarray reads), which xarray reads the same way")
    return attrs


def _fits(value: Any, dtype: np.dtype) -> bool:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return False
    if not math.isfinite(f) or f != int(f):
        return False
    info = np.iinfo(dtype)
    return info.min <= int(value) <= info.max


def declare_packing(documents: dict[str, bytes], path: str, packing: CFPacking, zarr_format: int) -> None:
    """Turn the staged metadata of the integer array at ``path`` into the float array with the
    packing's codecs; its chunk bytes are what ``[scale_offset, cast_value]`` encode to, so they
    stay. zarr v3's fill value is :attr:`CFPacking.fill_value`; zarr v2's is NaN, which xarray
    reads as ``_FillValue`` and which no code decodes to unless it is missing anyway."""
    prefix = "" if not path else path.rstrip("/") + "/"
    if zarr_format == 3:
        key = prefix + "zarr.json"
        meta = json.loads(documents[key])
        meta["data_type"] = packing.unpacked.name
        meta["codecs"] = packing.codecs() + meta["codecs"]
        meta["fill_value"] = scalar_to_json(packing.fill_value, packing.unpacked)
        meta.get("attributes", {}).pop("_FillValue", None)
    else:
        key = prefix + ".zarray"
        meta = json.loads(documents[key])
        meta["dtype"] = packing.unpacked.str
        meta["filters"] = [c.get_config() for c in packing.filters()] + (meta.get("filters") or [])
        meta["fill_value"] = "NaN"
        attrs_key = prefix + ".zattrs"
        if attrs_key in documents:
            attrs = json.loads(documents[attrs_key])
            if attrs.pop("_FillValue", None) is not None:
                documents[attrs_key] = json.dumps(attrs, indent=4).encode()
    documents[key] = json.dumps(meta, indent=4).encode()
