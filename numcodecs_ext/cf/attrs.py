"""CF packing attributes (``scale_factor``, ``add_offset``, ``_FillValue`` ...) as spec codecs.

A CF-packed variable stores values ``q`` (integers, or floats) and means ``q * scale_factor +
add_offset``, with the codes listed in ``_FillValue`` and ``missing_value`` meaning "missing". The
zarr spec codecs express that as ``[scale_offset, cast_value]`` on a float array: ``cast_value``
turns the stored values into floats (and the missing codes into NaN), ``scale_offset`` decodes
``x / scale + offset``. So ``scale`` is the **reciprocal** of ``scale_factor`` and ``offset`` is
``add_offset``.

Which dtype the values decode to and which codes are missing follow xarray's CF decoding exactly
(:mod:`numcodecs_ext.cf.rules`): a ``_FillValue`` that no code can equal (NaN on an integer type,
a value out of range) marks nothing, an unsigned ``missing_value`` on an ``_Unsigned`` variable
marks its code, and so on. Variables with only ``_FillValue``/``missing_value`` (counts, flags,
times) are not packings: they stay integers, and CF masking reads them.

Stored values stay exactly the file's. The decoded values differ from CF's ``q * scale_factor +
add_offset`` only where ``1 / scale_factor`` is not exact in the float type (never for powers of
two): by at most one unit in the last place of ``q * scale_factor`` plus one of the result, in
the unpacked dtype (:meth:`CFPacking.decode_bound`; measured over every int8/int16/uint8/uint16
code by :meth:`CFPacking.decode_difference`). The nearest float to ``1 / scale_factor`` is the
best choice of ``scale``: over every int16 code, its neighbours give more differences, never fewer.

numpy only; no xarray, numcodecs or zarr here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.scalar_json import scalar_from_json, scalar_to_json
from .rules import show_attribute, decoded_dtype, fill_values, missing_codes, scalar_attr, stored_dtype

__all__ = ["PACKING_ATTRS", "CFPacking", "packing_from_attrs", "packing_from_codecs", "unpacked_attrs",
           "unpacked_dtype"]

#: attributes that describe the packing itself; they are consumed by the codecs
PACKING_ATTRS = ("scale_factor", "add_offset", "_FillValue", "missing_value", "_Unsigned")
#: attributes in packed units that :func:`unpacked_attrs` turns into unpacked units
VALID_ATTRS = ("valid_min", "valid_max", "valid_range")
#: more missing codes than this (a wide integer compared in a narrower float) is not a packing
MAX_MISSING_CODES = 4096


def unpacked_dtype(packed: Any, attrs: Mapping[str, Any]) -> np.dtype:
    """The dtype xarray's CF decoding gives a packed variable (``_Unsigned`` applied first).

    ``scale_factor`` and ``add_offset`` of one float type give that type (float64 for 32-bit and
    wider packed integers); an ``add_offset`` alone, or of another type, gives float64; a
    ``scale_factor`` alone gives its own type; with neither (only missing values), integers
    of up to 16 bits decode to float32, wider ones to float64.

    Examples
    --------
    >>> unpacked_dtype("int16", {"scale_factor": np.float32(0.01), "add_offset": np.float32(0)})
    dtype('float32')
    >>> unpacked_dtype("int16", {"scale_factor": 0.01})
    dtype('float64')
    """
    return decoded_dtype(stored_dtype(packed, attrs), attrs)


def _is_power_of_two(x: Any) -> bool:
    return bool(abs(np.frexp(x)[0]) == 0.5)


@dataclass(frozen=True)
class CFPacking:
    """A CF-packed variable's encoding, as spec codecs and as CF attributes.

    Parameters
    ----------
    packed : numpy.dtype
        The stored dtype (``_Unsigned`` applied: an int8 variable with ``_Unsigned = "true"`` is
        packed as uint8). An integer type, or a float type for float data with a
        ``scale_factor``/``add_offset``.
    unpacked : numpy.dtype
        The float dtype CF decoding gives (see :func:`unpacked_dtype`).
    scale_factor, add_offset : numpy.floating or None
        As CF states them, in the unpacked dtype.
    missing : tuple
        Stored codes that decode to NaN: the code NaN encodes to first, then the others.
    notes : tuple of str
        What the attributes say that marks nothing (e.g. a NaN ``_FillValue`` on int16 data).
    """

    packed: np.dtype
    unpacked: np.dtype
    scale_factor: np.floating | None
    add_offset: np.floating | None
    missing: tuple[Any, ...] = field(default=())
    notes: tuple[str, ...] = field(default=(), compare=False)

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
    def exact(self) -> bool:
        """Whether the codecs decode every code bit for bit as CF does (``1 / scale_factor`` is
        exact: no ``scale_factor``, or a power of two), zeros' signs aside."""
        return self.scale_factor is None or _is_power_of_two(self.scale_factor)

    @property
    def fill_value(self) -> float:
        """The zarr v3 array's fill value: NaN when there are missing codes (NaN encodes to the
        first), else what code 0 decodes to (zarr v3 readers, xarray included, do not treat the
        fill value as missing; for zarr v2, where xarray does, use NaN, see
        :func:`~numcodecs_ext.cf.zarr_encoding`)."""
        return float("nan") if self.missing else float(self.decode(np.zeros((), self.packed)))

    def _scale_offset_config(self) -> dict[str, float]:
        return {"offset": float(self.offset), "scale": float(self.scale)}

    def _cast_value_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"data_type": self.packed.name, "rounding": "nearest-even"}
        if self.missing:
            codes = [scalar_to_json(self.packed.type(c), self.packed) for c in dict.fromkeys(self.missing)]
            config["scalar_map"] = {"encode": [["NaN", codes[0]]], "decode": [[c, "NaN"] for c in codes]}
        return config

    def codecs(self) -> list[dict[str, Any]]:
        """The zarr v3 ``filters``: ``scale_offset`` then ``cast_value``, as JSON.

        Examples
        --------
        >>> p = packing_from_attrs("int16", {"scale_factor": 0.5, "_FillValue": -1})
        >>> [c["name"] for c in p.codecs()], p.codecs()[0]["configuration"]
        (['scale_offset', 'cast_value'], {'offset': 0.0, 'scale': 2.0})
        """
        return [{"name": "scale_offset", "configuration": self._scale_offset_config()},
                {"name": "cast_value", "configuration": self._cast_value_config()}]

    def filters(self) -> list[Any]:
        """The zarr v2 ``filters``: numcodecs_ext's ``ScaleOffset`` and ``CastValue``."""
        from ..codecs.cast_value import CastValue
        from ..codecs.scale_offset import ScaleOffset

        return [ScaleOffset(**self._scale_offset_config(), dtype=self.unpacked.name),
                CastValue(**self._cast_value_config(), dtype=self.unpacked.name)]

    def describe(self) -> str:
        """The codecs in full, one line: ``scale_offset(offset=.., scale=..) -> cast_value(int16,
        NaN <-> -32767, -32766 -> NaN)``."""
        text = (f"scale_offset(offset={float(self.offset)!r}, scale={float(self.scale)!r}) -> "
                f"cast_value({self.packed.name}")
        if self.missing:
            codes = list(dict.fromkeys(self.missing))
            text += f", NaN <-> {_code(codes[0])}"
            if len(codes) > 1:
                text += ", " + ", ".join(_code(c) for c in codes[1:6]) + (" ..." if len(codes) > 6 else "") + " -> NaN"
        return text + ")"

    def attrs(self) -> dict[str, Any]:
        """The CF attributes of this packing (``_Unsigned`` is not needed: the packed type is
        stated as is)."""
        out: dict[str, Any] = {}
        if self.scale_factor is not None:
            out["scale_factor"] = self.scale_factor
        if self.add_offset is not None:
            out["add_offset"] = self.add_offset
        if self.missing:
            codes = list(dict.fromkeys(self.missing))
            out["_FillValue"] = self.packed.type(codes[0])
            if len(codes) > 1:
                out["missing_value"] = np.array(sorted(codes[1:]), dtype=self.packed)
        return out

    def decode(self, q: Any) -> np.ndarray:
        """What the codecs decode stored values ``q`` to: ``q / scale + offset`` in the unpacked
        dtype, NaN for the missing codes."""
        q = np.asarray(q, dtype=self.packed)
        with np.errstate(over="ignore", invalid="ignore"):
            x = q.astype(self.unpacked) / self.scale + self.offset
        return self._mask(q, x)

    def cf_decode(self, q: Any) -> np.ndarray:
        """CF's (and xarray's) decoding: ``q * scale_factor + add_offset``, NaN for missing codes."""
        q = np.asarray(q, dtype=self.packed)
        x = q.astype(self.unpacked)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.scale_factor is not None:
                x = x * self.scale_factor
            if self.add_offset is not None:
                x = x + self.add_offset
        return self._mask(q, x)

    def _mask(self, q: np.ndarray, x: np.ndarray) -> np.ndarray:
        if self.missing:
            x = np.where(np.isin(q, np.array(self.missing, dtype=self.packed)), self.unpacked.type(np.nan), x)
        return x

    def decode_bound(self, q: Any, decoded: Any = None) -> np.ndarray:
        """The largest ``|decode(q) - cf_decode(q)|`` allowed for each value: 0 where
        :attr:`exact`, else one unit in the last place of ``q * scale_factor`` plus one of the
        result, in the unpacked dtype. ``decoded``: CF's values of ``q`` when already at hand
        (missing ones may be anything)."""
        q = np.asarray(q, dtype=self.packed)
        if self.exact:
            return np.zeros(q.shape, self.unpacked)
        with np.errstate(all="ignore"):
            bound = q.astype(self.unpacked)
            bound *= self.scale_factor
            np.abs(bound, out=bound)
            bound = np.spacing(bound, out=bound)
            result = self.cf_decode(q) if decoded is None else np.asarray(decoded, dtype=self.unpacked)
            bound += np.spacing(np.abs(result))
        return bound

    def reencodes(self) -> bool:
        """Whether CF's decoded values encode back to the codes they came from through the codecs
        (``round((x - offset) * scale)`` in the unpacked dtype): every code of 8- and 16-bit types,
        65,537 spread over wider ones. Not so when ``add_offset`` leaves the float type too few
        digits for ``q * scale_factor`` (float32 with offset 273.15 and scale_factor 1.5e-05):
        such decoded values can only be stored by keeping the file's codes (``convert``)."""
        if self.packed.kind not in "iu":
            return True
        info = np.iinfo(self.packed)
        if self.packed.itemsize <= 2:
            q = np.arange(info.min, info.max + 1).astype(self.packed)
        else:
            q = np.unique(np.linspace(float(info.min), float(info.max), 65537).astype(np.float64)
                          .clip(info.min, info.max).astype(self.packed))
        keep = ~np.isin(q, np.array(self.missing, dtype=self.packed)) if self.missing else slice(None)
        q = q[keep]
        with np.errstate(all="ignore"):
            back = np.rint((self.cf_decode(q) - self.offset) * self.scale).astype(np.float64)
        return bool(np.array_equal(back, q.astype(np.float64)))

    def decode_difference(self) -> float:
        """The largest ``|decode(q) - cf_decode(q)|`` over every code of the packed type (exactly,
        for 8- and 16-bit types), or the bound at the ends of a wider type's range. 0 when
        ``scale_factor`` is a power of two."""
        if self.exact:
            return 0.0
        if self.packed.kind in "iu" and self.packed.itemsize <= 2:
            info = np.iinfo(self.packed)
            q = np.arange(info.min, info.max + 1).astype(self.packed)
            with np.errstate(invalid="ignore"):
                d = np.abs(self.decode(q).astype(np.float64) - self.cf_decode(q).astype(np.float64))
            return float(np.nanmax(d)) if not np.isnan(d).all() else 0.0
        ends = np.array([np.iinfo(self.packed).min, np.iinfo(self.packed).max] if self.packed.kind in "iu"
                        else [np.finfo(self.packed).min, np.finfo(self.packed).max], dtype=self.packed)
        bound = self.decode_bound(ends)
        return float(np.nanmax(bound.astype(np.float64)))


def _code(c: Any) -> str:
    return repr(c.item() if hasattr(c, "item") else c)


def packing_from_attrs(packed: Any, attrs: Mapping[str, Any], unpacked: Any = None) -> CFPacking | None:
    """The codecs for a variable stored as ``packed`` with CF attributes ``attrs``, decoding
    exactly as xarray does.

    Parameters
    ----------
    packed : dtype
        The variable's stored dtype (before ``_Unsigned``).
    attrs : mapping
        Its attributes as the file states them (xarray: ``ds[name].encoding`` of a decoded
        dataset, or ``.attrs`` when opened with ``mask_and_scale=False``).
    unpacked : dtype, optional
        The float dtype of the decoded values (default: xarray's rule, :func:`unpacked_dtype`);
        give the dtype xarray decoded to when there is one.

    Returns
    -------
    CFPacking or None
        None when nothing is packed: no ``scale_factor`` or ``add_offset`` (a variable with only
        ``_FillValue``/``missing_value`` stays as it is, and CF masking reads it), or a stored
        type that is neither integer nor float.

    Raises
    ------
    ValueError
        When the codecs cannot decode as xarray does: a zero or non-finite ``scale_factor``, a
        ``scale_factor`` whose type makes xarray decode to integers, float data decoded to a
        narrower float, or thousands of codes compared equal to a fill value.

    Examples
    --------
    >>> p = packing_from_attrs("int16", {"scale_factor": np.float32(0.01),
    ...                                  "add_offset": np.float32(273.15), "_FillValue": -32767})
    >>> p.unpacked, p.codecs()[0]
    (dtype('float32'), {'name': 'scale_offset', 'configuration': {'offset': 273.1499938964844, 'scale': 100.0}})
    >>> p.decode([0, -32767])
    array([273.15,    nan], dtype=float32)
    >>> p = packing_from_attrs("int16", {"scale_factor": -0.5, "_FillValue": np.nan})
    >>> p.missing, p.notes
    ((), ('_FillValue=nan (float64) marks nothing missing: it is not a number (xarray ignores it)',))
    """
    raw = np.dtype(packed)
    if raw.kind not in "iuf" or not ("scale_factor" in attrs or "add_offset" in attrs):
        return None
    stored = stored_dtype(raw, attrs)
    target = decoded_dtype(stored, attrs) if unpacked is None else np.dtype(unpacked)
    if target.kind != "f":
        raise ValueError(f"scale_factor={show_attribute(attrs.get('scale_factor'))}: xarray decodes this variable to "
                         f"{target}, not to floats, so it is not a float packing")
    if stored.kind == "f" and target.itemsize < stored.itemsize:
        raise ValueError(f"{stored} data decoded to {target} (the type of scale_factor/add_offset): the "
                         "codecs cannot narrow the stored values as xarray does")
    sf, ao = scalar_attr(attrs, "scale_factor"), scalar_attr(attrs, "add_offset")
    with np.errstate(all="ignore"):
        scale_factor = None if sf is None else target.type(sf)
        add_offset = None if ao is None else target.type(ao)
        reciprocal = None if scale_factor is None else target.type(1) / scale_factor
    if scale_factor is not None and not (np.isfinite(scale_factor) and scale_factor != 0):
        raise ValueError(f"CF attribute scale_factor={show_attribute(sf)}: must be a finite non-zero number")
    if add_offset is not None and not np.isfinite(add_offset):
        raise ValueError(f"CF attribute add_offset={show_attribute(ao)}: must be a finite number")
    if reciprocal is not None and not np.isfinite(reciprocal):
        raise ValueError(f"CF attribute scale_factor={show_attribute(sf)}: its reciprocal, the codec's scale, "
                         f"is not a finite {target}")
    fills, notes = fill_values(attrs, raw)
    missing = missing_codes(stored, fills, target)
    if len(missing) > MAX_MISSING_CODES:
        raise ValueError(f"{len(missing)} codes of {stored} compare equal to the fill values once cast to "
                         f"{target}: too many to map to NaN")
    notes += _unmatched(attrs, raw, stored, target)
    first = missing_codes(stored, fill_values({k: v for k, v in attrs.items() if k != "missing_value"}, raw)[0],
                          target)
    order = tuple(dict.fromkeys(first + missing))
    return CFPacking(stored, target, scale_factor, add_offset, order, tuple(notes))


def _unmatched(attrs: Mapping[str, Any], raw: np.dtype, stored: np.dtype, target: np.dtype) -> list[str]:
    """A note for each fill value that is a value but marks no code of ``stored``."""
    notes = []
    for key in ("_FillValue", "missing_value"):
        if key not in attrs:
            continue
        fills, _ = fill_values({k: v for k, v in attrs.items() if k in (key, "_Unsigned")}, raw)
        for fv in fills:
            if not missing_codes(stored, [fv], target):
                notes.append(f"{key}={show_attribute(fv)} marks nothing missing: no {stored} code equals it")
    return notes


def unpacked_attrs(attrs: Mapping[str, Any], packing: CFPacking, raw: Any = None) -> dict[str, Any]:
    """The attributes a reader of the unpacked array needs: the packing ones go, and
    ``valid_min``/``valid_max``/``valid_range`` of the stored type (packed units) become values of
    the unpacked type, decoded without masking (a range that includes a fill code keeps it as a
    number); a negative ``scale_factor`` swaps minimum and maximum.

    ``raw`` is the stored dtype before ``_Unsigned`` (whose ``valid_*`` are read as unsigned too).

    >>> p = packing_from_attrs("int16", {"scale_factor": np.float32(-0.5), "_FillValue": -32767})
    >>> unpacked_attrs({"units": "K", "valid_range": np.array([-32767, 100], "int16")}, p)
    {'units': 'K', 'valid_range': array([  -50. , 16383.5], dtype=float32)}
    """
    out = {k: v for k, v in attrs.items() if k not in PACKING_ATTRS}
    raw = packing.packed if raw is None else np.dtype(raw)
    decoded: dict[str, np.ndarray] = {}
    for key in VALID_ATTRS:
        if key not in out:
            continue
        value = np.asarray(out[key])
        in_packed_units = value.dtype.kind in "iu" if packing.packed.kind in "iu" else value.dtype == raw
        if not in_packed_units or value.size == 0 or value.dtype.kind not in "iuf":
            continue
        with np.errstate(all="ignore"):
            codes = (value.astype(raw).view(packing.packed)
                     if value.dtype.kind in "iu" and value.dtype.itemsize == raw.itemsize and raw.kind in "iu"
                     else value.astype(packing.packed))
            x = codes.astype(packing.unpacked)
            if packing.scale_factor is not None:
                x = x * packing.scale_factor
            if packing.add_offset is not None:
                x = x + packing.add_offset
        decoded[key] = x
    flip = packing.scale_factor is not None and packing.scale_factor < 0
    for key, x in decoded.items():
        if key == "valid_range":
            out[key] = np.sort(x)
        elif flip:
            out.pop(key, None)
    if flip:
        if "valid_min" in decoded:
            out["valid_max"] = decoded["valid_min"].reshape(-1)[0] if decoded["valid_min"].size == 1 \
                else decoded["valid_min"]
        if "valid_max" in decoded:
            out["valid_min"] = decoded["valid_max"].reshape(-1)[0] if decoded["valid_max"].size == 1 \
                else decoded["valid_max"]
    else:
        for key in ("valid_min", "valid_max"):
            if key in decoded:
                out[key] = decoded[key].reshape(-1)[0] if decoded[key].size == 1 else decoded[key]
    return out


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
    if packed.kind not in "iuf":
        raise ValueError(f"cast_value data_type={cv['data_type']!r}: CF packs into integer (or float) types")
    smap = cv.get("scalar_map") or {}
    enc = [scalar_from_json(v, packed).item() for k, v in smap.get("encode", []) if str(k).lower() == "nan"]
    dec = [scalar_from_json(k, packed).item() for k, v in smap.get("decode", []) if str(v).lower() == "nan"]
    missing = tuple(dict.fromkeys(enc[:1] + dec))
    scale_factor = add_offset = None
    if len(conf) == 2:
        offset, scale = conf[0].get("offset", 0), conf[0].get("scale", 1)
        scale_factor = None if float(scale) == 1 else target.type(1) / target.type(scale)
        add_offset = None if float(offset) == 0 else target.type(offset)
    return CFPacking(packed, target, scale_factor, add_offset, missing)
