"""numcodecs v2 filters as zarr v3 codecs: ``FixedScaleOffset`` and ``AsType`` as the spec's
``scale_offset`` + ``cast_value``, everything else under zarr's numcodecs adapter names.

What numcodecs does (numpy 2 arithmetic, measured and proven in ``tests/migrate/test_migrate_filters.py``):

* ``FixedScaleOffset(offset, scale, dtype, astype)`` encodes ``around((x - offset) * scale)`` in
  the data's own float type and casts it to ``astype`` with numpy's ``astype``, which wraps
  out-of-range values modulo 2**bits (cleanly only for |value| < 2**31 with targets of 32 bits
  or fewer, 2**63 with 64-bit ones; beyond that, and for NaN, numpy's result is platform-defined);
  it decodes ``code / scale + offset`` in float64 and rounds that to the data type.
* ``AsType(encode_dtype, decode_dtype)`` is numpy's ``astype`` both ways: floats round to
  nearest even (overflow gives infinity), floats to integers truncate towards zero, integers
  wrap.

So for float64 data ``[scale_offset, cast_value(wrap)]`` is exact both ways. For float32 and
float16 data no chain of spec codecs computes both directions as numcodecs does (it encodes in
the data type but decodes in float64): ``match="decode"`` (the default, what migration needs:
stored chunks are kept, so reading must give the very same values) widens to float64 first,
``[cast_value(float64), scale_offset, cast_value(wrap)]``, and decodes bit for bit; ``"encode"``
computes in the data type and writes the very same codes.

``wrap=False`` (what ``migrate`` and ``normalize`` use unless told otherwise) leaves out the
silent wrapping: a value written later that the stored type cannot hold is refused with an
error instead of becoming another number. Stored codes decode exactly as before, except codes
that numcodecs wrapped where the decoded type cannot hold them (``AsType(u1 -> i1)`` stores 200
as -56): those read only with ``wrap=True``. The tools never trust this on faith: they read
every stored chunk under both metadata versions before they keep one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.dtypes import dtype_name

__all__ = ["NotExpressible", "adapter_codec", "filter_codecs", "works_on_bytes"]

MATCHES = ("decode", "encode")
#: numcodecs_ext's array -> array codecs in zarr v2 filters: numcodecs id -> zarr v3 spec name
_OURS = {"scale_offset": "scale_offset", "cast_value": "cast_value",
         "numcodecs_ext.bitround": "bitround"}


class NotExpressible(ValueError):
    """A numcodecs filter that the spec codecs cannot reproduce (the message says why)."""


def _number(value: float) -> int | float:
    """A JSON number as the spec codecs take it (integral floats as integers)."""
    v = float(value)
    return int(v) if v.is_integer() and abs(v) < 2**53 else v


def _dtype(config: Mapping[str, Any], key: str) -> np.dtype:
    try:
        return np.dtype(config[key])
    except (KeyError, TypeError) as e:
        raise NotExpressible(f"{config.get('id')}: {key}={config.get(key)!r} is not a numpy dtype") from e


def adapter_codec(config: Mapping[str, Any]) -> dict[str, Any]:
    """A numcodecs codec under zarr's numcodecs adapter name, ``numcodecs.<id>``, as zarr's own
    migration and its adapter write it."""
    return {"name": f"numcodecs.{config['id']}",
            "configuration": {k: v for k, v in config.items() if k != "id"}}


def works_on_bytes(codec: Mapping[str, Any]) -> bool:
    """Whether zarr implements the v3 ``codec`` as a bytes -> bytes codec (numcodecs' Shuffle
    and compressors, even where a v2 array lists them among its filters); False where zarr has
    no implementation of it (it is then refused when the metadata is opened).

    >>> works_on_bytes({"name": "numcodecs.shuffle"}), works_on_bytes({"name": "numcodecs.delta"})
    (True, False)
    """
    import warnings

    from zarr.abc.codec import BytesBytesCodec
    from zarr.registry import get_codec_class

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr's note that numcodecs codecs lack a spec
            return issubclass(get_codec_class(str(codec.get("name"))), BytesBytesCodec)
    except (KeyError, ValueError, TypeError):  # no implementation (zarr's UnknownCodecError is a KeyError)
        return False


def filter_codecs(config: Mapping[str, Any], dtype: Any, *, match: str = "decode",
                  wrap: bool = True) -> tuple[list[dict[str, Any]], np.dtype]:
    """The zarr v3 codecs for the numcodecs filter ``config`` on arrays of ``dtype``, and the
    dtype (byte order included) the filter hands on.

    Parameters
    ----------
    config : mapping
        The filter's numcodecs configuration (``{"id": "fixedscaleoffset", ...}``).
    dtype : numpy dtype
        What the filter receives.
    match : {"decode", "encode"}
        For float32/float16 ``FixedScaleOffset``: which direction is reproduced bit for bit.
    wrap : bool
        Encode values the stored type cannot hold as numpy does, wrapping integers and turning
        floats infinite (True: numcodecs' bytes), or refuse them (False: a clear error where
        numcodecs silently stored another value). Decoding is the same either way, except for
        integer codes that numcodecs wrapped, which only ``wrap=True`` reads back.

    Raises
    ------
    NotExpressible
        ``FixedScaleOffset`` / ``AsType`` configurations the spec codecs cannot reproduce.

    Examples
    --------
    >>> codecs, stored = filter_codecs({"id": "fixedscaleoffset", "offset": 1000, "scale": 10,
    ...                                 "dtype": "<f8", "astype": "<u2"}, "<f8")
    >>> [c["name"] for c in codecs], stored
    (['scale_offset', 'cast_value'], dtype('uint16'))
    >>> codecs[0]["configuration"]
    {'offset': 1000, 'scale': 10}
    >>> filter_codecs({"id": "delta", "dtype": "<i4"}, "<i4")[0]
    [{'name': 'numcodecs.delta', 'configuration': {'dtype': '<i4'}}]
    """
    if match not in MATCHES:
        raise ValueError(f"match={match!r} is not valid; use one of {', '.join(MATCHES)}")
    dt = np.dtype(dtype)
    codec_id = config.get("id")
    oor = "wrap" if wrap else None
    if codec_id in _OURS:  # numcodecs_ext's own codecs under their spec names
        import numcodecs

        codec = numcodecs.get_codec(dict(config))
        out = np.dtype(codec.data_type) if codec_id == "cast_value" else dt
        return [{"name": _OURS[codec_id], "configuration": codec.v3_configuration()}], out
    if codec_id == "fixedscaleoffset":
        return _fixed_scale_offset(config, dt, match, oor)
    if codec_id == "astype":
        return _astype(config, dt, oor)
    return [adapter_codec(config)], dt


def _cast(target: np.dtype, rounding: str, out_of_range: str | None) -> dict[str, Any]:
    configuration: dict[str, Any] = {"data_type": dtype_name(target.newbyteorder("="))}
    if rounding != "nearest-even":
        configuration["rounding"] = rounding
    if out_of_range is not None:
        configuration["out_of_range"] = out_of_range
    return {"name": "cast_value", "configuration": configuration}


def _fixed_scale_offset(config: Mapping[str, Any], dt: np.dtype, match: str,
                        oor: str | None) -> tuple[list[dict[str, Any]], np.dtype]:
    data, stored = _dtype(config, "dtype"), _dtype(config, "astype")
    where = f"FixedScaleOffset(offset={config.get('offset')!r}, scale={config.get('scale')!r}, " \
            f"dtype={data.str!r}, astype={stored.str!r})"
    if data.newbyteorder("=") != dt.newbyteorder("="):
        raise NotExpressible(f"{where} receives {dt.str!r} arrays: numcodecs would reinterpret their bytes")
    try:
        offset, scale = float(config.get("offset", 0)), float(config.get("scale", 1))
    except (TypeError, ValueError) as e:
        raise NotExpressible(f"{where}: offset and scale must be numbers") from e
    if not (math.isfinite(offset) and math.isfinite(scale)) or scale == 0:
        raise NotExpressible(f"{where}: offset and scale must be finite and scale non-zero")
    if stored.kind not in "iu":
        raise NotExpressible(f"{where}: astype {stored.str!r} is not an integer type; numcodecs "
                             "rounds to integers there, which no cast to a float type does")
    affine = {"name": "scale_offset", "configuration": {"offset": _number(offset), "scale": _number(scale)}}
    if data.kind in "iu":
        if scale != 1 or not offset.is_integer():
            raise NotExpressible(
                f"{where}: on integer data numcodecs computes in float64 and truncates; the spec "
                "codecs reproduce that only with scale 1 and an integral offset")
        codecs = ([affine] if offset else []) + [_cast(stored, "nearest-even", oor)]
        return codecs, stored
    if data.kind != "f" or data.itemsize not in (2, 4, 8):
        raise NotExpressible(f"{where}: data type {data.str!r} is not float16/32/64 or an integer type")
    last = _cast(stored, "nearest-even", oor)
    if data.itemsize == 8 or match == "encode":
        return [affine, last], stored
    # decode in float64 as numpy does, then round once to the data type
    return [_cast(np.dtype("float64"), "nearest-even", "clamp"), affine, last], stored


def _astype(config: Mapping[str, Any], dt: np.dtype,
            oor: str | None) -> tuple[list[dict[str, Any]], np.dtype]:
    decoded, encoded = _dtype(config, "decode_dtype"), _dtype(config, "encode_dtype")
    where = f"AsType(encode_dtype={encoded.str!r}, decode_dtype={decoded.str!r})"
    if decoded.newbyteorder("=") != dt.newbyteorder("="):
        raise NotExpressible(f"{where} receives {dt.str!r} arrays: numcodecs would reinterpret their bytes")
    kinds = decoded.kind + encoded.kind
    if any(k not in "iuf" for k in kinds):
        raise NotExpressible(f"{where}: only integer and float types have spec casts")
    if kinds == "ff":  # nearest even both ways; overflow to infinity is cast_value's clamp
        return [_cast(encoded, "nearest-even", "clamp" if oor else None)], encoded
    if encoded.kind in "iu" and decoded.kind in "iu":  # numpy wraps both ways
        return [_cast(encoded, "nearest-even", oor)], encoded
    if decoded.kind == "f":  # float data stored as integers: numpy truncates
        if encoded.itemsize * 8 > np.finfo(decoded).nmant + 1:
            raise NotExpressible(f"{where}: {decoded.name} cannot hold every {encoded.name}, and "
                                 "numpy rounds those to nearest where the cast would truncate")
        return [_cast(encoded, "towards-zero", oor)], encoded
    # integer data stored as floats: exact wherever the float holds the integer
    if decoded.itemsize * 8 > np.finfo(encoded).nmant + 1:
        raise NotExpressible(f"{where}: {encoded.name} cannot hold every {decoded.name}")
    return [_cast(encoded, "nearest-even", None)], encoded
