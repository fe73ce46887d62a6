"""The ``transpose`` codec for numcodecs (zarr v2 filters and standalone use)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.transpose import TransposeChunks, inverse_order, transpose
from ..core.dtypes import parse_dtype
from ._base import ConfigurationError, ExtCodec, parse_decoded_dtype, show
from ._buffers import as_array, deliver, out_dtype, typed

__all__ = ["Transpose"]


def _parse_order(order: Any) -> str | tuple[int, ...]:
    if isinstance(order, str):
        if order in ("C", "F"):
            return order
    elif isinstance(order, Sequence) and all(
        isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in order
    ):
        perm = tuple(int(i) for i in order)
        if sorted(perm) == list(range(len(perm))):
            return perm  # (the empty permutation: a 0-d array, as zarr's transpose accepts)
    raise ConfigurationError(
        "transpose", f"order={show(order)} is not valid; use 'C', 'F' or a permutation of "
        "0, 1, ..., n-1 such as [1, 0] or [2, 0, 1] ([] for 0-d arrays)"
    )


class Transpose(ExtCodec):
    """Permute the dimensions of an array (zarr v3 ``transpose`` codec, also for zarr v2).

    Encoding returns ``a.transpose(order)`` as a C-contiguous array; decoding undoes it.

    Parameters
    ----------
    order : {"C", "F"} or sequence of int
        A permutation of ``0 .. n-1`` (output axis ``i`` is input axis ``order[i]``), ``"C"`` (no-op)
        or ``"F"`` (reverse the axes of whatever array it meets).
    shape : sequence of int, optional
        The decoded (pre-transpose) shape. Only needed to decode a flat buffer without ``out=``, as
        zarr v2 does with filters; zarr v3 never needs it.
    dtype : str, optional
        The decoded dtype (zarr v3 name or numpy spelling), to decode raw bytes to a typed array
        without ``out=``. Without it, flat bytes decode to fixed-size byte items (``V<n>``), which
        zarr v2 views as the array's dtype.

    Notes
    -----
    Decoding a flat buffer needs the decoded shape: either ``out=`` (an array of the decoded shape
    and dtype) or ``shape=`` in the configuration; otherwise :meth:`decode` raises ``ValueError``.
    An array of the transposed shape (what :meth:`encode` returns) decodes without either.

    Examples
    --------
    >>> import numpy as np
    >>> codec = Transpose(order=[1, 0])
    >>> a = np.arange(6, dtype="int16").reshape(2, 3)
    >>> enc = codec.encode(a)
    >>> enc.shape
    (3, 2)
    >>> bool((codec.decode(enc) == a).all())
    True
    >>> out = np.empty((2, 3), dtype="int16")
    >>> bool((codec.decode(enc.tobytes(), out=out) == a).all())
    True
    >>> Transpose(order="F", shape=[2, 3], dtype="int16").decode(enc.tobytes()).tolist()
    [[0, 1, 2], [3, 4, 5]]
    """

    codec_id = "transpose"

    def __init__(
        self,
        order: str | Sequence[int],
        shape: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> None:
        self.order = _parse_order(order)
        if shape is not None:
            if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence) or not all(
                isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in shape
            ):
                raise ConfigurationError("transpose", f"shape={show(shape)} must be a list of non-negative integers")
            shape = tuple(int(s) for s in shape)
            if isinstance(self.order, tuple) and len(shape) != len(self.order):
                raise ConfigurationError(
                    "transpose", f"shape={list(shape)} has {len(shape)} dimensions but "
                    f"order={list(self.order)} has {len(self.order)}"
                )
        self.shape = shape
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(dtype, parse_dtype)

    def permutation(self, ndim: int) -> tuple[int, ...]:
        """The explicit permutation for an array of ``ndim`` dimensions."""
        return self.chunk_work.permutation(ndim)

    def _items(self, arr: np.ndarray, shape: tuple[int, ...]) -> np.dtype:
        """The item type of a raw buffer holding an array of ``shape``: the configured dtype,
        else fixed-size byte items (zarr v2 views them as the array's dtype)."""
        if self._stored_dtype is not None:
            return self._stored_dtype
        items = math.prod(shape)
        if items == 0:
            return arr.dtype
        if arr.nbytes % items:
            raise ConfigurationError(
                "transpose", f"a buffer of {arr.nbytes} bytes does not hold an array of "
                f"shape {list(shape)}"
            )
        itemsize = arr.nbytes // items
        return arr.dtype if arr.size == items else np.dtype(f"V{itemsize}")

    def _encoded_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.chunk_work.encoded_shape(shape)

    def encode(self, buf: Any) -> np.ndarray:
        arr = as_array(buf)
        if not isinstance(buf, np.ndarray):  # raw bytes: the configured shape (and dtype)
            if self.shape is None:
                raise ConfigurationError(
                    "transpose", f"encoding a raw buffer ({type(buf).__name__}) needs the "
                    "array's shape (and dtype): configure shape=[...] and dtype=..., or pass an "
                    "ndarray"
                )
            arr = typed(arr, self._items(arr, self.shape), self.shape)
        else:
            arr = self._conform(arr)
        self._check_encode_input(arr)
        return transpose(arr, self.permutation(arr.ndim))

    def decode(self, buf: Any, out: Any = None) -> Any:
        arr = as_array(buf)
        if out is not None:
            return self._decode_into(arr, isinstance(buf, np.ndarray), out)
        if isinstance(buf, np.ndarray):
            if self.shape is not None:
                if arr.shape == self._encoded_shape(self.shape):
                    return transpose(arr, inverse_order(self.permutation(arr.ndim)))
            elif isinstance(self.order, str) or arr.ndim == len(self.order):
                return transpose(arr, inverse_order(self.permutation(arr.ndim)))
        if self.shape is None:
            raise ConfigurationError(
                "transpose", "cannot decode a flat buffer without the decoded shape: pass out= or "
                "configure shape=[...] (for a zarr v2 array, add \"shape\" to this filter in .zarray)"
            )
        enc_shape = self._encoded_shape(self.shape)
        src = typed(arr, self._items(arr, self.shape), enc_shape)
        return transpose(src, inverse_order(self.permutation(len(enc_shape))))

    def _decode_into(self, arr: np.ndarray, is_array: bool, out: Any) -> Any:
        dtype = out_dtype(out, self.dtype)  # None: out takes raw bytes
        if dtype is not None and self.shape is None:
            shape = out.shape
        elif self.shape is not None:
            shape = self.shape
        else:
            raise ConfigurationError(
                "transpose", "decoding into a raw buffer needs the decoded shape; "
                "configure shape=[...] (and dtype=...) or pass an ndarray of the decoded shape"
            )
        enc_shape = self._encoded_shape(shape)
        if is_array and arr.shape == enc_shape and (dtype is None or arr.dtype == dtype):
            src = arr
        else:
            src = typed(arr, dtype if dtype is not None else self._items(arr, shape), enc_shape)
        inverse = inverse_order(self.permutation(len(shape)))
        if (dtype is not None and out.shape == shape and out.flags.c_contiguous
                and out.flags.writeable and out.dtype == src.dtype):
            return transpose(src, inverse, out=out)  # (core copies src first if they overlap)
        return deliver(transpose(src, inverse), out)

    # --- zarr v3 contract -------------------------------------------------------------------
    def v3_configuration(self) -> dict[str, Any]:
        return {"order": self.order if isinstance(self.order, str) else list(self.order)}

    @classmethod
    def from_v3_configuration(cls, configuration: dict[str, Any]) -> Transpose:
        from ._base import check_keys

        check_keys(cls.codec_id, configuration, ["order"], required=("order",))
        return cls(order=configuration["order"])

    def bind(self, shape: tuple[int, ...], dtype: np.dtype) -> Transpose:
        """This codec with ``"C"``/``"F"`` resolved for arrays of ``len(shape)`` dimensions."""
        perm = self.permutation(len(shape))
        return self if perm == self.order else type(self)(order=list(perm), shape=self.shape, dtype=self.dtype)

    # --- chunk work: the core's plan of this configuration ---------------------------------
    @property
    def chunk_work(self) -> TransposeChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.transpose.TransposeChunks`)."""
        return self._chunk_work_of((self.order,), TransposeChunks)  # type: ignore[no-any-return]

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        return self.chunk_work.resolve_spec(shape, dtype, fill_value, strict)

    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        return self.chunk_work.encode_chunk(arr)

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        return self.chunk_work.decode_chunk(arr, shape, dtype)

    device_support = "device"

    def device_encode(self, xp: Any, arr: Any) -> Any:
        return self.chunk_work.device_encode(xp, arr)

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return self.chunk_work.device_decode(xp, arr, shape, dtype)
