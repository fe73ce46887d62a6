"""zfp compression of whole arrays, bit-compatible with zarrs' ``zfp`` codec.

Pure functions over numpy arrays (no numcodecs or zarr here): :func:`compress` turns a 0- to 4-D
array into a headerless zfp stream and :func:`decompress` turns such a stream back into an array
of a known shape and dtype. The bytes are those of zarrs, the reference implementation of the zarr
``zfp`` codec (formerly ``zarrs.zfp``):

* the zfp field is the C-order array: 1-D ``[nx]``, 2-D ``[ny, nx]``, 3-D ``[nz, ny, nx]``,
  4-D ``[nw, nz, ny, nx]``; a 0-d array is a 1-D field with ``nx = 1``; no zfp header; the stream
  ends on a 64-bit word boundary (``zfp_compress`` flushes);
* ``fixed_rate`` always calls ``zfp_stream_set_rate(rate, type, 3, 0)``, as zarrs does, whatever
  the array's dimensionality: a d-dimensional array really gets ``rate * 4**(3 - d)`` bits per value;
* int8/uint8/int16/uint16 are promoted to int32 like ``zfp_promote_*`` (``int N: v << (31 - N)``,
  ``uint N: (v - 2**(N-1)) << (31 - N)``) and demoted with a clamp like ``zfp_demote_*``;
* uint32/uint64 are compressed as int32/int64. zarrs clamps values >= 2**31 / 2**63 to the signed
  maximum, losing them even in reversible mode; we produce the same bytes where no value is clamped
  and raise :class:`ValueError` otherwise. Decoding maps negative values to 0, as zarrs does;
* ``fixed_accuracy`` is refused for integer data, as zarrs does.

Our own choices (the spec allows them or zarrs misbehaves there):

* float16 and bfloat16 are compressed as float32 (exact), and decoded by rounding float32 to the
  nearest value; datetime64 and timedelta64 are compressed as int64;
* lossy modes refuse NaN and infinities (zarrs encodes them and they decode as garbage);
  ``reversible`` keeps them bit for bit;
* zero-size arrays encode to zero bytes; more than 4 dimensions is an error;
* decoding never reads outside the given bytes, and raises :class:`ValueError` if the stream is
  truncated, has bytes after its end, or is longer than any valid stream could be.

The modes and their parameters are :mod:`.zfp_mode`'s, the checks before compressing
:mod:`.zfp_checks`'. Each array is one libzfp session (:mod:`._zfpsession`): one compiled call with the GIL given up
once where the kernels are built, the same libzfp calls through ctypes where not. Codecs, which
call these for chunk after chunk of one shape, use :func:`chunk_encoder` and
:func:`chunk_decoder`, which validate and set up once.

Examples
--------
>>> import numpy as np
>>> a = np.linspace(0, 1, 24, dtype="f4").reshape(4, 6)
>>> buf = compress(a, "reversible")
>>> len(buf) % 8, bool((decompress(buf, (4, 6), "float32", "reversible") == a).all())
(0, True)
>>> b = decompress(compress(a, "fixed_accuracy", tolerance=1e-3), a.shape, a.dtype,
...                "fixed_accuracy", tolerance=1e-3)
>>> bool(np.abs(b - a).max() <= 1e-3)
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from . import _zfpsession
from ._libzfp import ZFP_TYPE_DOUBLE, ZFP_TYPE_FLOAT
from .zfp_checks import (
    BFLOAT16,
    FLOAT_MAX,
    SUPPORTED_DTYPES,
    check_plan,
    check_settings,
    check_shape,
    check_values,
    checked_shape,
    compiled_check,
    dtype_label,
    native_dtype,
    Plan,
    prepare,
    check_chunk,
    check_dtype,
    check_encode,
)
from .zfp_mode import MODES, ZfpMode, check_config, mode_arg, settings

__all__ = [
    "MODES",
    "SUPPORTED_DTYPES",
    "ZfpMode",
    "check_chunk",
    "check_config",
    "check_encode",
    "check_dtype",
    "chunk_decoder",
    "chunk_encoder",
    "compress",
    "decompress",
    "max_compressed_size",
    "settings",
]


def max_compressed_size(shape: tuple[int, ...], dtype: Any, mode: str, **params: Any) -> int:
    """The largest stream :func:`compress` can produce for this shape, dtype and mode (bytes).

    >>> max_compressed_size((4, 4), "float64", "fixed_rate", rate=16)
    152
    """
    shape = tuple(int(n) for n in shape)
    check_shape(shape)
    zmode = ZfpMode.from_params(mode, params)
    plan = check_plan(native_dtype(dtype), zmode)
    if math.prod(shape) == 0:
        return 0
    return _zfpsession.max_size(zmode, plan.ztype, shape)


def compress(arr: Any, mode: str, **params: Any) -> bytes:
    """Compress an array into a headerless zfp stream, byte for byte as zarrs does.

    Parameters
    ----------
    arr
        A 0- to 4-D array (or anything :func:`numpy.asarray` accepts) of a supported dtype:
        int8 … uint64, float16, bfloat16, float32, float64, datetime64, timedelta64.
    mode
        ``"reversible"``, ``"fixed_accuracy"``, ``"fixed_rate"``, ``"fixed_precision"`` or
        ``"expert"``.
    **params
        The mode's parameters: ``tolerance``; ``rate``; ``precision``; or ``minbits``,
        ``maxbits``, ``maxprec`` and ``minexp``.

    Returns
    -------
    bytes
        The zfp stream (a multiple of 8 bytes; empty for a zero-size array).

    Raises
    ------
    ValueError, TypeError
        Invalid parameters, an unsupported dtype or shape, non-finite values in a lossy mode, or
        uint32/uint64 values that zarrs would clamp.

    Examples
    --------
    >>> import numpy as np
    >>> compress(np.arange(4, dtype="int8"), "reversible").hex()
    '0850020000000000'
    >>> len(compress(np.zeros((8, 8)), "fixed_rate", rate=4))  # 2-D: 4 * 4 bits per value
    128
    """
    zmode = mode_arg(mode, params)
    a = np.asarray(arr)
    plan = check_plan(native_dtype(a.dtype), zmode)
    shape = a.shape
    check_shape(shape)
    check_settings(plan, zmode, len(shape))
    if a.size == 0:
        return b""
    check = compiled_check(plan, zmode)
    work = prepare(a, plan, zmode, check_floats=check is None)
    stream = _zfpsession.compress(work, zmode, plan.ztype, check)
    if stream is None:  # the compiled check found values to look at: ours raise, or let them by
        check_values(work, plan, zmode)
        stream = _zfpsession.compress(work, zmode, plan.ztype)
    assert stream is not None
    return stream


def _as_bytes_array(buf: Any) -> np.ndarray:
    if isinstance(buf, np.ndarray):
        if not buf.flags.c_contiguous:
            buf = np.ascontiguousarray(buf)
        return buf.reshape(-1).view(np.uint8)
    return np.frombuffer(memoryview(buf).cast("B") if not isinstance(buf, bytes) else buf, np.uint8)


def decompress(
    buf: Any,
    shape: tuple[int, ...],
    dtype: Any,
    mode: str,
    *,
    out: Optional[np.ndarray] = None,
    **params: Any,
) -> np.ndarray:
    """Decompress a headerless zfp stream into an array of the given shape and dtype.

    Parameters
    ----------
    buf
        The stream: bytes, bytearray, memoryview, a numpy array, or any buffer.
    shape, dtype
        Shape (0- to 4-D) and dtype of the array that was compressed.
    mode, **params
        The compression mode and its parameters, as given to :func:`compress`.
    out
        Optional C-contiguous, writeable array of ``dtype`` with ``prod(shape)`` elements to decode
        into (it is returned, reshaped to ``shape``).

    Returns
    -------
    numpy.ndarray
        The decoded array.

    Raises
    ------
    ValueError
        If the stream is truncated, corrupt (its end does not fall at the end of the bytes), has
        bytes after its end, or cannot be a stream for this shape, dtype and mode.

    Examples
    --------
    >>> import numpy as np
    >>> decompress(bytes.fromhex("0850020000000000"), (4,), "int8", "reversible")
    array([0, 1, 2, 3], dtype=int8)
    >>> decompress(bytes.fromhex("08500200"), (4,), "int8", "reversible")
    Traceback (most recent call last):
    ...
    ValueError: zfp stream of 4 bytes is not a whole number of 64-bit words: it is truncated or corrupt
    """
    zmode = mode_arg(mode, params)
    dt_req = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    plan = check_plan(native_dtype(dt_req), zmode)
    shape = checked_shape(tuple(shape))
    src = _as_bytes_array(buf)
    n = src.size
    count = math.prod(shape)

    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
        if out.dtype != plan.dtype or out.size != count or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError(
                f"out must be a writeable C-contiguous {plan.dtype} array of {count} elements, "
                f"got {out.dtype} array of shape {out.shape}"
            )
        result = out.reshape(shape)
    else:
        result = np.empty(shape, dtype=plan.dtype)

    if count == 0:
        if n:
            raise ValueError(f"a zero-size array of shape {shape} has an empty zfp stream, got {n} bytes")
        return _finish_dtype(result, dt_req)
    if n % 8:
        raise ValueError(
            f"zfp stream of {n} bytes is not a whole number of 64-bit words: it is truncated or corrupt"
        )

    if plan.kind in ("direct", "uint"):
        work = result.view(plan.work)
    else:
        work = np.empty(shape, dtype=plan.work)

    decode, padded_size = _zfpsession.decoder(zmode, plan.ztype, shape)
    capacity = padded_size - 8
    if n > capacity:
        raise ValueError(
            f"zfp stream of {n} bytes is longer than any stream for shape {shape}, "
            f"{dtype_label(plan.dtype)} and mode {zmode.name!r} can be ({capacity} bytes): "
            "corrupt, or decoded with the wrong shape/dtype/configuration"
        )
    consumed = decode(src, _zfpsession.scratch(max(padded_size, n + 8)), work)
    if consumed != n:
        _stream_error(consumed, n, capacity, shape, plan, zmode)
    kind = plan.kind
    if kind == "direct" and result.dtype is dt_req:  # the common case: nothing more to do
        return result

    kind = plan.kind
    if kind == "uint":
        np.maximum(work, 0, out=work)  # zarrs maps negative decoded values to 0
    elif kind == "promote":
        bits = plan.bits
        np.right_shift(work, 31 - bits, out=work)
        if plan.dtype.kind == "u":
            work += 1 << (bits - 1)
            np.clip(work, 0, (1 << bits) - 1, out=work)
        else:
            np.clip(work, -(1 << (bits - 1)), (1 << (bits - 1)) - 1, out=work)
        result[...] = work
    elif kind == "float":
        if zmode.lossless and plan.dtype == BFLOAT16:
            # exact: a bfloat16 is the top half of its float32. (ml_dtypes' cast would turn
            # every NaN into its canonical NaN, payload lost, with a RuntimeWarning.)
            np.right_shift(work.view(np.uint32), 16, out=work.view(np.uint32))
            result.view(np.uint16)[...] = work.view(np.uint32)
        else:
            if not zmode.lossless:
                # a lossy value of float16/bfloat16 data can come back a little beyond the
                # type's largest finite value, which would round to +-Infinity: the nearest
                # value is the max
                fmax = FLOAT_MAX[plan.dtype]
                np.clip(work, -fmax, fmax, out=work)
            with np.errstate(invalid="ignore"):  # NaN payloads are kept (float16) as they are
                result[...] = work
    return _finish_dtype(result, dt_req)


def chunk_encoder(shape: tuple[int, ...], dtype: Any, mode: Any,
                  **params: Any) -> Callable[[np.ndarray], bytes]:
    """``lambda arr: compress(arr, mode, **params)``, for chunk after chunk of one shape and
    dtype (see :func:`chunk_decoder`). A C-contiguous float32 or float64 array goes to libzfp
    in one call with its values checked there; anything else, and values that need a closer
    look, take :func:`compress`: the results and errors are its own.

    >>> encode = chunk_encoder((4,), "float32", "fixed_rate", rate=8)
    >>> encode(np.ones(4, "float32")) == compress(np.ones(4, "float32"), "fixed_rate", rate=8)
    True
    """
    zmode = mode_arg(mode, params)
    dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    plan = check_plan(native_dtype(dt), zmode)
    shape = checked_shape(tuple(shape))
    general: Callable[[np.ndarray], bytes] = functools.partial(compress, mode=zmode)
    if plan.work != dt or plan.ztype not in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE) \
            or math.prod(shape) == 0:
        return general
    check_settings(plan, zmode, len(shape))
    encode, capacity = _zfpsession.encoder(zmode, plan.ztype, shape)
    if encode is None:
        return general
    check = compiled_check(plan, zmode) or (0, 0.0, 0.0)
    item, limit, tiny = check
    scratch = _zfpsession.scratch

    def run(arr: np.ndarray) -> bytes:
        if arr.shape != shape or arr.dtype != dt or not arr.flags.c_contiguous:
            return general(arr)
        stream = encode(arr, scratch(capacity), item, limit, tiny)
        return general(arr) if stream is None else stream  # (None: values to look at closely)

    return run


def chunk_decoder(shape: tuple[int, ...], dtype: Any, mode: Any,
                  **params: Any) -> Callable[[Any], np.ndarray]:
    """``lambda buf: decompress(buf, shape, dtype, mode, **params)``, for chunk after chunk of
    one shape and dtype: validation and set-up happen here, once.

    Results and errors are :func:`decompress`'s. For float32, float64, int32 and int64 with the
    compiled session, each call runs only a few lines of Python around the one C call: after a
    large chunk those lines run from cold caches, where each costs a microsecond or more with the
    GIL held (the other types call :func:`decompress`).

    >>> decode = chunk_decoder((4,), "int32", "reversible")
    >>> decode(compress(np.arange(4, dtype="int32"), "reversible"))
    array([0, 1, 2, 3], dtype=int32)
    """
    zmode = mode_arg(mode, params)
    dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    plan = check_plan(native_dtype(dt), zmode)
    shape = checked_shape(tuple(shape))
    if plan.work != dt or math.prod(shape) == 0 or not _zfpsession.compiled():
        return functools.partial(decompress, shape=shape, dtype=dt, mode=zmode)
    decode, padded_size = _zfpsession.decoder(zmode, plan.ztype, shape)
    capacity, scratch, empty, as_bytes = padded_size - 8, _zfpsession.scratch, np.empty, _as_bytes_array

    def run(buf: Any) -> np.ndarray:
        if type(buf) is bytes:  # (the C call reads any buffer: no array needed for bytes)
            src, n = buf, len(buf)
        else:
            src = as_bytes(buf)
            n = src.size
        if n % 8 or n > capacity or not n:
            return decompress(buf, shape, dt, zmode)  # raises, with the reason
        result = empty(shape, dt)
        consumed = decode(src, scratch(padded_size if padded_size > n + 8 else n + 8), result)
        if consumed != n:
            _stream_error(consumed, n, capacity, shape, plan, zmode)
        return result

    return run


def _stream_error(consumed: int, n: int, capacity: int, shape: tuple[int, ...], plan: Plan,
                  mode: ZfpMode) -> None:
    """Raise for a stream of ``n`` bytes of which libzfp took ``consumed``."""
    if consumed > capacity + 8:  # pragma: no cover - would be a libzfp bug
        raise RuntimeError(f"libzfp read {consumed} bytes from a {capacity + 8}-byte buffer")
    if consumed == 0 or consumed > n:
        raise ValueError(
            f"zfp stream is truncated or corrupt: decoding shape {shape} "
            f"{dtype_label(plan.dtype)} ({mode.name}) needs {consumed} bytes, got {n}"
        )
    raise ValueError(
        f"zfp stream is corrupt or decoded with the wrong shape/dtype/configuration: it ends "
        f"after {consumed} bytes, but {n} bytes were given ({n - consumed} extra)"
    )


def _finish_dtype(result: np.ndarray, dt_req: np.dtype) -> np.ndarray:
    if result.dtype != dt_req:  # non-native byte order requested
        return result.astype(dt_req)
    return result
