"""``scale_offset`` then ``cast_value`` (and the way back) in one blocked pass.

Chained as two codecs, the pair writes a full-size intermediate in the scale_offset dtype and
reads it back: for float64 stored as uint8 that is 8 bytes written and read again per 1-byte
result, usually from main memory, since a zarr batch keeps every chunk's intermediate alive at
once. Here each block of the intermediate lives in a per-thread scratch buffer that stays in
cache. The same kernels run on each block as in :mod:`.scale_offset` and :mod:`.cast_value`, so
results and errors are identical element for element.

Pure numpy (plus ml_dtypes); knows nothing about numcodecs or zarr.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import scale_offset as so
from .cast_value import _Cast, _pool_buffer, iter_blocks, numeric_info

__all__ = ["decode", "encode"]


def encode(
    arr: Any,
    offset: Any,
    scale: Any,
    dtype: Any,
    *,
    rounding: str = "nearest-even",
    out_of_range: str | None = None,
    scalar_map: Sequence[tuple[Any, Any]] = (),
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``cast_array(scale_offset.encode(arr, offset, scale), dtype, ...)`` without the
    full-size intermediate.

    Parameters as for :func:`.scale_offset.encode` (``offset``, ``scale`` in ``arr``'s dtype)
    and :func:`.cast_value.cast_array` (``dtype`` and the keywords; scalar_map keys are of
    ``arr``'s dtype, since they see the scaled values).

    Examples
    --------
    >>> x = np.array([np.nan, -10.0, 0.0, 2540.0, 9999.0])
    >>> encode(x, -10, 0.1, "uint8", out_of_range="clamp", scalar_map=[(np.nan, 0)])
    array([  0,   0,   1, 255, 255], dtype=uint8)
    """
    arr = np.asarray(arr)
    info = numeric_info(arr.dtype)
    off, sc = so.check_parameters(info.dtype, offset, scale)
    cast = _Cast(info, numeric_info(np.dtype(dtype)), rounding, out_of_range, scalar_map)
    result = so._prepare_out(arr, cast.tgt, out)
    if not arr.size:
        return result
    kernel = so.block_kernel(info)
    nelem = cast.block_elements
    flat = result.reshape(-1)
    with np.errstate(all="ignore"):
        cast.prepare(min(nelem, arr.size))
        for view, start, stop in iter_blocks(arr, nelem):
            scaled = _pool_buffer("scaled", view.size, info.dtype).reshape(view.shape)
            kernel(view, info, off, sc, scaled, "encode", 0, nelem)
            cast.run_block(scaled, flat[start:stop])
    return result


def decode(
    arr: Any,
    dtype: Any,
    offset: Any,
    scale: Any,
    *,
    rounding: str = "nearest-even",
    out_of_range: str | None = None,
    scalar_map: Sequence[tuple[Any, Any]] = (),
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``scale_offset.decode(cast_array(arr, dtype, ...), offset, scale)`` in one pass: each
    block is cast into the output, then decoded there while it is still in cache.

    Examples
    --------
    >>> decode(np.array([0, 1, 255], np.uint8), "float64", -10, 0.1,
    ...        scalar_map=[(0, np.nan)])
    array([  nan,    0., 2540.])
    """
    arr = np.asarray(arr)
    info = numeric_info(np.dtype(dtype))
    off, sc = so.check_parameters(info.dtype, offset, scale)
    cast = _Cast(numeric_info(arr.dtype), info, rounding, out_of_range, scalar_map)
    result = so._prepare_out(arr, info, out)
    if not arr.size:
        return result
    kernel = so.block_kernel(info)
    nelem = cast.block_elements
    flat = result.reshape(-1)
    with np.errstate(all="ignore"):
        cast.prepare(min(nelem, arr.size))
        for view, start, stop in iter_blocks(arr, nelem):
            o = flat[start:stop]
            cast.run_block(view, o)
            kernel(o, info, off, sc, o, "decode", start, nelem)
    return result
