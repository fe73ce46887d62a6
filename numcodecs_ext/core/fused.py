"""``scale_offset`` then ``cast_value`` (and the way back) in one blocked pass.

Chained as two codecs, the pair writes a full-size intermediate in the scale_offset dtype and
reads it back: for float64 stored as uint8 that is 8 bytes written and read again per 1-byte
result, usually from main memory, since a zarr batch keeps every chunk's intermediate alive at
once. Here each block of the intermediate lives in a per-thread scratch buffer that stays in
cache. The same kernels run on each block as in :mod:`.scale_offset` and :mod:`.cast_value`, so
results and errors are identical element for element.

Encoding float32/float64 to an integer type runs the compiled loop (:mod:`._native`) when it
is built: one pass for the whole pair, handing the array back to the blocked numpy pass if an
element would be an error.

Decoding from one- or two-byte codes (uint8, int16, float8, bfloat16, ...) has a faster way
(:mod:`.codetable`): there are at most 65536 possible inputs, so the exact result of every one of
them is computed once with the same kernels and each element is looked up. Without the compiled
look-up, a short numpy formula (numpy's cast, a multiply by the reciprocal of ``scale`` or a
division, an add) is checked against all of them, bit for bit, and used instead: the few codes
where the formula differs (typically the scalar-map keys, such as 0 -> NaN) are written from the
table afterwards; every other element is proven to get the same bits. When the table cannot be
built (some code would raise) or, without the compiled look-up, too many codes differ, the
general pass runs, so errors come from the same place as before.

numpy (plus ml_dtypes and the optional compiled kernels); knows nothing about numcodecs or zarr.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _native, codetable
from . import scale_offset as so
from .blocks import contiguous, iter_blocks, scratch
from .cast_value import cast_array, cast_plan, numeric_info
from .scalar_map import bits_dtype as _bits_dtype
from .scalar_map import cache_key

__all__ = ["chunk_decoder", "chunk_encoder", "decode", "encode"]


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
    off, sc = so.checked_parameters(info.dtype, offset, scale)
    cast = cast_plan(info, numeric_info(np.dtype(dtype)), rounding, out_of_range, scalar_map)
    result = so._prepare_out(arr, cast.tgt, out)
    if not arr.size:
        return result
    flat = result.reshape(-1)
    if cast.native_run(arr, flat, off, sc):
        return result
    kernel = so.block_kernel(info)
    nelem = cast.block_elements
    with np.errstate(all="ignore"):
        cast.prepare(min(nelem, arr.size))
        for view, start, stop in iter_blocks(arr, nelem):
            scaled = scratch("scaled", view.size, info.dtype).reshape(view.shape)
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
    off, sc = so.checked_parameters(info.dtype, offset, scale)
    cast = cast_plan(numeric_info(arr.dtype), info, rounding, out_of_range, scalar_map)
    result = so._prepare_out(arr, info, out)
    if not arr.size:
        return result
    flat = result.reshape(-1)
    plan = _code_plan(arr, info.dtype, off, sc, rounding, out_of_range, scalar_map)
    if plan is not None and plan.run(arr, flat):
        return result
    kernel = so.block_kernel(info)
    nelem = cast.block_elements
    with np.errstate(all="ignore"):
        cast.prepare(min(nelem, arr.size))
        for view, start, stop in iter_blocks(arr, nelem):
            o = flat[start:stop]
            cast.run_block(view, o)
            kernel(o, info, off, sc, o, "decode", start, nelem)
    return result


def chunk_encoder(dtype: Any, shape: tuple[int, ...], target: Any, offset: Any, scale: Any,
                  *, rounding: str = "nearest-even", out_of_range: str | None = None,
                  scalar_map: Sequence[tuple[Any, Any]] = ()
                  ) -> Callable[[np.ndarray], np.ndarray | None] | None:
    """For chunk after chunk of ``shape`` values of ``dtype``: a function giving :func:`encode`'s
    result through the compiled loop, with all set-up done here; it returns None where
    :func:`encode` must run instead (another dtype or shape, or an element that is an error,
    which :func:`encode` then raises). None when the compiled loop does not apply.

    >>> fast = chunk_encoder("float64", (3,), "uint8", -10, 0.5, out_of_range="clamp")
    >>> x = np.array([-10.0, 0.0, 1e9])
    >>> fast(x) if fast is not None else encode(x, -10, 0.5, "uint8", out_of_range="clamp")
    array([  0,   5, 255], dtype=uint8)
    """
    compiled = _native.kernels()
    info = numeric_info(np.dtype(dtype))
    if compiled is None:
        return None
    off, sc = so.checked_parameters(info.dtype, offset, scale)
    cast = cast_plan(info, numeric_info(np.dtype(target)), rounding, out_of_range, scalar_map)
    args = cast.native_args
    if args is None:
        return None
    f2i, empty, src, result_dtype = compiled.f2i, np.empty, info.dtype, cast.tgt.dtype
    shape, item, off_f, sc_f = tuple(shape), info.dtype.itemsize, float(off), float(sc)

    def run(arr: np.ndarray) -> np.ndarray | None:
        if arr.dtype != src or arr.shape != shape or not arr.size:
            return None
        flags = arr.flags
        if not (flags.c_contiguous and flags.aligned):
            arr = contiguous(arr, "native")  # (one copy without the GIL, as encode() does)
        out = empty(shape, result_dtype)
        return out if f2i(arr, out, item, *args[:2], True, off_f, sc_f, *args[2:]) < 0 else None

    return run


def chunk_decoder(codes: np.dtype, shape: tuple[int, ...], dtype: Any, offset: Any, scale: Any,
                  *, rounding: str = "nearest-even", out_of_range: str | None = None,
                  scalar_map: Sequence[tuple[Any, Any]] = ()
                  ) -> Callable[[np.ndarray], np.ndarray | None] | None:
    """For chunk after chunk of ``shape`` codes of dtype ``codes``: a function giving
    :func:`decode`'s result for a C-contiguous chunk in one compiled look-up, with all set-up done
    here (None for any other chunk: call :func:`decode`). None when there is no such look-up
    yet: the code table is built only after enough chunks (see :mod:`.codetable`), or not at
    all, and the compiled kernels may be missing.

    >>> codes = np.array([0, 1, 255], np.uint8)
    >>> for _ in range(64):  # the table is built once a configuration has decoded enough
    ...     _ = decode(codes, "float32", -10, 0.5)
    >>> fast = chunk_decoder(codes.dtype, (3,), "float32", -10, 0.5)
    >>> fast(codes) if fast is not None else decode(codes, "float32", -10, 0.5)
    array([-10.,  -8., 500.], dtype=float32)
    """
    compiled = _native.kernels()
    codes, shape = np.dtype(codes), tuple(shape)
    info = numeric_info(np.dtype(dtype))
    if compiled is None or not codetable.codes_of(codes) or info.dtype.itemsize not in (1, 2, 4, 8):
        return None
    off, sc = so.checked_parameters(info.dtype, offset, scale)
    map_key = cache_key(scalar_map)
    if map_key is None:
        return None
    key = ("fused decode", codes, info.dtype, *_exact_pair(off, sc), rounding, out_of_range,
           map_key)
    plan = codetable.cached(key)
    if plan is None:
        return None
    take, empty, result_dtype = compiled.take, np.empty, info.dtype
    size, item = codes.itemsize, result_dtype.itemsize
    code_bits, out_bits = codetable.unsigned(size), codetable.unsigned(item)
    table = plan.table.view(out_bits)

    def run(arr: np.ndarray) -> np.ndarray | None:
        flags = arr.flags
        if arr.dtype != codes or arr.shape != shape or not (flags.c_contiguous and flags.aligned):
            return None
        out = empty(shape, result_dtype)
        take(arr.view(code_bits), table, out.view(out_bits), size, item)
        return out

    return run


#: the formula of the code-table decode: at most this many distinct results may need writing
#: afterwards
MAX_EXCEPTIONS = 4
#: elements per block (1 MiB of float64 output: fewer calls beat staying in L2, measured)
CODE_BLOCK = 131072
_FLOATS = (np.float16, np.float32, np.float64)


def _select(how: str, key: Any, view: np.ndarray, bits: np.dtype, out: np.ndarray) -> None:
    """Mark in ``out`` the codes of ``view`` that an exception covers: ``"bits"``, one bit
    pattern; ``"value"``, every code equal to ``key`` (a 0-d array of the codes' dtype, so
    ``0`` also covers ``-0.0``); ``"nan"``, every NaN whatever its payload."""
    if how == "bits":
        np.equal(view.view(bits), key, out=out)
    elif how == "value":
        np.equal(view, key, out=out)
    else:
        np.isnan(view, out=out)


@dataclass(frozen=True)
class _Formula:
    """Decode one- or two-byte codes as ``cast(code) op param + offset``, then write
    ``exceptions`` (``(how, key, exact result)``, see :func:`_select`) where that is not exact."""

    op: Callable[..., Any]
    param: np.generic
    offset: np.generic
    bits: np.dtype
    exceptions: tuple[tuple[str, Any, np.ndarray], ...]

    def run(self, arr: np.ndarray, flat: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            for view, start, stop in iter_blocks(arr, CODE_BLOCK):
                o = flat[start:stop].reshape(view.shape)
                np.copyto(o, view, casting="unsafe")
                self.op(o, self.param, out=o)
                np.add(o, self.offset, out=o)
                if self.exceptions:
                    mask = scratch("code mask", view.size, bool).reshape(view.shape)
                    for how, key, value in self.exceptions:
                        _select(how, key, view, self.bits, mask)
                        np.copyto(o, value, where=mask)


@dataclass(frozen=True)
class _CodePlan:
    """The exact decoded value of every possible code (``table``, ordered as
    :func:`.codetable.domain` orders the codes), and the numpy formula proven to reproduce it
    (None if no formula does, or the decoded type is not a numpy float)."""

    table: np.ndarray
    formula: _Formula | None

    def run(self, arr: np.ndarray, flat: np.ndarray) -> bool:
        """Decode ``arr`` into ``flat``: a compiled look-up, else the formula; False if neither
        is available (nothing written)."""
        if codetable.take(arr, self.table, flat):
            return True
        if self.formula is None:
            return False
        self.formula.run(arr, flat)
        return True


def _code_plan(arr: np.ndarray, dtype: np.dtype, off: Any, sc: Any, rounding: str,
               out_of_range: str | None,
               scalar_map: Sequence[tuple[Any, Any]]) -> _CodePlan | None:
    """The code-table decode of ``arr`` into ``dtype`` (see the module docstring), or None."""
    if not codetable.codes_of(arr.dtype) or dtype.itemsize not in (1, 2, 4, 8):
        return None
    if dtype.type not in _FLOATS and _native.kernels() is None:
        return None  # no formula for it: only the compiled look-up could use the table
    map_key = cache_key(scalar_map)
    if map_key is None:
        return None
    key = ("fused decode", arr.dtype, dtype, *_exact_pair(off, sc), rounding, out_of_range,
           map_key)
    return codetable.lookup(key, arr, lambda: _build_plan(
        arr.dtype, dtype, off, sc, rounding, out_of_range, scalar_map))


#: exact keys of (offset, scale) pairs by the identity of the parameter objects, which every
#: chunk of a codec passes again; an entry holds the objects, so their ids are not reused
_PAIRS: dict[tuple[int, int], tuple[Any, Any, tuple[Any, Any]]] = {}


def _exact_pair(off: Any, sc: Any) -> tuple[Any, Any]:
    hit = _PAIRS.get((id(off), id(sc)))
    if hit is not None and hit[0] is off and hit[1] is sc:
        return hit[2]
    pair = (codetable.exactly(off), codetable.exactly(sc))
    if len(_PAIRS) >= 256:
        _PAIRS.clear()
    _PAIRS[id(off), id(sc)] = (off, sc, pair)
    return pair


def _build_plan(src: np.dtype, dtype: np.dtype, off: Any, sc: Any, rounding: str,
                out_of_range: str | None,
                scalar_map: Sequence[tuple[Any, Any]]) -> _CodePlan | None:
    domain = codetable.domain(src)
    try:
        exact = so.decode(cast_array(domain, dtype, rounding=rounding,
                                     out_of_range=out_of_range, scalar_map=scalar_map), off, sc)
    except ValueError:  # some code raises: the general pass raises only if it is present
        return None
    formula = _formula(domain, dtype, exact, off, sc) if dtype.type in _FLOATS else None
    return _CodePlan(exact, formula)


def _formula(domain: np.ndarray, dtype: np.dtype, exact: np.ndarray, off: np.ndarray,
             sc: np.ndarray) -> _Formula | None:
    """The first formula (multiply by the reciprocal of scale, or divide by it) that, with at
    most :data:`MAX_EXCEPTIONS` fix-ups, gives ``exact`` for every code of ``domain``."""
    bits = _bits_dtype(domain.dtype)  # native: domain()'s codes are their native bit patterns
    ubits = _bits_dtype(dtype)
    exact_bits = exact.view(ubits)
    offs = off[()]
    cast = domain.astype(dtype)  # what the formula's np.copyto makes of each code
    with np.errstate(all="ignore"):
        recip = dtype.type(1) / sc[()]
        for op, param in ((np.multiply, recip), (np.divide, sc[()])):
            formula = op(cast, param).astype(dtype) + offs
            exceptions = _exceptions(domain, bits, exact, exact_bits,
                                     formula.view(ubits) != exact_bits)
            if exceptions is not None:
                return _Formula(op, param, offs, bits, exceptions)
    return None


def _exceptions(domain: np.ndarray, bits: np.dtype, exact: np.ndarray, exact_bits: np.ndarray,
                differ: np.ndarray) -> tuple[tuple[str, Any, np.ndarray], ...] | None:
    """Selections that write ``exact`` wherever ``differ``: one per distinct result, each
    covering all codes that need it and only codes whose exact result it is; None if there
    are more than :data:`MAX_EXCEPTIONS` results or no selection fits."""
    results = np.unique(exact_bits[differ])
    if results.size > MAX_EXCEPTIONS:
        return None
    found = []
    mask = np.empty(domain.size, bool)
    for result in results:
        allowed = exact_bits == result
        need = differ & allowed
        first = int(np.argmax(need))
        candidates = [("nan", None), ("value", domain[first : first + 1].reshape(()))]
        if np.count_nonzero(need) == 1:
            candidates.insert(0, ("bits", first))
        for how, key in candidates:
            try:
                _select(how, key, domain, bits, mask)
            except TypeError:  # no isnan / comparison for this dtype
                continue
            if not (need & ~mask).any() and not (mask & ~allowed).any():
                found.append((how, key, exact[first : first + 1].reshape(())))
                break
        else:
            return None
    return tuple(found)
