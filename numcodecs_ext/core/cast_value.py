"""Value conversion between numeric data types, as the zarr ``cast_value`` codec defines it.

Pure numpy (plus ml_dtypes for the narrow types); knows nothing about numcodecs or zarr.

Every element is converted with a *single* correct rounding, whatever the source and target:
float64 to float16 is rounded once (not through float32), 64-bit integers above 2**53 are rounded
exactly, and the narrow ml_dtypes floats (bfloat16, float8/6/4) are rounded here rather than by
ml_dtypes, whose conversions from float64 go through float32 and so round twice.

The order of the spec is kept for every element: (1) the scalar map, (2) exact representation,
(3) rounding, then the out-of-range rule. NaN and infinities going to a type that cannot hold them
are errors unless the scalar map maps them, even with ``clamp`` or ``wrap``.

Scalar-map matching: a key that is a NaN with the dtype's canonical NaN bit pattern (what the JSON
string ``"NaN"`` decodes to) matches *every* NaN, whatever its sign or payload; a NaN key with any
other bit pattern (written in JSON as hex, e.g. ``"0x7fc00001"``) matches exactly that bit pattern;
every other key matches by numerical equality (so ``0`` matches both ``+0.0`` and ``-0.0``).
Entries are matched against the input only (they never chain) and the first matching entry wins.

The work is done in cache-sized blocks, so the only array as large as the data is the output.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:  # the clip ufunc itself: np.clip's Python wrapper costs a few microseconds per call
    from numpy._core.umath import clip as _clip
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as _clip  # type: ignore[no-redef]

from .dtypes import NumericInfo, numeric_info, scalar_text
from . import _native, codetable
from ._blocks import BLOCK, contiguous, iter_blocks, scratch
from .scalar_map import Hits, PreparedMap, bits_dtype, cache_key, prepared, reserved_hits

__all__ = [
    "OUT_OF_RANGE_MODES",
    "ROUNDING_MODES",
    "NumericInfo",
    "cast_array",
    "cast_scalar",
    "numeric_info",
    "reserved_codes",
]

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
FAST_BLOCK = 262144

_ONE_U8 = np.uint8(1)

def _round_away_scalar(x: float) -> int:
    t = math.trunc(x)
    if abs(x - t) >= 0.5:  # x - t is exact
        t += 1 if x > 0 else -1
    return t


#: the rounding modes on one finite float (exact: Python's round() is half-to-even)
_ROUND_SCALAR: dict[str, Callable[[float], int]] = {
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


def _is_native_c(view: np.ndarray) -> bool:
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


def _round_to_int(x: np.ndarray, rounding: str, out: np.ndarray, tmp: np.ndarray) -> None:
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


def _round_float_grid(
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
    _round_to_int(s, rounding, out, scratch)
    np.negative(e, out=e)
    np.ldexp(out, e, out=out)


def _round_int_grid(
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


def _show(value: Any, info: NumericInfo) -> str:
    """A scalar for a message: as its fill-value JSON writes it (``1000``, ``2.5``, ``NaN``,
    ``0x7f800001``), never a numpy repr."""
    return scalar_text(value, info.dtype)


def _single(reserved: PreparedMap, entry: Any) -> PreparedMap:
    """The one-entry map of ``entry`` (to tell which reserved entry a code hit)."""
    return PreparedMap([reserved.pairs[entry.index]], reserved.src.dtype, reserved.tgt.dtype)


def reserved_codes(decode_map: Sequence[tuple[Any, Any]], coded: Any, decoded: Any,
                   rounding: str, out_of_range: str | None) -> list[tuple[Any, Any]]:
    """The entries ``(code, value)`` of a decode map (``coded`` -> ``decoded`` dtype) that read
    ``code`` as something other than its plain cast to ``decoded`` would: codes that only an
    input the encode map claims may produce (see :class:`~.scalar_map.PreparedMap`).

    >>> reserved_codes([(1000, 0), (7, 7)], "uint16", "uint16", "nearest-even", None)
    [(1000, 0)]
    >>> reserved_codes([(0, np.nan)], "uint8", "float64", "nearest-even", None)
    [(0, nan)]
    """
    src, tgt = numeric_info(np.dtype(coded)), numeric_info(np.dtype(decoded))
    prepared_map = prepared(decode_map, src, tgt)
    out = []
    for entry in prepared_map.entries:  # (the first of repeated keys: the one that applies)
        key, value = prepared_map.pairs[entry.index]
        raw_key = getattr(key, "value", key)
        value_bits = entry.value_bits
        try:
            plain = cast_array(np.asarray(raw_key, src.dtype), tgt.dtype, rounding=rounding,
                               out_of_range=out_of_range)
        except ValueError:  # the code has no plain reading: the map alone gives it one
            out.append((key, value))
            continue
        mapped = value_bits.view(tgt.dtype)
        with np.errstate(invalid="ignore"):
            same = bool(plain == mapped) or bool(np.isnan(np.asarray(plain, np.float64))
                                                 and np.isnan(np.asarray(mapped, np.float64)))
        if not same:
            out.append((key, value))
    return out


# --------------------------------------------------------------------------------------------
# the cast
# --------------------------------------------------------------------------------------------


#: attributes of a plan that are per thread, and their values before a thread sets them
_PER_THREAD = {"wbuf": None, "tmp": None, "tmp2": None, "mbuf": None, "kbuf": None,
               "expect_nan": False}


class _Cast:
    """One configured conversion from ``src`` to ``tgt``; ``run`` fills ``out`` block by block."""

    def __init__(
        self, src: NumericInfo, tgt: NumericInfo, rounding: str, out_of_range: str | None,
        scalar_map: Sequence[tuple[Any, Any]],
    ) -> None:
        if rounding not in ROUNDING_MODES:
            raise ValueError(
                f"rounding={rounding!r} is not valid; choose one of {', '.join(ROUNDING_MODES)}"
            )
        if out_of_range is not None and out_of_range not in OUT_OF_RANGE_MODES:
            raise ValueError(
                f"out_of_range={out_of_range!r} is not valid; choose one of "
                f"{', '.join(OUT_OF_RANGE_MODES)}, or leave it unset to make out-of-range values "
                f"an error"
            )
        if out_of_range == "wrap" and not tgt.is_int:
            raise ValueError(
                f"out_of_range='wrap' is only valid for integer targets, not {tgt.name}"
            )
        self.src, self.tgt = src, tgt
        self.rounding, self.mode = rounding, out_of_range
        self.map = prepared(scalar_map, src, tgt)
        self.entries = self.map.entries
        self.reserved = self.map.reserved
        self.exact = is_exact_cast(src, tgt)
        self.direct = src.dtype.isbuiltin == 1
        self.via = None
        if self.exact and not np.can_cast(src.dtype, tgt.dtype, "unsafe"):
            self.via = np.dtype(np.int64 if src.is_int else np.float64)
        big_int = src.is_int and src.bits == 64
        if self.exact:
            self.kernel = self._exact
            self.wdtype = None
        elif src.is_int and tgt.is_int:
            self.kernel = self._i2i
            self.wdtype = np.dtype(np.uint64 if src.kind == "uint" and src.bits == 64 else np.int64)
        elif big_int:  # int64/uint64 -> float
            self.kernel = self._i2f
            self.wdtype = src.dtype
        elif tgt.is_int:
            self.kernel = self._f2i
            self.wdtype = np.dtype(np.float64)
        else:
            self.kernel = self._f2f
            self.wdtype = np.dtype(np.float64)
        if tgt.is_int:
            hi_f = float(tgt.hi)
            if int(hi_f) > tgt.hi:
                hi_f = float(np.nextafter(hi_f, -np.inf))
            self.lo_f, self.hi_f = float(tgt.lo), hi_f
        else:
            # below this magnitude float64 -> numpy float rounds (nearest-even) to a finite value
            with np.errstate(over="ignore"):
                up = float(np.ldexp(1.0, int(np.frexp(tgt.max)[1])))
            self.thr = tgt.max / 2 + up / 2
        self.native_float_tgt = tgt.dtype.type in (np.float16, np.float32, np.float64)
        # float -> integer fast path: the common configurations decided once per call, per block
        # only a NaN mask and the range (see _f2i_fast); anything unusual goes to _f2i
        self.nan_entry = next((e for e in self.entries if e.how == "nan"), None)
        self.eq_entries = [e for e in self.entries if e.how == "eq"]
        if self.kernel == self._f2i and self.hi_f == tgt.hi and not self.map.large and not any(
                e.how == "bits" for e in self.entries):
            self.kernel = self._f2i_fast
        if self.kernel == self._f2i_fast:
            self.round_scalar = _ROUND_SCALAR[rounding]
            self.lo_0d, self.hi_0d = np.array(self.lo_f), np.array(self.hi_f)
            # one-byte targets write the NaN value with byte arithmetic instead of a masked copy
            self.nan_byte = None
            if self.nan_entry is not None and tgt.dtype.itemsize == 1:
                self.nan_byte = np.uint8(self.nan_entry.value_bits.view(np.uint8)[()])
        # per-thread state (a plan serves every thread converting with its configuration): the
        # scratch blocks, and ``expect_nan``: after a block with NaN, test for NaN with a mask
        # first
        self._state = threading.local()

    @functools.cached_property
    def native_args(self) -> tuple[Any, ...] | None:
        """The compiled float -> integer loop's arguments after ``x, out`` (see
        :meth:`native_run`), or None where it does not apply."""
        src, tgt = self.src, self.tgt
        reserved = self.reserved.entries if self.reserved is not None else []
        if (src.dtype.type not in (np.float32, np.float64) or tgt.dtype.kind not in "iu"
                or not tgt.dtype.isbuiltin or len(self.entries) > 64 or len(reserved) > 64):
            return None
        how = {"nan": 0, "bits": 1, "eq": 2}
        keys_f = [0.0 if e.how != "eq" else e.key_f for e in self.entries]
        keys_bits = [e.key if e.how == "bits" else 0 for e in self.entries]
        values = [int(e.value_bits) for e in self.entries]
        # an integer target's reserved codes as bit patterns of its width (keys are integers)
        codes = [int(np.array(e.key, tgt.dtype).view(bits_dtype(tgt.dtype))) for e in reserved]
        return (
            tgt.dtype.itemsize, tgt.kind == "int", ROUNDING_MODES.index(self.rounding),
            (None, "clamp", "wrap").index(self.mode),
            np.array([how[e.how] for e in self.entries], np.uint8),
            np.array(keys_f, np.float64), np.array(keys_bits, np.uint64),
            np.array(values, np.uint64), np.array(codes, np.uint64),
        )

    def native_run(self, arr: np.ndarray, flat: np.ndarray, offset: Any = None,
                   scale: Any = None) -> bool:
        """Convert ``arr`` (``(arr - offset) * scale`` if given) into the 1-D ``flat`` with the
        compiled loop; False if it does not apply or declined an element (an error: the caller
        then runs the numpy kernels, which raise it)."""
        kernels = _native.kernels()
        if (kernels is None or self.native_args is None or not arr.size
                or not flat.flags.aligned):  # the compiled loop needs aligned items
            return False
        size, signed, rounding, mode, *entries = self.native_args
        affine = offset is not None
        off, sc = (float(offset), float(scale)) if affine else (0.0, 1.0)

        def run(x: np.ndarray, o: np.ndarray) -> bool:
            return kernels.f2i(x, o, x.itemsize, size, signed, affine, off, sc, rounding, mode,
                               *entries) < 0

        # other layouts (zarr hands over views of the caller's array): one contiguous copy,
        # then one call, both without the GIL
        return run(contiguous(arr, "native").reshape(-1), flat)

    def __getattr__(self, name: str) -> Any:
        """This thread's scratch blocks and adaptive flags (see ``__init__``)."""
        if name in _PER_THREAD:
            return getattr(self._state, name, _PER_THREAD[name])
        raise AttributeError(name)

    def _scratch(self, n: int) -> None:
        """Take this thread's scratch blocks (``n`` elements: the largest block)."""
        state = self._state
        if getattr(state, "tmp", None) is not None and state.tmp.size >= n:
            return
        state.wbuf = scratch("w", n, self.wdtype) if self.wdtype is not None else None
        state.tmp = scratch("tmp", n, np.float64)
        state.tmp2 = scratch("tmp2", n, np.float64)
        state.mbuf = scratch("mask", n, bool)
        state.kbuf = scratch("bytes", n, np.uint8)

    # -- driver --------------------------------------------------------------------------------

    @property
    def block_elements(self) -> int:
        """Elements per block this conversion is fastest with."""
        if self.kernel == self._f2i_fast:
            return FAST_BLOCK
        return BLOCK if self.wdtype is not None else BLOCK * 2

    def run(self, arr: np.ndarray, out: np.ndarray) -> np.ndarray:
        flat = out.reshape(-1)
        if self.native_run(arr, flat):
            return out
        nelem = self.block_elements
        with np.errstate(all="ignore"):
            self.prepare(min(nelem, arr.size))
            for view, start, stop in iter_blocks(arr, nelem):
                self.run_block(view, flat[start:stop])
        return out

    def prepare(self, n: int) -> None:
        """Ready this thread's scratch for blocks of up to ``n`` elements."""
        if self.wdtype is not None:
            self._scratch(max(n, 1))

    def run_block(self, view: np.ndarray, o: np.ndarray) -> None:
        """Convert one block (at most the ``prepare``d size) into the 1-D ``o``; the caller
        sets ``np.errstate(all="ignore")``."""
        if self.wdtype is None:
            self.kernel(view, None, o)
        else:
            if view.dtype == self.wdtype and _is_native_c(view):
                w = view.reshape(-1)
            else:
                w = self.wbuf[: view.size]
                np.copyto(w.reshape(view.shape), view, casting="unsafe")
            self.kernel(view, w, o)
        if self.reserved is not None:
            self._check_reserved(view, o)

    def _check_reserved(self, view: np.ndarray, o: np.ndarray) -> None:
        """Refuse an element that no encode entry claims but that lands on a code the way back
        reads as something else (it would not round-trip)."""
        at = reserved_hits(self.reserved, o)
        if at is None:
            return
        where = np.flatnonzero(at)  # (few, or the mapped NaN: only those inputs are looked at)
        inputs = view.reshape(-1)[where]
        claimed = self.map.match(inputs, None).mask if self.entries else None
        if claimed is not None and claimed.all():
            return
        i = int(where[0] if claimed is None else where[np.flatnonzero(~claimed)[0]])
        value, code = view.reshape(-1)[i], o[i]
        entry = next(e for e in self.reserved.entries
                     if reserved_hits(_single(self.reserved, e), o[i:i + 1]) is not None)
        key, back = self.reserved.pairs[entry.index]
        key = getattr(key, "value", key)
        raise ValueError(
            f"cast_value cannot encode {_show(value, self.src)}: it is not a key of the encode "
            f"scalar_map, and it becomes {_show(code, self.tgt)}, which the decode scalar_map "
            f"entry [{_show(key, self.tgt)}, {_show(back, self.src)}] reads back as "
            f"{_show(back, self.src)}, so it would not round-trip. Add it to the encode "
            f"scalar_map, or map that code from a value the data never takes"
        )

    def _masks(self, view: np.ndarray, w: np.ndarray | None, lo: float, hi: float,
               has_nan: bool, slack: float = 0.0, all_: bool = False) -> Hits:
        """The map's hits in this block (``lo``/``hi``: block range, widened by ``slack``;
        ``all_``: no range or NaN pruning)."""
        if all_:
            return self.map.match(view, w)
        return self.map.match(view, w, lo - slack, hi + slack, nan=has_nan)

    @staticmethod
    def _claimed(hits: Hits, n: int) -> np.ndarray:
        return hits.mask if hits.mask is not None else np.zeros(n, bool)

    def _fail(self, what: str, values: np.ndarray) -> None:
        v = values.reshape(-1)[0]
        raise ValueError(
            f"cast_value cannot convert {_show(v, self.src)} from {self.src.name} to "
            f"{self.tgt.name}: {what}"
        )

    # -- kernels ---------------------------------------------------------------------------------

    def _exact(self, view: np.ndarray, w: None, o: np.ndarray) -> None:
        # ml_dtypes has no direct cast between some of its types: go through an exact widening
        src = view if self.via is None else view.astype(self.via)
        np.copyto(o.reshape(view.shape), src, casting="unsafe")
        if self.entries:  # (a pure copy: no range to prune the keys with)
            self._masks(view, None, 0.0, 0.0, True, all_=True).apply(o)

    def _i2i(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        tgt = self.tgt
        lo, hi = int(w.min()), int(w.max())
        ok = tgt.lo <= lo and hi <= tgt.hi
        hits = self._masks(view, w, lo, hi, False)
        if not ok:
            claimed = self._claimed(hits, w.size)
            oor = np.zeros(w.size, bool)
            if tgt.lo > np.iinfo(w.dtype).min:
                oor |= w < tgt.lo
            if tgt.hi < np.iinfo(w.dtype).max:
                oor |= w > tgt.hi
            bad = oor & ~claimed
            if self.mode is None and bad.any():
                self._fail(f"outside [{tgt.lo}, {tgt.hi}] and out_of_range is not set", w[bad])
            if self.mode == "clamp":
                lo_c = max(tgt.lo, int(np.iinfo(w.dtype).min))
                hi_c = min(tgt.hi, int(np.iinfo(w.dtype).max))
                np.copyto(o, np.clip(w, w.dtype.type(lo_c), w.dtype.type(hi_c)), casting="unsafe")
            elif self.mode == "wrap" and not tgt.dtype.isbuiltin:
                mask = w.dtype.type(2**tgt.bits - 1)
                shifted = (w - w.dtype.type(tgt.lo % 2**64 if w.dtype.kind == "u" else tgt.lo))
                wrapped = (shifted & mask).astype(np.int64) + tgt.lo
                np.copyto(o, wrapped, casting="unsafe")
            else:  # wrap (numpy integer casts keep the low bits) or all offenders mapped
                np.copyto(o, w, casting="unsafe")
        else:
            np.copyto(o, w, casting="unsafe")
        hits.apply(o)

    def _f2i_fast(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        """float -> integer whose range is exact in float64 (up to 32 bits), no bit-pattern keys.

        Per block: the range (two reductions) and, once a block has had a NaN, a NaN mask (the
        map needs it anyway); then round, clamp when needed, convert, map. Blocks with
        infinities, unmapped NaN, or out-of-range values without ``clamp`` go to :meth:`_f2i`,
        which finds the error or does the general work.
        """
        n = w.size
        m = None
        if self.expect_nan:
            m = np.isnan(w, out=self.mbuf[:n])
            has_nan = bool(m.any())
        else:
            lo = float(np.minimum.reduce(w))  # NaN if there is one
            has_nan = math.isnan(lo)
            if has_nan:
                self._state.expect_nan = True
                m = np.isnan(w, out=self.mbuf[:n])
            else:
                hi = float(np.maximum.reduce(w))
        r = self.tmp[:n]
        rounded = False
        if has_nan:
            if self.nan_entry is None:
                self._f2i(view, w, o)  # raises (unmapped NaN)
                return
            # the range of the other values, taken after rounding: rounding quiets signalling
            # NaNs, which numpy's fmin/fmax (IEEE minNum) would take for a value, losing the range
            _round_to_int(w, self.rounding, r, self.tmp2[:n])
            rounded = True
            lo, hi = float(np.fmin.reduce(r)), float(np.fmax.reduce(r))
            if math.isnan(lo):  # all NaN
                o_bits = o.view(self.nan_entry.value_bits.dtype)
                np.copyto(o_bits, self.nan_entry.value_bits)
                return
        elif self.expect_nan:
            lo, hi = float(np.minimum.reduce(w)), float(np.maximum.reduce(w))
        if lo == -np.inf or hi == np.inf:
            self._f2i(view, w, o)
            return
        # rounding is monotone and keeps integers, so the rounded range is (round(lo), round(hi))
        clamp = not (self.round_scalar(lo) >= self.lo_f and self.round_scalar(hi) <= self.hi_f)
        if clamp and self.mode != "clamp":
            self._f2i(view, w, o)
            return
        if not rounded:
            _round_to_int(w, self.rounding, r, self.tmp2[:n])
        if clamp:
            _clip(r, self.lo_0d, self.hi_0d, out=r)  # NaN passes through (mapped below)
        np.copyto(o, r, casting="unsafe")
        writes = []
        if has_nan:
            if self.nan_byte is None:
                writes.append((self.nan_entry.value_bits, m))
            else:  # one-byte target: o = o & (m - 1) | m * value, on the bits
                mu = m.view(np.uint8)
                k = self.kbuf[:n]
                ob = o.view(np.uint8)
                np.subtract(mu, _ONE_U8, out=k)  # 0x00 at NaN, 0xff elsewhere
                np.bitwise_and(ob, k, out=ob)
                if self.nan_byte:
                    np.multiply(mu, self.nan_byte, out=k)
                    np.bitwise_or(ob, k, out=ob)
        for entry in self.eq_entries:  # (NaN and the numerical keys never match the same input)
            if lo - 1.0 <= entry.key_f <= hi + 1.0:
                writes.append((entry.value_bits, w == entry.key))
        Hits(writes, n).apply(o)

    def _f2i(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        tgt = self.tgt
        r = self.tmp[: w.size]
        _round_to_int(w, self.rounding, r, self.tmp2[: w.size])
        lo, hi = float(r.min()), float(r.max())
        if lo >= self.lo_f and hi <= self.hi_f:  # no NaN, no inf, nothing out of range
            hits = self._masks(view, w, lo, hi, False, slack=1.0)
            np.copyto(o, r, casting="unsafe")
            hits.apply(o)
            return
        has_nan = bool(np.isnan(lo))
        if has_nan:  # the range of the non-NaN values
            lo, hi = float(np.fmin.reduce(r)), float(np.fmax.reduce(r))
        hits = self._masks(view, w, lo, hi, has_nan, slack=1.0, all_=np.isnan(lo))
        unclaimed = hits.unclaimed

        if has_nan and self.nan_entry is None:  # (a "NaN" entry claims every NaN)
            bad = unclaimed(np.isnan(r))
            if bad.any():
                self._fail(f"{tgt.name} has no NaN; map it in scalar_map", w[bad])
        if np.isinf(lo) or np.isinf(hi):
            bad = unclaimed(np.isinf(r))
            if bad.any():
                self._fail(f"{tgt.name} has no infinity; map it in scalar_map", w[bad])
        above = None
        if lo < self.lo_f or hi > self.hi_f:
            if self.mode is None:
                bad = unclaimed((r < self.lo_f) | (r > self.hi_f))
                if bad.any():
                    self._fail(
                        f"rounds to a value outside [{tgt.lo}, {tgt.hi}] and out_of_range is "
                        f"not set", w[bad],
                    )
                np.clip(r, self.lo_f, self.hi_f, out=r)  # only mapped values: overwritten below
            elif self.mode == "clamp":
                if self.hi_f != tgt.hi:
                    above = r > self.hi_f
                np.clip(r, self.lo_f, self.hi_f, out=r)
            else:
                r[np.isinf(r)] = 0.0  # mapped (checked above); fmod(inf) would be NaN
                self._wrap_float(r, (r < self.lo_f) | (r > self.hi_f))
        if self.mode == "wrap" and tgt.kind == "uint" and tgt.bits == 64:
            # 2**64 - 1 and friends are not float64 values: go through int64's bit pattern
            r[r >= 2.0**63] -= 2.0**64
            np.copyto(o.view(np.int64), r, casting="unsafe")
        else:
            np.copyto(o, r, casting="unsafe")
        if above is not None:
            o[above] = tgt.hi  # 2**63-1 and 2**64-1 are not float64 values
        hits.apply(o)

    def _wrap_float(self, r: np.ndarray, oor: np.ndarray) -> None:
        """Replace out-of-range integer-valued floats by their residue in the target's range."""
        tgt = self.tgt
        period = 2.0**tgt.bits
        v = np.fmod(r[oor], period)  # exact; |v| < 2**bits
        v[v < -period / 2] += period  # exact: result fits the significand of an integer float
        v[v >= period / 2] -= period
        if tgt.kind == "uint" and tgt.bits < 64:
            v[v < 0] += period
        r[oor] = v

    def _f2f(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        if self.native_float_tgt and self.rounding == "nearest-even":
            lo, hi = float(w.min()), float(w.max())
            if -self.thr < lo and hi < self.thr:  # finite, no NaN, no overflow: numpy is exact
                hits = self._masks(view, w, lo, hi, False)
                np.copyto(o, w, casting="unsafe")
                hits.apply(o)
                return
        self._f2f_generic(view, w, o, None)

    def _f2f_generic(self, view: np.ndarray, w: np.ndarray, o: np.ndarray,
                     r: np.ndarray | None) -> None:
        tgt = self.tgt
        if r is None:
            r = self.tmp[: w.size]
            if tgt.dtype == np.float64:
                np.copyto(r, w)
            else:
                _round_float_grid(w, tgt, self.rounding, r, self.tmp2[: w.size])
        hits = self._masks(view, w, 0.0, 0.0, True, all_=True)
        unclaimed = hits.unclaimed

        nan = np.isnan(r)
        if not tgt.has_nan and unclaimed(nan).any():
            self._fail(f"{tgt.name} has no NaN; map it in scalar_map", w[unclaimed(nan)])
        inf = np.isinf(w) if w.dtype.kind == "f" else np.zeros(w.size, bool)
        if not tgt.has_inf and unclaimed(inf).any():
            self._fail(f"{tgt.name} has no infinity; map it in scalar_map", w[unclaimed(inf)])
        fin = ~(nan | inf)
        if tgt.signed:
            above = fin & (r > tgt.max)
            below = fin & (r < -tgt.max)
        else:
            above = fin & (r > tgt.max)
            below = fin & (r < tgt.min_pos)
        if not tgt.has_zero:
            below |= fin & (r == 0)
        oor = above | below
        if oor.any():
            if self.mode is None and unclaimed(oor).any():
                self._fail(
                    f"outside the finite range of {tgt.name} (after {self.rounding} rounding) "
                    f"and out_of_range is not set", w[unclaimed(oor)],
                )
            big = np.inf if tgt.has_inf else tgt.max
            r[above] = big
            r[below] = -big if tgt.signed else tgt.min_pos
        if not tgt.has_nan:
            r[nan] = 0.0  # mapped; the map writes them below
        if not tgt.has_inf:
            r[inf] = 0.0
        if not tgt.has_negzero:
            r += 0.0  # -0.0 + 0.0 == +0.0: formats without -0 must not get their NaN pattern
        np.copyto(o, r, casting="unsafe")
        hits.apply(o)

    def _i2f(self, view: np.ndarray, w: np.ndarray, o: np.ndarray) -> None:
        lo, hi = int(w.min()), int(w.max())
        if -(2**53) <= lo and hi <= 2**53:  # exact in float64: use the float path
            wf = self.tmp2[: w.size]
            np.copyto(wf, w, casting="unsafe")
            wf = wf.copy()
            self._f2f(view, wf, o)
            return
        r = _round_int_grid(w, self.tgt, self.rounding)
        self._f2f_generic(view, w, o, r)


def cast_array(
    arr: np.ndarray,
    dtype: Any,
    *,
    rounding: str = "nearest-even",
    out_of_range: str | None = None,
    scalar_map: Sequence[tuple[Any, Any]] = (),
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Convert the values of ``arr`` to ``dtype`` as the ``cast_value`` codec specifies.

    Parameters
    ----------
    arr : numpy.ndarray
        Input of any integer or real float dtype, any byte order, layout or shape (0-d too).
    dtype : dtype-like
        Target data type.
    rounding : str
        One of :data:`ROUNDING_MODES`.
    out_of_range : {"clamp", "wrap", None}
        What to do with values beyond the target's range; ``None`` makes them an error.
    scalar_map : sequence of (key, value)
        Keys are scalars of ``arr.dtype``, values scalars of ``dtype``; see the module docstring
        for how keys match. The first matching entry wins.
    out : numpy.ndarray, optional
        C-contiguous native array of ``dtype`` and ``arr.shape`` to write into.

    Returns
    -------
    numpy.ndarray
        C-contiguous array of ``dtype`` with ``arr``'s shape.

    Raises
    ------
    ValueError
        A value that neither the map, exact representation nor rounding + ``out_of_range`` can
        convert (the message names it), or an invalid mode.

    Examples
    --------
    >>> x = np.array([np.nan, 0.4, 2.5, 254.6, 300.0])
    >>> cast_array(x, "uint8", out_of_range="clamp", scalar_map=[(np.nan, np.uint8(0))])
    array([  0,   0,   2, 255, 255], dtype=uint8)
    >>> cast_array(np.array([1.0004882812500002]), "float16")[0]
    np.float16(1.001)
    """
    arr = np.asarray(arr)
    tgt = numeric_info(np.dtype(dtype))
    src = numeric_info(arr.dtype)
    cast = cast_plan(src, tgt, rounding, out_of_range, scalar_map)
    if out is None:
        out = np.empty(arr.shape, tgt.dtype)
    elif out.shape != arr.shape or out.dtype != tgt.dtype or not out.flags.c_contiguous:
        raise ValueError(
            f"out must be a C-contiguous {tgt.name} array of shape {arr.shape}, got "
            f"{out.dtype} {out.shape}"
        )
    if not (cast.exact and not cast.entries) and _table_cast(arr, cast, scalar_map, out):
        return out
    return cast.run(arr, out)


def cast_plan(src: NumericInfo, tgt: NumericInfo, rounding: str, out_of_range: str | None,
              scalar_map: Sequence[tuple[Any, Any]] = ()) -> _Cast:
    """The conversion plan for this configuration, made once and shared by every call and
    thread: cached on the map when it is a :class:`~.scalar_map.PreparedMap` (what the codecs
    pass), else by the configuration when there is no map; a plain sequence gets a new plan."""
    if isinstance(scalar_map, PreparedMap) and scalar_map.src.dtype == src.dtype:
        key = (tgt.dtype, rounding, out_of_range)
        plan = scalar_map.plans.get(key)
        if plan is None:
            plan = scalar_map.plans[key] = _Cast(src, tgt, rounding, out_of_range, scalar_map)
        return plan
    if not scalar_map:
        return _unmapped_plan(src, tgt, rounding, out_of_range)
    return _Cast(src, tgt, rounding, out_of_range, scalar_map)


@functools.lru_cache(maxsize=512)
def _unmapped_plan(src: NumericInfo, tgt: NumericInfo, rounding: str, out_of_range: str | None
                   ) -> _Cast:
    return _Cast(src, tgt, rounding, out_of_range, ())


def _table_cast(arr: np.ndarray, cast: _Cast, scalar_map: Sequence[tuple[Any, Any]],
                out: np.ndarray) -> bool:
    """Cast one- or two-byte codes by looking up the exact cast of every possible code (see
    :mod:`.codetable`); False where that does not apply. Only with the compiled look-up: numpy's
    own gather is slower than the blocked cast."""
    if (_native.kernels() is None or not codetable.codes_of(arr.dtype)
            or cast.tgt.dtype.itemsize not in (1, 2, 4, 8)):
        return False
    kw = {"rounding": cast.rounding, "out_of_range": cast.mode, "scalar_map": cast.map}
    map_key = cache_key(scalar_map)
    if map_key is None:
        return False
    key = ("cast", arr.dtype, cast.tgt.dtype, cast.rounding, cast.mode, map_key)

    def build() -> np.ndarray | None:
        try:
            return cast_array(codetable.domain(arr.dtype), cast.tgt.dtype, **kw)
        except ValueError:  # some code cannot be cast: the blocked cast raises if it is present
            return None

    table = codetable.lookup(key, arr, build)
    return table is not None and codetable.take(arr, table, out.reshape(-1))


def cast_scalar(value: Any, src_dtype: Any, dtype: Any, **kwargs: Any) -> np.generic:
    """Cast one scalar exactly as :func:`cast_array` casts elements (used for fill values).

    Examples
    --------
    >>> cast_scalar(np.nan, "float64", "uint8", scalar_map=[(np.nan, 0)])
    np.uint8(0)
    """
    a = np.array(value, dtype=np.dtype(src_dtype))
    return cast_array(a, dtype, **kwargs)[()]
