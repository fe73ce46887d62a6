"""The ``scale_offset`` codec for numcodecs (zarr v2 filters, standalone use) and zarr v3."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core import scale_offset as core
from ..core.parameters import check_numeric_dtype
from ..core.scalar_json import check_numeric_json
from ..core.scale_offset_chunks import ScaleOffsetChunks
from ._base import ConfigurationError, ExtCodec, check_keys, parse_decoded_dtype, refusing, show
from ._buffers import as_array, decode_elementwise, fortran_only, out_dtype, typed
from .cast_value import json_scalar

__all__ = ["ScaleOffset"]

_SPEC_KEYS = ["offset", "scale"]


def _is_default(value: Any, default: int) -> bool:
    return not isinstance(value, str) and value == default


def _not_finite(key: str, value: Any) -> str:
    return (
        f"{key} value {show(value)} is not representable as a finite number; offset and scale "
        "must be finite (a non-finite one turns every value into NaN or Infinity)"
    )


class ScaleOffset(ExtCodec):
    """``(x - offset) * scale`` on encode, ``x / scale + offset`` on decode (zarr ``scale_offset``).

    Arithmetic stays in the array's own dtype: float32 stays float32 whatever the parameters;
    integers never overflow silently (any unrepresentable intermediate or result is an error,
    int64 and uint64 included) and integer decoding divides exactly. Pair it with
    :class:`~numcodecs_ext.codecs.cast_value.CastValue` to store floats as small integers.

    Coming from CF/netCDF packing (``q * scale_factor + add_offset``): ``scale`` is the
    **reciprocal** of ``scale_factor`` and ``offset`` is ``add_offset``;
    :func:`numcodecs_ext.cf.packing_from_attrs` does the conversion.

    Parameters
    ----------
    offset, scale : number or str
        zarr v3 fill-value JSON for the array's dtype (``5``, ``0.1``, ``"NaN"``, ``"0x3dcccccd"``),
        or numpy scalars. Defaults 0 and 1 (then the codec is a no-op). ``scale`` must be non-zero
        and both must be finite.
    dtype : str, optional
        numcodecs only: the array's dtype, which standalone and zarr v2 decoding of bytes need.

    Examples
    --------
    >>> import numpy as np
    >>> codec = ScaleOffset(offset=-10, scale=0.1, dtype="float64")
    >>> codec.encode(np.array([0.0, 100.0, np.nan]))
    array([ 1., 11., nan])
    >>> codec.decode(codec.encode(np.array([0.0, 100.0])))
    array([  0., 100.])
    """

    codec_id = "scale_offset"
    elementwise = True

    def __init__(self, offset: Any = 0, scale: Any = 1, dtype: Any = None) -> None:
        self.offset = json_scalar(offset, self.codec_id, "offset")
        self.scale = json_scalar(scale, self.codec_id, "scale")
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(
                dtype, lambda v: check_numeric_dtype(self.codec_id, "dtype", v))
        if self.dtype is not None:
            self._parameters(self.dtype)
        else:  # what can be checked without a dtype: finite for every dtype, scale non-zero
            for key in ("offset", "scale"):
                value = getattr(self, key)
                with refusing(self.codec_id):
                    check_numeric_json(value, what=key)
                if value in ("NaN", "Infinity", "-Infinity"):
                    raise ConfigurationError(self.codec_id, _not_finite(key, value))
            if self.scale == 0 or (isinstance(self.scale, str) and int(self.scale, 16) == 0):
                raise ConfigurationError(
                    "scale_offset", f"scale={show(self.scale)} is not valid; scale must be non-zero"
                )

    @property
    def chunk_work(self) -> ScaleOffsetChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.scale_offset_chunks.ScaleOffsetChunks`)."""
        return self._chunk_work_of((self.offset, self.scale, self.dtype), ScaleOffsetChunks)  # type: ignore[no-any-return]

    def _parameters(self, dtype: np.dtype) -> tuple[Any, Any]:
        """offset and scale decoded for ``dtype`` and checked (kept per dtype)."""
        return self.chunk_work.parameters(dtype)

    # --- configuration ----------------------------------------------------------------------
    def v3_configuration(self) -> dict[str, Any]:
        """The zarr v3 configuration: only the parameters that are not 0 / 1."""
        config: dict[str, Any] = {}
        if not _is_default(self.offset, 0):
            config["offset"] = self.offset
        if not _is_default(self.scale, 1):
            config["scale"] = self.scale
        return config

    @classmethod
    def from_v3_configuration(cls, configuration: Mapping[str, Any]) -> ScaleOffset:
        """Build from a zarr v3 configuration (``{}`` for the no-op); other keys are errors."""
        check_keys(cls.codec_id, dict(configuration), _SPEC_KEYS)
        return cls(**configuration)

    # --- the codec ------------------------------------------------------------------------------
    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Same shape and dtype; the fill value goes through the encoding (see
        :meth:`numcodecs_ext.core.scale_offset_chunks.ScaleOffsetChunks.resolve_spec`)."""
        return self.chunk_work.resolve_spec(shape, dtype, fill_value, strict)

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        return self.chunk_work.encode_chunk(arr)

    device_support = "device"

    def device_encode(self, xp: Any, arr: Any) -> Any:
        return self.chunk_work.device_encode(xp, arr)

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.chunk_work.device_decode(xp, arr, shape, dtype)

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self.chunk_work.decode_chunk(arr, shape, dtype)

    # numcodecs API (element-wise: a Fortran-ordered array gives a Fortran-ordered result)
    def encode(self, buf: Any) -> np.ndarray:
        arr = self._encode_input(buf)
        self._require_for_decode(arr, ("dtype",), "decoding needs the array's dtype")
        self._check_encode_input(arr)
        result = self.encode_chunk(arr.T).T if fortran_only(arr) else self.encode_chunk(arr)
        # same dtype in, same dtype out: keep a byte-swapped input's byte order for the next filter
        return result if arr.dtype.isnative else result.astype(arr.dtype)

    def decode(self, buf: Any, out: Any = None) -> Any:
        src = as_array(buf)
        if out is not None:
            dt = self.dtype if self.dtype is not None else out_dtype(out, None)
            if dt is None:
                raise ConfigurationError(
                    "scale_offset", "decoding into a raw buffer needs the dtype; configure "
                    "dtype=... or pass an ndarray of the decoded dtype as out"
                )
            off, sc = self._parameters(dt)
            return decode_elementwise(
                typed(src, dt), out, dt, lambda e, t: core.decode(e, off, sc, out=t), self.codec_id)
        if self.dtype is not None:
            src = typed(src, self._stored_dtype)  # what encode() gave: the configured byte order
        elif not isinstance(buf, np.ndarray):
            raise ConfigurationError(
                "scale_offset", "decoding bytes needs the dtype; configure dtype=... or "
                "pass out= (an array of the decoded dtype and shape)"
            )
        off, sc = self._parameters(src.dtype.newbyteorder("="))
        if fortran_only(src):
            return self._decoded(core.decode(src.T, off, sc).T)
        return self._decoded(core.decode(src, off, sc))
