"""Storing a rewritten run: its chunks encoded in the task's thread, as zarr's write encodes them.

The run's values are whole chunks (runs are chunk-aligned; the array's edge chunks are padded
with the fill value, as zarr pads them). Each chunk goes through the array's codec chain in the
calling thread (:mod:`numcodecs_ext.zarr3.chunk_encoder`: the same codec objects, specs and
empty-chunk rule as zarr's write), and the run's objects are stored, or deleted where zarr
stores none, in one concurrent round on the store zarr writes to. zarr's own write sends every
chunk through its event loop and a thread hop per codec: for the chunks of a migration, that
machinery cost as much as the encoding.

Where the array has no chunk encoder, or the values are not of the array's own dtype in some
byte order (zarr converts them first), :func:`store_run` says so and the caller writes through
zarr. What is stored never shares memory with the values: the caller may reuse their buffer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Any

import numpy as np

from .runs import built_once, stored_chunks

__all__ = ["store_run"]


async def _put(store: Any, items: list[tuple[str, Any]]) -> None:
    """Store (or delete, for None) every object of ``items``, at most as many at once as zarr's
    own write (``async.concurrency``; a run of small chunks can hold thousands); returns once
    every request has ended, and raises the first failure then (nothing lands afterwards)."""
    import zarr

    most = zarr.config.get("async.concurrency")
    limit = asyncio.Semaphore(max(1, int(most)) if most else max(1, len(items)))

    async def one(key: str, data: Any) -> None:
        async with limit:
            await (store.set(key, data) if data is not None else store.delete(key))

    ended = await asyncio.gather(*(one(k, b) for k, b in items), return_exceptions=True)
    failed = next((e for e in ended if isinstance(e, BaseException)), None)
    if failed is not None:
        raise failed


def store_run(store: Any, path: str, array: Any, sel: tuple[slice, ...], values: Any, *, key: Hashable) -> bool:
    """Encode the chunk-aligned run ``sel`` of ``array`` (the zarr array at ``path`` in the zarr
    ``store``) holding ``values``, and store its chunks as zarr's write would; False (nothing
    written) where it cannot be done so. ``key`` names the array's metadata. Raises what the
    codecs raise (a value or a fill value they refuse)."""
    from ..store.base import run_sync
    from ..zarr3.chunk_encoder import chunk_encoder

    encoder = built_once(("chunk encoder", key), lambda: chunk_encoder(array.metadata, array.config)) if sel else None
    if encoder is None or not isinstance(values, np.ndarray):
        return False
    if values.dtype != encoder.dtype:
        if values.dtype.newbyteorder("=") != encoder.dtype:  # zarr converts other types its own way
            return False
        values = values.astype(encoder.dtype)  # (another byte order: the same values)
    items = []
    for name, local in stored_chunks(array.metadata, path, sel, encoder.chunk_shape):
        chunk = values[local]
        if chunk.shape != encoder.chunk_shape:  # an edge chunk of the array
            chunk = encoder.padded(chunk)
        items.append((name, encoder.encode(chunk)))
    run_sync(_put(store, items))
    return True
