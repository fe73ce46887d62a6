"""Reading arrays in bounded blocks aligned to their chunks, and proposing chunks for new arrays.

Everything here works on any array-like with ``shape``, ``dtype`` and numpy slicing: numpy, zarr
(v2 and v3), dask, xarray variables (lazily loaded from netCDF), netCDF4 variables. A block is
made of whole chunks where a chunk fits the byte budget (trailing axes grown first, so a block is
one contiguous run of chunks where it can be), else it is a piece of one chunk, cut on as many
axes as needed, leading ones first: a single huge row is read in pieces too. No read straddles
two chunks. So memory is bounded by the budget (plus one stored chunk, which zarr and HDF5
decode whole), whatever the shape; a stored chunk is read once if it is up to 256 MB (read
whole), else in 8 pieces.

Pure numpy; no zarr or xarray import.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["RANGE_BYTES", "SAMPLE_BYTES", "WHOLE_CHUNK_BYTES", "block_shape", "blocks", "chunks_of", "data_range",
           "propose_chunks", "sample"]

#: bytes read at a time by :func:`data_range`
RANGE_BYTES = 16 << 20
#: bytes of the sample :func:`sample` reads
SAMPLE_BYTES = 4 << 20
#: bytes of the chunks :func:`propose_chunks` aims at (the same as ``convert``'s default)
CHUNK_BYTES = 8 << 20
#: a stored chunk up to this size is read whole even where it exceeds the budget: zarr and HDF5
#: decode a whole chunk to read any part of it, so cutting it would only decode it repeatedly
#: (a bigger one is read in 8 pieces: memory about 1.1 chunks, 8 decodes of each)
WHOLE_CHUNK_BYTES = 256 << 20
#: stored chunks within these bytes are kept as they are by :func:`propose_chunks`
SENSIBLE_CHUNK_BYTES = (1 << 20, 64 << 20)


def chunks_of(array: Any) -> tuple[int, ...] | None:
    """The chunk shape an array is stored (or computed) in, or None if it has none.

    zarr arrays: ``chunks``; dask arrays: the first of each axis' chunks; xarray variables: their
    dask chunks, else the ``chunksizes`` (netCDF4/HDF5) or ``preferred_chunks`` of their
    encoding; netCDF4 variables: ``chunking()``.

    >>> chunks_of(np.zeros((4, 5))) is None
    True
    """
    shape = tuple(getattr(array, "shape", ()))
    found: Any = None
    chunks = getattr(array, "chunks", None)
    if isinstance(chunks, Sequence) and len(chunks) == len(shape):
        found = [c[0] if isinstance(c, Sequence) and len(c) else c for c in chunks]
    if found is None:
        encoding = getattr(array, "encoding", None)
        if isinstance(encoding, Mapping):
            preferred = encoding.get("preferred_chunks")
            dims = getattr(array, "dims", None)
            if encoding.get("chunksizes") is not None:
                found = list(encoding["chunksizes"])
            elif isinstance(preferred, Mapping) and dims is not None:
                found = [preferred.get(d) for d in dims]
            elif encoding.get("chunks") is not None:
                found = list(encoding["chunks"])
    if found is None and callable(getattr(array, "chunking", None)):
        try:
            chunking = array.chunking()
        except Exception:  # noqa: BLE001 - a variable that cannot say: no chunks
            chunking = None
        if isinstance(chunking, Sequence) and not isinstance(chunking, str):
            found = list(chunking)
    if found is None or len(found) != len(shape):
        return None
    if not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c > 0 for c in found):
        return None
    return tuple(min(int(c), max(1, n)) for c, n in zip(found, shape))


def block_shape(shape: Sequence[int], itemsize: int, chunks: Sequence[int] | None,
                budget: int, whole_chunk: int = 0) -> tuple[int, ...]:
    """The shape of blocks of at most ``budget`` bytes aligned to ``chunks`` (None: unchunked,
    read as contiguous runs of the trailing axes). A chunk of up to ``whole_chunk`` bytes is
    one block even if it exceeds the budget (it is decoded whole anyway).

    >>> block_shape((2, 10**8), 8, None, 32 << 20)
    (1, 4194304)
    >>> block_shape((100, 50, 60), 4, (10, 5, 60), 1 << 20)
    (80, 50, 60)
    >>> block_shape((4, 4096, 4096), 4, (1, 4096, 4096), 1 << 20)
    (1, 64, 4096)
    """
    shape = [max(1, int(n)) for n in shape]
    item = max(1, int(itemsize))
    unit = [1] * len(shape) if chunks is None else [min(max(1, int(c)), n) for c, n in zip(chunks, shape)]
    if whole_chunk and chunks is not None and math.prod(unit) * item > max(budget, whole_chunk):
        # a chunk too big to read whole: in 8 pieces at most (each read decodes all of it again)
        budget = max(budget, math.prod(unit) * item // 8)
    if math.prod(unit) * item > max(budget, whole_chunk if chunks is not None else 0):
        # one chunk is too much: a piece of it, leading axes cut first (every axis if need be)
        block = list(unit)
        for axis in range(len(block)):
            if math.prod(block) * item <= budget:
                break
            rest = math.prod(block[axis + 1:]) * item
            block[axis] = max(1, budget // rest) if rest < budget else 1
        return tuple(block)
    block = list(unit)
    for axis in reversed(range(len(block))):  # whole chunks, trailing axes first
        per = math.prod(block) * item
        count = math.ceil(shape[axis] / unit[axis])
        times = min(count, max(1, budget // per))
        block[axis] = min(shape[axis], unit[axis] * times)
        if times < count:
            break
    return tuple(block)


def blocks(shape: Sequence[int], block: Sequence[int],
           chunks: Sequence[int] | None = None) -> Iterator[tuple[slice, ...]]:
    """The slices of the blocks of ``block`` shape that tile ``shape``, in C order. Where a block
    is a piece of a chunk (smaller than ``chunks`` on an axis), the pieces tile each chunk, so
    that no read straddles two chunks.

    >>> [tuple((s.start, s.stop) for s in key) for key in blocks((3, 4), (2, 4))]
    [((0, 2), (0, 4)), ((2, 3), (0, 4))]
    >>> [key[0].start for key in blocks((10,), (3,), chunks=(5,))]
    [0, 3, 5, 8]
    """
    axes = []
    for a, (n, b) in enumerate(zip(shape, block)):
        c = chunks[a] if chunks is not None else b
        step = max(b, c)  # pieces within each chunk, or runs of whole chunks
        axes.append([(start, min(start + b, n, cs + step))
                     for cs in range(0, n, step) for start in range(cs, min(cs + step, n), b)])
    for index in np.ndindex(*(len(segments) for segments in axes)):
        yield tuple(slice(*axes[a][i]) for a, i in enumerate(index))


def _dtype(array: Any) -> np.dtype:
    try:
        return np.dtype(array.dtype)
    except (AttributeError, TypeError):
        return np.asarray(array).dtype


def data_range(data: Any, *, budget: int = RANGE_BYTES) -> tuple[float, float, bool, int]:
    """(min, max, holds NaN, count) of the finite values of ``data``, read block by block.

    ValueError for non-numeric data, ±Infinity, empty data and data that is all NaN.

    >>> data_range(np.array([[3.0, np.nan], [-1.5, 2.0]]))
    (-1.5, 3.0, True, 4)
    """
    if not hasattr(data, "shape") or not hasattr(data, "dtype"):
        data = np.asarray(data)
    dtype = _dtype(data)
    if dtype.kind not in "fiu":
        raise ValueError(f"data of type {dtype} cannot be packed: floats (or integers) only")
    shape = tuple(int(n) for n in data.shape)
    if not shape:
        pieces: Any = [np.asarray(data[()]).reshape(1)]
    else:
        chunks = chunks_of(data)
        block = block_shape(shape, dtype.itemsize, chunks, budget, WHOLE_CHUNK_BYTES)
        pieces = (data[key] for key in blocks(shape, block, chunks))
    lo, hi, nan, count = math.inf, -math.inf, False, 0
    for piece in pieces:
        a = np.asarray(piece)
        if a.dtype.kind not in "fiu":
            raise ValueError(f"data of type {a.dtype} cannot be packed: floats (or integers) only")
        if not a.size:
            continue
        count += a.size
        if a.dtype.kind == "f":
            if np.isnan(a.min()):  # (min propagates NaN: no temporary array)
                nan = True
            with np.errstate(invalid="ignore"):
                a_lo, a_hi = float(np.fmin.reduce(a, axis=None)), float(np.fmax.reduce(a, axis=None))
            if math.isnan(a_lo):
                continue  # only NaN here
            if math.isinf(a_lo) or math.isinf(a_hi):
                raise ValueError("the data holds ±Infinity, which no integer code can stand for "
                                 "(map it to NaN or to a finite value first)")
        else:
            a_lo, a_hi = int(a.min()), int(a.max())
        lo, hi = min(lo, a_lo), max(hi, a_hi)
    if count == 0:
        raise ValueError("the data is empty: there is no range to pack")
    if lo > hi:
        raise ValueError("the data holds only NaN: there is no range to pack")
    return float(lo), float(hi), nan, count


def sample(array: Any, *, budget: int = SAMPLE_BYTES, pieces: int = 4) -> list[np.ndarray]:
    """Up to ``pieces`` blocks of ``array`` spread evenly through it, ``budget`` bytes in all
    (whatever its shape), each aligned to its chunks.

    >>> [p.shape for p in sample(np.zeros((2, 10**6)), budget=64 << 10)]
    [(1, 2048), (1, 2048), (1, 2048), (1, 576)]
    """
    shape = tuple(int(n) for n in array.shape)
    if not shape:
        return [np.asarray(array[()]).reshape(1)]
    if 0 in shape:
        return [np.zeros(0, _dtype(array))]
    chunks = chunks_of(array)
    block = block_shape(shape, _dtype(array).itemsize, chunks, max(1, budget // max(1, pieces)))
    return [np.asarray(array[key]) for key in _spread(shape, block, chunks, pieces)]


def _spread(shape: tuple[int, ...], block: tuple[int, ...], chunks: Sequence[int] | None,
            pieces: int) -> Iterator[tuple[slice, ...]]:
    """``pieces`` of the blocks, evenly spaced in C order (the first and the last included)."""
    grid = [math.ceil(n / b) for n, b in zip(shape, block)]
    total = math.prod(grid)
    if total <= pieces:
        yield from blocks(shape, block, chunks)
        return
    chosen = sorted({round(i * (total - 1) / max(1, pieces - 1)) for i in range(pieces)})
    for flat in chosen:
        index = np.unravel_index(flat, grid)
        key = []
        for i, b, n, a in zip(index, block, shape, range(len(shape))):
            start = int(i) * b
            c = chunks[a] if chunks is not None else b
            stop = min(start + b, n, (start // c + 1) * c if b < c else n)  # never across a chunk
            key.append(slice(start, stop))
        yield tuple(key)


def propose_chunks(shape: Sequence[int], itemsize: int, stored: Sequence[int] | None = None,
                   target: int = CHUNK_BYTES) -> tuple[int, ...]:
    """Chunks for a new array of ``shape``: the ``stored`` chunks of its source (its netCDF/HDF5
    or zarr chunks) where they are of a sensible size (1 to 64 MiB), else whole multiples of
    them up to about ``target`` bytes (small ones) or pieces of them (huge ones); without stored
    chunks, about ``target`` bytes with the trailing dimensions whole.

    >>> propose_chunks((8760, 721, 1440), 4)
    (2, 721, 1440)
    >>> propose_chunks((8760, 721, 1440), 4, stored=(1, 721, 1440))
    (1, 721, 1440)
    >>> propose_chunks((8760, 721, 1440), 4, stored=(1, 1, 1440))
    (2, 721, 1440)
    """
    shape = tuple(max(1, int(n)) for n in shape)
    if not shape:
        return ()
    if stored is not None:
        stored = tuple(min(max(1, int(c)), n) for c, n in zip(stored, shape))
        size = math.prod(stored) * itemsize
        if SENSIBLE_CHUNK_BYTES[0] <= size <= SENSIBLE_CHUNK_BYTES[1] or stored == shape:
            return stored
    return block_shape(shape, itemsize, stored, target)
