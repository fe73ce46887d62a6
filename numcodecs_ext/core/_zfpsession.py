"""One libzfp session per chunk: open a stream and a field, set the mode, attach a buffer,
compress or decompress, close everything.

With the compiled kernels built, the session is one C call (``_zfpcall.c``) that gives up the GIL
once: the set-up calls, the work, and for lossy float data the check of the values. Without
them, the same libzfp calls go through ctypes (``_libzfp.py``), the set-up ones with the GIL held.
Both make the same calls with the same arguments, so the streams are the same bytes (the tests
run both). The largest stream of a mode, type and shape is worked out once and remembered.

The caller (:mod:`.zfp`) validates everything first; here ``mode`` is its normalised mode
(a :class:`.zfp_mode.ZfpMode`), ``shape`` the array's shape (0- to 4-D) and
``ztype`` libzfp's type number. numpy and ctypes; knows nothing about numcodecs or zarr.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import numpy as np

from . import _libzfp
from ._native import kernels

__all__ = ["compiled", "compress", "decoder", "decompress", "encoder", "max_size", "scratch"]

#: mode numbers of the compiled session
_MODES = {"reversible": 0, "fixed_rate": 1, "fixed_precision": 2, "fixed_accuracy": 3,
          "expert": 4}

_tls = threading.local()
_SCRATCH_KEEP = 64 * 2**20  # keep per-thread scratch buffers up to this size


def scratch(nbytes: int) -> np.ndarray:
    """A per-thread reusable byte buffer of at least ``nbytes`` (8-byte aligned)."""
    buf = getattr(_tls, "buf", None)
    if buf is None or buf.size < nbytes:
        buf = np.empty(max(nbytes, 4096), dtype=np.uint8)
        if nbytes <= _SCRATCH_KEEP:
            _tls.buf = buf
    return buf


class _Compiled:
    """The compiled session's functions and the libzfp they call (kept loaded by ``lib``)."""

    def __init__(self, module: Any, lib: _libzfp.LibZfp) -> None:
        self.module, self.lib = module, lib
        self.api = module.zfp_api(lib.addresses())


_current: _Compiled | None = None


def _session_kernels() -> _Compiled | None:
    """The compiled session (over the one libzfp :func:`._libzfp.load` gives), or None when
    the compiled kernels are not built or switched off."""
    global _current
    module = kernels()
    if module is None or not hasattr(module, "zfp_api"):
        return None
    current = _current
    if current is None or current.module is not module:
        current = _current = _Compiled(module, _libzfp.load())  # (two threads: both the same)
    return current


def compiled() -> bool:
    """Whether sessions run as one compiled call (see the module docstring)."""
    return _session_kernels() is not None


@lru_cache(maxsize=1024)
def _spec(mode: Any, ztype: int, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The compiled calls' leading arguments: type, mode, dimensions, parameters, sizes x first."""
    sizes = tuple(reversed(shape)) or (1,)
    padded = sizes + (1,) * (4 - len(sizes))
    a, b, c, d = mode.c_params()
    return (ztype, _MODES[mode.name], len(sizes), float(a), int(b), int(c), int(d), *padded)


@lru_cache(maxsize=1024)
def max_size(mode: Any, ztype: int, shape: tuple[int, ...]) -> int:
    """The largest stream libzfp can write for this mode, type and shape (bytes)."""
    compiled = _session_kernels()
    if compiled is not None:
        return int(compiled.module.zfp_max_size(compiled.api, *_spec(mode, ztype, shape)))
    lib = _libzfp.load()
    with _session(lib, mode, ztype, None, shape) as (zs, field, _):
        return int(lib.zfp_stream_maximum_size(zs, field))


def compress(work: np.ndarray, mode: Any, ztype: int,
             check: tuple[int, float, float] | None = None) -> bytes | None:
    """The zfp stream of the C-contiguous ``work`` (of libzfp's type ``ztype``).

    ``check`` asks the compiled session to look at float values first: ``(item size, limit,
    tiny)``; if some value is not finite, ``|v| >= limit`` or ``0 < |v| < tiny``, nothing is
    compressed and None is returned (the caller's own checks then decide). Without the compiled
    session (the kernels may be switched off since the caller asked) a requested check returns
    None at once: the caller's checks must run.
    """
    shape = work.shape
    encode, capacity = encoder(mode, ztype, shape)
    out = scratch(capacity)
    if encode is not None:
        item, limit, tiny = check if check is not None else (0, 0.0, 0.0)
        return encode(work, out, item, limit, tiny)  # type: ignore[no-any-return]
    if check is not None:
        return None
    lib = _libzfp.load()
    with _session(lib, mode, ztype, _address(work), shape) as (zs, field, attach):
        attach(_address(out), capacity)
        size = int(lib.zfp_compress(zs, field))
    if size == 0 or size > capacity:
        raise RuntimeError(f"zfp_compress failed (returned {size}, capacity {capacity})")
    return out[:size].tobytes()


def encoder(mode: Any, ztype: int, shape: tuple[int, ...]) -> tuple[Any, int]:
    """``(encode, capacity)``: with the compiled session, its C function with the leading
    arguments bound, called as ``encode(work, out, check item, limit, tiny)`` with ``out`` at
    least ``capacity`` bytes (see :func:`compress`); ``encode`` is None without it."""
    return _encoder(mode, ztype, shape, _session_kernels() is not None)


@lru_cache(maxsize=1024)
def _encoder(mode: Any, ztype: int, shape: tuple[int, ...], compiled: bool) -> tuple[Any, int]:
    session = _session_kernels() if compiled else None
    capacity = max_size(mode, ztype, shape)
    if session is None:
        return None, capacity
    return functools.partial(session.module.zfp_encode, session.api,
                             *_spec(mode, ztype, shape)), capacity


def decompress(src: np.ndarray, work: np.ndarray, mode: Any, ztype: int) -> int:
    """Decompress the stream ``src`` (bytes as uint8) into the C-contiguous writable ``work`` and
    return how many bytes it took (see :func:`decoder`)."""
    decode, size = decoder(mode, ztype, work.shape)
    return decode(src, scratch(max(size, src.size + 8)), work)


def decoder(mode: Any, ztype: int, shape: tuple[int, ...]) -> tuple[Decoder, int]:
    """``(decode, padded size)`` for streams of this mode, type and shape: ``decode(src, padded,
    work)`` decompresses ``src`` into ``work`` and returns how many bytes it took. libzfp does
    not check the end of its buffer, so the stream is first copied into ``padded``, at least
    ``padded size`` bytes (the largest stream for this field, and 8 more) and 8 more than the
    stream: a truncated or corrupt stream stays inside our memory (bytes after it may be stale,
    but reading them always ends with more bytes taken than given, which the caller refuses).

    With the compiled session ``decode`` is the C function itself, with its leading arguments
    bound: no Python runs between the caller and libzfp (after a large chunk the caller's own
    code runs from cold caches, so every Python frame on the way back costs microseconds).
    """
    return _decoder(mode, ztype, shape, _session_kernels() is not None)


Decoder = Callable[[np.ndarray, np.ndarray, np.ndarray], int]


@lru_cache(maxsize=1024)
def _decoder(mode: Any, ztype: int, shape: tuple[int, ...], compiled: bool) -> tuple[Decoder, int]:
    size = max_size(mode, ztype, shape) + 8
    session = _session_kernels() if compiled else None
    if session is not None:
        return functools.partial(session.module.zfp_decode, session.api,
                                 *_spec(mode, ztype, shape)), size

    def decode(src: np.ndarray, padded: np.ndarray, work: np.ndarray) -> int:
        lib = _libzfp.load()
        padded[: src.size] = src
        with _session(lib, mode, ztype, _address(work), shape) as (zs, field, attach):
            attach(_address(padded), padded.size)
            return int(lib.zfp_decompress(zs, field))

    return decode, size


# --- the same session through ctypes ---------------------------------------------------------

def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]  # type: ignore[no-any-return]


def _open_stream(lib: _libzfp.LibZfp, mode: Any, ztype: int) -> int:
    zs = lib.zfp_stream_open(None)
    if not zs:
        raise MemoryError("libzfp could not allocate a zfp_stream")
    name = mode.name
    if name == "reversible":
        lib.zfp_stream_set_reversible(zs)
    elif name == "fixed_rate":
        # zarrs' quirk, reproduced on purpose: dims = 3 for every chunk, no word alignment.
        lib.zfp_stream_set_rate(zs, mode.rate, ztype, 3, 0)
    elif name == "fixed_precision":
        lib.zfp_stream_set_precision(zs, mode.precision)
    elif name == "fixed_accuracy":
        lib.zfp_stream_set_accuracy(zs, mode.tolerance)
    else:
        if not lib.zfp_stream_set_params(zs, mode.minbits, mode.maxbits, mode.maxprec, mode.minexp):
            lib.zfp_stream_close(zs)
            raise ValueError("libzfp refused the expert parameters")
    return zs  # type: ignore[no-any-return]


def _open_field(lib: _libzfp.LibZfp, pointer: int | None, ztype: int,
                shape: tuple[int, ...]) -> int:
    nd = len(shape)
    if nd <= 1:
        field = lib.zfp_field_1d(pointer, ztype, shape[0] if nd else 1)
    elif nd == 2:
        field = lib.zfp_field_2d(pointer, ztype, shape[1], shape[0])
    elif nd == 3:
        field = lib.zfp_field_3d(pointer, ztype, shape[2], shape[1], shape[0])
    else:
        field = lib.zfp_field_4d(pointer, ztype, shape[3], shape[2], shape[1], shape[0])
    if not field:
        raise MemoryError("libzfp could not allocate a zfp_field")
    return field  # type: ignore[no-any-return]


@contextlib.contextmanager
def _session(
    lib: _libzfp.LibZfp, mode: Any, ztype: int, pointer: int | None, shape: tuple[int, ...]
) -> Iterator[tuple[int, int, Callable[[int, int], None]]]:
    """A zfp_stream and zfp_field for one call, freed on exit with any attached bitstream.

    Yields ``(stream, field, attach)``; ``attach(address, size)`` points the stream at a buffer.
    """
    zs = _open_stream(lib, mode, ztype)
    field = None
    bitstreams: list[int] = []

    def attach(address: int, size: int) -> None:
        bs = lib.stream_open(address, size)
        if not bs:
            raise MemoryError("libzfp could not allocate a bitstream")
        bitstreams.append(bs)
        lib.zfp_stream_set_bit_stream(zs, bs)
        lib.zfp_stream_rewind(zs)

    try:
        field = _open_field(lib, pointer, ztype, shape)
        yield zs, field, attach
    finally:
        for bs in bitstreams:
            lib.stream_close(bs)
        if field:
            lib.zfp_field_free(field)
        lib.zfp_stream_close(zs)
