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

import itertools
from collections.abc import Sequence

import numpy as np

from ._native import kernels

__all__ = ["copy_is_tiled", "inverse_order", "normalize_order", "transpose"]

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
    return _plan(a, normalize_order(order, a.ndim))[2] is not None


def _plan(a: np.ndarray, order: tuple[int, ...]) -> tuple[np.ndarray, list[int], int | None]:
    """The (possibly axis-merged) source view, its permutation, and the tiling axis or None."""
    if a.flags.c_contiguous and a.size:
        shape, perm = _merge_axes(a.shape, order)
        src = a.reshape(shape).transpose(perm)
    else:
        perm = list(order)
        src = a.transpose(order)
    n = src.ndim
    if n < 2 or a.nbytes <= _SMALL_BYTES:
        return src, perm, None
    # p: the output axis that is contiguous in the input.
    p = perm.index(n - 1) if a.flags.c_contiguous else int(np.argmin(np.abs(a.strides)[list(order)]))
    if p == n - 1:
        return src, perm, None
    return src, perm, p


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
    order = normalize_order(order, a.ndim)
    out_shape = tuple(a.shape[ax] for ax in order)
    if out is None:
        out = np.empty(out_shape, dtype=a.dtype)
    elif out.shape != out_shape or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous {a.dtype} array of shape {out_shape}; "
            f"got {out.dtype} {out.shape}"
        )
    if a.size == 0:
        return out
    if np.may_share_memory(a, out):  # the copy would read what it has already overwritten
        a = a.copy()
    src, _, p = _plan(a, order)
    dst = out.reshape(src.shape)
    if p is None:
        np.copyto(dst, src)
    else:
        _tiled_copy(dst, src, p, a.itemsize)
    return out


def _tiled_copy(dst: np.ndarray, src: np.ndarray, p: int, itemsize: int) -> None:
    """Copy ``src`` into ``dst`` in tiles spanning output axis ``p`` and the last output axis.

    The compiled kernel does it in one call with the GIL released; the numpy version below is a
    loop over tiles, each a numpy copy, with the GIL held between them.
    """
    compiled = kernels()
    if compiled is not None:
        # as raw items: the buffer protocol refuses some dtypes (datetime64, ml_dtypes' types)
        compiled.permute(src.view(f"V{itemsize}"), dst.reshape(-1).view(np.uint8), p)
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
