"""The ``bitround`` codec (zarr v3 spec name) for numcodecs: id ``numcodecs_ext.bitround``.

numcodecs owns the id ``bitround`` (its ``BitRound``: floats only, ``keepbits`` 0 allowed, an
error above the mantissa width). Ours follows the zarr v3 spec and zarrs: integers too, and
``keepbits`` beyond the type's precision is a no-op; for float16/32/64 the bytes are numcodecs'
except for NaNs (kept as they are) and finite values that would round to infinity (kept finite).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core import bitround as core
from ..core.dtypes import parse_dtype
from ._base import ConfigurationError, ExtCodec, check_keys, parse_decoded_dtype, show
from ._buffers import as_array, decode_elementwise, deliver, out_dtype, typed

__all__ = ["BitRound", "check_keepbits"]

#: zarrs reads keepbits as an unsigned 32-bit integer
_MAX_KEEPBITS = 2**32 - 1


def check_keepbits(value: Any) -> int:
    """``keepbits`` validated: an integer from 0 to 2**32 - 1 (the spec's schema allows 0,
    which numcodecs' ``BitRound`` and zarrs accept: only the leading bit is kept)."""
    if (not isinstance(value, (int, np.integer)) or isinstance(value, bool)
            or not 0 <= value <= _MAX_KEEPBITS):
        raise ConfigurationError(
            "bitround", f"keepbits={show(value)} is not valid; keepbits must be an integer of "
            f"0 to {_MAX_KEEPBITS} (the significant bits kept; see docs/codecs/bitround.md)"
        )
    return int(value)


def _check_dtype(dtype: Any) -> np.dtype:
    dt = parse_dtype(dtype)
    try:
        core.plan(dt)
    except TypeError as e:
        raise ValueError(f"dtype: {e}") from None
    return dt


class BitRound(ExtCodec):
    """Round every value to ``keepbits`` significant bits (zarr v3 ``bitround``).

    An element-wise, lossy filter that makes data more compressible for a following compressor
    (zstd, blosc, ...). Decoding returns the rounded values as they are.

    Parameters
    ----------
    keepbits : int
        Floats: mantissa bits kept (float32 has 23, float64 52, float16 10, bfloat16 7).
        Integers: bits kept from the most significant set bit. At least 0 (0 keeps only the
        leading bit: floats round to a power of two); values at or above the type's precision
        change nothing.
    dtype : str, optional
        numcodecs only: the array's dtype, to encode or decode raw bytes.

    Examples
    --------
    >>> import numpy as np
    >>> codec = BitRound(keepbits=3)
    >>> codec.encode(np.array([1.2, 12.3, 1234.5], dtype="float32")).tolist()
    [1.25, 12.0, 1280.0]
    >>> codec.encode(np.array([11, 209, 255], dtype="uint8"))
    array([ 12, 224, 224], dtype=uint8)
    >>> codec.get_config()
    {'id': 'numcodecs_ext.bitround', 'keepbits': 3}
    """

    codec_id = "numcodecs_ext.bitround"
    elementwise = True

    def __init__(self, keepbits: int, dtype: Any = None) -> None:
        self.keepbits = check_keepbits(keepbits)
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(dtype, _check_dtype)

    # --- zarr v3 ----------------------------------------------------------------------------
    def v3_configuration(self) -> dict[str, Any]:
        return {"keepbits": self.keepbits}

    @classmethod
    def from_v3_configuration(cls, configuration: Mapping[str, Any]) -> BitRound:
        check_keys("bitround", dict(configuration), ["keepbits"], required=("keepbits",))
        return cls(keepbits=configuration["keepbits"])

    # --- chunk work: the core's of this configuration -----------------------------------------
    @property
    def chunk_work(self) -> core.BitRoundChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.bitround.BitRoundChunks`)."""
        return self._chunk_work_of((self.keepbits,), core.BitRoundChunks)  # type: ignore[no-any-return]

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Same shape and dtype; the fill value rounded like the data (see
        :meth:`numcodecs_ext.core.bitround.BitRoundChunks.resolve_spec`)."""
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

    # --- numcodecs API (element-wise: the memory layout is kept) -----------------------------
    def encode(self, buf: Any) -> np.ndarray:
        arr = self._encode_input(buf)
        self._check_encode_input(arr)
        if self.dtype is not None and arr.dtype.newbyteorder("=") != self.dtype:
            raise ConfigurationError(self.codec_id, f"configured dtype={show(self._dtype_json())} "
                             f"but the array is {show(arr.dtype.str)}")
        result = self.encode_chunk(arr)
        return result if arr.dtype.isnative else result.astype(arr.dtype)

    def decode(self, buf: Any, out: Any = None) -> Any:
        src = as_array(buf)
        known = self.dtype is not None or isinstance(buf, np.ndarray)
        if self.dtype is not None:
            src = typed(src, self._stored_dtype)
        if out is None:
            return src  # decoding is the identity
        dt = src.dtype.newbyteorder("=") if known else out_dtype(out, None)
        if dt is None:  # bytes into a raw buffer
            return deliver(src, out)
        return decode_elementwise(typed(src, dt), out, dt, _copy, self.codec_id)


def _copy(src: np.ndarray, target: np.ndarray | None) -> np.ndarray:
    if target is None:
        return src.astype(src.dtype.newbyteorder("="), copy=True)
    np.copyto(target, src)
    return target
