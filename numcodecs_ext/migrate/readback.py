"""Proving a rewritten run from its stored chunk objects, at about the cost of reading them.

The task that rewrites a run holds the source's values. It reads back the chunk objects it
stored (one request per object, all at once on object stores: what the store now holds, not
what was sent) and decodes them as zarr decodes them, through the array's own codec objects,
with the element-wise chain as one table look-up (:mod:`numcodecs_ext.zarr3.chunk_table`); each
chunk is compared with the values, bit for bit, in the data's own type. An absent object reads
as the fill value, as in zarr.

Where the array has no table decoder, or anything differs or fails to decode, the caller reads
the run through zarr (:func:`~numcodecs_ext.migrate.runs.compare_run`), which is the authority
and says where and how it differs: this path can only save a read, never pass one that zarr's
read would fail.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..core.blocks import scratch
from ..store.faults import ObjectNotFound
from ..store.storage import Location
from .runs import built_once, same_values, stored_chunks

__all__ = ["prove_stored"]


def prove_stored(location: Location, path: str, array: Any, sel: tuple[slice, ...], values: np.ndarray,
                 *, key: Hashable) -> bool | None:
    """Whether every chunk of the chunk-aligned ``sel`` of ``array`` (at ``path`` in
    ``location``) as stored reads as ``values`` (its values in ``sel``), bit for bit; None
    where the array has no table decoder. ``key`` names the array's metadata (the decoder is
    built once per key and process)."""
    from ..zarr3.chunk_table import table_decoder

    decoder = built_once(("table decoder", key), lambda: table_decoder(array.metadata, array.dtype)) if sel else None
    if decoder is None:
        return None
    chunks = list(stored_chunks(array.metadata, path, sel, decoder.chunk_shape))
    stored = location.read_many([k for k, _ in chunks])
    fill = np.asarray(array.fill_value, dtype=decoder.table.dtype)
    # (this thread's buffer: a chunk decoded into new memory each time costs a page fault per
    # 4 KiB, on dask workers, which return freed memory at once)
    out = scratch("migrate.readback", math.prod(decoder.chunk_shape), decoder.table.dtype)
    for k, local in chunks:
        want = values[local]
        data = stored.get(k)
        if isinstance(data, ObjectNotFound):
            got = np.full(want.shape, fill)
        elif isinstance(data, (bytes, bytearray, memoryview)):
            try:
                got = decoder.decode(data if isinstance(data, bytes) else bytes(data), out)[
                    tuple(slice(0, n) for n in want.shape)]
            except Exception:  # noqa: BLE001 - zarr's read says what is wrong
                return False
        else:
            return False
        if not same_values(want, got):
            return False
    return True
