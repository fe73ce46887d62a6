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

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codecs._base import typed
from ..codecs.cast_value import CastValue as _CastValue
from ..codecs.scale_offset import ScaleOffset as _ScaleOffset
from ..core import _native as _kernels
from ..core import fused
from ..core.dtypes import dtype_name
from ._base import AdapterMixin, ArrayArrayV3, _native, zarr_dtype

__all__ = ["CastValue", "NumcodecsCastValue"]


class _AfterScaleOffset(ArrayArrayV3):
    """Right after a scale_offset, the pair runs as one blocked pass (see zarr3._base)."""

    fuses_after = _ScaleOffset

    def _fused_arguments(self, before: Any, dtype: np.dtype, direction: str) -> tuple[Any, ...]:
        """``(offset, scale, target dtype, cast arguments)`` for arrays of ``dtype``, worked out
        once per dtype and direction (zarr calls with chunk after chunk of the same)."""
        cache = self.__dict__.setdefault("_fused_cache", {})
        key = (dtype, direction)
        hit = cache.get(key)
        if hit is None or hit[0] is not before:
            off, sc = before._parameters(dtype.newbyteorder("="))
            args = self.codec.cast_arguments(dtype, direction)  # type: ignore[attr-defined]
            hit = (before, off, sc, args.pop("dtype"), args)
            if len(cache) < 16:
                cache[key] = hit
        return hit[1:]

    def _chunk_path(self, key: tuple[Any, ...], before: Any, arr: np.ndarray) -> Any:
        """The kept per-chunk function's result for ``arr`` (key: by ``before``'s identity, as
        its hash costs more than the look-up), or None: then the general pass runs."""
        found = self.__dict__.get("_chunk_coders", _NO_PATHS).get(key)
        return found[1](arr) if found is not None and found[0] is before else None

    def _keep_chunk_path(self, key: tuple[Any, ...], before: Any, build: Any) -> None:
        """Keep ``build()`` (None: not available yet) for ``key`` unless ``before`` has one."""
        paths = self.__dict__.setdefault("_chunk_coders", {})
        found = paths.get(key)
        if (found is None or found[0] is not before) and len(paths) < 32:
            path = build()
            if path is not None:
                paths[key] = (before, path)

    def fused_encode(self, before: Any, arr: np.ndarray) -> np.ndarray:
        key = (id(before), arr.shape, arr.dtype, _kernels.ENABLED, "encode")
        result = self._chunk_path(key, before, arr)
        if result is not None:
            return result  # type: ignore[no-any-return]
        off, sc, target, args = self._fused_arguments(before, arr.dtype, "encode")
        self._keep_chunk_path(key, before, lambda: fused.chunk_encoder(
            arr.dtype, arr.shape, target, off, sc, **args))
        return fused.encode(arr, off, sc, target, **args)

    def fused_decode(self, before: Any, arr: Any, shape: tuple[int, ...],
                     dtype: np.dtype) -> np.ndarray:
        codes = self.codec.data_type  # type: ignore[attr-defined]
        enc = typed(np.asarray(arr), codes).reshape(shape)
        key = (id(before), shape, dtype, _kernels.ENABLED, "decode")
        result = self._chunk_path(key, before, enc)
        if result is not None:
            return result  # type: ignore[no-any-return]
        off, sc, target, args = self._fused_arguments(before, dtype, "decode")
        result = fused.decode(enc, target, off, sc, **args)
        self._keep_chunk_path(key, before, lambda: fused.chunk_decoder(  # once a table exists
            codes, shape, target, off, sc, **args))
        return result


_NO_PATHS: dict[Any, Any] = {}  # (an empty cache, never written)


class _CastValueSurface(_AfterScaleOffset):
    """What zarr's own CastValue exposes, with its method signatures."""

    numcodecs_class = _CastValue

    @classmethod
    def _codec_from_configuration(cls, configuration: dict[str, Any]) -> Any:
        config = dict(configuration)
        if "data_type" in config:
            config["data_type"] = _data_type_json(config["data_type"])
        return super()._codec_from_configuration(config)

    @property
    def dtype(self) -> Any:
        """The target data type, as a zarr data type (``.to_native_dtype()`` gives numpy's)."""
        return zarr_dtype(self.codec.data_type)  # type: ignore[attr-defined]

    @property
    def rounding(self) -> str:
        return self.codec.rounding  # type: ignore[attr-defined,no-any-return]

    @property
    def out_of_range(self) -> str | None:
        return self.codec.out_of_range  # type: ignore[attr-defined,no-any-return]

    @property
    def scalar_map(self) -> dict[str, dict[Any, Any]] | None:
        """``{"encode": {input: output}, "decode": {...}}`` as JSON scalars (zarr's form); of a
        repeated input, the first entry."""
        raw = self.codec.scalar_map  # type: ignore[attr-defined]
        if raw is None:
            return None
        return {direction: _first_wins(pairs) for direction, pairs in raw.items()}

    def compute_encoded_size(self, input_byte_length: int, chunk_spec: Any) -> int:
        source = self.codec._source_for(_native(chunk_spec))  # type: ignore[attr-defined]
        return input_byte_length // source.itemsize * self.codec.data_type.itemsize  # type: ignore[attr-defined]

    def _encode_sync(self, chunk_array: Any, _chunk_spec: Any) -> Any:
        return super()._encode_sync(chunk_array, _chunk_spec)

    async def _encode_single(self, chunk_data: Any, chunk_spec: Any) -> Any:
        return await super()._encode_single(chunk_data, chunk_spec)

    async def _decode_single(self, chunk_data: Any, chunk_spec: Any) -> Any:
        return await super()._decode_single(chunk_data, chunk_spec)


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


@dataclass(frozen=True, init=False, repr=False)
class CastValue(_CastValueSurface):
    """zarr v3 ``cast_value`` codec, e.g. ``CastValue(data_type="uint8", out_of_range="clamp")``."""

    spec_names = ("cast_value",)

    def _configuration(self) -> dict[str, Any]:
        config = super()._configuration()
        if "scalar_map" in config:  # pairs as tuples, as zarr's own to_dict gives them
            config["scalar_map"] = {d: [tuple(p) for p in pairs]
                                    for d, pairs in config["scalar_map"].items()}
        return config


@dataclass(frozen=True, init=False, repr=False)
class NumcodecsCastValue(AdapterMixin, _CastValueSurface):
    """``numcodecs.cast_value``: the numcodecs codec under zarr's adapter naming."""

    spec_names = ()
