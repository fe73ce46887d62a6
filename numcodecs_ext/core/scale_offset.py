"""``(x - offset) * scale`` and its inverse, in the input's own data type, as ``scale_offset`` says.

Pure numpy (plus ml_dtypes); knows nothing about numcodecs or zarr.

- Integers: every intermediate and final value must be representable; the admissible input range
  is worked out once with exact Python integers, each block is checked against it with one
  min/max, and the arithmetic then runs natively (it cannot overflow). Decoding divides exactly:
  a non-zero remainder is an error. This holds for int64 and uint64 too.
- numpy floats (float16/32/64): arithmetic in the dtype itself (no promotion by the parameters);
  a finite input whose result overflows to infinity is an error.
- ml_dtypes floats (bfloat16, float8/6/4): each operation is done in float64, which is exact
  enough (53 >= 2p + 2 bits) for one correct rounding back to the dtype per operation.

float32/float64 arrays run through the optional compiled loop (:mod:`._native`) when it is built:
the same two operations in the dtype, in one pass; on an overflow it hands back to the numpy
kernels, which raise the error.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _native
from .blocks import BLOCK, contiguous, iter_blocks
from .cast_value import NumericInfo, cast_array, numeric_info
from .codetable import exactly
from .dtypes import show

__all__ = ["block_kernel", "check_parameters", "checked_parameters", "decode", "encode",
           "integer_bounds"]


def _as_param(value: Any, info: NumericInfo, name: str) -> Any:
    """The parameter as an exact Python int (integer dtypes) or a 0-d array of the dtype."""
    a = np.asarray(value)
    if info.is_int:
        if a.dtype.kind == "f" or (not a.dtype.isbuiltin and a.dtype.kind != "V"):
            fa = float(a)
            if not fa.is_integer():
                raise ValueError(f"scale_offset {name}={show(value)} is not an integer of {info.name}")
            v = int(fa)
        else:
            v = int(a)
        if not info.lo <= v <= info.hi:
            raise ValueError(
                f"scale_offset {name}={show(value)} is outside the range of {info.name} "
                f"[{info.lo}, {info.hi}]"
            )
        return v
    return np.array(a, dtype=info.dtype)


def check_parameters(dtype: Any, offset: Any, scale: Any) -> tuple[Any, Any]:
    """Validate ``offset``/``scale`` for ``dtype``; return them in the form the kernels use.

    Raises
    ------
    TypeError
        ``dtype`` is not an integer or real float type.
    ValueError
        ``scale`` is zero, a parameter is not finite or not representable in ``dtype``.

    Examples
    --------
    >>> check_parameters(np.dtype("int16"), 3, 2)
    (3, 2)
    >>> check_parameters(np.dtype("uint8"), 0, 0)
    Traceback (most recent call last):
    ...
    ValueError: scale_offset scale must be non-zero (dtype uint8)
    """
    info = numeric_info(np.dtype(dtype))
    off = _as_param(offset, info, "offset")
    sc = _as_param(scale, info, "scale")
    if not info.is_int:
        for name, v in (("offset", off), ("scale", sc)):
            if not np.isfinite(v.astype(np.float64)):
                raise ValueError(f"scale_offset {name} must be a finite number for {info.name}, got {float(v)}")
    if (sc == 0) if info.is_int else (sc.astype(np.float64) == 0):
        raise ValueError(f"scale_offset scale must be non-zero (dtype {info.name})")
    return off, sc


_CHECKED: dict[tuple[Any, ...], tuple[Any, Any]] = {}
#: the same, by the identity of immutable (numpy scalar) arguments: a codec passes the very
#: same offset and scale objects for every chunk, which then need no new key (the entry holds
#: them, so their ids cannot be reused while it exists)
_BY_ID: dict[tuple[int, int], tuple[Any, Any, np.dtype, tuple[Any, Any]]] = {}


def checked_parameters(dtype: Any, offset: Any, scale: Any) -> tuple[Any, Any]:
    """:func:`check_parameters`, remembered per (dtype, offset bits, scale bits): codecs call it
    for every chunk with the same parameters."""
    hit = _BY_ID.get((id(offset), id(scale)))
    if hit is not None and hit[0] is offset and hit[1] is scale and hit[2] == dtype:
        return hit[3]
    key = (np.dtype(dtype), exactly(offset), exactly(scale))
    found = _CHECKED.get(key)
    if found is None:
        found = check_parameters(dtype, offset, scale)
        if len(_CHECKED) > 1024:
            _CHECKED.clear()
        _CHECKED[key] = found
    if isinstance(offset, np.generic) and isinstance(scale, np.generic):
        if len(_BY_ID) > 1024:
            _BY_ID.clear()
        _BY_ID[(id(offset), id(scale))] = (offset, scale, key[0], found)
    return found


def _floordiv(a: int, b: int) -> int:
    return a // b


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


def _encode_bounds(info: NumericInfo, off: int, sc: int) -> tuple[int, int]:
    """Inputs x with lo <= x - off <= hi and lo <= (x - off) * sc <= hi (exact)."""
    lo, hi = info.lo, info.hi
    if sc > 0:
        dlo, dhi = _ceildiv(lo, sc), _floordiv(hi, sc)
    else:
        dlo, dhi = _ceildiv(hi, sc), _floordiv(lo, sc)
    dlo, dhi = max(dlo, lo), min(dhi, hi)
    return max(lo, dlo + off), min(hi, dhi + off)


def _decode_bounds(info: NumericInfo, off: int, sc: int) -> tuple[int, int]:
    """Inputs x (multiples of sc) with x / sc and x / sc + off representable (exact)."""
    lo, hi = info.lo, info.hi
    qlo, qhi = max(lo, lo - off), min(hi, hi - off)
    a, b = sorted((qlo * sc, qhi * sc))
    return max(lo, a), min(hi, b)


def integer_bounds(dtype: Any, off: Any, sc: Any, direction: str) -> tuple[int, int] | None:
    """The inputs an integer ``dtype`` admits in ``direction`` (None for floats); ``off``/``sc``
    as :func:`check_parameters` gives them."""
    info = numeric_info(np.dtype(dtype))
    if not info.is_int:
        return None
    return (_encode_bounds if direction == "encode" else _decode_bounds)(info, off, sc)


def _prepare_out(arr: np.ndarray, info: NumericInfo, out: np.ndarray | None) -> np.ndarray:
    if out is None:
        return np.empty(arr.shape, info.dtype)
    if out.shape != arr.shape or out.dtype != info.dtype or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous {info.name} array of shape {arr.shape}, got "
            f"{out.dtype} {out.shape}"
        )
    return out


def _int_range_error(direction: str, bad: Any, info: NumericInfo, off: int, sc: int) -> ValueError:
    formula = "(x - offset) * scale" if direction == "encode" else "x / scale + offset"
    hint = ""
    if direction == "encode" and info.kind == "uint" and off > 0 and int(bad) < off:
        hint = (
            f"; {bad} - {off} is negative, which {info.name} cannot hold (is the array's fill "
            f"value, default 0, below the offset?)"
        )
    return ValueError(
        f"scale_offset {direction}: {formula} with offset={off}, scale={sc} gives a value "
        f"outside the range of dtype {info.name} [{info.lo}, {info.hi}] for x={bad}{hint}"
    )


def _int_kernel(arr: np.ndarray, info: NumericInfo, off: int, sc: int, out: np.ndarray,
                direction: str, base: int = 0, nelem: int = BLOCK) -> None:
    bounds = (_encode_bounds if direction == "encode" else _decode_bounds)(info, off, sc)
    wdt = info.dtype if info.dtype.isbuiltin else np.dtype(np.int64)
    offw, scw = wdt.type(off), wdt.type(sc)
    flat = out.reshape(-1)
    pow2 = sc > 0 and (sc & (sc - 1)) == 0
    with np.errstate(all="ignore"):
        for view, start, stop in iter_blocks(arr, nelem):
            w = view.reshape(-1) if (view.dtype == wdt and view.flags.c_contiguous) else (
                np.ascontiguousarray(view).astype(wdt).reshape(-1)
            )
            o = flat[start:stop]
            lo, hi = int(w.min()), int(w.max())
            if lo < bounds[0] or hi > bounds[1]:
                bad = w[(w < wdt.type(max(bounds[0], int(np.iinfo(wdt).min))))
                        | (w > wdt.type(min(bounds[1], int(np.iinfo(wdt).max))))]
                bad_v = int(bad[0]) if bad.size else (lo if lo < bounds[0] else hi)
                raise _int_range_error(direction, bad_v, info, off, sc)
            if direction == "encode":
                res = w - offw if off else w.copy()
                if sc != 1:
                    res *= scw
            else:
                if sc not in (1, -1):
                    if pow2:
                        rem = w & wdt.type(sc - 1)
                    else:
                        rem = w % scw
                    if rem.any():
                        bad = w[rem != 0][0]
                        raise ValueError(
                            f"scale_offset decode: x / scale leaves a non-zero remainder for "
                            f"x={bad}, scale={sc}: the result is not an integer, so it is not "
                            f"representable in {info.name} (integer decoding divides exactly)"
                        )
                res = w // scw if sc != 1 else w.copy()
                if off:
                    res += offw
            np.copyto(o, res, casting="unsafe")


def _overflow_free(info: NumericInfo, off: float, sc: float) -> tuple[bool, bool, bool]:
    """Which operations can never overflow, whatever the (finite) input: ``(add, mul, div)``.

    ``add``: ``x - offset`` / ``x + offset``; ``mul``: ``x * scale``; ``div``: ``x / scale``.
    A sum ``a + b`` with ``|a| <= max`` and ``|b|`` below half an ulp of ``max`` stays at most
    ``max`` after round-to-nearest; a product by ``|scale| <= 1`` or a quotient by
    ``|scale| >= 1`` cannot grow beyond ``|a| <= max``.
    """
    add_safe = abs(off) < _half_ulp_of_max(info.dtype)
    return add_safe, abs(sc) <= 1.0, abs(sc) >= 1.0


@functools.lru_cache(maxsize=64)
def _half_ulp_of_max(dtype: np.dtype) -> float:
    """Half a unit in the last place of the float type's largest finite value."""
    info = numeric_info(dtype)
    return float(np.ldexp(1.0, int(np.frexp(info.max)[1]) - 1 - info.precision))


def _overflow_error(direction: str, r: np.ndarray, x: np.ndarray, info: NumericInfo,
                    offs: Any, scs: Any) -> ValueError | None:
    """The error for the first finite input of ``x`` whose result ``r`` is infinite, if any."""
    bad = np.isinf(r) & np.isfinite(x)
    if not bad.any():  # infinite inputs give infinite results: not an overflow
        return None
    v = x[bad].reshape(-1)[0]
    return ValueError(
        f"scale_offset {direction}: x={show(v)} overflows {info.name} (offset={show(offs)}, "
        f"scale={show(scs)})"
    )


def _float_native(arr: np.ndarray, info: NumericInfo, off: np.ndarray, sc: np.ndarray,
                  out: np.ndarray, direction: str, base: int = 0, nelem: int = BLOCK) -> None:
    """numpy float dtypes: two in-place ufuncs per block in the dtype itself.

    Overflow costs no pass over the data: which operation can overflow at all is decided once
    per call from the parameters (:func:`_overflow_free`), and for those the ufuncs run under
    ``errstate(over="raise")``. IEEE 754 raises the overflow flag exactly when a finite operand
    gives a result too large for the type (infinite inputs give infinite results without it), so
    a block is only examined when the flag is raised. Then, if the input is still there (``out``
    is not ``arr``), the block is recomputed to name the offending value; when decoding in place
    (zarr hands over a temporary) the value itself is gone, so the error gives its index
    (``base``: the flat index of ``arr``'s first element in the caller's array).
    """
    flat = out.reshape(-1)
    if _native_affine(arr, flat, off, sc, direction):
        return
    offs, scs = off[()], sc[()]
    add_safe, mul_safe, div_safe = _overflow_free(
        info, float(off.astype(np.float64)), float(sc.astype(np.float64)))
    if direction == "encode":
        op1, p1, op2, p2 = np.subtract, offs, np.multiply, scs
        check = not (add_safe and mul_safe)
    else:
        op1, p1, op2, p2 = np.divide, scs, np.add, offs
        check = not (div_safe and add_safe)
    inplace = check and np.may_share_memory(arr, out)
    keep = inplace and info.dtype.type == np.float16  # half: keep the input, rely on no flag
    with np.errstate(all="ignore", over="raise" if check else "ignore"):
        for view, start, stop in iter_blocks(arr, nelem):
            ov = flat[start:stop].reshape(view.shape)
            x = view.copy() if keep else view
            stage = 1
            try:
                op1(view, p1, out=ov)
                stage = 2
                op2(ov, p2, out=ov)
            except FloatingPointError:
                _overflowed(direction, x, ov, op1, p1, op2, p2, stage,
                            inplace and not keep, base + start, info, offs, scs)


def _native_affine(arr: np.ndarray, flat: np.ndarray, off: np.ndarray, sc: np.ndarray,
                   direction: str) -> bool:
    """The compiled one-pass loop (see :mod:`._native`) for float32/float64 arrays that do not
    share memory with the output; False where it does not apply or found an overflow (the numpy
    kernels then run and raise the error, naming the value)."""
    kernels = _native.kernels()
    if (kernels is None or arr.dtype.type not in (np.float32, np.float64)
            or not flat.flags.aligned or np.may_share_memory(arr, flat)):
        return False
    x = contiguous(arr, "affine")  # other layouts: one copy without the GIL, then one call
    overflow = kernels.affine(x.reshape(-1), flat, x.itemsize, direction == "decode",
                              float(off), float(sc))
    return not overflow


def _overflowed(direction: str, x: np.ndarray, ov: np.ndarray, op1: Any, p1: Any, op2: Any,
                p2: Any, stage: int, lost: bool, start: int, info: NumericInfo, offs: Any,
                scs: Any) -> None:
    """A block raised the overflow flag: raise the error, or finish the block if it was spurious.

    ``stage``: the operation that raised (``ov`` holds its result); ``lost``: ``x`` has been
    overwritten (in-place decoding), so only the position of the infinite result is known.
    """
    with np.errstate(all="ignore"):
        if not lost:
            r = op2(op1(x, p1), p2)
            err = _overflow_error(direction, r, x, info, offs, scs)
            if err is not None:
                raise err
            np.copyto(ov, r)
            return
        inf = np.isinf(ov).reshape(-1)
        if inf.any():
            i = start + int(np.argmax(inf))
            raise ValueError(
                f"scale_offset {direction}: the element at flat index {i} (offset={show(offs)}, "
                f"scale={show(scs)}) overflows {info.name}; the input was overwritten in place"
            )
        if stage == 1:  # the flag was raised without an infinite result: finish the block
            op2(ov, p2, out=ov)


def _float_kernel(arr: np.ndarray, info: NumericInfo, off: np.ndarray, sc: np.ndarray,
                  out: np.ndarray, direction: str, base: int = 0, nelem: int = BLOCK) -> None:
    if info.dtype.type in (np.float16, np.float32, np.float64):
        _float_native(arr, info, off, sc, out, direction, base, nelem)
        return
    flat = out.reshape(-1)
    offs, scs = off[()], sc[()]
    off64, sc64 = float(off.astype(np.float64)), float(sc.astype(np.float64))
    with np.errstate(all="ignore"):
        for view, start, stop in iter_blocks(arr, nelem):
            o = flat[start:stop]
            w = view.astype(np.float64).reshape(-1)
            try:
                if direction == "encode":
                    t = cast_array(w - off64, info.dtype).astype(np.float64)
                    cast_array(t * sc64, info.dtype, out=o)
                else:
                    t = cast_array(w / sc64, info.dtype).astype(np.float64)
                    cast_array(t + off64, info.dtype, out=o)
            except ValueError as e:
                raise ValueError(
                    f"scale_offset {direction} overflows {info.name} (offset={show(offs)}, "
                    f"scale={show(scs)}): {e}"
                ) from None


def block_kernel(info: NumericInfo) -> Any:
    """The kernel for ``info``'s dtype: ``kernel(arr, info, off, sc, out, direction, base=0,
    nelem=BLOCK)`` with ``off, sc`` from :func:`check_parameters`; ``out`` may be ``arr`` itself;
    ``nelem``: elements per numpy call (fewer, larger calls when the caller's block is in cache)."""
    return _int_kernel if info.is_int else _float_kernel


def _run(arr: Any, offset: Any, scale: Any, out: np.ndarray | None, direction: str) -> np.ndarray:
    arr = np.asarray(arr)
    info = numeric_info(arr.dtype)
    off, sc = checked_parameters(info.dtype, offset, scale)
    result = _prepare_out(arr, info, out)
    if arr.size:
        block_kernel(info)(arr, info, off, sc, result, direction)
    return result


def encode(arr: Any, offset: Any = 0, scale: Any = 1, *, out: np.ndarray | None = None
           ) -> np.ndarray:
    """``(arr - offset) * scale`` in ``arr``'s dtype (native byte order, C order).

    Examples
    --------
    >>> encode(np.array([0.0, 100.0, np.nan]), -10, 0.1)
    array([ 1., 11., nan])
    >>> encode(np.array([1000, 1255], np.uint16), 1000)
    array([  0, 255], dtype=uint16)
    >>> encode(np.array([2**63 - 1]), -1)
    Traceback (most recent call last):
    ...
    ValueError: scale_offset encode: (x - offset) * scale with offset=-1, scale=1 gives a value \
outside the range of dtype int64 [-9223372036854775808, 9223372036854775807] for x=9223372036854775807
    """
    return _run(arr, offset, scale, out, "encode")


def decode(arr: Any, offset: Any = 0, scale: Any = 1, *, out: np.ndarray | None = None
           ) -> np.ndarray:
    """``arr / scale + offset`` in ``arr``'s dtype; integer division must be exact.

    Examples
    --------
    >>> decode(np.array([1.0, 11.0]), -10, 0.1)
    array([  0., 100.])
    >>> decode(np.array([4, 6], np.int8), 1, 2)
    array([3, 4], dtype=int8)
    """
    return _run(arr, offset, scale, out, "decode")
