"""The chunk work of one ``scale_offset`` configuration (:class:`ScaleOffsetChunks`), which
the numcodecs class and the zarr v3 class both run: the parameters decoded and checked per
dtype, fill values carried through the encoding, chunks encoded and decoded (on the CPU by
:mod:`numcodecs_ext.core.scale_offset`, on other devices by :mod:`numcodecs_ext.core.device`).

Examples
--------
>>> import numpy as np
>>> work = ScaleOffsetChunks(offset=10, scale=0.5)
>>> work.encode_chunk(np.array([12.0, 30.0])).tolist()
[1.0, 10.0]
>>> work.resolve_spec((2,), np.dtype("float64"), 20.0)
((2,), dtype('float64'), np.float64(5.0))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import device
from . import scale_offset as core
from .buffers import typed
from .chunk_paths import ChunkPaths, fill_key
from .dtypes import dtype_name, show
from .errors import ConfigurationError, refusing
from .parameters import check_numeric_dtype, representable

__all__ = ["ScaleOffsetChunks"]

_CODEC_ID = "scale_offset"


@dataclass(frozen=True)
class ScaleOffsetChunks:
    """The chunk work of one ``scale_offset`` configuration: ``offset`` and ``scale`` as
    dtype-free spec JSON, and ``dtype``, the numcodecs-only configured dtype (None: any)."""

    offset: Any = 0
    scale: Any = 1
    dtype: np.dtype | None = None
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    def parameters(self, dtype: np.dtype) -> tuple[Any, Any]:
        """offset and scale decoded for ``dtype`` and checked (kept per dtype)."""
        key = ("parameters", dtype)
        params = self.paths.get(key)
        if params is None:
            dt = check_numeric_dtype(_CODEC_ID, "array dtype", dtype)
            if self.dtype is not None and dt != self.dtype:
                raise ConfigurationError(
                    "scale_offset", f"configured dtype={show(dtype_name(self.dtype))} but the "
                    f"array is {show(dtype_name(dt))}"
                )
            off, sc = (self._parameter(k, dt) for k in ("offset", "scale"))
            try:
                core.check_parameters(dt, off, sc)
            except ValueError as e:
                raise ConfigurationError("scale_offset", f"{e}") from None
            params = self.paths.keep(("parameters", dt), (off, sc))
        return params  # type: ignore[no-any-return]

    def _parameter(self, key: str, dt: np.dtype) -> Any:
        with refusing(_CODEC_ID):
            return representable(getattr(self, key), dt, f"{key} value")

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Same shape and dtype; the fill value goes through the encoding (None: not checked).

        A fill value that cannot be encoded is an error, or with ``strict=False`` (reading an
        array) resolves to None, since reading never encodes it.
        """
        dt = np.dtype(dtype)
        off, sc = self.parameters(dt)
        if fill_value is None:
            return shape, dt, None
        fill = np.array(fill_value, dtype=dt)
        try:
            enc = core.encode(fill, off, sc)
        except ValueError as e:
            if not strict:
                return shape, dt, None
            raise ConfigurationError(
                "scale_offset", f"the array's fill value {show(fill[()])} cannot be encoded "
                f"({e}); choose one inside the encodable range"
            ) from None
        return shape, dt, enc[()]

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    def encode_chunk(self, arr: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``arr`` encoded (into ``out``, which may be ``arr`` itself, if given)."""
        arr = np.asarray(arr)
        off, sc = self.parameters(arr.dtype.newbyteorder("="))
        return core.encode(arr, off, sc, out=out)

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        dt = np.dtype(dtype)
        off, sc = self.parameters(dt)
        src = typed(np.asarray(arr), dt)
        if src.shape != tuple(shape):
            src = src.reshape(shape)
        # In zarr's decode chain an array that owns its writeable memory is a temporary made by
        # the codec after us: store bytes reach codecs only as views (which own nothing), even
        # where the store keeps them in a numpy array. Decode such a temporary in place.
        reuse = (src.flags.owndata and src.flags.writeable and src.flags.c_contiguous
                 and src.dtype.isnative)
        return core.decode(src, off, sc, out=src if reuse else None)

    def _device(self, xp: Any, arr: Any, dtype: np.dtype | None, direction: str) -> Any:
        dt = device.numpy_dtype(xp, arr.dtype)
        if dt is None or (dtype is not None and dt != dtype):
            return None
        off, sc = self.parameters(dt)
        kernel_off, kernel_sc = core.checked_parameters(dt, off, sc)
        bounds = core.integer_bounds(dt, kernel_off, kernel_sc, direction)
        return device.scale_offset(xp, arr, dt, kernel_off, kernel_sc, direction, bounds)

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` on the array's own device (its array API namespace ``xp``), or None."""
        return self._device(xp, arr, None, "encode")

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None: then the caller decodes a host copy."""
        if tuple(arr.shape) != tuple(shape):
            return None
        return self._device(xp, arr, np.dtype(dtype), "decode")
