"""What zfp can compress, checked before libzfp sees it: how each dtype goes through zfp (its
plan), whether a mode suits a dtype and a chunk shape, and the values zfp's lossy modes would
return wrong without an error (non-finite, too large, blocks of only tiny floats).

Each refusal says what was wrong, the value and what would work in a sentence; the reasons are
explained at length in ``docs/codecs/zfp.md``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, NamedTuple, Optional

import numpy as np

from . import _zfpsession
from ._libzfp import (
    ZFP_MAX_BITS,
    ZFP_MIN_EXP,
    ZFP_TYPE_DOUBLE,
    ZFP_TYPE_FLOAT,
    ZFP_TYPE_INT32,
    ZFP_TYPE_INT64,
)
from ._native import kernels
from .zfp_mode import ZfpMode

try:
    import ml_dtypes as _ml_dtypes

    BFLOAT16: Optional[np.dtype] = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is optional
    BFLOAT16 = None

__all__ = ["SUPPORTED_DTYPES", "check_chunk", "check_dtype", "check_encode"]


class Plan(NamedTuple):
    """How one dtype goes through zfp."""

    dtype: np.dtype  # the native-order dtype of the array
    work: np.dtype  # the dtype handed to libzfp
    ztype: int  # zfp_type
    kind: str  # "direct", "promote", "uint", "float"
    bits: int  # bits of the array's integer type (promote/uint)


#: the largest finite value of the types compressed through float32
FLOAT_MAX = {np.dtype("float16"): np.float32(np.finfo(np.float16).max)}
if BFLOAT16 is not None:
    FLOAT_MAX[BFLOAT16] = np.float32(_ml_dtypes.finfo(BFLOAT16).max)

_ZTYPE = {
    np.dtype("int32"): ZFP_TYPE_INT32,
    np.dtype("int64"): ZFP_TYPE_INT64,
    np.dtype("float32"): ZFP_TYPE_FLOAT,
    np.dtype("float64"): ZFP_TYPE_DOUBLE,
}

SUPPORTED_DTYPES = "(u)int8..64, float16, bfloat16, float32, float64, datetime64, timedelta64"


def native_dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.byteorder not in ("=", "|"):
        dt = dt.newbyteorder("=")
    return dt


@lru_cache(maxsize=256)
def _plan(dtype: np.dtype) -> Plan:
    dt = native_dtype(dtype)
    if dt in _ZTYPE:
        return Plan(dt, dt, _ZTYPE[dt], "direct", dt.itemsize * 8)
    if dt.kind in "iu" and dt.itemsize in (1, 2):
        return Plan(dt, np.dtype("int32"), ZFP_TYPE_INT32, "promote", dt.itemsize * 8)
    if dt.kind == "u" and dt.itemsize in (4, 8):
        work = np.dtype(f"int{dt.itemsize * 8}")
        return Plan(dt, work, _ZTYPE[work], "uint", dt.itemsize * 8)
    if dt.kind in "mM":
        return Plan(dt, np.dtype("int64"), ZFP_TYPE_INT64, "direct", 64)
    if dt == np.dtype("float16") or (BFLOAT16 is not None and dt == BFLOAT16):
        return Plan(dt, np.dtype("float32"), ZFP_TYPE_FLOAT, "float", 32)
    raise TypeError(f"zfp cannot compress data type {str(dt)!r}; supported: {SUPPORTED_DTYPES}")


def _header_bits(ztype: int, reversible: bool) -> int:
    """Bits libzfp reads per block before honouring the block's bit budget (see zfp_stream_maximum_size)."""
    if ztype == ZFP_TYPE_INT32:
        return 5 if reversible else 0
    if ztype == ZFP_TYPE_INT64:
        return 6 if reversible else 0
    if ztype == ZFP_TYPE_FLOAT:
        return 1 + 1 + 8 + 5 if reversible else 1 + 8
    return 1 + 1 + 11 + 6 if reversible else 1 + 11


@lru_cache(maxsize=1024)
def check_plan(dtype: np.dtype, mode: ZfpMode) -> Plan:
    plan = _plan(dtype)
    is_int = plan.ztype in (ZFP_TYPE_INT32, ZFP_TYPE_INT64)
    name = dtype_label(plan.dtype)
    if mode.name == "fixed_accuracy" and is_int:
        raise TypeError(
            f"zfp mode 'fixed_accuracy' needs floating-point data, but the data type is {name}; "
            "use 'fixed_precision', 'fixed_rate', 'expert' or 'reversible' for integers"
        )
    if mode.name == "fixed_rate" and is_int and math.floor(64 * mode.rate + 0.5) == 0:
        raise ValueError(
            f"zfp mode 'fixed_rate': 'rate' = {mode.rate!r} gives 0 bits per block for integer data "
            f"({name}); zfp needs rate >= 1/128 for integers"
        )
    if mode.name == "expert":
        header = _header_bits(plan.ztype, mode.reversible_coder)
        if mode.maxbits < max(header, 1):
            raise ValueError(
                f"zfp mode 'expert': 'maxbits' = {mode.maxbits} is too small for {name}"
                f"{' in reversible mode (minexp < -1074)' if mode.reversible_coder else ''}; "
                f"libzfp needs at least {max(header, 1)} bits per block"
            )
    return plan


@lru_cache(maxsize=256)
def dtype_label(dt: np.dtype) -> str:
    return "bfloat16" if BFLOAT16 is not None and dt == BFLOAT16 else str(dt)


def check_dtype(dtype: Any, mode: str, **params: Any) -> np.dtype:
    """Check that arrays of ``dtype`` can be compressed with this mode; return the native dtype.

    Raises
    ------
    TypeError
        If zfp cannot handle the data type in this mode (e.g. integers with ``fixed_accuracy``).
    ValueError
        If the mode's parameters cannot work for this data type (e.g. a ``fixed_rate`` giving
        integer blocks zero bits, or an ``expert`` ``maxbits`` below the block header's size).

    Examples
    --------
    >>> check_dtype(">f8", "reversible")
    dtype('float64')
    >>> check_dtype("int32", "fixed_accuracy", tolerance=0.1)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: zfp mode 'fixed_accuracy' needs floating-point data, but the data type is int32; use
    'fixed_precision', 'fixed_rate', 'expert' or 'reversible' for integers
    """
    return check_plan(native_dtype(dtype), ZfpMode.from_params(mode, params)).dtype


def check_shape(shape: tuple[int, ...]) -> None:
    if len(shape) > 4:
        raise ValueError(
            f"zfp handles arrays of at most 4 dimensions, got shape {shape} ({len(shape)}-D); "
            "drop length-1 dimensions first (a reshape) or chunk differently"
        )
    if any(n < 0 for n in shape):
        raise ValueError(f"zfp: invalid shape {shape}: lengths must be >= 0")


@lru_cache(maxsize=256)
def checked_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` as Python ints, checked (remembered: decoders pass the same shape per chunk)."""
    shape = tuple(int(n) for n in shape)
    check_shape(shape)
    return shape


def prepare(arr: np.ndarray, plan: Plan, mode: ZfpMode, check_floats: bool = True) -> np.ndarray:
    """The C-contiguous array of ``plan.work`` dtype that libzfp compresses, its values checked
    (float values only if ``check_floats``: else the compiled session checks them)."""
    kind = plan.kind
    if kind == "promote":  # int8/16, uint8/16: the promoted values always suit zfp
        shift = 31 - plan.bits
        work = np.asarray(arr).astype(np.int32, order="C")
        if plan.dtype.kind == "u":
            work -= 1 << (plan.bits - 1)
        work <<= shift
        return work
    if kind == "float":  # float16 / bfloat16 -> float32 (exact)
        work = np.asarray(arr).astype(np.float32, order="C")
    else:
        work = np.ascontiguousarray(arr, dtype=plan.dtype)
        if plan.dtype.kind in "mM":
            work = work.view(np.int64)
    if check_floats or plan.ztype not in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE):
        check_values(work, plan, mode)
    return work if kind != "uint" else work.view(plan.work)


#: exclusive magnitude limits of the values zfp's lossy modes handle, by the type libzfp sees:
#: integers as the zfp FAQ states (its decorrelating transform overflows beyond), floats so
#: that a block's reconstruction (at most 2**(E + 1) for values below 2**E) stays finite
_LOSSY_LIMIT_EXP = {ZFP_TYPE_INT32: 30, ZFP_TYPE_INT64: 62, ZFP_TYPE_FLOAT: 126,
                    ZFP_TYPE_DOUBLE: 1022}


def check_values(work: np.ndarray, plan: Plan, mode: ZfpMode) -> None:
    """Refuse values that zfp would return wrong without an error, before compressing.

    Lossy modes: NaN/Infinity (zfp turns them into garbage), integers of magnitude 2**30
    (int32, uint32) or 2**62 (int64, uint64, datetime64) and more (the transform overflows and
    they come back wrapped), floats of magnitude 2**126 (float32, float16, bfloat16) or 2**1022
    (float64) and more (their block can decode to +-Infinity), and blocks of only tiny floats
    (see :func:`_check_tiny_blocks`). Every mode: uint32/uint64 values beyond the signed range,
    which zarrs clamps. One min and one max reduction (for floats one compiled pass).
    """
    if work.size == 0 or (mode.lossless and plan.kind != "uint"):
        return
    label = dtype_label(plan.dtype)
    if plan.ztype in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE):
        _check_float_values(work, plan, mode, label)
        return
    lo, hi = work.min(), work.max()
    if plan.kind == "uint" and int(hi) > (1 << (plan.bits - 1)) - 1:
        limit = (1 << (plan.bits - 1)) - 1
        bad = int(np.count_nonzero(work > limit))
        raise ValueError(
            f"zfp cannot store {label} values above 2**{plan.bits - 1} - 1 = {limit} (zarrs clamps "
            f"them): {bad} here are larger, max {int(hi)}; use a signed type or another compressor"
        )
    if mode.lossless:
        return
    exp = _LOSSY_LIMIT_EXP[plan.ztype]
    lo_i, hi_i = int(lo), int(hi)
    if -(1 << exp) < lo_i and hi_i < (1 << exp):
        return
    bad = int(np.count_nonzero((work <= -(1 << exp)) | (work >= (1 << exp))))
    wider = " or int64 data" if plan.ztype == ZFP_TYPE_INT32 else ""
    nat = ", NaT is -2**63" if plan.dtype.kind in "mM" else ""
    raise ValueError(
        f"zfp mode {mode.name!r} can only encode {label} values in (-2**{exp}, 2**{exp}): {bad} here "
        f"are outside (min {lo_i}, max {hi_i}{nat}); use mode 'reversible'{wider}"
    )


def _check_float_values(work: np.ndarray, plan: Plan, mode: ZfpMode, label: str) -> None:
    """The lossy float checks of :func:`check_values`: finite, below the magnitude limit, and
    no block of only tiny values. One pass with the compiled kernels (GIL released)."""
    exp = _LOSSY_LIMIT_EXP[plan.ztype]
    limit, tiny = 2.0**exp, _TINY_BLOCK[plan.ztype]
    compiled = kernels()
    if compiled is not None and work.dtype.isnative and work.flags.c_contiguous and work.flags.aligned:
        lo, hi, nonfinite, has_tiny = compiled.scan(work, work.itemsize, tiny)
    else:
        lo, hi = float(work.min()), float(work.max())
        nonfinite = not (math.isfinite(lo) and math.isfinite(hi))
        has_tiny = None  # not looked at yet
    if nonfinite:
        bad = int(np.count_nonzero(~np.isfinite(work)))
        raise ValueError(
            f"zfp mode {mode.name!r} cannot encode non-finite values ({bad} NaN/Infinity in this "
            f"{label} array would come back as garbage); use mode 'reversible', or map them first"
        )
    if max(-lo, hi) >= limit:
        bad = int(np.count_nonzero(np.abs(work) >= limit))
        raise ValueError(
            f"zfp mode {mode.name!r} cannot encode {label} values of magnitude 2**{exp} or more "
            f"(they may decode as +-Infinity): {bad} here, largest {float(max(-lo, hi))!r}; use "
            "'reversible' or scale the data down"
        )
    if has_tiny is not False:
        _check_tiny_blocks(work, plan, mode, label)


#: smallest largest-magnitude a lossy float block may have (other than 0): below, libzfp's block
#: scale factor overflows (LLNL/zfp#209) and every value of the block comes back as -2**(E+1)
_TINY_BLOCK = {ZFP_TYPE_FLOAT: 2.0**-98, ZFP_TYPE_DOUBLE: 2.0**-962}


def _check_tiny_blocks(work: np.ndarray, plan: Plan, mode: ZfpMode, label: str) -> None:
    """Refuse a lossy float block whose values are all tiny but not all zero."""
    tiny = _TINY_BLOCK[plan.ztype]
    magnitude = np.abs(work)
    if not ((magnitude > 0) & (magnitude < tiny)).any():  # the common case: one cheap pass
        return
    blocks = magnitude.reshape(magnitude.shape or (1,))
    for axis, n in enumerate(blocks.shape):  # the largest magnitude of every 4**d block
        blocks = np.maximum.reduceat(blocks, np.arange(0, n, 4), axis=axis)
    bad = int(np.count_nonzero((blocks > 0) & (blocks < tiny)))
    if bad:
        raise ValueError(
            f"zfp mode {mode.name!r} cannot encode a {label} block whose largest magnitude is below "
            f"{tiny:.3g} but not 0 (zfp issue 209): {bad} block(s) here; use mode 'reversible', or "
            "flush tiny values to zero"
        )


#: the fewest bit planes (fixed_precision's precision, expert's maxprec) with which zfp's
#: inverse transform of integer data cannot overflow, by dimensionality 1-4: with fewer, decoded
#: values can come back with flipped signs (e.g. int8 [-128, -128, 127, 127] at precision 1)
_INT_MIN_PLANES = {1: 4, 2: 6, 3: 8, 4: 10}


def check_chunk(shape: tuple[int, ...], dtype: Any, mode: str, **params: Any) -> None:
    """Check that chunks of ``shape`` and ``dtype`` can go through zfp in this mode at all (at
    most 4 dimensions, a dtype the mode takes): what reading needs. Writing checks more
    (:func:`check_encode`). ValueError or TypeError naming what would work."""
    shape = tuple(int(n) for n in shape)
    check_shape(shape)
    check_plan(native_dtype(dtype), ZfpMode.from_params(mode, params))


def check_encode(shape: tuple[int, ...], dtype: Any, mode: str, **params: Any) -> None:
    """Check that compressing chunks of ``shape`` and ``dtype`` in this mode gives what the
    README's guarantees say: for integers enough bit planes that no value can come back wrapped,
    and no setting that makes the stream mostly padding. Decoding is never refused for these.

    >>> check_encode((4, 4), "int16", "fixed_precision", precision=4)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: zfp mode 'fixed_precision': precision 4 is too few bit planes for int16 data in 2-D chunks
    (values can come back with flipped signs); use at least 6, or mode 'reversible'
    """
    shape = tuple(int(n) for n in shape)
    check_shape(shape)
    zmode = ZfpMode.from_params(mode, params)
    check_settings(check_plan(native_dtype(dtype), zmode), zmode, len(shape))


#: bits a value may take in the stream, as a multiple of its own bits (fixed_rate and expert
#: minbits pad every block to their budget: beyond this the stream is mostly padding; the
#: stored fixtures use up to 8x, 1-D int16 at rate 8)
_MAX_EXPANSION = 32


def check_settings(plan: Plan, mode: ZfpMode, ndim: int) -> None:
    d = max(1, ndim)
    if mode.name == "expert" and mode.reversible_coder and mode.maxbits < ZFP_MAX_BITS:
        raise ValueError(
            f"zfp mode 'expert': 'maxbits' = {mode.maxbits} with minexp {mode.minexp} (< "
            f"{ZFP_MIN_EXP}, the reversible coder) returns garbage; valid: maxbits {ZFP_MAX_BITS}, "
            f"or minexp >= {ZFP_MIN_EXP} (see docs/codecs/zfp.md)"
        )
    if mode.name in ("fixed_rate", "expert"):
        block_bits = math.floor(64 * mode.rate + 0.5) if mode.name == "fixed_rate" else mode.minbits
        per_value = block_bits / 4**d
        own = 8 * plan.dtype.itemsize
        if per_value > _MAX_EXPANSION * own:
            key = f"'rate' = {mode.rate!r}" if mode.name == "fixed_rate" else f"'minbits' = {mode.minbits}"
            limit = _MAX_EXPANSION * own * 4**d / (64 if mode.name == "fixed_rate" else 1)
            raise ValueError(
                f"zfp mode {mode.name!r}: {key} gives {dtype_label(plan.dtype)} values in {d}-D "
                f"chunks {per_value:g} bits each, over {_MAX_EXPANSION}x their {own} (mostly padding); "
                f"valid: at most {limit:g} (see docs/codecs/zfp.md)"
            )
    _check_planes(plan, mode, d)


def _check_planes(plan: Plan, mode: ZfpMode, ndim: int) -> None:
    if plan.ztype not in (ZFP_TYPE_INT32, ZFP_TYPE_INT64) or mode.lossless:
        return
    if mode.name == "fixed_precision":
        planes, key = mode.precision, "precision"
    elif mode.name == "expert" and not mode.reversible_coder:
        planes, key = mode.maxprec, "maxprec"
    else:
        return  # fixed_rate: see the README's guarantees (the fixtures hold low integer rates)
    need = _INT_MIN_PLANES[max(1, ndim)]
    if planes < need:
        raise ValueError(
            f"zfp mode {mode.name!r}: {key} {planes} is too few bit planes for "
            f"{dtype_label(plan.dtype)} data in {max(1, ndim)}-D chunks (values can come back with "
            f"flipped signs); use at least {need}, or mode 'reversible'"
        )


def compiled_check(plan: Plan, mode: ZfpMode) -> tuple[int, float, float] | None:
    """What the compiled session checks in lossy float data before compressing it (see
    :func:`._zfpsession.compress`), or None where :func:`check_values` must run first."""
    if mode.lossless or plan.ztype not in (ZFP_TYPE_FLOAT, ZFP_TYPE_DOUBLE):
        return None
    if not _zfpsession.compiled():
        return None
    return (4 if plan.ztype == ZFP_TYPE_FLOAT else 8, 2.0 ** _LOSSY_LIMIT_EXP[plan.ztype],
            _TINY_BLOCK[plan.ztype])
