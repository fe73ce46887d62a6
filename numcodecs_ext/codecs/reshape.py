"""The ``reshape`` codec for numcodecs (zarr v2 filters, standalone use) and zarr v3."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core import reshape as core
from ..core.dtypes import parse_dtype
from ._base import ConfigurationError, ExtCodec, check_keys, parse_decoded_dtype, refusing, show
from ._buffers import as_array, deliver, out_dtype, typed

__all__ = ["Reshape"]


class Reshape(ExtCodec):
    """Give chunks a new shape in C order (zarr v3 ``reshape``); no element moves.

    Useful before codecs that care about dimensions: zfp compresses 1-4 dimensions, so a 6-D
    chunk ``(2, 3, 8, 8, 8, 8)`` becomes 4-D with ``shape=[[0, 1, 2], [3], [4], [5]]``.

    Parameters
    ----------
    shape : list
        One entry per output dimension: a positive size, ``-1`` (at most once: the size that makes
        the element counts agree) or a list of input dimensions raveled together (``[0, 1]``).
        The input dimensions must increase strictly over all entries.
    input_shape : sequence of int, optional
        numcodecs only: the decoded (input) shape, so that :meth:`decode` can return it; without
        it (or ``out=``) decoding returns a flat array, which zarr v2 reshapes itself. Raw bytes
        given to :meth:`encode` are taken to have this shape.
    dtype : str, optional
        numcodecs only: the dtype of raw bytes given to :meth:`encode` / :meth:`decode`.

    Examples
    --------
    >>> import numpy as np
    >>> codec = Reshape(shape=[[0, 1], -1])
    >>> a = np.arange(24, dtype="int16").reshape(2, 3, 4)
    >>> codec.encode(a).shape
    (6, 4)
    >>> codec.decode(codec.encode(a), out=np.empty((2, 3, 4), "int16")).shape
    (2, 3, 4)
    >>> Reshape(shape=[[0, 1], -1], input_shape=[2, 3, 4]).decode(codec.encode(a)).shape
    (2, 3, 4)
    """

    codec_id = "reshape"

    def __init__(self, shape: Sequence[Any], input_shape: Sequence[int] | None = None,
                 dtype: Any = None) -> None:
        with refusing(self.codec_id):
            self.spec = core.parse_spec(shape)
        if input_shape is not None:
            if (isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence)
                    or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                               and s >= 0 for s in input_shape)):
                raise ConfigurationError("reshape", f"input_shape={show(input_shape)} must be a list "
                                 "of non-negative integers")
            input_shape = tuple(int(s) for s in input_shape)
            try:  # refuse a shape the spec cannot take
                core.output_shape(self.spec, input_shape)
            except ValueError as e:
                why = str(e)
                raise ConfigurationError(self.codec_id,
                                         f"input_shape={list(input_shape)} does not fit: {why}") from None
        self.input_shape = input_shape
        if dtype is not None:
            self.dtype, self._dtype_order = parse_decoded_dtype(dtype, parse_dtype)

    @property
    def shape(self) -> list[Any]:
        """The ``shape`` configuration, as JSON."""
        return core.spec_to_json(self.spec)

    def output_shape(self, input_shape: Sequence[int]) -> tuple[int, ...]:
        """The encoded shape of chunks of ``input_shape`` (ValueError where the spec says so)."""
        return self.chunk_work.output_shape(input_shape)

    @property
    def chunk_work(self) -> core.ReshapeChunks:
        """The chunk work of this configuration (:class:`numcodecs_ext.core.reshape.ReshapeChunks`)."""
        return self._chunk_work_of((self.spec,), core.ReshapeChunks)  # type: ignore[no-any-return]

    # --- configuration ------------------------------------------------------------------------
    def v3_configuration(self) -> dict[str, Any]:
        return {"shape": self.shape}

    def _config(self) -> dict[str, Any]:
        config = self.v3_configuration()
        if self.input_shape is not None:
            config["input_shape"] = list(self.input_shape)
        if self.dtype is not None:
            config["dtype"] = self._dtype_json()
        return config

    @classmethod
    def from_v3_configuration(cls, configuration: Mapping[str, Any]) -> Reshape:
        check_keys(cls.codec_id, dict(configuration), ["shape"], required=("shape",))
        return cls(shape=configuration["shape"])

    # --- zarr v3 ------------------------------------------------------------------------------
    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """The output shape (see :meth:`numcodecs_ext.core.reshape.ReshapeChunks.resolve_spec`)."""
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

    # --- numcodecs API ------------------------------------------------------------------------
    def encode(self, buf: Any) -> np.ndarray:
        arr = self._encode_input(buf)
        if not isinstance(buf, np.ndarray) and self.input_shape is not None:
            arr = typed(arr, arr.dtype, self.input_shape)
        elif self.input_shape is not None and arr.shape != self.input_shape:
            raise ConfigurationError("reshape", f"configured input_shape={list(self.input_shape)} "
                             f"but the array has shape {list(arr.shape)}")
        self._check_encode_input(arr)
        out = self.encode_chunk(arr)
        # (not np.ascontiguousarray, which turns the 0-d result of shape=[] into 1-d)
        return out if out.flags.c_contiguous else out.copy(order="C")

    def decode(self, buf: Any, out: Any = None) -> Any:
        src = as_array(buf)
        if self.dtype is not None:
            src = typed(src, self._stored_dtype)
        if out is not None:
            if isinstance(out, np.ndarray) and out.size == src.size and out_dtype(out, src.dtype):
                src = core.reshape(src, out.shape)  # by value, in C order
            return deliver(src, out)
        if self.input_shape is not None:
            if src.size != math.prod(self.input_shape):
                raise ConfigurationError(
                    "reshape", f"{src.size} items cannot have the configured "
                    f"input_shape={list(self.input_shape)}")
            return core.reshape(src, self.input_shape)
        return src.reshape(-1)
