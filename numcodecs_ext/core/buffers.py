"""Raw memory as typed arrays (numpy only): what the codecs' chunk plans and the numcodecs
classes' buffer handling share."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["memory_flat", "typed"]


def memory_flat(a: np.ndarray) -> np.ndarray | None:
    """A 1-D view of a contiguous array's elements in memory order; None if not contiguous."""
    if a.flags.c_contiguous:
        return a.reshape(-1)
    if a.flags.f_contiguous:
        return a.reshape(-1, order="F")
    return None


def typed(arr: np.ndarray, dtype: np.dtype, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """``arr`` as ``dtype`` (and ``shape``).

    An array of that dtype in any byte order is kept as it is (its values are right); anything
    else is taken as raw bytes, in memory order, and reinterpreted.
    """
    if arr.dtype != dtype and arr.dtype.newbyteorder("=") != dtype.newbyteorder("="):
        flat = memory_flat(arr)
        flat = (np.ascontiguousarray(arr).reshape(-1) if flat is None else flat).view(np.uint8)
        if flat.nbytes % dtype.itemsize:
            raise ValueError(f"a buffer of {flat.nbytes} bytes does not hold whole {dtype} items")
        arr = flat.view(dtype)
    if shape is not None and arr.shape != tuple(shape):
        if arr.size != math.prod(shape):
            raise ValueError(f"{arr.size} items of {dtype} do not fill an array of shape {list(shape)}")
        arr = arr.reshape(shape)
    return arr
