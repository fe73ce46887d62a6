"""Encoding whole chunks of a zarr v3 array as zarr's write does, without zarr's write machinery.

zarr writes a selection by indexing it chunk by chunk and sending every chunk through the codec
chain on its event loop, each codec of ours and most of zarr's on a thread hop of its own
(``asyncio.to_thread``): for a run of whole chunks, which the tools write, that machinery costs
as much as the encoding itself. :class:`ChunkEncoder` runs the same chain in the calling thread:
the same codec objects of the array's metadata, their synchronous encoding (what zarr 3.4's
synchronous pipeline calls), the chunk specs zarr resolves (the regular grid's one spec, and
each codec's ``resolve_metadata``), zarr's own test for a chunk that holds only the fill value
(``NDBuffer.all_equal``: such a chunk is not stored unless ``write_empty_chunks``), and an edge
chunk padded with the fill value as zarr pads it. The bytes are zarr's by construction; the
tests compare them with zarr's write for every chain kind.

Arrays whose codecs cannot all encode this way (sharding, which zarr writes by merging into
the stored shard; a codec of another package without a synchronous encoding), 0-d arrays, and
data types of variable size, get no encoder: zarr's write is used.

Examples
--------
>>> import numpy as np, zarr
>>> from numcodecs_ext.zarr3 import CastValue, ScaleOffset
>>> store = {}
>>> z = zarr.create_array(store, shape=(6,), chunks=(4,), dtype="float32", fill_value=0,
...                       filters=[ScaleOffset(offset=0, scale=10), CastValue(data_type="uint8")])
>>> z[:] = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "float32")
>>> enc = chunk_encoder(z.metadata, z.config)
>>> enc.encode(np.array([0.1, 0.2, 0.3, 0.4], "float32")).to_bytes() == store["c/0"].to_bytes()
True
>>> enc.encode(enc.padded(np.array([0.5, 0.6], "float32"))).to_bytes() == store["c/1"].to_bytes()
True
>>> enc.encode(np.zeros(4, "float32")) is None  # only the fill value: zarr stores no object
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from zarr.buffer import default_buffer_prototype
from zarr.core.array_spec import ArrayConfig, ArraySpec  # (zarr has no public home for them)

from ._base import native_dtype

__all__ = ["ChunkEncoder", "chunk_encoder"]


@dataclass(frozen=True)
class ChunkEncoder:
    """Encodes one whole chunk (the array's dtype and chunk shape) into the bytes zarr stores."""

    dtype: np.dtype  # of the chunks (native byte order, as zarr hands them to the first codec)
    steps: tuple[tuple[Any, Any], ...]  # each codec with the chunk spec zarr gives it

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        return tuple(self.steps[0][1].shape)

    def encode(self, chunk: np.ndarray) -> Any:
        """The bytes (a zarr Buffer) zarr stores for ``chunk``, or None where it stores none
        (the chunk holds only the fill value and empty chunks are not written). The bytes never
        share memory with ``chunk``."""
        if chunk.shape != self.chunk_shape or chunk.dtype != self.dtype:
            raise ValueError(f"a chunk of {self.chunk_shape} {self.dtype} is needed, not {chunk.shape} {chunk.dtype}")
        spec = self.steps[0][1]  # (the array's fill value and configuration, as zarr's write sees them)
        prototype = spec.prototype
        buf = prototype.nd_buffer.from_ndarray_like(chunk)
        if not spec.config.write_empty_chunks and buf.all_equal(spec.fill_value):
            return None
        for codec, spec in self.steps:
            # (the codec protocol's synchronous half: what every codec implements, zarr's too)
            buf = codec._encode_sync(buf, spec)
        if np.may_share_memory(buf.as_numpy_array(), chunk):
            # (a chain of no copying codec stores a view of the values; some stores keep the very
            # object they are given, which must not change when the caller reuses its buffer)
            buf = prototype.buffer.from_bytes(buf.to_bytes())
        return buf

    def padded(self, values: np.ndarray) -> np.ndarray:
        """``values`` (the part of an edge chunk inside the array) in a chunk of the fill value."""
        spec = self.steps[0][1]
        # (zarr's own padded chunk: its buffer's create, as its write makes one)
        chunk = spec.prototype.nd_buffer.create(shape=spec.shape, dtype=self.dtype, order=spec.config.order,
                                                fill_value=spec.fill_value).as_numpy_array()
        chunk[tuple(slice(0, n) for n in values.shape)] = values
        return chunk


def chunk_encoder(metadata: Any, config: Any = None) -> ChunkEncoder | None:
    """The chunk encoder of a zarr v3 array (``metadata``; ``config``, the array's
    ``ArrayConfig``, by default zarr's configured one), or None where it has none (see the
    module)."""
    if getattr(metadata, "zarr_format", None) != 3 or not metadata.shape:
        return None
    codecs = tuple(metadata.codecs)
    if not codecs or not all(callable(getattr(c, "_encode_sync", None)) for c in codecs):
        return None
    if any(hasattr(c, "encode_partial") for c in codecs):  # sharding: zarr merges into stored shards
        return None
    config = config if config is not None else ArrayConfig.from_dict({})
    try:
        chunk_shape = tuple(getattr(metadata.chunk_grid, "chunk_shape", None) or ())
        if len(chunk_shape) != len(metadata.shape):  # a grid that is not regular
            return None
        # (the spec zarr gives the chain of every chunk of a regular grid, zarr 3.1 and 3.4 alike)
        spec = ArraySpec(shape=chunk_shape, dtype=metadata.dtype, fill_value=metadata.fill_value, config=config,
                         prototype=default_buffer_prototype())
        dtype = native_dtype(spec)
        if dtype.hasobject or dtype.itemsize == 0 or dtype.kind in "OSUT":
            return None
        steps = []
        for codec in codecs:
            steps.append((codec, spec))
            spec = codec.resolve_metadata(spec)
    except Exception:  # noqa: BLE001 - anything zarr would resolve otherwise: its own write
        return None
    return ChunkEncoder(dtype, tuple(steps))
