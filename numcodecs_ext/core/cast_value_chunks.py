"""The chunk work of one ``cast_value`` configuration (:class:`CastValueChunks`), which the
numcodecs class and the zarr v3 class both run: the scalar_map decoded and prepared per source
dtype, the fill value checked to survive the round trip, chunks cast both ways (on the CPU by
:mod:`numcodecs_ext.core.cast_value`, on other devices by :mod:`numcodecs_ext.core.device`).

Examples
--------
>>> import numpy as np
>>> work = CastValueChunks(np.dtype("uint8"), out_of_range="clamp")
>>> work.encode_chunk(np.array([-3.0, 2.5, 300.0])).tolist()
[0, 2, 255]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import device
from .buffers import typed
from .cast_rounding import CastError, is_exact_cast
from .cast_value import cast_array, reserved_codes
from .chunk_paths import ChunkPaths, fill_key
from .dtypes import dtype_kind, dtype_name, is_nan, numeric_info, scalar_text, show
from .errors import ConfigurationError, refusing
from .parameters import check_numeric_dtype, representable
from .scalar_json import check_numeric_json
from .scalar_map import ExactBits, PreparedMap

__all__ = ["CastValueChunks"]

_CODEC_ID = "cast_value"


def _map_scalar(data: Any, dtype: np.dtype, direction: str, role: str, i: int) -> Any:
    """One scalar_map key or value decoded for its dtype, or a ValueError naming it. A NaN key
    written as hex matches exactly that bit pattern (:class:`~..core.scalar_map.ExactBits`)."""
    with refusing("cast_value"):
        scalar = representable(data, dtype, f"scalar_map {direction} {role}", f" (entry {i})")
    if role == "key" and isinstance(data, str) and data.startswith("0x") and \
            dtype_kind(dtype) == "float" and is_nan(scalar):
        return ExactBits(scalar)
    return scalar


@dataclass(frozen=True)
class CastValueChunks:
    """The chunk work of one ``cast_value`` configuration: the target ``data_type``,
    ``rounding``, ``out_of_range``, ``scalar_map`` as parsed JSON (``{"encode": [[in, out],
    ...], "decode": [...]}``) and ``dtype``, the numcodecs-only configured source dtype."""

    data_type: np.dtype
    rounding: str = "nearest-even"
    out_of_range: str | None = None
    scalar_map: dict[str, list[list[Any]]] | None = field(default=None, hash=False)
    dtype: np.dtype | None = None
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    # --- scalar map -----------------------------------------------------------------------------
    def entries(self, source: np.dtype | None, direction: str) -> Any:
        """Decoded (key, value) pairs for ``direction`` and source dtype (validated once; None:
        the source is not known yet, and what can be checked without it is)."""
        cache_key = ("entries", source, direction)
        found = self.paths.get(cache_key)
        if found is not None:
            return found
        raw = (self.scalar_map or {}).get(direction, [])
        entries = []
        for i, (k, v) in enumerate(raw):
            where = f"scalar_map[{show(direction)}][{i}]"
            kdt, vdt = (source, self.data_type) if direction == "encode" else (self.data_type, source)
            with refusing(_CODEC_ID):
                if kdt is None:  # the source dtype is not known yet: check what can be checked
                    check_numeric_json(k, what=f"{where} input")
                if vdt is None:
                    check_numeric_json(v, what=f"{where} output")
            key = _map_scalar(k, kdt, direction, "key", i) if kdt is not None else None
            val = _map_scalar(v, vdt, direction, "value", i) if vdt is not None else None
            entries.append((key, val))
        if source is not None:  # prepared once for every call (a lookup table for large maps)
            src, tgt = (source, self.data_type) if direction == "encode" else (self.data_type, source)
            # codes the decode map reads as something else: an unmapped value must not become one
            reserved = reserved_codes(self.entries(source, "decode"), tgt, src, self.rounding,
                                      self.mode(source, "decode")) if direction == "encode" else ()
            entries = PreparedMap(entries, src, tgt, reserved)
        return self.paths.keep(cache_key, entries)

    # --- the cast -------------------------------------------------------------------------------
    def source_for(self, dtype: np.dtype) -> np.dtype:
        """The source dtype of chunks of ``dtype`` (checked: numeric, the configured one)."""
        dt = check_numeric_dtype(_CODEC_ID, "array dtype", dtype)
        if self.dtype is not None and dt != self.dtype:
            raise ConfigurationError(
                "cast_value", f"configured dtype={show(dtype_name(self.dtype))} but the array "
                f"is {show(dtype_name(dt))}"
            )
        return dt

    def cast_arguments(self, dtype: np.dtype, direction: str) -> dict[str, Any]:
        """:func:`~numcodecs_ext.core.cast_value.cast_array` arguments (``dtype`` included) for
        an array of ``dtype`` (the codec's input) in ``direction`` ("encode" or "decode")."""
        src = self.source_for(dtype)
        return {"dtype": self.data_type if direction == "encode" else src,
                "rounding": self.rounding, "out_of_range": self.mode(src, direction),
                "scalar_map": self.entries(src, direction)}

    def mode(self, src: np.dtype, direction: str) -> str | None:
        """out_of_range for ``direction`` (wrap only applies to integer outputs)."""
        if direction == "decode" and self.out_of_range == "wrap" and dtype_kind(src) == "float":
            return None  # wrap only applies to integer outputs; to a float, out-of-range errors
        return self.out_of_range

    def encode_array(self, arr: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return cast_array(arr, **self.cast_arguments(arr.dtype, "encode"), out=out)

    def decode_array(self, arr: np.ndarray, dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
        return cast_array(arr, **self.cast_arguments(dtype, "decode"), out=out)

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """The encoded chunk spec; the fill value must survive encode then decode unchanged.

        ``fill_value=None`` resolves only the shape and dtype. With ``strict=False`` (reading an
        array, which never encodes the fill value) a fill value that does not survive is not an
        error: it resolves to its encoding where there is one, else None.
        """
        src = self.source_for(dtype)
        self.entries(src, "encode")  # the map's errors first, in their own words
        self.entries(src, "decode")
        if fill_value is None:
            return shape, self.data_type, None
        fill = np.array(fill_value, dtype=src) if not isinstance(fill_value, np.ndarray) else (
            fill_value.astype(src))
        enc = None
        try:
            enc = self.encode_array(fill)
            dec = self.decode_array(enc, src)
        except ValueError as e:
            if not strict:
                return shape, self.data_type, None if enc is None else enc[()]
            option = "--nan-code" if is_nan(fill[()]) else "--fill-code"
            raise ConfigurationError(
                "cast_value", f"the fill value {scalar_text(fill[()], src)} cannot be cast to "
                f"{dtype_name(self.data_type)} and back: {e.reason if isinstance(e, CastError) else e}; "
                f"fix: `numcodecs-ext normalize STORE {option} auto`"
            ) from None
        same = bool(dec == fill) or (is_nan(dec) and is_nan(fill))
        if not same and strict:
            raise ConfigurationError(
                "cast_value", f"the fill value {scalar_text(fill[()], src)} does not survive the round "
                f"trip ({dtype_name(src)} -> {scalar_text(enc[()], self.data_type)} -> "
                f"{scalar_text(dec[()], src)}); use one the target holds, or map it both ways in scalar_map"
            )
        return shape, self.data_type, enc[()]

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        return self.encode_array(np.asarray(arr))

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        enc = typed(np.asarray(arr), self.data_type).reshape(shape)
        return self.decode_array(enc, np.dtype(dtype))

    def _device(self, xp: Any, arr: Any, dtype: np.dtype, direction: str) -> Any:
        args = self.cast_arguments(dtype, direction)
        src = dtype if direction == "encode" else self.data_type
        tgt = args.pop("dtype")
        exact = is_exact_cast(numeric_info(src), numeric_info(tgt))
        return device.cast(xp, arr, src, tgt, exact=exact, **args)

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` on the array's own device (its array API namespace ``xp``), or None."""
        dt = device.numpy_dtype(xp, arr.dtype)
        return None if dt is None else self._device(xp, arr, dt, "encode")

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None: then the caller decodes a host copy."""
        if device.numpy_dtype(xp, arr.dtype) != self.data_type or tuple(arr.shape) != tuple(shape):
            return None
        return self._device(xp, arr, np.dtype(dtype), "decode")
