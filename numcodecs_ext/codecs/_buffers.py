"""Buffers in and out of the numcodecs codecs, with numcodecs' conventions.

``encode`` takes any buffer: an ndarray of any layout (kept as it is) or anything exporting the
buffer protocol (bytes, bytearray, array.array, memoryview), read as raw bytes of the configured
dtype. ``decode(buf, out=...)`` fills any writeable ``out``: an ndarray of the decoded dtype in
any layout, alignment or byte order (by value when the decoded array already has ``out``'s
shape, else in ``out``'s memory order, as :func:`numcodecs.compat.ndarray_copy` does), or a raw
buffer (bytearray, array.array, an ndarray of another dtype) that receives the decoded bytes.

Examples
--------
>>> import numpy as np
>>> out = bytearray(16)
>>> _ = deliver(np.array([1.0, 2.0]), out)
>>> np.frombuffer(out).tolist()
[1.0, 2.0]
>>> f = np.empty((2, 2), order="F")
>>> deliver(np.arange(4.0), f).tolist()  # a flat result fills out in its own memory order
[[0.0, 2.0], [1.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numcodecs.compat import ensure_contiguous_ndarray_like

from ..core.buffers import memory_flat, typed
from ..core.dtypes import show

__all__ = [
    "as_array",
    "decode_elementwise",
    "deliver",
    "fortran_only",
    "memory_flat",
    "out_dtype",
    "typed",
    "writable_bytes",
]


def as_array(buf: Any) -> np.ndarray:
    """View any buffer (bytes, bytearray, array.array, memoryview, ndarray) as an ndarray
    without copying. ndarrays keep their shape, dtype and layout; other buffers become 1-D
    arrays of their item type (``uint8`` for bytes)."""
    if isinstance(buf, np.ndarray):
        return buf
    return np.asarray(ensure_contiguous_ndarray_like(buf))


def fortran_only(arr: np.ndarray) -> bool:
    """An array laid out in Fortran order and not also in C order (ndim >= 2)."""
    return arr.ndim >= 2 and arr.flags.f_contiguous and not arr.flags.c_contiguous


def writable_bytes(out: Any) -> np.ndarray:
    """A writeable 1-D ``uint8`` view of a contiguous buffer, or ValueError saying why not."""
    arr = out if isinstance(out, np.ndarray) else None
    if arr is None:
        try:
            arr = np.frombuffer(out, dtype=np.uint8)
        except (TypeError, ValueError) as e:
            raise TypeError(f"out must be a writeable buffer or ndarray, got {type(out).__name__}") from e
    flat = memory_flat(arr)
    if flat is None or not arr.flags.writeable:
        raise ValueError("out must be a writeable, contiguous buffer")
    return flat.view(np.uint8)


def out_dtype(out: Any, decoded: np.dtype | None) -> np.dtype | None:
    """The decoded dtype when ``out`` receives values (an ndarray of that dtype, or of any
    numeric dtype if the decoded dtype is not known), else None (``out`` receives raw bytes)."""
    if not isinstance(out, np.ndarray):
        return None
    native = out.dtype.newbyteorder("=") if out.dtype.byteorder not in "=|" else out.dtype
    if decoded is None:
        return native
    return native if native == decoded.newbyteorder("=") else None


def _direct(out: np.ndarray, dtype: np.dtype) -> bool:
    """Whether results can be written straight into ``out`` (the core's ``out=`` contract)."""
    return (out.flags.c_contiguous and out.flags.writeable and out.dtype == dtype
            and out.dtype.isnative)


def deliver(result: np.ndarray, out: Any) -> Any:
    """Copy a decoded array into ``out`` (see the module docstring) and return ``out``."""
    if out_dtype(out, result.dtype) is not None:
        if result.shape != out.shape:
            if result.size != out.size:
                raise ValueError(
                    f"out has {out.size} elements of {out.dtype} but the decoded array has "
                    f"{result.size} (shape {list(result.shape)})"
                )
            order = "F" if fortran_only(out) else "C"
            result = result.reshape(-1, order="A").reshape(out.shape, order=order)
        np.copyto(out, result)  # by value: any layout, alignment or byte order
        return out
    raw = writable_bytes(out)
    src = memory_flat(result)
    src = (np.ascontiguousarray(result).reshape(-1) if src is None else src)
    if not src.dtype.isnative:
        src = src.astype(src.dtype.newbyteorder("="))
    if raw.nbytes != src.nbytes:
        raise ValueError(f"out holds {raw.nbytes} bytes but the decoded array has {src.nbytes}")
    raw[...] = src.view(np.uint8)
    return out


def decode_elementwise(
    src: np.ndarray, out: Any, decoded: np.dtype | None,
    run: Callable[[np.ndarray, np.ndarray | None], np.ndarray], codec_id: str,
) -> Any:
    """``decode(buf, out=out)`` of an element-wise codec.

    ``src`` is the encoded array (already of the encoded dtype), ``decoded`` the configured
    decoded dtype (or None), ``run(enc, target)`` decodes ``enc`` into ``target`` (a C-ordered,
    native array of ``enc``'s shape) or, with ``target=None``, into a new array.
    """
    dtype = out_dtype(out, decoded)
    if dtype is None:  # a raw buffer
        if decoded is None:
            raise ValueError(
                f"codec {show(codec_id)}: decoding into a raw buffer needs the decoded dtype; "
                "configure dtype=... or pass an ndarray of the decoded dtype as out"
            )
        dtype = decoded.newbyteorder("=")
        target = writable_bytes(out)
        if target.nbytes != src.size * dtype.itemsize:
            raise ValueError(
                f"codec {show(codec_id)}: out holds {target.nbytes} bytes but the {src.size} "
                f"decoded {dtype} items need {src.size * dtype.itemsize}"
            )
        target = target.view(dtype)
        src = src.reshape(-1, order="A")  # the decoded bytes keep the encoded memory order
    elif src.shape == out.shape:  # by value
        target = out
    else:  # a flat encoding fills out in out's memory order
        if src.size != out.size:
            raise ValueError(
                f"codec {show(codec_id)}: {src.size} encoded items cannot fill out of shape "
                f"{list(out.shape)} ({out.size} items)"
            )
        src = src.reshape(-1, order="A")
        target = memory_flat(out)
        if target is None:
            target = out
            src = src.reshape(out.shape)
    if target.shape == src.shape and _direct(target, dtype) and not np.may_share_memory(src, target):
        run(src, target)
    else:
        np.copyto(target, run(src, None).reshape(target.shape))
    return out
