"""Decoding whole stored chunks of an array exactly as zarr does, in one look-up per element.

For an array whose codecs are element-wise array -> array codecs of ours (``scale_offset``,
``cast_value``, their adapters), zarr's ``bytes`` codec and any bytes -> bytes codecs, where the
codes ``bytes`` stores are one or two bytes: the bytes -> bytes codecs run as zarr's own objects,
and the array -> array chain is one look-up in the table of every code's decoded value, worked
out once by the same codec objects zarr calls (:mod:`numcodecs_ext.core.codetable`). Each element
depends only on its own code, so the look-up is the chain's result by construction, without the
chain's intermediate arrays (for float32 packed as uint16 through float64: two arrays of 8
bytes an element, in memory written once and read once each).

The tools read back what they wrote with it (migrate's rewrite proves each run so). Anything
else (sharding, transpose, zfp, wider codes, a code some codec refuses) has no table decoder:
zarr's read is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr.buffer import default_buffer_prototype
from zarr.codecs import BytesCodec
from zarr.core.array_spec import ArrayConfig, ArraySpec  # (zarr has no public home for them)

from ..core import codetable
from .cast_value import CastValue, NumcodecsCastValue
from .scale_offset import NumcodecsScaleOffset, ScaleOffset
from ._base import zarr_dtype

__all__ = ["TableDecoder", "table_decoder"]

_ELEMENTWISE = (CastValue, NumcodecsCastValue, ScaleOffset, NumcodecsScaleOffset)


@dataclass(frozen=True)
class TableDecoder:
    """Decodes one stored chunk (its bytes as stored) into a chunk of the array's dtype and
    chunk shape, as zarr decodes it."""

    chunk_shape: tuple[int, ...]
    codes: np.dtype  # as the bytes codec stores them (its byte order)
    table: np.ndarray  # the decoded value of every code, indexed as codetable.domain orders them
    bytes_codecs: tuple[Any, ...]
    spec: ArraySpec  # what the bytes -> bytes codecs are given

    def decode(self, stored: bytes, out: np.ndarray | None = None) -> np.ndarray:
        """The chunk ``stored`` holds (into ``out``, a C-contiguous array of the chunk's size and
        the array's dtype, if given); ValueError if its decoded size is not the chunk's."""
        buf = default_buffer_prototype().buffer.from_bytes(stored)
        for codec in reversed(self.bytes_codecs):
            buf = codec._decode_sync(buf, self.spec)
        raw = np.frombuffer(buf.as_numpy_array(), dtype=np.uint8)
        n = math.prod(self.chunk_shape)
        if raw.size != n * self.codes.itemsize:
            raise ValueError(f"a stored chunk decodes to {raw.size} bytes, not {n * self.codes.itemsize}")
        codes = raw.view(self.codes)
        if not codes.dtype.isnative:
            codes = codes.byteswap().view(codes.dtype.newbyteorder())
        flat = np.empty(n, self.table.dtype) if out is None else out.reshape(-1)
        if flat.size != n or flat.dtype != self.table.dtype:
            raise ValueError(f"out must hold {n} items of {self.table.dtype}")
        if not codetable.take(codes, self.table, flat):
            flat[:] = self.table[codes.view(codetable.unsigned(codes.itemsize))]
        return flat.reshape(self.chunk_shape)


def table_decoder(metadata: Any, dtype: np.dtype) -> TableDecoder | None:
    """The table decoder of a zarr v3 array (``metadata``, its numpy ``dtype``), or None where
    it has none (see the module)."""
    if getattr(metadata, "zarr_format", None) != 3:
        return None
    dtype = np.dtype(dtype)
    grid = getattr(metadata, "chunk_grid", None)
    chunk_shape = tuple(getattr(grid, "chunk_shape", ()) or ())
    codecs = tuple(metadata.codecs)
    at = next((i for i, c in enumerate(codecs) if isinstance(c, BytesCodec)), None)
    if at is None or dtype.hasobject or len(chunk_shape) != len(metadata.shape):
        return None
    chain, serializer, bytes_codecs = codecs[:at], codecs[at], codecs[at + 1:]
    if not chain or not all(isinstance(c, _ELEMENTWISE) for c in chain):
        return None
    dtypes = [dtype if dtype.byteorder in "=|" else dtype.newbyteorder("=")]
    try:
        for codec in chain:
            dtypes.append(np.dtype(codec.chunk_work.resolve_spec((1,), dtypes[-1], None)[1]))
        inner = dtypes[-1]
        if inner.hasobject or not codetable.codes_of(inner):
            return None
        values = codetable.domain(inner)
        for codec, into in zip(reversed(chain), reversed(dtypes[:-1])):
            values = codec.chunk_work.decode_chunk(values, values.shape, into)
    except Exception:  # noqa: BLE001 - some code is refused (or the chain is odd): zarr's read
        return None
    table = np.ascontiguousarray(values)
    if table.dtype != dtypes[0] or table.shape != (codetable.codes_of(inner),):
        return None
    endian = getattr(serializer, "endian", None)
    endian = getattr(endian, "value", endian)  # (an Endian member in zarr 3.1, its text in 3.4)
    codes = inner if inner.itemsize == 1 or endian is None else inner.newbyteorder("<" if endian == "little" else ">")
    spec = ArraySpec(shape=chunk_shape, dtype=zarr_dtype(inner), fill_value=inner.type(0),
                     config=ArrayConfig.from_dict({}), prototype=default_buffer_prototype())
    return TableDecoder(chunk_shape, codes, table, bytes_codecs, spec)
