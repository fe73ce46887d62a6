"""The rounding of the ``cast_value`` codec: its modes, and the numpy kernels that round
float values to integers or to the grid of a narrower float type, once and correctly.

Pure numpy; the cast itself (:mod:`.cast_plan`) calls these block by block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .dtypes import NumericInfo

__all__ = ["OUT_OF_RANGE_MODES", "ROUNDING_MODES", "CastError", "is_exact_cast"]


class CastError(ValueError):
    """A value the cast cannot convert; :attr:`reason` says why in a few words (for callers
    that build their own message around it, e.g. about a fill value)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.reason)

ROUNDING_MODES: tuple[str, ...] = (
    "nearest-even",
    "towards-zero",
    "towards-positive",
    "towards-negative",
    "nearest-away",
)
OUT_OF_RANGE_MODES: tuple[str, ...] = ("clamp", "wrap")

#: elements per block of the float -> integer fast path (few, large temporaries, all reused):
#: fewer numpy calls per element outweigh the blocks spilling from L2 to L3 (measured)


def _round_away_scalar(x: float) -> int:
    t = math.trunc(x)
    if abs(x - t) >= 0.5:  # x - t is exact
        t += 1 if x > 0 else -1
    return t


#: the rounding modes on one finite float (exact: Python's round() is half-to-even)
ROUND_SCALAR: dict[str, Callable[[float], int]] = {
    "nearest-even": round,
    "towards-zero": math.trunc,
    "towards-positive": math.ceil,
    "towards-negative": math.floor,
    "nearest-away": _round_away_scalar,
}


def is_exact_cast(src: NumericInfo, tgt: NumericInfo) -> bool:
    """True when every value of ``src`` (including NaN/inf/-0) converts exactly to ``tgt``."""
    if src.is_int and tgt.is_int:
        return tgt.lo <= src.lo and src.hi <= tgt.hi
    if src.is_int:
        m = max(-src.lo, src.hi)
        return (
            m <= 2**tgt.precision
            and m <= tgt.max
            and (src.lo >= 0 or tgt.signed)
            and (src.lo > 0 or tgt.has_zero)
        )
    if tgt.is_int:
        return False
    return (
        tgt.precision >= src.precision
        and tgt.emin <= src.emin
        and tgt.emin - tgt.precision <= src.emin - src.precision
        and tgt.max >= src.max
        and (tgt.has_inf or not src.has_inf)
        and (tgt.has_nan or not src.has_nan)
        and (tgt.has_negzero or not src.has_negzero)
        and (tgt.signed or not src.signed)
        and (tgt.has_zero or not src.has_zero)
    )


def is_native_c(view: np.ndarray) -> bool:
    return view.dtype.isnative and view.flags.c_contiguous


# --------------------------------------------------------------------------------------------
# rounding primitives (all exact: they only ever produce representable float64 values)
# --------------------------------------------------------------------------------------------


def _round_away(x: np.ndarray, out: np.ndarray, tmp: np.ndarray) -> None:
    """Round float64 ``x`` to integers, ties away from zero, into ``out``; ``tmp`` is scratch."""
    np.trunc(x, out=out)
    np.subtract(x, out, out=tmp)  # exact: |x - trunc(x)| < 1
    np.abs(tmp, out=tmp)
    up = tmp >= 0.5
    np.copysign(1.0, x, out=tmp)
    np.add(out, tmp, out=out, where=up)


def round_to_int(x: np.ndarray, rounding: str, out: np.ndarray, tmp: np.ndarray) -> None:
    if rounding == "nearest-even":
        np.rint(x, out=out)
    elif rounding == "towards-zero":
        np.trunc(x, out=out)
    elif rounding == "towards-positive":
        np.ceil(x, out=out)
    elif rounding == "towards-negative":
        np.floor(x, out=out)
    else:
        _round_away(x, out, tmp)


def round_float_grid(
    x: np.ndarray, tgt: NumericInfo, rounding: str, out: np.ndarray, tmp: np.ndarray
) -> None:
    """Round float64 ``x`` to ``tgt``'s precision (gradual underflow, unbounded exponent)."""
    e = np.frexp(x)[1]  # x = m * 2**e, 0.5 <= |m| < 1 (e == 0 for 0, inf, nan)
    e -= 1
    np.maximum(e, tgt.emin, out=e)
    e -= tgt.precision - 1  # exponent of one unit in the last place
    np.negative(e, out=e)
    s = tmp
    np.ldexp(x, e, out=s)  # exact power-of-two scaling
    scratch = np.empty_like(s)
    round_to_int(s, rounding, out, scratch)
    np.negative(e, out=e)
    np.ldexp(out, e, out=out)


def round_int_grid(
    w: np.ndarray, tgt: NumericInfo, rounding: str
) -> np.ndarray:
    """Round 64-bit integers to ``tgt``'s precision exactly; returns float64 (unbounded range)."""
    if w.dtype == np.int64:
        neg = w < 0
        mag = w.astype(np.uint64)
        np.negative(mag, out=mag, where=neg)  # two's complement magnitude, exact for -2**63
    else:
        neg = np.zeros(w.shape, bool)
        mag = w.astype(np.uint64, copy=True)
    with np.errstate(all="ignore"):
        bl = np.frexp(mag.astype(np.float64))[1].astype(np.int64)  # may be one too high
    top = np.maximum(bl - 1, 0).astype(np.uint64)
    bl -= (np.right_shift(mag, top) == 0) & (bl > 0)
    k = np.maximum(bl - 1, tgt.emin) - (tgt.precision - 1)
    np.maximum(k, 0, out=k)
    ku = k.astype(np.uint64)
    q = np.right_shift(mag, ku)
    rem = mag - np.left_shift(q, ku)
    half = np.where(k > 0, np.left_shift(np.uint64(1), np.maximum(ku, 1) - np.uint64(1)), 1)
    half = half.astype(np.uint64)
    if rounding == "nearest-even":
        inc = (rem > half) | ((rem == half) & ((q & np.uint64(1)) == 1))
    elif rounding == "nearest-away":
        inc = rem >= half
    elif rounding == "towards-zero":
        inc = np.zeros(w.shape, bool)
    elif rounding == "towards-positive":
        inc = (rem > 0) & ~neg
    else:
        inc = (rem > 0) & neg
    q += inc
    r = np.ldexp(q.astype(np.float64), k.astype(np.int32))
    np.negative(r, out=r, where=neg)
    return r
