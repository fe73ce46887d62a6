"""The ``zfp`` codec for numcodecs (standalone use and zarr v2 compressors).

A thin layer over :mod:`numcodecs_ext.core.zfp`, which writes the same headerless zfp streams as
zarrs (the reference implementation of the zarr v3 ``zfp`` codec).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..core import zfp as core
from ..core.zfp_chunks import ZfpChunks
from ..core.dtypes import parse_dtype
from ._base import ConfigurationError, ExtCodec, check_keys, parse_decoded_dtype, show
from ._buffers import as_array, deliver, out_dtype

__all__ = ["Zfp"]

_PARAMS = ("tolerance", "rate", "precision", "minbits", "maxbits", "maxprec", "minexp")


def _parse_any_dtype(value: Any) -> np.dtype:
    """A zarr v3 name or numpy spelling; also datetime64/timedelta64, which zfp stores as int64."""
    try:
        return parse_dtype(value)
    except ValueError:
        try:
            dt = np.dtype(value)
        except TypeError:
            dt = None
        if dt is not None and dt.kind in "mM":
            return dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt
        raise ConfigurationError(
            "zfp", f"dtype={show(value)} is not a data type zfp can handle; supported: "
            f"{core.SUPPORTED_DTYPES}"
        ) from None


class Zfp(ExtCodec):
    """zfp compression, bit-compatible with zarrs' ``zfp`` codec (zarr v3 ``zfp`` / ``zarrs.zfp``).

    Parameters
    ----------
    mode : {"reversible", "fixed_accuracy", "fixed_rate", "fixed_precision", "expert"}
        The zfp compression mode.
    tolerance : float
        ``fixed_accuracy`` only: the largest absolute error (>= 0). Floating-point data only.
    rate : float
        ``fixed_rate`` only: bits per value (> 0). As in zarrs, zfp is told the array is 3-D
        whatever its dimensionality, so a d-dimensional chunk really gets ``rate * 4**(3 - d)``
        bits per value.
    precision : int
        ``fixed_precision`` only: bit planes kept, 1 to 64.
    minbits, maxbits, maxprec, minexp : int
        ``expert`` only: zfp's four parameters (``0 <= minbits <= maxbits``, ``1 <= maxprec <= 64``,
        ``minexp`` a 32-bit signed integer; ``minexp < -1074`` selects zfp's reversible coder).
    shape : sequence of int, optional
        numcodecs-only: the shape of the arrays this codec compresses. zfp streams carry no header,
        so decoding without ``out=`` (e.g. as a zarr v2 compressor) needs it. Never part of zarr v3
        metadata.
    dtype : str, optional
        numcodecs-only: the data type (zarr v3 name or numpy spelling), needed with ``shape`` to
        decode without ``out=``.

    Notes
    -----
    Data types: int8 … uint64, float32, float64, float16 and bfloat16 (through float32), datetime64
    and timedelta64 (as int64). Arrays of 0 to 4 dimensions (0-d as ``nx = 1``). Lossy modes refuse
    NaN and infinities; uint32/uint64 values >= 2**31 / 2**63 are refused (zarrs clamps them).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.arange(12, dtype="float32").reshape(3, 4)
    >>> codec = Zfp(mode="reversible")
    >>> enc = codec.encode(a)
    >>> bool((codec.decode(enc, out=np.empty_like(a)) == a).all())
    True
    >>> v2 = Zfp(mode="fixed_precision", precision=20, shape=[3, 4], dtype="float32")
    >>> v2.get_config()
    {'id': 'zfp', 'mode': 'fixed_precision', 'precision': 20, 'shape': [3, 4], 'dtype': 'float32'}
    >>> bool(np.allclose(v2.decode(v2.encode(a)), a, atol=1e-3))
    True
    """

    codec_id = "zfp"
    codec_aliases = ("zarrs.zfp",)

    def __init__(
        self,
        mode: str,
        tolerance: Optional[float] = None,
        rate: Optional[float] = None,
        precision: Optional[int] = None,
        minbits: Optional[int] = None,
        maxbits: Optional[int] = None,
        maxprec: Optional[int] = None,
        minexp: Optional[int] = None,
        shape: Optional[Sequence[int]] = None,
        dtype: Optional[str] = None,
    ) -> None:
        given = {
            k: v
            for k, v in dict(
                tolerance=tolerance, rate=rate, precision=precision, minbits=minbits,
                maxbits=maxbits, maxprec=maxprec, minexp=minexp,
            ).items()
            if v is not None
        }
        self._spec = core.check_config({"mode": mode, **given})
        self.mode = mode
        for key in _PARAMS:
            setattr(self, key, self._spec.get(key))
        if shape is not None:
            if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or not all(
                isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in shape
            ):
                raise ConfigurationError(
                    "zfp", f"shape={show(shape)} must be a list of non-negative integers"
                )
            shape = tuple(int(s) for s in shape)
            if len(shape) > 4:
                raise ConfigurationError(
                    "zfp", f"shape={list(shape)} has {len(shape)} dimensions; zfp handles "
                    "at most 4"
                )
        self.shape: Optional[tuple[int, ...]] = shape
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(dtype, _parse_any_dtype)
        if self.dtype is not None:
            try:
                core.check_dtype(self.dtype, **self._spec)
            except (ValueError, TypeError) as e:
                raise ValueError(f"dtype={show(dtype)}: {e}") from None

    # --- numcodecs API ----------------------------------------------------------------------
    def encode(self, buf: Any) -> bytes:
        """Compress an array (or a raw buffer, with ``shape``/``dtype`` configured) to zfp bytes."""
        arr = self._conform(self._encode_input(buf))
        self._check_encode_input(arr)
        return core.compress(arr, **self._spec)

    def decode(self, buf: Any, out: Any = None) -> Any:
        """Decompress zfp bytes; the shape and dtype come from the configuration or ``out``."""
        src = as_array(buf)
        if out is None:
            if self.shape is None or self.dtype is None:
                missing = " and ".join(k for k in ("shape", "dtype") if getattr(self, k) is None)
                raise ConfigurationError(
                    "zfp", f"zfp streams carry no header: decoding needs the shape and dtype; pass out= "
                    f"or configure {missing} (for a zarr v2 array, add them to its compressor in .zarray)"
                )
            return self._decoded(core.decompress(src, self.shape, self.dtype, **self._spec))
        dtype = out_dtype(out, self.dtype)  # None: out takes raw bytes
        if dtype is None and self.dtype is None:
            raise ConfigurationError(
                "zfp", "decoding into a raw buffer needs the dtype (and shape); configure "
                "them, or pass an ndarray of the decoded shape and dtype as out"
            )
        dtype = self.dtype if self.dtype is not None else dtype
        shape = self.shape if self.shape is not None else (
            out.shape if isinstance(out, np.ndarray) and dtype is not None else None)
        if shape is None:
            raise ConfigurationError(
                "zfp", "decoding into a raw buffer needs the shape; configure shape=[...] "
                "or pass an ndarray of the decoded shape and dtype as out"
            )
        if (isinstance(out, np.ndarray) and out.dtype == dtype and out.flags.c_contiguous
                and out.flags.writeable and out.size == math.prod(shape)):
            # straight into out (the stream is copied before libzfp writes)
            core.decompress(src, shape, dtype, out=out.reshape(-1), **self._spec)
            return out
        return deliver(core.decompress(src, shape, dtype, **self._spec), out)

    # --- zarr v3 contract -------------------------------------------------------------------
    def v3_configuration(self) -> dict[str, Any]:
        """The spec configuration: ``mode`` and that mode's parameters."""
        return dict(self._spec)

    @classmethod
    def from_v3_configuration(cls, configuration: dict[str, Any]) -> Zfp:
        """Build from a zarr v3 configuration (numcodecs-only keys are refused)."""
        check_keys("zfp", configuration, ["mode", *_PARAMS], required=("mode",))
        return cls(**core.check_config(configuration))

    @property
    def chunk_work(self) -> ZfpChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.zfp_chunks.ZfpChunks`)."""
        return self._chunk_work_of((dict(self._spec),), ZfpChunks)  # type: ignore[no-any-return]

    def resolve_spec(
        self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any, strict: bool = True
    ) -> tuple[tuple[int, ...], np.dtype, Any]:
        """Check that chunks of this shape and dtype can be compressed; nothing changes."""
        return self.chunk_work.resolve_spec(shape, dtype, fill_value, strict)

    def encode_chunk(self, arr: np.ndarray) -> bytes:
        return self.chunk_work.encode_chunk(arr)

    def decode_chunk(self, buf: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self.chunk_work.decode_chunk(buf, shape, dtype)
