"""Verification of a conversion: what xarray gives for the result equals what it gives for the
source, value for value, read in bounded blocks.

Both sides are read the way a user reads them: the source with ``xarray.open_dataset`` (CF
decoding on, times decoded by default), the result with ``xarray.open_zarr``. For each variable the
names, dimensions, shape and dtype must match, then every value, a block of at most
:data:`BLOCK_BYTES` at a time (so memory does not grow with the data):

* bit for bit (NaN where NaN, NaT where NaT, integers and strings equal) wherever the stored
  values are decoded the same way on both sides: copied variables, and packings whose
  ``1 / scale_factor`` is exact (zeros compare equal whatever their sign: the spec's decoding
  adds the offset, ``+0.0``, where CF may leave ``-0.0``);
* for other packings, NaN at the same places and every other value within its own bound,
  :meth:`~numcodecs_ext.cf.CFPacking.decode_bound` of the stored value (one unit in the last
  place of ``q * scale_factor`` plus one of the result): the division of the spec's ``x / scale``
  against CF's ``q * scale_factor`` leaves that difference and nothing more.

Attributes are compared too (the ``valid_*`` of packed variables are in unpacked units by design).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..store.errors import VerificationError
from .handles import NETCDF_LOCK, open_source
from .plan import GroupPlan

__all__ = ["BLOCK_BYTES", "Sides", "blocks", "check_block", "check_structure", "check_values", "opened",
           "verify_group"]

#: the most bytes of one variable read at a time, per side (at least one chunk)
BLOCK_BYTES = 8 << 20



def blocks(shape: tuple[int, ...], chunks: tuple[int, ...] | None, itemsize: int,
           target: int = BLOCK_BYTES) -> Iterator[tuple[slice, ...]]:
    """Slices covering ``shape``: whole chunks, several along the first axis up to ``target``
    bytes.

    >>> [b[0] for b in blocks((10, 4), (3, 4), 8, target=200)]
    [slice(0, 6, None), slice(6, 10, None)]
    """
    if not shape:
        yield ()
        return
    if 0 in shape:
        return
    chunks = tuple(chunks or shape)
    step = list(chunks)
    per_chunk = math.prod(chunks) * max(itemsize, 1)
    step[0] = min(shape[0], chunks[0] * max(1, target // max(per_chunk, 1)))
    grid = [range(0, n, s) for n, s in zip(shape, step)]
    for start in np.ndindex(*[len(g) for g in grid]):
        yield tuple(slice(g[i], min(g[i] + s, n)) for g, i, s, n in zip(grid, start, step, shape))


def open_quietly(fn: Any, *args: Any, **kwargs: Any) -> Any:
    import xarray as xr

    with warnings.catch_warnings():  # xarray's notes on the file's CF attributes, as when opening it
        warnings.simplefilter("ignore", xr.SerializationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args, **kwargs)


def verify_group(src: Any, engine: str | None, store: Any, plan: GroupPlan, differences: dict[str, float],
                 progress: Any = None) -> None:
    """Compare one group of the source (a path, or a :class:`~numcodecs_ext.cf.source.Source`)
    with the store (read through ``store``, e.g. the staged one before its metadata is written);
    raises VerificationError naming the first difference. ``differences`` receives the largest
    difference of every inexact packed variable."""
    with opened(src, engine, store, plan.group) as sides:
        check_structure(sides, plan)
        for name in sides.source.variables:
            vp = plan.variables[str(name)]
            a = sides.source.variables[name]
            worst = 0.0
            for block in blocks(a.shape, vp.chunks, a.dtype.itemsize if a.dtype.kind != "O" else 8):
                worst = max(worst, check_block(sides, vp, str(name), block))
                if progress is not None:
                    progress.advance(_nbytes(a, block))
            if vp.packing is not None and not vp.packing.exact:
                differences[vp.name] = worst


@dataclass
class Sides:
    """One group read both ways: ``source`` as xarray decodes the file, ``raw`` its stored
    values, ``result`` the store as ``open_zarr`` reads it (all lazily)."""

    src: Any
    source: Any
    raw: Any
    result: Any


@contextmanager
def opened(src: Any, engine: str | None, store: Any, group: str | None, *,
           decode_times: bool = True) -> Iterator[Sides]:
    """The group ``group`` of the source and of the store, opened lazily, closed at the end
    (``decode_times=False``: times and durations left as numbers on both sides, which decoding
    them would read)."""
    decoding = {} if decode_times else {"decode_times": False, "decode_timedelta": False}
    import xarray as xr

    def target() -> Any:  # a path, or a file object of its own per dataset (a remote source)
        return src.target() if hasattr(src, "target") else src

    stack = ExitStack()  # what was opened is closed, whichever opening fails
    try:
        with NETCDF_LOCK:
            source = stack.enter_context(closing(open_quietly(open_source, target(), engine, group, chunks=None,
                                                               **decoding)))
            raw = stack.enter_context(closing(open_quietly(
                open_source, target(), engine, group, chunks=None, mask_and_scale=False, decode_times=False,
                decode_timedelta=False)))
            result = stack.enter_context(closing(open_quietly(xr.open_zarr, store, group=group,
                                                               consolidated=False, chunks=None, **decoding)))
        yield Sides(src, source, raw, result)
    finally:
        with NETCDF_LOCK:
            stack.close()


def check_structure(sides: Sides, plan: GroupPlan) -> None:
    """The group's variables, their dimensions, shapes, types and attributes, and the group's
    attributes, the same on both sides (VerificationError naming the first difference)."""
    source, result, src = sides.source, sides.result, sides.src
    where = f"group {plan.group!r}" if plan.group else "the root group"
    if set(source.variables) != set(result.variables):
        raise VerificationError(f"{where}: variables {sorted(map(str, result.variables))} in the store, "
                                f"{sorted(map(str, source.variables))} in {src}")
    _same_attrs(f"{where} attributes", _shown(source.attrs, True, plan), dict(result.attrs))
    for name in source.variables:
        vp = plan.variables[str(name)]
        a, b = source.variables[name], result.variables[name]
        if a.dims != b.dims or a.shape != b.shape or (a.dtype != b.dtype and not (_text(a) and _text(b))
                                                      and not _same_fields(a.dtype, b.dtype)):
            raise VerificationError(
                f"variable {vp.name!r}: {b.dtype} {dict(zip(b.dims, b.shape))} in the store, "
                f"{a.dtype} {dict(zip(a.dims, a.shape))} in {src}")
        skip = ("valid_min", "valid_max", "valid_range") if vp.route == "packed" else ()
        _same_attrs(f"variable {vp.name!r} attributes", _shown(a.attrs, False, plan), dict(b.attrs), skip)


def _shown(attrs: Any, group: bool, plan: GroupPlan) -> dict[str, Any]:
    """The source's attributes as xarray would show them once in the store: without those its
    zarr reader hides (they are in the store; the summary says so)."""
    from .representable import hidden_on_read

    return {k: v for k, v in attrs.items() if not hidden_on_read(str(k), group=group, zarr_format=plan.zarr_format)}


def check_block(sides: Sides, vp: Any, name: str, block: tuple[slice, ...]) -> float:
    """Compare the values of variable ``name`` in ``block`` (VerificationError at the first
    difference); the largest difference found for an inexact packing, else 0."""
    a, b = sides.source.variables[name], sides.result.variables[name]
    block = block[:a.ndim]  # a char array's last dimension is its strings' characters, gone in the decoding
    with NETCDF_LOCK:
        x = np.asarray(a[block].values)
    y = np.asarray(b[block].values)
    q = None
    if vp.packing is not None and not vp.packing.exact:
        with NETCDF_LOCK:
            q = np.asarray(sides.raw.variables[name][block].values)
    return check_values(vp, x, y, q, block)


def check_values(vp: Any, x: np.ndarray, y: np.ndarray, q: np.ndarray | None, block: tuple[slice, ...]) -> float:
    """:func:`check_block`'s comparison of values in memory: ``x`` the source's as xarray decodes
    them, ``y`` the store's, ``q`` the stored values of ``x`` (needed for an inexact packing's
    bound); VerificationError at the first difference, else the largest difference of an
    inexact packing (0 for the others)."""
    if vp.packing is not None and not vp.packing.exact:
        q = q.view(vp.packing.packed) if q.dtype.itemsize == vp.packing.packed.itemsize \
            else q.astype(vp.packing.packed)
        return _within(vp.name, x, y, vp.packing.decode_bound(q, x), block)
    _identical(vp.name, x, y, block)
    return 0.0


def _nbytes(a: Any, block: tuple[slice, ...]) -> int:
    n = math.prod(len(range(*s.indices(size))) for s, size in zip(block, a.shape))
    return n * (a.dtype.itemsize if a.dtype.kind != "O" else 8)


def _text(v: Any) -> bool:
    """Text, whatever numpy type holds it: fixed-width, numpy's StringDType, or str objects (zarr
    v3 stores text as its variable-length "string" type, which xarray reads as StringDType)."""
    if v.dtype.kind in "UT":
        return True
    if v.dtype.kind != "O":
        return False
    sample = np.asarray(v[tuple(slice(0, 1) for _ in v.dims)].values).reshape(-1)
    return all(isinstance(x, str) for x in sample)


def _same_fields(a: np.dtype, b: np.dtype) -> bool:
    """Compound types with the same fields in the same order, whatever the padding between them."""
    if a.names is None or b.names is None:
        return False
    from .representable import packed_dtype

    return packed_dtype(a) == packed_dtype(b)


def _at(block: tuple[slice, ...], flat_index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    local = np.unravel_index(flat_index, shape) if shape else ()
    return tuple(int(s.start + i) for s, i in zip(block, local))


def _identical(name: str, x: np.ndarray, y: np.ndarray, block: tuple[slice, ...]) -> None:
    if x.dtype.kind in "fc":
        same = (x == y) | (np.isnan(x) & np.isnan(y))
    elif x.dtype.kind in "mM":
        same = x.view("int64") == y.view("int64")
    elif x.dtype.names is not None and y.dtype.names is not None:  # compound: field by field, bit for bit
        from .representable import packed_dtype

        def rows(v: np.ndarray) -> np.ndarray:
            packed = np.ascontiguousarray(v.astype(packed_dtype(v.dtype)))
            return packed.view(np.uint8).reshape(v.shape + (packed.dtype.itemsize,))

        same = (rows(x) == rows(y)).all(axis=-1) if x.shape == y.shape else np.zeros(x.shape, bool)
    elif x.dtype.kind in "OTU" or y.dtype.kind in "OTU":
        import pandas as pd

        xs, ys = x.astype(object), y.astype(object)
        same = np.asarray(pd.isnull(xs) & pd.isnull(ys)) | np.asarray(xs == ys, dtype=bool)
    else:
        same = np.asarray(x == y, dtype=bool)
    same = np.broadcast_to(same, x.shape)
    if not same.all():
        i = int(np.flatnonzero(~same.reshape(-1))[0])
        where = _at(block, i, x.shape)
        raise VerificationError(f"variable {name!r} at {where}: {_item(y, i)} in the store, {_item(x, i)} "
                                "in the source")


def _within(name: str, x: np.ndarray, y: np.ndarray, bound: np.ndarray, block: tuple[slice, ...]) -> float:
    """NaN at the same places, every other value within its bound; the largest difference. In the
    data's own float type: a difference of a few ulp is exact there (Sterbenz), a larger one
    exceeds the bound whatever its rounding."""
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    if not np.array_equal(nan_x, nan_y):
        i = int(np.flatnonzero((nan_x != nan_y).reshape(-1))[0])
        raise VerificationError(f"variable {name!r} at {_at(block, i, x.shape)}: {_item(y, i)} in the store, "
                                f"{_item(x, i)} in the source (missing values differ)")
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(x - y)
        bad = diff > bound
    if bad.any():
        i = int(np.flatnonzero(bad.reshape(-1))[0])
        raise VerificationError(
            f"variable {name!r} at {_at(block, i, x.shape)}: {_item(y, i)} in the store, {_item(x, i)} in the "
            f"source, {float(diff.reshape(-1)[i]):.3g} apart where the codecs' bound is "
            f"{float(bound.reshape(-1)[i]):.3g}")
    worst = np.fmax.reduce(diff.reshape(-1)) if diff.size else 0.0
    return 0.0 if np.isnan(worst) else float(worst)


def _item(a: np.ndarray, i: int) -> str:
    v = a.reshape(-1)[i]
    return repr(v.item() if hasattr(v, "item") and a.dtype.kind not in "mM" else str(v))


def _plain(v: Any) -> Any:
    arr = np.asarray(v)
    if arr.dtype.kind in "iufb":
        return arr.astype(np.float64).reshape(-1) if arr.dtype.kind != "b" else arr.reshape(-1)
    if arr.dtype.kind in "US":
        return [str(x) for x in arr.reshape(-1)]
    return v


def _same_attrs(what: str, a: dict[str, Any], b: dict[str, Any], skip: tuple[str, ...] = ()) -> None:
    keys_a, keys_b = set(a) - set(skip), set(b) - set(skip)
    if keys_a != keys_b:
        raise VerificationError(f"{what}: {sorted(keys_b - keys_a)} only in the store, "
                                f"{sorted(keys_a - keys_b)} only in the source")
    for k in sorted(keys_a):
        x, y = _plain(a[k]), _plain(b[k])
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
            same = x.shape == y.shape and bool(((x == y) | (np.isnan(x) & np.isnan(y))).all()) \
                if x.dtype.kind == "f" and y.dtype.kind == "f" else np.array_equal(x, y)
        else:
            same = x == y
        if not same:
            raise VerificationError(f"{what}: {k}={b[k]!r} in the store, {a[k]!r} in the source")
