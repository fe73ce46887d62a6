"""zarr v3 ``cast_value`` (alternative to zarr >= 3.2's built-in) and ``numcodecs.cast_value``.

Unlike zarr 3.4.2's built-in, this one needs no Rust package, rounds every conversion once
(float64 -> float16 directly), supports the ml_dtypes types, reads hex scalar_map entries, keeps
the first of repeated keys, and refuses a fill value that does not survive the round trip. It
offers the built-in's Python surface: ``dtype`` (the target as a zarr data type), ``rounding``,
``out_of_range``, ``scalar_map``, a ``data_type`` given as a name or a zarr data type object.

Examples
--------
>>> from zarr.dtype import UInt8
>>> from numcodecs_ext.zarr3 import CastValue
>>> codec = CastValue(data_type=UInt8(), out_of_range="clamp")
>>> codec
CastValue(data_type='uint8', out_of_range='clamp')
>>> codec.dtype.to_native_dtype(), codec.rounding, codec.scalar_map
(dtype('uint8'), 'nearest-even', None)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from zarr.dtype import ZDType

from ..codecs.cast_value import CastValue as _CastValue
from ..core.cast_value_chunks import CastValueChunks
from ..core.dtypes import dtype_name
from ._base import AdapterMixin, ArrayArrayV3, native_dtype, zarr_dtype

__all__ = ["CastValue", "NumcodecsCastValue"]


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class _CastValueFields(ArrayArrayV3):
    """What zarr's own CastValue exposes, with its method signatures: ``dtype``, the target as a
    zarr data type (``.to_native_dtype()`` gives numpy's); ``rounding``; ``out_of_range``;
    ``scalar_map``, ``{"encode": {input: output}, "decode": {...}}`` as JSON scalars (zarr's
    form; of a repeated input, the first entry)."""

    numcodecs_class = _CastValue

    dtype: Any
    rounding: str
    out_of_range: str | None
    scalar_map: dict[str, dict[Any, Any]] | None

    @staticmethod
    def _field_value(codec: Any, key: str) -> Any:
        if key == "dtype":
            return zarr_dtype(codec.data_type)
        if key == "scalar_map":
            raw = codec.scalar_map
            return None if raw is None else {d: _first_wins(pairs) for d, pairs in raw.items()}
        return getattr(codec, key)

    @classmethod
    def _from_fields(cls, configuration: dict[str, Any]) -> dict[str, Any]:
        """The target given as the field ``dtype`` (a zarr data type, as ``dataclasses.replace``
        passes it) is the configuration's ``data_type``; a ``dtype`` that is no zarr data type is
        the numcodecs key (``numcodecs.cast_value``: the source dtype)."""
        config = super()._from_fields(configuration)
        if isinstance(config.get("dtype"), ZDType) and "data_type" not in config:
            config["data_type"] = config.pop("dtype")
        if "data_type" in config:  # (numcodecs.cast_value's too)
            config["data_type"] = _data_type_json(config["data_type"])
        return config

    @classmethod
    def _codec_from_configuration(cls, configuration: dict[str, Any]) -> Any:
        config = dict(configuration)
        if "data_type" in config:
            config["data_type"] = _data_type_json(config["data_type"])
        return super()._codec_from_configuration(config)

    def _make_chunk_work(self) -> CastValueChunks:
        # from the parsed configuration: the fields hold zarr's forms (a ZDType; of a repeated
        # scalar_map input, the first entry), and numcodecs.cast_value may carry a source dtype
        c = self.codec
        return CastValueChunks(c.data_type, c.rounding, c.out_of_range, c.scalar_map, c.dtype)  # type: ignore[attr-defined]

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: Any) -> int:
        work = self.chunk_work
        source = work.source_for(native_dtype(chunk_spec))
        return input_byte_length // source.itemsize * work.data_type.itemsize  # type: ignore[no-any-return]


def _data_type_json(value: Any) -> Any:
    """A target given as a zarr data type object or a numpy dtype, as zarr v3 JSON; names and
    JSON objects as they are (they are checked as zarr v3 data type metadata)."""
    to_json = getattr(value, "to_json", None)
    if to_json is not None and hasattr(value, "to_native_dtype"):  # a zarr ZDType
        return to_json(zarr_format=3)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return dtype_name(np.dtype(value))
    return value


def _first_wins(pairs: list[list[Any]]) -> dict[Any, Any]:
    mapping: dict[Any, Any] = {}
    for key, value in pairs:
        mapping.setdefault(key, value)
    return mapping


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class CastValue(_CastValueFields):
    """zarr v3 ``cast_value`` codec, e.g. ``CastValue(data_type="uint8", out_of_range="clamp")``."""

    spec_names = ("cast_value",)

    def _configuration(self) -> dict[str, Any]:
        config = super()._configuration()
        if "scalar_map" in config:  # pairs as tuples, as zarr's own to_dict gives them
            config["scalar_map"] = {d: [tuple(p) for p in pairs]
                                    for d, pairs in config["scalar_map"].items()}
        return config


@dataclasses.dataclass(frozen=True, init=False, repr=False, eq=False)
class NumcodecsCastValue(AdapterMixin, _CastValueFields):
    """``numcodecs.cast_value``: the numcodecs codec under zarr's adapter naming."""

    spec_names = ()
