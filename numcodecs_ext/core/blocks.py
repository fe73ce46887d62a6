"""Cutting arrays into cache-sized blocks, and the per-thread scratch buffers the blocks use.

Pure numpy; knows nothing about numcodecs or zarr.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["BLOCK", "KEEP_BYTES", "contiguous", "iter_blocks", "scratch"]

#: elements per block: 256 KiB of float64, comfortably inside L2 with the temporaries
BLOCK = 32768
#: per-thread scratch blocks, kept between calls: fresh ones cost a page fault per 4 KiB each call
_POOL = threading.local()


def scratch(role: str, n: int, dtype: Any) -> np.ndarray:
    """This thread's scratch array ``role`` of ``n`` elements of ``dtype`` (contents undefined)."""
    dtype = np.dtype(dtype)
    bufs = getattr(_POOL, "bufs", None)
    if bufs is None:
        bufs = _POOL.bufs = {}
    nbytes = n * dtype.itemsize
    raw = bufs.get(role)
    if raw is None or raw.size < nbytes:
        raw = bufs[role] = np.empty(nbytes, np.uint8)
    return raw[:nbytes].view(dtype)


#: scratch arrays up to this size stay with their thread for the next call; larger ones are freed
KEEP_BYTES = 64 * 2**20


def contiguous(arr: np.ndarray, role: str = "contiguous") -> np.ndarray:
    """``arr`` as a C-contiguous, aligned, native-order array: itself if it is one, else one
    copy (a single numpy call, which runs without the GIL) into this thread's scratch ``role``
    (a fresh array beyond :data:`KEEP_BYTES`). The copy is valid until the next request of
    ``role`` on this thread."""
    if arr.flags.c_contiguous and arr.flags.aligned and arr.dtype.isnative:
        return arr
    dtype = arr.dtype.newbyteorder("=") if not arr.dtype.isnative else arr.dtype
    if arr.nbytes > KEEP_BYTES:
        out = np.empty(arr.shape, dtype)
    else:
        out = scratch(role, arr.size, dtype).reshape(arr.shape)
    np.copyto(out, arr)
    return out


def iter_blocks(arr: np.ndarray, nelem: int = BLOCK) -> Iterator[tuple[np.ndarray, int, int]]:
    """Split ``arr`` into views whose C-order flattenings are consecutive runs of ``arr.flat``.

    Yields ``(view, start, stop)``; each view holds at most ``nelem`` elements unless a single
    innermost row is longer (then it is split along its last axis).
    """
    start = 0
    for view in _block_views(arr, nelem):
        stop = start + view.size
        yield view, start, stop
        start = stop


def _block_views(arr: np.ndarray, nelem: int) -> Iterator[np.ndarray]:
    if arr.size == 0:
        return
    if arr.ndim == 0:
        yield arr.reshape(1)
        return
    if arr.flags.c_contiguous:
        flat = arr.reshape(-1)
        for i in range(0, flat.size, nelem):
            yield flat[i : i + nelem]
        return
    inner = arr.size // arr.shape[0]
    if arr.ndim == 1 or inner > nelem:
        if arr.ndim == 1:
            for i in range(0, arr.shape[0], nelem):
                yield arr[i : i + nelem]
        else:
            for i in range(arr.shape[0]):
                yield from _block_views(arr[i], nelem)
        return
    step = max(1, nelem // inner)
    for i in range(0, arr.shape[0], step):
        yield arr[i : i + step]
