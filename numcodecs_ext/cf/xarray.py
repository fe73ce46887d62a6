"""``encoding=`` for ``xarray.Dataset.to_zarr`` that stores CF-packed variables with the spec codecs.

xarray keeps a variable's packing in ``.encoding`` when it decodes a netCDF file. Handing that to
``to_zarr`` as is makes xarray pack the data itself and store CF attributes; readers then need CF
decoding. With :func:`zarr_encoding`, the packing moves into the zarr array's codecs instead: the
array is float, its filters are ``[scale_offset, cast_value]``, and any zarr reader (``xr.open_zarr``,
zarr-python, zarrs) gets the decoded values.

The fill value is chosen so that it can never be mistaken for data. In zarr v2, xarray reads the
array's fill value as ``_FillValue`` and masks every value equal to it; the helper makes it NaN,
which no code decodes to unless the code is missing anyway. In zarr v3 xarray keeps the fill value
apart from ``_FillValue``: it is NaN where a code is missing and otherwise what code 0 decodes to
(a fill value must survive the codecs), with no ``_FillValue`` attribute.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .attrs import packing_from_attrs
from .compress import DEFAULT

__all__ = ["zarr_encoding"]


def zarr_encoding(
    ds: Any,
    *,
    zarr_format: int = 3,
    variables: Iterable[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """The ``encoding=`` argument of ``ds.to_zarr`` for every CF-packed variable of ``ds``.

    Parameters
    ----------
    ds : xarray.Dataset
        Opened from a CF-packed file with CF decoding on (xarray's default), so that each packed
        variable's ``.encoding`` holds ``scale_factor``, ``add_offset``, ``_FillValue`` and ``dtype``.
    zarr_format : {3, 2}
        3: the spec codecs as zarr v3 filters. 2: numcodecs_ext's ``ScaleOffset`` and ``CastValue``
        as numcodecs filters.
    variables : iterable of str, optional
        Only these variables (default: every data variable and coordinate that is packed).
    extra : mapping, optional
        More encoding keys for every packed variable, e.g. ``{"chunks": (1, 180, 360)}`` or
        ``{"compressors": ...}`` (default: blosc with zstd and a shuffle over the stored type, as
        ``convert`` writes; see :mod:`numcodecs_ext.cf.compress`).

    Returns
    -------
    dict
        ``{name: encoding}`` for the packed variables (a ``scale_factor`` or ``add_offset`` in
        their encoding). Others are absent and keep xarray's own encoding: times, and counts or
        flags with only ``_FillValue``/``missing_value``, stay integers with their CF attributes.
        Two kinds of variables that are not packed get an entry too, where xarray's own encoding
        would not read back as it read the file: ``_Unsigned`` integers (stored as the unsigned
        type) and variables whose CF attributes xarray cannot write again (stored as decoded).
        Values read back through plain ``xr.open_zarr`` equal xarray's decoding of the file, with
        the same dtype and missing values, within
        :meth:`~numcodecs_ext.cf.CFPacking.decode_bound` (0 for power-of-two scale factors).

    Raises
    ------
    ValueError
        A packed variable the codecs cannot decode as xarray does (e.g. an integer
        ``scale_factor``), one whose decoded values do not encode back to its codes
        (:meth:`~numcodecs_ext.cf.CFPacking.reencodes`), or one not decoded (open the file with
        CF decoding on); the message names it and the way out.

    Examples
    --------
    >>> import numpy as np, xarray as xr, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> raw = xr.Dataset({"t": ("x", np.array([0, 1, -32767], "int16"),
    ...     {"scale_factor": np.float32(0.5), "add_offset": np.float32(270), "_FillValue": np.int16(-32767)})})
    >>> raw.to_netcdf(os.path.join(d, "t.nc"))
    >>> ds = xr.open_dataset(os.path.join(d, "t.nc"))
    >>> enc = zarr_encoding(ds)
    >>> [f["name"] for f in enc["t"]["filters"]]
    ['scale_offset', 'cast_value']
    >>> _ = ds.to_zarr(os.path.join(d, "t.zarr"), zarr_format=3, encoding=enc, consolidated=False)
    >>> xr.open_zarr(os.path.join(d, "t.zarr"), consolidated=False).t.values
    array([270. , 270.5,   nan], dtype=float32)
    """
    if zarr_format not in (2, 3) or isinstance(zarr_format, bool):
        raise ValueError(f"zarr_format={zarr_format!r}: valid values are 2 and 3")
    names = list(variables) if variables is not None else list(ds.variables)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        if name not in ds.variables:
            raise ValueError(f"variables: {name!r} is not a variable of the dataset; it has {list(ds.variables)}")
        var = ds.variables[name]
        enc = var.encoding
        packed = enc.get("dtype")
        if packed is None:
            continue
        if not ("scale_factor" in enc or "add_offset" in enc):
            plain = _unpacked_encoding(name, var)
            if plain is not None:
                out[name] = {**plain, **(extra or {})}
            continue
        if np.dtype(packed).kind not in "iuf" or var.dtype.kind in "mMO":
            continue  # times (and what xarray decodes to objects) stay as xarray encodes them
        if var.dtype.kind != "f":
            raise ValueError(
                f"variable {name!r} is {var.dtype} with CF packing in its encoding: open the file "
                "with CF decoding on (xarray's default) so that its values are the unpacked floats")
        try:
            packing = packing_from_attrs(packed, enc, unpacked=var.dtype)
        except ValueError as e:
            raise ValueError(f"variable {name!r}: {e}; leave it out (variables=...) to let xarray pack it "
                             "with CF attributes") from None
        if packing is None:
            continue
        if not packing.reencodes():
            raise ValueError(
                f"variable {name!r}: its decoded {packing.unpacked} values do not encode back to the file's "
                f"codes (add_offset={float(packing.offset)!r}); use numcodecs_ext.cf.convert, or leave it out "
                "(variables=...); see docs/cf.md")
        entry: dict[str, Any] = {
            "dtype": packing.unpacked,
            "filters": packing.codecs() if zarr_format == 3 else packing.filters(),
            # blosc with a shuffle over the stored integers: no bigger than the netCDF file
            **DEFAULT.encoding(zarr_format, packing.packed.itemsize),
        }
        if zarr_format == 3:
            entry["_FillValue"] = None  # no attribute: xarray would mask values equal to it
            entry["fill_value"] = packing.fill_value
        else:
            entry["_FillValue"] = float("nan")  # zarr v2's fill value, masked by xarray: no code's value
        chunks = enc.get("chunks") or enc.get("preferred_chunks") and tuple(
            enc["preferred_chunks"].get(d) for d in var.dims)
        if chunks and all(chunks) and len(chunks) == var.ndim and var.chunks is None:
            entry["chunks"] = tuple(chunks)
        entry.update(extra or {})
        out[name] = entry
    return out


def _unpacked_encoding(name: str, var: Any) -> dict[str, Any] | None:
    """An encoding for a variable that is not packed, where xarray's own would not read back as
    xarray read the file: ``_Unsigned`` integers (xarray's zarr round trip gives the signed type)
    become the unsigned type with the fill value it reads; a variable whose CF attributes xarray
    cannot write again (a text ``missing_value`` on integers) is stored as xarray decoded it.
    None: xarray's own encoding is right."""
    from .rules import fill_values, stored_dtype

    enc = var.encoding
    raw = np.dtype(enc["dtype"])
    if "_Unsigned" in enc and raw.kind in "iu" and var.dtype.kind in "iuf":
        stored = stored_dtype(raw, enc)
        entry: dict[str, Any] = {"dtype": stored}
        fills, _ = fill_values({k: enc[k] for k in ("_FillValue", "_Unsigned") if k in enc}, raw)
        if fills:
            entry["_FillValue"] = stored.type(fills[0])
        if "missing_value" in enc:
            entry["missing_value"] = enc["missing_value"]
        return entry
    import xarray as xr

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            xr.conventions.encode_cf_variable(var[tuple(slice(0, 1) for _ in var.dims)], name=name)
    except Exception:  # noqa: BLE001 - whatever xarray raises, it cannot write these attributes back
        return {"dtype": var.dtype, "_FillValue": None} if var.dtype.kind in "iufb" else None
    return None
