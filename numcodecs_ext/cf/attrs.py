"""CF packing attributes (``scale_factor``, ``add_offset``, ``_FillValue`` ...) as spec codecs.

A CF-packed variable stores integers ``q`` and means ``q * scale_factor + add_offset``, with the
codes listed in ``_FillValue`` and ``missing_value`` meaning "missing". The zarr spec codecs
express that as ``[scale_offset, cast_value]`` on a float array: ``cast_value`` turns the stored
integers into floats (and the missing codes into NaN), ``scale_offset`` decodes ``x / scale +
offset``. So ``scale`` is the **reciprocal** of ``scale_factor`` and ``offset`` is ``add_offset``.

Stored integers stay exactly the netCDF integers. The decoded values differ from CF's
``q * scale_factor + add_offset`` only where ``1 / scale_factor`` is not exact in the float type
(never for powers of two): by at most one unit in the last place of ``q * scale_factor`` plus one
of the result, in the unpacked dtype (measured over every int8/int16/uint8/uint16 code, see
:meth:`CFPacking.decode_difference`). The nearest float to ``1 / scale_factor`` is the best
choice of ``scale``: over every int16 code, its neighbours give more differences, never fewer.

numpy only; no xarray, numcodecs or zarr here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["PACKING_ATTRS", "CFPacking", "packing_from_attrs", "packing_from_codecs", "unpacked_dtype"]

#: attributes that describe the packing itself; they are consumed by the codecs
PACKING_ATTRS = ("scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned")


def _scalar(attrs: Mapping[str, Any], key: str) -> Any:
    value = attrs.get(key)
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"CF attribute {key}={value!r}: expected a single number, got {arr.size} values")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"CF attribute {key}={value!r}: expected a number, got {arr.dtype}")
    return arr.reshape(()).item() if arr.dtype.kind != "f" else arr.dtype.type(arr.reshape(()))


def unpacked_dtype(packed: Any, attrs: Mapping[str, Any]) -> np.dtype:
    """The float dtype CF decoding gives a packed variable (the rule xarray applies).

    ``scale_factor`` and ``add_offset`` of one float type give that type (float64 for 32-bit and
    wider packed integers); an ``add_offset`` alone, or of another type, gives float64; a
    ``scale_factor`` alone gives its own float type; with neither (only missing values), integers
    of up to 16 bits decode to float32, wider ones to float64.

    Examples
    --------
    >>> unpacked_dtype("int16", {"scale_factor": np.float32(0.01), "add_offset": np.float32(0)})
    dtype('float32')
    >>> unpacked_dtype("int16", {"scale_factor": 0.01})
    dtype('float64')
    """
    packed = np.dtype(packed)
    sf, ao = _scalar(attrs, "scale_factor"), _scalar(attrs, "add_offset")

    def float_type(v: Any) -> np.dtype | None:
        t = np.dtype(type(v)) if not isinstance(v, float) else np.dtype("float64")
        return t if t.kind == "f" and t.itemsize >= 4 else None

    if sf is not None and ao is not None:
        t_sf, t_ao = float_type(sf), float_type(ao)
        if t_sf is not None and t_sf == t_ao:
            return np.dtype("float64") if packed.itemsize >= 4 else t_sf
        return np.dtype("float64")
    if ao is not None:
        return np.dtype("float64")
    if sf is not None:
        return float_type(sf) or np.dtype("float64")
    return np.dtype("float32" if packed.itemsize <= 2 else "float64")


def _codes(attrs: Mapping[str, Any], key: str, stored: np.dtype, packed: np.dtype) -> list[int]:
    """The integer codes of ``key`` as values of the packed dtype (``_Unsigned`` reinterpreted)."""
    value = attrs.get(key)
    if value is None:
        return []
    out = []
    for v in np.atleast_1d(np.asarray(value)).ravel():
        if not np.isfinite(v) or float(v) != int(v):
            raise ValueError(f"CF attribute {key}={value!r}: {v!r} is not an integer of the packed type {stored}")
        info = np.iinfo(stored)
        if not info.min <= int(v) <= info.max:
            continue  # cannot occur in the data: nothing to map
        out.append(int(np.array(int(v), dtype=stored).view(packed)))
    return out


@dataclass(frozen=True)
class CFPacking:
    """A CF-packed variable's encoding, as spec codecs and as CF attributes.

    Parameters
    ----------
    packed : numpy.dtype
        The stored integer dtype (``_Unsigned`` applied: an int8 variable with
        ``_Unsigned = "true"`` is packed as uint8).
    unpacked : numpy.dtype
        The float dtype CF decoding gives (see :func:`unpacked_dtype`).
    scale_factor, add_offset : numpy.floating or None
        As CF states them, in the unpacked dtype.
    missing : tuple of int
        Packed codes that decode to NaN: ``_FillValue`` first, then ``missing_value``.
    """

    packed: np.dtype
    unpacked: np.dtype
    scale_factor: np.floating | None
    add_offset: np.floating | None
    missing: tuple[int, ...] = field(default=())

    @property
    def scale(self) -> np.floating:
        """``scale_offset``'s ``scale``: the nearest float to ``1 / scale_factor``."""
        one = self.unpacked.type(1)
        return one if self.scale_factor is None else one / self.scale_factor

    @property
    def offset(self) -> np.floating:
        """``scale_offset``'s ``offset``: ``add_offset``."""
        return self.unpacked.type(0) if self.add_offset is None else self.add_offset

    @property
    def fill_value(self) -> float:
        """The array's fill value: NaN when there are missing codes, else what code 0 decodes to."""
        return float("nan") if self.missing else float(self.decode(np.zeros((), self.packed)))

    def _scale_offset_config(self) -> dict[str, float] | None:
        if self.scale_factor is None and self.add_offset is None:
            return None
        return {"offset": float(self.offset), "scale": float(self.scale)}

    def _cast_value_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"data_type": self.packed.name, "rounding": "nearest-even"}
        if self.missing:
            config["scalar_map"] = {
                "encode": [["NaN", self.missing[0]]],
                "decode": [[code, "NaN"] for code in dict.fromkeys(self.missing)],
            }
        return config

    def codecs(self) -> list[dict[str, Any]]:
        """The zarr v3 ``filters``: ``scale_offset`` (if scaled) then ``cast_value``, as JSON.

        Examples
        --------
        >>> p = packing_from_attrs("int16", {"scale_factor": 0.5, "_FillValue": -1})
        >>> [c["name"] for c in p.codecs()], p.codecs()[0]["configuration"]
        (['scale_offset', 'cast_value'], {'offset': 0.0, 'scale': 2.0})
        """
        out = []
        so = self._scale_offset_config()
        if so is not None:
            out.append({"name": "scale_offset", "configuration": so})
        out.append({"name": "cast_value", "configuration": self._cast_value_config()})
        return out

    def filters(self) -> list[Any]:
        """The zarr v2 ``filters``: numcodecs_ext's ``ScaleOffset`` and ``CastValue``."""
        from ..codecs.cast_value import CastValue
        from ..codecs.scale_offset import ScaleOffset

        out: list[Any] = []
        so = self._scale_offset_config()
        if so is not None:
            out.append(ScaleOffset(**so, dtype=self.unpacked.name))
        out.append(CastValue(**self._cast_value_config(), dtype=self.unpacked.name))
        return out

    def attrs(self) -> dict[str, Any]:
        """The CF attributes of this packing (``_Unsigned`` is not needed: the packed type is
        stated as is)."""
        out: dict[str, Any] = {}
        if self.scale_factor is not None:
            out["scale_factor"] = self.scale_factor
        if self.add_offset is not None:
            out["add_offset"] = self.add_offset
        if self.missing:
            out["_FillValue"] = self.packed.type(self.missing[0])
            if len(set(self.missing)) > 1:
                out["missing_value"] = np.array(sorted(set(self.missing[1:])), dtype=self.packed)
        return out

    def decode(self, q: Any) -> np.ndarray:
        """What the codecs decode stored integers ``q`` to: ``q / scale + offset`` in the unpacked
        dtype, NaN for the missing codes."""
        q = np.asarray(q, dtype=self.packed)
        x = q.astype(self.unpacked) / self.scale + self.offset
        if self.missing:
            x = np.where(np.isin(q, self.missing), self.unpacked.type(np.nan), x)
        return x

    def cf_decode(self, q: Any) -> np.ndarray:
        """CF's (and xarray's) decoding: ``q * scale_factor + add_offset``, NaN for missing codes."""
        q = np.asarray(q, dtype=self.packed)
        x = q.astype(self.unpacked)
        if self.scale_factor is not None:
            x = x * self.scale_factor
        if self.add_offset is not None:
            x = x + self.add_offset
        if self.missing:
            x = np.where(np.isin(q, self.missing), self.unpacked.type(np.nan), x)
        return x

    def decode_difference(self) -> float:
        """The largest ``|decode(q) - cf_decode(q)|`` over every code of the packed type (exactly,
        for 8- and 16-bit types), or the bound for wider ones: one unit in the last place of the
        largest ``q * scale_factor`` plus one of the largest decoded value. 0 when
        ``scale_factor`` is a power of two."""
        info = np.iinfo(self.packed)
        if self.packed.itemsize <= 2:
            q = np.arange(info.min, info.max + 1).astype(self.packed)
            with np.errstate(invalid="ignore"):
                d = np.abs(self.decode(q).astype(np.float64) - self.cf_decode(q).astype(np.float64))
            return float(np.nanmax(d)) if d.size else 0.0
        if self.scale_factor is None or abs(np.frexp(self.scale_factor)[0]) == 0.5:
            return 0.0  # 1 / scale_factor is exact: x / scale is x * scale_factor
        ends = np.array([info.min, info.max]).astype(self.unpacked)
        product = np.abs(ends * (self.scale_factor or 1)).max()
        result = np.abs(self.cf_decode(np.array([info.min, info.max], dtype=self.packed))).max()
        return float(np.spacing(product) + np.spacing(result))


def packing_from_attrs(packed: Any, attrs: Mapping[str, Any], unpacked: Any = None) -> CFPacking | None:
    """The codecs for a variable stored as ``packed`` with CF attributes ``attrs``.

    Parameters
    ----------
    packed : dtype
        The variable's stored dtype (an integer type).
    attrs : mapping
        Its attributes as the file states them (xarray: ``ds[name].encoding`` of a decoded
        dataset, or ``.attrs`` when opened with ``mask_and_scale=False``).
    unpacked : dtype, optional
        The float dtype of the decoded values (default: CF's rule, :func:`unpacked_dtype`); give
        the dtype xarray decoded to when there is one.

    Returns
    -------
    CFPacking or None
        None when there is nothing to pack: no ``scale_factor``, ``add_offset``, ``_FillValue`` or
        ``missing_value``, or the stored dtype is not an integer (float variables with a fill value
        are stored as they are).

    Examples
    --------
    >>> p = packing_from_attrs("int16", {"scale_factor": np.float32(0.01),
    ...                                  "add_offset": np.float32(273.15), "_FillValue": -32767})
    >>> p.unpacked, p.codecs()[0]
    (dtype('float32'), {'name': 'scale_offset', 'configuration': {'offset': 273.1499938964844, 'scale': 100.0}})
    >>> p.decode([0, -32767])
    array([273.15,    nan], dtype=float32)
    """
    stored = np.dtype(packed)
    if stored.kind not in "iu" or not any(k in attrs for k in PACKING_ATTRS[:4]):
        return None
    unsigned = str(attrs.get("_Unsigned", "")).lower()
    kind = {"true": "u", "false": "i"}.get(unsigned, stored.kind)
    packed_dtype = np.dtype(f"{kind}{stored.itemsize}")
    target = unpacked_dtype(packed_dtype, attrs) if unpacked is None else np.dtype(unpacked)
    if target.kind != "f":
        raise ValueError(f"unpacked={unpacked!r}: the decoded values of a packed variable are floats")
    sf, ao = _scalar(attrs, "scale_factor"), _scalar(attrs, "add_offset")
    scale_factor = None if sf is None else target.type(sf)
    add_offset = None if ao is None else target.type(ao)
    if scale_factor is not None and not (np.isfinite(scale_factor) and scale_factor != 0):
        raise ValueError(f"CF attribute scale_factor={sf!r}: must be a finite non-zero number")
    if add_offset is not None and not np.isfinite(add_offset):
        raise ValueError(f"CF attribute add_offset={ao!r}: must be a finite number")
    with np.errstate(over="ignore"):
        reciprocal_ok = scale_factor is None or np.isfinite(target.type(1) / scale_factor)
    if not reciprocal_ok:
        raise ValueError(
            f"CF attribute scale_factor={sf!r}: its reciprocal, the codec's scale, is not a finite {target}"
        )
    missing = _codes(attrs, "_FillValue", stored, packed_dtype) + _codes(attrs, "missing_value", stored, packed_dtype)
    return CFPacking(packed_dtype, target, scale_factor, add_offset, tuple(missing))


def packing_from_codecs(data_type: Any, codecs: list[Mapping[str, Any]]) -> CFPacking:
    """The way back: the CF packing that ``[scale_offset, cast_value]`` (or ``[cast_value]``) on an
    array of ``data_type`` stands for, so that ``.attrs()`` gives the CF attributes.

    ``scale_factor`` is then ``1 / scale`` rounded to the float type; that is exact when ``scale``
    is a power of two, and otherwise the decoded values differ as described in the module.

    Examples
    --------
    >>> p = packing_from_codecs("float32", [
    ...     {"name": "scale_offset", "configuration": {"offset": 10, "scale": 4}},
    ...     {"name": "cast_value", "configuration": {"data_type": "uint8",
    ...      "scalar_map": {"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}}}])
    >>> p.attrs()
    {'scale_factor': np.float32(0.25), 'add_offset': np.float32(10.0), '_FillValue': np.uint8(255)}
    """
    target = np.dtype(data_type)
    names = [c.get("name") for c in codecs]
    if names not in (["scale_offset", "cast_value"], ["cast_value"]) or target.kind != "f":
        raise ValueError(
            f"codecs {names} on {target}: CF packing is [scale_offset, cast_value] or [cast_value] "
            "on a float array"
        )
    conf = [dict(c.get("configuration") or {}) for c in codecs]
    cv = conf[-1]
    packed = np.dtype(cv["data_type"])
    if packed.kind not in "iu":
        raise ValueError(f"cast_value data_type={cv['data_type']!r}: CF packs into integer types")
    smap = cv.get("scalar_map") or {}
    enc = [int(v) for k, v in smap.get("encode", []) if str(k).lower() == "nan"]
    dec = [int(k) for k, v in smap.get("decode", []) if str(v).lower() == "nan"]
    missing = tuple(dict.fromkeys(enc[:1] + dec))
    scale_factor = add_offset = None
    if len(conf) == 2:
        offset, scale = conf[0].get("offset", 0), conf[0].get("scale", 1)
        scale_factor = None if float(scale) == 1 else target.type(1) / target.type(scale)
        add_offset = None if float(offset) == 0 else target.type(offset)
    return CFPacking(packed, target, scale_factor, add_offset, missing)
