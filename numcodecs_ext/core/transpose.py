"""Permuting array dimensions into a new C-contiguous array, fast.

numpy's strided copy (``np.ascontiguousarray(a.transpose(order))``) walks the output in order and
reads the input with a large stride, so once the rows it touches stop fitting in the L1 cache each
cache line is fetched many times. Copying tile by tile keeps both sides cache-resident: the
compiled kernel (``_permute.c``, one call with the GIL released) runs 2.4-10x faster than numpy's
copy on large chunks, the numpy fallback (a loop over tiles) 2-6x. Small or cache-friendly cases go
straight to numpy.

Examples
--------
>>> import numpy as np
>>> a = np.arange(24).reshape(2, 3, 4)
>>> b = transpose(a, (2, 0, 1))
>>> b.shape, b.flags.c_contiguous, bool((b == a.transpose(2, 0, 1)).all())
((4, 2, 3), True, True)
>>> bool((transpose(b, inverse_order((2, 0, 1))) == a).all())
True
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _native, device
from ._native import kernels
from .buffers import typed
from .chunk_paths import ChunkPaths, fill_key
from .errors import ConfigurationError

__all__ = [
    "TransposeChunks", "chunk_transposer", "copy_is_tiled", "inverse_order", "normalize_order", "small", "transpose",
]

_SMALL_BYTES = 1 << 18  # below this, everything fits in L2 and numpy's copy is fine
_BLOCK_BYTES = 1 << 17  # a tile plus its extent along other axes


def normalize_order(order: Sequence[int] | str, ndim: int) -> tuple[int, ...]:
    """Resolve ``"C"``, ``"F"`` or a permutation to an explicit permutation of ``range(ndim)``.

    >>> normalize_order("F", 3), normalize_order([1, 0], 2)
    ((2, 1, 0), (1, 0))
    """
    if isinstance(order, str):
        if order == "C":
            return tuple(range(ndim))
        if order == "F":
            return tuple(range(ndim - 1, -1, -1))
        raise ValueError(f"order {order!r} is not valid; use 'C', 'F' or a permutation of 0..n-1")
    perm = tuple(int(i) for i in order)
    if len(perm) != ndim or sorted(perm) != list(range(ndim)):
        raise ValueError(
            f"order {list(perm)} is not a permutation of 0..{ndim - 1} for a {ndim}-dimensional array"
        )
    return perm


def inverse_order(order: Sequence[int]) -> tuple[int, ...]:
    """The permutation that undoes ``order``.

    >>> inverse_order((2, 0, 1))
    (1, 2, 0)
    """
    inv = [0] * len(order)
    for i, ax in enumerate(order):
        inv[ax] = i
    return tuple(inv)


def _merge_axes(shape: tuple[int, ...], order: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """Drop length-1 axes and fuse runs of output axes that are consecutive input axes.

    The copy is then the same copy of a C-contiguous array with fewer, longer axes; many 3-D and
    4-D permutations become a batch of 2-D transposes or a plain copy.
    """
    keep = [ax for ax in range(len(shape)) if shape[ax] != 1]
    remap = {ax: i for i, ax in enumerate(keep)}
    kept_shape = [shape[ax] for ax in keep]
    kept_order = [remap[ax] for ax in order if ax in remap]
    groups: list[list[int]] = []
    for ax in kept_order:
        if groups and groups[-1][-1] + 1 == ax:
            groups[-1].append(ax)
        else:
            groups.append([ax])
    by_input = sorted(groups, key=lambda g: g[0])
    merged_shape = [int(np.prod([kept_shape[ax] for ax in g])) for g in by_input]
    position = {g[0]: i for i, g in enumerate(by_input)}
    return merged_shape, [position[g[0]] for g in groups]


def copy_is_tiled(a: np.ndarray, order: Sequence[int]) -> bool:
    """Whether :func:`transpose` would copy tile by tile (else numpy's own copy is as good).

    Callers whose next step copies the data anyway (zarr's bytes codec after encoding, the write
    into the output array after decoding) can hand on ``a.transpose(order)``, a view, when this
    is False. Where it is True, tiling wins even with that extra copy after it: strides of a
    power of two thrash numpy's strided copy even when few cache lines are in flight.
    """
    if a.nbytes <= _SMALL_BYTES:
        return False
    return _geometry_of(a, order).tile_axis is not None


@dataclass(frozen=True)
class _Geometry:
    """How to copy arrays of one shape, strides and item size into ``order``: the source view
    is ``a.reshape(merged).transpose(perm)`` (or ``a.transpose(perm)`` when ``merged`` is
    None), tiled along output axis ``tile_axis`` and the last one (None: numpy's copy)."""

    order: tuple[int, ...]
    out_shape: tuple[int, ...]
    merged: tuple[int, ...] | None
    perm: tuple[int, ...]
    tile_axis: int | None

    def source(self, a: np.ndarray) -> np.ndarray:
        return (a if self.merged is None else a.reshape(self.merged)).transpose(self.perm)


def _geometry_of(a: np.ndarray, order: Sequence[int]) -> _Geometry:
    """The copy plan for ``a`` (worked out once per geometry: zarr hands a codec chunk after chunk
    of the same shape and layout, and the planning costs more Python than the copy's call)."""
    key = (a.shape, a.strides, a.dtype, tuple(order))
    geometry = _GEOMETRIES.get(key)
    if geometry is None:
        geometry = _plan(a.shape, a.strides, a.itemsize, bool(a.flags.c_contiguous),
                         normalize_order(order, a.ndim), _plain(a.dtype))
        if len(_GEOMETRIES) >= _MAX_GEOMETRIES:
            _GEOMETRIES.clear()
        _GEOMETRIES[key] = geometry
    return geometry


#: copy plans by (shape, strides, dtype, order); a dict read without a lock is safe, and a plan
#: computed twice by two threads is the same plan
_GEOMETRIES: dict[tuple[Any, ...], _Geometry] = {}
_MAX_GEOMETRIES = 1024


def _plain(dtype: np.dtype) -> bool:
    """Whether items of ``dtype`` are plain bytes, which the tiled copy may move as such: not
    references (object arrays, numpy's variable-width strings, which need numpy's own copy to
    count their references)."""
    return not dtype.hasobject and dtype.kind != "T"


def _plan(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int, c_contiguous: bool,
          order: tuple[int, ...], plain: bool = True) -> _Geometry:
    """The (possibly axis-merged) source view, its permutation, and the tiling axis or None
    (always None for items that are not ``plain``: numpy's copy handles those)."""
    size = math.prod(shape)
    if c_contiguous and size:
        merged, perm = _merge_axes(shape, order)
        geometry_shape = [merged[ax] for ax in perm]
        merged_shape: tuple[int, ...] | None = tuple(merged) if tuple(merged) != shape else None
    else:
        merged_shape, perm = None, list(order)
        geometry_shape = [shape[ax] for ax in order]
    n = len(geometry_shape)
    if n < 2 or size * itemsize <= _SMALL_BYTES or not plain:
        return _Geometry(order, tuple(shape[ax] for ax in order), merged_shape, tuple(perm), None)
    # p: the output axis that is contiguous in the input.
    if c_contiguous:
        p = perm.index(n - 1)
    else:
        p = int(np.argmin(np.abs(np.asarray(strides, dtype=np.int64)[list(order)])))
    return _Geometry(order, tuple(shape[ax] for ax in order), merged_shape, tuple(perm), None if p == n - 1 else p)


def transpose(a: np.ndarray, order: Sequence[int], out: np.ndarray | None = None) -> np.ndarray:
    """Return ``a.transpose(order)`` as a new C-contiguous array (or written into ``out``).

    Parameters
    ----------
    a
        Input array of any layout.
    order
        A permutation of ``range(a.ndim)``: output axis ``i`` is input axis ``order[i]``.
    out
        Optional C-contiguous destination of the transposed shape and ``a.dtype``.

    Returns
    -------
    numpy.ndarray
        The transposed, C-contiguous array.
    """
    geometry = _geometry_of(a, order)
    out_shape = geometry.out_shape
    if out is None:
        out = np.empty(out_shape, dtype=a.dtype)  # (new memory: it cannot overlap a)
    elif out.shape != out_shape or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous {a.dtype} array of shape {out_shape}; "
            f"got {out.dtype} {out.shape}"
        )
    elif a.size and np.may_share_memory(a, out):  # the copy would read what it has overwritten
        a = a.copy()
        geometry = _geometry_of(a, geometry.order)
    if a.size == 0:
        return out
    src = geometry.source(a)
    dst = out.reshape(src.shape)
    if geometry.tile_axis is None:
        np.copyto(dst, src)
    else:
        _tiled_copy(dst, src, geometry.tile_axis, a.itemsize)
    return out


def small(a: np.ndarray) -> bool:
    """Whether ``a`` is small enough that numpy's own copy is as fast as the tiled one."""
    return a.nbytes <= _SMALL_BYTES


def chunk_transposer(a: np.ndarray, order: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
    """For arrays laid out as ``a`` (its shape, strides and dtype): a function giving
    ``transpose(x, order)`` where the copy is tiled (:func:`copy_is_tiled`), else the view
    ``x.transpose(order)``, for callers whose next step copies anyway. Everything is worked out
    here, once: a codec calls it for chunk after chunk of one layout, and after a large chunk
    every line of Python runs from cold caches, with the GIL held.

    >>> a = np.arange(6).reshape(2, 3)
    >>> chunk_transposer(a, (1, 0))(a)  # small: a view
    array([[0, 3],
           [1, 4],
           [2, 5]])
    """
    geometry = _geometry_of(a, order)
    perm = geometry.order
    if a.nbytes <= _SMALL_BYTES or geometry.tile_axis is None:
        return lambda x: x.transpose(perm)
    compiled = kernels()
    if compiled is None:
        return lambda x: transpose(x, perm)
    permute, raw, tile, shape, dtype = (compiled.permute, _raw_items(a.itemsize),
                                        geometry.tile_axis, geometry.out_shape, a.dtype)
    source, empty, u8 = geometry.source, np.empty, np.dtype(np.uint8)
    if _exports_buffer(dtype) and a.flags.c_contiguous:
        # the view's geometry once, as plain numbers: each chunk is then one C call on buffers
        view = source(a)
        plan = np.array([view.ndim, tile, a.itemsize, *view.shape, *view.strides],
                        np.int64).tobytes()
        permute_plan = compiled.permute_plan

        def planned(x: np.ndarray) -> np.ndarray:
            out = empty(shape, x.dtype)  # (x's own dtype object; new memory: no overlap)
            permute_plan(x, out, plan)
            return out

        return planned

    def run(x: np.ndarray) -> np.ndarray:  # (other layouts, and dtypes numpy does not export)
        out = empty(shape, x.dtype)
        permute(source(x).view(raw), out.reshape(-1).view(u8), tile)
        return out

    return run


@functools.lru_cache(maxsize=64)
def _exports_buffer(dtype: np.dtype) -> bool:
    """Whether numpy exports arrays of ``dtype`` through the buffer protocol (not datetime64 or
    ml_dtypes' types: those go to the kernels as raw items). Only asked of plain dtypes."""
    if not _plain(dtype):
        return False
    try:
        memoryview(np.zeros(1, dtype))
    except (ValueError, TypeError, BufferError):
        return False
    return True


@functools.lru_cache(maxsize=64)
def _raw_items(itemsize: int) -> np.dtype:
    return np.dtype(f"V{itemsize}")


def _tiled_copy(dst: np.ndarray, src: np.ndarray, p: int, itemsize: int) -> None:
    """Copy ``src`` into ``dst`` in tiles spanning output axis ``p`` and the last output axis.

    The compiled kernel does it in one call with the GIL released; the numpy version below is a
    loop over tiles, each a numpy copy, with the GIL held between them.
    """
    compiled = kernels()
    if compiled is not None:
        # as raw items: the buffer protocol refuses some dtypes (datetime64, ml_dtypes' types)
        compiled.permute(src.view(_raw_items(itemsize)), dst.reshape(-1).view(np.uint8), p)
        return
    n = src.ndim
    # Long runs along p (contiguous reads), short ones along the last axis (contiguous writes);
    # the shapes are the fastest measured for 1- to 16-byte items on these machines.
    along_p, along_q = (512, 8) if src.shape[p] >= 512 else (128, 32)
    sizes = [1] * n
    sizes[p] = along_p
    sizes[n - 1] = along_q
    rest = max(1, _BLOCK_BYTES // (along_p * along_q * itemsize))
    for ax in range(n - 2, -1, -1):
        if ax != p:
            sizes[ax] = min(src.shape[ax], rest)
            rest = max(1, rest // sizes[ax])
    starts = [range(0, src.shape[ax], sizes[ax]) for ax in range(n)]
    for corner in itertools.product(*starts):
        index = tuple(slice(s, s + size) for s, size in zip(corner, sizes))
        dst[index] = src[index]


@dataclass(frozen=True)
class TransposeChunks:
    """The chunk work of one ``transpose`` configuration (the numcodecs and zarr v3 classes
    both run it): ``order`` is a permutation, or ``"C"``/``"F"`` (resolved per chunk).

    >>> plan = TransposeChunks((1, 0))
    >>> plan.resolve_spec((2, 3), np.dtype("f8"), 0.0)
    ((3, 2), dtype('float64'), 0.0)
    >>> plan.encode_chunk(np.arange(6).reshape(2, 3)).tolist()
    [[0, 3], [1, 4], [2, 5]]
    """

    order: tuple[int, ...] | str
    paths: ChunkPaths = field(default_factory=ChunkPaths, repr=False, compare=False)

    def permutation(self, ndim: int) -> tuple[int, ...]:
        """The explicit permutation for an array of ``ndim`` dimensions."""
        order = self.order
        if isinstance(order, str):
            return normalize_order(order, ndim)
        if len(order) != ndim:
            raise ConfigurationError(
                "transpose", f"order={list(order)} has {len(order)} entries but the "
                f"array has {ndim} dimensions"
            )
        return order

    def encoded_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        perm = self.permutation(len(shape))
        return tuple(shape[ax] for ax in perm)

    def resolve_spec(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any,
                     strict: bool = True) -> tuple[tuple[int, ...], np.dtype, Any]:
        """The chunk shape, dtype and fill value the next codec sees."""
        perm = self.permutation(len(shape))
        return tuple(shape[ax] for ax in perm), dtype, fill_value

    def check_fill(self, shape: tuple[int, ...], dtype: np.dtype, fill_value: Any) -> None:
        """Raise if chunks of this shape and dtype with this fill value cannot be written."""
        key = fill_key(dtype, fill_value, len(shape))
        self.paths.check_fill_once(key, lambda: self.resolve_spec(shape, dtype, fill_value, strict=True))

    # zarr copies a chunk once more anyway (the bytes codec on encode, the write into the output
    # array on decode), so where numpy's own copy is as fast as ours a view costs nothing.
    def encode_chunk(self, arr: np.ndarray) -> np.ndarray:
        if small(arr):
            return arr.transpose(self.permutation(arr.ndim))
        # one look-up per chunk (after a large chunk, every line here runs from cold caches)
        key = (arr.shape, arr.strides, arr.dtype, _native.ENABLED)
        run = self.paths.get(key)
        if run is None:
            run = self.paths.keep(key, _transposer(arr, self.permutation(arr.ndim)))
        return run(arr)  # type: ignore[no-any-return]

    def decode_chunk(self, arr: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        arr = np.asarray(arr)
        if type(shape) is not tuple:
            shape = tuple(shape)
        if dtype.metadata is not None:  # (equal dtypes compare alike whatever their metadata)
            return self._decoder(arr, shape, dtype)(arr)
        key = (arr.shape, arr.strides, arr.dtype, shape, dtype, _native.ENABLED)
        run = self.paths.get(key)
        if run is None:
            run = self.paths.keep(key, self._decoder(arr, shape, dtype))
        return run(arr)  # type: ignore[no-any-return]

    def _decoder(self, arr: np.ndarray, shape: tuple[int, ...],
                 dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
        """How to decode arrays laid out as ``arr`` into ``shape`` and ``dtype``."""
        order = self.permutation(len(shape))
        enc_shape = tuple(shape[ax] for ax in order)
        perm = inverse_order(order)
        if arr.ndim == len(order) and arr.dtype == dtype:
            # an encoded array with a spec it does not fit (e.g. the encoded side's, handed to the
            # sync method directly): its own shape says how to undo the permutation, as zarr's
            # own transpose, which ignores the spec, would
            return _transposer(arr, perm)

        def general(x: np.ndarray) -> np.ndarray:  # raw bytes, another dtype: reinterpreted
            src = typed(x, dtype, enc_shape)
            return src.transpose(perm) if small(src) else _transposer(src, perm)(src)

        return general

    def device_encode(self, xp: Any, arr: Any) -> Any:
        """``encode_chunk`` on the array's own device (its array API namespace ``xp``)."""
        return device.transpose(xp, arr, self.permutation(arr.ndim))

    def device_decode(self, xp: Any, arr: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        """``decode_chunk`` on the device, or None: then the caller decodes a host copy."""
        if device.numpy_dtype(xp, arr.dtype) != dtype or arr.shape != self.encoded_shape(shape):
            return None
        return device.transpose(xp, arr, inverse_order(self.permutation(len(shape))))


def _transposer(arr: np.ndarray, perm: tuple[int, ...]) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`chunk_transposer` (the view, for small arrays) for arrays laid out as ``arr``."""
    return (lambda x: x.transpose(perm)) if small(arr) else chunk_transposer(arr, perm)
